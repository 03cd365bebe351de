import numpy as np
import pytest

from mdp import MetricSpace, build


def black_hole(n, d=1e-9):
    """Seed section 3.1: d(w1, wi) = 1, d(wi, wj) = d (tiny) for i, j >= 2."""
    D = np.full((n, n), d)
    D[0, :] = D[:, 0] = 1.0
    np.fill_diagonal(D, 0.0)
    return MetricSpace.from_distances(D)


@pytest.mark.parametrize("n", [5, 20, 100])
def test_black_hole_closed_forms_and_lemma1(n):
    s = black_hole(n)
    for eps in [1.0, 2 * np.log(n), 8.0, 15.0]:
        a = np.exp(-eps / 2)
        plain = build("exponential", s, eps)
        weighted = build("weighted_exponential", s, eps, Y=np.r_[1.0, np.full(n - 1, 1 / (n - 1))])
        # closed forms (d -> 0): plain loss of w1 = (n-1)a / (1 + (n-1)a); weighted = a / (1 + a)
        assert plain.loss() == pytest.approx((n - 1) * a / (1 + (n - 1) * a), rel=1e-6, abs=1e-8)
        assert weighted.loss() == pytest.approx(a / (1 + a), rel=1e-6, abs=1e-8)
        # Lemma 1: L(EXP_Y) <= 1/(n-1) + exp(-eps/2) L(EXP)
        assert weighted.loss() <= 1 / (n - 1) + a * plain.loss() + 1e-8
        if eps >= 2 * np.log(n):
            assert weighted.loss() < plain.loss()


def test_weighted_with_unit_weights_is_exponential():
    s = MetricSpace.from_points(np.random.default_rng(2).normal(size=(7, 2)))
    a = build("exponential", s, 2.0).matrix
    b = build("weighted_exponential", s, 2.0, Y=np.ones(7)).matrix
    np.testing.assert_allclose(a, b, atol=1e-15)
    # each row is exp(-eps d / 2) normalised
    row = np.exp(-s.distances[3])
    np.testing.assert_allclose(a[3], row / row.sum(), rtol=1e-12)


def test_default_weights_inverse_density():
    s = black_hole(30, d=0.01)
    w = build("weighted_exponential", s, 10.0)
    p = build("exponential", s, 10.0)
    assert w.params["Y"] == "inverse_density"
    assert w.loss() < p.loss()         # the outlier is no longer swallowed by the cluster
