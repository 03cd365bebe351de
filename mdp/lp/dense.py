r"""Dense Schur complements of the structured interior point methods, on the CPU or a GPU.

The row-block interior point method of ConstOPTMech (:mod:`mdp.families.constopt.ipm`) spends
almost all of an iteration on one dense step: with the linking matrix ``L`` (``2n x t``; rows
``u`` and ``n + u`` are matrix row ``u``'s loss and row-sum rows) and, per ``u``, the Cholesky
factor ``R_u = [[a_u, b_u], [0, c_u]]`` of the ``2 x 2`` block ``M_u`` that couples them,

.. math:: G = \begin{pmatrix} \operatorname{diag}(a) & \operatorname{diag}(b) \\
          0 & \operatorname{diag}(c) \end{pmatrix} L, \qquad
          S = L^\top M L + E = G^\top G + E, \qquad S = C C^\top,

one symmetric rank-``2n`` update of ``2 n t^2`` flops (:func:`gram`, BLAS ``syrk``, half a
general product, and the result is a Gram matrix, positive semidefinite by construction) and a
Cholesky factorisation of ``t^3 / 3``, then ``d = S^{-1} (r - L^\top c)`` and ``L d`` per
right-hand side (``E`` is sparse). At n = 5000 (``t ~ n``) that is ~3e11 flops per iteration.
:class:`CPUSchur` does it with SciPy's BLAS and LAPACK; :class:`GPUSchur` with CuPy on an NVIDIA
GPU (cuBLAS and cuSOLVER, float64), keeping ``L`` and the factor on the device so that only
vectors cross the bus.

Which one runs is the device rule of :mod:`mdp.lp.arrays` (:func:`~mdp.lp.arrays.device_choice`:
``MDP_DEVICE``, else the GPU where one exists and the matrix is large enough to gain, from
``gpu_from`` columns: ``ConstOPTTuning.gpu_from_size``, default :data:`GPU_MIN_SIZE`). Both
compute the same quantities in float64; results agree to rounding
(``tests/mdp/lp/test_dense.py``), and nothing downstream trusts them: every matrix built from
them is certified on the CPU.

**Two-level elimination (CPU).** Columns of ``L`` with non-zeros in rows ``u`` and ``n + u`` only
(ConstOPTMech's free entries in free-free rows, :class:`SparseColumns`) need not be dense. With
``F`` those columns and ``D`` the others, ``S_FF = G_F^T G_F + E_FF`` is sparse: the columns of
one matrix row and the pairs ``E`` couples. Joined both ways the columns percolate into one
component of thousands (n = 1000: up to 2,900 of 3,400), but the graph joins entries of nearby
points only, so a minimum degree order factorises it with almost no fill (``nnz`` of the factor
within 1.7 times that of ``S_FF`` on every space of the LP suite). :class:`CPUSchur` factorises

.. math:: S_{FF}[q, q] = C_F C_F^\top \ (\text{sparse}), \qquad W = C_F^{-1} S_{FD}[q], \qquad
          S_{DD} - W^\top W = C_D C_D^\top,

the blocked Cholesky factorisation of ``S`` with ``F`` ordered first (Cholesky is backward
stable in any symmetric order; SuperLU without pivoting, ``C_F = L diag(u)^{1/2}``), in
``2n d^2 + f d^2 + 2 nnz(C_F) d + d^3 / 3`` flops (``d = |D|``, ``f = |F|``) instead of
``2n t^2 + t^3 / 3``.

Measured figures: ``docs/design/lp.md``, "Devices and threads".
"""

from __future__ import annotations

import contextlib
import functools
import io
import warnings
from dataclasses import dataclass

import numpy as np
import scipy.linalg as sl
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from scipy.linalg import blas

from ..errors import ParameterError, SolverError
from ..runtime.threads import limit_pools, pool_threads
from .arrays import DETECT, GPUChoice, device_choice, resolve_gpu
from .highs import get_threads
from .sparse_triangular import unit_lower_solve, unit_upper_solve

__all__ = ["GPU_MIN_SIZE", "SERIAL_BLAS_BELOW", "MAX_BLAS_THREADS", "default_blas_threads",
           "schur_factor", "blas_threads", "gram", "matvec", "rmatvec", "SparseColumns", "CPUSchur",
           "GPUSchur"]

