"""ConstOPTMech's row-block interior point method and its certified gap (mdp.families.constopt.ipm).

Every figure is checked against the same LP solved independently by scipy's linprog (HiGHS).
"""

from dataclasses import replace

import numpy as np
import pytest
from scipy.optimize import linprog

import mdp
from mdp.errors import SolverError
from mdp.families.constopt import ConstOPTTuning, constopt_lp, nn_replacement
from mdp.families.constopt.ipm import (
    KEEP_GAP,
    ConstOptLP,
    certified_lower_bound,
    default_start,
    feasible_log_matrix,
    free_free_pairs,
    solve_constopt_gap,
    solve_row_block_ipm,
    warm_start,
)
from mdp.spaces.metric_space import MetricSpace
from tests.support.solvers import uncertified_row_blocks

GRID = MetricSpace.from_points(np.stack(np.meshgrid(np.arange(6.0), np.arange(6.0)), -1).reshape(-1, 2))


def _random(seed: int, n: int) -> MetricSpace:
    return MetricSpace.from_points(np.random.default_rng(seed).random((n, 2)) * 5)


def _linprog(D, e, free, lam, with_free_free: bool) -> float:
    c, A, lo, hi, _, n_base = constopt_lp(D, e, free, lam, split=True)
    if not with_free_free:
        A, lo, hi = A[:n_base], lo[:n_base], hi[:n_base]
    up = np.isfinite(hi)
    ref = linprog(c, A_ub=np.vstack([A[up].toarray(), -A[~up].toarray()]), b_ub=np.r_[hi[up], -lo[~up]],
                  bounds=[(0, None)] * A.shape[1], method="highs")
    assert ref.status == 0
    return ref.fun


CASES = [(_random(21, 25), 1.0, 4), (_random(8, 40), 1.5, 5), (GRID, 0.8, 5), (_random(3, 30), 6.0, 6)]


@pytest.mark.parametrize("space, eps, r", CASES)
def test_relaxation_and_full_lp_match_linprog(space, eps, r):
    D, e = space.distances, eps / 2
    free = nn_replacement(D, r)
    relaxed = solve_row_block_ipm(ConstOptLP(D, e, free, 0.1))
    ref = _linprog(D, e, free, 0.1, with_free_free=False)
    assert relaxed.objective == pytest.approx(ref, rel=1e-7)
    # the dual point bounds the relaxation (and so the full LP) from below, rigorously
    assert certified_lower_bound(ConstOptLP(D, e, free, 0.1), relaxed, relaxed.objective) <= ref + 1e-12
    fu, fv = np.nonzero(free)
    full = solve_row_block_ipm(ConstOptLP(D, e, free, 0.1, free_free_pairs(fu, fv)))
    assert full.objective == pytest.approx(_linprog(D, e, free, 0.1, with_free_free=True), rel=1e-7)


def test_free_free_pairs_are_every_ordered_pair_of_a_column():
    free = nn_replacement(GRID.distances, 4)
    fu, fv = np.nonzero(free)
    a, b = free_free_pairs(fu, fv)
    got = set(zip(a.tolist(), b.tolist(), strict=True))
    want = {(i, j) for i in range(len(fu)) for j in range(len(fu)) if i != j and fv[i] == fv[j]}
    assert got == want


def test_feasible_log_matrix_meets_every_privacy_row_exactly():
    space, e = _random(5, 25), 0.6
    D = space.distances
    free = nn_replacement(D, 5)
    lp = ConstOptLP(D, e, free, 0.1)
    x = solve_row_block_ipm(lp).x
    # a relaxed solution (no free-free rows), perturbed: violates rows of every kind
    x = x * np.exp(np.random.default_rng(0).normal(0, 0.3, x.size))
    L = feasible_log_matrix(x, lp)
    # brute force over all (u, u', v): L[u, v] - L[u', v] <= e D[u, u']
    slack = e * D[:, :, None] - (L[:, None, :] - L[None, :, :])
    assert slack.min() >= -1e-12
    # the fixed entries are exactly Y_v e^{-e D_uv} (Y: the weight variables scaled back)
    fixed = ~free
    assert np.allclose(L[fixed], (np.log(lp.weights(x))[None, :] - e * D)[fixed], rtol=0, atol=1e-12)


