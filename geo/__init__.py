"""Geo: location data, popular-cell metric spaces, heatmaps, federated heatmaps, heat sources.

Loaders, spaces, location privatization (planar Laplace, per-user files, epsilon explained),
DP heatmaps (:mod:`geo.heatmap`) and the saliency metrics (:mod:`geo.saliency`,
exported as a module because its ``emd`` differs from :func:`mdp.emd.emd`) are imported here;
:mod:`geo.federated` (federated heatmaps) and :mod:`geo.heatsource` (heat sources, which imports
cvxpy) are imported on use.

The names below load on first use (:mod:`mdp.lazy`), so that a command of ``mdp`` imports
only what it runs.
"""

from mdp.lazy import lazy_package

_EXPORTS = {
    "saliency": ".saliency",
    "read_checkins": ".checkins",
    "Explanation": ".explain",
    "explain": ".explain",
    "iter_geolife": ".geolife",
    "read_geolife": ".geolife",
    "read_plt": ".geolife",
    "GEOLIFE_BEIJING_BOX": ".grid",
    "Grid": ".grid",
    "dp_sparse_emd_aggregate": ".heatmap",
    "gaussian_heatmap": ".heatmap",
    "laplace_baseline": ".heatmap",
    "level_budgets": ".heatmap",
    "noisy_pyramid": ".heatmap",
    "points_to_cells": ".heatmap",
    "pyramid": ".heatmap",
    "pyramidal_transform": ".heatmap",
    "reconstruct": ".heatmap",
    "user_distributions": ".heatmap",
    "privatize_latlon_lines": ".release",
    "privatize_location": ".release",
    "privatize_locations": ".release",
    "PlanarLaplaceSettings": ".planar_laplace",
    "planar_laplace": ".planar_laplace",
    "cell_popularity": ".popular",
    "load_cell_counts": ".popular",
    "popular_cells": ".popular",
    "trace_cell_counts": ".popular",
    "LocalProjection": ".projection",
    "privatize_users": ".users",
    "visit_counts": ".locations",
    "RawPlanarLaplace": ".raw_locations",
    "off_grid_violation_rate": ".raw_locations",
}
lazy_package(__name__, _EXPORTS)

__all__ = [
    "read_geolife",
    "iter_geolife",
    "read_plt",
    "read_checkins",
    "Grid",
    "GEOLIFE_BEIJING_BOX",
    "popular_cells",
    "cell_popularity",
    "load_cell_counts",
    "trace_cell_counts",
    "privatize_location",
    "privatize_locations",
    "privatize_latlon_lines",
    "visit_counts",
    "RawPlanarLaplace",
    "off_grid_violation_rate",
    "dp_sparse_emd_aggregate",
    "laplace_baseline",
    "gaussian_heatmap",
    "pyramid",
    "pyramidal_transform",
    "level_budgets",
    "noisy_pyramid",
    "reconstruct",
    "points_to_cells",
    "user_distributions",
    "saliency",
    "explain",
    "Explanation",
    "planar_laplace",
    "PlanarLaplaceSettings",
    "LocalProjection",
    "privatize_users",
]
