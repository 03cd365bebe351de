"""mdp.emd: exact EMD against POT's dense solver, scipy and linear programming."""

import numpy as np
import ot
import pytest
from scipy.optimize import linprog
from scipy.stats import wasserstein_distance

from mdp.emd import (
    GridEMDTuning,
    block_sum,
    emd,
    emd_1d,
    emd_downsampled,
    emd_grid,
    grid_l1_cost,
)
from mdp.emd import grid as grid_module
from mdp.emd import network_simplex as kernels
from mdp.emd.grid import _certify, _emd_grid_l1, _prune_edges, _simplex
from mdp.errors import ParameterError, SolverError

CERT_RTOL = GridEMDTuning().cert_rtol


def _grid_xy(r, c):
    rr, cc = np.meshgrid(np.arange(r), np.arange(c), indexing="ij")
    return np.column_stack([rr.ravel(), cc.ravel()]).astype(float)


def _lp_emd(a, b, C):
    """Transport LP solved by HiGHS: an independent check of POT."""
    n = a.size
    A_eq = np.vstack([np.kron(np.eye(n), np.ones(n)), np.kron(np.ones(n), np.eye(n))])
    res = linprog(C.ravel(), A_eq=A_eq, b_eq=np.concatenate([a, b]), bounds=(0, None), method="highs")
    return res.fun


@pytest.mark.parametrize("n", [16, 32])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_emd_grid_l1_equals_dense_pot(n, seed):
    rng = np.random.default_rng(seed)
    p, q = rng.random((n, n)), rng.random((n, n))
    # Sparse maps too: many zero cells are the heatmap case.
    p[rng.random((n, n)) < 0.5] = 0
    xy = _grid_xy(n, n)
    dense = ot.emd2(p.ravel() / p.sum(), q.ravel() / q.sum(), ot.dist(xy, xy, metric="cityblock"),
                    numItermax=10**8)
    assert emd_grid(p, q) == pytest.approx(dense, rel=1e-9)


def test_emd_grid_rectangular_and_cell_size():
    rng = np.random.default_rng(5)
    p, q = rng.random((6, 11)), rng.random((6, 11))
    xy = _grid_xy(6, 11)
    dense = ot.emd2(p.ravel() / p.sum(), q.ravel() / q.sum(), ot.dist(xy, xy, metric="cityblock"))
    assert emd_grid(p, q, cell_size=0.25) == pytest.approx(0.25 * dense, rel=1e-9)


def test_emd_grid_closed_forms():
    p = np.zeros((8, 8))
    q = np.zeros((8, 8))
    p[0, 0] = q[3, 5] = 1
    assert emd_grid(p, q) == pytest.approx(8.0)
    assert emd_grid(p, q, ground="euclidean") == pytest.approx(np.sqrt(34.0))
    assert emd_grid(p, p) == 0.0
    # A single row is a 1-D problem: compare with the cumulative-sum closed form.
    rng = np.random.default_rng(3)
    u, v = rng.random(40), rng.random(40)
    assert emd_grid(u[None, :], v[None, :]) == pytest.approx(emd_1d(u, v), rel=1e-9)


def test_emd_grid_euclidean_matches_linprog():
    rng = np.random.default_rng(7)
    p, q = rng.random((4, 4)), rng.random((4, 4))
    xy = _grid_xy(4, 4)
    C = np.sqrt(((xy[:, None] - xy[None]) ** 2).sum(-1))
    ref = _lp_emd(p.ravel() / p.sum(), q.ravel() / q.sum(), C)
    assert emd_grid(p, q, ground="euclidean") == pytest.approx(ref, rel=1e-7)


def test_emd_general_matches_linprog():
    rng = np.random.default_rng(11)
    a, b, C = rng.random(9), rng.random(9), rng.random((9, 9)) * 5
    ref = _lp_emd(a / a.sum(), b / b.sum(), C)
    assert emd(a, b, C) == pytest.approx(ref, rel=1e-7)


@pytest.mark.parametrize("seed", range(4))
def test_emd_1d_equals_scipy(seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=25)
    p, q = rng.random(25), rng.random(25)
    ref = wasserstein_distance(x, x, u_weights=p, v_weights=q)
    assert emd_1d(p, q, positions=x) == pytest.approx(ref, rel=1e-12)
    ref_idx = wasserstein_distance(np.arange(25), np.arange(25), u_weights=p, v_weights=q)
    assert emd_1d(p, q) == pytest.approx(ref_idx, rel=1e-12)