@pytest.mark.parametrize("space, eps, r", CASES)
@pytest.mark.parametrize("gap", [0.05, 1e-3, 0.0])
def test_certified_gap_brackets_the_full_optimum(space, eps, r, gap):
    D, e = space.distances, eps / 2
    free = nn_replacement(D, r)
    opt = _linprog(D, e, free, 0.1, with_free_free=True)
    L, st = solve_constopt_gap(D, e, free, 0.1, gap)
    # linprog meets rows to HiGHS's tolerances only (7.7e-8 relative above our exactly feasible
    # point at eps = 6, where the coefficients e^{e D} reach 1e9): compare at 1e-6
    assert st["lower_bound"] <= opt * (1 + 1e-6)
    assert st["lp_objective"] >= opt * (1 - 1e-6)
    assert st["lower_bound"] <= st["lp_objective"]
    assert st["relative_gap"] == pytest.approx((st["lp_objective"] - st["lower_bound"]) / st["lp_objective"])
    assert st["relative_gap"] <= max(gap, 1e-6)
    # the returned matrix is the LP point whose objective is reported
    M = np.exp(L)
    assert M.sum(axis=1).min() >= 1 - 1e-12
    assert np.max(np.sum((D + 0.1) * M, axis=1)) == pytest.approx(st["lp_objective"], rel=1e-12)


def test_build_with_gap_is_private_and_near_the_exact_lp():
    space, eps = _random(8, 40), 1.5
    exact = mdp.build("constopt", space, eps, r=5, lam=0.1)
    near = mdp.build("constopt", space, eps, r=5, lam=0.1, gap=1e-3)
    _, report = mdp.privacy.verification.certify(near.matrix, space.distances, eps, repair=False)
    assert report["verified"]
    st = near.stats
    assert st["gap_target"] == 1e-3 and st["relative_gap"] <= 1e-3
    assert st["lower_bound"] <= exact.stats["lp_objective"] * (1 + 1e-9) <= st["lp_objective"] * (1 + 2e-9)
    assert "row-block" in st["solver"]


def test_gap_parameter_is_validated():
    space = _random(1, 12)
    for bad in (-0.1, 1.0, float("nan")):
        with pytest.raises(ValueError, match="gap"):
            mdp.build("constopt", space, 1.0, r=3, lam=0.1, gap=bad)
    with pytest.raises(TypeError, match="gap"):
        mdp.build("constopt", space, 1.0, r=3, lam=0.1, gap="small")


def test_gap_mode_falls_back_to_the_exact_solve_when_it_cannot_certify(inject):
    # a lower bound too weak for the gap: the build must not return an uncertified
    # "near-optimal" matrix
    inject(solve_constopt_gap, uncertified_row_blocks)
    space = MetricSpace.from_points(np.random.default_rng(42).random((35, 2)) * 3)
    mech = mdp.build("constopt", space, 400.0, r=6, lam=0.1, gap=1e-3)
    assert "ipm_failure" in mech.stats and "HiGHS" in mech.stats["solver"]
    assert mech.stats["privacy"]["measured_eps"] <= 400.0 * (1 + 1e-9)


def test_scaled_weights_certify_where_every_fixed_entry_underflows():
    # at eps = 400 e^{-e D} of the fixed entries is below 1e-40: each weight's a-priori bound
    # is astronomically large, and the certificate held only with the weights scaled to unit
    # largest coefficient. Every row costs at least lam (row sum >= 1, each entry's weight
    # D + lam >= lam) and the identity matrix attains it: the optimum is lam.
    space = MetricSpace.from_points(np.random.default_rng(42).random((35, 2)) * 3)
    D = space.distances
    free = nn_replacement(D, 6)
    lp = ConstOptLP(D, 200.0, free, 0.1)
    assert lp.y_scale.min() > 1e40
    _, st = solve_constopt_gap(D, 200.0, free, 0.1, 1e-6)
    assert st["lower_bound"] <= 0.1 <= st["lp_objective"]
    assert st["relative_gap"] <= 1e-6


