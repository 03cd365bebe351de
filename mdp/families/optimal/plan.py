"""OPTMech's plan: every decision about the path a build takes, made in one place.

:func:`plan` turns the build's parameters, the space, epsilon and an
:class:`~mdp.families.optimal.tuning.OptimalTuning` into a :class:`~mdp.lp.plan.Plan`
(vocabulary in :mod:`mdp.lp.plan`):

* ``solver="blocks"`` (row generation whose rounds are solved by the column-block interior point
  method, :mod:`mdp.worst_case.block_rounds`) from ``blocks_min_n`` points where the block inverses fit
  in memory, on the device :func:`mdp.worst_case.column_blocks.block_device` picks; its fallbacks are
  HiGHS's lazy finish from the rounds' rows, then HiGHS's lazy solve at the lower coefficient
  limits, then the exponential mechanism.
* else ``method="lazy"`` on HiGHS, with interior rounds (``"ipm"``) on spaces of at least
  ``ipm_min_n`` points where points lie nearly between others (:func:`default_solver`), warm
  dual simplex rounds (``"simplex"``) otherwise.
* ``method="full"``: every row at once, dualised, on HiGHS's ``"ipm"``.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ...errors import ParameterError
from ...lp.plan import AUTO, BLOCKS, Choice, Fallback, GapTarget, Option, Plan, Step
from ...runtime.resources import distance_matrix_bytes, lp_bytes
from ...spaces.metric_space import MetricSpace
from ...worst_case.column_blocks import block_byte_limit, block_bytes, block_device
from ...worst_case.solve import LAZY_SOLVERS
from .formulation import (
    HIGHS_MAX_N,
    is_map_space,
    median_detour,
    median_two_hop_slack,
    two_hop_distances,
)
from .tuning import OptimalTuning

__all__ = ["plan", "default_knn", "default_solver", "default_method", "METHODS", "peak_bytes", "BUILD_COPIES", "LAZY_ROWS_PER_ENTRY"]

#: Values of the ``method`` parameter: ``"blocks"`` is another spelling of
#: ``method="lazy", solver="blocks"`` (with ``solver`` then naming the HiGHS finish).
METHODS = (AUTO, "lazy", "full", BLOCKS)


def default_knn(space: MetricSpace) -> int:
    """Near-neighbour pairs in the lazy solve's starting rows: 2 on map spaces, else 0."""
    return 2 if is_map_space(space) else 0


def default_solver(space: MetricSpace, method: str, epsilon: float, *,
                   two_hop: np.ndarray | None = None,
                   tuning: OptimalTuning = OptimalTuning()) -> str:
    """HiGHS method of ``method`` (``"lazy"`` or ``"full"``) when HiGHS solves the LP.

    ``"full"``: ``"ipm"`` (the dualised LP). ``"lazy"``: ``"ipm"`` (interior rounds) on spaces of
    ``n >= tuning.ipm_min_n`` points whose :func:`median_detour` is at most
    ``tuning.chain_detour`` and whose :func:`median_two_hop_slack` at ``epsilon`` is at most
    ``tuning.chain_slack`` (maps, grids, graph metrics, clustered or low-dimensional embeddings
    such as our fastText vectors, unless eps is large), ``"simplex"`` (warm dual simplex rounds)
    otherwise (spread-out embeddings such as GloVe at any eps). ``two_hop``:
    :func:`two_hop_distances` of the space if already computed.
    """
    if method == "full":
        return "ipm"
    if space.n < tuning.ipm_min_n:
        return "simplex"
    T = two_hop_distances(space.distances) if two_hop is None else two_hop
    if (median_detour(space.distances, two_hop=T) <= tuning.chain_detour
            and median_two_hop_slack(space.distances, epsilon, two_hop=T) <= tuning.chain_slack):
        return "ipm"
    return "simplex"


#: ``n x n`` float64 arrays alive through an LP family's build besides its LP (distances,
#: two-hop distances, the matrix, its logarithm, the certification's working copies).
BUILD_COPIES = 6

#: Rows per matrix entry that HiGHS's lazy rounds hold at most (a few rows per entry bind the
#: optimum; an estimate on the safe side for refusing builds that cannot fit).
LAZY_ROWS_PER_ENTRY = 8


