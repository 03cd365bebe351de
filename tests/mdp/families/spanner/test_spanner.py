"""'spanner' (SpannerMech): spanner property, soundness, never below OPTMech."""

import numpy as np
import pytest
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import shortest_path

import mdp
from mdp.families.spanner import SpannerTuning, greedy_spanner
from mdp.lp import LPError
from mdp.lp.conic import solve_clarabel
from mdp.lp.highs import run_highs
from mdp.spaces.metric_space import MetricSpace
from mdp.worst_case import solve as worst_case
from mdp.worst_case.column_blocks import solve_worst_case_blocks
from mdp.worst_case.solve import LazyRoundsTuning

SPACE = MetricSpace.from_points(np.random.default_rng(7).random((14, 2)) * 4)


@pytest.mark.parametrize("stretch", [1.0, 1.2, 1.5, 3.0])
def test_greedy_spanner_dilation(stretch):
    D = SPACE.distances
    E = greedy_spanner(D, stretch)
    n = SPACE.n
    G = csr_matrix((D[E[:, 0], E[:, 1]], (E[:, 0], E[:, 1])), shape=(n, n))
    dG = shortest_path(G, directed=False)
    assert np.all(dG <= stretch * D + 1e-12)
    if stretch > 1.0:
        assert len(E) < n * (n - 1) // 2


@pytest.mark.parametrize("eps", [0.5, 2.0])
def test_never_below_optimal_and_private(eps):
    opt = mdp.build("optimal", SPACE, eps)
    sp_ = mdp.build("spanner", SPACE, eps, stretch=1.5)
    assert sp_.loss() >= opt.loss() - 1e-9
    assert sp_.stats["privacy"]["measured_eps"] <= eps * (1 + 1e-9)
    assert sp_.stats["spanner_edges"] > 0 and sp_.stats["rows"] == 2 * SPACE.n + 2 * sp_.stats["spanner_edges"] * SPACE.n


def test_stretch_one_is_optimal():
    # the greedy 1-spanner keeps every pair not realised by a path, so its LP is OPTMech's
    opt = mdp.build("optimal", SPACE, 1.0)
    one = mdp.build("spanner", SPACE, 1.0, stretch=1.0)
    assert one.loss() == pytest.approx(opt.loss(), abs=1e-7)


@pytest.mark.parametrize("method", ["full", "lazy"])
def test_complete_spanner_is_optimal_at_eps_over_stretch(method):
    # In 30 dimensions no triple of 12 Gaussian points is within 1.2 of collinear, so the greedy
    # 1.2-spanner keeps every pair: every privacy row is imposed at eps / 1.2 on the direct
    # distance, and SpannerMech is OPTMech at eps / 1.2 (why it is weak on GloVe, where the
    # 1.5-spanner keeps 58% of the pairs: docs/experiments/loss-curves.md)
    space = MetricSpace.from_points(np.random.default_rng(3).standard_normal((12, 30)))
    assert len(greedy_spanner(space.distances, 1.2)) == 12 * 11 // 2
    spanner = mdp.build("spanner", space, 1.5, stretch=1.2, method=method)
    optimal = mdp.build("optimal", space, 1.5 / 1.2)
    assert spanner.loss() == pytest.approx(optimal.loss(), rel=1e-6)
    assert spanner.eps_tight() == pytest.approx(1.5 / 1.2, rel=1e-6)


def test_bad_stretch():
    with pytest.raises(ValueError, match="stretch"):
        mdp.build("spanner", SPACE, 1.0, stretch=0.9)
    with pytest.raises(ValueError, match="stretch"):
        greedy_spanner(SPACE.distances, float("nan"))


def test_lazy_and_full_spanner_lp_agree():
    full = mdp.build("spanner", SPACE, 1.0)
    lazy = mdp.build("spanner", SPACE, 1.0, method="lazy")
    assert lazy.stats["lp_objective"] == pytest.approx(full.stats["lp_objective"], abs=1e-8)
    with pytest.raises(ValueError, match="method"):
        mdp.build("spanner", SPACE, 1.0, method="magic")