@pytest.mark.parametrize("before_end, accepted", [(1, True), (None, False)])
def test_factorisation_failure_near_the_optimum_returns_the_best_iterate(before_end, accepted):
    # past STALL_ACCEPT a failed factorisation ends the method with its best iterate (Geolife
    # cells at n = 2000 fail at relative gap 2e-9); before it, the failure is an error. The
    # row-block system is run by the interior point core with a factorisation that fails from
    # its `fail_from`-th call (a subclass: no module is patched)
    import mdp.families.constopt.ipm as ipm
    from mdp.lp.interior_point import run_interior_point

    space, eps, r = CASES[1]
    D, e = space.distances, eps / 2
    free = nn_replacement(D, r)
    total = solve_row_block_ipm(ConstOptLP(D, e, free, 0.1), tol=1e-12).iterations
    fail_from = 3 if before_end is None else total - before_end
    calls = []

    class FailingFactor(ipm._RowBlockFactor):
        def factor(self, *args):
            calls.append(1)
            if len(calls) >= fail_from:
                raise mdp.errors.SolverError("the interior point method's normal matrix lost "
                                             "positive definiteness")
            return super().factor(*args)

    lp = ConstOptLP(D, e, free, 0.1)

    def run():
        system = ipm._RowBlockSystem(lp, FailingFactor(lp))
        return run_interior_point(system, replace(ipm.SETTINGS, tol=1e-12),
                                  start=ipm._RowBlockPoint(*ipm.default_start(lp)))

    # the same iterations as the method's own run, up to the failure
    assert total > fail_from
    if not accepted:
        with pytest.raises(mdp.errors.SolverError, match="positive definiteness"):
            run()
        return
    out = run()
    # the factorisation at iterate k (from 0) is call k + 1: the method stops at that iterate
    assert out.stalled and out.iterations == fail_from - 1
    assert max(out.scores.gap, out.scores.primal, out.scores.dual) <= ipm.STALL_ACCEPT
    assert out.scores.objective == pytest.approx(_linprog(D, e, free, 0.1, with_free_free=False),
                                                 rel=1e-6)


def _two_rounds(seed=100, n=100, eps=1.5, r=5):
    """Round 0 (no free-free rows) and round 1 (its violated rows) of ``solve_constopt_gap``."""
    D, e = _random(seed, n).distances, eps / 2
    free = nn_replacement(D, r)
    fu, fv = np.nonzero(free)
    a, b = free_free_pairs(fu, fv)
    lp0 = ConstOptLP(D, e, free, 0.1)
    res0 = solve_row_block_ipm(lp0)
    m = res0.x[lp0.n:lp0.n + lp0.f]
    viol = np.exp(-e * D[fu[a], fu[b]]) * m[a] - m[b] > 1e-6 * m[b]
    return D, e, free, lp0, res0, ConstOptLP(D, e, free, 0.1, (a[viol], b[viol]))


def test_warm_start_keeps_shared_rows_and_centres_new_ones():
    D, e, free, _, _, lp1 = _two_rounds()
    # from half of round 1's rows to all of them: shared rows and new rows
    lp0 = ConstOptLP(D, e, free, 0.1, (lp1.pairs[0][::2], lp1.pairs[1][::2]))
    res0 = solve_row_block_ipm(lp0)
    x, w, sL, zL, sB, zB = res0.warm_point
    assert res0.relative_gap < KEEP_GAP
    st = warm_start(lp0, res0.warm_point, lp1)
    for got, want in zip(st[:4], (x, w, sL, zL), strict=True):
        np.testing.assert_array_equal(got, want)
    nb, f = lp1.n_bound, lp1.f
    np.testing.assert_array_equal(st[4][:nb], sB[:nb])
    old = dict(zip(lp0.pairs[0] * f + lp0.pairs[1], range(len(lp0.pairs[0])), strict=True))
    key = lp1.pairs[0] * f + lp1.pairs[1]
    shared = np.array([k in old for k in key])
    idx = np.array([old[k] for k in key[shared]])
    np.testing.assert_array_equal(st[4][nb:][shared], sB[nb + idx])
    np.testing.assert_array_equal(st[5][nb:][shared], zB[nb + idx])
    mu = (sL @ zL + sB @ zB + x @ w) / (len(sL) + len(sB) + len(x))
    new_s, new_z = st[4][nb:][~shared], st[5][nb:][~shared]
    assert (~shared).sum() > 0 and np.all(new_s >= np.sqrt(mu) * (1 - 1e-15))
    np.testing.assert_allclose(new_s * new_z, mu, rtol=1e-12)
    np.testing.assert_array_equal(new_s, np.maximum(lp1.local(x)[nb:][~shared], np.sqrt(mu)))
    with pytest.raises(ValueError, match="start"):
        solve_row_block_ipm(lp1, start=(x, w, sL, zL, sB, zB))          # sized for lp0


