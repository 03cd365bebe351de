r"""Lazy row generation: solve with some rows, add the violated ones, re-solve, until none is.

An LP with very many rows of which few bind at the optimum (the privacy rows of OPTMech,
SpannerMech and ConstOPTMech, Imola et al. 2022) is solved on a subset of its rows; a
*separation* routine evaluates every row on the current solution and returns the violated ones,
which are added in one batch, and the LP is re-solved, until no row is violated beyond a
tolerance. Every restricted LP is a relaxation of the full one, so its optimum is a lower bound
of the full optimum, and the final solution, feasible for all rows, is the full optimum (up to the
tolerances; a Lagrangian bound, when the problem supplies one, certifies the remaining gap).

The loop is one object, :class:`RowGeneration`, run by an explicit state machine. Each round
solves the LP in the manner of the current :class:`Phase`, separates, and moves to the next
phase by this table (``k`` = rows added this round, ``m`` = rows of the LP after adding them,
"gap ok" = relative Lagrangian gap within the phase's tolerance, or no bound supplied):

=============  ============================  =====================  ==================
phase          how the round solves          k > 0                  k = 0
=============  ============================  =====================  ==================
``INITIAL``    the LP's own method (cold)    ``SIMPLEX``            gap ok: ``DONE``,
                                                                    else ``POLISH``
``INTERIOR``   IPM, no crossover             ``S`` if ``k < f m``,  gap ok: ``DONE``,
                                             else ``INTERIOR``      else ``POLISH``
                                                                    (``REFINE`` if ``S``
                                                                    is ``REFINE``)
``REFINE``     IPM, no crossover, at the     ``REFINE``             gap ok: ``DONE``,
               tighter refine tolerance                             else ``POLISH``
``CROSSOVER``  cold IPM + crossover          ``SIMPLEX``            gap ok: ``DONE``,
                                                                    else ``POLISH``
``SIMPLEX``    warm dual simplex             ``SIMPLEX``            gap ok: ``DONE``,
                                                                    else ``POLISH``
``POLISH``     cold IPM + crossover          ``POLISHED``           ``DONE``
``POLISHED``   warm dual simplex             ``POLISHED``           ``DONE``
=============  ============================  =====================  ==================

(``f`` = :attr:`RowGenerationPolicy.switch_fraction`, ``S`` =
:attr:`RowGenerationPolicy.switch_to`: ``CROSSOVER`` or ``REFINE``.) Why these phases:

* Interior rounds (IPM without crossover) return central solutions, which violate rows in fewer
  rounds than simplex vertices and cost less per round on large map spaces; their rows hold only
  to the IPM tolerances, so they are separated at a looser tolerance
  (:attr:`RowGenerationPolicy.interior_tol`). Once a round adds few rows (the tail), one cold
  IPM + crossover solve gives a vertex and a basis, and warm dual simplex rounds finish.
* ``REFINE``: a run that must stay interior (a near-optimal stop test that repairs the round's
  point) can scout with loose interior rounds, which only find rows, and refine the point at a
  tighter IPM tolerance once the rounds add few rows.
* The warm dual simplex re-solves from the previous basis: added rows keep it dual feasible.
* A solve by IPM + crossover that ends without an optimum (HiGHS's status "Unknown" on these
  degenerate LPs) is repeated by a cold dual simplex, the dependable fallback.
* The dual simplex can stop with a Lagrangian gap far above its tolerances on badly scaled
  columns; one cold IPM + crossover solve of the final row set (``POLISH``) repairs it, and the
  loop goes on (warm dual simplex) if that vertex violates further rows. It polishes at most once.

Measured figures behind the phases and their defaults are in ``docs/design/lp.md``.
"""

from __future__ import annotations

import enum
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from .highs import SIMPLEX_PRICING, LPError, LPSolution, LPTimeout, SparseLP
from .reporting import LPProgress, report

__all__ = ["Phase", "RowGenerationPolicy", "Cuts", "RowGenerationState", "RowGenerationResult",
           "RowGeneration", "warm_rows"]


