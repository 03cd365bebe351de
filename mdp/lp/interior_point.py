r"""The Mehrotra predictor-corrector iteration, independent of the LP it solves.

Every structured interior point method of the package (the column blocks of the worst-case-loss
LP, :mod:`mdp.worst_case.column_blocks`; the row blocks of ConstOPTMech's LP,
:mod:`mdp.families.constopt.ipm`) runs the same iteration (Wright 1997, ch. 10) on a primal-dual
point with complementary pairs ``(v_i, z_i)`` (slacks or variables against their multipliers):

1. measure the point: residuals, relative gap and infeasibilities (the problem's);
2. stop when all three are within ``tol``, or return the best iterate when the method stalls
   or its factorisation fails near the optimum;
3. factor the Newton system at the point (the problem's linear algebra);
4. predictor: the affine direction for targets ``-v z``; its step lengths to the boundary give
   ``mu_aff`` and the centring ``sigma = (mu_aff / mu)^3``;
5. corrector: the direction for targets ``sigma mu - v z - dv_aff dz_aff``;
6. optionally Gondzio's centrality correctors (Comput. Optim. Appl. 6, 1996): each aims at steps
   longer by ``corrector_aim``, its targets' products pulled into
   ``[beta_min, beta_max] x sigma mu``, and is kept when it gains ``corrector_gain`` of that;
7. step ``eta`` of the way to the boundary, separately in the primal and the dual.

What differs between the methods is plugged in through :class:`NewtonSystem`: the point's
layout, its residuals and scores, the factorisation and the solve of the Newton system, and the
errors they raise. The loop's state is :class:`IterationState`; its settings
:class:`IPMSettings`. A warm start is a ``start`` point the caller builds (from an earlier LP's
kept iterate, ``keep_gap``); the method keeps the first iterate within ``keep_gap`` for the next
solve.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

import numpy as np

from ..errors import SolverError, SolverTimeout
from .ipm_kernels import centring_targets, corrector_targets, moved_product_sum, ratio_test

__all__ = ["IPMSettings", "Scores", "NewtonSystem", "IterationState", "Status", "Outcome",
           "NoConvergence", "run_interior_point", "max_step"]

P = TypeVar("P")
R = TypeVar("R")


@dataclass(frozen=True)
class IPMSettings:
    """Stopping rules and step rules of :func:`run_interior_point`.

    Attributes
    ----------
    tol : float
        Relative gap and infeasibilities at which the iterations stop.
    max_iter : int
    stall_accept : float
        The best iterate is returned (stalled) when its score is within this and the score has
        not fallen below ``stall_factor`` times the last mark for ``stall_iterations``
        iterations, when ``max_iter`` is reached, when an iterate is not finite, or when the
        factorisation fails; above it those end in an error.
    stall_iterations : int
    stall_factor : float
        A score below this times the last mark sets a new mark (1: any improvement).
    give_up_iterations : int or None
        With no iterate within ``stall_accept``, the iterations end in an error (carrying the
        best iterate) once no mark has been set for this many iterations, rather than at
        ``max_iter``; None: only ``max_iter`` ends them.
    correctors : int
        Gondzio's centrality correctors per iteration (0: Mehrotra's corrector only).
    corrector_aim, corrector_gain, beta_min, beta_max : float
        Their rules (module docstring).
    step_factor : float
        Fraction ``eta`` of the largest step to the boundary taken ...
    late_step_factor : float
        ... and from a relative gap of ``late_gap`` down.
    late_gap : float
    """

    tol: float
    max_iter: int = 200
    stall_accept: float = 1e-6
    stall_iterations: int = 15
    stall_factor: float = 1.0
    give_up_iterations: int | None = None
    correctors: int = 0
    corrector_aim: float = 0.1
    corrector_gain: float = 0.1
    beta_min: float = 0.1
    beta_max: float = 10.0
    step_factor: float = 0.99
    late_step_factor: float = 0.995
    late_gap: float = 1e-6


@dataclass(frozen=True)
class Scores:
    """One iterate's measures: relative gap, relative primal and dual infeasibilities, and the
    primal and dual objectives."""

    gap: float
    primal: float
    dual: float
    objective: float
    dual_objective: float

    @property
    def score(self) -> float:
        """The largest of the three measures (``nan`` where one is)."""
        return max(self.gap, self.primal, self.dual) if np.isfinite(
            self.gap + self.primal + self.dual) else float("nan")


class NewtonSystem(Protocol[P, R]):
    """An LP's interior point problem: its points (of type ``P``), residuals (``R``) and Newton
    system, as :func:`run_interior_point` uses them.

    A point and a direction have the same type. :meth:`pairs` lists the complementary pairs in
    a fixed order, and the targets passed to :meth:`newton` follow it. ``name`` names the method
    in its errors.
    """

    name: str

    def default_start(self) -> P:
        """The cold starting point."""

    def measure(self, point: P) -> tuple[R, Scores]:
        """The point's residuals and scores."""

    def mu(self, point: P) -> float:
        """The mean complementarity product over the pairs: ``sum v z`` over every entry of
        every pair, divided by the pairs' total size."""

    def pairs(self, point: P, direction: P) -> Sequence[tuple]:
        """``(v, dv, z, dz)`` of every complementary pair."""

    def moved(self, point: P, direction: P, primal: float, dual: float) -> P:
        """The point ``primal`` along the direction's primal and ``dual`` along its dual
        components."""

    def factor(self, point: P, score: float) -> None:
        """Factor the Newton system at ``point`` (its score may set the solve's accuracy);
        :class:`~mdp.errors.SolverError` when the factorisation fails."""

    def newton(self, point: P, residuals: R, targets: tuple, predictor: bool) -> P:
        """The Newton direction for the complementarity targets (one per pair)."""


