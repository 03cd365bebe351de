"""``mdp heatmap INPUT --epsilon E [--delta-grid 256] -o OUT.png``: a DP heatmap of your points.

INPUT is either

* a CSV file with a header holding a ``user`` column, coordinates ``x``/``y`` (or ``lon``/``lat``)
  and optionally ``weight`` (fixations, check-ins, ... one row per point), or
* an original check-in log (``--format snap`` / ``foursquare``, read by
  :func:`geo.checkins.read_checkins`; coordinates are lon/lat).

Every user's points become one distribution of mass 1 on a ``Delta x Delta`` grid over
``--bounds``; :func:`geo.heatmap.dp_sparse_emd_aggregate` releases their aggregate epsilon-DP and
the PNG shows its Gaussian heatmap. Pass ``--bounds``: bounds taken from the data themselves are
not private (a warning says so).
"""

from __future__ import annotations

import argparse
import io
import math
import sys
from pathlib import Path

from mdp.cli.args import MEMORY_HELP, memory_size
from mdp.errors import FileFormatError, MissingFileError, ParameterError
from mdp.plugins import Command

# NumPy, pandas and the heatmap code are imported when the command runs, not when `mdp` builds
# its parser (mdp --help).

__all__ = ["configure_parser", "run_cli", "read_points"]


#: What ``-o`` may end in: a PNG picture, or an HTML page with an interactive map.
OUTPUT_SUFFIXES = (".png", ".html", ".htm")
#: float64 arrays of the grid's size alive at once in ``mdp heatmap`` (an upper estimate).
HEATMAP_GRID_COPIES = 8


def configure_parser(parser: argparse.ArgumentParser) -> None:
    """Add the ``mdp heatmap`` options to ``parser``."""
    parser.description = (
        "A DP heatmap of your points. Every user's points become one distribution of mass 1 on "
        "a Delta x Delta grid over --bounds; their aggregate is released epsilon-DP per user "
        "(Ghazi et al. 2023) and the PNG shows its Gaussian heatmap. Pass --bounds: bounds "
        "taken from the data themselves are not private.")
    parser.add_argument("input", help="CSV with user,x,y[,weight] (or user,lon,lat) or a check-in log")
    parser.add_argument("--epsilon", type=float, required=True, help="privacy budget (pure DP per user)")
    parser.add_argument("--delta-grid", type=int, default=256, metavar="DELTA",
                        help="grid side Delta in cells, a power of two (default 256); a size, "
                             "not the delta of (epsilon, delta)-DP")
    parser.add_argument("--bounds", type=float, nargs=4, metavar=("XMIN", "XMAX", "YMIN", "YMAX"),
                        help="grid extent (default: bounding box of the data, NOT private)")
    parser.add_argument("--format", choices=["csv", "snap", "foursquare"], default="csv",
                        help="csv: user,x,y[,weight] or user,lon,lat with a header (default); "
                             "snap / foursquare: an original check-in log")
    parser.add_argument("--w", type=int, default=20, help="cells kept per level (20)")
    parser.add_argument("--max-memory", type=memory_size, default=None, metavar="SIZE",
                        help=MEMORY_HELP)
    parser.add_argument("--sigma", type=float, default=None,
                        help="Gaussian filter s.d. in unit-square units (default 2/Delta)")
    parser.add_argument("--origin", choices=["lower", "upper"], default="lower",
                        help="'upper' for image coordinates (y grows downwards)")
    parser.add_argument("--seed", type=int, default=None,
                        help="random seed of the DP noise (default: fresh OS entropy)")
    parser.add_argument("--save-npy", default=None, help="also save the DP distribution (.npy)")
    parser.add_argument("-o", "--output", required=True,
                        help="output PNG, or .html for an interactive map (lon/lat input)")


