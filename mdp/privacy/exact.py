r"""Exact and rigorously rounded scalar arithmetic for the privacy checks.

The fast checks in :mod:`mdp.privacy.accounting` work in float64 with stated error bounds; the few
comparisons that fall inside those bounds, and the reference checks of the test suite, are
decided here without floating-point rounding:

* float64 numbers are exact rationals (:class:`fractions.Fraction`);
* :func:`exp_bounds` encloses :math:`e^c` between two dyadic rationals using integer arithmetic
  only (Taylor series with directed rounding, then repeated squaring), so no library ``exp`` is
  trusted;
* :func:`log_ratio_upper` bounds :math:`\ln(p/q)` from above with :mod:`decimal`, whose ``ln``
  is correctly rounded by specification (General Decimal Arithmetic; Python documents it).

These routines are slow (microseconds to milliseconds per call) and meant for a few hundred
triples, or for small reference matrices in tests. See ``docs/design/verification.md``.
"""

from __future__ import annotations

import math
from decimal import ROUND_CEILING, Decimal, localcontext
from fractions import Fraction

import numpy as np

__all__ = ["exp_bounds", "pure_triple_holds", "log_ratio_upper", "level_upper",
           "float_ceil", "check_pure_exact"]

#: Above this ``c`` the product ``e^c q`` of any positive float64 ``q`` exceeds every float64
#: probability (``e^1500 * 2^-1074 > 2``), so comparisons need no exponential at all.
_HUGE_C = 1500


