"""The word mechanisms of the text literature: TEM, SanText(+), CusText, Mahalanobis, Vickrey.

Closed forms against brute force (TEM's Gumbel-max sampler, CusText's Algorithm 1 and per-set
exponential, SanText+'s split), samplers against their matrices (chi-square), each family's
guarantee on the check of its matrix, forged files, bad parameters.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mdp
from mdp.errors import ParameterError, PrivacyError
from mdp.families.custext import customized_sets
from mdp.families.madlib import estimate_madlib_matrix
from mdp.families.mahalanobis import mahalanobis_shape
from mdp.families.truncated_exponential import tem_threshold
from mdp.families.vickrey import vickrey_release
from mdp.privacy.accounting import eps_tight
from mdp.spaces.vector_space import VectorSpace
from tests.support.chisquare import pooled_chisquare
from text import load_glove, sample_vocabulary


@pytest.fixture(scope="module")
def words12():
    return sample_vocabulary(load_glove(), 12, rng=5)


@pytest.fixture(scope="module")
def plane():
    rng = np.random.default_rng(4)
    return mdp.MetricSpace.from_points(rng.normal(size=(9, 3)) * [1.0, 2.0, 0.5])


def sampled_row(mech, u: int, draws: int, seed: int) -> np.ndarray:
    out = mech.sample_indices(np.full(draws, u), np.random.default_rng(seed))
    return np.bincount(out, minlength=mech.space.n)


# -- TEM ------------------------------------------------------------------------------------------
def tem_by_gumbel(D: np.ndarray, u: int, eps: float, gamma: float, draws: int, rng) -> np.ndarray:
    """The paper's sampler, literally: Gumbel(2/eps) noise on the scores of L_w and the bucket."""
    inside = np.flatnonzero(D[u] <= gamma)
    outside = np.flatnonzero(D[u] > gamma)
    scores = list(-D[u, inside])
    if len(outside):
        scores.append(-gamma + 2 * math.log(len(outside)) / eps)
    scores = np.array(scores)
    noisy = scores[None, :] + rng.gumbel(0.0, 2.0 / eps, size=(draws, len(scores)))
    pick = noisy.argmax(axis=1)
    counts = np.zeros(D.shape[0], dtype=np.int64)
    for j, i in enumerate(inside):
        counts[i] = int((pick == j).sum())
    bucket = int((pick == len(inside)).sum())
    if bucket:
        np.add.at(counts, rng.choice(outside, size=bucket), 1)
    return counts


def test_tem_closed_form_is_the_papers_gumbel_sampler(plane):
    eps = 1.5
    D = plane.distances
    gamma = float(np.median(D))
    mech = mdp.build("tem", plane, eps, gamma=gamma)
    rng = np.random.default_rng(0)
    for u in (0, 4):
        counts = tem_by_gumbel(D, u, eps, gamma, 60_000, rng)
        assert pooled_chisquare(counts, mech.matrix[u]) > 1e-3
    # the closed form, entry by entry
    W = np.exp(-eps * np.minimum(D, gamma) / 2)
    np.testing.assert_allclose(mech.matrix, W / W.sum(axis=1, keepdims=True), rtol=1e-12)


def test_tem_threshold_and_its_limits(plane):
    n, eps = plane.n, 2.0
    assert tem_threshold(n, eps, 1e-3) == pytest.approx(2 / eps * math.log(0.999 * (n - 1) / 1e-3))
    assert tem_threshold(n, eps, gamma=0.25) == 0.25
    # gamma beyond every distance: the exponential mechanism itself
    far = mdp.build("tem", plane, eps, gamma=10 * plane.distances.max())
    np.testing.assert_allclose(far.matrix, mdp.build("exponential", plane, eps).matrix, rtol=1e-12)
    # gamma 0: every word but the input is in the bucket, and the output is uniform
    flat = mdp.build("tem", plane, eps, gamma=0.0)
    np.testing.assert_allclose(flat.matrix, np.full((n, n), 1 / n), rtol=1e-12)


