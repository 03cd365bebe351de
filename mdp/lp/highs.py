r"""Large sparse linear programs on HiGHS, assembled in bulk (the only module that touches HiGHS).

Every LP mechanism of the toolkit (Imola et al. 2022, sections 2.1 and 3) is a problem

.. math:: \min_x c^\top x \quad \text{s.t.} \quad r_\ell \le A x \le r_u, \quad
          x_\ell \le x \le x_u

with a very sparse ``A`` (two non-zeros per privacy row). Building such a model row by row
through a modelling layer costs more than solving it, so :class:`SparseLP` takes ``A`` as one
:class:`scipy.sparse.csr_matrix` and hands it to HiGHS in a single ``passModel`` call; rows added
later (lazy row generation, :mod:`mdp.lp.rowgen`) go in one ``addRows`` call per batch and keep
the simplex basis, so HiGHS re-solves with a warm-started dual simplex.

Solver options are public parameters of :class:`SparseLP` (method, crossover, tolerances, time
limit, threads) and can be changed between solves with :meth:`SparseLP.set_solver`,
:meth:`SparseLP.set_crossover`, :meth:`SparseLP.set_tolerances`, :meth:`SparseLP.set_time_limit`
and :meth:`SparseLP.cold_start`;
no other module of the toolkit handles HiGHS objects.

HiGHS's ``run()`` returns ``HighsStatus.kOk`` even when the model is infeasible or the time limit
was hit: the *model status* is what says whether ``x`` is an optimum, and :meth:`SparseLP.solve`
checks it and raises :class:`LPError` (infeasible, unbounded, failure) or :class:`LPTimeout`.

Sizes (variables, rows, non-zeros), the solver, its iteration counts and the wall-clock seconds
are accumulated in :attr:`SparseLP.stats`, which the mechanisms copy into ``Mechanism.stats``.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import importlib.util
import math
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import highspy
import numpy as np
import scipy.sparse as sp

from ..errors import ParameterError, SolverError, SolverTimeout
from ..runtime.threads import AUTO, check_threads, fixed_threads, highs_threads, set_default_threads
from ..validation import check_positive
from .reporting import LPProgress, report, report_interval, reporting
from .solver_entry import solver_entry

__all__ = ["SparseLP", "LPSolution", "LPError", "LPTimeout", "INF", "SOLVERS", "HIPO_AVAILABLE",
           "IPM_CODE", "SIMPLEX_PRICING", "set_threads", "get_threads", "runs_ipx"]

#: HiGHS's infinity (bounds at or beyond it are treated as absent).
INF = highspy.kHighsInf

#: Accepted ``solver`` names: the toolkit's interior point method (``"ipm"``, with crossover unless
#: switched off), one of HiGHS's two interior point codes by name (``"ipx"``, ``"hipo"``: HiPO,
#: IPX where HiPO is not installed), its dual/primal simplex, its automatic choice, or its
#: first-order PDLP.
SOLVERS = ("ipm", "ipx", "hipo", "simplex", "choose", "pdlp")

#: Largest relative infeasibility and residual error with which an IPX solve without crossover
#: that HiGHS ended "Unknown" is still returned (:meth:`SparseLP._accept_interior`).
INTERIOR_ACCEPT_RTOL = 1e-5


def _hipo_installed() -> bool:
    """Whether ``highspy-extras`` is installed for this HiGHS release (same major.minor).

    HiGHS 1.16.0 beside highspy-extras 1.15.1 (the newest extras when 1.16.0 came out) accepts
    ``solver="hipo"`` and silently runs its dual simplex instead, so the package alone is not
    enough.
    """
    if importlib.util.find_spec("highspy_extras") is None:
        return False
    try:
        extras = importlib.metadata.version("highspy-extras").split(".")[:2]
        core = importlib.metadata.version("highspy").split(".")[:2]
    except importlib.metadata.PackageNotFoundError:
        return False
    return extras == core


#: HiGHS's HiPO interior point solver needs the ``highspy-extras`` package of the same HiGHS
#: release (its BLAS, METIS and orderings); without it HiGHS refuses ``solver="hipo"`` or runs
#: another method, so the toolkit runs IPX instead and says so.
HIPO_AVAILABLE = _hipo_installed()

#: The HiGHS code that ``"ipm"`` runs. HiGHS 1.15 maps its own ``"ipm"`` to HiPO once
#: highspy-extras is installed, which would change every family's solver with the environment;
#: on this toolkit's LPs IPX is as fast or faster (``docs/design/lp.md``, "HiGHS's interior codes").
IPM_CODE = "ipx"


#: Pricing rules of the dual simplex (HiGHS's ``simplex_dual_edge_weight_strategy``): HiGHS's
#: own choice (dual steepest edge, switching to Devex when its weights cost too much), Dantzig's
#: largest infeasibility, Devex (Harris 1973) and dual steepest edge (Forrest and Goldfarb 1992).
SIMPLEX_PRICING = {"choose": -1, "dantzig": 0, "devex": 1, "steepest": 2}


#: Thread count HiGHS's process-wide scheduler was last re-created with here (``None``: as HiGHS
#: created it, with its default count).
_SCHEDULER_THREADS: int | None = None


def _check_threads(threads) -> int | None:
    """A solve's own count (None or ``"auto"``: the plan in force, :func:`highs_threads`)."""
    value = check_threads(threads)
    return None if value == AUTO else value


