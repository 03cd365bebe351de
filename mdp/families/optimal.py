r"""OPTMech: the exact optimum of the worst-case-loss LP (Imola et al. 2022, section 2.1).

.. math:: \mathcal{P}_{\mathrm{OPTMECH}}(\epsilon):\ \min_{M, k} k \quad\text{s.t.}\quad
          \sum_w D_{uw} M_{uw} \le k,\ \sum_w M_{uw} = 1,\ M \ge 0,\
          M_{uw} \le e^{\epsilon D_{uv}} M_{vw}\ \ \forall u \ne v, w

How it is solved here (the LP engine is :mod:`mdp.lp`; design notes in ``docs/design/lp.md``)
----------------------------------------------------------------------------------------------
* **Exact redundancy removal.** A privacy row ``(u, v, w)`` is implied by ``(u, z, w)`` and
  ``(z, v, w)`` whenever ``D[u, z] + D[z, v] == D[u, v]`` (``e^{eps D_uz} e^{eps D_zv} = e^{eps D_uv}``),
  so such pairs are dropped for every column ``w`` (collinear grid cells along meridians; graph
  metrics keep only geodesic-free pairs). The test uses a relative tolerance ``redundancy_rtol``
  (default 1e-12, far below the certification tolerance); the final check below covers the
  dropped rows anyway.
* **Row generation over column blocks (default from 50 points, ``method="blocks"``).** The same
  rounds as below, each solved by the interior point method over the LP's column blocks
  (:func:`mdp.lp.block_rounds.solve_worst_case_lp_block_rounds`: ``n`` dense ``n x n``
  factorisations per iteration instead of a sparse factorisation of the whole LP); loose rounds
  find rows, tight ones end when the repaired matrix is certified. Where the method's accuracy
  (about ``1e-6``) falls short of the target, HiGHS's lazy solve finishes from its rows. The
  only method above 250 points (up to 1000, 4 GB of block inverses).
* **Lazy row generation on HiGHS (``method="lazy"``, default below 50 points).** Start from the rows through each column's
  own point, plus near-neighbour pairs on map spaces (:func:`is_map_space`), and generate the
  violated rows round by round (:func:`mdp.lp.worst_case.solve_worst_case_lp_lazy`, run by the
  state machine of :class:`mdp.lp.RowGeneration`: warm dual simplex rounds, or on large spaces
  where points lie nearly between others (:func:`median_detour`, :func:`median_two_hop_slack`:
  maps, fastText) interior rounds,
  then crossover and warm dual simplex for the last ones).
* **Dualised full solve (``method="full"``).** Every non-redundant row at once, in the LP's dual
  form (:func:`mdp.lp.worst_case.solve_worst_case_lp`).
* **Coefficient limits.** Rows with a coefficient ``e^{eps D_uv}`` above a limit are left out and
  the LP is solved again with a smaller limit when HiGHS fails or the gap stays large
  (:data:`mdp.lp.worst_case.MAX_COEFFICIENTS`); every such LP is a relaxation, so its bound holds.
* **Certification of exactness.** After solving, all ``n^2 (n - 1)`` privacy constraints are
  evaluated on the returned matrix and the largest violation is recorded; a violation beyond
  solver tolerance raises. The matrix is then lifted to its private envelope
  (:func:`mdp.verification.repair_to_private`) and the optimality gap is its loss minus a
  rigorous Lagrangian lower bound (:func:`mdp.lp.worst_case.lagrangian_lower_bound`), so
  ``stats["optimality_gap"]`` bounds how far the matrix is from the true optimum. The registry's
  :class:`~mdp.Mechanism` certifies the returned matrix (once).
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass

import numpy as np

from ..candidate import Candidate
from ..errors import AccuracyWarning, ParameterError
from ..lp import SOLVERS, LPError, LPTimeout, explain_failures, stochastic_rows
from ..lp.block_rounds import (
    SEPARATION_TOL,
    TIGHT_SEPARATION_TOL,
    TIGHT_TOL,
    gap_round_tol,
    solve_worst_case_lp_block_rounds,
)
from ..lp.column_blocks import fits_in_memory
from ..lp.column_mix import least_loss_column_mix, lower_envelope
from ..lp.output import LOG_DOMAIN_C, balanced_envelope, candidate_loss, private_candidate
from ..lp.worst_case import (
    MAX_COEFFICIENTS,
    check_lazy_solver,
    max_privacy_violation,
    solve_worst_case_lp,
    solve_worst_case_lp_lazy,
)
from ..params import Param
from ..registry import register
from ..space import MetricSpace
from .exponential import exponential_floor

__all__ = ["two_hop_distances", "nonredundant_pairs", "median_detour", "median_two_hop_slack",
           "is_map_space", "default_knn", "default_solver", "default_method", "OPTIMAL_MAX_N",
           "HIGHS_MAX_N", "BLOCKS_MIN_N", "CHAIN_DETOUR",
           "CHAIN_SLACK", "METHODS", "FINISH_NEAR", "FINISH_TIME_FACTOR", "FINISH_MIN_SECONDS",
           "ABSOLUTE_GAP", "gap_target_met"]

#: Largest space on which "optimal" applies (``method="blocks"``; its block inverses take
#: ``4 n^3`` bytes, 4 GB at n = 1000). The full LP has n^2 (n-1) rows (10^9 at n = 1000).
OPTIMAL_MAX_N = 1000
#: Largest space of the HiGHS methods ``"lazy"`` and ``"full"`` (10^7 rows at n = 216).
HIGHS_MAX_N = 250
#: Smallest space on which ``method=None`` picks ``"blocks"`` (below it HiGHS's rounds are as fast).
BLOCKS_MIN_N = 50
#: Largest n included in quick runs (``mdp curves`` builds ~30-60 calibrated mechanisms).
QUICK_MAX_N = 30
#: Largest absolute violation ``M[u,w] - e^{eps D_uv} M[v,w]`` accepted from the solver (it is
#: then repaired by :func:`mdp.verification.certify`); beyond it the build fails.
VIOLATION_ATOL = 1e-6
#: A build retries with the next coefficient limit when its relative gap (certified loss against the
#: best Lagrangian bound so far) is above this.
RETRY_RTOL = 1e-6
#: A gap target also counts as met when the absolute gap is at most this times the largest
#: distance (where the optimum is itself ~0, a relative gap says nothing: :func:`gap_target_met`).
ABSOLUTE_GAP = 1e-12
#: Smallest map space on which ``build_optimal`` defaults to interior rounds (below it the simplex
#: rounds are cheaper; figures in ``docs/design/lp.md``).
IPM_MIN_N = 45
#: Largest :func:`median_detour` at which ``build_optimal`` defaults to interior rounds: below it
#: the simplex rounds chain rows slowly (fastText n = 100 at 0.004: over 900 s against 187 s),
#: above it they are cheaper (GloVe n = 100 at 0.46: 14 s against 21 s); figures in
#: ``docs/design/lp.md``, "OPTMech" in the plan.
CHAIN_DETOUR = 0.2
#: Largest :func:`median_two_hop_slack` at which the lazy solves default to interior rounds
#: (OPTMech: together with ``CHAIN_DETOUR``; SpannerMech: alone, at ``eps / stretch``): the two
#: solvers tie near 0.6 on every space measured (``docs/design/lp.md``, "OPTMech" in
#: the plan).
CHAIN_SLACK = 0.6
#: ``method="blocks"``: where the rounds' plateau is within this factor of the target, HiGHS's
#: finish gets at most ``FINISH_TIME_FACTOR`` times the rounds' seconds (at least
#: ``FINISH_MIN_SECONDS``); when it runs out or fails, the rounds' certified result stands
#: (no attempt at a lower coefficient limit follows). The finish ended within its time only in
#: builds up to about 100 points (Geolife n = 100: 31 s); from 200 points it never did, whether
#: given as long as the rounds took (fastText n = 200 at eps 2: stopped after 390 s; Geolife
#: n = 200 at eps 0.1 and Table 2's n = 250: after 287 s and 731 s) or 1,280 s more (Geolife
#: n = 200 at eps 1), which doubled those builds (``docs/design/lp.md``).
FINISH_NEAR = 10.0
FINISH_TIME_FACTOR = 0.1
FINISH_MIN_SECONDS = 60.0
#: ``gap=`` mode: the per-column mix (:class:`_GapRepair`) is tried on a restricted optimum whose
#: balanced envelope is certified within this factor of the target (it cut the gap 1.5-8x on the
#: Geolife and GloVe iterates measured; its LP takes about 15 s at n = 500, so further off it
#: would cost time and rarely reach the target), with this many earlier repairs among its atoms.
MIX_TRY_FACTOR = 4.0
MIX_PREVIOUS = 2
#: Ways to solve the LP: lazy row generation on HiGHS, every row at once (dualised), or lazy
#: row generation whose rounds are solved over column blocks (:mod:`mdp.lp.block_rounds`).
METHODS = ("lazy", "full", "blocks")


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
    starts with the near-neighbour rows (:func:`default_knn`). Text embeddings (tens of
    dimensions) are not. A space built from distances alone (no points) is not map-like. (Whether
    the rounds are interior is decided by the distances and eps, :func:`default_solver`.)
    """
    pts = space.points
    return space.metric == "haversine" or (pts is not None and np.ndim(pts) == 2 and pts.shape[1] <= 3)


