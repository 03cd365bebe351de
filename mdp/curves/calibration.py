r"""Calibration of a family's parameter epsilon to a target ``eps_tight`` (Imola et al. 2022 5.1).

Mechanisms are compared at equal *measured* privacy: for a target ``t``, :func:`calibrate`
returns the mechanism of the family built at the largest parameter ``epsilon`` whose
``eps_tight(delta)`` does not exceed ``t``. ``eps_tight`` is assumed non-decreasing in the
parameter (true of every registered family up to LP tolerance); the search brackets the answer by
jumping to the crossing predicted from the last build (``eps_tight`` proportional to epsilon) and
then runs a safeguarded secant (Illinois regula falsi) on ``log eps_tight`` over ``log epsilon``,
aimed at the middle of the acceptance window. Because ``eps_tight`` is close to proportional to
epsilon, this needs far fewer builds than bisection, and no build far above the answer (LP
families get slower as epsilon grows).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum

from ..errors import BuildError
from ..mechanism import Mechanism
from ..registry import build, get
from ..spaces.metric_space import MetricSpace
from ..validation import check_int, check_positive, check_probability
from ..worst_case.sweep_start import Sweep

__all__ = ["calibrate", "CalibrationSearch"]


class Phase(Enum):
    """Where :class:`CalibrationSearch` is."""

    START = "start"                # nothing built yet: try epsilon = target
    EXPAND_UP = "expand up"        # every build so far is below the target: grow epsilon
    EXPAND_DOWN = "expand down"    # every build so far is above the target: shrink epsilon
    SECANT = "secant"              # bracketed: Illinois regula falsi in log-log
    DONE = "done"                  # accepted, bracket tight, or out of builds


#: An expansion step that follows a measured log-log slope below 1 is at most this many times
#: the previous step (in log scale): geometric growth, so flat stretches take few builds.
GROWTH = 4.0
#: Largest expansion step (for a build whose eps_tight is ~0, where the model says nothing).
MAX_STEP = 16.0


def _log_gap(et: float, aim: float) -> float:
    return math.log(max(et, 1e-300)) - math.log(aim)


@dataclass
class CalibrationSearch:
    """The search of :func:`calibrate` as an explicit state: a bracket on epsilon.

    ``lo`` is the largest epsilon seen with ``eps_tight <= target``, ``hi`` the smallest with
    ``eps_tight > target``. :meth:`next_epsilon` proposes the next build from the
    :attr:`phase`; :meth:`record` updates the bracket with its measured ``eps_tight``.

    Expansion steps assume ``eps_tight ~ c * epsilon`` and jump to the predicted crossing of the
    aim below (at most x :data:`MAX_STEP`; stretched when the builds so far show a
    log-log slope below 1, see :meth:`_expansion_step`). A family whose eps_tight is
    proportional to epsilon is thus accepted at its second build. The secant runs
    on ``g = log eps_tight - log aim`` over ``log epsilon``, where ``aim = target /
    sqrt(1 + rtol)`` is the middle of the acceptance window in log scale (a step that lands on
    its aim is accepted whichever side of it the build falls), with the Illinois modification
    (the value at an end that stays put twice is halved, so neither end sticks).
    """

    target: float
    rtol: float
    max_builds: int
    trials: list[tuple[float, float]] = field(default_factory=list)
    lo: float | None = None
    lo_et: float = 0.0
    glo: float = 0.0          # g at lo, damped by Illinois steps
    hi: float | None = None
    hi_et: float = 0.0
    ghi: float = 0.0          # g at hi, damped by Illinois steps
    side: int = 0             # which end the last secant step moved (-1: lo, 1: hi)

    @property
    def aim(self) -> float:
        """The ``eps_tight`` the secant steps aim at: the middle of the window in log scale."""
        return self.target / math.sqrt(1.0 + self.rtol)

    def accepted(self, et: float) -> bool:
        """Inside the acceptance window: at most the target and within ``rtol`` of it."""
        return self.target / (1.0 + self.rtol) <= et <= self.target

    @property
    def phase(self) -> Phase:
        if not self.trials:
            return Phase.START
        if len(self.trials) >= self.max_builds:
            return Phase.DONE
        if self.lo is None:
            return Phase.EXPAND_DOWN
        if self.accepted(self.lo_et):
            return Phase.DONE
        if self.hi is None:
            return Phase.EXPAND_UP
        return Phase.SECANT if self.hi / self.lo > 1 + self.rtol else Phase.DONE

    def next_epsilon(self) -> float:
        """The epsilon to build next (only while :attr:`phase` is not ``DONE``)."""
        phase = self.phase
        if phase is Phase.START:
            return self.target
        if phase is Phase.EXPAND_UP:
            return self.lo * self._expansion_step(self.lo_et)
        if phase is Phase.EXPAND_DOWN:
            return self.hi / self._expansion_step(self.hi_et)
        if phase is Phase.SECANT:
            a, b = math.log(self.lo), math.log(self.hi)
            x = (b - self.ghi * (b - a) / (self.ghi - self.glo) if self.ghi != self.glo
                 else 0.5 * (a + b))
            return math.exp(min(max(x, a + 0.01 * (b - a)), b - 0.01 * (b - a)))
        raise RuntimeError("the calibration search is done")

    def _expansion_step(self, et: float) -> float:
        """Factor (> 1) from the last build, of eps_tight ``et``, towards the aim.

        Proportional model: ``aim / et`` (or its inverse). When the last two builds (both on the
        same side in an expansion phase) show eps_tight growing more slowly than epsilon
        (log-log slope ``0 < a < 1``), the step follows that slope, ``(aim / et)^(1 / a)``, but
        in log scale at most :data:`GROWTH` times the last step: a flat stretch is crossed in
        a few builds, while a noisy slope (ConstOPTMech's) cannot send the search far past its
        answer.
        """
        if et <= 0.0:
            return MAX_STEP
        log_step = abs(math.log(self.aim / et))
        if len(self.trials) >= 2:
            (e0, t0), (e1, t1) = self.trials[-2:]
            if e0 != e1 and t0 > 0.0 and t1 > 0.0:
                last = abs(math.log(e1 / e0))
                slope = math.log(t1 / t0) / math.log(e1 / e0)
                if 0.0 < slope < 1.0:
                    log_step = max(log_step, min(log_step / slope, GROWTH * last))
        return math.exp(min(log_step, math.log(MAX_STEP)))

    def record(self, eps: float, et: float) -> None:
        """Add the build at ``eps`` with measured ``eps_tight = et`` to the bracket."""
        secant = self.phase is Phase.SECANT
        self.trials.append((eps, et))
        g = _log_gap(et, self.aim)
        if et <= self.target:
            self.lo, self.lo_et, self.glo = eps, et, g
            if secant:
                if self.side == -1:
                    self.ghi *= 0.5
                self.side = -1
        else:
            self.hi, self.hi_et, self.ghi = eps, et, g
            if secant:
                if self.side == 1:
                    self.glo *= 0.5
                self.side = 1


def calibrate(name: str, space: MetricSpace, target_eps_tight: float, *, delta: float = 0.0,
              rtol: float = 1e-3, max_builds: int = 40, rng=None,
              on_build: Callable[[int, float, float], None] | None = None,
              **params) -> Mechanism:
    """The mechanism ``name`` at the largest epsilon with ``eps_tight(delta) <= target``.

    Parameters
    ----------
    name : str
        Registered family.
    space : MetricSpace
    target_eps_tight : float > 0
    delta : float in [0, 1), default 0
    rtol : float, default 1e-3
        Accept a build as soon as ``target / (1 + rtol) <= eps_tight <= target`` (so a family whose
        eps_tight equals its epsilon, like OPTMech, needs one build); otherwise stop when the
        bracket ``[lo, hi]`` on epsilon satisfies ``hi / lo <= 1 + rtol``.
    max_builds : int, default 40
    rng, **params
        Passed to :func:`mdp.build`. A family that takes ``sweep`` (the LP families) gets one
        :class:`mdp.worst_case.sweep_start.Sweep` for all its builds (``params["sweep"]`` if
        given, e.g. to chain calibrations to several targets): each LP starts from the rows
        its predecessor ended with, and is certified as any other. ``mode`` defaults to
        ``"matrix"``: the search measures
        ``eps_tight``, which needs the certified matrix (``mode="auto"`` would pick vocabulary
        mode above :class:`~mdp.vocabulary.mode.ModeRule`'s size, which has none).
    on_build : callable, optional
        Called after each build as ``on_build(builds, epsilon, eps_tight)`` (progress).

    Returns
    -------
    Mechanism
        Of all builds with ``eps_tight <= target``, the one closest to the target: for a family
        whose eps_tight grows with epsilon, the largest epsilon; for one where it can drop as
        epsilon grows (ConstOPTMech, which keeps the best of its lambdas), not the bracket's end
        if an earlier build was closer. Its ``stats["calibration"]`` records the target, the
        number of builds and every ``(epsilon, eps_tight)`` tried.

    Raises
    ------
    mdp.errors.BuildError
        When no epsilon reaches the target within ``max_builds`` builds (names the family).
    """
    target = check_positive(target_eps_tight, "target_eps_tight")
    delta = check_probability(delta, "delta", inclusive_high=False)
    rtol = check_positive(rtol, "rtol")
    max_builds = check_int(max_builds, "max_builds", low=1)
    search = CalibrationSearch(target, rtol, max_builds)
    params.setdefault("mode", "matrix")
    own_sweep = "sweep" in get(name).params and params.get("sweep") is None
    if own_sweep:
        params["sweep"] = Sweep()
    # Only the build that would be returned so far is kept (the largest eps_tight within the
    # target; ties: the larger epsilon): one n x n matrix in memory, not one per build.
    best_key, best = None, None
    while search.phase is not Phase.DONE:
        eps = search.next_epsilon()
        mech = build(name, space, eps, rng=rng, **params)
        level = mech.eps_tight(delta)
        search.record(eps, level)
        if level <= target and (best_key is None or (level, eps) > best_key):
            best_key, best = (level, eps), mech
        del mech
        if on_build is not None:
            on_build(len(search.trials), eps, level)
    if own_sweep:
        params["sweep"].clear()      # the returned mechanism keeps it in its params
    if search.lo is None or best is None:
        raise BuildError(f"calibrate({name!r}, n={space.n}): no epsilon reached eps_tight <= "
                         f"{target:g} (delta={delta:g}) in {max_builds} builds; smallest "
                         f"eps_tight seen {min(et for _, et in search.trials):.6g}")
    # For a family whose eps_tight is monotone in epsilon this is the bracket's end ``lo``; for
    # one that is not (ConstOPTMech keeps the best of its lambdas), an earlier build is closer.
    best.stats["calibration"] = {"target_eps_tight": target, "delta": delta,
                                 "builds": len(search.trials), "epsilon": best.epsilon,
                                 "eps_tight": best_key[0], "trials": search.trials}
    return best
