"""Nested dissection (mdp.lp.dissection) and the column-block method's block inverses along it,
against dense algebra and an independent LP solver."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mdp.lp import LPError, set_threads
from mdp.lp.dissection import Dissection, nested_dissection
from mdp.spaces.metric_space import MetricSpace
from mdp.worst_case import column_blocks as cb
from mdp.worst_case.block_kernels import unpack_symmetric
from mdp.worst_case.column_blocks import ColumnBlockLP, solve_worst_case_blocks
from tests.mdp.worst_case.test_column_blocks import (
    SPACES,
    dense_blocks,
    solve_against_linprog,
    spanner_pairs,
)

#: small leaves and any gain: the blocks are inverted along the dissection
ALONG = cb.BlockResources(leaf_size=4, dissection_gain=1.0)


def check_tree(tree: Dissection, n: int, pu: np.ndarray, pv: np.ndarray) -> None:
    assert sorted(tree.order.tolist()) == list(range(n))
    pos = np.empty(n, dtype=int)
    pos[tree.order] = np.arange(n)
    a, b = pos[pu], pos[pv]
    root = tree.nodes[-1]
    assert (root.start, root.stop) == (0, n)
    seen = set()
    for node in tree.nodes:
        assert node.start <= node.mid <= node.sep <= node.stop
        if node.leaf:
            seen.add((node.start, node.stop))
            continue
        # children come first (post-order), and no pair joins the two halves
        assert (node.start, node.mid) in seen and (node.mid, node.sep) in seen
        seen.add((node.start, node.stop))
        left = (a >= node.start) & (a < node.mid)
        right = (b >= node.mid) & (b < node.sep)
        assert not np.any(left & right)
        # the boundary: exactly the points below the node paired with its separator
        below = (a >= node.start) & (a < node.sep) & (b >= node.sep) & (b < node.stop)
        assert sorted(node.boundary.tolist()) == sorted(set((a[below] - node.start).tolist()))


@settings(max_examples=25, deadline=None)
@given(n=st.integers(2, 90), leaf=st.integers(2, 12), seed=st.integers(0, 10 ** 6))
def test_dissection_of_random_spanners_is_a_valid_tree(n, leaf, seed):
    pts = np.random.default_rng(seed).random((n, 2))
    D = MetricSpace.from_points(pts).distances
    pu, pv = spanner_pairs(D)
    tree = nested_dissection(n, pu, pv, leaf_size=leaf)
    check_tree(tree, n, pu, pv)
    assert tree.flops() > 0


def test_dissection_of_a_grid_and_of_disconnected_points():
    side = 12
    g = np.arange(side, dtype=float)
    D = MetricSpace.from_points(np.stack(np.meshgrid(g, g), -1).reshape(-1, 2)).distances
    pu, pv = np.nonzero(np.isclose(D, 1.0))
    tree = nested_dissection(side * side, pu, pv, leaf_size=8)
    check_tree(tree, side * side, pu, pv)
    # a grid's separators are lines: the root's is at most two grid lines
    root = tree.nodes[-1]
    assert 0 < root.stop - root.sep <= 2 * side
    assert tree.flops() < (side * side) ** 3 / 4
    # two cliques without pairs between them: an empty separator
    pu = np.array([0, 1, 2, 3, 4, 5])
    pv = np.array([1, 2, 0, 4, 5, 3])
    tree = nested_dissection(6, pu, pv, leaf_size=3)
    check_tree(tree, 6, pu, pv)
    assert tree.nodes[-1].stop == tree.nodes[-1].sep


def cliques(sizes):
    """Pairs of disjoint cliques of the given sizes on consecutive points, shuffled."""
    pu, pv, start = [], [], 0
    for k in sizes:
        a, b = np.meshgrid(np.arange(start, start + k), np.arange(start, start + k))
        off = a != b
        pu.append(a[off]), pv.append(b[off])
        start += k
    perm = np.random.default_rng(7).permutation(start)
    return start, perm[np.concatenate(pu)], perm[np.concatenate(pv)]


def test_components_are_split_without_a_separator():
    # cliques of unequal sizes: cutting any of them costs a separator of most of its points
    n, pu, pv = cliques([9, 7, 6, 4, 3, 1])
    tree = nested_dissection(n, pu, pv, leaf_size=9)
    check_tree(tree, n, pu, pv)
    inner = [node for node in tree.nodes if not node.leaf]
    assert inner and all(node.stop == node.sep for node in inner)
    # every clique lies in one leaf, so the tree costs the leaves' dense inverses only
    leaves = [node.stop - node.start for node in tree.nodes if node.leaf]
    assert tree.flops() == sum(float(k) ** 3 for k in leaves)
    assert max(leaves) <= 9 and sum(leaves) == n
    # a connected graph keeps the Fiedler split and a separator
    ring = np.arange(30)
    tree = nested_dissection(30, ring, np.roll(ring, 1), leaf_size=8)
    assert tree.nodes[-1].stop - tree.nodes[-1].sep >= 2


def test_inverses_along_a_tree_of_components_equal_the_dense_inverses():
    n, pu, pv = cliques([9, 7, 6, 4, 3, 1])
    D = MetricSpace.from_points(np.random.default_rng(3).random((n, 2))).distances
    tree = nested_dissection(n, pu, pv, leaf_size=9)
    lp = ColumnBlockLP(D, pu, pv, 0.9).permuted(tree)
    rng = np.random.default_rng(5)
    dB, wx = rng.uniform(0.01, 100, (n, lp.m)), rng.uniform(0.01, 100, (n, n))
    along = cb._BlockFactor(lp, tree)
    along.factor(dB, wx, rng.random(n))
    inv = np.linalg.inv(dense_blocks(lp.D, lp.rj, lp.ri, 0.9, dB, wx))
    for w in range(n):
        assert np.allclose(unpack_symmetric(along.Kinv[w], n), inv[w], rtol=1e-9, atol=1e-15)


@pytest.mark.parametrize("space", SPACES, ids=lambda s: f"n{s.n}")
def test_inverses_along_the_tree_equal_the_dense_inverses(space):
    D, n = space.distances, space.n
    pu, pv = spanner_pairs(D)
    tree = nested_dissection(n, pu, pv, leaf_size=3)
    assert len(tree.nodes) > 1
    pos = np.empty(n, dtype=int)
    pos[tree.order] = np.arange(n)
    Dp, qu, qv = D[np.ix_(tree.order, tree.order)], pos[pu], pos[pv]
    lp = ColumnBlockLP(Dp, qu, qv, 0.9)
    moved = ColumnBlockLP(D, pu, pv, 0.9).permuted(tree)
    assert np.array_equal(tree.positions, pos)
    assert np.array_equal(moved.D, Dp) and np.array_equal(moved.cb, lp.cb)
    assert np.array_equal(moved.ri, lp.ri) and np.array_equal(moved.rj, lp.rj)
    rng = np.random.default_rng(4)
    dB, wx = rng.uniform(0.01, 100, (n, lp.m)), rng.uniform(0.01, 100, (n, n))
    dL_inv = rng.random(n)
    dense, along = cb._BlockFactor(lp), cb._BlockFactor(lp, tree)
    for fac in (dense, along):
        fac.factor(dB, wx, dL_inv)
    inv = np.linalg.inv(dense_blocks(Dp, qu, qv, 0.9, dB, wx))
    for w in range(n):
        assert np.allclose(unpack_symmetric(along.Kinv[w], n), inv[w], rtol=1e-9, atol=0)
    assert np.allclose(along.cho[0], dense.cho[0], rtol=1e-9, atol=1e-12)
    # the blocks shared among threads give the same sums
    try:
        set_threads(3)
        threaded = cb._BlockFactor(lp, tree)
        threaded.factor(dB, wx, dL_inv)
    finally:
        set_threads(None)
    assert np.array_equal(threaded.Kinv, along.Kinv)
    assert np.allclose(threaded.cho[0], along.cho[0], rtol=1e-12, atol=1e-14)
    # a block that is not positive definite is named
    wx[5, n // 2] = -1e6
    with pytest.raises(LPError, match="column 5"):
        along.factor(dB, wx, dL_inv)


@pytest.mark.parametrize("level", [0.05, 0.9, 8.0])
@pytest.mark.parametrize("space", [SPACES[2], SPACES[4]], ids=lambda s: f"n{s.n}")
def test_the_method_along_the_tree_matches_linprog(space, level):
    D = space.distances
    pu, pv = spanner_pairs(D)
    # M comes back in the points' own order: its rows, loss and privacy rows as for the input
    _, stats = solve_against_linprog(D, pu, pv, level, resources=ALONG)
    assert stats["dissection_levels"] >= 2 and stats["device"] == "cpu"


def test_dense_blocks_where_the_tree_gains_little():
    D = SPACES[1].distances
    pu, pv = spanner_pairs(D)
    _, stats = solve_worst_case_blocks(D, pu, pv, 0.5)
    assert stats["dissection_levels"] == 0                   # n = 20 is one leaf
    # asks for an impossible gain
    impossible = cb.BlockResources(leaf_size=4, dissection_gain=1e9)
    _, stats = solve_worst_case_blocks(D, pu, pv, 0.5, resources=impossible)
    assert stats["dissection_levels"] == 0


def test_spanner_along_the_tree_is_certified_by_the_registry():
    """Through mdp.build: the matrix found along the dissection is repaired and verified by the
    shared privacy check, and its loss is near the vertex's."""
    import mdp
    from mdp.families.spanner import SpannerTuning

    space = SPACES[2]
    vertex = mdp.build("spanner", space, 0.5, solver="ipm")
    along = mdp.build("spanner", space, 0.5, solver="blocks",
                      tuning=SpannerTuning(resources=ALONG))
    assert along.stats["dissection_levels"] >= 2
    assert along.stats["privacy"]["verified"]
    assert along.stats["privacy"]["measured_eps"] <= 0.5 * (1 + 1e-9)
    assert along.stats["lower_bound"] <= vertex.stats["lp_objective"] + 1e-12
    assert vertex.loss() - 1e-9 <= along.loss() <= vertex.loss() * (1 + 1e-5)