def warm_rows(old_keys: np.ndarray, old_slack: np.ndarray, old_mult: np.ndarray,
              keys: np.ndarray, values: np.ndarray, mu: float) -> tuple[np.ndarray, np.ndarray]:
    r"""Slacks and multipliers of the rows of a round that an interior point method starts from
    an iterate of the round before (Gondzio's warm start for cutting-plane schemes, Math.
    Programming 83, 1998).

    A row both rounds have (same key) keeps its slack and multiplier; a new row gets

    .. math:: s = \max(b^\top x, \sqrt{\mu}), \qquad z = \mu / s,

    i.e. it starts centred (``values`` = :math:`b^\top x` at the iterate, ``mu`` its mean
    complementarity product); its primal residual, negative for a violated row, is what an
    infeasible method then removes.

    Parameters
    ----------
    old_keys, old_slack, old_mult : ndarrays
        The round before's rows (unique keys, any order) with their slacks and multipliers.
    keys, values : ndarrays
        This round's rows (unique keys) and their values at the iterate.
    mu : float

    Returns
    -------
    slack, mult : ndarrays, in the order of ``keys``
    """
    order = np.argsort(old_keys, kind="stable")
    known = np.asarray(old_keys)[order]
    at = np.searchsorted(known, keys)
    found = at < len(known)
    found[found] = known[at[found]] == keys[found]
    slack = np.maximum(values, np.sqrt(mu))
    mult = mu / slack
    source = order[at[found]]
    slack[found], mult[found] = old_slack[source], old_mult[source]
    return slack, mult


class Phase(enum.Enum):
    """Phase of a :class:`RowGeneration` run (see the module docstring for the transitions)."""

    #: First solve with the method the LP was created with.
    INITIAL = "initial"
    #: Interior point rounds without crossover.
    INTERIOR = "interior"
    #: Interior point rounds without crossover at the tighter ``refine_ipm_tolerance``.
    REFINE = "refine"
    #: One cold interior point + crossover solve: a vertex and a basis for warm re-solves.
    CROSSOVER = "crossover"
    #: Warm-started dual simplex rounds.
    SIMPLEX = "simplex"
    #: One cold interior point + crossover solve of the final row set (the gap was too large).
    POLISH = "polish"
    #: Warm dual simplex rounds after the polish (no second polish).
    POLISHED = "polished"
    #: Finished: no row is violated.
    DONE = "done"


#: Phases whose solve is a cold IPM + crossover (with the dual simplex fallback).
_VERTEX_SOLVES = (Phase.CROSSOVER, Phase.POLISH)
_WARM_SOLVES = (Phase.SIMPLEX, Phase.POLISHED)
#: Phases whose solve is an IPM without crossover.
_INTERIOR_SOLVES = (Phase.INTERIOR, Phase.REFINE)


