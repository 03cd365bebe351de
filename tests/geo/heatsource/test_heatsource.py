"""Tests of geo.heatsource (seed: Gilbert & McMillan, local DP heat sources)."""

from __future__ import annotations

import itertools

import cvxpy as cp
import numpy as np
import pytest
from scipy.optimize import linprog
from scipy.stats import wasserstein_distance

from geo.heatsource import (
    calibrate_sensors,
    compress_matrix,
    emd_error,
    gaussian_sigma,
    heat_matrix,
    least_residual,
    lemma5,
    privatize_readings,
    random_sources,
    recover,
    sensitivity,
)
from tests.support.reference_gaussian import exact_delta_scipy

# ---------------------------------------------------------------- heat matrix and sensitivity

def test_heat_matrix_entries_closed_form():
    A = heat_matrix(4, 3, 0.1)
    assert A.shape == (3, 4)
    x = 2 / 3 - 3 / 4  # sensor j=2, source i=3
    assert A[1, 2] == pytest.approx(np.exp(-x * x / 0.4) / np.sqrt(0.4 * np.pi), rel=1e-14)


def test_sensitivity_reference_values():
    assert sensitivity(heat_matrix(100, 50, 0.05)) == pytest.approx(0.1359, abs=5e-5)
    assert sensitivity(heat_matrix(100, 50, 0.5)) == pytest.approx(0.01222, abs=5e-6)


def test_sensitivity_equals_brute_force_over_neighbours():
    # Definition 2: neighbours swap the values of two adjacent cells; values in [0, 1], so the
    # extreme pairs have entries in {0, 1}. Enumerate them all for n = 6.
    A = heat_matrix(6, 5, 0.02)
    best = 0.0
    for f in itertools.product([0.0, 1.0], repeat=6):
        f = np.array(f)
        for i in range(5):
            g = f.copy()
            g[i], g[i + 1] = f[i + 1], f[i]
            best = max(best, np.linalg.norm(A @ f - A @ g))
    assert sensitivity(A) == pytest.approx(best, rel=1e-12)


def test_sensitivity_scales_as_appendix_b():
    # O(sqrt(m) / (n T^1.5)): exactly 1/n and sqrt(m) once grids resolve the kernel ...
    d = sensitivity(heat_matrix(200, 50, 0.05))
    assert sensitivity(heat_matrix(400, 50, 0.05)) / d == pytest.approx(0.5, rel=1e-3)
    assert sensitivity(heat_matrix(200, 200, 0.05)) / d == pytest.approx(2.0, rel=1e-3)
    # ... T^-1.5 as T grows (the regime where the bound is tight) ...
    big = [sensitivity(heat_matrix(200, 400, T)) * T**1.5 for T in (5.0, 20.0, 80.0)]
    assert big[1] == pytest.approx(big[0], rel=0.05) and big[2] == pytest.approx(big[1], rel=0.01)
    # ... while for small T it only grows like T^-0.75 (the bound is loose there; README).
    lo = [sensitivity(heat_matrix(200, 400, T)) for T in (0.002, 0.01)]
    slope = np.log(lo[1] / lo[0]) / np.log(5.0)
    assert slope == pytest.approx(-0.75, abs=0.02)
    # The O(.) bound itself holds with one constant over four decades of T.
    ratios = [sensitivity(heat_matrix(200, 400, T)) * 200 * T**1.5 / np.sqrt(400)
              for T in (0.001, 0.01, 0.1, 1.0, 10.0, 100.0)]
    assert max(ratios) < 0.2


# ---------------------------------------------------------------- sensor calibration

