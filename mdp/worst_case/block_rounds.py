r"""Lazy row generation for the worst-case-loss LP, each round solved over its column blocks.

OPTMech's LP (Imola et al. 2022, section 2.1) has ``n^2 (n - 1)`` privacy rows, of which a few
per entry bind at the optimum (Geolife cells, n = 200: about 285,000 of 8 million). As in
:func:`mdp.worst_case.solve.solve_worst_case_lp_lazy`, the rounds start from
:func:`~mdp.worst_case.solve.initial_triples` and add the rows :func:`~mdp.worst_case.solve.separate`
finds violated; here every round's LP is solved by the interior point method over column blocks
(:func:`mdp.worst_case.column_blocks.solve_worst_case_triples`), whose cost per iteration is ``n`` dense
``n x n`` factorisations plus a pass over the rows, instead of a sparse factorisation of the whole
LP.

Tolerances and switches are the fields of :class:`BlockRoundsTuning`.
Rounds (:class:`BlockPhase`): **loose** ones stop the interior point method at a relative gap of
``loose_tol`` (they only find rows; a central point violates more of the missing rows, as for
HiGHS's interior rounds), **tight** ones, once a round adds fewer than ``switch_fraction`` of the
rows, run it to its end. Each round's multipliers give a Lagrangian bound
(:func:`~mdp.worst_case.column_blocks.lagrangian_bound`) that holds for the full LP (a restricted LP is a
relaxation, the rows never added have zero multipliers); the caller's ``stop`` test repairs the
round's matrix to a private one and compares its loss with the best bound (with ``test_from``,
on the round's iterates too: :class:`IterateTest`). The loop ends when
``stop`` accepts, when no row is violated (:attr:`BlockRounds.exhausted`), or when
``stall_rounds`` tight rounds in a row lowered neither the best certified gap nor the rows they
add by a factor of ``stall_factor`` (:attr:`BlockRounds.stalled`: on the method's plateau a few
rows can keep appearing and disappearing). The interior point method ends on a plateau near a relative gap of
``1e-6`` (``docs/design/lp.md``), so a caller that needs more finishes with HiGHS from
:attr:`BlockRounds.rows`.

**Warm rounds.** A round only adds rows to the LP the round before solved, so it starts from
that round's first iterate within ``loose_keep`` (a loose round) or ``tight_keep`` (a tight
one) rather than from the uniform matrix (:class:`~mdp.worst_case.column_blocks.WarmStart`: Gondzio's
warm start for cutting-plane schemes, Math. Programming 83, 1998). An early, well-centred iterate
absorbs the new rows; a round's last one, near the boundary, does not (keeping the loose rounds'
last iterates took more iterations than cold starts). Geolife cells n = 200, ``gap=1e-3``: 253
interior point iterations cold, 189 warm; GloVe n = 300: 345 and 204.

**Pair closure.** Where many rows tie at the worst-case loss (fastText, n = 200, eps 12), a tight
round's restricted optimum is far from unique and the rows it violates move from column to
column of the same pairs round after round (round 15 violated 133 rows on 124 pairs, 113 of them
already violated in round 13, in other columns); each repair of one of them raises a worst row,
so the certified gap stays flat (4-5%). Once ``closure_after`` tight rounds in a row have not
lowered the certified gap by ``stall_factor``, a pair ``(u, v)`` that a tight round violates
again (:attr:`BlockRounds.violated_pairs`) therefore gets its rows in every column where they
are within a factor ``e^{closure_margin}`` of binding (:func:`pair_closure`), so the next round
cannot move the violation to another column.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum

import numpy as np

from ..lp.highs import LPTimeout
from ..lp.reporting import LPProgress, report
from ..lp.solver_entry import solver_entry
from ..validation import check_tuning
from .column_blocks import BlockResources, Iterate, solve_worst_case_triples
from .solve import initial_triples, merge_rows, separate

__all__ = ["BlockPhase", "BlockRounds", "IterateTest", "solve_worst_case_lp_block_rounds",
           "gap_round_tol", "BlockRoundsTuning", "pair_closure"]

@dataclass(frozen=True)
class BlockRoundsTuning:
    """Tolerances and switches of the rounds over column blocks (module docstring).

    Attributes
    ----------
    loose_tol : float, default 1e-2
        Relative gap and infeasibilities at which a loose round's interior point method stops.
    tight_tol : float, default 1e-8
        The same for tight rounds (the method's plateau ends them first, near ``1e-6``).
    switch_fraction : float, default 0.01
        Tight rounds start once a round adds fewer than this fraction of its rows.
    separation_tol : float, default 1e-8
        Absolute violation of a scaled row ``e^{-eps D_uv} M_uw - M_vw`` above which a loose
        round adds it (an interior point meets its rows to about ``1e-9``).
    tight_separation_tol : float, default 1e-10
        The same for tight rounds of exact builds. The rows a tight round's matrix violates by
        less than the separation's tolerance are never added, and the repair
        (``balanced_envelope``) pays for them: at 1e-8 that was most of the exact rounds'
        plateau (Geolife cells, n = 150, eps 1 per km: certified 8.1e-7, of which the repair
        6.2e-7; at 1e-10: 3.5e-7, the repair 8.9e-8).
    test_step : float, default 10
        Within a tight round, the caller's test runs again on the first iterate whose relative
        gap is this factor below that of the last iterate tested.
    stall_rounds : int, default 4
    stall_factor : float, default 2
        The rounds end on a plateau once ``stall_rounds`` tight rounds in a row have lowered
        neither the best certified relative gap nor the rows they add by ``stall_factor``
        (Geolife cells, n = 200, eps 0.1 per km: from round 10 on the certified gap moved
        between 2.1e-6 and 6e-6 while each round added 2 to 492 rows, 20-30 s per round). The
        rows count too: where the repair of the rows still missing dominates the certificate, it
        stays flat until the last of them is added (fastText, n = 200, eps 6: certified 3.3e-2,
        2.5e-2, 2.5e-2, 2.4e-2 while the rounds added 10,319, 5,637, 1,347, 295 rows).
    closure_margin : float or None, default 1
        Pair closure (module docstring): a recurring pair's row joins in the columns where
        ``e^{-eps D_uv} M_uw >= e^{-closure_margin} M_vw``; None: no closure. fastText, n = 200,
        eps 12: without the closure a 1,200 s time limit ran out at a certified gap of 4.5%;
        with it from the first tight round, margin 3: 314 s, 863,000 rows, certified 3.4e-6;
        margin 1: 293 s, 631,000 rows, 1.4e-6 (with ``closure_after``: 297 s, 298,000 rows,
        8.4e-7).
    closure_after : int, default 3
        The closure starts once this many tight rounds in a row have not lowered the best
        certified gap by ``stall_factor``: earlier, its rows only slow the rounds and lower the
        interior point method's final accuracy (fastText, n = 200, eps 6: without the closure
        476 s, certified 9.2e-7; from the first tight round 430 s, 1.5e-6; after three flat
        rounds 251 s, 9.3e-7).
    loose_keep, tight_keep : float, defaults 0.5 and 1e-2
        Warm rounds (module docstring): a loose round keeps its first iterate whose relative gap
        and infeasibilities are within ``loose_keep``, a tight round the first within
        ``tight_keep``, to start the next round from. Geolife cells n = 200 (eps 0.5 per km,
        ``gap=1e-3``), the rounds' interior point iterations: cold 253; keeping the loose
        rounds' last iterate (relative gap 1e-2) 346; within 0.2 / 0.5 / 1 / 3: 228 / 221 / 211
        / 234; with warm tight rounds kept at 1e-3 / 1e-2 / 1e-1: 240 / 189 / 189.
    warm_start : bool, default True
        Start each round after the first from an iterate of the round before
        (:class:`~mdp.worst_case.column_blocks.WarmStart`); False: every round from the default point.
    max_rounds : int, default 100
    """

    def __post_init__(self) -> None:
        check_tuning(self)

    loose_tol: float = 1e-2
    tight_tol: float = 1e-8
    switch_fraction: float = 0.01
    separation_tol: float = 1e-8
    tight_separation_tol: float = 1e-10
    test_step: float = 10.0
    stall_rounds: int = 4
    stall_factor: float = 2.0
    closure_margin: float | None = 1.0
    closure_after: int = 3
    loose_keep: float = 0.5
    tight_keep: float = 1e-2
    warm_start: bool = True
    max_rounds: int = 100


def pair_closure(M: np.ndarray, distances: np.ndarray, epsilon: float, u: np.ndarray,
                 v: np.ndarray, *, margin: float = 1.0, tol: float = 0.0
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""The rows of the pairs ``(u_i, v_i)`` in every column where they nearly bind ``M``.

    Row ``(u, v, w)``, :math:`M_{vw} \ge e^{-\epsilon D_{uv}} M_{uw}`, is returned when

    .. math:: e^{-\epsilon D_{uv}} M_{uw} \ge e^{-m} M_{vw} \quad\text{and}\quad
              e^{-\epsilon D_{uv}} M_{uw} > \mathrm{tol},

    i.e. within a factor ``e^m`` of binding (``m = margin``; violated rows included) and large
    enough to be violated by more than ``tol`` at all.

    Returns
    -------
    u, v, w : int arrays of the rows (not deduplicated against any row set).
    """
    D = np.asarray(distances, dtype=float)
    u, v = np.asarray(u, dtype=np.int64), np.asarray(v, dtype=np.int64)
    scaled = np.exp(-epsilon * D[u, v])[:, None] * M[u, :]
    i, w = np.nonzero((scaled > tol) & (scaled >= np.exp(-margin) * M[v, :]))
    return u[i], v[i], w


