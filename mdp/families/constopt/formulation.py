r"""The ConstOPTMech LP (Imola et al. 2022, section 3.2, Algorithm 1, Theorems 1-2).

The LP fixes most entries to a *weighted exponential mechanism* whose weights ``Y`` the LP
chooses, and leaves the entries ``M[u, v]`` with ``u in I(v)`` free (replacement function):

.. math:: M_{uv} = Y_v e^{-e D_{uv}}\ \ (u \notin I(v)), \qquad
          \min k \ \text{s.t.}\ \sum_v (D_{wv} + \lambda) M_{wv} \le k,\ \sum_v M_{wv} \ge 1,\
          M \ge 0,\ Y \ge 0,\ \text{privacy rows at level } e = \epsilon / 2,

and Algorithm 1 normalises the rows of the solution, ``H_uv = M_uv / sum_w M_uw``. Solving at
``eps / 2`` is what makes the normalisation safe (Theorem 2: normalising moves each log-ratio
by at most ``e D_uv`` more), so ``H`` is eps-mDP; :func:`mdp.build` re-verifies it.

Formulation details (notes section 1)
-------------------------------------
* Penalty: the paper's eq. 6 prints ``lambda * sum_u M_uu``; the intended term (it penalises row
  sums above 1 and reproduces Theorem 1's non-zero count) is ``lambda * sum_v M_wv``, used here.
* Fixed entries are substituted, not stored: variables are ``Y`` (n), the free entries and ``k``.
* Fixed-fixed privacy pairs hold by the triangle inequality and are dropped.
* Free-vs-fixed: for a free ``(u, v)`` all rows against fixed ``u'`` in column ``v`` collapse to
  ``lo_uv Y_v <= M_uv <= hi_uv Y_v`` with ``hi_uv = min_{u'} e^{e(D_uu' - D_u'v)}`` and
  ``lo_uv = max_{u'} e^{-e(D_u'v + D_u'u)}`` (``Y_v`` is one scalar): 2 rows per free entry.
* Free-free pairs in the same column keep their own rows: ``|I(v)|(|I(v)| - 1)`` per column.

So the LP has ``n + 1 + sum_v |I(v)|`` variables and ``2n + sum_v (|I(v)|^2 + |I(v)|)`` rows
(at most; a lower bound row is dropped when its column has no fixed entry), within Theorem 1's
``2n + sum_v (2|I(v)|^2 + 3|I(v)|)``.

Replacement ``I_NN,r`` (eq. 5): ``I(v) = {u : v is one of the r nearest points of u}``,
where a point counts as its own nearest point (distance 0), so the diagonal is always free and
each row has exactly ``r`` free entries (``sum_v |I(v)| = n r``). Other replacement functions
can be passed as a callable returning the boolean "free" mask.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["nn_replacement", "free_free_pairs", "theorem1_counts", "log_bound_factors",
           "lipschitz_log_matrix", "constopt_lp", "left_out_rows"]


def nn_replacement(distances: np.ndarray, r: int) -> np.ndarray:
    """Free-entry mask of ``I_NN,r`` (Imola et al. 2022, eq. 5): ``free[u, v]`` iff v is among u's r nearest points.

    ``u`` itself is its nearest point; ties are broken by index (stable sort).
    """
    D = np.asarray(distances, dtype=float)
    n = D.shape[0]
    order = np.argsort(D + np.diag(np.full(n, -1.0)), axis=1, kind="stable")[:, :r]
    free = np.zeros((n, n), dtype=bool)
    free[np.repeat(np.arange(n), r), order.ravel()] = True
    return free


def free_free_pairs(fu: np.ndarray, fv: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every ordered pair ``(j, j')`` of distinct free entries in one column (indices into ``fu``).

    Column by column, each in the row-major order of the free entries.
    """
    n = int(fv.max()) + 1 if len(fv) else 0
    order = np.argsort(fv, kind="stable")
    starts = np.searchsorted(fv[order], np.arange(n + 1))
    pa, pb = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
    for v in range(n):
        mem = order[starts[v]:starts[v + 1]]
        if len(mem) > 1:
            a, b = np.meshgrid(mem, mem, indexing="ij")
            off = a != b
            pa.append(a[off])
            pb.append(b[off])
    return np.concatenate(pa), np.concatenate(pb)


