"""A regular latitude/longitude grid of square cells (Imola et al. 2022, section 5.1).

The geolocation experiments discretise locations into "rectangular bins of 0.005 deg" and use
distances between bin centres. :class:`Grid` is that discretisation: it maps points to cell ids,
cell ids to centres and labels, and gives great-circle distances (km) between centres.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from mdp.errors import ParameterError, ParameterTypeError
from mdp.spaces.metric_space import haversine_km
from mdp.validation import check_positive

__all__ = ["Grid", "GEOLIFE_BEIJING_BOX", "parse_cell_label"]

#: The Beijing box of the shared compact Geolife file: (lat_min, lat_max, lon_min, lon_max).
GEOLIFE_BEIJING_BOX = (39.6, 40.3, 115.9, 116.8)

_LABEL = re.compile(r"^r(\d+)c(\d+)$")

# Box sides are multiples of cell_deg up to this relative rounding (0.7 / 0.005 = 139.99999...).
_SIDE_RTOL = 1e-9


def parse_cell_label(label: str) -> tuple[int, int]:
    """``"r{row}c{col}"`` -> ``(row, col)``.

    Raises
    ------
    ValueError
        When ``label`` is not of that form.
    """
    m = _LABEL.match(str(label))
    if m is None:
        raise ParameterError(f"cell label must look like 'r12c34', got {label!r}")
    return int(m.group(1)), int(m.group(2))


@dataclass(frozen=True)
class Grid:
    r"""Square cells of ``cell_deg`` degrees covering the box ``[lat_min, lat_max) x [lon_min, lon_max)``.

    Row ``r`` covers latitudes ``[lat_min + r c, lat_min + (r+1) c)`` (rows count northward from
    ``lat_min``), column ``k`` covers longitudes ``[lon_min + k c, lon_min + (k+1) c)``
    (eastward from ``lon_min``), with ``c = cell_deg``, and

    .. math:: \mathrm{row} = \lfloor (\mathrm{lat} - \mathrm{lat_{min}}) / c \rfloor,\quad
              \mathrm{col} = \lfloor (\mathrm{lon} - \mathrm{lon_{min}}) / c \rfloor,\quad
              \mathrm{id} = \mathrm{row} \cdot n_{\mathrm{cols}} + \mathrm{col},

    the ``cell_id`` convention of the shared compact Geolife file (Imola et al. 2022, section 5.1 bins).
    The box is half-open: a point on the northern or eastern edge is outside. When a side is not
    a multiple of ``cell_deg`` the last row/column is cut by the box (``nrows = ceil(side / c)``).
    Cells are labelled ``"r{row}c{col}"``.

    Parameters
    ----------
    lat_min, lat_max, lon_min, lon_max : float
        The box in degrees (WGS 84), ``lat_min < lat_max``, ``lon_min < lon_max``.
    cell_deg : float
        Side of a cell in degrees (> 0).
    """

    lat_min: float
    lat_max: float
    lon_min: float
    lon_max: float
    cell_deg: float

    def __post_init__(self):
        for name in ("lat_min", "lat_max", "lon_min", "lon_max"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
                raise ParameterTypeError(f"{name} must be a real number, got {value!r}")
            if not math.isfinite(float(value)):
                raise ParameterError(f"{name} must be finite, got {value!r}")
            object.__setattr__(self, name, float(value))
        object.__setattr__(self, "cell_deg", check_positive(self.cell_deg, "cell_deg"))
        if not -90 <= self.lat_min < self.lat_max <= 90:
            raise ParameterError(f"need -90 <= lat_min < lat_max <= 90, got lat_min={self.lat_min}, "
                             f"lat_max={self.lat_max}")
        if not -180 <= self.lon_min < self.lon_max <= 180:
            raise ParameterError(f"need -180 <= lon_min < lon_max <= 180, got lon_min={self.lon_min}, "
                             f"lon_max={self.lon_max}")

    # -- constructors -------------------------------------------------------------------------
    @classmethod
    def from_box(cls, box: ArrayLike, cell_deg: float | None = None) -> Grid:
        """Build from ``box = (lat_min, lat_max, lon_min, lon_max[, cell_deg])``.

        ``cell_deg`` comes from the fifth entry when present (the compact file's ``box`` array),
        else from the argument.
        """
        values = [float(v) for v in np.asarray(box, dtype=float).ravel()]
        if len(values) == 5:
            if cell_deg is not None and not math.isclose(values[4], cell_deg, rel_tol=1e-12):
                raise ParameterError(f"cell_deg={cell_deg} disagrees with the box's cell size {values[4]}")
            return cls(*values)
        if len(values) != 4:
            raise ParameterError(f"box must be (lat_min, lat_max, lon_min, lon_max[, cell_deg]), got {box!r}")
        if cell_deg is None:
            raise ParameterError("cell_deg is required when box has 4 entries")
        return cls(*values, cell_deg)

    @classmethod
    def covering(cls, lat: ArrayLike, lon: ArrayLike, cell_deg: float) -> Grid:
        """The smallest grid aligned to multiples of ``cell_deg`` that contains every point.

        ``lat_min = floor(min(lat) / c) c`` (same for longitude) so that grids of different data
        sets share cell boundaries; the box extends to the first multiple of ``c`` strictly above
        the largest coordinate (the box is half-open). Used as the "data extent" box.
        """
        c = check_positive(cell_deg, "cell_deg")
        lat = np.asarray(lat, dtype=float)
        lon = np.asarray(lon, dtype=float)
        if lat.size == 0:
            raise ParameterError("cannot build a covering grid of zero points")
        if not (np.all(np.isfinite(lat)) and np.all(np.isfinite(lon))):
            raise ParameterError("coordinates must be finite (found NaN or inf)")
        # Rounding to 12 decimals keeps 40.475 from printing as 40.475000000000001.
        lo_lat = round(math.floor(lat.min() / c) * c, 12)
        lo_lon = round(math.floor(lon.min() / c) * c, 12)
        hi_lat = round((math.floor((lat.max() - lo_lat) / c) + 1) * c + lo_lat, 12)
        hi_lon = round((math.floor((lon.max() - lo_lon) / c) + 1) * c + lo_lon, 12)
        return cls(max(lo_lat, -90.0), min(hi_lat, 90.0), max(lo_lon, -180.0), min(hi_lon, 180.0), c)

    # -- shape ----------------------------------------------------------------------------------
    @property
    def nrows(self) -> int:
        """Number of rows (``ceil((lat_max - lat_min) / cell_deg)``)."""
        return math.ceil((self.lat_max - self.lat_min) / self.cell_deg * (1 - _SIDE_RTOL))

    @property
    def ncols(self) -> int:
        """Number of columns (``ceil((lon_max - lon_min) / cell_deg)``)."""
        return math.ceil((self.lon_max - self.lon_min) / self.cell_deg * (1 - _SIDE_RTOL))

    @property
    def ncells(self) -> int:
        """Number of cells, ``nrows * ncols``."""
        return self.nrows * self.ncols

    @property
    def box(self) -> tuple[float, float, float, float]:
        """``(lat_min, lat_max, lon_min, lon_max)``."""
        return (self.lat_min, self.lat_max, self.lon_min, self.lon_max)

    # -- points -> cells ------------------------------------------------------------------------
    def contains(self, lat: ArrayLike, lon: ArrayLike) -> np.ndarray:
        """Boolean mask of the points inside the half-open box."""
        lat = np.asarray(lat, dtype=float)
        lon = np.asarray(lon, dtype=float)
        return (lat >= self.lat_min) & (lat < self.lat_max) & (lon >= self.lon_min) & (lon < self.lon_max)

    def cell_of(self, lat: ArrayLike, lon: ArrayLike) -> np.ndarray:
        """Cell ids of points (``row * ncols + col``), as int64.

        Raises
        ------
        ValueError
            When a point lies outside the box (the message gives the first one and how many);
            filter with :meth:`contains` first to drop them deliberately.
        """
        lat = np.asarray(lat, dtype=float)
        lon = np.asarray(lon, dtype=float)
        if lat.shape != lon.shape:
            raise ParameterError(f"lat and lon must have the same shape, got {lat.shape} and {lon.shape}")
        inside = self.contains(lat, lon)
        if not np.all(inside):
            bad = np.flatnonzero(~inside.ravel())
            k = int(bad[0])
            raise ParameterError(
                f"{bad.size} point(s) outside the grid box lat [{self.lat_min}, {self.lat_max}) x "
                f"lon [{self.lon_min}, {self.lon_max}); first: index {k}, "
                f"(lat, lon) = ({lat.ravel()[k]}, {lon.ravel()[k]})")
        row, col = self.row_col_of(lat, lon)
        return row * self.ncols + col

    def row_col_of(self, lat: ArrayLike, lon: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """Row and column of points assumed inside the box (see :meth:`cell_of`)."""
        lat = np.asarray(lat, dtype=float)
        lon = np.asarray(lon, dtype=float)
        row = np.floor((lat - self.lat_min) / self.cell_deg).astype(np.int64)
        col = np.floor((lon - self.lon_min) / self.cell_deg).astype(np.int64)
        # A point a hair below lat_max can round up to row == nrows; it belongs to the last row.
        return np.clip(row, 0, self.nrows - 1), np.clip(col, 0, self.ncols - 1)

    # -- cells -> geometry ----------------------------------------------------------------------
    def _check_ids(self, cell_ids: ArrayLike) -> np.ndarray:
        ids = np.asarray(cell_ids)
        if ids.dtype.kind not in "iu":
            raise ParameterTypeError(f"cell ids must be integers, got dtype {ids.dtype}")
        ids = ids.astype(np.int64)
        if ids.size and (ids.min() < 0 or ids.max() >= self.ncells):
            bad = ids[(ids < 0) | (ids >= self.ncells)].ravel()[0]
            raise ParameterError(f"cell id {int(bad)} out of range for a grid of {self.ncells} cells")
        return ids

    def row_col(self, cell_ids: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """``(row, col)`` of cell ids."""
        ids = self._check_ids(cell_ids)
        return ids // self.ncols, ids % self.ncols

    def centres(self, cell_ids: ArrayLike) -> np.ndarray:
        """Centres ``(lat, lon)`` in degrees of cell ids, shape ``(m, 2)``.

        ``lat = lat_min + (row + 1/2) c``, ``lon = lon_min + (col + 1/2) c``.
        """
        row, col = self.row_col(np.atleast_1d(cell_ids))
        return np.column_stack([self.lat_min + (row + 0.5) * self.cell_deg,
                                self.lon_min + (col + 0.5) * self.cell_deg])

    def labels(self, cell_ids: ArrayLike) -> list[str]:
        """``"r{row}c{col}"`` labels of cell ids."""
        row, col = self.row_col(np.atleast_1d(cell_ids))
        return [f"r{r}c{c}" for r, c in zip(row.tolist(), col.tolist(), strict=True)]

    def ids_of_labels(self, labels: list[str]) -> np.ndarray:
        """Inverse of :meth:`labels`."""
        rc = [parse_cell_label(lab) for lab in labels]
        ids = np.array([r * self.ncols + c for r, c in rc], dtype=np.int64)
        for (r, c), lab in zip(rc, labels, strict=True):
            if r >= self.nrows or c >= self.ncols:
                raise ParameterError(f"cell {lab!r} is outside this {self.nrows} x {self.ncols} grid")
        return ids

    def distances_km(self, cell_ids: ArrayLike) -> np.ndarray:
        """Haversine distances (km) between the centres of cell ids, an ``m x m`` matrix."""
        c = self.centres(cell_ids)
        return haversine_km(c, c)