def test_mass_rules():
    rng = np.random.default_rng(2)
    p, q = rng.random((5, 5)), rng.random((5, 5))
    # normalize=True: scale invariant (compared as distributions).
    assert emd_grid(3 * p, q) == pytest.approx(emd_grid(p, 7 * q), rel=1e-12)
    # normalize=False: equal masses are required, and the cost scales with the mass.
    qq = q * p.sum() / q.sum()
    assert emd_grid(p, qq, normalize=False) == pytest.approx(p.sum() * emd_grid(p, q), rel=1e-9)
    with pytest.raises(ValueError, match="equal mass"):
        emd_grid(p, 2 * qq, normalize=False)
    with pytest.raises(ValueError, match="equal mass"):
        emd(p.ravel(), 2 * qq.ravel(), np.ones((25, 25)), normalize=False)


@pytest.mark.parametrize("bad, match", [
    (np.full((3, 3), -1.0), "non-negative"),
    (np.zeros((3, 3)), "positive mass"),
    (np.full((3, 3), np.nan), "finite"),
    (np.ones((3, 4)), "same shape"),
    (np.ones(9), "2-D"),
])
def test_emd_grid_rejects_bad_input(bad, match):
    with pytest.raises(ValueError, match=match):
        emd_grid(bad, np.ones((3, 3)))


def test_emd_grid_rejects_bad_ground_and_cost():
    with pytest.raises(ValueError, match="ground"):
        emd_grid(np.ones((2, 2)), np.ones((2, 2)), ground="l2")
    with pytest.raises(ValueError, match="cost must have shape"):
        emd(np.ones(3), np.ones(3), np.ones((2, 2)))
    with pytest.raises(ValueError, match="cost must be finite"):
        emd(np.ones(2), np.ones(2), -np.ones((2, 2)))
    with pytest.raises(ValueError, match="cell_size"):
        emd_grid(np.ones((2, 2)), np.ones((2, 2)), cell_size=0)


def test_grid_cost_structure():
    M = grid_l1_cost(3, 4)
    # 12 self arcs (stored zeros) + 2 * (3*3 + 2*4) neighbour arcs.
    assert M.nnz == 12 + 2 * 17
    assert np.count_nonzero(M.data == 0) == 12


def test_block_sum_and_downsampled():
    rng = np.random.default_rng(4)
    p = rng.random((10, 7))
    b = block_sum(p, 4)
    assert b.shape == (3, 2)
    assert b.sum() == pytest.approx(p.sum())
    assert b[0, 0] == pytest.approx(p[:4, :4].sum())
    assert b[2, 1] == pytest.approx(p[8:, 4:].sum())
    q = rng.random((10, 7))
    assert emd_downsampled(p, q, factor=1) == pytest.approx(emd_grid(p, q, ground="euclidean"))
    assert emd_downsampled(p, q, factor=2, ground="l1") == pytest.approx(
        emd_grid(block_sum(p, 2), block_sum(q, 2)))


def _dense(p, q, metric):
    xy = _grid_xy(*p.shape)
    return ot.emd2(p.ravel() / p.sum(), q.ravel() / q.sum(), ot.dist(xy, xy, metric=metric),
                   numItermax=10**8)


@pytest.mark.parametrize("ground, metric", [("l1", "cityblock"), ("euclidean", "euclidean")])
@pytest.mark.parametrize("shape", [(1, 9), (7, 1), (2, 2), (5, 7), (9, 9), (13, 20), (24, 24)])
@pytest.mark.parametrize("seed", [0, 1])
def test_emd_grid_equals_dense_pot_both_costs(ground, metric, shape, seed):
    # Shapes above 64 cells run the multiscale levels (and, for Euclidean, column generation);
    # odd sides exercise the 1-wide blocks of the coarsening.
    rng = np.random.default_rng(seed)
    p, q = rng.random(shape), rng.random(shape)
    p[rng.random(shape) < 0.4] = 0
    p[0, 0] += 0.1
    value = emd_grid(p, q, ground=ground)
    assert value == pytest.approx(_dense(p, q, metric), rel=1e-12)
    # Symmetric in its arguments.
    assert emd_grid(q, p, ground=ground) == pytest.approx(value, rel=1e-12)