def test_warm_round_reaches_the_cold_optimum_in_fewer_iterations():
    D, e, free, lp0, res0, lp1 = _two_rounds()
    cold = solve_row_block_ipm(lp1)
    warm = solve_row_block_ipm(lp1, start=warm_start(lp0, res0.warm_point, lp1))
    assert warm.objective == pytest.approx(cold.objective, rel=1e-8)
    assert warm.iterations <= cold.iterations * 0.7                # 12 against 18


@pytest.mark.parametrize("error", [
    SolverError("the interior point method's normal matrix lost positive definiteness"),
    ValueError("start must be positive, finite vectors sized for the LP")])
def test_failed_warm_round_is_solved_again_cold(inject, error):
    D, e = _random(8, 40).distances, 0.75
    free = nn_replacement(D, 5)
    opt = _linprog(D, e, free, 0.1, with_free_free=True)
    # every round after the first warm, however many rows it adds
    _, st = solve_constopt_gap(D, e, free, 0.1, 0.0, warm_added_ratio=np.inf)
    assert len(st["ipm_rounds"]) >= 2
    assert [r["warm"] for r in st["ipm_rounds"]] == [False] + [True] * (len(st["ipm_rounds"]) - 1)
    def no_warm(lp, **kw):
        if kw.get("start") is not None:
            raise error
        return solve_row_block_ipm.default(lp, **kw)

    inject(solve_row_block_ipm, no_warm)
    _, st = solve_constopt_gap(D, e, free, 0.1, 0.0, warm_added_ratio=np.inf)
    assert [r["warm"] for r in st["ipm_rounds"]] == [False] * len(st["ipm_rounds"])
    assert st["lower_bound"] <= opt * (1 + 1e-6) and st["lp_objective"] >= opt * (1 - 1e-6)
    assert st["relative_gap"] <= 1e-6


def test_rounds_end_when_no_row_outside_the_lp_is_violated():
    # rows already in the LP may stay violated by the method's tolerance (relative 1e-6 of a tiny
    # entry); counting them made the warm rounds repeat until max_rounds on this space
    D, e = _random(100, 100).distances, 0.75
    free = nn_replacement(D, 5)
    _, st = solve_constopt_gap(D, e, free, 0.1, 0.0)
    rounds = st["ipm_rounds"]
    assert len(rounds) <= 6 and rounds[-1]["violated"] == 0
    assert st["relative_gap"] <= 1e-6


