r"""Experiment (lost): cost-scaling push-relabel for the finest level of the Euclidean grid EMD.

Usage: python benchmarks/emd_cost_scaling.py [--size 256] [--mode phase|finest|full]
       [--eps 0.1 0.03 0.01] [--gu 0.5] [--repeats 1]

Compares, on the finest level of ``mdp.emd.emd_grid(p, q, ground="euclidean")`` (the coarser
levels solved as the package does, once), in one process:

* ``phase``: one refine phase of Goldberg's (1997) cost scaling at each ``--eps`` on the first
  round's edge set, warm-started with the coarse potentials interpolated bilinearly, then the
  package's network simplex from a spanning tree of that flow's support (largest flows first);
  against the network simplex from the package's lifted start tree.
* ``finest``: the whole finest level (column generation with the all-pairs dual check), the
  package's way and with the first round's start tree taken from one cost-scaling phase.
* ``full``: the whole finest level by cost scaling alone (phases ``1e-2 -> 1e-10``, x 1/100;
  each column-generation round restarts at the largest violation, at most ``1e-2``), certified
  by ``mdp.emd._certify`` and the all-pairs check like the simplex's result.

Maps: ``benchmarks/emd_grid.py``'s heatmaps (seed 0). Figures and the verdict are in
``docs/design/emd.md`` ("What lost"). The kernel lives here, not in ``mdp``, because it lost.

Kernel: uncapacitated transshipment on undirected edges ``{u, w}`` (cost ``c``), one signed flow
``g`` per edge. From ``v`` along an edge carrying flow towards ``v`` the residual arc costs
``-c`` with capacity ``|g|`` (cancelling); otherwise ``+c`` with capacity ``U - g``, ``U`` the
total supply (no edge of an optimal acyclic flow carries more). Prices ``p`` give reduced costs
``c + p[v] - p[o]`` (the network simplex's convention); ``eps``-optimal: every residual arc has
reduced cost ``>= -eps``, and a feasible ``eps``-optimal flow costs at most ``eps sum |g|`` more
than the optimum. Each phase saturates (or cancels) the arcs below ``-eps``, then discharges
active nodes in FIFO order (push on arcs below ``-eps / 2``, relabel to the best residual arc
``- eps``), with Goldberg's global price update (Dial's buckets on lengths
``floor(rc / eps) + 1``) at the phase start and after every ``gu * n`` relabels.
"""

from __future__ import annotations

import argparse
import importlib
import math
import sys
import time
from pathlib import Path

import numba as nb
import numpy as np
from scipy.ndimage import map_coordinates
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import minimum_spanning_tree

sys.path.insert(0, str(Path(__file__).parent))
from emd_grid import sparse_map  # noqa: E402

E = importlib.import_module("mdp.emd")  # the module (mdp.emd the name is the function)

OK = 0
NO_SINK = -1


@nb.njit(cache=True)
def _adjacency(n, eu, ew, ec):
    E = eu.size
    start = np.zeros(n + 1, np.int64)
    for e in range(E):
        start[eu[e] + 1] += 1
        start[ew[e] + 1] += 1
    for v in range(n):
        start[v + 1] += start[v]
    fill = start[:n].copy()
    ae = np.empty(2 * E, np.int64)
    ao = np.empty(2 * E, np.int64)
    asg = np.empty(2 * E)
    ac = np.empty(2 * E)
    for e in range(E):
        u = eu[e]
        w = ew[e]
        k = fill[u]
        ae[k] = e
        ao[k] = w
        asg[k] = 1.0
        ac[k] = ec[e]
        fill[u] += 1
        k = fill[w]
        ae[k] = e
        ao[k] = u
        asg[k] = -1.0
        ac[k] = ec[e]
        fill[w] += 1
    return start, ae, ao, asg, ac


