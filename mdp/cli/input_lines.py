"""The lines ``mdp privatize`` reads: one output line per input line.

Positional inputs and stdin lines are read the same way, line by line:

- a blank line gives a blank line;
- a first non-blank line that is a header matching the space's columns (``lat,lon`` names on a
  location space; as many non-numeric fields as coordinates, optionally one more for labels,
  on a space of points) is skipped and printed back as is, so the output is the same table;
- on a space of points, a line of coordinates, separated by commas or white space (with an
  optional leading label column, as the CSV ``mdp build`` read), is a point: locations go to the
  ``lat,lon`` input format of the location package, planar points to their nearest point of the
  space (refused beyond the largest nearest-neighbour distance unless ``snap``), and the output
  line is the released point's coordinates;
- any other line is a label, an index or text, privatized by :func:`mdp.privatize.privatize_inputs`.

A malformed line is refused with its 1-based line number and what is wrong ("not a number",
"2 columns expected"), never its content: the inputs are private.
"""

from __future__ import annotations

import re

import numpy as np
from scipy.spatial.distance import cdist

from ..errors import ParameterError
from ..io import latlon_columns
from ..mechanism import Mechanism
from ..privatize import privatize_inputs
from ..validation import check_rng

__all__ = ["privatize_lines"]

_SPLIT = re.compile(r"\s*,\s*|\s+")


def _fields(line: str) -> list[str]:
    return [f for f in _SPLIT.split(line.strip()) if f != ""]


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _is_index(text: str) -> bool:
    try:
        int(text)
    except ValueError:
        return False
    return True


def _is_header(mech: Mechanism, fields: list[str]) -> bool:
    space = mech.space
    if space.points is None or any(_number(f) is not None for f in fields):
        return False
    if space.metric == "haversine":
        return latlon_columns(fields) is not None
    d = space.points.shape[1]
    return len(fields) in (d, d + 1) and d >= 2


def _coordinates(mech: Mechanism, fields: list[str], lineno: int) -> np.ndarray | None:
    """The point a line gives, None when the line is a label, index or text (not a point)."""
    space = mech.space
    if space.points is None:
        return None
    d = space.points.shape[1]
    coords = fields[1:] if len(fields) == d + 1 and _number(fields[0]) is None else fields
    numeric = [_number(f) for f in coords]
    looks_like_point = len(fields) >= 2 and sum(v is not None for v in numeric) >= 1
    if space.labels is not None and space.metric != "haversine":
        # a labelled space takes labels and text too: only an all-numeric row is a point
        looks_like_point = len(fields) >= 2 and all(v is not None for v in numeric)
    if not looks_like_point:
        if space.labels is None and len(fields) >= 2:
            raise ParameterError(f"line {lineno}: not a number")
        if space.labels is None and len(fields) == 1 and d >= 2 and not _is_index(fields[0]):
            raise ParameterError(f"line {lineno}: {d} columns expected, got 1 (or an index in "
                                 f"0..{space.n - 1})")
        return None
    if len(coords) != d:
        raise ParameterError(f"line {lineno}: {d} columns expected, got {len(coords)}")
    if any(v is None for v in numeric):
        raise ParameterError(f"line {lineno}: not a number")
    values = np.array(numeric, dtype=float)
    if not np.all(np.isfinite(values)):
        raise ParameterError(f"line {lineno}: not a finite number")
    if space.metric == "haversine" and (abs(values[0]) > 90 or abs(values[1]) > 180):
        raise ParameterError(f"line {lineno}: not a (lat, lon) in degrees "
                             "(|lat| <= 90, |lon| <= 180)")
    return values