@pytest.mark.parametrize("ground", ["l1", "euclidean"])
def test_emd_grid_heatmap_like_maps_equal_dense(ground):
    # Smooth blobs far apart: long transport rays, the hard case for the Euclidean check.
    r, c = np.meshgrid(np.arange(30), np.arange(30), indexing="ij")
    p = np.exp(-((r - 5) ** 2 + (c - 6) ** 2) / 8) + np.exp(-((r - 22) ** 2 + (c - 3) ** 2) / 5)
    q = np.exp(-((r - 25) ** 2 + (c - 24) ** 2) / 12) + 1e-3
    metric = "cityblock" if ground == "l1" else "euclidean"
    assert emd_grid(p, q, ground=ground) == pytest.approx(_dense(p, q, metric), rel=1e-12)


@pytest.mark.parametrize("a, b", [(0, 1), (3, 0), (2, 5), (-4, 3), (7, -7), (-6, -1)])
@pytest.mark.parametrize("mass", [1.0, 2.5])
def test_emd_grid_single_mass_moved(a, b, mass):
    p, q = np.zeros((15, 16)), np.zeros((15, 16))
    p[7, 7] = q[7 + a, 7 + b] = mass
    assert emd_grid(p, q, normalize=False) == pytest.approx(mass * (abs(a) + abs(b)), rel=1e-12)
    assert emd_grid(p, q, "euclidean", normalize=False) == pytest.approx(
        mass * np.hypot(a, b), rel=1e-12)


@pytest.mark.parametrize("ground", ["l1", "euclidean"])
def test_emd_grid_translation_closed_form(ground):
    # Moving a whole map by (dr, dc) costs the shift's length, for any map (a lower bound by
    # the mean's displacement, attained by the shift itself).
    rng = np.random.default_rng(8)
    p = np.zeros((20, 20))
    p[2:12, 1:9] = rng.random((10, 8))
    q = np.roll(np.roll(p, 6, axis=0), 9, axis=1)
    expected = 15.0 if ground == "l1" else np.hypot(6, 9)
    assert emd_grid(p, q, ground=ground) == pytest.approx(expected, rel=1e-12)


def test_emd_grid_l1_matches_linprog():
    rng = np.random.default_rng(9)
    p, q = rng.random((4, 5)), rng.random((4, 5))
    xy = _grid_xy(4, 5)
    C = np.abs(xy[:, None] - xy[None]).sum(-1)
    ref = _lp_emd(p.ravel() / p.sum(), q.ravel() / q.sum(), C)
    assert emd_grid(p, q) == pytest.approx(ref, rel=1e-7)


def test_emd_grid_l1_matches_previous_bipartite_formulation():
    # The formulation emd_grid used before (POT sparse simplex, pass-through mass): an
    # independent solver on a grid too large for a dense cost matrix in a unit test.
    rng = np.random.default_rng(10)
    p, q = rng.random((60, 60)) ** 4, rng.random((60, 60)) ** 4
    d = (p / p.sum() - q / q.sum()).ravel()
    pos, neg = np.maximum(d, 0), np.maximum(-d, 0)
    tv = pos.sum()
    neg *= tv / neg.sum()
    ref = ot.emd2(pos + tv, neg + tv, grid_l1_cost(60, 60), numItermax=2**62)
    assert emd_grid(p, q) == pytest.approx(ref, rel=1e-9)


@pytest.mark.parametrize("n, first_arc, cand_list, defer, max_defer, relabel", [
    (12, 0, 0, 0.0, 0, 0.0),
    (40, 0, 0, 0.0, 0, 0.0),
    # Pricing from another arc, the candidate list and passing over big cuts change the path of
    # the simplex, never its optimum; nor does renumbering the nodes (here after almost every
    # pivot).
    (40, 77, 5, 0.1, 3, 0.0),
    (40, 0, 300, 0.0, 50, 0.0),
    (40, 0, 300, 0.1, 3, 1e-3),
])
def test_network_simplex_kernel_matches_linprog(n, first_arc, cand_list, defer, max_defer,
                                                relabel):
    # The kernel on a random non-grid graph with real costs: an independent LP (HiGHS) check.
    rng = np.random.default_rng(12)
    u, w = np.triu_indices(n, 1)
    keep = rng.random(u.size) < 0.5
    keep[:n - 1] = True  # contains the path 0-1, 0-2, ... so the graph is connected
    u, w = u[keep], w[keep]
    cost = rng.random(u.size) * 3
    f = rng.random(n) - 0.5
    f -= f.mean()
    tree = np.arange(n - 1)  # edges (0, 1), ..., (0, n-1): a star, a spanning tree
    sol = _simplex(u, w, cost, f, tree, 1e-12, first_arc, cand_list, defer, max_defer, relabel)
    src, dst = np.concatenate([u, w]), np.concatenate([w, u])
    A = np.zeros((n, src.size))
    A[src, np.arange(src.size)] += 1
    A[dst, np.arange(src.size)] -= 1
    ref = linprog(np.concatenate([cost, cost]), A_eq=A, b_eq=f, bounds=(0, None), method="highs")
    assert _certify(sol, f, 1e-9, CERT_RTOL) == pytest.approx(ref.fun, rel=1e-9)


