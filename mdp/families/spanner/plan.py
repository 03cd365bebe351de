"""SpannerMech's plan: every decision about the path a build takes, made in one place.

:func:`plan` turns the build's parameters, the space, its spanner, epsilon and a
:class:`~mdp.families.spanner.tuning.SpannerTuning` into a :class:`~mdp.lp.plan.Plan`
(vocabulary in :mod:`mdp.lp.plan`):

* ``method``: ``"lazy"`` when the spanner has more than ``lazy_edges_per_point`` edges per point
  and more than ``dense_full_max_n`` points or no column-block solve (:func:`default_method`),
  or when ``rows`` or a lazy-only solver asks for it; else ``"full"``.
* lazy: rows over the spanner's paths with warm dual simplex rounds where the two-hop slack at
  ``eps / stretch`` is at most ``path_slack``; else the edge rows, with interior or simplex
  rounds by :func:`default_lazy_solver`.
* full: the column-block interior point method (``"blocks"``) from ``blocks_from_n`` points
  where its inverses fit in memory, else HiPO without crossover; when the chosen interior
  solver fails, IPX without crossover, the column-block method (if not tried yet), Clarabel,
  then IPX with crossover take over (:func:`mdp.worst_case.solve.solve_worst_case_lp`; the last
  within a time budget while a smaller coefficient limit remains). An explicit HiGHS solver
  runs with crossover.
* every path: lower coefficient limits, then the exponential mechanism.
"""

from __future__ import annotations

from collections.abc import Mapping

from ...errors import ParameterError
from ...lp.plan import AUTO, BLOCKS, CLARABEL, Choice, Fallback, Option, Plan, Step
from ...runtime.resources import distance_matrix_bytes, lp_bytes
from ...spaces.metric_space import MetricSpace
from ...worst_case.column_blocks import block_bytes, block_device, fits_in_memory
from ...worst_case.solve import LAZY_SOLVERS, interior_chain_steps
from ..optimal.formulation import median_two_hop_slack
from ..optimal.plan import BUILD_COPIES
from .tuning import SpannerTuning

__all__ = ["plan", "default_method", "default_lazy_solver", "default_full_solver", "peak_bytes"]


def default_full_solver(n: int, tuning: SpannerTuning = SpannerTuning()) -> str:
    """The full LP's default solver: the column-block method from ``tuning.blocks_from_n``
    points while its block inverses fit in memory (:func:`mdp.worst_case.column_blocks.fits_in_memory`:
    on the CPU ``n^3 / 2`` doubles, at most 8 GiB and half the memory available; on a GPU that
    ``MDP_DEVICE`` allows, ``n^3`` doubles of its free memory), else ``tuning.full_solver``."""
    if tuning.blocks_from_n <= n and block_device(n, tuning.resources) is not None:
        return BLOCKS
    return tuning.full_solver


def peak_bytes(n: int, params: Mapping) -> int:
    """Estimated peak memory (bytes) of a SpannerMech build on ``n`` points with the family's
    ``params`` (``solver``, ``tuning``), from ``n`` alone (the spanner is not built).

    The LP's privacy rows: ``2 E n`` on a spanner of ``E`` edges, solved in full while ``E`` is
    at most ``tuning.lazy_edges_per_point`` edges per point and lazily (rows growing as
    OPTMech's) above, so at most ``2 tuning.lazy_edges_per_point n^2`` rows of 2 nonzeros
    either way (:func:`mdp.runtime.resources.lp_bytes`); plus the ``n`` packed ``n x n`` block inverses
    where the column-block method may solve it (asked for, or :func:`default_full_solver`),
    and :data:`~mdp.families.optimal.plan.BUILD_COPIES` ``n x n`` arrays.
    """
    tuning = params.get("tuning") or SpannerTuning()
    solver = params.get("solver") or AUTO
    rows = int(2 * tuning.lazy_edges_per_point * n * n)
    blocks = solver == BLOCKS or (solver == AUTO and default_full_solver(n, tuning) == BLOCKS)
    return (distance_matrix_bytes(n, BUILD_COPIES) + lp_bytes(rows, 2 * rows)
            + (block_bytes(n) if blocks else 0))


