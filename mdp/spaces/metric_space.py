"""Finite metric spaces: the domain every mechanism is built on.

A :class:`MetricSpace` holds ``n >= 2`` points, their ``n x n`` distance matrix ``D`` and
optional labels (words, cell ids) and coordinates. Construction validates that ``D`` is a
metric: finite, symmetric, zero diagonal, non-negative and satisfying the triangle inequality
``D[u, w] <= D[u, v] + D[v, w]`` up to a relative tolerance (Imola et al. 2022, section 2).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.sparse.csgraph import shortest_path
from scipy.spatial.distance import cdist

from ..errors import ParameterError, ParameterTypeError
from ..privacy.pair_kernels import distance_defects
from ..runtime.resources import check_memory, distance_matrix_bytes
from .labels import LabelIndex
from .resolution import RESOLUTION, check_resolution

__all__ = ["MetricSpace", "EARTH_RADIUS_KM", "haversine_km", "normalize_latlon"]

#: Mean Earth radius (IUGG), the radius used by every haversine distance in the toolkit.
EARTH_RADIUS_KM = 6371.0088

#: Point metrics that satisfy the triangle inequality by construction (the O(n^3) check is skipped
#: for them; ``cdist`` also offers non-metrics such as "sqeuclidean" or "cosine", which are checked).
TRUE_METRICS = frozenset({"euclidean", "cityblock", "chebyshev", "minkowski", "haversine"})

#: Relative tolerance of the metric checks (symmetry and triangle inequality), relative to the
#: largest distance. Floating-point distances computed from coordinates are exact to ~1e-15.
METRIC_RTOL = 1e-9


def _sincosd(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sine and cosine of ``x`` degrees with exact argument reduction.

    ``x - 90 q`` for the nearest quadrant ``q`` is exact in float64 (the two are within a
    factor 2, Sterbenz), so ``cos(89.9999999999)`` keeps its relative accuracy where
    ``cos(radians(89.9999999999))`` loses most of it to the rounding of ``pi / 2``.
    """
    q = np.round(x / 90.0)
    r = np.radians(x - 90.0 * q)
    s, c = np.sin(r), np.cos(r)
    k = np.mod(q, 4.0)
    sin = np.select([k == 0, k == 1, k == 2], [s, c, -s], -c)
    cos = np.select([k == 0, k == 1, k == 2], [c, -s, -c], s)
    return sin, cos