def _exp_bounds_fixed(y: Fraction, prec: int) -> tuple[int, int]:
    """``floor``/``ceil`` bounds of ``e^y * 2^prec`` for ``0 <= y <= 1/2`` (Taylor series).

    Terms ``y^k / k!`` are carried rounded down (``lo``) and up (``hi``); the series stops once
    the rounded-up term is at most one unit, and the tail
    ``sum_{j > K} y^j / j! <= y^K / K! * (y / (K + 1)) / (1 - y / (K + 1)) <= y^K / K!``
    is added once more to ``hi``.
    """
    num, den = y.numerator, y.denominator
    lo = hi = term_lo = term_hi = 1 << prec
    k = 0
    while True:
        k += 1
        term_lo = (term_lo * num) // (den * k)
        term_hi = -((-term_hi * num) // (den * k))          # ceiling division
        lo += term_lo
        hi += term_hi
        if term_hi <= 1:
            break
    return lo, hi + term_hi


def exp_bounds(c, bits: int = 96) -> tuple[Fraction, Fraction]:
    r"""Rational bounds ``lo <= e^c <= hi`` with ``hi / lo - 1`` about ``2^-bits``.

    Integer arithmetic only: ``c`` is halved ``s`` times to ``|y| <= 1/2``, ``e^y`` is summed
    from its Taylor series with floor/ceiling rounding at ``2^-(bits + s + 16)``, and the bounds
    are squared ``s`` times (rounded down and up). Negative ``c`` uses ``e^c = 1 / e^{-c}``.

    Parameters
    ----------
    c : float, int or Fraction
        The exponent (exact rational; a float is taken at its exact value).
    bits : int
        Target relative accuracy.
    """
    c = Fraction(c)
    if c < 0:
        lo, hi = exp_bounds(-c, bits)
        return 1 / hi, 1 / lo
    if c == 0:
        return Fraction(1), Fraction(1)
    s = max(0, math.ceil(math.log2(float(c)) + 1)) if c > Fraction(1, 2) else 0
    y = c / (1 << s)
    prec = bits + s + 16
    lo, hi = _exp_bounds_fixed(y, prec)
    for _ in range(s):
        lo = (lo * lo) >> prec
        hi = -((-(hi * hi)) >> prec)
    scale = 1 << prec
    return Fraction(lo, scale), Fraction(hi, scale)


def pure_triple_holds(p, q, c) -> bool:
    r"""Decide ``p <= e^c q`` exactly for non-negative rationals ``p, q`` and rational ``c >= 0``.

    ``e^c`` is irrational for rational ``c != 0`` (Lindemann), so equality cannot occur and the
    refinement loop (doubling the precision of :func:`exp_bounds`) terminates.
    """
    p, q, c = Fraction(p), Fraction(q), Fraction(c)
    if p <= q:                      # e^c >= 1
        return True
    if q == 0:
        return False
    if c == 0:
        return p <= q
    if c > _HUGE_C and p <= 2:
        return True
    bits = 64
    while True:
        lo, hi = exp_bounds(c, bits)
        if p <= lo * q:
            return True
        if p > hi * q:
            return False
        bits *= 2


def float_ceil(x) -> float:
    """The smallest float64 ``>= x`` for an exact ``Fraction`` or ``Decimal`` ``x``."""
    if isinstance(x, Decimal):
        if x.is_infinite():
            return math.inf if x > 0 else -math.inf
        x = Fraction(x)
    f = float(x)                    # correctly rounded to nearest
    if math.isinf(f):
        return f
    if Fraction(f) < x:
        f = math.nextafter(f, math.inf)
    return f


def log_ratio_upper(p: float, q: float, digits: int = 40) -> Decimal:
    r"""A :class:`~decimal.Decimal` upper bound of :math:`\ln(p/q)` (``p, q > 0`` floats).

    ``p/q`` is rounded up, ``ln`` is correctly rounded (half-even, so within half a unit in the
    last place) and the result is moved up by one unit: the bound exceeds the true value by at
    most about ``10^-(digits-1)`` relative.
    """
    with localcontext() as ctx:
        ctx.prec = digits
        ctx.Emin, ctx.Emax = -999999, 999999
        ctx.rounding = ROUND_CEILING
        ratio = Decimal(p) / Decimal(q)
        value = ratio.ln()
        return value.next_plus()


def level_upper(p: float, q: float, d: float, digits: int = 40) -> float:
    r"""Smallest float64 ``>=`` an upper bound of :math:`\ln(p/q)/d` (``q > 0``, ``d > 0``).

    ``p = 0`` gives ``-inf``. The bound is within about ``10^-(digits-1)`` relative of the true
    value before the final rounding up to float64.
    """
    if p == 0:
        return -math.inf
    up = log_ratio_upper(p, q, digits)
    with localcontext() as ctx:
        ctx.prec = digits
        ctx.Emin, ctx.Emax = -999999, 999999
        ctx.rounding = ROUND_CEILING
        return float_ceil(up / Decimal(d))


def check_pure_exact(matrix, distances, epsilon, *, log: bool = False):
    r"""Reference check of pure ``epsilon``-mDP in exact rational arithmetic (slow, small n).

    For every ordered pair ``u != v`` and output ``w``, decides
    ``M[u, w] <= e^{epsilon D[u, v]} M[v, w]`` (``log=False``; float entries and distances taken
    as exact rationals, :func:`pure_triple_holds`) or
    ``L[u, w] - L[v, w] <= epsilon D[u, v]`` (``log=True``, exact rational subtraction; ``-inf``
    is a zero probability).

    Returns
    -------
    (ok, triple) : bool and the first violating ``(u, v, w)`` or ``None``.
    """
    A = np.asarray(matrix, dtype=float)
    D = np.asarray(distances, dtype=float)
    n = A.shape[0]
    eps = Fraction(float(epsilon))
    for u in range(n):
        for v in range(n):
            if u == v:
                continue
            c = eps * Fraction(float(D[u, v]))
            bounds = None
            for w in range(n):
                a, b = float(A[u, w]), float(A[v, w])
                if log:
                    if a == -math.inf:
                        continue
                    if b == -math.inf or Fraction(a) - Fraction(b) > c:
                        return False, (u, v, w)
                    continue
                if a == 0 or a <= b:
                    continue
                if b == 0:
                    return False, (u, v, w)
                pa, qb = Fraction(a), Fraction(b)
                if bounds is None:
                    bounds = exp_bounds(c, 96)
                lo, hi = bounds
                if pa <= lo * qb:
                    continue
                if pa > hi * qb or not pure_triple_holds(pa, qb, c):
                    return False, (u, v, w)
    return True, None

