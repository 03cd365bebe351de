"""Madlib (Feyisetan et al. 2020): noise law, snapping, estimated matrix, registry integration."""

import numpy as np
import pytest
from scipy import stats
from scipy.spatial import ConvexHull

import mdp
from mdp.families.madlib import MadlibMechanism, estimate_madlib_matrix, madlib_noise
from mdp.loading import load
from mdp.privacy.accounting import eps_tight
from mdp.spaces.metric_space import MetricSpace
from text import load_glove, sample_vocabulary


@pytest.fixture(scope="module")
def words10():
    return sample_vocabulary(load_glove(), 10, rng=3)


# 1-D: the noise is Laplace(scale 1/eps) and snapping maps z to the Voronoi interval of a point,
# so the transition matrix has a closed form (Laplace CDF differences between midpoints).
LINE = np.array([0.0, 1.0, 3.0, 3.5, 6.0])


def exact_1d_matrix(x, eps):
    mids = (x[:-1] + x[1:]) / 2
    edges = np.concatenate([[-np.inf], mids, [np.inf]])
    lap = stats.laplace(scale=1 / eps)
    return lap.cdf(edges[None, 1:] - x[:, None]) - lap.cdf(edges[None, :-1] - x[:, None])


# -- the noise --------------------------------------------------------------------------------
@pytest.mark.parametrize("d,eps", [(1, 0.7), (2, 1.5), (50, 2.0)])
def test_radius_is_gamma_d_over_eps(d, eps):
    r = np.linalg.norm(madlib_noise(20_000, d, eps, rng=11), axis=1)
    assert stats.kstest(r, stats.gamma(a=d, scale=1 / eps).cdf).pvalue > 1e-3
    # the test has power: a neighbouring law is rejected
    assert stats.kstest(r, stats.gamma(a=d + 1, scale=1 / eps).cdf).pvalue < 1e-6


@pytest.mark.parametrize("d", [2, 3, 50])
def test_direction_is_uniform_on_the_sphere(d):
    z = madlib_noise(20_000, d, 1.0, rng=5)
    u = z / np.linalg.norm(z, axis=1, keepdims=True)
    # mean of a uniform direction is 0 with per-coordinate std 1/sqrt(d m)
    assert np.abs(u.mean(axis=0)).max() < 5 / np.sqrt(d * len(u))
    # the projection on any fixed axis e satisfies (1 + u.e)/2 ~ Beta((d-1)/2, (d-1)/2)
    rng = np.random.default_rng(0)
    for _ in range(3):
        e = rng.standard_normal(d)
        e /= np.linalg.norm(e)
        proj = (1 + u @ e) / 2
        assert stats.kstest(proj, stats.beta((d - 1) / 2, (d - 1) / 2).cdf).pvalue > 1e-3


def test_noise_density_in_2d_is_planar_laplace():
    # planar Laplace (Andres et al. 2013): P(||z|| <= r) = 1 - (1 + eps r) exp(-eps r)
    eps = 0.8
    r = np.linalg.norm(madlib_noise(20_000, 2, eps, rng=2), axis=1)
    assert stats.kstest(r, lambda t: 1 - (1 + eps * t) * np.exp(-eps * t)).pvalue > 1e-3


def test_noise_rejects_bad_input():
    with pytest.raises(ValueError, match="epsilon must be > 0, got -1"):
        madlib_noise(3, 2, -1)
    with pytest.raises(ValueError, match="d must be >= 1"):
        madlib_noise(3, 0, 1.0)


# -- the estimated matrix against the 1-D closed form --------------------------------------------
@pytest.mark.parametrize("eps", [0.5, 2.0])
def test_estimated_matrix_matches_1d_closed_form(eps):
    space = MetricSpace.from_points(LINE[:, None])
    exact = exact_1d_matrix(LINE, eps)
    mech = mdp.build("madlib", space, eps, rng=1, n_samples=20_000)
    se = mech.stats["matrix_estimate"]["max_entry_std_error"]
    assert 0 < se < 0.01
    assert np.abs(mech.matrix - exact).max() < 5 * se
    np.testing.assert_allclose(mech.matrix.sum(axis=1), 1.0)
    # the closed form is eps-mDP (the analytic guarantee), and not by a wide margin
    assert eps_tight(exact, space.distances) <= eps * (1 + 1e-9)
    assert eps_tight(exact, space.distances) > 0.5 * eps
    # eps_tight and loss measured on the estimate agree with the closed form (1-D is tight)
    for delta in (0.0, 1e-3):
        assert mech.eps_tight(delta) == pytest.approx(eps_tight(exact, space.distances, delta), rel=0.03)
    assert abs(mech.loss(0.95) - mdp.privacy.accounting.loss(exact, space.distances, 0.95)) < \
        5 * mech.stats["matrix_estimate"]["max_row_loss_std_error"]


