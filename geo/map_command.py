"""``mdp map MECH.npz --input LAT,LON -o map.html``: where a location goes, on an interactive map.

Draws every point of the mechanism's space coloured by the probability that the input's output
is that point (legend, probability on hover) and the circle holding 90% of its outputs
(:func:`geo.webmap.mechanism_map`). ``mdp map --privatized FILE -o map.html`` draws released
points only (a CSV with ``lat`` and ``lon`` columns, such as ``mdp privatize --users`` writes,
or ``lat,lon`` lines as ``mdp privatize`` prints). The page renders offline except for the
background tiles.
"""

from __future__ import annotations

import argparse
import io
from pathlib import Path

from mdp.cli.args import MEMORY_HELP, memory_size
from mdp.errors import FileFormatError, ParameterError
from mdp.plugins import Command

# NumPy, pandas, folium and the mechanism code are imported when the command runs

__all__ = ["read_released", "configure_parser", "run_cli", "COMMAND"]


def read_released(path: str | Path):
    """(m, 2) released (lat, lon): a CSV with lat/lon columns, or headerless ``lat,lon`` lines.

    Raises
    ------
    FileFormatError
        Not UTF-8 text, no locations, or a value that is not a latitude / longitude in degrees
        (the message names the file and line).
    """
    import numpy as np
    import pandas as pd

    from mdp.io import open_binary

    from .locations import parse_latlon_lines

    path = Path(path)
    with open_binary(path, what="released locations") as fh:
        raw = fh.read()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise FileFormatError(path, f"not UTF-8 text (byte {exc.start} of the file)") from None
    lines = [s for s in text.splitlines() if s.strip()]
    if not lines:
        raise FileFormatError(path, "no released locations")
    header = [c.strip().lower() for c in lines[0].split(",")]
    if "lat" in header and "lon" in header:
        try:
            df = pd.read_csv(io.StringIO(text), dtype=str, skipinitialspace=True,
                             keep_default_na=False)
        except (pd.errors.ParserError, ValueError) as exc:
            raise FileFormatError(path, f"malformed CSV: {str(exc).strip()}") from None
        df.columns = [str(c).strip().lower() for c in df.columns]
        P = df[["lat", "lon"]].apply(pd.to_numeric, errors="coerce").to_numpy(dtype=float)
        bad = ~np.isfinite(P).all(axis=1) | (np.abs(P[:, 0]) > 90) | (np.abs(P[:, 1]) > 180)
        if bad.any():
            raise FileFormatError(path, "not a latitude and longitude in degrees (|lat| <= 90, "
                                        "|lon| <= 180)", line=int(np.flatnonzero(bad)[0]) + 2)
        return P
    try:
        return parse_latlon_lines(lines)
    except ValueError as exc:
        raise FileFormatError(path, str(exc)) from None


def _latlon_arg(text: str) -> tuple[float, float]:
    from .locations import parse_latlon_lines

    try:
        P = parse_latlon_lines([text])
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected LAT,LON in degrees, got {text!r}") from None
    return float(P[0, 0]), float(P[0, 1])


def configure_parser(parser: argparse.ArgumentParser) -> None:
    """Add the ``mdp map`` options to ``parser``."""
    parser.description = __doc__.split("\n\n")[0]
    parser.add_argument("file", nargs="?", default=None,
                        help="mechanism file (mdp build) on a haversine lat,lon space")
    parser.add_argument("--input", type=_latlon_arg, default=None, metavar="LAT,LON",
                        help="the location whose outputs are drawn")
    parser.add_argument("--privatized", default=None, metavar="FILE",
                        help="draw these released points only (CSV with lat,lon or lat,lon lines)")
    parser.add_argument("--snap", action="store_true", help="snap a far input to the nearest point")
    parser.add_argument("--max-snap-km", type=float, default=None,
                        help="refuse an input farther than this from every point")
    parser.add_argument("-o", "--output", required=True, help="HTML page to write")
    parser.add_argument("--max-memory", type=memory_size, default=None, metavar="SIZE",
                        help=MEMORY_HELP)


def run_cli(args: argparse.Namespace) -> int:
    """Run ``mdp map``; returns the exit status."""
    from mdp.loading import load

    from .webmap import mechanism_map, released_map, save_map

    if args.privatized is not None:
        if args.input is not None:
            raise ParameterError("--privatized draws released points only; leave out --input")
        P = read_released(args.privatized)
        save_map(released_map(P), args.output)
        print(f"wrote {args.output}: {len(P)} released points")
        return 0
    if args.file is None or args.input is None:
        raise ParameterError("give MECH.npz and --input LAT,LON (or --privatized FILE)")
    mech = load(args.file)
    lat, lon = args.input
    save_map(mechanism_map(mech, lat, lon, snap=args.snap, max_snap_km=args.max_snap_km),
             args.output)
    print(f"wrote {args.output}: {mech.space.n} outputs of ({lat:g}, {lon:g}) under "
          f"{mech.name}, epsilon {mech.epsilon:g} per km")
    return 0


#: ``mdp map``, registered in the ``mdp.commands`` entry-point group (needs the extra ``map``).
COMMAND = Command(help="interactive map of where a location goes (or of released points)",
                  configure_parser=configure_parser, run=run_cli)