def test_tem_is_certified_and_sampled_exactly(plane):
    mech = mdp.build("tem", plane, 2.0, gamma=1.0)
    assert mech.stats["privacy"]["verified"] and mech.eps_tight() <= 2.0 * (1 + 1e-9)
    assert pooled_chisquare(sampled_row(mech, 2, 40_000, 1), mech.matrix[2]) > 1e-3


def test_tem_vocabulary_rows_are_the_matrix_rows(words12):
    eps, gamma = 3.0, 4.0
    mech = mdp.build("tem", words12, eps, gamma=gamma)
    rows = mdp.build("tem", VectorSpace(words12.points, labels=words12.labels), eps,
                     mode="vocabulary", gamma=gamma)
    assert rows.stats["privacy"]["gamma"] == gamma
    L = rows.log_rows(np.arange(words12.n))
    P = np.exp(L - L.max(axis=1, keepdims=True))
    P /= P.sum(axis=1, keepdims=True)
    # sampled at eps' = eps (1 - a relative 1e-5 or less): the same rows to that accuracy
    np.testing.assert_allclose(P, mech.matrix, rtol=1e-3, atol=1e-9)
    counts = sampled_row(rows, 0, 30_000, 2)
    assert pooled_chisquare(counts, P[0]) > 1e-3


@pytest.mark.parametrize("bad", [{"beta": 0.0}, {"beta": 1.0}, {"beta": -0.1}, {"gamma": -1.0}])
def test_tem_refuses_bad_parameters(plane, bad):
    with pytest.raises(ParameterError, match=next(iter(bad))):
        mdp.build("tem", plane, 1.0, **bad)


# -- SanText and SanText+ -------------------------------------------------------------------------
def santext_plus_brute(D, eps, fraction, p):
    n = D.shape[0]
    k = math.ceil(fraction * n - 1e-9)
    sensitive = set(range(n - k, n))
    M = np.zeros((n, n))
    for x in range(n):
        w = np.array([math.exp(-eps * D[x, y] / 2) if y in sensitive else 0.0 for y in range(n)])
        w /= w.sum()
        if x in sensitive:
            M[x] = w
        else:
            M[x] = p * w
            M[x, x] += 1 - p
    return M


def test_santext_is_the_exponential_mechanism(words12):
    eps = 2.0
    san = mdp.build("santext", words12, eps)
    np.testing.assert_allclose(san.matrix, mdp.build("exponential", words12, eps).matrix,
                               rtol=1e-12)
    assert san.stats["privacy"]["unprotected_inputs"] == 0
    assert san.stats["privacy"]["covers_the_space"] is True
    assert san.eps_tight() <= eps * (1 + 1e-9)


@pytest.mark.parametrize("fraction,p", [(0.5, 0.3), (0.75, 0.0), (0.5, 1.0)])
def test_santext_plus_closed_form_and_scope(words12, fraction, p):
    eps = 2.0
    mech = mdp.build("santext", words12, eps, sensitive_fraction=fraction, p=p)
    np.testing.assert_allclose(mech.matrix, santext_plus_brute(words12.distances, eps, fraction, p),
                               rtol=1e-12, atol=1e-300)
    k = math.ceil(fraction * words12.n)
    if p < 1:
        # a kept word is an output no other input gives: no metric guarantee on the space
        assert mech.eps_tight() == math.inf
        assert mech.stats["privacy"]["unprotected_inputs"] == words12.n - k
        S = np.arange(words12.n - k, words12.n)
        assert eps_tight(mech.matrix[np.ix_(S, S)], words12.distances[np.ix_(S, S)]) <= eps * (1 + 1e-9)
    else:
        assert mech.eps_tight() <= eps * (1 + 1e-9)
        assert mech.stats["privacy"]["unprotected_inputs"] == 0
    assert pooled_chisquare(sampled_row(mech, 0, 30_000, 3), mech.matrix[0]) > 1e-3