def read_points(path: str | Path, fmt: str = "csv"):
    """Read points as a DataFrame with columns ``user``, ``x``, ``y``, ``weight``.

    Raises
    ------
    FileFormatError
        Unreadable or malformed CSV, missing columns, or a non-numeric / non-finite value (the
        message names file and line).
    """
    import numpy as np
    import pandas as pd

    from mdp.io import open_binary

    path = Path(path)
    if not path.exists():
        raise MissingFileError(f"input file not found: {path}")
    if fmt != "csv":
        from .checkins import read_checkins

        df = read_checkins(path, format=fmt)
        return pd.DataFrame({"user": df["user"], "x": df["lon"], "y": df["lat"], "weight": 1.0})
    try:
        with open_binary(path, what="points CSV") as fh:
            # every field as text: a user named "NA" is a user, not a missing value
            df = pd.read_csv(fh, dtype=str, keep_default_na=False, na_values=[""],
                             skipinitialspace=True, skip_blank_lines=False, encoding="utf-8")
    except FileFormatError:
        raise
    except pd.errors.EmptyDataError:
        raise FileFormatError(path, "empty file, expected a header user,x,y[,weight]") from None
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as exc:
        raise FileFormatError(path, f"malformed CSV: {str(exc).strip()}") from None
    df = df.dropna(how="all")      # blank lines; the index keeps each row's line number - 2
    cols = {c.strip().lower(): c for c in df.columns}
    xy = ("x", "y") if {"x", "y"} <= cols.keys() else ("lon", "lat")
    missing = [c for c in ("user", *xy) if c not in cols]
    if missing:
        raise FileFormatError(path, f"missing column(s) {missing}; need user and x,y (or lon,lat), "
                                    f"found {list(df.columns)}")
    out = pd.DataFrame({"user": df[cols["user"]].str.strip()})
    for name, src in (("x", xy[0]), ("y", xy[1]), ("weight", "weight")):
        if src not in cols:
            out[name] = 1.0
            continue
        vals = pd.to_numeric(df[cols[src]], errors="coerce")
        bad = ~np.isfinite(vals.to_numpy(dtype=float))
        if name == "weight":
            bad |= vals.to_numpy(dtype=float) < 0
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            # the line, not the value: a point may be private
            raise FileFormatError(path, f"{src} is not a finite number"
                                  + (" >= 0" if name == "weight" else ""),
                                  line=int(df.index[k]) + 2)
        out[name] = vals.to_numpy(dtype=float)
    if out["user"].isna().any():
        k = int(np.flatnonzero(out["user"].isna().to_numpy())[0])
        raise FileFormatError(path, "empty user", line=int(df.index[k]) + 2)
    return out


def _has_lonlat_columns(path: str | Path) -> bool:
    """Whether a points CSV names its coordinates ``lon``/``lat`` (degrees) rather than x/y."""
    import pandas as pd

    header = pd.read_csv(path, nrows=0, skipinitialspace=True).columns
    cols = {str(c).strip().lower() for c in header}
    return not {"x", "y"} <= cols and {"lon", "lat"} <= cols


