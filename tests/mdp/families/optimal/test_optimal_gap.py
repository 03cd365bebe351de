"""OPTMech ``gap=``: certified near-optimal mode, against the full LP in scipy linprog."""

import warnings

import numpy as np
import pytest

import mdp
from mdp.families import optimal
from mdp.families.optimal import OptimalTuning
from mdp.spaces.metric_space import MetricSpace
from tests.support.reference_lp import optimal_loss_linprog


def _space(seed: int, n: int) -> MetricSpace:
    pts = np.random.default_rng(seed).uniform(0, 3, size=(n, 2))
    return MetricSpace.from_points(pts)


@pytest.mark.parametrize("seed,n,gap", [(0, 8, 0.05), (1, 10, 1e-3), (2, 12, 0.2), (3, 12, 0.0)])
def test_gap_bound_valid_and_loss_within_gap(seed, n, gap):
    space = _space(seed, n)
    eps = 1.0
    opt, _ = optimal_loss_linprog(space.distances, eps)
    mech = mdp.build("optimal", space, eps, gap=gap, knn=0, solver="simplex")
    st = mech.stats
    assert st["gap_target"] == max(gap, 1e-6)  # below the exact target: the exact target
    assert st["target_met"]
    assert st["lower_bound"] <= opt * (1 + 1e-9) + 1e-12  # the bound never exceeds the optimum
    loss = mech.loss()
    assert loss >= opt * (1 - 1e-9)  # certified private, so never below the optimum
    assert loss - st["lower_bound"] <= max(gap, 1e-6) * loss + 1e-12
    assert st["relative_gap"] == pytest.approx((loss - st["lower_bound"]) / loss, abs=1e-9)


def test_default_is_exact():
    space = _space(4, 10)
    opt, _ = optimal_loss_linprog(space.distances, 1.0)
    mech = mdp.build("optimal", space, 1.0)
    assert mech.stats["gap_target"] == 1e-6
    assert mech.loss() == pytest.approx(opt, rel=1e-6)


@pytest.mark.parametrize("bad", [1.0, -0.1, 2.0])
def test_gap_outside_domain_refused(bad):
    with pytest.raises(mdp.errors.ParameterError, match="gap"):
        mdp.build("optimal", _space(0, 6), 1.0, gap=bad)


def test_gap_needs_lazy():
    with pytest.raises(mdp.errors.ParameterError, match="gap"):
        mdp.build("optimal", _space(0, 6), 1.0, gap=1e-3, method="full")


@pytest.mark.parametrize("space", ["random", "grid"])
def test_gap_with_interior_rounds_stays_interior(space):
    # gap mode with solver="ipm": every round is an IPM solve without crossover; the bound stays
    # below the independent optimum and the loss within the gap
    from mdp.lp import Phase
    from mdp.worst_case.solve import LazyRoundsTuning, gap_ipm_tolerance, lazy_policy

    IPM_OPTIMALITY_TOL = LazyRoundsTuning().ipm_optimality_tol
    IPM_ROUND_TOL = LazyRoundsTuning().ipm_round_tol

    if space == "random":
        sp_ = _space(5, 30)
    else:
        sp_ = MetricSpace.from_points(np.array([(i, j) for i in range(5) for j in range(6)], float))
    eps, gap = 0.7, 1e-2
    opt, _ = optimal_loss_linprog(sp_.distances, eps)
    mech = mdp.build("optimal", sp_, eps, gap=gap, solver="ipm")
    st = mech.stats
    assert set(st["phases"]) <= {"interior", "refine"} and st["crossover_iterations"] == 0
    assert st["lower_bound"] <= opt * (1 + 1e-9)
    assert opt * (1 - 1e-9) <= mech.loss() <= st["lower_bound"] + gap * mech.loss() + 1e-12
    # both modes scout with loose interior rounds that only find rows; then exact mode solves
    # the row set exactly (crossover, warm simplex) and gap mode refines its interior points,
    # which it repairs into the returned matrix, at the tighter gap_ipm_tolerance
    exact, near = lazy_policy("ipm"), lazy_policy("ipm", gap=gap)
    assert exact.interior_ipm_tolerance == near.interior_ipm_tolerance == IPM_ROUND_TOL == 1e-2
    assert exact.switch_to is Phase.CROSSOVER and near.switch_to is Phase.REFINE
    assert near.refine_ipm_tolerance == gap_ipm_tolerance(gap) == 1e-7
    assert exact.switch_fraction == near.switch_fraction > 0
    assert gap_ipm_tolerance(1e-6) == IPM_OPTIMALITY_TOL < IPM_ROUND_TOL