@nb.njit(cache=True)
def _global_update(n, start, ae, ao, asg, ac, g, p, ex, eps, U, thr, d, done, bhead, pool_v,
                   pool_next):
    """Goldberg's global price update: ``d(v)`` = shortest distance from ``v`` to a deficit
    node in the residual graph with integer lengths ``floor(rc / eps) + 1`` (>= 0), then
    ``p -= eps d``; keeps ``eps``-optimality and gives every active node an admissible path.
    Dial's buckets (``bhead``: one per distance); the search stops once every active node is
    settled or the buckets run out, and the nodes not settled get the last distance reached."""
    B = bhead.size
    for v in range(n):
        d[v] = np.inf
        done[v] = False
    for b in range(B):
        bhead[b] = -1
    npool = 0
    need = 0
    nsink = 0
    for v in range(n):
        if ex[v] < -thr:
            d[v] = 0.0
            pool_v[npool] = v
            pool_next[npool] = bhead[0]
            bhead[0] = npool
            npool += 1
            nsink += 1
        elif ex[v] > thr:
            need += 1
    if nsink == 0:
        return False
    dmax = 0
    b = 0
    while b < B and need > 0:
        k_ = bhead[b]
        if k_ < 0:
            b += 1
            continue
        bhead[b] = pool_next[k_]
        w = pool_v[k_]
        if done[w] or d[w] < b:
            continue
        done[w] = True
        dmax = b
        if ex[w] > thr:
            need -= 1
        pw = p[w]
        for k in range(start[w], start[w + 1]):
            v = ao[k]
            if done[v]:
                continue
            x = -asg[k] * g[ae[k]]  # flow on v -> w
            if x < 0:
                cost = -ac[k]
            else:
                cost = ac[k]
                if U - x <= 0:
                    continue
            rc = cost + p[v] - pw
            ln = math.floor(rc / eps) + 1.0
            if ln < 0:
                ln = 0.0
            nd = b + ln
            if nd < d[v] and nd < B:
                d[v] = nd
                nb_ = int(nd)
                pool_v[npool] = v
                pool_next[npool] = bhead[nb_]
                bhead[nb_] = npool
                npool += 1
    for v in range(n):
        dv = d[v] if done[v] else dmax
        if dv > 0:
            p[v] -= eps * dv
    return True


