"""SpannerMech's tuning: the thresholds that steer its plan and the tolerances of its solves.

One frozen dataclass, :class:`SpannerTuning`, passed to the build as ``tuning=`` (default: its
defaults); every figure behind a default is in ``docs/design/lp.md``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...validation import check_tuning
from ...worst_case.column_blocks import BlockResources
from ...worst_case.solve import MAX_COEFFICIENTS, LazyRoundsTuning

__all__ = ["SpannerTuning"]


@dataclass(frozen=True)
class SpannerTuning:
    """Thresholds of SpannerMech's plan (:func:`mdp.families.spanner.plan.plan`) and tolerances
    of its solves.

    Attributes
    ----------
    full_solver : str, default "hipo"
        HiGHS method of the full (dualised) LP below ``blocks_from_n`` points: HiPO without
        crossover.
    blocks_from_n : int, default 50
        From this many points the full LP's solver is the column-block interior point method
        (:mod:`mdp.worst_case.column_blocks`), to its certified relative gap of about 1e-6 (the
        registry's exactness, as OPTMech's). On the six seeded synthetic spaces
        (:mod:`mdp.spaces.synthetic`) at eps x median 1 and 10 it took 0.1-0.9 s at n = 50 and
        1.0-5.3 s at n = 100 against HiPO's 0.6-3.2 s and 6.6-46.5 s, with losses within 3e-6
        relative; HiPO and IPX failed on two scales of distance at eps x median 1, where it
        solved in 2 s. Geolife cells at eps 0.5 per km, n = 300: 55 s against HiPO's 295 s.
    dense_full_max_n : int, default 200
        A spanner with more than ``lazy_edges_per_point`` edges per point is still solved in
        full by the column-block method up to this many points (its cost does not grow with the
        edges): 50-d embedding-like points, n = 100: 3.3 and 5.3 s against 46.5 and 11.8 s for
        the lazy rounds. Above it the lazy rounds stay.
    lazy_edges_per_point : float, default 6
        ``method="auto"`` solves the spanner LP lazily when the spanner has more edges than this
        per point (the full LP then has over ``12 n^2`` privacy rows, most never binding):
        GloVe's spanners have 14-41 edges per point (n = 50-300; lazy 22x faster at n = 100),
        the Geolife cells' and our fastText vectors' 1.3-4 (full 2-3x faster); Gaussian points
        tie at 5.7 (5-d) and are solved 3x faster lazily at 9.5 (8-d).
    path_slack : float, default 0.25
        ``rows="auto"`` generates the lazy rows over every pair at its spanner-path distance,
        with warm dual simplex rounds, when the two-hop slack at ``eps / stretch`` is at most
        this: there the binding rows chain along the spanner's paths, and one path row replaces
        a chain of edge rows (n = 100, slack 0.08-0.18: 5-13 s against 35-38 s for interior
        rounds on the edges and 79-750 s for simplex rounds). From 0.33 on the edge rows are as
        fast or faster.
    ipm_min_n : int, default 45
    chain_slack : float, default 0.6
        The lazy rounds over the edges are interior (``"ipm"``) on spaces of at least
        ``ipm_min_n`` points whose two-hop slack at ``eps / stretch`` is at most
        ``chain_slack``, else warm dual simplex rounds (as OPTMech's).
    sweep_rtol, sweep_far : float, defaults 0.1 and 1
        A ``sweep`` build's lazy rounds start with the rows binding the neighbour's matrix
        within ``sweep_rtol`` (:func:`mdp.worst_case.sweep_start.binding_rows`) when their
        epsilons are within ``sweep_far`` in log scale, else cold.
    max_coefficients : tuple of float, default (1e12, 1e7, 1e5)
        Coefficient limits tried in order (:data:`mdp.worst_case.solve.MAX_COEFFICIENTS`).
    lazy : LazyRoundsTuning
        Tolerances of HiGHS's lazy rounds and of the full solve.
    resources : BlockResources
        Memory limits and device thresholds of the column-block method.
    """

    def __post_init__(self) -> None:
        check_tuning(self)

    full_solver: str = "hipo"
    blocks_from_n: int = 50
    dense_full_max_n: int = 200
    lazy_edges_per_point: float = 6.0
    path_slack: float = 0.25
    ipm_min_n: int = 45
    chain_slack: float = 0.6
    sweep_rtol: float = 0.1
    sweep_far: float = 1.0
    max_coefficients: tuple[float, ...] = MAX_COEFFICIENTS
    lazy: LazyRoundsTuning = field(default_factory=LazyRoundsTuning)
    resources: BlockResources = field(default_factory=BlockResources)
