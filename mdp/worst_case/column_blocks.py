r"""The worst-case-loss LP by an interior point method over its column blocks.

The LP of :mod:`mdp.worst_case.solve` (Imola et al. 2022, section 2.1) has ``n^2`` entries
``M_uw``, ``n`` row sums, ``n`` loss rows and, for every column ``w``, the privacy rows of the
pairs ``P`` on that column only. With the rows written as

.. math:: M_{vw} - e^{-\epsilon_{uv} D_{uv}} M_{uw} \ge 0 \quad ((u, v) \in P),

(the larger coefficient 1, so no coefficient exceeds 1 whatever ``eps * D``), the privacy rows
are block-diagonal over the columns and only the ``2n`` row-sum and loss rows ``G`` couple them:
the structure of a multicommodity flow. The Mehrotra predictor-corrector method of
:mod:`mdp.lp.interior_point` (Wright 1997, ch. 10), with Gondzio's centrality correctors, solves
at every iteration

.. math:: K \Delta M + G^\top \lambda = r, \qquad
          K = \operatorname{blockdiag}_w (B^\top D_w B + W_w X_w^{-1}),

whose blocks ``K_w`` are ``n x n`` with the sparsity of the pair graph. Each block is factored
densely (LAPACK ``potrf`` / ``potri``), and the coupling rows enter through the ``2n x 2n``
Schur complement ``S = sum_w G_w K_w^{-1} G_w^T + diag(s_L / z_L, 0)`` (equality rows have no
slack), so an iteration costs ``n`` dense factorisations of size ``n``, about ``n^4`` flops, and
``n^3 / 2`` doubles of memory: the inverses are kept as packed lower triangles and applied by
BLAS ``dspmv`` (:mod:`mdp.worst_case.block_kernels`). On a sparse spanner that is far less than a
general sparse factorisation of the whole LP fills in (``docs/design/lp.md``).

**Sparse blocks.** Where the pair graph has small separators (a spanner on a map), the points are
put in the order of its nested dissection (:mod:`mdp.lp.dissection`) and each inverse is built
node by node of that tree (dense inverses of the leaves, then each separator through its Schur
complement) in about ``sum_t n_t^2 s_t`` flops instead of ``n^3``; the blocks are shared among the
cores. **GPU.** Where the device rule of :mod:`mdp.lp.arrays` picks a GPU (:func:`block_device`),
the blocks are factored in batches there instead (:mod:`mdp.worst_case.batched_blocks`).

**Warm starts.** Row generation (:mod:`mdp.worst_case.block_rounds`) solves a sequence of these LPs,
each with a few percent more rows than the last; a solve can keep an early, well-centred iterate
and the next one start there (:class:`WarmStart`).

**Accuracy.** Near the optimum the blocks of the used columns become ill-conditioned (their tight
rows fix a column up to its scale, which only the coupling rows pin), and the explicit block
inverses limit the method to a relative gap of about ``1e-6``. Each Newton solve is refined
against the blocks applied in their sparse form, and the dual residual is kept exact (the
multipliers of ``M >= 0`` take up what the solve misses), so the method ends at a point whose
Lagrangian bound (:func:`lagrangian_bound`) holds whatever the accuracy. Callers repair the
point to a private matrix (:func:`mdp.lp.output.private_candidate`) and report the certified gap.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from functools import partial

import numpy as np
from scipy.linalg import blas, lapack

from ..lp.arrays import DETECT, GPUChoice, device_choice, resolve_gpu
from ..lp.dense import SERIAL_BLAS_BELOW, blas_threads, default_blas_threads
from ..lp.dissection import Dissection, nested_dissection
from ..lp.highs import LPError, LPTimeout, get_threads
from ..lp.interior_point import IPMSettings, NoConvergence, Scores, Status, run_interior_point
from ..lp.plan import BLOCKS
from ..lp.reporting import LPProgress, report
from ..lp.rowgen import warm_rows
from ..lp.solver_entry import solver_entry
from ..runtime.threads import limit_pools
from ..validation import check_tuning
from .batched_blocks import BatchedBlockFactor, device_fits
from .block_kernels import (
    accumulate_packed,
    dense_inverse,
    dissected_inverse,
    fill_block_lower,
    pack_lower,
    packed_size,
    unpack_symmetric,
)
from .block_lp import REFINE_RTOL, BlockFactorBase, ColumnBlockLP, TripleBlockLP
from .row_kernels import scaled_quotient

__all__ = ["ColumnBlockLP", "solve_worst_case_blocks", "lagrangian_bound", "BLOCKS",
           "BlockResources", "available_memory", "block_byte_limit", "block_bytes",
           "fits_in_memory", "block_device", "BlockFactorBase", "Iterate",
           "WarmStart", "solve_worst_case_triples", "TripleBlockLP", "BlocksStalled"]



@dataclass(frozen=True)
class BlockResources:
    """Memory limits and device thresholds of the column-block method.

    Attributes
    ----------
    max_block_bytes : int, default 8 GiB
        The method keeps ``n^2 (n + 1) / 2`` doubles (the packed block inverses); larger spaces
        are refused, and so are spaces whose inverses would take more than ``memory_share`` of
        the memory available now.
    memory_share : float, default 0.5
    gpu_from_n : int, default 300
        Points from which ``MDP_DEVICE=auto`` factors the blocks on a GPU where CuPy sees one
        (:mod:`mdp.worst_case.batched_blocks`; there the full inverses take ``8 n^3`` bytes of device
        memory).
    dissection_gain : float, default 4
        The CPU inverts the blocks along a nested dissection of the pair graph
        (:mod:`mdp.lp.dissection`) when that takes at most ``1 / dissection_gain`` of the dense
        ``n^3`` flops, else densely.
    leaf_size : int or None
        Parts of the dissection of at most this many points are not split (None:
        :data:`mdp.lp.dissection.LEAF_SIZE`).
    gpu : ArrayBackend, None or "detect"
        The backend that stands for the GPU (:func:`mdp.lp.arrays.resolve_gpu`): CuPy's where
        it sees a device (``"detect"``), none, or a given one (NumPy's runs the GPU path on the
        CPU).
    shared_from_n : int, default 200
        Points from which the CPU shares dense block inverses among the cores that are free
        (one BLAS thread each, as it always shares those along a dissection); below, one thread
        inverts them all: the ``n^4`` flops of an iteration are then under a tenth of a
        second, too short to split.
    """

    def __post_init__(self) -> None:
        check_tuning(self)

    max_block_bytes: int = 8 * 2 ** 30
    memory_share: float = 0.5
    gpu_from_n: int = 300
    dissection_gain: float = 4.0
    leaf_size: int | None = None
    gpu: GPUChoice = DETECT
    shared_from_n: int = 200


#: Blocks whose packed inverses are added into the Schur complement's sums together.
BATCH = 16
#: Parts of the columns whose sums threads add up when the blocks are shared among the cores
#: (at most as many threads as parts; ``MAX_BLAS_THREADS`` in :mod:`mdp.lp.dense`).
SHARED_PARTS = 8
#: Relative gap and infeasibilities at which the iterations stop.
TOL = 1e-8
#: The best iterate is returned once its relative gap and infeasibilities have not fallen by
#: ``STALL_FACTOR`` for ``STALL_ITERATIONS`` iterations and are below ``STALL_ACCEPT`` (the
#: plateau near ``1e-6``; on fastText the last decades take 10 iterations each).
STALL_ITERATIONS = 8
STALL_FACTOR = 0.8
STALL_ACCEPT = 1e-4
#: Above ``STALL_ACCEPT``, the method gives up (``BlocksStalled``, with its best iterate) once
#: its score has not fallen by ``STALL_FACTOR`` for this many iterations, rather than at
#: ``max_iter``: a plateau there does not come down.
GIVE_UP_ITERATIONS = 3 * STALL_ITERATIONS
#: Every starting multiplier of the privacy rows and of ``M >= 0`` (1e-3 to 1 gave 40 to 46
#: iterations to a relative gap of 1e-5 at n = 100 on the Geolife cells).
START_DUAL = 1e-2
#: The same for the per-column row sets of :class:`TripleBlockLP` (OPTMech): more steps carry
#: the method past its plateau there (GloVe n = 100, the last round's rows: relative gap 1.4e-6
#: after 41 iterations with 4 steps, 3.7e-7 after 33 with 12).
TRIPLE_REFINE_STEPS = 12
#: Looser refinement while the relative gap or an infeasibility exceeds ``REFINE_SWITCH``
#: (n = 200: a third fewer block passes, the same iterations; strict throughout, the end is
#: reached at n = 500 only with the strict one).
REFINE_RTOL_EARLY = 1e-10
REFINE_SWITCH = 1e-4
#: Gondzio's multiple centrality correctors (Comput. Optim. Appl. 6, 1996): at most
#: ``CORRECTORS`` per iteration, each aiming at steps longer by ``CORRECTOR_AIM`` and kept when it
#: gains at least ``CORRECTOR_GAIN`` of that; products pulled into ``[BETA_MIN, BETA_MAX] x sigma mu``.
CORRECTORS = 2
CORRECTOR_AIM = 0.1
CORRECTOR_GAIN = 0.1
BETA_MIN, BETA_MAX = 0.1, 10.0
#: Relative gap below which every iterate's Lagrangian bound is computed (the best is reported).
BOUND_FROM_GAP = 1e-4
#: Fraction of the largest step to the boundary taken.
STEP_FACTOR = 0.99
#: The iteration's rules (:mod:`mdp.lp.interior_point`); ``tol`` and ``max_iter`` are the
#: caller's.
SETTINGS = IPMSettings(tol=TOL, max_iter=200, stall_accept=STALL_ACCEPT,
                       stall_iterations=STALL_ITERATIONS, stall_factor=STALL_FACTOR,
                       give_up_iterations=GIVE_UP_ITERATIONS,
                       correctors=CORRECTORS, corrector_aim=CORRECTOR_AIM,
                       corrector_gain=CORRECTOR_GAIN, beta_min=BETA_MIN, beta_max=BETA_MAX,
                       step_factor=STEP_FACTOR, late_step_factor=0.995, late_gap=1e-6)


def available_memory() -> int | None:
    """Bytes of memory available now (Linux's ``MemAvailable``, else free pages), or ``None``
    where the system does not say."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None


def block_byte_limit(resources: BlockResources = BlockResources()) -> int:
    """The most bytes of block inverses allowed now: ``resources.max_block_bytes``, or less
    where ``resources.memory_share`` of :func:`available_memory` is less."""
    avail = available_memory()
    top = resources.max_block_bytes
    return top if avail is None else int(min(top, resources.memory_share * avail))


def block_bytes(n: int) -> int:
    """Bytes of the packed block inverses at ``n`` points: ``n`` lower triangles,
    ``4 n^2 (n + 1)``."""
    return 8 * n * packed_size(n)


def block_device(n: int, resources: BlockResources = BlockResources()) -> str | None:
    """Where the column-block method factors its blocks at ``n`` points: ``"gpu"``, ``"cpu"``, or
    ``None`` where neither has the memory.

    The GPU ``resources.gpu`` where :func:`mdp.lp.arrays.device_choice` picks it
    (``MDP_DEVICE``, or from ``resources.gpu_from_n`` points where there is one) and its free
    memory holds :func:`mdp.worst_case.batched_blocks.batched_bytes`; else the CPU where
    :func:`block_bytes` fit :func:`block_byte_limit`.
    """
    if (device_choice(n, resources.gpu_from_n, resources.gpu) == "gpu"
            and device_fits(resolve_gpu(resources.gpu), n)):
        return "gpu"
    return "cpu" if block_bytes(n) <= block_byte_limit(resources) else None


def fits_in_memory(n: int, resources: BlockResources = BlockResources()) -> bool:
    """Whether the column-block method has the memory for ``n`` points on the device
    :func:`block_device` picks (on the CPU: the packed inverses, :func:`block_bytes`, within
    :func:`block_byte_limit`)."""
    return block_device(n, resources) is not None


def _levels(tree: Dissection | None) -> int:
    """Separator levels of a dissection (0: dense blocks)."""
    if tree is None:
        return 0
    depth = {}
    for node in tree.nodes:
        depth[(node.start, node.stop)] = 0 if node.leaf else 1 + max(
            depth.get((node.start, node.mid), 0), depth.get((node.mid, node.sep), 0))
    return depth[(tree.nodes[-1].start, tree.nodes[-1].stop)]


def _block_factor(lp: ColumnBlockLP | TripleBlockLP, device: str,
                  tree: Dissection | None = None,
                  resources: BlockResources = BlockResources()) -> BlockFactorBase:
    """The factor of ``device``; a GPU whose memory runs out when allocating gives the CPU's
    (if that fits)."""
    if device == "gpu":
        try:
            return BatchedBlockFactor(lp, resolve_gpu(resources.gpu))
        except MemoryError:
            if block_bytes(lp.n) > block_byte_limit(resources):
                raise LPError(f"the column-block method found too little GPU memory at "
                              f"n = {lp.n} and needs more host memory than its limit") from None
    return _BlockFactor(lp, tree, shared=tree is not None or lp.n >= resources.shared_from_n)


def solve_worst_case_triples(distances: np.ndarray, u: np.ndarray, v: np.ndarray,
                             w: np.ndarray, epsilon: float, *, time_limit: float | None = None,
                             tol: float = TOL, max_iter: int = 200,
                             round_no: int = 1,
                             monitor: Callable[[Iterate], bool] | None = None,
                             warm: WarmStart | None = None, keep_gap: float | None = None,
                             resources: BlockResources = BlockResources(),
                             device: str | None = None) -> tuple[np.ndarray, dict]:
    """Solve the worst-case-loss LP over the rows ``(u, v, w)`` by the column-block method.

    As :func:`solve_worst_case_blocks` (same returns and errors), with a row set per column
    (:class:`TripleBlockLP`); the blocks are inverted densely, on the device
    :func:`block_device` picks (on a GPU in batches: :mod:`mdp.worst_case.batched_blocks`). ``round_no``: the
    round its progress reports name (:mod:`mdp.worst_case.block_rounds`). ``monitor``: called with
    every iterate (:class:`Iterate`); when it returns True the method stops there and returns
    that iterate's matrix; ``stats["monitor_stopped"]`` says whether it did.

    ``warm``: an iterate of an earlier LP over a subset of these rows (:class:`WarmStart`) to
    start from; where the warm solve fails, the method starts again from its default point
    (``stats["warm"]`` says which ran). ``keep_gap``: keep the first iterate whose relative gap
    and infeasibilities are within it (else the iterate returned) as ``stats["warm_start"]``, to
    start the next round's LP from. ``resources``: memory limits and device thresholds;
    ``device``: ``"cpu"`` or ``"gpu"`` as the caller's plan decided (None: :func:`block_device`).
    """
    t0 = time.perf_counter()
    D = np.asarray(distances, dtype=float)
    n = D.shape[0]
    device = _checked_device(n, resources=resources, device=device)
    lp = TripleBlockLP(D, u, v, w, epsilon)
    fac = _block_factor(lp, device, resources=resources)
    fac.refine_steps = TRIPLE_REFINE_STEPS
    solve = partial(run_column_blocks, lp, fac, tol=tol, max_iter=max_iter, time_limit=time_limit, t0=t0,
                    round_no=round_no, monitor=monitor, keep_gap=keep_gap)
    if warm is not None:
        try:
            M, stats = solve(start=warm.point_for(lp))
            stats["warm"] = True
            return M, stats
        except LPTimeout:
            raise
        except LPError:
            pass
    M, stats = solve()
    stats["warm"] = False
    return M, stats


@dataclass
class WarmStart:
    r"""An iterate of one round's LP, kept to start the next round's (more rows).

    Gondzio's warm start for cutting-plane schemes (Math. Programming 83, 1998), as
    ConstOPTMech's rounds use it (:mod:`mdp.families.constopt.ipm`): the kept iterate is an
    early, well-centred one (the first within the caller's ``keep_gap``, else the iterate the
    solve returned), not the optimum, whose products ``s z`` are too small to absorb new rows.
    The entries, ``k``, the loss rows and the rows both LPs share keep their values; a new row
    starts centred (:func:`mdp.lp.rowgen.warm_rows`).

    Attributes
    ----------
    keys : int ndarray
        :attr:`TripleBlockLP.keys` of the LP the iterate belongs to.
    point : _Point
    """

    keys: np.ndarray
    point: _Point

    def point_for(self, lp: TripleBlockLP) -> _Point:
        """The start for ``lp``: its rows that the kept LP has keep their slacks and multipliers
        (matched by key), the others are centred."""
        p = self.point
        sB, zB = warm_rows(self.keys, p.sB, p.zB, lp.keys, lp.privacy(p.X), p.mu())
        return _Point(X=p.X.copy(), k=p.k, sL=p.sL.copy(), sB=sB, zL=p.zL.copy(), zB=zB,
                      W=p.W.copy(), yE=p.yE.copy())


def lagrangian_bound(lp: ColumnBlockLP, y_sum: np.ndarray, z_loss: np.ndarray,
                     z_privacy: np.ndarray) -> float:
    r"""A rigorous lower bound on the LP's optimum from any multipliers.

    ``y_sum`` (free) for the row sums, ``z_loss`` and ``z_privacy`` (clipped to ``>= 0``; the
    inequality multipliers scaled so that ``z_loss`` sums to 1): for every feasible ``M``,
    ``k >= sum_u y_u + sum_u min_w r_uw`` with ``r`` the reduced costs of the entries, as in
    :func:`mdp.worst_case.solve.lagrangian_lower_bound`.
    """
    zL = np.maximum(z_loss, 0.0)
    total = zL.sum()
    if not total > 0:
        return 0.0
    zL = zL / total
    zB = np.maximum(z_privacy, 0.0) / total
    red = lp.DT * zL[None, :] - y_sum[None, :] - lp.privacy_t(zB)
    return float(y_sum.sum() + red.min(axis=0).sum())


class _BlockFactor(BlockFactorBase):
    """The packed block inverses (LAPACK, host memory) and the Schur complement of one
    iteration; each block inverted densely, or along ``tree`` (:mod:`mdp.lp.dissection`) when
    the points are in its order; ``shared``: the blocks shared among the free cores."""

    def __init__(self, lp: ColumnBlockLP, tree: Dissection | None = None, *,
                 shared: bool | None = None):
        super().__init__(lp)
        n = lp.n
        self.tree = tree if tree is not None and len(tree.nodes) > 1 else None
        self.shared = self.tree is not None if shared is None else shared
        self.Kinv = np.empty((n, packed_size(n)))
        if self.tree is not None:
            nodes = self.tree.nodes
            bounds = [node.boundary for node in nodes]
            self._nodes = (np.array([(t.start, t.mid, t.sep, t.stop) for t in nodes],
                                    dtype=np.int64),
                           np.cumsum([0] + [len(b) for b in bounds]).astype(np.int64),
                           np.concatenate(bounds).astype(np.int64))
            nb_max = max(1, max(len(b) for b in bounds))
            s_max = max(1, max(t.stop - t.sep for t in nodes))
            self._work = (n * nb_max, s_max * nb_max, n * s_max, n * s_max)

    def factor(self, dB: np.ndarray, wx: np.ndarray, dL_inv: np.ndarray) -> None:
        n = self.lp.n
        # S = sum_w G_w K_w^{-1} G_w^T with G_w = [-diag(D[:, w]); I], added up from the packed
        # inverses in batches (_factor_blocks)
        if not self.shared:
            sums = self._factor_blocks(range(n), dB, wx)
        else:
            # whole blocks per thread, one BLAS thread each: no thread waits inside a block's
            # small LAPACK and BLAS calls, and a busy core takes no share (pool_threads). The
            # parts are fixed and their sums added in order, whatever the thread count: the
            # count follows the load, and sums added in another order change the iterates
            bounds = np.linspace(0, n, min(n, SHARED_PARTS) + 1).astype(int)
            parts = [range(bounds[k], bounds[k + 1]) for k in range(len(bounds) - 1)]
            workers = max(1, min(get_threads() or default_blas_threads(SERIAL_BLAS_BELOW),
                                 len(parts)))
            with limit_pools(1, "blas"):
                if workers == 1:
                    done = [self._factor_blocks(part, dB, wx) for part in parts]
                else:
                    with ThreadPoolExecutor(workers) as pool:
                        done = list(pool.map(lambda ws: self._factor_blocks(ws, dB, wx), parts))
            sums = [sum(d[i] for d in done) for i in range(4)]
        see, sll, s_row, s_col = sums
        SEE, SLL = unpack_symmetric(see, n), unpack_symmetric(sll, n)
        jj, ii = np.triu_indices(n)
        SLE = np.empty((n, n))
        SLE[ii, jj] = -s_col
        SLE[jj, ii] = -s_row
        self._set_schur(SLL, SLE, SEE, dB, wx, dL_inv)

    def _factor_blocks(self, columns: range, dB: np.ndarray, wx: np.ndarray) -> list[np.ndarray]:
        """Invert and pack the blocks of the contiguous ``columns``; their packed sums
        ``[see, sll, s_row, s_col]`` (:func:`mdp.worst_case.block_kernels.accumulate_packed`, added
        ``BATCH`` blocks at a time so that the sums stream through memory once per batch)."""
        lp, n = self.lp, self.lp.n
        sums = [np.zeros(packed_size(n)) for _ in range(4)]
        block = np.empty((n, n), order="F")
        if self.tree is not None:
            c = np.empty((n, n), order="F")
            work = [np.empty(size) for size in self._work]
        for w0 in range(columns.start, columns.stop, BATCH):
            w1 = min(columns.stop, w0 + BATCH)
            for w in range(w0, w1):
                fill_block_lower(block, *lp.block_rows(w, dB), wx[w])
                if self.tree is not None:
                    info = dissected_inverse(block, c, *self._nodes, *work)
                elif self.shared:
                    c, info = block, dense_inverse(block)
                else:
                    # SciPy's wrappers of the same LAPACK: the compiled kernel cannot be cached
                    # (it holds LAPACK's addresses), and compiling it in every process would cost
                    # a small build more than its blocks
                    c, info = lapack.dpotrf(block, lower=1, overwrite_a=1, clean=0)
                    if info == 0:
                        c, info = lapack.dpotri(c, lower=1, overwrite_c=1)
                if info != 0:
                    raise LPError(f"a column block of the interior point method is not "
                                  f"positive definite (column {w})")
                pack_lower(c.T, self.Kinv[w])
            accumulate_packed(self.Kinv[w0:w1], lp.DT[w0:w1], *sums)
        return sums

    def _apply(self, R: np.ndarray) -> np.ndarray:
        n = self.lp.n
        out = np.empty((n, n))
        for w in range(n):
            # in place where f2py can (the assignment then copies nothing new)
            out[w] = blas.dspmv(n, 1.0, self.Kinv[w], R[w], y=out[w], overwrite_y=1, lower=1)
        return out


@dataclass
class Iterate:
    """An interior point iterate of the column-block method, as a ``monitor`` sees it.

    Attributes
    ----------
    gap : float
        Its relative gap ``|k - sum(y_E)| / (1 + |k|)``.
    """

    lp: ColumnBlockLP
    point: _Point
    gap: float
    _matrix: np.ndarray | None = field(default=None, repr=False)
    _bound: float | None = field(default=None, repr=False)

    def matrix(self) -> np.ndarray:
        """The iterate's ``M`` (negatives clipped; the same array on every call)."""
        if self._matrix is None:
            self._matrix = np.maximum(self.point.X.T, 0.0)
        return self._matrix

    def bound(self) -> float:
        """Its multipliers' Lagrangian bound (:func:`lagrangian_bound`), valid for any iterate
        (computed once)."""
        if self._bound is None:
            p = self.point
            self._bound = lagrangian_bound(self.lp, p.yE, p.zL, p.zB)
        return self._bound


@dataclass
class _Point:
    """A primal-dual iterate: ``X[w, u] = M_uw``, ``k``, slacks and multipliers of the loss and
    privacy rows, multipliers ``W`` of ``M >= 0`` and ``yE`` of the row sums."""

    X: np.ndarray
    k: float
    sL: np.ndarray
    sB: np.ndarray
    zL: np.ndarray
    zB: np.ndarray
    W: np.ndarray
    yE: np.ndarray

    @classmethod
    def start(cls, lp: ColumnBlockLP) -> _Point:
        """The uniform matrix, ``k`` above its loss, slacks floored, multipliers ``START_DUAL``."""
        n = lp.n
        X = np.full((n, n), 1.0 / n)
        k = 1.1 * float(lp.loss(X).max())
        sB = np.maximum(lp.privacy(X), 1.0 / n)
        return cls(X=X, k=k, sL=np.maximum(k - lp.loss(X), 1e-2 * k), sB=sB, zL=np.full(n, 1.0 / n),
                   zB=np.full(sB.shape, START_DUAL), W=np.full((n, n), START_DUAL), yE=np.zeros(n))

    def residuals(self, lp: ColumnBlockLP) -> _Residuals:
        rdM = -(self.yE[None, :] - lp.DT * self.zL[None, :] + lp.privacy_t(self.zB) + self.W)
        return _Residuals(E=1.0 - self.X.sum(axis=0), L=self.sL + lp.loss(self.X) - self.k,
                          B=-lp.privacy(self.X, minus=self.sB), dM=rdM, dk=1.0 - float(self.zL.sum()))

    def mu(self) -> float:
        count = self.sL.size + self.sB.size + self.X.size
        return float(self.sL @ self.zL + np.sum(self.sB * self.zB) + np.sum(self.X * self.W)) / count

    def moved(self, d: _Point, ap: float, ad: float) -> _Point:
        """The point ``ap`` along ``d``'s primal and ``ad`` along its dual components."""
        return _Point(X=self.X + ap * d.X, k=self.k + ap * d.k, sL=self.sL + ap * d.sL,
                      sB=self.sB + ap * d.sB, zL=self.zL + ad * d.zL, zB=self.zB + ad * d.zB,
                      W=self.W + ad * d.W, yE=self.yE + ad * d.yE)

    def pairs(self, d: _Point) -> tuple:
        """``(value, direction, multiplier, direction)`` of the three complementary pairs."""
        return ((self.sL, d.sL, self.zL, d.zL), (self.sB, d.sB, self.zB, d.zB),
                (self.X, d.X, self.W, d.W))


@dataclass
class _Residuals:
    """Primal residuals of the row sums, loss and privacy rows; dual ones of ``M`` and ``k``."""

    E: np.ndarray
    L: np.ndarray
    B: np.ndarray
    dM: np.ndarray
    dk: float

    def scores(self, p: _Point) -> tuple[float, float, float]:
        """Relative gap, primal and dual infeasibility."""
        n = len(self.E)
        gap = abs(p.k - float(p.yE.sum())) / (1.0 + abs(p.k))
        pinf = float(np.sqrt(self.E @ self.E + self.L @ self.L + np.sum(self.B * self.B)))
        dinf = float(np.sqrt(np.sum(self.dM * self.dM) + self.dk ** 2))
        return gap, pinf / (1.0 + np.sqrt(n)), dinf / 2.0


def _newton(lp: ColumnBlockLP, fac: BlockFactorBase, p: _Point, r: _Residuals, rs: tuple,
            rtol: float) -> _Point:
    """The Newton direction for complementarity targets ``rs = (rs_L, rs_B, rs_X)``.

    The multipliers of ``M >= 0`` take ``dW`` from the dual rows of ``M`` (kept exact) rather
    than from their complementarity: what the solve misses goes there, not into the residual.
    """
    rsL, rsB, rsX = rs
    pL = (rsL + p.zL * r.L) / p.sL
    rhs = (-lp.DT * pL[None, :] + lp.privacy_t(scaled_quotient(rsB, p.zB, r.B, p.sB))
           + rsX / p.X - r.dM)
    dX, dk, _, lE = fac.solve(rhs, r.E, float(pL.sum() - r.dk), rtol)
    dsL = dk - lp.loss(dX) - r.L
    dzL = (rsL - p.zL * dsL) / p.sL
    dsB = lp.privacy(dX, minus=r.B)
    dzB = scaled_quotient(rsB, p.zB, dsB, p.sB, -1.0)
    dyE = -lE
    dW = r.dM - (dyE[None, :] - lp.DT * dzL[None, :] + lp.privacy_t(dzB))
    return _Point(X=dX, k=dk, sL=dsL, sB=dsB, zL=dzL, zB=dzB, W=dW, yE=dyE)


@solver_entry
def solve_worst_case_blocks(distances: np.ndarray, pu: np.ndarray, pv: np.ndarray, eps_pair, *,
                            time_limit: float | None = None, tol: float = TOL,
                            max_iter: int = 200, resources: BlockResources = BlockResources(),
                            device: str | None = None) -> tuple[np.ndarray, dict]:
    """Solve the worst-case-loss LP over the pairs given by the column-block method.

    Parameters
    ----------
    distances : ndarray (n, n)
    pu, pv : int arrays
        Ordered pairs whose rows ``M[u,w] <= e^{eps_pair D[u,v]} M[v,w]`` hold for every ``w``.
    eps_pair : float or array
    time_limit : float or None
        Seconds; :class:`mdp.lp.LPTimeout` when passed.
    tol : float
        Relative gap and infeasibilities to stop at.
    max_iter : int
    resources : BlockResources
        Memory limits, device thresholds and the dissection's gain.
    device : {"cpu", "gpu"} or None
        Where the blocks are factored, as the caller's plan decided (None: :func:`block_device`).

    Returns
    -------
    M : ndarray (n, n)
        The best iterate's entries (negatives clipped); its rows hold to the method's accuracy
        and the caller repairs it.
    stats : dict
        ``solver`` (``"blocks"``), ``variables``, ``rows``, ``nnz`` (of the primal LP),
        ``ipm_iterations``, ``seconds``, ``lp_objective`` (the iterate's ``k``), ``lower_bound``
        (:func:`lagrangian_bound`), ``ipm_relative_gap``, ``stalled``, ``device`` (``"cpu"`` or
        ``"gpu"``) and ``dissection_levels`` (separator levels of the CPU's block inverses; 0:
        dense).

    Raises
    ------
    LPError
        Too large for ``resources.max_block_bytes``.
    BlocksStalled
        No iterate within ``STALL_ACCEPT``: the best one is in the error.
    LPTimeout
    """
    t0 = time.perf_counter()
    D = np.asarray(distances, dtype=float)
    n = D.shape[0]
    device = _checked_device(n, "; use solver='hipo'", resources=resources, device=device)
    lp = ColumnBlockLP(D, pu, pv, eps_pair)
    tree = None
    if device == "cpu":
        tree = nested_dissection(n, pu, pv, leaf_size=resources.leaf_size)
        if tree.flops() * resources.dissection_gain > float(n) ** 3:
            tree = None
    if tree is not None:
        # the points in the dissection's order, so that every node's parts are contiguous
        lp = lp.permuted(tree)
    fac = _block_factor(lp, device, tree, resources=resources)
    try:
        M, stats = run_column_blocks(lp, fac, tol=tol, max_iter=max_iter, time_limit=time_limit, t0=t0)
    except BlocksStalled as exc:
        exc.matrix = _in_caller_order(exc.matrix, exc.stats, tree)
        raise
    return _in_caller_order(M, stats, tree), stats


def _in_caller_order(M: np.ndarray, stats: dict, tree: Dissection | None) -> np.ndarray:
    """``M`` back in the caller's order of the points (from the dissection's, if any); the
    dissection's levels go into ``stats``."""
    stats["dissection_levels"] = _levels(tree)
    return M if tree is None else M[np.ix_(tree.positions, tree.positions)]


def _checked_device(n: int, hint: str = "", *, resources: BlockResources = BlockResources(),
                    device: str | None = None) -> str:
    """``device`` (None: :func:`block_device`), or the refusal of :func:`_too_large` (with
    ``hint``) where it does not have the memory (the GPU's is checked when its factor is
    allocated, :func:`_block_factor`)."""
    if device is None:
        device = block_device(n, resources)
    elif device == "cpu" and block_bytes(n) > block_byte_limit(resources):
        device = None
    if device is None:
        raise _too_large(n, hint, resources)
    return device


def _too_large(n: int, hint: str = "", resources: BlockResources = BlockResources()) -> LPError:
    """The refusal when the packed block inverses exceed :func:`block_byte_limit`."""
    limit = block_byte_limit(resources)
    return LPError(f"the column-block method keeps {block_bytes(n) / 2 ** 30:.3g} GiB of block "
                   f"inverses at n = {n}, more than its limit of {limit / 2 ** 30:.3g} "
                   f"GiB (max_block_bytes, or {resources.memory_share:g} of the memory "
                   f"available){hint}")


class BlocksStalled(LPError):
    """The column-block method ended with no iterate within ``STALL_ACCEPT``; it carries the
    best one, for a caller that repairs and certifies it itself.

    Attributes
    ----------
    matrix : ndarray (n, n)
        The best iterate's ``M`` (negatives clipped), in the caller's order of the points.
    stats : dict
        As :func:`solve_worst_case_blocks` returns them for that iterate (``stalled`` True).
    score : float
        Its score: the largest of its relative gap and infeasibilities.
    """

    def __init__(self, message: str, matrix: np.ndarray, stats: dict, score: float):
        super().__init__(message)
        self.matrix, self.stats, self.score = matrix, stats, score


class _ColumnBlockSystem:
    """The Newton system of the column-block LP for :func:`mdp.lp.interior_point.run_interior_point`:
    points :class:`_Point`, residuals :class:`_Residuals`, the factor ``fac``; each solve is
    refined to ``REFINE_RTOL_EARLY`` while the score exceeds ``REFINE_SWITCH`` (the predictor's
    always), else to ``REFINE_RTOL``."""

    name = "the column-block interior point method"

    def __init__(self, lp: ColumnBlockLP | TripleBlockLP, fac: BlockFactorBase):
        self.lp, self.fac, self.rtol = lp, fac, REFINE_RTOL

    def default_start(self) -> _Point:
        return _Point.start(self.lp)

    def measure(self, p: _Point) -> tuple[_Residuals, Scores]:
        r = p.residuals(self.lp)
        gap, pinf, dinf = r.scores(p)
        return r, Scores(gap=gap, primal=pinf, dual=dinf, objective=float(p.k),
                         dual_objective=float(p.yE.sum()))

    def mu(self, p: _Point) -> float:
        return p.mu()

    def pairs(self, p: _Point, d: _Point) -> tuple:
        return p.pairs(d)

    def moved(self, p: _Point, d: _Point, ap: float, ad: float) -> _Point:
        return p.moved(d, ap, ad)

    def factor(self, p: _Point, score: float) -> None:
        self.rtol = REFINE_RTOL_EARLY if score > REFINE_SWITCH else REFINE_RTOL
        self.fac.factor(p.zB / p.sB, p.W / p.X, p.sL / p.zL)

    def newton(self, p: _Point, r: _Residuals, targets: tuple, predictor: bool) -> _Point:
        # the predictor only sets sigma: the loose refinement is enough for it
        rtol = max(self.rtol, REFINE_RTOL_EARLY) if predictor else self.rtol
        return _newton(self.lp, self.fac, p, r, targets, rtol)


class _Watch:
    """The inspection of every iterate: the best Lagrangian bound of those within
    ``BOUND_FROM_GAP`` (``-inf`` if none) and the caller's monitor (``seen``: the iterate at
    which it stopped the method, else None)."""

    def __init__(self, lp, monitor: Callable[[Iterate], bool] | None):
        self.lp, self.monitor = lp, monitor
        self.bound, self.seen = -np.inf, None

    def __call__(self, it: int, p: _Point, scores: Scores) -> bool:
        seen = Iterate(self.lp, p, scores.gap)
        if scores.gap <= BOUND_FROM_GAP:
            # valid for any multipliers: the best over the last iterates, not only the best one's
            self.bound = max(self.bound, seen.bound())
        if self.monitor is not None and self.monitor(seen):
            self.seen = seen
            return True
        return False


@solver_entry
def run_column_blocks(lp, fac: BlockFactorBase, *, tol: float, max_iter: int, time_limit: float | None,
           t0: float, round_no: int = 1, monitor: Callable[[Iterate], bool] | None = None,
           start: _Point | None = None, keep_gap: float | None = None
           ) -> tuple[np.ndarray, dict]:
    """The interior point iterations (:func:`mdp.lp.interior_point.run_interior_point`) on
    ``lp`` with the factor ``fac`` (a solver entry point, :mod:`mdp.lp.solver_entry`): the best iterate's matrix (in ``lp``'s order; the monitor's
    iterate where it stopped them) and the statistics. ``start``: the first iterate (default
    :meth:`_Point.start`); ``keep_gap``: see :class:`WarmStart`."""
    n = lp.n
    deadline = None if time_limit is None else t0 + time_limit
    R = lp.privacy_rows
    rows = 2 * n + R

    def log(it: int, p: _Point, scores: Scores) -> None:
        report(LPProgress(round=round_no, rows=rows, objective=scores.objective, gap=scores.gap,
                          iteration=it, method=BLOCKS))

    watch = _Watch(lp, monitor)
    # BLAS threads by the dense step's side (the Schur complement is 2n square): below the
    # rule's size a step is too short for threads that wait on a busy core (n = 60 beside one
    # other job: over 60 s on two threads, 7-22 s on one; about 2 s quiet either way)
    failed = None
    with blas_threads(2 * n):
        try:
            out = run_interior_point(_ColumnBlockSystem(lp, fac),
                                     replace(SETTINGS, tol=tol, max_iter=max_iter), start=start,
                                     deadline=deadline, keep_gap=keep_gap, log=log, inspect=watch)
        except NoConvergence as exc:
            if exc.best is None:
                raise
            out, failed = exc.best, exc
    p = out.point
    final = watch.seen if out.status is Status.STOPPED else Iterate(lp, p, out.scores.gap)
    M = final.matrix()
    stats = dict(solver=BLOCKS, variables=n * n + 1, rows=rows, nnz=3 * n * n + n + 2 * R,
                 privacy_rows=R, ipm_iterations=out.iterations,
                 seconds=time.perf_counter() - t0, lp_objective=float(p.k),
                 lower_bound=max(watch.bound, final.bound()),
                 ipm_relative_gap=float(out.scores.score), stalled=out.stalled,
                 formulation="worst-case-loss LP (column blocks)", device=fac.device,
                 dissection_levels=0)
    if monitor is not None:
        stats["monitor_stopped"] = watch.seen is not None
    if keep_gap is not None:
        stats["warm_start"] = WarmStart(lp.keys, out.kept if out.kept is not None else p)
    if failed is not None:
        raise BlocksStalled(str(failed), M, stats, float(out.scores.score)) from failed
    return M, stats