class Status(enum.Enum):
    """Where :class:`IterationState` stands."""

    RUNNING = "running"
    CONVERGED = "converged"          # within tol: the current iterate
    STALLED = "stalled"              # the best iterate, within stall_accept
    STOPPED = "stopped"              # the caller's inspection stopped at the current iterate


@dataclass
class IterationState(Generic[P]):
    """The iteration's state: the current point and its number, the best iterate, the mark of
    the stall rule, the kept iterate (warm start) and the log of every iterate's scores."""

    point: P
    iteration: int = 0
    best: tuple | None = None                    # (score, iteration, point, scores)
    mark: tuple = (np.inf, 0)                    # (score, iteration) of the last improvement
    kept: P | None = None
    log: list[Scores] = field(default_factory=list)
    status: Status = Status.RUNNING

    def remember(self, scores: Scores, settings: IPMSettings) -> None:
        """Record a finite iterate: best, and the stall rule's mark."""
        score = scores.score
        if self.best is None or score < self.best[0]:
            self.best = (score, self.iteration, self.point, scores)
        if score < settings.stall_factor * self.mark[0]:
            self.mark = (score, self.iteration)

    def best_within(self, accept: float) -> bool:
        """Whether the best iterate's score is within ``accept``."""
        return self.best is not None and self.best[0] <= accept

    def stalled(self, settings: IPMSettings) -> bool:
        """Near the optimum without improvement, or out of iterations, with a good best."""
        return self.best_within(settings.stall_accept) and (
            self.iteration - self.mark[1] >= settings.stall_iterations
            or self.iteration >= settings.max_iter)

    def given_up(self, settings: IPMSettings) -> bool:
        """On a plateau above ``stall_accept``: no mark for ``give_up_iterations``."""
        return (settings.give_up_iterations is not None
                and not self.best_within(settings.stall_accept)
                and self.iteration - self.mark[1] >= settings.give_up_iterations)


@dataclass
class Outcome(Generic[P]):
    """What :func:`run_interior_point` returns.

    Attributes
    ----------
    point : the returned iterate (the current one when converged or stopped, else the best)
    scores : Scores
        Its scores.
    iterations : int
        Steps taken: the number of the last iterate measured.
    status : Status
    kept : the first iterate within ``keep_gap`` (None: none was, or no ``keep_gap``)
    log : list of Scores
        Every iterate's scores, in order.
    """

    point: P
    scores: Scores
    iterations: int
    status: Status
    kept: P | None
    log: list[Scores]

    @property
    def stalled(self) -> bool:
        return self.status is Status.STALLED


class NoConvergence(SolverError):
    """The iterations ended with no iterate within ``stall_accept``.

    Attributes
    ----------
    best : Outcome or None
        The best finite iterate (status :attr:`Status.STALLED`), for a caller that can still use
        it (and certify it itself); None when no iterate was finite.
    """

    def __init__(self, message: str, best: Outcome | None = None):
        super().__init__(message)
        self.best = best


def max_step(v: np.ndarray, dv: np.ndarray) -> float:
    """The ratio test: the largest ``a`` in ``[0, 1]`` with ``v + a dv >= 0`` for a positive
    ``v``."""
    return ratio_test(v, dv)


def _steps(pairs: Sequence[tuple]) -> tuple[float, float]:
    """Largest primal and dual steps (at most 1) along the pairs' directions."""
    return (min(max_step(v, dv) for v, dv, _, _ in pairs),
            min(max_step(z, dz) for _, _, z, dz in pairs))


