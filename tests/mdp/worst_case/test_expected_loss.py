"""The LP families under a prior (objective="expected") against scipy's linprog on the full LP."""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import linprog

import mdp
from mdp.families.spanner.formulation import greedy_spanner, spanner_distances
from mdp.prior import Prior, expected_loss, measure


def _full_lp(D, P, eps, pi):
    """min sum_u pi_u sum_w D_uw M_uw s.t. rows stochastic, M_uw <= e^{eps P_uv} M_vw (all pairs)."""
    n = len(D)
    rows, cols, vals = [], [], []
    r = 0
    for u in range(n):
        for v in range(n):
            if u == v:
                continue
            g = np.exp(eps * P[u, v])
            for w in range(n):
                rows += [r, r]
                cols += [u * n + w, v * n + w]
                vals += [1.0, -g]
                r += 1
    A_ub = sp.csr_matrix((vals, (rows, cols)), shape=(r, n * n))
    A_eq = np.kron(np.eye(n), np.ones(n))
    res = linprog((pi[:, None] * D).ravel(), A_ub=A_ub, b_ub=np.zeros(r), A_eq=A_eq,
                  b_eq=np.ones(n), bounds=(0, None), method="highs")
    assert res.status == 0
    return res.fun


def _priors(n, rng):
    yield Prior.uniform(n)
    yield Prior.from_counts(rng.integers(0, 30, n))
    skew = np.full(n, 1e-4)
    skew[rng.integers(n)] = 1.0
    yield Prior.given(skew / skew.sum())                          # very skewed
    yield Prior.given(np.geomspace(1, 1e-6, n) / np.geomspace(1, 1e-6, n).sum())


@pytest.mark.parametrize("kind", ["plane", "line", "clustered"])
def test_optimal_expected_objective_matches_linprog(kind):
    rng = np.random.default_rng({"plane": 1, "line": 2, "clustered": 3}[kind])
    n = 12
    if kind == "plane":
        pts = rng.random((n, 2))
    elif kind == "line":
        pts = np.c_[np.sort(rng.random(n)), np.zeros(n)]
    else:
        pts = np.r_[rng.normal(0, 0.05, (n // 2, 2)), rng.normal(1, 0.05, (n - n // 2, 2))]
    space = mdp.MetricSpace.from_points(pts)
    eps = 3.0 / np.median(space.distances[space.distances > 0])
    for prior in _priors(n, rng):
        best = _full_lp(space.distances, space.distances, eps, prior.probabilities)
        m = mdp.build("optimal", space, eps, objective="expected", prior=prior)
        got = expected_loss(m.matrix, prior, space.distances)
        assert got == pytest.approx(best, rel=1e-6, abs=1e-12)
        assert m.stats["lower_bound"] <= best * (1 + 1e-9) + 1e-15
        assert m.stats["objective"] == "expected"


def test_spanner_expected_objective_matches_linprog_on_its_path_rows():
    rng = np.random.default_rng(4)
    space = mdp.MetricSpace.from_points(rng.random((11, 2)))
    eps, stretch = 4.0, 1.5
    P = spanner_distances(space.distances, greedy_spanner(space.distances, stretch))
    for prior in list(_priors(11, rng))[:3]:
        best = _full_lp(space.distances, P, eps / stretch, prior.probabilities)
        m = mdp.build("spanner", space, eps, objective="expected", prior=prior, stretch=stretch)
        assert expected_loss(m.matrix, prior, space.distances) == pytest.approx(best, rel=1e-6)


def test_expected_optimum_is_never_worse_than_any_family_under_its_prior():
    rng = np.random.default_rng(9)
    space = mdp.MetricSpace.from_points(rng.random((18, 2)))
    prior = Prior.from_counts(rng.integers(0, 40, 18))
    eps = 5.0
    opt = measure(mdp.build("optimal", space, eps, objective="expected", prior=prior), prior)
    for name in ("optimal", "exponential", "spanner", "constopt"):
        other = measure(mdp.build(name, space, eps), prior)
        assert opt.expected_loss <= other.expected_loss * (1 + 1e-7), name
    worst = mdp.build("optimal", space, eps)
    exp_mech = mdp.build("optimal", space, eps, objective="expected", prior=prior)
    assert worst.loss() <= exp_mech.loss() * (1 + 1e-7)


def test_objective_parameters_are_checked():
    space = mdp.MetricSpace.from_points(np.random.default_rng(0).random((6, 2)))
    with pytest.raises(mdp.ParameterError, match="objective"):
        mdp.build("optimal", space, 1.0, objective="average")
    with pytest.raises(mdp.ParameterError, match="objective='expected' only"):
        mdp.build("optimal", space, 1.0, prior=Prior.uniform(6))
    with pytest.raises(mdp.ParameterError, match="prior has 5 points, the space has 6"):
        mdp.build("optimal", space, 1.0, objective="expected", prior=Prior.uniform(5))
    with pytest.raises(mdp.ParameterError, match="prior must be a Prior"):
        mdp.build("spanner", space, 1.0, objective="expected", prior=[0.5, 0.5])
    with pytest.raises(mdp.ParameterError, match="gap=None"):
        mdp.build("optimal", space, 1.0, objective="expected", gap=1e-3)
    big = mdp.MetricSpace.from_points(np.random.default_rng(0).random((251, 2)))
    with pytest.raises(mdp.ParameterError, match="up to n = 250"):
        mdp.build("optimal", big, 1.0, objective="expected")


def test_interior_rounds_from_forty_points_and_the_simplex_fallback_match_linprog():
    rng = np.random.default_rng(12)
    space = mdp.MetricSpace.from_points(rng.random((40, 2)))
    prior = Prior.from_counts(rng.integers(0, 30, 40))
    m = mdp.build("optimal", space, 6.0, objective="expected", prior=prior)
    assert m.stats["solver"] == "ipm"
    best = _full_lp(space.distances, space.distances, 6.0, prior.probabilities)
    assert expected_loss(m.matrix, prior, space.distances) == pytest.approx(best, rel=1e-6)
    # interior rounds that end without an optimum on a small row set fall back to the simplex
    small = mdp.MetricSpace.from_points(np.random.default_rng(1).random((12, 2)))
    eps = 3.0 / np.median(small.distances[small.distances > 0])
    pr = Prior.uniform(12)
    got = mdp.build("optimal", small, eps, objective="expected", prior=pr, solver="ipm")
    assert expected_loss(got.matrix, pr, small.distances) == pytest.approx(
        _full_lp(small.distances, small.distances, eps, pr.probabilities), rel=1e-6)
