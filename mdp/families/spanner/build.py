r"""SpannerMech's build (Bordenabe, Chatzikokolakis, Palamidessi, CCS 2014; Imola et al. 2022,
section 5): the worst-case-loss LP with privacy rows on a greedy delta-spanner's edges at
``eps / delta``.

The spanner and its path distances are in :mod:`mdp.families.spanner.formulation`; the path a
build takes is decided by :func:`mdp.families.spanner.plan.plan`; thresholds are the fields of
:class:`mdp.families.spanner.tuning.SpannerTuning`. The objective is Imola et al.'s worst-case
loss ``min max_u sum_w D_uw M_uw``. The mechanism is sub-optimal by design (it buys a smaller LP
with privacy budget): +5% loss at ``delta = 1.1`` and +20% at ``delta = 1.5`` were measured.

The default ``stretch = 1.5`` is our choice for the comparison: Imola et al. 2022 do not
state the dilation they used ("we implement the algorithm as it is described in Bordenabe et al. [2014]"),
and 1.5 is in the range Bordenabe et al. explore (their experiments use 1.1-2.0).
"""

from __future__ import annotations

import time
import warnings

import numpy as np

from ...candidate import Candidate
from ...errors import AccuracyWarning
from ...lp import SOLVERS, explain_failures, get_threads, stochastic_rows
from ...lp.build_report import BuildReport
from ...lp.output import LOG_DOMAIN_C, candidate_loss, private_candidate
from ...lp.plan import AUTO, BLOCKS, CLARABEL, Step, tuning_param
from ...lp.runner import run_steps
from ...params import Param
from ...prior.prior import Prior, objective_params, resolve_objective
from ...registry import register
from ...spaces.metric_space import MetricSpace
from ...worst_case.expected_loss import expected_loss_candidate, expected_solver
from ...worst_case.solve import solve_worst_case_lp, solve_worst_case_lp_lazy
from ...worst_case.sweep_start import Sweep, sweep_param
from ..exponential import exponential_floor
from ..optimal.formulation import HIGHS_MAX_N
from .formulation import greedy_spanner, spanner_distances
from .plan import peak_bytes, plan
from .tuning import SpannerTuning

__all__ = ["build_spanner", "PARAMS"]


PARAMS = {
    "stretch": Param("float", 1.5, low=1.0, help="spanner dilation delta (1: OPTMech's LP)"),
    "time_limit": Param("float", None, low=0.0, low_open=True, allow_none=True,
                        help="seconds for the LP (None: no limit)"),
    "method": Param("choice", AUTO, choices=(AUTO, "lazy", "full"),
                    help="'full' LP (dualised), 'lazy' row generation over the spanner rows, or "
                         "'auto': lazy on dense spanners (more than lazy_edges_per_point edges "
                         "per point)"),
    "solver": Param("choice", AUTO, choices=(AUTO, *SOLVERS, CLARABEL, BLOCKS), allow_none=True,
                    help="HiGHS method, or 'clarabel' or 'blocks' (full LP only); 'auto': by the "
                         "space and eps (lazy, as OPTMech's rounds) or 'hipo' without crossover, "
                         "'blocks' from blocks_from_n points (full)"),
    "knn": Param("int", 0, low=0, help="near-neighbour pairs in the lazy starting rows"),
    "rows": Param("choice", AUTO, choices=(AUTO, "edges", "paths"),
                  help="rows the lazy method generates: the spanner's 'edges', or every pair at "
                       "its spanner-path distance ('paths', the same LP); 'auto': paths when the "
                       "two-hop slack at eps/stretch is at most path_slack (with simplex rounds)"),
    "tuning": tuning_param(SpannerTuning),
    "sweep": sweep_param(),
    **objective_params(),
}


@register("spanner", description="LP with privacy rows on a greedy delta-spanner (Bordenabe et al. 2014)",
          quick_max_n=30, display_name="SpannerMech", params=PARAMS,
          peak_bytes=peak_bytes)