def test_santext_plus_has_no_vocabulary_mode(words12):
    space = VectorSpace(words12.points, labels=words12.labels)
    with pytest.raises(ParameterError, match="matrix"):
        mdp.build("santext", space, 2.0, mode="vocabulary", sensitive_fraction=0.5)
    rows = mdp.build("santext", space, 2.0, mode="vocabulary")
    assert rows.stats["privacy"]["claimed_eps"] == 2.0


@pytest.mark.parametrize("bad", [{"p": -0.1}, {"p": 1.5}, {"sensitive_fraction": 0.0},
                                 {"sensitive_fraction": 1.2}])
def test_santext_refuses_bad_parameters(words12, bad):
    with pytest.raises(ParameterError, match=next(iter(bad))):
        mdp.build("santext", words12, 1.0, **bad)


# -- CusText --------------------------------------------------------------------------------------
def custext_sets_brute(D, k):
    n = D.shape[0]
    free = list(range(n))
    sets = []
    while free:
        w = free[0]
        ranked = sorted(free, key=lambda y: (D[w, y], y))[:k]
        if w not in ranked:
            ranked = [w] + ranked[:k - 1]
        sets.append(sorted(ranked))
        free = [y for y in free if y not in ranked]
    return sets


def custext_brute(D, eps, k):
    n = D.shape[0]
    M = np.zeros((n, n))
    for S in custext_sets_brute(D, k):
        for x in S:
            d = [D[x, y] for y in S]
            lo, hi = min(d), max(d)
            u = [-(dy - lo) / (hi - lo) if hi > lo else 0.0 for dy in d]
            w = [math.exp(eps * uy / 2) for uy in u]
            for y, wy in zip(S, w, strict=True):
                M[x, y] = wy / sum(w)
    return M


@pytest.mark.parametrize("k", [1, 3, 5, 12])
def test_custext_closed_form_against_brute_force(words12, k):
    eps = 1.7
    mech = mdp.build("custext", words12, eps, k=k)
    D = words12.distances
    assert [list(S) for S in customized_sets(D, k)] == custext_sets_brute(D, k)
    np.testing.assert_allclose(mech.matrix, custext_brute(D, eps, k), rtol=1e-12)


def test_custext_is_dp_within_each_set_and_nothing_across(words12):
    eps = 1.2
    mech = mdp.build("custext", words12, eps, k=4)
    M = mech.matrix
    for S in customized_sets(words12.distances, 4):
        for u in S:
            for v in S:
                assert np.all(M[u, S] <= math.exp(eps) * (1 + 1e-12) * M[v, S])
    assert mech.eps_tight() == math.inf and mech.eps_tight(0.1) == math.inf
    assert mech.stats["privacy"]["scopes"] == 3
    assert mech.stats["privacy"]["covers_the_space"] is False
    assert pooled_chisquare(sampled_row(mech, 5, 20_000, 4), M[5]) > 1e-3


def test_custext_refuses_k_above_the_vocabulary(words12):
    with pytest.raises(ParameterError, match="k = 13 is larger than the vocabulary"):
        mdp.build("custext", words12, 1.0, k=13)
    with pytest.raises(ParameterError, match="k"):
        mdp.build("custext", words12, 1.0, k=0)


def test_a_forged_scoped_file_is_refused(words12, tmp_path):
    mech = mdp.build("custext", words12, 1.0, k=4)
    path = mech.save(tmp_path / "c.npz")
    data = dict(np.load(path))
    L = data["log_matrix"].copy()
    L[0] = np.log(np.full(words12.n, 1 / words12.n))      # input 0 made uniform over all words
    data["log_matrix"] = L
    np.savez(tmp_path / "forged.npz", **data)
    with pytest.raises(PrivacyError, match="not this family's"):
        mdp.load(tmp_path / "forged.npz")
    data["log_matrix"] = mdp.build("custext", words12, 1.0, k=6).log_matrix   # other sets
    np.savez(tmp_path / "other_k.npz", **data)
    with pytest.raises(PrivacyError, match="not this family's"):
        mdp.load(tmp_path / "other_k.npz")


