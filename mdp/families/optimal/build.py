r"""OPTMech's build: the exact optimum of the worst-case-loss LP (Imola et al. 2022, section 2.1).

The LP and its rows are in :mod:`mdp.families.optimal.formulation`; the path a build takes (the
method, the solver, the device, the fallbacks, each with its reason) is decided by
:func:`mdp.families.optimal.plan.plan`; thresholds and tolerances are the fields of
:class:`mdp.families.optimal.tuning.OptimalTuning`. This module follows the plan:

* **Row generation over column blocks** (``solver="blocks"``): the rounds of
  :func:`mdp.worst_case.block_rounds.solve_worst_case_lp_block_rounds`, each solved by the interior
  point method over the LP's column blocks (``n`` dense ``n x n`` factorisations per iteration
  instead of a sparse factorisation of the whole LP); loose rounds find rows, tight ones end
  when the repaired matrix is certified. Where the method's accuracy (about ``1e-6``) falls
  short of the target, HiGHS's lazy solve finishes from its rows. The only solver above 250
  points (up to 1000, 4 GB of block inverses).
* **Row generation on HiGHS** (``method="lazy"`` with ``"simplex"`` or ``"ipm"``): start from
  the rows through each column's own point, plus near-neighbour pairs on map spaces, and
  generate the violated rows round by round (:func:`mdp.worst_case.solve.solve_worst_case_lp_lazy`,
  run by the state machine of :class:`mdp.lp.RowGeneration`).
* **Dualised full solve** (``method="full"``): every non-redundant row at once, in the LP's dual
  form (:func:`mdp.worst_case.solve.solve_worst_case_lp`).
* **Coefficient limits.** Rows with a coefficient ``e^{eps D_uv}`` above a limit are left out and
  the LP is solved again with a smaller limit when the solve fails or the gap stays large
  (``tuning.max_coefficients``); every such LP is a relaxation, so its bound holds.
* **Certification of exactness.** After solving, all ``n^2 (n - 1)`` privacy constraints are
  evaluated on the returned matrix and the largest violation is recorded; a violation beyond
  solver tolerance fails the attempt. The matrix is then lifted to its private envelope and the
  optimality gap is its loss minus a rigorous Lagrangian lower bound
  (:func:`mdp.worst_case.solve.lagrangian_lower_bound`), so ``stats["optimality_gap"]`` bounds how
  far the matrix is from the true optimum. The registry's :class:`~mdp.Mechanism` certifies the
  returned matrix (once).
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass

import numpy as np

from ...candidate import Candidate
from ...errors import AccuracyWarning, ParameterError
from ...lp import SOLVERS, LPError, LPTimeout, explain_failures, get_threads, stochastic_rows
from ...lp.build_report import BuildReport
from ...lp.output import (
    LOG_DOMAIN_C,
    candidate_loss,
    near_private_candidate,
    private_candidate,
)
from ...lp.plan import AUTO, BLOCKS, Attempt, GapTarget, Step, tuning_param
from ...lp.runner import run_steps
from ...params import Param
from ...prior.prior import Prior, objective_params, resolve_objective
from ...registry import register
from ...spaces.metric_space import MetricSpace
from ...worst_case.block_rounds import gap_round_tol, solve_worst_case_lp_block_rounds
from ...worst_case.column_mix import least_loss_column_mix, lower_envelope
from ...worst_case.expected_loss import expected_loss_candidate, expected_solver
from ...worst_case.solve import (
    max_privacy_violation,
    solve_worst_case_lp,
    solve_worst_case_lp_lazy,
)
from ...worst_case.sweep_start import Sweep, sweep_param
from ..exponential import exponential_floor
from .formulation import (
    HIGHS_MAX_N,
    OPTIMAL_MAX_N,
    QUICK_MAX_N,
    gap_target_met,
    is_map_space,
    left_out_rows,
    nonredundant_pairs,
    two_hop_distances,
)
from .plan import METHODS, peak_bytes, plan
from .tuning import OptimalTuning

__all__ = ["build_optimal", "PARAMS"]


def _applies(space: MetricSpace) -> str | None:
    if space.n > OPTIMAL_MAX_N:
        return (f"the exact LP has n^2(n-1) = {space.n ** 2 * (space.n - 1):,} privacy rows; "
                f"'optimal' is limited to n <= {OPTIMAL_MAX_N} (use 'constopt' or 'spanner')")
    return None


def _solve_by_block_rounds(space: MetricSpace, epsilon: float, pu, pv, *, solver: str, knn: int,
                           time_limit: float | None, target: GapTarget, device: str,
                           tuning: OptimalTuning, sweep: Sweep | None = None) -> _Solved:
    """``solver="blocks"``: row generation over column blocks until the repaired matrix is
    certified within the plan's ``target``; where the rounds' plateau stops short of it, HiGHS's
    lazy solve (``solver``) finishes from the rows they generated (if HiGHS fails, the least-loss
    matrix the test repaired stands, with the rounds' bound)."""
    t0 = time.perf_counter()
    D = space.distances
    allowed = np.zeros((space.n, space.n), dtype=bool)
    allowed[pu, pv] = True
    conclusive = False
    budget = None

    repaired = {}        # the last matrix the test repaired and its repair; the least-loss one
    repair = None if target.exact else _GapRepair(
        D, epsilon, target.rtol, None if time_limit is None else t0 + time_limit, tuning=tuning)

    def within(loss, bound, factor=1.0):
        return gap_target_met(loss, bound, factor * target.rtol, D,
                              absolute_gap=tuning.absolute_gap)

    def stop(M, bound):
        if repair is None:
            candidate = near_private_candidate(M, D, epsilon)
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

    start, started = _sweep_rows(sweep, D, allowed, epsilon, tuning)
    M, state, stats = solve_worst_case_lp_block_rounds(
        D, allowed, epsilon, knn=knn, time_limit=time_limit, stop=stop,
        extra_rows=start, tuning=tuning.rounds, resources=tuning.resources, device=device,
        **_gap_rounds(target, tuning))
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
        near = ("best_M" in repaired
                and within(repaired["best_loss"], state.bound, tuning.finish_near))
        # wherever the rounds have a certified matrix, the finish gets a bounded time: from
        # about 200 points it has never ended within minutes, near the target or far from it
        budget = (max(tuning.finish_min_seconds, tuning.finish_time_factor * stats["seconds"])
                  if "best_M" in repaired else None)
        capped = budget is not None and (left is None or budget < left)
        try:
            M, finish = solve_worst_case_lp_lazy(
                D, allowed, epsilon, time_limit=budget if capped else left, solver=solver,
                knn=knn, stop=None if target.exact else stop, gap=target.stop_gap,
                initial_rows=state.rows,
                scaled_rows=tuning.finish_scaled, polish_tol=tuning.finish_polish_tol,
                tuning=tuning.lazy)
        except LPError as exc:
            timed_out = isinstance(exc, LPTimeout)
            if "best_M" not in repaired or (timed_out and not capped):
                raise
            # HiGHS can fail where eps * D spans many orders of magnitude, or take far longer
            # than the rounds: the rounds' best repaired matrix and their bound stand. After a
            # failure far from the target the caller's next attempts may improve on them; after
            # a finish that ran out of time, or near the target, those lazy HiGHS solves from
            # scratch over the same coefficients cost far more than they can gain (Geolife
            # n = 200 at eps 1.5 per km: rounds 197 s to 1.5e-6, the next attempt's rounds 70 s
            # each, over 20 min; two scales n = 200 at eps x median 0.3: rounds 227 s to
            # 3.8e-5, the finish and the next attempt over 600 s)
            M = least_loss()
            why = (f"stopped after {budget:.0f} s (finish_min_seconds or finish_time_factor x "
                   f"the rounds' time)"
                   if timed_out else f"ended without an optimum ({exc})")
            stats.update(finish_error=f"HiGHS's lazy finish ({solver}) {why}",
                         finish_outcome="stopped" if timed_out else "failed",
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
                 else near_private_candidate(M, D, epsilon))
    violation = max_privacy_violation(stochastic_rows(M), D, epsilon)
    if repair is not None:
        stats.update(repair.counts())
    R, log, mix = candidate
    if started is not None:
        stats["sweep_start"] = started
    return _Solved(R, log, stats, candidate_loss(R, D, log), violation, mix, np.inf, conclusive,
                   retry_seconds=budget, rows=state.rows)


def _gap_rounds(target: GapTarget, tuning: OptimalTuning) -> dict:
    """The block rounds' settings of a gap asked for (none when exact): tight rounds' tolerance
    :func:`~mdp.worst_case.block_rounds.gap_round_tol`, the separation tolerance of the
    tuning, and iterates tested from the target on."""
    if target.exact:
        return {}
    return dict(tight_tol=gap_round_tol(target.rtol, tuning=tuning.rounds),
                tight_separation_tol=tuning.rounds.separation_tol, test_from=target.rtol)


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
    #: Seconds each later attempt may take (None: the build's time left); past them the least
    #: loss so far stands.
    retry_seconds: float | None = None
    #: The privacy rows ``(u, v, w)`` of the last LP solved, where the solve exposes them (the
    #: block rounds): what a sweep's next build starts from.
    rows: tuple | None = None


def _sweep_rows(sweep: Sweep | None, D: np.ndarray, allowed: np.ndarray, epsilon: float,
                tuning: OptimalTuning) -> tuple[tuple | None, dict | None]:
    """The rows a sweep's build starts with besides its own (:meth:`Sweep.start_rows`), and
    the record of where they came from (None without a sweep)."""
    if sweep is None:
        return None, None
    return sweep.start_rows(D, allowed, epsilon, rtol=tuning.sweep_rtol, near=tuning.sweep_near,
                            far=tuning.sweep_far)


class _GapRepair:
    """``gap=`` mode's repair of restricted optima, with the earlier repairs it keeps as atoms.

    Each call repairs ``M`` by :func:`~mdp.lp.output.near_private_candidate`; when that is certified within
    ``tuning.mix_try_factor`` times the target of the bound but not within the target, the least-loss
    per-column mix (:func:`mdp.worst_case.column_mix.least_loss_column_mix`) of that repair, the lower
    envelope of ``M``, the exponential kernel ``e^{-eps D}`` and the last ``tuning.mix_previous``
    repairs is tried too, and the cheaper candidate is returned. Candidates are
    ``(values, log, uniform_mix)`` as from :func:`~mdp.lp.output.private_candidate`.

    ``deadline`` (a ``time.perf_counter()`` value, or None) bounds the mixing LP by the build's
    ``time_limit``: HiGHS gets the seconds left, and no mix is tried once they are spent (the
    repair alone is returned, as when the mix fails).
    """

    def __init__(self, D: np.ndarray, epsilon: float, target: float,
                 deadline: float | None = None, *, tuning: OptimalTuning = OptimalTuning()):
        self.D, self.epsilon, self.target = D, epsilon, target
        self.tuning = tuning
        self.deadline = deadline
        self.mixable = bool(epsilon * D.max() <= LOG_DOMAIN_C)
        self.previous: list[np.ndarray] = []
        self.mixes = 0
        self.mixes_kept = 0

    def __call__(self, M: np.ndarray, bound: float):
        D, eps = self.D, self.epsilon
        candidate = near_private_candidate(M, D, eps)
        loss = candidate_loss(candidate[0], D, candidate[1])
        t = self.tuning
        if (self.mixable
                and not gap_target_met(loss, bound, self.target, D, absolute_gap=t.absolute_gap)
                and gap_target_met(loss, bound, t.mix_try_factor * self.target, D,
                                   absolute_gap=t.absolute_gap)):
            mixed = self._mix(stochastic_rows(np.array(M, dtype=float)), candidate[0])
            if mixed is not None:
                mixed_loss = candidate_loss(mixed[0], D, mixed[1])
                if mixed_loss < loss:
                    candidate, loss = mixed, mixed_loss
                    self.mixes_kept += 1
        if not candidate[1]:
            self.previous = (self.previous + [candidate[0]])[-t.mix_previous:]
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
                    max_coefficient: float, time_limit: float | None, target: GapTarget,
                    tuning: OptimalTuning = OptimalTuning(),
                    sweep: Sweep | None = None) -> _Solved:
    """Solve with rows up to ``max_coefficient``; check every row; repair to the private envelope.

    With a gap asked for (``target.exact`` False) the lazy loop stops as soon as the repaired
    matrix's loss is within ``target.rtol`` (relative) of the Lagrangian bound; its rows may then
    be violated (the repair fixes them).
    """
    t0 = time.perf_counter()
    D = space.distances
    tested = {}     # in gap mode: the last matrix the lazy loop tested, and its repair
    if method == "lazy":
        allowed = np.zeros((space.n, space.n), dtype=bool)
        allowed[pu, pv] = True
        repair = None if target.exact else _GapRepair(
            D, epsilon, target.rtol, None if time_limit is None else t0 + time_limit,
            tuning=tuning)

        def stop(M, bound):
            # normalised once, as the solution below will be (the repair normalises M in place)
            tested["M"] = stochastic_rows(np.array(M, dtype=float))
            candidate, loss = repair(M, bound)
            tested["candidate"] = candidate
            return (gap_target_met(loss, bound, target.rtol, D, absolute_gap=tuning.absolute_gap),
                    loss)

        extra, started = _sweep_rows(sweep, D, allowed, epsilon, tuning)
        M, stats = solve_worst_case_lp_lazy(D, allowed, epsilon, time_limit=time_limit, solver=solver,
                                            knn=knn, max_coefficient=max_coefficient,
                                            stop=None if target.exact else stop,
                                            gap=target.stop_gap,
                                            extra_rows=extra, tuning=tuning.lazy)
        if repair is not None:
            stats.update(repair.counts())
        if started is not None:
            stats["sweep_start"] = started
    else:
        M, stats = solve_worst_case_lp(D, pu, pv, epsilon, time_limit=time_limit, solver=solver,
                                       max_coefficient=max_coefficient, tuning=tuning.lazy)
    M = stochastic_rows(M)
    # rows left out by the coefficient limit are decided by the envelope, not checked here; in
    # gap mode the solution is a restricted optimum whose violations the repair handles
    violation = max_privacy_violation(M, D, epsilon, max_coefficient)
    if violation > tuning.violation_atol and target.exact:
        raise LPError(f"the LP solution violates a privacy row by {violation:.3g} "
                      f"(> {tuning.violation_atol}); "
                      "the solver did not converge to a feasible optimum")
    if target.exact:
        M, log, mix = _least_loss_repair(M, D, epsilon)
    elif "M" in tested and np.array_equal(tested["M"], M):
        M, log, mix = tested["candidate"]
    else:
        M, log, mix = near_private_candidate(M, D, epsilon)
    loss = candidate_loss(M, D, log)
    return _Solved(M, log, stats, loss, violation, mix, max_coefficient)


