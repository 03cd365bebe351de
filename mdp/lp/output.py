"""What LP builders hand back: stochastic rows, and failures that say what to try.

An LP solution meets its rows only to the solver's tolerances: entries can be slightly negative
and rows can sum to ``1 +- 1e-9``. :func:`stochastic_rows` makes a candidate matrix exactly
row-stochastic (to rounding) before it goes to certification, which accepts nothing else.

:func:`explain_failures` turns a solver failure deep inside a build into a message a user can act
on: the family, the size of the space, epsilon, what happened and what to try.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

from ..errors import SolverError, SolverTimeout

__all__ = ["stochastic_rows", "explain_failures"]


def stochastic_rows(M: np.ndarray) -> np.ndarray:
    """``M`` with negatives set to 0 and every row divided by its sum (in place; returned).

    Raises
    ------
    SolverError
        When a row has no positive entry (the LP returned no distribution for that input).
    """
    np.maximum(M, 0.0, out=M)
    sums = M.sum(axis=1, keepdims=True)
    if not np.all(sums > 0):
        bad = int(np.argmin(sums))
        raise SolverError(f"the LP solution has no positive entry in row {bad}")
    M /= sums
    return M


@contextmanager
def explain_failures(family: str, n: int, epsilon: float, *, on_timeout: str,
                     on_failure: str) -> Iterator[None]:
    """Re-raise solver errors with the family, ``n``, ``epsilon`` and a suggestion.

    Parameters
    ----------
    family : str
        Display name (e.g. ``"OPTMech"``).
    n : int
        Size of the space.
    epsilon : float
    on_timeout : str
        What to try when the time limit was reached (:class:`~mdp.errors.SolverTimeout`).
    on_failure : str
        What to try when the solver failed otherwise (:class:`~mdp.errors.SolverError`).

    Notes
    -----
    The exception keeps its type (``SolverTimeout`` stays a timeout) and chains the original.
    """
    where = f"{family} on n = {n} points at epsilon = {epsilon:g}"
    try:
        yield
    except SolverTimeout as exc:
        raise SolverTimeout(f"{where}: {str(exc).rstrip('.')}. Try: {on_timeout}.") from exc
    except SolverError as exc:
        raise SolverError(f"{where}: {str(exc).rstrip('.')}. Try: {on_failure}.") from exc
