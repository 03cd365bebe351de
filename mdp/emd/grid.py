r"""Exact EMD on a regular grid, L1 or Euclidean ground, by a multiscale network simplex.

Both grounds solve the min-cost flow (transshipment) of ``f = p - q`` coarse to fine, each level
starting from the optimal spanning tree of the level below; the Euclidean ground adds column
generation over all supply/demand pairs. The result is returned only after an optimality
certificate passes. The method, its measurements and what was tried are in
``docs/design/emd.md``; the compiled kernels are in :mod:`mdp.emd.network_simplex`.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import scipy.sparse as sp

from ..errors import ParameterError, ParameterTypeError, SolverError
from ..validation import check_positive, check_tuning
from . import network_simplex as kernels
from .histograms import block_sum, check_histograms

__all__ = ["GridEMDTuning", "emd_grid", "emd_downsampled", "grid_l1_cost"]


@dataclass(frozen=True)
class GridEMDTuning:
    """Tuning of the grid EMD solver: every field changes speed only, never the certified value.

    Attributes
    ----------
    euclid_tol : float
        Entering threshold of the network simplex and slack allowed by the Euclidean dual check,
        in cell units.
    l1_tol : float
        The same for L1 costs, which are integers (0.5 means "at least 1").
    cert_rtol : float
        Relative gap allowed between the primal cost and the dual bound (and in flow
        conservation) before the result is refused.
    complete_cells : int
        Grids of at most this many cells start the Euclidean solve with every arc present.
    violations_per_cell : int
        Violated pairs added per supply cell and per demand cell in each column-generation round.
    candidate_list : int
        Candidate-list length of the Euclidean network simplex once entering arcs are sparse.
    defer, max_defer : float, int
        Euclidean pivots that would shift more than the fraction ``defer`` of the potentials are
        passed over up to ``max_defer`` times in a row.
    relabel : float
        The Euclidean network simplex renumbers its nodes in tree order each time its potential
        updates have walked this many times (nodes + arcs).
    prune_slack, prune_rounds : float, int
        Between column-generation rounds, edges whose reduced cost exceeds ``prune_slack`` (cell
        units) in both directions leave the edge set; only in the first ``prune_rounds`` rounds
        of a level, so that the rounds stay finite (afterwards edges are only added).
    """

    def __post_init__(self) -> None:
        check_tuning(self)

    euclid_tol: float = 1e-9
    l1_tol: float = 0.5
    cert_rtol: float = 1e-9
    complete_cells: int = 64
    violations_per_cell: int = 3
    candidate_list: int = 300
    defer: float = 0.125
    max_defer: int = 20
    relabel: float = 20.0
    prune_slack: float = 0.3
    prune_rounds: int = 30


@lru_cache(maxsize=8)
def grid_l1_cost(rows: int, cols: int) -> sp.coo_array:
    """Sparse cost of the 4-neighbour grid graph as a bipartite transport problem.

    Arc ``x -> x`` costs 0 (explicitly stored zeros) and ``x -> y`` costs 1 for the four
    neighbours; no other arcs exist. With both marginals raised by the total variation of
    ``p - q`` (so mass can pass through a node), POT's sparse network simplex on this cost gives
    the L1 grid EMD; :func:`emd_grid` used that formulation before its own grid solver and the
    function is kept for callers who want to hand the problem to POT.
    """
    idx = np.arange(rows * cols).reshape(rows, cols)
    src, dst, w = [idx.ravel()], [idx.ravel()], [np.zeros(rows * cols)]
    for u, v in ((idx[:, :-1], idx[:, 1:]), (idx[:-1, :], idx[1:, :])):
        src += [u.ravel(), v.ravel()]
        dst += [v.ravel(), u.ravel()]
        w += [np.ones(u.size)] * 2
    M = sp.coo_array((np.concatenate(w), (np.concatenate(src), np.concatenate(dst))),
                     shape=(rows * cols, rows * cols))
    M.data.flags.writeable = False
    return M


def _halve(f: np.ndarray) -> np.ndarray:
    """Sum 2 x 2 blocks (the last row / column of an odd side stays a 1-wide block)."""
    g = np.add.reduceat(f, np.arange(0, f.shape[0], 2), axis=0)
    return np.add.reduceat(g, np.arange(0, f.shape[1], 2), axis=1)


def _offset_edges(rows: int, cols: int, vectors) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Undirected edges ``x -> x + v`` of the grid for each displacement ``v = (dr, dc)``, with
    their Euclidean lengths."""
    idx = np.arange(rows * cols).reshape(rows, cols)
    us, ws, cs = [], [], []
    for dr, dc in vectors:
        r1, c0, c1 = rows - dr, max(0, -dc), min(cols, cols - dc)
        if r1 <= 0 or c1 <= c0:
            continue
        us.append(idx[:r1, c0:c1].ravel())
        ws.append(idx[dr:dr + r1, c0 + dc:c1 + dc].ravel())
        cs.append(np.full(us[-1].size, math.hypot(dr, dc)))
    if not us:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
    return np.concatenate(us), np.concatenate(ws), np.concatenate(cs)