def test_auto_solver_uses_the_row_block_method_from_row_block_min_n():
    space, eps = _random(8, 40), 1.5
    # eps / 2 x median distance ~ 1.9 <= row_block_max_scale
    med = np.median(space.distances[np.triu_indices(40, 1)])
    assert eps / 2 * med <= ConstOPTTuning().row_block_max_scale
    highs = mdp.build("constopt", space, eps, r=5, lam=0.1)              # 40 < row_block_min_n
    assert "HiGHS" in highs.stats["solver"] and "relative_gap" not in highs.stats
    assert highs.report.plan.solver.value == "hipo"
    auto = mdp.build("constopt", space, eps, r=5, lam=0.1,
                     tuning=ConstOPTTuning(row_block_min_n=40))
    st = auto.stats
    assert auto.report.plan.solver.value == "blocks"
    assert "row-block" in st["solver"] and st["gap_target"] == ConstOPTTuning().exact_gap == 1e-6
    assert st["relative_gap"] <= 1e-6
    opt = highs.stats["lp_objective"]
    assert st["lower_bound"] <= opt * (1 + 1e-9) and st["lp_objective"] <= opt * (1 + 1e-6)
    _, report = mdp.privacy.verification.certify(auto.matrix, space.distances, eps, repair=False)
    assert report["verified"]
    # a named HiGHS method is HiGHS at every size
    assert "HiGHS" in mdp.build("constopt", space, eps, r=5, lam=0.1, solver="hipo").stats["solver"]


def test_auto_solver_falls_back_to_highs_when_the_gap_cannot_be_certified(inject):
    small = ConstOPTTuning(row_block_min_n=35)
    space = MetricSpace.from_points(np.random.default_rng(42).random((35, 2)) * 3)
    # eps / 2 x median distance ~ 230 > row_block_max_scale: HiGHS without trying
    direct = mdp.build("constopt", space, 400.0, r=6, lam=0.1, tuning=small)
    assert "ipm_failure" not in direct.stats and "HiGHS" in direct.stats["solver"]
    # a lower bound too weak for the gap
    inject(solve_constopt_gap, uncertified_row_blocks)
    mech = mdp.build("constopt", space, 400.0, r=6, lam=0.1,
                     tuning=replace(small, row_block_max_scale=np.inf))
    assert "ipm_failure" in mech.stats and "HiGHS" in mech.stats["solver"]
    assert mech.report.fallbacks and "row-block" in mech.report.fallbacks[0]
    assert mech.stats["privacy"]["measured_eps"] <= 400.0 * (1 + 1e-9)
    assert mech.stats["lp_objective"] == pytest.approx(direct.stats["lp_objective"], rel=1e-9)


def test_auto_solver_hands_an_lp_with_many_violated_rows_to_highs(inject):
    # round 0 of the row-block method violates v free-free rows; above
    # max_violated_per_point * n it gives up at once (those rows would make every later round
    # slow), and ConstOPTMech's "auto" then solves the LP by HiGHS, to the same optimum
    space, eps = _random(8, 40), 1.5
    D, free = space.distances, nn_replacement(space.distances, 5)
    _, full = solve_constopt_gap(D, eps / 2, free, 0.1, 1e-6)
    v = full["ipm_rounds"][0]["violated"]
    assert full["rounds"] >= 2 and v > 0
    with pytest.raises(SolverError, match=f"round 0 violates {v} free-free rows"):
        solve_constopt_gap(D, eps / 2, free, 0.1, 1e-6, max_violated_per_point=(v - 1) / 40)
    _, kept = solve_constopt_gap(D, eps / 2, free, 0.1, 1e-6, max_violated_per_point=v / 40)
    assert kept["rounds"] == full["rounds"] and kept["lp_objective"] == full["lp_objective"]

    base = ConstOPTTuning(row_block_min_n=40)
    mech = mdp.build("constopt", space, eps, r=5, lam=0.1,
                     tuning=replace(base, row_block_max_violated=(v - 1) / 40))
    assert "HiGHS" in mech.stats["solver"] and "free-free rows" in mech.stats["ipm_failure"]
    assert mech.stats["lp_objective"] == pytest.approx(full["lp_objective"], rel=2e-6)
    assert mech.stats["privacy"]["measured_eps"] <= eps * (1 + 1e-9)
    # with several lambdas, round 0 runs once: the others go to HiGHS directly
    calls = []
    none_violated = replace(base, row_block_max_violated=0.0)
    with solve_constopt_gap.replaced(
            lambda *a, **k: calls.append(a[3]) or solve_constopt_gap.default(*a, **k)):
        three = mdp.build("constopt", space, eps, r=5, lam=[0.001, 0.1, 1.0],
                          tuning=none_violated)
    assert calls == [0.001] and len(three.stats["lambdas"]) == 3
    assert "HiGHS" in three.stats["solver"] and "free-free rows" in three.stats["ipm_failure"]
    # gap= asks for the row-block method by name: no such hand-over
    gapped = mdp.build("constopt", space, eps, r=5, lam=0.1, gap=1e-6, tuning=none_violated)
    assert "row-block" in gapped.stats["solver"] and "ipm_failure" not in gapped.stats
    assert "row-block" in mdp.build("constopt", space, eps, r=5, lam=0.1, tuning=replace(
        base, row_block_max_violated=v / 40)).stats["solver"]
    # where HiGHS meets a wide coefficient range (eps / 2 x median distance from
    # row_block_wide_scale on), no violation limit applies
    wide = mdp.build("constopt", space, eps, r=5, lam=0.1, tuning=replace(
        none_violated, row_block_wide_scale=eps / 2 * space.median_distance))
    assert "row-block" in wide.stats["solver"] and "ipm_failure" not in wide.stats