def default_knn(space: MetricSpace) -> int:
    """Near-neighbour pairs in the lazy solve's starting rows: 2 on map spaces, else 0."""
    return 2 if is_map_space(space) else 0


def default_solver(space: MetricSpace, method: str, epsilon: float, *,
                   two_hop: np.ndarray | None = None) -> str:
    """HiGHS method when ``solver=None``.

    ``"full"``: ``"ipm"`` (the dualised LP). ``"lazy"``: ``"ipm"`` (interior rounds) on spaces of
    ``n >= IPM_MIN_N`` points whose :func:`median_detour` is at most ``CHAIN_DETOUR`` and whose
    :func:`median_two_hop_slack` at ``epsilon`` is at most ``CHAIN_SLACK`` (maps, grids, graph
    metrics, clustered or low-dimensional embeddings such as our fastText vectors, unless eps is
    large), ``"simplex"`` (warm dual simplex rounds) otherwise (spread-out embeddings such as
    GloVe at any eps). ``two_hop``: :func:`two_hop_distances` of the space if already computed.
    """
    if method == "full":
        return "ipm"
    if space.n < IPM_MIN_N:
        return "simplex"
    T = two_hop_distances(space.distances) if two_hop is None else two_hop
    if (median_detour(space.distances, two_hop=T) <= CHAIN_DETOUR
            and median_two_hop_slack(space.distances, epsilon, two_hop=T) <= CHAIN_SLACK):
        return "ipm"
    return "simplex"


