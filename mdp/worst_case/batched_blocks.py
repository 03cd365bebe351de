r"""The column-block method's factorisations in batches, on a GPU (CuPy) or, for tests, NumPy.

The column-block interior point method (:mod:`mdp.worst_case.column_blocks`) factors, at every
iteration, ``n`` blocks ``K_w = B^T diag(d_w) B + diag(q_w)`` of side ``n`` and needs their
inverses twice: summed into the Schur complement of the ``2n`` coupling rows, and applied to
``n``-vectors in every Newton solve. On the CPU that is ``n`` LAPACK ``potrf`` + ``potri`` calls
(about ``n^4`` flops per iteration) with packed inverses. Here the same quantities are computed
chunk by chunk of ``c`` blocks, as batched array operations:

.. math:: K_{w} = L_w L_w^\top, \qquad K_w^{-1} = L_w^{-\top} L_w^{-1},

with the blocks filled from one fixed sparse map of their entries where the pair graph's
pattern is the same in every column (SpannerMech's :class:`~mdp.worst_case.block_lp.ColumnBlockLP`),
or scattered from each column's own rows (OPTMech's lazy rows,
:class:`~mdp.worst_case.block_lp.TripleBlockLP`), a batched Cholesky factorisation, a batched
triangular solve for ``L_w^{-1}`` and a batched product; the three sums of the Schur complement

.. math:: S_{EE} = \sum_w K_w^{-1}, \qquad S_{LE} = -\sum_w \operatorname{diag}(D_{:w}) K_w^{-1},
          \qquad S_{LL} = \sum_w \operatorname{diag}(D_{:w}) K_w^{-1} \operatorname{diag}(D_{:w})

are reduced over each chunk. The full inverses (``8 n^3`` bytes: 8 GB at n = 1000) stay on the
device; each Newton solve sends an ``n x n`` right-hand side and receives the product, and the
``2n x 2n`` Schur complement is factored on the host exactly as on the CPU path. The refinement
of every solve against the sparse blocks and everything after the solve (repair, certification)
run on the CPU, so a GPU changes how fast a point is found, never what is certified.

:class:`mdp.lp.arrays.ArrayBackend` names the few operations that differ between CuPy and
NumPy/SciPy. The NumPy backend runs the same code on the CPU: it is what the tests without a GPU
check against the packed LAPACK path; the CPU method itself stays the packed one
(:mod:`mdp.worst_case.column_blocks`), which needs half the memory.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..lp.arrays import ArrayBackend
from ..lp.highs import LPError
from .block_lp import BlockFactorBase, ColumnBlockLP, TripleBlockLP

__all__ = ["BatchedBlockFactor", "batched_bytes", "device_fits", "chunk_size", "CHUNK_BYTES",
           "GPU_MEMORY_SHARE"]

#: Work memory of one chunk (the blocks, their factors and inverses being built), in bytes.
CHUNK_BYTES = 2 * 2 ** 30
#: Share of the device's free memory the inverses and one chunk may take.
GPU_MEMORY_SHARE = 0.9


def _first_failure(cholesky, K) -> int:
    """Index of the first block of ``K`` whose Cholesky factorisation fails."""
    for w in range(K.shape[0]):
        try:
            cholesky(K[w])
        except np.linalg.LinAlgError:
            return w
    return 0


def chunk_size(n: int, chunk_bytes: int = CHUNK_BYTES) -> int:
    """Blocks per chunk: four ``n x n`` arrays per block (block, factor, identity, inverse)
    within ``chunk_bytes``, at least one and at most ``n``."""
    return int(max(1, min(n, chunk_bytes // (4 * 8 * n * n))))


def batched_bytes(n: int, chunk_bytes: int = CHUNK_BYTES) -> int:
    """Device bytes of :class:`BatchedBlockFactor` at ``n`` points: the ``n`` full inverses
    (``8 n^3``) and one chunk's work arrays."""
    return 8 * n ** 3 + 4 * 8 * n * n * chunk_size(n, chunk_bytes)


def device_fits(backend: ArrayBackend, n: int, chunk_bytes: int = CHUNK_BYTES) -> bool:
    """Whether :func:`batched_bytes` fit ``GPU_MEMORY_SHARE`` of the device's free memory."""
    free = backend.free_bytes()
    return free is None or batched_bytes(n, chunk_bytes) <= GPU_MEMORY_SHARE * free


def _entry_map(lp: ColumnBlockLP) -> tuple[np.ndarray, sp.csr_matrix]:
    """Flat positions ``i n + j`` of the blocks' entries and the sparse map ``C`` with
    ``K_w.flat[pos] = C [d_w; q_w]`` (``d_w`` the privacy rows' weights, ``q_w`` the diagonal)."""
    n, m = lp.n, lp.m
    ri, rj, cb = lp.ri, lp.rj, lp.cb
    k = np.arange(m)
    rows = np.concatenate([ri * n + ri, rj * n + rj, ri * n + rj, rj * n + ri,
                           np.arange(n) * (n + 1)])
    cols = np.concatenate([k, k, k, k, m + np.arange(n)])
    vals = np.concatenate([np.ones(m), cb * cb, cb, cb, np.ones(n)])
    pos, inverse = np.unique(rows, return_inverse=True)
    C = sp.csr_matrix((vals, (inverse, cols)), shape=(len(pos), m + n))
    C.sum_duplicates()
    return pos, C


