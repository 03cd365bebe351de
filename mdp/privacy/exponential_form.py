r"""Pair bounds of a log matrix of the exponential form in ``O(n^2 d)`` instead of ``O(n^3)``.

The certification (:mod:`mdp.privacy.verification`) needs, for every ordered pair of rows, an upper
bound of ``r[u, v] = max_w (L[u, w] - L[v, w])``: ``n^3`` triples in general (1.25e11 at
n = 5000). The exponential mechanism (McSherry & Talwar 2007), weighted or not, has the
analytic form ``L[u, w] = log Y_w - c d(u, w) - log Z_u`` with ``c = eps / 2``, and for it

.. math:: \max_w (L_{uw} - L_{vw}) = \max_w c\,(d_{vw} - d_{uw}) + \log Z_v - \log Z_u
          = c\, d_{uv} + \log Z_v - \log Z_u

by the triangle inequality, attained at ``w = u``. This module turns that identity into a
rigorous bound for the **float64 numbers** that will be sampled, with no assumption that they
were computed by that formula: every deviation from the form is measured.

The bound
---------
Take any float ``c >= 0`` and any float vector ``y`` (here ``c = eps / 2`` and
``y_w = fl(L[0, w] + fl(c D[0, w]))``, a guess of ``log Y_w`` up to a constant; a bad guess
only loosens the bound). Define the exact reals ``e[u, w] = L[u, w] + c D[u, w] - y_w``. Then
for every ``u, v, w``

.. math:: L_{uw} - L_{vw} = c\,(D_{vw} - D_{uw}) + e_{uw} - e_{vw}
          \le c\,(D_{uv} + T) + \bar e_u - \underline e_v,

where ``bar e_u >= max_w e[u, w]``, ``underline e_v <= min_w e[v, w]`` and ``T`` bounds the
triangle defect ``max (D[v, w] - D[u, w] - D[u, v])`` of the float distances. So

    R_up[u, v] = c (D[u, v] + T) + bar e_u - underline e_v

is an upper bound of ``r[u, v]``, from ``O(n^2)`` work. For the exponential mechanism ``e`` is
``log Z_0 - log Z_u`` up to rounding, so the bound exceeds the true ``r`` only by ``c T`` and
the rounding of ``L``: the check loses nothing that matters (the true level of the exponential
mechanism is 0.80-0.88 eps, the slack is about ``1e-13`` relative). A matrix not of this form
gets a loose bound, fails it, and the certification falls back to all triples.

**The row extrema of e** (:func:`_row_extrema`). Each entry is computed as
``p = fl(c D)``, ``a = fl(L + p)``, ``e^ = fl(a - y)``: three correctly rounded operations,
each in error by at most ``u`` times its result (``u = 2^-53``), plus ``2^-1075`` if the product
underflows; the additions only carry absolute errors forward, so
``|e^ - e| <= u (|p| / (1 - u) + |a| + |e^|) + 2^-1074 <= 1.01 u s^ + 2^-1074`` with ``s^`` the
computed ``|p| + |a| + |e^|`` (two more roundings, covered by the factor 1.01). Per row the
largest and smallest ``e^`` and the largest ``s^`` are kept; ``bar e_u`` is
``max e^ + 1.01 u max s^ + 2^-1074`` rounded up (:func:`mdp.privacy.rounding.round_up`, ``2^-51``
relative covers the two roundings of that sum), ``underline e_v`` likewise rounded down.

**The triangle defect** (:func:`euclidean_deviation`). The float distances are not a metric,
but they are close to one: given the points ``x`` (float64, taken as exact), the exact
Euclidean distances ``d`` satisfy the triangle inequality exactly, so with
``t >= max |D[u, v] - d(u, v)|``,

    D[v, w] - D[u, w] - D[u, v] <= (d_vw + t) - (d_uw - t) - (d_uv - t) <= 3 t =: T.

``t`` is measured, not assumed: each ``d`` is recomputed here as
``sqrt(sum_k fl(x_uk - x_vk)^2)`` summed in float64 (any order, fused multiply-adds or not):
each square carries ``(1 + u)^3`` and the sum of ``dim`` non-negative terms ``gamma_{dim - 1}``
(Higham 2002, section 4.2), so the computed square is ``d^2 (1 + theta)`` with
``|theta| <= gamma_{dim + 2}``, plus ``dim 2^-1074`` for underflowed squares; a correctly
rounded square root then gives ``|d^ - d| <= rho d^ + alpha`` with
``rho = 1.01 gamma_{dim + 3}`` and ``alpha = 2 sqrt(dim 2^-1074)``. The kernel returns the
largest ``|D[u, v] - d^| + rho d^`` (rounded up with ``alpha`` added); the distances ``D`` may
come from anywhere (``cdist``, a file): a difference from the points only raises ``T``.

**The pair bounds** (:func:`_pair_bounds`) evaluate ``R_up`` with every operation rounded up
(``x + |x| 2^-51 + 2^-1070``, as :func:`mdp.privacy.rounding.round_up`), and a lower bound
``R_lo[u, v] = max(L[u, u] - L[v, u], L[u, v] - L[v, v])`` (two outputs of the true maximum,
rounded down), so the certification's exact refinement and its report work as with the full
pass. Only ``R_up`` is kept (``n x n``, needed by the sampler's measurement and by
``eps_tight``); the levels of both bounds are reduced to their maxima in the same pass.

Tests: ``tests/mdp/privacy/test_exponential_form.py`` (equality with, and domination of, the all-triples
bounds; a hypothesis property over random spaces; a planted violation that the form cannot
hide; distances that break the triangle inequality by more than the points allow).
"""