@pytest.mark.parametrize(("solver", "rows"), [("simplex", "edges"), ("ipm", "edges"),
                                             ("simplex", "paths"), ("ipm", "paths")])
@pytest.mark.parametrize("eps", [0.5, 2.0])
def test_lazy_spanner_matches_linprog(eps, solver, rows):
    # independent reference: the spanner LP (edge rows only, at eps / stretch) with scipy linprog
    import scipy.sparse as sp
    from scipy.optimize import linprog

    D = SPACE.distances
    n = SPACE.n
    E = greedy_spanner(D, 1.5)
    a, b = np.r_[E[:, 0], E[:, 1]], np.r_[E[:, 1], E[:, 0]]
    u, w = np.repeat(a, n), np.tile(np.arange(n), len(a))
    v = np.repeat(b, n)
    m = len(u)
    N = n * n
    Ap = sp.csr_matrix((np.r_[np.ones(m), -np.exp(eps / 1.5 * D[u, v])],
                        (np.r_[np.arange(m), np.arange(m)], np.r_[u * n + w, v * n + w])), shape=(m, N + 1))
    Al = sp.hstack([sp.block_diag([D[i][None, :] for i in range(n)]), -np.ones((n, 1))])
    Aeq = sp.hstack([sp.block_diag([np.ones((1, n))] * n), np.zeros((n, 1))])
    c = np.zeros(N + 1)
    c[-1] = 1
    ref = linprog(c, A_ub=sp.vstack([Ap, Al]), b_ub=np.zeros(m + n), A_eq=Aeq, b_eq=np.ones(n),
                  bounds=[(0, None)] * N + [(None, None)], method="highs-ds").fun
    lazy = mdp.build("spanner", SPACE, eps, method="lazy", solver=solver, rows=rows)
    assert lazy.stats["method"] == "lazy" and lazy.stats["lazy_rows"] == rows
    assert lazy.stats["lp_objective"] == pytest.approx(ref, abs=1e-7)
    assert lazy.loss() == pytest.approx(ref, abs=1e-6)
    assert lazy.stats["privacy"]["measured_eps"] <= eps * (1 + 1e-9)


@pytest.mark.parametrize("eps", [0.5, 2.0])
def test_full_default_interior_matches_ipx_crossover(eps):
    # default full solve: HiPO without crossover, repaired to the private envelope (at eps = 2 on
    # this space HiPO ends "Unknown" and the IPX + crossover path takes over); the explicit
    # solver="ipm" (IPX + crossover + simplex check) is the reference
    default = mdp.build("spanner", SPACE, eps)
    vertex = mdp.build("spanner", SPACE, eps, solver="ipm")
    assert default.stats["lp_objective"] == pytest.approx(vertex.stats["lp_objective"], abs=1e-8)
    assert vertex.loss() - 1e-9 <= default.loss() <= vertex.loss() + 1e-6
    assert default.stats["privacy"]["measured_eps"] <= eps * (1 + 1e-9)
    # the certified gap: the bound is below the LP optimum, the gap is the loss against it
    for m in (default, vertex):
        assert m.stats["lower_bound"] <= vertex.stats["lp_objective"] + 1e-12
        gap = (m.stats["loss"] - m.stats["lower_bound"]) / m.stats["loss"]
        assert m.stats["relative_gap"] == pytest.approx(max(gap, 0.0), abs=1e-15)
        assert m.stats["relative_gap"] <= 1e-6


def _failing_solves(inject, failing: int) -> list:
    """Make the first ``failing`` HiGHS solves fail; returns the (method, crossover) of every solve."""
    calls = []

    def solve(lp):
        calls.append((lp.solver, lp.crossover))
        if len(calls) <= failing:
            raise LPError("simulated failure")
        return run_highs.default(lp)

    inject(run_highs, solve)
    return calls


