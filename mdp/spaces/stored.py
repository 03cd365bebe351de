"""The metric space of a mechanism file, rebuilt from what the file holds.

A mechanism's privacy is checked against the distances of its space, so a file's distances are
never taken on its word: when the file holds points, the distances are recomputed from the
points and the stored metric name, and the stored matrix of distances must agree with them.
Only a file without points may carry a ``"precomputed"`` matrix of distances (there is nothing
to recompute it from; such a file is a mechanism for exactly the space it states).

The metric name must be one of :data:`FILE_METRICS`: metrics whose distance between two points
depends on those two points only. Metrics scaled by statistics of the whole point set
(``"seuclidean"``, ``"mahalanobis"``) and callables are refused: a file could otherwise rescale
its distances by renaming its metric and lower its ``epsilon`` to match.
"""

from __future__ import annotations

import os

import numpy as np

from ..errors import FileFormatError
from .metric_space import MetricSpace

__all__ = ["FILE_METRICS", "space_from_file"]

#: Metric names a mechanism file with points may state (``scipy.spatial.distance.cdist`` names
#: whose value depends on the two points alone, and ``"haversine"``).
FILE_METRICS = frozenset({"euclidean", "haversine", "cityblock", "chebyshev", "minkowski",
                          "sqeuclidean", "cosine", "correlation", "braycurtis", "canberra",
                          "jensenshannon"})

#: Relative agreement required between stored and recomputed distances (float64 rounding of
#: the same formula, e.g. on another machine's libm, stays far below it).
DISTANCE_RTOL = 1e-9


def space_from_file(path: str | os.PathLike, data: dict, meta: dict) -> MetricSpace:
    """The space of a mechanism file: distances recomputed from its points and metric.

    Parameters
    ----------
    path : path-like
        The file (for messages).
    data : dict of ndarray
        The file's arrays (``distances``; optional ``points`` and ``labels``).
    meta : dict
        The file's metadata (``metric``).

    Returns
    -------
    MetricSpace
        Built from the stored points with the stored metric (the stored distances must agree
        within :data:`DISTANCE_RTOL`), or, for a file without points, from the stored
        ``"precomputed"`` distances (validated as a metric).

    Raises
    ------
    FileFormatError
        A metric that is not a string, not one of :data:`FILE_METRICS` for a file with points,
        ``"precomputed"`` beside points, a metric other than ``"precomputed"`` without points,
        or distances that disagree with the points (the message names the file).
    """
    metric = meta.get("metric", "precomputed")
    if not isinstance(metric, str):
        raise FileFormatError(path, f"metadata field 'metric' must be a string, got {metric!r}")
    labels, points = data.get("labels"), data.get("points")
    if points is None:
        if metric != "precomputed":
            raise FileFormatError(path, f"metric {metric!r} cannot be recomputed: the file holds "
                                        "no points (only 'precomputed' distances may stand alone)")
    elif metric == "precomputed":
        raise FileFormatError(path, "metric 'precomputed' beside stored points: the distances of "
                                    "a file with points are always recomputed from them, so the "
                                    "file must name their metric")
    elif metric not in FILE_METRICS:
        raise FileFormatError(path, f"metric {metric!r} is not one a mechanism file may state "
                                    f"(one of {sorted(FILE_METRICS)})")
    try:
        if points is None:
            return MetricSpace(data["distances"], labels=labels, metric="precomputed")
        space = MetricSpace.from_points(points, metric=metric, labels=labels)
        stored = np.asarray(data["distances"])
        if stored.shape != space.distances.shape or stored.dtype.kind not in "fiu" or not np.allclose(
                stored.astype(float), space.distances, rtol=DISTANCE_RTOL, atol=0.0):
            raise FileFormatError(path, f"stored distances disagree with the {metric} distances "
                                        "of the stored points; the file was altered")
        return space
    except FileFormatError:
        raise
    except (ValueError, TypeError) as exc:
        raise FileFormatError(path, f"invalid metric space ({exc})") from None
