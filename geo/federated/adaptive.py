r"""Adaptive hierarchical histograms (Bagdasaryan et al. 2022, section 5, Algorithm 2).

Each sub-query ``q`` runs the basic histogram query (Algorithm 1) on the current prefix tree:
every sampled user reports a one-hot vector over the tree's slots (nodes with fewer than four
children), the server learns the distributed-DP sum, then splits and collapses nodes.

Privacy schedule (section 5.4), with ``U`` users, ``T`` slots and ``n_sh = ceil(U / S_max)``:

* target noise, eq. (7): ``sigma~ = c (U/T) / sqrt(n_sh)``;
* its budget, eq. (8): ``eps~ = phi(sigma~)`` (:func:`~geo.federated.noise.epsilon_for_std`);
* eq. (9): spend ``eps~`` if ``b eps~ <= eps_rem``, otherwise spend all of ``eps_rem`` and stop.

Eq. (7) as printed multiplies by ``sqrt(ceil(S_max / U))``, which is 1 whenever ``U >= S_max``
(all of Table 1) and grows when ``U`` shrinks, the opposite of how noise accumulates over shards.
We divide by ``sqrt(n_sh)`` instead so that the noise of the *summed* histogram is ``c U / T`` for
any ``U``; for a single shard both forms agree.

Split / collapse (section 5.3, eq. 5-6 and UpdateTree): ``sigma_rem = tau(eps_rem) sqrt(n_sh)`` is
the smallest noise any later sub-query can have (eq. 5 for the summed shards); a slot with noisy
count ``> k sigma_rem`` is split into its four children, one with count ``<= k sigma_rem / 4`` is
collapsed (deleted; never the root). Stopping rule: the loop ends when the budget is spent; a
sub-query after which the tree no longer changes (or that hits ``max_rounds``) spends the rest.
The last sub-query's histogram, rendered on its tree, is the released map.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from mdp.errors import ParameterError
from mdp.validation import check_epsilon, check_int, check_positive, check_rng

from .accounting import Accounting
from .metrics import to_density
from .noise import epsilon_for_std, noise_std
from .quadtree import PrefixTree
from .secagg import histogram_query

__all__ = [
    "target_sigma",
    "schedule_epsilon",
    "update_tree",
    "FederatedEstimate",
    "adaptive_hierarchical_histogram",
]


def target_sigma(c: float, users: int, slots: int, shard_size: int, *, rule: str = "summed"
                 ) -> float:
    r"""Per-shard target noise std of eq. (7).

    ``rule="summed"`` (default, see the module docstring): ``c (U/T) / sqrt(ceil(U / S_max))``,
    so that the noise of the histogram summed over the shards is ``c U / T``.
    ``rule="printed"``: eq. (7) as printed, ``c (U/T) sqrt(ceil(S_max / U))``; the two agree for a
    single shard (``U = S_max``); for ``U = 10 S_max`` the printed form asks for ``sqrt(10)``
    times more noise per shard (``c U/T`` per shard, ``sqrt(10) c U/T`` summed).
    """
    c = check_positive(c, "c")
    users = check_int(users, "users", low=1)
    slots = check_int(slots, "slots", low=1)
    shard_size = check_int(shard_size, "shard_size", low=1)
    if rule == "summed":
        return c * users / slots / math.sqrt(-(-users // shard_size))
    if rule == "printed":
        return c * users / slots * math.sqrt(-(-shard_size // users))
    raise ParameterError(f"rule must be 'summed' or 'printed', got {rule!r}")


def schedule_epsilon(eps_rem: float, eps_target: float, b: float) -> tuple[float, bool]:
    r"""Eq. (9): ``(eps~, False)`` if ``b eps~ <= eps_rem`` else ``(eps_rem, True)`` (last query)."""
    eps_rem = check_positive(eps_rem, "eps_rem")
    eps_target = check_positive(eps_target, "eps_target")
    b = check_positive(b, "b")
    if b * eps_target <= eps_rem:
        return eps_target, False
    return eps_rem, True


def update_tree(tree: PrefixTree, counts, threshold: float, *, collapse_ratio: float = 0.25
                ) -> tuple[PrefixTree, int, int]:
    r"""UpdateTree of Algorithm 2: split slots with ``count > t``, collapse (delete) slots with
    ``count <= collapse_ratio * t``. Returns ``(new tree, nodes added, nodes removed)``."""
    counts = np.asarray(counts, dtype=float)
    if counts.shape != (tree.n_slots,):
        raise ParameterError(f"counts must have length n_slots={tree.n_slots}, got {counts.shape}")
    new = tree.copy()
    split = np.flatnonzero(counts > threshold)
    collapse = np.flatnonzero(counts <= collapse_ratio * threshold)
    added = new.split(split)
    # collapse refers to the old slot numbering; map slots to (level, code) before the split
    # invalidated the cache.
    removed = 0
    if collapse.size:
        for lv in np.unique(tree.slot_levels[collapse]):
            if lv == 0:
                continue
            codes = tree.slot_codes[collapse[tree.slot_levels[collapse] == lv]]
            removed += int(new.present[lv][codes].sum())
            new.present[lv][codes] = False
        new._cache = None
    return new, added, removed


@dataclass
class FederatedEstimate:
    """A released map and what it cost.

    Attributes
    ----------
    density : ndarray
        Normalised ``2^depth x 2^depth`` density map.
    accounting : Accounting
        Per-round budgets and vector lengths.
    tree : PrefixTree or None
        Final tree (adaptive algorithm).
    log : list of dict
        Per-round diagnostics (slots, epsilon, threshold, splits, collapses).
    """

    density: np.ndarray
    accounting: Accounting
    tree: PrefixTree | None = None
    log: list = field(default_factory=list)


def adaptive_hierarchical_histogram(rows, cols, depth: int, epsilon: float, *,
                                    shard_size: int = 10_000, dropout: float = 0.0,
                                    provisioned_dropout: float | None = None,
                                    modulus: int = 2**32, c: float = 1.0, k: float = 2.0,
                                    b: float = 2.0, max_rounds: int = 30,
                                    start_tree: PrefixTree | None = None,
                                    target_rule: str = "summed",
                                    threshold_noise: str = "summed",
                                    release_threshold: float | None = None,
                                    rng=None) -> FederatedEstimate:
    r"""AdaptiveHierarchicalHist of Algorithm 2 on users at pixels ``(rows, cols)``.

    Parameters
    ----------
    rows, cols : array of int
        Pixel of each sampled user on the ``2^depth`` grid (one location per user).
    depth : int
        Finest level (``10`` for the paper's 1024 x 1024 maps).
    epsilon : float
        ``eps_tot`` per user (basic composition over sub-queries).
    shard_size, dropout, provisioned_dropout, modulus
        SecAgg parameters (Algorithm 1).
    c : float
        Calibration of eq. (7).
    k : float, default 2
        Split threshold in noise standard deviations, eq. (6).
    b : float, default 2
        Expansion parameter of eq. (9).
    max_rounds : int
        Safety cap on sub-queries; the round that reaches it spends the remaining budget.
    start_tree : PrefixTree, optional
        Prior tree (section 7); default the root alone (the authors' code starts from the four
        level-1 nodes: ``PrefixTree.full(depth, 1)``).
    target_rule : {"summed", "printed"}
        Shard factor of eq. (7), see :func:`target_sigma`.
    threshold_noise : {"summed", "shard"}
        ``sigma_rem`` of the split rule, eq. (5)-(6): the std of the noise summed over the
        ``n_sh`` shards, ``tau(eps_rem) sqrt(n_sh)`` (default), or of one shard,
        ``tau(eps_rem)``, as printed.
    release_threshold : float, optional
        Post-processing of the released map: slots whose final noisy count is below
        ``release_threshold`` times the final noise std (summed over shards) are set to 0, as
        the authors' code does with its split threshold; default none (negative counts are
        clipped to 0 either way).
    rng : None, int or numpy.random.Generator
    """
    epsilon = check_epsilon(epsilon)
    k = check_positive(k, "k")
    max_rounds = check_int(max_rounds, "max_rounds", low=1)
    rng = check_rng(rng)
    if target_rule not in ("summed", "printed"):
        raise ParameterError(f"target_rule must be 'summed' or 'printed', got {target_rule!r}")
    if threshold_noise not in ("summed", "shard"):
        raise ParameterError(f"threshold_noise must be 'summed' or 'shard', got {threshold_noise!r}")
    if release_threshold is not None:
        release_threshold = check_positive(release_threshold, "release_threshold", allow_zero=True)
    rows = np.asarray(rows, dtype=np.int64)
    cols = np.asarray(cols, dtype=np.int64)
    users = int(rows.size)
    if users == 0:
        raise ParameterError("no users: rows is empty")
    tree = PrefixTree(depth) if start_tree is None else start_tree.copy()
    if tree.depth != depth:
        raise ParameterError(f"start_tree has depth {tree.depth}, expected {depth}")
    n_sh = -(-users // shard_size)
    acc = Accounting()
    log = []
    eps_rem = epsilon
    force_last = False
    hist = None
    while eps_rem > 1e-12:
        T = tree.n_slots
        sigma_t = target_sigma(c, users, T, shard_size, rule=target_rule)
        eps_t = epsilon_for_std(sigma_t)
        eps_q, last = schedule_epsilon(eps_rem, eps_t, b)
        if force_last or acc.rounds + 1 >= max_rounds:
            eps_q, last = eps_rem, True
        eps_rem = 0.0 if last else eps_rem - eps_q
        hist = histogram_query(tree.assign(rows, cols), T, eps_q, shard_size=shard_size,
                               dropout=dropout, provisioned_dropout=provisioned_dropout,
                               modulus=modulus, rng=rng)
        acc.add_round(eps_q, T)
        entry = {"round": acc.rounds, "slots": T, "epsilon": eps_q, "target_sigma": sigma_t,
                 "max_level": tree.max_level(), "overflow": hist.overflow}
        if not last:
            threshold = k * noise_std(eps_rem) * (math.sqrt(n_sh) if threshold_noise == "summed"
                                                  else 1.0)
            new, added, removed = update_tree(tree, hist.counts, threshold)
            entry.update(threshold=threshold, added=added, removed=removed)
            force_last = added == 0 and removed == 0
            final_tree, final_counts = tree, hist.counts
            tree = new
        else:
            final_tree, final_counts = tree, hist.counts
        log.append(entry)
    final_counts = np.asarray(final_counts, dtype=float)
    if release_threshold is not None:
        cut = release_threshold * noise_std(eps_q) * math.sqrt(n_sh)
        final_counts = np.where(final_counts < cut, 0.0, final_counts)
    density = to_density(final_tree.render(np.clip(final_counts, 0, None)))
    return FederatedEstimate(density=density, accounting=acc, tree=final_tree, log=log)
