"""'constopt' (ConstOPTMech): LP sizes vs Theorem 1, privacy, never below OPTMech, bad input."""

import numpy as np
import pytest
from scipy.optimize import linprog

import mdp
from mdp.families.constopt import (
    constopt_lp,
    lipschitz_log_matrix,
    nn_replacement,
    solve_constopt_lp,
)
from mdp.families.constopt.tuning import ConstOPTTuning
from mdp.lp import SparseLP
from mdp.spaces.metric_space import MetricSpace

SPACE = MetricSpace.from_points(np.random.default_rng(21).random((25, 2)) * 5)


def test_nn_replacement_is_eq5():
    D = SPACE.distances
    free = nn_replacement(D, 4)
    assert np.all(free.sum(axis=1) == 4) and np.all(np.diag(free))
    for u in range(SPACE.n):
        nearest = set(np.argsort(D[u], kind="stable")[:4].tolist())
        assert set(np.nonzero(free[u])[0].tolist()) == nearest


@pytest.mark.parametrize("r", [1, 3, 10])
def test_lp_sizes_within_theorem1(r):
    n = SPACE.n
    mech = mdp.build("constopt", SPACE, 1.0, r=r, lam=0.1)
    st = mech.stats
    s = nn_replacement(SPACE.distances, r).sum(axis=0)
    # our exact counts: variables as Theorem 1, rows without the redundant free-vs-fixed copies
    assert st["variables"] == n + 1 + n * r == st["theorem1"]["variables"]
    assert st["rows"] <= 2 * n + int(np.sum(s ** 2 + s))
    assert st["rows"] <= st["theorem1"]["rows"] == 2 * n + int(np.sum(2 * s ** 2 + 3 * s))
    assert st["nnz"] <= st["theorem1"]["nnz"] == 2 * n * n + int(np.sum(2 * s ** 2 + 5 * s))
    # the seed's I_NN,r corollary: at most nr + n + 1 variables, n^2 r + 3nr + 2n rows
    assert st["rows"] <= n * n * r + 3 * n * r + 2 * n


@pytest.mark.parametrize("eps", [0.5, 2.0])
def test_private_and_never_below_optimal(eps):
    opt = mdp.build("optimal", SPACE, eps)
    c = mdp.build("constopt", SPACE, eps, r=5)
    assert c.stats["privacy"]["measured_eps"] <= eps * (1 + 1e-9)
    assert c.loss() >= opt.loss() - 1e-9
    # several lambdas: all recorded, the best L_0.95 chosen
    lq = [x["L_q"] for x in c.stats["lambdas"]]
    assert len(lq) == 3 and c.loss(0.95) == pytest.approx(min(lq), rel=1e-9)


def test_lp_solution_is_feasible_weighted_exponential():
    # the LP's fixed entries equal Y_v exp(-e D) and every privacy row at e holds on the unnormalised M
    e = 0.4
    free = nn_replacement(SPACE.distances, 3)
    c, A, lo, hi, (fu, fv) = constopt_lp(SPACE.distances, e, free, 0.1)
    sol = SparseLP(c, A, row_lower=lo, row_upper=hi).solve()
    n = SPACE.n
    M = np.exp(-e * SPACE.distances) * np.maximum(sol.x[:n], 0)[None, :]
    M[fu, fv] = sol.x[n:n + len(fu)]
    K = np.exp(e * SPACE.distances)
    viol = M[:, None, :] - K[:, :, None] * M[None, :, :]
    assert viol.max() <= 1e-7
    assert M.sum(axis=1).min() >= 1 - 1e-7


def test_replacement_hook():
    calls = []

    def diag_only(D, r):
        calls.append(r)
        return np.eye(len(D), dtype=bool)

    mech = mdp.build("constopt", SPACE, 1.0, r=2, lam=0.1, replacement=diag_only)
    assert calls == [2] and mech.stats["free_entries"] == SPACE.n
    with pytest.raises(ValueError, match="boolean mask"):
        mdp.build("constopt", SPACE, 1.0, lam=0.1, replacement=lambda D, r: np.ones(3, bool))


def test_bad_input():
    for r in (0, SPACE.n, SPACE.n + 3):
        with pytest.raises(ValueError, match="r must be"):
            mdp.build("constopt", SPACE, 1.0, r=r)
    for lam in (0, -1.0, (0.1, -2), ()):
        with pytest.raises(ValueError, match="lam"):
            mdp.build("constopt", SPACE, 1.0, lam=lam)
    with pytest.raises(TypeError, match="lam"):
        mdp.build("constopt", SPACE, 1.0, lam="big")
    with pytest.raises(ValueError, match="replacement"):
        mdp.build("constopt", SPACE, 1.0, replacement="far")