def _direction(system: NewtonSystem, point, residuals, gap: float,
               settings: IPMSettings) -> tuple:
    """Predictor, corrector and centrality correctors: ``(direction, primal step, dual step)``."""
    mu = system.mu(point)
    # the pairs of the point with itself: only their values (v, z) are read here
    aff = system.newton(point, residuals,
                        tuple(-v * z for v, _, z, _ in system.pairs(point, point)), True)
    pairs = system.pairs(point, aff)
    ap, ad = _steps(pairs)
    # mu is the pairs' mean product: the mean after the step needs no moved point
    size = sum(np.size(v) for v, _, _, _ in pairs)
    mu_aff = sum(moved_product_sum(v, dv, z, dz, ap, ad) for v, dv, z, dz in pairs) / size
    sigma = min(1.0, (mu_aff / mu) ** 3)
    target = sigma * mu
    rs = tuple(centring_targets(v, dv, z, dz, target) for v, dv, z, dz in pairs)
    d = system.newton(point, residuals, rs, False)
    ap, ad = _steps(system.pairs(point, d))
    aim = settings.corrector_aim
    for _ in range(settings.correctors):
        tp, td = min(1.0, ap + aim), min(1.0, ad + aim)
        rs_c = tuple(corrector_targets(r, v, dv, z, dz, tp, td, target, settings.beta_min,
                                       settings.beta_max)
                     for r, (v, dv, z, dz) in zip(rs, system.pairs(point, d), strict=True))
        d_c = system.newton(point, residuals, rs_c, False)
        ap_c, ad_c = _steps(system.pairs(point, d_c))
        if min(ap_c, ad_c) < min(ap, ad) + settings.corrector_gain * aim:
            break
        rs, d, ap, ad = rs_c, d_c, ap_c, ad_c
    eta = settings.step_factor if gap > settings.late_gap else max(settings.step_factor,
                                                                   settings.late_step_factor)
    return d, min(1.0, eta * ap), min(1.0, eta * ad)


def run_interior_point(system: NewtonSystem, settings: IPMSettings, *, start=None,
                       deadline: float | None = None, keep_gap: float | None = None,
                       log: Callable[[int, object, Scores], None] | None = None,
                       inspect: Callable[[int, object, Scores], bool] | None = None) -> Outcome:
    """Mehrotra's predictor-corrector method on ``system`` (module docstring).

    Parameters
    ----------
    system : NewtonSystem
    settings : IPMSettings
    start : point, optional
        The first iterate (default ``system.default_start()``); a warm start.
    deadline : float, optional
        ``time.perf_counter()`` past which ``system.timeout`` is raised.
    keep_gap : float, optional
        Keep the first iterate whose score is within it (:attr:`Outcome.kept`).
    log : callable, optional
        Called with ``(iteration, point, scores)`` for every iterate, first thing.
    inspect : callable, optional
        Called with ``(iteration, point, scores)`` for every finite iterate; True stops the
        method there (:attr:`Status.STOPPED`).

    Raises
    ------
    NoConvergence
        No iterate within ``stall_accept`` when the iterations end, a non-finite iterate, or a
        failed factorisation (the system's own error, chained) before one; it carries the best
        finite iterate.
    SolverTimeout
        Past the deadline.
    """
    state = IterationState(point=system.default_start() if start is None else start)
    while True:
        it, p = state.iteration, state.point
        residuals, scores = system.measure(p)
        state.log.append(scores)
        if log is not None:
            log(it, p, scores)
        score = scores.score
        if np.isfinite(score):
            state.remember(scores, settings)
            if inspect is not None and inspect(it, p, scores):
                return _finish(state, Status.STOPPED)
            if score <= settings.tol:
                return _finish(state, Status.CONVERGED)
            if state.kept is None and keep_gap is not None and score <= keep_gap:
                state.kept = p
            if state.stalled(settings):
                return _finish(state, Status.STALLED)
        elif state.best_within(settings.stall_accept):
            return _finish(state, Status.STALLED)
        gave_up = state.given_up(settings)
        if not np.isfinite(score) or it >= settings.max_iter or gave_up:
            best = _best(state)
            why = f"; no progress for {it - state.mark[1]} iterations" if gave_up else ""
            raise NoConvergence(f"{system.name} stopped after {it} iterations without converging "
                                f"(relative gap {scores.gap:.1e}, infeasibilities "
                                f"{scores.primal:.1e} / {scores.dual:.1e}; best "
                                f"{_score(best):.1e}{why})", best)
        if deadline is not None and time.perf_counter() > deadline:
            raise SolverTimeout(f"time limit reached after {it} iterations of {system.name} "
                                f"(relative gap {scores.gap:.1e})")
        try:
            system.factor(p, score)
        except SolverError as exc:
            if not state.best_within(settings.stall_accept):
                best = _best(state)
                raise NoConvergence(f"{exc} after {it} iterations of {system.name} (best "
                                    f"{_score(best):.1e})", best) from exc
            # the scaling of the last iterations can ruin the factorisation before the
            # tolerance is reached: the best iterate is as good as a stall's
            return _finish(state, Status.STALLED)
        d, ap, ad = _direction(system, p, residuals, scores.gap, settings)
        state.point = system.moved(p, d, ap, ad)
        state.iteration += 1


def _best(state: IterationState) -> Outcome | None:
    """The best finite iterate as a stalled :class:`Outcome`, for :class:`NoConvergence` (None if
    none was finite)."""
    return None if state.best is None else _finish(state, Status.STALLED)


def _score(outcome: Outcome | None) -> float:
    return np.nan if outcome is None else outcome.scores.score


def _finish(state: IterationState, status: Status) -> Outcome:
    state.status = status
    if status is Status.STALLED:
        _, _, point, scores = state.best
    else:
        point, scores = state.point, state.log[-1]
    return Outcome(point=point, scores=scores, iterations=state.iteration, status=status,
                   kept=state.kept, log=state.log)
