"""The one runner of a plan's steps: an LP family's solves, tried in order until one is accepted.

Every LP family retries its LP in the same way: at the next coefficient limit (rows with a
coefficient ``e^{eps D}`` above it left out, a relaxation whose bound still holds) or with the next
HiGHS method, when a solve fails or its result is not good enough. The family's plan lists those
solves as :class:`~mdp.lp.plan.Step` values; :func:`run_steps` runs them, so that the steps
``mdp build -v`` prints are the solves that ran, each recorded as an
:class:`~mdp.lp.plan.Attempt`.

Rules, the same for every family:

* A step gets the time left of ``time_limit`` (None: no limit); with none left before a step,
  :class:`~mdp.lp.LPTimeout` is raised.
* A result may set a budget for the steps after it (``budget(result)`` seconds, below the time
  left): a step that runs out of it is recorded ``"stopped"`` and ends the run, the results so
  far standing. A step that runs out of the caller's own time raises :class:`~mdp.lp.LPTimeout`.
* A step that raises :class:`~mdp.lp.LPError` is recorded ``"failed"``; the next step runs.
* A step that returns is recorded ``"ok"``; the run ends when ``accept(result)`` holds (the
  family's test: a solve at all, a gap within the target, or a result past which later steps
  cannot gain).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from .highs import LPError, LPTimeout
from .plan import Attempt, Step

__all__ = ["StepRecord", "StepsRun", "run_steps"]

R = TypeVar("R")


@dataclass(frozen=True)
class StepRecord(Generic[R]):
    """One step run: the step, its attempt, and its result or its error."""

    step: Step
    attempt: Attempt
    result: R | None = None
    error: LPError | None = None


@dataclass(frozen=True)
class StepsRun(Generic[R]):
    """What :func:`run_steps` did: a record per step run, in order."""

    records: tuple[StepRecord[R], ...]

    @property
    def attempts(self) -> list[Attempt]:
        """The attempt of each step run (the build report's)."""
        return [r.attempt for r in self.records]

    @property
    def results(self) -> list[R]:
        """The results of the steps that returned, in order."""
        return [r.result for r in self.records if r.attempt.outcome == "ok"]

    @property
    def last(self) -> StepRecord[R] | None:
        """The record of the last step run (None when none ran)."""
        return self.records[-1] if self.records else None


def run_steps(steps: Sequence[Step], solve: Callable[[Step, float | None], R], *,
              time_limit: float | None, accept: Callable[[R], bool] = lambda result: True,
              describe: Callable[[R], str] = lambda result: "",
              budget: Callable[[R], float | None] = lambda result: None,
              started: float | None = None) -> StepsRun[R]:
    """Run ``solve(step, seconds)`` for each of ``steps`` until one's result is accepted
    (module docstring for the rules).

    Parameters
    ----------
    steps : sequence of Step
        The plan's steps, in order.
    solve : callable
        ``solve(step, seconds)``: the step's solve with at most ``seconds`` (None: no limit).
    time_limit : float or None
        Seconds for all steps together.
    accept : callable
        Whether a result ends the run.
    describe : callable
        The detail of a result's attempt.
    budget : callable
        Seconds each later step may take after this result (None: the time left).
    started : float or None
        The ``time.perf_counter()`` value ``time_limit`` counts from (None: now), where the
        build spent part of it before its steps.

    Raises
    ------
    LPTimeout
        The caller's ``time_limit`` ran out.
    """
    t0 = time.perf_counter() if started is None else started
    records: list[StepRecord[R]] = []
    retry = None
    for i, step in enumerate(steps):
        left = None if time_limit is None else time_limit - (time.perf_counter() - t0)
        if left is not None and left <= 0:
            raise LPTimeout(f"LP time limit of {time_limit:g} s reached "
                            + (f"after {i} attempts" if i else "before the LP was solved"))
        capped = retry is not None and (left is None or retry < left)
        t1 = time.perf_counter()
        try:
            result = solve(step, retry if capped else left)
        except LPTimeout as exc:
            if not capped:
                raise
            records.append(StepRecord(step, Attempt(
                step.label, "stopped", time.perf_counter() - t1,
                f"stopped after {retry:.0f} s; the least loss so far stands"), error=exc))
            break
        except LPError as exc:
            records.append(StepRecord(step, Attempt(step.label, "failed",
                                                    time.perf_counter() - t1, str(exc)),
                                      error=exc))
            continue
        records.append(StepRecord(step, Attempt(step.label, "ok", time.perf_counter() - t1,
                                                describe(result)), result=result))
        retry = budget(result)
        if accept(result):
            break
    return StepsRun(tuple(records))