def default_method(space: MetricSpace) -> str:
    """``method`` when ``None``: ``"blocks"`` from ``BLOCKS_MIN_N`` points where its block
    inverses fit in memory (:func:`mdp.lp.column_blocks.fits_in_memory`: the host's packed
    inverses, or a GPU's that ``MDP_DEVICE`` allows), else ``"lazy"``."""
    return "blocks" if space.n >= BLOCKS_MIN_N and fits_in_memory(space.n) else "lazy"


def _applies(space: MetricSpace) -> str | None:
    if space.n > OPTIMAL_MAX_N:
        return (f"the exact LP has n^2(n-1) = {space.n ** 2 * (space.n - 1):,} privacy rows; "
                f"'optimal' is limited to n <= {OPTIMAL_MAX_N} (use 'constopt' or 'spanner')")
    return None


def _solve_by_block_rounds(space: MetricSpace, epsilon: float, pu, pv, *, solver: str, knn: int,
                           time_limit: float | None, gap: float | None) -> _Solved:
    """``method="blocks"``: row generation over column blocks until the repaired matrix is
    certified within ``gap`` (``RETRY_RTOL`` when exact); where the rounds' plateau stops short
    of it, HiGHS's lazy solve (``solver``) finishes from the rows they generated (if HiGHS
    fails, the least-loss matrix the test repaired stands, with the rounds' bound)."""
    t0 = time.perf_counter()
    D = space.distances
    allowed = np.zeros((space.n, space.n), dtype=bool)
    allowed[pu, pv] = True
    target = _gap_target(gap)
    conclusive = False

    repaired = {}        # the last matrix the test repaired and its repair; the least-loss one
    repair = None if gap is None else _GapRepair(
        D, epsilon, target, None if time_limit is None else t0 + time_limit)

    def within(loss, bound, factor=1.0):
        return gap_target_met(loss, bound, factor * target, D)

    def stop(M, bound):
        if repair is None:
            candidate = _near_optimal_candidate(M, D, epsilon)
            loss = candidate_loss(candidate[0], D, candidate[1])
        else:
            candidate, loss = repair(M, bound)
        repaired.update(M=M, candidate=candidate)
        if loss < repaired.get("best_loss", np.inf):
            repaired.update(best_M=M, best_candidate=candidate, best_loss=loss)
        return within(loss, bound), loss

    def least_loss():
        """The least-loss matrix the test repaired stands (with its repair)."""
        repaired.update(M=repaired["best_M"], candidate=repaired["best_candidate"])
        return repaired["best_M"]

    M, state, stats = solve_worst_case_lp_block_rounds(
        D, allowed, epsilon, knn=knn, time_limit=time_limit, stop=stop,
        tight_tol=TIGHT_TOL if gap is None else gap_round_tol(gap),
        tight_separation_tol=TIGHT_SEPARATION_TOL if gap is None else SEPARATION_TOL,
        test_from=None if gap is None else target)
    if not state.stopped and "best_M" in repaired and within(repaired["best_loss"], state.bound):
        # an earlier round's matrix, certified by a later round's bound (fastText-200 at eps 6:
        # round 19's matrix and round 21's bound, 9.3e-7): no finish needed
        M = least_loss()
        stats.update(certified_by="an earlier round's matrix and the best bound")
    elif not state.stopped:
        left = None if time_limit is None else time_limit - (time.perf_counter() - t0)
        if left is not None and left <= 0:
            raise LPTimeout(f"LP time limit of {time_limit:g} s reached after {state.rounds} "
                            f"column-block rounds")
        near = "best_M" in repaired and within(repaired["best_loss"], state.bound, FINISH_NEAR)
        budget = max(FINISH_MIN_SECONDS, FINISH_TIME_FACTOR * stats["seconds"]) if near else None
        capped = budget is not None and (left is None or budget < left)
        try:
            M, finish = solve_worst_case_lp_lazy(
                D, allowed, epsilon, time_limit=budget if capped else left, solver=solver,
                knn=knn, stop=None if gap is None else stop, gap=gap, initial_rows=state.rows)
        except LPError as exc:
            timed_out = isinstance(exc, LPTimeout)
            if "best_M" not in repaired or (timed_out and not capped):
                raise
            # HiGHS can fail where eps * D spans many orders of magnitude, or take far longer
            # than the rounds near their plateau: the rounds' best repaired matrix and their
            # bound stand. After a failure far from the target the caller's next attempts may
            # improve on them; near it, those lazy HiGHS solves from scratch over the same
            # coefficients cost far more than they can gain (Geolife n = 200 at eps 1.5 per
            # km: rounds 197 s to 1.5e-6, the next attempt's rounds 70 s each, over 20 min)
            M = least_loss()
            why = (f"stopped after {budget:.0f} s (FINISH_MIN_SECONDS or FINISH_TIME_FACTOR x "
                   f"the rounds' time)"
                   if timed_out else f"failed: {exc}")
            stats.update(finish_error=f"HiGHS's lazy finish ({solver}) {why}",
                         seconds=time.perf_counter() - t0)
            conclusive = timed_out or near
        else:
            finish.update(block_rounds=state.rounds, block_round_trace=state.trace,
                          closure_rows=stats["closure_rows"],
                          block_seconds=stats["seconds"],
                          block_ipm_iterations=stats["ipm_iterations"],
                          lower_bound=max(state.bound, finish["lower_bound"]),
                          seconds=time.perf_counter() - t0)
            stats = finish
    candidate = (repaired["candidate"] if repaired.get("M") is M
                 else _near_optimal_candidate(M, D, epsilon))
    violation = max_privacy_violation(stochastic_rows(M), D, epsilon)
    if repair is not None:
        stats.update(repair.counts())
    R, log, mix = candidate
    return _Solved(R, log, stats, candidate_loss(R, D, log), violation, mix, np.inf, conclusive)


