r"""Privacy accounting and utility of a mechanism's transition matrix.

Notation (Imola et al. 2022, section 2): a mechanism on ``n`` points is a row-stochastic matrix
``M`` with ``M[u, w] = Pr[M(u) = w]``; ``D`` is the distance matrix.

* Pure metric DP (Definition 1): ``M[u, w] <= exp(eps D[u, v]) M[v, w]`` for all u, v, w.
* (eps, delta)-mDP (eq. 9): ``Pr[M(u) in S] <= exp(eps D[u, v]) Pr[M(v) in S] + delta``.
* ``eps_tight`` (eq. 10): the smallest eps for which the guarantee holds.
* Loss (eq. 1, 3, 11): ``L(M, u) = sum_w D[u, w] M[u, w]``; worst case or q-quantile over u.

Every function accepts the matrix either as probabilities or, with ``log=True``, as natural
log-probabilities (``-inf`` for a zero), so mechanisms whose probabilities underflow float64
(``exp(-eps d / 2)`` below ~1e-308) are measured without underflow.

Soundness
---------
:func:`eps_tight` and :func:`pairwise_eps` return **guaranteed upper bounds** on the true level
of the given float64 matrix and float64 distances, taken as exact real numbers (not estimates
that rounding can push below the truth). The rounding analysis, and the one assumption it rests
on (numpy's ``log1p``/``log``/``exp`` are accurate to :data:`LIBM_RTOL` relative; they are
accurate to about one unit in the last place), are in ``docs/design/verification.md``. In short:

* pure level, probabilities: per ordered pair the largest ``x_w = (M[u,w] - M[v,w]) / M[v,w]``
  (the subtraction is exact when the entries are within a factor 2, Sterbenz's lemma, so
  near-duplicate rows keep their full relative precision), then ``log1p(x) / D[u, v]`` with a
  relative margin of ``2^-40``;
* pure level, log-probabilities: ``(L[u, w] - L[v, w]) / D[u, v]``, two correctly rounded
  operations, margin ``2^-48``; no library function involved;
* the largest pairs are then re-evaluated in exact arithmetic (:mod:`mdp.privacy.exact`), so the pure
  ``eps_tight`` is usually the smallest float64 above the true level;
* with ``delta > 0`` a candidate ``t = exp(eps d)`` per pair is *verified*: the hockey-stick
  divergence ``sum_w max(0, p_w - t q_w)`` is evaluated with a rigorous rounding-error bound and
  must be ``<= delta``; otherwise the pair falls back to its pure level (always an upper bound).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from scipy.special import logsumexp

from ..errors import ParameterError, ParameterTypeError
from ..validation import check_probability
from .exact import float_ceil, level_upper
from .rounding import (
    DIFF_REL,
    LIBM_RTOL,
    LOG_REL,
    SUBNORMAL_SLACK,
    UNIT_ROUNDOFF,
    X_REL,
    round_down,
    round_up,
)

__all__ = ["loss", "row_losses", "eps_tight", "pairwise_eps", "pair_log_ratios", "row_logsumexp",
           "refine_pure_level", "refine_pairs", "pure_levels",
           "check_distances", "check_matrix", "LIBM_RTOL", "MEASURE_ROWSUM_ATOL"]

#: Measurements accept rows whose sum is within this of 1 (certification asks 1e-12).
MEASURE_ROWSUM_ATOL = 1e-8
#: Relative tolerance of the symmetry check of distances (as :class:`~mdp.MetricSpace`).
SYMMETRY_RTOL = 1e-9

_REFINE_TRIPLES = 512            # exact re-evaluation budget of eps_tight


# -- validation --------------------------------------------------------------------------------
def _square_array(value, name: str, n: int | None) -> np.ndarray:
    """``value`` as a float (n, n) array, or a ParameterError naming ``name``."""
    try:
        A = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ParameterTypeError(f"{name} must be a numeric (n, n) array, got "
                                 f"{type(value).__name__}") from None
    if A.ndim != 2 or A.shape[0] != A.shape[1] or (n is not None and A.shape[0] != n):
        want = f"({n}, {n})" if n is not None else "square (n, n)"
        raise ParameterError(f"{name} must have shape {want}, got {A.shape}")
    return A


def check_distances(distances, n: int | None = None, name: str = "distances") -> np.ndarray:
    """Validate a distance matrix for a privacy check and return its symmetric lower envelope.

    The matrix must be square (``n x n`` when ``n`` is given), finite, with a zero diagonal,
    positive off the diagonal (distinct points) and symmetric within :data:`SYMMETRY_RTOL` of
    its largest entry. The returned matrix is ``min(D, D.T)``: a guarantee proved for it holds
    for either orientation (``D`` itself, as a read-only view, when it is exactly symmetric and
    has at least :data:`KERNEL_MIN_N` rows: one compiled pass checks it).

    Raises
    ------
    ParameterError
        Naming ``name``, the position and the value.
    """
    D = _square_array(distances, name, n)
    if D.shape[0] < 1:
        raise ParameterError(f"{name} must not be empty")
    if D.shape[0] >= KERNEL_MIN_N:
        # one compiled pass, no n x n temporaries; an exactly symmetric matrix is its own
        # min(D, D.T), returned as a read-only view (any defect: the checks below say which)
        from .pair_kernels import distance_defects

        valid, asym, symmetric, top = distance_defects(np.ascontiguousarray(D))
        if valid and symmetric:
            view = D.view()
            view.setflags(write=False)
            return view
        if valid and not asym > SYMMETRY_RTOL * float(top):
            return np.minimum(D, D.T)
    if not np.all(np.isfinite(D)):
        i, j = np.argwhere(~np.isfinite(D))[0]
        raise ParameterError(f"{name} must be finite, got {name}[{i}, {j}] = {D[i, j]!r}")
    diag = np.diag(D)
    if np.any(diag != 0):
        i = int(np.flatnonzero(diag != 0)[0])
        raise ParameterError(f"{name} must have a zero diagonal, got {name}[{i}, {i}] = {D[i, i]!r}")
    off = ~np.eye(D.shape[0], dtype=bool)
    bad = off & ~(D > 0)
    if np.any(bad):
        i, j = np.argwhere(bad)[0]
        what = ("duplicate points (distance 0); merge them into one point"
                if D[i, j] == 0 else "distances must be positive")
        raise ParameterError(f"{name}[{i}, {j}] = {D[i, j]!r} between distinct points {i} and {j}: "
                             f"{what}")
    asym = np.abs(D - D.T)
    scale = float(D.max()) if D.size else 0.0
    if asym.max(initial=0.0) > SYMMETRY_RTOL * scale:
        i, j = np.unravel_index(np.argmax(asym), D.shape)
        raise ParameterError(f"{name} must be symmetric, got {name}[{i}, {j}] = {D[i, j]!r} != "
                             f"{name}[{j}, {i}] = {D[j, i]!r}")
    return np.minimum(D, D.T)


#: Elements per block of rows in :func:`row_logsumexp` (a few MB: its temporaries stay in cache).
_LSE_BLOCK = 1 << 18


def row_logsumexp(A: np.ndarray) -> np.ndarray:
    """``scipy.special.logsumexp(A, axis=1)``, by blocks of rows.

    The same floats (each row is computed alone either way), without ``n x n`` temporaries:
    at n = 5,000 SciPy's whole-matrix call holds several 200 MB arrays.
    """
    A = np.asarray(A, dtype=float)
    out = np.empty(A.shape[0])
    b = max(1, _LSE_BLOCK // max(1, A.shape[1]))
    with np.errstate(invalid="ignore", divide="ignore"):
        for s in range(0, A.shape[0], b):
            out[s:s + b] = logsumexp(A[s:s + b], axis=1)
    return out


def _row_sum_error(A: np.ndarray, log: bool) -> np.ndarray:
    """``sum_w p_w - 1`` per row (for log rows ``exp(logsumexp) - 1``), in float64."""
    if log:
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.expm1(row_logsumexp(A))
    return A.sum(axis=1) - 1.0


def check_matrix(matrix, n: int | None = None, *, log: bool = False,
                 rowsum_atol: float = MEASURE_ROWSUM_ATOL, name: str = "matrix") -> np.ndarray:
    """Validate a transition matrix (probabilities, or log-probabilities with ``log=True``).

    Probabilities must be finite and ``>= 0``; log-probabilities finite or ``-inf``. Every row
    must sum to 1 within ``rowsum_atol``.

    Raises
    ------
    ParameterError
        Naming ``name``, the row or entry and the value.
    """
    A = _square_array(matrix, name, n)
    if log:
        bad = np.isnan(A) | (A == np.inf)
        if np.any(bad):
            i, j = np.argwhere(bad)[0]
            raise ParameterError(f"{name} (log-probabilities) must be finite or -inf, got "
                                 f"{name}[{i}, {j}] = {A[i, j]!r}")
    else:
        if not np.all(np.isfinite(A)):
            i, j = np.argwhere(~np.isfinite(A))[0]
            raise ParameterError(f"{name} must be finite, got {name}[{i}, {j}] = {A[i, j]!r}")
        if np.any(A < 0):
            i, j = np.unravel_index(np.argmin(A), A.shape)
            raise ParameterError(f"{name} must be non-negative, got {name}[{i}, {j}] = {A[i, j]!r}")
    err = _row_sum_error(A, log)
    worst = np.abs(err)
    worst[np.isnan(worst)] = np.inf
    if worst.max(initial=0.0) > rowsum_atol:
        i = int(np.argmax(worst))
        raise ParameterError(f"{name} must be row-stochastic: row {i} sums to 1 + {err[i]:.3e} "
                             f"(tolerance {rowsum_atol:g})")
    return A


def _check_pair(matrix, distances, log: bool) -> tuple[np.ndarray, np.ndarray]:
    A = check_matrix(matrix, log=log)
    D = check_distances(distances, A.shape[0])
    return A, D


# -- losses -------------------------------------------------------------------------------------
def row_losses(matrix, distances, *, log: bool = False) -> np.ndarray:
    """Expected distance of each row: ``L(M, u) = sum_w D[u, w] M[u, w]`` (eq. 3).

    ``log=True`` takes log-probabilities (entries below float64's range contribute their
    underflowed value, i.e. less than ``1e-308 * D``).
    """
    A = check_matrix(matrix, log=log)
    D = np.asarray(distances, dtype=float)
    if D.shape != A.shape:
        raise ParameterError(f"distances must have the matrix's shape {A.shape}, got {D.shape}")
    if log:
        with np.errstate(under="ignore"):
            A = np.exp(A)
    return np.einsum("uw,uw->u", A, D)


def loss(matrix, distances, q: float | None = None, *, log: bool = False) -> float:
    r"""Loss of a mechanism: worst case (eq. 1) or the q-quantile of row losses (eq. 11).

    .. math:: \mathcal{L}(M) = \max_u \sum_w D_{uw} M_{uw}, \qquad
              \mathcal{L}_q(M) = \mathrm{quantile}_q\{\mathcal{L}(M, u)\}

    The quantile uses numpy's default (linear interpolation between order statistics).

    Parameters
    ----------
    matrix, distances : ndarray of shape (n, n)
    q : float in [0, 1] or None
        ``None`` for the worst case (equal to ``q = 1``).
    log : bool, keyword-only
        ``matrix`` holds log-probabilities.
    """
    rl = row_losses(matrix, distances, log=log)
    if q is None:
        return float(rl.max())
    q = check_probability(q, "q")
    return float(np.quantile(rl, q))


# -- rigorous bounds ----------------------------------------------------------------------------
#: Side from which :func:`_pair_max` runs the compiled kernels of :mod:`mdp.privacy.pair_kernels`
#: (below it NumPy takes milliseconds and loading the kernels would cost more).
KERNEL_MIN_N = 300


def _block(n: int) -> int:
    return max(1, int(4e6 // max(1, n * n)))


def _pair_max(A: np.ndarray, op, us: np.ndarray | None) -> np.ndarray:
    """``max_w op(A[u, w], A[v, w])`` for rows ``us`` (default all) against every ``v``.

    ``op(P, Q, out)`` writes the per-triple key into ``out``; NaN keys (0/0, -inf - -inf) are
    ignored (``fmax``), which only zeros in the matrix can produce, so matrices without zeros
    take numpy's faster ``max``, and from ``KERNEL_MIN_N`` rows the compiled kernels of
    :mod:`mdp.privacy.pair_kernels` (the same floating-point operations, fused).
    """
    us = np.arange(A.shape[0]) if us is None else us
    n = A.shape[0]
    out = np.empty((len(us), n))
    if n >= KERNEL_MIN_N and np.all(np.isfinite(A)) and (op is _op_log or np.all(A > 0)):
        # no triple can be NaN here: the compiled kernels give the same floats, faster
        from .pair_kernels import pair_max_log, pair_max_prob

        A = np.ascontiguousarray(A, dtype=float)
        rows = np.asarray(us, dtype=np.int64)
        if op is _op_log:
            pair_max_log(A, rows, out)
        else:
            with np.errstate(over="ignore"):        # 1 / subnormal: inf, handled by the kernel
                pair_max_prob(A, np.divide(1.0, A), rows, out)
        return out
    b = _block(n)
    buf = np.empty((min(b, len(us)), n, n))
    has_nan = not np.all(A > (-np.inf if op is _op_log else 0.0))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for s in range(0, len(us), b):
            rows = us[s:s + b]
            x = buf[:len(rows)]
            op(A[rows, None, :], A[None, :, :], x)
            if has_nan:
                np.fmax.reduce(x, axis=2, out=out[s:s + b])
            else:
                x.max(axis=2, out=out[s:s + b])
    return out


def _op_prob(P, Q, out):
    np.subtract(P, Q, out=out)
    np.divide(out, Q, out=out)


def _op_log(P, Q, out):
    np.subtract(P, Q, out=out)


def _xmax_prob(M: np.ndarray, us: np.ndarray | None = None) -> np.ndarray:
    """``max_w (M[u, w] - M[v, w]) / M[v, w]`` for rows ``us`` (all rows) against every ``v``.

    ``0/0`` (both zero) is ignored; a zero against a positive entry gives ``inf``; all entries
    ignored gives ``nan``.
    """
    return _pair_max(M, _op_prob, us)


def _rmax_log(L: np.ndarray, us: np.ndarray | None = None) -> np.ndarray:
    """``max_w (L[u, w] - L[v, w])``; ``-inf - -inf`` (both zero) ignored."""
    return _pair_max(L, _op_log, us)


def _overflow_pairs_prob(M: np.ndarray, X: np.ndarray, R_est: np.ndarray) -> None:
    """Fix pairs whose ``x`` overflowed (a subnormal denominator) in place of ``R_est``."""
    us, vs = np.nonzero(X == np.inf)
    if len(us) == 0:
        return
    P, Q = M[us], M[vs]
    true_inf = np.any((Q == 0) & (P > 0), axis=1)
    fix = ~true_inf
    if not np.any(fix):
        return
    P, Q = P[fix], Q[fix]
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.fmax.reduce(np.where(P > 0, np.log(P) - np.log(Q), np.nan), axis=1)
    # ratio > 2^1023: value >= 709, log error <= LIBM_RTOL * (745 + 745) < 2.2 LIBM_RTOL * value
    R_est[us[fix], vs[fix]] = r


def pair_log_ratio_bounds(A: np.ndarray, log: bool) -> tuple[np.ndarray, np.ndarray]:
    """(upper, lower) bounds of ``max_w ln(A[u, w] / A[v, w])`` from one pass over the triples.

    ``A`` must already be validated (:func:`check_matrix`); :func:`pair_log_ratios` is the
    checked entry point. NaN pairs (no output reachable from either row) are ``-inf``; the
    diagonal is 0.
    """
    if log:
        R = _rmax_log(A)
        R_up, R_lo = round_up(R, DIFF_REL), round_down(R, DIFF_REL)
    else:
        X = _xmax_prob(A)
        with np.errstate(invalid="ignore", divide="ignore"):
            R_up = np.log1p(round_up(X, X_REL))
            R_lo = np.log1p(round_down(X, X_REL))
        _overflow_pairs_prob(A, X, R_up)
        _overflow_pairs_prob(A, X, R_lo)
        R_up, R_lo = round_up(R_up, LOG_REL), round_down(R_lo, LOG_REL)
    for R in (R_up, R_lo):
        R[np.isnan(R)] = -np.inf
        np.fill_diagonal(R, 0.0)
    return R_up, R_lo


def pair_log_ratios(matrix, *, log: bool = False, bounds: str = "upper") -> np.ndarray:
    r"""Rigorous bound of ``r[u, v] = max_w ln(M[u, w] / M[v, w])`` for every ordered pair.

    ``r[u, v] / D[u, v]`` is the pure level of the pair (before clipping at 0); ``r`` may be
    slightly negative for rows that do not sum exactly to 1. The diagonal is 0.

    Parameters
    ----------
    matrix : ndarray (n, n)
        Probabilities, or log-probabilities with ``log=True``.
    bounds : {"upper", "lower"}
        Which side of the true value to return.

    Returns
    -------
    ndarray (n, n)
        ``+inf`` where some output has positive probability from ``u`` and none from ``v``.
    """
    if bounds not in ("upper", "lower"):
        raise ParameterError(f"bounds must be 'upper' or 'lower', got {bounds!r}")
    A = check_matrix(matrix, log=log)
    R_up, R_lo = pair_log_ratio_bounds(A, log)
    return R_up if bounds == "upper" else R_lo


def pure_levels(R: np.ndarray, D: np.ndarray, side) -> np.ndarray:
    """Pure levels ``max(0, R) / D`` per ordered pair, diagonal 0.

    ``side`` is :func:`~mdp.privacy.rounding.round_up` (a rigorous upper bound of each level, given
    upper bounds ``R`` of the log ratios) or :func:`~mdp.privacy.rounding.round_down` (lower bounds).
    """
    n = R.shape[0]
    if n >= KERNEL_MIN_N and side in (round_up, round_down):
        # the same operations per entry, compiled: no n x n temporaries
        from .pair_kernels import pure_levels_kernel

        E = np.empty((n, n))
        pure_levels_kernel(np.ascontiguousarray(R, dtype=float), np.ascontiguousarray(D, dtype=float),
                           DIFF_REL, SUBNORMAL_SLACK, 1.0 if side is round_up else -1.0, E)
        return E
    with np.errstate(divide="ignore", invalid="ignore"):
        E = side(np.maximum(R, 0.0) / np.where(D > 0, D, 1.0), DIFF_REL)
    E = np.maximum(E, 0.0)
    np.fill_diagonal(E, 0.0)
    return E


def refine_pure_level(A: np.ndarray, D: np.ndarray, E_up: np.ndarray, E_lo: np.ndarray,
                 log: bool) -> float | None:
    """Exact re-evaluation of the pairs that may hold the largest pure level (module docstring).

    ``E_up`` and ``E_lo`` are the upper and lower per-pair bounds of :func:`pure_levels`.

    Returns a rigorous upper bound of the pure level, or ``None`` when too many triples
    would need an exact evaluation.
    """
    floor = float(E_lo.max())
    if not floor > 0:
        return None
    us, vs = np.nonzero(E_up >= floor)
    return refine_pairs(A, D, us, vs, log)


def refine_pairs(A: np.ndarray, D: np.ndarray, us: np.ndarray, vs: np.ndarray,
                 log: bool) -> float | None:
    """Exact pure level of the ordered pairs ``(us[i], vs[i])``, rounded up to float64.

    Within each pair, the outputs whose float key is within ``2^-49`` of the pair's best are
    evaluated exactly (:func:`mdp.privacy.exact.level_upper`, or rationals for log matrices). Given
    every pair whose upper level bound reaches the largest lower bound of all pairs, the result
    is a rigorous upper bound of the matrix's pure level (:func:`refine_pure_level`).

    Returns None when more than the exact budget (512 triples) would be needed.
    """
    if len(us) > _REFINE_TRIPLES:
        return None
    triples = []
    for u, v in zip(us.tolist(), vs.tolist(), strict=True):
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            # the same key the pair bound maximised: the true maximiser is within 4 u of the top
            x = A[u] - A[v] if log else (A[u] - A[v]) / A[v]
        x[np.isnan(x)] = -np.inf
        top = x.max()
        if top == math.inf:      # a zero against a positive entry, or an overflowing ratio
            ws = np.flatnonzero(x == math.inf)
        else:
            ws = np.flatnonzero(x >= top - abs(top) * 2.0 ** -49)
        triples.extend((u, v, w) for w in ws.tolist())
        if len(triples) > _REFINE_TRIPLES:
            return None
    best = 0.0
    for u, v, w in triples:
        a, b, d = float(A[u, w]), float(A[v, w]), float(D[u, v])
        if log:
            if b == -math.inf:
                return math.inf
            value = float_ceil((Fraction(a) - Fraction(b)) / Fraction(d))
        else:
            if b == 0:
                return math.inf
            value = level_upper(a, b, d)
        best = max(best, value)
    return best


def _pure(A: np.ndarray, D: np.ndarray, log: bool, refine: bool) -> tuple[float, np.ndarray]:
    """(rigorous pure level, per-pair upper bounds of the levels)."""
    R_up, R_lo = pair_log_ratio_bounds(A, log)
    E_up = pure_levels(R_up, D, round_up)
    best = float(E_up.max())
    if refine and 0 < best < math.inf:
        refined = refine_pure_level(A, D, E_up, pure_levels(R_lo, D, round_down), log)
        if refined is not None:
            best = min(best, refined)
    return best, E_up


def _f_upper(P: np.ndarray, Q: np.ndarray, S: np.ndarray) -> np.ndarray:
    r"""Rigorous upper bound of :math:`\sum_w \max(0, p_w - (1 + S) q_w)` per row pair.

    Each term ``g = (p - q) - S q`` is computed with three roundings, each at most ``u`` times
    its result, so ``|g_computed - g| <= 2.5 u (|p - q| + |S q| + |g|)`` (with margin); the terms
    are summed in some order, error ``<= (n - 1) u`` times the sum of the (non-negative) terms
    (``n`` the number of columns given).
    """
    n = P.shape[1]
    with np.errstate(invalid="ignore", over="ignore"):
        a = P - Q
        b = S[:, None] * Q
        g = a - b
        e = 2.5 * UNIT_ROUNDOFF * (np.abs(a) + np.abs(b) + np.abs(g)) + 4 * 2.0 ** -1074
        t = np.maximum(g + e, 0.0)
        return t.sum(axis=1) * (1.0 + (n + 4) * 2.0 ** -52)


def _delta_levels(A: np.ndarray, D: np.ndarray, us: np.ndarray, vs: np.ndarray, delta: float,
                  pure_up: np.ndarray, log: bool) -> np.ndarray:
    """Upper bounds of the (eps, delta) level of pairs ``(us[i], vs[i])``.

    ``A`` holds probabilities, or log-probabilities when ``log`` (``exp`` is taken of the rows
    needed only: the same floats as from the whole matrix, elementwise). The estimate
    ``t* - 1 = max(0, max_k (P_k - Q_k - delta) / Q_k)`` over prefixes of the outputs sorted by
    decreasing ratio is verified with :func:`_f_upper` at a slightly larger value (up to six
    tries, finer first); unverified pairs keep their pure level ``pure_up``.
    """
    if log:
        with np.errstate(under="ignore"):
            P, Q = np.exp(A[us]), np.exp(A[vs])
    else:
        P, Q = A[us], A[vs]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        ratio = np.where(P > 0, P / Q, 0.0)
        order = np.argsort(-ratio, axis=1)
        Rs = np.take_along_axis(ratio, order, axis=1)
        Ps = np.take_along_axis(P, order, axis=1)
        Qs = np.take_along_axis(Q, order, axis=1)
        cpq = np.cumsum(Ps - Qs, axis=1)
        cq = np.cumsum(Qs, axis=1)
        s = np.where(cq > 0, (cpq - delta) / np.where(cq > 0, cq, 1.0),
                     np.where(cpq > delta, np.inf, -np.inf))
    shat = np.maximum(s.max(axis=1), 0.0)
    extra = 0.0
    if log:   # exp(L) is within LIBM_RTOL relative (plus an underflow unit) of the true value
        Ps = Ps * (1.0 + 2.0 ** -42) + 2.0 ** -1070
        Qs = np.maximum(Qs * (1.0 - 2.0 ** -42) - 2.0 ** -1070, 0.0)
        extra = P.shape[1] * 2.0 ** -1070          # outputs left out below with p underflowed
    level = pure_up.copy()
    todo = np.flatnonzero(np.isfinite(shat))
    for rho in (2.0 ** -48, 2.0 ** -40, 2.0 ** -38, 2.0 ** -36, 2.0 ** -33, 2.0 ** -30, 2.0 ** -20,
                2.0 ** -10, 1.0):
        if len(todo) == 0:
            break
        S = shat[todo] * (1.0 + rho) + (0.0 if rho <= 2.0 ** -40 else rho * 2.0 ** -20)
        # an output whose computed ratio is below (1 + S)(1 - 2^-40) has p < (1 + S) q exactly
        # (the ratio is within 2^-42 relative of the truth): it adds nothing to f, and the
        # outputs are sorted by that ratio, so a prefix of K columns holds every term
        K = max(1, int((Rs[todo] >= ((1.0 + S) * (1.0 - 2.0 ** -40))[:, None]).sum(axis=1).max()))
        ok = _f_upper(Ps[todo, :K], Qs[todo, :K], S) + extra <= delta
        if np.any(ok):
            idx = todo[ok]
            with np.errstate(divide="ignore"):
                lv = round_up(round_up(np.log1p(S[ok]), LOG_REL) / D[us[idx], vs[idx]], DIFF_REL)
            level[idx] = np.minimum(level[idx], np.maximum(lv, 0.0))
        todo = todo[~ok]
    return level


def pairwise_eps(matrix, distances, delta: float = 0.0, *, log: bool = False) -> np.ndarray:
    r"""Upper bounds of the smallest eps of every ordered pair: ``E[u, v]`` (``E[u, u] = 0``).

    For rows ``p = M[u]``, ``q = M[v]`` and ``t = exp(eps D[u, v])``, the hockey-stick divergence

    .. math:: f(t) = \sum_w \max(0, p_w - t q_w) = \max_S \big(p(S) - t\, q(S)\big)

    is the largest violation of eq. 9 over output sets S. It is convex, piecewise linear and
    non-increasing in t; ``E[u, v] = log(t*) / D[u, v]`` with ``t* = min {t >= 1 : f(t) <= delta}
    = max(1, max_S (p(S) - delta) / q(S))``, the maximum being reached on a prefix of the outputs
    sorted by decreasing ratio ``p_w / q_w``. Outputs with ``q_w = 0 < p_w`` have an infinite
    ratio: their mass must fit in delta, else ``E[u, v] = inf``. With ``delta = 0`` this is the
    pure level ``max_w log(p_w / q_w) / D[u, v]``.

    Every entry is a guaranteed upper bound of the true value (module docstring).

    Parameters
    ----------
    matrix : ndarray (n, n)
        Row-stochastic matrix, or log-probabilities with ``log=True``.
    distances : ndarray (n, n)
    delta : float in [0, 1], default 0
    log : bool, keyword-only
    """
    A, D = _check_pair(matrix, distances, log)
    delta = check_probability(delta, "delta")
    _, E = _pure(A, D, log, refine=False)
    if delta == 0.0:
        return E
    n = A.shape[0]
    us, vs = np.nonzero(~np.eye(n, dtype=bool))
    out = np.zeros((n, n))
    step = max(1, int(2e6 // n))
    for s in range(0, len(us), step):
        u, v = us[s:s + step], vs[s:s + step]
        out[u, v] = _delta_levels(A, D, u, v, delta, E[u, v], log)
    return out


def eps_tight(matrix, distances, delta: float = 0.0, *, log: bool = False,
              pair_log_ratios: np.ndarray | None = None) -> float:
    r"""A guaranteed upper bound of the smallest eps for which ``matrix`` is (eps, delta)-mDP.

    .. math:: \epsilon_{tight} = \max_{u \ne v} \min\{\epsilon \ge 0 :
              \sum_w \max(0, M_{uw} - e^{\epsilon D_{uv}} M_{vw}) \le \delta\}

    (Imola et al. 2022, eq. 9-10). With ``delta = 0`` this is the pure level
    ``max_{u,v,w} (log M[u,w] - log M[v,w]) / D[u,v]``, where an output that one row gives
    positive probability and the other exactly zero is infinite. The matrix and distances are
    taken as exact numbers; the value returned is never below the true level (module docstring
    and ``docs/design/verification.md``): for ``delta = 0`` it is normally the smallest float64
    at or above it, otherwise within about ``1e-12`` relative of it.

    With ``delta > 0`` pairs are visited in decreasing order of their pure level (an upper bound
    of their delta level) and the scan stops once no remaining pair can exceed the running
    maximum, usually a small fraction of the ``n (n - 1)`` pairs. The divergence is evaluated on
    probabilities; with ``log=True``, outputs whose probability underflows float64 (below
    ~1e-308) are counted conservatively, so a pair that depends on them may keep a bound
    between its delta level and its pure level.

    Parameters
    ----------
    matrix : ndarray (n, n)
        Row-stochastic transition matrix (rows summing to 1 within
        :data:`MEASURE_ROWSUM_ATOL`), or log-probabilities with ``log=True``.
    distances : ndarray (n, n)
        Symmetric, zero diagonal, positive off the diagonal.
    delta : float in [0, 1], default 0
    log : bool, keyword-only
    pair_log_ratios : ndarray (n, n), optional, keyword-only
        With ``delta > 0``: the upper bounds :func:`pair_log_ratios` gives for this very matrix
        (``bounds="upper"``; the privacy certification computes them for the matrix it
        returns, :class:`mdp.privacy.verification.Certification`), so that the ``n^3`` pass over the
        triples is not made again. The result is the same float. Ignored for ``delta = 0``,
        whose refinement needs the lower bounds too.

    Raises
    ------
    ParameterError
        Invalid matrix, distances or delta (the message names which and the value).
    """
    A, D = _check_pair(matrix, distances, log)
    delta = check_probability(delta, "delta")
    if delta > 0.0 and pair_log_ratios is not None:
        R_up = np.asarray(pair_log_ratios, dtype=float)
        if R_up.shape != A.shape:
            raise ParameterError(f"pair_log_ratios must have shape {A.shape}, got {R_up.shape}")
        levels = _PairLevels(R=R_up, D=D)
    else:
        pure, E = _pure(A, D, log, refine=delta == 0.0)
        if delta == 0.0:
            return pure
        levels = _PairLevels(E=E)
    n = A.shape[0]
    # Pairs in decreasing order of their bound, as flat indices u * n + v (row-major, the
    # order of the off-diagonal pairs; the diagonal's bounds are 0 and never visited, since
    # only bounds above the running maximum >= 0 are): no n^2 index arrays of u and v.
    best = 0.0
    step = max(64, int(5e5 // n))     # a chunk's arrays of n columns stay at a few MB
    for idx in _descending_chunks(levels, step):
        bound = levels.at(idx)
        if bound[0] <= best:
            break
        keep = bound > best
        idx, bound = idx[keep], bound[keep]
        lv = _delta_levels(A, D, idx // n, idx % n, delta, bound, log)
        best = max(best, float(lv.max()))
    return best


class _PairLevels:
    """Upper bounds of the pairs' pure levels, flat (``u * n + v``): an array (``E``), or
    computed when asked from the pair log-ratio bounds ``R`` and the distances ``D`` (the floats
    of :func:`pure_levels`, entry by entry), so that no ``n x n`` array of them is made."""

    def __init__(self, E: np.ndarray | None = None, R: np.ndarray | None = None,
                 D: np.ndarray | None = None):
        self.E = None if E is None else E.ravel()
        self.R = None if R is None else np.ascontiguousarray(R)
        self.D = None if D is None else np.ascontiguousarray(D)
        self.n = int(np.sqrt(self.E.size)) if E is not None else self.R.shape[0]
        if E is None and self.n < KERNEL_MIN_N:          # small: an array is cheaper
            self.E = pure_levels(self.R, self.D, round_up).ravel()
        self.size = self.n * self.n

    def at(self, idx: np.ndarray) -> np.ndarray:
        """The bounds at flat indices ``idx``."""
        if self.E is not None:
            return self.E[idx]
        with np.errstate(divide="ignore", invalid="ignore"):
            d = self.D.ravel()[idx]
            E = round_up(np.maximum(self.R.ravel()[idx], 0.0) / np.where(d > 0, d, 1.0), DIFF_REL)
        E = np.maximum(E, 0.0)
        E[idx // self.n == idx % self.n] = 0.0
        return E

    def at_least(self, t: float) -> np.ndarray:
        """Flat indices (ascending) of the bounds ``>= t``."""
        if self.E is not None:
            return np.flatnonzero(self.E >= t)
        if not t > 0:
            return np.arange(self.size)
        from .pair_kernels import pairs_at_least

        empty = np.empty(0, np.int64)
        count = pairs_at_least(self.R, self.D, t, DIFF_REL, SUBNORMAL_SLACK, empty, empty)
        us, vs = np.empty(count, np.int64), np.empty(count, np.int64)
        pairs_at_least(self.R, self.D, t, DIFF_REL, SUBNORMAL_SLACK, us, vs)
        return us * self.n + vs

    def array(self) -> np.ndarray:
        """All the bounds (made when not held)."""
        return self.E if self.E is not None else pure_levels(self.R, self.D, round_up).ravel()


def _top_stable(levels: _PairLevels, K: int) -> np.ndarray:
    """Indices of the ``K`` largest values of ``levels`` (``K`` below their number, no NaN) in
    decreasing order, ties by index: the first ``K`` of ``np.argsort(-values, kind="stable")``.

    Candidates are the values at or above a threshold read from a strided sample (checked: at
    least ``K`` of them, else the threshold is lowered), so no copy of the values is made; the
    ``K``-th value among the candidates is found by a partition and the ties at it are taken in
    index order. Every value above the ``K``-th largest is at or above the threshold, so the
    candidates hold the answer.
    """
    total = levels.size
    sample = np.sort(levels.at(np.arange(0, total, max(1, total // 65536))))
    want = 2 * K
    while True:
        pos = max(0, len(sample) - 1 - int(want * len(sample) / total))
        cand = levels.at_least(float(sample[pos]))
        if len(cand) >= K or pos == 0:
            break
        want *= 4
    if len(cand) < K:
        cand = np.arange(total)
    neg = np.negative(levels.at(cand))
    kth = np.partition(neg, K - 1)[K - 1]
    keep = np.flatnonzero(neg <= kth)
    if len(keep) > K:                  # ties at kth: the smallest indices, as a stable sort has
        ties = np.flatnonzero(neg[keep] == kth)
        keep = np.delete(keep, ties[K - (len(keep) - len(ties)):])
    return cand[keep[np.argsort(neg[keep], kind="stable")]]


def _descending_chunks(levels, step: int):
    """Successive chunks of ``step`` indices of ``levels`` (a :class:`_PairLevels` or an array)
    in decreasing order of value (ties by index): the chunks of
    ``np.argsort(-values, kind="stable")``.

    The scan of :func:`eps_tight` usually stops within its first chunks, so the order is
    built on demand: the ``K`` largest values are selected (:func:`_top_stable`, no copy of
    the values), sorted, and served; ``K`` grows fourfold each time they run out (the stable
    order's prefix of length ``K`` is the same whatever ``K``, so the chunks are those of the
    full sort).
    """
    if isinstance(levels, np.ndarray):
        levels = _PairLevels(E=levels)
        levels.size = len(levels.E)
    total = levels.size
    done, K = 0, step
    while done < total:
        K = min(K, total)
        head = (_top_stable(levels, K) if K < total
                else np.argsort(np.negative(levels.array()), kind="stable"))
        for s in range(done, K, step):
            yield head[s:min(s + step, K)]
        done, K = K, 4 * K