@nb.njit(cache=True)
def cost_scaling(n, eu, ew, ec, f, g, p, eps, eps_min, alpha, thr, gu_freq=1.0):
    """Make the pseudoflow ``g`` (edge flows, modified in place) with prices ``p`` (modified in
    place) a feasible ``eps_min``-optimal flow for supplies ``f``, by phases of Goldberg's
    refine at ``eps, eps / alpha, ..., eps_min`` (FIFO discharge, global price updates after
    every ``gu_freq * n`` relabels). ``g`` need not be feasible; it should be ``eps``-optimal
    for ``p`` (arcs that are not get saturated). Nodes whose excess is within ``thr`` count as
    balanced. Returns ``(status, phases, pushes, relabels, updates)``."""
    E = eu.size
    start, ae, ao, asg, ac = _adjacency(n, eu, ew, ec)
    U = 0.0
    for v in range(n):
        if f[v] > 0:
            U += f[v]
    U *= 1.0 + 1e-9
    ex = f.copy()
    for e in range(E):
        ex[eu[e]] -= g[e]
        ex[ew[e]] += g[e]
    queue = np.empty(n + 1, np.int64)
    inq = np.zeros(n, np.bool_)
    cur = np.empty(n, np.int64)
    d = np.empty(n)
    done = np.empty(n, np.bool_)
    bhead = np.empty(4 * n + 16, np.int64)
    pool_v = np.empty(4 * E + 2 * n + 1, np.int64)
    pool_next = np.empty(4 * E + 2 * n + 1, np.int64)
    phases = 0
    pushes = 0
    relabels = 0
    updates = 0
    gu_every = max(int(gu_freq * n), 1)
    while True:
        phases += 1
        # Saturate (or cancel) every residual arc whose reduced cost is below -eps.
        for e in range(E):
            u = eu[e]
            w = ew[e]
            c = ec[e]
            a = p[u] - p[w]
            ge = g[e]
            if c + a < -eps:
                tgt = U
            elif c - a < -eps:
                tgt = -U
            elif ge > 0 and c + a > eps:
                tgt = 0.0
            elif ge < 0 and c - a > eps:
                tgt = 0.0
            else:
                continue
            dl = tgt - ge
            g[e] = tgt
            ex[u] -= dl
            ex[w] += dl
        head = 0
        tail = 0
        for v in range(n):
            cur[v] = start[v]
            inq[v] = False
            if ex[v] > thr:
                queue[tail] = v
                tail += 1
                inq[v] = True
        if tail > 0:
            if not _global_update(n, start, ae, ao, asg, ac, g, p, ex, eps, U, thr, d, done,
                                  bhead, pool_v, pool_next):
                # Only rounding residue is left (no deficit node): the phase is done.
                if ex.max() > 100 * thr:
                    return NO_SINK, phases, pushes, relabels, updates
                head = tail
            updates += 1
        since = 0
        while head != tail:
            v = queue[head]
            head += 1
            if head == n + 1:
                head = 0
            inq[v] = False
            while ex[v] > thr:
                k = cur[v]
                end = start[v + 1]
                pv = p[v]
                while k < end:
                    e = ae[k]
                    o = ao[k]
                    x = asg[k] * g[e]
                    if x < 0:
                        cost = -ac[k]
                        cap = -x
                    else:
                        cost = ac[k]
                        cap = U - x
                    # Admissible below -eps / 2, not 0: rounding could otherwise make an arc
                    # and its reverse both look admissible and bounce the excess forever.
                    if cap > 0 and cost + pv - p[o] < -0.5 * eps:
                        dl = min(ex[v], cap)
                        g[e] += asg[k] * dl
                        ex[v] -= dl
                        ex[o] += dl
                        pushes += 1
                        if ex[o] > thr and not inq[o]:
                            queue[tail] = o
                            tail += 1
                            if tail == n + 1:
                                tail = 0
                            inq[o] = True
                        if ex[v] <= thr:
                            break
                    k += 1
                cur[v] = k
                if ex[v] <= thr:
                    break
                best = -np.inf
                for k in range(start[v], end):
                    x = asg[k] * g[ae[k]]
                    if x < 0:
                        val = p[ao[k]] + ac[k]
                    elif U - x > 0:
                        val = p[ao[k]] - ac[k]
                    else:
                        continue
                    if val > best:
                        best = val
                p[v] = best - eps
                cur[v] = start[v]
                relabels += 1
                since += 1
                if since >= gu_every:
                    since = 0
                    if not _global_update(n, start, ae, ao, asg, ac, g, p, ex, eps, U, thr, d,
                                          done, bhead, pool_v, pool_next):
                        if ex.max() > 100 * thr:
                            return NO_SINK, phases, pushes, relabels, updates
                        head = tail
                        break
                    updates += 1
                    for x_ in range(n):
                        cur[x_] = start[x_]
        if eps <= eps_min:
            break
        eps = max(eps / alpha, eps_min)
    return OK, phases, pushes, relabels, updates


def _levels(f):
    levels = [f]
    while levels[-1].size > E._EUCLID_COMPLETE_CELLS:
        levels.append(E._halve(levels[-1]))
    return levels


def _add_violations(u, w, c, pi, gv, R, C):
    s, t = E._euclid_violations(pi, gv, R, C)
    (sr, sc), (tr, tc) = np.divmod(s, C), np.divmod(t, C)
    cn = np.hypot(sr - tr, sc - tc)
    return s, t, cn, np.concatenate([u, s]), np.concatenate([w, t]), np.concatenate([c, cn])


def _simplex_rounds(g, coarse_shape, sol, tree=None):
    """One level the package's way (column generation, network simplex); ``tree`` replaces the
    lifted start tree. Returns the certified value, the solution and the round count."""
    R, C = g.shape
    gv = np.ascontiguousarray(g.ravel())
    u, w, c, lifted = E._euclid_start(g.shape, coarse_shape, sol, gv)
    tree = lifted if tree is None else tree
    first, rounds = 0, 0
    while True:
        rounds += 1
        sol = E._simplex(u, w, c, gv, tree, E._EUCLID_TOL, first, E._EUCLID_CAND_LIST,
                         E._EUCLID_DEFER, E._EUCLID_MAX_DEFER)
        s, _, _, u2, w2, c2 = _add_violations(u, w, c, sol.pi, gv, R, C)
        if s.size == 0:
            return E._certify(sol, gv, E._EUCLID_TOL), sol, rounds
        first, u, w, c, tree = u.size, u2, w2, c2, sol.tree