def test_default_start_is_positive_scaled_and_reaches_the_same_optimum():
    D, e = _random(1, 60).distances, 0.75
    free = nn_replacement(D, 5)
    lp = ConstOptLP(D, e, free, 0.1)
    x, w, sL, zL, sB, zB = default_start(lp)
    n = lp.n
    assert all(np.all(v > 0) for v in (x, w, sL, zL, sB, zB))
    assert np.median(lp.linking(x)[n:]) == pytest.approx(1.0)            # row sums about 1
    assert x[lp.kcol] == pytest.approx(np.max(-lp.linking(np.r_[x[:-1], 0.0])[:n]))
    r = lp.linking(x) - lp.h
    np.testing.assert_allclose(sL[r > sL.min()], r[r > sL.min()])       # slack = residual above the floor
    ones = np.ones(lp.nv)
    all_ones = (ones, ones.copy(), np.maximum(np.abs(lp.linking(ones) - lp.h), 1.0), np.ones(2 * n),
                np.maximum(np.abs(lp.local(ones)), 1.0), np.ones(lp.mB))
    a, b = solve_row_block_ipm(lp), solve_row_block_ipm(lp, start=all_ones)
    assert a.objective == pytest.approx(b.objective, rel=1e-8)
    assert a.objective == pytest.approx(_linprog(D, e, free, 0.1, with_free_free=False), rel=1e-7)


@pytest.mark.parametrize("gap, tol", [(1e-3, 1e-8), (1e-6, 1e-8), (1e-7, 1e-9), (0.0, 1e-10)])
def test_rounds_run_to_gap_over_100_within_the_round_tolerances(inject, gap, tol):
    D, e = _random(8, 40).distances, 0.75
    free = nn_replacement(D, 5)
    seen = []
    def spy(lp, **kw):
        seen.append(kw["tol"])
        return solve_row_block_ipm.default(lp, **kw)

    inject(solve_row_block_ipm, spy)
    _, st = solve_constopt_gap(D, e, free, 0.1, gap)
    assert seen and all(t == pytest.approx(tol, rel=1e-12) for t in seen)
    assert st["relative_gap"] <= max(gap, 1e-6)


def test_bound_factors_given_or_computed_give_the_same_lp():
    from mdp.families.constopt import log_bound_factors

    D, e = _random(3, 30).distances, 0.6
    free = nn_replacement(D, 4)
    fu, fv = np.nonzero(free)
    pairs = free_free_pairs(fu, fv)
    a = ConstOptLP(D, e, free, 0.1, pairs)
    b = ConstOptLP(D, e, free, 0.1, pairs, bound_factors=log_bound_factors(D, free, fu, fv, e))
    for name in ("li", "lj", "la", "lb", "log_hi", "log_lo"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))


