import math
from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np
import pytest

from mdp.privacy.exact import (
    check_pure_exact,
    exp_bounds,
    float_ceil,
    level_upper,
    pure_triple_holds,
)


def dec_exp(c, prec=80):
    with localcontext() as ctx:
        ctx.prec = prec
        return Fraction(Decimal(c).exp())


@pytest.mark.parametrize("c", [1e-300, 1e-17, 0.25, 0.5, 1.0, 3.7, 50.0, 745.25, 1400.0, -2.5, -700.0])
def test_exp_bounds_enclose_decimal_exp(c):
    lo, hi = exp_bounds(c, 96)
    t = dec_exp(c)
    # Decimal's exp is correctly rounded at 80 digits: the enclosure must contain it up to that
    assert lo <= t * (1 + Fraction(1, 10 ** 78)) and t <= hi * (1 + Fraction(1, 10 ** 78))
    assert hi / lo - 1 < Fraction(1, 2 ** 90)


def test_exp_bounds_are_integer_only_and_tighten():
    lo1, hi1 = exp_bounds(Fraction(1, 3), 64)
    lo2, hi2 = exp_bounds(Fraction(1, 3), 256)
    assert lo1 <= lo2 <= hi2 <= hi1 and hi2 - lo2 < hi1 - lo1
    assert exp_bounds(0) == (1, 1)


def test_pure_triple_holds_decides_near_equality():
    c = Fraction(1, 7)
    q = 0.3
    p_exact = Fraction(q) * dec_exp(Fraction(1, 7).__float__(), 60)   # ~ e^c q
    just_below = math.nextafter(float(p_exact), 0) * (1 - 2 ** -50)
    just_above = float(p_exact) * (1 + 2 ** -50)
    assert pure_triple_holds(just_below, q, c)
    assert not pure_triple_holds(just_above, q, c)
    assert pure_triple_holds(0.2, 0.3, 0.0) and not pure_triple_holds(0.3, 0.2, 0.0)
    assert not pure_triple_holds(1e-300, 0.0, 5.0) and pure_triple_holds(0.0, 0.0, 1.0)
    assert pure_triple_holds(1.0, 5e-324, 2000.0)


def test_level_upper_and_float_ceil():
    v = level_upper(0.5, 0.25, 2.0)
    with localcontext() as ctx:
        ctx.prec = 60
        true = Decimal(2).ln() / 2
    assert Fraction(v) >= Fraction(true) and Fraction(math.nextafter(v, 0)) < Fraction(true)
    f = float_ceil(Fraction(1, 3))
    assert Fraction(f) >= Fraction(1, 3) > Fraction(math.nextafter(f, 0))
    assert level_upper(0.0, 0.5, 1.0) == -math.inf


def test_check_pure_exact_small_cases():
    D = np.array([[0, 1.0], [1.0, 0]])
    a = math.exp(-1.0)
    M = np.array([[1 / (1 + a), a / (1 + a)], [a / (1 + a), 1 / (1 + a)]])   # level 1.0 (two-point exp)
    assert check_pure_exact(M, D, 1.0 + 1e-12)[0]
    ok, triple = check_pure_exact(M, D, 0.999)
    assert not ok and triple is not None
    assert check_pure_exact(np.log(M), D, 1.0 + 1e-12, log=True)[0]
    assert not check_pure_exact(np.log(M), D, 0.999, log=True)[0]
    Z = np.array([[1.0, 0.0], [0.5, 0.5]])
    assert not check_pure_exact(Z, D, 100.0)[0]