@dataclass(frozen=True)
class RowGenerationPolicy:
    """Tolerances and limits of a :class:`RowGeneration` run.

    Attributes
    ----------
    start : Phase, default INITIAL
        ``INITIAL`` (first solve with the LP's own method, then warm dual simplex rounds) or
        ``INTERIOR`` (interior point rounds first).
    tol : float
        Violation above which separation returns a row (vertex phases).
    interior_tol : float
        Separation tolerance of ``INTERIOR`` rounds (used as ``max(tol, interior_tol)``; it is
        tightened to ``tol`` by the switch to ``CROSSOVER``, not by a polish).
    interior_ipm_tolerance : float
        IPM optimality tolerance of ``INTERIOR`` rounds.
    vertex_ipm_tolerance : float
        IPM optimality tolerance of the crossover solves (HiGHS's default; with a tighter one IPX
        can end "imprecise" and HiGHS reports status Unknown).
    switch_fraction : float
        ``INTERIOR`` moves to ``switch_to`` once a round adds fewer rows than this fraction of
        the LP (0: never).
    switch_to : Phase, default CROSSOVER
        ``CROSSOVER`` (a vertex, then warm dual simplex rounds) or ``REFINE`` (interior rounds
        at ``refine_ipm_tolerance`` to the end).
    refine_ipm_tolerance : float
        IPM optimality tolerance of ``REFINE`` rounds.
    gap_rtol : float
        Relative Lagrangian gap accepted when no row is violated (vertex phases); above it the
        loop polishes once.
    interior_gap_rtol : float
        The same for ``INTERIOR`` rounds.
    warm_pricing : str
        Dual simplex pricing rule of the warm ``SIMPLEX`` and ``POLISHED`` rounds
        (:data:`mdp.lp.highs.SIMPLEX_PRICING`); every other solve uses HiGHS's choice.
    max_rounds : int
        Rounds after which the loop gives up (:class:`~mdp.lp.LPError`).
    warm_time_factor : float or None
        A budget for the warm rounds that follow an ``INITIAL`` solve: the larger of
        ``warm_min_seconds`` and this factor times the first solve's seconds, past which the
        run stops with an :class:`~mdp.lp.LPError` (not a timeout), so that a caller with
        another method to try goes on to it. ``None`` (default): no budget. From an interior
        point's basis on a badly scaled LP the warm dual simplex can crawl (ConstOPTMech, two
        scales of distance at eps x median 1, n = 100: 740 iterations in 223 s after a 0.8 s
        first solve) where a run started by IPX takes 0.3 s.
    warm_min_seconds : float
        The least budget of the warm rounds (with ``warm_time_factor``).
    polish_tol : float or None
        Separation tolerance from a polish on (``POLISH`` and the ``POLISHED`` rounds after it);
        None (default): the tolerance of the rounds before it. A run whose interior rounds end
        satisfied at ``interior_tol`` otherwise returns the polished vertex with rows violated by
        up to that tolerance, which the caller's repair pays for.
    """

    start: Phase = Phase.INITIAL
    tol: float = 1e-9
    interior_tol: float = 1e-8
    interior_ipm_tolerance: float = 1e-10
    vertex_ipm_tolerance: float = 1e-8
    switch_fraction: float = 0.05
    switch_to: Phase = Phase.CROSSOVER
    refine_ipm_tolerance: float = 1e-10
    gap_rtol: float = 1e-8
    interior_gap_rtol: float = 1e-7
    warm_pricing: str = "choose"
    max_rounds: int = 500
    warm_time_factor: float | None = None
    warm_min_seconds: float = 20.0
    polish_tol: float | None = None

    def __post_init__(self) -> None:
        if self.start not in (Phase.INITIAL, Phase.INTERIOR):
            raise ValueError(f"a run starts in Phase.INITIAL or Phase.INTERIOR, not {self.start}")
        if self.switch_to not in (Phase.CROSSOVER, Phase.REFINE):
            raise ValueError(f"interior rounds switch to Phase.CROSSOVER or Phase.REFINE, not {self.switch_to}")
        if self.warm_pricing not in SIMPLEX_PRICING:
            raise ValueError(f"warm_pricing must be one of {tuple(SIMPLEX_PRICING)}, "
                             f"not {self.warm_pricing!r}")


@dataclass(frozen=True)
class Cuts:
    """What one separation found.

    Attributes
    ----------
    keys : int ndarray
        Identifiers (in ``range(key_space)``) of the rows violated beyond the tolerance; rows
        already in the LP may be among them (the loop drops those).
    worst : float
        The largest violation over all rows (``-inf`` if there are none).
    """

    keys: np.ndarray
    worst: float


@dataclass
class RowGenerationState:
    """Where a :class:`RowGeneration` run stands.

    Attributes
    ----------
    phase : Phase
        Phase of the next round (``DONE`` when finished).
    tol : float
        Current separation tolerance.
    rounds : int
        Solves so far.
    history : list of Phase
        Phase of each round.
    trace : list of (rows, seconds, objective)
        Per round: rows of the LP solved, seconds of the solve, objective.
    worst : float
        Largest violation found by the last separation.
    bound : float
        Last Lagrangian lower bound (``-inf`` before one is computed).
    solution : LPSolution or None
        Last solution.
    warm_pricing : str
        Pricing rule of the warm rounds: the policy's, until a warm solve with it fails; then
        HiGHS's own choice for the rest of the run.
    """

    phase: Phase
    tol: float
    warm_pricing: str = "choose"
    rounds: int = 0
    history: list = field(default_factory=list)
    trace: list = field(default_factory=list)
    worst: float = -np.inf
    bound: float = -np.inf
    solution: LPSolution | None = None