# -- Mahalanobis ----------------------------------------------------------------------------------
def test_mahalanobis_shape_and_noise_covariance(plane):
    lam = 0.7
    X = plane.points
    S, sigma_min = mahalanobis_shape(X, lam)
    cov = np.cov(X, rowvar=False, ddof=0)
    sigma = lam * cov / (np.trace(cov) / X.shape[1]) + (1 - lam) * np.eye(X.shape[1])
    np.testing.assert_allclose(S @ S, sigma, rtol=1e-10, atol=1e-12)
    assert sigma_min == pytest.approx(math.sqrt(np.linalg.eigvalsh(sigma).min()), rel=1e-8)
    mech = mdp.build("mahalanobis", plane, 2.0, lam=lam, n_samples=50)
    assert mech.stats["privacy"]["paper_eps"] == pytest.approx(2.0 * sigma_min)
    # radius Gamma(d, 1/eps_M) times S u: E[z z^T] = (d + 1) / eps_M^2 Sigma_lambda
    z = mech.noise(200_000, np.random.default_rng(0))
    d, eps_m = X.shape[1], mech.noise_epsilon
    np.testing.assert_allclose(np.cov(z, rowvar=False), (d + 1) / eps_m ** 2 * sigma, rtol=0.03,
                               atol=0.03 * np.abs(sigma).max() * (d + 1) / eps_m ** 2)


def test_mahalanobis_at_lambda_zero_is_madlib(plane):
    maha = mdp.build("mahalanobis", plane, 1.5, lam=0.0, rng=3, n_samples=300)
    mad = mdp.build("madlib", plane, 1.5, rng=3, n_samples=300)
    np.testing.assert_allclose(maha.matrix, mad.matrix, atol=1e-6)


def test_mahalanobis_estimate_keeps_the_estimators_theorem(plane):
    eps = 1.0
    mech = mdp.build("mahalanobis", plane, eps, lam=1.0, n_samples=400)
    # before normalisation the estimate is eps-mDP term by term; after, at most 2 eps
    assert eps_tight(mech.matrix, plane.distances) <= 2 * eps * (1 + 1e-9)
    assert mech.stats["privacy"]["claimed_eps"] == eps


def test_mahalanobis_refuses_a_singular_covariance():
    flat = mdp.MetricSpace.from_points(np.c_[np.arange(6.0), np.zeros(6)])
    with pytest.raises(ParameterError, match="singular"):
        mdp.build("mahalanobis", flat, 1.0, lam=1.0)
    assert mdp.build("mahalanobis", flat, 1.0, lam=0.5, n_samples=20).epsilon == 1.0


@pytest.mark.parametrize("bad", [-0.1, 1.5, float("nan")])
def test_mahalanobis_refuses_lambda_outside_the_unit_interval(plane, bad):
    with pytest.raises(ParameterError, match="lam"):
        mdp.build("mahalanobis", plane, 1.0, lam=bad)


# -- Vickrey --------------------------------------------------------------------------------------
def test_vickrey_release_probability():
    rng = np.random.default_rng(0)
    two = np.tile([[3, 7]], (100_000, 1))
    dist = np.tile([[1.0, 3.0]], (100_000, 1))
    for t in (0.0, 0.25, 0.5, 0.9, 1.0):
        share = float((vickrey_release(two, dist, t, rng) == 7).mean())
        expected = t * 1.0 / (t * 1.0 + (1 - t) * 3.0)
        assert share == pytest.approx(expected, abs=5 * math.sqrt(0.25 / 100_000))


