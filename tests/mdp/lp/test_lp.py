"""mdp.lp (the LP engine: HiGHS wrapper, row generation) and the certification of LP outputs."""

import re
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from scipy.optimize import linprog

import mdp
from mdp.errors import ParameterError, SolverError, SolverTimeout
from mdp.lp import (
    Cuts,
    LPError,
    LPSolution,
    LPTimeout,
    Phase,
    RowGeneration,
    RowGenerationPolicy,
    SparseLP,
    explain_failures,
    stochastic_rows,
)
from mdp.privacy.verification import PrivacyError, certify
from mdp.spaces.metric_space import MetricSpace


def _box_lp(seed: int, m: int, n: int, density: float, slack: float):
    """A random LP ``min c x, A x <= b, 0 <= x <= 1`` (strictly feasible) and linprog's optimum."""
    rng = np.random.default_rng(seed)
    A = sp.random(m, n, density=density, random_state=seed + 1, format="csr")
    b = A @ rng.random(n) + slack
    c = rng.normal(size=n)
    ref = linprog(c, A_ub=A.toarray(), b_ub=b, bounds=[(0, 1)] * n, method="highs-ds").fun
    return c, A, b, ref


def test_sparse_lp_matches_linprog():
    rng = np.random.default_rng(3)
    m, n = 30, 20
    A = sp.random(m, n, density=0.3, random_state=4, format="csr")
    x0 = rng.random(n)
    b = A @ x0 + 0.1  # x0 is strictly feasible for A x <= b
    c = rng.normal(size=n)
    lp = SparseLP(c, A, row_upper=b, col_lower=np.zeros(n), col_upper=np.ones(n))
    got = lp.solve()
    ref = linprog(c, A_ub=A.toarray(), b_ub=b, bounds=[(0, 1)] * n, method="highs-ipm")
    assert got.objective == pytest.approx(ref.fun, abs=1e-8)
    assert lp.stats["variables"] == n and lp.stats["rows"] == m and lp.stats["nnz"] == A.nnz
    # adding a row keeps the model and re-solves
    lp.add_rows(sp.csr_matrix(np.ones((1, n))), row_lower=[2.0], row_upper=[np.inf])
    ref2 = linprog(c, A_ub=np.vstack([A.toarray(), -np.ones((1, n))]), b_ub=np.r_[b, -2.0],
                   bounds=[(0, 1)] * n, method="highs-ipm")
    assert lp.solve().objective == pytest.approx(ref2.fun, abs=1e-8)
    assert lp.stats["rows"] == m + 1 and lp.stats["solves"] == 2


def test_infeasible_and_unbounded_raise():
    lp = SparseLP([1.0, 1.0], sp.csr_matrix([[1.0, 1.0]]), row_lower=[2.0], row_upper=[1.0])
    with pytest.raises(LPError, match="Infeasible"):
        lp.solve()
    lp = SparseLP([-1.0, 0.0], sp.csr_matrix([[1.0, -1.0]]), row_upper=[0.0], solver="simplex")
    with pytest.raises(LPError, match="nbounded"):
        lp.solve()


def test_bad_arguments():
    with pytest.raises(ValueError, match="solver"):
        SparseLP([1.0], sp.csr_matrix([[1.0]]), solver="magic")
    with pytest.raises(ValueError, match="time_limit"):
        SparseLP([1.0], sp.csr_matrix([[1.0]]), time_limit=-1)
    with pytest.raises(ValueError, match="columns"):
        SparseLP([1.0, 2.0], sp.csr_matrix([[1.0]]))


def test_timeout_is_an_error_not_a_worse_matrix():
    space = MetricSpace.from_points(np.random.default_rng(0).random((30, 2)))
    with pytest.raises(LPTimeout, match="time limit"):
        mdp.build("optimal", space, 2.0, time_limit=1e-3)


def _opt_matrix(n=8, eps=1.0):
    space = MetricSpace.from_points(np.random.default_rng(5).random((n, 2)))
    return mdp.build("optimal", space, eps).matrix.copy(), space


