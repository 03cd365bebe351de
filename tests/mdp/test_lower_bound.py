import warnings

import numpy as np
import pytest

from mdp import MetricSpace, build, calibrate, lower_bound
from mdp.lower_bound import farthest_first_order, lower_bounds
from tests.support.reference_lp import optimal_loss_linprog


def spaces():
    rng = np.random.default_rng(3)
    yield MetricSpace.from_points(rng.uniform(size=(6, 2)))
    g = np.array([(i, j) for i in range(3) for j in range(3)], dtype=float)
    yield MetricSpace.from_points(g, metric="cityblock")
    yield MetricSpace.from_points(0.5 * rng.normal(size=(7, 4)))


@pytest.mark.parametrize("eps", [0.3, 1.0, 3.0, 6.0])
def test_never_exceeds_exact_optimum(eps):
    for s in spaces():
        opt, M = optimal_loss_linprog(s.distances, eps)
        lb = lower_bound(s, eps)
        assert 0 <= lb.value <= opt + 1e-9
        # and never above the loss of any eps-mDP mechanism we build
        for name in ["exponential", "weighted_exponential"]:
            assert lb.value <= build(name, s, eps).loss() + 1e-12


def test_packing_is_valid_and_value_recomputes():
    s = next(spaces())
    lb = lower_bound(s, 1.0)
    D = s.distances
    C = lb.centres
    # balls of radius just below r are disjoint subsets of W
    r = lb.r * (1 - 1e-9)
    for i in range(len(C)):
        for j in range(i + 1, len(C)):
            assert not np.any((D[C[i]] <= r) & (D[C[j]] <= r))
    N = np.exp(-1.0 * D[:, C]).sum(1)
    assert lb.value == pytest.approx(np.max(lb.r * (1 - 1 / N)))
    assert lb.Q == pytest.approx(D[np.ix_(C, C)].max())


def test_two_farthest_points_special_case():
    # Seed: S = two farthest points, r = r*/2 gives L >= r*/2 * exp(-r* eps) / (1 + exp(-r* eps)).
    s = MetricSpace.from_points(np.array([[0.0], [1.0], [5.0]]))
    eps = 0.4
    special = 2.5 * np.exp(-5 * eps) / (1 + np.exp(-5 * eps))
    assert lower_bound(s, eps).value >= special - 1e-12


def test_farthest_first_order_and_batch():
    s = next(spaces())
    order = farthest_first_order(s.distances, 0)
    assert sorted(order) == list(range(s.n))
    assert order[1] == np.argmax(s.distances[0])
    many = lower_bounds(s, [0.5, 2.0])
    assert many[0].value == pytest.approx(lower_bound(s, 0.5).value)


def test_calibrated_mechanism_respects_bound_at_its_pure_level():
    s = MetricSpace.from_points(np.random.default_rng(5).uniform(size=(12, 2)))
    m = calibrate("exponential", s, 1.5)          # delta = 0: pure level <= 1.5
    assert m.eps_tight() <= 1.5 * (1 + 1e-9)
    assert lower_bound(s, m.eps_tight()).value <= m.loss()


def test_bad_input():
    s = next(spaces())
    with pytest.raises(ValueError, match="epsilon must be > 0"):
        lower_bound(s, -1)
    with pytest.raises(TypeError, match="MetricSpace"):
        lower_bound(np.eye(3), 1.0)


@pytest.mark.parametrize("delta", [1e-3, 0.05])
def test_approximate_bound_below_worst_case_loss_of_calibrated_mechanisms(delta):
    s = MetricSpace.from_points(np.random.default_rng(8).uniform(size=(20, 2)))
    for t in [0.5, 2.0, 8.0]:
        lb = lower_bound(s, t, delta=delta)
        pure = lower_bound(s, t)
        assert lb.value <= pure.value + 1e-12 and lb.delta == delta
        for name in ["exponential", "weighted_exponential"]:
            m = calibrate(name, s, t, delta=delta)
            assert lb.value <= m.loss() + 1e-12


def test_packing_radius_equals_its_definition():
    # r*(S) = min over centre pairs x != x' of min_y max(d(x, y), d(x', y)), by brute force on the
    # returned packing: exactly that float (the running minimum is not an approximation)
    rng = np.random.default_rng(11)
    for s in [*spaces(), MetricSpace.from_points(rng.uniform(size=(25, 3)))]:
        D = s.distances
        for lb in lower_bounds(s, [0.2, 1.0, 5.0, 40.0]):
            S = lb.centres
            want = min(float(np.maximum(D[a], D[b]).min()) for i, a in enumerate(S) for b in S[i + 1:])
            assert lb.r == want


def test_far_points_at_a_large_epsilon_give_no_overflow_warning():
    # three points 1000 units from each other and from the rest at eps 1: with two of them as
    # the centres, e^{-eps d} underflows to 0 in N(w, S) at the third
    pts = np.r_[np.random.default_rng(3).uniform(0, 1, (6, 2)),
                [[1000.0, 0.0], [-1000.0, 0.0], [0.0, 1000.0]]]
    space = MetricSpace.from_points(pts)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lb = lower_bound(space, 1.0)
    # brute force over every packing of the traversal's prefixes gives the same value
    D = space.distances
    order = farthest_first_order(D)
    best = -np.inf
    for k in range(2, 10):
        S = order[:k]
        r = min(np.maximum(D[a], D[b]).min() for i, a in enumerate(S) for b in S[i + 1:])
        N = np.exp(-1.0 * D[:, S]).sum(axis=1)
        best = max(best, max(r * (1 - 1 / x) for x in N if x > 0))
    assert lb.value == pytest.approx(best, rel=1e-12) and np.isfinite(lb.value)
