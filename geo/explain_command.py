"""``mdp explain MECH.npz``: a location mechanism's guarantee and accuracy in metres.

Prints :meth:`geo.explain.Explanation.text` (one sentence with units, Location Guard's levels,
the expected displacement, the radii holding 90% and 95% of outputs, what holds for raw
locations); ``--json`` prints the figures as one JSON record.
"""

from __future__ import annotations

import argparse
import dataclasses
import json

from mdp.cli.args import MEMORY_HELP, memory_size
from mdp.plugins import Command

__all__ = ["configure_parser", "run_cli", "COMMAND"]


def configure_parser(parser: argparse.ArgumentParser) -> None:
    """Add the ``mdp explain`` options to ``parser``."""
    parser.description = __doc__.split("\n\n")[0]
    parser.add_argument("file", help="mechanism file (mdp build) on a haversine lat,lon space")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON record")
    parser.add_argument("--max-memory", type=memory_size, default=None, metavar="SIZE",
                        help=MEMORY_HELP)


def run_cli(args: argparse.Namespace) -> int:
    """Run ``mdp explain``; returns the exit status."""
    from mdp.loading import load

    from .explain import explain

    ex = explain(load(args.file))
    if args.json:
        record = dataclasses.asdict(ex)
        record["levels"] = {str(k): v for k, v in ex.levels.items()}
        record["sentence"] = ex.sentence()
        print(json.dumps(record))
    else:
        print(ex.text())
    return 0


#: ``mdp explain``, registered in the ``mdp.commands`` entry-point group.
COMMAND = Command(help="what a location mechanism's epsilon means in metres (90 and 95 percent radii)",
                  configure_parser=configure_parser, run=run_cli)
