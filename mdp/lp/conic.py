r"""LPs on Clarabel, the interior point method the full worst-case LP falls back to last.

Clarabel (Goulart and Chen 2024) is a conic interior point method with a homogeneous
self-dual embedding and a direct ``LDL^T`` factorisation of the quasi-definite KKT system
(equilibrated, statically and dynamically regularised, iteratively refined). On SpannerMech's
full LP at small ``eps`` on the Geolife cells, where both of HiGHS's interior point codes stop
with "no progress" far from the optimum (``docs/design/lp.md``, "SpannerMech at small eps:
Clarabel"), it converges; at large ``eps * D`` it is the one that fails. So it runs only after
HiGHS's interior codes have failed (:func:`mdp.worst_case.solve.solve_worst_case_lp`).

The LP

.. math:: \min_x c^\top x \quad \text{s.t.} \quad r_\ell \le A x \le r_u, \quad x_\ell \le x

(no upper column bounds: the toolkit's LPs have none) becomes Clarabel's
``A_c x + s = b_c``, ``s`` in a product of the zero cone (rows with ``r_l = r_u``) and the
non-negative orthant (every other finite bound, one row each). The multipliers are returned in
HiGHS's sign convention, so an :class:`mdp.lp.LPSolution` from either engine reads the same:
``c - A^T y - z = 0`` with ``y >= 0`` on a row at its lower bound, ``y <= 0`` at its upper bound,
and column duals ``z >= 0`` on the lower bounds.
"""

from __future__ import annotations

import math
import time

import clarabel
import numpy as np
import scipy.sparse as sp

from ..errors import ParameterError
from .highs import LPError, LPSolution, LPTimeout, sigint_sets
from .reporting import LPProgress, report, report_interval, reporting
from .solver_entry import solver_entry

__all__ = ["solve_clarabel", "CLARABEL_ACCEPT", "CLARABEL_TOL"]

#: Clarabel's relative gap and feasibility tolerances (its defaults are 1e-8). The caller's
#: Lagrangian bound certifies the result whatever they are.
CLARABEL_TOL = 1e-9
#: Clarabel statuses returned as an optimum. ``"AlmostSolved"`` (only Clarabel's reduced
#: tolerances met) is a failure: on a 40-point space at eps 20 its multipliers bounded the optimum
#: 1.1e-3 below, where IPX with crossover, next in the fall-back order, certifies 5.0e-4.
CLARABEL_ACCEPT = ("Solved",)


class _Callback:
    """Clarabel's per-iteration termination callback: stops on Ctrl-C (``interrupted``, set by
    :func:`mdp.lp.highs.sigint_sets`) and reports the iterate inside a :func:`mdp.lp.progress`
    block."""

    __slots__ = ("interrupted", "rows", "last")

    def __init__(self, rows: int) -> None:
        self.interrupted, self.rows, self.last = False, rows, 0.0

    def __call__(self, info) -> bool:
        if reporting():
            now = time.perf_counter()
            if now - self.last >= report_interval():    # the same pace as HiGHS's reports
                self.last = now
                report(LPProgress(round=1, rows=self.rows, objective=float(info.cost_primal),
                                  gap=float(info.gap_rel), iteration=int(info.iterations),
                                  method="clarabel"))
        return self.interrupted


