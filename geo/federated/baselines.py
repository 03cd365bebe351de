r"""Baselines of the paper's Table 1 (section 5.1 and 6.2), all on the same distributed-DP
primitive (:func:`~geo.federated.secagg.histogram_query`) so only the encoding differs.

* non-private, best level (the paper's own baseline, section 6.2: "we build a map for every level
  of the quadtree and pick the level that produces the best metric"): the sample's histogram at
  every level rendered as a uniform ``2^l x 2^l`` grid, the one level with the lowest error
  against the truth kept for the whole map; 2 integers (the coordinates) per client.
* non-private, per-cell oracle (stronger, ours): the same histograms, but every quadtree cell
  keeps its own best level (oracle partition below).
* flat one-hot: one query at the finest level with all of eps; ``4^L`` integers.
* hierarchical one-hot: levels ``1..L`` with ``eps / L`` each, best partition by oracle;
  ``sum_l 4^l`` integers (1,398,100 for ``L = 10``).
* count-min sketch: each level's one-hot vector replaced by a ``depth x width`` count-min sketch
  (sensitivity = sketch depth), ``eps / L`` per level, oracle partition; ``L * depth * width``.
* adaptive grid (Qardaji et al. 2013, "AG"): ``m1 x m1`` grid with ``alpha eps``, then each cell
  split into ``m2 x m2`` with ``m2 = ceil(sqrt(N' (1-alpha) eps / c2))`` and ``(1-alpha) eps``.
* spatial decomposition (Cormode et al. 2012) with the geometric budget ``eps_l ~ 2^(l/3)``
  (the finest level receives the most), best partition by oracle.

"Oracle": as in the paper ("we use the split that achieves the lowest MSE compared to the ground
truth"), for every quadtree cell the server keeps the level whose estimate has the smallest
squared error against the truth, by dynamic programming from the leaves up. This is an optimistic
(non-private) post-processing; the adaptive algorithm has no oracle.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

from mdp.errors import ParameterError
from mdp.validation import check_epsilon, check_int, check_positive, check_rng

from .accounting import Accounting
from .adaptive import FederatedEstimate
from .metrics import block_sum, to_density
from .quadtree import cell_codes
from .secagg import histogram_query, plan_shards

__all__ = [
    "oracle_partition",
    "nonprivate",
    "nonprivate_best_level",
    "level_errors",
    "flat_onehot",
    "hierarchical_onehot",
    "spatial_decomposition",
    "count_min_sketch",
    "adaptive_grid",
    "geometric_budget",
]


def _upsample(a: np.ndarray, factor: int) -> np.ndarray:
    return np.repeat(np.repeat(a, factor, axis=0), factor, axis=1)


def oracle_partition(level_estimates: dict[int, np.ndarray], truth: np.ndarray) -> np.ndarray:
    r"""Per-region best level by oracle (Bagdasaryan et al. 2022, 5.1/6.2), exact by dynamic programming.

    ``level_estimates[l]`` is a ``2^l x 2^l`` array of (unnormalised) estimated counts; each level
    is normalised to a density and spread uniformly inside its cells. For a cell at level ``l``,
    ``err_l = sum_pixels (v / P^2 - f)^2 = v^2/P^2 - 2 v F / P^2 + Q`` with ``F, Q`` the block sums
    of ``f`` and ``f^2``; ``best_l = min(err_l, sum of the children's best_{l+1})``.
    """
    truth = np.asarray(truth, dtype=float)
    side = truth.shape[0]
    depth = int(round(math.log2(side)))
    if not level_estimates:
        raise ParameterError("level_estimates is empty")
    levels = sorted(level_estimates)
    if levels[-1] > depth:
        raise ParameterError(f"level {levels[-1]} is finer than the {side}x{side} truth")
    vals, err = {}, {}
    for lv in levels:
        v = to_density(level_estimates[lv])
        if v.shape != (1 << lv, 1 << lv):
            raise ParameterError(f"level {lv} estimate must be {(1 << lv, 1 << lv)}, got {v.shape}")
        f = side >> lv
        F, Q = block_sum(truth, f), block_sum(truth**2, f)
        vals[lv] = v
        err[lv] = v**2 / f**2 - 2 * v * F / f**2 + Q
    best = {}
    choose = {}
    for lv in range(levels[-1], levels[0] - 1, -1):
        own = err.get(lv, np.full((1 << lv, 1 << lv), np.inf))
        if lv == levels[-1]:
            best[lv], choose[lv] = own, np.ones_like(own, dtype=bool)
            continue
        kids = block_sum(best[lv + 1], 2)
        choose[lv] = own <= kids
        best[lv] = np.minimum(own, kids)
    out = np.zeros((side, side))
    covered = np.zeros((1 << levels[0], 1 << levels[0]), dtype=bool)
    for lv in range(levels[0], levels[-1] + 1):
        if lv > levels[0]:
            covered = _upsample(covered, 2)
        use = choose[lv] & ~covered
        f = side >> lv
        out += _upsample(np.where(use, vals.get(lv, 0.0) / f**2 if lv in vals else 0.0, 0.0), f)
        covered |= use
    return out


def _level_counts_from_hist(counts: np.ndarray, lv: int) -> np.ndarray:
    return counts.reshape(1 << lv, 1 << lv).astype(float)


def _reporting(rows, cols, shard_size: int, dropout: float, rng) -> tuple[np.ndarray, np.ndarray]:
    """Coordinates of the users that report back (dropouts removed per shard)."""
    rows, cols = np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64)
    keep = np.concatenate([s for _, s in plan_shards(rows.size, shard_size, dropout=dropout,
                                                      rng=rng)])
    return rows[keep], cols[keep]


def _sample_levels(rows, cols, depth: int, levels) -> dict[int, np.ndarray]:
    return {lv: np.bincount(cell_codes(rows, cols, depth, lv), minlength=4**lv).reshape(
        1 << lv, 1 << lv).astype(float) for lv in levels}


def nonprivate(rows, cols, depth: int, truth, *, shard_size: int = 10_000, dropout: float = 0.0,
               rng=None) -> FederatedEstimate:
    """Non-private baseline, per-cell oracle: exact counts of the users that report (after
    dropouts) at every level, oracle partition (:func:`oracle_partition`). Stronger than the
    seed's own non-private baseline (:func:`nonprivate_best_level`). Communication: the 2
    coordinates."""
    rng = check_rng(rng)
    r, c = _reporting(rows, cols, shard_size, dropout, rng)
    est = _sample_levels(r, c, depth, range(depth + 1))
    acc = Accounting(extra_comm=2)
    return FederatedEstimate(density=oracle_partition(est, truth), accounting=acc)


def level_errors(counts: np.ndarray, truth) -> float:
    r"""Squared error summed over pixels of one uniform level, in closed form.

    ``counts`` is a ``2^l x 2^l`` array of (unnormalised) counts; normalised to ``p`` (sum 1) and
    spread uniformly over the ``P^2`` pixels of each cell (``P = n / 2^l``):

    .. math:: \sum_{x,y} (f^*(x,y) - f(x,y))^2 = \sum_{\text{cells}}
              \Big(\frac{p^2}{P^2} - \frac{2 p F}{P^2} + Q\Big),

    with ``F, Q`` the cell sums of ``f`` and ``f^2``. Dividing by ``n^2`` gives the MSE.
    """
    truth = np.asarray(truth, dtype=float)
    counts = np.asarray(counts, dtype=float)
    f = truth.shape[0] // counts.shape[0]
    if counts.shape[0] * f != truth.shape[0] or counts.shape[0] != counts.shape[1]:
        raise ParameterError(f"counts of shape {counts.shape} do not tile a {truth.shape} map")
    p = to_density(counts)
    F, Q = block_sum(truth, f), block_sum(truth**2, f)
    return float(np.sum(p**2 / f**2 - 2 * p * F / f**2 + Q))


def nonprivate_best_level(rows, cols, depth: int, truth, *, shard_size: int = 10_000,
                          dropout: float = 0.0, rng=None) -> FederatedEstimate:
    r"""The paper's non-private baseline (Bagdasaryan et al. 2022, section 6.2, Table 1 row
    "Non-private"): the users that report (after dropouts) send their location in the clear,
    the server builds the map of every quadtree level ``l = 0..depth`` (a uniform
    ``2^l x 2^l`` grid, each cell's count spread evenly over its pixels) and keeps the level
    with the lowest MSE against the ground truth: "we build a map for every level of the
    quadtree and pick the level that produces the best metric".

    One level for the whole map, so it is never better than :func:`nonprivate` (whose per-cell
    oracle may pick a different level in every cell, the single level among its choices).
    The chosen level and the per-level MSE (:func:`level_errors` / ``n^2``) are in
    ``log[0]``. Communication: the 2 coordinates.
    """
    rng = check_rng(rng)
    truth = np.asarray(truth, dtype=float)
    side = 1 << check_int(depth, "depth", low=0, high=14)
    if truth.shape != (side, side):
        raise ParameterError(f"truth must be {side}x{side} for depth {depth}, got {truth.shape}")
    r, c = _reporting(rows, cols, shard_size, dropout, rng)
    est = _sample_levels(r, c, depth, range(depth + 1))
    errors = {lv: level_errors(h, truth) / side**2 for lv, h in est.items()}
    best = min(errors, key=errors.get)
    density = _upsample(to_density(est[best]), side >> best) / float(side >> best) ** 2
    return FederatedEstimate(density=density, accounting=Accounting(extra_comm=2),
                             log=[{"level": best, "mse_by_level": errors}])


def flat_onehot(rows, cols, depth: int, epsilon: float, *, rng=None, **secagg) -> FederatedEstimate:
    """Flat one-hot encoding (Bagdasaryan et al. 2022, 5.1): Algorithm 1 on the ``4^depth`` pixels with all of eps."""
    rng = check_rng(rng)
    codes = cell_codes(np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64),
                       depth, depth)
    h = histogram_query(codes, 4**depth, epsilon, rng=rng, **secagg)
    acc = Accounting()
    acc.add_round(h.epsilon, h.vector_length)
    return FederatedEstimate(density=to_density(_level_counts_from_hist(h.counts, depth)),
                             accounting=acc)


def geometric_budget(epsilon: float, levels) -> np.ndarray:
    r"""Cormode et al.'s geometric budget over quadtree levels: ``eps_l ~ 2^(l/3)`` (the
    finest level the largest share), summing to ``epsilon``."""
    epsilon = check_epsilon(epsilon)
    lv = np.asarray(list(levels), dtype=float)
    w = 2.0 ** (lv / 3.0)
    return epsilon * w / w.sum()


def _per_level(rows, cols, depth, truth, budgets: dict[int, float], rng, secagg):
    rows, cols = np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64)
    est, acc = {}, Accounting()
    for lv, eps in budgets.items():
        h = histogram_query(cell_codes(rows, cols, depth, lv), 4**lv, eps, rng=rng, **secagg)
        acc.add_round(h.epsilon, h.vector_length)
        est[lv] = _level_counts_from_hist(h.counts, lv)
    # Appending the levels into one SecAgg vector (Bagdasaryan et al. 2022, 5.1) is one round of sum_l 4^l integers.
    merged = Accounting(epsilons=[acc.epsilon_per_user], vector_lengths=[acc.communication])
    return FederatedEstimate(density=oracle_partition(est, truth), accounting=merged)


def hierarchical_onehot(rows, cols, depth: int, epsilon: float, truth, *, first_level: int = 1,
                        rng=None, **secagg) -> FederatedEstimate:
    """Hierarchical one-hot (Bagdasaryan et al. 2022, 5.1): levels ``first_level..depth`` with ``eps/L`` each."""
    epsilon = check_epsilon(epsilon)
    levels = range(check_int(first_level, "first_level", low=0, high=depth), depth + 1)
    budgets = {lv: epsilon / len(levels) for lv in levels}
    return _per_level(rows, cols, depth, truth, budgets, check_rng(rng), secagg)


def spatial_decomposition(rows, cols, depth: int, epsilon: float, truth, *, first_level: int = 1,
                          rng=None, **secagg) -> FederatedEstimate:
    """Private spatial decomposition (Cormode et al. 2012) with the geometric budget over
    levels ``first_level..depth`` (Bagdasaryan et al. 2022, 6.2), best partition by oracle."""
    levels = list(range(check_int(first_level, "first_level", low=0, high=depth), depth + 1))
    budgets = dict(zip(levels, geometric_budget(epsilon, levels), strict=True))
    return _per_level(rows, cols, depth, truth, budgets, check_rng(rng), secagg)


_PRIME = 2_147_483_647  # 2^31 - 1, for the pairwise-independent hash family


def count_min_sketch(rows, cols, depth: int, epsilon: float, truth, *, width: int = 2000,
                     sketch_depth: int = 20, first_level: int = 1, rng=None,
                     **secagg) -> FederatedEstimate:
    r"""Count-min sketch hierarchical encoding (Bagdasaryan et al. 2022, 5.1): at each level a client adds 1 to one
    counter per sketch row, ``h_j(x) = ((a_j x + b_j) mod p) mod width`` (public hash functions);
    L1 sensitivity = ``sketch_depth``. Cells are estimated by the *median* over rows: with
    two-sided DP noise the minimum is biased by about ``-2 sigma`` per row pair and collapses to 0
    after clipping, so we use the count-median variant (documented deviation)."""
    width = check_int(width, "width", low=1)
    sketch_depth = check_int(sketch_depth, "sketch_depth", low=1)
    epsilon = check_epsilon(epsilon)
    rng = check_rng(rng)
    rows, cols = np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64)
    levels = list(range(check_int(first_level, "first_level", low=0, high=depth), depth + 1))
    eps_l = epsilon / len(levels)
    a = rng.integers(1, _PRIME, size=sketch_depth)
    b = rng.integers(0, _PRIME, size=sketch_depth)
    offs = np.arange(sketch_depth) * width

    def hashes(x):
        return (a[None, :] * x[:, None] + b[None, :]) % _PRIME % width + offs[None, :]

    est, total_len = {}, 0
    n = rows.size
    for lv in levels:
        x = cell_codes(rows, cols, depth, lv)
        cols_idx = hashes(x).ravel()
        mat = sp.csr_matrix((np.ones(cols_idx.size, dtype=np.int64), cols_idx,
                             np.arange(0, cols_idx.size + 1, sketch_depth)),
                            shape=(n, sketch_depth * width))
        h = histogram_query(mat, sketch_depth * width, eps_l, sensitivity=sketch_depth, rng=rng,
                            **secagg)
        total_len += h.vector_length
        cells = np.arange(4**lv, dtype=np.int64)
        est[lv] = np.median(h.counts[hashes(cells)], axis=1).reshape(1 << lv, 1 << lv)
    acc = Accounting(epsilons=[epsilon], vector_lengths=[total_len])
    return FederatedEstimate(density=oracle_partition(est, truth), accounting=acc)


def _edges(lo: int, hi: int, m: int) -> np.ndarray:
    return np.unique(np.round(np.linspace(lo, hi, m + 1)).astype(np.int64))


def adaptive_grid(rows, cols, depth: int, epsilon: float, *, m1: int = 10, alpha: float = 0.5,
                  c2: float = 10.0, rng=None, **secagg) -> FederatedEstimate:
    r"""Adaptive grid of Qardaji, Yang and Li (ICDE 2013) on the distributed primitive (Bagdasaryan et al. 2022, 6.2).

    Round 1: ``m1 x m1`` uniform grid with ``alpha eps``. Round 2: cell ``i`` with noisy count
    ``N'_i`` is split into ``m2 x m2``, ``m2 = ceil(sqrt(max(N'_i, 0) (1 - alpha) eps / c2))``
    (at least 1, at most the cell's pixel width), queried with ``(1 - alpha) eps``. The released
    map spreads each round-2 count over its sub-cell (the original's constrained inference
    between the two levels is omitted, as in the paper's adaptation).
    """
    epsilon = check_epsilon(epsilon)
    alpha = check_positive(alpha, "alpha")
    if alpha >= 1:
        raise ParameterError(f"alpha must be in (0, 1), got {alpha}")
    c2 = check_positive(c2, "c2")
    m1 = check_int(m1, "m1", low=1)
    rng = check_rng(rng)
    rows, cols = np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64)
    side = 1 << depth
    e1 = _edges(0, side, m1)
    k1 = e1.size - 1
    ri = np.searchsorted(e1, rows, side="right") - 1
    ci = np.searchsorted(e1, cols, side="right") - 1
    h1 = histogram_query(ri * k1 + ci, k1 * k1, alpha * epsilon, rng=rng, **secagg)
    acc = Accounting()
    acc.add_round(h1.epsilon, h1.vector_length)
    eps2 = (1 - alpha) * epsilon
    slot = np.empty(rows.size, dtype=np.int64)
    cells = []
    offset = 0
    for i in range(k1):
        for j in range(k1):
            n_est = max(float(h1.counts[i * k1 + j]), 0.0)
            m2 = max(1, math.ceil(math.sqrt(n_est * eps2 / c2)))
            m2 = min(m2, e1[i + 1] - e1[i], e1[j + 1] - e1[j])
            er, ec = _edges(e1[i], e1[i + 1], m2), _edges(e1[j], e1[j + 1], m2)
            inside = (ri == i) & (ci == j)
            sr = np.searchsorted(er, rows[inside], side="right") - 1
            sc = np.searchsorted(ec, cols[inside], side="right") - 1
            slot[inside] = offset + sr * (ec.size - 1) + sc
            cells.append((er, ec, offset))
            offset += (er.size - 1) * (ec.size - 1)
    h2 = histogram_query(slot, offset, eps2, rng=rng, **secagg)
    acc.add_round(h2.epsilon, h2.vector_length)
    counts = np.clip(h2.counts, 0, None).astype(float)
    out = np.zeros((side, side))
    for er, ec, off in cells:
        nr, nc = er.size - 1, ec.size - 1
        for a in range(nr):
            for b in range(nc):
                r0, r1, c0, c1 = er[a], er[a + 1], ec[b], ec[b + 1]
                out[r0:r1, c0:c1] = counts[off + a * nc + b] / ((r1 - r0) * (c1 - c0))
    return FederatedEstimate(density=to_density(out), accounting=acc)
