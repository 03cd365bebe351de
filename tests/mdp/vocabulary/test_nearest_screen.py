"""The screened nearest-neighbour index against an exact brute force (exact rationals at ties)."""

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from mdp.errors import ParameterError
from mdp.runtime.threads import use_threads
from mdp.vocabulary.nearest import NearestIndex, NearestPlan
from mdp.vocabulary.nearest_screen import (
    SCREEN_MAX_NORM,
    ScreenedNearest,
    ScreenTuning,
    exact_nearest,
)

SMALL = ScreenTuning(query_block=16, point_block=64)


def _exact_sq(z, y) -> Fraction:
    return sum((Fraction(float(a)) - Fraction(float(b))) ** 2 for a, b in zip(z, y, strict=True))


def reference(Z, X) -> np.ndarray:
    """Exact brute force: float64 direct distances, and every point within a relative 1e-9 of
    the smallest re-compared as exact rationals (ties: lowest index). Independent of the index's
    own error bounds."""
    Z = np.atleast_2d(np.asarray(Z, dtype=np.float64))
    W = np.asarray(X, dtype=np.float64)
    out = np.empty(len(Z), dtype=np.int64)
    for i, z in enumerate(Z):
        with np.errstate(over="ignore"):
            s = ((W - z) ** 2).sum(axis=1)
        if not np.all(np.isfinite(s)):
            near = np.arange(len(W))
        else:
            near = np.flatnonzero(s <= s.min() * (1 + 1e-9) + 1e-300)
        out[i] = min(near, key=lambda j: (_exact_sq(z, W[j]), j))
    return out


def test_random_points_and_queries_match_brute_force():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(3000, 12)).astype(np.float32)
    Z = np.vstack([rng.normal(size=(300, 12)) * 1.5, X[:40] + 1e-3 * rng.normal(size=(40, 12))])
    index = ScreenedNearest(X, SMALL)
    np.testing.assert_array_equal(index.query(Z), reference(Z, X))
    assert 1.0 <= index.last_stats["candidates_mean"] < 1.5


def test_float64_points_are_screened_with_their_rounding_to_float32():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(2000, 7))
    Z = rng.normal(size=(200, 7)) * 2
    index = ScreenedNearest(X, SMALL)
    assert index.screenable
    np.testing.assert_array_equal(index.query(Z), reference(Z, X))


def test_duplicate_points_give_the_lowest_index():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(500, 5)).astype(np.float32)
    X[[200, 450]] = X[17]
    X[[90, 91]] = X[300]
    Z = np.vstack([X[[17, 200, 450, 300, 91]].astype(np.float64),
                   X[[17, 300]] + 1e-9])
    got = ScreenedNearest(X, SMALL).query(Z)
    np.testing.assert_array_equal(got, [17, 17, 17, 90, 90, 17, 90])
    np.testing.assert_array_equal(got, reference(Z, X))


def test_exact_tie_goes_to_the_lowest_index():
    X = np.array([[3.0, 0.0], [0.0, 1.0], [0.0, -1.0], [1.0, 0.0], [-1.0, 0.0]])
    Z = np.zeros((1, 2))
    assert ScreenedNearest(X, SMALL).query(Z)[0] == 1


def test_near_tie_below_float64_resolution_is_decided_exactly():
    # squared distances from 0: 1 + 2^-60 (index 1) and 1 + 2^-60 + 2^-111 + 2^-164 (index 0):
    # their float64 sums are equal, only exact arithmetic orders them
    t = 2.0 ** -30
    X = np.array([[1.0, 0.0, t + 2.0 ** -82], [1.0, t, 0.0], [5.0, 5.0, 5.0]])
    Z = np.zeros((1, 3))
    assert ScreenedNearest(X, SMALL).query(Z)[0] == 1
    assert reference(Z, X)[0] == 1
    assert exact_nearest(Z[0], X) == 1


def test_one_ulp_apart_points_are_both_candidates():
    rng = np.random.default_rng(4)
    base = rng.normal(size=(400, 6)).astype(np.float32)
    twins = np.nextafter(base, np.float32(np.inf))
    X = np.vstack([base, twins])
    Z = base.astype(np.float64) + 0.5 * (twins.astype(np.float64) - base) \
        + 1e-12 * rng.normal(size=base.shape)
    index = ScreenedNearest(X, SMALL)
    np.testing.assert_array_equal(index.query(Z), reference(Z, X))
    assert index.last_stats["candidates_max"] >= 2


def test_queries_far_from_the_points():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(1500, 10)).astype(np.float32)
    direction = rng.normal(size=(60, 10))
    Z = 1e6 * direction / np.linalg.norm(direction, axis=1, keepdims=True)
    index = ScreenedNearest(X, ScreenTuning(query_block=16, point_block=64, max_candidates=8))
    np.testing.assert_array_equal(index.query(Z), reference(Z, X))


def test_large_norms_skip_the_screen_and_stay_exact():
    rng = np.random.default_rng(6)
    X = rng.normal(size=(300, 4)) * 1e20
    Z = rng.normal(size=(30, 4)) * 1e20
    index = ScreenedNearest(X, SMALL)
    assert not index.screenable
    np.testing.assert_array_equal(index.query(Z), reference(Z, X))
    assert index.last_stats["exact_pass"]["not_screenable"] == 30


def test_norms_near_the_screen_limit_and_overflowing_float64():
    rng = np.random.default_rng(7)
    X = rng.normal(size=(400, 3)) * (SCREEN_MAX_NORM / 8)
    Z = rng.normal(size=(40, 3)) * (SCREEN_MAX_NORM / 8)
    index = ScreenedNearest(X, SMALL)
    assert index.screenable
    np.testing.assert_array_equal(index.query(Z), reference(Z, X))
    huge = np.array([[1e200, 0.0], [-1e200, 1.0], [0.0, 3e200]])
    z = np.array([[1e200, 2e199]])
    assert ScreenedNearest(huge, SMALL).query(z)[0] == 0