def default_method(n: int, edges: int, tuning: SpannerTuning = SpannerTuning()) -> str:
    """``"lazy"`` when a spanner of ``edges`` edges on ``n`` points has more than
    ``tuning.lazy_edges_per_point`` edges per point, else ``"full"``; up to
    ``tuning.dense_full_max_n`` points the column-block method (whose cost does not grow with the
    edges) solves dense spanners in full too.

    The full LP has ``2 E n`` privacy rows; the lazy solve's final row set grows like OPTMech's
    (its binding rows), whatever the spanner's density, so dense spanners (spread-out embeddings
    such as GloVe) are solved lazily and sparse ones (maps, clustered embeddings) in full.
    """
    if edges <= tuning.lazy_edges_per_point * n:
        return "full"
    if n <= tuning.dense_full_max_n and default_full_solver(n, tuning) == BLOCKS:
        return "full"
    return "lazy"


def default_lazy_solver(space: MetricSpace, level: float, *, slack: float | None = None,
                        tuning: SpannerTuning = SpannerTuning()) -> str:
    """HiGHS method of the lazy rounds over the edges: ``"ipm"`` (interior rounds) on spaces of
    ``n >= tuning.ipm_min_n`` points whose
    :func:`~mdp.families.optimal.formulation.median_two_hop_slack` at the spanner rows' level
    ``eps / stretch`` is at most ``tuning.chain_slack``, else ``"simplex"`` (warm dual simplex
    rounds).

    Unlike OPTMech's rows, the spanner's rows join only neighbours in the spanner, so the binding
    rows form chains along its paths on every space, GloVe included: GloVe n = 100 at eps 0.1
    (slack 0.18) took 64 simplex rounds, 114 s, against 34 s for interior rounds, and at eps 1.5
    (slack 2.8) 11 s against 37 s. ``slack``: that slack if already computed.
    """
    if slack is None:
        slack = median_two_hop_slack(space.distances, level)
    if space.n >= tuning.ipm_min_n and slack <= tuning.chain_slack:
        return "ipm"
    return "simplex"


