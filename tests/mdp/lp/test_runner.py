"""The runner of a plan's steps: order, acceptance, failures, budgets and the time limit."""

from __future__ import annotations

import time

import pytest

from mdp.lp import LPError, LPTimeout
from mdp.lp.plan import Step
from mdp.lp.runner import run_steps

STEPS = [Step(f"step at {c:g}", "first" if i == 0 else "the step before failed", "ipm", c)
         for i, c in enumerate((1e12, 1e7, 1e4))]


def test_steps_run_in_order_until_one_is_accepted():
    seen = []

    def solve(step, left):
        seen.append((step.max_coefficient, left))
        return step.max_coefficient

    run = run_steps(STEPS, solve, time_limit=None, accept=lambda c: c < 1e10,
                    describe=lambda c: f"solved at {c:g}")
    assert seen == [(1e12, None), (1e7, None)]
    assert [(a.step, a.outcome, a.detail) for a in run.attempts] == [
        ("step at 1e+12", "ok", "solved at 1e+12"), ("step at 1e+07", "ok", "solved at 1e+07")]
    assert run.results == [1e12, 1e7] and run.last.step is STEPS[1]


def test_a_failed_step_is_recorded_and_the_next_runs():
    def solve(step, left):
        if step.max_coefficient > 1e5:
            raise LPError(f"no optimum at {step.max_coefficient:g}")
        return "ok"

    run = run_steps(STEPS, solve, time_limit=60.0)
    assert [a.outcome for a in run.attempts] == ["failed", "failed", "ok"]
    assert run.attempts[0].detail == "no optimum at 1e+12"
    assert isinstance(run.records[1].error, LPError) and run.results == ["ok"]
    # every step failing: no result, every failure recorded
    run = run_steps(STEPS, lambda s, left: (_ for _ in ()).throw(LPError("x")), time_limit=None)
    assert run.results == [] and [a.outcome for a in run.attempts] == ["failed"] * 3


def test_a_budget_set_by_a_result_stops_the_later_steps_and_the_results_stand():
    lefts = []

    def solve(step, left):
        lefts.append(left)
        if step is STEPS[0]:
            return "first"
        raise LPTimeout("budget spent")

    run = run_steps(STEPS, solve, time_limit=100.0, accept=lambda r: False,
                    budget=lambda r: 5.0)
    assert lefts[0] == pytest.approx(100.0, abs=0.5) and lefts[1] == 5.0
    assert [a.outcome for a in run.attempts] == ["ok", "stopped"]
    assert run.attempts[1].detail.startswith("stopped after 5 s")
    assert run.results == ["first"]


def test_the_callers_time_limit_raises():
    def solve(step, left):
        raise LPTimeout("the caller's limit")

    with pytest.raises(LPTimeout, match="the caller's limit"):
        run_steps(STEPS, solve, time_limit=10.0, budget=lambda r: 20.0)
    # a budget longer than the time left is no budget: the caller's limit applies
    with pytest.raises(LPTimeout, match="the caller's limit"):
        run_steps(STEPS, lambda s, left: "ok" if s is STEPS[0] else solve(s, left),
                  time_limit=10.0, accept=lambda r: False, budget=lambda r: 20.0)


def test_no_time_left_before_a_step_raises_and_started_counts_earlier_work():
    with pytest.raises(LPTimeout, match="before the LP was solved"):
        run_steps(STEPS, lambda s, left: "ok", time_limit=1.0,
                  started=time.perf_counter() - 2.0)

    def slow_failure(step, left):
        time.sleep(0.02)
        raise LPError("failed")

    with pytest.raises(LPTimeout, match="after 1 attempts"):
        run_steps(STEPS, slow_failure, time_limit=0.01)