def test_vickrey_at_t_zero_is_its_base_mechanism(plane):
    vick = mdp.build("vickrey", plane, 1.5, t=0.0, rng=2, n_samples=300)
    mad = mdp.build("madlib", plane, 1.5, rng=2, n_samples=300)
    np.testing.assert_allclose(vick.matrix, mad.matrix, atol=1e-12)
    vm = mdp.build("vickrey", plane, 1.5, t=0.0, noise="mahalanobis", lam=0.6, rng=2, n_samples=300)
    mm = mdp.build("mahalanobis", plane, 1.5, lam=0.6, rng=2, n_samples=300)
    np.testing.assert_allclose(vm.matrix, mm.matrix, atol=1e-12)


@pytest.mark.parametrize("noise", ["euclidean", "mahalanobis"])
def test_vickrey_sampler_against_its_estimated_matrix(plane, noise):
    mech = mdp.build("vickrey", plane, 1.0, t=0.6, noise=noise, rng=0, n_samples=20_000)
    se = mech.stats["matrix_estimate"]["max_entry_std_error"]
    draws = 40_000
    freq = sampled_row(mech, 1, draws, 5) / draws
    bound = 5 * np.sqrt(mech.matrix[1] * (1 - mech.matrix[1]) / draws) + 5 * se + 1e-4
    assert np.all(np.abs(freq - mech.matrix[1]) <= bound)
    # the second nearest point is released: the input is kept less often than by Madlib
    mad = mdp.build("madlib", plane, 1.0, rng=0, n_samples=20_000)
    if noise == "euclidean":
        assert np.mean(np.diag(mech.matrix)) < np.mean(np.diag(mad.matrix))


def test_vickrey_estimator_counts_both_neighbours():
    # two points: t = 1 always releases the second nearest, the point Madlib would not, so
    # the same draws give Madlib's matrix with its columns swapped; t = 1/2 releases the
    # second with probability d1 / (d1 + d2)
    X = np.array([[0.0], [1.0]])
    M0, _ = estimate_madlib_matrix(X, 2.0, 5000, rng=0, second_t=0.0)
    M1, _ = estimate_madlib_matrix(X, 2.0, 5000, rng=0, second_t=1.0)
    np.testing.assert_allclose(M1, M0[:, ::-1], atol=1e-12)
    Mh, _ = estimate_madlib_matrix(X, 2.0, 5000, rng=0, second_t=0.5)
    assert M0[0, 0] > Mh[0, 0] > 0.5 > M1[0, 0]


@pytest.mark.parametrize("bad", [{"t": -0.1}, {"t": 1.01}, {"noise": "laplace"}, {"lam": 2.0}])
def test_vickrey_refuses_bad_parameters(plane, bad):
    with pytest.raises(ParameterError, match=next(iter(bad))):
        mdp.build("vickrey", plane, 1.0, **bad)


# -- vocabulary mode ------------------------------------------------------------------------------
@pytest.mark.parametrize("name,params", [("mahalanobis", {"lam": 0.5}),
                                         ("vickrey", {"t": 0.5}),
                                         ("vickrey", {"noise": "mahalanobis"}),
                                         ("tem", {}), ("santext", {})])
def test_vocabulary_mode_round_trip(words12, name, params, tmp_path):
    space = VectorSpace(words12.points, labels=words12.labels)
    mech = mdp.build(name, space, 4.0, mode="vocabulary", **params)
    assert mech.stats["privacy"]["claimed_eps"] == 4.0
    out = mech.sample(list(words12.labels[:5]), rng=0)
    assert set(out) <= set(words12.labels)
    back = mdp.load(mech.save(tmp_path / f"{name}.npz"))
    assert type(back) is type(mech) and back.params.get("t") == mech.params.get("t")


