"""Readers for location check-in logs: SNAP Gowalla/Brightkite and Foursquare TSMC2014.

Check-ins are the second kind of location data the geolocation release (seed imola2022,
section 5.1) applies to: :func:`geo.popular.popular_cells` treats each user's check-ins as one
trace. Both layouts are the original downloads, tab-separated, without a header, plain or
gzip-compressed (``.gz``, detected from the file name):

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
import gzip
import os
from datetime import datetime
from pathlib import Path

import numpy as np
import pandas as pd

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


def _open_text(path: Path):
    opener = gzip.open if path.suffix.lower() == ".gz" else open
    return opener(path, "rt", encoding="utf-8", errors="replace")


def _detect(path: Path) -> str:
    with _open_text(path) as fh:
        for line in fh:
            if line.strip():
                n = len(line.rstrip("\r\n").split("\t"))
                for name, layout in _LAYOUTS.items():
                    if n == len(layout["fields"]):
                        return name
                raise ValueError(f"{path}: line 1: cannot detect the check-in format from {n} "
                                 "tab-separated fields (snap has 5, foursquare 8)")
    raise ValueError(f"{path}: no check-ins (empty file)")


def _malformed(path: Path, fmt: str) -> ValueError:
    """Locate the first bad line by a strict scan (only run after the fast parse failed)."""
    layout = _LAYOUTS[fmt]
    fields = layout["fields"]
    ilat, ilon, itime = fields.index("lat"), fields.index("lon"), fields.index("time")
    integer = [i for i, f in enumerate(fields) if layout["dtypes"][f] == "int64"]
    with _open_text(path) as fh:
        for lineno, line in enumerate(fh, 1):
            line = line.rstrip("\r\n")
            if not line.strip():
                continue
            parts = line.split("\t")
            where = f"{path}: line {lineno}"
            if len(parts) != len(fields):
                return ValueError(f"{where}: expected {len(fields)} tab-separated fields for "
                                  f"format {fmt!r} ({', '.join(fields)}), got {len(parts)}: {line!r}")
            empty = [fields[i] for i, x in enumerate(parts) if not x.strip()]
            if empty:
                return ValueError(f"{where}: empty field(s) {', '.join(empty)}: {line!r}")
            try:
                for i in integer:
                    int(parts[i])
                lat, lon = float(parts[ilat]), float(parts[ilon])
            except ValueError:
                return ValueError(f"{where}: non-numeric user/latitude/longitude field: {line!r}")
            if not (np.isfinite(lat) and np.isfinite(lon) and abs(lat) <= 90 and abs(lon) <= 180):
                return ValueError(f"{where}: coordinates out of range (|lat| <= 90, |lon| <= 180): {line!r}")
            try:
                datetime.strptime(parts[itime].strip(), layout["time_format"])
            except ValueError:
                return ValueError(f"{where}: time {parts[itime]!r} does not match "
                                  f"{layout['time_format']!r}")
    return ValueError(f"{path}: malformed check-in file (no single bad line found)")


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
        For an unknown ``format``, or a malformed file: the message names the file and the
        first bad line (field count, non-numeric user/coordinates, coordinates out of range,
        bad time).
    FileNotFoundError
        When ``path`` does not exist.
    """
    if format not in CHECKIN_FORMATS:
        raise ValueError(f"format must be one of {CHECKIN_FORMATS}, got {format!r}")
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no check-in file at {path}")
    fmt = _detect(path) if format == "auto" else format
    layout = _LAYOUTS[fmt]
    try:
        df = pd.read_csv(path, sep="\t", header=None, names=layout["fields"], dtype=layout["dtypes"],
                         encoding="utf-8", encoding_errors="replace", quoting=csv.QUOTE_NONE, engine="c")
    except pd.errors.EmptyDataError:
        raise ValueError(f"{path}: no check-ins (empty file)") from None
    except (pd.errors.ParserError, ValueError, TypeError, OverflowError):
        raise _malformed(path, fmt) from None
    if len(df) == 0:
        raise ValueError(f"{path}: no check-ins (empty file)")
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
