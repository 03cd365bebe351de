r"""Calibration of a family's parameter epsilon to a target ``eps_tight`` (seed imola2022 5.1).

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

from .mechanism import Mechanism
from .registry import build
from .space import MetricSpace
from .validation import check_positive, check_probability

__all__ = ["calibrate"]


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
    RuntimeError
        When no epsilon reaches the target within ``max_builds`` builds.
    """
    target = check_positive(target_eps_tight, "target_eps_tight")
    delta = check_probability(delta, "delta")
    rtol = check_positive(rtol, "rtol")
    trials: list[tuple[float, float]] = []
    cache: dict[float, Mechanism] = {}

    def measure(eps: float) -> float:
        mech = build(name, space, eps, rng=rng, **params)
        et = mech.eps_tight(delta)
        trials.append((eps, et))
        cache[eps] = mech
        return et

    def g(et: float) -> float:
        return math.log(max(et, 1e-300)) - math.log(target)

    def accepted(et: float) -> bool:
        # inside the acceptance window: at most the target and within rtol of it
        return target / (1.0 + rtol) <= et <= target

    lo = hi = None           # lo: eps_tight <= target, hi: eps_tight > target
    eps = target
    et = measure(eps)
    if et <= target:
        lo, glo = eps, g(et)
        while hi is None and not accepted(et):
            if len(trials) >= max_builds:
                break
            # eps_tight ~ c * eps: jump to the predicted crossing (at least x2), capped at x16
            step = min(16.0, max(2.0, target / max(et, 1e-12) * 1.05)) if et > 0 else 16.0
            eps = lo * step
            et = measure(eps)
            if et <= target:
                lo, glo = eps, g(et)
            else:
                hi, ghi = eps, g(et)
    else:
        hi, ghi = eps, g(et)
        while lo is None:
            if len(trials) >= max_builds:
                break
            step = min(16.0, max(2.0, et / target * 1.05))
            eps = hi / step
            et = measure(eps)
            if et <= target:
                lo, glo = eps, g(et)
            else:
                hi, ghi = eps, g(et)
    if lo is None:
        raise RuntimeError(f"calibrate({name!r}): no epsilon reached eps_tight <= {target} in {max_builds} builds")
    if hi is not None:
        side = 0
        lo_gap = glo              # true log-gap of lo (glo itself is damped by Illinois steps)
        while hi / lo > 1 + rtol and len(trials) < max_builds and lo_gap < -math.log1p(rtol):
            a, b = math.log(lo), math.log(hi)
            x = b - ghi * (b - a) / (ghi - glo) if ghi != glo else 0.5 * (a + b)
            x = min(max(x, a + 0.01 * (b - a)), b - 0.01 * (b - a))
            eps = math.exp(x)
            et = measure(eps)
            if et <= target:
                lo, glo = eps, g(et)
                lo_gap = glo
                if side == -1:
                    ghi *= 0.5           # Illinois step: avoid one end sticking
                side = -1
            else:
                hi, ghi = eps, g(et)
                if side == 1:
                    glo *= 0.5
                side = 1
    # For a family whose eps_tight is monotone in epsilon this is the bracket's end ``lo``. Some are
    # not (ConstOPTMech keeps the best of its lambdas at each epsilon: fastText-350, r = 10,
    # eps 2.2993 -> eps_tight 1.987, eps 2.3096 -> 1.626), and then an earlier build is closer.
    _, eps_best = max((et, eps) for eps, et in trials if et <= target)
    best = cache[eps_best]
    best.stats["calibration"] = {"target_eps_tight": target, "delta": delta, "builds": len(trials),
                                 "epsilon": best.epsilon, "eps_tight": best.eps_tight(delta),
                                 "trials": trials}
    return best