from __future__ import annotations

import math

import numba as nb
import numpy as np

from .pair_kernels import level_bound
from .rounding import DIFF_REL, SUBNORMAL_SLACK, UNIT_ROUNDOFF, gamma, round_down, round_up

__all__ = ["euclidean_deviation", "form_pair_bounds", "FormBounds"]

#: The smallest positive (subnormal) float64: the absolute error floor of a rounded operation.
_TINY = 2.0 ** -1074


@nb.njit(cache=True, boundscheck=False)
def _max_deviation(X: np.ndarray, D: np.ndarray, rho: float) -> float:  # pragma: no cover (compiled)
    """``max_{u < v} max(|D[u, v] - d^|, |D[v, u] - d^|) + rho d^``, ``d^`` the direct distance
    (finite inputs; an overflowing distance gives ``inf``)."""
    n, k = X.shape
    worst = 0.0
    for u in range(n):
        for v in range(u + 1, n):
            s = 0.0
            for j in range(k):
                a = X[u, j] - X[v, j]
                s += a * a
            dh = math.sqrt(s)
            worst = max(worst, max(abs(D[u, v] - dh), abs(D[v, u] - dh)) + rho * dh)
    return worst


def euclidean_deviation(points: np.ndarray, distances: np.ndarray) -> float:
    """Upper bound of ``max |D[u, v] - |x_u - x_v||`` over all pairs (module docstring).

    Parameters
    ----------
    points : ndarray (n, dim)
        Coordinates (taken as exact real numbers).
    distances : ndarray (n, n)
        The float distances that claim to be their Euclidean distances.

    Returns
    -------
    float
        A rigorous bound; ``inf`` for non-finite input.
    """
    X = np.ascontiguousarray(points, dtype=float)
    D = np.ascontiguousarray(distances, dtype=float)
    if X.ndim != 2 or D.shape != (X.shape[0], X.shape[0]) or not (
            np.all(np.isfinite(X)) and np.all(np.isfinite(D))):
        return math.inf
    dim = X.shape[1]
    rho = 1.01 * gamma(dim + 3)
    alpha = 2.0 * math.sqrt(dim * _TINY)
    worst = _max_deviation(X, D, rho)
    if not math.isfinite(worst):
        return math.inf
    # the kernel's own roundings: a subtraction, a product and a sum (3 u relative, margin)
    return worst * (1.0 + 2.0 ** -50) + alpha + SUBNORMAL_SLACK


@nb.njit(cache=True, boundscheck=False)
def _row_extrema(L: np.ndarray, D: np.ndarray, c: float, y: np.ndarray,
                 emax: np.ndarray, emin: np.ndarray, smax: np.ndarray) -> None:  # pragma: no cover
    """Per row: largest and smallest ``fl(fl(L + fl(c D)) - y)`` and largest ``|p| + |a| + |e|``."""
    n = L.shape[0]
    for u in range(n):
        hi = -np.inf
        lo = np.inf
        sm = 0.0
        for w in range(n):
            p = c * D[u, w]
            a = L[u, w] + p
            e = a - y[w]
            hi = max(hi, e)
            lo = min(lo, e)
            sm = max(sm, abs(p) + abs(a) + abs(e))
        emax[u] = hi
        emin[u] = lo
        smax[u] = sm


@nb.njit(cache=True, boundscheck=False)
def _up(x: float) -> float:  # pragma: no cover (compiled)
    return x + abs(x) * 2.0 ** -51 + 2.0 ** -1070


@nb.njit(cache=True, boundscheck=False)
def _down(x: float) -> float:  # pragma: no cover (compiled)
    return x - abs(x) * 2.0 ** -51 - 2.0 ** -1070


