"""Sparse unit triangular solves with many right-hand sides, in place (compiled).

The two-level elimination of :mod:`mdp.lp.dense` applies the inverse of a sparse triangular
factor (a few nonzeros per row) to a dense block of a thousand columns every iteration. SciPy's
``spsolve_triangular`` (SuperLU's ``gstrs``) solves one column after another, each through the
factor's index arrays; these kernels walk the factor's rows once and update whole rows of the
C-ordered right-hand side (contiguous, vectorised): on the ConstOPTMech LP's factors (n = 1000,
1,001 columns) about ten times faster (``docs/design/lp.md``).
``tests/mdp/lp/test_sparse_triangular.py`` checks them against SciPy.
"""

from __future__ import annotations

import numba as nb
import numpy as np

__all__ = ["unit_lower_solve", "unit_upper_solve"]


@nb.njit(cache=True, boundscheck=False)
def _lower(indptr, indices, data, X):
    for i in range(X.shape[0]):
        xi = X[i]
        for k in range(indptr[i], indptr[i + 1]):
            j = indices[k]
            if j < i:
                a = data[k]
                xj = X[j]
                for c in range(X.shape[1]):
                    xi[c] -= a * xj[c]


@nb.njit(cache=True, boundscheck=False)
def _upper(indptr, indices, data, X):
    for i in range(X.shape[0] - 1, -1, -1):
        xi = X[i]
        for k in range(indptr[i], indptr[i + 1]):
            j = indices[k]
            if j > i:
                a = data[k]
                xj = X[j]
                for c in range(X.shape[1]):
                    xi[c] -= a * xj[c]


def _solve(kernel, T, b: np.ndarray) -> np.ndarray:
    X = np.array(b, dtype=float, order="C", ndmin=2, copy=True)
    if b.ndim == 1:
        X = X.reshape(-1, 1)
    if T.format != "csr" or X.shape[0] != T.shape[0] or T.shape[0] != T.shape[1]:
        raise ValueError("a square CSR matrix and a right-hand side of as many rows are needed")
    kernel(T.indptr, T.indices, T.data, X)
    return X.reshape(b.shape)


def unit_lower_solve(T, b: np.ndarray) -> np.ndarray:
    """``T^{-1} b`` for a CSR matrix ``T`` read as unit lower triangular (its entries on and above
    the diagonal are ignored); ``b`` of shape ``(m,)`` or ``(m, k)``."""
    return _solve(_lower, T, b)


def unit_upper_solve(T, b: np.ndarray) -> np.ndarray:
    """``T^{-1} b`` for a CSR matrix ``T`` read as unit upper triangular (its entries on and below
    the diagonal are ignored); ``b`` of shape ``(m,)`` or ``(m, k)``."""
    return _solve(_upper, T, b)
