r"""A local plane for lat/lon: the azimuthal equidistant projection on the toolkit's sphere.

Planar mechanisms (planar Laplace, Andres et al. 2013) add noise in a plane, but the toolkit's
location distances are great-circle distances on the sphere of radius
:data:`mdp.spaces.metric_space.EARTH_RADIUS_KM` (:func:`mdp.spaces.metric_space.haversine_km`). :class:`LocalProjection`
maps a spherical cap of angular radius :math:`c_{max} < \pi/2` around a centre to the plane
with the azimuthal equidistant projection (Snyder 1987, "Map projections: a working manual",
section 25, spherical form): distances from the centre are kept exactly and the scale along
circles around the centre is :math:`k(c) = c / \sin c \ge 1`.

Distortion bound. Inside the cap every local scale factor lies in
:math:`[1, k_{max}]`, :math:`k_{max} = c_{max} / \sin c_{max}`, and a cap of radius below
:math:`\pi/2` contains the great-circle arc between any two of its points, whose image is a
curve of length at most :math:`k_{max} d(x, y)`. So for :math:`x, y` in the cap

.. math:: \lVert P(x) - P(y) \rVert \le k_{max}\, d(x, y),

and planar noise at level :math:`\epsilon / k_{max}` per km is :math:`\epsilon`-geo-
indistinguishable for the great-circle distance. :math:`k_{max} - 1 \approx c_{max}^2 / 6`:
``1.0e-5`` for a 50 km cap, ``1.0e-3`` for 500 km.

pyproj would give the same formulas, but not a projection tied to the toolkit's own sphere
(whose radius the privacy argument needs), and it is not a dependency.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from mdp.errors import ParameterError
from mdp.spaces.metric_space import EARTH_RADIUS_KM, haversine_km

__all__ = ["LocalProjection"]

#: Largest cap radius (km) accepted: a quarter of a great circle would make caps non-convex.
MAX_CAP_KM = 0.45 * np.pi * EARTH_RADIUS_KM


def _as_latlon(latlon: ArrayLike, name: str) -> np.ndarray:
    try:
        P = np.asarray(latlon, dtype=float)
    except (ValueError, TypeError, OverflowError):
        raise ParameterError(f"{name} must be an (m, 2) array of (lat, lon) numbers of "
                             "degrees") from None
    if P.ndim == 1 and P.shape[0] == 2:
        P = P[None, :]
    if P.ndim != 2 or P.shape[1] != 2:
        raise ParameterError(f"{name} must be an (m, 2) array of (lat, lon), got shape {P.shape}")
    bad = ~np.isfinite(P).all(axis=1) | (np.abs(P[:, 0]) > 90) | (np.abs(P[:, 1]) > 180)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        # the row's position, not its values (a location may be private)
        raise ParameterError(f"{name} must be (lat, lon) degrees with |lat| <= 90, |lon| <= 180; "
                             f"row {k} is not ({int(bad.sum())} such row(s))")
    return P


@dataclass(frozen=True)
class LocalProjection:
    """Azimuthal equidistant projection of a cap (centre, radius) to the plane, in km.

    Attributes
    ----------
    lat, lon : float
        Centre of the cap (degrees).
    radius_km : float
        Great-circle radius of the cap; points farther from the centre are outside its domain.
    """

    lat: float
    lon: float
    radius_km: float

    def __post_init__(self) -> None:
        _as_latlon([self.lat, self.lon], "projection centre")
        if not (np.isfinite(self.radius_km) and 0 < self.radius_km <= MAX_CAP_KM):
            raise ParameterError(f"radius_km must be in (0, {MAX_CAP_KM:.0f}] km, "
                                 f"got {self.radius_km!r}")

    @classmethod
    def around(cls, latlon: ArrayLike, *, margin_km: float = 0.0) -> LocalProjection:
        """The cap centred on the points' spherical mean that holds them all (plus a margin)."""
        P = np.radians(_as_latlon(latlon, "points"))
        v = np.c_[np.cos(P[:, 0]) * np.cos(P[:, 1]), np.cos(P[:, 0]) * np.sin(P[:, 1]),
                  np.sin(P[:, 0])].mean(axis=0)
        if np.linalg.norm(v) < 1e-9:
            raise ParameterError("points spread over the whole sphere have no local plane")
        lat = float(np.degrees(np.arcsin(np.clip(v[2] / np.linalg.norm(v), -1, 1))))
        lon = float(np.degrees(np.arctan2(v[1], v[0])))
        radius = float(haversine_km(np.array([[lat, lon]]), np.degrees(P)).max())
        return cls(lat, lon, max(radius + margin_km, 1e-3))

    @property
    def scale_max(self) -> float:
        """``k_max = c / sin c`` at the cap's edge: plane distances are at most this times great-circle ones."""
        c = self.radius_km / EARTH_RADIUS_KM
        return float(c / np.sin(c)) if c > 1e-8 else 1.0 + c * c / 6.0

    def distance_from_centre_km(self, latlon: ArrayLike) -> np.ndarray:
        """Great-circle distance (km) of each point from the centre."""
        return haversine_km(np.array([[self.lat, self.lon]]), _as_latlon(latlon, "points"))[0]

    def contains(self, latlon: ArrayLike) -> np.ndarray:
        """Whether each point lies in the cap (bool, (m,))."""
        return self.distance_from_centre_km(latlon) <= self.radius_km * (1 + 1e-12)

    def check_inside(self, latlon: ArrayLike, name: str = "location") -> np.ndarray:
        """The points as an (m, 2) array; a point outside the cap raises naming it."""
        P = _as_latlon(latlon, name)
        out = np.flatnonzero(~self.contains(P))
        if out.size:
            k = int(out[0])
            # the row's position only: its coordinates and distance are private
            raise ParameterError(
                f"{name} {k} is outside the area (centre {self.lat:.6f}, {self.lon:.6f}, "
                f"radius {self.radius_km:.3f} km) ({out.size} such row(s)); widen the area")
        return P

    def forward(self, latlon: ArrayLike) -> np.ndarray:
        """(m, 2) plane coordinates (x east, y north) in km."""
        P = np.radians(_as_latlon(latlon, "points"))
        phi1, lam0 = np.radians(self.lat), np.radians(self.lon)
        phi, dlam = P[:, 0], P[:, 1] - lam0
        h = np.sin((phi - phi1) / 2) ** 2 + np.cos(phi) * np.cos(phi1) * np.sin(dlam / 2) ** 2
        c = 2 * np.arcsin(np.sqrt(np.clip(h, 0.0, 1.0)))
        with np.errstate(invalid="ignore", divide="ignore"):
            k = np.where(c > 1e-8, c / np.sin(c), 1.0 + c * c / 6.0)
        x = EARTH_RADIUS_KM * k * np.cos(phi) * np.sin(dlam)
        y = EARTH_RADIUS_KM * k * (np.cos(phi1) * np.sin(phi) - np.sin(phi1) * np.cos(phi) * np.cos(dlam))
        return np.c_[x, y]

    def inverse(self, xy: ArrayLike) -> np.ndarray:
        """(m, 2) (lat, lon) degrees of plane points (km); longitudes in [-180, 180)."""
        Z = np.atleast_2d(np.asarray(xy, dtype=float))
        x, y = Z[:, 0], Z[:, 1]
        rho = np.hypot(x, y)
        c = rho / EARTH_RADIUS_KM
        phi1, lam0 = np.radians(self.lat), np.radians(self.lon)
        with np.errstate(invalid="ignore", divide="ignore"):
            ratio = np.where(rho > 0, np.sin(c) / np.where(rho > 0, rho, 1.0), 0.0)
        phi = np.arcsin(np.clip(np.cos(c) * np.sin(phi1) + y * ratio * np.cos(phi1), -1, 1))
        lam = lam0 + np.arctan2(x * np.sin(c), rho * np.cos(phi1) * np.cos(c) - y * np.sin(phi1) * np.sin(c))
        lon = np.mod(np.degrees(lam) + 180.0, 360.0) - 180.0
        return np.c_[np.degrees(phi), lon]