class _SharedPattern:
    """A chunk's blocks of a :class:`ColumnBlockLP`: every column has the same entries, filled
    by one sparse product (:func:`_entry_map`)."""

    def __init__(self, lp: ColumnBlockLP, backend: ArrayBackend):
        pos, C = _entry_map(lp)
        self.n, self.backend = lp.n, backend
        self._pos = backend.to_device(pos)
        self._map = backend.sparse_matrix(C)

    def weights(self, dB: np.ndarray, wx: np.ndarray):
        return self.backend.to_device(np.concatenate([dB, wx], axis=1).T)      # (m + n, n)

    def blocks(self, weights, w0: int, w1: int):
        xp, n = self.backend.xp, self.n
        K = xp.zeros((w1 - w0, n * n))
        K[:, self._pos] = (self._map @ xp.ascontiguousarray(weights[:, w0:w1])).T
        return K.reshape(w1 - w0, n, n)


class _ColumnRows:
    """A chunk's blocks of a :class:`TripleBlockLP`: each column its own rows, whose four
    entries ``d (e_i + c e_j)(e_i + c e_j)^T`` and the diagonal are summed into the chunk by one
    weighted ``bincount`` over flat positions computed once per row set."""

    def __init__(self, lp: TripleBlockLP, backend: ArrayBackend, chunk: int):
        n = lp.n
        self.n, self.backend, self.chunk, self.start = n, backend, chunk, lp.start
        column = np.repeat(np.arange(n), np.diff(lp.start))
        self._chunks = []
        for w0 in range(0, n, chunk):
            w1 = min(n, w0 + chunk)
            a, b = lp.start[w0], lp.start[w1]
            base = (column[a:b] - w0) * n * n
            ri, rj, cb = lp.ri[a:b], lp.rj[a:b], lp.cb[a:b]
            diagonal = (np.arange(w1 - w0)[:, None] * n * n + np.arange(n) * (n + 1)).ravel()
            pos = np.concatenate([base + ri * n + ri, base + rj * n + rj, base + ri * n + rj,
                                  base + rj * n + ri, diagonal])
            self._chunks.append((backend.to_device(pos),
                                 backend.to_device(np.concatenate([np.ones(b - a), cb * cb,
                                                                   cb, cb]))))

    def weights(self, dB: np.ndarray, wx: np.ndarray):
        return self.backend.to_device(dB), self.backend.to_device(wx)

    def blocks(self, weights, w0: int, w1: int):
        xp, n = self.backend.xp, self.n
        dB, wx = weights
        pos, coef = self._chunks[w0 // self.chunk]
        d = dB[self.start[w0]:self.start[w1]]
        values = xp.concatenate([coef * xp.concatenate([d, d, d, d]), wx[w0:w1].ravel()])
        return xp.bincount(pos, weights=values, minlength=(w1 - w0) * n * n).reshape(
            w1 - w0, n, n)


class BatchedBlockFactor(BlockFactorBase):
    """The block inverses and the Schur complement of one iteration, computed in batches.

    Same interface and quantities as the CPU's packed factor
    (:mod:`mdp.worst_case.column_blocks`); the inverses live on ``backend``'s device.

    Raises
    ------
    MemoryError
        The device lacks :func:`batched_bytes`.
    """

    def __init__(self, lp: ColumnBlockLP | TripleBlockLP, backend: ArrayBackend, *,
                 chunk_bytes: int = CHUNK_BYTES):
        super().__init__(lp)
        n, xp = lp.n, backend.xp
        self.backend, self.device = backend, backend.name
        if not device_fits(backend, n, chunk_bytes):
            raise MemoryError(f"the batched column blocks need "
                              f"{batched_bytes(n, chunk_bytes) / 2 ** 30:.3g} GiB on the "
                              f"{backend.name}, {backend.free_bytes() / 2 ** 30:.3g} GiB are free")
        self.chunk = chunk_size(n, chunk_bytes)
        try:
            self._fill = (_ColumnRows(lp, backend, self.chunk) if isinstance(lp, TripleBlockLP)
                          else _SharedPattern(lp, backend))
            self.Kinv = xp.empty((n, n, n))
            self._DT = backend.to_device(lp.DT)
        except backend.out_of_memory as exc:       # CuPy's OutOfMemoryError is not a MemoryError
            raise MemoryError(f"GPU memory: {exc}") from exc

    def factor(self, dB: np.ndarray, wx: np.ndarray, dL_inv: np.ndarray) -> None:
        """As the CPU's packed factor's (:mod:`mdp.worst_case.column_blocks`)."""
        be, xp, n = self.backend, self.backend.xp, self.lp.n
        weights = self._fill.weights(dB, wx)
        SEE, SLE, SLL = (xp.zeros((n, n)) for _ in range(3))
        for w0 in range(0, n, self.chunk):
            w1 = min(n, w0 + self.chunk)
            K = self._fill.blocks(weights, w0, w1)
            try:
                L = be.cholesky(K)
            except np.linalg.LinAlgError:
                w = w0 + _first_failure(be.cholesky, K)
                raise LPError(f"a column block of the interior point method is not positive "
                              f"definite (column {w})") from None
            del K
            Linv = be.lower_inverse(L)
            del L
            Kinv = xp.matmul(Linv.transpose(0, 2, 1), Linv)
            del Linv
            self.Kinv[w0:w1] = Kinv
            d = self._DT[w0:w1]
            SEE += Kinv.sum(axis=0)
            dK = d[:, :, None] * Kinv
            SLE -= dK.sum(axis=0)
            SLL += (dK * d[:, None, :]).sum(axis=0)
            del Kinv, dK
        self._set_schur(be.to_host(SLL), be.to_host(SLE), be.to_host(SEE), dB, wx, dL_inv)

    def _apply(self, R: np.ndarray) -> np.ndarray:
        be, xp = self.backend, self.backend.xp
        return be.to_host(xp.matmul(self.Kinv, be.to_device(R)[:, :, None])[:, :, 0])
