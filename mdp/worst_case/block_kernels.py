r"""Compiled steps of the column-block interior point method (:mod:`mdp.worst_case.column_blocks`).

Each iteration of that method factors ``n`` symmetric blocks ``K_w`` of side ``n`` (LAPACK
``potrf`` / ``potri`` on the lower triangle) and needs, from their inverses, the three sums of
the Schur complement

.. math:: S_{EE} = \sum_w K_w^{-1}, \quad
          S_{LE} = -\sum_w \operatorname{diag}(a_w) K_w^{-1}, \quad
          S_{LL} = \sum_w \operatorname{diag}(a_w) K_w^{-1} \operatorname{diag}(a_w)

(``a_w = D[:, w]``), then applies the inverses to a vector per block several times. These
kernels build each block's lower triangle in place for LAPACK, copy the inverse's lower triangle
into LAPACK's packed column-major layout (``AP[k]`` for ``A[i, j]``, ``i >= j``, columns in
order) and add a batch of packed inverses into the three sums column by column, so that the sums
(``4 n^2 / 2`` doubles, far larger than a cache) stream through memory once per batch. The packed
inverses take half the memory of full ones, and BLAS ``dspmv`` applies them reading half the
bytes.

:func:`dissected_inverse` builds a block's inverse along a nested dissection of the pair graph
(:mod:`mdp.lp.dissection`) with BLAS and LAPACK called in place on sub-blocks, through the
function pointers SciPy exports for Cython. ``tests/mdp/worst_case/test_column_blocks.py`` and
``tests/mdp/lp/test_dissection.py`` check them against dense NumPy.
"""

from __future__ import annotations

import ctypes

import numba as nb
import numpy as np
from numba.extending import get_cython_function_address

__all__ = ["fill_block_lower", "pack_lower", "accumulate_packed", "packed_size",
           "unpack_symmetric", "dissected_inverse", "dense_inverse"]


def packed_size(n: int) -> int:
    """Entries of the packed lower triangle of an ``n x n`` matrix."""
    return n * (n + 1) // 2


@nb.njit(cache=True, boundscheck=False, nogil=True)
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


@nb.njit(cache=True, boundscheck=False, nogil=True)
def pack_lower(upper, packed):  # pragma: no cover (compiled)
    """Copy a symmetric matrix's lower triangle, given as the upper triangle of its C-ordered
    transpose ``upper``, into ``packed``."""
    n = upper.shape[0]
    k = 0
    for j in range(n):
        row = upper[j]
        for t in range(n - j):
            packed[k + t] = row[j + t]
        k += n - j


@nb.njit(cache=True, boundscheck=False, nogil=True)
def accumulate_packed(packed, a, see, sll, s_row, s_col):  # pragma: no cover (compiled)
    """Add packed lower triangles ``packed[b]`` (one per row, entries ``v = A_b[i, j]``,
    ``i >= j``) into the packed sums ``see += v``, ``sll += a_i a_j v``, ``s_row += a_j v`` and
    ``s_col += a_i v`` with ``a = a[b]``: column by column of the triangle, so that each column of
    the four sums stays in cache while every triangle of the batch is added into it (one pass
    over the sums per batch, not per block)."""
    n = a.shape[1]
    k = 0
    for j in range(n):
        for b in range(packed.shape[0]):
            aj = a[b, j]
            row = packed[b]
            ab = a[b]
            for t in range(n - j):
                v = row[k + t]
                av = ab[j + t] * v
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


# --- block inverses along a nested dissection (mdp.lp.dissection), BLAS and LAPACK called from
# compiled code through SciPy's Cython exports, on sub-blocks in place (leading dimension n)
_vp = ctypes.c_void_p
_dgemm = ctypes.CFUNCTYPE(None, *[_vp] * 13)(
    get_cython_function_address("scipy.linalg.cython_blas", "dgemm"))