def build_spanner(space: MetricSpace, epsilon: float, *, rng=None, stretch: float = 1.5,
                  time_limit: float | None = None, method: str = AUTO, solver: str | None = AUTO,
                  knn: int = 0, rows: str = AUTO, tuning: SpannerTuning | None = None,
                  sweep: Sweep | None = None, objective: str = "worst",
                  prior: Prior | None = None) -> Candidate:
    """SpannerMech: worst-case-loss LP with privacy rows on spanner edges at ``eps / stretch``.

    Parameters
    ----------
    space : MetricSpace
    epsilon : float
    rng : unused (deterministic)
    stretch : float >= 1, default 1.5
        Spanner dilation ``delta``. ``1`` keeps every non-implied pair (then the LP is OPTMech's).
    time_limit : float > 0 or None
        Seconds for the LP; :class:`mdp.lp.LPTimeout` on timeout.
    method : {"auto", "lazy", "full"}, default "auto"
        ``"lazy"``: row generation over the spanner rows
        (:func:`mdp.worst_case.solve.solve_worst_case_lp_lazy`); ``"full"``: all spanner rows at
        once, dualised (:func:`mdp.worst_case.solve.solve_worst_case_lp`); ``"auto"``:
        :func:`mdp.families.spanner.plan.default_method` (lazy when the spanner has more than
        ``tuning.lazy_edges_per_point`` edges per point; full when ``solver`` is one the lazy
        rounds do not take). ``stats["method"]`` records the one used.
    solver : str, default "auto"
        ``None`` is ``"auto"``. HiGHS method (``"auto"`` for the lazy rounds: interior or warm
        dual simplex rounds by :func:`mdp.families.spanner.plan.default_lazy_solver`; for the
        full LP from ``tuning.blocks_from_n`` points the
        column-block method below (HiPO's chain if it fails), else ``"hipo"``, HiGHS's
        HiPO interior point code, *without crossover*: on these dualised LPs its direct
        factorisation beats IPX's iterative one from n ~ 200 on, and the interior optimum
        (optimality tolerance 1e-10) is repaired to its private envelope; where HiPO fails, IPX
        without crossover, then Clarabel (:func:`mdp.lp.conic.solve_clarabel`), then IPX with
        crossover take over, ``stats["final_method"]`` says which; an explicit ``"ipm"`` or
        ``"ipx"`` runs IPX with crossover, ``"clarabel"`` Clarabel alone, repaired like HiPO's
        point: the fast choice at small eps on map spaces, where HiPO and IPX stop short;
        ``"blocks"`` the column-block interior point method
        (:func:`mdp.worst_case.column_blocks.solve_worst_case_blocks`; ``n^3 / 2`` doubles of memory,
        or ``n^3`` on a GPU where CuPy sees one),
        repaired the same way: much faster from n ~ 100 on sparse spanners, but certified only
        to a relative gap of about 1e-6 to 1e-4, which ``stats["relative_gap"]`` reports; where
        it stalls above that and HiGHS's chain does not finish within its budget
        (``LazyRoundsTuning.stalled_time_factor``, ``stalled_min_seconds``), its best iterate
        is repaired in the same way, and an :class:`mdp.errors.AccuracyWarning` gives its
        certified gap).
    knn : int >= 0, default 0
        Near-neighbour pairs (that are spanner edges) in the initial lazy rows.
    rows : {"auto", "edges", "paths"}, default "auto"
        Rows the lazy method generates. ``"edges"``: the spanner's edge rows above.
        ``"paths"``: every pair ``(u, v)`` at its spanner-path distance,
        ``M_uw <= e^{(eps/delta) d_G(u,v)} M_vw``; each is implied by a chain of edge rows and the
        edges are among the pairs, so the LP and its optimum are the same, but a violation spread
        along a path is cut by one row instead of one round per edge. ``"auto"``: ``"paths"``
        (with simplex rounds) when the two-hop slack at ``eps / delta`` is at most
        ``tuning.path_slack`` and ``solver`` is ``"auto"`` or ``"simplex"``, else ``"edges"``. An
        explicit ``"edges"`` or ``"paths"`` with ``method="auto"`` asks for the lazy method.
        ``stats["lazy_rows"]`` records the one used.
    tuning : SpannerTuning or None
        Thresholds of the plan and tolerances of the solves (None: the defaults).
    sweep : mdp.worst_case.sweep_start.Sweep or None
        A sweep over epsilon on this space (:func:`mdp.calibrate` and ``mdp curves`` pass one):
        the lazy method starts with the rows binding the previous build's matrix at its
        ``epsilon / stretch`` (within ``tuning.sweep_rtol``) besides its usual starting rows,
        and the build leaves its own matrix (the full LP has no starting rows: it only leaves
        its matrix); ``stats["sweep_start"]`` says what it started from.
    objective : {"worst", "expected"}, default "worst"
        ``"expected"``: least prior-weighted loss under the same spanner rows, Bordenabe et
        al. 2014's own objective (:mod:`mdp.worst_case.expected_loss`): lazy rows at their
        spanner-path distances on HiGHS (``method`` and ``rows`` do not apply), up to
        :data:`~mdp.families.optimal.formulation.HIGHS_MAX_N` points.
    prior : mdp.prior.Prior or None
        The prior of ``objective="expected"`` (None: uniform).

    Returns
    -------
    Candidate
        The matrix (rows renormalised) and its :class:`~mdp.lp.build_report.BuildReport` (the
        plan taken, every attempt); its mapping view holds the LP sizes, ``spanner_edges``,
        solver statistics, ``lower_bound`` (Lagrangian bound on the LP's optimum) and
        ``relative_gap`` (the matrix's loss against that bound).
    """
    t_start = time.perf_counter()
    tuning = SpannerTuning() if tuning is None else tuning
    weights = resolve_objective(objective, prior, space.n)
    if weights is not None:
        return _build_expected(space, epsilon, weights, stretch=stretch,
                               time_limit=time_limit, solver=solver, knn=knn, tuning=tuning)
    E = greedy_spanner(space.distances, stretch)
    path = plan(space, epsilon, stretch=stretch, edges=len(E), method=method, solver=solver,
                rows=rows, tuning=tuning)
    method = path.method.value
    crossover = path.option("crossover", False)
    pu = np.r_[E[:, 0], E[:, 1]]
    pv = np.r_[E[:, 1], E[:, 0]]
    level = epsilon / stretch
    limit = "none" if time_limit is None else f"{time_limit:g} s"
    D = space.distances
    if method == "lazy":
        rows = path.option("rows")
        if rows == "paths":
            # every pair at its path distance; pairs beyond the coefficient limit are left out,
            # the edges of their paths are not (unless too long themselves)
            allowed = ~np.eye(space.n, dtype=bool)
            path_distances = spanner_distances(D, E)
        else:
            allowed = np.zeros((space.n, space.n), dtype=bool)
            allowed[pu, pv] = True
            path_distances = None
    extra, started = None, None
    if method == "lazy" and sweep is not None:
        D_rows = D if path_distances is None else path_distances
        extra, started = sweep.start_rows(D_rows, allowed, epsilon, rtol=tuning.sweep_rtol,
                                          near=0.0, far=tuning.sweep_far,
                                          scale=1.0 / stretch)
    other = "full" if method == "lazy" else "lazy"
    steps = path.steps
    t_planned = time.perf_counter()

    def solve(step: Step, left: float | None) -> tuple[np.ndarray, dict]:
        if method == "lazy":
            M, stats = solve_worst_case_lp_lazy(D, allowed, level, time_limit=left,
                                                solver=step.solver, knn=knn,
                                                max_coefficient=step.max_coefficient,
                                                privacy_distances=path_distances,
                                                extra_rows=extra, tuning=tuning.lazy)
        else:
            M, stats = solve_worst_case_lp(D, pu, pv, level, time_limit=left, solver=step.solver,
                                           max_coefficient=step.max_coefficient,
                                           crossover=crossover, tuning=tuning.lazy,
                                           last_resort=step is steps[-1],
                                           blocks_fallback=step is steps[0],
                                           resources=tuning.resources,
                                           device=(path.device.value if step.solver == BLOCKS
                                                   else None))
        return stochastic_rows(M), stats

    def describe(solved: tuple[np.ndarray, dict]) -> str:
        stats = solved[1]
        done = stats.get("final_method")
        return (f"lower bound {stats.get('lower_bound', float('nan')):.10g}"
                + (f"; after {'; '.join(stats['failed_solves'])}: {done}" if done else ""))

    with explain_failures("SpannerMech", space.n, epsilon,
                          on_timeout=f"a larger time_limit (now {limit}), a larger stretch (fewer "
                                     f"edges), or method='{other}'",
                          on_failure=f"method='{other}' or another solver ('simplex', 'ipm')"):
        # HiGHS mis-solves these bounded LPs when e^{eps D} spans too many orders of magnitude:
        # the later steps retry with fewer rows (a relaxation; the envelope decides the entries
        # left open)
        run = run_steps(steps, solve, time_limit=time_limit, describe=describe, started=t_start)
    attempts = run.attempts
    lines = [f"rows up to {r.step.max_coefficient:g}: {r.attempt.detail}"
             for r in run.records if r.attempt.outcome != "ok"]
    M, stats = run.results[-1] if run.results else (None, None)
    max_coefficient = run.last.step.max_coefficient if run.records else None
    seconds = {"plan": t_planned - t_start, "solve": time.perf_counter() - t_planned}

    def report(candidate: Candidate) -> Candidate:
        candidate.stats = BuildReport.of(path, candidate.stats, attempts=attempts,
                                         seconds=seconds, threads=get_threads())
        return candidate

    base = {"spanner_edges": len(E), "stretch": float(stretch), "attempts": lines,
            "method": method}
    if method == "lazy":
        base["lazy_rows"] = rows
    if M is None:
        return report(exponential_floor(None, True, D, epsilon, base, family="SpannerMech",
                                        reason="no solver found an optimum of the LP with any "
                                               "coefficient limit: " + "; ".join(lines)))
    if stats.get("failed_solves"):
        base["fallbacks_taken"] = [f"{stats['final_method']} after {'; '.join(stats['failed_solves'])}"]
    if sweep is not None:
        sweep.record(level, M)       # its rows' level: the next build compares eps / stretch
    if started is not None:
        stats["sweep_start"] = started
    left_out = int(np.count_nonzero(level * D[pu, pv] > np.log(max_coefficient))) * space.n
    stats.update(base, max_coefficient=max_coefficient, unresolved_rows=left_out)
    interior = path.option("repair") == "envelope"
    if left_out or interior or epsilon * D.max() > LOG_DOMAIN_C:
        # entries only a left-out row bounds, or an interior optimum's tolerance-level violations:
        # decided by the envelope at eps (in log-probabilities where e^{-eps D} underflows), never
        # worse than the exponential mechanism
        values, log, mix = private_candidate(M, D, epsilon)
        stats.update(uniform_mix=mix, loss=candidate_loss(values, D, log))
        stats["relative_gap"] = _relative_gap(stats)
        if "stalled_score" in stats:
            warnings.warn(AccuracyWarning(
                f"SpannerMech (n = {space.n}, epsilon = {epsilon:g}): the column-block method "
                f"stalled at a score of {stats['stalled_score']:.1e}, above its acceptance, and "
                f"{stats['failed_solves'][-1]}. Its best iterate, repaired, is returned: its "
                f"loss is certified within a relative gap of {stats['relative_gap']:.3g} of the "
                f"SpannerMech LP's optimum (stats['relative_gap'], stats['lower_bound']). The "
                f"matrix is private as certified."), stacklevel=3)  # the caller of mdp.build
        return report(exponential_floor(values, log, D, epsilon, stats, family="SpannerMech"))
    stats["loss"] = float(np.max(np.einsum("uw,uw->u", M, D)))
    stats["relative_gap"] = _relative_gap(stats)
    return report(Candidate(matrix=M, stats=stats))


