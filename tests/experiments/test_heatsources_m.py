"""Tests of the sweep in the number of sensors (experiments.heatsources_m; Gilbert & McMillan
2018, Figures 3b and 6b): its baseline quantities against brute force and closed forms."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.integrate import quad

from experiments.heatsources_m import (
    SETTINGS,
    infeasible_bounds,
    ml_location_emd,
    model_quantities,
    saturation_fit,
)
from geo.heatsource import (
    compress_matrix,
    heat_kernel,
    heat_matrix,
    random_sources,
    run_trials,
    sensitivity,
    sensor_positions,
    source_positions,
)


@pytest.mark.parametrize("m", [1, 2, 3])
def test_sensitivity_brute_force_on_tiny_sensor_layouts(m):
    # Definition 2 of Gilbert & McMillan: neighbours swap the values a, b in [0, 1] of two adjacent
    # cells. Enumerate every vector on a value grid (0, 1/2, 1) for n = 5 and every swap.
    A = heat_matrix(5, m, 0.05)
    best = 0.0
    for f in itertools.product([0.0, 0.5, 1.0], repeat=5):
        f = np.array(f)
        for i in range(4):
            g = f.copy()
            g[i], g[i + 1] = f[i + 1], f[i]
            best = max(best, float(np.linalg.norm(A @ f - A @ g)))
    assert sensitivity(A) == pytest.approx(best, rel=1e-12)


def test_sensitivity_grows_like_sqrt_m_with_continuum_constant():
    # Delta_2 ~ (sqrt(m) / n) max_x sqrt(int_0^1 g_x(s - x, T)^2 ds) once the grids resolve the
    # kernel: the sqrt(m) growth that makes private noise grow like sqrt(m) (Fig. 6b).
    T, n = 0.05, 400

    def dg2(s, x):
        return (((s - x) / (2 * T)) * heat_kernel(s - x, T)) ** 2

    cont = max(np.sqrt(quad(dg2, 0, 1, args=(x,), points=[x], limit=200)[0])
               for x in source_positions(n))
    for m in (200, 800):
        assert sensitivity(heat_matrix(n, m, T)) * n / np.sqrt(m) == pytest.approx(cont, rel=0.01)


def test_model_quantities_closed_forms():
    noisy, seed, analytic = SETTINGS
    n, i0 = 100, 49
    for m in (10, 100):
        q = model_quantities(noisy, m)
        assert q["sigma"] == 0.1
        assert q["sensitivity"] == pytest.approx(sensitivity(heat_matrix(n, m, 0.5)))
        # Cramer-Rao scale with the analytic derivative d/dx g(s - x) = (s - x)/(2T) g(s - x):
        s = sensor_positions(m)
        x0 = source_positions(n)[i0]
        deriv = np.linalg.norm((s - x0) / (2 * 0.5) * heat_kernel(s - x0, 0.5))
        assert q["crlb_emd"] == pytest.approx(np.sqrt(2 / np.pi) * 0.1 / deriv, rel=1e-3)
        # The paper's rule: sigma = 2 ln(1.25/delta) Delta_2 / eps.
        qs = model_quantities(seed, m)
        assert qs["sigma"] == pytest.approx(2 * np.log(12.5) * qs["sensitivity"])
    # Private noise scales with Delta_2 ~ sqrt(m), so the one-cell SNR settles to a constant,
    # while with fixed sigma it grows like sqrt(m).
    a = [model_quantities(analytic, m)["step_snr"] for m in (100, 400)]
    assert a[1] == pytest.approx(a[0], rel=1e-3)
    b = [model_quantities(noisy, m)["step_snr"] for m in (100, 400)]
    assert b[1] / b[0] == pytest.approx(2.0, rel=1e-2)


def test_ml_location_is_brute_force_argmin():
    A = heat_matrix(40, 12, 0.05)
    f0 = random_sources(40)
    assert ml_location_emd(A, A @ f0, f0) == 0.0
    rng = np.random.default_rng(4)
    for _ in range(20):
        y = A @ f0 + 0.3 * rng.standard_normal(12)
        best = min(range(40), key=lambda i: np.sum((A[:, i] - y) ** 2))
        assert ml_location_emd(A, y, f0) == pytest.approx(abs(best - 19) / 40, abs=1e-12)


def test_infeasible_bounds_bracket_and_invariants():
    assert infeasible_bounds(5, 5) == (0.0, pytest.approx(0.4159, abs=1e-4))  # chi2.sf(5, 5)
    lo, hi = infeasible_bounds(400, 7)
    assert 0.3 < lo < hi < 0.5
    # Every widened trial had ||e|| > sigma sqrt(m) (f0 is feasible otherwise), and every trial
    # whose noise outside range(A) exceeds the radius was widened.
    A = heat_matrix(100, 60, 0.5)
    op = compress_matrix(A)
    sigma = 0.1
    rows = run_trials(op, sigma, 60, rng=11)
    rho = sigma * np.sqrt(60)
    outside = [np.linalg.norm(r["y"] - op.U @ (op.U.T @ r["y"])) for r in rows]
    for r, out in zip(rows, outside, strict=True):
        if r["infeasible"]:
            assert r["noise_norm"] > rho
        if out > rho * (1 + 1e-9):
            assert r["infeasible"]
    share = np.mean([r["infeasible"] for r in rows])
    lo, hi = infeasible_bounds(60, op.rank)
    assert lo - 0.2 <= share <= hi + 0.2  # binomial slack at 60 trials (about 3 sd)


def test_saturation_fit_recovers_exact_form():
    import pandas as pd

    m = np.array([3, 10, 30, 100, 300])
    df = pd.DataFrame(dict(m=m, emd_mean=0.05 + 0.2 / np.sqrt(m), emd_ci95=0.01, trials=100))
    fit = saturation_fit(df)
    assert fit["c0"] == pytest.approx(0.05, abs=1e-9) and fit["c1"] == pytest.approx(0.2, abs=1e-9)
    assert fit["chi2_dof"] == pytest.approx(0.0, abs=1e-12) and fit["c0_ci95"] > 0


def test_m_sweep_writes_outputs(tmp_path, monkeypatch):
    import argparse

    import pandas as pd

    import experiments.heatsources_m as hm

    monkeypatch.setitem(hm.M_GRID, "quick", [3, 20])
    args = argparse.Namespace(quick=True, out=str(tmp_path), seed=0, trials=4, no_progress=True)
    df = hm.run_m_sweep(args)
    assert len(df) == 2 * len(SETTINGS) and (df.optimal == 4).all()
    assert df.infeasible.le(4).all() and (df.zero <= 4).all()
    back = pd.read_csv(tmp_path / "m_sweep.csv")
    assert list(back.m) == list(df.m)
    for name in ("m_sweep.md", "fig_m_sweep.png", "fig_m_model.png"):
        assert (tmp_path / name).stat().st_size > 500