def set_threads(threads: int | None) -> None:
    """Fix the thread count of every later build of this process that names none: HiGHS's
    pool, the BLAS of the interior point methods and the rest (:mod:`mdp.runtime.threads`).

    HiGHS runs its parallel code (HiPO's factorisations, parallel presolve) on one thread pool per
    process; a solve that asks for another count re-creates that pool first, so call this between
    builds, not while another thread of the process is solving. ``None`` restores ``"auto"``:
    pools sized from the CPUs free and the work's grain (:func:`mdp.runtime.threads.plan_threads`).

    Parameters
    ----------
    threads : int >= 1 or None
    """
    set_default_threads(threads)


def get_threads() -> int | None:
    """The count every pool must use here (:func:`mdp.runtime.threads.fixed_threads`; ``None``: sized
    by the plan in force)."""
    return fixed_threads()


def _use_scheduler(threads: int | None) -> None:
    """Re-create HiGHS's thread pool when ``threads`` differs from the count it was made with."""
    global _SCHEDULER_THREADS
    if threads != _SCHEDULER_THREADS:
        highspy.Highs.resetGlobalScheduler(True)
        _SCHEDULER_THREADS = threads


def _highs_solver_name(solver: str, hipo_available: bool = HIPO_AVAILABLE) -> str:
    """The name passed to HiGHS for ``solver`` (``"hipo"`` falls back to IPX without extras)."""
    if solver == "ipm":
        return IPM_CODE
    if solver == "hipo" and not hipo_available:
        return "ipx"
    return solver


def runs_ipx(solver: str, hipo_available: bool = HIPO_AVAILABLE) -> bool:
    """Whether HiGHS runs ``solver`` with IPX (``"ipm"``/``"ipx"``, or ``"hipo"`` without extras)."""
    return _highs_solver_name(solver, hipo_available) == "ipx"


_MATRIX_ROWWISE = 2  # HighsMatrixFormat::kRowwise
_MINIMIZE = 1  # ObjSense::kMinimize


#: HiGHS did not return an optimal solution (infeasible, unbounded or a solver failure).
LPError = SolverError
#: HiGHS stopped at its time limit before reaching an optimum (no matrix is returned).
LPTimeout = SolverTimeout


