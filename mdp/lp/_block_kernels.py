r"""Compiled steps of the column-block interior point method (:mod:`mdp.lp.column_blocks`).

Each iteration of that method factors ``n`` symmetric blocks ``K_w`` of side ``n`` (LAPACK
``potrf`` / ``potri`` on the lower triangle) and needs, from their inverses, the three sums of
the Schur complement

.. math:: S_{EE} = \sum_w K_w^{-1}, \quad
          S_{LE} = -\sum_w \operatorname{diag}(a_w) K_w^{-1}, \quad
          S_{LL} = \sum_w \operatorname{diag}(a_w) K_w^{-1} \operatorname{diag}(a_w)

(``a_w = D[:, w]``), then applies the inverses to a vector per block several times. These
kernels build each block's lower triangle in place for LAPACK and copy ``potri``'s lower
triangle into LAPACK's packed column-major layout (``AP[k]`` for ``A[i, j]``, ``i >= j``, columns
in order) while adding it into the three sums, one pass while the block is in cache. The packed
inverses take half the memory of full ones, and BLAS ``dspmv`` applies them reading half the
bytes. ``tests/test_column_blocks.py`` checks both against dense NumPy.
"""

from __future__ import annotations

import numba as nb
import numpy as np

__all__ = ["fill_block_lower", "pack_and_accumulate", "packed_size", "unpack_symmetric"]


def packed_size(n: int) -> int:
    """Entries of the packed lower triangle of an ``n x n`` matrix."""
    return n * (n + 1) // 2


@nb.njit(cache=True, boundscheck=False)
def fill_block_lower(out, ri, rj, cb, d, q):  # pragma: no cover (compiled)
    """Lower triangle of ``B^T diag(d) B + diag(q)`` into ``out`` (Fortran order, the strict upper
    triangle untouched), where row ``r`` of ``B`` is ``e_{ri[r]} + cb[r] e_{rj[r]}`` (``ri != rj``)."""
    n = out.shape[0]
    for j in range(n):
        for i in range(j, n):
            out[i, j] = 0.0
    for r in range(ri.shape[0]):
        a, b, c, dv = ri[r], rj[r], cb[r], d[r]
        out[a, a] += dv
        out[b, b] += dv * c * c
        if a > b:
            out[a, b] += dv * c
        else:
            out[b, a] += dv * c
    for u in range(n):
        out[u, u] += q[u]


@nb.njit(cache=True, boundscheck=False)
def pack_and_accumulate(upper, a, packed, see, sll, s_row, s_col):  # pragma: no cover (compiled)
    """Copy a symmetric matrix's lower triangle, given as the upper triangle of its C-ordered
    transpose ``upper``, into ``packed`` and add it into the packed sums: ``see += v``,
    ``sll += a_i a_j v``, ``s_row += a_j v`` and ``s_col += a_i v`` for ``v = A[i, j]``,
    ``i >= j``."""
    n = upper.shape[0]
    k = 0
    for j in range(n):
        aj = a[j]
        row = upper[j]
        for t in range(n - j):
            i = j + t
            v = row[i]
            av = a[i] * v
            packed[k + t] = v
            see[k + t] += v
            s_row[k + t] += aj * v
            s_col[k + t] += av
            sll[k + t] += aj * av
        k += n - j


def unpack_symmetric(packed: np.ndarray, n: int) -> np.ndarray:
    """The full symmetric matrix of a packed lower triangle."""
    jj, ii = np.triu_indices(n)
    A = np.empty((n, n))
    A[ii, jj] = packed
    A[jj, ii] = packed
    return A
