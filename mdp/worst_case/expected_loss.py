r"""The LP mechanisms under a prior: least *expected* loss instead of least worst-case loss.

Bordenabe, Chatzikokolakis, Palamidessi (CCS 2014, "Optimal geo-indistinguishable mechanisms
for location privacy", section 4) minimise the prior-weighted loss under the same privacy rows:

.. math:: \min_M \sum_u \pi_u \sum_w D_{uw} M_{uw} \quad\text{s.t.}\quad
          \sum_w M_{uw} = 1,\ M \ge 0,\
          M_{uw} \le e^{\epsilon P_{uv}} M_{vw}\ \ \forall (u, v) \text{ allowed},\ \forall w

(``P = D`` and every non-redundant pair for OPTMech; the spanner's path distances at
``eps / stretch`` for SpannerMech). The feasible set is the worst-case LP's
(:mod:`mdp.worst_case.solve`), so the same lazy row generation on HiGHS solves it: the rows
through each column's own point first, then the violated rows round by round
(:func:`~mdp.worst_case.solve.separate`), with a Lagrangian lower bound

.. math:: \sum_u y_u + \sum_u \min_w \Bigl(\pi_u D_{uw} - \sum_r y_r A_{r,uw}\Bigr)

from any multipliers (free on the row sums, clipped to ``>= 0`` on the privacy rows), valid
whatever the solver's tolerances. The column-block interior point method of the worst-case
objective (:mod:`mdp.worst_case.block_rounds`) relies on the epigraph variable ``k`` coupling
the rows and is not used here: the expected objective is solved on HiGHS up to
:data:`~mdp.families.optimal.formulation.HIGHS_MAX_N` points.
"""

from __future__ import annotations

import itertools
import time

import numpy as np
import scipy.sparse as sp

from ..candidate import Candidate
from ..errors import ParameterError
from ..lp.highs import LPError, SparseLP
from ..lp.output import near_private_candidate
from ..lp.plan import AUTO, Step
from ..lp.rowgen import RowGeneration
from ..lp.runner import run_steps
from .solve import (
    LAZY_SOLVERS,
    MAX_COEFFICIENTS,
    LazyRoundsTuning,
    initial_triples,
    lazy_policy,
    privacy_row_generators,
    privacy_rows,
)

__all__ = ["solve_expected_loss_lp_lazy", "expected_lower_bound", "expected_loss_candidate",
           "expected_solver", "IPM_FROM_N"]

#: From this many points the expected-loss rounds start interior (HiGHS's IPM without crossover):
#: on the Gowalla cells 10 s against 81 s for warm simplex rounds at n = 60; below it the simplex
#: rounds take well under a second and the interior ones can end without an optimum.
IPM_FROM_N = 40


def expected_solver(n: int, solver: str | None, *, max_n: int) -> str:
    """The HiGHS method of the expected-loss rounds on ``n`` points: ``solver`` when it names
    one (``"simplex"`` or ``"ipm"``), else interior rounds from :data:`IPM_FROM_N` points.

    Raises
    ------
    mdp.errors.ParameterError
        ``n`` above ``max_n`` (these LPs are solved on HiGHS only: the column-block method that
        builds larger worst-case mechanisms needs the worst-case objective), or another solver.
    """
    if n > max_n:
        raise ParameterError(f"objective='expected' is solved on HiGHS, up to n = {max_n} "
                             f"points (this space has {n}); the column-block method that builds "
                             "larger worst-case mechanisms needs the worst-case objective")
    if solver in (None, AUTO):
        return "ipm" if n >= IPM_FROM_N else "simplex"
    if solver not in LAZY_SOLVERS:
        raise ParameterError(f"objective='expected' takes solver 'auto', 'simplex' or 'ipm', got "
                             f"{solver!r}")
    return solver


def expected_lower_bound(A: sp.csr_matrix, y: np.ndarray, cost: np.ndarray, n: int) -> float:
    """A rigorous lower bound on ``min cost . M`` over row-stochastic ``M`` meeting ``A x >= b``
    (first ``n`` rows the row sums ``= 1``, the rest ``>= 0``), from any multipliers ``y``."""
    y = np.array(y, dtype=float)
    y[n:] = np.maximum(y[n:], 0.0)
    red = cost - (A.T @ y)[:n * n]
    return float(y[:n].sum() + red.reshape(n, n).min(axis=1).sum())