def _nearest_points(mech: Mechanism, P: np.ndarray, lines: list[int], *, snap: bool,
                    max_distance: float | None) -> np.ndarray:
    """Index of the nearest point of the space for each planar point (refusing far ones)."""
    space = mech.space
    if not isinstance(space.metric, str) or space.metric in ("precomputed", "callable"):
        raise ParameterError("this mechanism's space has no metric for coordinates; give "
                             "labels or indices")
    try:
        D = cdist(P, np.asarray(space.points), metric=space.metric)
    except ValueError:
        raise ParameterError(f"this mechanism's metric {space.metric!r} cannot place "
                             "coordinates; give labels or indices") from None
    idx = np.argmin(D, axis=1)
    if snap:
        return idx
    if max_distance is None:
        within = space.distances + np.diag(np.full(space.n, np.inf))
        max_distance = float(np.max(np.min(within, axis=1)))
    near = D[np.arange(len(P)), idx]
    far = np.flatnonzero(near > max_distance)
    if far.size:
        k = int(far[0])
        raise ParameterError(
            f"line {lines[k]}: the point is {near[k]:.4g} from the nearest point of the "
            f"mechanism's space, farther than {max_distance:.4g} (--max-snap-km); it is outside "
            "the area the mechanism covers (--snap takes the nearest point anyway)")
    return idx


def _format_point(values) -> str:
    return ",".join(f"{float(v):.10g}" for v in values)


def privatize_lines(mech: Mechanism, lines: list[str], *, rng=None, snap: bool = False,
                    max_snap_km: float | None = None, oov: str | None = None,
                    keep_words=None) -> list[str]:
    """``mdp privatize``: one output line per input line (see the module docstring).

    Parameters
    ----------
    mech : Mechanism
    lines : list of str
        Input lines (without their line ends); positional inputs are lines too.
    rng : None, int or numpy.random.Generator
    snap, max_snap_km
        Points farther than ``max_snap_km`` (km for locations, the space's units otherwise;
        default: the space's largest nearest-neighbour distance) from every point of the space
        are refused unless ``snap``.
    oov : str, optional
        Text inputs: what happens to words outside the space (see :func:`text.privatize`).
    keep_words : None, "stop_words" or list of str
        Text inputs: words released unchanged, unprotected (see :func:`text.privatize`).

    Raises
    ------
    mdp.errors.ParameterError
        A malformed line (the message gives its 1-based number and what is wrong, not its
        content), or a point outside the space's area.
    """
    rng = check_rng(rng)
    out: list[str | None] = [None] * len(lines)
    points, point_rows, labelled, items, item_rows = [], [], [], [], []
    first = True
    for k, line in enumerate(lines):
        if not line.strip():
            out[k] = ""
            continue
        fields = _fields(line)
        if first and _is_header(mech, fields):
            out[k] = line
            first = False
            continue
        first = False
        values = _coordinates(mech, fields, k + 1)
        if values is None:
            items.append(line.strip())
            item_rows.append(k)
        else:
            points.append(values)
            point_rows.append(k)
            labelled.append(len(fields) == len(values) + 1)
    if points:
        P = np.array(points)
        if mech.space.metric == "haversine":
            # the location package's input format (snapping rules of geo.locations)
            canonical = [f"{lat:.12f},{lon:.12f}" for lat, lon in P]
            released = privatize_inputs(mech, canonical, rng=rng, snap=snap or None,
                                        max_snap_km=max_snap_km,
                                        line_numbers=[r + 1 for r in point_rows])
        else:
            idx = _nearest_points(mech, P, [r + 1 for r in point_rows], snap=snap,
                                  max_distance=max_snap_km)
            drawn = mech.sample_indices(np.asarray(idx, dtype=np.int64), rng)
            # a row with a label column gets the released point's label too (the same table)
            names = mech.space.labels
            released = [(f"{names[j]}," if names is not None and lab else "")
                        + _format_point(mech.space.points[j])
                        for j, lab in zip(drawn, labelled, strict=True)]
        for k, text in zip(point_rows, released, strict=True):
            out[k] = text
    if items:
        released = privatize_inputs(mech, items, rng=rng, oov=oov, keep_words=keep_words)
        for k, text in zip(item_rows, released, strict=True):
            out[k] = text
    return [str(o) for o in out]