#: Side of the dense Schur complement from which ``MDP_DEVICE=auto`` uses a GPU by default (below
#: it the transfers and kernel launches cost more than the flops saved).
GPU_MIN_SIZE = 1000


#: Dense side below which :func:`default_blas_threads` leaves one core to the rest of the machine
#: (on a 2-core machine: one BLAS thread). Below it a step is too short for a thread that waits for
#: a busy core (Geolife cells on a 2-core machine, per interior point iteration: dense side 1,001
#: 0.13 s on one thread against 0.18 s on two, 1,501 0.28 against 0.30, 2,001 0.59-0.69 against
#: 0.50; ``docs/design/lp.md``).
SERIAL_BLAS_BELOW = 1500
#: Most BLAS threads :func:`default_blas_threads` gives the CPU step. On a 16-core machine 8 threads
#: were the fastest at every dense side from 1,001 to 3,001, and the libraries' default of 16 was up
#: to 4.4 times slower per iteration (``docs/design/lp.md``).
MAX_BLAS_THREADS = 8


@functools.lru_cache(maxsize=1)
def _physical_cores() -> int:
    """Physical cores this process may use (affinity and container quotas respected: joblib).

    Where the physical cores cannot be found (no ``lscpu``), joblib warns, prints a traceback and
    counts the logical ones: that count is kept, the noise is not shown.
    """
    import joblib

    with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        return max(1, int(joblib.cpu_count(only_physical_cores=True)))


def default_blas_threads(dense_side: int) -> int:
    """BLAS threads of the CPU step for a dense side, unless :func:`mdp.lp.set_threads` fixed a count.

    ``min(MAX_BLAS_THREADS, c)`` with ``c`` the physical cores, less one below a dense side of
    ``SERIAL_BLAS_BELOW`` (and at least one): a 2-core machine runs small steps on one thread and
    large ones on two, a 16-core machine every step on 8. Under ``threads="auto"`` no more than
    the CPUs other processes leave free now (:func:`mdp.runtime.threads.pool_threads`).
    """
    cores = _physical_cores() - (1 if dense_side < SERIAL_BLAS_BELOW else 0)
    return pool_threads(max(1, min(MAX_BLAS_THREADS, cores)))


def blas_threads(dense_side: int) -> contextlib.AbstractContextManager:
    """Context in which the CPU step's BLAS (NumPy's and SciPy's) runs on the right thread count.

    The count set by :func:`mdp.lp.set_threads` where there is one, else
    :func:`default_blas_threads`; the libraries' own counts are restored on exit.
    """
    threads = get_threads()
    return limit_pools(default_blas_threads(dense_side) if threads is None else threads, "blas")


@dataclass(frozen=True)
class SparseColumns:
    """Columns of the linking matrix that :class:`CPUSchur` eliminates first, in small blocks.

    Attributes
    ----------
    cols : int ndarray
        Positions of the columns (distinct, in ``0..t-1``).
    rows : int ndarray
        Per column, the matrix row ``u`` whose loss and row-sum rows (``u`` and ``n + u``) hold its
        only non-zeros, before and after every update.
    pairs : (int ndarray, int ndarray)
        Every pair of these columns (positions) that the sparse part ``E`` of ``S`` couples.
    """

    cols: np.ndarray
    rows: np.ndarray
    pairs: tuple[np.ndarray, np.ndarray]


def _times_blocks(a: np.ndarray, b: np.ndarray, c: np.ndarray, L: np.ndarray) -> np.ndarray:
    """``G = R L`` for ``R = [[diag(a), diag(b)], [0, diag(c)]]`` (the blocks' Cholesky factors)."""
    n = L.shape[0] // 2
    G = np.empty_like(L)
    np.multiply(a[:, None], L[:n], out=G[:n])
    G[:n] += b[:, None] * L[n:]
    np.multiply(c[:, None], L[n:], out=G[n:])
    return G