def test_sample_draws_fresh_noise_not_the_matrix():
    eps = 1.0
    space = MetricSpace.from_points(LINE[:, None])
    exact = exact_1d_matrix(LINE, eps)
    # a deliberately wrong matrix (identity): sampling must ignore it
    mech = MadlibMechanism(np.eye(len(LINE)), space, eps)
    rng = np.random.default_rng(7)
    for u in (0, 2):
        out = mech.sample(np.full(20_000, u), rng=rng)
        obs = np.bincount(out, minlength=len(LINE))
        assert stats.chisquare(obs, exact[u] * len(out)).pvalue > 1e-3


def test_sample_matches_estimated_matrix_in_high_dimension(words10):
    mech = mdp.build("madlib", words10, 6.0, rng=0, n_samples=5_000)
    w = words10.labels[4]
    out = mech.sample([w] * 20_000, rng=3)
    idx = words10.index_of(out)
    obs = np.bincount(idx, minlength=words10.n)
    exp = mech.matrix[4] * len(idx)
    keep = exp > 5          # chi-square needs expected counts >= 5; pool the rest
    f_obs = np.append(obs[keep], obs[~keep].sum())
    f_exp = np.append(exp[keep], exp[~keep].sum())
    if f_exp[-1] == 0:
        f_obs, f_exp = f_obs[:-1], f_exp[:-1]
    f_exp *= f_obs.sum() / f_exp.sum()
    assert stats.chisquare(f_obs, f_exp).pvalue > 1e-3


def test_estimate_is_consistent_and_errors_shrink(words10):
    _, s100 = estimate_madlib_matrix(words10.points, 3.0, 100, rng=0)
    _, s1600 = estimate_madlib_matrix(words10.points, 3.0, 1600, rng=0)
    ratio = s100["max_row_loss_std_error"] / s1600["max_row_loss_std_error"]
    assert 2.5 < ratio < 6.5          # 1/sqrt(n_samples): sqrt(16) = 4
    assert s1600["n_samples"] == 1600 and s1600["total_draws"] == 1600 * words10.n


def test_estimated_columns_are_all_zero_or_all_positive(words10):
    # a column hit by any draw must be positive in every row (as in the true matrix), otherwise
    # eps_tight of the estimate would be infinite
    M = mdp.build("madlib", words10, 4.0, rng=0, n_samples=200).matrix
    pos = M > 0
    assert np.all(pos.all(axis=0) | ~pos.any(axis=0))
    assert np.isfinite(eps_tight(M, words10.distances, 0.0))


# -- the two limits ---------------------------------------------------------------------------------
def test_very_large_epsilon_returns_the_word():
    space = sample_vocabulary(load_glove(), 50, rng=0)
    mech = mdp.build("madlib", space, 1e4, rng=0, n_samples=50)
    words = list(space.labels)
    assert list(mech.sample(words * 20, rng=1)) == words * 20
    np.testing.assert_allclose(mech.matrix, np.eye(space.n))
    assert mech.loss() == 0.0


def test_tiny_epsilon_2d_approaches_normal_cone_angles():
    # As eps -> 0 the noise radius -> infinity and z ~ R u: the output is the convex-hull
    # vertex maximising <x, u>, i.e. vertex v with probability (exterior angle at v) / (2 pi),
    # whatever the input. Exact reference from scipy's ConvexHull.
    pts = np.random.default_rng(4).random((12, 2))
    hull = ConvexHull(pts)
    v = hull.vertices                      # counter-clockwise in 2-D
    m = len(v)
    ext = np.empty(m)
    for i in range(m):
        a, b, c = pts[v[i - 1]], pts[v[i]], pts[v[(i + 1) % m]]
        e1, e2 = b - a, c - b
        ext[i] = np.arctan2(e1[0] * e2[1] - e1[1] * e2[0], e1 @ e2)
    np.testing.assert_allclose(ext.sum(), 2 * np.pi)
    expected = np.zeros(len(pts))
    expected[v] = ext / (2 * np.pi)
    space = MetricSpace.from_points(pts)
    mech = mdp.build("madlib", space, 1e-7, rng=0, n_samples=10)
    for u in (0, 5, 11):
        out = mech.sample(np.full(20_000, u), rng=u)
        obs = np.bincount(out, minlength=len(pts))
        assert obs[expected == 0].sum() == 0      # interior points are never output
        assert stats.chisquare(obs[v], expected[v] * len(out)).pvalue > 1e-3