def _full_spanner_lp(solver: str) -> tuple[np.ndarray, dict]:
    from mdp.worst_case.solve import solve_worst_case_lp

    E = greedy_spanner(SPACE.distances, 1.5)
    pu, pv = np.r_[E[:, 0], E[:, 1]], np.r_[E[:, 1], E[:, 0]]
    return solve_worst_case_lp(SPACE.distances, pu, pv, 0.5 / 1.5, solver=solver, crossover=False)


@pytest.mark.parametrize("failing", [1, 2, 3, 4])
def test_full_interior_fallbacks(inject, failing):
    # the first `failing` solves fail: HiPO, then IPX without crossover (the interior point is
    # repaired like HiPO's), then the column-block method (its row scaling solves what HiGHS's
    # interior codes do not; repaired too), then Clarabel on the primal LP (repaired too), then
    # IPX with crossover; every path reaches the vertex reference
    reference = mdp.build("spanner", SPACE, 0.5, solver="ipm")
    calls = _failing_solves(inject, min(failing, 2))
    conic, blocks = [], []
    real_clarabel, real_blocks = solve_clarabel.default, solve_worst_case_blocks.default

    def clarabel(*args, **kwargs):
        conic.append(kwargs["time_limit"])
        if failing >= 4:
            raise LPError("simulated failure")
        return real_clarabel(*args, **kwargs)

    def column_blocks(*args, **kwargs):
        blocks.append(kwargs["time_limit"])
        if failing >= 3:
            raise LPError("simulated failure")
        return real_blocks(*args, **kwargs)

    inject(solve_clarabel, clarabel)
    inject(solve_worst_case_blocks, column_blocks)
    M, stats = _full_spanner_lp("hipo")
    methods = [("hipo", False), ("ipx", False), ("ipx", True)]
    assert calls == (methods[:2] if failing < 4 else methods)
    assert blocks == ([None] if failing >= 2 else [])
    assert conic == ([None] if failing >= 3 else [])
    tried = ("hipo", "ipx", "blocks", "clarabel")[:failing]
    assert stats["failed_solves"] == [f"{s}: simulated failure" for s in tried]
    final = ("ipx without crossover", "blocks", "clarabel", "ipx with crossover")[failing - 1]
    assert stats["final_method"] == final
    if failing != 2:
        assert stats["solver"].startswith("Clarabel" if failing == 3 else "HiGHS")
        assert stats["lp_objective"] == pytest.approx(reference.stats["lp_objective"], abs=1e-8)
    assert stats["lower_bound"] <= reference.stats["lp_objective"] + 1e-12
    # the column-block method stops at its certified gap of about 1e-6
    assert stats["lower_bound"] == pytest.approx(reference.stats["lp_objective"],
                                                 rel=1e-5 if failing == 2 else 1e-7)
    # through the registry: the same fallbacks give a certified matrix as good as the vertex's
    calls.clear()
    built = mdp.build("spanner", SPACE, 0.5)
    assert built.stats["final_method"] == final
    tol = 1e-5 if failing == 2 else 1e-6
    assert reference.loss() - 1e-9 <= built.loss() <= reference.loss() * (1 + tol)
    assert built.stats["relative_gap"] <= tol
    assert built.stats["privacy"]["measured_eps"] <= 0.5 * (1 + 1e-9)


