"""Smoke test of `mdp experiment federated` on a small map (depth 6) of the real Gowalla data."""

from __future__ import annotations

import json

import pandas as pd

from experiments import experiment_parser, federated


def test_federated_experiment_small(tmp_path, shared_data):
    args = experiment_parser("federated").parse_args(["--quick", "-o", str(tmp_path), "--depth", "6", "--smooth", "1",
                         "--emd-side", "16", "--c-sweep", "0.3", "--no-progress",
                         "--data", str(shared_data / "gowalla_nyc_checkins.txt.gz")])
    federated.main(args)
    for name in ["table1.csv", "table1.md", "c_sweep.csv", "runs.csv", "summary.json", "maps.png"]:
        assert (tmp_path / name).stat().st_size > 0
    runs = pd.read_csv(tmp_path / "runs.csv")
    assert set(runs.method) == set(federated.METHODS)
    private = runs[~runs.method.str.startswith("Non-private")]
    assert (abs(private.eps_per_user - 1.0) < 1e-9).all()
    flat = runs[runs.method == "Flat one-hot"]
    assert (flat.comm == 4**6).all()
    hier = runs[runs.method == "Hierarchical one-hot"]
    assert (hier.comm == sum(4**lv for lv in range(1, 7))).all()
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert set(summary["checks"]) == {"10k", "100k", "100k, 10% drop"}
    ratios = pd.read_csv(tmp_path / "baselines.csv")
    # the seed's baseline keeps one level for the map, the oracle one per cell: never better
    assert (ratios["best level MSE (1e-12)"] >= ratios["per-cell oracle MSE (1e-12)"] - 1e-12).all()
    best = runs[runs.method == federated.NONPRIVATE_PAPER]
    assert best.level.between(0, 6).all()


def test_federated_design_study_small(tmp_path, shared_data):
    args = experiment_parser("federated").parse_args(
        ["--quick", "--design", "-o", str(tmp_path), "--depth", "6", "--smooth", "1",
         "--design-repeats", "2", "--no-progress",
         "--data", str(shared_data / "gowalla_nyc_checkins.txt.gz")])
    federated.main(args)
    for name in ["design_runs.csv", "design_variants.csv", "design_levels.csv",
                 "design_texture.csv", "design.md", "design_levels.png", "design_variants.png",
                 "design_texture.png"]:
        assert (tmp_path / name).stat().st_size > 0
    runs = pd.read_csv(tmp_path / "design_runs.csv")
    assert set(runs.variant) == set(federated.DESIGN_VARIANTS)
    # the best level is the minimum over levels, so no map beats it by more than rounding
    levels = pd.read_csv(tmp_path / "design_levels.csv")
    assert (levels["relative to best level"] >= 1 - 1e-12).all()
    assert (levels.groupby("setting")["relative to best level"].min() == 1).all()
