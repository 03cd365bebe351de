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

from .errors import ParameterError, ParameterTypeError, UnknownInputError

__all__ = ["MetricSpace", "EARTH_RADIUS_KM", "haversine_km", "normalize_latlon"]

#: Mean Earth radius (IUGG), the radius used by every haversine distance in the toolkit.
EARTH_RADIUS_KM = 6371.0088

#: Point metrics that satisfy the triangle inequality by construction (the O(n^3) check is skipped
#: for them; ``cdist`` also offers non-metrics such as "sqeuclidean" or "cosine", which are checked).
TRUE_METRICS = frozenset({"euclidean", "cityblock", "chebyshev", "minkowski", "haversine"})

#: Relative tolerance of the metric checks (symmetry and triangle inequality), relative to the
#: largest distance. Floating-point distances computed from coordinates are exact to ~1e-15.
METRIC_RTOL = 1e-9


def haversine_km(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    r"""Great-circle distances in km between rows of ``a`` and ``b`` (lat, lon in degrees).

    .. math:: d = 2R \arcsin\sqrt{\sin^2\frac{\Delta\phi}{2}
              + \cos\phi_1\cos\phi_2\sin^2\frac{\Delta\lambda}{2}}

    with :data:`EARTH_RADIUS_KM` as ``R``. Returns an ``len(a) x len(b)`` matrix.
    """
    a = np.radians(np.asarray(a, dtype=float))
    b = np.radians(np.asarray(b, dtype=float))
    dlat = a[:, None, 0] - b[None, :, 0]
    dlon = a[:, None, 1] - b[None, :, 1]
    h = np.sin(dlat / 2) ** 2 + np.cos(a[:, None, 0]) * np.cos(b[None, :, 0]) * np.sin(dlon / 2) ** 2
    return 2 * EARTH_RADIUS_KM * np.arcsin(np.sqrt(np.clip(h, 0.0, 1.0)))


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


class MetricSpace:
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
    """

    def __init__(self, distances, labels=None, points=None, metric: str = "precomputed"):
        D = np.array(distances, dtype=float, copy=True)
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
    def from_points(cls, points, metric: str | Callable = "euclidean", labels=None) -> MetricSpace:
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

        Raises
        ------
        mdp.errors.ParameterError
            Fewer than 2 points, NaN or infinite coordinates, latitudes outside [-90, 90] or
            longitudes outside [-180, 180] for haversine, an unknown metric name, duplicate
            points or labels (also a ``ValueError``).
        mdp.errors.ParameterTypeError
            A metric that is neither a string nor a callable.
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
        D = 0.5 * (D + D.T)
        np.fill_diagonal(D, 0.0)
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
        if not triangle:
            return
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

    # -- label handling -------------------------------------------------------------------------
    def index_of(self, x) -> np.ndarray | int:
        """Indices of points given labels or indices (scalar in, scalar out).

        Raises
        ------
        mdp.errors.UnknownInputError
            For an unknown label or an index out of range (the message names it; also a
            ``KeyError``).
        """
        scalar = np.ndim(x) == 0
        xs = np.atleast_1d(np.asarray(x, dtype=object if self.labels is not None else None))
        if self.labels is None:
            try:
                idx = xs.astype(np.int64)
            except (TypeError, ValueError):
                raise UnknownInputError(f"this space has no labels; inputs must be indices 0..{self.n - 1}, got {x!r}") from None
            if np.any(idx != xs.astype(float)) if xs.dtype.kind == "f" else False:
                raise UnknownInputError(f"indices must be integers, got {x!r}")
        else:
            if self._index is None:
                self._index = {str(lab): i for i, lab in enumerate(self.labels.tolist())}
            idx = np.empty(len(xs), dtype=np.int64)
            for k, item in enumerate(xs.tolist()):
                if isinstance(item, (int, np.integer)) and not isinstance(item, bool) and str(item) not in self._index:
                    idx[k] = item
                    continue
                try:
                    idx[k] = self._index[str(item)]
                except KeyError:
                    raise UnknownInputError(f"unknown label {item!r}: not in this space of {self.n} points") from None
        if np.any((idx < 0) | (idx >= self.n)):
            bad = idx[(idx < 0) | (idx >= self.n)][0]
            raise UnknownInputError(f"index {int(bad)} out of range for a space of {self.n} points")
        return int(idx[0]) if scalar else idx

    def label_of(self, idx):
        """Labels of indices (indices themselves when the space has no labels)."""
        idx = np.asarray(idx)
        if self.labels is None:
            return idx.item() if idx.ndim == 0 else idx
        out = self.labels[idx]
        return out.item() if np.ndim(out) == 0 else out

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