def plan(space: MetricSpace, epsilon: float, *, stretch: float, edges: int,
         method: str = AUTO, solver: str | None = AUTO, rows: str = AUTO,
         tuning: SpannerTuning = SpannerTuning()) -> Plan:
    """The path of a SpannerMech build (module docstring); parameters as
    :func:`mdp.families.spanner.build.build_spanner` (``solver=None`` is ``"auto"``), ``edges``
    the spanner's edge count.

    The plan's options hold ``rows`` (lazy: ``"edges"`` or ``"paths"``), ``crossover`` (full: a
    bool), ``repair`` and ``level``.

    Raises
    ------
    ParameterError
        ``rows`` with ``method="full"``, or a solver the chosen method does not take.
    """
    n = space.n
    solver = AUTO if solver is None else solver
    level = epsilon / stretch
    if method == "full" and rows != AUTO:
        raise ParameterError(f"rows={rows!r} applies to method='lazy' (the full LP holds every "
                             f"edge row), got method='full'")
    if method == AUTO:
        # a solver that only the full LP takes (e.g. "hipo") asks for the full LP; rows, the lazy one
        if rows != AUTO:
            method, method_reason = "lazy", f"rows={rows!r} asked for"
        elif solver in (AUTO, *LAZY_SOLVERS):
            method = default_method(n, edges, tuning)
            per_point = edges / n
            dense = per_point > tuning.lazy_edges_per_point
            method_reason = (f"{per_point:.3g} spanner edges per point "
                             f"{'>' if dense else '<='} lazy_edges_per_point = "
                             f"{tuning.lazy_edges_per_point:g}")
            if dense and method == "full":
                method_reason += (f", and n = {n} <= dense_full_max_n = "
                                  f"{tuning.dense_full_max_n}: the column-block method's cost "
                                  "does not grow with the edges")
        else:
            method, method_reason = "full", f"solver={solver!r} solves the full LP"
    else:
        method_reason = "asked for"
    options, fallbacks = [], []
    crossover = None                 # the full LP's: whether an interior solve ends with it
    device = Choice("cpu", "HiGHS" if solver != CLARABEL else "Clarabel")
    if method == "lazy":
        if solver not in (AUTO, *LAZY_SOLVERS):
            raise ParameterError(f"solver must be 'simplex' or 'ipm' with method='lazy', got "
                                 f"{solver!r}")
        slack = None  # an O(n^3) pass, made once and only when a default needs it
        if rows == AUTO:
            if solver in (AUTO, "simplex"):
                slack = median_two_hop_slack(space.distances, level)
                rows = "paths" if slack <= tuning.path_slack else "edges"
                rows_reason = (f"two-hop slack {slack:.3g} at eps/stretch "
                               f"{'<=' if rows == 'paths' else '>'} path_slack = "
                               f"{tuning.path_slack:g}")
            else:
                rows, rows_reason = "edges", f"solver={solver!r}"
        else:
            rows_reason = "asked for"
        if solver != AUTO:
            lazy_solver, solver_reason = solver, "asked for"
        elif rows == "paths":
            lazy_solver, solver_reason = "simplex", "warm dual simplex rounds over the path rows"
        else:
            lazy_solver = default_lazy_solver(space, level, slack=slack, tuning=tuning)
            solver_reason = ("interior rounds: rows chain along the spanner's paths"
                             if lazy_solver == "ipm" else
                             f"warm dual simplex rounds (n < ipm_min_n = {tuning.ipm_min_n} or "
                             f"two-hop slack above chain_slack = {tuning.chain_slack:g})")
        options.append(Option("rows", rows, rows_reason))
        solver_choice = Choice(lazy_solver, solver_reason)
    else:
        if solver == AUTO:
            full_solver = default_full_solver(n, tuning)
            solver_reason = (f"n = {n} >= blocks_from_n = {tuning.blocks_from_n} and the block "
                             f"inverses fit in memory" if full_solver == BLOCKS else
                             f"HiPO without crossover (n = {n} < blocks_from_n = "
                             f"{tuning.blocks_from_n}, or the block inverses do not fit)")
            crossover = False
        else:
            full_solver, solver_reason = solver, "asked for"
            crossover = True
        interior = solver == AUTO or full_solver in (CLARABEL, BLOCKS)
        options.append(Option("crossover", crossover,
                              "an explicit HiGHS solver runs with crossover" if crossover else
                              "the interior optimum is repaired to its private envelope"))
        if interior:
            options.append(Option("repair", "envelope", "an interior point's tolerance-level "
                                                     "violations are repaired"))
        if full_solver == BLOCKS:
            dev = block_device(n, tuning.resources)
            if dev is None:
                # asked for by name: the method refuses for want of memory, the fallbacks follow
                device = Choice("cpu", "neither the host nor a GPU has the memory for the block "
                                       "inverses: the attempt fails")
            else:
                device = Choice(dev, f"where the block inverses fit: MDP_DEVICE, gpu_from_n = "
                                     f"{tuning.resources.gpu_from_n}")
        if not crossover:
            # the interior chain of the first step, as it runs (the column-block method once,
            # in the first step, where its inverses fit and it was not the step's own solver)
            chain = interior_chain_steps(
                "hipo", crossover=False,
                blocks=full_solver != BLOCKS and fits_in_memory(n, tuning.resources))
            if full_solver == BLOCKS:
                fallbacks.append(Fallback(f"{chain[0].label}, with the time left",
                                          "the column-block method fails (then every later "
                                          "step runs this chain)"))
            fallbacks += [Fallback(step.label, step.when) for step in chain[1:]]
        solver_choice = Choice(full_solver, solver_reason)
    limits = tuning.max_coefficients
    first = solver_choice.value
    # the column-block method scales its rows, so fewer rows do not help it: after it failed
    # (and HiPO's chain after it), the later steps run the chain only
    later = tuning.full_solver if first == BLOCKS and crossover is False else first
    steps = [Step(f"{method} ({first}), rows up to {limits[0]:g}", "first", first, limits[0])]
    steps += [Step(f"{method} ({later}), rows up to {c:g}",
                   "every solver of the step before failed", later, c) for c in limits[1:]]
    fallbacks.append(Fallback("the exponential mechanism",
                              "no step found an optimum, or the LP's matrix is worse"))
    options.append(Option("level", float(level), f"eps / stretch = {epsilon:g} / {stretch:g}"))
    return Plan("SpannerMech", Choice(method, method_reason), solver_choice, device,
                tuple(fallbacks), tuple(options), tuple(steps))