def test_calibrate_sensors_verifies_privacy_and_privatizes():
    A = heat_matrix(100, 50, 0.05)
    cal = calibrate_sensors(A, 1.0, 1e-3)
    assert cal.sensitivity == pytest.approx(0.1359, abs=5e-5)
    assert cal.delta_exact <= 1e-3
    assert exact_delta_scipy(cal.sigma, 1.0, cal.sensitivity) == pytest.approx(1e-3, rel=1e-6)
    noise = np.concatenate([cal.privatize(np.zeros(50), rng=s) for s in range(400)])
    assert noise.std() == pytest.approx(cal.sigma, rel=0.03)
    np.testing.assert_array_equal(privatize_readings(np.ones(5), 0.3, rng=7),
                                  privatize_readings(np.ones(5), 0.3, rng=7))


# ---------------------------------------------------------------- recovery

def _scs_objective(A, y, rho):
    f = cp.Variable(A.shape[1])
    prob = cp.Problem(cp.Minimize(cp.sum(f)), [cp.norm(A @ f - y, 2) <= rho, f >= 0, f <= 1])
    prob.solve(solver=cp.SCS, eps_abs=1e-10, eps_rel=1e-10, max_iters=200_000)
    return prob.value


def _scs_least_residual(A, y):
    f = cp.Variable(A.shape[1])
    prob = cp.Problem(cp.Minimize(cp.norm(A @ f - y, 2)), [f >= 0, f <= 1])
    prob.solve(solver=cp.SCS, eps_abs=1e-10, eps_rel=1e-10, max_iters=200_000)
    return prob.value


def test_recovery_is_optimal_on_every_trial_of_a_sweep():
    rng = np.random.default_rng(2024)
    n, m = 60, 30
    widened = zero = 0
    for T, sigma, k in itertools.product((0.05, 0.5), (0.05, 0.3, 1.0), (1, 3)):
        A = heat_matrix(n, m, T)
        f0 = random_sources(n, k, rng=rng)
        y = A @ f0 + sigma * rng.standard_normal(m)
        res = recover(A, y, sigma * np.sqrt(m))
        assert res.optimal, (T, sigma, k, res)
        assert abs(res.gap) <= 1e-6 * (1 + res.objective)
        assert res.residual <= res.rho * (1 + 1e-6)
        assert np.all((res.f >= 0) & (res.f <= 1))
        if res.is_zero:
            zero += 1
            assert np.linalg.norm(y) <= res.rho
            continue
        # Independent solver (SCS, first-order) on the same radius.
        assert res.objective == pytest.approx(_scs_objective(A, y, res.rho), rel=1e-4, abs=1e-5)
        if res.infeasible:
            widened += 1
            r_min = _scs_least_residual(A, y)
            assert r_min > sigma * np.sqrt(m)  # the requested radius really was infeasible
            assert res.rho == pytest.approx(1e-4 * res.least_residual + res.least_residual)
            assert res.least_residual == pytest.approx(r_min, rel=1e-5)
    assert widened >= 2  # the policy is exercised by this sweep


def test_noiseless_recovery_matches_linprog():
    # rho = 0 makes the program an LP: min 1^T f, A f = y, 0 <= f <= 1 (HiGHS via scipy).
    rng = np.random.default_rng(5)
    for k in (1, 2, 4):
        A = heat_matrix(40, 30, 0.05)
        f0 = random_sources(40, k, rng=rng)
        y = A @ f0
        lp = linprog(np.ones(40), A_eq=A, b_eq=y, bounds=(0, 1), method="highs")
        res = recover(A, y, 0.0)
        assert lp.status == 0 and res.optimal
        assert res.objective == pytest.approx(lp.fun, rel=1e-6)


def test_zero_policy():
    A = heat_matrix(50, 20, 0.5)
    y = np.full(20, 0.01)
    res = recover(A, y, 1.0)
    assert res.is_zero and res.objective == 0.0 and not res.f.any()
    f0 = random_sources(50, 1)
    assert np.isnan(emd_error(f0, res.f, zero_policy="nan"))
    assert emd_error(f0, res.f) == pytest.approx(emd_error(f0, np.ones(50)))


