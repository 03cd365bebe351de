r"""ConstOPTMech's build (Imola et al. 2022, section 3.2, Algorithm 1, Theorems 1-2).

The LP (at ``eps / 2``, rows normalised after solving) is assembled in
:mod:`mdp.families.constopt.formulation`; the path a build takes is decided by
:func:`mdp.families.constopt.plan.plan`; thresholds are the fields of
:class:`mdp.families.constopt.tuning.ConstOPTTuning`. The LP is solved by HiGHS
(:func:`solve_constopt_lp`, with the free-free rows generated lazily) or by the row-block
interior point method of :mod:`mdp.families.constopt.ipm`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace

import numpy as np
from scipy.special import logsumexp

from ...candidate import Candidate
from ...errors import ParameterError, ParameterTypeError, SolverError
from ...lp import (
    SOLVERS,
    Cuts,
    LPError,
    LPTimeout,
    Phase,
    RowGeneration,
    RowGenerationPolicy,
    SparseLP,
    explain_failures,
    get_threads,
    stochastic_rows,
)
from ...lp.build_report import BuildReport
from ...lp.output import LOG_DOMAIN_C, private_candidate
from ...lp.plan import AUTO, BLOCKS, Attempt, Step, tuning_param
from ...lp.runner import run_steps
from ...lp.solver_entry import solver_entry
from ...params import Param
from ...privacy.accounting import loss as mech_loss
from ...registry import register
from ...spaces.metric_space import MetricSpace
from ..exponential import exponential_floor
from .formulation import (
    constopt_lp,
    left_out_rows,
    lipschitz_log_matrix,
    nn_replacement,
    theorem1_counts,
)
from .ipm import RowBlockTooDense, solve_constopt_gap
from .plan import default_r, peak_bytes, plan
from .tuning import ConstOPTTuning

__all__ = ["build_constopt", "solve_constopt_lp", "PARAMS", "SELECTION_Q"]

#: Quantile used to choose among several lambdas (Imola et al. 2022, section 5.1, eq. 11).
SELECTION_Q = 0.95


@solver_entry
def solve_constopt_lp(c, A, row_lower, row_upper, n_base: int, *, lazy: bool = True, solver: str = "ipm",
                      time_limit: float | None = None, tol: float = 1e-9, max_rounds: int = 200,
                      on_round: Callable | None = None, warm_pricing: str = "devex",
                      warm_budget: tuple[float, float] | None = None):
    r"""Solve the assembled LP; with ``lazy`` the free-free rows are generated on demand.

    Lazy: the LP without free-free rows (rows ``>= n_base``) is solved with ``solver`` (an
    interior point method with crossover by default: a basis for the warm starts), then the
    free-free rows violated by more than ``tol`` are added in one batch and the LP is re-solved by
    the warm-started dual simplex, until none is
    violated (:class:`mdp.lp.RowGeneration`, no gap test: the restricted LP's optimum satisfying
    every row is the full LP's). The optimum is the full LP's (same constraints at the end,
    checked on the returned ``x``); the objective moves little after the first round (relative
    8e-5 at n = 400 and 2e-5 at n = 1000 on Geolife cells; figures in ``docs/design/lp.md``).

    ``warm_budget = (factor, min_seconds)`` bounds the warm rounds' time
    (:class:`mdp.lp.RowGenerationPolicy` ``warm_time_factor``): past it an
    :class:`~mdp.lp.LPError` lets the caller start again with another method.

    Returns
    -------
    sol : :class:`mdp.lp.LPSolution`; stats : dict (sizes of the full LP, rows actually solved,
    rounds, solver statistics).
    """
    t0 = time.perf_counter()
    m = A.shape[0]
    if not lazy or n_base >= m:
        lp = SparseLP(c, A, row_lower=row_lower, row_upper=row_upper, solver=solver, time_limit=time_limit)
        sol = lp.solve()
        return sol, {**lp.stats, "rounds": 1, "rows_solved": m}
    base = slice(0, n_base)
    lp = SparseLP(c, A[base], row_lower=row_lower[base], row_upper=row_upper[base], solver=solver,
                  time_limit=time_limit)
    rest = A[n_base:].tocsr()
    r_lo, r_hi = row_lower[n_base:], row_upper[n_base:]

    def cuts(sol, tol_now: float) -> Cuts:
        act = rest @ sol.x
        viol = (act > r_hi + tol_now) | (act < r_lo - tol_now)
        worst = float(np.maximum(act - r_hi, r_lo - act).max(initial=-np.inf))
        return Cuts(keys=np.nonzero(viol)[0], worst=worst)

    def rows(keys):
        return rest[keys], r_lo[keys], r_hi[keys]

    loop = RowGeneration(lp, A[base], cuts, rows, key_space=rest.shape[0], initial_keys=np.zeros(0, np.int64),
                         policy=RowGenerationPolicy(
                             start=Phase.INITIAL, tol=tol, max_rounds=max_rounds,
                             warm_pricing=warm_pricing,
                             **({} if warm_budget is None else
                                dict(warm_time_factor=warm_budget[0],
                                     warm_min_seconds=warm_budget[1]))),
                         time_limit=time_limit, started=t0, on_round=on_round)
    out = loop.run()
    stats = dict(lp.stats)
    stats.update(rows=m, nnz=int(A.nnz), rows_solved=lp.num_row, rounds=out.rounds,
                 phases=list(out.phases))
    return out.solution, stats


def _lambdas(lam) -> tuple[float, ...]:
    """``lam`` as a tuple (a number or a sequence of numbers)."""
    return (float(lam),) if np.isscalar(lam) else tuple(float(x) for x in lam)


def _check_lams(name: str, lam) -> tuple[float, ...]:
    if isinstance(lam, str) or not (np.isscalar(lam) or isinstance(lam, Iterable)):
        raise ParameterTypeError(f"{name} must be a number or a sequence of numbers, got {lam!r}")
    seq = (lam,) if np.isscalar(lam) else tuple(lam)
    if not seq:
        raise ParameterError(f"{name} must be a positive number or a non-empty sequence of them, "
                             "got an empty sequence")
    out = []
    for x in seq:
        if isinstance(x, bool) or not isinstance(x, (int, float, np.integer, np.floating)):
            raise ParameterTypeError(f"{name} must be a number or a sequence of numbers, got {x!r}")
        if not np.isfinite(x) or x <= 0:
            raise ParameterError(f"{name} must be > 0, got {x}")
        out.append(float(x))
    return tuple(out)


def _check_replacement(name: str, value):
    if isinstance(value, str):
        if value != "nn":
            raise ParameterError(f"{name} must be 'nn' or a callable, got {value!r}")
        return value
    if not callable(value):
        raise ParameterTypeError(f"{name} must be 'nn' or a callable, got {type(value).__name__}")
    return value


PARAMS = {
    "r": Param("int", None, low=1, allow_none=True,
               help="free entries per row (1 <= r < n; None: min(10, n - 1))"),
    "lam": Param("custom", (0.001, 0.1, 1.0), check=_check_lams,
                 help="row-sum penalty > 0, or a list of them (the best L_0.95 is kept)"),
    "replacement": Param("custom", "nn", check=_check_replacement,
                         help="'nn' (I_NN,r) or a callable (distances, r) -> free mask"),
    "time_limit": Param("float", None, low=0.0, low_open=True, allow_none=True,
                        help="seconds per LP (None: no limit)"),
    "solver": Param("choice", AUTO, choices=(AUTO, BLOCKS, *SOLVERS),
                    help="'blocks': the row-block interior point method to a certified gap of "
                         "1e-6 (HiGHS if it fails); 'auto': the row-block interior point method to a certified gap of 1e-6 "
                         "from row_block_min_n points where eps/2 x median distance <= "
                         "row_block_max_scale (and, below row_block_wide_scale, its first round "
                         "violates at most row_block_max_violated free-free rows per point), else "
                         "HiGHS's HiPO; "
                         "else the HiGHS method "
                         "(lazy: of the first round; 'hipo' runs 'ipm' without HiGHS's extension "
                         "package, and again when HiPO fails)"),
    "lazy": Param("bool", True, help="generate the free-free pair rows on demand"),
    "gap": Param("float", None, low=0.0, high=1.0, high_open=True, allow_none=True,
                 help="certified relative gap: solve by the row-block interior point method and "
                      "stop within gap of a rigorous lower bound (None: exact, see solver)"),
    "tuning": tuning_param(ConstOPTTuning),
}


@register("constopt", description="LP over weighted-exponential weights + r-NN free entries "
          "(Imola et al. 2022, Alg. 1)", quick_max_n=200, display_name="ConstOPTMech", params=PARAMS,
          peak_bytes=peak_bytes)
def build_constopt(space: MetricSpace, epsilon: float, *, rng=None, r: int | None = None,
                   lam: float | Sequence[float] = (0.001, 0.1, 1.0),
                   replacement: str | Callable = "nn", time_limit: float | None = None,
                   solver: str = AUTO, lazy: bool = True, gap: float | None = None,
                   tuning: ConstOPTTuning | None = None) -> Candidate:
    """ConstOPTMech (Algorithm 1): LP at ``eps/2`` with the ``I_NN,r`` replacement, rows normalised.

    Parameters
    ----------
    space : MetricSpace
    epsilon : float
    rng : unused (deterministic)
    r : int, 1 <= r < n, or None (default)
        Free entries per row (the point itself and its r - 1 nearest others). ``None``:
        ``min(10, n - 1)`` (:data:`~mdp.families.constopt.plan.DEFAULT_R`, the paper's setting).
    lam : float or sequence of floats > 0, default (0.001, 0.1, 1.0)
        Penalty on row sums (Imola et al. 2022, section 5.1 grid). With several values one LP is
        solved per value and the mechanism with the least ``L_0.95`` is returned; all are in
        ``stats["lambdas"]``.
    replacement : "nn" or callable
        ``"nn"`` is ``I_NN,r`` (:func:`~mdp.families.constopt.formulation.nn_replacement`). A callable ``f(distances, r) -> free`` must
        return an ``(n, n)`` boolean mask of the free entries (``free[u, v]`` iff ``u in I(v)``).
    time_limit : float > 0 or None
        Seconds per LP; :class:`mdp.lp.LPTimeout` on timeout.
    solver : str, default "auto"
        ``"auto"``: from ``tuning.row_block_min_n`` (300) points, where ``epsilon / 2`` times
        the median distance is at most ``tuning.row_block_max_scale`` (25), the row-block
        interior point method of ``gap`` with the target ``tuning.exact_gap`` (1e-6), which is
        faster there
        (``docs/design/lp.md``), and HiGHS with ``"hipo"`` when it cannot certify that gap or
        when its first round violates more than ``tuning.row_block_max_violated`` (6) free-free
        rows per point while the product is below ``tuning.row_block_wide_scale`` (15); otherwise
        HiGHS with ``"hipo"``. ``"blocks"``: the row-block method to ``tuning.exact_gap`` at any
        size (HiGHS with ``"hipo"`` where it fails). Any other value is the HiGHS method for
        every size (see
        :class:`mdp.lp.SparseLP`); with ``lazy`` the method of the first round.
        ``"hipo"`` (HiGHS's HiPO interior point, then crossover) needs HiGHS's extension
        package (module ``highspy_extras``) and runs IPX (``"ipm"``) without it;
        ``stats["solver"]`` names what ran. A HiPO solve that fails is repeated by IPX
        (``stats["failed_attempts"]``). HiPO is the faster first round from a few hundred
        points on; it runs on HiGHS's thread count (:func:`mdp.lp.set_threads`).
    lazy : bool, default True
        Generate the free-free pair rows on demand (:func:`solve_constopt_lp`); same optimum.
    gap : float in [0, 1) or None
        ``None`` (default): the LP is solved exactly (``solver``, ``lazy``). A number:
        by the row-block interior point method of :mod:`mdp.families.constopt.ipm`, which
        exploits the LP's structure (dense rows over ``Y`` only) and stops when the LP objective
        of a solution made exactly private at ``epsilon / 2`` is within ``gap`` relative of a
        rigorous lower bound; ``stats`` hold ``lower_bound``, ``relative_gap`` and
        ``gap_target``. On a numerical failure of that method, or when it cannot certify the
        gap, the LP is solved exactly by HiGHS (``stats["ipm_failure"]`` says why). Faster than HiGHS from a few hundred points on
        (figures in ``docs/design/lp.md``).

    tuning : ConstOPTTuning or None
        Thresholds of the plan (None: the defaults).

    Returns
    -------
    Candidate
        The normalised matrix and its :class:`~mdp.lp.build_report.BuildReport` (the plan
        taken, every attempt); its mapping view holds the LP sizes (``variables``, ``rows``, ``nnz``),
        ``theorem1`` (Theorem 1's bounds), solver statistics of the chosen LP, ``lambda`` and
        ``lambdas``.
    """
    t_start = time.perf_counter()
    tuning = ConstOPTTuning() if tuning is None else tuning
    n = space.n
    r = default_r(n) if r is None else r
    if r >= n:
        raise ParameterError(f"r must be < n = {n} (r >= n frees every entry: use 'optimal'), got {r}")
    lams = _lambdas(lam)
    D = space.distances
    if isinstance(replacement, str):
        free = nn_replacement(D, r)
    else:
        free = np.asarray(replacement(D, r), dtype=bool)
        if free.shape != (n, n):
            raise ParameterError(f"replacement must return an ({n}, {n}) boolean mask, got shape {free.shape}")
    e = epsilon / 2.0
    path = plan(space, epsilon, solver=solver, lazy=lazy, gap=gap, tuning=tuning)
    row_block = path.solver.value == BLOCKS
    highs_steps = [step for step in path.steps if step.solver != BLOCKS]
    highs_solver = path.option("highs")
    if row_block:
        target = path.option("target").rtol
        max_violated = path.option("max_violated")
    t_planned = time.perf_counter()
    # set when round 0 of one lambda found the LP too dense for the row-block method: the
    # other lambdas (same free-free rows, nearly the same violations) go to HiGHS directly
    too_dense = None
    # the free-free rows of the last lambda's final round: the next lambda starts with them (the
    # same rows bind at every lambda, nearly; each round is a relaxation whatever rows it has)
    seed_rows = None
    best = None
    runs = []
    limit = "none" if time_limit is None else f"{time_limit:g} s"
    failures = []
    attempts, taken = [], []
    for lam_i in lams:
        with explain_failures(f"ConstOPTMech (r = {r}, lambda = {lam_i:g})", n, epsilon,
                              on_timeout=f"a larger time_limit (now {limit} per LP), a smaller r, or "
                                         "fewer lambdas",
                              on_failure="another solver ('simplex' or 'ipm'), lazy=False, or a "
                                         "smaller r"):
            ipm_failure = None
            if row_block and too_dense is not None:
                ipm_failure = too_dense
            elif row_block:
                t1 = time.perf_counter()
                step = f"lambda = {lam_i:g}: {path.steps[0].label}"
                try:
                    L, lp_stats = solve_constopt_gap(
                        D, e, free, lam_i, target, time_limit=time_limit,
                        max_violated_per_point=max_violated, rows=seed_rows,
                        warm_added_ratio=tuning.warm_added_ratio, gpu_from=tuning.gpu_from_size,
                        gpu=tuning.gpu)
                    seed_rows = lp_stats.pop("free_free_pairs")
                except RowBlockTooDense as exc:
                    ipm_failure = too_dense = str(exc)
                except LPError as exc:
                    if isinstance(exc, LPTimeout):
                        raise
                    ipm_failure = str(exc)
                else:
                    # the bound can be too weak to certify the gap (e^{-e D} underflowing at
                    # very large epsilon): then the exact solve keeps the promise
                    if not lp_stats["relative_gap"] <= target:
                        ipm_failure = (f"certified relative gap {lp_stats['relative_gap']:.3g} above "
                                       f"the target {target:g}")
                attempts.append(Attempt(step, "ok" if ipm_failure is None else "failed",
                                        time.perf_counter() - t1,
                                        ipm_failure or f"certified relative gap "
                                                       f"{lp_stats['relative_gap']:.3g}"))
            if not row_block or ipm_failure is not None:
                if ipm_failure is not None:
                    taken.append(f"lambda = {lam_i:g}: HiGHS ({highs_solver}) after the row-block "
                                 f"method: {ipm_failure}")
                run = _run_highs_steps(highs_steps, D, e, free, lam_i, lazy=lazy,
                                       time_limit=time_limit, tuning=tuning)
                attempts += [replace(a, step=f"lambda = {lam_i:g}: {a.step}")
                             for a in run.attempts]
                errors = [f"rows up to {r.step.max_coefficient:g} ({r.step.solver}): "
                          f"{r.attempt.detail}" for r in run.records if r.attempt.outcome != "ok"]
                if not run.results:
                    failures.append(f"lambda = {lam_i:g}: {'; '.join(errors)}")
                    continue
                sol, lp_stats, max_coefficient, left_out = run.results[-1]
                if errors:
                    lp_stats["failed_attempts"] = errors
                lp_stats = {**lp_stats, "lp_objective": sol.objective}
                # in log-probabilities (exact at any e * D), with the rows HiGHS met only to its
                # feasibility tolerance made to hold exactly: the certification then has nothing
                # to repair
                L = lipschitz_log_matrix(sol.x, D, e, free)
                if ipm_failure is not None:
                    lp_stats["ipm_failure"] = ipm_failure
            else:
                # every privacy row at e holds exactly (feasible_log_matrix): no row left out
                max_coefficient, left_out = None, 0
            H, log = _normalised(L, epsilon * D.max() > LOG_DOMAIN_C)
            if left_out:
                H, log, mix = private_candidate(H, D, epsilon, given_log=log, log=log)
        run = {"lam": lam_i, "L_q": mech_loss(H, D, SELECTION_Q, log=log), "loss": mech_loss(H, D, log=log),
               "max_coefficient": max_coefficient, "unresolved_rows": left_out, **lp_stats}
        runs.append(run)
        if best is None or run["L_q"] < best[2]["L_q"]:
            best = (H, log, run)
    seconds = {"plan": t_planned - t_start, "solve": time.perf_counter() - t_planned}

    def report(candidate: Candidate) -> Candidate:
        stats = dict(candidate.stats)
        if taken:
            stats["fallbacks_taken"] = taken
        candidate.stats = BuildReport.of(path, stats, attempts=attempts, seconds=seconds,
                                         threads=get_threads())
        return candidate

    if best is None:
        return report(exponential_floor(
            None, True, D, epsilon, {"lambdas": failures}, family="ConstOPTMech",
            reason="HiGHS found no optimum with any lambda and coefficient limit: "
                   + "; ".join(failures)))
    H, log, run = best
    stats = {k: v for k, v in run.items() if k not in ("L_q", "loss")}
    stats.update(**{"lambda": run["lam"], "lambdas": [{k: x[k] for k in ("lam", "L_q", "loss", "seconds")}
                                                      for x in runs],
                    "seconds_total": float(sum(x["seconds"] for x in runs)),
                    "free_entries": int(free.sum()), "theorem1": theorem1_counts(free), "lp_epsilon": e})
    del stats["lam"]
    if failures:
        stats["failed_lambdas"] = failures
    if run["unresolved_rows"]:
        return report(exponential_floor(H, log, D, epsilon, stats, family="ConstOPTMech"))
    return report(Candidate(log_matrix=H, stats=stats) if log else Candidate(matrix=H, stats=stats))


def _normalised(L: np.ndarray, log: bool) -> tuple[np.ndarray, bool]:
    """Rows of the log-matrix ``L`` normalised (Algorithm 1), as log-probabilities when ``log``."""
    if not log:
        with np.errstate(under="ignore"):
            return stochastic_rows(np.exp(L)), False
    if not np.all(np.isfinite(L).any(axis=1)):
        raise SolverError(f"the LP solution has no positive entry in row "
                          f"{int(np.argmin(np.isfinite(L).any(axis=1)))}")
    return L - logsumexp(L, axis=1, keepdims=True), True


def _run_highs_steps(steps, D, e, free, lam, *, lazy, time_limit, tuning: ConstOPTTuning):
    """The plan's HiGHS ``steps`` (a method at a coefficient limit each) for one lambda, by
    :func:`mdp.lp.runner.run_steps` until one solves the LP (``time_limit`` for all of them).

    Each result is ``(sol, stats, max_coefficient, left_out_rows)``.
    """
    lps = {}         # the LP at each coefficient limit, assembled once for its methods

    def solve(step: Step, left: float | None):
        c = step.max_coefficient
        if c not in lps:
            lps[c] = constopt_lp(D, e, free, lam, split=True, max_coefficient=c)
        A_c, A, lo, hi, _, n_base = lps[c]
        # the warm rounds after HiPO get a budget: IPX starts again past it
        budget = ((tuning.retry_warm_time_factor, tuning.retry_warm_min_seconds)
                  if step.budgeted else None)
        sol, stats = solve_constopt_lp(A_c, A, lo, hi, n_base, lazy=lazy, solver=step.solver,
                                       time_limit=left, warm_pricing=tuning.warm_pricing,
                                       warm_budget=budget)
        return sol, stats, c, left_out_rows(D, e, free, c)

    return run_steps(steps, solve, time_limit=time_limit,
                     describe=lambda result: f"objective {result[0].objective:.10g}")
