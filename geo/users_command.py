"""``mdp privatize MECH.npz --users FILE.csv [--budget B] [-o OUT.csv]``: a whole check-in file.

FILE.csv has a header with columns ``user``, ``lat``, ``lon`` and optionally ``time``; every row
is privatized with per-user accounting (:func:`geo.users.privatize_users`: every report is a
fresh draw that adds epsilon, or with ``--window`` one draw per user and time window;
``--budget`` refuses draws beyond it). The released CSV (``user,lat,lon``, to OUT.csv or standard output) never holds the
input location; the summary (users, rows, rows refused, largest epsilon spent, refused users by
name and count) goes to standard output with ``-o`` and to standard error without.
"""

from __future__ import annotations

import argparse
import io
import sys
from pathlib import Path

from mdp.errors import FileFormatError, ParameterError
from mdp.plugins import Command
from mdp.release import SEED_WARNING
from mdp.validation import check_positive

# pandas and the release code are imported when the command runs (mdp --help imports neither)

__all__ = ["read_users_csv", "configure_parser", "run_cli", "COMMAND"]


def read_users_csv(path: str | Path):
    """``user`` (normalized, :mod:`geo.user_names`), ``lat``, ``lon`` (degrees) and ``time`` (as
    written) if present.

    Every field is read as text (a user named ``NA`` is a user, not a missing value), then
    checked.

    Raises
    ------
    FileFormatError
        Unreadable or malformed CSV, missing columns, a bad coordinate, an empty user or one
        whose name mixes look-alike scripts (the message names the file and line, never the
        value).
    """
    import numpy as np
    import pandas as pd

    from mdp.io import open_binary

    from .user_names import normalize_user_names
    from .users import parse_report_times

    path = Path(path)
    try:
        with open_binary(path, what="users CSV") as fh:
            df = pd.read_csv(fh, dtype=str, keep_default_na=False, skipinitialspace=True,
                             encoding="utf-8")
    except FileFormatError:
        raise
    except pd.errors.EmptyDataError:
        raise FileFormatError(path, "empty file, expected a header user,lat,lon[,time]") from None
    except UnicodeDecodeError as exc:
        raise FileFormatError(path, f"not UTF-8 text (byte {exc.start} of the file)") from None
    except (pd.errors.ParserError, ValueError) as exc:
        raise FileFormatError(path, f"malformed CSV: {str(exc).strip()}") from None
    cols = {str(c).strip().lstrip("\ufeff").lower(): c for c in df.columns}
    missing = [c for c in ("user", "lat", "lon") if c not in cols]
    if missing:
        raise FileFormatError(path, f"missing column(s) {missing}; need user,lat,lon[,time], "
                                    f"found {list(df.columns)}")
    out = pd.DataFrame(index=df.index)
    for name, limit in (("lat", 90.0), ("lon", 180.0)):
        vals = pd.to_numeric(df[cols[name]].str.strip(), errors="coerce").to_numpy(dtype=float)
        bad = ~np.isfinite(vals) | (np.abs(vals) > limit)
        if bad.any():
            # the rows' positions and count, never their values: the reports are private
            k = int(np.flatnonzero(bad)[0])
            raise FileFormatError(path, f"{int(bad.sum())} of {len(vals)} rows have a {name} that "
                                        "is not a number of degrees with "
                                        f"|{name}| <= {limit:g} (the first on this line)",
                                  line=k + 2)
        out[name] = vals
    try:
        users = normalize_user_names(df[cols["user"]].to_numpy(), what="row")
    except ParameterError as exc:
        row, _, reason = str(exc).partition(": ")
        raise FileFormatError(path, reason or str(exc),
                              line=int(row.split()[-1]) + 2 if row.startswith("row ") else None
                              ) from None
    out.insert(0, "user", users)
    if "time" in cols:
        out["time"] = df[cols["time"]].str.strip().to_numpy()
        bad = parse_report_times(out["time"].to_numpy())[2]
        if bad.any():
            raise FileFormatError(path, f"{int(bad.sum())} of {len(bad)} rows have a time that "
                                        "is neither a number nor a date and time (the first on "
                                        "this line)", line=int(np.flatnonzero(bad)[0]) + 2)
    return out


def configure_parser(parser: argparse.ArgumentParser) -> None:
    """Add the options (the same as ``mdp privatize``'s for ``--users``)."""
    parser.description = __doc__.split("\n\n")[0]
    parser.add_argument("file", help="mechanism file (mdp build) on a haversine lat,lon space")
    parser.add_argument("--users", required=True, help="CSV with user,lat,lon[,time]")
    parser.add_argument("--budget", type=float, default=None,
                        help="largest total epsilon per user (per km); reports beyond are refused")
    parser.add_argument("--window", default=None, metavar="DURATION",
                        help="one draw per user and time window of the 'time' column (e.g. 1h, "
                             "30min, or a number in the column's units); default: every report "
                             "is a fresh draw")
    parser.add_argument("--seed", type=int, default=None, help="random seed (default: OS entropy)")
    parser.add_argument("--snap", action="store_true", help="snap far locations to the nearest point")
    parser.add_argument("--max-snap-km", type=float, default=None,
                        help="refuse locations farther than this from every point")
    parser.add_argument("--strict", action="store_true",
                        help="refuse the file when a location lies outside the mechanism's area "
                             "(default: leave such rows out and count them)")
    parser.add_argument("--ledger", default=None, metavar="FILE",
                        help="privacy ledger (SQLite) that keeps each user's spending across "
                             "runs; --budget then bounds the total")
    parser.add_argument("-o", "--output", default=None, help="released CSV (default: stdout)")


def run_cli(args: argparse.Namespace) -> int:
    """Run the per-user release; returns the exit status."""
    from mdp.io import atomic_write_text
    from mdp.loading import load

    from .users import privatize_users

    if args.budget is not None:
        check_positive(args.budget, "--budget")
    if args.seed is not None:
        print(SEED_WARNING, file=sys.stderr)
    mech = load(args.file, max_memory=getattr(args, "max_memory", None))
    table = read_users_csv(args.users)
    released, summary = privatize_users(table, mech, budget=args.budget,
                                        window=getattr(args, "window", None), seed=args.seed,
                                        snap=args.snap, max_snap_km=args.max_snap_km,
                                        strict=getattr(args, "strict", False),
                                        ledger=getattr(args, "ledger", None))
    buf = io.StringIO()
    released.to_csv(buf, index=False, float_format="%.6f")
    if args.output:
        atomic_write_text(args.output, buf.getvalue())
        print(summary.text(line_offset=2))
        print(f"wrote {args.output}: {len(released)} released rows")
    else:
        sys.stdout.write(buf.getvalue())
        print(summary.text(line_offset=2), file=sys.stderr)
    return 0


#: ``mdp privatize-users`` (also reached as ``mdp privatize --users``), in ``mdp.commands``.
COMMAND = Command(help="privatize a user,lat,lon[,time] file with per-user accounting",
                  configure_parser=configure_parser, run=run_cli)