def test_interior_chain_steps():
    """The full LP's chain as typed steps: what the plan prints and the runner runs."""
    from mdp.lp.highs import runs_ipx
    from mdp.worst_case.solve import interior_chain_steps

    chain = interior_chain_steps("hipo", crossover=False, blocks=True, last_resort=False)
    solvers = [(s.solver, s.crossover) for s in chain]
    ipx = [] if runs_ipx("hipo") else [("ipx", False)]    # HiPO absent: "hipo" runs IPX
    assert solvers == [("hipo", False), *ipx, ("blocks", False), ("clarabel", False),
                       ("ipx", True)]
    assert [s.budgeted for s in chain] == [False] * (len(chain) - 1) + [True]
    assert not interior_chain_steps("hipo", crossover=False, blocks=True)[-1].budgeted
    # IPX is not tried twice, the column blocks only where asked
    assert [s.solver for s in interior_chain_steps("ipm", crossover=False, blocks=False)] == [
        "ipm", "clarabel", "ipx"]
    # crossover (an explicit HiGHS solver) or Clarabel by name: one solve, no chain
    assert [(s.solver, s.crossover) for s in interior_chain_steps(
        "simplex", crossover=True, blocks=True)] == [("simplex", True)]
    assert [s.solver for s in interior_chain_steps("clarabel", crossover=True, blocks=True)] == [
        "clarabel"]
    # the plan prints the chain the first step runs, then the exponential mechanism
    plan = mdp.build("spanner", SPACE, 0.5).report.plan
    printed = [f.step for f in plan.fallbacks]
    expected = interior_chain_steps("hipo", crossover=False, blocks=True)
    assert printed == [s.label for s in expected[1:]] + ["the exponential mechanism"]


@pytest.mark.parametrize("failing", [0, 1, 2, 3, 4])
def test_the_chain_runs_its_steps_in_order(inject, failing):
    """Each solve of the chain fails in turn: the solves that ran are the chain's steps, in
    order, and every failure is recorded by the solver's name; when all fail, the last error
    is raised."""
    from mdp.worst_case.solve import interior_chain_steps

    ran = []

    def entry(name, real):
        # a solve that records itself (a HiGHS run by its method and crossover) and fails while
        # the solves so far number at most `failing`
        def solve(*args, **kwargs):
            ran.append(name(*args) if callable(name) else name)
            if len(ran) <= failing:
                raise LPError("simulated failure")
            return real(*args, **kwargs)
        return solve

    inject(run_highs, entry(lambda lp: (lp.solver, lp.crossover), run_highs.default))
    inject(solve_clarabel, entry("clarabel", solve_clarabel.default))
    inject(solve_worst_case_blocks, entry("blocks", solve_worst_case_blocks.default))
    steps = [(s.solver, s.crossover) if s.solver not in ("blocks", "clarabel") else s.solver
             for s in interior_chain_steps("ipm", crossover=False, blocks=True)]
    assert len(steps) == 4
    if failing == len(steps):
        with pytest.raises(LPError, match="simulated failure"):
            _full_spanner_lp("ipm")
        assert ran == steps
        return
    M, stats = _full_spanner_lp("ipm")
    assert ran == steps[:failing + 1]
    names = [s if isinstance(s, str) else s[0] for s in steps[:failing]]
    assert stats.get("failed_solves", []) == [f"{name}: simulated failure" for name in names]
    # whichever step solved it: the spanner LP's optimum by scipy's linprog, the bound below it,
    # the matrix's worst-case loss at it (the column blocks to their certified gap of ~1e-6)
    ref = _spanner_lp_linprog()
    assert stats["lower_bound"] <= ref * (1 + 1e-9)
    assert stats["lower_bound"] == pytest.approx(ref, rel=1e-5)
    loss = float(((SPACE.distances * M).sum(axis=1) / M.sum(axis=1)).max())
    assert loss == pytest.approx(ref, rel=1e-5)


def _spanner_lp_linprog() -> float:
    """The full LP of ``_full_spanner_lp`` (the 1.5-spanner's edge rows at 0.5 / 1.5, every
    column) solved by scipy's linprog, the textbook form of ``tests/support/reference_lp.py``."""
    from tests.support.reference_lp import _solve

    E = greedy_spanner(SPACE.distances, 1.5)
    pu, pv = np.r_[E[:, 0], E[:, 1]], np.r_[E[:, 1], E[:, 0]]
    n = SPACE.n
    u, v, w = np.repeat(pu, n), np.repeat(pv, n), np.tile(np.arange(n), len(pu))
    return _solve(SPACE.distances, 0.5 / 1.5, u, v, w)[0]


