"""Reproducible experiments, run with ``mdp experiment NAME [--quick] [-o DIR]``.

Each experiment is one module exposing::

    DESCRIPTION: str                      # one line for `mdp experiment --list`
    def add_arguments(parser) -> None     # extra options (see `experiment_parser` for the common ones)
    def main(args) -> None                # runs it; writes CSV / Markdown / PNG into args.out

Experiments are registered in the ``mdp.experiments`` entry-point group (pyproject.toml) and
looked up through :data:`mdp.plugins.EXPERIMENTS`, imported on use (so an experiment's optional
dependencies are needed only when it runs).
"""

from __future__ import annotations

import argparse

from mdp.cli.args import ArgumentParser
from mdp.plugins import EXPERIMENTS

__all__ = ["EXPERIMENTS", "load_experiment", "experiment_parser"]


def load_experiment(name: str):
    """The module of experiment ``name``; unknown names raise with the valid names."""
    return EXPERIMENTS.get(name)


def experiment_parser(name: str) -> argparse.ArgumentParser:
    """The full option parser of experiment ``name``: the common options ``--quick``,
    ``-o/--out``, ``--seed`` and ``--no-progress``, then the experiment's own."""
    module = load_experiment(name)
    p = ArgumentParser(prog=f"mdp experiment {name}", description=module.DESCRIPTION)
    p.add_argument("--quick", action="store_true", help="small, fast version")
    p.add_argument("-o", "--out", default=None, help=f"output directory (default results/{name})")
    p.add_argument("--seed", type=int, default=0, help="random seed of the experiment")
    p.add_argument("--no-progress", action="store_true",
                   help="no progress bar (there is none unless stderr is a terminal)")
    module.add_arguments(p)
    return p