def test_tiny_epsilon_high_dimension_matches_direction_only_snapping(words10):
    # Monte Carlo reference: snap a uniform direction at infinite radius = argmax_w <x_w, u>
    rng = np.random.default_rng(9)
    u = rng.standard_normal((20_000, words10.points.shape[1]))
    ref = np.bincount(np.argmax(u @ words10.points.T, axis=1), minlength=words10.n)
    mech = mdp.build("madlib", words10, 1e-7, rng=0, n_samples=2_000)
    for w in (0, 7):
        out = words10.index_of(mech.sample([words10.labels[w]] * 20_000, rng=w))
        obs = np.bincount(out, minlength=words10.n)
        keep = (obs + ref) > 0
        assert stats.chi2_contingency(np.vstack([obs[keep], ref[keep]])).pvalue > 1e-3
    # rows of the estimated matrix agree with the same reference (input no longer matters)
    np.testing.assert_allclose(mech.matrix, np.tile(mech.matrix[0], (words10.n, 1)), atol=1e-6)
    # both sides are 20,000-draw estimates: standard error <= 0.0035 each
    assert np.abs(mech.matrix[0] - ref / ref.sum()).max() < 0.02


# -- registry, persistence, bad input ------------------------------------------------------------
def test_registry_entry_and_applicability():
    entry = mdp.get("madlib")
    assert entry.guarantee == "analytic"
    assert entry.params == {"n_samples": 500}
    space200 = sample_vocabulary(load_glove(), 200, rng=0)
    assert entry.applies(space200) is None and entry.quick_max_n >= 200
    from mdp.curves.loss import default_mechanisms

    assert "madlib" in default_mechanisms(space200)
    dist_only = MetricSpace.from_distances(np.array([[0.0, 1.0], [1.0, 0.0]]))
    assert "no points" in entry.applies(dist_only)
    geo = MetricSpace.from_points([[39.9, 116.4], [39.95, 116.3]], metric="haversine")
    assert "haversine" in entry.applies(geo)
    with pytest.raises(ValueError, match="does not apply"):
        mdp.build("madlib", dist_only, 1.0)


def test_stats_record_sampling_and_guarantee(words10):
    mech = mdp.build("madlib", words10, 2.0, rng=0, n_samples=300)
    est = mech.stats["matrix_estimate"]
    assert est["n_samples"] == 300 and mech.params["n_samples"] == 300
    assert est["max_entry_std_error"] > 0 and est["max_row_loss_std_error"] > 0
    assert "estimate" in est["note"]
    assert mech.stats["privacy"]["guarantee"] == "analytic"
    assert mech.stats["privacy"]["claimed_eps"] == 2.0


def test_save_load_keeps_the_sampler(tmp_path, words10):
    mech = mdp.build("madlib", words10, 3.0, rng=0, n_samples=200)
    path = mech.save(tmp_path / "m.npz")
    back = load(path)
    assert isinstance(back, MadlibMechanism) and back.kind == "madlib"
    np.testing.assert_array_equal(back.matrix, mech.matrix)
    a = mech.sample(list(words10.labels) * 5, rng=8)
    b = back.sample(list(words10.labels) * 5, rng=8)
    assert list(a) == list(b)


def test_bad_parameters(words10):
    with pytest.raises(ValueError, match="n_samples must be >= 1, got 0"):
        mdp.build("madlib", words10, 1.0, n_samples=0)
    with pytest.raises(TypeError, match="n_samples must be an integer"):
        mdp.build("madlib", words10, 1.0, n_samples=2.5)
    with pytest.raises(ValueError, match="epsilon must be > 0"):
        mdp.build("madlib", words10, 0.0)
    with pytest.raises(TypeError, match="unknown parameter"):
        mdp.build("madlib", words10, 1.0, samples=3)
    with pytest.raises(KeyError, match="input 1 \\(of 1\\): unknown label") as info:
        mdp.build("madlib", words10, 1.0, n_samples=10).sample("notaword")
    assert "notaword" not in str(info.value)          # refused inputs are named by position
