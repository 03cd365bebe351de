"""Readers for location check-in logs: SNAP Gowalla/Brightkite and Foursquare TSMC2014.

Check-ins are the second kind of location data the geolocation release (Imola et al. 2022,
section 5.1) applies to: :func:`geo.popular.popular_cells` treats each user's check-ins as one
trace. Both layouts are the original downloads, tab-separated, without a header, plain or
gzip-compressed (detected from the content; a ``.gz`` name on plain data is refused):

``format="snap"`` - SNAP ``loc-gowalla_totalCheckins.txt(.gz)``, ``loc-brightkite_totalCheckins``
(Cho, Myers, Leskovec, KDD 2011), 5 fields::

    user  check-in time (ISO 8601, UTC, e.g. 2010-10-19T23:55:27Z)  latitude  longitude  location id

``format="foursquare"`` - ``dataset_TSMC2014_NYC.txt`` / ``dataset_TSMC2014_TKY.txt``
(Yang et al., IEEE TSMC 2014), 8 fields::

    user id  venue id  venue category id  venue category name  latitude  longitude
    timezone offset (minutes)  UTC time (e.g. Tue Apr 03 18:00:09 +0000 2012)

``format="auto"`` picks the layout from the number of fields on the first line (5 or 8).
"""

from __future__ import annotations

import csv
import os
from datetime import datetime
from pathlib import Path

import numpy as np
import pandas as pd

from mdp.errors import FileFormatError, MissingFileError, ParameterError
from mdp.io import open_binary, open_text

__all__ = ["read_checkins", "CHECKIN_COLUMNS", "CHECKIN_FORMATS"]

#: Columns common to every format, in this order (format-specific columns follow).
CHECKIN_COLUMNS = ["user", "datetime", "lat", "lon", "venue"]

_LAYOUTS = {
    "snap": {
        "fields": ["user", "time", "lat", "lon", "venue"],
        "dtypes": {"user": "int64", "time": str, "lat": float, "lon": float, "venue": str},
        "time_format": "%Y-%m-%dT%H:%M:%SZ",
        "extra": [],
    },
    "foursquare": {
        "fields": ["user", "venue", "category_id", "category", "lat", "lon", "tz_offset_min", "time"],
        "dtypes": {"user": "int64", "venue": str, "category_id": str, "category": str,
                   "lat": float, "lon": float, "tz_offset_min": "int64", "time": str},
        "time_format": "%a %b %d %H:%M:%S %z %Y",
        "extra": ["category_id", "category", "tz_offset_min"],
    },
}

#: Supported ``format`` values.
CHECKIN_FORMATS = ("snap", "foursquare", "auto")


_INT64 = (-(2**63), 2**63 - 1)


def _detect(path: Path) -> str:
    with open_text(path, errors="replace", what="check-in file") as fh:
        for line in fh:
            if line.strip():
                n = len(line.rstrip("\r\n").split("\t"))
                for name, layout in _LAYOUTS.items():
                    if n == len(layout["fields"]):
                        return name
                raise FileFormatError(path, f"cannot detect the check-in format from {n} "
                                            "tab-separated fields (snap has 5, foursquare 8)",
                                      line=fh.lineno)
    raise FileFormatError(path, "no check-ins (empty file)")


def _bad_line(parts: list[str], line: str, fmt: str) -> str | None:
    """What is wrong with one line split into fields, or None."""
    layout = _LAYOUTS[fmt]
    fields = layout["fields"]
    if len(parts) != len(fields):
        return (f"expected {len(fields)} tab-separated fields for format {fmt!r} "
                f"({', '.join(fields)}), got {len(parts)}: {line!r}")
    empty = [fields[i] for i, x in enumerate(parts) if not x.strip()]
    if empty:
        return f"empty field(s) {', '.join(empty)}: {line!r}"
    for i, f in enumerate(fields):
        if layout["dtypes"][f] != "int64":
            continue
        try:
            value = int(parts[i])
        except ValueError:
            return f"{f} must be an integer, got {parts[i]!r}"
        if not _INT64[0] <= value <= _INT64[1]:
            return f"{f} {parts[i].strip()} does not fit in a 64-bit integer"
    try:
        lat, lon = float(parts[fields.index("lat")]), float(parts[fields.index("lon")])
    except ValueError:
        return f"non-numeric latitude/longitude field: {line!r}"
    if not (np.isfinite(lat) and np.isfinite(lon) and abs(lat) <= 90 and abs(lon) <= 180):
        return f"coordinates out of range (|lat| <= 90, |lon| <= 180): {line!r}"
    time = parts[fields.index("time")]
    try:
        datetime.strptime(time.strip(), layout["time_format"])
    except ValueError:
        return f"time {time!r} does not match {layout['time_format']!r}"
    return None


