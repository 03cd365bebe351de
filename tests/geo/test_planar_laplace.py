"""Planar Laplace on lat/lon: radial law, sampler, local projection, remapped family."""

from __future__ import annotations

import importlib
import tomllib
from pathlib import Path

import numpy as np
import pytest
from scipy import integrate, special, stats
from scipy.spatial import cKDTree

import mdp
from geo.planar_laplace import (
    PlanarLaplaceSettings,
    expected_displacement_km,
    planar_laplace,
    radius_cdf,
    radius_quantile,
    sample_planar_noise,
    sample_radius,
)
from geo.projection import LocalProjection
from mdp.errors import ParameterError
from mdp.privacy.exact import check_pure_exact
from mdp.spaces.metric_space import EARTH_RADIUS_KM, haversine_km

ROOT = Path(__file__).resolve().parents[2]
family = importlib.import_module("geo.planar_laplace_family")   # registers "planar_laplace"


# -- radial law -------------------------------------------------------------------------------
@pytest.mark.parametrize("eps", [0.3, 1.0, 7.5])
def test_quantile_inverts_closed_form_cdf(eps):
    p = np.array([1e-3, 0.01, 0.5, 0.9, 0.95, 1 - 1e-12])
    r = radius_quantile(p, eps)
    closed = 1 - (1 + eps * r) * np.exp(-eps * r)
    assert np.allclose(closed, p, rtol=1e-9, atol=1e-15)
    assert np.allclose(radius_cdf(r, eps), p, rtol=1e-9, atol=1e-15)


def test_known_radii_and_mean():
    # C(r) = 0.9 at eps r = 3.8897 (Andres et al. 2013 give r_0.9 ~ 3.9 / eps)
    assert radius_quantile(0.9, 1.0) == pytest.approx(3.88972, abs=1e-5)
    assert radius_quantile(0.95, 2.0) == pytest.approx(4.74386 / 2, abs=1e-5)
    assert expected_displacement_km(4.0) == 0.5
    mean = integrate.quad(lambda r: 1 - radius_cdf(r, 4.0), 0, np.inf)[0]
    assert mean == pytest.approx(0.5, rel=1e-8)


def test_radius_sampler_chi_square_on_quantile_bins():
    eps = 2.5
    r = sample_radius(200_000, eps, rng=11)
    edges = radius_quantile(np.linspace(0, 1, 41)[:-1], eps)
    counts = np.bincount(np.searchsorted(edges, r, side="right") - 1, minlength=40)
    assert stats.chisquare(counts).pvalue > 1e-3
    assert stats.kstest(r, lambda x: radius_cdf(x, eps)).pvalue > 1e-3


def test_radius_sampler_tail_matches_law_beyond_float_inversion():
    # P(r > r_q) for q = 1 - 1e-5: about 10 of 10^6 draws; the Bernoulli-trial integer part
    # reaches it (an inverse CDF on 53-bit uniforms would too here, but the count tests the law)
    eps = 1.0
    r = sample_radius(1_000_000, eps, rng=3)
    far = radius_quantile(1 - 1e-4, eps)
    k = int((r > far).sum())
    assert stats.binomtest(k, r.size, 1e-4).pvalue > 1e-3


def test_angle_uniform_and_noise_isotropic():
    N = sample_planar_noise(100_000, 1.0, rng=5)
    theta = np.mod(np.arctan2(N[:, 1], N[:, 0]), 2 * np.pi)
    counts = np.histogram(theta, bins=36, range=(0, 2 * np.pi))[0]
    assert stats.chisquare(counts).pvalue > 1e-3