def test_a_fixed_weights_lp_without_a_solution_leaves_the_repaired_point(inject):
    # the weights of an iterate need not admit a completion (HiGHS: "Infeasible" at Geolife
    # n = 2000); the round then keeps its repaired point, and a timeout still stops the build
    from mdp.errors import SolverTimeout
    from mdp.families.constopt.ipm import fixed_weights_solution

    D, e = _random(8, 40).distances, 0.75
    free = nn_replacement(D, 5)
    opt = _linprog(D, e, free, 0.1, with_free_free=True)

    def infeasible(*args, **kwargs):
        raise SolverError("HiGHS did not find an optimum: model status 'Infeasible'")

    inject(fixed_weights_solution, infeasible)
    _, st = solve_constopt_gap(D, e, free, 0.1, 0.0)
    assert st["lower_bound"] <= opt * (1 + 1e-6) <= st["lp_objective"] * (1 + 2e-6)
    assert st["relative_gap"] <= 1e-6

    def late(*args, **kwargs):
        raise SolverTimeout("time limit")

    inject(fixed_weights_solution, late)
    with pytest.raises(SolverTimeout):
        solve_constopt_gap(D, e, free, 0.1, 0.0)


def _many_free_free_rows(seed: int):
    """Road-like points at a large epsilon: round 0 violates several free-free rows per point, and
    their free entries, joined through columns and matrix rows, percolate into one large
    component of the two-level elimination."""
    space = _random(seed, 60)
    D = space.distances
    return D, 6.0 / float(np.median(D[D > 0])), nn_replacement(D, 8)


@pytest.mark.parametrize("seed", [1, 2])
def test_many_free_free_rows_reach_linprogs_optimum_and_seed_other_lambdas(seed):
    D, e, free = _many_free_free_rows(seed)
    rounds = []
    _, st = solve_constopt_gap(D, e, free, 0.1, 1e-6, on_round=rounds.append)
    assert rounds[0]["violated"] >= 2 * len(D)
    assert not rounds[1]["warm"]                   # thousands of rows over none: a cold round
    opt = _linprog(D, e, free, 0.1, with_free_free=True)
    assert st["lower_bound"] <= opt * (1 + 1e-9) and opt <= st["lp_objective"] * (1 + 1e-9)
    assert st["relative_gap"] <= 1e-6
    # another lambda, starting with those rows: the same optimum as linprog's, in fewer rounds
    a, b = st["free_free_pairs"]
    assert len(a) == st["free_free_rows"] > 0
    _, seeded = solve_constopt_gap(D, e, free, 1.0, 1e-6, rows=(a, b))
    _, cold = solve_constopt_gap(D, e, free, 1.0, 1e-6)
    opt1 = _linprog(D, e, free, 1.0, with_free_free=True)
    for s in (seeded, cold):
        assert s["lower_bound"] <= opt1 * (1 + 1e-9) and opt1 <= s["lp_objective"] * (1 + 1e-9)
        assert s["relative_gap"] <= 1e-6
    assert seeded["rounds"] < cold["rounds"]
    assert seeded["ipm_rounds"][0]["free_free_rows"] == len(a)


def test_seed_rows_must_be_free_free_pairs():
    D, e, free = _many_free_free_rows(1)
    fu, fv = np.nonzero(free)
    other = np.nonzero(fv != fv[0])[0][0]          # a free entry of another column
    with pytest.raises(ValueError, match="free-free pairs"):
        solve_constopt_gap(D, e, free, 0.1, 1e-6, rows=(np.array([0]), np.array([other])))


@pytest.mark.parametrize("lam", [0.001, 1.0])
def test_bound_with_the_entries_weight_bounds_stays_below_linprogs_optimum(lam):
    # at a small lambda the free entries' bounds k / (D + lam) are loose and hi Y the tighter
    # one; every round's bound must stay below the full optimum whichever is used
    D, e, free = _many_free_free_rows(3)
    opt = _linprog(D, e, free, lam, with_free_free=True)
    rounds = []
    _, st = solve_constopt_gap(D, e, free, lam, 1e-6, on_round=rounds.append)
    assert all(r["lower_bound"] <= opt * (1 + 1e-9) for r in rounds)
    assert opt <= st["lp_objective"] * (1 + 1e-9) and st["relative_gap"] <= 1e-6