def test_full_interior_fallback_skips_a_second_ipx(inject):
    # a failed solve that ran IPX already ("ipm") goes on without IPX again: to the column-block
    # method (made to fail here), then Clarabel
    def column_blocks(*args, **kwargs):
        raise LPError("simulated failure")

    inject(solve_worst_case_blocks, column_blocks)
    calls = _failing_solves(inject, 1)
    M, stats = _full_spanner_lp("ipm")
    assert calls == [("ipm", False)]
    assert stats["failed_solves"] == ["ipm: simulated failure", "blocks: simulated failure"]
    assert stats["final_method"] == "clarabel"


def test_clarabel_fallback_only_when_it_solves(inject):
    # at eps 20 on these points HiPO and IPX fail; the column-block method solves the LP (gap
    # 3.0e-6). Without it, Clarabel ends "AlmostSolved" with a bound 1.1e-3 below its objective:
    # that is no optimum, and IPX with crossover finishes (gap 5.0e-4)
    space = MetricSpace.from_points(np.random.default_rng(42).random((40, 2)) * 10)
    built = mdp.build("spanner", space, 20.0)
    assert built.stats["final_method"] == "blocks"
    assert built.stats["relative_gap"] <= 1e-5
    assert built.stats["privacy"]["measured_eps"] <= 20.0 * (1 + 1e-9)

    def column_blocks(*args, **kwargs):
        raise LPError("simulated failure")

    inject(solve_worst_case_blocks, column_blocks)
    vertex = mdp.build("spanner", space, 20.0)
    assert vertex.stats["final_method"] == "ipx with crossover"
    assert any(f.startswith("clarabel:") and "AlmostSolved" in f for f in vertex.stats["failed_solves"])
    assert vertex.stats["relative_gap"] <= 6e-4
    assert vertex.stats["privacy"]["measured_eps"] <= 20.0 * (1 + 1e-9)
    assert built.loss() <= vertex.loss() * (1 + 1e-5)


def test_clarabel_by_name_matches_the_vertex():
    # solver="clarabel": Clarabel alone on the primal LP, repaired like HiPO's interior point
    vertex = mdp.build("spanner", SPACE, 0.5, solver="ipm")
    conic = mdp.build("spanner", SPACE, 0.5, solver="clarabel")
    assert conic.stats["method"] == "full" and conic.stats["solver"].startswith("Clarabel")
    assert "failed_solves" not in conic.stats
    assert conic.stats["lp_objective"] == pytest.approx(vertex.stats["lp_objective"], rel=1e-7)
    assert conic.stats["lower_bound"] <= vertex.stats["lp_objective"] + 1e-12
    assert vertex.loss() - 1e-9 <= conic.loss() <= vertex.loss() * (1 + 1e-6)
    assert conic.stats["relative_gap"] <= 1e-6
    assert conic.stats["privacy"]["measured_eps"] <= 0.5 * (1 + 1e-9)
    with pytest.raises(ValueError, match="solver"):
        mdp.build("spanner", SPACE, 0.5, method="lazy", solver="clarabel")


