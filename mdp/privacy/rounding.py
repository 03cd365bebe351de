r"""Directed rounding of float64 results: the error bounds every privacy check rests on.

A privacy check computes, say, ``log1p(x) / d`` in float64 and must return a number that is
*at least* the true value of the expression on the exact inputs. Each step's rounding error is
bounded relative to its result (IEEE 754 correctly rounded operations: one unit roundoff
``u = 2^-53``; the C library's ``log1p``/``log``/``exp``: the assumed :data:`LIBM_RTOL`), so a
result moved outward by the accumulated relative bound (plus one subnormal unit, for results
near zero) brackets the truth:

.. math:: \mathrm{round\_down}(\hat y, \rho) \le y \le \mathrm{round\_up}(\hat y, \rho)
          \quad\text{when}\quad |\hat y - y| \le \rho\,|\hat y| .

The relative bounds below each keep a margin over the analysis in
``docs/design/verification.md``; :mod:`mdp.privacy.accounting`, :mod:`mdp.privacy.verification` and
:mod:`mdp.privacy.sampling` use them.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["UNIT_ROUNDOFF", "SUBNORMAL_SLACK", "LIBM_RTOL", "X_REL", "LOG_REL", "DIFF_REL",
           "round_up", "round_down", "gamma"]

#: Unit roundoff of float64.
UNIT_ROUNDOFF = 2.0 ** -53
#: Absolute slack added to every directed result (covers results in the subnormal range).
SUBNORMAL_SLACK = 2.0 ** -1070
#: Assumed bound on the relative error of numpy's ``log1p``, ``log`` and ``exp`` (measured:
#: below 2^-51, about one unit in the last place; the bounds below leave a factor 4 on top).
LIBM_RTOL = 2.0 ** -44
#: ``x = (p - q) / q``: at most 2.02 u (the subtraction is exact when ``p`` and ``q`` are within
#: a factor 2, Sterbenz's lemma), margin 2.
X_REL = 2.0 ** -51
#: ``log1p`` / ``log``: :data:`LIBM_RTOL` plus one IEEE rounding, margin 4.
LOG_REL = 2.0 ** -42
#: One correctly rounded subtraction or division, margin 4.
DIFF_REL = 2.0 ** -51


def gamma(k: int, u: float = UNIT_ROUNDOFF) -> float:
    r"""Higham's :math:`\gamma_k = k u / (1 - k u)` (Higham 2002, section 3.1): the relative error
    bound of ``k`` chained roundings of unit roundoff ``u`` (float64 by default)."""
    return k * u / (1.0 - k * u)


def round_up(x: ArrayLike, rel: float) -> np.ndarray:
    """``x`` moved up by ``rel`` relative plus :data:`SUBNORMAL_SLACK` (infinities and NaN kept).

    Parameters
    ----------
    x : array_like
        Computed values.
    rel : float
        Bound on their relative rounding error.

    Returns
    -------
    ndarray
        Values at least the true ones whenever ``|x - truth| <= rel |x|``.
    """
    x = np.asarray(x, dtype=float)
    with np.errstate(invalid="ignore", over="ignore"):
        out = x + np.abs(x) * rel + SUBNORMAL_SLACK
    return np.where(np.isfinite(x), out, x)


def round_down(x: ArrayLike, rel: float) -> np.ndarray:
    """``x`` moved down by ``rel`` relative minus :data:`SUBNORMAL_SLACK` (see :func:`round_up`)."""
    x = np.asarray(x, dtype=float)
    with np.errstate(invalid="ignore", over="ignore"):
        out = x - np.abs(x) * rel - SUBNORMAL_SLACK
    return np.where(np.isfinite(x), out, x)
