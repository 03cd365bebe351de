r"""Population density maps from real points, and users sampled from them (Bagdasaryan et al. 2022, section 6.1).

The paper turns a population image into users: every unit of pixel luminosity is one user at that
pixel, and each run samples ``U`` of them. We do the same with a map built from real points
(e.g. the Gowalla NYC check-ins read by :func:`geo.checkins.read_checkins`): the points are binned
on a ``2^depth x 2^depth`` grid over a lat/lon box (row 0 = southern edge, column 0 = western
edge), optionally smoothed with a Gaussian kernel (raw check-ins pile up on single venue pixels,
unlike a population image), normalised, and users are drawn i.i.d. from the resulting density.
"""

from __future__ import annotations

import numpy as np
from scipy.ndimage import gaussian_filter

from mdp.errors import ParameterError
from mdp.validation import check_int, check_positive, check_rng

from ..heatmap import points_to_cells
from .metrics import density_map

__all__ = ["NYC_BOX", "to_pixels", "population_map", "sample_users"]

#: (lon_min, lat_min, lon_max, lat_max) of the shared Gowalla NYC extract.
NYC_BOX = (-74.2589, 40.4774, -73.7004, 40.9176)


def to_pixels(lat, lon, depth: int, box=NYC_BOX) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pixel ``(rows, cols)`` of the points inside ``box`` on the ``2^depth`` grid, and the
    boolean mask of the points kept (points outside the box are dropped).

    ``box = (lon_min, lat_min, lon_max, lat_max)``; the snapping is
    :func:`geo.heatmap.points_to_cells` with x = lon, y = lat.
    """
    depth = check_int(depth, "depth", low=0, high=14)
    lon_min, lat_min, lon_max, lat_max = box
    row, col, keep = points_to_cells(np.asarray(lon, dtype=float), np.asarray(lat, dtype=float),
                                     delta=1 << depth, bounds=(lon_min, lon_max, lat_min, lat_max))
    return row[keep], col[keep], keep


def population_map(lat, lon, depth: int, *, smooth: float = 0.0, box=NYC_BOX) -> np.ndarray:
    """Normalised density of the points on the ``2^depth`` grid, Gaussian-smoothed with standard
    deviation ``smooth`` pixels (0 = raw histogram; mass leaving the box is dropped before
    normalising)."""
    smooth = check_positive(smooth, "smooth", allow_zero=True)
    r, c, keep = to_pixels(lat, lon, depth, box)
    if not keep.any():
        raise ParameterError(f"no point falls inside box {box}")
    f = density_map(r, c, depth)
    if smooth > 0:
        f = gaussian_filter(f, smooth, mode="constant")
        f /= f.sum()
    return f


def sample_users(density, n: int, *, rng=None) -> tuple[np.ndarray, np.ndarray]:
    """``n`` users drawn i.i.d. from a density map; returns their pixel ``(rows, cols)``."""
    density = np.asarray(density, dtype=float)
    n = check_int(n, "n", low=1)
    rng = check_rng(rng)
    if density.ndim != 2 or np.any(density < 0) or density.sum() <= 0:
        raise ParameterError("density must be a non-negative 2-D map with positive mass")
    idx = rng.choice(density.size, size=n, p=(density / density.sum()).ravel())
    return np.divmod(idx, density.shape[1])