def _least_loss_repair(M: np.ndarray, D: np.ndarray, epsilon: float):
    """An exact solution made private by the cheaper of two repairs: the envelope and least
    uniform mix alone (:func:`~mdp.lp.output.private_candidate`), or after
    :func:`~mdp.lp.output.balanced_envelope` (:func:`~mdp.lp.output.near_private_candidate`).

    A violation of ``7e-10`` left by HiGHS costs the uniform mix ``3.3e-7``, i.e. that times the
    largest distances in loss: on points in two clusters 1000 units apart (n = 12, eps 0.013) a
    relative gap of 5.5e-4, against 1.6e-6 when the violated entries are lifted first.
    """
    plain = private_candidate(M, D, epsilon)
    lifted = near_private_candidate(M, D, epsilon)
    return min(plain, lifted, key=lambda c: candidate_loss(c[0], D, c[1]))


def _run_plan_steps(steps, solve, time_limit: float | None, target: GapTarget,
                    distances: np.ndarray, *, tuning: OptimalTuning
                    ) -> tuple[_Solved | None, float, list[str], list[Attempt]]:
    """The plan's ``steps`` (each a coefficient limit) by :func:`mdp.lp.runner.run_steps` until
    the gap is small (:func:`gap_target_met` with ``target.rtol`` on ``distances``) or a result
    is conclusive.

    Every restricted LP is a relaxation of the full one: each bound holds, the best is kept. The
    least loss is returned with the best bound, a line per step run and the attempts. A result
    that sets ``retry_seconds`` bounds the later steps' time by them (below the build's time
    left): past them the least loss so far stands.
    """
    kept = {"best": None, "bound": -np.inf}

    def accept(out: _Solved) -> bool:
        kept["bound"] = max(kept["bound"], out.stats["lower_bound"])
        if kept["best"] is None or out.loss < kept["best"].loss:
            kept["best"] = out
        return (gap_target_met(kept["best"].loss, kept["bound"], target.rtol, distances,
                               absolute_gap=tuning.absolute_gap) or out.conclusive)

    def line(out: _Solved) -> str:
        return f"loss {out.loss:.10g}, bound {out.stats['lower_bound']:.10g}"

    def describe(out: _Solved) -> str:
        finish = out.stats.get("finish_error")
        return line(out) + (f"; {finish}" if finish else "")

    run = run_steps(steps, solve, time_limit=time_limit, accept=accept, describe=describe,
                    budget=lambda out: out.retry_seconds)
    lines = [f"rows up to {r.step.max_coefficient:g}: "
             + (line(r.result) if r.attempt.outcome == "ok" else r.attempt.detail)
             for r in run.records]
    return kept["best"], kept["bound"], lines, run.attempts