@pytest.mark.parametrize("eps", [0.6, 2.5])
def test_lazy_free_free_rows_same_optimum(eps):
    # lazy generation of the free-free rows returns the full LP's optimum, feasible for ALL rows
    free = nn_replacement(SPACE.distances, 6)
    c, A, lo, hi, (fu, fv), n_base = constopt_lp(SPACE.distances, eps / 2, free, 0.1, split=True)
    full = linprog(c, A_ub=np.vstack([A[np.isfinite(hi)].toarray(), -A[~np.isfinite(hi)].toarray()]),
                   b_ub=np.r_[hi[np.isfinite(hi)], -lo[~np.isfinite(hi)]],
                   bounds=[(0, None)] * (A.shape[1] - 1) + [(None, None)], method="highs")
    sol, st = solve_constopt_lp(c, A, lo, hi, n_base, lazy=True)
    assert sol.objective == pytest.approx(full.fun, abs=1e-8)
    act = A @ sol.x
    assert np.all(act <= hi + 1e-8) and np.all(act >= lo - 1e-8)
    assert st["rows"] == A.shape[0] and st["rows_solved"] <= A.shape[0]
    lazy = mdp.build("constopt", SPACE, eps, r=6, lam=0.1)
    eager = mdp.build("constopt", SPACE, eps, r=6, lam=0.1, lazy=False)
    assert lazy.stats["lp_objective"] == pytest.approx(eager.stats["lp_objective"], abs=1e-8)


def _full_lp_optimum(space, eps, r, lam):
    """The whole ConstOPTMech LP (every row) solved independently by scipy's linprog."""
    free = nn_replacement(space.distances, r)
    c, A, lo, hi, _, _ = constopt_lp(space.distances, eps / 2, free, lam, split=True)
    up = np.isfinite(hi)
    ref = linprog(c, A_ub=np.vstack([A[up].toarray(), -A[~up].toarray()]), b_ub=np.r_[hi[up], -lo[~up]],
                  bounds=[(0, None)] * A.shape[1], method="highs-ds")
    assert ref.status == 0
    return ref.fun


GRID = MetricSpace.from_points(np.stack(np.meshgrid(np.arange(6.0), np.arange(6.0)), -1).reshape(-1, 2))
RANDOM40 = MetricSpace.from_points(np.random.default_rng(8).random((40, 2)) * 4)


@pytest.mark.parametrize("solver", ["hipo", "ipm", "simplex"])
@pytest.mark.parametrize("space, eps", [(GRID, 0.8), (RANDOM40, 1.5)])
def test_every_solver_reaches_the_full_lp_optimum(space, eps, solver):
    # HiPO (or its IPX fallback), IPX and the dual simplex first rounds all end at the optimum of
    # the full LP, and the built mechanism is certified eps-mDP by mdp.build
    ref = _full_lp_optimum(space, eps, 5, 0.1)
    mech = mdp.build("constopt", space, eps, r=5, lam=0.1, solver=solver)
    assert mech.stats["lp_objective"] == pytest.approx(ref, rel=1e-8, abs=1e-9)
    assert mech.stats["lp_epsilon"] == eps / 2
    _, report = mdp.privacy.verification.certify(mech.matrix, space.distances, eps, repair=False)
    assert report["verified"]


def test_failed_hipo_round_is_repeated_by_ipx(inject):
    # a HiPO failure costs neither the coefficient limit nor the optimum: IPX solves the same LP
    from mdp.families.constopt.build import solve_constopt_lp

    real = solve_constopt_lp.default
    methods = []

    def flaky(*args, solver, **kw):
        methods.append(solver)
        if solver == "hipo":
            raise mdp.lp.LPError("HiGHS did not find an optimum: model status 'Unknown'")
        return real(*args, solver=solver, **kw)

    inject(solve_constopt_lp, flaky)
    ref = _full_lp_optimum(GRID, 0.8, 5, 0.1)
    mech = mdp.build("constopt", GRID, 0.8, r=5, lam=0.1)
    assert methods == ["hipo", "ipm"]
    assert mech.stats["max_coefficient"] == ConstOPTTuning().max_coefficients[0]
    assert mech.stats["lp_objective"] == pytest.approx(ref, rel=1e-8, abs=1e-9)
    assert "(hipo)" in mech.stats["failed_attempts"][0]