def _angle_difference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``b - a`` in degrees reduced to ``[-180, 180]``, accurate across the antimeridian.

    The difference is split into its float64 sum and rounding error (Knuth's two-sum); the sum
    is reduced exactly (``fmod`` is exact) before the error is added back, so ``-179.9999999``
    minus ``179.9999999`` keeps its relative accuracy.
    """
    s = b - a
    bb = s - b
    t = (b - (s - bb)) + (-a - bb)          # s + t == b - a exactly
    d = np.fmod(s, 360.0)
    d = np.where(d > 180.0, d - 360.0, np.where(d < -180.0, d + 360.0, d))
    return d + t


def haversine_km(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    r"""Great-circle distances in km between rows of ``a`` and ``b`` (lat, lon in degrees).

    The central angle is computed in the form that stays accurate at every distance, near the
    poles and across the antimeridian (Vincenty's spherical formula, as in GeographicLib):

    .. math:: \sigma = \operatorname{atan2}\Big(\sqrt{(\cos\phi_2 \sin\Delta\lambda)^2
              + (\sin(\phi_2 - \phi_1) + 2 \sin\phi_1 \cos\phi_2 \sin^2\tfrac{\Delta\lambda}{2})^2},\;
              \cos(\phi_2 - \phi_1) - 2 \cos\phi_1 \cos\phi_2 \sin^2\tfrac{\Delta\lambda}{2}\Big)

    with sines and cosines of degrees reduced exactly (so ``cos phi`` near a pole keeps its
    relative accuracy) and ``Delta lambda`` reduced across the antimeridian without
    cancellation; ``d = R sigma`` with :data:`EARTH_RADIUS_KM` as ``R``. It is the haversine
    distance, free of the haversine formula's losses (``arcsin`` near antipodes, ``cos`` of
    radians near the poles: up to 26% at 1e-12 km). Returns an ``len(a) x len(b)`` matrix.
    """
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    lat1, lon1 = a[:, None, 0], a[:, None, 1]
    lat2, lon2 = b[None, :, 0], b[None, :, 1]
    s1, c1 = _sincosd(lat1)
    s2, c2 = _sincosd(lat2)
    dlam = _angle_difference(lon1, lon2)
    sl, _ = _sincosd(dlam)
    sh, _ = _sincosd(dlam / 2.0)
    sd, cd = _sincosd(_angle_difference(lat1, lat2))
    hav = 2.0 * sh * sh
    y = np.hypot(c2 * sl, sd + s1 * c2 * hav)
    x = cd - c1 * c2 * hav
    return EARTH_RADIUS_KM * np.arctan2(y, x)


def normalize_latlon(points: np.ndarray) -> np.ndarray:
    """(lat, lon) in degrees with one spelling per location on the sphere.

    Longitudes are mapped to ``[-180, 180)`` (so ``180`` and ``-180`` are the same point) and
    set to 0 at the poles (``|lat| = 90``), where every longitude names the same point. Without
    this, such duplicates get a spurious distance of about ``1e-12`` km from rounding, a
    near-duplicate pair that no finite-precision mechanism can separate at any useful epsilon;
    with it they are exact duplicates, which :class:`MetricSpace` refuses with a clear message.
    """
    P = np.array(points, dtype=float, copy=True)
    # only the spellings that change: arithmetic on the others could move them by an ulp
    P[:, 1] = np.where(P[:, 1] >= 180.0, np.mod(P[:, 1] + 180.0, 360.0) - 180.0, P[:, 1])
    P[:, 1] = np.where(P[:, 1] < -180.0, np.mod(P[:, 1] + 180.0, 360.0) - 180.0, P[:, 1])
    P[np.abs(P[:, 0]) == 90.0, 1] = 0.0
    return P


def _check_labels(labels, n: int) -> np.ndarray | None:
    if labels is None:
        return None
    labels = np.asarray(list(labels) if not isinstance(labels, np.ndarray) else labels)
    if labels.ndim != 1 or labels.shape[0] != n:
        raise ParameterError(f"labels must have length n={n}, got shape {labels.shape}")
    if labels.dtype == object:
        labels = labels.astype(str)
    if len(np.unique(labels)) != n:
        values, counts = np.unique(labels, return_counts=True)
        raise ParameterError(f"labels must be unique, got duplicates {values[counts > 1][:5].tolist()}")
    return labels


class MetricSpace(LabelIndex):
    """A finite metric space ``(W, d)`` with ``n >= 2`` points.

    Build it with :meth:`from_points` or :meth:`from_distances`; both validate the metric.

    Attributes
    ----------
    n : int
        Number of points.
    distances : ndarray of shape (n, n)
        The distance matrix ``D`` (read-only).
    labels : ndarray of shape (n,) or None
        Unique labels (words, cell ids); ``None`` means points are named by index.
    points : ndarray of shape (n, d) or None
        Coordinates when built from points, else ``None``.
    metric : str
        ``"euclidean"``, ``"haversine"``, a callable's name, or ``"precomputed"``.
    source : str or None
        The named embedding the points are vectors of (``"glove"``; set by the embeddings'
        loaders in ``text``), which a mechanism file records and loading checks
        (:mod:`mdp.privacy.provenance`); ``None`` for every other space.
    """

    source: str | None = None

    def __init__(self, distances, labels=None, points=None, metric: str = "precomputed"):
        # a read-only float64 array that owns its data (from_points makes one) is kept as it
        # is: an n x n copy less
        own = (isinstance(distances, np.ndarray) and distances.dtype == np.float64
               and not distances.flags.writeable and distances.flags.owndata)
        D = distances if own else np.array(distances, dtype=float, copy=True)
        self._check_distances(D, triangle=metric not in TRUE_METRICS)
        D.setflags(write=False)
        self.distances = D
        self.n = int(D.shape[0])
        self.labels = _check_labels(labels, self.n)
        if points is not None:
            points = np.array(points, dtype=float, copy=True)
            points.setflags(write=False)
        self.points = points
        self.metric = metric
        self._index = None

    # -- constructors -------------------------------------------------------------------------
    @classmethod
    def from_points(cls, points, metric: str | Callable = "euclidean", labels=None, *,
                    resolution: float = RESOLUTION, max_memory: int | None = None) -> MetricSpace:
        """Build a space from coordinates.

        Parameters
        ----------
        points : array-like of shape (n, d)
            Coordinates. For ``metric="haversine"`` columns are (lat, lon) in degrees; they are
            stored normalised (:func:`normalize_latlon`: longitude in ``[-180, 180)``, 0 at
            the poles).
        metric : {"euclidean", "haversine"} or callable, default "euclidean"
            Any metric name accepted by :func:`scipy.spatial.distance.cdist`, ``"haversine"``
            (great-circle km), or a callable ``f(a, b) -> float``.
        labels : sequence, optional
            Unique labels of length n.
        resolution : float, default :data:`mdp.spaces.resolution.RESOLUTION` (2^-40), keyword-only
            Distinct points closer than ``resolution`` times the space's scale are refused as
            the same location up to rounding (:func:`mdp.spaces.resolution.check_resolution`), with
            the advice to merge them; 0 accepts them (for tests of the arithmetic itself).
        max_memory : int or None, keyword-only
            Limit in bytes on the distance matrices built, checked from ``n`` before any is
            allocated (:func:`mdp.runtime.resources.check_memory`; None: half the physical memory).

        Raises
        ------
        mdp.errors.ParameterError
            Fewer than 2 points, NaN or infinite coordinates, latitudes outside [-90, 90] or
            longitudes outside [-180, 180] for haversine, an unknown metric name, duplicate
            points or labels, two points closer than the resolution (also a ``ValueError``).
        mdp.errors.ParameterTypeError
            A metric that is neither a string nor a callable.
        mdp.errors.ResourceLimitError
            The distance matrices would exceed ``max_memory``.
        """
        try:
            P = np.asarray(points, dtype=float)
        except (TypeError, ValueError) as exc:
            raise ParameterError(f"points must be numbers in an (n, d) array: {exc}") from None
        if P.ndim != 2:
            raise ParameterError(f"points must be a 2-D array (n, d), got shape {P.shape}")
        if P.shape[0] < 2:
            raise ParameterError(f"a metric space needs at least 2 points, got {P.shape[0]}")
        if not np.all(np.isfinite(P)):
            raise ParameterError("points must be finite (found NaN or inf)")
        check_memory(distance_matrix_bytes(P.shape[0]),
                     f"a metric space of {P.shape[0]:,} points", max_memory)
        if callable(metric):
            D = cdist(P, P, metric=metric)
            name = getattr(metric, "__name__", "callable")
        elif metric == "haversine":
            if P.shape[1] != 2:
                raise ParameterError(f"haversine needs (lat, lon) columns, got {P.shape[1]} columns")
            if np.any(np.abs(P[:, 0]) > 90) or np.any(np.abs(P[:, 1]) > 180):
                raise ParameterError("haversine points must be (lat, lon) in degrees: |lat| <= 90, |lon| <= 180")
            P = normalize_latlon(P)
            D = haversine_km(P, P)
            name = "haversine"
        elif isinstance(metric, str):
            try:
                D = cdist(P, P, metric=metric)
            except ValueError as exc:
                raise ParameterError(f"unknown metric {metric!r}: {exc}") from None
            name = metric
        else:
            raise ParameterTypeError(f"metric must be a string or a callable, got {type(metric).__name__}")
        D += D.T              # 0.5 (D + D.T), in place: the same floats, one n x n array less
        D *= 0.5
        np.fill_diagonal(D, 0.0)
        check_resolution(P, D, name, resolution)
        D.setflags(write=False)
        return cls(D, labels=labels, points=P, metric=name)

    @classmethod
    def from_distances(cls, D, labels=None) -> MetricSpace:
        """Build a space from a precomputed distance matrix (validated)."""
        return cls(D, labels=labels, metric="precomputed")

    # -- validation -----------------------------------------------------------------------------
    @staticmethod
    def _check_distances(D: np.ndarray, triangle: bool = True) -> None:
        if D.ndim != 2 or D.shape[0] != D.shape[1]:
            raise ParameterError(f"distances must be a square matrix, got shape {D.shape}")
        n = D.shape[0]
        if n < 2:
            raise ParameterError(f"a metric space needs at least 2 points, got {n}")
        valid, asym_max, _, top = distance_defects(np.ascontiguousarray(D))
        if valid and not asym_max > METRIC_RTOL * max(float(top), 1e-300):
            # one compiled pass found the entries finite, the diagonal zero, the rest positive
            # and the matrix symmetric within the tolerance (no n x n temporaries): every
            # check below would pass, only the triangle inequality is left
            if triangle:
                MetricSpace._check_triangle(D, max(float(top), 1e-300))
            return
        if not np.all(np.isfinite(D)):
            bad = np.argwhere(~np.isfinite(D))[0]
            raise ParameterError(f"distances must be finite, got {D[tuple(bad)]} at {tuple(int(i) for i in bad)}")
        if np.any(D < 0):
            bad = np.argwhere(D < 0)[0]
            raise ParameterError(f"distances must be non-negative, got {D[tuple(bad)]} at {tuple(int(i) for i in bad)}")
        if np.any(np.diag(D) != 0):
            i = int(np.flatnonzero(np.diag(D) != 0)[0])
            raise ParameterError(f"distances must have a zero diagonal, got D[{i},{i}] = {D[i, i]}")
        scale = max(float(D.max()), 1e-300)
        asym = np.abs(D - D.T)
        if asym.max() > METRIC_RTOL * scale:
            i, j = np.unravel_index(np.argmax(asym), D.shape)
            raise ParameterError(
                f"distances must be symmetric, got D[{i},{j}] = {D[i, j]} != D[{j},{i}] = {D[j, i]}")
        off = D + np.eye(n) * scale
        if np.any(off[np.triu_indices(n, 1)] == 0):
            i, j = np.argwhere(np.triu(off == 0, 1))[0]
            raise ParameterError(
                f"distinct points must have positive distance, got D[{i},{j}] = 0: points {i} and "
                f"{j} are duplicates (the same location); merge them into one point")
        if triangle:
            MetricSpace._check_triangle(D, scale)

    @staticmethod
    def _check_triangle(D: np.ndarray, scale: float) -> None:
        # Triangle inequality holds iff every shortest path (Floyd-Warshall in compiled code,
        # O(n^3) but ~3x faster than a numpy min-plus product) is the direct distance.
        shortest = shortest_path(D, method="FW", directed=False)
        viol = D - shortest
        if viol.max() > METRIC_RTOL * scale:
            u, w = np.unravel_index(np.argmax(viol), viol.shape)
            v = int(np.argmin(D[u, :] + D[:, w]))
            raise ParameterError(
                f"distances violate the triangle inequality: D[{u},{w}] = {D[u, w]:.6g} > "
                f"D[{u},{v}] + D[{v},{w}] = {D[u, v] + D[v, w]:.6g}")

    @property
    def diameter(self) -> float:
        """Largest distance in the space."""
        return float(self.distances.max())

    @property
    def median_distance(self) -> float:
        """Median distance over the pairs of distinct points."""
        return float(np.median(self.distances[np.triu_indices(self.n, 1)]))

    def __len__(self) -> int:
        return self.n

    def __repr__(self) -> str:
        dims = "" if self.points is None else f", dim={self.points.shape[1]}"
        lab = "" if self.labels is None else f", labels=[{', '.join(map(str, self.labels[:3]))}{', ...' if self.n > 3 else ''}]"
        return f"MetricSpace(n={self.n}, metric={self.metric!r}{dims}, diameter={self.diameter:.4g}{lab})"