def peak_bytes(n: int, params: Mapping) -> int:
    """Estimated peak memory (bytes) of an OPTMech build on ``n`` points with the family's
    ``params`` (``method``, ``solver``, ``tuning``), from ``n`` alone: nothing is computed.

    - ``method="full"``: the dualised LP, ``n^2 (n - 1)`` privacy rows of 2 nonzeros each
      (:func:`mdp.runtime.resources.lp_bytes`);
    - column blocks (asked for, or ``"auto"`` from ``tuning.blocks_min_n`` points where they fit
      :func:`~mdp.worst_case.column_blocks.block_byte_limit`): the ``n`` packed ``n x n`` block inverses
      (:func:`~mdp.worst_case.column_blocks.block_bytes`), and the lazy finish's rows;
    - HiGHS's lazy rounds: at most :data:`LAZY_ROWS_PER_ENTRY` rows per entry;

    plus :data:`BUILD_COPIES` ``n x n`` arrays in every case.
    """
    tuning = params.get("tuning") or OptimalTuning()
    method = params.get("method") or AUTO
    solver = params.get("solver") or AUTO
    base = distance_matrix_bytes(n, BUILD_COPIES)
    if method == "full":
        rows = n * n * (n - 1)
        return base + lp_bytes(rows + n, 2 * rows + n * n)
    lazy_rows = LAZY_ROWS_PER_ENTRY * n * n
    lazy = lp_bytes(lazy_rows, 2 * lazy_rows)
    blocks = (method == BLOCKS or solver == BLOCKS
              or (method == AUTO and solver == AUTO and n >= tuning.blocks_min_n
                  and block_bytes(n) <= block_byte_limit(tuning.resources)))
    return base + lazy + (block_bytes(n) if blocks else 0)


def default_method(space: MetricSpace, tuning: OptimalTuning = OptimalTuning()) -> str:
    """``"blocks"`` from ``tuning.blocks_min_n`` points where the block inverses fit in memory
    (:func:`mdp.worst_case.column_blocks.fits_in_memory`: the host's packed inverses, or a GPU's that
    ``MDP_DEVICE`` allows), else ``"lazy"`` (HiGHS's rounds)."""
    return ("blocks" if space.n >= tuning.blocks_min_n
            and block_device(space.n, tuning.resources) is not None else "lazy")