def run_cli(args: argparse.Namespace) -> int:
    """Run ``mdp heatmap``; returns the exit status."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from mdp.io import atomic_write
    from mdp.runtime.resources import check_memory

    from .heatmap import (
        dp_sparse_emd_aggregate,
        gaussian_heatmap,
        points_to_cells,
        user_distributions,
    )
    from .plotting import draw_heatmap, geo_aspect

    suffix = Path(str(args.output)).suffix.lower()
    if suffix not in OUTPUT_SUFFIXES:
        raise ParameterError(f"-o must end in .png (a picture) or .html (an interactive map), got "
                             f"{str(args.output)!r}")
    if args.bounds is not None:
        x0, x1, y0, y1 = (float(b) for b in args.bounds)
        if not (all(map(math.isfinite, (x0, x1, y0, y1, x1 - x0, y1 - y0)))
                and x1 > x0 and y1 > y0):
            raise ParameterError(f"--bounds must be finite numbers X_MIN X_MAX Y_MIN Y_MAX with "
                                 f"X_MIN < X_MAX and Y_MIN < Y_MAX, got {tuple(args.bounds)}")
    # the grid's arrays (counts, the quadtree's levels, the filtered image): refuse before work
    check_memory(HEATMAP_GRID_COPIES * 8 * args.delta_grid ** 2,
                 f"a {args.delta_grid} x {args.delta_grid} heatmap grid (--delta-grid)",
                 getattr(args, "max_memory", None))
    pts = read_points(args.input, args.format)
    if len(pts) == 0:
        raise ParameterError(f"{args.input}: no points")
    if args.bounds is None:
        bounds = (pts.x.min(), pts.x.max(), pts.y.min(), pts.y.max())
        if bounds[0] == bounds[1] or bounds[2] == bounds[3]:
            raise ParameterError("points span a degenerate box; pass --bounds")
        print("mdp heatmap: warning: --bounds not given; using the data's bounding box, which is "
              "itself not differentially private", file=sys.stderr)
    else:
        bounds = tuple(args.bounds)
    row, col, inside = points_to_cells(pts.x.to_numpy(), pts.y.to_numpy(), delta=args.delta_grid,
                                       bounds=bounds)
    if not inside.any():
        raise ParameterError(f"no point of {args.input} lies inside bounds {bounds}")
    users, P = user_distributions(pts.user.to_numpy()[inside], row[inside], col[inside],
                                  delta=args.delta_grid, weights=pts.weight.to_numpy()[inside])
    counts = np.asarray(P.sum(axis=0)).reshape(args.delta_grid, args.delta_grid)
    a_hat = dp_sparse_emd_aggregate(counts, args.epsilon, w=args.w, rng=args.seed)
    sigma = 2.0 / args.delta_grid if args.sigma is None else args.sigma
    heat = gaussian_heatmap(a_hat, sigma)

    if args.format != "csv" or _has_lonlat_columns(args.input):
        labels = ("longitude (deg)", "latitude (deg)")
        aspect = geo_aspect(bounds[2], bounds[3])
    else:
        labels = ("x (units of the input)", "y (units of the input)")
        aspect = "equal"
    if str(args.output).lower().endswith((".html", ".htm")):
        return _write_html(args, heat, bounds, users.size, sigma, a_hat, inside)
    fig, ax = plt.subplots(figsize=(7, 6))
    draw_heatmap(ax, heat, extent=bounds, xlabel=labels[0], ylabel=labels[1], origin=args.origin,
                 aspect=aspect)
    ax.set_title(f"DP heatmap: epsilon = {args.epsilon:g} per user, {users.size} users,\n"
                 f"{args.delta_grid} x {args.delta_grid} grid, Gaussian sigma = {sigma:.2g} of the box side",
                 fontsize=10)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=120, bbox_inches="tight")
    plt.close(fig)
    atomic_write(args.output, lambda fh: fh.write(buf.getvalue()))
    if args.save_npy:
        atomic_write(args.save_npy, lambda fh: np.save(fh, a_hat))
    dropped = int((~inside).sum())
    print(f"wrote {args.output}: {users.size} users, {int(inside.sum())} points"
          + (f" ({dropped} outside bounds dropped)" if dropped else ""))
    return 0


def _write_html(args, heat, bounds, n_users: int, sigma: float, a_hat, inside) -> int:
    """``-o heat.html``: the released heatmap over an interactive map (extra ``map``)."""
    if not (args.format != "csv" or _has_lonlat_columns(args.input)):
        raise ParameterError("-o *.html draws on a map: the input needs lon/lat columns (degrees)")
    import numpy as np

    from mdp.io import atomic_write

    try:
        from .webmap import heat_overlay_map, save_map  # folium is the optional extra 'map'
    except ImportError as exc:
        raise ParameterError(f"-o *.html needs folium (pip install 'mdp-toolkit[map]'): {exc}") from None
    title = (f"DP heatmap, epsilon {args.epsilon:g} per user, {n_users} users "
             f"({args.delta_grid} x {args.delta_grid}, sigma {sigma:.2g})")
    save_map(heat_overlay_map(heat, bounds, title=title, origin=args.origin), args.output)
    if args.save_npy:
        atomic_write(args.save_npy, lambda fh: np.save(fh, a_hat))
    print(f"wrote {args.output}: {n_users} users, {int(inside.sum())} points (released heatmap "
          "only)")
    return 0


#: ``mdp heatmap``, registered in the ``mdp.commands`` entry-point group.
COMMAND = Command(help="private heatmap of your own point file (Ghazi et al. 2023)",
                  configure_parser=configure_parser, run=run_cli)