def test_subnormal_coordinates():
    X = np.array([[0.0, 0.0], [1e-310, 0.0], [0.0, 2e-310], [1e-300, 1e-300]])
    Z = np.array([[6e-311, 0.0], [0.0, 1.5e-310], [4e-311, 0.0], [1e-300, 9e-301]])
    np.testing.assert_array_equal(ScreenedNearest(X, SMALL).query(Z), reference(Z, X))


def test_too_many_candidates_fall_back_to_the_exact_pass():
    X = np.vstack([np.ones((50, 3)), np.zeros((3, 3))]).astype(np.float32)
    X[:50] += np.arange(50)[:, None] * 1e-7
    Z = np.array([[1.0, 1.0, 1.0 + 3e-6], [0.1, 0.0, 0.0]])
    index = ScreenedNearest(X, ScreenTuning(query_block=16, point_block=64, max_candidates=4))
    np.testing.assert_array_equal(index.query(Z), reference(Z, X))
    assert index.last_stats["exact_pass"]["too_many_candidates"] == 1


def test_one_or_two_workers_answer_alike():
    rng = np.random.default_rng(8)
    X = rng.normal(size=(2000, 9)).astype(np.float32)
    Z = rng.normal(size=(400, 9))
    index = ScreenedNearest(X, SMALL)
    with use_threads(1):
        one = index.query(Z)
        assert index.last_stats["workers"] == 1
    with use_threads(2):
        two = index.query(Z)
    np.testing.assert_array_equal(one, two)


def test_bad_queries_and_tuning_are_refused():
    index = ScreenedNearest(np.eye(3), SMALL)
    with pytest.raises(ParameterError, match="query 1"):
        index.query([[0.0, 0.0, 0.0], [np.nan, 0.0, 0.0]])
    with pytest.raises(ParameterError, match="3 coordinates"):
        index.query([[0.0, 0.0]])
    with pytest.raises(ParameterError, match="point_block"):
        ScreenTuning(point_block=0)
    with pytest.raises(ParameterError, match="screen must be a ScreenTuning"):
        NearestPlan(screen={"point_block": 64})


def test_nearest_index_defaults_to_the_screen():
    rng = np.random.default_rng(9)
    X = rng.normal(size=(800, 5)).astype(np.float32)
    Z = rng.normal(size=(100, 5))
    index = NearestIndex(X)
    assert index.plan.algorithm == "screened"
    np.testing.assert_array_equal(index.query(Z), reference(Z, X))
    assert index.last_stats["queries"] == 100


# Coordinates from a small pool of values: duplicates, exact ties and near-ties are common.
_coord = st.sampled_from([0.0, 1.0, -1.0, 0.5, 1.0 + 2.0 ** -23, 2.0 ** -30, 3.0, -2.5,
                          1e-3, 7.0 + 2.0 ** -50])


@settings(max_examples=60, deadline=None)
@given(X=arrays(np.float64, st.tuples(st.integers(2, 40), st.just(3)), elements=_coord),
       Z=arrays(np.float64, st.tuples(st.integers(1, 6), st.just(3)),
                elements=st.floats(-4, 4, allow_nan=False) | _coord),
       as32=st.booleans())
def test_property_agrees_with_exact_brute_force(X, Z, as32):
    X = X.astype(np.float32) if as32 else X
    got = ScreenedNearest(X, ScreenTuning(query_block=2, point_block=8,
                                          max_candidates=3)).query(Z)
    np.testing.assert_array_equal(got, reference(Z, X))


def _two_nearest_brute(Z, P):
    D = ((Z[:, None, :] - P[None].astype(np.float64)) ** 2).sum(-1)
    ref = np.argsort(D, axis=1, kind="stable")[:, :2]
    return ref, np.sqrt(np.take_along_axis(D, ref, axis=1))


@pytest.mark.parametrize("tuning", [ScreenTuning(point_block=64),            # the screen
                                    ScreenTuning(point_block=64, max_candidates=1),
                                    ScreenTuning()])                          # one block: exact
def test_two_nearest_match_brute_force(tuning):
    rng = np.random.default_rng(3)
    P = rng.normal(size=(600, 12)).astype(np.float32)
    Z = P[rng.integers(0, 600, 400)].astype(np.float64) + rng.normal(size=(400, 12)) * 0.4
    Z[:5] = P[:5]                                       # queries on a point: distance 0 first
    idx, dist = ScreenedNearest(P, tuning).query_two(Z)
    ref, ref_d = _two_nearest_brute(Z, P)
    np.testing.assert_array_equal(idx, ref)
    np.testing.assert_allclose(dist, ref_d, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(idx[:, 0], ScreenedNearest(P, tuning).query(Z))


def test_two_nearest_of_duplicates_and_of_one_point():
    P = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 0.0], [5.0, 5.0]], dtype=np.float32)
    idx, dist = ScreenedNearest(P).query_two(np.array([[1.0, 0.1]]))
    assert idx.tolist() == [[1, 2]] and dist[0, 0] == dist[0, 1]
    with pytest.raises(ParameterError, match="two points"):
        ScreenedNearest(P[:1]).query_two(np.zeros((1, 2)))
    nn = NearestIndex(P, NearestPlan(algorithm="brute"))
    assert nn.query_two(np.array([[0.2, 0.0]]))[0].tolist() == [[0, 1]]