PARAMS = {
    "time_limit": Param("float", None, low=0.0, low_open=True, allow_none=True,
                        help="seconds for the LP work (None: no limit)"),
    "redundancy_rtol": Param("float", 1e-12, low=0.0, high=1e-9,
                             help="relative tolerance of the exact redundancy test"),
    "method": Param("choice", AUTO, choices=METHODS, allow_none=True,
                    help="'lazy' (row generation) or the 'full' LP (dualised); 'auto': by the "
                         "space ('blocks': the same as solver='blocks')"),
    "solver": Param("choice", AUTO, choices=(AUTO, BLOCKS, *SOLVERS), allow_none=True,
                    help="'blocks' (rounds over column blocks, method 'lazy'), or a HiGHS method "
                         "(lazy: 'simplex' or 'ipm'); 'auto': by the space and eps"),
    "knn": Param("int", None, low=0, allow_none=True,
                 help="near-neighbour pairs in the lazy starting rows; None: by the space"),
    "gap": Param("float", None, low=0.0, high=1.0, high_open=True, allow_none=True,
                 help="certified relative gap at which the row generation stops (None: exact, "
                      "<= 1e-6)"),
    "tuning": tuning_param(OptimalTuning),
    "sweep": sweep_param(),
    **objective_params(),
}


