"""The :class:`Mechanism` object: a verified transition matrix on a metric space.

A mechanism is built once (through :func:`mdp.build`), checked by
:func:`mdp.privacy.verification.certify`, and then sampled from, measured and saved. Its file format is
one ``.npz`` archive holding the matrix, the space (distances, labels, points) and a JSON
metadata record; files are written atomically (temporary file + ``os.replace``).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np

from .errors import BuildError, ParameterError, ParameterTypeError, PrivacyError
from .io import atomic_write
from .privacy import accounting
from .privacy.provenance import source_metadata
from .spaces.metric_space import MetricSpace
from .validation import check_epsilon, check_rng

__all__ = ["Mechanism", "FORMAT_VERSION"]

#: Version written by :meth:`Mechanism.save`. 2: the matrix may be stored as ``log_matrix``.
FORMAT_VERSION = 2
#: Versions :func:`load` reads (version 1 files hold ``matrix``; both are re-verified).
READABLE_VERSIONS = (1, 2)


def _jsonable(obj):
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, float) and not np.isfinite(obj):
        return str(obj)
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    return repr(obj)


class Mechanism:
    """A row-stochastic transition matrix on a :class:`~mdp.MetricSpace`, certified on creation.

    ``matrix[u, w] = Pr[M(u) = w]``. The constructor passes the candidate matrix through the
    shared privacy check (:func:`mdp.privacy.verification.certify`, with its bounded tolerance repair)
    and keeps exactly the matrix it certified; the outcome is in ``stats["privacy"]``. A matrix
    that violates ``epsilon``-mDP beyond the repair raises :class:`~mdp.errors.PrivacyError`, so
    every ``Mechanism`` object is valid by construction. Families with an analytic guarantee
    (Madlib) subclass it and override :meth:`_certify` with their own recorded argument.

    Parameters
    ----------
    matrix : array-like (n, n) or None
        Candidate transition matrix (``None`` when ``log_matrix`` is given).
    space : MetricSpace
    epsilon : float
        The claimed pure mDP level, > 0.
    name : str, default "custom"
        Registry name of the family (``"custom"`` for a hand-made matrix).
    params : dict or None
        Parameters the builder used.
    stats : dict or None
        Build statistics.
    log_matrix : array-like (n, n) or None, keyword-only
        Natural-log probabilities instead of ``matrix``.
    repair : bool, default True, keyword-only
        Allow the bounded tolerance repair of :func:`~mdp.privacy.verification.certify` (loading a
        file uses ``False``: a stored matrix is the certified one and must pass as it is).

    Attributes
    ----------
    matrix : ndarray (n, n), read-only
    space : MetricSpace
    epsilon : float
    name : str
    params : dict
    stats : dict
        ``privacy`` (the certification report) and the builder's statistics.
    """

    #: How the mechanism samples ("matrix": from its certified matrix).
    kind = "matrix"
    #: Kind of guarantee: "matrix" (certified on the matrix) or "analytic" (a theorem).
    guarantee = "matrix"

    #: The typed build report of an LP family's build (:class:`mdp.lp.build_report.BuildReport`,
    #: with the plan taken and every attempt), or None (other families, loaded mechanisms).
    report = None

    def __init__(self, matrix, space: MetricSpace, epsilon: float, name: str = "custom",
                 params: dict | None = None, stats: dict | None = None, *, log_matrix=None,
                 repair: bool = True):
        if not isinstance(space, MetricSpace):
            raise ParameterTypeError(f"space must be a MetricSpace, got {type(space).__name__}")
        if (matrix is None) == (log_matrix is None):
            raise ParameterError("give exactly one of matrix and log_matrix")
        self.space = space
        self.epsilon = check_epsilon(epsilon)
        self.name = str(name)
        self.params = dict(params or {})
        self.stats = dict(stats or {})
        self._sampler = None
        self._pair_log_ratios = None
        self._probabilities = None
        self._log = log_matrix is not None
        values = np.asarray(log_matrix if self._log else matrix, dtype=float)
        self._check_shape(values, "log_matrix" if self._log else "matrix")
        values = self._certify(values, repair)
        values.setflags(write=False)
        self._values = values

    def _check_shape(self, M: np.ndarray, what: str) -> None:
        n = self.space.n
        if M.shape != (n, n):
            raise ParameterError(f"{what} must have shape ({n}, {n}), got {M.shape}")

    def _certify(self, values: np.ndarray, repair: bool) -> np.ndarray:
        """Certify the candidate at ``epsilon`` and build the exact sampler of the result.

        Returns the certified matrix (in the candidate's representation), records the report
        (``stats["privacy"]``, with the sampled matrix's own measured level under
        ``"sampling"``) and keeps the sampler that draws exactly that matrix.
        """
        from .privacy.sampling import certified_sampler

        t0 = time.perf_counter()
        try:
            # Euclidean points let a log matrix of the exponential form be certified in
            # O(n^2 d) (mdp.privacy.exponential_form); nothing about them is trusted
            points = self.space.points if self.space.metric == "euclidean" else None
            cert, self._sampler = certified_sampler(values, self.space.distances, self.epsilon,
                                                    log=self._log, repair=repair, points=points)
        except PrivacyError as exc:
            raise PrivacyError(f"mechanism {self.name!r} (n = {self.space.n}, epsilon = "
                               f"{self.epsilon:.17g}): {exc}") from None
        except BuildError as exc:
            raise BuildError(f"mechanism {self.name!r} (n = {self.space.n}, epsilon = "
                             f"{self.epsilon:.17g}): {exc}") from None
        cert.report["seconds"] = time.perf_counter() - t0
        self.stats["privacy"] = cert.report
        # the certification's per-pair bounds of exactly this matrix: eps_tight(delta > 0)
        # reuses them instead of another pass over the n^3 triples
        self._pair_log_ratios = cert.pair_log_ratios
        return cert.matrix

    @property
    def representation(self) -> str:
        """``"log"`` when the certified matrix is held as log-probabilities, else ``"probability"``."""
        return "log" if self._log else "probability"

    @property
    def matrix(self) -> np.ndarray:
        """The certified transition matrix as probabilities (read-only).

        For a mechanism held in the log domain this is ``exp(log_matrix)``, whose smallest
        entries may underflow to 0 in float64; measurements and sampling use the log matrix.
        """
        if not self._log:
            return self._values
        if self._probabilities is None:
            with np.errstate(under="ignore"):
                P = np.exp(self._values)
            P.setflags(write=False)
            self._probabilities = P
        return self._probabilities

    @property
    def log_matrix(self) -> np.ndarray:
        """Natural logarithms of the certified probabilities (``-inf`` for zeros)."""
        if self._log:
            return self._values
        with np.errstate(divide="ignore"):
            return np.log(self._values)

    # -- sampling -------------------------------------------------------------------------------
    def sample_indices(self, idx: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Draw one output index per input index, exactly from the certified matrix.

        Uses the integer sampler of :mod:`mdp.privacy.sampling`: what is drawn is exactly the certified
        matrix's rows (as exact rationals), whose own privacy level was measured at
        construction (``stats["privacy"]["sampling"]``).
        """
        return self._sampler.sample(np.asarray(idx, dtype=np.int64), rng)

    def sample(self, x, *, rng=None):
        """Privatize ``x``: one output per input.

        Parameters
        ----------
        x : label, index, or array-like of them
            Inputs; labels when the space has labels (indices are accepted too).
        rng : None, int or numpy.random.Generator
            Source of randomness (keyword-only).

        Returns
        -------
        A label (scalar input) or an array of labels; indices when the space has no labels.

        Raises
        ------
        mdp.errors.UnknownInputError
            For a label that is not in the space or an index out of range (also a ``KeyError``).
        """
        return self.space.sample_with(x, self.sample_indices, check_rng(rng))

    # -- measurements ---------------------------------------------------------------------------
    def row_losses(self) -> np.ndarray:
        """Expected distance of each input's output (Imola et al. 2022, eq. 3)."""
        return accounting.row_losses(self._values, self.space.distances, log=self._log)

    def loss(self, q: float | None = None) -> float:
        """Worst-case loss (``q=None``) or the q-quantile of row losses (Imola et al. 2022, eq. 1, 11)."""
        return accounting.loss(self._values, self.space.distances, q, log=self._log)

    def eps_tight(self, delta: float = 0.0) -> float:
        """``eps_tight`` of the matrix at ``delta`` (Imola et al. 2022, eq. 9-10): a rigorous
        upper bound of the exact level (see :mod:`mdp.privacy.accounting`)."""
        return accounting.eps_tight(self._values, self.space.distances, delta, log=self._log,
                                    pair_log_ratios=self._pair_log_ratios)

    # -- persistence ----------------------------------------------------------------------------
    def _metadata(self) -> dict:
        return {"format_version": FORMAT_VERSION, "name": self.name,
                "representation": self.representation,
                "epsilon": self.epsilon, "params": _jsonable(self.params),
                "stats": _jsonable(self.stats), "metric": self.space.metric,
                **source_metadata(self.space)}

    def save(self, path: str | os.PathLike) -> Path:
        """Save to one ``.npz`` file (matrix or log matrix, space, JSON metadata), atomically."""
        arrays = {"log_matrix" if self._log else "matrix": np.asarray(self._values),
                  "distances": np.asarray(self.space.distances),
                  "metadata": np.array(json.dumps(self._metadata()))}
        if self.space.labels is not None:
            arrays["labels"] = np.asarray(self.space.labels).astype(str)
        if self.space.points is not None:
            arrays["points"] = np.asarray(self.space.points)
        return atomic_write(path, lambda fh: np.savez_compressed(fh, **arrays))

    @classmethod
    def _from_saved(cls, values, space, meta: dict, *, log: bool = False) -> Mechanism:
        stats = dict(meta.get("stats") or {})
        stats.pop("privacy", None)  # recomputed by the constructor, never taken from the file
        if log:
            return cls(None, space, meta["epsilon"], meta["name"], meta.get("params"), stats,
                       log_matrix=values, repair=False)
        return cls(values, space, meta["epsilon"], meta["name"], meta.get("params"), stats,
                   repair=False)

    def __repr__(self) -> str:
        priv = self.stats.get("privacy", {})
        guarantee = priv.get("guarantee", "verified" if priv.get("verified") else "unverified")
        measured = priv.get("measured_eps")
        meas = f", measured_eps={measured:.4g}" if isinstance(measured, float) else ""
        return (f"Mechanism(name={self.name!r}, n={self.space.n}, epsilon={self.epsilon:.4g}"
                f"{meas}, privacy={guarantee}, loss={self.loss():.4g}, L_0.95={self.loss(0.95):.4g})")