def theorem1_counts(free: np.ndarray) -> dict:
    """Theorem 1's upper bounds for the replacement ``free`` (``|I(v)|`` = column counts)."""
    n = free.shape[0]
    s = free.sum(axis=0).astype(np.int64)
    return {"variables": int(n + 1 + s.sum()), "rows": int(2 * n + np.sum(2 * s ** 2 + 3 * s)),
            "nnz": int(2 * n * n + np.sum(2 * s ** 2 + 5 * s))}


def log_bound_factors(D: np.ndarray, free: np.ndarray, fu: np.ndarray, fv: np.ndarray, e: float):
    """``log hi`` and ``log lo`` of every free entry (min/max over the fixed entries of its column)."""
    m = len(fu)
    log_hi = np.full(m, np.inf)
    log_lo = np.full(m, -np.inf)
    n = D.shape[0]
    block = max(1, int(4e6 // n))
    for s in range(0, m, block):
        u, v = fu[s:s + block], fv[s:s + block]
        fixed = ~free[:, v].T  # (b, n): u' fixed in column v
        a = D[u, :] - D[:, v].T  # D[u, u'] - D[u', v]
        log_hi[s:s + block] = e * np.where(fixed, a, np.inf).min(axis=1)
        b = -(D[:, v].T + D[u, :])
        log_lo[s:s + block] = e * np.where(fixed, b, -np.inf).max(axis=1)
    return log_hi, log_lo


def lipschitz_log_matrix(x: np.ndarray, distances: np.ndarray, e: float, free: np.ndarray, *,
                         bound_factors: tuple[np.ndarray, np.ndarray] | None = None,
                         pairs: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    r"""Log of the LP's matrix ``M`` from a solution ``x``, with every privacy row at ``e`` holding exactly.

    An LP solution meets the privacy rows only to the solver's tolerance (an interior point or a
    relaxation's solution only approximately). Each free entry is clipped into
    ``[lo_uv Y_v, hi_uv Y_v]`` and then lifted to its column's envelope over the free entries,
    ``M_uv <- max_{u' in I(v)} M_u'v e^{-e D_uu'}`` (one pass suffices: ``D`` is a metric). The
    envelope only raises entries, so the lower bounds keep holding; it keeps the upper bounds too,
    because ``hi_u'v e^{-e D_uu'} <= hi_uv`` by the triangle inequality. The fixed entries
    ``Y_v e^{-e D_uv}`` are unchanged, so every column is ``e``-log-Lipschitz and the
    row-normalised matrix is ``2e``-mDP (Imola et al. 2022, Theorem 2), whatever rows the solve
    left out or met only to its tolerance.

    Parameters
    ----------
    x : ndarray
        ``(Y, free entries in the row-major order of free, ...)`` as in :func:`constopt_lp`.
    distances : ndarray (n, n)
    e : float
        Privacy level of the LP (``epsilon / 2``).
    free : bool ndarray (n, n)
    bound_factors, pairs : optional
        ``(log hi, log lo)`` of the free entries and every free-free pair
        (:func:`free_free_pairs`), if already at hand.
    """
    D = np.asarray(distances, dtype=float)
    n = D.shape[0]
    fu, fv = np.nonzero(free)
    f = len(fu)
    log_hi, log_lo = log_bound_factors(D, free, fu, fv, e) if bound_factors is None else bound_factors
    with np.errstate(divide="ignore"):
        logY = np.log(np.maximum(x[:n], 0.0))
        logm = np.log(np.maximum(x[n:n + f], 0.0))
    # an infinite factor is an absent bound (a column without fixed entries), also where Y_v = 0
    with np.errstate(invalid="ignore"):
        lower = np.where(np.isfinite(log_lo), logY[fv] + log_lo, -np.inf)
        upper = np.where(np.isfinite(log_hi), logY[fv] + log_hi, np.inf)
    logm = np.minimum(np.maximum(logm, lower), upper)
    ja, jb = free_free_pairs(fu, fv) if pairs is None else pairs
    lifted = logm.copy()
    np.maximum.at(lifted, jb, logm[ja] - e * D[fu[ja], fu[jb]])
    L = logY[None, :] - e * D
    L[fu, fv] = lifted
    return L


def constopt_lp(distances: np.ndarray, e: float, free: np.ndarray, lam: float, *, split: bool = False,
                max_coefficient: float | None = None):
    """Assemble the ConstOPTMech LP at privacy level ``e`` (already halved) in one sparse matrix.

    Variables: ``Y`` (n), the free entries in row-major order of ``free``, then ``k``.
    Row order: losses, row sums, collapsed free-vs-fixed bounds, then the free-free pair rows.
    With ``max_coefficient`` ``C``, privacy rows whose coefficient lies outside ``[1/C, C]`` are
    left out (a relaxation HiGHS can solve at any ``e * D``;
    :func:`~mdp.families.constopt.build.build_constopt` decides the entries they would bound by
    the envelope and certifies the result).

    Returns
    -------
    c, A, row_lower, row_upper, (fu, fv) : objective, CSR matrix, row bounds, free entries;
    with ``split=True`` also the index of the first free-free row.
    """
    D = np.asarray(distances, dtype=float)
    n = D.shape[0]
    fu, fv = np.nonzero(free)
    f = len(fu)
    nv = n + f + 1
    kcol = n + f
    E = np.exp(-e * D)
    W = D + lam  # per-entry coefficient of the penalised loss
    rows, cols, vals = [], [], []
    # loss rows 0..n-1 and row-sum rows n..2n-1: fixed entries through Y, free entries directly
    fixed = ~free
    wu, wv = np.nonzero(fixed)
    ids = np.arange(f)
    rows += [wu, fu, np.arange(n), n + wu, n + fu]
    cols += [wv, n + ids, np.full(n, kcol), wv, n + ids]
    vals += [W[wu, wv] * E[wu, wv], W[fu, fv], -np.ones(n), E[wu, wv], np.ones(f)]
    lo = [np.full(n, -np.inf), np.ones(n)]
    hi = [np.zeros(n), np.full(n, np.inf)]
    nrow = 2 * n
    # free-vs-fixed: M_uv - hi Y_v <= 0 and M_uv - lo Y_v >= 0 (only where the column has fixed entries)
    log_hi, log_lo = log_bound_factors(D, free, fu, fv, e)
    cmax = np.inf if max_coefficient is None else float(np.log(max_coefficient))
    for logb, lo_b, hi_b in ((log_hi, -np.inf, 0.0), (log_lo, 0.0, np.inf)):
        sel = np.nonzero(np.isfinite(logb) & (np.abs(logb) <= cmax))[0]
        r = nrow + np.arange(len(sel))
        rows += [r, r]
        cols += [n + sel, fv[sel]]
        vals += [np.ones(len(sel)), -np.exp(logb[sel])]
        lo.append(np.full(len(sel), lo_b))
        hi.append(np.full(len(sel), hi_b))
        nrow += len(sel)
    # free-free pairs of the same column: M_uv - e^{e D_uu'} M_u'v <= 0
    ja, jb = free_free_pairs(fu, fv)
    keep = e * D[fu[ja], fu[jb]] <= cmax
    ja, jb = ja[keep], jb[keep]
    n_base = nrow
    if len(ja):
        a, b = fu[ja], fu[jb]
        r = nrow + np.arange(len(a))
        rows += [r, r]
        cols += [n + ja, n + jb]
        vals += [np.ones(len(a)), -np.exp(e * D[a, b])]
        lo.append(np.full(len(a), -np.inf))
        hi.append(np.zeros(len(a)))
        nrow += len(a)
    A = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(nrow, nv))
    c = np.zeros(nv)
    c[kcol] = 1.0
    out = (c, A, np.concatenate(lo), np.concatenate(hi), (fu, fv))
    return (*out, n_base) if split else out


def left_out_rows(D: np.ndarray, e: float, free: np.ndarray, max_coefficient: float) -> int:
    """Privacy rows :func:`constopt_lp` leaves out at ``max_coefficient`` (as it selects them)."""
    cmax = float(np.log(max_coefficient))
    fu, fv = np.nonzero(free)
    log_hi, log_lo = log_bound_factors(D, free, fu, fv, e)
    out = int(np.count_nonzero(np.isfinite(log_hi) & (log_hi > cmax)))
    out += int(np.count_nonzero(np.isfinite(log_lo) & (-log_lo > cmax)))
    for v in range(D.shape[0]):
        mem = np.nonzero(free[:, v])[0]
        out += int(np.count_nonzero(e * D[np.ix_(mem, mem)] > cmax))
    return out