@register("optimal", description="exact optimal mechanism, worst-case-loss LP (OPTMech; "
          "Imola et al. 2022, 2.1)",
          applies=_applies, quick_max_n=QUICK_MAX_N, display_name="OPTMech", params=PARAMS,
          peak_bytes=peak_bytes)
def build_optimal(space: MetricSpace, epsilon: float, *, rng=None, time_limit: float | None = None,
                  redundancy_rtol: float = 1e-12, method: str | None = AUTO,
                  solver: str | None = AUTO, knn: int | None = None, gap: float | None = None,
                  tuning: OptimalTuning | None = None, sweep: Sweep | None = None,
                  objective: str = "worst", prior: Prior | None = None) -> Candidate:
    """The exact eps-mDP mechanism of least worst-case loss (OPTMech).

    Parameters
    ----------
    space : MetricSpace
    epsilon : float
    rng : unused (deterministic)
    time_limit : float > 0 or None
        Wall-clock seconds for the LP work; on timeout :class:`mdp.lp.LPTimeout` is raised (no matrix).
    redundancy_rtol : float in [0, 1e-9], default 1e-12
        Relative tolerance of the exact redundancy test
        (:func:`~mdp.families.optimal.formulation.nonredundant_pairs`).
    method : {"auto", "lazy", "full", "blocks"}, default "auto"
        ``"lazy"``: row generation; ``"full"``: every non-redundant row at once, dualised
        (:func:`mdp.worst_case.solve.solve_worst_case_lp`). ``"auto"``: ``"lazy"``. ``"blocks"`` is
        another spelling of ``method="lazy", solver="blocks"`` (then ``solver`` names the
        HiGHS method of the finish). ``None`` is ``"auto"``.
    solver : {"auto", "blocks", "simplex", "ipm", ...}, default "auto"
        ``"blocks"``: the rounds are solved by the interior point method over column blocks
        (:func:`mdp.worst_case.block_rounds.solve_worst_case_lp_block_rounds`), finished by HiGHS's lazy
        solve (``tuning.finish_solver``) from its rows where its accuracy (about ``1e-6``) does
        not certify the target, for at most ``tuning.finish_time_factor`` times the rounds'
        seconds or ``tuning.finish_min_seconds``: when that runs out, the rounds' certified
        result stands and ``stats["finish_error"]`` says so (when HiGHS fails instead, more than
        ``tuning.finish_near`` times the target from it, the next coefficient limits are tried,
        each within the same time);
        the only solver above 250 points.
        ``"simplex"`` (warm-started dual simplex rounds) or ``"ipm"`` (interior point rounds
        without crossover, then crossover and warm dual simplex for the tail): HiGHS's lazy
        rounds; with ``method="full"``: HiGHS method of the dualised LP. ``"auto"``:
        :func:`mdp.families.optimal.plan.plan` (``"blocks"`` from ``tuning.blocks_min_n`` = 50
        points where the block inverses fit in memory, else HiGHS's rounds by
        :func:`~mdp.families.optimal.plan.default_solver`). ``None`` is ``"auto"``.
    knn : int >= 0 or None
        Near-neighbour pairs in the initial rows of the row generation
        (:func:`mdp.worst_case.solve.initial_triples`). ``None``:
        :func:`~mdp.families.optimal.plan.default_knn` (2 on map spaces, where they halve the
        rounds, 0 otherwise).
    gap : float in [0, 1) or None
        ``None`` (default): exact, certified relative gap ``<= tuning.retry_rtol`` (1e-6). A
        number (e.g. 1e-3; ``method="lazy"``, on HiGHS or ``"blocks"``): the row generation
        stops as soon as the loss of the repaired (private) matrix is within ``gap`` relative of
        the Lagrangian lower bound of the restricted LP (a relaxation, so the bound is valid);
        ``stats["lower_bound"]``, ``stats["relative_gap"]`` and ``stats["gap_target"]`` record
        it (values below ``tuning.retry_rtol`` ask for, and record, that). Where a build ends
        certified above its target (``"blocks"`` from about 150 points, when the interior point
        method's plateau and HiGHS's bounded finish both stop short; at any size where the
        worst-case loss is tiny against the distances and the solvers' absolute tolerances set
        the accuracy), ``stats["target_met"]`` is False and an
        :class:`mdp.errors.AccuracyWarning` says how far and why; the matrix is private as
        certified either way.
    tuning : OptimalTuning or None
        Thresholds of the plan and tolerances of the solves (None: the defaults).
    sweep : mdp.worst_case.sweep_start.Sweep or None
        A sweep over epsilon on this space (:func:`mdp.calibrate` and ``mdp curves`` pass
        one): the row generation starts with the rows the sweep's previous build left (every
        row of its last LP within ``tuning.sweep_near`` in log-epsilon, else within
        ``tuning.sweep_far`` the rows binding its matrix within ``tuning.sweep_rtol``) besides
        its usual starting rows, and the build leaves its own; ``stats["sweep_start"]`` says which. It changes the rounds' time, not
        the optimum nor its certification.
    objective : {"worst", "expected"}, default "worst"
        ``"expected"``: the least prior-weighted loss ``sum_u pi_u sum_w D_uw M_uw`` under the
        same privacy rows (Bordenabe, Chatzikokolakis, Palamidessi 2014), by lazy rows on HiGHS
        (:mod:`mdp.worst_case.expected_loss`; up to ``HIGHS_MAX_N`` points; ``method``,
        ``solver`` other than "auto"/"simplex"/"ipm" and ``gap`` do not apply). The matrix is
        certified like every other; ``stats["expected_loss"]``, ``stats["lower_bound"]`` and
        ``stats["relative_gap"]`` are then those of the expected objective.
    prior : mdp.prior.Prior or None
        The prior of ``objective="expected"`` (None: uniform).

    Returns
    -------
    Candidate
        The optimal matrix and its :class:`~mdp.lp.build_report.BuildReport` (the plan taken,
        every attempt, the bound and gap). Its mapping view holds the LP statistics: sizes
        (``variables``, ``rows`` of the LP last solved, ``nnz``), ``full_privacy_rows`` =
        n^2(n-1), ``redundant_pairs``, solver, iterations, ``rounds`` and ``phases`` (lazy),
        seconds, ``lp_objective``, ``lower_bound``, ``loss``, ``optimality_gap``,
        ``relative_gap``, ``target_met`` (:func:`~mdp.families.optimal.formulation.gap_target_met`:
        the relative target, or an absolute gap of ``tuning.absolute_gap`` times the largest
        distance where the optimum is itself ~0) and ``max_privacy_violation`` over all
        n^2(n-1) triples (before the repair to the private envelope; ``loss`` and the gaps are
        of the repaired matrix), ``max_coefficient`` and ``attempts``: the LP is solved with the
        rows of coefficient up to ``tuning.max_coefficients[0]``, and again with the next limit
        when the solve fails or the relative gap exceeds ``tuning.retry_rtol``; the least loss
        is returned, with the best bound. ``solver="blocks"``: ``round_trace`` holds a dict per
        round (``rows``, ``phase``, ``iterations``, ``seconds``, ``objective``, ``bound``,
        ``added``, ``closure``, ``certified``) and ``closure_rows`` the rows of the pair closure
        (:func:`mdp.worst_case.block_rounds.pair_closure`); where HiGHS finished, its statistics, with
        the rounds over blocks in ``block_round_trace``, ``block_rounds``, ``block_seconds`` and
        ``block_ipm_iterations``; where HiGHS's finish failed or ran out of its time, the rounds'
        least-loss repaired matrix and their bound, with the reason in ``finish_error`` and
        ``finish_outcome`` (``"failed"`` or ``"stopped"``); where an earlier round's
        repaired matrix meets the target against the best bound of all rounds, no finish runs
        and ``certified_by`` says so.

    Raises
    ------
    mdp.errors.SolverTimeout
        When ``time_limit`` is reached (the message names n, epsilon and what to try).
    mdp.errors.SolverError
        Never for a solver failure: when no attempt finds an optimum, the exponential mechanism
        at ``epsilon`` is returned with the reason in ``stats["fallback"]``
        (:func:`mdp.families.exponential.exponential_floor`). Rows left out by the coefficient
        limit (``stats["unresolved_rows"]``) are decided by the envelope
        (:func:`mdp.lp.output.private_candidate`, in log-probabilities when ``eps * D`` exceeds
        float64's range); if the relative gap then stays above ``tuning.retry_rtol`` the result
        is never worse than the exponential mechanism.
    """
    t_start = time.perf_counter()
    tuning = OptimalTuning() if tuning is None else tuning
    n = space.n
    weights = resolve_objective(objective, prior, n)
    if weights is not None:
        if gap is not None:
            raise ParameterError(f"objective='expected' takes gap=None (its rounds always end "
                                 f"exact), got gap={gap:g}")
        return _build_expected(space, epsilon, weights, time_limit=time_limit,
                               redundancy_rtol=redundancy_rtol, method=method, solver=solver,
                               knn=knn, tuning=tuning)
    two_hop = two_hop_distances(space.distances)
    path = plan(space, epsilon, method=method, solver=solver, knn=knn, gap=gap, tuning=tuning,
                two_hop=two_hop)
    method, solver = path.method.value, path.solver.value
    knn = path.option("knn")
    finish = path.option("finish")
    target = path.option("target")
    pu, pv = nonredundant_pairs(space.distances, redundancy_rtol, two_hop=two_hop)
    t_planned = time.perf_counter()

    def solve(step: Step, left: float | None) -> _Solved:
        if step.solver == BLOCKS:
            return _solve_by_block_rounds(space, epsilon, pu, pv, solver=finish, knn=knn,
                                          time_limit=left, target=target,
                                          device=path.device.value, tuning=tuning, sweep=sweep)
        return _solve_at_limit(space, epsilon, pu, pv, method=method, solver=step.solver,
                               knn=knn, max_coefficient=step.max_coefficient, time_limit=left,
                               target=target, tuning=tuning,
                               sweep=sweep if method == "lazy" else None)

    limit = "none" if time_limit is None else f"{time_limit:g} s"
    with explain_failures("OPTMech", n, epsilon,
                          on_timeout=f"a larger time_limit (now {limit}), or 'spanner' or 'constopt', "
                                     "which solve smaller LPs",
                          on_failure="another method ('lazy' or 'full') or solver ('blocks', "
                                     "'simplex' or 'ipm'), or 'spanner' with stretch=1 (the same LP)"):
        best, bound, lines, attempts = _run_plan_steps(
            path.steps, solve, time_limit, target, space.distances, tuning=tuning)
    seconds = {"plan": t_planned - t_start, "solve": time.perf_counter() - t_planned}

    def report(candidate: Candidate) -> Candidate:
        candidate.stats = BuildReport.of(path, candidate.stats, attempts=attempts,
                                         seconds=seconds, threads=get_threads())
        return candidate

    if best is None:
        reason = "HiGHS found no optimum of the LP with any coefficient limit: " + "; ".join(lines)
        warnings.warn(AccuracyWarning(f"OPTMech (n = {n}, epsilon = {epsilon:g}): {reason}. The "
                                      f"exponential mechanism at epsilon is returned instead "
                                      f"(private, not certified optimal; stats['fallback'])."),
                      stacklevel=3)  # the caller of mdp.build
        return report(exponential_floor(None, True, space.distances, epsilon,
                                        {"attempts": lines, "method": method, "solver": solver,
                                         "target_met": False},
                                        family="OPTMech", reason=reason))
    if sweep is not None:
        with np.errstate(under="ignore"):
            sweep.record(epsilon, np.exp(best.matrix) if best.log else best.matrix, best.rows)
    abs_gap = best.loss - bound
    stats = dict(best.stats)
    stats.update(full_privacy_rows=n * n * (n - 1), redundant_pairs=n * (n - 1) - len(pu),
                 max_privacy_violation=best.violation, loss=best.loss, lower_bound=bound,
                 optimality_gap=abs_gap, relative_gap=abs_gap / best.loss if best.loss > 0 else 0.0,
                 method=method, uniform_mix=best.uniform_mix, max_coefficient=best.max_coefficient,
                 gap_target=target.rtol,
                 attempts=lines, unresolved_rows=left_out_rows(space.distances, epsilon, pu, pv,
                                                               best.max_coefficient))
    stats["target_met"] = gap_target_met(best.loss, bound, stats["gap_target"], space.distances,
                                         absolute_gap=tuning.absolute_gap)
    if not stats["target_met"]:
        warnings.warn(AccuracyWarning(_missed_target_message(n, epsilon, target, stats)),
                      stacklevel=3)  # the caller of mdp.build
    if stats["unresolved_rows"] and not stats["target_met"]:
        # entries decided by the envelope, not by the LP: never worse than the exponential mechanism
        return report(exponential_floor(best.matrix, best.log, space.distances, epsilon, stats,
                                        family="OPTMech"))
    if best.log:
        return report(Candidate(log_matrix=best.matrix, stats=stats))
    return report(Candidate(matrix=best.matrix, stats=stats))


