"""Reproducible experiments, run with ``mdp experiment NAME [--quick] [-o DIR]``.

Each experiment is one module exposing::

    DESCRIPTION: str                      # one line for `mdp experiment --list`
    def add_arguments(parser) -> None     # extra options (the CLI adds --quick, -o/--out, --seed)
    def main(args) -> None                # runs it; writes CSV / Markdown / PNG into args.out

The table below maps experiment names to modules (imported lazily, so an experiment's optional
dependencies are needed only when it runs).
"""

from __future__ import annotations

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
