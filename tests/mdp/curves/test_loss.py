"""mdp curves says which families ran, which were left out and why, and every failed point."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import mdp
from mdp.candidate import Candidate
from mdp.cli.main import main
from mdp.errors import BuildError
from mdp.families.exponential import exponential_matrix
from mdp.registry import FAMILIES, register


@pytest.fixture
def points_csv(tmp_path):
    path = tmp_path / "my.csv"
    pts = np.random.default_rng(5).uniform(0, 10, size=(40, 2))
    pd.DataFrame(pts, columns=["x", "y"]).to_csv(path, index=False)
    return path


def test_left_out_families_are_listed(points_csv, tmp_path, capsys):
    out = tmp_path / "curves"
    code = main(["curves", "--space", str(points_csv), "--mechanisms", "exponential",
                 "--eps-tight", "0.5,2", "--no-progress", "-o", str(out)])
    o, e = capsys.readouterr()
    assert code == 0, e
    assert "Families built: ExpMech (exponential)" in o
    assert "- optimal: not asked for" in o
    # without --mechanisms: the size rule is stated with the way to override it
    from mdp.curves.loss import plan_families
    from mdp.spaces.specs import load_space

    ran, left = plan_families(load_space(str(points_csv)))
    assert "optimal" not in ran and "n = 40 is above 30" in left["optimal"]
    assert "--mechanisms optimal" in left["optimal"]
    summary = (out / "curves.md").read_text()
    assert "Left out:" in summary and "ExpMech" in summary


def test_failed_points_are_reported_not_silent(points_csv, tmp_path, capsys):
    @register("_fails_above_one", description="test family failing at high epsilon",
              display_name="Fragile")
    def _fragile(space, epsilon, *, rng=None):
        if epsilon > 1.0:
            raise BuildError(f"'_fails_above_one' (n={space.n}, epsilon={epsilon:g}): too high")
        return Candidate(matrix=exponential_matrix(space.distances, epsilon))

    out = tmp_path / "curves"
    try:
        code = main(["curves", "--space", str(points_csv), "--mechanisms",
                     "_fails_above_one", "--eps-tight", "0.05,5", "--no-progress",
                     "-o", str(out)])
    finally:
        FAMILIES.unregister("_fails_above_one")
    o, e = capsys.readouterr()
    assert code == 0, e
    # one readable warning line, no Python warning machinery
    assert "mdp: warning: _fails_above_one at eps_tight 5 failed" in e and "UserWarning" not in e
    assert "Failed points (1):" in o and "Fragile at eps_tight 5: " in o and "too high" in o
    df = pd.read_csv(out / "curves.csv")
    failed = df[df["guarantee"] == "failed"]
    assert len(failed) == 1 and failed["target_eps_tight"].iloc[0] == 5
    assert "too high" in failed["error"].iloc[0]
    assert "Failed points (1)" in (out / "curves.md").read_text()


def test_keep_saves_every_calibrated_mechanism(points_csv, tmp_path, capsys):
    import mdp

    out, keep = tmp_path / "c", tmp_path / "kept"
    assert main(["curves", "--space", str(points_csv), "--mechanisms", "exponential", "optimal",
                 "--eps-tight", "1,2", "--keep", str(keep), "--no-progress", "-o", str(out)]) == 0
    df = pd.read_csv(out / "curves.csv")
    built = df[df["mechanism"].isin(["exponential", "optimal"])]
    assert sorted(p.name for p in keep.iterdir()) == [
        "exponential_eps-tight-1.npz", "exponential_eps-tight-2.npz",
        "optimal_eps-tight-1.npz", "optimal_eps-tight-2.npz"]
    for row in built.itertuples():
        mech = mdp.load(row.file)                       # the very mechanism of the row
        assert mech.name == row.mechanism and mech.epsilon == pytest.approx(row.epsilon)
        assert mech.eps_tight(1e-3) <= row.target_eps_tight * (1 + 1e-9)


def test_a_quantile_loss_below_the_bound_is_explained(tmp_path, capsys):
    assert main(["curves", "--mechanisms", "exponential", "--eps-tight", "1.79", "--no-progress",
                 "-o", str(tmp_path / "c")]) == 0
    out = capsys.readouterr().out
    assert "Note: the lower bound is on the worst-case loss L, not on L_0.95" in out
    assert "Note:" in (tmp_path / "c" / "curves.md").read_text()


def test_word_curves_report_deniability_and_scoped_families():
    from mdp.curves.loss import DENIABILITY_DRAWS, loss_curves
    from text import load_glove, sample_vocabulary

    words = sample_vocabulary(load_glove(), 30, rng=2)
    df = loss_curves(words, ["tem", "custext"], [1.0], delta=1e-3, progress=False)
    tem = df[df["mechanism"] == "tem"].iloc[0]
    cus = df[df["mechanism"] == "custext"].iloc[0]
    # CusText: no epsilon reaches a finite eps_tight; built at the target, and said so
    assert cus["eps_tight"] == np.inf and cus["guarantee"] == "scoped" and cus["epsilon"] == 1.0
    assert "infinite" in cus["note"]
    # N_w is the expected count of the word itself in DENIABILITY_DRAWS uses: exact on a matrix
    mech = mdp.build("tem", words, tem["epsilon"])
    assert tem["n_w"] == pytest.approx(DENIABILITY_DRAWS * np.median(np.diag(mech.matrix)))
    assert 1 <= tem["s_w"] <= words.n
    # not a word space: no deniability columns
    plane = mdp.MetricSpace.from_points(np.random.default_rng(0).uniform(size=(10, 2)))
    assert "n_w" not in loss_curves(plane, ["exponential"], [1.0], progress=False)