@nb.njit(cache=True, boundscheck=False)
def _pair_bounds(L: np.ndarray, D: np.ndarray, c: float, T: float, ehi: np.ndarray,
                 elo: np.ndarray, R_up: np.ndarray) -> tuple[float, float]:  # pragma: no cover
    """``R_up[u, v] = c (D[u, v] + T) + ehi[u] - elo[v]`` rounded up at each step (diagonal 0);
    returns the largest upper and lower level bounds (:func:`mdp.privacy.accounting.pure_levels` of
    ``R_up``, and of ``R_lo[u, v] = max(L[u, u] - L[v, u], L[u, v] - L[v, v])`` rounded down),
    in tiles of rows and columns so that both ``L[u, v]`` and ``L[v, u]`` stay in cache."""
    n = L.shape[0]
    tile = 64
    top_up = 0.0
    top_lo = 0.0
    for u0 in range(0, n, tile):
        for v0 in range(0, n, tile):
            for u in range(u0, min(n, u0 + tile)):
                for v in range(v0, min(n, v0 + tile)):
                    if u == v:
                        R_up[u, v] = 0.0
                        continue
                    s = _up(c * _up(D[u, v] + T))
                    r = _up(s + _up(ehi[u] - elo[v]))
                    R_up[u, v] = r
                    e_up = level_bound(r, D[u, v], DIFF_REL, SUBNORMAL_SLACK, 1.0)
                    if top_up == top_up and not e_up <= top_up:
                        top_up = e_up           # NaN sticks: no bound, all triples measured
                    lo = _down(max(L[u, u] - L[v, u], L[u, v] - L[v, v]))
                    e_lo = level_bound(lo, D[u, v], DIFF_REL, SUBNORMAL_SLACK, -1.0)
                    if e_lo > top_lo:
                        top_lo = e_lo
    return top_up, top_lo


class FormBounds:
    """What :func:`form_pair_bounds` returns: pair bounds and the numbers behind them.

    Attributes
    ----------
    upper : ndarray (n, n)
        Rigorous upper bounds of ``max_w (L[u, w] - L[v, w])``.
    level_upper, level_lower : float
        The largest pure level bound of a pair from above (``pure_levels`` of ``upper``,
        rounded up) and from below (of the outputs ``w = u, v``, rounded down): the matrix's
        pure level lies between them.
    slope : float
        The ``c`` of the form.
    triangle_defect : float
        ``T``, the bound of the float distances' triangle defect.
    """

    __slots__ = ("upper", "level_upper", "level_lower", "slope", "triangle_defect")

    def __init__(self, upper: np.ndarray, level_upper: float, level_lower: float, slope: float,
                 triangle_defect: float):
        self.upper = upper
        self.level_upper = level_upper
        self.level_lower = level_lower
        self.slope = slope
        self.triangle_defect = triangle_defect


def form_pair_bounds(L: np.ndarray, distances: np.ndarray, points: np.ndarray,
                     slope: float) -> FormBounds | None:
    r"""Rigorous bounds of ``max_w (L[u, w] - L[v, w])`` for a log matrix of the exponential form.

    ``L[u, w] ~ log Y_w - slope * D[u, w] - log Z_u`` (module docstring); any finite ``L`` is
    accepted and the bounds are rigorous for it, tight when it has that form.

    Parameters
    ----------
    L : ndarray (n, n)
        Finite log-probabilities (float64).
    distances : ndarray (n, n)
        Symmetric float distances, the Euclidean distances of ``points`` up to rounding.
    points : ndarray (n, dim)
        Coordinates.
    slope : float >= 0
        ``c`` of the form (``eps / 2`` for the exponential mechanism at ``eps``).

    Returns
    -------
    FormBounds or None
        None when some input is not finite (the caller then measures all triples).
    """
    L = np.ascontiguousarray(L, dtype=float)
    D = np.ascontiguousarray(distances, dtype=float)
    n = L.shape[0]
    c = float(slope)
    if not (math.isfinite(c) and c >= 0.0) or not np.all(np.isfinite(L)):
        return None
    t = euclidean_deviation(points, D)
    if not math.isfinite(t):
        return None
    T = float(round_up(3.0 * t, DIFF_REL))
    with np.errstate(over="ignore"):
        y = L[0] + c * D[0]          # any float vector will do: a guess of log Y_w (+ constant)
    if not np.all(np.isfinite(y)):
        return None
    emax, emin, smax = np.empty(n), np.empty(n), np.empty(n)
    _row_extrema(L, D, c, y, emax, emin, smax)
    err = 1.01 * UNIT_ROUNDOFF * smax + _TINY
    ehi = round_up(emax + err, DIFF_REL)
    elo = round_down(emin - err, DIFF_REL)
    if not (np.all(np.isfinite(ehi)) and np.all(np.isfinite(elo))):
        return None
    R_up = np.empty((n, n))
    top_up, top_lo = _pair_bounds(L, D, c, T, ehi, elo, R_up)
    return FormBounds(R_up, float(top_up), float(top_lo), c, T)
