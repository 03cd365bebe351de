import numpy as np
import pytest

from mdp import MetricSpace, PrivacyError, build, certify, eps_tight
from mdp.families.exponential import exponential_matrix


def space(n=8, seed=0):
    return MetricSpace.from_points(np.random.default_rng(seed).uniform(size=(n, 2)))


def test_passes_valid_matrix_unchanged():
    s = space()
    M = exponential_matrix(s.distances, 2.0)
    out, rep = certify(M, s.distances, 2.0)
    assert rep["verified"] and not rep["repaired"] and rep["measured_eps"] <= 2.0
    np.testing.assert_allclose(out, M, atol=1e-15)


def test_repairs_lp_tolerance_artefact():
    # An LP-like optimum where a solver returned an exact 0 for a ~1e-13 probability (seen in
    # practice): an infinite multiplicative violation caused by an absolute tolerance.
    s = MetricSpace.from_points(40 * np.random.default_rng(1).uniform(size=(8, 2)))
    eps = 2.0
    M = exponential_matrix(s.distances, eps).copy()        # the exponential mechanism is eps-mDP
    u, w = np.unravel_index(np.argmin(M), M.shape)
    assert M[u, w] < 1e-9
    M[u, w] = 0.0
    M /= M.sum(axis=1, keepdims=True)
    assert eps_tight(M, s.distances) == np.inf               # broken as handed over
    out, rep = certify(M, s.distances, eps)
    assert rep["repaired"] and rep["measured_eps_before"] == np.inf
    assert eps_tight(out, s.distances) <= eps * (1 + 1e-9) == rep["claimed_eps"] * (1 + 1e-9)
    assert rep["max_entry_change"] <= 1e-6 and out[u, w] > 0
    np.testing.assert_allclose(out.sum(axis=1), 1.0, atol=1e-12)


def test_refuses_non_private_matrix():
    s = space()
    with pytest.raises(PrivacyError, match="refused"):
        certify(np.eye(s.n), s.distances, 1.0)
    with pytest.raises(PrivacyError, match="row-stochastic"):
        certify(np.full((s.n, s.n), 0.5), s.distances, 1.0)
    M = np.full((s.n, s.n), 1.0 / s.n)
    M[0, 0], M[0, 1] = -0.01, M[0, 1] + 1.0 / s.n + 0.01
    with pytest.raises(PrivacyError, match="negative"):
        certify(M, s.distances, 1.0)
    with pytest.raises(PrivacyError, match="claims"):
        certify(exponential_matrix(s.distances, 10.0), s.distances, 1.0, repair=False)


def test_tiny_relative_violation_repaired_large_one_refused():
    s = space(10, 4)
    M = exponential_matrix(s.distances, 2.0)
    level = eps_tight(M, s.distances)
    out, rep = certify(M, s.distances, level * (1 - 1e-8))   # claims 1e-8 too little
    assert rep["repaired"] and rep["max_entry_change"] < 1e-6
    assert eps_tight(out, s.distances) <= level * (1 - 1e-8) * (1 + 1e-9)
    with pytest.raises(PrivacyError, match="refused"):
        certify(M, s.distances, level * 0.9)                 # a real violation is not "repaired"


def test_underflow_refused_with_hint():
    s = MetricSpace.from_distances(np.array([[0, 1, 2], [1, 0, 1], [2, 1, 0]], dtype=float) * 1000)
    with pytest.raises(PrivacyError, match="underflow"):
        build("exponential", s, 2.0)
