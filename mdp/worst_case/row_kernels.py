r"""Compiled passes over the privacy rows of the column-block LP (:mod:`mdp.worst_case.block_lp`).

Row ``r`` of ``B`` in column ``w`` is ``e_{ri[r]} + cb[r] e_{rj[r]}`` over that column's entries
``X[w, :]``. :class:`~mdp.worst_case.block_lp.ColumnBlockLP` has the same pairs in every column (values
of shape ``(n, m)``); :class:`~mdp.worst_case.block_lp.TripleBlockLP` has each column's own rows, sorted
by column (``start[w]:start[w + 1]``; values flat).

Every interior point iteration passes over the rows' slacks and multipliers a few dozen times,
and where the rows outnumber the entries (a dense spanner's edges in every column: 35,564 pairs x
500 columns on 50-d points) these passes, not the block factorisations, take most of the time.
Their cost is memory traffic, so each kernel here reads its arrays once and writes only its
output: the products ``B X``, ``B^T Z`` and the Gram product ``B^T diag(d) B X`` of the iterative
refinement (fused: no array of the rows' size is formed), and the scaled quotients of the Newton
step (the core's passes over its complementary pairs are in :mod:`mdp.lp.ipm_kernels`). The kernels run on one thread without the GIL.
``tests/mdp/worst_case/test_row_kernels.py`` checks each against NumPy and SciPy.
"""

from __future__ import annotations

import numba as nb
import numpy as np

__all__ = ["pair_values", "pair_transpose", "pair_gram", "triple_gram", "scaled_quotient"]


@nb.njit(cache=True, boundscheck=False, nogil=True)
def _pair_values(X, ri, rj, cb, sub, out):  # pragma: no cover (compiled)
    n, m = out.shape
    for w in range(n):
        x = X[w]
        o = out[w]
        if sub.shape[0] == 0:
            for r in range(m):
                o[r] = x[ri[r]] + cb[r] * x[rj[r]]
        else:
            s = sub[w]
            for r in range(m):
                o[r] = x[ri[r]] + cb[r] * x[rj[r]] - s[r]


@nb.njit(cache=True, boundscheck=False, nogil=True)
def _pair_transpose(Z, ri, rj, cb, out):  # pragma: no cover (compiled)
    n, m = Z.shape
    for w in range(n):
        z = Z[w]
        o = out[w]
        o[:] = 0.0
        for r in range(m):
            o[ri[r]] += z[r]
            o[rj[r]] += cb[r] * z[r]


@nb.njit(cache=True, boundscheck=False, nogil=True)
def _pair_gram(X, d, ri, rj, cb, q, out):  # pragma: no cover (compiled)
    n, m = d.shape
    for w in range(n):
        x = X[w]
        dw = d[w]
        o = out[w]
        for u in range(x.shape[0]):
            o[u] = q[w, u] * x[u]
        for r in range(m):
            t = dw[r] * (x[ri[r]] + cb[r] * x[rj[r]])
            o[ri[r]] += t
            o[rj[r]] += cb[r] * t


@nb.njit(cache=True, boundscheck=False, nogil=True)
def _triple_gram(X, d, start, ri, rj, cb, q, out):  # pragma: no cover (compiled)
    n = X.shape[0]
    for w in range(n):
        x = X[w]
        o = out[w]
        for u in range(x.shape[0]):
            o[u] = q[w, u] * x[u]
        for r in range(start[w], start[w + 1]):
            t = d[r] * (x[ri[r]] + cb[r] * x[rj[r]])
            o[ri[r]] += t
            o[rj[r]] += cb[r] * t


@nb.njit(cache=True, boundscheck=False, nogil=True)
def _scaled_quotient(a, b, c, s, sign, out):  # pragma: no cover (compiled)
    for i in range(out.shape[0]):
        out[i] = (a[i] + sign * b[i] * c[i]) / s[i]


def _flat(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float64).reshape(-1)


_NO_SUB = np.empty((0, 0))


def pair_values(X: np.ndarray, ri: np.ndarray, rj: np.ndarray, cb: np.ndarray,
                sub: np.ndarray | None = None) -> np.ndarray:
    r"""``B X`` over pairs shared by every column: ``out[w, r] = X[w, ri[r]] + cb[r] X[w, rj[r]]``
    (minus ``sub[w, r]`` when given), shape ``(n, m)``."""
    X = np.ascontiguousarray(X, dtype=np.float64)
    out = np.empty((X.shape[0], len(ri)))
    sub = _NO_SUB if sub is None else np.ascontiguousarray(sub, dtype=np.float64)
    _pair_values(X, ri, rj, cb, sub, out)
    return out


def pair_transpose(Z: np.ndarray, ri: np.ndarray, rj: np.ndarray, cb: np.ndarray,
                   n: int) -> np.ndarray:
    r"""``B^T Z`` for values ``Z`` of shape ``(columns, m)``: ``out[w] = sum_r Z[w, r]
    (e_{ri[r]} + cb[r] e_{rj[r]})``, shape ``(columns, n)``."""
    Z = np.ascontiguousarray(Z, dtype=np.float64)
    out = np.empty((Z.shape[0], n))
    _pair_transpose(Z, ri, rj, cb, out)
    return out


def pair_gram(X: np.ndarray, d: np.ndarray, ri: np.ndarray, rj: np.ndarray, cb: np.ndarray,
              q: np.ndarray) -> np.ndarray:
    r"""``B^T diag(d) B X + q X`` (elementwise ``q X``) over pairs shared by every column, in
    one pass over ``d`` (shape ``(n, m)``)."""
    X = np.ascontiguousarray(X, dtype=np.float64)
    out = np.empty_like(X)
    _pair_gram(X, np.ascontiguousarray(d, dtype=np.float64), ri, rj, cb,
               np.ascontiguousarray(q, dtype=np.float64), out)
    return out


def triple_gram(X: np.ndarray, d: np.ndarray, start: np.ndarray, ri: np.ndarray, rj: np.ndarray,
                cb: np.ndarray, q: np.ndarray) -> np.ndarray:
    r"""As :func:`pair_gram` for rows of their own per column: column ``w``'s rows are
    ``start[w]:start[w + 1]`` of the flat ``d``, ``ri``, ``rj``, ``cb``."""
    X = np.ascontiguousarray(X, dtype=np.float64)
    out = np.empty_like(X)
    _triple_gram(X, _flat(d), start, ri, rj, cb, np.ascontiguousarray(q, dtype=np.float64), out)
    return out


def scaled_quotient(a: np.ndarray, b: np.ndarray, c: np.ndarray, s: np.ndarray,
                    sign: float = 1.0) -> np.ndarray:
    r"""``(a + sign b c) / s`` elementwise, in ``a``'s shape (the Newton step's privacy terms
    ``(r_s + z r_B) / s`` and ``(r_s - z ds) / s``)."""
    out = np.empty(np.shape(a))
    _scaled_quotient(_flat(a), _flat(b), _flat(c), _flat(s), float(sign), out.reshape(-1))
    return out