def _build_expected(space: MetricSpace, epsilon: float, prior: Prior, *, stretch: float,
                    time_limit, solver, knn: int, tuning: SpannerTuning) -> Candidate:
    """``objective="expected"``: every pair at its spanner-path distance, lazy rows on HiGHS."""
    n = space.n
    how = expected_solver(n, solver, max_n=HIGHS_MAX_N)       # before the spanner's work
    E = greedy_spanner(space.distances, stretch)
    with explain_failures("SpannerMech (expected objective)", n, epsilon,
                          on_timeout="a larger time_limit or a larger stretch",
                          on_failure="solver='ipm' or 'simplex'"):
        cand = expected_loss_candidate(space.distances, ~np.eye(n, dtype=bool), epsilon / stretch,
                                       epsilon, prior.probabilities, prior_source=prior.source,
                                       family="SpannerMech",
                                       privacy_distances=spanner_distances(space.distances, E),
                                       time_limit=time_limit, solver=how, knn=knn,
                                       max_coefficients=tuning.max_coefficients,
                                       tuning=tuning.lazy)
    cand.stats.update(method="lazy", solver=how, lazy_rows="paths", spanner_edges=len(E),
                      stretch=float(stretch),
                      plan=f"expected objective: lazy path rows on HiGHS ({how})")
    return cand


def _relative_gap(stats: dict) -> float:
    """``(loss - lower_bound) / loss`` of the LP-derived matrix, at least 0: the matrix's worst-case
    loss is within this relative distance of the SpannerMech LP's optimum (the Lagrangian bound
    holds whatever the solver's tolerances; a repaired matrix need not meet the spanner rows, so
    its loss can fall a hair below the bound)."""
    loss, bound = stats["loss"], stats.get("lower_bound")
    if bound is None or not loss > 0:
        return float("nan")
    return max(0.0, (loss - bound) / loss)