def solve_expected_loss_lp_lazy(distances: np.ndarray, allowed: np.ndarray, eps: float,
                                weights: np.ndarray, *, privacy_distances: np.ndarray | None = None,
                                time_limit: float | None = None, solver: str = "simplex",
                                knn: int = 2, max_coefficient: float = MAX_COEFFICIENTS[0],
                                gap: float | None = None,
                                tuning: LazyRoundsTuning = LazyRoundsTuning()
                                ) -> tuple[np.ndarray, dict]:
    r"""The expected-loss LP of the module docstring, by lazy row generation on HiGHS.

    Parameters
    ----------
    distances : ndarray (n, n)
        Loss distances ``D``.
    allowed : bool ndarray (n, n)
        Ordered pairs whose privacy rows are imposed.
    eps : float
        Level of the privacy rows.
    weights : ndarray (n,)
        The prior ``pi`` (> 0, sums to 1).
    privacy_distances : ndarray (n, n) or None
        ``P`` of the privacy rows (None: ``distances``).
    time_limit, solver, knn, max_coefficient, tuning
        As :func:`mdp.worst_case.solve.solve_worst_case_lp_lazy`.

    Returns
    -------
    M : ndarray (n, n) (negatives clipped, not renormalised)
    stats : dict with ``rounds``, ``rows``, ``lp_objective``, ``lower_bound``,
        ``final_violation``, ``wall_seconds`` and HiGHS's statistics.
    """
    t0 = time.perf_counter()
    L = np.asarray(distances, dtype=float)
    D = L if privacy_distances is None else np.asarray(privacy_distances, dtype=float)
    n = D.shape[0]
    N = n * n
    w = np.asarray(weights, dtype=float)
    allowed = allowed & (eps * D <= np.log(max_coefficient))
    iu, iv, iw = initial_triples(D, allowed, knn)
    R = sp.csr_matrix((np.ones(N), (np.repeat(np.arange(n), n), np.arange(N))), shape=(n, N + 1))
    A = sp.vstack([R, privacy_rows(D, eps, iu, iv, iw)], format="csr")
    m = A.shape[0]
    cost = (w[:, None] * L).ravel()
    c = np.r_[cost, 0.0]          # the last column (the worst-case LP's k) is fixed at 0
    lp = SparseLP(c, A, row_lower=np.r_[np.ones(n), np.zeros(m - n)],
                  row_upper=np.r_[np.ones(n), np.full(m - n, np.inf)],
                  col_lower=np.zeros(N + 1), col_upper=np.r_[np.ones(N), 0.0],
                  solver=solver, time_limit=time_limit, primal_tolerance=1e-10,
                  dual_tolerance=1e-10)

    cuts, rows = privacy_row_generators(D, eps, allowed)
    loop = RowGeneration(lp, A, cuts, rows, key_space=n ** 3, initial_keys=(iu * n + iv) * n + iw,
                         bound=lambda A_all, sol: expected_lower_bound(A_all, sol.row_dual, cost, n),
                         policy=lazy_policy(solver, gap=gap, tuning=tuning), time_limit=time_limit,
                         started=t0)
    out = loop.run()
    sol = out.solution
    M = np.maximum(sol.x[:N].reshape(n, n), 0.0)
    stats = dict(lp.stats)
    stats.update(rounds=out.rounds, phases=list(out.phases), privacy_rows=lp.num_row - n,
                 round_trace=out.trace,
                 full_rows=n + int(allowed.sum()) * n,
                 formulation="primal expected-loss LP, lazy row generation on HiGHS",
                 lp_objective=sol.objective, lower_bound=out.bound, final_violation=out.worst,
                 wall_seconds=out.wall_seconds)
    return M, stats


def expected_loss_candidate(distances: np.ndarray, allowed: np.ndarray, level: float,
                            epsilon: float, weights: np.ndarray, *, prior_source: str,
                            family: str, privacy_distances: np.ndarray | None = None,
                            time_limit: float | None = None, solver: str = "ipm",
                            knn: int = 2, max_coefficients=MAX_COEFFICIENTS,
                            tuning: LazyRoundsTuning = LazyRoundsTuning()) -> Candidate:
    """Solve the expected-loss LP (privacy rows at ``level``), repair the solution to its private
    envelope at ``epsilon`` and record the certified expected loss and gap.

    The coefficient limits are tried in order until HiGHS solves the LP (each restricted LP is a
    relaxation, so every bound holds; the envelope decides the entries left open).

    Returns
    -------
    Candidate
        ``stats``: ``objective = "expected"``, ``prior``, ``expected_loss`` (of the repaired
        matrix), ``lower_bound``, ``optimality_gap``, ``relative_gap``, ``uniform_mix``,
        ``max_coefficient``, ``attempts`` and the LP's statistics.

    Raises
    ------
    mdp.lp.LPTimeout, mdp.lp.LPError
        The time limit, or no coefficient limit solved.
    """
    t0 = time.perf_counter()
    D = np.asarray(distances, dtype=float)
    # per coefficient limit, the asked method, then the dual simplex rounds: HiGHS's interior
    # rounds can end without an optimum (status "Unknown") on small, degenerate row sets
    steps = [Step(f"lazy rows on HiGHS ({how}), rows up to {c:g}",
                  "first" if i == 0 else "the step before failed", how, c)
             for i, (c, how) in enumerate(itertools.product(max_coefficients,
                                                            dict.fromkeys([solver, "simplex"])))]

    def solve(step: Step, left: float | None):
        return solve_expected_loss_lp_lazy(D, allowed, level, weights,
                                           privacy_distances=privacy_distances, time_limit=left,
                                           solver=step.solver, knn=knn,
                                           max_coefficient=step.max_coefficient, tuning=tuning)

    run = run_steps(steps, solve, time_limit=time_limit)
    lines = [f"rows up to {r.step.max_coefficient:g} ({r.step.solver}): {r.attempt.detail}"
             for r in run.records if r.attempt.outcome != "ok"]
    if not run.results:
        raise LPError(f"{family} with the expected objective: HiGHS found no optimum with any "
                      "coefficient limit: " + "; ".join(lines))
    M, stats = run.results[-1]
    max_coefficient = run.last.step.max_coefficient
    values, log, mix = near_private_candidate(M, D, epsilon)
    P = np.exp(values) if log else values
    loss = float(np.asarray(weights) @ (P * D).sum(axis=1))
    bound = float(stats["lower_bound"])
    gap = max(loss - bound, 0.0)
    stats.update(objective="expected", prior=prior_source, expected_loss=loss, lower_bound=bound,
                 optimality_gap=gap, relative_gap=gap / loss if loss > 0 else 0.0,
                 uniform_mix=mix, max_coefficient=max_coefficient, attempts=lines,
                 seconds=time.perf_counter() - t0)
    if log:
        return Candidate(log_matrix=values, stats=stats)
    return Candidate(matrix=values, stats=stats)