def _primitive_vectors(r: int) -> list[tuple[int, int]]:
    """Displacements ``(dr, dc)`` with ``max(|dr|, |dc|) <= r``, ``gcd = 1``, one of each +-pair.

    Enough for a metric cost on a grid: a non-primitive move passes through grid points on its
    segment and splits into primitive moves of the same total length.
    """
    return [(dr, dc) for dr in range(r + 1) for dc in range(-r, r + 1)
            if (dr > 0 or dc > 0) and math.gcd(dr, abs(dc)) == 1]


@dataclass
class _Flow:
    """Optimal transshipment on an edge list: flows of the arcs ``u -> w`` then ``w -> u``."""

    u: np.ndarray
    w: np.ndarray
    cost: np.ndarray
    flow: np.ndarray
    pi: np.ndarray
    tree: np.ndarray  # edge ids of the final spanning tree


def _simplex(u, w, cost, f, tree, tol, first_arc=0, cand_list=0, defer=0.0,
             max_defer=0, relabel=0.0) -> _Flow:
    flow, pi, pred, status, _ = kernels.network_simplex(
        u.astype(np.int64), w.astype(np.int64), cost.astype(float), f, tree.astype(np.int64),
        float(tol), first_arc, cand_list, float(defer), max_defer, float(relabel))
    if status != kernels.OPTIMAL:
        raise SolverError(f"grid network simplex failed (status {status}) on a {f.size}-node graph")
    return _Flow(u, w, cost, flow, pi, pred[1:] % u.size)


def _certify(sol: _Flow, f: np.ndarray, dual_slack: float, rtol: float) -> float:
    """Primal cost of ``sol`` after checking it is optimal: flow conservation, dual feasibility
    on every arc (up to ``dual_slack``) and equal primal and dual objectives."""
    E = sol.u.size
    src, dst = np.concatenate([sol.u, sol.w]), np.concatenate([sol.w, sol.u])
    c = np.concatenate([sol.cost, sol.cost])
    n, scale = f.size, np.abs(f).sum()
    div = np.bincount(src, sol.flow, n) - np.bincount(dst, sol.flow, n)
    primal = float(c @ sol.flow)
    dual = -float(f @ sol.pi)
    rc_min = float((c + sol.pi[src] - sol.pi[dst]).min()) if E else 0.0
    span = float(np.ptp(sol.pi)) + 1.0
    if (np.abs(div - f).max() > rtol * scale or rc_min < -dual_slack
            or abs(primal - dual) > rtol * scale * span):
        raise SolverError(
            f"grid EMD certificate failed: primal {primal!r}, dual {dual!r}, "
            f"min reduced cost {rc_min!r}")
    return primal


def _emd_grid_l1(f: np.ndarray, tuning: GridEMDTuning) -> float:
    """L1 grid EMD of the signed map ``f`` (sum 0): min-cost flow on the 4-neighbour grid graph,
    solved coarse to fine, each level's network simplex starting from the lifted optimal tree of
    the level below."""
    levels = [f]
    while levels[-1].size > 1:
        levels.append(_halve(levels[-1]))
    tree = np.zeros(0, np.int64)
    sol = None
    for fine, coarse in zip(levels[-2::-1], levels[:0:-1], strict=True):
        (R, C), (Rc, Cc) = fine.shape, coarse.shape
        u, w, _ = _offset_edges(R, C, [(0, 1), (1, 0)])
        start = kernels.lift_grid_tree(Rc, Cc, tree, R, C)
        sol = _simplex(u, w, np.ones(u.size), np.ascontiguousarray(fine.ravel()), start,
                       tuning.l1_tol)
        tree = sol.tree
    if sol is None:
        return 0.0
    return _certify(sol, levels[0].ravel(), 0.0, tuning.cert_rtol)


def _euclid_violations(pi, f, rows, cols, tuning: GridEMDTuning):
    """Supply/demand pairs violating the Euclidean dual constraint (see
    ``pair_violations_both``): the ``tuning.violations_per_cell`` most violated per supply cell
    and per demand cell."""
    best_t, _, best_s, _, _ = kernels.pair_violations_both(
        pi, f, rows, cols, 8, tuning.euclid_tol, tuning.violations_per_cell)
    n = rows * cols
    s1, j1 = np.nonzero(best_t >= 0)
    t2, j2 = np.nonzero(best_s >= 0)
    keys = np.unique(np.concatenate([s1 * n + best_t[s1, j1], best_s[t2, j2] * n + t2]))
    return keys // n, keys % n


