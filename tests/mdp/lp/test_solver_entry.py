"""Solver entry points: a replacement holds within its context only, and every LP family's
solves go through them."""

from __future__ import annotations

import importlib
import threading
import warnings

import numpy as np
import pytest

import mdp
from mdp.lp import LPError
from mdp.lp.highs import run_highs
from mdp.lp.solver_entry import SOLVER_ENTRIES, SolverEntry
from mdp.spaces.metric_space import MetricSpace


def _twice(x):
    return 2 * x


def test_a_replacement_holds_within_its_block_and_nests():
    entry = SolverEntry(_twice)
    assert entry(3) == 6 and entry.current is _twice
    with entry.replaced(lambda x: -x):
        assert entry(3) == -3
        with entry.replaced(lambda x: 0):
            assert entry(3) == 0
        assert entry(3) == -3
    assert entry(3) == 6
    with pytest.raises(RuntimeError), entry.replaced(lambda x: 1 / 0):
        raise RuntimeError("a failing build")
    assert entry(3) == 6 and entry.default is _twice and entry.__name__ == "_twice"


def test_a_replacement_is_not_seen_by_another_thread():
    entry = SolverEntry(_twice)
    seen = []
    with entry.replaced(lambda x: -x):
        worker = threading.Thread(target=lambda: seen.append(entry(3)))
        worker.start()
        worker.join()
        assert entry(3) == -3
    assert seen == [6]


def test_a_replacement_must_be_callable():
    with pytest.raises(TypeError, match="must be callable"), SolverEntry(_twice).replaced(3):
        pass


def test_every_lp_family_solves_through_the_entries():
    # a build of each LP family whose every solve fails (HiGHS, Clarabel, the column blocks)
    # reaches the exponential floor: no family reaches a solver around its entry
    importlib.import_module("mdp.families.constopt.build")       # declares its entries

    assert {"mdp.lp.highs.run_highs", "mdp.lp.conic.solve_clarabel",
            "mdp.worst_case.column_blocks.solve_worst_case_blocks",
            "mdp.worst_case.solve.solve_worst_case_lp_lazy",
            "mdp.worst_case.solve.solve_worst_case_lp",
            "mdp.worst_case.block_rounds.solve_worst_case_lp_block_rounds",
            "mdp.families.constopt.ipm.solve_constopt_gap",
            "mdp.families.constopt.build.solve_constopt_lp"} <= set(SOLVER_ENTRIES)
    space = MetricSpace.from_points(np.random.default_rng(5).random((10, 2)))
    runs = []

    def fail(lp):
        runs.append(lp.solver)
        raise LPError("injected failure")

    def fail_other(*args, **kwargs):
        raise LPError("injected failure")

    from mdp.lp.conic import solve_clarabel
    from mdp.worst_case.column_blocks import solve_worst_case_blocks

    with run_highs.replaced(fail), solve_clarabel.replaced(fail_other), \
            solve_worst_case_blocks.replaced(fail_other):
        for name, params in (("optimal", {}), ("spanner", {}), ("constopt", {"r": 3, "lam": 0.1})):
            runs.clear()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", mdp.AccuracyWarning)
                mech = mdp.build(name, space, 1.0, **params)
            assert runs, name
            assert mech.stats["fallback"]["to"] == "exponential", name
            assert mech.stats["privacy"]["measured_eps"] <= 1.0 * (1 + 1e-9)


def test_a_lying_solver_cannot_release_a_matrix_that_breaks_epsilon():
    # an injected solve that returns the identity (no privacy at all) with a bound of 0: OPTMech
    # finds the rows violated and falls back to the exponential mechanism; SpannerMech's interior
    # path repairs it to its private envelope; its vertex path (an explicit HiGHS solver, no
    # repair) is refused by the registry's certification
    from mdp.errors import PrivacyError
    from mdp.worst_case.solve import solve_worst_case_lp, solve_worst_case_lp_lazy

    space = MetricSpace.from_points(np.random.default_rng(5).random((10, 2)))
    exponential = mdp.build("exponential", space, 1.0)

    def lying(D, *args, **kwargs):
        return np.eye(D.shape[0]), {"lower_bound": 0.0, "lp_objective": 0.0, "solver": "a liar",
                                    "rows": 0, "seconds": 0.0}

    with solve_worst_case_lp_lazy.replaced(lying), solve_worst_case_lp.replaced(lying), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore", mdp.AccuracyWarning)
        optimal = mdp.build("optimal", space, 1.0)
        assert optimal.stats["fallback"]["to"] == "exponential"
        assert optimal.loss() == pytest.approx(exponential.loss(), rel=1e-12)
        repaired = mdp.build("spanner", space, 1.0)
        assert not np.allclose(repaired.matrix, np.eye(10))
        for mech in (optimal, repaired):
            assert mech.stats["privacy"]["measured_eps"] <= 1.0 * (1 + 1e-9)
            assert mech.eps_tight() <= 1.0 * (1 + 1e-9)
        with pytest.raises(PrivacyError, match="refused"):
            mdp.build("spanner", space, 1.0, method="full", solver="ipm")
