"""Rough run-time estimates of builds and loss curves, said before long work starts.

A build of an ``n``-point mechanism costs about ``c n^3`` seconds: the privacy certification and
``eps_tight`` visit all ``n^3`` triples (:mod:`mdp.privacy.accounting`), and the LP families solve LPs
whose size grows as ``n^3`` constraints (Imola et al. 2022, section 4). The exponential
mechanisms on Euclidean points cost ``c n^2`` (:mod:`mdp.privacy.exponential_form` certifies them in
``O(n^2 d)``; on other metrics they take the ``n^3`` pass, which the estimate does not see). A calibrated point of a
curve costs a few builds (:func:`mdp.calibrate` bisects on epsilon). The constants are data
(:class:`CostModel`), measured with ``benchmarks/curves_scaling.py`` on two cores; the estimate
is meant to tell seconds from minutes from hours, not to be exact.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["CostModel", "DEFAULT_COSTS", "build_seconds", "curves_seconds", "describe_seconds",
           "LONG_WORK_SECONDS"]

#: Work estimated above this many seconds is announced before it starts.
LONG_WORK_SECONDS = 30.0


@dataclass(frozen=True)
class CostModel:
    """Seconds of one build at ``n = 1000`` points per family (scaled as ``n^3``, or as
    ``n^exponent``) and the number of builds a calibrated point of a curve takes.

    Attributes
    ----------
    build_s_at_1000 : dict
        Family name -> seconds of one build with its certification and one ``eps_tight`` at
        ``n = 1000``. Families not listed use ``default_build_s_at_1000``.
    default_build_s_at_1000 : float
    exponent : dict
        Family name -> power of ``n`` its builds scale with (others: 3).
    builds_per_point : dict
        Family name -> builds per calibrated point (OPTMech hits its target in one build: its
        eps_tight is its epsilon). Others use ``default_builds_per_point``.
    default_builds_per_point : float
    """

    build_s_at_1000: dict = field(default_factory=lambda: {
        # exponential, glove:N (benchmarks/curves_scaling.py, 2 shared cores, load 4): build +
        # certify + eps_tight 0.8 s at n = 2000 and 4.4 s at n = 5000 (0.2 s scaled as n^2 to
        # 1000); a curve point (3-4 builds) 16-28 s at n = 5000
        "exponential": 0.3, "weighted_exponential": 0.3, "madlib": 3.0,
        # LP families: OPTMech 200 Beijing cells in ~150 s (README), i.e. ~1.9e4 s at 1000
        "optimal": 1.9e4, "constopt": 4.0e3, "spanner": 4.0e3})
    default_build_s_at_1000: float = 2.0
    exponent: dict = field(default_factory=lambda: {"exponential": 2.0,
                                                    "weighted_exponential": 2.0})
    builds_per_point: dict = field(default_factory=lambda: {"optimal": 1.0})
    default_builds_per_point: float = 5.0


DEFAULT_COSTS = CostModel()


def build_seconds(name: str, n: int, costs: CostModel = DEFAULT_COSTS) -> float:
    """Estimated seconds of one build of family ``name`` on ``n`` points."""
    per = costs.build_s_at_1000.get(name, costs.default_build_s_at_1000)
    return per * (n / 1000.0) ** costs.exponent.get(name, 3.0)


def curves_seconds(names: list[str], n: int, n_targets: int,
                   costs: CostModel = DEFAULT_COSTS) -> dict[str, float]:
    """Estimated seconds of the calibrated points of each family of a loss-curve run."""
    return {name: n_targets * costs.builds_per_point.get(name, costs.default_builds_per_point)
            * build_seconds(name, n, costs) for name in names}


def describe_seconds(seconds: float) -> str:
    """``"about 40 s"``, ``"about 12 min"``, ``"about 3.5 h"``."""
    if seconds < 90:
        return f"about {seconds:.0f} s"
    if seconds < 5400:
        return f"about {seconds / 60:.0f} min"
    return f"about {seconds / 3600:.1f} h"