def _coarse(levels):
    sol = None
    for k in range(len(levels) - 1, 0, -1):
        shape = levels[k + 1].shape if k + 1 < len(levels) else None
        _, sol, _ = _simplex_rounds(levels[k], shape, sol)
    return sol


def _lift_prices(pi_c, coarse_shape, fine_shape):
    """Coarse potentials (coarse cell units) interpolated bilinearly at the fine cell centres."""
    R, C = fine_shape
    r, c = np.divmod(np.arange(R * C), C)
    return 2.0 * map_coordinates(pi_c.reshape(coarse_shape), [r / 2 - 0.25, c / 2 - 0.25],
                                 order=1, mode="nearest")


def _support_tree(n, u, w, c, flow):
    """Spanning tree of the edge set: the largest flows first, then the shortest edges."""
    ag = np.abs(flow)
    wgt = np.where(ag > 0, 2.0 - ag / ag.max(), 3.0 + c)
    lo, hi = np.minimum(u, w), np.maximum(u, w)
    T = minimum_spanning_tree(coo_matrix((wgt, (lo, hi)), shape=(n, n)).tocsr()).tocoo()
    keys = lo * n + hi
    order = np.argsort(keys)
    r, q = T.row.astype(np.int64), T.col.astype(np.int64)
    return order[np.searchsorted(keys[order], np.minimum(r, q) * n + np.maximum(r, q))]


def _cs_phase(levels, sol, eps, gu):
    """One cost-scaling phase at ``eps`` on the finest level's first-round edges."""
    g = levels[0]
    gv = np.ascontiguousarray(g.ravel())
    u, w, c, _ = E._euclid_start(g.shape, levels[1].shape, sol, gv)
    p = _lift_prices(sol.pi, levels[1].shape, g.shape)
    flow = np.zeros(u.size)
    st = cost_scaling(gv.size, u, w, c, gv, flow, p, eps, eps, 10.0, 1e-13 * np.abs(gv).sum(),
                      gu)
    if st[0] != OK:
        raise RuntimeError(f"cost scaling failed: {st}")
    return u, w, c, flow, st