@pytest.mark.parametrize("space, eps", [(GRID, 0.8), (RANDOM40, 1.5)])
def test_exact_build_needs_no_repair(space, eps):
    # the LP's rows hold only to HiGHS's tolerance; lipschitz_log_matrix makes them hold exactly
    # (brute force over every (u, u', v)), so the certification has nothing to repair
    free = nn_replacement(space.distances, 5)
    c, A, lo, hi, _ = constopt_lp(space.distances, eps / 2, free, 0.1)
    x = SparseLP(c, A, row_lower=lo, row_upper=hi).solve().x
    # HiGHS-sized violations of every kind of row
    x = x * (1 + 1e-7 * np.random.default_rng(3).standard_normal(x.size))
    L = lipschitz_log_matrix(x, space.distances, eps / 2, free)
    with np.errstate(invalid="ignore"):
        diff = L[:, None, :] - L[None, :, :]
    diff[np.isneginf(L)[:, None, :] & np.isneginf(L)[None, :, :]] = 0.0   # 0 against 0
    assert (eps / 2 * space.distances[:, :, None] - diff).min() >= -1e-12
    assert np.max(np.abs(np.exp(L) - _matrix_of(x, space.distances, eps / 2, free))) <= 1e-6
    mech = mdp.build("constopt", space, eps, r=5, lam=0.1)
    assert mech.stats["privacy"]["repaired"] is False


def test_lipschitz_log_matrix_with_zero_weights():
    # Y_v = 0: the column's fixed entries vanish and its free entries are capped at 0, without NaN
    # (and a column with no fixed entry has no bound to apply)
    D = RANDOM40.distances
    n = RANDOM40.n
    free = nn_replacement(D, 5)
    free[:, 0] = True                                    # column 0: no fixed entry
    x = np.r_[np.zeros(2), np.full(n - 2, 0.01), np.full(int(free.sum()), 0.02), 1.0]
    L = lipschitz_log_matrix(x, D, 0.5, free)
    assert not np.isnan(L).any()
    assert np.all(np.isneginf(L[~free[:, 1], 1])) and np.all(np.isneginf(L[free[:, 1], 1]))
    assert np.all(np.isfinite(L[:, 0]))


def _matrix_of(x, D, e, free):
    n = D.shape[0]
    fu, fv = np.nonzero(free)
    M = np.exp(-e * D) * np.maximum(x[:n], 0)[None, :]
    M[fu, fv] = x[n:n + len(fu)]
    return M


def _two_scales(n):
    from mdp.spaces.synthetic import SPACE_KINDS, synthetic_space
    return synthetic_space("two_scales", n, rng=np.random.default_rng([2026, SPACE_KINDS.index("two_scales"), n]))


def test_default_coefficient_limit_keeps_the_lp_within_double_precision():
    # HiGHS drops entries below its small_matrix_value (1e-9); the entries it keeps, up to the
    # first coefficient limit, must span at most 1e16 (what double precision resolves)
    space = _two_scales(30)
    e = 0.5 / space.median_distance * 3.0
    free = nn_replacement(space.distances, 10)
    limit = ConstOPTTuning().max_coefficients[0]
    _, A, _, _, _ = constopt_lp(space.distances, e, free, 0.1, max_coefficient=limit)
    kept = np.abs(A.data[np.abs(A.data) >= 1e-9])
    assert kept.max() / kept.min() <= 1e16
    # the space needs the limit: some privacy row's coefficient lies above it
    _, A_all, _, _, _ = constopt_lp(space.distances, e, free, 0.1)
    assert np.abs(A_all.data).max() > limit


def test_two_scales_build_is_no_worse_than_with_a_wider_coefficient_range():
    # two scales of distance at eps x median 3: rows up to 1e12 end in a worse matrix (HiGHS's
    # solution violates rows the envelope then lifts) than the default's well-conditioned LP
    space = _two_scales(30)
    eps = 3.0 / space.median_distance
    default = mdp.build("constopt", space, eps, r=10)
    wide = mdp.build("constopt", space, eps, r=10,
                     tuning=ConstOPTTuning(max_coefficients=(1e12, 1e7, 1e5)))
    assert default.stats["max_coefficient"] == ConstOPTTuning().max_coefficients[0]
    assert default.loss() < wide.loss() * (1 - 1e-3)
    assert default.loss() <= mdp.build("exponential", space, eps).loss() * (1 + 1e-12)