@dataclass
class _Solved:
    """One solve at one coefficient limit, repaired to its private envelope.

    ``matrix`` holds log-probabilities when ``log`` (``eps * D`` beyond float64's range).
    """

    matrix: np.ndarray
    log: bool
    stats: dict
    loss: float
    violation: float
    uniform_mix: float
    max_coefficient: float
    #: No lower coefficient limit is tried after it (HiGHS's lazy solves would be slower still).
    conclusive: bool = False


def _near_optimal_candidate(M: np.ndarray, D: np.ndarray, epsilon: float):
    """``gap=`` mode: a restricted optimum made private (:func:`~mdp.lp.output.balanced_envelope`
    first, unless ``eps * D`` leaves float64's range, then the envelope and least uniform mix)."""
    M = stochastic_rows(M)
    if epsilon * D.max() <= LOG_DOMAIN_C:
        M = balanced_envelope(M, D, epsilon)
    return private_candidate(M, D, epsilon)


class _GapRepair:
    """``gap=`` mode's repair of restricted optima, with the earlier repairs it keeps as atoms.

    Each call repairs ``M`` by :func:`_near_optimal_candidate`; when that is certified within
    ``MIX_TRY_FACTOR`` times the target of the bound but not within the target, the least-loss
    per-column mix (:func:`mdp.lp.column_mix.least_loss_column_mix`) of that repair, the lower
    envelope of ``M``, the exponential kernel ``e^{-eps D}`` and the last ``MIX_PREVIOUS``
    repairs is tried too, and the cheaper candidate is returned. Candidates are
    ``(values, log, uniform_mix)`` as from :func:`~mdp.lp.output.private_candidate`.

    ``deadline`` (a ``time.perf_counter()`` value, or None) bounds the mixing LP by the build's
    ``time_limit``: HiGHS gets the seconds left, and no mix is tried once they are spent (the
    repair alone is returned, as when the mix fails).
    """

    def __init__(self, D: np.ndarray, epsilon: float, target: float,
                 deadline: float | None = None):
        self.D, self.epsilon, self.target = D, epsilon, target
        self.deadline = deadline
        self.mixable = bool(epsilon * D.max() <= LOG_DOMAIN_C)
        self.previous: list[np.ndarray] = []
        self.mixes = 0
        self.mixes_kept = 0

    def __call__(self, M: np.ndarray, bound: float):
        D, eps = self.D, self.epsilon
        candidate = _near_optimal_candidate(M, D, eps)
        loss = candidate_loss(candidate[0], D, candidate[1])
        if (self.mixable and not gap_target_met(loss, bound, self.target, D)
                and gap_target_met(loss, bound, MIX_TRY_FACTOR * self.target, D)):
            mixed = self._mix(stochastic_rows(np.array(M, dtype=float)), candidate[0])
            if mixed is not None:
                mixed_loss = candidate_loss(mixed[0], D, mixed[1])
                if mixed_loss < loss:
                    candidate, loss = mixed, mixed_loss
                    self.mixes_kept += 1
        if not candidate[1]:
            self.previous = (self.previous + [candidate[0]])[-MIX_PREVIOUS:]
        return candidate, loss

    def counts(self) -> dict:
        """``column_mixes`` (mixes tried) and ``column_mixes_kept`` (cheaper than the envelope)."""
        return {"column_mixes": self.mixes, "column_mixes_kept": self.mixes_kept}

    def _mix(self, M: np.ndarray, repaired: np.ndarray):
        D, eps = self.D, self.epsilon
        left = None if self.deadline is None else self.deadline - time.perf_counter()
        if left is not None and left <= 0:
            return None
        self.mixes += 1
        atoms = [repaired, lower_envelope(M, D, eps), np.exp(-eps * D)] + self.previous
        mixed = least_loss_column_mix(atoms, D, time_limit=left)
        if mixed is None or not np.all(mixed.sum(axis=1) > 0):
            return None
        return private_candidate(stochastic_rows(mixed), D, eps, log=False)


