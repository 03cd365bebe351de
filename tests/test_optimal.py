"""'optimal' (OPTMech): exactness against scipy linprog, dominance, certification."""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import linprog

import mdp
from mdp.families.optimal import max_privacy_violation, nonredundant_pairs
from mdp.space import MetricSpace


def linprog_optimum(D, eps):
    """Independent full LP (all n^2(n-1) privacy rows, no redundancy removal) with scipy."""
    n = len(D)
    N = n * n
    K = np.exp(eps * D)
    u, v, w = np.meshgrid(np.arange(n), np.arange(n), np.arange(n), indexing="ij")
    keep = u != v
    u, v, w = u[keep], v[keep], w[keep]
    m = len(u)
    rows = np.r_[np.arange(m), np.arange(m)]
    cols = np.r_[u * n + w, v * n + w]
    vals = np.r_[np.ones(m), -K[u, v]]
    Ap = sp.csr_matrix((vals, (rows, cols)), shape=(m, N + 1))
    Al = sp.hstack([sp.block_diag([D[i][None, :] for i in range(n)]), -np.ones((n, 1))])
    Aeq = sp.hstack([sp.block_diag([np.ones((1, n))] * n), np.zeros((n, 1))])
    c = np.zeros(N + 1)
    c[-1] = 1
    res = linprog(c, A_ub=sp.vstack([Ap, Al]), b_ub=np.zeros(m + n), A_eq=Aeq, b_eq=np.ones(n),
                  bounds=[(0, None)] * N + [(None, None)], method="highs-ds")
    assert res.status == 0
    return res.fun


def grid_space(rows, cols):
    pts = np.array([(i, j) for i in range(rows) for j in range(cols)], dtype=float)
    return MetricSpace.from_points(pts)


SPACES = {
    "random12": MetricSpace.from_points(np.random.default_rng(11).random((12, 2)) * 3),
    "random15_3d": MetricSpace.from_points(np.random.default_rng(12).random((15, 3)) * 2),
    "grid3x4": grid_space(3, 4),
    "grid1x9_line": grid_space(1, 9),
}


@pytest.mark.parametrize("name", sorted(SPACES))
@pytest.mark.parametrize("eps", [0.4, 1.5])
def test_exact_against_linprog(name, eps):
    space = SPACES[name]
    mech = mdp.build("optimal", space, eps)
    ref = linprog_optimum(space.distances, eps)
    assert mech.loss() == pytest.approx(ref, abs=1e-6)
    st = mech.stats
    assert st["lower_bound"] <= ref + 1e-9
    assert st["optimality_gap"] <= 1e-6
    assert st["max_privacy_violation"] <= 1e-6
    assert mech.stats["privacy"]["measured_eps"] <= eps * (1 + 1e-9)
    assert st["full_privacy_rows"] == space.n ** 2 * (space.n - 1)


def test_redundancy_removal_on_grids():
    # on a line every non-adjacent pair is implied by the points between them
    pu, pv = nonredundant_pairs(grid_space(1, 9).distances)
    assert set(zip(pu.tolist(), pv.tolist(), strict=True)) == {(i, i + 1) for i in range(8)} | {(i + 1, i) for i in range(8)}
    # generic points: nothing is implied
    pu, _ = nonredundant_pairs(SPACES["random12"].distances)
    assert len(pu) == 12 * 11
    assert mdp.build("optimal", grid_space(3, 4), 1.0).stats["redundant_pairs"] > 0


def test_max_privacy_violation_brute_force():
    rng = np.random.default_rng(1)
    M = rng.random((6, 6))
    D = SPACES["random12"].distances[:6, :6]
    brute = max(M[u, w] - np.exp(0.7 * D[u, v]) * M[v, w] for u in range(6) for v in range(6) for w in range(6))
    assert max_privacy_violation(M, D, 0.7) == pytest.approx(brute, abs=1e-15)


@pytest.mark.parametrize("name", ["random12", "grid3x4"])
def test_dominance_at_eps_tight(name):
    space = SPACES[name]
    others = [mdp.build("exponential", space, 1.0), mdp.build("weighted_exponential", space, 1.0),
              mdp.build("spanner", space, 1.0), mdp.build("constopt", space, 1.0, r=3)]
    for mech in others:
        et = mech.eps_tight(0.0)
        opt = mdp.build("optimal", space, et)
        assert opt.loss() <= mech.loss() + 1e-7, mech.name


def test_bad_input():
    space = SPACES["random12"]
    with pytest.raises(ValueError, match="time_limit"):
        mdp.build("optimal", space, 1.0, time_limit=0)
    with pytest.raises(ValueError, match="redundancy_rtol"):
        mdp.build("optimal", space, 1.0, redundancy_rtol=0.1)
    big = MetricSpace.from_points(np.random.default_rng(0).random((260, 2)))
    with pytest.raises(ValueError, match="does not apply"):
        mdp.build("optimal", big, 1.0)