def test_network_simplex_renumbering_changes_no_pivot():
    # Renumbering the nodes in tree order (the cache layout) must leave every pivot, hence the
    # flows, potentials and tree, bit for bit as without it, in the caller's numbering.
    rng = np.random.default_rng(15)
    n = 300
    u, w = np.triu_indices(n, 1)
    keep = rng.random(u.size) < 0.1
    keep[:n - 1] = True
    u, w = u[keep], w[keep]
    cost = rng.random(u.size) * 3
    f = rng.random(n) - 0.5
    f -= f.mean()
    args = (u, w, cost, f, np.arange(n - 1), 1e-12, 0, 300, 0.1, 3)
    plain = kernels.network_simplex(*args, 0.0)
    renumbered = kernels.network_simplex(*args, 1e-4)
    assert plain[3] == renumbered[3] == kernels.OPTIMAL
    assert plain[4] == renumbered[4] > n
    for a, b in zip(plain[:3], renumbered[:3], strict=True):
        np.testing.assert_array_equal(a, b)


def _violations_brute_force(pi, f, R, C):
    xy = _grid_xy(R, C)
    D = np.sqrt(((xy[:, None] - xy[None]) ** 2).sum(-1))
    V = pi[None, :] - pi[:, None] - D  # V[s, t]
    V[:, f >= 0] = -np.inf
    V[f <= 0, :] = -np.inf
    return V


def _assert_top_k_match(best_t, exc_t, best_s, exc_s, V, K):
    """The check's top-K lists in both directions equal the brute force's (``V[s, t]``)."""
    for got, exc, W in ((best_t, exc_t, V), (best_s, exc_s, V.T)):
        for x in range(W.shape[0]):
            order = np.argsort(-W[x], kind="stable")[:K]
            ref = [y for y in order if W[x, y] > 1e-9]
            assert list(got[x][got[x] >= 0]) == ref
            assert np.allclose(exc[x][:len(ref)], W[x, ref])


def test_pair_violations_match_brute_force():
    rng = np.random.default_rng(13)
    R, C = 11, 9
    f = rng.normal(size=R * C)
    pi = rng.normal(scale=4, size=R * C)
    best_t, excess, _, _, _ = kernels.pair_violations_both(pi, f, R, C, 4, 1e-9, 1)
    best_t, excess = best_t[:, 0], excess[:, 0]
    V = _violations_brute_force(pi, f, R, C)
    ref = np.where(V.max(1) > 1e-9, V.argmax(1), -1)
    assert np.array_equal(best_t, ref)
    assert np.allclose(excess[ref >= 0], V.max(1)[ref >= 0])


@pytest.mark.parametrize("R, C, B, K", [(11, 9, 4, 3), (17, 6, 8, 2), (5, 23, 3, 5)])
def test_pair_violations_top_k_both_directions_match_brute_force(R, C, B, K):
    # Zero cells (neither supply nor demand) and tiles cut by the grid's border included.
    rng = np.random.default_rng(R * C + K)
    f = rng.normal(size=R * C)
    f[rng.random(R * C) < 0.3] = 0
    pi = rng.normal(scale=4, size=R * C)
    best_t, exc_t, best_s, exc_s, _ = kernels.pair_violations_both(pi, f, R, C, B, 1e-9, K)
    V = _violations_brute_force(pi, f, R, C)
    _assert_top_k_match(best_t, exc_t, best_s, exc_s, V, K)


