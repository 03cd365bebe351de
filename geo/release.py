"""Release latitude/longitude locations: raw coordinates where the family allows it, else
located to a point of the mechanism's space and sampled.

* A ``planar_laplace`` mechanism draws its noise from the raw location
  (:class:`geo.raw_locations.RawPlanarLaplace`): ``epsilon`` per km on the coordinates
  themselves.
* Every other mechanism locates the location to a point of its space
  (:func:`geo.locations.locate`), samples its certified matrix and releases the output point;
  the guarantee then holds between points, and between raw locations up to the snapping term
  that ``mdp explain`` states.
"""

from __future__ import annotations

import re

import numpy as np
from numpy.typing import ArrayLike

from mdp.mechanism import Mechanism
from mdp.plugins import InputFormat
from mdp.validation import check_rng

from .locations import check_location_mechanism, locate, parse_latlon_lines
from .raw_locations import raw_mechanism

__all__ = ["privatize_locations", "privatize_location", "privatize_latlon_lines", "LATLON_INPUT"]


def privatize_locations(mech: Mechanism, latlon: ArrayLike, *, rng=None, strict: bool = False,
                        snap: bool = False, max_snap_km: float | None = None,
                        raw: bool = True) -> np.ndarray:
    """Privatize locations: locate, sample ``mech``, release the output cell centres.

    With ``raw`` (default) and a family that allows it (``planar_laplace``), the noise is drawn
    from the raw location instead (:func:`geo.raw_locations.raw_mechanism`): ``epsilon`` per km
    on the coordinates themselves, with no snapping term; ``snap``, ``strict`` or
    ``raw=False`` ask for the snapping path by name.

    Parameters
    ----------
    mech : Mechanism
        A mechanism on a popular-cell space (:func:`geo.popular.popular_cells`).
    latlon : array-like of shape (m, 2) or (2,)
        Locations (lat, lon) in degrees.
    rng : None, int or numpy.random.Generator
    strict, snap, max_snap_km
        See :func:`locate` (by default a location far outside the space is refused).
    raw : bool, default True
        Draw from the raw location where the family allows it (above).

    Returns
    -------
    ndarray of shape (m, 2): the released cell centres (lat, lon).
    """
    rng = check_rng(rng)
    check_location_mechanism(mech)
    raw = None if (snap or strict or not raw) else raw_mechanism(mech)
    if raw is not None:
        return np.asarray(mech.space.points)[raw.privatize_indices(latlon, rng=rng)]
    idx = locate(mech.space, latlon, strict=strict, snap=snap, max_snap_km=max_snap_km)
    out = mech.sample_indices(idx, rng)
    return np.asarray(mech.space.points)[out]


def privatize_location(mech: Mechanism, lat: float, lon: float, *, rng=None,
                       strict: bool = False, snap: bool = False,
                       max_snap_km: float | None = None) -> tuple[float, float]:
    """One location: ``(lat, lon) -> (lat, lon)`` of the released cell centre."""
    out = privatize_locations(mech, [[lat, lon]], rng=rng, strict=strict, snap=snap,
                              max_snap_km=max_snap_km)[0]
    return float(out[0]), float(out[1])


def privatize_latlon_lines(mech: Mechanism, lines: list[str], *, rng=None, snap: bool = False,
                           max_snap_km: float | None = None,
                           line_numbers: list[int] | None = None) -> list[str]:
    """``mdp privatize`` on a geographic space: one ``"lat,lon"`` output line per input line.

    Each output is the centre of the sampled cell, printed with 6 decimals (0.1 m). A
    ``planar_laplace`` mechanism draws from the raw location (no snapping; ``snap`` asks for the
    snapping path by name).
    ``line_numbers`` (1-based, one per line) name the lines in messages (default: 1, 2, ...).
    """
    P = parse_latlon_lines(lines)
    rng = check_rng(rng)
    numbers = line_numbers if line_numbers is not None else range(1, len(lines) + 1)
    raw = None if snap else raw_mechanism(mech)
    if raw is not None:
        # planar Laplace from the raw location: epsilon per km on the coordinates themselves
        out = np.asarray(mech.space.points)[raw.privatize_indices(
            P, rng=rng, names=[f"line {k}" for k in numbers])]
        return [f"{lat:.6f},{lon:.6f}" for lat, lon in out]
    idx = locate(mech.space, P, snap=snap, max_snap_km=max_snap_km,
                 names=[f"line {k}" for k in numbers])
    out = np.asarray(mech.space.points)[mech.sample_indices(idx, rng)]
    return [f"{lat:.6f},{lon:.6f}" for lat, lon in out]


def _accepts_latlon(mech: Mechanism, lines: list[str]) -> bool:
    return mech.space.metric == "haversine" and all(_LATLON_LINE.match(s) for s in lines)


_LATLON_LINE = re.compile(r"^\s*[-+]?\d+(\.\d*)?\s*,\s*[-+]?\d+(\.\d*)?\s*$")

#: ``mdp privatize`` input format: ``lat,lon`` lines on a geographic (haversine) space.
LATLON_INPUT = InputFormat(accepts=_accepts_latlon,
                           privatize=privatize_latlon_lines,
                           options=("snap", "max_snap_km", "line_numbers"))
