"""Clarabel as an LP engine (mdp.lp.conic): optimum and multipliers against HiGHS, errors, Ctrl-C."""

import os
import signal

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import linprog

from mdp.errors import ParameterError
from mdp.lp import LPError, LPTimeout, SparseLP, conic, progress
from mdp.lp.conic import solve_clarabel


def _mixed_lp(seed: int, m: int = 40, n: int = 25):
    """A random bounded LP with equality, >=, <= and ranged rows, free and bounded columns, whose
    interior contains x0 (so it is feasible)."""
    rng = np.random.default_rng(seed)
    A = sp.random(m, n, density=0.3, random_state=seed, format="csr") + sp.eye(m, n, format="csr")
    x0 = rng.random(n)
    Ax = A @ x0
    kind = rng.integers(0, 4, size=m)  # 0: =, 1: >=, 2: <=, 3: ranged
    lo = np.where(kind == 0, Ax, np.where(kind % 2 == 1, Ax - rng.random(m), -np.inf))
    up = np.where(kind == 0, Ax, np.where(kind >= 2, Ax + rng.random(m), np.inf))
    col_lower = np.where(rng.random(n) < 0.3, -np.inf, -rng.random(n))
    # a box row per column keeps the LP bounded whatever the cost
    A = sp.vstack([A, sp.eye(n)], format="csr")
    lo, up = np.r_[lo, np.full(n, -2.0)], np.r_[up, np.full(n, 2.0)]
    return rng.normal(size=n), A, lo, up, col_lower


@pytest.mark.parametrize("seed", range(4))
def test_clarabel_matches_highs_optimum_and_multipliers(seed):
    c, A, lo, up, xl = _mixed_lp(seed)
    got, stats = solve_clarabel(c, A, row_lower=lo, row_upper=up, col_lower=xl)
    ref = SparseLP(c, A, row_lower=lo, row_upper=up, col_lower=xl, solver="simplex").solve()
    assert got.objective == pytest.approx(ref.objective, rel=1e-7, abs=1e-8)
    assert stats["model_status"] == "Solved" and stats["ipm_iterations"] > 0
    assert stats["solver"].startswith("Clarabel")
    # the multipliers in HiGHS's convention: stationarity and the signs of the bounds
    assert np.allclose(c - A.T @ got.row_dual - got.col_dual, 0.0, atol=1e-7)
    ranged_or_eq = np.isfinite(lo) & np.isfinite(up)
    assert np.all(got.row_dual[~np.isfinite(up)] >= -1e-9)   # only a lower bound: y >= 0
    assert np.all(got.row_dual[~np.isfinite(lo)] <= 1e-9)    # only an upper bound: y <= 0
    assert np.all(got.col_dual[np.isfinite(xl)] >= -1e-9)
    assert np.all(got.col_dual[~np.isfinite(xl)] == 0.0)
    # a random LP has one optimal dual: the same as the simplex's
    assert np.allclose(got.row_dual, ref.row_dual, atol=1e-6)
    assert ranged_or_eq.any()
    # and the objective by an independent solver
    bounds = list(zip(np.where(np.isfinite(xl), xl, None), [None] * len(xl), strict=True))
    fin_up, fin_lo = np.isfinite(up), np.isfinite(lo)
    indep = linprog(c, A_ub=sp.vstack([A[fin_up], -A[fin_lo]]).toarray(), b_ub=np.r_[up[fin_up], -lo[fin_lo]],
                    bounds=bounds, method="highs-ipm")
    assert got.objective == pytest.approx(indep.fun, rel=1e-7, abs=1e-8)


def test_clarabel_errors():
    # infeasible: x1 + x2 >= 2 and <= 1
    A = sp.csr_matrix([[1.0, 1.0], [1.0, 1.0]])
    with pytest.raises(LPError, match="Clarabel did not find an optimum.*Infeasible"):
        solve_clarabel([1.0, 1.0], A, row_lower=[2.0, -np.inf], row_upper=[np.inf, 1.0])
    with pytest.raises(ParameterError, match="do not match"):
        solve_clarabel([1.0], A, row_lower=[0.0, 0.0], row_upper=[1.0, 1.0])
    # only Clarabel's reduced tolerances met ("AlmostSolved", here at a tolerance of 1e-16) is no optimum
    c, A, lo, up, xl = _mixed_lp(0)
    with pytest.raises(LPError, match="AlmostSolved"):
        solve_clarabel(c, A, row_lower=lo, row_upper=up, col_lower=xl, tolerance=1e-16)
    c, A, lo, up, xl = _mixed_lp(7, m=400, n=300)
    with pytest.raises(LPTimeout, match="time limit"):
        solve_clarabel(c, A, row_lower=lo, row_upper=up, col_lower=xl, time_limit=1e-6)


def test_clarabel_ctrl_c_and_progress(monkeypatch, ctrl_c):
    c, A, lo, up, xl = _mixed_lp(8, m=300, n=200)
    events = []
    with progress(events.append, every=0.0):
        got, stats = solve_clarabel(c, A, row_lower=lo, row_upper=up, col_lower=xl)
    assert len(events) >= 3 and {e.method for e in events} == {"clarabel"}
    assert [e.iteration for e in events] == sorted(e.iteration for e in events)
    assert events[-1].objective == pytest.approx(got.objective, rel=1e-6)

    real, calls = conic._Callback.__call__, {"n": 0, "after": 0}

    def call(self, info):
        calls["n"] += 1
        if calls["n"] == 3:
            os.kill(os.getpid(), signal.SIGINT)     # Ctrl-C arrives during the solve
        elif calls["n"] > 3:
            calls["after"] += 1
        return real(self, info)

    monkeypatch.setattr(conic._Callback, "__call__", call)
    with pytest.raises(KeyboardInterrupt, match="interrupted"):
        solve_clarabel(c, A, row_lower=lo, row_upper=up, col_lower=xl)
    assert calls["after"] <= 1
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