def test_infeasible_policy_widens_to_least_residual():
    A = heat_matrix(50, 20, 0.05)
    y = A @ random_sources(50, 2, rng=0) - 0.3  # negative offset: unreachable with f >= 0
    res = recover(A, y, 0.01)
    r_min = _scs_least_residual(A, y)
    assert r_min > 0.01 and res.infeasible and res.policy == "widened"
    assert res.rho == pytest.approx((1 + 1e-4) * r_min, rel=1e-5)
    assert res.optimal


def test_compressed_recovery_matches_full():
    A = heat_matrix(3000, 40, 0.05)
    comp = compress_matrix(A)
    assert comp.rank <= 20 and comp.error <= 1e-9 * np.linalg.norm(A, 2)
    np.testing.assert_allclose(comp.U.T @ comp.U, np.eye(comp.rank), atol=1e-12)
    rng = np.random.default_rng(3)
    f0 = random_sources(3000, 2, rng=rng)
    y = A @ f0 + 0.1 * rng.standard_normal(40)
    a = recover(comp, y, 0.1 * np.sqrt(40))
    b = recover(A, y, 0.1 * np.sqrt(40), compress=False)
    assert a.optimal and b.optimal and a.rank == comp.rank and b.rank is None
    assert a.objective == pytest.approx(b.objective, rel=1e-6)
    assert a.least_residual == pytest.approx(least_residual(A, y)[0], rel=1e-6)


@pytest.mark.parametrize("args, match", [
    ((np.ones((3, 4)), np.ones(2), 1.0), r"y must be a finite array of shape \(3,\)"),
    ((np.ones((3, 4)), np.ones(3), -1.0), "rho must be >= 0, got -1.0"),
    ((np.ones(4), np.ones(3), 1.0), "A must be a 2-D array"),
])
def test_recover_bad_input(args, match):
    with pytest.raises(ValueError, match=match):
        recover(*args)


def test_heat_matrix_bad_input():
    with pytest.raises(ValueError, match="n must be >= 2, got 1"):
        heat_matrix(1, 5, 0.1)
    with pytest.raises(ValueError, match="T must be > 0, got -0.1"):
        heat_matrix(10, 5, -0.1)
    with pytest.raises(TypeError, match="m must be an integer"):
        heat_matrix(10, 5.5, 0.1)


# ---------------------------------------------------------------- EMD and Lemma 5

def test_emd_error_in_unit_interval_units():
    n = 50
    p, q = np.zeros(n), np.zeros(n)
    p[0], q[-1] = 1.0, 2.0
    assert emd_error(p, q) == pytest.approx((n - 1) / n)
    rng = np.random.default_rng(0)
    a, b = rng.random(n), rng.random(n)
    x = np.arange(1, n + 1) / n
    assert emd_error(a, b) == pytest.approx(wasserstein_distance(x, x, a, b), rel=1e-12)
    with pytest.raises(ValueError, match="zero_policy"):
        emd_error(a, b, zero_policy="max")


def test_lemma5_closed_form_and_random_tall_matrices():
    rho = 0.01
    chk = lemma5(np.diag([1.0, rho]))  # seed section 3.1 example
    assert chk.kappa == pytest.approx(1 / rho)
    assert chk.sensitivity == pytest.approx(np.sqrt(1 + rho**2))
    assert chk.bound == pytest.approx(rho / np.sqrt(2)) and chk.applies and chk.holds
    rng = np.random.default_rng(1)
    for _ in range(20):
        M = rng.standard_normal((8, 5)) @ np.diag(10.0 ** -rng.uniform(0, 4, 5))
        c = lemma5(M)
        assert c.applies and c.holds
    assert lemma5(heat_matrix(30, 50, 0.05)).holds


