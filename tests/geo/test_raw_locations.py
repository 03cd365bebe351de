"""Raw coordinates: planar Laplace drawn from the true location, remapped; no snapping term."""

import numpy as np
import pytest
from scipy.stats import chisquare

import mdp
from geo.explain import explain
from geo.planar_laplace import sample_planar_noise
from geo.raw_locations import RawPlanarLaplace, off_grid_violation_rate
from geo.release import privatize_latlon_lines, privatize_locations
from mdp.prior import Prior, expected_loss, remap
from mdp.spaces.metric_space import haversine_km


@pytest.fixture(scope="module")
def city():
    rng = np.random.default_rng(3)
    pts = np.c_[38.70 + rng.random(30) * 0.04, -9.16 + rng.random(30) * 0.05]
    return mdp.MetricSpace.from_points(pts, metric="haversine")


def _between(space, i, j, t):
    a, b = space.points[i], space.points[j]
    return a + t * (b - a)


def _counts(idx, n):
    return np.bincount(idx, minlength=n)


def _chi2_p(counts, probs):
    keep = probs * counts.sum() >= 5
    obs = np.r_[counts[keep], counts[~keep].sum()]
    exp = np.r_[probs[keep], probs[~keep].sum()] * counts.sum()
    return chisquare(obs[exp > 0], exp[exp > 0]).pvalue


def test_samples_follow_planar_laplace_of_the_raw_location_not_of_its_point(city):
    raw = RawPlanarLaplace(city, 4.0)
    x = _between(city, 0, 1, 0.45)[None, :]          # a location between two points
    exact = np.exp(raw.output_log_probabilities(x)[0])
    idx = raw.privatize_indices(np.repeat(x, 40000, axis=0), rng=11)
    assert _chi2_p(_counts(idx, city.n), exact) > 1e-3
    # the distribution of the point it would snap to is another one, and the samples reject it
    snapped = int(np.argmin(haversine_km(x, city.points)[0]))
    at_point = np.exp(raw.output_log_probabilities(city.points[snapped][None, :])[0])
    assert _chi2_p(_counts(idx, city.n), at_point) < 1e-6


def test_the_command_line_path_draws_from_the_raw_location(city):
    mech = mdp.build("planar_laplace", city, 4.0)
    raw = RawPlanarLaplace(city, 4.0)
    x = _between(city, 2, 5, 0.5)
    line = f"{x[0]:.6f},{x[1]:.6f}"
    out = privatize_latlon_lines(mech, [line] * 20000, rng=5)
    pts = {f"{a:.6f},{b:.6f}": k for k, (a, b) in enumerate(city.points)}
    idx = np.array([pts[o] for o in out])
    x6 = np.array([[float(v) for v in line.split(",")]])
    assert _chi2_p(_counts(idx, city.n), np.exp(raw.output_log_probabilities(x6)[0])) > 1e-3
    # the Python API too, and the snapping path only when asked by name
    a = privatize_locations(mech, np.repeat(x6, 5, axis=0), rng=1)
    b = city.points[raw.privatize_indices(np.repeat(x6, 5, axis=0), rng=1)]
    assert np.array_equal(a, b)


def test_raw_guarantee_holds_across_cell_borders_where_snapping_breaks_it(city):
    eps = 4.0
    raw = RawPlanarLaplace(city, eps)
    opt = mdp.build("optimal", city, eps)
    rng = np.random.default_rng(0)
    worst_raw, worst_snap = -np.inf, -np.inf
    for _ in range(40):
        i, j = rng.choice(city.n, 2, replace=False)
        # two raw locations 1 m apart on either side of the midpoint of two points
        mid = _between(city, i, j, 0.5)
        step = (city.points[j] - city.points[i]) / 1e4
        xy = np.r_[[mid - step / 2], [mid + step / 2]]
        d = haversine_km(xy[:1], xy[1:])[0, 0]
        L = raw.output_log_probabilities(xy)
        worst_raw = max(worst_raw, float(np.max(np.abs(L[0] - L[1])) - eps * d))
        u, v = np.argmin(haversine_km(xy, city.points), axis=1)
        with np.errstate(divide="ignore"):
            K = np.log(opt.matrix)
        worst_snap = max(worst_snap, float(np.max(K[u] - K[v]) - eps * d))
    assert worst_raw <= 0.0
    assert worst_snap > 0.5            # the snapped pair is told apart far beyond exp(eps d)


