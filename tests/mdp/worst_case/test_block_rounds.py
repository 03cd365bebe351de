"""OPTMech by row generation over column blocks (mdp.worst_case.block_rounds, solver="blocks") against
the textbook LP solved by SciPy's HiGHS, and the per-column row sets (TripleBlockLP)."""

import math
from dataclasses import replace

import numpy as np
import pytest
from scipy.optimize import linprog
from scipy.sparse import coo_matrix, vstack

import mdp
from mdp.errors import ParameterError
from mdp.families import optimal as opt
from mdp.families.optimal import OptimalTuning
from mdp.families.optimal import build as opt_build
from mdp.lp import LPError, progress
from mdp.lp.output import near_private_candidate
from mdp.privacy.verification import certify
from mdp.spaces.metric_space import MetricSpace
from mdp.worst_case import block_rounds as br
from mdp.worst_case import column_blocks as cb
from mdp.worst_case.column_blocks import TripleBlockLP, lagrangian_bound, solve_worst_case_triples
from mdp.worst_case.solve import initial_triples, privacy_rows, separate, solve_worst_case_lp_lazy
from tests.mdp.worst_case.test_column_blocks import grid
from tests.support.reference_lp import optimal_loss_bracket, optimal_loss_linprog

TUNING = br.BlockRoundsTuning()
OPT_TUNING = OptimalTuning()
#: the rounds cannot certify the exact target: HiGHS finishes
EXACTER = OptimalTuning(retry_rtol=1e-13)

SPACES = [MetricSpace.from_points(np.random.default_rng(s).random((n, 2)) * 5)
          for s, n in ((4, 10), (5, 16))] + [grid(4),
          MetricSpace.from_points(np.random.default_rng(6).normal(size=(14, 6)))]


def random_triples(n, rng, share=0.4):
    u, v, w = (a.ravel() for a in np.meshgrid(*[np.arange(n)] * 3, indexing="ij"))
    keep = (u != v) & (rng.random(u.size) < share)
    return u[keep], v[keep], w[keep]


def triples_optimum(D, eps, u, v, w):
    """The LP over the rows ``(u, v, w)`` only, by HiGHS's dual simplex through SciPy."""
    n = D.shape[0]
    A = -privacy_rows(D, eps, u, v, w)               # M_uw - e^{eps D_uv} M_vw <= 0
    rows = np.repeat(np.arange(n), n)
    loss = coo_matrix((np.r_[D.ravel(), -np.ones(n)],
                       (np.r_[rows, np.arange(n)], np.r_[np.arange(n * n), np.full(n, n * n)])),
                      shape=(n, n * n + 1))
    eq = coo_matrix((np.ones(n * n), (rows, np.arange(n * n))), shape=(n, n * n + 1))
    c = np.zeros(n * n + 1)
    c[-1] = 1.0
    A_ub = vstack([loss, A]).tocsr()
    res = linprog(c, A_ub=A_ub, b_ub=np.zeros(A_ub.shape[0]), A_eq=eq, b_eq=np.ones(n),
                  bounds=[(0, None)] * (n * n) + [(None, None)], method="highs-ds")
    assert res.status == 0
    return res.fun