def _malformed(path: Path, fmt: str, detail: str = "") -> FileFormatError:
    """Locate the first bad line by a strict scan (only run after the fast parse failed)."""
    with open_text(path, errors="replace", what="check-in file") as fh:
        for line in fh:
            line = line.rstrip("\r\n")
            if not line.strip():
                continue
            reason = _bad_line(line.split("\t"), line, fmt)
            if reason is not None:
                return FileFormatError(path, reason, line=fh.lineno)
    return FileFormatError(path, f"malformed check-in file for format {fmt!r}"
                                 + (f" ({detail})" if detail else ""))


def read_checkins(path: str | os.PathLike, format: str = "snap") -> pd.DataFrame:
    """Read a check-in log (see the module docstring for the layouts).

    Parameters
    ----------
    path : path-like
        The original file, plain or ``.gz``.
    format : {"snap", "foursquare", "auto"}, default "snap"

    Returns
    -------
    DataFrame with columns ``user`` (int64), ``datetime`` (UTC, tz-aware), ``lat``, ``lon``
    (degrees), ``venue`` (str: SNAP location id / Foursquare venue id), then for Foursquare
    ``category_id``, ``category``, ``tz_offset_min``. One row per check-in in file order.
    Text is decoded as UTF-8; undecodable bytes (some venue category names) become U+FFFD.

    Raises
    ------
    ValueError
        For an unknown ``format``.
    FileFormatError
        For a malformed file: the message names the file and the first bad line (field count,
        non-integer or out-of-range user id, non-numeric or out-of-range coordinates, bad time),
        or says the file is not readable (truncated or corrupt gzip data, a ``.gz`` name on
        data that is not gzip).
    mdp.errors.MissingFileError
        When ``path`` does not exist.
    """
    if format not in CHECKIN_FORMATS:
        raise ParameterError(f"format must be one of {CHECKIN_FORMATS}, got {format!r}")
    path = Path(path)
    if not path.is_file():
        raise MissingFileError(f"no check-in file at {path}")
    fmt = _detect(path) if format == "auto" else format
    layout = _LAYOUTS[fmt]
    try:
        with open_binary(path, what="check-in file") as fh:
            df = pd.read_csv(fh, sep="\t", header=None, names=layout["fields"], dtype=layout["dtypes"],
                             encoding="utf-8", encoding_errors="replace", quoting=csv.QUOTE_NONE,
                             engine="c")
    except FileFormatError:
        raise
    except pd.errors.EmptyDataError:
        raise FileFormatError(path, "no check-ins (empty file)") from None
    except (pd.errors.ParserError, ValueError, TypeError, OverflowError) as exc:
        raise _malformed(path, fmt, str(exc).strip()) from None
    if len(df) == 0:
        raise FileFormatError(path, "no check-ins (empty file)")
    when = pd.to_datetime(df["time"].str.strip(), format=layout["time_format"], utc=True, errors="coerce")
    coords = df[["lat", "lon"]].to_numpy()
    if (when.isna().any() or df[layout["fields"]].isna().any().any() or not np.all(np.isfinite(coords))
            or (np.abs(coords[:, 0]) > 90).any() or (np.abs(coords[:, 1]) > 180).any()):
        raise _malformed(path, fmt)
    out = pd.DataFrame({"user": df["user"].to_numpy(), "datetime": when, "lat": coords[:, 0],
                        "lon": coords[:, 1], "venue": df["venue"]})
    for col in layout["extra"]:
        out[col] = df[col].to_numpy() if col == "tz_offset_min" else df[col]
    return out
