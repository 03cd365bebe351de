"""Reproducible experiments, run with ``mdp experiment NAME [--quick] [-o DIR]``.

Each experiment is one module exposing::

    DESCRIPTION: str                      # one line for `mdp experiment --list`
    def add_arguments(parser) -> None     # extra options (see `experiment_parser` for the common ones)
    def main(args) -> None                # runs it; writes CSV / Markdown / PNG into args.out

The table below maps experiment names to modules (imported lazily, so an experiment's optional
dependencies are needed only when it runs).
"""

from __future__ import annotations

import argparse
import importlib

EXPERIMENTS: dict[str, str] = {
    "loss-curves": "experiments.loss_curves",
    "scalability": "experiments.scalability",
    "loss-vs-size": "experiments.loss_vs_size",
    "ablation": "experiments.ablation",
    "heatmaps": "experiments.heatmaps",
    "federated": "experiments.federated",
    "heatsources": "experiments.heatsources",
}


def load_experiment(name: str):
    """Import the module of experiment ``name``; unknown names raise with the valid names."""
    if name not in EXPERIMENTS:
        raise ValueError(f"unknown experiment {name!r}; valid names: {', '.join(sorted(EXPERIMENTS))}")
    try:
        return importlib.import_module(EXPERIMENTS[name])
    except ModuleNotFoundError as exc:
        if exc.name == EXPERIMENTS[name]:
            raise ValueError(f"experiment {name!r} is not available in this version") from None
        raise


def experiment_parser(name: str) -> argparse.ArgumentParser:
    """The full option parser of experiment ``name``: the common options ``--quick``,
    ``-o/--out``, ``--seed`` and ``--no-progress``, then the experiment's own."""
    module = load_experiment(name)
    p = argparse.ArgumentParser(prog=f"mdp experiment {name}", description=module.DESCRIPTION)
    p.add_argument("--quick", action="store_true", help="small, fast version")
    p.add_argument("-o", "--out", default=None, help=f"output directory (default results/{name})")
    p.add_argument("--seed", type=int, default=0, help="random seed")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    module.add_arguments(p)
    return p
