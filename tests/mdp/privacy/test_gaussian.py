"""Tests of mdp.privacy.gaussian: Gaussian mechanism calibration (Balle & Wang 2018, Theorem 8; the
classical rule of Dwork & Roth 2014; the rule of Gilbert & McMillan 2018)."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

import mdp.privacy.gaussian
from mdp.errors import ParameterError
from mdp.privacy.gaussian import (
    GaussianCalibration,
    add_gaussian_noise,
    calibrate_gaussian,
    gaussian_delta,
    gaussian_sigma,
)
from tests.support.reference_gaussian import exact_delta_scipy

# ---------------------------------------------------------------- Gaussian calibration

@pytest.mark.parametrize("eps, expected", [(1.0, 3.7306316), (0.1, 30.7495661)])
def test_analytic_sigma_published_values(eps, expected):
    sigma = gaussian_sigma(eps, 1e-5, 1.0)
    assert sigma == pytest.approx(expected, abs=1e-7)
    # The DP condition of Balle & Wang Thm 8 holds with equality (independent evaluation) ...
    assert exact_delta_scipy(sigma, eps, 1.0) == pytest.approx(1e-5, rel=1e-6)
    assert gaussian_delta(sigma, eps, 1.0) <= 1e-5
    # ... and any visibly smaller sigma violates it.
    assert exact_delta_scipy(sigma * (1 - 1e-6), eps, 1.0) > 1e-5


@pytest.mark.parametrize("eps, delta, sens", [(0.5, 1e-3, 0.1359), (3.0, 0.1, 0.01222),
                                              (10.0, 1e-6, 2.0), (0.01, 1e-2, 1.0)])
def test_every_rule_is_private_and_analytic_is_smallest(eps, delta, sens):
    sig = {r: gaussian_sigma(eps, delta, sens, r) for r in ("analytic", "seed")}
    if eps < 1:
        sig["classical"] = gaussian_sigma(eps, delta, sens, "classical")
        assert sig["classical"] == pytest.approx(np.sqrt(2 * np.log(1.25 / delta)) * sens / eps)
    assert sig["seed"] == pytest.approx(2 * np.log(1.25 / delta) * sens / eps)
    for s in sig.values():
        assert exact_delta_scipy(s, eps, sens) <= delta * (1 + 1e-9)
        assert sig["analytic"] <= s * (1 + 1e-12)
    assert exact_delta_scipy(sig["analytic"], eps, sens) == pytest.approx(delta, rel=1e-6)


def test_classical_rule_refuses_large_epsilon():
    with pytest.raises(ValueError, match="epsilon < 1, got epsilon=1.0"):
        gaussian_sigma(1.0, 1e-5, 1.0, "classical")


@pytest.mark.parametrize("kwargs, match", [
    (dict(epsilon=-1, delta=1e-5, sensitivity=1), "epsilon must be > 0, got -1"),
    (dict(epsilon=1, delta=0, sensitivity=1), "delta must be in"),
    (dict(epsilon=1, delta=1e-5, sensitivity=0), "sensitivity must be > 0"),
    (dict(epsilon=1, delta=1e-5, sensitivity=1, rule="laplace"), "rule must be one of"),
])
def test_gaussian_sigma_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        gaussian_sigma(**kwargs)


@pytest.mark.parametrize("sigma, eps, sens", [(1.0, 0.5, 1.0), (0.35, 1.0, 0.1359),
                                              (3.7306316, 1.0, 1.0), (0.2, 2.0, 0.3)])
def test_gaussian_delta_agrees_with_dp_accounting(sigma, eps, sens):
    # Independent library: the privacy loss distribution of the Gaussian mechanism
    # (Google's dp_accounting) gives the tight delta at eps, up to its discretisation.
    from dp_accounting.pld import privacy_loss_distribution as pld

    ref = pld.from_gaussian_mechanism(sigma, sensitivity=sens, value_discretization_interval=1e-5)
    assert gaussian_delta(sigma, eps, sens) == pytest.approx(
        ref.get_delta_for_epsilon(eps), rel=1e-3, abs=1e-9)


def test_calibrate_gaussian_is_verified_and_built_by_keyword():
    cal = calibrate_gaussian(0.5, 1.0, 1e-3)
    assert isinstance(cal, GaussianCalibration)
    assert cal == GaussianCalibration(sensitivity=0.5, sigma=gaussian_sigma(1.0, 1e-3, 0.5),
                                      rule="analytic", epsilon=1.0, delta=1e-3,
                                      delta_exact=cal.delta_exact)
    assert cal.delta_exact <= 1e-3
    assert exact_delta_scipy(cal.sigma, 1.0, 0.5) == pytest.approx(1e-3, rel=1e-6)
    seed = calibrate_gaussian(0.5, 1.0, 1e-3, rule="seed")
    assert seed.sigma == pytest.approx(2 * np.log(1250) * 0.5) and seed.delta_exact < 1e-20
    with pytest.raises(ParameterError, match="sensitivity must be > 0, got 0"):
        calibrate_gaussian(0, 1.0, 1e-3)


def test_add_gaussian_noise_moments_and_bad_input():
    x = add_gaussian_noise(np.zeros(200_000), 0.7, rng=3)
    assert x.mean() == pytest.approx(0.0, abs=0.01) and x.std() == pytest.approx(0.7, rel=0.01)
    np.testing.assert_array_equal(add_gaussian_noise(np.ones(4), 0.3, rng=1),
                                  add_gaussian_noise(np.ones(4), 0.3, rng=1))
    with pytest.raises(ParameterError, match="y must be a finite 1-D array"):
        add_gaussian_noise(np.ones((2, 2)), 0.3)
    with pytest.raises(ParameterError, match="sigma must be > 0"):
        add_gaussian_noise(np.ones(2), 0.0)


def test_gaussian_module_imports_only_from_below():
    # mdp is the bottom layer: this module must not import geo, text or experiments.
    tree = ast.parse(Path(mdp.privacy.gaussian.__file__).read_text())
    names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert not {x.split(".")[0] for x in names} & {"geo", "text", "experiments"}