def test_certify_repairs_tolerance_artefact():
    M, space = _opt_matrix()
    D = space.distances
    # an LP-tolerance artefact: one entry pushed 1e-9 above its tightest privacy bound
    prod = np.exp(1.0 * D)[:, :, None] * M[None, :, :]  # prod[u, v, w] = e^{eps D_uv} M[v, w]
    prod[np.arange(len(D)), np.arange(len(D))] = np.inf
    bound = prod.min(axis=1)
    u, w = np.unravel_index(np.argmin(bound - M), M.shape)  # a tight upper bound
    assert bound[u, w] - M[u, w] <= 1e-12
    M[u, w] = bound[u, w] + 1e-9
    M[u] /= M[u].sum()  # certify refuses rows not summing to 1 within 1e-12
    assert mdp.eps_tight(M, D, 0.0) > 1.0  # really violating
    H, report = certify(M, D, 1.0)
    assert report["repaired"] and report["measured_eps"] <= 1.0 * (1 + 1e-9)
    assert mdp.eps_tight(H, D, 0.0) <= 1.0 * (1 + 1e-9)
    assert np.abs(H - M).max() <= 1e-6


def test_certify_refuses_gross_violation():
    M, space = _opt_matrix()
    M[0, :] = 0.0
    M[0, 0] = 1.0  # a deterministic row: not private at all
    with pytest.raises(PrivacyError):
        certify(M, space.distances, 1.0)


# -- the engine: options, row generation state machine, failure messages, boundaries -----------

ROOT = Path(__file__).resolve().parents[3]
ENGINE = ROOT / "mdp" / "lp"


