"""ConstOPTMech's plan: every decision about the path a build takes, made in one place.

:func:`plan` turns the build's parameters, the space, epsilon and a
:class:`~mdp.families.constopt.tuning.ConstOPTTuning` into a :class:`~mdp.lp.plan.Plan`
(vocabulary in :mod:`mdp.lp.plan`):

* ``solver="blocks"``: the row-block interior point method (:mod:`mdp.families.constopt.ipm`)
  to a certified relative gap (``gap``, or ``exact_gap``) with ``gap=``, when asked for, or with
  ``solver="auto"`` from ``row_block_min_n`` points where ``epsilon / 2`` times the median
  distance is at most ``row_block_max_scale`` (below ``row_block_wide_scale`` only while its
  first round violates at most ``row_block_max_violated`` free-free rows per point). Its
  fallback is HiGHS (``highs_solver``) when it fails, finds the LP too dense or cannot certify
  the target.
* else HiGHS: ``highs_solver`` (HiPO, then IPX when it fails) for ``"auto"``, or the method
  asked for.
* ``method``: ``"lazy"`` (free-free rows generated on demand) or ``"full"`` (``lazy=False``).
* HiGHS's fallbacks: lower coefficient limits, then the exponential mechanism.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from ...lp.plan import AUTO, BLOCKS, Choice, Fallback, GapTarget, Option, Plan, Step
from ...runtime.resources import distance_matrix_bytes, lp_bytes
from ...spaces.metric_space import MetricSpace
from ..optimal.plan import BUILD_COPIES
from .tuning import ConstOPTTuning

__all__ = ["plan", "peak_bytes", "SCHUR_COPIES"]

#: Dense ``n x n`` arrays of the row-block interior point method: its Schur complement, the
#: Cholesky factor and the right-hand sides assembled next to them.
SCHUR_COPIES = 3


#: Free entries per row when ``r`` is not given, on spaces of more than 10 points (Imola et al.
#: 2022 run ConstOPTMech with r = 10).
DEFAULT_R = 10


def default_r(n: int) -> int:
    """``r`` when not given: :data:`DEFAULT_R`, or ``n - 1`` on smaller spaces (``r < n``)."""
    return max(1, min(DEFAULT_R, int(n) - 1))


def peak_bytes(n: int, params: Mapping) -> int:
    """Estimated peak memory (bytes) of a ConstOPTMech build on ``n`` points with the family's
    ``params`` (``r``), from ``n`` alone: the row-block method's dense ``n x n`` Schur
    complement (:data:`SCHUR_COPIES` arrays), HiGHS's LP of the ``r``-NN free entries (at most
    ``2 r^2`` free-free rows of 2 nonzeros and ``n`` weight rows per point,
    :func:`mdp.runtime.resources.lp_bytes`), and :data:`~mdp.families.optimal.plan.BUILD_COPIES`
    ``n x n`` arrays.
    """
    r = params.get("r")
    r = default_r(n) if r is None else max(int(r), 1)
    rows = n * (2 * r * r + n)
    return distance_matrix_bytes(n, BUILD_COPIES + SCHUR_COPIES) + lp_bytes(rows, 2 * rows)


def plan(space: MetricSpace, epsilon: float, *, solver: str = AUTO, lazy: bool = True,
         gap: float | None = None, tuning: ConstOPTTuning = ConstOPTTuning()) -> Plan:
    """The path of a ConstOPTMech build (module docstring); parameters as
    :func:`mdp.families.constopt.build.build_constopt`.

    The plan's options hold ``target`` (the row-block method's certified gap), ``max_violated``
    (its density limit per point, or None) and ``highs`` (HiGHS's method, used alone or as the
    fallback).
    """
    n = space.n
    e = epsilon / 2.0
    scale = e * space.median_distance
    t = tuning
    if gap is not None:
        row_block, reason = True, f"gap={gap:g} asked for (a certified gap)"
    elif solver == BLOCKS:
        row_block, reason = True, "asked for"
    elif solver == AUTO and n >= t.row_block_min_n and scale <= t.row_block_max_scale:
        row_block = True
        reason = (f"n = {n} >= row_block_min_n = {t.row_block_min_n} and eps/2 x median "
                  f"distance = {scale:.3g} <= row_block_max_scale = {t.row_block_max_scale:g}")
    else:
        row_block = False
        if solver != AUTO:
            reason = "asked for"
        elif n < t.row_block_min_n:
            reason = f"n = {n} < row_block_min_n = {t.row_block_min_n}"
        else:
            reason = (f"eps/2 x median distance = {scale:.3g} > row_block_max_scale = "
                      f"{t.row_block_max_scale:g}")
    highs = t.highs_solver if solver in (AUTO, BLOCKS) else solver
    options = [Option("highs", highs, "HiGHS's method" + (" (asked for)" if highs == solver
                                                             else ""))]
    fallbacks = []
    if row_block:
        target = gap if gap is not None else t.exact_gap
        if gap is not None or solver == BLOCKS or scale >= t.row_block_wide_scale:
            max_violated = None
            why = ("asked for" if gap is not None or solver == BLOCKS else
                   f"eps/2 x median distance >= row_block_wide_scale = "
                   f"{t.row_block_wide_scale:g}")
        else:
            max_violated = t.row_block_max_violated
            why = (f"round 0 may violate at most row_block_max_violated free-free rows per "
                   f"point below row_block_wide_scale = {t.row_block_wide_scale:g}")
        options.append(Option("target", GapTarget(float(target), exact=gap is None),
                              "certified relative gap"))
        options.append(Option("max_violated", None if max_violated is None else float(max_violated),
                              why))
        steps = [Step(f"row blocks to a gap of {target:g}", "first", BLOCKS, math.inf)]
        solver_choice = Choice(BLOCKS, reason)
    else:
        steps = []
        solver_choice = Choice(highs, reason)
    # HiPO is the faster first solve on a quiet machine, IPX the more tried one: a failed HiPO
    # solve is repeated by IPX at the same limit (HiPO's warm rounds within a budget) before the
    # limit is lowered
    methods = (highs, "ipm") if highs == "hipo" else (highs,)
    for c in t.max_coefficients:
        for how in methods:
            if not steps:
                when = "first"
            elif how != methods[0]:
                when = "HiPO fails"
            elif steps[-1].solver == BLOCKS:
                when = ("the row-block method fails, finds the LP too dense (then for every "
                        "lambda) or cannot certify the target")
            else:
                when = "HiGHS fails"
            steps.append(Step(f"HiGHS ({how}, {'lazy' if lazy else 'full'}), rows up to {c:g}",
                              when, how, c, budgeted=how != methods[-1]))
    fallbacks.append(Fallback("the exponential mechanism", "no lambda is solved, or rows were "
                                                           "left out and the LP's matrix is worse"))
    method = Choice("lazy" if lazy else "full",
                    "free-free rows generated on demand" if lazy else "lazy=False asked for")
    return Plan("ConstOPTMech", method, solver_choice, Choice("cpu", "HiGHS, or the row-block "
                                                          "method's dense step by MDP_DEVICE"),
                tuple(fallbacks), tuple(options), tuple(steps))
