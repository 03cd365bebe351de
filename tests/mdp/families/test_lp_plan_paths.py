"""Every LP family through every path of its plan, forced by its tuning, at small n on the CPU.

Each build is checked three ways: the plan it recorded is the path forced, its LP optimum (or
certified loss and bound) agrees with scipy's linprog on the same LP (``reference_lp``), and its
matrix passes the privacy check without repair.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from scipy.optimize import linprog

import mdp
from mdp.families.constopt import ConstOPTTuning, constopt_lp, nn_replacement
from mdp.families.optimal import OptimalTuning
from mdp.families.spanner import SpannerTuning, greedy_spanner
from mdp.privacy.verification import certify
from mdp.spaces.metric_space import MetricSpace
from mdp.worst_case.column_blocks import BlockResources
from tests.support.reference_lp import _solve as worst_case_linprog
from tests.support.reference_lp import optimal_loss_linprog

SPACE = MetricSpace.from_points(np.random.default_rng(11).uniform(0, 3, size=(14, 2)))
EPS = 1.0


def _private(mech, eps=EPS):
    _, report = certify(mech.matrix, mech.space.distances, eps, repair=False)
    assert report["verified"]


def _path(mech) -> tuple[str, str, str]:
    plan = mech.report.plan
    _attempts_follow_steps(mech)
    return plan.method.value, plan.solver.value, plan.device.value


def _attempts_follow_steps(mech):
    """The plan printed is what ran: the attempts are the plan's steps, in order from its first
    (from its first HiGHS step for a lambda of ConstOPTMech after the row-block method found the
    LP too dense for another lambda)."""
    steps = [s.label for s in mech.report.plan.steps]
    groups = {}
    for a in mech.report.attempts:
        lam, _, label = a.step.rpartition(": ") if a.step.startswith("lambda = ") else ("", "", a.step)
        groups.setdefault(lam, []).append(label)
    assert steps and groups
    for labels in groups.values():
        first = steps.index(labels[0])
        assert first == 0 or (first == 1 and mech.report.plan.steps[0].solver == "blocks")
        assert labels == steps[first:first + len(labels)]


# --- OPTMech --------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def optimum():
    return optimal_loss_linprog(SPACE.distances, EPS)[0]


@pytest.mark.parametrize(("params", "tuning", "path"), [
    ({"solver": "simplex"}, OptimalTuning(), ("lazy", "simplex", "cpu")),
    ({"solver": "ipm"}, OptimalTuning(), ("lazy", "ipm", "cpu")),
    ({}, OptimalTuning(ipm_min_n=10, chain_detour=np.inf, chain_slack=np.inf),
     ("lazy", "ipm", "cpu")),
    ({"method": "full"}, OptimalTuning(), ("full", "ipm", "cpu")),
    ({}, OptimalTuning(blocks_min_n=10), ("lazy", "blocks", "cpu")),
    ({"solver": "blocks"}, OptimalTuning(), ("lazy", "blocks", "cpu")),
], ids=["lazy-simplex", "lazy-ipm", "auto-ipm", "full", "auto-blocks", "blocks"])
def test_optimal_paths(params, tuning, path, optimum):
    mech = mdp.build("optimal", SPACE, EPS, tuning=tuning, **params)
    assert _path(mech) == path
    report = mech.report
    assert report.attempts and report.attempts[0].outcome == "ok" and not report.fallbacks
    assert report.bound <= optimum * (1 + 3e-7) and report.loss >= optimum * (1 - 3e-7)
    assert report.loss == pytest.approx(optimum, rel=1.1e-6)
    assert report.gap <= 1e-6 and report.privacy["verified"]
    assert mech.stats["plan"]["solver"] == path[1]          # the mapping view keeps the keys
    _private(mech)


def test_optimal_blocks_finish_on_highs(optimum):
    # a target the rounds cannot certify: HiGHS's lazy finish from their rows
    mech = mdp.build("optimal", SPACE, EPS, solver="blocks",
                     tuning=OptimalTuning(retry_rtol=1e-13, finish_solver="simplex"))
    assert mech.report.plan.option("finish") == "simplex"
    assert mech.stats["block_rounds"] >= 1 and "lazy row generation" in mech.stats["formulation"]
    assert mech.loss() == pytest.approx(optimum, rel=1e-7)
    _private(mech)


def test_optimal_lower_coefficient_limits_are_tried_in_order(optimum):
    # an unreachable target: every coefficient limit of the tuning is tried, each a relaxation
    with pytest.warns(mdp.AccuracyWarning):
        mech = mdp.build("optimal", SPACE, EPS, solver="simplex",
                         tuning=OptimalTuning(retry_rtol=1e-15, absolute_gap=0.0,
                                              max_coefficients=(1e12, 1e7, 1e5)))
    steps = [a.step for a in mech.report.attempts]
    assert len(steps) == 3 and all(f"rows up to {c:g}" in s for c, s in zip((1e12, 1e7, 1e5), steps,
                                                                            strict=True))
    assert mech.report.bound <= optimum * (1 + 3e-7)
    assert mech.loss() == pytest.approx(optimum, rel=1e-6)
    _private(mech)


def test_optimal_falls_back_to_the_exponential_mechanism():
    # no attempt is accepted (every row "violated"): the exponential mechanism, and why
    with pytest.warns(mdp.AccuracyWarning, match="exponential mechanism"):
        mech = mdp.build("optimal", SPACE, EPS, solver="simplex",
                         tuning=OptimalTuning(violation_atol=-1.0))
    assert [a.outcome for a in mech.report.attempts] == ["failed"] * 3
    assert mech.report.fallbacks and mech.stats["fallback"]["to"] == "exponential"
    expo = mdp.build("exponential", SPACE, EPS)
    assert mech.loss() == pytest.approx(expo.loss(), rel=1e-12)
    _private(mech)


def test_optimal_second_step_runs_when_the_first_fails(optimum, inject):
    # the first step's solve fails (injected): the plan's second step, HiGHS's lazy rounds at the
    # next coefficient limit (a relaxation here that leaves no row out), reaches the optimum
    from mdp.lp import LPError
    from mdp.worst_case.block_rounds import solve_worst_case_lp_block_rounds
    from mdp.worst_case.solve import solve_worst_case_lp_lazy

    def fail_first_limit(*args, max_coefficient=None, **kwargs):
        if max_coefficient in (None, 1e12):
            raise LPError("injected failure")
        return solve_worst_case_lp_lazy.default(*args, max_coefficient=max_coefficient, **kwargs)

    def fail(*args, **kwargs):
        raise LPError("injected failure")

    inject(solve_worst_case_lp_lazy, fail_first_limit)
    inject(solve_worst_case_lp_block_rounds, fail)
    for params in ({"solver": "simplex"}, {"solver": "blocks"}):
        mech = mdp.build("optimal", SPACE, EPS, **params)
        _attempts_follow_steps(mech)
        assert [a.outcome for a in mech.report.attempts] == ["failed", "ok"]
        assert mech.report.attempts[1].step == mech.report.plan.steps[1].label
        assert "1e+07" in mech.report.attempts[1].step
        assert mech.loss() == pytest.approx(optimum, rel=1.1e-6)
        _private(mech)


# --- SpannerMech ----------------------------------------------------------------------------

def _spanner_optimum(space, eps, stretch=1.5):
    D = space.distances
    n = D.shape[0]
    E = greedy_spanner(D, stretch)
    pu, pv = np.r_[E[:, 0], E[:, 1]], np.r_[E[:, 1], E[:, 0]]
    u, v = np.repeat(pu, n), np.repeat(pv, n)
    w = np.tile(np.arange(n), len(pu))
    return worst_case_linprog(D, eps / stretch, u, v, w)[0]


@pytest.mark.parametrize(("space", "params", "tuning", "path", "rows"), [
    (SPACE, {}, SpannerTuning(), ("full", "hipo", "cpu"), None),
    (SPACE, {"solver": "ipm"}, SpannerTuning(), ("full", "ipm", "cpu"), None),
    (SPACE, {}, SpannerTuning(full_solver="clarabel"), ("full", "clarabel", "cpu"), None),
    (SPACE, {}, SpannerTuning(blocks_from_n=10), ("full", "blocks", "cpu"), None),
    (SPACE, {}, SpannerTuning(lazy_edges_per_point=0.0, path_slack=-1.0, ipm_min_n=10,
                              chain_slack=np.inf), ("lazy", "ipm", "cpu"), "edges"),
    (SPACE, {}, SpannerTuning(lazy_edges_per_point=0.0, path_slack=-1.0, chain_slack=-1.0),
     ("lazy", "simplex", "cpu"), "edges"),
    (SPACE, {}, SpannerTuning(lazy_edges_per_point=0.0, path_slack=np.inf),
     ("lazy", "simplex", "cpu"), "paths"),
], ids=["full-hipo", "full-ipm", "full-clarabel", "full-blocks", "lazy-edges-ipm",
        "lazy-edges-simplex", "lazy-paths"])
def test_spanner_paths(space, params, tuning, path, rows):
    ref = _spanner_optimum(space, EPS)
    mech = mdp.build("spanner", space, EPS, tuning=tuning, **params)
    assert _path(mech) == path
    if rows is not None:
        assert mech.report.plan.option("rows") == rows == mech.stats["lazy_rows"]
    st = mech.stats
    assert st["lower_bound"] <= ref * (1 + 1e-6) + 1e-12
    assert st["lp_objective"] == pytest.approx(ref, rel=2e-5)
    assert mech.report.attempts[0].outcome == "ok" and mech.report.privacy["verified"]
    _private(mech)


def test_spanner_blocks_failure_falls_back_to_the_exponential_mechanism():
    # the column-block method asked for by name, without the memory for its inverses: no chain
    # follows an explicit solver, and the exponential mechanism is returned with the reason
    mech = mdp.build("spanner", SPACE, EPS, solver="blocks",
                     tuning=SpannerTuning(resources=BlockResources(max_block_bytes=10)))
    assert [a.outcome for a in mech.report.attempts] == ["failed"] * 3
    assert mech.stats["fallback"]["to"] == "exponential" and mech.report.fallbacks
    _private(mech)


def test_spanner_blocks_default_falls_back_to_hipo_without_memory():
    # the default order at large n asks the plan where the inverses fit: nowhere, so HiPO
    mech = mdp.build("spanner", SPACE, EPS, tuning=SpannerTuning(
        blocks_from_n=10, resources=BlockResources(max_block_bytes=10)))
    assert _path(mech) == ("full", "hipo", "cpu")
    _private(mech)


@pytest.mark.parametrize("tuning", [SpannerTuning(), SpannerTuning(blocks_from_n=10)],
                         ids=["hipo", "blocks"])
def test_spanner_second_step_runs_when_every_solver_of_the_first_fails(tuning, inject):
    # every solver of the first step's chain fails (injected): the second step runs HiPO's chain
    # (the column-block method is not tried again) at the next limit, to linprog's optimum
    from mdp.lp import LPError
    from mdp.lp.conic import solve_clarabel
    from mdp.lp.highs import run_highs
    from mdp.worst_case.column_blocks import solve_worst_case_blocks

    ref = _spanner_optimum(SPACE, EPS)
    limits = []

    def first_fails(lp):
        if lp.num_row and not limits:
            raise LPError("injected failure")
        return run_highs.default(lp)

    def fail(*args, **kwargs):
        raise LPError("injected failure")

    def note_limit(*args, max_coefficient, **kwargs):
        try:
            return solve_worst_case_lp.default(*args, max_coefficient=max_coefficient, **kwargs)
        finally:
            limits.append(max_coefficient)

    from mdp.worst_case.solve import solve_worst_case_lp

    inject(run_highs, first_fails)
    inject(solve_clarabel, fail)
    inject(solve_worst_case_blocks, fail)
    inject(solve_worst_case_lp, note_limit)
    mech = mdp.build("spanner", SPACE, EPS, tuning=tuning)
    _attempts_follow_steps(mech)
    steps = mech.report.plan.steps
    assert [a.outcome for a in mech.report.attempts] == ["failed", "ok"]
    assert steps[1].solver == "hipo" and limits == [1e12, 1e7]
    assert mech.stats["lp_objective"] == pytest.approx(ref, rel=2e-5)
    _private(mech)


# --- ConstOPTMech ---------------------------------------------------------------------------

def _constopt_optimum(space, eps, r, lam):
    free = nn_replacement(space.distances, r)
    c, A, lo, hi, _, _ = constopt_lp(space.distances, eps / 2, free, lam, split=True)
    up = np.isfinite(hi)
    ref = linprog(c, A_ub=np.vstack([A[up].toarray(), -A[~up].toarray()]),
                  b_ub=np.r_[hi[up], -lo[~up]], bounds=[(0, None)] * A.shape[1],
                  method="highs-ds")
    assert ref.status == 0
    return ref.fun


SMALL_ROW_BLOCKS = ConstOPTTuning(row_block_min_n=10)


@pytest.mark.parametrize(("params", "tuning", "path"), [
    ({}, ConstOPTTuning(), ("lazy", "hipo")),
    ({"lazy": False}, ConstOPTTuning(), ("full", "hipo")),
    ({"solver": "simplex"}, ConstOPTTuning(), ("lazy", "simplex")),
    ({}, ConstOPTTuning(highs_solver="ipm"), ("lazy", "ipm")),
    ({}, SMALL_ROW_BLOCKS, ("lazy", "blocks")),
    ({"solver": "blocks"}, ConstOPTTuning(), ("lazy", "blocks")),
    ({"gap": 1e-4}, ConstOPTTuning(), ("lazy", "blocks")),
], ids=["hipo-lazy", "hipo-full", "simplex", "tuned-ipm", "auto-blocks", "blocks", "gap"])
def test_constopt_paths(params, tuning, path):
    ref = _constopt_optimum(SPACE, EPS, 4, 0.1)
    mech = mdp.build("constopt", SPACE, EPS, r=4, lam=0.1, tuning=tuning, **params)
    assert _path(mech)[:2] == path
    st = mech.stats
    assert "ipm_failure" not in st and not mech.report.fallbacks
    if path[1] == "blocks":
        target = params.get("gap", tuning.exact_gap)
        assert "row-block" in st["solver"] and st["relative_gap"] <= target
        assert st["lower_bound"] <= ref * (1 + 1e-9)
        assert st["lp_objective"] == pytest.approx(ref, rel=2 * target)
    else:
        assert "HiGHS" in st["solver"]
        assert st["lp_objective"] == pytest.approx(ref, rel=1e-8, abs=1e-9)
    _private(mech)


def test_constopt_row_blocks_hand_a_dense_lp_to_highs():
    ref = _constopt_optimum(SPACE, EPS, 4, 0.1)
    mech = mdp.build("constopt", SPACE, EPS, r=4, lam=0.1,
                     tuning=replace(SMALL_ROW_BLOCKS, row_block_max_violated=0.0))
    assert _path(mech)[1] == "blocks" and mech.report.plan.option("max_violated") == 0.0
    assert "free-free rows" in mech.stats["ipm_failure"] and mech.report.fallbacks
    assert [a.outcome for a in mech.report.attempts] == ["failed", "ok"]
    assert mech.stats["lp_objective"] == pytest.approx(ref, rel=1e-8, abs=1e-9)
    _private(mech)


def test_constopt_row_blocks_that_cannot_certify_hand_over_to_highs(inject):
    # a lower bound too weak to certify 1e-6 (as e^{-e D} underflowing once did at very large
    # epsilon): the build hands the lambda to HiGHS instead of returning an uncertified point
    from mdp.families.constopt.ipm import solve_constopt_gap
    from tests.support.solvers import uncertified_row_blocks

    inject(solve_constopt_gap, uncertified_row_blocks)
    space = MetricSpace.from_points(np.random.default_rng(42).random((14, 2)) * 3)
    eps = 4.0
    mech = mdp.build("constopt", space, eps, r=4, lam=0.1,
                     tuning=replace(SMALL_ROW_BLOCKS, row_block_max_scale=np.inf))
    assert _path(mech)[1] == "blocks" and "ipm_failure" in mech.stats
    assert "HiGHS" in mech.stats["solver"]
    assert mech.stats["privacy"]["measured_eps"] <= eps * (1 + 1e-9)
    direct = mdp.build("constopt", space, eps, r=4, lam=0.1)
    assert _path(direct)[1] == "hipo"
    assert mech.stats["lp_objective"] == pytest.approx(direct.stats["lp_objective"], rel=1e-9)


def test_every_plan_says_why():
    for mech in (mdp.build("optimal", SPACE, EPS), mdp.build("spanner", SPACE, EPS),
                 mdp.build("constopt", SPACE, EPS, r=4, lam=0.1)):
        plan = mech.report.plan
        assert plan.method.reason and plan.solver.reason and plan.device.reason
        assert plan.fallbacks and plan.fallbacks[-1].step == "the exponential mechanism"
        lines = mech.report.describe()
        assert lines[0].startswith("plan: ") and any(line.startswith("attempt 1:") for line in lines)


def test_constopt_ipx_step_runs_when_hipo_fails(inject):
    # HiPO's solves fail (injected): the plan's second step, IPX at the same limit, solves the
    # LP to linprog's optimum
    from mdp.lp import LPError
    from mdp.lp.highs import run_highs

    def no_hipo(lp):
        if lp.solver == "hipo":
            raise LPError("injected failure")
        return run_highs.default(lp)

    inject(run_highs, no_hipo)
    ref = _constopt_optimum(SPACE, EPS, 4, 0.1)
    mech = mdp.build("constopt", SPACE, EPS, r=4, lam=[0.1, 1.0])
    _attempts_follow_steps(mech)
    assert [a.outcome for a in mech.report.attempts] == ["failed", "ok"] * 2
    assert mech.report.plan.steps[1].label.startswith("HiGHS (ipm")
    assert "(hipo)" in mech.stats["failed_attempts"][0]
    single = mdp.build("constopt", SPACE, EPS, r=4, lam=0.1)
    assert single.stats["lp_objective"] == pytest.approx(ref, rel=1e-8, abs=1e-9)
    _private(mech)