def test_no_highs_outside_the_engine():
    # only mdp/lp/highs.py holds HiGHS objects; only the engine adds rows to an LP (one loop)
    offenders = []
    for top in ("mdp", "geo", "text", "experiments"):
        for path in sorted((ROOT / top).rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            rel = path.relative_to(ROOT).as_posix()
            if rel != "mdp/lp/highs.py" and (re.search(r"\bhighspy\b", text) or re.search(r"\b_h\.", text)):
                offenders.append(rel)
            if not path.is_relative_to(ENGINE) and ".add_rows(" in text:
                offenders.append(rel + " (add_rows)")
    assert offenders == []
    assert "import highspy" in (ENGINE / "highs.py").read_text(encoding="utf-8")  # the grep can fail


@pytest.mark.parametrize("solver", ["ipm", "ipx", "hipo"])
def test_interior_point_codes_match_linprog(solver):
    # "ipm" runs IPX (HiGHS 1.15 would pick HiPO); both codes can be named, with crossover or not
    from mdp.lp.highs import HIPO_AVAILABLE, IPM_CODE, _highs_solver_name

    assert IPM_CODE == "ipx" and _highs_solver_name("ipm") == "ipx"
    assert _highs_solver_name("hipo") == ("hipo" if HIPO_AVAILABLE else "ipx")
    m, n = 40, 25
    c, A, b, ref = _box_lp(17, m, n, 0.3, 0.05)
    for crossover in (True, False):
        lp = SparseLP(c, A, row_upper=b, col_upper=np.ones(n), solver=solver, crossover=crossover,
                      ipm_tolerance=1e-10)
        assert lp.solve().objective == pytest.approx(ref, rel=1e-8)
        # HiPO's presolve may finish this small LP itself (no IPM iteration)
        assert lp.stats["ipm_iterations"] > 0 or solver == "hipo"
        assert (lp.stats["crossover_iterations"] == 0) or crossover


def test_solver_options_between_solves():
    m, n = 25, 15
    c, A, b, ref = _box_lp(7, m, n, 0.4, 0.1)
    lp = SparseLP(c, A, row_upper=b, col_upper=np.ones(n), solver="ipm", crossover=False,
                  primal_tolerance=1e-9, dual_tolerance=1e-9, ipm_tolerance=1e-10, time_limit=60.0)
    assert lp.time_limit == 60.0 and lp.num_col == n and lp.num_row == m
    assert lp.solve().objective == pytest.approx(ref, rel=1e-8)
    assert lp.stats["crossover_iterations"] == 0 and lp.stats["ipm_iterations"] > 0
    lp.set_crossover(True)
    lp.set_tolerances(primal=1e-10, dual=1e-10)
    lp.cold_start()
    assert lp.runs_ipx
    lp.set_solver("simplex")
    assert not lp.runs_ipx
    assert lp.solve().objective == pytest.approx(ref, abs=1e-9)
    assert lp.stats["simplex_iterations"] > 0 and lp.stats["solves"] == 2
    with pytest.raises(ParameterError, match="primal"):
        lp.set_tolerances(primal=-1.0)
    with pytest.raises(ParameterError, match="solver"):
        lp.set_solver("magic")
    lp.set_time_limit(None)
    assert lp.time_limit is None
    with pytest.raises(ParameterError, match="time_limit"):
        lp.set_time_limit(0)
    # the limit counts every solve: a limit already spent refuses the next solve
    lp.set_time_limit(1e-9)
    with pytest.raises(LPTimeout, match="time limit"):
        lp.solve()


class _ScriptedLP:
    """A stand-in for SparseLP that records how the loop configures and solves it."""

    def __init__(self, rows=100, fail_vertex=False, fail_simplex=0):
        self.num_row = rows
        self.fail_simplex = fail_simplex  # the first fail_simplex simplex solves fail
        self.solver, self.crossover = "ipm", True
        self.pricing = "choose"
        self.pricings = []
        self.fail_vertex = fail_vertex
        self.log = []

    def set_solver(self, s):
        self.solver = s

    def set_simplex_pricing(self, rule):
        self.pricing = rule

    def set_crossover(self, on):
        self.crossover = on

    def set_tolerances(self, **kw):
        self.log.append(("tolerances", kw))

    def cold_start(self):
        self.log.append(("cold",))

    def add_rows(self, A, lo, hi):
        self.num_row += A.shape[0]

    def solve(self):
        self.log.append(("solve", self.solver, self.crossover))
        self.pricings.append(self.pricing)
        if self.fail_simplex and self.solver == "simplex":
            self.fail_simplex -= 1
            raise LPError("HiGHS did not find an optimum: model status 'Unknown'")
        if self.fail_vertex and self.solver == "ipm" and self.crossover:
            self.fail_vertex = False
            raise LPError("HiGHS did not find an optimum: model status 'Unknown'")
        return LPSolution(x=np.zeros(1), row_dual=np.zeros(1), col_dual=np.zeros(1), objective=1.0)


def _scripted_run(script, *, start=Phase.INTERIOR, bounds=(), lp=None, **kw):
    """Run RowGeneration where round i's separation returns the keys ``script[i]``."""
    lp = lp or _ScriptedLP()
    tols, bound_values = [], list(bounds)

    def cuts(sol, tol):
        tols.append(tol)
        keys = np.asarray(script[len(tols) - 1], dtype=np.int64)
        return Cuts(keys=keys, worst=float(len(keys)))

    def rows(keys):
        return sp.csr_matrix((len(keys), 1)), np.zeros(len(keys)), np.full(len(keys), np.inf)

    policy = RowGenerationPolicy(start=start, tol=1e-9, interior_tol=1e-8, switch_fraction=0.05,
                                 gap_rtol=1e-8, interior_gap_rtol=1e-7, warm_pricing="devex",
                                 interior_ipm_tolerance=1e-2, refine_ipm_tolerance=1e-9,
                                 switch_to=kw.pop("switch_to", Phase.CROSSOVER),
                                 max_rounds=kw.pop("max_rounds", 50))
    loop = RowGeneration(lp, sp.csr_matrix((0, 1)), cuts, rows, key_space=1000, initial_keys=[999],
                         bound=(lambda A, sol: bound_values.pop(0)) if bounds else None, policy=policy, **kw)
    return loop, lp, tols


def test_row_generation_walks_every_phase():
    seen = []
    # rows 100 -> 110 (10 >= 5% of 110: stay interior) -> 113 (3 < 5%: crossover) -> ...
    script = [range(10), range(10, 13), [13], [0, 1, 999], [14, 15], []]
    loop, lp, tols = _scripted_run(script, bounds=[0.5, 0.5], on_round=lambda st: seen.append(st.phase))
    out = loop.run()
    assert out.phases == ("interior", "interior", "crossover", "simplex", "polish", "polished")
    assert seen == [Phase.INTERIOR, Phase.CROSSOVER, Phase.SIMPLEX, Phase.POLISH, Phase.POLISHED, Phase.DONE]
    assert out.polished and out.rounds == 6 and loop.state.phase is Phase.DONE
    assert out.bound == 0.5 and out.last_phase is Phase.POLISHED
    # interior rounds separate at the loose tolerance; the crossover switch tightens it
    assert tols == [1e-8, 1e-8, 1e-9, 1e-9, 1e-9, 1e-9]
    solves = [e[1:] for e in lp.log if e[0] == "solve"]
    assert solves == [("ipm", False), ("ipm", False), ("ipm", True), ("simplex", True), ("ipm", True),
                      ("simplex", True)]
    assert lp.log.count(("cold",)) == 2  # the crossover and the polish start from scratch
    # Devex prices only the warm simplex rounds; the cold solves keep HiGHS's own choice
    assert lp.pricings == ["choose", "choose", "choose", "devex", "choose", "devex"]
    assert lp.num_row == 116  # rows already in the LP (0, 1, 999) were not added again


def test_row_generation_refines_without_crossover():
    # switch_to=REFINE: loose interior rounds, then interior rounds at the refine tolerance to the
    # end; never a crossover or a simplex solve, and the refine rounds keep the loose separation
    script = [range(10), [10, 11], [12], []]
    loop, lp, tols = _scripted_run(script, bounds=[1.0 - 1e-8], switch_to=Phase.REFINE)
    out = loop.run()
    assert out.phases == ("interior", "interior", "refine", "refine") and not out.polished
    assert out.last_phase is Phase.REFINE and tols == [1e-8] * 4
    assert [e[1:] for e in lp.log if e[0] == "solve"] == [("ipm", False)] * 4
    assert [e[1] for e in lp.log if e[0] == "tolerances"] == [{"ipm": 1e-2}, {"ipm": 1e-9}]
    # a refine round whose gap is too wide polishes like an interior one
    out = _scripted_run([[1], [], []], bounds=[0.0, 0.0], switch_to=Phase.REFINE)[0].run()
    assert out.phases == ("interior", "refine", "polish") and out.polished
    # a loose interior point that violates nothing but has a wide gap is refined, not polished
    out = _scripted_run([[], []], bounds=[0.0, 1.0 - 1e-8], switch_to=Phase.REFINE)[0].run()
    assert out.phases == ("interior", "refine") and not out.polished
    with pytest.raises(ValueError, match="switch to"):
        RowGenerationPolicy(switch_to=Phase.SIMPLEX)


def test_row_generation_stops_on_gap_or_without_bound():
    out = _scripted_run([range(50), []], bounds=[1.0 - 1e-8])[0].run()  # interior gap 1e-8 <= 1e-7
    assert out.phases == ("interior", "interior") and not out.polished
    out = _scripted_run([[], [3], []], bounds=[0.0, 0.9], start=Phase.INITIAL)[0].run()
    assert out.phases == ("initial", "polish", "polished") and out.polished  # gap 1 > 1e-8: polish
    out = _scripted_run([[5], []], start=Phase.INITIAL)[0].run()  # no bound: no gap test
    assert out.phases == ("initial", "simplex") and out.bound == -np.inf


def test_row_generation_falls_back_to_dual_simplex():
    lp = _ScriptedLP(fail_vertex=True)
    out = _scripted_run([[1], [2], []], lp=lp, bounds=[1.0])[0].run()  # 1 < 5%: crossover fails
    assert out.phases == ("interior", "crossover", "simplex")
    i = lp.log.index(("solve", "ipm", True))
    assert lp.log[i + 1] == ("cold",) and lp.log[i + 2] == ("solve", "simplex", True)


def test_row_generation_warm_pricing_falls_back_to_highs_choice():
    # a warm Devex solve that fails is solved again with HiGHS's choice, which the run then keeps
    lp = _ScriptedLP(fail_simplex=1)
    out = _scripted_run([[1], [2], [3], []], lp=lp, start=Phase.INITIAL)[0].run()
    assert out.phases == ("initial", "simplex", "simplex", "simplex")
    assert lp.pricings == ["choose", "devex", "choose", "choose", "choose"]
    assert ("cold",) not in lp.log
    # if the warm retry fails too, a cold solve follows
    lp = _ScriptedLP(fail_simplex=2)
    _scripted_run([[1], [2], []], lp=lp, start=Phase.INITIAL)[0].run()
    assert lp.pricings[:4] == ["choose", "devex", "choose", "choose"] and lp.log.count(("cold",)) == 1


def test_row_generation_limits():
    with pytest.raises(LPError, match="did not converge in 2 rounds"):
        _scripted_run([[1], [2], [3]], max_rounds=2)[0].run()
    with pytest.raises(LPTimeout, match="time limit of 1 s"):
        _scripted_run([[1], [2]], time_limit=1.0, started=time.perf_counter() - 5.0)[0].run()
    with pytest.raises(ValueError, match="starts in"):
        RowGenerationPolicy(start=Phase.SIMPLEX)
    with pytest.raises(ValueError, match="warm_pricing"):
        RowGenerationPolicy(warm_pricing="fastest")


def test_row_generation_on_a_real_lp():
    # min sum x s.t. x_i >= i / n generated lazily: same optimum as the full LP, fewer rows in it
    n = 30
    loop = _lazy_lower_bounds(n, None, solver="simplex")
    out = loop.run()
    assert out.solution.objective == pytest.approx(np.arange(n).sum() / n, abs=1e-12)
    assert out.rounds == 7 and loop.lp.num_row == n - 1  # x_0 >= 0 is never violated


def test_explain_failures_names_family_n_epsilon_and_advice():
    with pytest.raises(SolverTimeout) as info:
        with explain_failures("OPTMech", 30, 2.0, on_timeout="a larger time_limit", on_failure="x"):
            raise LPTimeout("LP time limit of 1 s reached.")
    assert str(info.value) == ("OPTMech on n = 30 points at epsilon = 2: LP time limit of 1 s reached. "
                               "Try: a larger time_limit.")
    with pytest.raises(SolverError, match="SpannerMech on n = 5 .* Try: method='lazy'") as info:
        with explain_failures("SpannerMech", 5, 0.5, on_timeout="x", on_failure="method='lazy'"):
            raise LPError("model status 'Unbounded'")
    assert not isinstance(info.value, SolverTimeout) and isinstance(info.value.__cause__, LPError)


@pytest.mark.parametrize("name, params", [("optimal", {}), ("optimal", {"method": "full"}),
                                          ("spanner", {}), ("spanner", {"method": "lazy"}),
                                          ("constopt", {"r": 3, "lam": 0.1})])
def test_lp_failures_are_explained(name, params):
    space = MetricSpace.from_points(np.random.default_rng(0).random((40, 2)))
    with pytest.raises(SolverTimeout, match=r"n = 40 points at epsilon = 2: .*time limit.* Try: "):
        mdp.build(name, space, 2.0, time_limit=1e-4, **params)


def test_stochastic_rows():
    M = np.array([[0.5, 0.5 + 1e-9, -1e-12], [2.0, 1.0, 1.0]])
    H = stochastic_rows(M)
    assert np.all(H >= 0) and np.abs(H.sum(axis=1) - 1).max() <= 1e-15
    assert H[1].tolist() == [0.5, 0.25, 0.25]
    with pytest.raises(SolverError, match="row 0"):
        stochastic_rows(np.zeros((2, 2)))


@pytest.mark.parametrize("name", ["optimal", "spanner", "constopt"])
def test_declared_rules_refuse_bad_values(name):
    # every bad value of every declared parameter is refused before any LP is built
    space = MetricSpace.from_points(np.random.default_rng(1).random((8, 2)))
    rules = mdp.get(name).rules
    assert set(rules) == set(mdp.get(name).params) and rules
    for key, rule in rules.items():
        for bad in rule.bad_values():
            with pytest.raises(ParameterError, match=key):
                mdp.build(name, space, 1.0, **{key: bad})


def test_lp_size_stats_are_read_by_key():
    from experiments.common import measure
    from experiments.size_sweep import lp_columns

    space = MetricSpace.from_points(np.random.default_rng(1).random((10, 2)))
    mechs = [mdp.build("optimal", space, 1.0), mdp.build("spanner", space, 1.0),
             mdp.build("constopt", space, 1.0, r=3, lam=0.1), mdp.build("exponential", space, 1.0)]
    df = pd.DataFrame([measure(m, q=0.95, delta=1e-3) for m in mechs])
    cols = lp_columns(df)
    assert cols == {"nnz": "stats.nnz", "rows": "stats.rows", "variables": "stats.variables"}
    for m, (_, rec) in zip(mechs, df.iterrows(), strict=True):
        want = [m.stats.get(k) for k in ("nnz", "rows", "variables")]
        got = [rec[cols[k]] for k in ("nnz", "rows", "variables")]
        assert got == want if m.name != "exponential" else np.isnan(got).all()
    assert lp_columns(df[["stats.build_seconds"]]) == {"nnz": None, "rows": None, "variables": None}


@pytest.mark.parametrize("hipo_installed", [True, False])
def test_hipo_solver_or_its_fallback(hipo_installed):
    # "hipo" (HiGHS's HiPO interior point, from highspy-extras) reaches linprog's optimum; without
    # the package the solve falls back to IPX and the statistics say so
    import mdp.lp.highs as highs

    if hipo_installed and not highs.HIPO_AVAILABLE:
        pytest.skip("highspy-extras is not installed")
    assert highs._highs_solver_name("hipo", hipo_installed) == ("hipo" if hipo_installed else "ipx")
    assert highs._highs_solver_name("ipm", hipo_installed) == "ipx"
    m, n = 40, 25
    c, A, b, ref = _box_lp(5, m, n, 0.3, 0.1)
    lp = SparseLP(c, A, row_upper=b, col_upper=np.ones(n), solver="hipo",
                  hipo_available=hipo_installed)
    assert lp.runs_ipx is (not hipo_installed)
    got = lp.solve()
    assert got.objective == pytest.approx(ref, abs=1e-8)
    assert ("unavailable" in lp.stats["solver"]) is (not hipo_installed)
    assert lp.stats["ipm_iterations"] > 0


class _Info:
    """A stand-in for HiGHS's solve info (the fields :meth:`SparseLP._accept_interior` reads)."""

    def __init__(self, worst=1e-8, primal=1, dual=2, objective_error=1e-10):
        self.primal_solution_status, self.dual_solution_status = primal, dual
        self.max_relative_primal_infeasibility = worst
        self.max_relative_dual_infeasibility = 0.0
        self.max_relative_primal_residual_error = 0.0
        self.max_relative_dual_residual_error = worst
        self.primal_dual_objective_error = objective_error


@pytest.mark.parametrize("rule", ["choose", "dantzig", "devex", "steepest"])
def test_simplex_pricing_rules_reach_the_optimum(rule):
    from mdp.lp.highs import SIMPLEX_PRICING

    c, A, b, ref = _box_lp(7, 60, 40, 0.2, 0.1)
    lp = SparseLP(c, A, row_upper=b, col_upper=np.ones(40), solver="simplex", simplex_pricing=rule)
    assert lp.solve().objective == pytest.approx(ref, abs=1e-9)
    assert lp._option("simplex_dual_edge_weight_strategy") == SIMPLEX_PRICING[rule]
    with pytest.raises(ParameterError, match="simplex_pricing.*'fastest'"):
        lp.set_simplex_pricing("fastest")


def test_imprecise_interior_point_accepted_only_without_crossover_and_within_tolerance():
    import mdp.lp.highs as highs
    from mdp.lp.highs import INTERIOR_ACCEPT_RTOL

    c, A, b, _ = _box_lp(5, 40, 25, 0.3, 0.1)
    lp = SparseLP(c, A, row_upper=b, col_upper=np.ones(25), solver="ipm", crossover=False,
                  ipm_tolerance=1e-10)
    assert lp._accept_interior(_Info(1e-6))
    assert not lp._accept_interior(_Info(1e-6, objective_error=1e-8))  # 10x the IPM tolerance
    assert not lp._accept_interior(_Info(10 * INTERIOR_ACCEPT_RTOL))   # residuals too large
    assert not lp._accept_interior(_Info(1e-6, primal=0))              # no primal point
    assert not lp._accept_interior(_Info(float("nan")))
    lp.set_crossover(True)                                              # a vertex was asked for
    assert not lp._accept_interior(_Info(1e-6))
    lp.set_crossover(False)
    lp.set_solver("simplex")
    assert not lp._accept_interior(_Info(1e-6))
    lp.set_solver("hipo")                                               # HiPO's "Unknown" is a failure
    assert not lp._accept_interior(_Info(1e-6)) or not highs.HIPO_AVAILABLE


def test_interior_round_at_tight_tolerances_returns_its_point(shared_data):
    # OPTMech's first interior round on 50 Geolife cells at eps = 1 (tolerances 1e-10): HiGHS 1.16
    # ends it "Unknown" (IPX "imprecise", rows met to ~1e-8); the round's point is still returned,
    # and its Lagrangian bound agrees with its objective
    from geo.popular import popular_cells
    from mdp.families.optimal import nonredundant_pairs
    from mdp.worst_case.solve import (
        initial_triples,
        lagrangian_lower_bound,
        primal_rows,
        privacy_rows,
    )

    D = popular_cells(shared_data / "geolife_beijing_cells_0p005.npz", n=50).distances
    n, eps = 50, 1.0
    pu, pv = nonredundant_pairs(D)
    allowed = np.zeros((n, n), dtype=bool)
    allowed[pu, pv] = True
    iu, iv, iw = initial_triples(D, allowed, 2)
    A = sp.vstack([primal_rows(D, pu[:0], pv[:0], np.zeros(0)), privacy_rows(D, eps, iu, iv, iw)],
                  format="csr")
    m, N = A.shape[0], n * n
    c = np.zeros(N + 1)
    c[-1] = 1.0
    lp = SparseLP(c, A, row_lower=np.r_[np.ones(n), np.zeros(m - n)],
                  row_upper=np.r_[np.ones(n), np.full(m - n, np.inf)],
                  col_lower=np.r_[np.zeros(N), -np.inf], col_upper=np.r_[np.ones(N), np.inf],
                  solver="ipm", crossover=False, primal_tolerance=1e-10, dual_tolerance=1e-10,
                  ipm_tolerance=1e-10)
    sol = lp.solve()
    bound = lagrangian_lower_bound(A, sol.row_dual, n)
    assert bound <= sol.objective + 1e-12 and sol.objective - bound <= 1e-6 * sol.objective
    assert (A[n:] @ sol.x).min() >= -1e-6       # every row of the restricted LP nearly holds


def test_thread_counts_between_solves():
    # HiGHS keeps one thread pool per process: a solve asking for another count than the pool
    # was made with used to end with model status 'Not Set'; SparseLP re-creates the pool
    m, n = 25, 15
    c, A, b, ref = _box_lp(11, m, n, 0.4, 0.1)

    def solve(**kw):
        return SparseLP(c, A, row_upper=b, col_upper=np.ones(n), solver="hipo", **kw).solve().objective

    try:
        assert solve() == pytest.approx(ref, abs=1e-7)
        assert solve(threads=2) == pytest.approx(ref, abs=1e-7)
        assert solve(threads=1) == pytest.approx(ref, abs=1e-7)
        mdp.lp.set_threads(2)
        assert mdp.lp.get_threads() == 2
        assert solve() == pytest.approx(ref, abs=1e-7)
        mdp.lp.set_threads(None)
        assert mdp.lp.get_threads() is None
        assert solve() == pytest.approx(ref, abs=1e-7)
    finally:
        mdp.lp.set_threads(None)
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(ParameterError, match="threads"):
            mdp.lp.set_threads(bad)
        with pytest.raises(ParameterError, match="threads"):
            SparseLP(c, A, row_upper=b, threads=bad)


@pytest.mark.parametrize("solver", ["ipx", "hipo", "simplex"])
def test_ctrl_c_stops_a_highs_solve_at_its_next_iteration(monkeypatch, solver, ctrl_c):
    # HiGHS runs in C++, so Python's SIGINT handler alone would raise only when the whole solve
    # returns (minutes on large LPs). The solve must stop within an iteration or two instead.
    import os
    import signal

    from mdp.lp import highs

    c, A, b, ref = _box_lp(11, 400, 300, 0.05, 0.05)
    real, calls = highs._SolveCallback.__call__, {"n": 0, "after": 0}

    def call(self, *args):
        calls["n"] += 1
        if calls["n"] == 3:
            os.kill(os.getpid(), signal.SIGINT)     # Ctrl-C arrives during the solve
        elif calls["n"] > 3:
            calls["after"] += 1
        real(self, *args)

    monkeypatch.setattr(highs._SolveCallback, "__call__", call)
    lp = SparseLP(c, A, row_upper=b, col_lower=np.zeros(300), col_upper=np.ones(300), solver=solver,
                  crossover=False)
    with pytest.raises(KeyboardInterrupt, match="interrupted"):
        lp.solve()
    assert calls["after"] <= 1 and lp.stats["model_status"] == "Interrupted by user"
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    # the next solve of the same model runs to its optimum (the interrupt was not left set)
    monkeypatch.setattr(highs._SolveCallback, "__call__", real)
    lp.cold_start()
    assert lp.solve().objective == pytest.approx(ref, rel=1e-8)


@pytest.mark.parametrize("solver", ["hipo", "simplex"])
def test_progress_from_inside_a_highs_solve(solver):
    # a long single solve (SpannerMech's full LP: minutes at n = 200) reports its iterations
    from mdp.lp import progress

    c, A, b, ref = _box_lp(11, 400, 300, 0.05, 0.05)
    lp = SparseLP(c, A, row_upper=b, col_lower=np.zeros(300), col_upper=np.ones(300), solver=solver,
                  crossover=False)
    events = []
    with progress(events.append, every=0.0):
        assert lp.solve().objective == pytest.approx(ref, rel=1e-8)
    assert len(events) >= 3
    assert {(e.round, e.rows, e.method) for e in events} == {(1, 400, solver)}
    its = [e.iteration for e in events]
    assert its == sorted(its) and its[-1] > 0 and all(np.isnan(e.objective) for e in events)
    # outside a progress block nothing is reported, and the next solve counts as the second
    lp.cold_start()
    lp.solve()
    with progress(events.append, every=0.0):
        lp.cold_start()
        lp.solve()
    assert events[-1].round == 3


def test_row_generation_progress_certifies_only_solutions_that_meet_every_row():
    # a round whose solution still violates rows has a relaxation's objective (below the optimum):
    # its gap to the bound is no distance to the optimum and must not be reported as certified;
    # in gap= mode the round's repaired private matrix is, and its gap is the one the build returns
    from mdp.lp import progress

    space = MetricSpace.from_points(np.random.default_rng(2).random((14, 2)) * 4)
    events = []
    with progress(events.append):
        mech = mdp.build("optimal", space, 1.0, solver="simplex")
    rounds = [e for e in events if e.method is None]
    assert len(rounds) == mech.stats["rounds"] >= 2
    for e in rounds[:-1]:
        assert e.violated > 0 and not e.certified
        assert e.objective < mech.stats["lp_objective"] - 1e-9
    last = rounds[-1]
    assert last.violated == 0 and last.certified
    assert last.objective == pytest.approx(mech.stats["lp_objective"], rel=1e-12)
    assert last.objective * (1 - last.gap) == pytest.approx(mech.stats["lower_bound"], rel=1e-12)

    events = []
    with progress(events.append):
        mech = mdp.build("optimal", space, 1.0, solver="ipm", gap=1e-2)
    rounds = [e for e in events if e.method is None]
    assert len(rounds) == mech.stats["rounds"] >= 2
    assert all(e.violated > 0 and e.certified for e in rounds)  # stopped before every row held
    # the relaxation's own gap in the last round was ~1e-5; the private matrix's is 3e-4
    assert rounds[-1].objective == pytest.approx(mech.stats["loss"], rel=1e-12)
    assert rounds[-1].gap == pytest.approx(mech.stats["relative_gap"], rel=1e-9)
    assert rounds[0].gap > rounds[-1].gap > 1e-4


def _lazy_lower_bounds(n: int, policy: RowGenerationPolicy | None, *, solver: str = "ipm",
                       **kw) -> RowGeneration:
    """min sum x s.t. x_i >= i / n, rows generated five at a time, first solve by ``solver``."""
    lp = SparseLP(np.ones(n), sp.csr_matrix((0, n)), solver=solver)

    def cuts(sol, tol):
        viol = np.arange(n) / n - sol.x
        return Cuts(keys=np.nonzero(viol > tol)[0][:5], worst=float(viol.max()))

    def rows(keys):
        A = sp.csr_matrix((np.ones(len(keys)), (np.arange(len(keys)), keys)), shape=(len(keys), n))
        return A, keys / n, np.full(len(keys), np.inf)

    return RowGeneration(lp, sp.csr_matrix((0, n)), cuts, rows, key_space=n, initial_keys=[],
                         policy=policy, **kw)


def test_row_generation_warm_rounds_within_their_budget():
    # past the budget the run stops with a solver error, not a timeout, so that a caller with
    # another method goes on to it; a generous budget changes nothing
    spent = RowGenerationPolicy(start=Phase.INITIAL, warm_time_factor=0.0, warm_min_seconds=1e-9)
    with pytest.raises(LPError, match="past their budget after 1 rounds") as info:
        _lazy_lower_bounds(30, spent).run()
    assert not isinstance(info.value, LPTimeout)
    ample = RowGenerationPolicy(start=Phase.INITIAL, warm_time_factor=1e3, warm_min_seconds=60.0)
    loop = _lazy_lower_bounds(30, ample, time_limit=600.0)
    out = loop.run()
    assert out.solution.objective == pytest.approx(np.arange(30).sum() / 30, abs=1e-9)
    assert out.phases[0] == "initial" and set(out.phases[1:]) == {"simplex"}
    assert loop.lp.time_limit is None           # the LP's own limit is restored after each solve
    # the caller's own limit, when it is the nearer one, decides: a timeout
    with pytest.raises(LPTimeout):
        _lazy_lower_bounds(30, spent, time_limit=1.0, started=time.perf_counter() - 5.0).run()


def test_time_budget_is_an_error_and_restores_the_limit():
    # past a caller's budget a solve ends with a solver error (the caller tries something else),
    # not a timeout; the LP's own limit holds again after the block, and decides where it is nearer
    lp = SparseLP(np.ones(3), sp.csr_matrix(np.eye(3)), row_lower=np.ones(3), row_upper=np.full(3, np.inf),
                  solver="ipm", time_limit=600.0)
    with pytest.raises(LPError, match="over budget") as info:
        with lp.time_budget(1e-9, "over budget"):
            lp.solve()
    assert not isinstance(info.value, LPTimeout)
    assert lp.time_limit == 600.0
    assert lp.solve().objective == pytest.approx(3.0)
    with pytest.raises(LPError, match="no time"):
        with lp.time_budget(0.0, "no time"):
            lp.solve()
    lp.set_time_limit(1e-9)
    with pytest.raises(LPTimeout):
        with lp.time_budget(60.0, "not this"):
            lp.solve()