_dsyrk = ctypes.CFUNCTYPE(None, *[_vp] * 10)(
    get_cython_function_address("scipy.linalg.cython_blas", "dsyrk"))
_dtrsm = ctypes.CFUNCTYPE(None, *[_vp] * 11)(
    get_cython_function_address("scipy.linalg.cython_blas", "dtrsm"))
_dpotrf = ctypes.CFUNCTYPE(None, *[_vp] * 5)(
    get_cython_function_address("scipy.linalg.cython_lapack", "dpotrf"))
_dpotri = ctypes.CFUNCTYPE(None, *[_vp] * 5)(
    get_cython_function_address("scipy.linalg.cython_lapack", "dpotri"))
# characters passed to BLAS / LAPACK: 'L', 'N', 'T'
_L, _N, _T = 0, 1, 2


@nb.njit(cache=True, boundscheck=False, nogil=True)
def _copy_lower(K, out, a, b):  # pragma: no cover (compiled)
    """``out[a:b, a:b] = K[a:b, a:b]`` on the lower triangle."""
    for j in range(a, b):
        for i in range(j, b):
            out[i, j] = K[i, j]


# not cached: numba cannot cache functions that hold ctypes pointers
@nb.njit(nogil=True)
def _potrf_potri(out, a, k, ints, chars):  # pragma: no cover (compiled)
    """Lower triangle of ``out[a:a+k, a:a+k]`` replaced by that of its inverse; LAPACK's info."""
    ints[0] = k
    ints[1] = out.shape[0]
    sub = out[a:, a:]
    _dpotrf(chars[_L:].ctypes, ints[0:].ctypes, sub.ctypes, ints[1:].ctypes, ints[2:].ctypes)
    if ints[2] != 0:
        return ints[2]
    _dpotri(chars[_L:].ctypes, ints[0:].ctypes, sub.ctypes, ints[1:].ctypes, ints[2:].ctypes)
    return ints[2]


@nb.njit(nogil=True)
def dense_inverse(block):  # pragma: no cover (compiled)
    """Lower triangle of ``block`` (``n x n``, Fortran order) replaced by that of its inverse
    (``potrf`` + ``potri`` in place, without the GIL, so that threads can share the blocks);
    LAPACK's info (0, or the block is not positive definite)."""
    ints = np.zeros(8, dtype=np.int32)
    chars = np.array([ord("L"), ord("N"), ord("T")], dtype=np.uint8)
    return _potrf_potri(block, 0, block.shape[0], ints, chars)