def test_auto_method_follows_the_spanner_density():
    from mdp.families.spanner import SpannerTuning, default_method

    LAZY_EDGES_PER_POINT = SpannerTuning().lazy_edges_per_point
    assert LAZY_EDGES_PER_POINT == 6.0
    assert default_method(10, 60) == "full" and default_method(10, 61) == "lazy"
    # points in the plane: a sparse spanner, solved in full
    sparse = mdp.build("spanner", SPACE, 1.0)
    assert sparse.stats["method"] == "full"
    assert sparse.stats["spanner_edges"] <= LAZY_EDGES_PER_POINT * SPACE.n
    # spread-out points in 20 dimensions (like GloVe): a dense spanner, solved lazily, to the full
    # LP's optimum (IPX with crossover, an independent path) on fewer rows
    cloud = MetricSpace.from_points(np.random.default_rng(8).normal(size=(30, 20)))
    auto = mdp.build("spanner", cloud, 2.0)
    full = mdp.build("spanner", cloud, 2.0, method="full", solver="ipm")
    assert auto.stats["method"] == "lazy" and full.stats["method"] == "full"
    assert auto.stats["spanner_edges"] > LAZY_EDGES_PER_POINT * cloud.n
    assert auto.stats["lp_objective"] == pytest.approx(full.stats["lp_objective"], abs=1e-8)
    assert auto.stats["rows"] < full.stats["rows"]
    assert auto.stats["privacy"]["measured_eps"] <= 2.0 * (1 + 1e-9)
    # a solver that only the full LP takes asks for the full LP; lazily it is refused
    assert mdp.build("spanner", cloud, 2.0, solver="hipo").stats["method"] == "full"
    with pytest.raises(ValueError, match="solver"):
        mdp.build("spanner", cloud, 2.0, method="lazy", solver="hipo")


def test_lazy_rounds_follow_the_slack_at_the_spanner_level():
    from mdp.families.optimal import median_two_hop_slack
    from mdp.families.spanner import SpannerTuning, default_lazy_solver

    CHAIN_SLACK = SpannerTuning().chain_slack

    cloud = MetricSpace.from_points(np.random.default_rng(9).normal(size=(50, 20)))
    unit = median_two_hop_slack(cloud.distances, 1.0)
    low, high = 0.5 * CHAIN_SLACK / unit, 2.0 * CHAIN_SLACK / unit
    assert default_lazy_solver(cloud, low) == "ipm"  # GloVe n = 100 at eps 0.1: 34 s vs 114 s
    assert default_lazy_solver(cloud, high) == "simplex"  # at eps 1.5: 11 s vs 37 s
    assert default_lazy_solver(MetricSpace.from_points(cloud.points[:40]), low) == "simplex"
    # the rows' level is eps / stretch: this eps is above the threshold, eps / 2 below it (and
    # above PATH_SLACK, so the rows stay the edges')
    eps = 1.5 * CHAIN_SLACK / unit
    assert default_lazy_solver(cloud, eps) == "simplex"
    stats = mdp.build("spanner", cloud, eps, stretch=2.0, method="lazy").stats
    assert stats["lazy_rows"] == "edges" and "IPM rounds" in stats["formulation"]


def test_spanner_distances():
    from mdp.families.spanner import spanner_distances

    D = SPACE.distances
    E = greedy_spanner(D, 1.5)
    dG = spanner_distances(D, E)
    assert np.array_equal(dG[E[:, 0], E[:, 1]], D[E[:, 0], E[:, 1]])
    assert np.all(dG >= D - 1e-12) and np.all(dG <= 1.5 * D + 1e-12)
    # brute force: Floyd-Warshall on the edge weights
    n = SPACE.n
    F = np.full((n, n), np.inf)
    np.fill_diagonal(F, 0.0)
    F[E[:, 0], E[:, 1]] = F[E[:, 1], E[:, 0]] = D[E[:, 0], E[:, 1]]
    for k in range(n):
        F = np.minimum(F, F[:, k, None] + F[None, k, :])
    assert np.allclose(dG, F, rtol=1e-14, atol=0)


