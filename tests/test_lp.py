"""mdp.lp (HiGHS wrapper) and the certification of LP outputs."""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import linprog

import mdp
from mdp.lp import LPError, LPTimeout, SparseLP
from mdp.space import MetricSpace
from mdp.verification import PrivacyError, certify


def test_sparse_lp_matches_linprog():
    rng = np.random.default_rng(3)
    m, n = 30, 20
    A = sp.random(m, n, density=0.3, random_state=4, format="csr")
    x0 = rng.random(n)
    b = A @ x0 + 0.1  # x0 is strictly feasible for A x <= b
    c = rng.normal(size=n)
    lp = SparseLP(c, A, row_upper=b, col_lower=np.zeros(n), col_upper=np.ones(n))
    got = lp.solve()
    ref = linprog(c, A_ub=A.toarray(), b_ub=b, bounds=[(0, 1)] * n, method="highs-ipm")
    assert got.objective == pytest.approx(ref.fun, abs=1e-8)
    assert lp.stats["variables"] == n and lp.stats["rows"] == m and lp.stats["nnz"] == A.nnz
    # adding a row keeps the model and re-solves
    lp.add_rows(sp.csr_matrix(np.ones((1, n))), row_lower=[2.0], row_upper=[np.inf])
    ref2 = linprog(c, A_ub=np.vstack([A.toarray(), -np.ones((1, n))]), b_ub=np.r_[b, -2.0],
                   bounds=[(0, 1)] * n, method="highs-ipm")
    assert lp.solve().objective == pytest.approx(ref2.fun, abs=1e-8)
    assert lp.stats["rows"] == m + 1 and lp.stats["solves"] == 2


def test_infeasible_and_unbounded_raise():
    lp = SparseLP([1.0, 1.0], sp.csr_matrix([[1.0, 1.0]]), row_lower=[2.0], row_upper=[1.0])
    with pytest.raises(LPError, match="Infeasible"):
        lp.solve()
    lp = SparseLP([-1.0, 0.0], sp.csr_matrix([[1.0, -1.0]]), row_upper=[0.0], solver="simplex")
    with pytest.raises(LPError, match="nbounded"):
        lp.solve()


def test_bad_arguments():
    with pytest.raises(ValueError, match="solver"):
        SparseLP([1.0], sp.csr_matrix([[1.0]]), solver="magic")
    with pytest.raises(ValueError, match="time_limit"):
        SparseLP([1.0], sp.csr_matrix([[1.0]]), time_limit=-1)
    with pytest.raises(ValueError, match="columns"):
        SparseLP([1.0, 2.0], sp.csr_matrix([[1.0]]))


def test_timeout_is_an_error_not_a_worse_matrix():
    space = MetricSpace.from_points(np.random.default_rng(0).random((30, 2)))
    with pytest.raises(LPTimeout, match="time limit"):
        mdp.build("optimal", space, 2.0, time_limit=1e-3)


def _opt_matrix(n=8, eps=1.0):
    space = MetricSpace.from_points(np.random.default_rng(5).random((n, 2)))
    return mdp.build("optimal", space, eps).matrix.copy(), space


def test_certify_repairs_tolerance_artefact():
    M, space = _opt_matrix()
    D = space.distances
    # an LP-tolerance artefact: one entry pushed 1e-9 above its tightest privacy bound
    prod = np.exp(1.0 * D)[:, :, None] * M[None, :, :]  # prod[u, v, w] = e^{eps D_uv} M[v, w]
    prod[np.arange(len(D)), np.arange(len(D))] = np.inf
    bound = prod.min(axis=1)
    u, w = np.unravel_index(np.argmin(bound - M), M.shape)  # a tight upper bound
    assert bound[u, w] - M[u, w] <= 1e-12
    M[u, w] = bound[u, w] + 1e-9
    M[u] /= M[u].sum()  # certify refuses rows not summing to 1 within 1e-12 (issue 15)
    assert mdp.eps_tight(M, D, 0.0) > 1.0  # really violating
    H, report = certify(M, D, 1.0)
    assert report["repaired"] and report["measured_eps"] <= 1.0 * (1 + 1e-9)
    assert mdp.eps_tight(H, D, 0.0) <= 1.0 * (1 + 1e-9)
    assert np.abs(H - M).max() <= 1e-6


def test_certify_refuses_gross_violation():
    M, space = _opt_matrix()
    M[0, :] = 0.0
    M[0, 0] = 1.0  # a deterministic row: not private at all
    with pytest.raises(PrivacyError):
        certify(M, space.distances, 1.0)
