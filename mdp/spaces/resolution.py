"""The resolution rule: points closer than float64 rounding of their coordinates are one point.

Two coordinates a few units in the last place apart (``0.3`` and ``0.30000000000000004``) are
the same location up to rounding, yet a space built from them has a distance of about
``5.5e-17`` between them. No mechanism computed in finite precision can separate them at any
useful epsilon: the exactly sampled matrix's rows sum to 1 only within about ``1e-16``, which
over such a distance is a privacy level of several units, so every build failed late with a
:class:`~mdp.errors.PrivacyError` and no advice. The rule refuses such a pair when the space is
built, with the advice to merge them.

A distance is below the resolution when it is at most :data:`RESOLUTION` times the scale of the
space: the larger of its diameter and the largest coordinate magnitude (in the distance's unit:
degrees times the km per degree of a great circle for haversine spaces). ``RESOLUTION = 2^-40``
(about ``9e-13``) is 4,096 units in the last place: pairs one or two ulps apart are far inside,
real data (GPS at millimetres over thousands of km is ``1e-9``) far outside.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import ParameterError

__all__ = ["RESOLUTION", "check_resolution"]

#: Relative resolution of a space built from float64 coordinates (module docstring).
RESOLUTION = 2.0 ** -40
#: Kilometres per degree of a great circle on the toolkit's Earth (radius 6371.0088 km).
_KM_PER_DEGREE = 2 * math.pi * 6371.0088 / 360


def check_resolution(points: np.ndarray, distances: np.ndarray, metric: str,
                     resolution: float = RESOLUTION) -> None:
    """Refuse distinct points closer than the resolution of their coordinates.

    Parameters
    ----------
    points : ndarray (n, d)
    distances : ndarray (n, n)
        The distances computed from ``points``.
    metric : str
        The metric's name (``"haversine"`` scales degrees to km).
    resolution : float, default :data:`RESOLUTION`
        Relative resolution; 0 accepts every positive distance.

    Raises
    ------
    ParameterError
        Naming the first such pair (indices), their distance and the resolution, with the
        advice to merge them.
    """
    D = np.asarray(distances, dtype=float)
    P = np.asarray(points, dtype=float)
    magnitude = float(np.abs(P).max(initial=0.0))
    if metric == "haversine":
        magnitude *= _KM_PER_DEGREE
    scale = max(float(D.max(initial=0.0)), magnitude)
    if not (isinstance(resolution, (int, float)) and 0 <= resolution < 1):
        raise ParameterError(f"resolution must be a number in [0, 1), got {resolution!r}")
    limit = resolution * scale
    upper = np.triu(D, 1)
    close = (upper > 0) & (upper <= limit)
    if close.any():
        i, j = (int(k) for k in np.argwhere(close)[0])
        raise ParameterError(
            f"points {i} and {j} are {D[i, j]:.3g} apart, below the resolution of their float64 "
            f"coordinates ({limit:.3g} for this space): they are the same location up to "
            f"rounding, which no finite-precision mechanism can separate. Merge them (round "
            f"the coordinates, or keep one of the two)")