def test_balanced_envelope_fixed_point_and_repair():
    from mdp.families.exponential import exponential_matrix
    from mdp.lp.output import balanced_envelope, candidate_loss, private_candidate
    from mdp.worst_case.solve import max_privacy_violation

    space = _space(6, 14)
    D, eps = space.distances, 0.8
    E = exponential_matrix(D, eps)  # eps-mDP and row-stochastic: a fixed point
    assert max_privacy_violation(E, D, eps) <= 1e-15
    assert np.allclose(balanced_envelope(E, D, eps), E, rtol=1e-12, atol=0)
    # a perturbed optimum: balancing first, then the envelope and least uniform mix, is private
    # and loses less than the envelope and uniform mix alone
    opt = mdp.build("optimal", space, eps, knn=0, solver="simplex").matrix
    noisy = opt * np.exp(np.random.default_rng(0).uniform(-0.05, 0.05, opt.shape))
    noisy /= noisy.sum(axis=1, keepdims=True)
    B = balanced_envelope(noisy, D, eps)
    assert np.allclose(B.sum(axis=1), 1.0, atol=1e-12) and np.all(B >= 0)
    R, log, _ = private_candidate(B, D, eps)
    R0, log0, _ = private_candidate(noisy, D, eps)
    assert not log and max_privacy_violation(R, D, eps) <= 1e-12
    opt_loss, _ = optimal_loss_linprog(D, eps)
    assert opt_loss * (1 - 1e-9) <= candidate_loss(R, D, log) < candidate_loss(R0, D, log0)


def test_lagrangian_bound_valid_for_any_multipliers_and_tight_at_the_duals():
    # the bound minimises the reduced costs over row-stochastic M: valid for any multipliers,
    # equal to the optimum at exact duals, never below the old box bound sum min(0, r)
    from scipy.optimize import linprog

    from mdp.worst_case.solve import lagrangian_lower_bound, primal_rows

    rng = np.random.default_rng(5)
    n = 8
    xy = rng.random((n, 2)) * 3
    D = np.sqrt(((xy[:, None] - xy[None]) ** 2).sum(-1))
    pu, pv = np.nonzero(~np.eye(n, dtype=bool))
    A = primal_rows(D, pu, pv, np.full(len(pu), 0.8))
    N = n * n
    c = np.zeros(N + 1)
    c[-1] = 1.0
    res = linprog(c, A_ub=-A[n:], b_ub=np.zeros(A.shape[0] - n), A_eq=A[:n], b_eq=np.ones(n),
                  bounds=[(0, None)] * N + [(None, None)], method="highs")
    y_star = np.r_[res.eqlin.marginals, -res.ineqlin.marginals]
    assert lagrangian_lower_bound(A, y_star, n) == pytest.approx(res.fun, abs=1e-9)

    def box_bound(y):
        y = np.array(y, dtype=float)
        y[n:] = np.maximum(y[n:], 0.0)
        y[n:] /= y[n:2 * n].sum()
        return y[:n].sum() + np.minimum((c - A.T @ y)[:-1], 0.0).sum()

    gains = []
    for scale in (1e-6, 1e-3, 1e-1, 1.0):
        for _ in range(20):
            y = y_star + scale * rng.normal(size=y_star.size) * (np.abs(y_star) + 1e-3)
            new = lagrangian_lower_bound(A, y, n)
            assert new <= res.fun + 1e-12
            assert new >= box_bound(y) - 1e-12
            gains.append(new - box_bound(y))
    assert max(gains) > 0          # strictly tighter for some inexact multipliers


def test_gap_target_met_relative_or_absolute_floor():
    D = np.array([[0.0, 2.0], [2.0, 0.0]])
    assert optimal.gap_target_met(1.0, 1.0 - 1e-7, 1e-6, D)
    assert not optimal.gap_target_met(1.0, 1.0 - 1e-5, 1e-6, D)
    assert optimal.gap_target_met(1.0, 1.0 - 0.999e-3, 1e-3, D)
    # the optimum itself ~0 (eps 400 on 60 points: loss 7.9e-36, bound 0): met by the floor
    assert optimal.gap_target_met(7.9e-36, 0.0, 1e-6, D)
    assert optimal.gap_target_met(OptimalTuning().absolute_gap * 2.0, 0.0, 1e-6, D)
    assert not optimal.gap_target_met(OptimalTuning().absolute_gap * 2.0 * 1.01, 0.0, 1e-6, D)