def _solve_at_limit(space: MetricSpace, epsilon: float, pu, pv, *, method: str, solver: str, knn: int,
                    max_coefficient: float, time_limit: float | None, gap: float | None = None) -> _Solved:
    """Solve with rows up to ``max_coefficient``; check every row; repair to the private envelope.

    With ``gap`` the lazy loop stops as soon as the repaired matrix's loss is within ``gap``
    (relative) of the Lagrangian bound; its rows may then be violated (the repair fixes them).
    """
    t0 = time.perf_counter()
    D = space.distances
    tested = {}     # in gap mode: the last matrix the lazy loop tested, and its repair
    if method == "lazy":
        allowed = np.zeros((space.n, space.n), dtype=bool)
        allowed[pu, pv] = True
        repair = None if gap is None else _GapRepair(
            D, epsilon, gap, None if time_limit is None else t0 + time_limit)

        def stop(M, bound):
            # normalised once, as the solution below will be (the repair normalises M in place)
            tested["M"] = stochastic_rows(np.array(M, dtype=float))
            candidate, loss = repair(M, bound)
            tested["candidate"] = candidate
            return gap_target_met(loss, bound, gap, D), loss

        M, stats = solve_worst_case_lp_lazy(D, allowed, epsilon, time_limit=time_limit, solver=solver,
                                            knn=knn, max_coefficient=max_coefficient,
                                            stop=None if gap is None else stop, gap=gap)
        if repair is not None:
            stats.update(repair.counts())
    else:
        M, stats = solve_worst_case_lp(D, pu, pv, epsilon, time_limit=time_limit, solver=solver,
                                       max_coefficient=max_coefficient)
    M = stochastic_rows(M)
    # rows left out by the coefficient limit are decided by the envelope, not checked here; in
    # gap mode the solution is a restricted optimum whose violations the repair handles
    violation = max_privacy_violation(M, D, epsilon, max_coefficient)
    if violation > VIOLATION_ATOL and gap is None:
        raise LPError(f"the LP solution violates a privacy row by {violation:.3g} (> {VIOLATION_ATOL}); "
                      "the solver did not converge to a feasible optimum")
    if gap is None:
        M, log, mix = _least_loss_repair(M, D, epsilon)
    elif "M" in tested and np.array_equal(tested["M"], M):
        M, log, mix = tested["candidate"]
    else:
        M, log, mix = _near_optimal_candidate(M, D, epsilon)
    loss = candidate_loss(M, D, log)
    return _Solved(M, log, stats, loss, violation, mix, max_coefficient)


def _least_loss_repair(M: np.ndarray, D: np.ndarray, epsilon: float):
    """An exact solution made private by the cheaper of two repairs: the envelope and least
    uniform mix alone (:func:`~mdp.lp.output.private_candidate`), or after
    :func:`~mdp.lp.output.balanced_envelope` (:func:`_near_optimal_candidate`).

    A violation of ``7e-10`` left by HiGHS costs the uniform mix ``3.3e-7``, i.e. that times the
    largest distances in loss: on points in two clusters 1000 units apart (n = 12, eps 0.013) a
    relative gap of 5.5e-4, against 1.6e-6 when the violated entries are lifted first.
    """
    plain = private_candidate(M, D, epsilon)
    lifted = _near_optimal_candidate(M, D, epsilon)
    return min(plain, lifted, key=lambda c: candidate_loss(c[0], D, c[1]))


