"""Progress reports of long LP solves, for a display that the caller sets up (``mdp build``).

A family's solver (the row generation loop of :mod:`mdp.lp.rowgen`, ConstOPTMech's row-block
interior point method) calls :func:`report` with an :class:`LPProgress`; within a
:func:`progress` block the callback receives it, elsewhere nothing happens. The display needs no
parameter threaded through every family and solver.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass

__all__ = ["LPProgress", "progress", "report", "reporting", "report_every", "report_interval",
           "REPORT_SECONDS"]

#: Least seconds between two reports from inside one solver call (HiGHS's, Clarabel's), unless
#: :func:`report_every` or :func:`progress` sets another pace.
REPORT_SECONDS = 1.0


@dataclass(frozen=True)
class LPProgress:
    """One progress report.

    Attributes
    ----------
    round : int
        Round of the solve (1 for the first), each one LP with more rows than the last.
    rows : int
        Rows of the round's LP.
    objective : float
        The round's objective (of the current iterate where ``iteration`` is set).
    gap : float
        Relative gap of ``objective``: to a rigorous lower bound on the full LP's optimum at the
        end of a round, else the interior point iterate's own primal-dual gap; NaN where none is
        known.
    iteration : int or None
        Interior point iteration within the round, for reports during a round.
    certified : bool
        Whether ``gap`` certifies ``objective``: it is the value of a solution that meets every
        row of the full LP (within the solver's tolerance; in ``gap=`` mode, of the private
        matrix repaired from the round's solution) and lies within ``gap`` of a rigorous lower
        bound. Otherwise a row-generation round whose solution still violates rows
        (``violated > 0``) reports its own objective, a relaxation's, below the optimum: its gap
        to the bound says nothing about how far a private matrix is from the optimum.
    violated : int or None
        End of a row-generation round: rows of the full LP that the round's solution violates
        and the next round adds (0: none); ``None`` elsewhere.
    method : str or None
        Set on reports from inside one HiGHS solve (``"hipo"``, ``"simplex"``, ...; HiGHS shares
        no objective there, so ``objective`` is NaN and ``round`` counts the LP's solves) or one
        Clarabel solve (``"clarabel"``: ``objective`` and ``gap`` are its iterate's primal cost
        and relative gap).
    """

    round: int
    rows: int
    objective: float
    gap: float = math.nan
    iteration: int | None = None
    certified: bool = False
    method: str | None = None
    violated: int | None = None


_CALLBACK: contextvars.ContextVar[Callable[[LPProgress], None] | None] = contextvars.ContextVar(
    "mdp_lp_progress", default=None)
_EVERY: contextvars.ContextVar[float] = contextvars.ContextVar("mdp_lp_progress_every",
                                                              default=REPORT_SECONDS)


@contextlib.contextmanager
def progress(callback: Callable[[LPProgress], None], *,
             every: float | None = None) -> Iterator[None]:
    """Within the block, every LP solve that reports calls ``callback(event)``; from inside one
    solver call at most every ``every`` seconds (``None``: the enclosing pace,
    :func:`report_interval`)."""
    token = _CALLBACK.set(callback)
    try:
        if every is None:
            yield
        else:
            with report_every(every):
                yield
    finally:
        _CALLBACK.reset(token)


@contextlib.contextmanager
def report_every(seconds: float) -> Iterator[None]:
    """Within the block, reports from inside one solver call come at most every ``seconds``
    (0: at every iteration the solver shows), whichever :func:`progress` block listens."""
    token = _EVERY.set(float(seconds))
    try:
        yield
    finally:
        _EVERY.reset(token)


def report_interval() -> float:
    """Least seconds between two reports from inside one solver call, here."""
    return _EVERY.get()


def report(event: LPProgress) -> None:
    """Pass ``event`` to the callback of the enclosing :func:`progress` block, if any."""
    callback = _CALLBACK.get()
    if callback is not None:
        callback(event)


def reporting() -> bool:
    """Whether a :func:`progress` block is listening (so a report is worth building)."""
    return _CALLBACK.get() is not None
