"""The O(n^2 d) pair bounds of log matrices of the exponential form (mdp.privacy.exponential_form)."""

import math
from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mdp import MetricSpace, PrivacyError, build
from mdp.families.exponential import exponential_log_matrix, inverse_density_log_weights
from mdp.privacy.accounting import check_distances, pair_log_ratio_bounds
from mdp.privacy.exponential_form import euclidean_deviation, form_pair_bounds
from mdp.privacy.verification import ALL_TRIPLES, FORM_BOUNDS, certify_matrix


def exact_pair_maxima(L):
    """max_w (L[u, w] - L[v, w]) in exact rational arithmetic."""
    F = [[Fraction(float(x)) for x in row] for row in L]
    n = len(F)
    return [[max(F[u][w] - F[v][w] for w in range(n)) for v in range(n)] for u in range(n)]


def exact_distance(a, b):
    with localcontext() as ctx:
        ctx.prec = 60
        s = sum((Decimal(float(x)) - Decimal(float(y))) ** 2 for x, y in zip(a, b, strict=True))
        return s.sqrt()


def points(n, dim, seed, scale=1.0, offset=0.0):
    return offset + scale * np.random.default_rng(seed).normal(size=(n, dim))


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 9), st.integers(1, 5), st.floats(0.05, 40.0), st.booleans(),
       st.sampled_from([1.0, 1e-3, 1e3]), st.integers(0, 2**32))
def test_bounds_enclose_the_exact_pair_maxima(n, dim, eps, weighted, scale, seed):
    # for exponential matrices, weighted or not, at any scale: level_lower <= every exact
    # pair level, upper >= every exact pair maximum, and tight (c T plus rounding)
    X = points(n, dim, seed, scale)
    s = MetricSpace.from_points(X, resolution=0)
    D = check_distances(s.distances)
    logw = inverse_density_log_weights(D, eps) if weighted else None
    L = exponential_log_matrix(D, eps, log_weights=logw)
    form = form_pair_bounds(L, D, s.points, eps / 2)
    exact = exact_pair_maxima(L)
    top = Fraction(0)
    for u in range(n):
        for v in range(n):
            if u != v:
                assert Fraction(float(form.upper[u, v])) >= exact[u][v]
                slack = form.upper[u, v] - float(exact[u][v])
                assert slack <= eps / 2 * form.triangle_defect + 1e-12 * (1 + abs(L).max())
                top = max(top, exact[u][v] / Fraction(float(D[u, v])))
    assert Fraction(form.level_lower) <= top <= Fraction(form.level_upper)


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 8), st.integers(1, 6), st.sampled_from([1.0, 1e-6, 1e4]),
       st.sampled_from([0.0, 1e6]), st.integers(0, 2**32))
def test_euclidean_deviation_bounds_the_distance_error(n, dim, scale, offset, seed):
    # against 60-digit distances, for points far from the origin too, and for distances that
    # are not those of the points
    X = points(n, dim, seed, scale, offset)
    D = np.sqrt(((X[:, None, :] - X[None, :, :]) ** 2).sum(-1))
    D = np.minimum(D, D.T)
    t = euclidean_deviation(X, D)
    worst = max(abs(Decimal(float(D[u, v])) - exact_distance(X[u], X[v]))
                for u in range(n) for v in range(n))
    assert Decimal(t) >= worst
    assert t <= 1e-12 * max(1.0, float(D.max()))
    D2 = D.copy()
    D2[0, 1] = D2[1, 0] = D[0, 1] * 0.5
    worst2 = abs(Decimal(float(D2[0, 1])) - exact_distance(X[0], X[1]))
    assert Decimal(euclidean_deviation(X, D2)) >= worst2