def test_off_grid_violation_rate_is_positive_for_snapping_and_zero_for_raw(city):
    opt = mdp.build("optimal", city, 4.0)
    for near in (None, np.inf):
        rep = off_grid_violation_rate(opt, pairs=2000, near_km=near, rng=1)
        assert 0.05 < rep["rate"] <= 1.0 and rep["pairs"] > 1000 and rep["worst_excess"] > 0
    # the raw path on random raw pairs: never above exp(eps d), exactly computed
    raw = RawPlanarLaplace(city, 4.0)
    rng = np.random.default_rng(4)
    lo, hi = city.points.min(axis=0), city.points.max(axis=0)
    X, Y = lo + rng.random((150, 2)) * (hi - lo), lo + rng.random((150, 2)) * (hi - lo)
    LX, LY = raw.output_log_probabilities(X), raw.output_log_probabilities(Y)
    d = np.array([haversine_km(X[i:i + 1], Y[i:i + 1])[0, 0] for i in range(150)])
    assert np.all(np.max(LX - LY, axis=1) <= 4.0 * d)


def test_bayes_remap_never_loses_to_the_nearest_point_under_the_prior(city):
    rng = np.random.default_rng(2)
    prior = Prior.from_counts(rng.integers(0, 30, city.n) * (rng.random(city.n) < 0.5))
    near = RawPlanarLaplace(city, 2.0)
    bayes = RawPlanarLaplace(city, 2.0, remap="bayes", prior=prior)
    # common random numbers: the same noisy points, remapped both ways
    x = rng.choice(city.n, 30000, p=prior.probabilities)
    Z = near.area.forward(city.points[x]) + sample_planar_noise(30000, near.noise_epsilon, rng=rng)
    D = city.distances
    loss_near = D[x, near.remap_points(Z)].mean()
    loss_bayes = D[x, bayes.remap_points(Z)].mean()
    assert loss_bayes < loss_near
    # on the certified matrix the remap is exact and never worse
    mech = mdp.build("planar_laplace", city, 2.0)
    assert expected_loss(remap(mech, prior).matrix, prior, D) <= \
        expected_loss(mech.matrix, prior, D) + 1e-12


def test_explain_states_no_additive_term_for_the_raw_path(city):
    text = explain(mdp.build("planar_laplace", city, 3.0)).text()
    assert "no additive term" in text and "+ " not in text.splitlines()[-1]
    other = explain(mdp.build("exponential", city, 3.0)).text()
    assert "twice the snapping threshold" in other


def test_raw_locations_outside_the_area_are_refused_without_echoing_them(city):
    mech = mdp.build("planar_laplace", city, 3.0)
    with pytest.raises(mdp.ParameterError, match=r"line 2 \(1 of 2 locations\): outside") as e:
        privatize_latlon_lines(mech, ["38.71,-9.14", "48.2082,16.3738"], rng=0)
    assert "48.2" not in str(e.value) and "16.37" not in str(e.value)
    with pytest.raises(mdp.ParameterError, match="remap"):
        RawPlanarLaplace(city, 3.0, remap="mean")
    with pytest.raises(mdp.ParameterError, match="bayes"):
        RawPlanarLaplace(city, 3.0, prior=Prior.uniform(city.n))


def test_per_user_releases_of_planar_laplace_draw_from_the_raw_locations(city):
    import pandas as pd

    from geo.users import _entropy, privatize_users, user_generator

    mech = mdp.build("planar_laplace", city, 3.0)
    raw = RawPlanarLaplace(city, 3.0)
    x = np.r_[[_between(city, 0, 1, 0.3)], [_between(city, 4, 7, 0.6)], [[48.2, 16.37]]]
    frame = pd.DataFrame({"user": ["ann", "ann", "bob"], "lat": x[:, 0], "lon": x[:, 1]})
    released, _ = privatize_users(frame, mech, seed=7)
    assert list(released["user"]) == ["ann", "ann"]            # bob is outside the area
    expect = city.points[raw.privatize_indices(x[:2], rng=user_generator(_entropy(7), "ann"))]
    assert np.allclose(released[["lat", "lon"]].to_numpy(), expect)


def test_strict_per_user_releases_name_the_rows_outside_the_area(city):
    import pandas as pd

    from geo.users import privatize_users

    mech = mdp.build("planar_laplace", city, 3.0)
    x = np.r_[[_between(city, 0, 1, 0.3)], [[48.2, 16.37]], [_between(city, 4, 7, 0.6)]]
    frame = pd.DataFrame({"user": ["ann", "bob", "ann"], "lat": x[:, 0], "lon": x[:, 1]})
    with pytest.raises(mdp.ParameterError, match=r"input 2 \(of 3\): outside the area") as e:
        privatize_users(frame, mech, seed=7, strict=True)
    assert "48.2" not in str(e.value) and "16.37" not in str(e.value)