def test_exact_builds_meet_their_target_without_a_warning():
    space = _space(5, 12)
    with warnings.catch_warnings():
        warnings.simplefilter("error", mdp.AccuracyWarning)
        mech = mdp.build("optimal", space, 1.0)
    assert mech.stats["target_met"]
    assert mech.stats["relative_gap"] <= 1e-6


@pytest.mark.parametrize("gap", [None, 1e-3])
def test_a_build_certified_above_its_target_warns_and_says_so(gap, inject):
    """A weaker (still valid) bound than the rounds found leaves the certificate above the
    target: the matrix stands, certified private, ``target_met`` is False and the warning
    names the space, epsilon, the gap reached and the target."""
    from mdp.worst_case.solve import solve_worst_case_lp_lazy

    def weaker_bound(*args, stop=None, **kwargs):
        # a lazy solve whose bound is 1% of the optimum below its own (each round's stop test
        # sees the same weaker bound, so the rounds end where an exact solve ends)
        M, stats = solve_worst_case_lp_lazy.default(*args, **kwargs)
        stats["lower_bound"] -= 0.01 * stats["lp_objective"]
        return M, stats

    inject(solve_worst_case_lp_lazy, weaker_bound)
    space = _space(6, 12)
    opt, _ = optimal_loss_linprog(space.distances, 1.0)
    with pytest.warns(mdp.AccuracyWarning,
                      match=r"n = 12, epsilon = 1\): certified within 1% of the optimum, a relative "
                            r"gap of 0\.01") as rec:
        mech = mdp.build("optimal", space, 1.0, gap=gap)
    target = "exact" if gap is None else "gap=0.001"
    assert target in str(rec[0].message)
    assert rec[0].filename == __file__  # points at the caller of mdp.build
    st = mech.stats
    assert not st["target_met"]
    assert st["relative_gap"] == pytest.approx(0.01, rel=0.05)
    assert st["lower_bound"] <= opt
    assert mech.loss() == pytest.approx(opt, rel=max(gap or 0, 1e-6))
    _, report = mdp.certify(mech.matrix, space.distances, 1.0, repair=False)
    assert report["verified"] and not report["repaired"]


@pytest.mark.parametrize("gap,rtol,exact", [(None, 1e-6, True), (1e-3, 1e-3, False),
                                            (1e-9, 1e-6, False), (0.0, 1e-6, False)])
def test_the_plan_decides_the_gap_target_once(gap, rtol, exact):
    """The plan's target is what the build reads: the relative gap aimed at (a gap below the
    exact target is raised to it) and whether the rounds may stop before the optimum."""
    from mdp.families.optimal.plan import plan
    from mdp.lp.plan import GapTarget

    target = plan(_space(0, 8), 1.0, gap=gap).option("target")
    assert target == GapTarget(rtol, exact=exact)
    assert target.stop_gap == (None if exact else rtol)
    assert target.asked() == ("exact (gap <= 1e-06)" if exact else f"gap={rtol:g}")
    assert str(target) == f"{rtol:g}"     # as `mdp build -v` prints it


def test_every_lazy_solve_stops_at_the_plans_target(inject):
    """A gap asked for below the exact target is raised to it for every solve of the build, the
    lazy rounds' stop included (not the gap as asked), and an exact build's rounds never stop
    early."""
    from mdp.worst_case.solve import solve_worst_case_lp_lazy

    seen = []

    def spy(*args, **kwargs):
        seen.append((kwargs["gap"], kwargs["stop"] is not None))
        return solve_worst_case_lp_lazy.default(*args, **kwargs)

    inject(solve_worst_case_lp_lazy, spy)
    space = _space(7, 10)
    mdp.build("optimal", space, 1.0, gap=1e-9, solver="simplex")
    mdp.build("optimal", space, 1.0, solver="simplex")
    assert seen == [(1e-6, True), (None, False)]


def test_expected_objective_refuses_a_gap_and_the_full_method():
    space = _space(0, 6)
    with pytest.raises(mdp.errors.ParameterError, match=r"gap=None .* got gap=0\.001"):
        mdp.build("optimal", space, 1.0, objective="expected", gap=1e-3)
    with pytest.raises(mdp.errors.ParameterError, match="got method='full'"):
        mdp.build("optimal", space, 1.0, objective="expected", method="full")
