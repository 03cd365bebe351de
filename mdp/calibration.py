r"""Calibration of a family's parameter epsilon to a target ``eps_tight`` (Imola et al. 2022 5.1).

Mechanisms are compared at equal *measured* privacy: for a target ``t``, :func:`calibrate`
returns the mechanism of the family built at the largest parameter ``epsilon`` whose
``eps_tight(delta)`` does not exceed ``t``. ``eps_tight`` is assumed non-decreasing in the
parameter (true of every registered family up to LP tolerance); the search brackets the answer by
doubling/halving and then runs a safeguarded secant (Illinois regula falsi) on
``log eps_tight - log t`` over ``log epsilon``, which needs far fewer builds than plain bisection
because ``eps_tight`` is close to proportional to epsilon.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import Enum

from .errors import BuildError
from .mechanism import Mechanism
from .registry import build
from .space import MetricSpace
from .validation import check_int, check_positive, check_probability

__all__ = ["calibrate", "CalibrationSearch"]


class Phase(Enum):
    """Where :class:`CalibrationSearch` is."""

    START = "start"                # nothing built yet: try epsilon = target
    EXPAND_UP = "expand up"        # every build so far is below the target: grow epsilon
    EXPAND_DOWN = "expand down"    # every build so far is above the target: shrink epsilon
    SECANT = "secant"              # bracketed: Illinois regula falsi in log-log
    DONE = "done"                  # accepted, bracket tight, or out of builds


def _log_gap(et: float, target: float) -> float:
    return math.log(max(et, 1e-300)) - math.log(target)


@dataclass
class CalibrationSearch:
    """The search of :func:`calibrate` as an explicit state: a bracket on epsilon.

    ``lo`` is the largest epsilon seen with ``eps_tight <= target``, ``hi`` the smallest with
    ``eps_tight > target``. :meth:`next_epsilon` proposes the next build from the
    :attr:`phase`; :meth:`record` updates the bracket with its measured ``eps_tight``.

    Expansion steps assume ``eps_tight ~ c * epsilon`` and jump to the predicted crossing (at
    least x2, at most x16); the secant runs on ``g = log eps_tight - log target`` over
    ``log epsilon`` with the Illinois modification (the value at an end that stays put twice
    is halved, so neither end sticks).
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
            et = self.lo_et
            step = min(16.0, max(2.0, self.target / max(et, 1e-12) * 1.05)) if et > 0 else 16.0
            return self.lo * step
        if phase is Phase.EXPAND_DOWN:
            return self.hi / min(16.0, max(2.0, self.hi_et / self.target * 1.05))
        if phase is Phase.SECANT:
            a, b = math.log(self.lo), math.log(self.hi)
            x = (b - self.ghi * (b - a) / (self.ghi - self.glo) if self.ghi != self.glo
                 else 0.5 * (a + b))
            return math.exp(min(max(x, a + 0.01 * (b - a)), b - 0.01 * (b - a)))
        raise RuntimeError("the calibration search is done")

    def record(self, eps: float, et: float) -> None:
        """Add the build at ``eps`` with measured ``eps_tight = et`` to the bracket."""
        secant = self.phase is Phase.SECANT
        self.trials.append((eps, et))
        g = _log_gap(et, self.target)
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
              rtol: float = 1e-3, max_builds: int = 40, rng=None, **params) -> Mechanism:
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
        Passed to :func:`mdp.build`.

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
    built: dict[float, Mechanism] = {}
    while search.phase is not Phase.DONE:
        eps = search.next_epsilon()
        mech = build(name, space, eps, rng=rng, **params)
        built[eps] = mech
        search.record(eps, mech.eps_tight(delta))
    if search.lo is None:
        raise BuildError(f"calibrate({name!r}, n={space.n}): no epsilon reached eps_tight <= "
                         f"{target:g} (delta={delta:g}) in {max_builds} builds; smallest "
                         f"eps_tight seen {min(et for _, et in search.trials):.6g}")
    # For a family whose eps_tight is monotone in epsilon this is the bracket's end ``lo``; for
    # one that is not (ConstOPTMech keeps the best of its lambdas), an earlier build is closer.
    _, eps_best = max((et, eps) for eps, et in search.trials if et <= target)
    best = built[eps_best]
    best.stats["calibration"] = {"target_eps_tight": target, "delta": delta,
                                 "builds": len(search.trials), "epsilon": best.epsilon,
                                 "eps_tight": best.eps_tight(delta), "trials": search.trials}
    return best