def _cs_full(levels, sol, gu, eps_start=1e-2, eps_min=1e-10, alpha=100.0):
    """The finest level by cost scaling alone, with the same column generation and check."""
    g = levels[0]
    R, C = g.shape
    gv = np.ascontiguousarray(g.ravel())
    u, w, c, _ = E._euclid_start(g.shape, levels[1].shape, sol, gv)
    p = _lift_prices(sol.pi, levels[1].shape, g.shape)
    eps = min(max(float((np.abs(p[u] - p[w]) - c).max()), eps_min), eps_start)
    flow = np.zeros(u.size)
    rounds, ops = 0, 0
    while True:
        rounds += 1
        st = cost_scaling(gv.size, u, w, c, gv, flow, p, eps, eps_min, alpha,
                          1e-13 * np.abs(gv).sum(), gu)
        if st[0] != OK:
            raise RuntimeError(f"cost scaling failed: {st}")
        ops += st[2] + st[3]
        s, t, cn, u, w, c = _add_violations(u, w, c, p, gv, R, C)
        if s.size == 0:
            break
        eps = min(max(float((p[t] - p[s] - cn).max()), eps_min), eps_start)
        flow = np.concatenate([flow, np.zeros(s.size)])
    both = np.concatenate([np.maximum(flow, 0), np.maximum(-flow, 0)])
    return E._certify(E._Flow(u, w, c, both, p, None), gv, E._EUCLID_TOL), rounds, ops


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=int, default=256)
    ap.add_argument("--mode", choices=["phase", "finest", "full"], default="phase")
    ap.add_argument("--eps", type=float, nargs="+", default=[0.1, 0.03, 0.01])
    ap.add_argument("--gu", type=float, default=0.5,
                    help="global price update after every gu * n relabels")
    ap.add_argument("--repeats", type=int, default=1)
    args = ap.parse_args()
    n = args.size
    rng = np.random.default_rng(0)
    p, q = sparse_map(n, rng), sparse_map(n, rng)
    levels = _levels(p / p.sum() - q / q.sum())

    w0 = time.perf_counter()
    f16 = np.random.default_rng(1).random((16, 16))
    small = _levels(f16 - f16.mean())
    s0 = _coarse(small)
    u, w, c, flow, _ = _cs_phase(small, s0, 0.01, args.gu)
    _simplex_rounds(small[0], small[1].shape, s0, _support_tree(small[0].size, u, w, c, flow))
    _cs_full(small, s0, args.gu)
    print(f"compile / cache load: {time.perf_counter() - w0:.1f} s")

    t0 = time.process_time()
    sol = _coarse(levels)
    print(f"{n} x {n}: coarser levels {time.process_time() - t0:.2f} s CPU")
    gv = np.ascontiguousarray(levels[0].ravel())
    for _ in range(args.repeats):
        if args.mode == "phase":
            t0 = time.process_time()
            u, w, c, tree = E._euclid_start(levels[0].shape, levels[1].shape, sol, gv)
            ref = E._simplex(u, w, c, gv, tree, E._EUCLID_TOL, 0, E._EUCLID_CAND_LIST,
                             E._EUCLID_DEFER, E._EUCLID_MAX_DEFER)
            opt = float(ref.cost @ (ref.flow[:u.size] + ref.flow[u.size:]))
            print(f"  first round, simplex from the lifted tree: "
                  f"{time.process_time() - t0:.2f} s CPU, cost {opt:.12f}")
            for eps in args.eps:
                t0 = time.process_time()
                u, w, c, flow, st = _cs_phase(levels, sol, eps, args.gu)
                t1 = time.process_time()
                tree = _support_tree(gv.size, u, w, c, flow)
                t2 = time.process_time()
                hyb = E._simplex(u, w, c, gv, tree, E._EUCLID_TOL, 0, E._EUCLID_CAND_LIST,
                                 E._EUCLID_DEFER, E._EUCLID_MAX_DEFER)
                t3 = time.process_time()
                val = float(hyb.cost @ (hyb.flow[:u.size] + hyb.flow[u.size:]))
                print(f"  eps {eps:g}: cost-scaling phase {t1 - t0:.2f} s CPU ({st[2]} pushes, "
                      f"{st[3]} relabels, {st[4]} global updates; flow cost "
                      f"{float(c @ np.abs(flow)) / opt - 1:.1e} rel above), support tree "
                      f"{t2 - t1:.2f} s, simplex from it {t3 - t2:.2f} s; hybrid total "
                      f"{t3 - t0:.2f} s, value rel diff {abs(val - opt) / opt:.1e}", flush=True)
        elif args.mode == "finest":
            t0 = time.process_time()
            v0, _, r0 = _simplex_rounds(levels[0], levels[1].shape, sol)
            print(f"  finest level, package: {time.process_time() - t0:.2f} s CPU, {r0} rounds, "
                  f"EMD {v0 / n:.15f}", flush=True)
            for eps in args.eps:
                t0 = time.process_time()
                u, w, c, flow, _ = _cs_phase(levels, sol, eps, args.gu)
                tree = _support_tree(gv.size, u, w, c, flow)
                v1, _, r1 = _simplex_rounds(levels[0], levels[1].shape, sol, tree)
                print(f"  finest level, first start tree from a phase at eps {eps:g}: "
                      f"{time.process_time() - t0:.2f} s CPU, {r1} rounds, EMD {v1 / n:.15f}",
                      flush=True)
        else:
            t0 = time.process_time()
            v0, _, r0 = _simplex_rounds(levels[0], levels[1].shape, sol)
            t1 = time.process_time()
            v1, r1, ops = _cs_full(levels, sol, args.gu)
            t2 = time.process_time()
            print(f"  finest level: network simplex {t1 - t0:.2f} s CPU ({r0} rounds), cost "
                  f"scaling {t2 - t1:.2f} s CPU ({r1} rounds, {ops} pushes + relabels); EMD "
                  f"{v0 / n:.15f} vs {v1 / n:.15f}, rel diff {abs(v1 - v0) / v0:.1e}",
                  flush=True)


if __name__ == "__main__":
    main()
