r"""Earth Mover's Distance: the evaluation shared by every spatial part of the toolkit.

All functions solve the transport problem exactly, except :func:`emd_downsampled`, which is
exact on block-summed maps (the MIT saliency benchmark's approximation). :func:`emd` uses POT's
network simplex on the given cost matrix; :func:`emd_grid` uses a network simplex on the grid
graph with a multiscale warm start and checks an optimality certificate before returning
(``docs/design/emd.md``).

Mass rules (the same for every function here)
---------------------------------------------
* Inputs must be finite and non-negative with positive total mass, else
  :class:`~mdp.errors.ParameterError` (a ``ValueError``) naming the parameter.
* ``normalize=True`` (default): both histograms are divided by their totals first, so the
  result is the EMD between the two probability distributions (the paper's heatmap setting,
  Ghazi et al. 2023 section 2.1, and the saliency benchmark's convention). Unequal masses are
  therefore allowed and simply rescaled.
* ``normalize=False``: the masses must agree to a relative ``1e-9``; otherwise ``ParameterError``
  (EMD of unequal masses needs a penalty for the excess, which the paper's EMD *norm* handles
  and this module deliberately does not guess). The result is then in mass x distance units.
* Distances are in grid steps (one cell side = 1) unless ``cell_size`` says otherwise; on the
  seed's unit square ``[0, 1]^2`` with a ``Delta x Delta`` grid use ``cell_size=1/Delta``.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import ot
import scipy.sparse as sp

from .errors import ParameterError, SolverError
from .validation import check_int, check_positive

__all__ = ["emd_1d", "emd", "emd_grid", "emd_downsampled", "block_sum", "grid_l1_cost"]

_MASS_RTOL = 1e-9
# Entering threshold of the network simplex and slack allowed by the Euclidean dual check, in
# cell units (L1 costs are integers, so 0.5 there means "at least 1").
_EUCLID_TOL = 1e-9
_L1_TOL = 0.5
# Relative gap allowed between the primal cost and the dual bound before the result is refused.
_CERT_RTOL = 1e-9
# Grids of at most this many cells start the Euclidean solve with every arc present.
_EUCLID_COMPLETE_CELLS = 64
# Violated pairs added per supply cell and per demand cell in each column-generation round.
_EUCLID_K = 3
# Candidate-list length of the Euclidean network simplex once entering arcs are sparse.
_EUCLID_CAND_LIST = 300
# Euclidean pivots that would shift more than this fraction of the potentials are passed over up
# to _EUCLID_MAX_DEFER times in a row (docs/design/emd.md).
_EUCLID_DEFER = 0.125
_EUCLID_MAX_DEFER = 20
# The Euclidean network simplex renumbers its nodes in tree order each time its potential updates
# have walked this many times (nodes + arcs) (docs/design/emd.md).
_EUCLID_RELABEL = 20.0
# Between column-generation rounds, edges whose reduced cost exceeds this (cell units) in both
# directions leave the edge set; only in the first _EUCLID_PRUNE_ROUNDS rounds of a level, so the
# rounds stay finite (afterwards edges are only added).
_EUCLID_PRUNE = 0.3
_EUCLID_PRUNE_ROUNDS = 30


def _ns():
    """The compiled network simplex, imported on first use (numba costs start-up time to every
    ``import mdp`` otherwise, and only the grid EMD needs it)."""
    from . import _netsimplex

    return _netsimplex


def emd_1d(p, q, positions=None) -> float:
    r"""Exact 1-D EMD (Wasserstein-1) between two histograms on the same positions.

    .. math:: \mathrm{EMD}(p, q) = \sum_{i} |P_i - Q_i| (x_{i+1} - x_i)

    where ``P``, ``Q`` are the cumulative sums of the normalised histograms and ``x`` the sorted
    positions (default ``0, 1, ..., n-1``, i.e. the result is in grid steps). Always normalises
    (the module's ``normalize=True`` rule).
    """
    p = np.asarray(p, dtype=float)
    q = np.asarray(q, dtype=float)
    if p.ndim != 1 or p.shape != q.shape:
        raise ParameterError(f"p and q must be 1-D of equal length, got {p.shape} and {q.shape}")
    if np.any(p < 0) or np.any(q < 0):
        raise ParameterError("p and q must be non-negative")
    sp_, sq = p.sum(), q.sum()
    if sp_ <= 0 or sq <= 0:
        raise ParameterError("p and q must have positive mass")
    x = np.arange(len(p), dtype=float) if positions is None else np.asarray(positions, dtype=float)
    if x.shape != p.shape:
        raise ParameterError(f"positions must have length {len(p)}, got {x.shape}")
    order = np.argsort(x, kind="stable")
    x, p, q = x[order], p[order] / sp_, q[order] / sq
    return float(np.sum(np.abs(np.cumsum(p - q))[:-1] * np.diff(x)))


def _masses(p, q, *, normalize: bool, ndim: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Validate two histograms and apply the module's mass rules."""
    p = np.asarray(p, dtype=float)
    q = np.asarray(q, dtype=float)
    if ndim is not None and p.ndim != ndim:
        raise ParameterError(f"p must be {ndim}-D, got shape {p.shape}")
    if p.shape != q.shape:
        raise ParameterError(f"p and q must have the same shape, got {p.shape} and {q.shape}")
    for name, h in (("p", p), ("q", q)):
        if not np.all(np.isfinite(h)):
            raise ParameterError(f"{name} must be finite (found nan or inf)")
        if np.any(h < 0):
            raise ParameterError(f"{name} must be non-negative, min is {h.min()}")
        if h.sum() <= 0:
            raise ParameterError(f"{name} must have positive mass, got total {h.sum()}")
    sp_, sq = p.sum(), q.sum()
    if normalize:
        return p / sp_, q / sq
    if abs(sp_ - sq) > _MASS_RTOL * max(sp_, sq):
        raise ParameterError(
            f"p and q must have equal mass when normalize=False, got {sp_!r} and {sq!r} "
            "(use normalize=True to compare them as distributions)")
    return p, q * (sp_ / sq)


def _solve(a: np.ndarray, b: np.ndarray, M) -> float:
    """Exact transport cost with POT's network simplex; refuse to return a non-optimal value."""
    _, log = ot.emd(a, b, M, numItermax=2**62, log=True, check_marginals=False)
    if log["result_code"] != 1:
        raise SolverError(f"network simplex did not reach the optimum: {log['warning']}")
    return float(log["cost"])


def emd(p, q, cost, *, normalize: bool = True) -> float:
    r"""Exact EMD between two histograms under an arbitrary ground cost.

    .. math:: \mathrm{EMD}(p, q) = \min_{\gamma \ge 0,\ \gamma 1 = p,\ \gamma^\top 1 = q}
              \sum_{x, y} \gamma(x, y)\, C(x, y)

    (Ghazi et al. 2023, section 2.1, with a general cost ``C`` in place of ``||x - y||_1``).

    Parameters
    ----------
    p, q : array_like, shape (n,)
        Non-negative histograms.
    cost : array_like, shape (n, n)
        Ground cost ``C[x, y]``: finite, non-negative.
    normalize : bool, default True
        See the module's mass rules.

    Returns
    -------
    float
    """
    a, b = _masses(p, q, normalize=normalize, ndim=1)
    C = np.asarray(cost, dtype=float)
    if C.shape != (a.size, a.size):
        raise ParameterError(f"cost must have shape {(a.size, a.size)}, got {C.shape}")
    if not np.all(np.isfinite(C)) or np.any(C < 0):
        raise ParameterError("cost must be finite and non-negative")
    return _solve(a, b, np.ascontiguousarray(C))


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
    flow, pi, pred, status, _ = _ns().network_simplex(
        u.astype(np.int64), w.astype(np.int64), cost.astype(float), f, tree.astype(np.int64),
        float(tol), first_arc, cand_list, float(defer), max_defer, float(relabel))
    if status != _ns().OPTIMAL:
        raise SolverError(f"grid network simplex failed (status {status}) on a {f.size}-node graph")
    return _Flow(u, w, cost, flow, pi, pred[1:] % u.size)


def _certify(sol: _Flow, f: np.ndarray, dual_slack: float) -> float:
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
    if (np.abs(div - f).max() > _CERT_RTOL * scale or rc_min < -dual_slack
            or abs(primal - dual) > _CERT_RTOL * scale * span):
        raise SolverError(
            f"grid EMD certificate failed: primal {primal!r}, dual {dual!r}, "
            f"min reduced cost {rc_min!r}")
    return primal


def _emd_grid_l1(f: np.ndarray) -> float:
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
        start = _ns().lift_grid_tree(Rc, Cc, tree, R, C)
        sol = _simplex(u, w, np.ones(u.size), np.ascontiguousarray(fine.ravel()), start, _L1_TOL)
        tree = sol.tree
    if sol is None:
        return 0.0
    return _certify(sol, levels[0].ravel(), 0.0)


def _euclid_violations(pi, f, rows, cols, k=_EUCLID_K):
    """Supply/demand pairs violating the Euclidean dual constraint (see
    ``pair_violations_both``): the ``k`` most violated per supply cell and per demand cell."""
    best_t, _, best_s, _, _ = _ns().pair_violations_both(pi, f, rows, cols, 8, _EUCLID_TOL, k)
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
    tu, tw = _ns().lift_euclid_tree(Rc, Cc, R, C, coarse.u[ct], coarse.w[ct],
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


def _emd_grid_euclidean(f: np.ndarray) -> float:
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
    while levels[-1].size > _EUCLID_COMPLETE_CELLS:
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
            sol = _simplex(u, w, c, gv, tree, _EUCLID_TOL, first_arc, _EUCLID_CAND_LIST,
                           _EUCLID_DEFER, _EUCLID_MAX_DEFER, _EUCLID_RELABEL)
            s, t = _euclid_violations(sol.pi, gv, R, C)
            if s.size == 0:
                break
            tree = sol.tree
            if rounds <= _EUCLID_PRUNE_ROUNDS:
                u, w, c, tree = _prune_edges(u, w, c, sol.pi, tree, _EUCLID_PRUNE)
            first_arc = u.size
            u, w = np.concatenate([u, s]), np.concatenate([w, t])
            (sr, sc), (tr, tc) = np.divmod(s, C), np.divmod(t, C)
            c = np.concatenate([c, np.hypot(sr - tr, sc - tc)])
    return _certify(sol, levels[0].ravel(), _EUCLID_TOL)


def emd_grid(p, q, ground: str = "l1", *, normalize: bool = True, cell_size: float = 1.0) -> float:
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
    a, b = _masses(p, q, normalize=normalize, ndim=2)
    cell_size = check_positive(cell_size, "cell_size")
    if ground not in ("l1", "euclidean"):
        raise ParameterError(f"ground must be 'l1' or 'euclidean', got {ground!r}")
    f = a - b
    if not np.any(f):
        return 0.0
    solve = _emd_grid_l1 if ground == "l1" else _emd_grid_euclidean
    return cell_size * solve(f)


def block_sum(p, factor: int) -> np.ndarray:
    """Sum ``factor x factor`` blocks of a 2-D map (the last blocks may be smaller).

    Mass preserving; used to downsample before an exact EMD.
    """
    p = np.asarray(p, dtype=float)
    if p.ndim != 2:
        raise ValueError(f"p must be 2-D, got shape {p.shape}")
    factor = check_int(factor, "factor", low=1)
    r = np.add.reduceat(p, np.arange(0, p.shape[0], factor), axis=0)
    return np.add.reduceat(r, np.arange(0, p.shape[1], factor), axis=1)


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
    a, b = _masses(p, q, normalize=True, ndim=2)
    return emd_grid(block_sum(a, factor), block_sum(b, factor), ground=ground)