# -- projection -------------------------------------------------------------------------------
def test_projection_round_trip_and_distortion_bound():
    rng = np.random.default_rng(0)
    P = np.c_[59.9 + rng.uniform(-1.5, 1.5, 300), 10.7 + rng.uniform(-3, 3, 300)]
    area = LocalProjection.around(P)
    c = area.radius_km / EARTH_RADIUS_KM
    assert area.scale_max == pytest.approx(c / np.sin(c), rel=1e-12)
    XY = area.forward(P)
    assert np.abs(area.inverse(XY) - P).max() < 1e-9
    # distances from the centre are exact
    assert np.allclose(np.hypot(XY[:, 0], XY[:, 1]), area.distance_from_centre_km(P), rtol=1e-10)
    D = haversine_km(P, P)
    E = np.linalg.norm(XY[:, None] - XY[None], axis=2)
    off = D > 0
    assert (E[off] / D[off]).max() <= area.scale_max * (1 + 1e-12)
    assert (E[off] / D[off]).max() > 1 + 0.5 * (area.scale_max - 1)      # the bound is tight-ish


def test_outside_area_refused_naming_the_row_not_the_location():
    area = LocalProjection(48.2, 16.37, 5.0)
    with pytest.raises(ParameterError, match="location 1 is outside the area") as err:
        planar_laplace([[48.2, 16.37], [48.4012, 16.37]], 1.0, area=area, rng=0)
    assert "48.4012" not in str(err.value) and " km from" not in str(err.value)
    with pytest.raises(ParameterError, match="row 0 is not") as err:
        planar_laplace([[95.25, 16.37]], 1.0, area=area, rng=0)
    assert "95.25" not in str(err.value)


def test_no_area_is_refused_rather_than_taken_from_the_inputs():
    # The smallest cap around one input is a 1 m disc: truncating to it released the location
    # to within 1.4 m (2,000 draws at 2.8 per km, whose mean displacement is 714 m).
    with pytest.raises(ParameterError, match="area is required"):
        planar_laplace([[48.2082, 16.3738]], 2.8, rng=0)
    with pytest.raises(ParameterError, match="geo.LocalProjection"):
        planar_laplace([[48.2082, 16.3738]], 2.8, area="Vienna", rng=0)


def test_an_area_smaller_than_the_noise_is_refused():
    x = [[48.2082, 16.3738]]
    with pytest.raises(ParameterError, match="below the noise's mean displacement 0.714"):
        planar_laplace(x, 2.8, area=LocalProjection(48.2082, 16.3738, 0.5), rng=0)
    rel = planar_laplace(np.tile(x, (2000, 1)), 2.8, area=LocalProjection(48.2082, 16.3738, 1.0),
                         rng=0)
    d = haversine_km(np.array(x), rel.latlon)[0]
    assert d.mean() > 0.5                                            # noise, not the input


def test_a_grid_finer_than_the_arithmetic_is_refused():
    area = LocalProjection(48.2, 16.37, 10.0)
    with pytest.raises(ParameterError, match="grid_m = 1e-12 is too fine"):
        planar_laplace([[48.2, 16.37]], 1.0, area=area,
                       settings=PlanarLaplaceSettings(grid_m=1e-12), rng=0)
    rel = planar_laplace([[48.2, 16.37]], 1.0, area=LocalProjection(0.0, 0.0, 9000.0),
                         rng=0)
    assert rel.log_slack < 1e-6                          # the default grid fits the largest area


# -- the lat/lon release ----------------------------------------------------------------------
def test_release_on_grid_truncated_and_displaced_as_the_law_says():
    area = LocalProjection(48.2082, 16.3738, 30.0)
    x = np.tile([[48.2082, 16.3738]], (20_000, 1))
    rel = planar_laplace(x, 2.0, area=area, settings=PlanarLaplaceSettings(grid_m=5.0), rng=9)
    XY = area.forward(rel.latlon)
    g = XY / 0.005
    assert np.abs(g - np.rint(g)).max() < 1e-6                       # grid points only
    assert np.hypot(XY[:, 0], XY[:, 1]).max() <= 30.0 + 0.005        # truncated to the area
    d = haversine_km(x[:1], rel.latlon)[0]
    assert d.mean() == pytest.approx(2 / rel.noise_epsilon, rel=0.03)
    assert np.mean(d <= radius_quantile(0.9, 2.0)) == pytest.approx(0.9, abs=0.01)
    assert rel.noise_epsilon == pytest.approx(2.0 / area.scale_max)
    assert 0 < rel.log_slack < 1e-8
    assert "exp(2 x d(x, y) in km" in rel.describe()


