"""Solver entry points: the solves an LP build's plan runs, each replaceable within a context.

Every solve that a family's plan names as a step or a fallback (HiGHS's run of a
:class:`~mdp.lp.SparseLP`, Clarabel, the column-block interior point method, the lazy and the
full worst-case solves, the block rounds, ConstOPTMech's row-block method) is declared with
:func:`solver_entry`. A build calls the entry as the function it wraps. Within
``with entry.replaced(other):`` the calls made in that context (this thread, this task) go to
``other`` instead, and the original comes back on leaving it, whatever happened inside.

This is how a plan's fallback paths are exercised: a test injects a solver that fails, stalls
or runs out of time where the plan expects it might, and checks what the build does next
(``tests/mdp/families/test_lp_plan_paths.py``). No module attribute changes, so a replacement
cannot leak into another thread or outlive its ``with`` block. A user can inject an instrumented
solver the same way (to log or time each solve).

A replacement takes the arguments of the function it stands for and returns what it returns,
or raises :class:`~mdp.lp.LPError` / :class:`~mdp.lp.LPTimeout` as it would; it may call
:attr:`SolverEntry.default` for the real solve.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any, Generic, TypeVar

__all__ = ["SolverEntry", "solver_entry", "SOLVER_ENTRIES"]

F = TypeVar("F", bound=Callable[..., Any])

#: Every entry by its qualified name (``module.function``): what can be injected.
SOLVER_ENTRIES: dict[str, SolverEntry] = {}


class SolverEntry(Generic[F]):
    """A solve an LP build calls, which a context may replace (module docstring).

    Attributes
    ----------
    default : callable
        The function it wraps: what runs outside any :meth:`replaced` context.
    """

    def __init__(self, function: F):
        self.default = function
        self.qualname = f"{function.__module__}.{function.__qualname__}"
        self._current: ContextVar[Callable[..., Any]] = ContextVar(self.qualname, default=function)
        functools.update_wrapper(self, function)

    def __call__(self, *args, **kwargs):
        return self._current.get()(*args, **kwargs)

    @property
    def current(self) -> Callable[..., Any]:
        """The function a call runs now (the default, or the innermost replacement)."""
        return self._current.get()

    @contextlib.contextmanager
    def replaced(self, function: Callable[..., Any]) -> Iterator[None]:
        """Within the ``with`` block, calls of this entry go to ``function``."""
        if not callable(function):
            raise TypeError(f"a replacement of {self.qualname} must be callable, got "
                            f"{type(function).__name__}")
        token = self._current.set(function)
        try:
            yield
        finally:
            self._current.reset(token)

    def __repr__(self) -> str:
        return f"<solver entry {self.qualname}>"


def solver_entry(function: F) -> F:
    """Declare ``function`` a solver entry point (module docstring); a decorator."""
    entry = SolverEntry(function)
    SOLVER_ENTRIES[entry.qualname] = entry     # a module reloaded declares its entries again
    return entry  # type: ignore[return-value]
