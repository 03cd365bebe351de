"""``mdp privatize MECH.npz --users FILE.csv [--budget B] [-o OUT.csv]``: a whole check-in file.

FILE.csv has a header with columns ``user``, ``lat``, ``lon`` and optionally ``time``; every row
is privatized with per-user accounting (:func:`geo.users.privatize_users`: a user's repeats
from one cell reuse its first output, other reports add epsilon, ``--budget`` refuses reports
beyond it). The released CSV (``user,lat,lon``, to OUT.csv or standard output) never holds the
input location; the summary (users, rows, rows refused, largest epsilon spent, refused users by
name and count) goes to standard output with ``-o`` and to standard error without.
"""

from __future__ import annotations

import argparse
import io
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from mdp.errors import FileFormatError
from mdp.io import atomic_write_text, open_binary
from mdp.loading import load
from mdp.plugins import Command

from .users import privatize_users

__all__ = ["read_users_csv", "configure_parser", "run_cli", "COMMAND"]


def read_users_csv(path: str | Path) -> pd.DataFrame:
    """``user`` (str), ``lat``, ``lon`` (degrees) and ``time`` (as written) if present.

    Raises
    ------
    FileFormatError
        Unreadable or malformed CSV, missing columns, a bad coordinate or an empty user (the
        message names the file and line).
    """
    path = Path(path)
    try:
        with open_binary(path, what="users CSV") as fh:
            header = pd.read_csv(fh, nrows=0, skipinitialspace=True, encoding="utf-8").columns
        # coordinates parsed as numbers by the C reader (a bad value leaves its column as text,
        # which is then checked value by value below); every other column stays text
        numeric = {c: float for c in header if str(c).strip().lower() in ("lat", "lon")}
        try:
            with open_binary(path, what="users CSV") as fh:
                df = pd.read_csv(fh, skipinitialspace=True, encoding="utf-8",
                                 dtype={c: (numeric.get(c) or str) for c in header})
        except ValueError:
            with open_binary(path, what="users CSV") as fh:
                df = pd.read_csv(fh, dtype=str, skipinitialspace=True, encoding="utf-8")
    except FileFormatError:
        raise
    except pd.errors.EmptyDataError:
        raise FileFormatError(path, "empty file, expected a header user,lat,lon[,time]") from None
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as exc:
        raise FileFormatError(path, f"malformed CSV: {str(exc).strip()}") from None
    cols = {str(c).strip().lower(): c for c in df.columns}
    missing = [c for c in ("user", "lat", "lon") if c not in cols]
    if missing:
        raise FileFormatError(path, f"missing column(s) {missing}; need user,lat,lon[,time], "
                                    f"found {list(df.columns)}")
    out = pd.DataFrame({"user": df[cols["user"]].str.strip()})
    for name, limit in (("lat", 90.0), ("lon", 180.0)):
        vals = pd.to_numeric(df[cols[name]], errors="coerce").to_numpy(dtype=float)
        bad = ~np.isfinite(vals) | (np.abs(vals) > limit)
        if bad.any():
            # the rows' positions and count, never their values: the reports are private
            k = int(np.flatnonzero(bad)[0])
            raise FileFormatError(path, f"{int(bad.sum())} of {len(vals)} rows have a {name} that "
                                        f"is not a number of degrees with |{name}| <= {limit:g} "
                                        "(the first on this line)", line=k + 2)
        out[name] = vals
    empty = out["user"].isna() | (out["user"] == "")
    if empty.any():
        raise FileFormatError(path, "empty user", line=int(np.flatnonzero(empty.to_numpy())[0]) + 2)
    if "time" in cols:
        out["time"] = df[cols["time"]].to_numpy()
    return out


def configure_parser(parser: argparse.ArgumentParser) -> None:
    """Add the options (the same as ``mdp privatize``'s for ``--users``)."""
    parser.description = __doc__.split("\n\n")[0]
    parser.add_argument("file", help="mechanism file (mdp build) on a haversine lat,lon space")
    parser.add_argument("--users", required=True, help="CSV with user,lat,lon[,time]")
    parser.add_argument("--budget", type=float, default=None,
                        help="largest total epsilon per user (per km); reports beyond are refused")
    parser.add_argument("--seed", type=int, default=None, help="random seed (default: OS entropy)")
    parser.add_argument("--snap", action="store_true", help="snap far locations to the nearest point")
    parser.add_argument("--max-snap-km", type=float, default=None,
                        help="refuse locations farther than this from every point")
    parser.add_argument("-o", "--output", default=None, help="released CSV (default: stdout)")


def run_cli(args: argparse.Namespace) -> int:
    """Run the per-user release; returns the exit status."""
    mech = load(args.file, max_memory=getattr(args, "max_memory", None))
    table = read_users_csv(args.users)
    released, summary = privatize_users(table, mech, budget=args.budget, seed=args.seed,
                                        snap=args.snap, max_snap_km=args.max_snap_km)
    buf = io.StringIO()
    released.to_csv(buf, index=False, float_format="%.6f")
    if args.output:
        atomic_write_text(args.output, buf.getvalue())
        print(summary.text())
        print(f"wrote {args.output}: {len(released)} released rows")
    else:
        sys.stdout.write(buf.getvalue())
        print(summary.text(), file=sys.stderr)
    return 0


#: ``mdp privatize-users`` (also reached as ``mdp privatize --users``), in ``mdp.commands``.
COMMAND = Command(help="privatize a user,lat,lon[,time] file with per-user accounting",
                  configure_parser=configure_parser, run=run_cli)
