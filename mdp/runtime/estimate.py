r"""Run-time estimates of builds and loss curves, said as a range before long work starts.

An estimate is a range of seconds from measured builds, not a formula: for each family the cost
model holds the fastest and slowest build measured at a few sizes on two quiet cores (the LP
suite's cells, :mod:`benchmarks.lp_suite`, and larger builds on the [LP results
page](../results/lp.md)), over spaces of different kinds and epsilons from 0.3 to 10 per median
distance. Between measured sizes the range is interpolated in log-log; beyond them it is carried
on with the slope of the last two sizes (LP builds grow faster than ``n^3`` on some spaces, so the
slope is measured, not assumed). Vocabulary-mode builds (no matrix) cost seconds per word.

The range is then scaled by the CPU time the process can get now: with ``b`` CPUs busy in other
processes out of ``c``, a build that wants one core gets about ``c / (b + 1)`` of one, so the
range is multiplied by ``max(1, (b + 1) / c)`` (the factor is said with the range). A user who
saw "about 64 s" and waited 331 s (222 s of CPU beside another job) now reads "1-4 min (x1.5 for
the load now)".

A calibrated point of a curve costs several builds (:func:`mdp.calibrate` bisects on epsilon,
about five; OPTMech, whose ``eps_tight`` is its epsilon, one).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

__all__ = ["CostModel", "DEFAULT_COSTS", "Estimate", "build_estimate", "curves_estimate",
           "load_factor", "describe_seconds", "LONG_WORK_SECONDS", "HEARTBEAT_SECONDS"]

#: Work estimated above this many seconds (upper end of the range) is announced before it starts.
LONG_WORK_SECONDS = 30.0
#: Seconds between the heartbeat lines of long work when no progress bar is shown.
HEARTBEAT_SECONDS = 60.0


def _measured() -> dict:
    # (n, fastest s, slowest s): quiet 2-core machine, default settings, the LP suite's spaces
    # (city box, clusters, grid, two scales, road graph, 50-d points) at eps x median 0.3-10
    return {
        "optimal": ((50, 1.4, 3.9), (100, 7.5, 50.0), (150, 35.0, 222.0), (200, 130.0, 330.0)),
        # the expected objective on HiGHS's interior rounds (Gowalla New York cells)
        "optimal[expected]": ((40, 0.8, 3.0), (60, 8.0, 60.0), (100, 75.0, 900.0),
                              (200, 600.0, 3600.0)),
        "spanner": ((50, 0.28, 0.62), (100, 1.5, 6.0), (200, 12.0, 70.0), (500, 84.0, 521.0)),
        "constopt": ((50, 0.37, 0.8), (100, 0.86, 2.5), (500, 8.8, 20.0), (1000, 12.3, 60.0)),
        # matrix builds with the exact certification (the exponential form on Euclidean
        # points is faster: the low end; the n^3 pass on other metrics: the high end)
        "exponential": ((100, 0.02, 0.1), (1000, 0.3, 3.0), (2000, 0.6, 21.0), (5000, 3.8, 330.0)),
        "weighted_exponential": ((100, 0.02, 0.12), (1000, 0.35, 3.5), (2000, 0.7, 24.0),
                                 (5000, 4.5, 380.0)),
        "madlib": ((100, 0.3, 1.0), (1000, 6.9, 19.0), (2000, 50.0, 80.0)),
        # the word mechanisms (GloVe, 50-d): Madlib's estimator with a second distance pass
        # (Mahalanobis) or two neighbours (Vickrey); TEM and SanText as the exponential
        # mechanism, SanText's scopes by the n^3 pass; CusText's sets by one sort per set
        "mahalanobis": ((100, 0.4, 1.5), (1000, 8.0, 27.0), (2000, 60.0, 110.0)),
        "vickrey": ((100, 0.4, 1.8), (1000, 9.0, 38.0), (2000, 70.0, 150.0)),
        "tem": ((100, 0.02, 0.1), (1000, 0.3, 3.0), (2000, 0.6, 21.0), (5000, 3.8, 330.0)),
        "santext": ((100, 0.02, 0.2), (1000, 0.8, 4.0), (2000, 5.0, 30.0)),
        "custext": ((100, 0.01, 0.1), (1000, 0.25, 1.0), (2000, 1.0, 4.0)),
        "planar_laplace": ((50, 0.2, 1.0), (200, 2.0, 10.0), (1000, 40.0, 200.0)),
    }


@dataclass(frozen=True)
class CostModel:
    """Measured build times (module docstring); tuning data, passed in.

    Attributes
    ----------
    measured : dict
        Family -> ``((n, fastest_s, slowest_s), ...)`` in increasing ``n``: one build with its
        certification on two quiet cores.
    default_measured : tuple
        The same for a family not listed (a plugin's).
    vocabulary_s_per_point : dict
        Family -> ``(fastest, slowest)`` seconds per point of a vocabulary-mode build (no
        matrix): Madlib over the 400,000 GloVe words in 8.6 s; the exponential mechanism over
        50,000 words in 6.9 s.
    builds_per_point : dict
        Family -> builds per calibrated point of a curve; others use
        ``default_builds_per_point``.
    default_builds_per_point : float
    """

    measured: dict = field(default_factory=_measured)
    default_measured: tuple = ((100, 0.1, 2.0), (1000, 5.0, 120.0))
    vocabulary_s_per_point: dict = field(default_factory=lambda: {
        "madlib": (1.5e-5, 5e-5), "exponential": (1e-4, 3e-4),
        "weighted_exponential": (1e-4, 3e-3), "mahalanobis": (1.5e-5, 6e-5),
        "vickrey": (1.5e-5, 6e-5), "tem": (1e-4, 3e-4), "santext": (1e-4, 3e-4)})
    builds_per_point: dict = field(default_factory=lambda: {"optimal": 1.0,
                                                           "optimal[expected]": 1.0})
    default_builds_per_point: float = 5.0

    def __post_init__(self) -> None:
        for name, rows in [*self.measured.items(), ("default_measured", self.default_measured)]:
            ns = [r[0] for r in rows]
            if not rows or ns != sorted(set(ns)) or any(not 0 < lo <= hi for _, lo, hi in rows):
                raise ValueError(f"measured times of {name!r} must be (n, fastest, slowest) rows "
                                 "in increasing n with 0 < fastest <= slowest")


DEFAULT_COSTS = CostModel()


@dataclass(frozen=True)
class Estimate:
    """A range of seconds and what it rests on.

    Attributes
    ----------
    low, high : float
        Seconds, load included.
    load : float
        The factor the load of the machine added (1: none).
    """

    low: float
    high: float
    load: float = 1.0

    def describe(self) -> str:
        """``"2-6 min"``, ``"about 40 s"``, with the load factor when it is above 1."""
        text = _range(self.low, self.high)
        return text + (f" (x{self.load:.2g} for the load on this machine now)"
                       if self.load > 1.05 else "")

    def __add__(self, other: Estimate) -> Estimate:
        return Estimate(self.low + other.low, self.high + other.high, max(self.load, other.load))


def _unit(seconds: float) -> tuple[float, str]:
    if seconds < 90:
        return 1.0, "s"
    if seconds < 5400:
        return 60.0, "min"
    return 3600.0, "h"


def _range(low: float, high: float) -> str:
    scale, unit = _unit(high)
    lo, hi = low / scale, high / scale
    fmt = (lambda x: f"{x:.0f}") if unit != "h" else (lambda x: f"{x:.1f}")
    if fmt(lo) == fmt(hi):
        return f"about {fmt(hi)} {unit}"
    return f"{fmt(lo) if lo >= 1 or unit == 'h' else '<1'}-{fmt(hi)} {unit}"


def describe_seconds(seconds: float) -> str:
    """``"about 40 s"``, ``"about 12 min"``, ``"about 3.5 h"``."""
    return _range(seconds, seconds)


def _interpolate(rows: tuple, n: float, column: int) -> float:
    """Log-log interpolation of ``rows[:, column]`` at ``n``, carried on with the nearest
    segment's slope outside the measured sizes."""
    if len(rows) == 1:
        n0, value = rows[0][0], rows[0][column]
        return value * (n / n0) ** 3
    k = 0
    while k < len(rows) - 2 and n > rows[k + 1][0]:
        k += 1
    (n0, *a), (n1, *b) = rows[k], rows[k + 1]
    y0, y1 = a[column - 1], b[column - 1]
    slope = math.log(y1 / y0) / math.log(n1 / n0)
    return y0 * (n / n0) ** slope


def load_factor() -> float:
    """``max(1, (b + 1) / c)``: ``b`` CPUs busy in other processes out of ``c`` usable ones."""
    from .threads import available_cpus, busy_cpus

    c = max(1, available_cpus())
    return max(1.0, (busy_cpus() + 1.0) / c)


def build_estimate(name: str, n: int, *, mode: str = "matrix", costs: CostModel = DEFAULT_COSTS,
                   load: float | None = None) -> Estimate:
    """The range of seconds of one build of family ``name`` on ``n`` points (module docstring).

    ``mode`` is the build's (``"vocabulary"``: no matrix, seconds per point); ``load`` the
    factor of :func:`load_factor` (measured now when None).
    """
    factor = load_factor() if load is None else float(load)
    if mode == "vocabulary":
        lo, hi = costs.vocabulary_s_per_point.get(name, (1e-4, 1e-3))
        if name == "weighted_exponential":              # its weights are an n x n pass
            lo, hi = lo * n / 1000, hi * n / 1000
        return Estimate(lo * n * factor, hi * n * factor, factor)
    rows = costs.measured.get(name, costs.default_measured)
    return Estimate(_interpolate(rows, n, 1) * factor, _interpolate(rows, n, 2) * factor, factor)


def curves_estimate(names: list[str], n: int, n_targets: int, *,
                    costs: CostModel = DEFAULT_COSTS, load: float | None = None
                    ) -> dict[str, Estimate]:
    """The range of seconds of each family's calibrated points in a loss-curve run."""
    factor = load_factor() if load is None else float(load)
    out = {}
    for name in names:
        one = build_estimate(name, n, costs=costs, load=factor)
        k = n_targets * costs.builds_per_point.get(name, costs.default_builds_per_point)
        out[name] = Estimate(one.low * k, one.high * k, factor)
    return out