def _solve_over_coefficient_limits(solve, time_limit: float | None, rtol: float,
                                   distances: np.ndarray) -> tuple[_Solved, float, list[str]]:
    """``solve(max_coefficient, time_left)`` for each of ``MAX_COEFFICIENTS`` until the gap is
    small (:func:`gap_target_met` with ``rtol`` on ``distances``).

    Every restricted LP is a relaxation of the full one: each bound holds, the best is kept. The
    least loss is returned with the best bound and a line per attempt.
    """
    t0 = time.perf_counter()
    best, best_bound, attempts = None, -np.inf, []
    for max_coefficient in MAX_COEFFICIENTS:
        left = None if time_limit is None else time_limit - (time.perf_counter() - t0)
        if left is not None and left <= 0:
            raise LPTimeout(f"LP time limit of {time_limit:g} s reached after {len(attempts)} attempts")
        try:
            out = solve(max_coefficient, left)
        except LPTimeout:
            raise
        except LPError as exc:
            attempts.append(f"rows up to {max_coefficient:g}: {exc}")
            continue
        best_bound = max(best_bound, out.stats["lower_bound"])
        attempts.append(f"rows up to {max_coefficient:g}: loss {out.loss:.10g}, bound {out.stats['lower_bound']:.10g}")
        if best is None or out.loss < best.loss:
            best = out
        if gap_target_met(best.loss, best_bound, rtol, distances) or out.conclusive:
            break
    return best, best_bound, attempts


PARAMS = {
    "time_limit": Param("float", None, low=0.0, low_open=True, allow_none=True,
                        help="seconds for the LP work (None: no limit)"),
    "redundancy_rtol": Param("float", 1e-12, low=0.0, high=1e-9,
                             help="relative tolerance of the exact redundancy test"),
    "method": Param("choice", None, choices=METHODS, allow_none=True,
                    help="'blocks' (row generation over column blocks), 'lazy' (row generation "
                         "on HiGHS) or the 'full' LP (dualised); None: by the space"),
    "solver": Param("choice", None, choices=SOLVERS, allow_none=True,
                    help="HiGHS method (lazy: 'simplex' or 'ipm'); None: by the space"),
    "knn": Param("int", None, low=0, allow_none=True,
                 help="near-neighbour pairs in the lazy starting rows; None: by the space"),
    "gap": Param("float", None, low=0.0, high=1.0, high_open=True, allow_none=True,
                 help="certified relative gap at which the lazy solve stops (None: exact, <= 1e-6)"),
}


@register("optimal", description="exact optimal mechanism, worst-case-loss LP on HiGHS (OPTMech; Imola et al. 2022, 2.1)",
          applies=_applies, quick_max_n=QUICK_MAX_N, display_name="OPTMech", params=PARAMS)
