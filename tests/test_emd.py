"""mdp.emd: exact EMD against POT's dense solver, scipy and linear programming."""

import numpy as np
import ot
import pytest
from scipy.optimize import linprog
from scipy.stats import wasserstein_distance

from mdp.emd import block_sum, emd, emd_1d, emd_downsampled, emd_grid, grid_l1_cost


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