def plan(space: MetricSpace, epsilon: float, *, method: str | None = AUTO,
         solver: str | None = AUTO, knn: int | None = None, gap: float | None = None,
         tuning: OptimalTuning = OptimalTuning(),
         two_hop: np.ndarray | None = None) -> Plan:
    """The path of an OPTMech build (module docstring); parameters as
    :func:`mdp.families.optimal.build.build_optimal` (``None`` is ``"auto"``).

    The plan's options hold ``knn`` (the starting rows' near-neighbour pairs of row
    generation), ``target`` (a :class:`~mdp.lp.plan.GapTarget`: exact, certified within
    ``tuning.retry_rtol``, or ``gap`` but never below it), ``max_coefficient`` and, for
    ``solver="blocks"``, ``finish`` (HiGHS's method of the lazy finish).

    Raises
    ------
    ParameterError
        A combination the LP cannot take (a HiGHS method above ``HIGHS_MAX_N`` points, ``gap``
        with ``method="full"``, a solver the chosen method does not take).
    """
    n = space.n
    method = AUTO if method is None else method
    solver = AUTO if solver is None else solver
    finish = None
    if method == BLOCKS:
        # method="blocks": solver then names the HiGHS finish
        if solver not in (AUTO, *LAZY_SOLVERS):
            raise ParameterError(f"solver must be 'simplex' or 'ipm' (the HiGHS finish) with "
                                 f"method='blocks', got {solver!r}")
        finish = None if solver == AUTO else solver
        method, solver = "lazy", BLOCKS
        method_reason = "asked for (method='blocks': row generation over column blocks)"
        solver_reason = "asked for"
    elif method == AUTO:
        method = "lazy"
        method_reason = "row generation: a few rows per entry bind the optimum"
        solver_reason = "asked for"
        if solver == AUTO:
            if default_method(space, tuning) == "blocks":
                solver = BLOCKS
                solver_reason = (f"n = {n} >= blocks_min_n = {tuning.blocks_min_n} and the "
                                 f"block inverses fit in memory")
    else:
        method_reason = "asked for"
        solver_reason = "asked for"
    if method == "full" and solver == BLOCKS:
        raise ParameterError("solver='blocks' solves OPTMech's LP by row generation "
                             "(method='lazy' or 'auto'), got method='full'")
    if method == "lazy" and solver not in (AUTO, BLOCKS, *LAZY_SOLVERS):
        raise ParameterError(f"solver must be 'blocks', 'simplex' or 'ipm' with method='lazy', "
                             f"got {solver!r}")
    if solver != BLOCKS and n > HIGHS_MAX_N:
        raise ParameterError(f"method={method!r} is limited to n <= {HIGHS_MAX_N} points on "
                             f"HiGHS (its HiGHS LPs grow as n^3 rows), got n = {n}; use "
                             f"solver='blocks'")
    if gap is not None and method == "full":
        raise ParameterError(f"gap needs method='lazy' or 'blocks' (the full solve is exact), got "
                             f"method={method!r}")
    if solver == AUTO:
        solver = default_solver(space, method, epsilon, two_hop=two_hop, tuning=tuning)
        if method == "full":
            solver_reason = "HiGHS's interior point method on the dualised LP"
        elif solver == "ipm":
            solver_reason = (f"interior rounds: n = {n} >= ipm_min_n = {tuning.ipm_min_n} and "
                             f"points lie nearly between others (median detour <= "
                             f"{tuning.chain_detour:g}, two-hop slack <= {tuning.chain_slack:g})")
        elif n < tuning.ipm_min_n:
            solver_reason = (f"warm dual simplex rounds: n = {n} < ipm_min_n = "
                             f"{tuning.ipm_min_n}")
            if n >= tuning.blocks_min_n:
                solver_reason += "; the block inverses do not fit in memory"
        else:
            solver_reason = ("warm dual simplex rounds: points are spread out (median detour or "
                             "two-hop slack above the tuning's limits)")
            if n >= tuning.blocks_min_n:
                solver_reason += "; the block inverses do not fit in memory"
    options = []
    if knn is not None:
        options.append(Option("knn", knn, "asked for"))
    elif method == "lazy":
        knn = default_knn(space)
        options.append(Option("knn", knn, "near-neighbour starting rows on map spaces"
                              if knn else "no near-neighbour starting rows off map spaces"))
    else:
        options.append(Option("knn", 0, "the full LP has no starting rows"))
    limits = tuning.max_coefficients
    fallbacks = []
    if solver == BLOCKS:
        device = block_device(n, tuning.resources)
        if device is None:
            # asked for by name: the method refuses for want of memory, the fallbacks follow
            device_choice = Choice("cpu", "neither the host nor a GPU has the memory for the "
                                          "block inverses: the attempt fails")
        else:
            device_choice = Choice(device, "where the block inverses fit: MDP_DEVICE, "
                                           f"gpu_from_n = {tuning.resources.gpu_from_n}")
        finish = finish or tuning.finish_solver
        options.append(Option("finish", finish, "asked for" if finish != tuning.finish_solver
                              else "HiGHS's interior rounds from the rounds' nearly complete rows"))
        fallbacks.append(Fallback(f"HiGHS lazy finish ({finish}) from the rounds' rows",
                                  "the rounds stop short of the gap target"))
        later = f"lazy on HiGHS ({finish})"
        what = ("row generation whose rounds are solved over column blocks"
                if method_reason == "asked for" else method_reason)
        method_choice = Choice("lazy", what)
    else:
        device_choice = Choice("cpu", "HiGHS")
        later = f"{method} on HiGHS ({solver})"
        method_choice = Choice(method, method_reason)
    if solver == BLOCKS:
        # the scaled rows of the column blocks have no coefficient above 1: one step
        first = Step(f"lazy over column blocks ({device_choice.value}), HiGHS finish ({finish})",
                     "first", BLOCKS, limits[0])
    else:
        first = Step(f"{later}, rows up to {limits[0]:g}", "first", solver, limits[0])
    steps = [first] + [Step(f"{later}, rows up to {c:g}",
                            "the step before failed or its gap is above the target",
                            finish or solver, c) for c in limits[1:]]
    fallbacks.append(Fallback("the exponential mechanism",
                              "no step found an optimum, or rows were left out and the gap "
                              "stays above the target"))
    target = GapTarget(float(tuning.retry_rtol if gap is None else max(gap, tuning.retry_rtol)),
                       exact=gap is None)
    options.append(Option("target", target,
                          "exact: a certified relative gap of at most retry_rtol" if gap is None
                          else "gap asked for" + (", raised to retry_rtol" if gap < target.rtol
                                                  else "")))
    options.append(Option("max_coefficient", float(limits[0]),
                           "rows with larger coefficients are left out: a relaxation"))
    return Plan("OPTMech", method_choice, Choice(solver, solver_reason), device_choice,
                tuple(fallbacks), tuple(options), tuple(steps))
