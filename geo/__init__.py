"""Geo: location data, popular-cell metric spaces, heatmaps, federated heatmaps, heat sources.

Loaders and spaces are imported here; the heavier algorithm modules are imported on use:
:mod:`geo.heatmap` (DP heatmaps under EMD), :mod:`geo.saliency`, :mod:`geo.federated`
(federated heatmaps) and :mod:`geo.heatsource` (heat sources).
"""

from .checkins import read_checkins
from .geolife import iter_geolife, read_geolife, read_plt
from .grid import GEOLIFE_BEIJING_BOX, Grid
from .locations import privatize_latlon_lines, privatize_location, privatize_locations
from .popular import cell_popularity, load_cell_counts, popular_cells, trace_cell_counts

__all__ = [
    "read_geolife", "iter_geolife", "read_plt", "read_checkins", "Grid", "GEOLIFE_BEIJING_BOX",
    "popular_cells", "cell_popularity", "load_cell_counts", "trace_cell_counts",
    "privatize_location", "privatize_locations", "privatize_latlon_lines",
]
