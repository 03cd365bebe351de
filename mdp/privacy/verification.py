r"""The one privacy check every mechanism's final matrix passes through.

:func:`certify` takes a candidate transition matrix (probabilities, or natural
log-probabilities with ``log=True``) and the pure ``eps``-mDP guarantee it claims (Imola et al.
2022, Definition 1) and either returns a matrix that provably satisfies it or raises
:class:`PrivacyError`. The matrix it returns is exactly, bit for bit, the matrix it measured.

Guarantee
---------
When :func:`certify` returns, the returned matrix ``M`` (its float64 entries, or ``exp`` of its
float64 log-entries, taken as exact real numbers) and the float64 distances ``D`` (as exact
reals, symmetrised to ``min(D, D.T)``) satisfy

.. math:: M_{uw} \le e^{\bar\epsilon D_{uv}} M_{vw} \quad \text{for all } u, v, w,
          \qquad \bar\epsilon = \mathrm{fl}(\epsilon (1 + 10^{-9}))

in exact real arithmetic; ``report["measured_eps"]`` is a rigorous upper bound of the smallest
such level. The proof obligations and the single assumption (numpy's ``log1p``/``log`` accurate
to 2^-44 relative; only for probability matrices) are in ``docs/design/verification.md``.

Procedure
---------
1. *Inputs.* ``epsilon`` must be a finite number > 0 and ``distances`` a valid distance matrix
   (:func:`mdp.privacy.accounting.check_distances`), else :class:`~mdp.errors.ParameterError`.
2. *Stochasticity.* Probabilities must be finite; negatives down to ``-NEGATIVE_ATOL`` (LP
   feasibility tolerance) are set to 0 (the only change ever made to a matrix that is not
   repaired; counted in the report); then every row must sum to 1 within ``ROWSUM_ATOL``
   (``1e-12``). Log-probabilities must be finite or ``-inf`` with ``logsumexp`` of every row
   within ``1e-12`` of 0. Anything else is refused: builders normalise their own rows.
3. *Measure.* Rigorous upper bounds of every pair's pure level
   (:func:`mdp.privacy.accounting.pair_log_ratios`): float64 formulas with proved error margins; for a
   log matrix given with the points of a Euclidean space, first the ``O(n^2 d)`` bounds of
   :mod:`mdp.privacy.exponential_form` (tight for the exponential mechanism; all triples are measured
   when they do not prove the limit). The matrix passes when the largest is ``<= eps_bar``. Triples whose bounds straddle ``eps_bar``
   are decided exactly (:func:`mdp.privacy.exact.pure_triple_holds`: rational arithmetic with a
   rigorous enclosure of ``e^c``).
4. *Repair* (``repair=True``, only when the defect is a solver-tolerance artefact).
   :func:`repair_to_private`

   a. merges near-duplicate points, ``eps * D[u, v] < MERGE_C``: their rows are made identical
      (no finite-precision matrix can resolve a level on a distance of ``1e-16``), by taking the
      envelope below in the quotient pseudo-metric where merged points are at distance 0;
   b. raises every column to its log-Lipschitz envelope at ``eps``,
      ``\tilde M_{vw} = \max_u M_{uw} e^{-\epsilon D_{uv}}`` (a maximum of eps-Lipschitz
      functions of ``v`` in log space, so every column satisfies eps-mDP and
      ``\tilde M \ge M``), and renormalises the rows, which perturbs log-ratios by the spread of
      the row sums;
   c. mixes in the uniform matrix ``U`` (ratio 1, strictly inside the convex set of eps-mDP
      matrices): ``(1-t) \tilde M + t U`` satisfies row ``(u, v, w)`` iff
      ``t >= V / (V + (e^{eps D_uv} - 1)/n)`` with ``V = \tilde M_uw - e^{eps D_uv} \tilde M_vw``;
      the smallest ``t`` over all triples is used.

   The result is measured again (step 3). The repair is refused when it would move any
   probability by more than ``REPAIR_ATOL`` (then the matrix is simply not private and no
   tolerance explains it). Everything works in the log domain for log matrices.

The outcome is returned as a dict recorded in ``Mechanism.stats["privacy"]``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components, shortest_path
from scipy.special import expit, logsumexp

from ..errors import ParameterError, PrivacyError
from ..validation import check_epsilon
from .accounting import (
    check_distances,
    pair_log_ratio_bounds,
    pure_levels,
    refine_pairs,
    refine_pure_level,
    row_logsumexp,
)
from .exact import pure_triple_holds
from .exponential_form import form_pair_bounds
from .pair_kernels import pairs_at_least
from .rounding import DIFF_REL, LOG_REL, SUBNORMAL_SLACK, X_REL, round_down, round_up

__all__ = ["PrivacyError", "Certification", "certify", "certify_matrix", "repair_to_private",
           "PURE_EPS_RTOL", "REPAIR_ATOL", "ROWSUM_ATOL", "NEGATIVE_ATOL", "MERGE_C"]

#: Relative slack of the certified level: the guarantee is ``fl(eps * (1 + PURE_EPS_RTOL))``.
PURE_EPS_RTOL = 1e-9
#: Largest negative entry accepted as solver tolerance (clipped to 0).
NEGATIVE_ATOL = 1e-7
#: Largest deviation of a row sum from 1 that a candidate may have (never rescaled here).
ROWSUM_ATOL = 1e-12
#: Largest absolute change of a probability that the repair may make.
REPAIR_ATOL = 1e-6
#: The repair gives identical rows to points with ``eps * D[u, v]`` below this.
MERGE_C = 1e-6
#: Most triples decided in exact arithmetic per check (beyond: refused as unproved).
EXACT_TRIPLES = 4096
#: Most pairs re-evaluated exactly for the reported level (as :func:`mdp.privacy.accounting.eps_tight`).
EXACT_REFINE_PAIRS = 512


@dataclass
class Certification:
    """What :func:`certify_matrix` returns.

    Attributes
    ----------
    matrix : ndarray (n, n)
        The certified matrix (probabilities, or log-probabilities when ``log``), exactly the
        one measured.
    log : bool
        Whether ``matrix`` holds log-probabilities.
    report : dict
        As :func:`certify`'s report.
    pair_log_ratios : ndarray (n, n)
        Rigorous upper bounds of ``max_w ln(p_uw / p_vw)`` for the returned matrix (reused by
        :class:`mdp.privacy.sampling.ExactSampler` to measure what it samples without another pass).
    """

    matrix: np.ndarray
    log: bool
    report: dict
    pair_log_ratios: np.ndarray


# -- stochasticity --------------------------------------------------------------------------------
def _prepare(matrix, n: int, log: bool) -> tuple[np.ndarray, dict]:
    """Validated copy of the candidate (step 2 of the module docstring).

    A read-only float64 array that owns its data is used as it is (no ``n x n`` copy) unless
    negatives must be clipped: nothing can change it behind the certification's back short of
    setting its flags again.
    """
    try:
        shared = (isinstance(matrix, np.ndarray) and matrix.dtype == np.float64
                  and not matrix.flags.writeable and matrix.flags.owndata)
        A = matrix if shared else np.array(matrix, dtype=float, copy=True)
    except (TypeError, ValueError):
        raise ParameterError(f"matrix must be a numeric (n, n) array, got "
                             f"{type(matrix).__name__}") from None
    if A.shape != (n, n):
        raise ParameterError(f"matrix must have the distances' shape ({n}, {n}), got {A.shape}")
    info = {"clipped_negative_entries": 0}
    if log:
        bad = np.isnan(A) | (A == np.inf)
        if np.any(bad):
            i, j = np.argwhere(bad)[0]
            raise PrivacyError(f"log-matrix entry [{i}, {j}] is {A[i, j]!r}: log-probabilities "
                               "must be finite or -inf")
        with np.errstate(invalid="ignore", divide="ignore"):
            err = np.expm1(row_logsumexp(A))
    else:
        if not np.all(np.isfinite(A)):
            i, j = np.argwhere(~np.isfinite(A))[0]
            raise PrivacyError(f"matrix entry [{i}, {j}] is {A[i, j]!r}: probabilities must be finite")
        low = float(A.min())
        if low < -NEGATIVE_ATOL:
            i, j = np.unravel_index(np.argmin(A), A.shape)
            raise PrivacyError(f"matrix entry [{i}, {j}] = {low!r} is negative beyond the solver "
                               f"tolerance {NEGATIVE_ATOL:g}")
        neg = A < 0
        info["clipped_negative_entries"] = int(np.count_nonzero(neg))
        if info["clipped_negative_entries"]:
            if not A.flags.writeable:
                A = np.array(A, copy=True)
            A[neg] = 0.0
        err = A.sum(axis=1) - 1.0
    worst = np.where(np.isnan(err), np.inf, np.abs(err))
    info["max_rowsum_error"] = float(worst.max())
    if worst.max() > ROWSUM_ATOL:
        i = int(np.argmax(worst))
        raise PrivacyError(
            f"matrix is not row-stochastic: row {i} sums to 1 + {err[i]:.6e} (tolerance "
            f"{ROWSUM_ATOL:g}); a builder must normalise its rows before certification")
    return A, info


# -- measurement ----------------------------------------------------------------------------------
def _triple_upper(A: np.ndarray, u: int, v: int, log: bool) -> np.ndarray:
    """Upper bounds of ``ln(A[u, w] / A[v, w])`` for every ``w`` (``-inf`` where ``A[u, w] = 0``)."""
    if log:
        with np.errstate(invalid="ignore"):
            r = round_up(A[u] - A[v], DIFF_REL)
        r[np.isnan(r)] = -np.inf
        return r
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        x = (A[u] - A[v]) / A[v]
        r = round_up(np.log1p(round_up(x, X_REL)), LOG_REL)
        big = np.isinf(x) & (A[v] > 0)             # overflow: a subnormal denominator
        r[big] = round_up(np.log(A[u, big]) - np.log(A[v, big]), LOG_REL)
    r[A[u] == 0] = -np.inf
    r[np.isnan(r)] = -np.inf
    return r


def _exact_holds(A: np.ndarray, D: np.ndarray, u: int, v: int, w: int, limit: float,
                 log: bool) -> bool:
    c = Fraction(limit) * Fraction(float(D[u, v]))
    a, b = float(A[u, w]), float(A[v, w])
    if log:
        if a == -math.inf:
            return True
        return b != -math.inf and Fraction(a) - Fraction(b) <= c
    return pure_triple_holds(a, b, c)


#: How the pair bounds were obtained (recorded as ``report["pair_bounds"]``).
FORM_BOUNDS = "exponential form, O(n^2 d)"
ALL_TRIPLES = "all triples, O(n^3)"


def _measure_form(A: np.ndarray, D: np.ndarray, limit: float, points, slope: float):
    """The exponential-form bounds of a log matrix (:mod:`mdp.privacy.exponential_form`), when they
    prove ``limit``: ``(measured upper bound, pair log-ratio upper bounds)``, else None.

    ``O(n^2 d)``, rigorous for any matrix and tight for the exponential mechanism; only the
    ``n x n`` upper bounds are held (the levels are reduced to their maxima as they are made).
    """
    form = form_pair_bounds(A, D, points, slope)
    if form is None or not form.level_upper <= limit:
        return None
    measured = form.level_upper
    floor = form.level_lower
    if 0 < measured < math.inf and floor > 0:
        # the pairs that may hold the largest level, as refine_pure_level selects them
        cap = EXACT_REFINE_PAIRS + 1
        us, vs = np.empty(cap, np.int64), np.empty(cap, np.int64)
        count = pairs_at_least(form.upper, np.ascontiguousarray(D), floor, DIFF_REL,
                               SUBNORMAL_SLACK, us, vs)
        if count < cap:
            refined = refine_pairs(A, D, us[:count], vs[:count], True)
            if refined is not None:
                measured = min(measured, refined)
    return measured, form.upper


def _measure(A: np.ndarray, D: np.ndarray, limit: float, log: bool, points=None,
             slope: float = 0.0):
    """(passes, measured upper bound, pair log-ratio upper bounds, exactly decided triples,
    how the pair bounds were obtained).

    A log matrix given with the points of a Euclidean space is first bounded in ``O(n^2 d)``
    (:func:`_measure_form`); when those bounds do not prove ``limit`` (another mechanism, or a
    violation) every triple is measured.
    """
    if log and points is not None:
        done = _measure_form(A, D, limit, points, slope)
        if done is not None:
            return True, done[0], done[1], 0, FORM_BOUNDS
    method = ALL_TRIPLES
    R_up, R_lo = pair_log_ratio_bounds(A, log)
    E_up = pure_levels(R_up, D, round_up)
    measured = float(E_up.max())
    if measured <= limit:
        if measured > 0 and math.isfinite(measured):
            refined = refine_pure_level(A, D, E_up, pure_levels(R_lo, D, round_down), log)
            if refined is not None:
                measured = min(measured, refined)
        return True, measured, R_up, 0, method
    E_lo = pure_levels(R_lo, D, round_down)
    if float(E_lo.max()) > limit:
        return False, measured, R_up, 0, method
    # every pair over the limit is within rounding of it: decide its triples exactly
    us, vs = np.nonzero(E_up > limit)
    decided = 0
    for u, v in zip(us.tolist(), vs.tolist(), strict=True):
        d = float(D[u, v])
        with np.errstate(divide="ignore", invalid="ignore"):
            lv = round_up(_triple_upper(A, u, v, log) / d, DIFF_REL)
        for w in np.flatnonzero(lv > limit).tolist():
            decided += 1
            if decided > EXACT_TRIPLES or not _exact_holds(A, D, u, v, w, limit, log):
                return False, measured, R_up, decided, method
    return True, limit, R_up, decided, method


# -- repair ---------------------------------------------------------------------------------------
def _clusters(D: np.ndarray, epsilon: float) -> np.ndarray:
    """Labels of the near-duplicate clusters (``eps * D < MERGE_C``, single linkage)."""
    close = (epsilon * D < MERGE_C) & ~np.eye(len(D), dtype=bool)
    if not close.any():
        return np.arange(len(D))
    _, labels = connected_components(csr_matrix(close), directed=False)
    return labels


def _quotient_distances(D: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Shortest-path pseudo-metric in which points of one cluster are at distance 0."""
    order = np.argsort(labels, kind="stable")
    sl = labels[order]
    starts = np.flatnonzero(np.r_[True, sl[1:] != sl[:-1]])
    Ds = D[np.ix_(order, order)]
    Dc = np.minimum.reduceat(np.minimum.reduceat(Ds, starts, axis=0), starts, axis=1)
    np.fill_diagonal(Dc, 0.0)
    Dq = shortest_path(Dc, method="D", directed=False)
    return Dq[np.ix_(labels, labels)]