def _euclid_start(fine_shape, coarse_shape, coarse: _Flow | None, f: np.ndarray):
    """Candidate edges and a spanning tree for one level of the Euclidean solve.

    Coarsest level: every primitive move (so the restricted problem is the full one) and a comb
    tree. Finer levels: the 8 unit and diagonal moves, all fine-cell pairs of the blocks joined by
    a coarse edge with flow or in the coarse tree, and the coarse tree lifted by
    ``lift_euclid_tree`` (shortest fine edge per coarse tree edge, cheapest tree inside each
    block for the forced flows of ``f``, the fine map).
    """
    R, C = fine_shape
    if coarse is None:
        u, w, c = _offset_edges(R, C, _primitive_vectors(max(R, C)))
        ur, uc = np.divmod(u, C)
        wr, wc = np.divmod(w, C)
        comb = ((ur == wr) & (wc == uc + 1)) | ((uc == 0) & (wc == 0) & (wr == ur + 1))
        return u, w, c, np.flatnonzero(comb)
    Rc, Cc = coarse_shape
    us, ws = [], []
    u0, w0, _ = _offset_edges(R, C, [(0, 1), (1, 0), (1, 1), (1, -1)])
    us.append(u0)
    ws.append(w0)
    used = (coarse.flow[:coarse.u.size] > 0) | (coarse.flow[coarse.u.size:] > 0)
    cu = np.concatenate([coarse.u[used], coarse.u[coarse.tree]])
    cw = np.concatenate([coarse.w[used], coarse.w[coarse.tree]])
    (iu, ju), (iw, jw) = np.divmod(cu, Cc), np.divmod(cw, Cc)
    for a in (0, 1):
        for b in (0, 1):
            for g in (0, 1):
                for h in (0, 1):
                    r1, c1, r2, c2 = 2 * iu + a, 2 * ju + b, 2 * iw + g, 2 * jw + h
                    ok = (r1 < R) & (c1 < C) & (r2 < R) & (c2 < C)
                    us.append((r1 * C + c1)[ok])
                    ws.append((r2 * C + c2)[ok])
    ct = coarse.tree
    tu, tw = kernels.lift_euclid_tree(Rc, Cc, R, C, coarse.u[ct], coarse.w[ct],
                                    coarse.flow[ct] - coarse.flow[ct + coarse.u.size], f)
    lo = np.minimum(np.concatenate(us + [tu]), np.concatenate(ws + [tw]))
    hi = np.maximum(np.concatenate(us + [tu]), np.concatenate(ws + [tw]))
    keys, inv = np.unique(lo * (R * C) + hi, return_inverse=True)
    u, w = keys // (R * C), keys % (R * C)
    (ur, uc), (wr, wc) = np.divmod(u, C), np.divmod(w, C)
    return u, w, np.hypot(ur - wr, uc - wc), inv[-tu.size:]


def _prune_edges(u, w, c, pi, tree, slack):
    """Drop the edges ``u - w`` whose reduced cost exceeds ``slack`` in both directions, i.e.
    ``c - |pi[u] - pi[w]| > slack``, except the edges of ``tree``; returns the kept edges and
    ``tree`` renumbered to them. The current tree stays optimal on the kept edges."""
    keep = c - np.abs(pi[u] - pi[w]) <= slack
    keep[tree] = True
    return u[keep], w[keep], c[keep], (np.cumsum(keep) - 1)[tree]


def _emd_grid_euclidean(f: np.ndarray, tuning: GridEMDTuning) -> float:
    """Euclidean grid EMD of the signed map ``f`` (sum 0), exact by column generation.

    For a metric cost the transport problem equals the transshipment (min-cost flow) on the
    complete graph. Each level solves it on a sparse edge set (:func:`_euclid_start`), then checks
    the dual constraint ``pi[t] - pi[s] <= |x_t - x_s|`` over *all* supply/demand pairs; violated
    pairs join the edge set and the simplex resumes from its last tree. No violation left means
    the restricted optimum is optimal for the full problem (its potentials are feasible for it).
    Edges far from tight leave the edge set between rounds (:func:`_prune_edges`): that is safe
    because the certificate checks every supply/demand pair, not the edge set.
    """
    levels = [f]
    while levels[-1].size > tuning.complete_cells:
        levels.append(_halve(levels[-1]))
    sol = None
    for k in range(len(levels) - 1, -1, -1):
        g = levels[k]
        R, C = g.shape
        coarse_shape = levels[k + 1].shape if k + 1 < len(levels) else None
        gv = np.ascontiguousarray(g.ravel())
        u, w, c, tree = _euclid_start(g.shape, coarse_shape, sol, gv)
        first_arc = 0
        for rounds in itertools.count(1):
            sol = _simplex(u, w, c, gv, tree, tuning.euclid_tol, first_arc, tuning.candidate_list,
                           tuning.defer, tuning.max_defer, tuning.relabel)
            s, t = _euclid_violations(sol.pi, gv, R, C, tuning)
            if s.size == 0:
                break
            tree = sol.tree
            if rounds <= tuning.prune_rounds:
                u, w, c, tree = _prune_edges(u, w, c, sol.pi, tree, tuning.prune_slack)
            first_arc = u.size
            u, w = np.concatenate([u, s]), np.concatenate([w, t])
            (sr, sc), (tr, tc) = np.divmod(s, C), np.divmod(t, C)
            c = np.concatenate([c, np.hypot(sr - tr, sc - tc)])
    return _certify(sol, levels[0].ravel(), tuning.euclid_tol, tuning.cert_rtol)