def test_planted_violation_is_caught():
    # one entry raised beyond the guarantee: the form's bound cannot hide it (the
    # certification refuses), and unplanted the same matrix passes on the form's bounds
    s = MetricSpace.from_points(points(40, 3, 1))
    eps = 2.0
    L = exponential_log_matrix(s.distances, eps)
    ok = certify_matrix(L, s.distances, eps, log=True, points=s.points, repair=False)
    assert ok.report["pair_bounds"] == FORM_BOUNDS
    u, v = 3, 17
    w = int(np.argmin(s.distances[u] - s.distances[v]))      # output closest to u relative to v
    bad = L.copy()
    need = eps * s.distances[u, v] - (L[u, w] - L[v, w])
    bad[u, w] += need + 1e-6
    bad[u] -= np.log(np.exp(bad[u]).sum())                   # rows still sum to 1
    gap = max((bad[a] - bad[b]).max() / s.distances[a, b] for a in range(40) for b in range(40)
              if a != b)
    assert gap > eps
    with pytest.raises(PrivacyError):
        certify_matrix(bad, s.distances, eps, log=True, points=s.points, repair=False)


def test_same_report_as_all_triples_and_fallback_for_other_matrices():
    s = MetricSpace.from_points(points(60, 4, 2))
    for eps in (0.1, 1.0, 8.0):
        L = exponential_log_matrix(s.distances, eps)
        fast = certify_matrix(L, s.distances, eps, log=True, points=s.points)
        full = certify_matrix(L, s.distances, eps, log=True)
        assert fast.report["pair_bounds"] == FORM_BOUNDS and full.report["pair_bounds"] == ALL_TRIPLES
        assert fast.report["measured_eps"] == pytest.approx(full.report["measured_eps"], rel=1e-12)
        assert fast.report["measured_eps"] >= full.report["measured_eps"] * (1 - 1e-15)
        _, R_lo = pair_log_ratio_bounds(L, True)
        assert np.all(fast.pair_log_ratios >= R_lo)
        assert np.array_equal(fast.matrix, full.matrix)
    # distances that are not the points' (scaled): the bound is loose, all triples are measured
    L = exponential_log_matrix(3.0 * s.distances, 1.0)
    cert = certify_matrix(L, 3.0 * s.distances, 1.0, log=True, points=s.points)
    assert cert.report["pair_bounds"] == ALL_TRIPLES
    # a matrix of another form (an LP family's) is measured on all triples
    opt = build("optimal", MetricSpace.from_points(points(12, 2, 3)), 1.0)
    assert opt.stats["privacy"]["pair_bounds"] == ALL_TRIPLES


def test_exponential_mechanism_on_euclidean_points_uses_the_form():
    s = MetricSpace.from_points(points(30, 3, 4))
    m = build("exponential", s, 1.5)
    assert m.stats["privacy"]["pair_bounds"] == FORM_BOUNDS
    assert m.stats["privacy"]["measured_eps"] <= 1.5
    w = build("weighted_exponential", s, 1.5)
    assert w.stats["privacy"]["pair_bounds"] == FORM_BOUNDS
    h = build("exponential", MetricSpace.from_points(np.array([[45.0, 4.0], [45.1, 4.2], [44.9, 3.9]]),
                                                     metric="haversine"), 1.0)
    assert h.stats["privacy"]["pair_bounds"] == ALL_TRIPLES
    assert not math.isnan(h.stats["privacy"]["measured_eps"])


@pytest.mark.parametrize("xs, eps", [([87.26400356763061, 16.98767788103941, 85.10354268148765],
                                      1422.9543025053188),
                                     ([2.304196689155573, 7.083640480674944, 7.077092951113847],
                                      209.22936718586303)])
def test_triangle_defect_of_rounded_distances_is_covered(xs, eps):
    # collinear points whose float distances break the triangle inequality by a rounding: the
    # exact maximum is above c D[u, v] + (the rows' spread), and only the defect term T
    # keeps the bound above it (these inputs fail with T = 0)
    X = np.array(xs)[:, None]
    D = np.abs(X - X.T)
    defect = max(Fraction(float(D[v, w])) - Fraction(float(D[u, w])) - Fraction(float(D[u, v]))
                 for u in range(3) for v in range(3) for w in range(3))
    assert defect > 0
    L = exponential_log_matrix(D, eps)
    form = form_pair_bounds(L, D, X, eps / 2)
    assert form.triangle_defect >= float(defect)
    exact = exact_pair_maxima(L)
    for u in range(3):
        for v in range(3):
            if u != v:
                assert Fraction(float(form.upper[u, v])) >= exact[u][v]