def _copy_representatives(E: np.ndarray, labels: np.ndarray) -> None:
    """Give every member of a cluster the exact row of its first member (in place)."""
    _, first = np.unique(labels, return_index=True)
    rep = first[labels]
    moved = rep != np.arange(len(labels))
    if np.any(moved):
        E[moved] = E[rep[moved]]


def column_envelope(A: np.ndarray, Dq: np.ndarray, eps: float, log: bool) -> np.ndarray:
    r"""Column-wise envelope of a matrix under the eps-mDP constraints.

    .. math:: E[v, w] = \max_u M[u, w]\, e^{-\varepsilon D_q[u, v]}
              \qquad (\text{log: } \max_u L[u, w] - \varepsilon D_q[u, v])

    the smallest column ``w`` that every row ``v`` must reach for ``M``'s rows to satisfy the
    guarantee against it (the repair's first step, module docstring).

    Parameters
    ----------
    A : ndarray (n, n)
        Probabilities, or log-probabilities with ``log=True``.
    Dq : ndarray (n, n)
        Distances (the repair's quantised distances).
    eps : float
    log : bool
    """
    n = A.shape[0]
    out = np.empty_like(A)
    block = max(1, int(8e6 // (n * n)))
    if log:
        C = eps * Dq
        for s in range(0, n, block):
            out[s:s + block] = np.max(A[:, None, :] - C[:, s:s + block, None], axis=0)
        return out
    with np.errstate(under="ignore"):
        K = np.exp(-eps * Dq)
    for s in range(0, n, block):
        out[s:s + block] = np.max(K[:, s:s + block, None] * A[:, None, :], axis=0)
    return out


def _uniform_weight(E: np.ndarray, D: np.ndarray, eps: float, log: bool) -> float:
    """Smallest ``t`` making ``(1 - t) E + t U`` eps-mDP (module docstring, 4c)."""
    n = E.shape[0]
    t = 0.0
    block = max(1, int(4e6 // (n * n)))
    with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
        if log:
            C = eps * D
            # log((e^c - 1) / n) = c + log(1 - e^-c) - log n
            logden = C + np.log(-np.expm1(-C)) - math.log(n)
            np.fill_diagonal(logden, np.inf)
            for s in range(0, n, block):
                X = E[:, s:s + block]
                gap = X[None, :, :] + C[:, :, None] - X[:, None, :]      # [u, v, w]: <0 violates
                viol = (gap < 0) & np.isfinite(X[:, None, :])
                if np.any(viol & ~np.isfinite(gap)):
                    return 1.0
                if viol.any():
                    logv = X[:, None, :] + np.log(-np.expm1(gap))          # log V
                    z = np.broadcast_to(logden[:, :, None], gap.shape)[viol] - logv[viol]
                    t = max(t, float(np.max(expit(-z))))
            return t
        Ku = np.exp(eps * D)
        den = (Ku - 1.0) / n
        np.fill_diagonal(den, np.inf)
        for s in range(0, n, block):
            X = E[:, s:s + block]
            V = X[:, None, :] - Ku[:, :, None] * X[None, :, :]          # V[u, v, w]
            if np.isnan(V).any():        # 0 against a positive entry at an overflowing ratio
                return 1.0
            pos = V > 0
            if pos.any():
                dv = np.broadcast_to(den[:, :, None], V.shape)[pos]
                t = max(t, float(np.max(V[pos] / (V[pos] + dv))))
    return t


def _repair(A: np.ndarray, D: np.ndarray, epsilon: float, log: bool) -> tuple[np.ndarray, dict]:
    labels = _clusters(D, epsilon)
    merged = len(np.unique(labels)) < len(labels)
    Dq = _quotient_distances(D, labels) if merged else D
    E = column_envelope(A, Dq, epsilon, log)
    if merged:
        _copy_representatives(E, labels)
    if log:
        E -= logsumexp(E, axis=1, keepdims=True)
    else:
        E /= E.sum(axis=1, keepdims=True)
    if merged:
        _copy_representatives(E, labels)
    t = _uniform_weight(E, D, epsilon, log)
    if t > 0:
        t = min(1.0, t * (1 + 1e-6) + 1e-15)
        n = E.shape[0]
        if log:
            with np.errstate(divide="ignore"):
                E = np.logaddexp(math.log1p(-t) + E if t < 1 else np.full_like(E, -np.inf),
                                 math.log(t / n))
        else:
            E = (1.0 - t) * E + t / n
        if merged:
            _copy_representatives(E, labels)
    counts = np.bincount(labels)
    return E, {"uniform_mix": t, "merged_points": int(counts[counts > 1].sum())}


def repair_to_private(matrix, distances, epsilon: float, *, log: bool = False
                      ) -> tuple[np.ndarray, float]:
    """Merge near-duplicates, envelope at ``epsilon``, renormalise, smallest uniform mix.

    See the module docstring, step 4. The result is *not* certified here; pass it to
    :func:`certify`.

    Parameters
    ----------
    matrix : ndarray (n, n)
        Probabilities, or log-probabilities with ``log=True`` (the result has the same form).
    distances : ndarray (n, n)
    epsilon : float
    log : bool, keyword-only

    Returns
    -------
    (matrix, t) : the repaired row-stochastic matrix and the uniform weight ``t`` used.
    """
    epsilon = check_epsilon(epsilon)
    D = check_distances(distances)
    A = np.array(matrix, dtype=float, copy=True)
    if A.shape != D.shape:
        raise ParameterError(f"matrix must have the distances' shape {D.shape}, got {A.shape}")
    H, info = _repair(A, D, epsilon, log)
    return H, info["uniform_mix"]


# -- certification --------------------------------------------------------------------------------
def _underflow_hint(A: np.ndarray, D: np.ndarray, epsilon: float, log: bool) -> str:
    if log:
        return ""
    pos = A > 0
    mixed = np.any(pos, axis=0) & ~np.all(pos, axis=0)
    if np.any(mixed) and epsilon * D.max() > 700:
        return (f" The matrix has exact zeros beside positive entries in {int(mixed.sum())} columns:"
                f" epsilon * diameter = {epsilon * D.max():.6g} makes probabilities underflow double"
                " precision (below ~1e-308); give the matrix as log-probabilities (log=True).")
    return ""


def _max_change(A: np.ndarray, H: np.ndarray, log: bool) -> float:
    if log:
        with np.errstate(under="ignore", invalid="ignore"):
            diff = np.abs(np.exp(H) - np.exp(A))
        return float(np.nanmax(diff))
    return float(np.abs(H - A).max())


def certify_matrix(matrix, distances, epsilon: float, *, repair: bool = True,
                   log: bool = False, points=None) -> Certification:
    """:func:`certify`, returning a :class:`Certification` (with the pair bounds).

    Parameters and errors as :func:`certify`; ``points`` (n, dim), optional, keyword-only:
    coordinates whose Euclidean distances ``distances`` are (up to rounding, measured). With
    them a log matrix of the exponential form is certified in ``O(n^2 dim)`` instead of
    ``O(n^3)`` (:mod:`mdp.privacy.exponential_form`); ``report["pair_bounds"]`` says which was used.
    Nothing about them is trusted: points far from the distances only loosen the bound.
    """
    epsilon = check_epsilon(epsilon)
    D = check_distances(distances)
    A, info = _prepare(matrix, D.shape[0], log)
    if points is not None:
        points = np.asarray(points, dtype=float)
        if points.ndim != 2 or points.shape[0] != D.shape[0]:
            raise ParameterError(f"points must have shape ({D.shape[0]}, dim), got {points.shape}")
    limit = epsilon * (1.0 + PURE_EPS_RTOL)
    slope = 0.5 * epsilon         # the exponential mechanism's c = eps / 2
    report = {"guarantee": "matrix", "verified": True, "claimed_eps": epsilon,
              "certified_eps": limit, "rtol": PURE_EPS_RTOL,
              "representation": "log" if log else "probability", **info, "repaired": False}
    ok, measured, R, decided, method = _measure(A, D, limit, log, points, slope)
    report["measured_eps"] = measured
    report["exactly_decided_triples"] = decided
    report["pair_bounds"] = method
    if ok:
        return Certification(A, log, report, R)
    head = (f"matrix is {measured:.17g}-mDP (rigorous upper bound) but claims {epsilon!r}-mDP "
            f"(certified limit {limit!r}, relative tolerance {PURE_EPS_RTOL:g}; "
            f"ratio {measured / epsilon:.12g})")
    if not repair:
        raise PrivacyError(head + "." + _underflow_hint(A, D, epsilon, log))
    H, rinfo = _repair(A, D, epsilon, log)
    change = _max_change(A, H, log)
    if change > REPAIR_ATOL or not np.all(np.isfinite(H) | (log & (H == -np.inf))):
        raise PrivacyError(head + f"; the tolerance repair would change probabilities by up to "
                           f"{change:.3g} (limit {REPAIR_ATOL:g}), so the mechanism is refused."
                           + _underflow_hint(A, D, epsilon, log))
    ok2, after, R2, decided2, method2 = _measure(H, D, limit, log, points, slope)
    if not ok2:
        raise PrivacyError(head + f"; after the tolerance repair it is still {after:.17g}-mDP, so "
                           "the mechanism is refused." + _underflow_hint(A, D, epsilon, log))
    report.update(repaired=True, measured_eps_before=measured, measured_eps=after,
                  exactly_decided_triples=decided + decided2, max_entry_change=change,
                  pair_bounds=method2, **rinfo)
    return Certification(H, log, report, R2)


def certify(matrix, distances, epsilon: float, *, repair: bool = True,
            log: bool = False) -> tuple[np.ndarray, dict]:
    """Check (and if needed repair) that ``matrix`` is ``epsilon``-mDP on ``distances``.

    Parameters
    ----------
    matrix : ndarray (n, n)
        Candidate transition matrix (rows probability vectors), or natural log-probabilities
        with ``log=True`` (``-inf`` for zeros).
    distances : ndarray (n, n)
        The space's distances (symmetric, zero diagonal, positive off the diagonal).
    epsilon : float
        The claimed pure mDP level, > 0.
    repair : bool, default True
        Allow the tolerance repair described in the module docstring.
    log : bool, default False, keyword-only
        ``matrix`` holds log-probabilities; the returned matrix then does too.

    Returns
    -------
    matrix : ndarray (n, n)
        Exactly the matrix that was measured: the candidate itself (as float64, with negatives
        above ``-NEGATIVE_ATOL`` set to 0) or its repair. Its pure level is at most
        ``certified_eps = fl(epsilon * (1 + PURE_EPS_RTOL))`` in exact arithmetic.
    report : dict
        ``guarantee`` ("matrix"), ``verified`` (True), ``claimed_eps``, ``certified_eps``,
        ``measured_eps`` (a rigorous upper bound of the true pure level),
        ``representation`` ("probability" or "log"), ``clipped_negative_entries``,
        ``max_rowsum_error``, ``exactly_decided_triples``, ``repaired`` and, when repaired,
        ``measured_eps_before``, ``uniform_mix``, ``merged_points`` and ``max_entry_change``.

    Raises
    ------
    ParameterError
        Invalid ``epsilon`` or ``distances`` (or a matrix of the wrong shape).
    PrivacyError
        The matrix is not stochastic (within ``ROWSUM_ATOL``) or violates the guarantee beyond
        the repair.
    """
    cert = certify_matrix(matrix, distances, epsilon, repair=repair, log=log)
    return cert.matrix, cert.report
