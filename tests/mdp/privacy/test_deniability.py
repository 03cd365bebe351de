"""mdp explain on word mechanisms: N_w, S_w, kept and moved against brute force."""

from __future__ import annotations

import json

import numpy as np
import pytest

import mdp
from mdp.cli.main import main
from mdp.errors import WeakPrivacyWarning
from mdp.privacy.deniability import explain_words
from mdp.privacy.weak_epsilon import weak_privacy_message
from mdp.spaces.vector_space import VectorSpace

WORDS = ["cat", "dog", "cow", "owl", "bee", "ant"]
POINTS = np.array([[0.0, 0.0], [0.6, 0.1], [1.5, 0.2], [0.2, 1.1], [2.4, 2.0], [2.6, 2.3]])


def _space():
    return mdp.MetricSpace.from_points(POINTS, labels=WORDS)


def test_exact_figures_are_the_rows_closed_forms():
    mech = mdp.build("exponential", _space(), 2.0)
    ex = explain_words(mech, draws=50)
    M, D = mech.matrix, mech.space.distances
    kept = np.diag(M)
    s_w = (1 - (1 - M) ** 50).sum(axis=1)
    moved = (M * D).sum(axis=1)
    for name, values in (("kept", kept), ("s_w", s_w), ("moved", moved), ("n_w", 50 * kept)):
        got = getattr(ex, name)
        assert got["p50"] == pytest.approx(np.quantile(values, 0.5), rel=1e-12)
        assert got["p5"] == pytest.approx(np.quantile(values, 0.05), rel=1e-12)
    assert ex.method == "exact rows" and ex.words_measured == 6


def test_figures_match_simulated_draws():
    # brute force: draw k outputs per word many times and count what the paper counts
    mech = mdp.build("exponential", _space(), 1.0)
    k, reps = 20, 4000
    rng = np.random.default_rng(1)
    n_w, s_w = [], []
    for w in range(6):
        out = mech.sample_indices(np.full(k * reps, w), rng).reshape(reps, k)
        n_w.append((out == w).sum(axis=1).mean())
        s_w.append(np.mean([len(set(r)) for r in out]))
    ex = explain_words(mech, draws=k)
    assert ex.n_w["p50"] == pytest.approx(np.quantile(n_w, 0.5), rel=0.03)
    assert ex.s_w["p50"] == pytest.approx(np.quantile(s_w, 0.5), rel=0.03)


def test_vocabulary_mode_agrees_with_the_matrix():
    vs = VectorSpace(POINTS, labels=WORDS)
    for family, rel in (("exponential", 1e-9), ("madlib", 0.1)):
        a = explain_words(mdp.build(family, _space(), 2.0, rng=0), draws=200)
        b = explain_words(mdp.build(family, vs, 2.0, mode="vocabulary", rng=0), draws=4000)
        assert b.kept["p50"] == pytest.approx(a.kept["p50"], rel=rel, abs=0.02)
        assert b.moved["p50"] == pytest.approx(a.moved["p50"], rel=rel, abs=0.05)
        assert b.method == ("exact rows" if family == "exponential" else "4000 draws per word")


def test_mdp_explain_on_words(tmp_path, capsys):
    path = tmp_path / "w.npz"
    mdp.build("madlib", _space(), 3.0, rng=0).save(path)
    assert main(["explain", str(path), "--draws", "100"]) == 0
    out = capsys.readouterr().out
    assert "the median word is kept with probability" in out and "N_w" in out and "S_w" in out
    assert main(["explain", str(path), "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["draws"] == 1000 and set(record["kept"]) == {"p5", "p50", "p95"}


def test_weak_epsilon_warning_on_5000_glove_words(tmp_path):
    # the exponential mechanism at epsilon 10 kept every one of 5,000 GloVe words; the closest
    # pair (0.35 apart) gave no warning, the nearest-neighbour distances (median 2.7) do
    text = pytest.importorskip("text")
    emb = text.load_glove(5000)
    space = VectorSpace(emb.vectors, labels=emb.words)
    assert "no meaningful privacy" in weak_privacy_message(space, 10.0)
    assert weak_privacy_message(space, 2.0) is None
    with pytest.warns(WeakPrivacyWarning, match="a meaningful epsilon is at most about 3"):
        mdp.build("exponential", space, 10.0, mode="vocabulary").save(tmp_path / "w.npz")
        mdp.load(tmp_path / "w.npz")