def gap_round_tol(gap: float, *, tuning: BlockRoundsTuning = BlockRoundsTuning()) -> float:
    """Tight rounds' tolerance in ``gap=`` mode: ``gap / 10``, within ``[tuning.tight_tol, 1e-4]``
    (the round's bound and objective are then within about that of the restricted optimum,
    a tenth of the budget; the iterates are tested against the target on the way,
    :class:`IterateTest`). With warm rounds, ``gap / 10`` took as many or fewer iterations than
    ``gap / 100`` on every space measured (``gap=1e-3``: GloVe n = 300 189 against 204, Geolife
    cells n = 200 175 against 189; ``docs/design/lp.md``)."""
    return float(min(1e-4, max(tuning.tight_tol, gap * 1e-1)))


class BlockPhase(Enum):
    """Accuracy of the next round's interior point solve."""

    LOOSE = "loose"
    TIGHT = "tight"


@dataclass
class BlockRounds:
    """State of the row generation: the row set, the phase, the best bound and a trace.

    Attributes
    ----------
    rows : tuple of int arrays ``(u, v, w)``
        The privacy rows of the next (or last) round.
    phase : BlockPhase
    rounds : int
        Rounds solved.
    bound : float
        Best Lagrangian lower bound on the full LP's optimum so far.
    exhausted : bool
        The last round was tight and its matrix violated no row of the full LP (beyond
        the tight rounds' separation tolerance).
    stalled : bool
        ``stall_rounds`` tight rounds in a row lowered neither the best certified relative gap
        nor the rows they added by a factor of ``stall_factor`` (:meth:`certify`).
    stopped : bool
        ``stop`` accepted the last round's matrix.
    trace : list of dict
        Per round: ``rows``, ``phase``, ``iterations``, ``seconds``, ``objective`` (the
        restricted LP's), ``bound``, ``added``, ``closure`` (rows :func:`pair_closure`
        proposed, before deduplication), ``certified`` (the loss ``stop`` reported, or NaN),
        ``iterate_tests`` (iterates :class:`IterateTest` tested) and ``warm`` (whether the round
        started from the round before's iterate).
    """

    rows: tuple
    tuning: BlockRoundsTuning = field(default_factory=BlockRoundsTuning)
    phase: BlockPhase = BlockPhase.LOOSE
    rounds: int = 0
    bound: float = -np.inf
    exhausted: bool = False
    stopped: bool = False
    trace: list = field(default_factory=list)
    #: least certified loss so far; the certified gap and the rows added at the last progress;
    #: tight rounds since
    best_loss: float = np.inf
    progress_gap: float = np.inf
    progress_added: float = np.inf
    rounds_since_progress: int = 0
    #: best certified gap when it last fell by ``stall_factor``; tight rounds since (the pair
    #: closure's trigger: ``closure_after``)
    gap_progress: float = np.inf
    flat_rounds: int = 0
    #: keys ``u * n + v`` of the pairs tight rounds have found violated (sorted, unique)
    violated_pairs: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    def recurring(self, u: np.ndarray, v: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
        """Record the pairs of a tight round's violated rows; those recorded before (the pairs
        whose violation has moved to other columns: :func:`pair_closure`)."""
        keys = np.unique(np.asarray(u, dtype=np.int64) * n + v)
        again = keys[np.isin(keys, self.violated_pairs, assume_unique=True)]
        self.violated_pairs = np.union1d(self.violated_pairs, keys)
        return again // n, again % n

    def certify(self, loss: float, added: int) -> float:
        """Record a tight round's certified loss and the rows its matrix violated (added); the
        best certified relative gap (least loss against the best bound). :attr:`stalled`
        follows: a round makes progress when the gap or the rows added have fallen by
        ``stall_factor`` since the last round that made progress; :attr:`flat_rounds` counts the
        rounds since the gap alone last fell by ``stall_factor`` (the pair closure's trigger)
        (fields of :attr:`tuning`)."""
        factor = self.tuning.stall_factor
        self.best_loss = min(self.best_loss, loss)
        gap = (self.best_loss - self.bound) / self.best_loss if self.best_loss > 0 else 0.0
        if gap <= self.gap_progress / factor:
            self.gap_progress, self.flat_rounds = gap, 0
        else:
            self.flat_rounds += 1
        if gap <= self.progress_gap / factor or added <= self.progress_added / factor:
            self.progress_gap, self.progress_added, self.rounds_since_progress = gap, added, 0
        else:
            self.rounds_since_progress += 1
        return gap

    @property
    def stalled(self) -> bool:
        return self.rounds_since_progress >= self.tuning.stall_rounds

    def add(self, u: np.ndarray, v: np.ndarray, w: np.ndarray, n: int) -> int:
        """Add the rows not yet in the set; the number added. Switches to tight rounds once
        a round adds fewer than ``switch_fraction`` of the rows."""
        ou, ov, ow = self.rows
        fresh = np.setdiff1d((u * n + v) * n + w, (ou * n + ov) * n + ow)
        self.rows = (np.r_[ou, fresh // (n * n)], np.r_[ov, (fresh // n) % n], np.r_[ow, fresh % n])
        if len(fresh) < self.tuning.switch_fraction * len(ou):
            self.phase = BlockPhase.TIGHT
        return len(fresh)


@dataclass
class IterateTest:
    """The caller's ``stop`` test on a tight round's iterates, not only on its last one.

    An interior point iterate is the restricted LP's central point at its gap: the rows not yet
    generated bind it less than they bind the restricted optimum, so its repaired matrix can
    certify the target where the round's end does not (Geolife cells, n = 100, ``gap=1e-3``:
    certified 7.2e-4 at the iterate of relative gap 4.7e-4, 1.4e-3 at the round's end, gap
    1.3e-5; ``docs/design/lp.md``). Tested: the first iterate within ``below``, then each one
    ``test_step`` times closer than the last tested; the bound is the best of the rounds
    before and the iterate's own (:meth:`~mdp.worst_case.column_blocks.Iterate.bound`, valid for any
    multipliers).

    Attributes
    ----------
    bound : float
        The best bound so far (rounds before, and the iterates tested).
    below : float
        The relative gap under which the next iterate is tested.
    accepted : bool
        ``stop`` accepted an iterate (the round stops there).
    loss : float
        The loss ``stop`` reported for the accepted iterate (NaN before).
    tests : int
    test_step : float
        :attr:`BlockRoundsTuning.test_step`.
    """

    stop: Callable
    bound: float
    below: float
    test_step: float = 10.0
    accepted: bool = False
    loss: float = np.nan
    tests: int = 0

    def __call__(self, iterate: Iterate) -> bool:
        if iterate.gap > self.below:
            return False
        self.below = iterate.gap / self.test_step
        self.tests += 1
        self.bound = max(self.bound, iterate.bound())
        self.accepted, self.loss = self.stop(iterate.matrix(), self.bound)
        return self.accepted


@solver_entry
def solve_worst_case_lp_block_rounds(
        distances: np.ndarray, allowed: np.ndarray, epsilon: float, *, knn: int = 2,
        time_limit: float | None = None, stop: Callable | None = None,
        tight_tol: float | None = None, test_from: float | None = None,
        tight_separation_tol: float | None = None,
        extra_rows: tuple | None = None,
        tuning: BlockRoundsTuning = BlockRoundsTuning(),
        resources: BlockResources = BlockResources(),
        device: str | None = None) -> tuple[np.ndarray, BlockRounds, dict]:
    """Row generation with rounds solved by the column-block interior point method.

    Parameters
    ----------
    distances : ndarray (n, n)
    allowed : bool ndarray (n, n)
        Ordered pairs whose rows ``M_uw <= e^{eps D_uv} M_vw`` are imposed in every column.
    epsilon : float
    knn : int
        Near-neighbour pairs in the starting rows (:func:`~mdp.worst_case.solve.initial_triples`).
    time_limit : float or None
        Seconds for the whole loop; :class:`mdp.lp.LPTimeout` when passed.
    stop : callable ``(M, bound) -> (bool, float)`` or None
        Called after each tight round: whether to end with that round's ``M`` and the loss of
        the private matrix repaired from it. With ``test_from``, also on the round's iterates
        (:class:`IterateTest`).
    tight_tol : float or None
        Relative gap and infeasibilities at which a tight round's interior point method stops
        (``gap=`` mode: :func:`gap_round_tol`); None: ``tuning.tight_tol``.
    test_from : float or None
        Relative gap from which ``stop`` tests a tight round's iterates (the caller's target);
        None: the round's last iterate only.
    tight_separation_tol : float or None
        Violation above which a row violated by a tight round's matrix is added (loose rounds:
        ``tuning.separation_tol``); ``gap=`` builds, whose repair budget is far larger, pass
        that; None: ``tuning.tight_separation_tol``.
    extra_rows : ``(u, v, w)`` int arrays or None
        Rows added to the starting rows of :func:`~mdp.worst_case.solve.initial_triples` (those
        of disallowed pairs dropped): a sweep start, the rows binding a neighbouring epsilon's
        optimum (:class:`mdp.worst_case.sweep_start.Sweep`).
    tuning : BlockRoundsTuning
        Tolerances, the stall test, the pair closure (``closure_margin``), warm starts and
        ``max_rounds``.
    resources, device
        Memory limits of the column-block method and where its blocks are factored (None:
        :func:`mdp.worst_case.column_blocks.block_device`).

    Returns
    -------
    M : ndarray (n, n)
        The last round's matrix (negatives clipped; rows met to the method's accuracy, and only
        the generated ones: the caller repairs it).
    state : BlockRounds
    stats : dict
        The last round's :func:`~mdp.worst_case.column_blocks.solve_worst_case_triples` statistics with
        ``rounds``, ``round_trace``, ``lower_bound`` (the best), ``ipm_iterations``,
        ``closure_rows`` and ``seconds`` (all rounds), ``full_rows``, ``final_violation`` and
        ``rounds_ended`` (why the loop ended: ``"stop accepted"``, ``"no row violated"``,
        ``"stalled"`` or ``"max_rounds"``).
    """
    t0 = time.perf_counter()
    D = np.asarray(distances, dtype=float)
    n = D.shape[0]
    t = tuning
    tight_tol = t.tight_tol if tight_tol is None else tight_tol
    tight_separation_tol = (t.tight_separation_tol if tight_separation_tol is None
                            else tight_separation_tol)
    start = initial_triples(D, allowed, knn)
    if extra_rows is not None:
        start = merge_rows(n, allowed, start, extra_rows)
    state = BlockRounds(rows=start, tuning=t)
    iterations = 0
    warm = None
    while True:
        left = None if time_limit is None else time_limit - (time.perf_counter() - t0)
        if left is not None and left <= 0:
            raise LPTimeout(f"LP time limit reached after {state.rounds} rounds of the "
                            f"column-block row generation (best bound {state.bound:.10g})")
        t1 = time.perf_counter()
        tight = state.phase is BlockPhase.TIGHT and stop is not None
        tol = t.loose_tol if state.phase is BlockPhase.LOOSE else tight_tol
        test = (IterateTest(stop, state.bound, test_from, test_step=t.test_step)
                if tight and test_from is not None else None)
        keep = t.loose_keep if state.phase is BlockPhase.LOOSE else t.tight_keep
        M, stats = solve_worst_case_triples(D, *state.rows, epsilon, tol=tol, time_limit=left,
                                            round_no=state.rounds + 1, monitor=test,
                                            warm=warm, keep_gap=keep if t.warm_start else None,
                                            resources=resources, device=device)
        warm = stats.pop("warm_start", None)
        state.rounds += 1
        iterations += stats["ipm_iterations"]
        state.bound = max(state.bound, stats["lower_bound"], -np.inf if test is None else test.bound)
        sep_tol = tight_separation_tol if state.phase is BlockPhase.TIGHT else t.separation_tol
        su, sv, sw, worst = separate(M, D, epsilon, allowed, sep_tol)
        closed = 0
        if state.phase is BlockPhase.TIGHT and t.closure_margin is not None and len(su):
            ru, rv = state.recurring(su, sv, n)
            if state.flat_rounds >= t.closure_after:
                cu, cv, cw = pair_closure(M, D, epsilon, ru, rv, margin=t.closure_margin,
                                          tol=sep_tol)
                su, sv, sw, closed = np.r_[su, cu], np.r_[sv, cv], np.r_[sw, cw], len(cu)
        certified = np.nan
        if test is not None and test.accepted:
            state.stopped, certified = True, test.loss
        elif tight:
            state.stopped, certified = stop(M, state.bound)
        phase = state.phase
        added = 0 if state.stopped else state.add(su, sv, sw, n)
        # a loose round's point is far from the restricted optimum: a tight round follows it
        state.exhausted = added == 0 and phase is BlockPhase.TIGHT
        if np.isfinite(certified) and not state.stopped:
            state.certify(certified, added)
        state.trace.append(dict(rows=stats["privacy_rows"], phase=phase.value,
                                iterations=stats["ipm_iterations"],
                                seconds=time.perf_counter() - t1,
                                objective=stats["lp_objective"], bound=state.bound, added=added,
                                closure=closed,
                                certified=certified, iterate_tests=0 if test is None else test.tests,
                                warm=stats["warm"]))
        shown = certified if np.isfinite(certified) else stats["lp_objective"]
        report(LPProgress(round=state.rounds, rows=stats["rows"], objective=float(shown),
                          gap=(shown - state.bound) / shown if shown > 0 else np.nan,
                          certified=bool(np.isfinite(certified)), violated=added))
        if state.stopped or state.exhausted or state.stalled or state.rounds >= t.max_rounds:
            break
    ended = ("stop accepted" if state.stopped else "no row violated" if state.exhausted
             else "stalled" if state.stalled else "max_rounds")
    stats.update(rounds=state.rounds, round_trace=state.trace, lower_bound=state.bound,
                 rounds_ended=ended,
                 ipm_iterations=iterations, seconds=time.perf_counter() - t0,
                 closure_rows=sum(t["closure"] for t in state.trace),
                 full_rows=2 * n + int(allowed.sum()) * n, final_violation=worst,
                 formulation="primal worst-case-loss LP, lazy row generation (column blocks)")
    return M, state, stats