def emd_grid(p, q, ground: str = "l1", *, normalize: bool = True, cell_size: float = 1.0,
             tuning: GridEMDTuning | None = None) -> float:
    r"""Exact EMD between two 2-D histograms of equal shape on a regular grid.

    .. math:: \mathrm{EMD}(p, q) = \min_{\gamma \ge 0,\ \gamma 1 = p,\ \gamma^\top 1 = q}
              \sum_{x, y} \gamma(x, y)\, \|x - y\|

    with ``||.||`` the L1 or Euclidean distance between cell centres (Ghazi et al. 2023, section
    2.1, uses L1). For any metric the transport problem equals the min-cost flow
    (transshipment) of ``f = p - q`` over all pairs of cells, which is what is solved:

    * ``ground="l1"``: the L1 metric is the shortest-path metric of the 4-neighbour grid graph
      with unit edges, so the flow only needs those ``~2 R C`` edges. A network simplex solves it
      coarse to fine: the maps are halved by 2 x 2 block sums down to one cell, and each level
      starts from the optimal spanning tree of the level below, lifted to the finer grid.
    * ``ground="euclidean"``: the same multiscale network simplex on a sparse edge set (unit and
      diagonal moves plus the edges the coarser level used), made exact by column generation:
      the dual constraint is checked over all supply/demand pairs, in tiles, and violated pairs
      are added until none is left.

    Either way the result is returned only after an optimality certificate passes: flow
    conservation, dual feasibility (every grid edge for L1; every pair for Euclidean) and equal
    primal and dual objectives; otherwise :class:`~mdp.errors.SolverError`. See
    ``docs/design/emd.md`` for the method and timings.

    Parameters
    ----------
    p, q : array_like, shape (R, C)
        Non-negative histograms.
    ground : {"l1", "euclidean"}, default "l1"
    normalize : bool, default True
        See the module's mass rules.
    cell_size : float, default 1.0
        Side of a grid cell; the result is multiplied by it.
    tuning : GridEMDTuning, optional
        The solver's tuning (default ``GridEMDTuning()``); changes speed, never the value.

    Returns
    -------
    float

    Raises
    ------
    ParameterError
        Bad shapes, negative / non-finite entries, zero mass, unequal masses with
        ``normalize=False``, unknown ``ground`` or non-positive ``cell_size``.
    SolverError
        The optimality certificate failed (not expected; reported rather than returned).
    """
    a, b = check_histograms(p, q, normalize=normalize, ndim=2)
    cell_size = check_positive(cell_size, "cell_size")
    if ground not in ("l1", "euclidean"):
        raise ParameterError(f"ground must be 'l1' or 'euclidean', got {ground!r}")
    f = a - b
    if not np.any(f):
        return 0.0
    if tuning is None:
        tuning = GridEMDTuning()
    elif not isinstance(tuning, GridEMDTuning):
        raise ParameterTypeError(f"tuning must be a GridEMDTuning, got {type(tuning).__name__}")
    solve = _emd_grid_l1 if ground == "l1" else _emd_grid_euclidean
    return cell_size * solve(f, tuning)


def emd_downsampled(p, q, factor: int = 32, ground: str = "euclidean") -> float:
    r"""Saliency-benchmark style EMD: downsample, normalise, exact EMD.

    The MIT saliency benchmark (Bylinskii et al. 2019) shrinks both maps by ``1/32`` and solves
    the EMD with Euclidean ground distance measured in *downsampled* pixels. Here the shrinking
    is an exact block sum (mass preserving) instead of MATLAB's bicubic ``imresize``; the
    result is in downsampled-pixel units like the benchmark's.

    Parameters
    ----------
    p, q : array_like, shape (R, C)
    factor : int, default 32
        Block side in pixels.
    ground : {"euclidean", "l1"}, default "euclidean"

    Returns
    -------
    float
    """
    a, b = check_histograms(p, q, normalize=True, ndim=2)
    return emd_grid(block_sum(a, factor), block_sum(b, factor), ground=ground)