def build_optimal(space: MetricSpace, epsilon: float, *, rng=None, time_limit: float | None = None,
                  redundancy_rtol: float = 1e-12, method: str | None = None,
                  solver: str | None = None,
                  knn: int | None = None, gap: float | None = None) -> Candidate:
    """The exact eps-mDP mechanism of least worst-case loss (OPTMech).

    Parameters
    ----------
    space : MetricSpace
    epsilon : float
    rng : unused (deterministic)
    time_limit : float > 0 or None
        Wall-clock seconds for the LP work; on timeout :class:`mdp.lp.LPTimeout` is raised (no matrix).
    redundancy_rtol : float in [0, 1e-9], default 1e-12
        Relative tolerance of the exact redundancy test (:func:`nonredundant_pairs`).
    method : {"blocks", "lazy", "full"} or None
        ``"blocks"``: row generation whose rounds are solved by the interior point method over
        column blocks (:func:`mdp.lp.block_rounds.solve_worst_case_lp_block_rounds`), finished
        by ``"lazy"`` from its rows where its accuracy (about ``1e-6``) does not certify the
        target (within ``FINISH_NEAR`` times the target, for at most ``FINISH_TIME_FACTOR``
        times the rounds' seconds or ``FINISH_MIN_SECONDS``: when that runs out, the rounds'
        certified result stands and ``stats["finish_error"]`` says so); the only method above ``HIGHS_MAX_N`` = 250 points.
        ``"lazy"``: row generation on HiGHS (:func:`mdp.lp.worst_case.solve_worst_case_lp_lazy`);
        ``"full"``: every non-redundant row at once, dualised
        (:func:`mdp.lp.worst_case.solve_worst_case_lp`). ``None``: :func:`default_method`
        (``"blocks"`` from ``BLOCKS_MIN_N`` = 50 points).
    solver : str or None
        ``"lazy"`` (and the finish of ``"blocks"``): ``"simplex"`` (warm-started dual simplex
        rounds) or ``"ipm"`` (interior point rounds without crossover, then crossover and warm
        dual simplex for the tail); ``"full"``: HiGHS method of the dualised LP. ``None``:
        :func:`default_solver` (``"blocks"``: ``"ipm"``, its rows being nearly complete).
    knn : int >= 0 or None
        Near-neighbour pairs in the initial rows of the lazy method
        (:func:`mdp.lp.worst_case.initial_triples`). ``None``: :func:`default_knn` (2 on map
        spaces, where they halve the rounds, 0 otherwise).
    gap : float in [0, 1) or None
        ``None`` (default): exact, certified relative gap ``<= RETRY_RTOL`` (1e-6). A number
        (e.g. 1e-3, ``method="lazy"`` only): the row generation stops as soon as the loss of the
        repaired (private) matrix is within ``gap`` relative of the Lagrangian lower bound of the
        restricted LP (a relaxation, so the bound is valid); ``stats["lower_bound"]``,
        ``stats["relative_gap"]`` and ``stats["gap_target"]`` record it (values below
        ``RETRY_RTOL`` ask for, and record, ``RETRY_RTOL``). Where a build ends certified above
        its target (``method="blocks"`` from about 150 points, when the interior point method's
        plateau and HiGHS's bounded finish both stop short; at any size where the worst-case
        loss is tiny against the distances and the solvers' absolute tolerances set the
        accuracy), ``stats["target_met"]`` is False and an :class:`mdp.errors.AccuracyWarning`
        says how far and why; the matrix is private as certified either way.

    Returns
    -------
    Candidate
        The optimal matrix and LP statistics: sizes (``variables``, ``rows`` of the LP last
        solved, ``nnz``), ``full_privacy_rows`` = n^2(n-1), ``redundant_pairs``, solver,
        iterations, ``rounds`` and ``phases`` (lazy), seconds, ``lp_objective``, ``lower_bound``,
        ``loss``, ``optimality_gap``, ``relative_gap``, ``target_met`` (:func:`gap_target_met`:
        the relative target, or an absolute gap of ``ABSOLUTE_GAP`` times the largest distance
        where the optimum is itself ~0) and ``max_privacy_violation`` over all
        n^2(n-1) triples (before the repair to the private envelope; ``loss`` and the gaps are of
        the repaired matrix), ``max_coefficient`` and ``attempts``: the LP is solved with the rows
        of coefficient up to ``MAX_COEFFICIENTS[0]``, and again with the next limit when HiGHS
        fails or the relative gap exceeds ``RETRY_RTOL``; the least loss is returned, with the
        best bound.
        ``method="blocks"``: ``round_trace`` holds a dict per round (``rows``, ``phase``,
        ``iterations``, ``seconds``, ``objective``, ``bound``, ``added``, ``closure``,
        ``certified``) and ``closure_rows`` the rows of the pair closure
        (:func:`mdp.lp.block_rounds.pair_closure`); where
        HiGHS finished, its statistics, with the rounds over blocks in ``block_round_trace``,
        ``block_rounds``, ``block_seconds`` and ``block_ipm_iterations``; where HiGHS's finish
        failed, the rounds' least-loss repaired matrix and their bound, with the reason in
        ``finish_error`` (no later coefficient limit is tried when the rounds were within
        ``FINISH_NEAR`` times the target, or when the finish ran out of its bounded time); where
        an earlier round's repaired matrix meets the target against the best bound of all
        rounds, no finish runs and ``certified_by`` says so.

    Raises
    ------
    mdp.errors.SolverTimeout
        When ``time_limit`` is reached (the message names n, epsilon and what to try).
    mdp.errors.SolverError
        Never for a solver failure: when HiGHS finds no optimum with any coefficient limit, the
        exponential mechanism at ``epsilon`` is returned with the reason in
        ``stats["fallback"]`` (:func:`mdp.families.exponential.exponential_floor`). Rows left out by the
        coefficient limit (``stats["unresolved_rows"]``) are decided by the envelope
        (:func:`mdp.lp.output.private_candidate`, in log-probabilities when ``eps * D`` exceeds
        float64's range); if the relative gap then stays above ``RETRY_RTOL`` the result is
        never worse than the exponential mechanism.
    """
    n = space.n
    if knn is None:
        knn = default_knn(space)
    if method is None:
        method = default_method(space)
    if method != "blocks" and n > HIGHS_MAX_N:
        raise ParameterError(f"method={method!r} is limited to n <= {HIGHS_MAX_N} points (its "
                             f"HiGHS LPs grow as n^3 rows), got n = {n}; use method='blocks'")
    if method in ("lazy", "blocks"):
        check_lazy_solver(solver)
    if gap is not None and method == "full":
        raise ParameterError(f"gap needs method='lazy' or 'blocks' (the full solve is exact), got "
                             f"method={method!r}")
    two_hop = two_hop_distances(space.distances)
    if solver is None:
        solver = "ipm" if method == "blocks" else default_solver(space, method, epsilon,
                                                                 two_hop=two_hop)
    pu, pv = nonredundant_pairs(space.distances, redundancy_rtol, two_hop=two_hop)

    def solve(max_coefficient: float, left: float | None) -> _Solved:
        if method == "blocks" and max_coefficient == MAX_COEFFICIENTS[0]:
            # the scaled rows of the column blocks have no coefficient above 1: one attempt
            return _solve_by_block_rounds(space, epsilon, pu, pv, solver=solver, knn=knn,
                                          time_limit=left, gap=gap)
        return _solve_at_limit(space, epsilon, pu, pv,
                               method="lazy" if method == "blocks" else method, solver=solver,
                               knn=knn, max_coefficient=max_coefficient, time_limit=left, gap=gap)

    target = _gap_target(gap)
    limit = "none" if time_limit is None else f"{time_limit:g} s"
    with explain_failures("OPTMech", n, epsilon,
                          on_timeout=f"a larger time_limit (now {limit}), or 'spanner' or 'constopt', "
                                     "which solve smaller LPs",
                          on_failure="another method ('blocks', 'lazy' or 'full') or solver "
                                     "('simplex' or 'ipm'), or 'spanner' with stretch=1 (the same LP)"):
        best, bound, attempts = _solve_over_coefficient_limits(solve, time_limit, target,
                                                               space.distances)
    if best is None:
        reason = "HiGHS found no optimum of the LP with any coefficient limit: " + "; ".join(attempts)
        warnings.warn(AccuracyWarning(f"OPTMech (n = {n}, epsilon = {epsilon:g}): {reason}. The "
                                      f"exponential mechanism at epsilon is returned instead "
                                      f"(private, not certified optimal; stats['fallback'])."),
                      stacklevel=3)  # the caller of mdp.build
        return exponential_floor(None, True, space.distances, epsilon,
                                 {"attempts": attempts, "method": method, "target_met": False},
                                 family="OPTMech", reason=reason)
    abs_gap = best.loss - bound
    stats = dict(best.stats)
    stats.update(full_privacy_rows=n * n * (n - 1), redundant_pairs=n * (n - 1) - len(pu),
                 max_privacy_violation=best.violation, loss=best.loss, lower_bound=bound,
                 optimality_gap=abs_gap, relative_gap=abs_gap / best.loss if best.loss > 0 else 0.0,
                 method=method, uniform_mix=best.uniform_mix, max_coefficient=best.max_coefficient,
                 gap_target=target,
                 attempts=attempts, unresolved_rows=_left_out_rows(space.distances, epsilon, pu, pv,
                                                                   best.max_coefficient))
    stats["target_met"] = gap_target_met(best.loss, bound, stats["gap_target"], space.distances)
    if not stats["target_met"]:
        warnings.warn(AccuracyWarning(_missed_target_message(n, epsilon, gap, stats)),
                      stacklevel=3)  # the caller of mdp.build
    if stats["unresolved_rows"] and not stats["target_met"]:
        # entries decided by the envelope, not by the LP: never worse than the exponential mechanism
        return exponential_floor(best.matrix, best.log, space.distances, epsilon, stats,
                                 family="OPTMech")
    if best.log:
        return Candidate(log_matrix=best.matrix, stats=stats)
    return Candidate(matrix=best.matrix, stats=stats)


