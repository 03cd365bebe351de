r"""The worst-case-loss LP of OPTMech on a metric space: which rows it needs, how the space
looks to the plan (Imola et al. 2022, section 2.1).

.. math:: \mathcal{P}_{\mathrm{OPTMECH}}(\epsilon):\ \min_{M, k} k \quad\text{s.t.}\quad
          \sum_w D_{uw} M_{uw} \le k,\ \sum_w M_{uw} = 1,\ M \ge 0,\
          M_{uw} \le e^{\epsilon D_{uv}} M_{vw}\ \ \forall u \ne v, w

A privacy row ``(u, v, w)`` is implied by ``(u, z, w)`` and ``(z, v, w)`` whenever
``D[u, z] + D[z, v] == D[u, v]``, so such pairs are dropped for every column
(:func:`nonredundant_pairs`). :func:`median_detour` and :func:`median_two_hop_slack` measure how
nearly points lie between others, which decides the rounds the plan picks
(:func:`mdp.families.optimal.plan.plan`).
"""

from __future__ import annotations

import numpy as np

from ...spaces.metric_space import MetricSpace

__all__ = ["two_hop_distances", "nonredundant_pairs", "median_detour", "median_two_hop_slack",
           "is_map_space", "gap_target_met", "left_out_rows", "OPTIMAL_MAX_N", "HIGHS_MAX_N",
           "QUICK_MAX_N"]

#: Largest space on which "optimal" applies (``solver="blocks"``; its block inverses take
#: ``4 n^3`` bytes, 4 GB at n = 1000). The full LP has n^2 (n-1) rows (10^9 at n = 1000).
OPTIMAL_MAX_N = 1000
#: Largest space of the HiGHS solves, lazy and full (10^7 rows at n = 216).
HIGHS_MAX_N = 250
#: Largest n included in quick runs (``mdp curves`` builds ~30-60 calibrated mechanisms).
QUICK_MAX_N = 30


def two_hop_distances(distances: np.ndarray) -> np.ndarray:
    r"""``T[u, v] = min_{z \notin \{u, v\}} D[u, z] + D[z, v]``: the shortest way from ``u`` to ``v``
    through a third point (``inf`` on the diagonal and when ``n < 3``).

    Shared by :func:`nonredundant_pairs` (a pair is implied when ``T = D``) and
    :func:`median_detour` and :func:`median_two_hop_slack` (how nearly some point lies between
    the two).
    """
    D = np.asarray(distances, dtype=float)
    n = D.shape[0]
    T = np.full((n, n), np.inf)
    idx = np.arange(n)
    for u in range(n):
        S = D[u][:, None] + D  # S[z, v] = D[u, z] + D[z, v]
        S[u, :] = np.inf
        S[idx, idx] = np.inf
        T[u] = S.min(axis=0)
    T[idx, idx] = np.inf
    return T