def test_path_rows_follow_the_slack_and_solve_the_same_lp():
    from mdp.families.optimal import median_two_hop_slack
    from mdp.families.spanner import SpannerTuning

    PATH_SLACK = SpannerTuning().path_slack

    # a dense spanner (solved lazily); at a small slack the rows are the spanner's paths, solved
    # by simplex rounds, to the edge rows' optimum and the full LP's (IPX with crossover)
    cloud = MetricSpace.from_points(np.random.default_rng(10).normal(size=(30, 12)))
    unit = median_two_hop_slack(cloud.distances, 1.0)
    low = 0.5 * PATH_SLACK / unit * 1.5  # the rows' level is eps / 1.5
    paths = mdp.build("spanner", cloud, low)
    assert paths.stats["method"] == "lazy" and paths.stats["lazy_rows"] == "paths"
    assert "warm dual simplex" in paths.stats["formulation"]
    edges = mdp.build("spanner", cloud, low, rows="edges", solver="simplex")
    full = mdp.build("spanner", cloud, low, method="full", solver="ipm")
    assert paths.stats["lp_objective"] == pytest.approx(full.stats["lp_objective"], rel=1e-9)
    assert edges.stats["lp_objective"] == pytest.approx(full.stats["lp_objective"], rel=1e-9)
    assert paths.loss() == pytest.approx(edges.loss(), rel=1e-7)
    assert paths.stats["privacy"]["measured_eps"] <= low * (1 + 1e-9)
    # above PATH_SLACK, or with interior rounds asked for, the rows stay the edges'
    assert mdp.build("spanner", cloud, 4 * low).stats["lazy_rows"] == "edges"
    assert mdp.build("spanner", cloud, low, solver="ipm").stats["lazy_rows"] == "edges"
    # explicit rows ask for the lazy method; the full LP refuses them
    assert mdp.build("spanner", SPACE, 1.0, rows="paths").stats["method"] == "lazy"
    assert mdp.build("spanner", SPACE, 1.0).stats.get("lazy_rows") is None
    with pytest.raises(ValueError, match="rows='paths'.*method='full'"):
        mdp.build("spanner", SPACE, 1.0, method="full", rows="paths")
    with pytest.raises(ValueError, match="rows"):
        mdp.build("spanner", SPACE, 1.0, rows="triangles")


@pytest.mark.parametrize(("method", "other"), [("lazy", "full"), ("full", "lazy")])
def test_timeout_suggests_the_other_method(method, other):
    with pytest.raises(mdp.errors.SolverTimeout, match=f"method='{other}'"):
        mdp.build("spanner", SPACE, 1.0, method=method, time_limit=1e-9)


def test_crossover_has_a_budget_while_a_smaller_limit_remains(inject):
    # every interior code fails at the first coefficient limit; IPX with crossover gets a budget
    # (here almost none) and the build moves on to the next limit instead of waiting on it
    def fail(*args, **kwargs):
        raise LPError("simulated failure")

    inject(solve_worst_case_blocks, fail)
    inject(solve_clarabel, fail)
    calls = _failing_solves(inject, 2)
    tight = SpannerTuning(lazy=LazyRoundsTuning(crossover_time_factor=0.0,
                                                crossover_min_seconds=1e-9))
    built = mdp.build("spanner", SPACE, 0.5, tuning=tight)
    first, second = built.report.attempts[:2]
    assert first.outcome == "failed" and "within its budget" in first.detail
    assert "1e+12" in first.step and "1e+07" in second.step and second.outcome == "ok"
    assert calls[:3] == [("hipo", False), ("ipx", False), ("ipx", True)]
    assert built.stats["privacy"]["measured_eps"] <= 0.5 * (1 + 1e-9)
    # the last limit's crossover has no budget: with the same tuning it runs to the end
    E = greedy_spanner(SPACE.distances, 1.5)
    pu, pv = np.r_[E[:, 0], E[:, 1]], np.r_[E[:, 1], E[:, 0]]
    inject(run_highs, _fail_interior)
    M, stats = worst_case.solve_worst_case_lp(SPACE.distances, pu, pv, 0.5 / 1.5, solver="hipo",
                                              crossover=False, tuning=tight.lazy)
    assert stats["final_method"] == "ipx with crossover"


def _fail_interior(lp):
    """A HiGHS run whose solves without crossover fail."""
    if not lp.crossover:
        raise LPError("simulated failure")
    return run_highs.default(lp)