@dataclass(frozen=True)
class RowGenerationResult:
    """The outcome of :meth:`RowGeneration.run`.

    Attributes
    ----------
    solution : LPSolution
        Optimum of the final restricted LP (no row violated beyond the tolerance).
    rounds : int
    phases : tuple of str
        Phase of each round (:class:`Phase` values).
    polished : bool
        Whether the polish solve ran.
    trace : list of (rows, seconds, objective)
    worst : float
        Largest violation of the final separation (``<= tol``).
    bound : float
        Lagrangian lower bound of the final solution (``-inf`` without a bound function).
    wall_seconds : float
        Seconds of the whole loop (solves and separation).
    """

    solution: LPSolution
    rounds: int
    phases: tuple
    polished: bool
    trace: list
    worst: float
    bound: float
    wall_seconds: float

    @property
    def last_phase(self) -> Phase:
        """Phase of the round that ended the loop."""
        return Phase(self.phases[-1])


class RowGeneration:
    r"""Lazy row generation on a :class:`~mdp.lp.SparseLP` (module docstring: the phases).

    Parameters
    ----------
    lp : SparseLP
        The restricted LP, holding the starting rows (created with the method of the
        ``INITIAL`` phase).
    A : scipy.sparse matrix
        The rows ``lp`` holds (kept to evaluate ``bound`` on all rows of the restricted LP).
    separate : callable ``(solution, tol) -> Cuts``
        Evaluates every row of the full LP on ``solution``.
    rows : callable ``(keys) -> (A_new, lower, upper)``
        The rows of the given identifiers, in the columns of ``lp``.
    key_space : int
        Number of row identifiers.
    initial_keys : int array
        Identifiers of the rows ``lp`` already holds (not added again).
    bound : callable ``(A, solution) -> float`` or None
        A rigorous lower bound on the full optimum from the restricted LP's solution (rows
        ``A``); ``None``: no gap test (the loop stops when no row is violated).
    policy : RowGenerationPolicy
    time_limit : float or None
        Wall-clock seconds for the loop, counted from ``started``; :class:`~mdp.lp.LPTimeout`.
    started : float or None
        ``time.perf_counter()`` at which the time limit started (default: now).
    on_round : callable ``(state) -> None`` or None
        Called after every round with the :class:`RowGenerationState` (progress display).
    stop : callable ``(solution, bound) -> (bool, float)`` or None
        Certified near-optimal mode: after a round that found violated rows, the Lagrangian
        ``bound`` (a valid lower bound on the full optimum) is computed and ``stop`` returns
        whether the caller's repaired solution is close enough and that solution's objective
        (it meets every row, so the progress report certifies its gap to ``bound``); ``True``
        ends the run (``DONE``) with this solution, which may violate rows (the caller repairs
        and certifies it). Needs ``bound``.

    Examples
    --------
    A row set ``x_i >= 1`` generated lazily, one row per round:

    >>> import numpy as np, scipy.sparse as sp
    >>> from mdp.lp import SparseLP, RowGeneration, Cuts
    >>> n = 3
    >>> lp = SparseLP(np.ones(n), sp.csr_matrix((0, n)), solver="simplex")
    >>> def separate(sol, tol):
    ...     viol = 1.0 - sol.x
    ...     return Cuts(keys=np.nonzero(viol > tol)[0], worst=float(viol.max()))
    >>> def rows(keys):
    ...     return sp.csr_matrix((np.ones(len(keys)), (np.arange(len(keys)), keys)), shape=(len(keys), n)), \
    ...         np.ones(len(keys)), np.full(len(keys), np.inf)
    >>> out = RowGeneration(lp, sp.csr_matrix((0, n)), separate, rows, key_space=n,
    ...                     initial_keys=np.array([], dtype=int)).run()
    >>> round(out.solution.objective, 9), out.rounds
    (3.0, 2)
    """

    def __init__(self, lp: SparseLP, A, separate: Callable[[LPSolution, float], Cuts],
                 rows: Callable[[np.ndarray], tuple], *, key_space: int, initial_keys,
                 bound: Callable[[sp.csr_matrix, LPSolution], float] | None = None,
                 policy: RowGenerationPolicy | None = None, time_limit: float | None = None,
                 started: float | None = None, on_round: Callable | None = None,
                 stop: Callable[[LPSolution, float], tuple[bool, float]] | None = None):
        if stop is not None and bound is None:
            raise ValueError("RowGeneration's stop test needs a bound")
        self._stop = stop
        self.lp = lp
        self.policy = policy or RowGenerationPolicy()
        self._blocks = [sp.csr_matrix(A)]
        self._separate = separate
        self._rows = rows
        self._bound = bound
        self._in_lp = np.zeros(int(key_space), dtype=bool)
        self._in_lp[np.asarray(initial_keys, dtype=np.int64)] = True
        self.time_limit = time_limit
        self._t0 = time.perf_counter() if started is None else started
        self._on_round = on_round
        self._warm_deadline: float | None = None
        p = self.policy
        self.state = RowGenerationState(phase=p.start, tol=p.tol, warm_pricing=p.warm_pricing)
        self._enter(p.start)

    # -- the machine -----------------------------------------------------------------------------
    def _enter(self, phase: Phase) -> None:
        """Configure the LP for the solves of ``phase``."""
        p, lp, st = self.policy, self.lp, self.state
        lp.set_simplex_pricing(st.warm_pricing if phase in _WARM_SOLVES else "choose")
        if phase in _INTERIOR_SOLVES:
            lp.set_solver("ipm")
            lp.set_crossover(False)
            lp.set_tolerances(ipm=p.interior_ipm_tolerance if phase is Phase.INTERIOR
                              else p.refine_ipm_tolerance)
            st.tol = max(p.tol, p.interior_tol)
        elif phase in _VERTEX_SOLVES:
            lp.set_crossover(True)
            lp.set_tolerances(ipm=p.vertex_ipm_tolerance)
            lp.cold_start()
            lp.set_solver("ipm")
            if phase is Phase.CROSSOVER:
                st.tol = p.tol
            elif p.polish_tol is not None:
                st.tol = p.polish_tol
        elif phase in (Phase.SIMPLEX, Phase.POLISHED):
            lp.set_solver("simplex")
        st.phase = phase

    def _solve_with(self, *fallbacks: Callable[[], object]) -> LPSolution:
        """Solve; after each solver failure (not a timeout) apply the next fallback and retry."""
        for fallback in fallbacks:
            try:
                return self.lp.solve()
            except LPTimeout:
                raise
            except LPError:
                fallback()
        return self.lp.solve()

    def _keep_highs_pricing(self) -> None:
        self.state.warm_pricing = "choose"
        self.lp.set_simplex_pricing("choose")

    def _solve(self, phase: Phase) -> LPSolution:
        if phase in _WARM_SOLVES and self._warm_deadline is not None:
            return self._budgeted(phase)
        return self._solve_phase(phase)

    def _budgeted(self, phase: Phase) -> LPSolution:
        """A warm solve within what is left of the warm rounds' budget (policy)."""
        now = time.perf_counter()
        left = self._warm_deadline - now
        user_left = None if self.time_limit is None else self.time_limit - (now - self._t0)
        if user_left is not None and user_left <= left:
            return self._solve_phase(phase)          # the caller's own limit comes first
        with self.lp.time_budget(left, f"warm dual simplex rounds ran past their budget after "
                                       f"{self.state.rounds} rounds ({self.lp.num_row} rows)"):
            return self._solve_phase(phase)

    def _solve_phase(self, phase: Phase) -> LPSolution:
        if phase in _WARM_SOLVES and self.state.warm_pricing != "choose":
            # Devex is less robust than dual steepest edge on badly scaled rows (HiGHS ended
            # "Unknown" on Geolife cells at eps = 2-2.5 with coefficients up to 1e12): the same
            # solve again with HiGHS's choice (warm, else cold), which the rest of the run keeps
            return self._solve_with(self._keep_highs_pricing, self.lp.cold_start)
        if phase in _VERTEX_SOLVES:
            # a cold IPM + crossover that ends without an optimum: a cold dual simplex
            return self._solve_with(lambda: (self.lp.cold_start(), self.lp.set_solver("simplex")))
        return self.lp.solve()

    def _when_satisfied(self, phase: Phase, sol: LPSolution) -> Phase:
        """Next phase when the separation found no new row."""
        st, p = self.state, self.policy
        if self._bound is None:
            return Phase.DONE
        st.bound = max(st.bound, self._bound(self.constraint_matrix(), sol))
        if phase in (Phase.POLISH, Phase.POLISHED):
            return Phase.DONE
        rtol = p.interior_gap_rtol if phase in _INTERIOR_SOLVES else p.gap_rtol
        if sol.objective - st.bound <= rtol * abs(sol.objective):
            return Phase.DONE
        # a run that must stay interior refines a loose point before it would polish by crossover
        return Phase.REFINE if phase is Phase.INTERIOR and p.switch_to is Phase.REFINE else Phase.POLISH

    def _round_bound(self, sol: LPSolution) -> float:
        """Lagrangian bound of this round's solution (kept in the state when it improves)."""
        st = self.state
        st.bound = max(st.bound, self._bound(self.constraint_matrix(), sol))
        return st.bound

    def _after_cuts(self, phase: Phase, added: int) -> Phase:
        """Next phase after ``added`` rows went into the LP."""
        if phase is Phase.INTERIOR:
            small = added < self.policy.switch_fraction * self.lp.num_row
            return self.policy.switch_to if small else Phase.INTERIOR
        if phase is Phase.REFINE:
            return Phase.REFINE
        if phase in (Phase.POLISH, Phase.POLISHED):
            return Phase.POLISHED
        return Phase.SIMPLEX

    def step(self) -> Phase:
        """One round: solve, separate, add rows or decide; returns the next phase."""
        st, p = self.state, self.policy
        phase = st.phase
        if phase is Phase.DONE:
            return phase
        t_round = time.perf_counter()
        sol = self._solve(phase)
        if phase is Phase.INITIAL and p.warm_time_factor is not None:
            first = time.perf_counter() - t_round
            self._warm_deadline = time.perf_counter() + max(p.warm_min_seconds,
                                                            p.warm_time_factor * first)
        st.solution = sol
        st.rounds += 1
        st.history.append(phase)
        st.trace.append((self.lp.num_row, round(time.perf_counter() - t_round, 2), sol.objective))
        cuts = self._separate(sol, st.tol)
        st.worst = cuts.worst
        keys = np.asarray(cuts.keys, dtype=np.int64)
        # rows already in the LP are violated only within HiGHS's (scaled) tolerances: adding them
        # again cannot make progress (the callers' final checks and certification cover them)
        keys = keys[~self._in_lp[keys]]
        obj = sol.objective
        # a round whose solution violates rows reports a feasible objective only where the caller
        # repairs one (stop test): its own is a relaxation's, below the optimum
        feasible = math.nan if len(keys) else obj
        done = False
        if len(keys) and self._stop is not None:
            done, feasible = self._stop(sol, self._round_bound(sol))
        if len(keys) == 0:
            nxt = self._when_satisfied(phase, sol)
        elif done:
            nxt = Phase.DONE
        else:
            self._in_lp[keys] = True
            if self.time_limit is not None and time.perf_counter() - self._t0 > self.time_limit:
                raise LPTimeout(f"LP time limit of {self.time_limit:g} s reached after {st.rounds} rounds "
                                f"of row generation ({self.lp.num_row} rows); no solution is returned")
            if st.rounds >= p.max_rounds:
                raise LPError(f"row generation did not converge in {p.max_rounds} rounds "
                              f"(largest violation {st.worst:.3g})")
            A, lo, hi = self._rows(keys)
            self._blocks.append(sp.csr_matrix(A))
            self.lp.add_rows(A, lo, hi)
            nxt = self._after_cuts(phase, len(keys))
        if nxt is not phase:
            self._enter(nxt)
        if self._on_round is not None:
            self._on_round(st)
        certified = math.isfinite(st.bound) and math.isfinite(feasible)
        shown = feasible if certified else obj
        report(LPProgress(round=st.rounds, rows=self.lp.num_row, objective=shown,
                          gap=(shown - st.bound) / abs(shown) if math.isfinite(st.bound) and shown else math.nan,
                          certified=certified, violated=len(keys)))
        return nxt

    def run(self) -> RowGenerationResult:
        """Rounds until ``DONE``.

        Raises
        ------
        LPTimeout
            The time limit was reached.
        LPError
            A solve failed, or ``max_rounds`` rounds did not converge.
        """
        while self.step() is not Phase.DONE:
            pass
        st = self.state
        return RowGenerationResult(solution=st.solution, rounds=st.rounds,
                                   phases=tuple(ph.value for ph in st.history),
                                   polished=Phase.POLISH in st.history, trace=st.trace,
                                   worst=st.worst, bound=st.bound,
                                   wall_seconds=time.perf_counter() - self._t0)

    def constraint_matrix(self) -> sp.csr_matrix:
        """All rows of the restricted LP, in order (starting rows, then each added batch)."""
        if len(self._blocks) > 1:
            self._blocks = [sp.vstack(self._blocks, format="csr")]
        return self._blocks[0]