def nonredundant_pairs(distances: np.ndarray, rtol: float = 1e-12, *,
                       two_hop: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    r"""Ordered pairs ``(u, v)``, ``u != v``, whose privacy rows are not implied by others.

    ``(u, v)`` is implied when some ``z`` outside ``{u, v}`` has
    ``D[u, z] + D[z, v] <= D[u, v] (1 + rtol)``: then ``M_uw <= e^{eps D_uz} M_zw <=
    e^{eps (D_uz + D_zv)} M_vw``. Ties are resolved transitively (the shortest-path witness chain
    of an implied pair consists of strictly shorter pairs, which are kept or implied in turn).
    ``two_hop``: :func:`two_hop_distances` of ``distances`` if already computed.

    Returns
    -------
    pu, pv : int arrays of the kept ordered pairs.
    """
    D = np.asarray(distances, dtype=float)
    T = two_hop_distances(D) if two_hop is None else two_hop
    keep = ~np.eye(D.shape[0], dtype=bool) & ~(T <= D * (1.0 + rtol))
    keep[D <= 0] = False  # zero distance: only possible on the diagonal (metric space)
    return np.nonzero(keep)


def median_detour(distances: np.ndarray, *, two_hop: np.ndarray | None = None) -> float:
    r"""Median over the pairs ``u < v`` of the least detour through a third point,
    ``min_z (D_uz + D_zv) / D_uv - 1`` (``inf`` when ``n < 3``).

    OPTMech's binding rows ``M_vw >= e^{-eps D_uv} M_uw`` join points that lie nearly on the way
    to the column's point, so the smaller this is, the longer the chains of rows the lazy solve
    must discover round by round: 0.0004 on the Geolife cells, 0.004 on our fastText vectors,
    0.4-0.5 on GloVe, 0.02 / 0.15 / 0.38 / 0.5 for Gaussian points in 3 / 5 / 12 / 20
    dimensions (n = 70-100; ``docs/design/lp.md``, "Two statistics of the distances").
    """
    D = np.asarray(distances, dtype=float)
    T = two_hop_distances(D) if two_hop is None else two_hop
    iu, iv = np.triu_indices(D.shape[0], 1)
    ok = D[iu, iv] > 0
    if not ok.any():
        return float("inf")
    return float(np.median(T[iu, iv][ok] / D[iu, iv][ok] - 1.0))


def median_two_hop_slack(distances: np.ndarray, epsilon: float, *,
                         two_hop: np.ndarray | None = None) -> float:
    r"""Median over the pairs ``u < v`` of ``eps (T_uv - D_uv)``, ``T`` the
    :func:`two_hop_distances` (``inf`` when ``n < 3``).

    The privacy row of ``(u, v)`` at ``eps`` is implied by the rows through the best third point
    ``z`` up to the factor ``e^{eps (D_uz + D_zv - D_uv)}``: this is the logarithm of that
    factor for the median pair, :func:`median_detour` in units of ``1 / eps``. At large values
    the rows through each column's own point and a few more decide the optimum and warm simplex
    rounds are cheap even where points lie nearly between others (Gaussian points in 5-d at
    ``eps = 6 / median distance``, slack 0.9: 3.3 s against 12.8 s for interior rounds).
    Our spaces: ~0.001 on the Geolife cells, ~0.01 on our fastText vectors, 2.4-2.8 on GloVe
    at eps 1 and 0.28 at eps 0.1; Gaussian points at ``eps = 2 / median distance``: 0.06 / 0.3 /
    0.56 / 0.77 / 1.0 in 3 / 5 / 8 / 12 / 20 dimensions (``docs/design/lp.md``, "Two
    statistics of the distances").
    """
    D = np.asarray(distances, dtype=float)
    T = two_hop_distances(D) if two_hop is None else two_hop
    iu, iv = np.triu_indices(D.shape[0], 1)
    if iu.size == 0 or not np.isfinite(T[iu, iv]).all():
        return float("inf")
    return float(epsilon) * float(np.median(T[iu, iv] - D[iu, iv]))


def is_map_space(space: MetricSpace) -> bool:
    """Whether ``space`` is a map-like space: points on the sphere, or in at most 3 dimensions.

    On such spaces (location cells, grids) many points are close to each other in few directions,
    so the optimum chains mass through near pairs and the lazy solve converges faster when it
    starts with the near-neighbour rows (:func:`mdp.families.optimal.plan.default_knn`). Text
    embeddings (tens of dimensions) are not. A space built from distances alone (no points) is not map-like. (Whether
    the rounds are interior is decided by the distances and eps,
    :func:`mdp.families.optimal.plan.default_solver`.)
    """
    pts = space.points
    return space.metric == "haversine" or (pts is not None and np.ndim(pts) == 2 and pts.shape[1] <= 3)



def gap_target_met(loss: float, bound: float, target: float, distances: np.ndarray, *,
                   absolute_gap: float = 1e-12) -> bool:
    r"""Whether a certified loss meets a relative gap target against a lower bound.

    .. math:: L - B \le \max(\tau L,\ a \cdot \max_{u, v} D_{uv})

    with ``a = absolute_gap`` (:attr:`~mdp.families.optimal.tuning.OptimalTuning.absolute_gap`).
    The absolute floor keeps the test meaningful where the optimum itself vanishes (at large
    eps the optimal matrix is nearly the identity: 60 random points in 3-d at eps 400 have a
    loss of 7.9e-36 and a bound of 0, a relative gap of 1 with an absolute one of 7.9e-36).
    """
    return bool(loss - bound <= max(target * loss, absolute_gap * float(np.max(distances))))


def left_out_rows(D: np.ndarray, epsilon: float, pu, pv, max_coefficient: float) -> int:
    """Privacy rows (all columns) the LP left out for a coefficient above ``max_coefficient``."""
    return int(np.count_nonzero(epsilon * D[pu, pv] > np.log(max_coefficient))) * D.shape[0]