@nb.njit(nogil=True)
def dissected_inverse(K, out, nodes, bnd_ptr, bnd, G, Bt, X, Vt):  # pragma: no cover (compiled)
    """Lower triangle of ``K^{-1}`` into ``out`` (both ``n x n``, Fortran order; only ``K``'s lower
    triangle is read) along a nested dissection: ``nodes[t] = (start, mid, sep, stop)`` in
    post-order, the boundary of node ``t`` is ``bnd[bnd_ptr[t]:bnd_ptr[t + 1]]`` (relative to
    its start); ``G``, ``Bt``, ``X``, ``Vt`` flat work arrays of at least ``n * max boundary``,
    ``max separator * max boundary``, ``n * max separator`` and ``n * max separator`` doubles.

    Leaves: ``potrf`` + ``potri`` in place. A separator ``[c, b)`` over ``[a, c)``: ``X = K_A^{-1} B``
    (``B`` the pairs between the boundary and the separator), ``Z = K_S - B^T X = L L^T`` in place
    at ``out[c:b, c:b]``, ``V^T = L^{-1} X^T``, ``K_A^{-1} += V V^T`` (``syrk``),
    ``out[c:b, a:c] = -L^{-T} V^T = -Z^{-1} X^T`` and ``Z^{-1}`` (``potri``). Returns 0, or
    LAPACK's info of the first failed factorisation (the block is not positive definite).
    """
    n = out.shape[0]
    ints = np.zeros(8, dtype=np.int32)
    dbl = np.array([1.0, 0.0, -1.0])
    chars = np.array([ord("L"), ord("N"), ord("T")], dtype=np.uint8)
    for t in range(nodes.shape[0]):
        a, m, c, b = nodes[t, 0], nodes[t, 1], nodes[t, 2], nodes[t, 3]
        if m == b:                                   # leaf
            _copy_lower(K, out, a, b)
            info = _potrf_potri(out, a, b - a, ints, chars)
            if info != 0:
                return info
            continue
        for j in range(a, m):                        # no pairs between the halves
            for i in range(m, c):
                out[i, j] = 0.0
        s = b - c
        if s == 0:
            continue
        nt = c - a
        p0, p1 = bnd_ptr[t], bnd_ptr[t + 1]
        nb_ = p1 - p0
        # G = K_A^{-1}[:, boundary] from the lower triangle; Bt = B^T on the boundary
        for jj in range(nb_):
            col = a + bnd[p0 + jj]
            for i in range(nt):
                r = a + i
                G[i + nt * jj] = out[r, col] if r >= col else out[col, r]
            for k in range(s):
                Bt[k + s * jj] = K[c + k, col]
        # Z = K_S - Bt X[boundary] into out[c:b, c:b] (lower), X = G Bt^T
        _copy_lower(K, out, c, b)
        ints[0], ints[1], ints[2], ints[3] = nt, s, nb_, n
        if nb_ > 0:
            _dgemm(chars[_N:].ctypes, chars[_T:].ctypes, ints[0:].ctypes, ints[1:].ctypes,
                   ints[2:].ctypes, dbl[0:].ctypes, G.ctypes, ints[0:].ctypes, Bt.ctypes,
                   ints[1:].ctypes, dbl[1:].ctypes, X.ctypes, ints[0:].ctypes)
            for q in range(s):
                for k in range(q, s):
                    acc = 0.0
                    for jj in range(nb_):
                        acc += Bt[k + s * jj] * X[bnd[p0 + jj] + nt * q]
                    out[c + k, c + q] -= acc
        else:
            X[:nt * s] = 0.0
        sub_s = out[c:, c:]
        ints[4] = s
        _dpotrf(chars[_L:].ctypes, ints[4:].ctypes, sub_s.ctypes, ints[3:].ctypes,
                ints[5:].ctypes)
        if ints[5] != 0:
            return ints[5]
        # Vt = L^{-1} X^T (s x nt, Fortran order, leading dimension s)
        for i in range(nt):
            for k in range(s):
                Vt[k + s * i] = X[i + nt * k]
        _dtrsm(chars[_L:].ctypes, chars[_L:].ctypes, chars[_N:].ctypes, chars[_N:].ctypes,
               ints[4:].ctypes, ints[0:].ctypes, dbl[0:].ctypes, sub_s.ctypes, ints[3:].ctypes,
               Vt.ctypes, ints[4:].ctypes)
        sub_a = out[a:, a:]
        _dsyrk(chars[_L:].ctypes, chars[_T:].ctypes, ints[0:].ctypes, ints[4:].ctypes,
               dbl[0:].ctypes, Vt.ctypes, ints[4:].ctypes, dbl[0:].ctypes, sub_a.ctypes,
               ints[3:].ctypes)
        _dtrsm(chars[_L:].ctypes, chars[_L:].ctypes, chars[_T:].ctypes, chars[_N:].ctypes,
               ints[4:].ctypes, ints[0:].ctypes, dbl[0:].ctypes, sub_s.ctypes, ints[3:].ctypes,
               Vt.ctypes, ints[4:].ctypes)
        for i in range(nt):
            for k in range(s):
                out[c + k, a + i] = -Vt[k + s * i]
        _dpotri(chars[_L:].ctypes, ints[4:].ctypes, sub_s.ctypes, ints[3:].ctypes,
                ints[5:].ctypes)
        if ints[5] != 0:
            return ints[5]
    return 0
