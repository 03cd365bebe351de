"""The compiled passes over the privacy rows and the complementary pairs, against NumPy and
SciPy on random data."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from mdp.lp.ipm_kernels import (
    centring_targets,
    corrector_targets,
    moved_product_sum,
    ratio_test,
)
from mdp.worst_case.block_lp import ColumnBlockLP, TripleBlockLP
from mdp.worst_case.row_kernels import pair_gram, pair_transpose, pair_values, scaled_quotient


def _pairs(rng, n, m):
    pu = rng.integers(0, n, m)
    pv = (pu + rng.integers(1, n, m)) % n  # never equal to pu
    return pu, pv


def _dense_b(ri, rj, cb, n):
    """``B`` as a dense (m x n) matrix: row r is e_ri + cb e_rj."""
    B = np.zeros((len(ri), n))
    B[np.arange(len(ri)), ri] += 1.0
    B[np.arange(len(ri)), rj] += cb
    return B


@settings(max_examples=30, deadline=None)
@given(n=st.integers(2, 9), m=st.integers(1, 40), seed=st.integers(0, 2 ** 31))
def test_pair_kernels_match_the_dense_incidence_matrix(n, m, seed):
    rng = np.random.default_rng(seed)
    pu, pv = _pairs(rng, n, m)
    D = rng.random((n, n)) + 0.1
    D = D + D.T
    lp = ColumnBlockLP(D, pu, pv, rng.random() * 3)
    B = _dense_b(lp.ri, lp.rj, lp.cb, n)
    X, Z, d, q = rng.random((n, n)), rng.normal(size=(n, m)), rng.random((n, m)), rng.random((n, n))
    sub = rng.normal(size=(n, m))
    np.testing.assert_allclose(lp.privacy(X), X @ B.T, rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(lp.privacy(X, minus=sub), X @ B.T - sub, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(lp.privacy_t(Z), Z @ B, rtol=1e-12, atol=1e-13)
    gram = np.stack([B.T @ (d[w] * (B @ X[w])) for w in range(n)]) + q * X
    np.testing.assert_allclose(lp.gram(X, d, q), gram, rtol=1e-12, atol=1e-13)


def test_triple_gram_matches_its_sparse_products():
    rng = np.random.default_rng(3)
    n, rows = 7, 60
    u = rng.integers(0, n, rows)
    v = (u + rng.integers(1, n, rows)) % n
    w = rng.integers(0, n, rows)
    keys = np.unique((w * n + v) * n + u)
    w, v, u = keys // (n * n), (keys // n) % n, keys % n
    D = rng.random((n, n)) + 0.1
    lp = TripleBlockLP(D + D.T, u, v, w, 0.7)
    X, q = rng.random((n, n)), rng.random((n, n))
    d = rng.random(len(u))
    expected = lp.privacy_t(d * lp.privacy(X)) + q * X
    np.testing.assert_allclose(lp.gram(X, d, q), expected, rtol=1e-12, atol=1e-14)
    # the rows sorted by column: a column's rows touch that column's entries only
    assert np.all(np.diff(lp.start) >= 0) and lp.start[-1] == len(u)


def test_pair_kernels_accept_views_and_other_layouts():
    rng = np.random.default_rng(5)
    n, m = 6, 11
    pu, pv = _pairs(rng, n, m)
    ri, rj, cb = pv, pu, -rng.random(m)
    X = np.asfortranarray(rng.random((n, n)))
    Z = rng.normal(size=(m, n)).T  # a transposed view
    B = _dense_b(ri, rj, cb, n)
    np.testing.assert_allclose(pair_values(X, ri, rj, cb), X @ B.T, rtol=1e-13)
    np.testing.assert_allclose(pair_transpose(Z, ri, rj, cb, n), Z @ B, rtol=1e-12, atol=1e-14)
    d, q = rng.random((n, m)), np.zeros((n, n))
    np.testing.assert_allclose(pair_gram(X, d.T.copy().T, ri, rj, cb, q),
                               np.stack([B.T @ (d[k] * (B @ X[k])) for k in range(n)]),
                               rtol=1e-12, atol=1e-14)


@settings(max_examples=40, deadline=None)
@given(size=st.integers(1, 200), seed=st.integers(0, 2 ** 31))
def test_pair_passes_match_their_numpy_formulas(size, seed):
    rng = np.random.default_rng(seed)
    v, z = rng.random(size) + 1e-3, rng.random(size) + 1e-3
    dv, dz = rng.normal(size=size), rng.normal(size=size)
    r, s = rng.normal(size=size), rng.random(size) + 0.5
    neg = dv < 0
    expected = 1.0 if not neg.any() else min(1.0, float(np.min(-v[neg] / dv[neg])))
    assert ratio_test(v, dv) == pytest.approx(expected, rel=1e-15)
    ap, ad = rng.random(), rng.random()
    assert moved_product_sum(v, dv, z, dz, ap, ad) == pytest.approx(
        float(np.sum((v + ap * dv) * (z + ad * dz))), rel=1e-12, abs=1e-12)
    target = float(rng.random())
    np.testing.assert_allclose(centring_targets(v, dv, z, dz, target), target - v * z - dv * dz,
                               rtol=1e-14, atol=1e-15)
    tp, td, lo, hi = rng.random(), rng.random(), 0.1, 10.0
    prod = (v + tp * dv) * (z + td * dz)
    shift = np.maximum(np.clip(prod, lo * target, hi * target) - prod, -hi * target)
    np.testing.assert_allclose(corrector_targets(r, v, dv, z, dz, tp, td, target, lo, hi),
                               r + shift, rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(scaled_quotient(r, z, dv, s), (r + z * dv) / s, rtol=1e-14)
    np.testing.assert_allclose(scaled_quotient(r, z, dv, s, -1.0), (r - z * dv) / s, rtol=1e-14)


def test_gondzio_shift_bounds_the_products():
    """Products below ``beta_min x target`` are raised to it; above ``beta_max x target``
    they are lowered by at most that much."""
    v = np.array([1e-3, 1.0, 100.0])
    zero, one = np.zeros(3), np.ones(3)
    out = corrector_targets(zero, v, zero, one, zero, 0.0, 0.0, 1.0, 0.1, 10.0)
    np.testing.assert_allclose(out, [0.1 - 1e-3, 0.0, -10.0])


def test_the_sparse_form_of_b_agrees_with_the_kernels():
    """``B^T Z`` by the kernel against two SciPy sparse products (the form it replaced)."""
    rng = np.random.default_rng(11)
    n, m = 30, 200
    pu, pv = _pairs(rng, n, m)
    cb = -rng.random(m)
    rows = np.arange(m)
    PiT = sp.csr_matrix((np.ones(m), (pv, rows)), shape=(n, m))
    PjT = sp.csr_matrix((cb, (pu, rows)), shape=(n, m))
    Z = rng.normal(size=(n, m))
    np.testing.assert_allclose(pair_transpose(Z, pv, pu, cb, n), (PiT @ Z.T + PjT @ Z.T).T,
                               rtol=1e-12, atol=1e-13)