@solver_entry
def solve_clarabel(c, A, *, row_lower, row_upper, col_lower=None,
                   time_limit: float | None = None,
                   tolerance: float = CLARABEL_TOL) -> tuple[LPSolution, dict]:
    r"""Solve ``min c^T x`` s.t. ``row_lower <= A x <= row_upper``, ``x >= col_lower`` by Clarabel.

    Parameters
    ----------
    c : array-like (num_col,)
    A : scipy.sparse matrix (num_row, num_col)
    row_lower, row_upper : array-like (num_row,)
        Row bounds; ``-inf`` / ``+inf`` for an absent side, equal values for an equality.
    col_lower : array-like (num_col,) or None
        Lower column bounds (``None``: 0; ``-inf``: free).
    time_limit : float or None
        Seconds for the solve.
    tolerance : float
        Clarabel's ``tol_gap_rel``, ``tol_gap_abs`` and ``tol_feas``.

    Returns
    -------
    solution : LPSolution
        ``x``, ``row_dual`` and ``col_dual`` in HiGHS's sign convention (module docstring) and the
        primal objective.
    stats : dict
        ``solver`` ("Clarabel <version>"), ``ipm_iterations``, ``seconds``, ``model_status``.

    Raises
    ------
    LPTimeout
        ``time_limit`` was reached first.
    LPError
        Clarabel ended with another status than :data:`CLARABEL_ACCEPT` (infeasible, numerical
        error, insufficient progress, ...).
    KeyboardInterrupt
        Ctrl-C during the solve (Clarabel stops at its next iteration).
    """
    A = sp.csr_matrix(A, dtype=float)
    m, n = A.shape
    c = np.asarray(c, dtype=float).ravel()
    lo = np.asarray(row_lower, dtype=float).ravel()
    up = np.asarray(row_upper, dtype=float).ravel()
    xl = np.zeros(n) if col_lower is None else np.asarray(col_lower, dtype=float).ravel()
    if c.size != n or lo.size != m or up.size != m or xl.size != n:
        raise ParameterError(f"solve_clarabel: sizes of c ({c.size}), row bounds ({lo.size}, "
                             f"{up.size}) and col_lower ({xl.size}) do not match A {A.shape}")
    eq = lo == up
    ge = ~eq & np.isfinite(lo)
    le = ~eq & np.isfinite(up)
    bounded = np.flatnonzero(np.isfinite(xl))
    E = sp.csr_matrix((np.ones(bounded.size), (np.arange(bounded.size), bounded)), shape=(bounded.size, n))
    # A x = b: -A x + s = -b, s = 0;  A x >= l: -A x + s = -l;  A x <= u: A x + s = u;  x >= l: -x + s = -l
    Ac = sp.vstack([-A[eq], -A[ge], A[le], -E], format="csc")
    bc = np.r_[-lo[eq], -lo[ge], up[le], -xl[bounded]]
    n_eq, n_ge, n_le = int(eq.sum()), int(ge.sum()), int(le.sum())
    cones = [clarabel.ZeroConeT(n_eq)] if n_eq else []
    if Ac.shape[0] > n_eq:
        cones.append(clarabel.NonnegativeConeT(Ac.shape[0] - n_eq))
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    settings.tol_gap_rel = settings.tol_gap_abs = settings.tol_feas = float(tolerance)
    if time_limit is not None:
        settings.time_limit = float(time_limit)
    solver = clarabel.DefaultSolver(sp.csc_matrix((n, n)), c, Ac, bc, cones, settings)
    callback = _Callback(m)
    solver.set_termination_callback(callback)
    t0 = time.perf_counter()
    with sigint_sets(callback):
        sol = solver.solve()
    seconds = time.perf_counter() - t0
    status = str(sol.status)
    stats = {"solver": f"Clarabel {clarabel.__version__}", "ipm_iterations": int(sol.iterations),
             "seconds": seconds, "model_status": status}
    if callback.interrupted:
        raise KeyboardInterrupt(f"LP solve interrupted after {seconds:.1f} s")
    if status == "MaxTime":
        raise LPTimeout(f"LP time limit of {time_limit:g} s reached after {seconds:.1f} s "
                        f"(Clarabel, {m} rows, {A.nnz} non-zeros); no solution is returned")
    if status not in CLARABEL_ACCEPT:
        raise LPError(f"Clarabel did not find an optimum: status {status!r} after "
                      f"{int(sol.iterations)} iterations ({m} rows, {n} variables)")
    z = np.asarray(sol.z, dtype=float)
    y = np.zeros(m)
    y[eq] = z[:n_eq]
    y[ge] = z[n_eq:n_eq + n_ge]
    y[le] -= z[n_eq + n_ge:n_eq + n_ge + n_le]
    col_dual = np.zeros(n)
    col_dual[bounded] = z[n_eq + n_ge + n_le:]
    x = np.asarray(sol.x, dtype=float)
    objective = float(c @ x)
    if not math.isfinite(objective):
        raise LPError(f"Clarabel returned a non-finite objective ({status})")
    return LPSolution(x=x, row_dual=y, col_dual=col_dual, objective=objective), stats
