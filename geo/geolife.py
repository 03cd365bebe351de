"""Reader for the Microsoft Research Asia Geolife 1.3 GPS trajectories (PLT files).

The original release (``Geolife Trajectories 1.3/Data/<user>/Trajectory/<start>.plt``, 182
users, 18,670 files, 1.65 GB) is the data of the paper's geolocation experiments (imola2022,
section 5.1). Each PLT file is one trace: 6 header lines, then one point per line::

    lat,lon,0,altitude_ft,days,date,time
    39.984702,116.318417,0,492,39744.1201851852,2008-10-23,02:53:04

(``0`` is unused; ``altitude_ft`` is in feet, -777 marks an invalid altitude; ``days`` counts days
since 1899-12-30; ``date``/``time`` are GMT). :func:`iter_geolife` streams one trace at a time
so the full release never has to sit in memory; :func:`read_geolife` concatenates.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Iterator
from datetime import datetime
from pathlib import Path

import numpy as np
import pandas as pd

from mdp.errors import FileFormatError, MissingFileError, ParameterError
from mdp.io import open_binary, open_text

__all__ = ["read_plt", "iter_geolife", "read_geolife", "find_plt_files", "PLT_HEADER_LINES",
           "GEOLIFE_COLUMNS"]

#: Header lines at the top of every PLT file.
PLT_HEADER_LINES = 6

_PLT_FIELDS = ["lat", "lon", "zero", "altitude_ft", "days", "date", "time"]
_PLT_DTYPES = {"lat": float, "lon": float, "zero": float, "altitude_ft": float, "days": float,
               "date": str, "time": str}

#: Columns of the frames returned by :func:`read_plt`, :func:`iter_geolife`, :func:`read_geolife`.
GEOLIFE_COLUMNS = ["user", "trace", "datetime", "lat", "lon", "altitude_ft", "days"]


def find_plt_files(path: str | os.PathLike) -> list[tuple[str, str, Path]]:
    """List the PLT files of a Geolife tree as ``(user, trace, file)``, sorted by user then trace.

    ``path`` may be the release folder, its ``Data`` folder, one user's folder, or a single
    ``.plt`` file. A file's user is the name of the folder above its ``Trajectory`` folder ("" if
    there is none) and its trace id is the file stem (the start time, e.g. ``20081023025304``).

    Raises
    ------
    mdp.errors.MissingFileError
        When ``path`` does not exist or holds no ``.plt`` file.
    """
    path = Path(path)
    if not path.exists():
        raise MissingFileError(f"no Geolife data at {path}")
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.suffix.lower() == ".plt")
    if not files:
        raise MissingFileError(f"no .plt files under {path}")
    out = []
    for f in files:
        user = f.parent.parent.name if f.parent.name.lower() == "trajectory" else ""
        out.append((user, f.stem, f))
    out.sort(key=lambda t: (t[0], t[1]))
    return out


def _bad_line(line: str) -> str | None:
    """What is wrong with one data line of a PLT file, or None."""
    fields = line.split(",")
    if len(fields) != len(_PLT_FIELDS):
        return (f"expected {len(_PLT_FIELDS)} comma-separated fields "
                f"(lat,lon,0,altitude,days,date,time), got {len(fields)}: {line!r}")
    try:
        lat, lon, _, _, _ = (float(x) for x in fields[:5])
    except ValueError:
        return f"non-numeric lat/lon/altitude/days field: {line!r}"
    if not (np.isfinite(lat) and np.isfinite(lon) and abs(lat) <= 90 and abs(lon) <= 180):
        return f"coordinates out of range (|lat| <= 90, |lon| <= 180): {line!r}"
    try:
        datetime.strptime(f"{fields[5].strip()} {fields[6].strip()}", "%Y-%m-%d %H:%M:%S")
    except ValueError:
        return f"date/time must be YYYY-MM-DD,HH:MM:SS: {line!r}"
    return None


def _malformed(path: Path, detail: str = "") -> FileFormatError:
    """Find the first malformed line of a PLT file by a strict line-by-line scan.

    Only called after the fast pandas parse failed, so its cost does not matter.
    """
    with open_text(path, encoding="latin-1", what="PLT file") as fh:
        for line in fh:
            if fh.lineno <= PLT_HEADER_LINES or not line.strip():
                continue
            reason = _bad_line(line.rstrip("\r\n"))
            if reason is not None:
                return FileFormatError(path, reason, line=fh.lineno)
        if fh.lineno < PLT_HEADER_LINES:
            return FileFormatError(path, f"truncated PLT header: {fh.lineno} line(s), expected "
                                         f"{PLT_HEADER_LINES} header lines")
    return FileFormatError(path, "malformed PLT file" + (f" ({detail})" if detail else ""))


def _check_header(path: Path) -> None:
    """The header is 6 lines by count only: refuse a file whose 6th line has the 7 fields of a
    point (a header line is missing or joined to a point, so a point would silently be taken as
    header; the release's 6th line is ``0``) or that is shorter."""
    with open_text(path, encoding="latin-1", what="PLT file") as fh:
        for line in fh:
            if fh.lineno == PLT_HEADER_LINES:
                if len(line.split(",")) == len(_PLT_FIELDS):
                    raise FileFormatError(path, f"line {PLT_HEADER_LINES} has the "
                                                f"{len(_PLT_FIELDS)} fields of a point, expected the "
                                                f"last of {PLT_HEADER_LINES} header lines (a header "
                                                f"line is missing or joined to a point): {line!r}",
                                          line=fh.lineno)
                return
    raise _malformed(path)


def read_plt(path: str | os.PathLike, *, user: str = "", trace: str | None = None) -> pd.DataFrame:
    """Read one PLT file (one trace).

    Parameters
    ----------
    path : path-like
        The ``.plt`` file.
    user : str, default ""
        Value of the ``user`` column.
    trace : str, optional
        Value of the ``trace`` column; default: the file stem.

    Returns
    -------
    DataFrame with columns :data:`GEOLIFE_COLUMNS`: ``user``, ``trace`` (str), ``datetime``
    (datetime64, GMT, from the date and time fields), ``lat``, ``lon`` (degrees),
    ``altitude_ft``, ``days`` (float). One row per point, in file order.

    Raises
    ------
    FileFormatError
        For a malformed file: the message names the file and the first bad line (wrong number
        of fields, non-numeric values, coordinates out of range, bad date/time), or says why it
        cannot be read (e.g. truncated gzip data; PLT files may be gzip-compressed).
    """
    path = Path(path)
    try:
        with open_binary(path, what="PLT file") as fh:
            df = pd.read_csv(fh, skiprows=PLT_HEADER_LINES, header=None, names=_PLT_FIELDS,
                             dtype=_PLT_DTYPES, encoding="latin-1", engine="c")
    except FileFormatError:
        raise
    except pd.errors.EmptyDataError:
        df = pd.DataFrame({c: pd.Series(dtype=t) for c, t in _PLT_DTYPES.items()})
    except (pd.errors.ParserError, ValueError, TypeError, OverflowError) as exc:
        raise _malformed(path, str(exc).strip()) from None
    when = pd.to_datetime(df["date"].str.strip() + " " + df["time"].str.strip(),
                          format="%Y-%m-%d %H:%M:%S", errors="coerce").astype("datetime64[us]")
    numeric = df[["lat", "lon", "altitude_ft", "days"]].to_numpy()
    if (when.isna().any() or not np.all(np.isfinite(numeric))
            or (df["lat"].abs() > 90).any() or (df["lon"].abs() > 180).any()):
        raise _malformed(path)
    _check_header(path)
    return pd.DataFrame({
        "user": user, "trace": path.stem if trace is None else trace, "datetime": when,
        "lat": df["lat"].to_numpy(), "lon": df["lon"].to_numpy(),
        "altitude_ft": df["altitude_ft"].to_numpy(), "days": df["days"].to_numpy(),
    }, columns=GEOLIFE_COLUMNS)


def _wanted(users: Iterable | None):
    if users is None:
        return None
    wanted = set()
    for u in users:
        wanted.add(str(u))
        if str(u).isdigit():
            wanted.add(int(u))
    return wanted


def iter_geolife(path: str | os.PathLike, *, users: Iterable | None = None,
                 on_error: str = "raise") -> Iterator[pd.DataFrame]:
    """Stream a Geolife tree one trace (PLT file) at a time, in (user, trace) order.

    Parameters
    ----------
    path : path-like
        Release folder, ``Data`` folder, one user's folder or one ``.plt`` file
        (see :func:`find_plt_files`).
    users : iterable, optional
        Only these users (``"000"`` and ``0`` both select folder ``000``).
    on_error : {"raise", "skip"}, default "raise"
        ``"skip"`` leaves out malformed files with a warning naming file and line (useful on
        the full release); ``"raise"`` raises the :class:`ValueError` of :func:`read_plt`.

    Yields
    ------
    DataFrame
        One per trace, as returned by :func:`read_plt`.
    """
    if on_error not in ("raise", "skip"):
        raise ParameterError(f"on_error must be 'raise' or 'skip', got {on_error!r}")
    wanted = _wanted(users)
    for user, trace, f in find_plt_files(path):
        if wanted is not None and user not in wanted and not (user.isdigit() and int(user) in wanted):
            continue
        try:
            yield read_plt(f, user=user, trace=trace)
        except ValueError as exc:
            if on_error == "raise":
                raise
            warnings.warn(f"skipped malformed PLT file: {exc}", stacklevel=2)


def read_geolife(path: str | os.PathLike, *, users: Iterable | None = None,
                 on_error: str = "raise") -> pd.DataFrame:
    """Read a whole Geolife tree into one DataFrame (concatenation of :func:`iter_geolife`).

    Parameters are those of :func:`iter_geolife`. ``user`` and ``trace`` become categorical
    columns. The full release is ~24.9 M points (~1 GB in memory); to aggregate it without
    loading it, iterate with :func:`iter_geolife` (as :func:`geo.popular.popular_cells` does).

    Returns
    -------
    DataFrame with columns :data:`GEOLIFE_COLUMNS`, rows sorted by (user, trace), file order
    within a trace.
    """
    frames = list(iter_geolife(path, users=users, on_error=on_error))
    if not frames:
        raise ParameterError(f"no readable traces under {path}"
                         + ("" if users is None else f" for users {sorted(map(str, users))}"))
    df = pd.concat(frames, ignore_index=True)
    df["user"] = df["user"].astype("category")
    df["trace"] = df["trace"].astype("category")
    return df
