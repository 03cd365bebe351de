"""Geo: location data, popular-cell metric spaces, heatmaps, federated heatmaps, heat sources.

Loaders, spaces, location privatization (planar Laplace, per-user files, epsilon explained),
DP heatmaps (:mod:`geo.heatmap`) and the saliency metrics (:mod:`geo.saliency`,
exported as a module because its ``emd`` differs from :func:`mdp.emd.emd`) are imported here;
:mod:`geo.federated` (federated heatmaps) and :mod:`geo.heatsource` (heat sources, which imports
cvxpy) are imported on use.
"""

from . import saliency
from .checkins import read_checkins
from .explain import Explanation, explain
from .geolife import iter_geolife, read_geolife, read_plt
from .grid import GEOLIFE_BEIJING_BOX, Grid
from .heatmap import (
    dp_sparse_emd_aggregate,
    gaussian_heatmap,
    laplace_baseline,
    level_budgets,
    noisy_pyramid,
    points_to_cells,
    pyramid,
    pyramidal_transform,
    reconstruct,
    user_distributions,
)
from .locations import privatize_latlon_lines, privatize_location, privatize_locations
from .planar_laplace import PlanarLaplaceSettings, planar_laplace
from .popular import cell_popularity, load_cell_counts, popular_cells, trace_cell_counts
from .projection import LocalProjection
from .users import privatize_users

__all__ = [
    "read_geolife", "iter_geolife", "read_plt", "read_checkins", "Grid", "GEOLIFE_BEIJING_BOX",
    "popular_cells", "cell_popularity", "load_cell_counts", "trace_cell_counts",
    "privatize_location", "privatize_locations", "privatize_latlon_lines",
    "dp_sparse_emd_aggregate", "laplace_baseline", "gaussian_heatmap", "pyramid",
    "pyramidal_transform", "level_budgets", "noisy_pyramid", "reconstruct", "points_to_cells",
    "user_distributions", "saliency", "explain", "Explanation", "planar_laplace",
    "PlanarLaplaceSettings", "LocalProjection", "privatize_users",
]