def _gap_target(gap: float | None) -> float:
    """The relative gap a build aims at: ``RETRY_RTOL`` when exact, and never below it."""
    return RETRY_RTOL if gap is None else max(gap, RETRY_RTOL)


def gap_target_met(loss: float, bound: float, target: float, distances: np.ndarray) -> bool:
    r"""Whether a certified loss meets a relative gap target against a lower bound.

    .. math:: L - B \le \max(\tau L,\ \mathrm{ABSOLUTE\_GAP} \cdot \max_{u, v} D_{uv})

    The absolute floor keeps the test meaningful where the optimum itself vanishes (at large
    eps the optimal matrix is nearly the identity: 60 random points in 3-d at eps 400 have a
    loss of 7.9e-36 and a bound of 0, a relative gap of 1 with an absolute one of 7.9e-36).
    """
    return bool(loss - bound <= max(target * loss, ABSOLUTE_GAP * float(np.max(distances))))


def _missed_target_message(n: int, epsilon: float, gap: float | None, stats: dict) -> str:
    """The warning of a build certified above its gap target: how far, and why."""
    asked = (f"exact (gap <= {stats['gap_target']:g})" if gap is None
             else f"gap={stats['gap_target']:g}")
    why = stats.get("finish_error") or stats.get("rounds_ended") or "the solver's accuracy"
    return (f"OPTMech (n = {n}, epsilon = {epsilon:g}): certified relative gap "
            f"{stats['relative_gap']:.3g} is above the target asked for, {asked} ({why}). The "
            f"matrix is private as certified; its worst-case loss {stats['loss']:.10g} is within "
            f"{stats['optimality_gap']:.3g} of the optimum (stats['relative_gap'], "
            f"stats['lower_bound']).")


def _left_out_rows(D: np.ndarray, epsilon: float, pu, pv, max_coefficient: float) -> int:
    """Privacy rows (all columns) the LP left out for a coefficient above ``max_coefficient``."""
    return int(np.count_nonzero(epsilon * D[pu, pv] > np.log(max_coefficient))) * D.shape[0]
