"""What LP builders hand back: stochastic rows, and failures that say what to try.

An LP solution meets its rows only to the solver's tolerances: entries can be slightly negative
and rows can sum to ``1 +- 1e-9``. :func:`stochastic_rows` makes a candidate matrix exactly
row-stochastic (to rounding) before it goes to certification, which accepts nothing else.

:func:`explain_failures` turns a solver failure deep inside a build into a message a user can act
on: the family, the size of the space, epsilon, what happened and what to try.

At large ``eps * d`` (geo-indistinguishability on wide areas, spaces with two distance scales)
the privacy rows ``M_uw <= e^{eps D_uv} M_vw`` have coefficients far beyond what HiGHS resolves
(it refuses values near 1e15 and mis-solves bounded LPs whose coefficients span 13+ orders of
magnitude). The LP families leave such rows out (a relaxation); an entry that only a left-out row
would bound is then *decided analytically*: :func:`private_candidate` lifts every column to its
log-Lipschitz envelope at ``eps`` (:func:`mdp.privacy.verification.repair_to_private`), in the log domain
when ``e^{-eps d}`` underflows float64, so ``e^{-1000}`` stays exact. When HiGHS fails anyway,
or when what the LP left is worse than the exponential mechanism,
:func:`mdp.families.exponential.exponential_floor`
returns the exponential mechanism at the same epsilon and says why in ``stats["fallback"]``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

from ..errors import SolverError, SolverTimeout
from ..privacy.accounting import loss as mech_loss
from ..privacy.verification import column_envelope, repair_to_private

__all__ = ["stochastic_rows", "explain_failures", "private_candidate", "candidate_loss",
           "balanced_envelope", "near_private_candidate",
           "LOG_DOMAIN_C"]

#: Largest ``eps * D`` handled in probabilities: beyond it ``e^{-eps D}`` (about 1e-260 here) gets
#: too close to float64's smallest normal number (~1e-308) for the envelope, so the candidate is
#: built and certified as log-probabilities.
LOG_DOMAIN_C = 600.0


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


def private_candidate(M: np.ndarray, distances: np.ndarray, epsilon: float, *,
                      log: bool | None = None, given_log: bool = False
                      ) -> tuple[np.ndarray, bool, float]:
    r"""Decide the entries an LP left unresolved: envelope at ``epsilon``, then the uniform mix.

    ``M`` is a row-stochastic LP solution whose rows with coefficients above the LP's limit were
    left out (entries there can be 0 or too small). Every column is lifted to
    ``max_u M_uw e^{-eps D_uv}`` (:func:`mdp.privacy.verification.repair_to_private`, which renormalises
    and mixes in the least uniform weight), so the result is eps-mDP up to rounding; the
    registry's :class:`~mdp.Mechanism` certifies it.

    Parameters
    ----------
    M : ndarray (n, n)
        Row-stochastic (probabilities).
    distances : ndarray (n, n)
    epsilon : float
    log : bool or None
        Work in log-probabilities; ``None``: when ``epsilon * max D > LOG_DOMAIN_C``.
    given_log : bool
        ``M`` holds log-probabilities already (then the work is in the log domain).

    Returns
    -------
    values, log, uniform_mix : the repaired matrix (log-probabilities when ``log``), whether it is
    in the log domain, and the uniform weight used.
    """
    D = np.asarray(distances, dtype=float)
    if given_log:
        H, mix = repair_to_private(M, D, epsilon, log=True)
        return H, True, mix
    if log is None:
        log = bool(epsilon * D.max() > LOG_DOMAIN_C)
    if log:
        with np.errstate(divide="ignore"):
            A = np.log(M)
    else:
        A = M
    H, mix = repair_to_private(A, D, epsilon, log=log)
    return H, log, mix


def balanced_envelope(M: np.ndarray, distances: np.ndarray, epsilon: float, *,
                      iterations: int = 20, rtol: float = 1e-13) -> np.ndarray:
    r"""Alternate the column envelope and the row normalisation, from a near-private ``M``.

    .. math:: E_{vw} = \max_u e^{-\epsilon D_{uv}} P_{uw}, \qquad P \leftarrow E / (E \mathbf 1)

    The envelope makes every column exactly eps-private but rows sum above 1; normalising the rows
    breaks the ratios only by the spread of the row sums, which the next envelope shrinks. A few
    rounds leave violations that :func:`private_candidate`'s single envelope and uniform mix
    remove at a far smaller loss than from ``M`` itself (the uniform weight falls from ~0.03-0.6
    to ~1e-7 on interior OPTMech solutions of the Geolife cells at gap 1e-3; figures in
    ``docs/design/lp.md``, "Numerics and certification"). Not a privacy step by itself: the result goes
    through :func:`private_candidate` and the registry's certification.

    Parameters
    ----------
    M : ndarray (n, n)
        Non-negative, rows summing to 1 (probabilities).
    distances : ndarray (n, n)
    epsilon : float
    iterations : int
        Most rounds; stops earlier when no entry moves by more than ``rtol`` relative.

    Returns
    -------
    ndarray (n, n), row-stochastic.
    """
    D = np.asarray(distances, dtype=float)
    P = np.array(M, dtype=float)
    for _ in range(iterations):
        E = column_envelope(P, D, epsilon, log=False)
        E /= E.sum(axis=1, keepdims=True)
        moved = float(np.max(np.abs(E - P) / np.maximum(E, 1e-300)))
        P = E
        if moved <= rtol:
            break
    return P


def near_private_candidate(M: np.ndarray, distances: np.ndarray, epsilon: float
                           ) -> tuple[np.ndarray, bool, float]:
    """A restricted LP optimum made private: :func:`stochastic_rows`, then
    :func:`balanced_envelope` unless ``eps * D`` leaves float64's range, then
    :func:`private_candidate` (the envelope and least uniform mix). Returns what
    :func:`private_candidate` returns."""
    D = np.asarray(distances, dtype=float)
    M = stochastic_rows(M)
    if epsilon * D.max() <= LOG_DOMAIN_C:
        M = balanced_envelope(M, D, epsilon)
    return private_candidate(M, D, epsilon)


def candidate_loss(values: np.ndarray, distances: np.ndarray, log: bool) -> float:
    """Worst-case loss ``max_u sum_w D_uw M_uw`` of a matrix or log-matrix."""
    return mech_loss(values, distances, log=log)
