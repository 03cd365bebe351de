"""Smoke test of the KL study (`mdp experiment heatmaps --kl-study`) on synthetic users."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import scipy.sparse as sp

from experiments.heatmaps_kl import OURS_NEW, OURS_OLD, run_kl_study


def test_kl_study_small(tmp_path):
    rng = np.random.default_rng(0)
    delta, users = 256, 60
    centres = rng.integers(20, 236, size=(4, 2))
    pts = centres[rng.integers(0, 4, users)] + rng.integers(-6, 7, size=(users, 2))
    P = sp.csr_array((np.ones(users), (np.arange(users), pts[:, 0] * delta + pts[:, 1])),
                     shape=(users, delta * delta))
    args = SimpleNamespace(out=str(tmp_path), quick=False, kl_runs=1, sigmas=[0.02], sigma=0.02,
                           seed=0, top_percent=[1.0], n_users=users, emd_resolution=16,
                           no_progress=True)
    run_kl_study(args, [{"name": "synthetic"}], lambda cell, d: P)
    for name in ["kl_runs.csv", "kl_summary.csv", "kl_summary.md", "kl_epsilon.png",
                 "kl_missed_mass.png", "kl_definitions.png"]:
        assert (tmp_path / name).stat().st_size > 0
    runs = pd.read_csv(tmp_path / "kl_runs.csv")
    assert set(runs.epsilon) == {0.1, 0.5, 1.0, 2.0, 5.0}
    new = runs[runs.algorithm == OURS_NEW].set_index("epsilon")
    old = runs[runs.algorithm == OURS_OLD].set_index("epsilon")
    # equal shares among left-out siblings only add cells to the support of the same LP optimum
    assert (new["support share"] >= old["support share"]).all()
    kl_cols = [c for c in runs.columns if c.startswith("KL")]
    assert (runs[kl_cols] >= -1e-9).all().all()
    assert runs.SIM.between(0, 1).all()