def _build_expected(space: MetricSpace, epsilon: float, prior: Prior, *, time_limit, redundancy_rtol,
                    method, solver, knn, tuning: OptimalTuning) -> Candidate:
    """``objective="expected"``: lazy rows on HiGHS over the non-redundant pairs."""
    n = space.n
    how = expected_solver(n, solver, max_n=HIGHS_MAX_N)
    if method not in (None, AUTO, "lazy"):
        raise ParameterError(f"objective='expected' takes method='auto' or 'lazy' (row "
                             f"generation on HiGHS), got method={method!r}")
    knn = (2 if is_map_space(space) else 0) if knn is None else knn
    pu, pv = nonredundant_pairs(space.distances, redundancy_rtol)
    allowed = np.zeros((n, n), dtype=bool)
    allowed[pu, pv] = True
    with explain_failures("OPTMech (expected objective)", n, epsilon,
                          on_timeout="a larger time_limit, or 'spanner' with objective='expected'",
                          on_failure="solver='ipm' or 'simplex'"):
        cand = expected_loss_candidate(space.distances, allowed, epsilon, epsilon,
                                       prior.probabilities, prior_source=prior.source,
                                       family="OPTMech", time_limit=time_limit, solver=how,
                                       knn=knn, max_coefficients=tuning.max_coefficients,
                                       tuning=tuning.lazy)
    cand.stats.update(method="lazy", solver=how, knn=knn,
                      plan=f"expected objective: lazy rows on HiGHS ({how}); the column-block "
                           "rounds apply to the worst-case objective only")
    if not gap_target_met(cand.stats["expected_loss"], cand.stats["lower_bound"],
                          tuning.retry_rtol, space.distances, absolute_gap=tuning.absolute_gap):
        warnings.warn(AccuracyWarning(
            f"OPTMech (n = {n}, epsilon = {epsilon:g}, expected objective): its expected loss "
            f"{cand.stats['expected_loss']:.10g} is certified within "
            f"{100 * cand.stats['relative_gap']:.2g}% of the optimum (stats['lower_bound']); "
            "the matrix is private as certified."), stacklevel=4)
    return cand


def _missed_target_message(n: int, epsilon: float, target: GapTarget, stats: dict) -> str:
    """The warning of a build certified above its gap target: how far, and why."""
    asked = target.asked()
    why = stats.get("finish_error") or stats.get("rounds_ended") or "the solver's accuracy"
    return (f"OPTMech (n = {n}, epsilon = {epsilon:g}): certified within "
            f"{100 * stats['relative_gap']:.2g}% of the optimum, a relative gap of "
            f"{stats['relative_gap']:.3g} where {asked} was asked for. The matrix is private as "
            f"certified; its worst-case loss {stats['loss']:.10g} is at most "
            f"{stats['optimality_gap']:.3g} above the optimum (stats['relative_gap'], "
            f"stats['lower_bound']). Where the solvers stopped: {why}.")