@dataclass(frozen=True)
class LPSolution:
    """An optimal solution of a :class:`SparseLP`.

    Attributes
    ----------
    x : ndarray
        Primal values of the variables.
    row_dual : ndarray
        Dual values of the rows (HiGHS sign convention for minimisation: ``c - A^T y`` are the
        reduced costs).
    col_dual : ndarray
        Reduced costs of the variables.
    objective : float
        Primal objective value ``c^T x``.
    """

    x: np.ndarray
    row_dual: np.ndarray
    col_dual: np.ndarray
    objective: float


def _bounds(v, size: int, default: float, name: str) -> np.ndarray:
    out = np.full(size, default, dtype=float) if v is None else np.asarray(v, dtype=float).ravel().copy()
    if out.shape != (size,):
        raise ParameterError(f"{name} must have length {size}, got {out.shape}")
    out[out >= INF] = INF
    out[out <= -INF] = -INF
    return out


def _check_solver(solver) -> str:
    if solver not in SOLVERS:
        raise ParameterError(f"solver must be one of {SOLVERS}, got {solver!r}")
    return solver


def _check_tolerance(value, name: str) -> float | None:
    return None if value is None else check_positive(value, name)


class _SolveCallback:
    """HiGHS's interrupt callbacks during a solve: Ctrl-C, and progress reports.

    **Ctrl-C.** HiGHS runs in C++: Python's own SIGINT handler would raise ``KeyboardInterrupt``
    only when the solve returns, minutes later on large LPs. So during a solve SIGINT only sets
    :attr:`interrupted` (:func:`sigint_sets`), and the callbacks, which HiGHS calls between
    interior point and simplex iterations, hand it to HiGHS as a user interrupt;
    :meth:`SparseLP.solve` then raises ``KeyboardInterrupt``.

    **Progress.** Within a :func:`mdp.lp.progress` block the iteration count of HiPO and of the
    simplex (IPX shares none) is reported at most every
    :func:`mdp.lp.reporting.report_interval` seconds.

    The callback holds this object only, not the :class:`SparseLP` (a reference from the C++ object
    back to its owner would be a cycle the garbage collector cannot see).
    """

    __slots__ = ("interrupted", "solve", "rows", "method", "last")

    def __init__(self) -> None:
        self.interrupted = False
        self.solve, self.rows, self.method, self.last = 0, 0, "", 0.0

    def __call__(self, callback_type, message, data_out, data_in, user_data) -> None:
        data_in.user_interrupt = self.interrupted
        if not reporting():
            return
        now = time.perf_counter()
        if now - self.last < report_interval():
            return
        iteration = max(int(data_out.ipm_iteration_count), int(data_out.simplex_iteration_count))
        if iteration >= 0:
            self.last = now
            report(LPProgress(round=self.solve, rows=self.rows, objective=math.nan,
                              iteration=iteration, method=self.method))


@contextlib.contextmanager
def sigint_sets(flag: _SolveCallback) -> Iterator[None]:
    """Within the block, SIGINT sets ``flag.interrupted`` instead of raising (main thread, default
    handler only)."""
    flag.interrupted = False
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler):
        yield        # another thread, or a handler someone else installed: leave signals alone
        return

    def handler(signum, frame):
        flag.interrupted = True

    signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)