def gram(G: np.ndarray, out: np.ndarray | None = None, alpha: float = 1.0) -> np.ndarray:
    """``alpha G^T G`` (plus ``out``, updated in place), lower triangle only, in Fortran order.

    BLAS ``syrk`` of SciPy's BLAS, as every heavy product of the CPU step (:func:`matvec`,
    :func:`rmatvec`, the triangular solves, the Cholesky factorisations): NumPy's and SciPy's
    wheels each bundle an OpenBLAS with its own thread pool, and alternating between the two
    within an iteration made a syrk-syrk-Cholesky sequence about twice as slow on a 2-core machine
    (the idle pool's threads spin while the other pool works).
    """
    Gt = np.ascontiguousarray(G).T                   # Fortran order: syrk copies nothing
    if out is None:
        return blas.dsyrk(alpha, Gt, trans=0, lower=1)
    return blas.dsyrk(alpha, Gt, beta=1.0, c=out, trans=0, lower=1, overwrite_c=1)


def matvec(A: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``A @ x`` for a C-ordered ``A`` (SciPy's BLAS ``gemv``)."""
    return blas.dgemv(1.0, A.T, x, trans=1)


def rmatvec(A: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``A.T @ y`` for a C-ordered ``A`` (SciPy's BLAS ``gemv``)."""
    return blas.dgemv(1.0, A.T, y, trans=0)


def _cholesky(S: np.ndarray) -> tuple:
    """``scipy.linalg.cho_factor(S, lower=True)``, overwriting ``S`` (a temporary of the step);
    :class:`SolverError` unless ``S`` is numerically positive definite."""
    try:
        cho = sl.cho_factor(S, lower=True, check_finite=False, overwrite_a=True)
    except (np.linalg.LinAlgError, ValueError) as exc:
        raise SolverError("the interior point method's normal matrix lost positive "
                          "definiteness") from exc
    if not np.all(np.isfinite(np.diagonal(cho[0]))):
        raise SolverError("the interior point method's normal matrix lost positive definiteness")
    return cho


class _TwoLevel:
    """The components of :class:`SparseColumns` and one iteration's blocked factorisation."""

    def __init__(self, L0: np.ndarray, spec: SparseColumns):
        n2, t = L0.shape
        n = n2 // 2
        cols = np.asarray(spec.cols, dtype=np.int64)
        rows = np.asarray(spec.rows, dtype=np.int64)
        pa, pb = (np.asarray(v, dtype=np.int64) for v in spec.pairs)
        nf = len(cols)
        if (rows.shape != cols.shape or len(np.unique(cols)) != nf or cols.min() < 0
                or cols.max() >= t or rows.min() < 0 or rows.max() >= n):
            raise ValueError("SparseColumns: cols must be distinct column positions and rows "
                             "matrix rows, one per column")
        for k in range(0, nf, 256):                   # in slices: L0[:, cols] can be GBs
            sub = L0[:, cols[k:k + 256]] != 0.0
            at = np.arange(sub.shape[1])
            sub[rows[k:k + 256], at] = False
            sub[n + rows[k:k + 256], at] = False
            if sub.any():
                raise ValueError("SparseColumns: a column has a non-zero outside rows u and n + u")
        pos = np.full(t, -1, dtype=np.int64)
        pos[cols] = np.arange(nf)
        qa, qb = pos[pa], pos[pb]
        if np.any(qa < 0) or np.any(qb < 0):
            raise ValueError("SparseColumns: pairs must join two of its columns")
        self.F, self.uF = cols, rows
        self.D = np.setdiff1d(np.arange(t), cols)
        self.posF = np.full(t, -1, dtype=np.int64)
        self.posF[self.F] = np.arange(nf)
        self.posD = np.full(t, -1, dtype=np.int64)
        self.posD[self.D] = np.arange(len(self.D))
        # pairs of columns of one matrix row (both orders and the diagonal): G_F^T G_F's entries
        by_row = np.argsort(rows, kind="stable")
        cnt = np.bincount(rows, minlength=n)
        starts = np.r_[0, np.cumsum(cnt)]
        ii, jj = [], []
        for c in np.unique(cnt[cnt > 0]):
            us = np.nonzero(cnt == c)[0]
            mem = by_row[starts[us][:, None] + np.arange(c)[None, :]]
            ii.append(np.repeat(mem, c, axis=1).ravel())
            jj.append(np.tile(mem, (1, c)).ravel())
        self.gi, self.gj = np.concatenate(ii), np.concatenate(jj)
        # the sparsity pattern of S_FF (those entries and the pairs, both orders) as sorted keys
        # p f + q: its CSR structure, the same at every iteration
        self.keys = np.unique(np.r_[self.gi * nf + self.gj, qa * nf + qb, qb * nf + qa])
        self.indptr = np.searchsorted(self.keys, np.arange(nf + 1) * nf)
        self.indices = self.keys % nf
        self.n, self.nf = n, nf
        # L0's dense columns (C order, updated per iteration) and the sparse columns' two
        # coefficients (no update touches them)
        self.L0_D = np.ascontiguousarray(L0[:, self.D])
        self.L_D = np.empty_like(self.L0_D)
        self.l1, self.l2 = L0[rows, cols], L0[n + rows, cols]

    def _sparse_ff(self, p: np.ndarray, q: np.ndarray, v: np.ndarray) -> sp.csc_matrix:
        """``S_FF`` from its entries ``(p, q, v)`` (positions in F, summed where they repeat)."""
        key = p * self.nf + q
        at = np.minimum(np.searchsorted(self.keys, key), len(self.keys) - 1)
        if np.any(self.keys[at] != key):
            raise ValueError("the sparse part couples columns that SparseColumns.pairs leaves out")
        data = np.bincount(at, v, minlength=len(self.keys))
        # symmetric: the CSR arrays read as CSC give the same matrix
        return sp.csc_matrix((data, self.indices, self.indptr), shape=(self.nf, self.nf))

    def _tri(self, x: np.ndarray, trans: bool) -> np.ndarray:
        """``C^{-1} x[q]`` or, with ``trans``, ``y`` with ``y[q] = C^{-T} x`` (x of shape (f,) or
        (f, k)), where ``S_FF[q][:, q] = C C^T``."""
        if not trans:
            z = unit_lower_solve(self.lower, x[self.q])
            return z * (self.inv_root[:, None] if z.ndim == 2 else self.inv_root)
        z = unit_upper_solve(self.upper, x * (self.inv_root[:, None] if x.ndim == 2
                                              else self.inv_root))
        out = np.empty_like(z)
        out[self.q] = z
        return out

    def _factor_ff(self, S_FF: sp.csc_matrix) -> None:
        """``S_FF[q][:, q] = L diag(u) L^T`` (SuperLU without pivoting, minimum degree order on
        the pattern): :class:`SolverError` unless every pivot ``u`` is positive and finite."""
        try:
            lu = spla.splu(S_FF, permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0,
                           options={"SymmetricMode": True})
        except RuntimeError as exc:                   # an exactly singular matrix
            raise SolverError("the interior point method's normal matrix lost positive "
                              "definiteness") from exc
        piv = lu.U.diagonal()
        # a pivot SuperLU had to move off the diagonal, or one <= 0: not positive definite
        if not (np.array_equal(lu.perm_r, lu.perm_c) and np.all(piv > 0)
                and np.all(np.isfinite(piv))):
            raise SolverError("the interior point method's normal matrix lost positive definiteness")
        self.q = np.argsort(lu.perm_c)               # S_FF[q][:, q] is the factored matrix
        self.lower = lu.L.tocsr()
        self.upper = lu.L.T.tocsr()
        self.inv_root = 1.0 / np.sqrt(piv)

    def factor(self, update: tuple, a: np.ndarray, b: np.ndarray, c: np.ndarray,
               extra: tuple) -> None:
        """As :meth:`CPUSchur.factor`."""
        n, uF, nf = self.n, self.uF, self.nf
        ucols = self.posD[np.asarray(update[1], dtype=np.int64)]
        if np.any(ucols < 0):
            raise ValueError("an update touches a column of SparseColumns")
        L_D = self.L_D
        np.copyto(L_D, self.L0_D)
        np.add.at(L_D, (update[0], ucols), update[2])
        GD = _times_blocks(a, b, c, L_D)
        S_DD = gram(GD)
        g1 = a[uF] * self.l1 + b[uF] * self.l2
        g2 = c[uF] * self.l2
        G_F = sp.csr_matrix((np.r_[g1, g2], (np.r_[np.arange(nf), np.arange(nf)], np.r_[uF, n + uF])),
                            shape=(nf, 2 * n))
        S_FD = np.ascontiguousarray(G_F @ GD)
        del GD
        er, ec, ev = (np.asarray(v) for v in extra)
        fr, fc = self.posF[er], self.posF[ec]
        m = (fr < 0) & (fc < 0)
        np.add.at(S_DD, (self.posD[er[m]], self.posD[ec[m]]), ev[m])
        m = (fr >= 0) & (fc < 0)                      # E is symmetric: its (F, D) entries suffice
        np.add.at(S_FD, (fr[m], self.posD[ec[m]]), ev[m])
        m = (fr >= 0) & (fc >= 0)
        gi, gj = self.gi, self.gj
        self._factor_ff(self._sparse_ff(np.r_[gi, fr[m]], np.r_[gj, fc[m]],
                                        np.r_[g1[gi] * g1[gj] + g2[gi] * g2[gj], ev[m]]))
        self.W = self._tri(S_FD, trans=False)
        S_DD = gram(self.W, out=S_DD, alpha=-1.0)
        self.cho = _cholesky(S_DD)

    def solve(self, r: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """As :meth:`CPUSchur.solve`: ``L^T c`` and ``L d`` by the dense columns and the sparse
        columns' two coefficients."""
        n, F, D, uF = self.n, self.F, self.D, self.uF
        rhs = r.copy()
        rhs[D] -= rmatvec(self.L_D, c)
        rhs[F] -= self.l1 * c[uF] + self.l2 * c[n + uF]
        y = self._tri(rhs[F], trans=False)
        dD = sl.cho_solve(self.cho, rhs[D] - rmatvec(self.W, y), check_finite=False)
        d = np.empty_like(rhs)
        d[D] = dD
        d[F] = self._tri(y - matvec(self.W, dD), trans=True)
        Ld = matvec(self.L_D, dD)
        Ld += np.bincount(np.r_[uF, n + uF], np.r_[self.l1 * d[F], self.l2 * d[F]],
                          minlength=2 * n)
        return d, Ld


class CPUSchur:
    """The dense step on the CPU (NumPy ``G.T @ G``, i.e. BLAS ``syrk``; LAPACK Cholesky).

    Parameters
    ----------
    L : ndarray (2n, t)
        The linking matrix before the per-iteration updates (rows ``0..n-1``: loss rows,
        ``n..2n-1``: row-sum rows).
    sparse : SparseColumns, optional
        Columns eliminated first by the two-level elimination of the module docstring (the
        updates must leave them alone). ``None`` or no columns: one dense factorisation.
    """

    device = "cpu"

    def __init__(self, L: np.ndarray, sparse: SparseColumns | None = None):
        L0 = np.asarray(L, dtype=float)
        self.n = L0.shape[0] // 2
        self.sparse = sparse
        self._two = None if sparse is None or len(sparse.cols) == 0 else _TwoLevel(L0, sparse)
        # the two-level step keeps only L0's dense columns
        self.L0 = L0 if self._two is None else None
        self.L = np.empty_like(L0) if self._two is None else None
        #: side of the dense factorisation, ``n + 1`` in the two-level step whatever the sparse
        #: columns (:func:`blas_threads`)
        self.dense_side = L0.shape[1] if self._two is None else len(self._two.D)

    def factor(self, update: tuple, a: np.ndarray, b: np.ndarray, c: np.ndarray,
               extra: tuple) -> None:
        """``L = L0 + update``, ``G = R L``, ``S = G^T G + extra``, ``S = C C^T``.

        ``update`` and ``extra`` are ``(rows, cols, values)`` triples, summed where indices
        repeat; ``extra`` must be symmetric (only the lower triangle of ``S`` is read). ``a``,
        ``b``, ``c`` (length n) are the blocks' Cholesky factors ``[[a, b], [0, c]]``.

        Raises
        ------
        SolverError
            ``S`` is not numerically positive definite.
        """
        if self._two is not None:
            self._two.factor(update, a, b, c, extra)
            return
        L = self.L
        np.copyto(L, self.L0)
        np.add.at(L, update[:2], update[2])
        G = _times_blocks(a, b, c, L)
        S = gram(G)
        del G
        np.add.at(S, extra[:2], extra[2])
        self.cho = _cholesky(S)

    def solve(self, r: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``d = S^{-1} (r - L^T c)`` and ``L d``."""
        if self._two is not None:
            return self._two.solve(r, c)
        d = sl.cho_solve(self.cho, r - rmatvec(self.L, c), check_finite=False)
        return d, matvec(self.L, d)


class GPUSchur:
    """The dense step on an NVIDIA GPU through an array backend (:mod:`mdp.lp.arrays`; CuPy's:
    cuBLAS GEMM, cuSOLVER Cholesky), float64.

    ``L0``, the updated ``L`` and the Cholesky factor stay on the device; each call moves only
    vectors and index arrays. Same interface and arithmetic as :class:`CPUSchur`. ``gpu``: the
    backend (:func:`mdp.lp.arrays.resolve_gpu`; NumPy's runs the same code on the CPU).
    """

    def __init__(self, L: np.ndarray, sparse: SparseColumns | None = None,
                 gpu: GPUChoice = DETECT):
        backend = resolve_gpu(gpu)
        if backend is None:
            raise ParameterError("no usable CUDA device for GPUSchur (CuPy missing or no GPU)")
        self.backend, self.device = backend, backend.name
        self.host = np.asarray(L, dtype=float)           # for a fall-back to the CPU
        self.sparse = sparse                              # the CPU's two-level elimination
        try:
            self.L0 = backend.to_device(self.host)
            self.L = backend.xp.empty_like(self.L0)
        except backend.out_of_memory as exc:
            raise MemoryError(f"GPU memory: {exc}") from exc
        self.n = self.L0.shape[0] // 2
        self.dense_side = self.L0.shape[1]

    def factor(self, update: tuple, a: np.ndarray, b: np.ndarray, c: np.ndarray,
               extra: tuple) -> None:
        """As :meth:`CPUSchur.factor`; ``MemoryError`` when the GPU's memory runs out."""
        try:
            self._factor(update, a, b, c, extra)
        except self.backend.out_of_memory as exc:
            raise MemoryError(f"GPU memory: {exc}") from exc

    def _factor(self, update, a, b, c, extra) -> None:
        be, n, L = self.backend, self.n, self.L
        xp, dev = be.xp, be.to_device
        xp.copyto(L, self.L0)
        xp.add.at(L, (dev(update[0]), dev(update[1])), dev(update[2]))
        a, b, c = (dev(v)[:, None] for v in (a, b, c))
        G = xp.empty_like(L)
        G[:n] = a * L[:n] + b * L[n:]
        G[n:] = c * L[n:]
        S = G.T @ G
        del G
        xp.add.at(S, (dev(extra[0]), dev(extra[1])), dev(extra[2]))
        # cuSOLVER reports a failed factorisation through its info flag only; NaN in the factor
        # (CuPy's default) or a non-positive pivot both mean "not positive definite"
        try:
            C = xp.linalg.cholesky(S)
        except be.out_of_memory:
            raise
        except Exception as exc:  # noqa: BLE001 -- LinAlgError or a cuSOLVER error
            raise SolverError("the interior point method's normal matrix lost positive "
                              "definiteness") from exc
        diag = xp.diagonal(C)
        if not bool(xp.all(xp.isfinite(diag) & (diag > 0))):
            raise SolverError("the interior point method's normal matrix lost positive definiteness")
        self.C = C

    def solve(self, r: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """As :meth:`CPUSchur.solve`."""
        be = self.backend
        rhs = be.to_device(r) - self.L.T @ be.to_device(c)
        y = be.solve_triangular(self.C, rhs)
        d = be.solve_triangular(self.C, y, trans=True)
        return be.to_host(d), be.to_host(self.L @ d)


def schur_factor(L: np.ndarray, sparse: SparseColumns | None = None, *,
                 gpu_from: int = GPU_MIN_SIZE, gpu: GPUChoice = DETECT) -> CPUSchur | GPUSchur:
    """The dense step for linking matrix ``L`` on the device that
    :func:`mdp.lp.arrays.device_choice` picks for its ``t`` columns (from ``gpu_from`` on the
    GPU ``gpu``).

    A GPU without the memory for ``L`` gives the CPU step. ``sparse`` selects the CPU's
    two-level elimination (:class:`CPUSchur`); the GPU factorises the whole matrix densely.
    """
    if device_choice(L.shape[1], gpu_from, gpu) == "gpu":
        try:
            return GPUSchur(L, sparse, gpu)
        except MemoryError:
            pass
    return CPUSchur(L, sparse)
