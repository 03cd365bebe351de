"""Metric spaces of the most popular grid cells (Imola et al. 2022, section 5.1).

The paper builds its geolocation spaces "with the method of Bordenabe et al. [2014]": divide
Beijing into cells of 0.005 deg, take each Geolife trace's top 30 cells, form a histogram of top
cells across all traces, and keep the n most popular cells; distances are between cell centres.

Construction, for traces ``t`` with point counts ``count[t, c]`` per cell ``c``:

1. ``top(t)`` = the ``top_per_trace`` cells of ``t`` with the most points. Ties inside a trace
   are broken by the smaller cell id (cell id = ``row * ncols + col``, so the southern, then
   western, cell wins). Traces with fewer cells keep them all.
2. ``popularity(c) = #{t : c in top(t)}`` (a histogram over traces).
3. The space is the ``n`` cells of highest popularity, ties again broken by the smaller cell id,
   in that order (index 0 = most popular). Labels are ``"r{row}c{col}"``, ``points`` are the
   cell centres (lat, lon in degrees) and distances are great-circle km
   (:func:`mdp.spaces.metric_space.haversine_km`; the paper says "Euclidean distance between bin centers",
   the haversine distance is the faithful version in km).

Only points inside the box count; traces with no point inside are left out. With the shared
compact file and this tie-breaking the popularity of the 100th / 500th / 1000th / 2000th cell is
596 / 116 / 41 / 12 traces (breaking ties by the larger id instead gives 593 / 115 / 41 / 12).
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from mdp.errors import FileFormatError, MissingFileError, ParameterError, ParameterTypeError
from mdp.io import read_npz
from mdp.spaces.metric_space import MetricSpace
from mdp.validation import check_int, check_positive

from .grid import GEOLIFE_BEIJING_BOX, Grid

__all__ = ["popular_cells", "cell_popularity", "trace_cell_counts", "load_cell_counts",
           "space_from_spec", "COUNT_COLUMNS"]

#: Columns of a per-trace cell-count table: trace index, cell id, points of the trace in the cell.
COUNT_COLUMNS = ["trace", "cell_id", "count"]

_NPZ_KEYS = ("trace_user", "trace_start", "cell_trace", "cell_id", "cell_count", "box")


def load_cell_counts(path: str | os.PathLike) -> tuple[pd.DataFrame, Grid]:
    """Read the compact per-trace cell-count file (``geolife_beijing_cells_0p005.npz``).

    Arrays: ``trace_user``, ``trace_start`` (per trace), ``cell_trace`` (trace index),
    ``cell_id`` (``row * ncols + col``), ``cell_count`` and ``box = [lat_min, lat_max, lon_min,
    lon_max, cell_deg]`` (see ``shared/data/README.md``).

    Returns
    -------
    counts : DataFrame with columns :data:`COUNT_COLUMNS` (int64); the file's ``trace_user`` and
        ``trace_start`` are in ``counts.attrs``.
    grid : Grid of the file's box.

    Raises
    ------
    FileFormatError
        When the file is not readable (corrupt, truncated, not an archive), misses an array,
        holds arrays of the wrong kind, or indices are out of range.
    """
    path = Path(path)
    if not path.is_file():
        raise MissingFileError(f"no cell-count file at {path}")
    data = read_npz(path, required=_NPZ_KEYS, what="cell-count file")
    for k in _NPZ_KEYS:
        if data[k].ndim != 1:
            raise FileFormatError(path, f"array {k!r} must be 1-D, got shape {data[k].shape}")
    for k in ("cell_trace", "cell_id", "cell_count"):
        if data[k].dtype.kind not in "iu":
            raise FileFormatError(path, f"array {k!r} must hold integers, got dtype {data[k].dtype}")
        if data[k].dtype.kind == "u" and data[k].dtype.itemsize >= 8 and len(data[k]) \
                and data[k].max() > np.iinfo(np.int64).max:
            raise FileFormatError(path, f"array {k!r} holds values beyond the int64 range")
    if data["box"].dtype.kind not in "iuf" or len(data["box"]) != 5:
        raise FileFormatError(path, "array 'box' must be 5 numbers (lat_min, lat_max, lon_min, "
                                    f"lon_max, cell_deg), got {data['box'].tolist()!r}")
    try:
        grid = Grid.from_box(data["box"])
    except (ValueError, TypeError) as exc:
        raise FileFormatError(path, f"bad box {data['box'].tolist()}: {exc}") from None
    trace = data["cell_trace"].astype(np.int64)
    cell = data["cell_id"].astype(np.int64)
    count = data["cell_count"].astype(np.int64)
    if not (len(trace) == len(cell) == len(count)):
        raise FileFormatError(path, "cell_trace, cell_id and cell_count must have the same length, "
                                    f"got {len(trace)}, {len(cell)}, {len(count)}")
    ntraces = len(data["trace_user"])
    if len(data["trace_start"]) != ntraces:
        raise FileFormatError(path, f"trace_user and trace_start must have the same length, got "
                                    f"{ntraces} and {len(data['trace_start'])}")
    if len(trace) and (trace.min() < 0 or trace.max() >= ntraces):
        raise FileFormatError(path, f"cell_trace must index the {ntraces} traces, got max {trace.max()}")
    if len(cell) and (cell.min() < 0 or cell.max() >= grid.ncells):
        raise FileFormatError(path, f"cell_id must be < {grid.ncells} ({grid.nrows} x {grid.ncols} "
                                    f"grid), got {cell.max()}")
    if len(count) and count.min() < 1:
        raise FileFormatError(path, f"cell_count must be >= 1, got {count.min()}")
    counts = pd.DataFrame({"trace": trace, "cell_id": cell, "count": count})
    counts.attrs["trace_user"] = data["trace_user"]
    counts.attrs["trace_start"] = data["trace_start"]
    return counts, grid


def _trace_keys(frame: pd.DataFrame) -> list[str]:
    if "user" in frame.columns and "trace" in frame.columns:
        return ["user", "trace"]
    for key in ("trace", "user"):
        if key in frame.columns:
            return [key]
    raise ParameterError("a points DataFrame needs a 'trace' and/or 'user' column to group points "
                     f"into traces, got columns {list(frame.columns)}")


def trace_cell_counts(frame: pd.DataFrame, grid: Grid) -> pd.DataFrame:
    """Count each trace's points per cell of ``grid``; points outside the box are dropped.

    Parameters
    ----------
    frame : DataFrame
        Points with ``lat``, ``lon`` and trace keys: ``(user, trace)`` when both columns exist
        (Geolife), else ``trace``, else ``user`` (check-ins: a user's check-ins are one trace).
    grid : Grid

    Returns
    -------
    DataFrame with columns :data:`COUNT_COLUMNS`, sorted by (trace, cell_id); ``trace`` numbers
    the distinct keys in sorted order (0, 1, ...), including traces with no point in the box.
    """
    for col in ("lat", "lon"):
        if col not in frame.columns:
            raise ParameterError(f"a points DataFrame needs 'lat' and 'lon' columns, got {list(frame.columns)}")
    keys = _trace_keys(frame)
    codes = frame.groupby(keys, sort=True, observed=True).ngroup().to_numpy(dtype=np.int64)
    lat = frame["lat"].to_numpy(dtype=float)
    lon = frame["lon"].to_numpy(dtype=float)
    inside = grid.contains(lat, lon)
    cells = grid.cell_of(lat[inside], lon[inside])
    pairs = pd.DataFrame({"trace": codes[inside], "cell_id": cells})
    counts = pairs.groupby(["trace", "cell_id"], sort=True).size().rename("count").reset_index()
    return counts.astype(np.int64)


def _plt_cell_counts(path: Path, grid: Grid, on_error: str) -> pd.DataFrame:
    """Stream a PLT tree trace by trace (the full release never sits in memory)."""
    from .geolife import find_plt_files, iter_geolife

    parts = []
    traces = tqdm(iter_geolife(path, on_error=on_error), total=len(find_plt_files(path)),
                  desc="PLT traces", unit="trace", disable=None)
    for t, df in enumerate(traces):
        lat, lon = df["lat"].to_numpy(), df["lon"].to_numpy()
        inside = grid.contains(lat, lon)
        cells, count = np.unique(grid.cell_of(lat[inside], lon[inside]), return_counts=True)
        parts.append(pd.DataFrame({"trace": np.full(len(cells), t, dtype=np.int64),
                                   "cell_id": cells, "count": count.astype(np.int64)}))
    if not parts:
        return pd.DataFrame({c: np.empty(0, np.int64) for c in COUNT_COLUMNS})
    return pd.concat(parts, ignore_index=True)


def cell_popularity(counts: pd.DataFrame, *, top_per_trace: int = 30) -> pd.DataFrame:
    """Histogram of top cells across traces, most popular first (steps 1-2 of the module doc).

    Parameters
    ----------
    counts : DataFrame with columns :data:`COUNT_COLUMNS`
        One row per (trace, cell) with the trace's point count in the cell.
    top_per_trace : int, default 30
        Cells kept per trace (the paper's 30).

    Returns
    -------
    DataFrame with columns ``cell_id`` and ``traces`` (number of traces having the cell in their
    top ``top_per_trace``), sorted by ``traces`` descending then ``cell_id`` ascending; row ``k``
    is the ``(k+1)``-th most popular cell.
    """
    top_per_trace = check_int(top_per_trace, "top_per_trace", low=1)
    missing = [c for c in COUNT_COLUMNS if c not in counts.columns]
    if missing:
        raise ParameterError(f"counts needs columns {COUNT_COLUMNS}, missing {missing}")
    trace = counts["trace"].to_numpy(dtype=np.int64)
    cell = counts["cell_id"].to_numpy(dtype=np.int64)
    count = counts["count"].to_numpy(dtype=np.int64)
    if len(trace) == 0:
        return pd.DataFrame({"cell_id": np.empty(0, np.int64), "traces": np.empty(0, np.int64)})
    if pd.DataFrame({"t": trace, "c": cell}).duplicated().any():
        raise ParameterError("counts must have one row per (trace, cell_id) pair, found duplicates")
    # Order each trace's cells by count (desc), then cell id (asc): the documented tie-break.
    order = np.lexsort((cell, -count, trace))
    trace, cell = trace[order], cell[order]
    starts = np.flatnonzero(np.r_[True, trace[1:] != trace[:-1]])
    lengths = np.diff(np.r_[starts, len(trace)])
    rank = np.arange(len(trace)) - np.repeat(starts, lengths)
    cells, traces = np.unique(cell[rank < top_per_trace], return_counts=True)
    order = np.lexsort((cells, -traces))
    return pd.DataFrame({"cell_id": cells[order], "traces": traces[order].astype(np.int64)})


def _grid_for(box, cell_deg: float, default: Grid | None) -> Grid:
    if box is None:
        if default is None:
            raise ParameterError("box is required for this source")
        return default
    return Grid.from_box(box, cell_deg)


def _counts_and_grid(source, cell_deg: float, box, on_error: str) -> tuple[pd.DataFrame, Grid]:
    if isinstance(source, pd.DataFrame):
        if all(c in source.columns for c in COUNT_COLUMNS):
            if box is None:
                raise ParameterError("box is required when source is a cell-count table "
                                 f"(columns {COUNT_COLUMNS})")
            grid = _grid_for(box, cell_deg, None)
            cells = source["cell_id"].to_numpy()
            if len(cells) and (cells.min() < 0 or cells.max() >= grid.ncells):
                raise ParameterError(f"cell_id must be in [0, {grid.ncells}) for box {grid.box} with "
                                 f"cell_deg={grid.cell_deg}, got max {cells.max()}")
            return source[COUNT_COLUMNS], grid
        if "lat" in source.columns and "lon" in source.columns:
            if len(source) == 0:
                raise ParameterError("source DataFrame has no points")
            default = None if box is not None else Grid.covering(
                source["lat"].to_numpy(dtype=float), source["lon"].to_numpy(dtype=float), cell_deg)
            grid = _grid_for(box, cell_deg, default)
            return trace_cell_counts(source, grid), grid
        raise ParameterError("a DataFrame source needs lat/lon columns (points) or columns "
                         f"{COUNT_COLUMNS} (cell counts), got {list(source.columns)}")
    if not isinstance(source, (str, os.PathLike)):
        raise ParameterTypeError("source must be a path (PLT tree or .npz cell-count file) or a DataFrame, "
                        f"got {type(source).__name__}")
    path = Path(source)
    if path.suffix.lower() == ".npz":
        counts, file_grid = load_cell_counts(path)
        if not math.isclose(cell_deg, file_grid.cell_deg, rel_tol=1e-12):
            raise ParameterError(f"cell_deg must be the file's {file_grid.cell_deg} for {path.name}, "
                             f"got {cell_deg}")
        if box is not None and not np.allclose(np.ravel(box)[:4], file_grid.box, rtol=0, atol=1e-12):
            raise ParameterError(f"box must be None or the file's box {file_grid.box} for {path.name}, "
                             f"got {tuple(np.ravel(box).tolist())}")
        return counts, file_grid
    grid = _grid_for(box, cell_deg, Grid(*GEOLIFE_BEIJING_BOX, cell_deg))
    return _plt_cell_counts(path, grid, on_error), grid


def popular_cells(source: str | os.PathLike | pd.DataFrame, *, n: int = 50, cell_deg: float = 0.005, top_per_trace: int = 30,
                  box=None, on_error: str = "raise") -> MetricSpace:
    """The ``n`` most popular grid cells as a haversine metric space (Imola et al. 2022, section 5.1).

    See the module docstring for the construction and the tie-breaking.

    Parameters
    ----------
    source : path-like or DataFrame
        - a ``.npz`` compact per-trace cell-count file (its box and ``cell_deg`` are used;
          ``box``/``cell_deg`` must be left at None / agree with it);
        - a Geolife PLT tree or ``.plt`` file (streamed; default box: Beijing
          :data:`geo.grid.GEOLIFE_BEIJING_BOX`);
        - a DataFrame of points (``lat``, ``lon`` and trace keys, see :func:`trace_cell_counts`;
          e.g. from :func:`geo.read_geolife` or :func:`geo.read_checkins`); default box: the
          data extent (:meth:`Grid.covering`);
        - a DataFrame of cell counts (columns :data:`COUNT_COLUMNS`; ``box`` required).
    n : int, default 50
        Number of cells, ``2 <= n <=`` number of cells in some trace's top list.
    cell_deg : float, default 0.005
        Cell side in degrees (the paper's 0.005 deg, ~0.55 km north-south in Beijing).
    top_per_trace : int, default 30
        Cells kept per trace.
    box : (lat_min, lat_max, lon_min, lon_max[, cell_deg]), optional
        The grid box; points outside it are not counted.
    on_error : {"raise", "skip"}, default "raise"
        For a PLT tree: skip malformed PLT files with a warning instead of raising
        (see :func:`geo.geolife.iter_geolife`).

    Returns
    -------
    MetricSpace with labels ``"r{row}c{col}"``, points = cell centres (lat, lon degrees),
    metric ``"haversine"`` (km), most popular cell first.

    Raises
    ------
    ValueError
        For ``n`` larger than the number of candidate cells, bad ``box``/``cell_deg``, or
        malformed input files (file and line named).
    """
    n = check_int(n, "n", low=2)
    cell_deg = check_positive(cell_deg, "cell_deg")
    top_per_trace = check_int(top_per_trace, "top_per_trace", low=1)
    if on_error not in ("raise", "skip"):
        raise ParameterError(f"on_error must be 'raise' or 'skip', got {on_error!r}")
    counts, grid = _counts_and_grid(source, cell_deg, box, on_error)
    ranking = cell_popularity(counts, top_per_trace=top_per_trace)
    if n > len(ranking):
        raise ParameterError(f"n must be <= the number of cells in some trace's top-{top_per_trace} "
                         f"({len(ranking)} inside box {grid.box}), got {n}")
    ids = ranking["cell_id"].to_numpy()[:n]
    return MetricSpace.from_points(grid.centres(ids), metric="haversine", labels=grid.labels(ids))


def space_from_spec(spec: str) -> MetricSpace:
    """``--space`` specs ``geolife:PATH:N`` and ``checkins:PATH:N``.

    ``geolife:PATH:N``: :func:`popular_cells` of a PLT tree or of the compact ``.npz`` file at
    PATH, with the defaults (0.005 deg cells, top 30 per trace; Beijing box or the file's box).

    ``checkins:PATH:N``: :func:`popular_cells` of a check-in log (:func:`geo.read_checkins`,
    format detected from the field count); each user's check-ins form one trace, the box is the
    data extent snapped to multiples of 0.005 deg.
    """
    prefix, _, rest = str(spec).partition(":")
    path, _, n_text = rest.rpartition(":")
    if prefix not in ("geolife", "checkins") or not path:
        raise ParameterError(f"space spec must be geolife:PATH:N or checkins:PATH:N, got {spec!r}")
    try:
        n = int(n_text)
    except ValueError:
        raise ParameterError(f"space spec {spec!r}: N must be an integer, got {n_text!r}") from None
    if not Path(path).exists():
        raise MissingFileError(f"space spec {spec!r}: no file or folder at {path}")
    if prefix == "geolife":
        return popular_cells(path, n=n)
    from .checkins import read_checkins

    frame = read_checkins(path, format="auto")
    return popular_cells(frame[["user", "lat", "lon"]], n=n)