class SparseLP:
    r"""A minimisation LP held by one HiGHS instance, built from a sparse matrix in one call.

    Parameters
    ----------
    c : array-like (num_col,)
        Objective coefficients.
    A : scipy.sparse matrix (num_row, num_col)
        Constraint matrix (converted to CSR once).
    row_lower, row_upper : array-like (num_row,) or None
        Row bounds (``None``: -inf / +inf); use ``np.inf`` for an absent side.
    col_lower, col_upper : array-like (num_col,) or None
        Variable bounds (``None``: 0 / +inf).
    solver : {"ipm", "ipx", "hipo", "simplex", "choose", "pdlp"}, default "ipm"
        HiGHS's method. ``"ipm"`` runs the interior point method (:data:`IPM_CODE`, IPX), by
        default with crossover, so the answer is a basic (vertex) solution whose rows hold to the
        primal feasibility tolerance. ``"hipo"`` runs HiGHS's newer interior point method HiPO (a
        factorisation of the augmented system; needs the ``highspy-extras`` package, else IPX
        runs and ``stats["solver"]`` says so), with IPX's crossover.
    crossover : bool, default True
        Run crossover after the interior point method (``False``: the interior solution is
        returned as it is, with no basis for warm starts).
    primal_tolerance, dual_tolerance : float > 0 or None
        HiGHS's primal and dual feasibility tolerances (``None``: HiGHS's default, 1e-7).
    ipm_tolerance : float > 0 or None
        The interior point method's relative optimality tolerance (``None``: HiGHS's 1e-8).
    time_limit : float or None
        Wall-clock limit in seconds for all :meth:`solve` calls together; exceeding it raises
        :class:`LPTimeout`.
    threads : int >= 1, "auto" or None
        HiGHS thread count (``None`` / ``"auto"``: the count of the thread plan in force,
        :func:`mdp.runtime.threads.highs_threads`; outside any, that of :func:`set_threads`, else
        HiGHS's default, half the cores). HiGHS has one thread pool per process; a solve with
        another count than the previous one re-creates it.
    simplex_pricing : {"choose", "dantzig", "devex", "steepest"}, default "choose"
        Pricing rule of the dual simplex (:data:`SIMPLEX_PRICING`); ``"choose"`` is HiGHS's
        default.
    options : dict or None
        Further HiGHS options by their HiGHS names, passed verbatim (an escape hatch for
        experiments; the toolkit itself uses only the named parameters above).
    hipo_available : bool or None
        Whether ``"hipo"`` runs HiPO (``None``: :data:`HIPO_AVAILABLE`, whether highspy-extras
        of this HiGHS release is installed); ``False`` runs IPX in its place, as without the
        package.

    Attributes
    ----------
    stats : dict
        ``variables``, ``rows``, ``nnz`` (current model), ``solver``, ``solves``,
        ``simplex_iterations``, ``ipm_iterations``, ``crossover_iterations``, ``seconds``
        (HiGHS time, summed over solves), ``model_status``.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> lp = SparseLP([1.0, 1.0], sp.csr_matrix([[1.0, 2.0]]), row_lower=[2.0], row_upper=[np.inf])
    >>> round(lp.solve().objective, 6)
    1.0
    """

    def __init__(self, c, A, *, row_lower=None, row_upper=None, col_lower=None, col_upper=None,
                 solver: str = "ipm", crossover: bool = True, primal_tolerance: float | None = None,
                 dual_tolerance: float | None = None, ipm_tolerance: float | None = None,
                 time_limit: float | None = None, threads: int | None = None,
                 simplex_pricing: str = "choose", options: dict | None = None,
                 hipo_available: bool | None = None):
        _check_solver(solver)
        self._hipo = HIPO_AVAILABLE if hipo_available is None else bool(hipo_available)
        if time_limit is not None:
            time_limit = check_positive(time_limit, "time_limit")
        c = np.asarray(c, dtype=float).ravel()
        A = sp.csr_matrix(A, dtype=float)
        m, n = A.shape
        if n != c.size:
            raise ParameterError(f"A has {n} columns but c has {c.size} entries")
        self._time_limit = time_limit
        self._spent = 0.0
        h = highspy.Highs()
        h.setOptionValue("output_flag", False)
        self._callback = _SolveCallback()
        h.setCallback(self._callback, None)
        for kind in (highspy.cb.HighsCallbackType.kCallbackIpmInterrupt,
                     highspy.cb.HighsCallbackType.kCallbackSimplexInterrupt):
            h.startCallback(kind)
        self._h = h
        self._crossover = True
        self.set_solver(solver)
        if not crossover:
            self.set_crossover(False)
        self.set_tolerances(primal=primal_tolerance, dual=dual_tolerance, ipm=ipm_tolerance)
        self.set_simplex_pricing(simplex_pricing)
        self._threads = _check_threads(threads)
        for k, v in (options or {}).items():
            h.setOptionValue(k, v)
        A.sort_indices()
        status = h.passModel(
            int(n), int(m), int(A.nnz), _MATRIX_ROWWISE, _MINIMIZE, 0.0, c,
            _bounds(col_lower, n, 0.0, "col_lower"), _bounds(col_upper, n, INF, "col_upper"),
            _bounds(row_lower, m, -INF, "row_lower"), _bounds(row_upper, m, INF, "row_upper"),
            A.indptr[:-1].astype(np.int32), A.indices.astype(np.int32), A.data,
            np.zeros(n, dtype=np.int32))  # all continuous
        if status == highspy.HighsStatus.kError:
            raise LPError(f"HiGHS rejected the model (passModel returned an error; {m} rows, {n} "
                          f"variables, coefficients up to {np.abs(A.data).max(initial=0.0):.3g})")
        self.stats: dict = {"solver": f"HiGHS {h.version()} ({self._solver_name(solver)})", "solves": 0,
                            "simplex_iterations": 0, "ipm_iterations": 0, "crossover_iterations": 0,
                            "seconds": 0.0}
        self._update_sizes()

    def _update_sizes(self) -> None:
        self.stats.update(variables=int(self._h.getNumCol()), rows=int(self._h.getNumRow()),
                          nnz=int(self._h.getNumNz()))

    @property
    def num_row(self) -> int:
        """Rows of the current model."""
        return int(self._h.getNumRow())

    @property
    def num_col(self) -> int:
        """Variables of the model."""
        return int(self._h.getNumCol())

    @property
    def solver(self) -> str:
        """The HiGHS method of the next solve (:meth:`set_solver`)."""
        return self._solver

    @property
    def crossover(self) -> bool:
        """Whether an interior point solve ends with crossover (:meth:`set_crossover`)."""
        return self._crossover

    @property
    def runs_ipx(self) -> bool:
        """Whether the current method is IPX (``"ipm"``/``"ipx"``, or ``"hipo"`` without extras)."""
        return runs_ipx(self._solver, self._hipo)

    @property
    def time_limit(self) -> float | None:
        """Seconds for all solves together (``None``: no limit)."""
        return self._time_limit

    # -- options between solves ------------------------------------------------------------------
    def set_solver(self, solver: str) -> None:
        """Method of later solves (e.g. IPM first, warm dual simplex re-solves)."""
        self._solver = _check_solver(solver)
        self._h.setOptionValue("solver", _highs_solver_name(solver, self._hipo))

    def _solver_name(self, solver: str) -> str:
        if solver == "hipo" and not self._hipo:
            return "hipo unavailable (highspy-extras of this HiGHS release not installed): ipx"
        return solver

    def set_simplex_pricing(self, rule: str) -> None:
        """Pricing rule of later dual simplex solves (:data:`SIMPLEX_PRICING`).

        Devex pays on warm re-solves after many rows were added: dual steepest edge computes an
        exact weight for every new row first (``docs/design/lp.md``).
        """
        if rule not in SIMPLEX_PRICING:
            raise ParameterError(f"simplex_pricing must be one of {tuple(SIMPLEX_PRICING)}, got {rule!r}")
        self._h.setOptionValue("simplex_dual_edge_weight_strategy", SIMPLEX_PRICING[rule])

    def set_crossover(self, on: bool) -> None:
        """Run crossover after later interior point solves (``False``: keep the interior point)."""
        self._crossover = bool(on)
        self._h.setOptionValue("run_crossover", "on" if on else "off")

    def set_tolerances(self, *, primal: float | None = None, dual: float | None = None,
                       ipm: float | None = None) -> None:
        """Set the given tolerances for later solves (``None`` leaves one unchanged).

        Parameters
        ----------
        primal, dual : float > 0 or None
            Primal and dual feasibility tolerances.
        ipm : float > 0 or None
            Relative optimality tolerance of the interior point method.
        """
        for name, value in (("primal_feasibility_tolerance", _check_tolerance(primal, "primal")),
                            ("dual_feasibility_tolerance", _check_tolerance(dual, "dual")),
                            ("ipm_optimality_tolerance", _check_tolerance(ipm, "ipm"))):
            if value is not None:
                self._h.setOptionValue(name, float(value))

    def set_time_limit(self, seconds: float | None) -> None:
        """Seconds for all solves together, counted from the first (``None``: no limit)."""
        self._time_limit = None if seconds is None else check_positive(seconds, "time_limit")

    @contextlib.contextmanager
    def time_budget(self, seconds: float, message: str) -> Iterator[None]:
        """Solves in the block get at most ``seconds`` more, a budget of the caller's own.

        Where the LP's time limit leaves no more than ``seconds``, that limit decides (an
        :class:`LPTimeout` as usual). Otherwise a solve that runs past ``seconds`` ends the block
        with an :class:`LPError` (``message``), not a timeout: the caller has something else to
        try. Inside the block a budget's end is an :class:`LPTimeout`, so fallbacks that let
        timeouts through stop at it. The LP's own limit holds again after the block.
        """
        own = self._time_limit
        if own is not None and own - self._spent <= seconds:
            yield
            return
        if seconds <= 0:
            raise LPError(message)
        self._time_limit = self._spent + seconds
        try:
            yield
        except LPTimeout as exc:
            raise LPError(message) from exc
        finally:
            self._time_limit = own

    def cold_start(self) -> None:
        """Forget the basis and solution: the next solve starts from scratch (the model stays)."""
        self._h.clearSolver()

    # -- model and solve -------------------------------------------------------------------------
    def add_rows(self, A, row_lower=None, row_upper=None) -> None:
        """Append the rows of sparse ``A`` in one ``addRows`` call (the basis is kept)."""
        A = sp.csr_matrix(A, dtype=float)
        m, n = A.shape
        if n != self._h.getNumCol():
            raise ParameterError(f"new rows have {n} columns, the model has {self._h.getNumCol()}")
        if m == 0:
            return
        A.sort_indices()
        status = self._h.addRows(int(m), _bounds(row_lower, m, -INF, "row_lower"),
                                 _bounds(row_upper, m, INF, "row_upper"), int(A.nnz),
                                 A.indptr[:-1].astype(np.int32), A.indices.astype(np.int32), A.data)
        if status == highspy.HighsStatus.kError:
            raise LPError(f"HiGHS rejected the {m} added rows (coefficients up to "
                          f"{np.abs(A.data).max(initial=0.0):.3g})")
        self._update_sizes()

    def _accept_interior(self, info) -> bool:
        """Whether an interior solve without crossover that ended "Unknown" is a usable optimum.

        HiGHS 1.16 re-checks every optimum against the feasibility tolerances and downgrades an
        IPX interior point (no basis) to "Unknown" when IPX stopped "imprecise", e.g. rows violated
        by 2e-8 at a requested 1e-10. Such a point is what an interior round is for: its rows are
        checked again by the caller (separation, the final all-row check and certification) and
        its duals give a Lagrangian bound that holds whatever they are. It is accepted only from
        IPX without crossover, with a primal and a dual point available, relative infeasibilities
        and residuals of at most ``INTERIOR_ACCEPT_RTOL`` and a primal-dual objective error of at
        most 10 times the IPM's optimality tolerance (HiPO's own "Unknown" is a failure and is
        never accepted).
        """
        if self._crossover or _highs_solver_name(self._solver, self._hipo) != "ipx":
            return False
        if int(info.primal_solution_status) < 1 or int(info.dual_solution_status) < 1:
            return False
        worst = max(float(info.max_relative_primal_infeasibility),
                    float(info.max_relative_dual_infeasibility),
                    float(info.max_relative_primal_residual_error),
                    float(info.max_relative_dual_residual_error))
        objective_error = abs(float(info.primal_dual_objective_error))
        return bool(np.isfinite(worst) and worst <= INTERIOR_ACCEPT_RTOL
                    and objective_error <= 10.0 * self._option("ipm_optimality_tolerance"))

    def _option(self, name: str) -> float:
        value = self._h.getOptionValue(name)
        return float(value[1] if isinstance(value, tuple) else value)

    def solve(self) -> LPSolution:
        """Solve (or re-solve from the current basis) and return the optimum: :func:`run_highs`,
        the solver entry point of every HiGHS solve (:mod:`mdp.lp.solver_entry`).

        Raises
        ------
        LPTimeout
            The time limit was reached first.
        LPError
            The model is infeasible, unbounded, or HiGHS failed; the message gives HiGHS's status.
        KeyboardInterrupt
            Ctrl-C (SIGINT) during the solve: HiGHS stops at its next iteration (not when the
            whole solve would have ended) and nothing is returned.
        """
        return run_highs(self)

    def _run(self) -> LPSolution:
        """The body of :func:`run_highs`."""
        h = self._h
        if self._time_limit is not None:
            left = self._time_limit - self._spent
            if left <= 0:
                raise LPTimeout(f"LP time limit of {self._time_limit:g} s reached")
            # HiGHS compares time_limit with its run clock, which accumulates over run() calls
            h.setOptionValue("time_limit", float(h.getRunTime() + left))
        threads = self._threads if self._threads is not None else highs_threads()
        _use_scheduler(threads)
        h.setOptionValue("threads", 0 if threads is None else threads)
        t0 = time.perf_counter()
        cb = self._callback
        cb.solve, cb.rows, cb.method, cb.last = self.stats["solves"] + 1, self.num_row, self._solver, t0
        with sigint_sets(cb):
            h.run()
        dt = time.perf_counter() - t0
        self._spent += dt
        info = h.getInfo()
        st = self.stats
        st["solves"] += 1
        st["seconds"] += dt
        st["simplex_iterations"] += max(0, int(info.simplex_iteration_count))
        st["ipm_iterations"] += max(0, int(info.ipm_iteration_count))
        st["crossover_iterations"] += max(0, int(info.crossover_iteration_count))
        model_status = h.getModelStatus()
        st["model_status"] = h.modelStatusToString(model_status)
        MS = highspy.HighsModelStatus
        if self._callback.interrupted:
            raise KeyboardInterrupt(f"LP solve interrupted after {dt:.1f} s")
        if model_status == MS.kTimeLimit:
            raise LPTimeout(f"LP time limit of {self._time_limit:g} s reached after {self._spent:.1f} s "
                            f"({st['rows']} rows, {st['nnz']} non-zeros); no solution is returned")
        if model_status == MS.kUnknown and self._accept_interior(info):
            st["model_status"] = "Optimal (interior point without crossover, imprecise; accepted)"
            st["imprecise_interior_solves"] = st.get("imprecise_interior_solves", 0) + 1
        elif model_status != MS.kOptimal:
            raise LPError(f"HiGHS did not find an optimum: model status {st['model_status']!r} "
                          f"({st['rows']} rows, {st['variables']} variables)")
        sol = h.getSolution()
        return LPSolution(x=np.asarray(sol.col_value, dtype=float),
                          row_dual=np.asarray(sol.row_dual, dtype=float),
                          col_dual=np.asarray(sol.col_dual, dtype=float),
                          objective=float(info.objective_function_value))


@solver_entry
def run_highs(lp: SparseLP) -> LPSolution:
    """Run HiGHS on ``lp`` with its current options: :meth:`SparseLP.solve`.

    The solver entry point (:mod:`mdp.lp.solver_entry`) through which every HiGHS solve of the
    toolkit goes; a replacement takes the :class:`SparseLP` and returns an :class:`LPSolution`
    (or raises :class:`LPError` / :class:`LPTimeout`).
    """
    return lp._run()
