"""Locate latitude/longitude locations on a mechanism's space (the release is :mod:`geo.release`).

The geolocation release of the paper (imola2022, section 5.1) privatizes a user's location
discretised to a grid cell. Given a mechanism on a space built by
:func:`geo.popular.popular_cells` (labels ``"r{row}c{col}"``, points = cell centres):

1. **Locate**: a location maps to the space cell whose rectangle contains it. A location in a
   cell that is not in the space (or outside the grid box) maps to the space point with the
   nearest centre (great-circle distance; ties -> the more popular cell, i.e. lower index), but
   only when that centre is within ``max_snap_km`` (default :func:`snap_threshold_km`: the
   largest nearest-neighbour distance between the space's own points, at least one cell
   diagonal); a farther location is refused with an error unless ``snap=True``, because a point
   far outside the mechanism's area (Vienna into Beijing cells) is not what the user meant to
   privatize. ``strict=True`` refuses every location outside the space's cells.
2. **Sample** the mechanism's output cell for that input cell.
3. **Release** the output cell's centre (lat, lon).

The mDP guarantee holds between cells: for inputs located to cells ``u``, ``v``, outputs differ
by at most ``exp(eps d(u, v))``. Locations in the same cell are indistinguishable; for raw
locations ``x, y`` inside space cells, ``d(u, v) <= d(x, y) + `` one cell diagonal
(~0.78 km for 0.005 deg cells in Beijing). Snapping outside locations is pre-processing and
never releases anything but the mechanism's output.

The grid is recovered from the space itself (labels and centres, see :func:`grid_of_space`),
so a mechanism loaded from a file is enough. Spaces whose labels are not ``r{row}c{col}``
cells of one grid are located by nearest centre only.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike
from scipy.spatial import cKDTree

from mdp.errors import ParameterError, ParameterTypeError
from mdp.mechanism import Mechanism
from mdp.spaces.metric_space import EARTH_RADIUS_KM, MetricSpace, haversine_km
from mdp.validation import check_positive

from .grid import Grid, parse_cell_label

__all__ = ["grid_of_space", "locate", "parse_latlon_lines", "snap_threshold_km", "visit_counts",
           "check_geo_space", "check_latlon", "check_location_mechanism", "describe_positions",
           "cell_diagonal_km"]

# Centres recomputed from the recovered grid must match the stored ones to this (degrees).
_GRID_ATOL = 1e-9
# Nearest-point candidates taken from the k-d tree before the exact haversine comparison.
_CANDIDATES = 4


def _unit_vectors(latlon: np.ndarray) -> np.ndarray:
    r = np.radians(latlon)
    return np.c_[np.cos(r[:, 0]) * np.cos(r[:, 1]), np.cos(r[:, 0]) * np.sin(r[:, 1]),
                 np.sin(r[:, 0])]


def _haversine_rows(a: np.ndarray, B: np.ndarray) -> np.ndarray:
    """Great-circle km from each row ``a[i]`` to its candidates ``B[i, j]`` (as haversine_km)."""
    a = np.radians(a)[:, None, :]
    b = np.radians(B)
    h = (np.sin((a[..., 0] - b[..., 0]) / 2) ** 2
         + np.cos(a[..., 0]) * np.cos(b[..., 0]) * np.sin((a[..., 1] - b[..., 1]) / 2) ** 2)
    return 2 * EARTH_RADIUS_KM * np.arcsin(np.sqrt(np.clip(h, 0.0, 1.0)))


def check_location_mechanism(mech) -> None:
    """Raise :class:`~mdp.errors.ParameterTypeError` unless ``mech`` is a mechanism."""
    if not isinstance(mech, Mechanism):
        raise ParameterTypeError(f"mech must be an mdp.Mechanism on a haversine (lat, lon) space, "
                                 f"got {type(mech).__name__}")


def check_geo_space(space: MetricSpace) -> np.ndarray:
    """The (lat, lon) points of a haversine space; any other space raises."""
    if space.metric != "haversine" or space.points is None or space.points.shape[1] != 2:
        raise ParameterError("locations can only be privatized on a haversine space with (lat, lon) "
                         f"points (e.g. from geo.popular_cells), got metric={space.metric!r}")
    return np.asarray(space.points)


def grid_of_space(space: MetricSpace) -> Grid | None:
    r"""Recover the grid of a popular-cell space from its labels and centres.

    With labels ``r{row}c{col}`` and centres ``(lat, lon)``, the grid parameters
    ``(lat_min, lon_min, c)`` solve the linear system
    ``lat = lat_min + (row + 1/2) c``, ``lon = lon_min + (col + 1/2) c`` (least squares; any two
    distinct cells determine it). The returned grid covers rows/columns ``0..max``.

    Returns
    -------
    Grid, or None when the labels are not cells or the centres do not fit one grid
    (to :data:`_GRID_ATOL` degrees).
    """
    pts = check_geo_space(space)
    if space.labels is None:
        return None
    try:
        rc = np.array([parse_cell_label(lab) for lab in space.labels.tolist()], dtype=float)
    except ValueError:
        return None
    n = len(rc)
    A = np.zeros((2 * n, 3))
    A[:n, 0] = 1.0
    A[n:, 1] = 1.0
    A[:n, 2] = rc[:, 0] + 0.5
    A[n:, 2] = rc[:, 1] + 0.5
    b = np.r_[pts[:, 0], pts[:, 1]]
    (lat_min, lon_min, c), *_ = np.linalg.lstsq(A, b, rcond=None)
    if not (c > 0 and np.max(np.abs(A @ [lat_min, lon_min, c] - b)) <= _GRID_ATOL):
        return None
    # Grids are built from decimal boxes (39.6, 0.005): undo least-squares rounding noise.
    lat_min, lon_min, c = (round(float(v), 10) for v in (lat_min, lon_min, c))
    try:
        return Grid(lat_min, min(lat_min + (rc[:, 0].max() + 1) * c, 90.0),
                    lon_min, min(lon_min + (rc[:, 1].max() + 1) * c, 180.0), c)
    except ValueError:
        return None


def check_latlon(latlon: ArrayLike) -> np.ndarray:
    """Locations as an (m, 2) array of (lat, lon) degrees; malformed or out-of-range ones raise
    (naming their position, never their coordinates)."""
    try:
        P = np.asarray(latlon, dtype=float)
    except (ValueError, TypeError, OverflowError):
        raise ParameterError("locations must be an (m, 2) array of (lat, lon) numbers of "
                             "degrees") from None
    if P.ndim == 1 and P.shape[0] == 2:
        P = P[None, :]
    if P.ndim != 2 or P.shape[1] != 2:
        raise ParameterError(f"locations must be an (m, 2) array of (lat, lon), got shape "
                             f"{P.shape}")
    bad = ~np.isfinite(P).all(axis=1) | (np.abs(P[:, 0]) > 90) | (np.abs(P[:, 1]) > 180)
    if bad.any():
        raise ParameterError(f"locations must be (lat, lon) degrees with |lat| <= 90, |lon| <= 180; "
                         f"not so: {describe_positions(None, np.flatnonzero(bad), len(P))}")
    return P


def snap_threshold_km(space: MetricSpace) -> float:
    """Default largest snapping distance (km) for :func:`locate` on ``space``.

    The largest distance from a point of the space to its nearest other point (how far the
    space's own points lie from their neighbours), and at least one cell diagonal when the space
    is a grid of cells (:func:`grid_of_space`).
    """
    check_geo_space(space)
    D = np.asarray(space.distances, dtype=float).copy()
    np.fill_diagonal(D, np.inf)
    radius = float(D.min(axis=1).max())
    grid = grid_of_space(space)
    if grid is not None:
        lat = float(np.mean(space.points[:, 0]))
        a = np.array([[lat, 0.0]])
        b = np.array([[lat + grid.cell_deg, grid.cell_deg]])
        radius = max(radius, float(haversine_km(a, b)[0, 0]))
    return radius


def locate(space: MetricSpace, latlon: ArrayLike, *, strict: bool = False, snap: bool = False,
           max_snap_km: float | None = None, names: list[str] | None = None,
           far: str = "refuse") -> np.ndarray:
    """Indices of the space cells locations map to (step 1 of the module docstring).

    Parameters
    ----------
    space : MetricSpace
        A haversine space of cell centres (labels ``r{row}c{col}`` for exact cell lookup) or of
        any (lat, lon) points.
    latlon : array-like of shape (m, 2) or (2,)
        Locations (lat, lon) in degrees.
    strict : bool, default False
        Raise instead of snapping a location that lies in no cell of the space.
    snap : bool, default False
        Snap every location to its nearest point, however far (the user asked for it by name).
    max_snap_km : float > 0 or None
        Largest distance (km) to the nearest point of the space at which a location outside the
        space's cells is snapped; ``None``: :func:`snap_threshold_km`. Ignored with ``snap``.
    names : list of str, optional
        How messages name each location (default ``"input K"``, K counted from 1); the
        ``mdp`` command passes ``"line K"``. Messages never repeat a location's coordinates.
    far : {"refuse", "mark"}, default "refuse"
        What a location farther than ``max_snap_km`` gets: an error (the default), or index
        -1 (the caller leaves it out; :func:`geo.users.privatize_users` does).

    Raises
    ------
    mdp.errors.ParameterError
        For malformed coordinates, a non-geographic space, a location farther than
        ``max_snap_km`` from every point (without ``snap``; the message gives the count and
        positions of such locations and the options, never their coordinates or distances), or
        (``strict``) a location outside every cell of the space.
    """
    if far not in ("refuse", "mark"):
        raise ParameterError(f"far must be 'refuse' or 'mark', got {far!r}")
    pts = check_geo_space(space)
    P = check_latlon(latlon)
    idx = np.full(len(P), -1, dtype=np.int64)
    grid = grid_of_space(space)
    if grid is not None:
        inside = grid.contains(P[:, 0], P[:, 1])
        lookup = {lab: i for i, lab in enumerate(space.labels.tolist())}
        cells = grid.cell_of(P[inside, 0], P[inside, 1])
        idx[inside] = [lookup.get(lab, -1) for lab in grid.labels(cells)] if inside.any() else []
    missing = np.flatnonzero(idx < 0)
    if missing.size and strict:
        raise ParameterError(f"{describe_positions(names, missing, len(P))}: in no cell of the space "
                             "(strict=True)")
    if missing.size and not snap:
        limit = snap_threshold_km(space) if max_snap_km is None else check_positive(
            max_snap_km, "max_snap_km")
    # candidates by chord distance on the unit sphere (monotone in great-circle distance), then
    # the exact rule among them: haversine distance, ties to the lower index
    k = min(len(pts), _CANDIDATES)
    tree = cKDTree(_unit_vectors(pts)) if missing.size else None
    far_all = []
    for s in range(0, missing.size, 65536):
        chunk = missing[s:s + 65536]
        _, cand = tree.query(_unit_vectors(P[chunk]), k=k)
        cand = np.sort(cand.reshape(len(chunk), k), axis=1)
        Dk = _haversine_rows(P[chunk], pts[cand])
        best = np.argmin(Dk, axis=1)
        idx[chunk] = cand[np.arange(len(chunk)), best]
        if not snap:
            near = Dk[np.arange(len(chunk)), best]
            far_all.append(chunk[near > limit])
    far_rows = np.concatenate(far_all) if far_all else np.empty(0, dtype=np.int64)
    if far_rows.size and far == "mark":
        idx[far_rows] = -1
    elif far_rows.size:
        # positions and count only: the locations (and their distances) are private
        head = f"{describe_positions(names, far_rows, len(P))}: farther than "
        body = (f" = {limit:.3f} km from every point of the mechanism's space (outside the area "
                "it covers). Build a mechanism on a space that covers them, raise ")
        raise ParameterError(
            head + "max_snap_km" + body + "max_snap_km, or snap to the nearest point anyway "
            "with snap=True",
            cli_message=head + "--max-snap-km" + body + "--max-snap-km, or snap to the nearest "
            "point anyway with --snap")
    return idx


def describe_positions(names: list[str] | None, ks: np.ndarray, total: int) -> str:
    """``"input 3 (of 10)"``, ``"inputs 3 and 7 (2 of 10)"`` (1-based), or with ``names``
    ``"line 4 (1 of 10 locations)"``: where the refused locations are, never what they are."""
    if names is None:
        shown = [str(k + 1) for k in ks[:20].tolist()]
        noun = "input " if len(ks) == 1 else "inputs "
    else:
        shown, noun = [names[k] for k in ks[:20].tolist()], ""
        total = f"{total} locations"
    if len(ks) == 1:
        return f"{noun}{shown[0]} ({'1 of ' if names is not None else 'of '}{total})"
    listed = (", ".join(shown[:-1]) + f" and {shown[-1]}" if len(ks) <= 20
              else ", ".join(shown) + f" and {len(ks) - 20} more")
    return f"{noun}{listed} ({len(ks)} of {total})"


def parse_latlon_lines(lines: list[str]) -> np.ndarray:
    """Parse ``"lat,lon"`` lines (degrees) into an (m, 2) array.

    Raises
    ------
    ValueError
        Naming the (1-based) line for a line that is not two numbers or is out of range.
    """
    out = np.empty((len(lines), 2))
    for i, line in enumerate(lines):
        parts = str(line).split(",")
        try:
            if len(parts) != 2:
                raise ValueError
            lat, lon = float(parts[0]), float(parts[1])
        except ValueError:
            raise ParameterError(f"line {i + 1}: expected 'lat,lon' in degrees") from None
        if not (math.isfinite(lat) and math.isfinite(lon) and abs(lat) <= 90 and abs(lon) <= 180):
            raise ParameterError(f"line {i + 1}: (lat, lon) out of range (|lat| <= 90, "
                                 "|lon| <= 180)")
        out[i] = lat, lon
    return out


def visit_counts(space: MetricSpace, latlon: ArrayLike) -> np.ndarray:
    """Locations per point of ``space`` (located as :func:`locate` does; locations farther than
    the snapping threshold from every point are not counted): the counts of a prior
    (:meth:`mdp.prior.Prior.from_counts`, ``--prior counts:FILE``).

    A prior made from the same check-ins that are later privatized is not protected by the
    mechanism: it tells whoever reads it how often each place was visited.
    """
    idx = locate(space, latlon, far="mark")
    return np.bincount(idx[idx >= 0], minlength=space.n).astype(np.int64)


def cell_diagonal_km(space) -> float | None:
    """The widest cell diagonal (km) of a grid space (:func:`geo.locations.grid_of_space`), or
    None: the term added to the distance of two raw locations inside the space's cells."""
    grid = grid_of_space(space)
    if grid is None:
        return None
    c = grid.cell_deg
    lo = space.points[:, 0] - c / 2             # each point's cell: both diagonals, largest
    a = np.c_[lo, np.zeros_like(lo)]
    return float(max(haversine_km(a, a + [c, c]).diagonal().max(),
                     haversine_km(a + [c, 0.0], a + [0.0, c]).diagonal().max()))