@pytest.mark.parametrize("R, C, B", [(40, 37, 8), (33, 50, 4)])
def test_pair_violations_direction_bound_on_near_tight_potentials(R, C, B):
    # Potentials like a solve's: the distance to a point (1-Lipschitz, tight along every ray from
    # it) plus small perturbations, so many pairs are nearly tight and a few violated. The
    # direction bound must skip tile pairs the distance bound keeps, and the result must still
    # be the brute force's.
    rng = np.random.default_rng(R + C)
    xy = _grid_xy(R, C)
    pi = np.hypot(*(xy - [3.5, -2.0]).T) + rng.normal(scale=0.05, size=R * C) * (
        rng.random(R * C) < 0.2)
    f = rng.normal(size=R * C)
    K = 3
    best_t, exc_t, best_s, exc_s, checked = kernels.pair_violations_both(
        pi, f, R, C, B, 1e-9, K)
    V = _violations_brute_force(pi, f, R, C)
    assert (V > 1e-9).any()
    _assert_top_k_match(best_t, exc_t, best_s, exc_s, V, K)
    # Tile pairs the distance bound alone keeps.
    tile = (xy[:, 0] // B) * ((C + B - 1) // B) + xy[:, 1] // B
    kept = 0
    for ts in np.unique(tile[f > 0]):
        for tt in np.unique(tile[f < 0]):
            S, T = (tile == ts) & (f > 0), (tile == tt) & (f < 0)
            lo = np.maximum(0, np.maximum(xy[T].min(0) - xy[S].max(0), xy[S].min(0) - xy[T].max(0)))
            kept += pi[T].max() - pi[S].min() > np.hypot(*lo) + 0.5e-9
    assert checked < 0.8 * kept


@pytest.mark.parametrize("R, C", [(8, 8), (9, 13), (16, 5)])
def test_lift_euclid_tree_spans_and_keeps_coarse_flows(R, C):
    # The lifted tree must be a spanning tree whose forced flows carry each coarse tree edge's
    # flow across the two blocks unchanged, and whose in-block part is the cheapest of all
    # spanning trees of the block's cells.
    from mdp.emd.grid import _euclid_start, _halve

    rng = np.random.default_rng(R + C)
    f = rng.random((R, C)) - rng.random((R, C))
    f -= f.mean()
    g = _halve(f)
    u, w, c, tree = _euclid_start(g.shape, None, None, g.ravel())
    coarse = _simplex(u, w, c, g.ravel(), tree, GridEMDTuning().euclid_tol)
    ct = coarse.tree
    cflow = coarse.flow[ct] - coarse.flow[ct + coarse.u.size]
    tu, tw = kernels.lift_euclid_tree(*g.shape, R, C, coarse.u[ct], coarse.w[ct], cflow,
                                          f.ravel())
    assert tu.size == R * C - 1
    parent = np.arange(R * C)

    def root(x):
        while parent[x] != x:
            x = parent[x]
        return x

    for a, b in zip(tu, tw, strict=True):
        ra, rb = root(a), root(b)
        assert ra != rb
        parent[ra] = rb
    # Forced flows of the lifted tree (no pivot: entering tolerance infinite).
    fine = _simplex(tu, tw, np.hypot(*np.subtract(np.divmod(tu, C), np.divmod(tw, C))),
                    f.ravel(), np.arange(tu.size), np.inf)
    flow = fine.flow[:tu.size] - fine.flow[tu.size:]
    Cc = g.shape[1]
    block = lambda x: (x // C // 2) * Cc + (x % C) // 2  # noqa: E731
    between = block(tu) != block(tw)
    assert between.sum() == ct.size
    lifted = {(block(a), block(b)): fl for a, b, fl in
              zip(tu[between], tw[between], flow[between], strict=True)}
    for a, b, fl in zip(coarse.u[ct], coarse.w[ct], cflow, strict=True):
        assert lifted[(a, b)] == pytest.approx(fl, abs=1e-12)


def test_emd_grid_euclidean_sparse_and_rectangular_maps_equal_dense():
    # Many zero cells (most cells are transshipment-only nodes) on rectangular grids large
    # enough for three levels and several column-generation rounds.
    rng = np.random.default_rng(21)
    for shape in ((40, 27), (33, 48)):
        p, q = np.zeros(shape), np.zeros(shape)
        for h in (p, q):
            h.ravel()[rng.choice(h.size, 40, replace=False)] = rng.random(40)
        assert emd_grid(p, q, ground="euclidean") == pytest.approx(
            _dense(p, q, "euclidean"), rel=1e-12)


def test_prune_edges_keeps_tree_and_near_tight_edges():
    # Edges with reduced cost above the slack in both directions go; tree edges stay whatever
    # their reduced cost, and the tree's ids follow the kept edges.
    rng = np.random.default_rng(31)
    n, m = 30, 200
    u, w = rng.integers(0, n, m), rng.integers(0, n, m)
    c = rng.random(m) * 3
    pi = rng.random(n) * 3
    tree = rng.choice(m, 12, replace=False)
    nu, nw, nc, ntree = _prune_edges(u, w, c, pi, tree, 0.3)
    expected = (c - np.abs(pi[u] - pi[w]) <= 0.3)
    expected[tree] = True
    assert 0 < nu.size == expected.sum() < m
    np.testing.assert_array_equal(nu, u[expected])
    np.testing.assert_array_equal(nw, w[expected])
    np.testing.assert_array_equal(nc, c[expected])
    np.testing.assert_array_equal(nu[ntree], u[tree])
    np.testing.assert_array_equal(nw[ntree], w[tree])


def test_emd_grid_euclidean_with_and_without_pruning_equal_dense(monkeypatch):
    # A map that needs several column-generation rounds: pruning must drop edges there (else
    # this test checks nothing) and the value must not depend on it.
    rng = np.random.default_rng(22)
    p, q = np.zeros((40, 36)), np.zeros((40, 36))
    for h in (p, q):
        h.ravel()[rng.choice(h.size, 60, replace=False)] = rng.random(60)
    ref = _dense(p, q, "euclidean")
    sizes = []
    real = grid_module._prune_edges

    def spy(u, *args):
        out = real(u, *args)
        sizes.append((u.size, out[0].size))
        return out

    monkeypatch.setattr(grid_module, "_prune_edges", spy)
    assert emd_grid(p, q, ground="euclidean") == pytest.approx(ref, rel=1e-12)
    assert any(after < before for before, after in sizes)
    sizes.clear()
    no_pruning = GridEMDTuning(prune_rounds=0)
    assert emd_grid(p, q, ground="euclidean", tuning=no_pruning) == pytest.approx(ref, rel=1e-12)
    assert sizes == []

def test_certificate_rejects_non_optimal_solutions():
    rng = np.random.default_rng(14)
    p, q = rng.random((6, 6)), rng.random((6, 6))
    f = (p / p.sum() - q / q.sum()).ravel()
    idx = np.arange(36).reshape(6, 6)
    u = np.concatenate([idx[:, :-1].ravel(), idx[:-1, :].ravel()])
    w = np.concatenate([idx[:, 1:].ravel(), idx[1:, :].ravel()])
    tree = kernels.lift_grid_tree(3, 3, _lift_path(3, 3), 6, 6)
    sol = _simplex(u, w, np.ones(u.size), f, tree, 0.5)
    assert _certify(sol, f, 0.0, CERT_RTOL) == pytest.approx(_emd_grid_l1(f.reshape(6, 6), GridEMDTuning()), rel=1e-12)
    bad_dual = type(sol)(**{**sol.__dict__, "pi": np.zeros(36)})
    with pytest.raises(SolverError, match="certificate"):
        _certify(bad_dual, f, 0.0, CERT_RTOL)
    bad_flow = type(sol)(**{**sol.__dict__, "flow": sol.flow * 1.01})
    with pytest.raises(SolverError, match="certificate"):
        _certify(bad_flow, f, 0.0, CERT_RTOL)


def _lift_path(R, C):
    """Edge ids of the comb tree (every horizontal edge, first column) of an R x C grid."""
    H = R * (C - 1)
    return np.concatenate([np.arange(H), H + np.arange(R - 1) * C]).astype(np.int64)


@pytest.mark.parametrize("p, q, name, match", [
    (np.ones((3, 3)), 2 * np.ones((3, 3)), "normalize", "equal mass"),
    (-np.ones((3, 3)), np.ones((3, 3)), "p", "non-negative"),
    (np.ones((3, 3)), np.full((3, 3), np.nan), "q", "finite"),
    (np.ones((3, 3)), np.ones((3, 4)), "p and q", "same shape"),
])
@pytest.mark.parametrize("ground", ["l1", "euclidean"])
def test_emd_grid_parameter_errors(p, q, name, match, ground):
    with pytest.raises(ParameterError, match=match) as info:
        emd_grid(p, q, ground=ground, normalize=False)
    assert name in str(info.value)