def test_vocabulary_mahalanobis_follows_the_matrix_modes_law(words12):
    # the same noise law in both modes: outputs of one word agree with the estimated matrix
    mech = mdp.build("mahalanobis", words12, 3.0, lam=0.5, rng=0, n_samples=20_000)
    rows = mdp.build("mahalanobis", VectorSpace(words12.points, labels=words12.labels), 3.0,
                     mode="vocabulary", lam=0.5)
    draws = 30_000
    freq = sampled_row(rows, 4, draws, 6) / draws
    se = mech.stats["matrix_estimate"]["max_entry_std_error"]
    bound = 5 * np.sqrt(mech.matrix[4] * (1 - mech.matrix[4]) / draws) + 5 * se + 1e-4
    assert np.all(np.abs(freq - mech.matrix[4]) <= bound)


# -- files from a stranger ------------------------------------------------------------------------
def _rewrite(path, out, **changes):
    import json

    data = dict(np.load(path))
    meta = json.loads(str(data["metadata"]))
    for key, value in changes.items():
        meta["params"][key] = value
    data["metadata"] = np.array(json.dumps(meta))
    np.savez(out, **data)
    return out


@pytest.mark.parametrize("name,params,forged", [
    ("santext", {"sensitive_fraction": 0.5, "p": 0.3}, {"p": 1.0}),    # claims no kept word
    ("santext", {"sensitive_fraction": 0.5, "p": 0.3}, {"p": 7}),      # p outside [0, 1]
    ("vickrey", {"t": 0.5}, {"t": 5.0}),
    ("vickrey", {"t": 0.5}, {"noise": "laplace"}),
    ("mahalanobis", {"lam": 0.5}, {"lam": -3}),
    ("custext", {"k": 4}, {"k": 3}),
])
def test_forged_parameters_in_a_file_are_refused(words12, tmp_path, name, params, forged):
    from mdp.errors import FileFormatError

    path = mdp.build(name, words12, 2.0, rng=0, **params,
                     **({"n_samples": 50} if name in ("vickrey", "mahalanobis") else {})
                     ).save(tmp_path / "m.npz")
    with pytest.raises((PrivacyError, FileFormatError)):
        mdp.load(_rewrite(path, tmp_path / "forged.npz", **forged))


@pytest.mark.parametrize("name,forged", [("vickrey", {"t": 5.0}), ("vickrey", {"noise": "x"}),
                                         ("mahalanobis", {"lam": 2.0}), ("tem", {"beta": 0.0}),
                                         ("santext", {"sensitive_fraction": 0.5})])
def test_forged_vocabulary_files_are_refused(words12, tmp_path, name, forged):
    from mdp.errors import FileFormatError

    space = VectorSpace(words12.points, labels=words12.labels)
    path = mdp.build(name, space, 2.0, mode="vocabulary").save(tmp_path / "v.npz")
    with pytest.raises(FileFormatError, match="invalid mechanism"):
        mdp.load(_rewrite(path, tmp_path / "forged.npz", **forged))


@pytest.mark.parametrize("name,params", [("mahalanobis", {"lam": 0.8}), ("vickrey", {"t": 0.7}),
                                         ("vickrey", {"t": 0.3, "noise": "mahalanobis"})])
def test_estimated_matrices_keep_the_analytic_guarantee_within_their_error(plane, name, params):
    # M[u, w] <= e^{eps d(u, v)} M[v, w] for the true matrix; the estimate may exceed it only
    # by its sampling error
    eps = 1.0
    mech = mdp.build(name, plane, eps, rng=1, n_samples=8000, **params)
    M, D = mech.matrix, plane.distances
    excess = (M[:, None, :] - np.exp(eps * D)[:, :, None] * M[None, :, :]).max()
    assert excess <= 6 * mech.stats["matrix_estimate"]["max_entry_std_error"]