def test_triple_operators_are_the_rows_and_their_adjoint():
    rng = np.random.default_rng(0)
    D = SPACES[1].distances
    n, eps = D.shape[0], 0.7
    u, v, w = random_triples(n, rng)
    lp = TripleBlockLP(D, u, v, w, eps)
    X = rng.random((n, n))                              # X[w, u] = M_uw
    M = X.T
    order = np.lexsort((u, v, w))
    ou, ov, ow = u[order], v[order], w[order]
    brute = M[ov, ow] - np.exp(-eps * D[ou, ov]) * M[ou, ow]
    np.testing.assert_allclose(lp.privacy(X), brute, rtol=1e-14, atol=1e-15)
    Z = rng.random(len(u))
    assert np.sum(lp.privacy(X) * Z) == pytest.approx(np.sum(X * lp.privacy_t(Z)), rel=1e-12)
    # the rows of one column, as the block is filled from them
    for col in (0, n // 2, n - 1):
        ri, rj, c, d = lp.block_rows(col, np.arange(len(u), dtype=float))
        sel = ow == col
        np.testing.assert_array_equal(ri, ov[sel])
        np.testing.assert_array_equal(rj, ou[sel])
        np.testing.assert_allclose(-c, np.exp(-eps * D[ou[sel], ov[sel]]))
        np.testing.assert_array_equal(d, np.nonzero(sel)[0])


@pytest.mark.parametrize("space", SPACES[:3], ids=["rand10", "rand16", "grid4"])
@pytest.mark.parametrize("eps", [0.3, 2.0])
def test_triples_method_matches_linprog_and_bounds_it(space, eps):
    rng = np.random.default_rng(1)
    D = space.distances
    n = D.shape[0]
    u, v, w = random_triples(n, rng, share=0.3)
    ref = triples_optimum(D, eps, u, v, w)
    M, stats = solve_worst_case_triples(D, u, v, w, eps)
    near = 2e-5 * (1 + ref)
    assert stats["privacy_rows"] == len(u)
    assert ref - near <= stats["lower_bound"] <= ref + 1e-9
    assert stats["lp_objective"] == pytest.approx(ref, abs=near)
    assert np.abs(M.sum(axis=1) - 1).max() <= 1e-6
    assert (M[u, w] - np.exp(eps * D[u, v]) * M[v, w]).max() <= 1e-6


def test_lagrangian_bound_of_any_multipliers_is_below_the_optimum():
    rng = np.random.default_rng(2)
    D = SPACES[0].distances
    n, eps = D.shape[0], 1.0
    u, v, w = random_triples(n, rng, share=0.5)
    lp = TripleBlockLP(D, u, v, w, eps)
    ref = triples_optimum(D, eps, u, v, w)
    for _ in range(20):
        b = lagrangian_bound(lp, rng.normal(size=n), rng.random(n), rng.random(len(u)))
        assert b <= ref + 1e-12


@pytest.mark.parametrize("space", SPACES, ids=["rand10", "rand16", "grid4", "gauss14"])
@pytest.mark.parametrize("eps", [0.5, 3.0])
def test_rounds_bound_the_full_optimum(space, eps):
    D = space.distances
    n = D.shape[0]
    ref, _ = optimal_loss_linprog(D, eps)
    allowed = ~np.eye(n, dtype=bool)
    M, state, stats = br.solve_worst_case_lp_block_rounds(D, allowed, eps, knn=2)
    assert state.exhausted and not state.stopped
    assert state.rounds == len(state.trace) == stats["rounds"] >= 1
    assert stats["lower_bound"] <= ref * (1 + 3e-7)
    assert stats["lower_bound"] >= ref - 2e-5 * (1 + ref)
    # every row of the full LP is met to the tight rounds' separation tolerance (rand16 at 0.5
    # ended at 5.6e-10 when they separated at SEPARATION_TOL, 1e-8)
    assert TUNING.tight_separation_tol <= 1e-10
    assert stats["final_violation"] <= TUNING.tight_separation_tol
    K = np.exp(-eps * D)
    V = K[:, :, None] * M[:, None, :] - M[None, :, :]
    V[np.arange(n), np.arange(n)] = -np.inf
    assert V.max() <= TUNING.tight_separation_tol
    # the rows only grow, starting from the starting rows
    start = initial_triples(D, allowed, 2)
    assert stats["round_trace"][0]["rows"] == len(start[0])
    sizes = [t["rows"] for t in stats["round_trace"]]
    assert sizes == sorted(sizes)


def test_rounds_switch_to_tight_and_stop_when_the_test_accepts():
    D = SPACES[1].distances
    n = D.shape[0]
    allowed = ~np.eye(n, dtype=bool)
    calls = []

    def stop(M, bound):
        calls.append(bound)
        return True, 1.0

    M, state, stats = br.solve_worst_case_lp_block_rounds(D, allowed, 0.5, stop=stop)
    assert state.stopped and len(calls) == 1
    phases = [t["phase"] for t in stats["round_trace"]]
    assert phases[-1] == "tight" and set(phases[:-1]) <= {"loose"}
    assert stats["round_trace"][-1]["certified"] == 1.0


class _FakeIterate:
    def __init__(self, gap, bound):
        self.gap, self._bound, self.M = gap, bound, np.full((2, 2), 0.5)

    def bound(self):
        return self._bound

    def matrix(self):
        return self.M


def test_iterate_test_runs_on_each_tenfold_closer_iterate_and_keeps_the_best_bound():
    seen = []

    def stop(M, bound):
        seen.append(bound)
        return bound >= 2.0, 7.0

    test = br.IterateTest(stop, bound=1.0, below=1e-3)
    assert not test(_FakeIterate(2e-3, 5.0)) and seen == []          # above test_from
    assert not test(_FakeIterate(8e-4, 0.5)) and seen == [1.0]       # the rounds' bound stands
    assert test.below == pytest.approx(8e-4 / TUNING.test_step)
    assert not test(_FakeIterate(1e-4, 1.5)) and seen == [1.0]       # not yet 10x closer
    assert test(_FakeIterate(5e-5, 2.5)) and seen == [1.0, 2.5]
    assert test.accepted and test.loss == 7.0 and test.bound == 2.5 and test.tests == 2


@pytest.mark.parametrize("name, space, eps", [("rand16", SPACES[1], 0.5), ("gauss14", SPACES[3], 2.0),
                                              ("grid6", grid(6), 0.5)])
@pytest.mark.parametrize("gap", [1e-2, 1e-3])
def test_gap_rounds_stop_at_the_first_iterate_that_certifies(name, space, eps, gap):
    """In gap= mode the caller's test runs on a tight round's iterates: the rounds end inside
    the last round, with fewer iterations than with the round's last iterate only, and the
    repaired matrix is within ``gap`` of SciPy's optimum."""
    D = space.distances
    n = D.shape[0]
    ref, _ = optimal_loss_linprog(D, eps)
    allowed = ~np.eye(n, dtype=bool)
    kept = {}

    def stop(M, bound):
        R, log, _ = near_private_candidate(M, D, eps)
        loss = opt_build.candidate_loss(R, D, log)
        kept.update(M=M, R=R, loss=loss)
        return loss - bound <= gap * loss, loss

    runs = {}
    # the monitor's own effect with cold rounds (warm ones shorten the same rounds too), then
    # both together; the rounds run to gap / 100, so that the monitor has iterates to test
    # before their end (builds stop them at gap_round_tol, where the round's end often decides)
    for warm, test_from in ((False, None), (False, gap), (True, gap)):
        M, state, stats = br.solve_worst_case_lp_block_rounds(
            D, allowed, eps, stop=stop, tight_tol=gap / 100, test_from=test_from,
            tuning=br.BlockRoundsTuning(warm_start=warm))
        assert state.stopped
        runs[warm, test_from] = stats["ipm_iterations"]
        if test_from is None:
            continue
        assert stats["monitor_stopped"] and state.trace[-1]["iterate_tests"] >= 1
        assert kept["M"] is M                      # the matrix tested is the one returned
        assert kept["loss"] - state.bound <= gap * kept["loss"]
        assert state.bound <= ref * (1 + 1e-9) and ref <= kept["loss"] * (1 + 1e-9)
        assert kept["loss"] <= ref * (1 + gap) / (1 - gap)
        certify(kept["R"], D, eps, repair=False)
    assert runs[False, gap] < runs[False, None]


@pytest.mark.parametrize("gap", [None, 1e-3])
def test_tight_rounds_of_exact_builds_separate_finer(monkeypatch, gap):
    seen = []

    def spy(M, D, eps, allowed, tol):
        seen.append(tol)
        return separate(M, D, eps, allowed, tol)

    monkeypatch.setattr(br, "separate", spy)
    st = mdp.build("optimal", SPACES[1], 0.5, method="blocks", gap=gap).stats
    phases = [t["phase"] for t in st.get("block_round_trace", st["round_trace"])]
    assert "tight" in phases and len(seen) == len(phases)
    fine = TUNING.tight_separation_tol if gap is None else TUNING.separation_tol
    assert seen == [fine if p == "tight" else TUNING.separation_tol for p in phases]


def test_gap_round_tolerance():
    assert br.gap_round_tol(1e-3) == pytest.approx(1e-4)
    assert br.gap_round_tol(1e-5) == pytest.approx(1e-6)
    assert br.gap_round_tol(0.5) == 1e-4
    assert br.gap_round_tol(1e-9) == TUNING.tight_tol


def test_state_adds_only_new_rows():
    state = br.BlockRounds(rows=(np.array([0, 1]), np.array([1, 0]), np.array([2, 2])))
    added = state.add(np.array([0, 2, 2]), np.array([1, 0, 0]), np.array([2, 1, 1]), 3)
    assert added == 1
    keys = sorted(zip(*state.rows, strict=True))
    assert keys == [(0, 1, 2), (1, 0, 2), (2, 0, 1)]
    assert state.phase is br.BlockPhase.LOOSE
    assert state.add(np.array([0]), np.array([1]), np.array([2]), 3) == 0
    assert state.phase is br.BlockPhase.TIGHT


def test_state_stalls_after_tight_rounds_without_progress():
    state = br.BlockRounds(rows=(np.zeros(0, int),) * 3, bound=1.0)
    # relative gaps 0.0909 (progress), 0.0566 (not half), 0.0385 (half of 0.0909: progress), then
    # four rounds that do not halve 0.0385; the rows added never halve either
    gaps = [state.certify(loss, 100) for loss in (1.1, 1.06, 1.04, 1.039, 1.038, 1.037)]
    assert gaps == pytest.approx([0.1 / 1.1, 0.06 / 1.06, 0.04 / 1.04, 0.039 / 1.039,
                                  0.038 / 1.038, 0.037 / 1.037])
    assert not state.stalled and state.rounds_since_progress == 3
    assert state.certify(1.5, 60) == pytest.approx(0.037 / 1.037)     # the least loss counts
    assert state.stalled
    fresh = br.BlockRounds(rows=(np.zeros(0, int),) * 3, bound=1.0)
    for loss in (1.1, 1.05, 1.02, 1.01, 1.004):                       # halves each time
        fresh.certify(loss, 100)
    assert not fresh.stalled and fresh.rounds_since_progress == 0
    # a flat certificate while the rows still missing fall by half every other round (fastText,
    # n = 200, eps 6: 2.5e-2 to 2.4e-2 while 10,319, 5,637, 1,347, 295 rows were added)
    flat = br.BlockRounds(rows=(np.zeros(0, int),) * 3, bound=1.0)
    for added in (10319, 5637, 1347, 295, 290, 140, 100, 69, 60, 50, 40):
        flat.certify(1.025, added)
        assert not flat.stalled
    assert flat.rounds_since_progress == 3            # 69 is the last half (of 140)
    flat.certify(1.025, 36)
    assert flat.stalled


def test_pair_closure_returns_the_nearly_binding_rows_of_the_pairs():
    rng = np.random.default_rng(7)
    D = SPACES[1].distances
    n, eps, margin, tol = D.shape[0], 3.0, 1.0, 1e-6
    M = rng.random((n, n)) ** 6                       # entries spread over many decades
    M /= M.sum(axis=1, keepdims=True)
    u = np.array([0, 3, 5, 5])
    v = np.array([1, 2, 9, 0])
    cu, cv, cw = br.pair_closure(M, D, eps, u, v, margin=margin, tol=tol)
    brute = {(a, b, w) for a, b in zip(u, v, strict=True) for w in range(n)
             if math.exp(-eps * D[a, b]) * M[a, w] > tol
             and math.log(math.exp(-eps * D[a, b]) * M[a, w] / M[b, w]) >= -margin}
    got = set(zip(cu.tolist(), cv.tolist(), cw.tolist(), strict=True))
    assert got == brute and len(got) == len(cu)
    assert 0 < len(got) < len(u) * n                 # some columns in, some out
    # violated rows are always in (margin 0: exactly the rows at or beyond binding)
    cu, cv, cw = br.pair_closure(M, D, eps, u, v, margin=0.0)
    assert np.all(np.exp(-eps * D[cu, cv]) * M[cu, cw] >= M[cv, cw])


def test_state_returns_the_pairs_violated_again():
    state = br.BlockRounds(rows=(np.zeros(0, int),) * 3)
    n = 5
    u, v = state.recurring(np.array([0, 0, 3]), np.array([1, 1, 2]), n)
    assert len(u) == 0 and state.violated_pairs.tolist() == [1, 17]
    u, v = state.recurring(np.array([0, 4, 3, 3]), np.array([1, 0, 2, 2]), n)
    assert sorted(zip(u.tolist(), v.tolist(), strict=True)) == [(0, 1), (3, 2)]
    assert state.violated_pairs.tolist() == [1, 17, 20]


def test_pair_closure_fires_on_recurring_pairs_and_keeps_the_rounds_exact():
    """Tight rounds whose violations recur on the same pairs; the closure from the first of
    them (``closure_after`` = 0); the full LP's optimum bounded and every row met as before."""
    space = MetricSpace.from_points(np.random.default_rng(12).random((24, 2)) * 5)
    D, eps = space.distances, 4.0
    n = D.shape[0]
    ref, _ = optimal_loss_linprog(D, eps)
    allowed = ~np.eye(n, dtype=bool)
    # gated: no stop test, so no certified gap, so never three flat rounds: no closure
    _, plain_state, plain = br.solve_worst_case_lp_block_rounds(D, allowed, eps, knn=2)
    assert plain["closure_rows"] == 0 and len(plain_state.violated_pairs) > 0
    M, state, stats = br.solve_worst_case_lp_block_rounds(
        D, allowed, eps, knn=2, tuning=br.BlockRoundsTuning(closure_after=0))
    assert stats["closure_rows"] > 0
    assert stats["closure_rows"] == sum(t["closure"] for t in stats["round_trace"])
    assert state.exhausted and stats["final_violation"] <= TUNING.tight_separation_tol
    for st in (stats, plain):
        assert ref - 2e-5 * (1 + ref) <= st["lower_bound"] <= ref * (1 + 3e-7)
    _, _, off = br.solve_worst_case_lp_block_rounds(
        D, allowed, eps, knn=2, tuning=br.BlockRoundsTuning(closure_margin=None))
    assert off["closure_rows"] == 0 and off["rounds"] == plain["rounds"]


def test_state_counts_tight_rounds_without_a_falling_gap():
    state = br.BlockRounds(rows=(np.zeros(0, int),) * 3, bound=1.0)
    flats = []
    for loss, added in ((1.1, 100), (1.08, 40), (1.07, 10), (1.065, 2), (1.04, 1)):
        state.certify(loss, added)
        flats.append(state.flat_rounds)
    # the gap 0.0909 -> 0.074 -> 0.065 -> 0.061 (never half): flat while the rows fall; 0.0385
    # is below half of 0.0909
    assert flats == [0, 1, 2, 3, 0]
    assert state.rounds_since_progress == 0


def test_rounds_end_when_tight_rounds_stall():
    space = SPACES[1]
    D, eps = space.distances, 3.0
    n = D.shape[0]
    allowed = ~np.eye(n, dtype=bool)
    ref, _ = optimal_loss_linprog(D, eps)

    def never(M, bound):             # a certificate that never improves: relative gap 1/2
        return False, 2.0 * bound

    # cold rounds: the round counts below are theirs
    cold = br.BlockRoundsTuning(warm_start=False)
    M, state, stats = br.solve_worst_case_lp_block_rounds(D, allowed, eps, stop=never, tuning=cold)
    tight = [t for t in stats["round_trace"] if t["phase"] == "tight"]
    assert stats["rounds_ended"] == "no row violated" and len(tight) == 3 and not state.stalled
    # the rows added never count as progress
    stalling = br.BlockRoundsTuning(warm_start=False, stall_rounds=1, stall_factor=1e9)
    M, state, stats = br.solve_worst_case_lp_block_rounds(D, allowed, eps, stop=never,
                                                          tuning=stalling)
    tight = [t for t in stats["round_trace"] if t["phase"] == "tight"]
    assert stats["rounds_ended"] == "stalled" and state.stalled and not state.exhausted
    assert len(tight) == 2 and tight[-1]["added"] > 0
    assert stats["lower_bound"] <= ref * (1 + 1e-9)


@pytest.mark.parametrize("space", SPACES, ids=["rand10", "rand16", "grid4", "gauss14"])
@pytest.mark.parametrize("eps", [0.5, 1.5])
def test_optmech_by_blocks_is_exact_and_private(space, eps):
    ref, _ = optimal_loss_linprog(space.distances, eps)
    mech = mdp.build("optimal", space, eps, method="blocks")
    st = mech.stats
    assert st["method"] == "lazy" and st["plan"]["solver"] == "blocks"
    assert mech.report.plan.solver.value == "blocks"
    assert st["relative_gap"] <= OPT_TUNING.retry_rtol
    # the textbook LP through SciPy is accurate to HiGHS's tolerances (1e-7 to 3e-7 relative here)
    assert st["lower_bound"] <= ref * (1 + 3e-7)
    assert st["loss"] >= ref * (1 - 3e-7)
    assert st["loss"] == pytest.approx(ref, rel=1.1e-6)
    trace = st.get("block_round_trace", st["round_trace"])
    assert st["closure_rows"] == sum(t["closure"] for t in trace)
    certify(mech.matrix, space.distances, eps, repair=False)


def test_blocks_finish_with_highs_where_their_plateau_cannot_certify():
    space = SPACES[1]
    eps = 0.5
    ref, _ = optimal_loss_linprog(space.distances, eps)
    st = mdp.build("optimal", space, eps, method="blocks", tuning=EXACTER).stats
    assert st["block_rounds"] >= 1
    assert "lazy row generation" in st["formulation"]
    assert st["closure_rows"] == sum(t["closure"] for t in st["block_round_trace"])
    assert st["loss"] == pytest.approx(ref, rel=1e-7)
    assert st["lower_bound"] <= ref * (1 + 3e-7)


def test_blocks_keep_their_own_result_when_the_highs_finish_fails(inject):
    space = SPACES[1]
    eps = 0.5
    ref, _ = optimal_loss_linprog(space.distances, eps)
    def failing(*args, **kwargs):
        raise LPError("Unknown model status")

    inject(solve_worst_case_lp_lazy, failing)
    with pytest.warns(mdp.AccuracyWarning, match="Unknown model status"):
        # the rounds cannot certify: HiGHS finishes
        mech = mdp.build("optimal", space, eps, method="blocks", tuning=EXACTER)
    st = mech.stats
    assert "Unknown model status" in st["finish_error"] and not st["target_met"]
    assert st["rounds"] >= 1 and "column blocks" in st["formulation"]
    # every later attempt (HiGHS at lower coefficient limits) failed too
    assert (sum("Unknown model status" in a for a in st["attempts"])
            == len(OPT_TUNING.max_coefficients) - 1)
    assert [a.outcome for a in mech.report.attempts] == ["ok", "failed", "failed"]
    assert st["loss"] == pytest.approx(ref, rel=2e-6)
    assert st["loss"] >= ref * (1 - 3e-7) and st["lower_bound"] <= ref * (1 + 3e-7)
    certify(mech.matrix, space.distances, eps, repair=False)

    def timing_out(*args, **kwargs):
        raise mdp.lp.LPTimeout("LP time limit reached")

    inject(solve_worst_case_lp_lazy, timing_out)
    with pytest.raises(mdp.errors.SolverTimeout):
        # the caller's time limit, not the finish's budget, ran out
        mdp.build("optimal", space, eps, method="blocks", time_limit=30.0,
                  tuning=replace(EXACTER, finish_min_seconds=60.0))


def test_blocks_certify_an_earlier_round_by_a_later_bound_without_a_finish(inject):
    space = SPACES[1]
    eps = 0.5
    ref, _ = optimal_loss_linprog(space.distances, eps)
    rounds = br.solve_worst_case_lp_block_rounds.default

    def never_accept(*args, stop, **kwargs):
        # the stop test never accepts a round, as when a round's own bound is a little short
        return rounds(*args, stop=lambda M, bound: (False, stop(M, bound)[1]), **kwargs)

    def finish(*args, **kwargs):
        raise AssertionError("HiGHS's finish ran although the rounds were certified")

    inject(br.solve_worst_case_lp_block_rounds, never_accept)
    inject(solve_worst_case_lp_lazy, finish)
    mech = mdp.build("optimal", space, eps, method="blocks")
    st = mech.stats
    assert st["rounds_ended"] == "no row violated" and "finish_error" not in st
    assert st["certified_by"] == "an earlier round's matrix and the best bound"
    assert st["relative_gap"] <= OPT_TUNING.retry_rtol
    assert st["loss"] == pytest.approx(ref, rel=1.1e-6)
    trace = st.get("block_round_trace", st["round_trace"])
    assert st["closure_rows"] == sum(t["closure"] for t in trace)
    certify(mech.matrix, space.distances, eps, repair=False)


@pytest.mark.parametrize("outcome,where", [("runs out", "near"), ("fails", "near"),
                                           ("runs out", "far")])
def test_blocks_give_highs_a_bounded_finish(inject, outcome, where):
    # HiGHS's finish gets a bounded time; when it runs out (near the target or far from it) or
    # fails near it, the rounds' result stands and no later attempt follows (HiGHS's lazy
    # solves at lower coefficient limits, from scratch, cost far more than they can gain there)
    space = SPACES[1]
    eps = 0.5
    ref, _ = optimal_loss_linprog(space.distances, eps)
    # the rounds cannot certify: HiGHS finishes; they count as near the target, or as far
    near = replace(EXACTER, finish_near=1e12 if where == "near" else 1.0,
                   finish_time_factor=0.0, finish_min_seconds=5.0)
    calls = []

    def finish(*args, time_limit=None, max_coefficient=None, **kwargs):
        calls.append((time_limit, max_coefficient))
        if outcome == "fails":
            raise LPError("Unknown model status")
        raise mdp.lp.LPTimeout("LP time limit reached")

    inject(solve_worst_case_lp_lazy, finish)
    with pytest.warns(mdp.AccuracyWarning, match=r"exact \(gap <= 1e-13\)") as seen:
        mech = mdp.build("optimal", space, eps, method="blocks", tuning=near)
    # what was certified, in plain words: a percentage of the optimum, never "failed"
    text = " ".join(str(w.message) for w in seen if issubclass(w.category, mdp.AccuracyWarning))
    assert "% of the optimum" in text and "failed" not in text
    st = mech.stats
    assert not st["target_met"]
    assert calls == [(5.0, None)]                       # the finish only, no coefficient limit
    why = ("ended without an optimum (Unknown model status)" if outcome == "fails"
           else "stopped after 5 s")
    assert why in st["finish_error"] and len(st["attempts"]) == 1
    assert st["finish_outcome"] == ("failed" if outcome == "fails" else "stopped")
    assert st["loss"] == pytest.approx(ref, rel=2e-6)
    assert st["loss"] >= ref * (1 - 3e-7) and st["lower_bound"] <= ref * (1 + 3e-7)
    certify(mech.matrix, space.distances, eps, repair=False)
    if outcome == "runs out":
        # the caller's own time limit, shorter than the finish's budget, still ends the build
        with pytest.raises(mdp.errors.SolverTimeout):
            mdp.build("optimal", space, eps, method="blocks", time_limit=1e6,
                      tuning=replace(near, finish_min_seconds=1e7))
        assert calls[-1][0] < 1e6


def test_after_a_failed_finish_far_away_the_next_limits_get_the_finish_budget(inject):
    # the finish fails far from the target: HiGHS's lazy rounds at the next coefficient limit
    # run, within the finish's time; past it the rounds' certified result stands
    space = SPACES[1]
    eps = 0.5
    ref, _ = optimal_loss_linprog(space.distances, eps)
    far = replace(EXACTER, finish_near=1.0, finish_time_factor=0.0, finish_min_seconds=5.0)
    calls = []

    def lazy(*args, time_limit=None, initial_rows=None, max_coefficient=None, **kwargs):
        calls.append((time_limit, initial_rows is not None, max_coefficient))
        if initial_rows is not None:
            raise LPError("Unknown model status")        # the finish from the rounds' rows
        raise mdp.lp.LPTimeout("LP time limit reached")  # the next limit's rounds

    inject(solve_worst_case_lp_lazy, lazy)
    with pytest.warns(mdp.AccuracyWarning, match="Unknown model status"):
        mech = mdp.build("optimal", space, eps, method="blocks", tuning=far)
    st = mech.stats
    assert calls == [(5.0, True, None), (5.0, False, OPT_TUNING.max_coefficients[1])]
    assert [a.outcome for a in mech.report.attempts] == ["ok", "stopped"]
    assert "stopped after 5 s" in st["attempts"][1] and not st["target_met"]
    assert st["loss"] >= ref * (1 - 3e-7) and st["lower_bound"] <= ref * (1 + 3e-7)
    certify(mech.matrix, space.distances, eps, repair=False)
    # a time limit of the caller's below the budget is the caller's: it ends the build
    with pytest.raises(mdp.errors.SolverTimeout):
        mdp.build("optimal", space, eps, method="blocks", time_limit=1e6,
                  tuning=replace(far, finish_min_seconds=1e7))


@pytest.mark.parametrize("gap", [1e-3, 1e-2])
def test_blocks_gap_mode_is_certified(gap):
    space = SPACES[1]
    eps = 0.5
    ref, _ = optimal_loss_linprog(space.distances, eps)
    mech = mdp.build("optimal", space, eps, method="blocks", gap=gap)
    st = mech.stats
    assert st["relative_gap"] <= gap
    assert st["loss"] >= ref * (1 - 3e-7) and st["lower_bound"] <= ref * (1 + 3e-7)
    certify(mech.matrix, space.distances, eps, repair=False)


def test_default_method_and_the_limits_of_highs(monkeypatch):
    small = MetricSpace.from_points(
        np.random.default_rng(0).random((OPT_TUNING.blocks_min_n - 1, 2)))
    big = MetricSpace.from_points(np.random.default_rng(0).random((OPT_TUNING.blocks_min_n, 2)))
    assert opt.default_method(small) == "lazy"
    assert opt.default_method(big) == "blocks"
    assert opt.plan(big, 1.0).solver.value == "blocks"
    assert opt.plan(small, 1.0).solver.value == "ipm"       # 49 >= ipm_min_n points in the plane

    monkeypatch.setenv("MDP_DEVICE", "cpu")
    no_memory = cb.BlockResources(max_block_bytes=0)
    assert opt.default_method(big, OptimalTuning(resources=no_memory)) == "lazy"
    with pytest.raises(mdp.lp.LPError, match="GiB of block inverses at n = 16"):
        solve_worst_case_triples(SPACES[1].distances, *random_triples(16, np.random.default_rng(0)),
                                 1.0, resources=no_memory)
    many = MetricSpace.from_points(np.random.default_rng(0).random((opt.HIGHS_MAX_N + 1, 2)))
    with pytest.raises(ParameterError, match="method='lazy' is limited to n <= 250"):
        mdp.build("optimal", many, 1.0, method="lazy")
    with pytest.raises(ParameterError, match="gap needs method='lazy' or 'blocks'"):
        mdp.build("optimal", small, 1.0, method="full", gap=1e-3)


def test_rounds_report_progress_and_time_out():
    D = SPACES[1].distances
    allowed = ~np.eye(D.shape[0], dtype=bool)
    events = []
    with progress(events.append):
        _, state, _ = br.solve_worst_case_lp_block_rounds(D, allowed, 0.5)
    ends = [e for e in events if e.iteration is None]
    assert [e.round for e in ends] == list(range(1, state.rounds + 1))
    # the ends of rounds read as row-generation rounds, the iterations as one solve's
    assert all(e.method is None for e in ends)
    assert all(e.method == "blocks" for e in events if e.iteration is not None)
    assert ends[-1].violated == 0
    # iterations inside a round name that round
    assert {e.round for e in events if e.iteration is not None} == set(range(1, state.rounds + 1))
    with pytest.raises(mdp.lp.LPTimeout):
        br.solve_worst_case_lp_block_rounds(D, allowed, 0.5, time_limit=1e-9)


def _some_point(lp, rng):
    """A positive primal-dual point of ``lp`` (values only matter through their mapping)."""
    n, m = lp.n, lp.privacy_rows
    return cb._Point(X=rng.random((n, n)) + 0.1, k=3.0, sL=rng.random(n) + 0.1,
                     sB=rng.random(m) + 0.1, zL=rng.random(n) + 0.1, zB=rng.random(m) + 0.1,
                     W=rng.random((n, n)) + 0.1, yE=rng.standard_normal(n))


def test_warm_start_keeps_the_shared_rows_and_centres_the_new_ones():
    rng = np.random.default_rng(3)
    D, eps = SPACES[1].distances, 0.8
    n = D.shape[0]
    u, v, w = random_triples(n, rng, share=0.5)
    first = rng.random(len(u)) < 0.6
    small = TripleBlockLP(D, u[first], v[first], w[first], eps)
    shuffle = rng.permutation(len(u))                 # the rows' order does not matter
    big = TripleBlockLP(D, u[shuffle], v[shuffle], w[shuffle], eps)
    p = _some_point(small, rng)
    q = cb.WarmStart(small.keys, p).point_for(big)
    old = dict(zip(small.keys.tolist(), zip(p.sB, p.zB, strict=True), strict=True))
    mu, value = p.mu(), big.privacy(p.X)
    shared = 0
    for r, key in enumerate(big.keys.tolist()):
        if key in old:
            shared += 1
            assert (q.sB[r], q.zB[r]) == old[key]
        else:
            assert q.sB[r] == max(value[r], math.sqrt(mu))
            assert q.zB[r] == pytest.approx(mu / q.sB[r], rel=1e-15)
    assert shared == first.sum() < len(u)
    for name in ("X", "sL", "zL", "W", "yE"):
        assert np.array_equal(getattr(q, name), getattr(p, name))
        assert getattr(q, name) is not getattr(p, name)
    assert q.k == p.k


def test_a_warm_round_reaches_the_same_optimum_in_fewer_iterations():
    """A round over more rows, started from the first round's kept iterate: the same optimum
    as SciPy's and as a cold start, in fewer iterations (they are deterministic: 12 against 18)."""
    D, eps = SPACES[1].distances, 0.5
    n = D.shape[0]
    allowed = ~np.eye(n, dtype=bool)
    u, v, w = initial_triples(D, allowed, 2)
    M, first = solve_worst_case_triples(D, u, v, w, eps, tol=1e-2, keep_gap=0.5)
    warm = first["warm_start"]
    assert not first["warm"] and isinstance(warm, cb.WarmStart)
    su, sv, sw, _ = separate(M, D, eps, allowed, TUNING.separation_tol)
    assert len(su) > 0
    u, v, w = np.r_[u, su], np.r_[v, sv], np.r_[w, sw]
    ref = triples_optimum(D, eps, u, v, w)
    _, cold = solve_worst_case_triples(D, u, v, w, eps, tol=1e-8)
    _, hot = solve_worst_case_triples(D, u, v, w, eps, tol=1e-8, warm=warm)
    assert hot["warm"] and not cold["warm"] and "warm_start" not in hot
    assert hot["ipm_iterations"] < cold["ipm_iterations"]
    for st in (cold, hot):
        assert st["lp_objective"] == pytest.approx(ref, rel=1e-6)
        assert st["lower_bound"] <= ref * (1 + 1e-9)


def test_a_failed_warm_start_solves_again_from_the_default_point(inject):
    D, eps = SPACES[0].distances, 1.0
    n = D.shape[0]
    u, v, w = initial_triples(D, ~np.eye(n, dtype=bool), 2)
    _, first = solve_worst_case_triples(D, u, v, w, eps, tol=1e-2, keep_gap=0.5)
    solve = cb.run_column_blocks.default

    def failing(lp, fac, *, start=None, **kw):
        if start is not None:
            raise LPError("stub: the warm start diverged")
        return solve(lp, fac, start=start, **kw)

    inject(cb.run_column_blocks, failing)
    _, st = solve_worst_case_triples(D, u, v, w, eps, warm=first["warm_start"])
    assert not st["warm"]
    assert st["lp_objective"] == pytest.approx(triples_optimum(D, eps, u, v, w), rel=1e-6)


def test_warm_rounds_take_fewer_iterations_to_the_same_bound():
    """Over the test spaces, exact rounds with and without warm starts: the same bound on SciPy's
    optimum, every round after the first started warm, fewer iterations in all."""
    total = {True: 0, False: 0}
    for space in SPACES:
        D, eps = space.distances, 1.0
        n = D.shape[0]
        ref, _ = optimal_loss_linprog(D, eps)
        allowed = ~np.eye(n, dtype=bool)
        for warm in (True, False):
            _, state, stats = br.solve_worst_case_lp_block_rounds(
                D, allowed, eps, tuning=br.BlockRoundsTuning(warm_start=warm))
            assert state.exhausted
            assert ref - 2e-5 * (1 + ref) <= stats["lower_bound"] <= ref * (1 + 3e-7)
            assert [t["warm"] for t in state.trace] == [False] + [warm] * (state.rounds - 1)
            total[warm] += stats["ipm_iterations"]
    assert total[True] < total[False]


def test_scaled_privacy_rows_are_the_rows_divided_by_their_coefficient():
    space = SPACES[0]
    D, eps = space.distances, 1.3
    rng = np.random.default_rng(0)
    u, v, w = (rng.integers(0, space.n, 40) for _ in range(3))
    keep = u != v
    u, v, w = u[keep], v[keep], w[keep]
    plain = privacy_rows(D, eps, u, v, w).toarray()
    scaled = privacy_rows(D, eps, u, v, w, scaled=True).toarray()
    np.testing.assert_allclose(scaled, plain * np.exp(-eps * D[u, v])[:, None], rtol=1e-14)
    assert np.abs(scaled).max() <= 1.0


@pytest.mark.parametrize("space", SPACES[:3])
def test_lazy_rounds_on_scaled_rows_reach_the_linprog_optimum(space):
    eps = 1.0
    ref, _ = optimal_loss_linprog(space.distances, eps)
    allowed = ~np.eye(space.n, dtype=bool)
    M, st = solve_worst_case_lp_lazy(space.distances, allowed, eps, scaled_rows=True)
    assert st["lower_bound"] <= ref * (1 + 1e-9)
    assert st["lp_objective"] == pytest.approx(ref, rel=1e-7)


def test_the_finish_lands_where_the_rounds_plateau_above_the_target():
    # the interior point method's plateau: 80 points of a city box in kilometres at 23 per km
    # (a loss of about 0.01 km, coefficients e^{eps D} far past 1e12) stall the rounds near
    # 1e-5; HiGHS's finish from their rows lands on the scaled rows, where on the rows
    # M_uw <= e^{eps D_uv} M_vw (finish_scaled=False) it ends with model status 'Unknown'
    rng = np.random.default_rng(7)
    space = MetricSpace.from_points(np.c_[38.69 + 0.11 * rng.random(80),
                                          -9.23 + 0.14 * rng.random(80)], metric="haversine")
    eps = 23.0
    mech = mdp.build("optimal", space, eps, method="blocks")
    st = mech.stats
    assert "block_round_trace" in st and "finish_error" not in st
    assert st["target_met"] and st["relative_gap"] <= 1e-6
    low, high = optimal_loss_bracket(space.distances, eps)
    assert st["lower_bound"] <= high * (1 + 1e-9)
    assert st["loss"] >= low * (1 - 1e-9)
    certify(mech.matrix, space.distances, eps, repair=False)
