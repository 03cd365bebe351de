r"""Compiled all-pairs maxima of :mod:`mdp.accounting` (numba).

The certification of an ``n x n`` matrix needs, for every ordered pair of rows,

.. math:: x_{uv} = \max_w \frac{M_{uw} - M_{vw}}{M_{vw}}
          \quad\text{or, in logs,}\quad r_{uv} = \max_w (L_{uw} - L_{vw}),

``n^3`` triples (1.25e11 at n = 5000). NumPy computes them through a buffer of blocks of triples,
so every triple is written to memory and read back. These kernels fuse the operation and the
maximum and keep a block of rows in cache while the other rows stream past.

**Same numbers as NumPy, bit for bit.** Each triple is the same IEEE float64 operations in the
same order (one subtraction, then one division), so the error analysis of
:func:`mdp.accounting.pair_log_ratios` holds unchanged. The only fast-math flags are ``nnan``
and ``nsz``, which let the compiler vectorise the maximum: they are sound because the kernels
are only called on matrices without zeros (the caller checks), where no triple is NaN, and the
sign of a zero maximum changes nothing downstream (``log1p(+-0) = +-0`` and every bound adds a
positive margin). ``tests/test_accounting.py`` checks equality with the NumPy path.
"""

from __future__ import annotations

import numba as nb
import numpy as np

__all__ = ["pair_max_log", "pair_max_prob", "ROW_BLOCK"]

#: Rows kept in cache while every other row streams past (16 rows of 5,000 entries: 640 kB).
ROW_BLOCK = 16


@nb.njit(cache=True, fastmath={"nnan", "nsz"}, boundscheck=False)
def pair_max_log(A: np.ndarray, us: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover (compiled)
    """``out[i, v] = max_w (A[us[i], w] - A[v, w])``; ``A`` finite.

    Four rows ``v`` at a time: four independent maxima per load of ``A[u, w]`` (one running
    maximum is bound by the latency of its own chain; 1.5x at n = 1500).
    """
    n = A.shape[0]
    k = us.shape[0]
    n4 = n - n % 4
    for s in range(0, k, ROW_BLOCK):
        e = min(k, s + ROW_BLOCK)
        for v in range(0, n4, 4):
            for i in range(s, e):
                u = us[i]
                m0 = m1 = m2 = m3 = -np.inf
                for w in range(n):
                    a = A[u, w]
                    m0 = max(m0, a - A[v, w])
                    m1 = max(m1, a - A[v + 1, w])
                    m2 = max(m2, a - A[v + 2, w])
                    m3 = max(m3, a - A[v + 3, w])
                out[i, v] = m0
                out[i, v + 1] = m1
                out[i, v + 2] = m2
                out[i, v + 3] = m3
        for v in range(n4, n):
            for i in range(s, e):
                u = us[i]
                m = -np.inf
                for w in range(n):
                    m = max(m, A[u, w] - A[v, w])
                out[i, v] = m


@nb.njit(cache=True, fastmath={"nnan", "nsz"}, boundscheck=False)
def pair_max_prob(A: np.ndarray, us: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover (compiled)
    """``out[i, v] = max_w (A[us[i], w] - A[v, w]) / A[v, w]``; ``A`` positive and finite."""
    n = A.shape[0]
    k = us.shape[0]
    for s in range(0, k, ROW_BLOCK):
        e = min(k, s + ROW_BLOCK)
        for v in range(n):
            for i in range(s, e):
                u = us[i]
                m = -np.inf
                for w in range(n):
                    m = max(m, (A[u, w] - A[v, w]) / A[v, w])
                out[i, v] = m