def test_release_reproducible_by_seed():
    a = planar_laplace([[48.2, 16.37]], 1.0, area=LocalProjection(48.2, 16.37, 10), rng=4)
    b = planar_laplace([[48.2, 16.37]], 1.0, area=LocalProjection(48.2, 16.37, 10), rng=4)
    assert np.array_equal(a.latlon, b.latlon)


# -- the remapped family ----------------------------------------------------------------------
def test_two_point_masses_match_half_plane_integral():
    # M[0, 1] = Pr[noise beyond the bisector at d/2] = int_{d/2}^inf (eps^2 / pi) x K1(eps x) dx
    eps, dist = 1.3, 0.8
    M = family.voronoi_masses(np.array([[0.0, 0.0], [dist, 0.0]]), eps)
    ref = integrate.quad(lambda x: eps ** 2 / np.pi * x * special.k1(eps * x), dist / 2, np.inf,
                         epsabs=1e-14, epsrel=1e-12)[0]
    assert M[0, 1] == pytest.approx(ref, rel=1e-9)
    assert M[1, 0] == pytest.approx(ref, rel=1e-9)


def test_masses_match_monte_carlo_chi_square():
    rng = np.random.default_rng(0)
    xy = rng.uniform(0, 4, (25, 2))
    M = family.voronoi_masses(xy, 1.0)
    Z = xy[3] + sample_planar_noise(200_000, 1.0, rng=1)
    _, j = cKDTree(xy).query(Z)
    counts = np.bincount(j, minlength=25)
    expected = M[3] * len(Z)
    assert stats.chisquare(counts, expected).pvalue > 1e-3


def test_family_builds_certified_and_round_trips(tmp_path):
    rng = np.random.default_rng(1)
    P = np.c_[48.2 + rng.uniform(-0.05, 0.05, 30), 16.37 + rng.uniform(-0.07, 0.07, 30)]
    space = mdp.MetricSpace.from_points(P, metric="haversine")
    mech = mdp.build("planar_laplace", space, 2.0)
    priv = mech.stats["privacy"]
    assert priv["verified"] and priv["measured_eps"] <= 2.0 * (1 + 1e-9)
    assert priv["measured_eps"] > 0.99 * 2.0 * (1 - family.NOISE_MARGIN)   # not loose
    mech.save(tmp_path / "pl.npz")
    again = mdp.load(tmp_path / "pl.npz")
    assert np.array_equal(again.matrix, mech.matrix)


def test_family_refuses_non_geographic_space():
    space = mdp.MetricSpace.from_points(np.arange(6.0).reshape(3, 2))
    with pytest.raises(ParameterError, match="haversine"):
        mdp.build("planar_laplace", space, 1.0)


def test_pyproject_declares_the_family_plugin():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    groups = meta["project"]["entry-points"]
    assert groups["mdp.families"]["geo"] == "geo.planar_laplace_family"


@pytest.mark.parametrize("eps_times_median", [0.01, 1.0, 100.0, 1000.0])
def test_family_at_every_epsilon_passes_an_exact_check(eps_times_median):
    # a 400 km wide space: far cells have masses down to exp(-2000), kept as log-probabilities
    rng = np.random.default_rng(1)
    space = mdp.MetricSpace.from_points(np.c_[rng.uniform(45, 50, 12), rng.uniform(0, 8, 12)],
                                        metric="haversine")
    median = float(np.median(space.distances[np.triu_indices(space.n, 1)]))
    mech = mdp.build("planar_laplace", space, eps_times_median / median)
    assert mech.representation == "log" and np.isfinite(mech.log_matrix).all()
    ok, triple = check_pure_exact(mech.log_matrix, space.distances,
                                  mech.stats["privacy"]["certified_eps"], log=True)
    assert ok, triple
    # not loose either: the margin below epsilon is the projection's and NOISE_MARGIN's
    assert mech.stats["privacy"]["measured_eps"] > 0.99 * mech.epsilon