def test_explain_states_a_scoped_guarantee_first(words12, tmp_path, capsys):
    import json

    from mdp.cli.main import main

    path = mdp.build("santext", words12, 2.0, sensitive_fraction=0.5, p=0.3).save(tmp_path / "s.npz")
    assert main(["explain", str(path)]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("Its guarantee is not metric DP over the whole space")
    assert "6 input(s) without a guarantee" in first and "inf" in first
    assert main(["explain", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["scope"]["unprotected_inputs"] == 6
    exp = mdp.build("santext", words12, 2.0).save(tmp_path / "e.npz")
    assert main(["explain", str(exp)]) == 0
    assert "not metric DP" not in capsys.readouterr().out


def test_word_mechanisms_are_default_curves_only_on_word_spaces(words12, plane):
    from mdp.curves.loss import plan_families

    words = {"mahalanobis", "vickrey", "tem", "santext", "custext"}
    run, _ = plan_families(words12)
    assert words <= set(run)
    run, left = plan_families(plane)
    assert not words & set(run) and "madlib" in run
    assert all("word mechanism" in left[name] for name in words)
    # by name they still build on any space they apply to
    assert plan_families(plane, ["tem"])[0] == ["tem"]


# -- property tests over random spaces ------------------------------------------------------------
@st.composite
def _random_space(draw):
    n = draw(st.integers(3, 9))
    d = draw(st.integers(1, 4))
    seed = draw(st.integers(0, 2**32 - 1))
    X = np.random.default_rng(seed).normal(size=(n, d)) * draw(st.sampled_from([0.1, 1.0, 10.0]))
    return mdp.MetricSpace.from_points(X)


@settings(max_examples=25, deadline=None)
@given(space=_random_space(), eps=st.floats(0.05, 20.0), gamma_q=st.floats(0.0, 1.0))
def test_tem_is_certified_on_random_spaces(space, eps, gamma_q):
    gamma = float(np.quantile(space.distances, gamma_q))
    mech = mdp.build("tem", space, eps, gamma=gamma)
    assert mech.stats["privacy"]["verified"] and mech.eps_tight() <= eps * (1 + 1e-9)
    W = np.exp(-eps * np.minimum(space.distances, gamma) / 2)
    np.testing.assert_allclose(mech.matrix, W / W.sum(axis=1, keepdims=True), rtol=1e-9,
                               atol=1e-300)


@settings(max_examples=25, deadline=None)
@given(space=_random_space(), eps=st.floats(0.05, 20.0), k=st.integers(1, 9),
       fraction=st.floats(0.1, 1.0), p=st.sampled_from([0.0, 0.3, 1.0]))
def test_scoped_families_hold_their_scopes_on_random_spaces(space, eps, k, fraction, p):
    k = min(k, space.n)
    for mech in (mdp.build("custext", space, eps, k=k),
                 mdp.build("santext", space, eps, sensitive_fraction=fraction, p=p)):
        M = mech.matrix
        assert np.allclose(M.sum(axis=1), 1.0, atol=1e-12)
        covered = np.zeros(space.n, dtype=bool)
        for scope in mech.scopes():
            idx, D = scope.indices, scope.distances
            covered[idx] = True
            bound = np.exp(eps * D)[:, :, None] * (1 + 1e-9)
            assert np.all(M[np.ix_(idx, idx)][:, None, :] <= bound * M[np.ix_(idx, idx)][None, :, :]
                          + 1e-300)
        assert mech.stats["privacy"]["unprotected_inputs"] == int((~covered).sum())
        if mech.stats["privacy"]["covers_the_space"]:
            assert mech.eps_tight() <= eps * (1 + 1e-9)


def test_a_tem_file_whose_matrix_breaks_its_epsilon_is_refused(words12, tmp_path):
    mech = mdp.build("tem", words12, 1.0, gamma=2.0)
    data = dict(np.load(mech.save(tmp_path / "t.npz")))
    L = data["log_matrix"].copy()
    L[3] = np.log(np.eye(words12.n)[3] * (1 - 1e-3) + 1e-3 / words12.n)   # input 3 nearly kept
    data["log_matrix"] = L
    np.savez(tmp_path / "forged.npz", **data)
    with pytest.raises(PrivacyError, match="privacy check"):
        mdp.load(tmp_path / "forged.npz")
