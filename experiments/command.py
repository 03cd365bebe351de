"""The ``mdp experiment`` command (registered in the ``mdp.commands`` entry-point group)."""

from __future__ import annotations

import argparse
import sys

from mdp.plugins import Command

from . import EXPERIMENTS, experiment_parser, load_experiment

__all__ = ["COMMAND"]


def configure_parser(parser: argparse.ArgumentParser) -> None:
    """``mdp experiment [NAME [OPTIONS]] [--list]``."""
    parser.description = "Run a reproducible experiment of the papers (mdp experiment --list)."
    parser.add_argument("name", nargs="?", help="experiment name (see --list)")
    parser.add_argument("--list", action="store_true", help="list the experiments")
    parser.add_argument("rest", nargs=argparse.REMAINDER,
                        help="options of the experiment (mdp experiment NAME --help)")


def run(args: argparse.Namespace) -> int:
    if args.list or not args.name:
        for name in EXPERIMENTS.names():
            try:
                desc = load_experiment(name).DESCRIPTION
            except ValueError:
                desc = "(not available)"
            print(f"{name:14s} {desc}")
        return 0
    module = load_experiment(args.name)
    options = experiment_parser(args.name).parse_args(args.rest)
    # bars on a terminal only: in a log file every redraw would be a line of its own
    options.no_progress = options.no_progress or not sys.stderr.isatty()
    module.main(options)
    return 0


COMMAND = Command(help="run a reproducible experiment (mdp experiment --list)",
                  configure_parser=configure_parser, run=run)