def test_lemma5_fails_when_n_exceeds_m():
    # Slowly rotating unit columns in R^2: kappa ~ 1 but adjacent columns nearly equal.
    theta = np.linspace(0, np.pi / 2, 100)
    chk = lemma5(np.vstack([np.cos(theta), np.sin(theta)]))
    assert not chk.applies and not chk.holds
    assert chk.sensitivity < chk.bound / 10


# ---------------------------------------------------------------- command and experiment

def test_heatsource_command_prints_calibration_and_emd(capsys, tmp_path):
    import argparse

    from geo.heatsource_command import configure_parser, run_cli

    parser = argparse.ArgumentParser()
    configure_parser(parser)
    png = tmp_path / "ex.png"
    args = parser.parse_args(["--n", "100", "--m", "50", "--T", "0.05", "--epsilon", "1",
                              "--delta", "1e-3", "--trials", "3", "--plot", str(png)])
    assert run_cli(args) == 0
    out = capsys.readouterr().out
    sigma = gaussian_sigma(1.0, 1e-3, sensitivity(heat_matrix(100, 50, 0.05)))
    assert "Delta_2(A) = 0.135897" in out
    assert f"sigma = {sigma:.6g}" in out
    assert "classical  n/a" in out and "certified optimal: 3/3" in out
    assert png.stat().st_size > 1000
    bad = parser.parse_args(["--n", "1"])
    with pytest.raises(ValueError, match="n must be >= 2, got 1"):
        run_cli(bad)


def test_experiment_job_counts_policies():
    from experiments.heatsources import _jobs, _run_job

    jobs = _jobs({"n": [30], "m": [10], "T": [0.05], "sigma": [0.3], "epsilon": [1.0]}, ["seed"])
    assert {(j["figure"], j["variable"]) for j in jobs} >= {("3", "sigma"), ("6", "epsilon")}
    job = dict(figure="6", variable="epsilon", value=1.0, rule="seed", n=30, m=10, T=0.05,
               epsilon=1.0, delta=0.1)
    rec = _run_job(job, 4, 1, np.random.default_rng(0))
    assert rec["sigma"] == pytest.approx(2 * np.log(12.5) * rec["sensitivity"])
    assert rec["optimal"] == 4 and 0 <= rec["infeasible"] <= 4 and 0 <= rec["zero"] <= 4
    assert rec["delta_exact"] <= 0.1


# ---------------------------------------------------------------- package layout

def test_package_reexports_every_public_name_of_its_modules():
    import geo.heatsource as hs
    import mdp.privacy.gaussian
    from geo.heatsource import model, privacy, recovery, trials

    for mod in (model, privacy, recovery, trials):
        for name in mod.__all__:
            if name != "check_matrix":  # a helper of the submodules, not part of the API
                assert getattr(hs, name) is getattr(mod, name), name
    for name in ("GAUSSIAN_RULES", "gaussian_delta", "gaussian_sigma"):
        assert getattr(hs, name) is getattr(mdp.privacy.gaussian, name)
    assert hs.SensorCalibration is mdp.privacy.gaussian.GaussianCalibration
    assert set(hs.__all__) <= set(dir(hs))


def test_dataclasses_are_built_by_keyword():
    # A positional call to a 14-field dataclass silently swaps fields when one is added.
    import ast
    import dataclasses
    from pathlib import Path

    import geo.heatsource as hs
    import mdp.privacy.gaussian

    classes = {n for n in dir(hs) if dataclasses.is_dataclass(getattr(hs, n))}
    classes |= {n for n in dir(mdp.privacy.gaussian) if dataclasses.is_dataclass(getattr(mdp.privacy.gaussian, n))}
    assert {"RecoveryResult", "CompressedMatrix", "Lemma5Check", "GaussianCalibration"} <= classes
    files = [*Path(hs.__file__).parent.glob("*.py"), Path(mdp.privacy.gaussian.__file__)]
    for path in files:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) in classes:
                assert not node.args, f"{path.name}:{node.lineno}: {node.func.id} built positionally"
