r"""Secure aggregation in shards with modular clipping, and the basic histogram query
(Bagdasaryan et al. 2022, section 4, Algorithm 1).

Clients send ``(vector_i + X_i - Y_i) mod m``; the server only learns the shard sum modulo ``m``.
Because ``(sum_i (x_i mod m)) mod m = (sum_i x_i) mod m`` the clipping commutes with the sum and is
post-processing of the discrete-Laplace-noised sum, so the guarantee does not depend on ``m``;
``m`` only matters for accuracy: the server decodes the residue to the centred range
``[-m/2, m/2)`` and a true noisy sum outside that range wraps around (overflow).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from mdp.errors import ParameterError, ParameterTypeError
from mdp.validation import check_epsilon, check_int, check_probability, check_rng

from .noise import shard_noise, surviving_clients

__all__ = [
    "modular_clip",
    "decode_centered",
    "secure_sum",
    "plan_shards",
    "HistogramResult",
    "histogram_query",
]


def _check_modulus(modulus) -> int:
    return check_int(modulus, "modulus", low=2)


def modular_clip(x, modulus: int) -> np.ndarray:
    """``ModuloClip`` of Algorithm 1: entry-wise ``x mod m`` into ``[0, m)`` (int64)."""
    m = _check_modulus(modulus)
    return np.mod(np.asarray(x, dtype=np.int64), m)


def decode_centered(residue, modulus: int) -> np.ndarray:
    """Map residues in ``[0, m)`` to the centred representatives in ``[-m/2, m/2)``.

    Exact for every true value in that range; other values wrap around (overflow).
    """
    m = _check_modulus(modulus)
    r = np.mod(np.asarray(residue, dtype=np.int64), m)
    return np.where(r >= (m + 1) // 2, r - m, r)


def secure_sum(client_vectors, modulus: int) -> np.ndarray:
    """What SecAgg returns for a shard: ``(sum_i v_i) mod m`` of the clients' clipped vectors.

    ``client_vectors`` is ``(clients, d)``; each row is already ``mod m`` (the clients clip) but
    any integers are accepted. Summed row by row modulo ``m`` so that no intermediate overflows
    int64 even for ``m`` near ``2^62``.
    """
    m = _check_modulus(modulus)
    v = np.asarray(client_vectors, dtype=np.int64)
    if v.ndim != 2:
        raise ParameterError(f"client_vectors must be 2-D (clients, d), got shape {v.shape}")
    acc = np.zeros(v.shape[1], dtype=np.int64)
    for row in np.mod(v, m):
        acc = np.mod(acc + row, m)
    return acc


def plan_shards(n_users: int, shard_size: int, *, dropout: float = 0.0, rng=None
                ) -> list[tuple[np.ndarray, np.ndarray]]:
    """Split ``n_users`` (already sampled) into ``ceil(n/S_max)`` shards of at most ``S_max``.

    Shard sizes differ by at most one (``numpy.array_split`` of a random permutation). In each
    shard ``floor(dropout * size)`` randomly chosen clients drop out.

    Returns
    -------
    list of (admitted, survivors)
        User indices admitted to each shard and those that report back.
    """
    n_users = check_int(n_users, "n_users", low=1)
    shard_size = check_int(shard_size, "shard_size", low=1)
    dropout = check_probability(dropout, "dropout", inclusive_high=False)
    rng = check_rng(rng)
    n_shards = -(-n_users // shard_size)
    out = []
    for members in np.array_split(rng.permutation(n_users), n_shards):
        n_keep = surviving_clients(len(members), dropout)
        out.append((members, np.sort(rng.choice(members, n_keep, replace=False))))
    return out


@dataclass
class HistogramResult:
    """Output of one (sub-)query of Algorithm 1.

    Attributes
    ----------
    counts : ndarray of int64
        Decoded noisy histogram summed over shards (length ``vector_length``).
    true_counts : ndarray of int64
        Noise-free sum of the survivors' vectors (for evaluation only; the server never sees it).
    vector_length : int
        Integers each client sends (communication of this query).
    epsilon : float
        Budget of this query (per user, all shards disjoint).
    n_shards, n_reporting : int
        Shards run and clients that reported (after dropouts).
    overflow : bool
        Whether some shard's noisy sum fell outside ``[-m/2, m/2)`` and wrapped.
    """

    counts: np.ndarray
    true_counts: np.ndarray
    vector_length: int
    epsilon: float
    n_shards: int
    n_reporting: int
    overflow: bool = False
    shard_sizes: list = field(default_factory=list)


def _user_vectors(reports, vector_length: int):
    if sp.issparse(reports):
        mat = sp.csr_matrix(reports)
        if mat.shape[1] != vector_length:
            raise ParameterError(f"reports has {mat.shape[1]} columns, vector_length is {vector_length}")
        if mat.nnz and not np.all(np.equal(np.mod(mat.data, 1), 0)):
            raise ParameterError("reports must hold integers (scale and round first, section 5.7)")
        return mat, mat.shape[0]
    idx = np.asarray(reports)
    if idx.ndim != 1 or not np.issubdtype(idx.dtype, np.integer):
        raise ParameterTypeError("reports must be a 1-D integer array of slot indices or a sparse matrix")
    if idx.size and (idx.min() < 0 or idx.max() >= vector_length):
        raise ParameterError(f"slot indices must be in [0, {vector_length}), got range "
                         f"[{idx.min()}, {idx.max()}]")
    return idx, idx.size


def histogram_query(reports, vector_length: int, epsilon: float | None, *, shard_size: int = 10_000,
                    dropout: float = 0.0, provisioned_dropout: float | None = None,
                    modulus: int = 2**32, sensitivity: float = 1, rng=None) -> HistogramResult:
    r"""HISTOGRAM of Algorithm 1: secure, sharded, distributed-DP sum of the users' vectors.

    For each shard ``r`` of at most ``S_max`` users the server obtains
    ``(sum_{i in survivors} vector_i + Z_r) mod m`` with ``Z_r`` the exact aggregate of the
    survivors' Polya shares (:func:`~geo.federated.noise.shard_noise`), decodes it to the centred
    range and adds the shards: ``hist = sum_r decode(...)``.

    Parameters
    ----------
    reports : 1-D int array or scipy.sparse matrix
        One-hot reports as slot indices (one per user), or an integer matrix ``(users, d)`` of
        user vectors (multi-location, section 5.7) whose L1 norms are at most ``sensitivity``.
    vector_length : int
        ``d``, length of the aggregated vector.
    epsilon : float or None
        Budget of this query; ``None`` runs it without noise (non-private ablations).
    shard_size : int
        ``S_max``.
    dropout, provisioned_dropout : float
        Realised dropout per shard and the rate the noise is provisioned for (default equal).
    modulus : int
        SecAgg modulus ``m``.
    sensitivity : float
        L1 sensitivity ``Delta`` of one user's vector.
    rng : None, int or numpy.random.Generator
    """
    vector_length = check_int(vector_length, "vector_length", low=1)
    if epsilon is not None:
        epsilon = check_epsilon(epsilon)
    m = _check_modulus(modulus)
    rng = check_rng(rng)
    vectors, n_users = _user_vectors(reports, vector_length)
    if n_users == 0:
        raise ParameterError("reports is empty: a histogram query needs at least one user")
    plan = plan_shards(n_users, shard_size, dropout=dropout, rng=rng)
    total = np.zeros(vector_length, dtype=np.int64)
    true_total = np.zeros(vector_length, dtype=np.int64)
    overflow = False
    n_rep = 0
    for admitted, survivors in plan:
        if sp.issparse(vectors):
            true = np.asarray(vectors[survivors].sum(axis=0)).ravel().astype(np.int64)
        else:
            true = np.bincount(vectors[survivors], minlength=vector_length).astype(np.int64)
        noisy = true
        if epsilon is not None:
            noisy = true + shard_noise(vector_length, epsilon, clients=len(admitted),
                                       dropout=dropout, provisioned_dropout=provisioned_dropout,
                                       sensitivity=sensitivity, rng=rng)
        # The server only ever holds the residue; decoding is its post-processing.
        decoded = decode_centered(modular_clip(noisy, m), m)
        overflow |= bool(np.any(decoded != noisy))
        total += decoded
        true_total += true
        n_rep += len(survivors)
    return HistogramResult(counts=total, true_counts=true_total, vector_length=vector_length,
                           epsilon=float(epsilon) if epsilon is not None else float("inf"),
                           n_shards=len(plan), n_reporting=n_rep, overflow=overflow,
                           shard_sizes=[len(a) for a, _ in plan])
