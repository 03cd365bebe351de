r"""ConstOPTMech (Imola et al. 2022, section 3.2, Algorithm 1, Theorems 1-2).

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

import time
from collections.abc import Callable, Iterable, Sequence

import numpy as np
import scipy.sparse as sp
from scipy.special import logsumexp

from ..accounting import loss as mech_loss
from ..candidate import Candidate
from ..errors import ParameterError, ParameterTypeError, SolverError
from ..lp import (
    SOLVERS,
    Cuts,
    LPError,
    LPTimeout,
    Phase,
    RowGeneration,
    RowGenerationPolicy,
    SparseLP,
    explain_failures,
    stochastic_rows,
)
from ..lp.output import LOG_DOMAIN_C, private_candidate
from ..lp.worst_case import MAX_COEFFICIENTS
from ..params import Param
from ..registry import register
from ..space import MetricSpace
from .exponential import exponential_floor

__all__ = ["nn_replacement", "free_free_pairs", "constopt_lp", "solve_constopt_lp", "lipschitz_log_matrix",
           "theorem1_counts", "ROW_BLOCK_MIN_N", "ROW_BLOCK_MAX_SCALE", "ROW_BLOCK_MAX_VIOLATED",
           "ROW_BLOCK_WIDE_SCALE", "EXACT_GAP"]

#: Quantile used to choose among several lambdas (Imola et al. 2022, section 5.1, eq. 11).
SELECTION_Q = 0.95
#: Dual simplex pricing of the warm rounds that add free-free rows. With HiGHS's own choice (dual
#: steepest edge) the first warm rounds spend far more on the edge weights, with the dense loss /
#: row-sum rows in the basis, than on the few dozen pivots a round needs (``docs/design/lp.md``,
#: "ConstOPTMech" in the plan). A warm solve that fails with Devex is re-solved with HiGHS's choice
#: (:class:`mdp.lp.RowGeneration`).
WARM_PRICING = "devex"
#: With ``solver="auto"`` and no ``gap``, spaces of at least this many points are solved by the
#: row-block interior point method of :mod:`mdp.families.constopt_ipm` to the certified relative
#: gap ``EXACT_GAP`` instead of by HiGHS (whole builds on a 2-core machine, HiGHS against the
#: row-block method: Geolife cells 3.0 / 1.9 s at n = 300, 13.4 / 8.7 s at 600, GloVe words
#: 2.9 / 2.0 s at 300, 14.3 / 3.7 s at 600; at 200 points GloVe 2.0 / 2.9 s; ``docs/design/lp.md``,
#: "ConstOPTMech" in the plan).
ROW_BLOCK_MIN_N = 300
#: ... and where ``epsilon / 2`` times the median distance is at most this. Far beyond it the
#: method cannot certify its gap (``e^{-e D}`` spans hundreds of orders of magnitude) and the
#: attempt only delays HiGHS (Geolife cells, n = 600, product 91: 246 s against 34 s); up to it
#: it won or came close (product 2.7-2.9: 1.6-2.2x faster at n = 1000; 9.1: 41 s against 32 s;
#: 22.8: 269 s against more than 9 minutes for HiGHS).
ROW_BLOCK_MAX_SCALE = 25.0
#: ... and, where that product is below ``ROW_BLOCK_WIDE_SCALE``, as long as round 0 of the method
#: violates at most this many free-free rows per point (they join the dense part of every later
#: round); beyond it HiGHS solves the LP. GloVe, eps ~2 (product 5.2-5.8): 300 words 25.7 per
#: point, 55.6 s against 9.9 s for HiPO; 400 words 10.3 and 8.9 per point, 35-46 s against 15 s.
#: Up to 3.5 the method won, tied or lost by at most 1.3x everywhere measured (``docs/design/lp.md``).
ROW_BLOCK_MAX_VIOLATED = 6.0
#: From this product on HiGHS slows down on the LP's wide coefficient range, and the method won
#: with more violated rows (Geolife cells, n = 600, eps 5, product 22.9: 7.8 per point, 269 s
#: against more than 558 s for HiGHS), so no violation limit applies.
ROW_BLOCK_WIDE_SCALE = 15.0
#: What "exact" means for the row-block method: the certified relative gap of the returned LP
#: point (the registry's exactness for every LP mechanism).
EXACT_GAP = 1e-6


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


def _bound_factors(D: np.ndarray, free: np.ndarray, fu: np.ndarray, fv: np.ndarray, e: float):
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
    log_hi, log_lo = _bound_factors(D, free, fu, fv, e) if bound_factors is None else bound_factors
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
    left out (a relaxation HiGHS can solve at any ``e * D``; :func:`build_constopt` decides the
    entries they would bound by the envelope and certifies the result).

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
    log_hi, log_lo = _bound_factors(D, free, fu, fv, e)
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


def solve_constopt_lp(c, A, row_lower, row_upper, n_base: int, *, lazy: bool = True, solver: str = "ipm",
                      time_limit: float | None = None, tol: float = 1e-9, max_rounds: int = 200,
                      on_round: Callable | None = None):
    r"""Solve the assembled LP; with ``lazy`` the free-free rows are generated on demand.

    Lazy: the LP without free-free rows (rows ``>= n_base``) is solved with ``solver`` (an
    interior point method with crossover by default: a basis for the warm starts), then the
    free-free rows violated by more than ``tol`` are added in one batch and the LP is re-solved by
    the warm-started dual simplex, until none is
    violated (:class:`mdp.lp.RowGeneration`, no gap test: the restricted LP's optimum satisfying
    every row is the full LP's). The optimum is the full LP's (same constraints at the end,
    checked on the returned ``x``); the objective moves little after the first round (relative
    8e-5 at n = 400 and 2e-5 at n = 1000 on Geolife cells; figures in ``docs/design/lp.md``).

    Returns
    -------
    sol : :class:`mdp.lp.LPSolution`; stats : dict (sizes of the full LP, rows actually solved,
    rounds, solver statistics).
    """
    t0 = time.perf_counter()
    m = A.shape[0]
    if not lazy or n_base >= m:
        lp = SparseLP(c, A, row_lower=row_lower, row_upper=row_upper, solver=solver, time_limit=time_limit)
        sol = lp.solve()
        return sol, {**lp.stats, "rounds": 1, "rows_solved": m}
    base = slice(0, n_base)
    lp = SparseLP(c, A[base], row_lower=row_lower[base], row_upper=row_upper[base], solver=solver,
                  time_limit=time_limit)
    rest = A[n_base:].tocsr()
    r_lo, r_hi = row_lower[n_base:], row_upper[n_base:]

    def cuts(sol, tol_now: float) -> Cuts:
        act = rest @ sol.x
        viol = (act > r_hi + tol_now) | (act < r_lo - tol_now)
        worst = float(np.maximum(act - r_hi, r_lo - act).max(initial=-np.inf))
        return Cuts(keys=np.nonzero(viol)[0], worst=worst)

    def rows(keys):
        return rest[keys], r_lo[keys], r_hi[keys]

    loop = RowGeneration(lp, A[base], cuts, rows, key_space=rest.shape[0], initial_keys=np.zeros(0, np.int64),
                         policy=RowGenerationPolicy(start=Phase.INITIAL, tol=tol, max_rounds=max_rounds,
                                                    warm_pricing=WARM_PRICING),
                         time_limit=time_limit, started=t0, on_round=on_round)
    out = loop.run()
    stats = dict(lp.stats)
    stats.update(rows=m, nnz=int(A.nnz), rows_solved=lp.num_row, rounds=out.rounds,
                 phases=list(out.phases))
    return out.solution, stats


def _lambdas(lam) -> tuple[float, ...]:
    """``lam`` as a tuple (a number or a sequence of numbers)."""
    return (float(lam),) if np.isscalar(lam) else tuple(float(x) for x in lam)


def _check_lams(name: str, lam) -> tuple[float, ...]:
    if isinstance(lam, str) or not (np.isscalar(lam) or isinstance(lam, Iterable)):
        raise ParameterTypeError(f"{name} must be a number or a sequence of numbers, got {lam!r}")
    seq = (lam,) if np.isscalar(lam) else tuple(lam)
    if not seq:
        raise ParameterError(f"{name} must be a positive number or a non-empty sequence of them, "
                             "got an empty sequence")
    out = []
    for x in seq:
        if isinstance(x, bool) or not isinstance(x, (int, float, np.integer, np.floating)):
            raise ParameterTypeError(f"{name} must be a number or a sequence of numbers, got {x!r}")
        if not np.isfinite(x) or x <= 0:
            raise ParameterError(f"{name} must be > 0, got {x}")
        out.append(float(x))
    return tuple(out)


def _check_replacement(name: str, value):
    if isinstance(value, str):
        if value != "nn":
            raise ParameterError(f"{name} must be 'nn' or a callable, got {value!r}")
        return value
    if not callable(value):
        raise ParameterTypeError(f"{name} must be 'nn' or a callable, got {type(value).__name__}")
    return value


PARAMS = {
    "r": Param("int", 10, low=1, help="free entries per row (1 <= r < n)"),
    "lam": Param("custom", (0.001, 0.1, 1.0), check=_check_lams,
                 help="row-sum penalty > 0, or a list of them (the best L_0.95 is kept)"),
    "replacement": Param("custom", "nn", check=_check_replacement,
                         help="'nn' (I_NN,r) or a callable (distances, r) -> free mask"),
    "time_limit": Param("float", None, low=0.0, low_open=True, allow_none=True,
                        help="seconds per LP (None: no limit)"),
    "solver": Param("choice", "auto", choices=("auto",) + tuple(SOLVERS),
                    help="'auto': the row-block interior point method to a certified gap of 1e-6 "
                         "from ROW_BLOCK_MIN_N points where eps/2 x median distance <= "
                         "ROW_BLOCK_MAX_SCALE (and, below ROW_BLOCK_WIDE_SCALE, its first round "
                         "violates at most ROW_BLOCK_MAX_VIOLATED free-free rows per point), else "
                         "HiGHS's HiPO; "
                         "else the HiGHS method "
                         "(lazy: of the first round; 'hipo' runs 'ipm' without HiGHS's extension "
                         "package, and again when HiPO fails)"),
    "lazy": Param("bool", True, help="generate the free-free pair rows on demand"),
    "gap": Param("float", None, low=0.0, high=1.0, high_open=True, allow_none=True,
                 help="certified relative gap: solve by the row-block interior point method and "
                      "stop within gap of a rigorous lower bound (None: exact, see solver)"),
}


@register("constopt", description="LP over weighted-exponential weights + r-NN free entries "
          "(Imola et al. 2022, Alg. 1)", quick_max_n=200, display_name="ConstOPTMech", params=PARAMS)
def build_constopt(space: MetricSpace, epsilon: float, *, rng=None, r: int = 10,
                   lam: float | Sequence[float] = (0.001, 0.1, 1.0),
                   replacement: str | Callable = "nn", time_limit: float | None = None,
                   solver: str = "auto", lazy: bool = True, gap: float | None = None) -> Candidate:
    """ConstOPTMech (Algorithm 1): LP at ``eps/2`` with the ``I_NN,r`` replacement, rows normalised.

    Parameters
    ----------
    space : MetricSpace
    epsilon : float
    rng : unused (deterministic)
    r : int, 1 <= r < n, default 10
        Free entries per row (the point itself and its r - 1 nearest others).
    lam : float or sequence of floats > 0, default (0.001, 0.1, 1.0)
        Penalty on row sums (Imola et al. 2022, section 5.1 grid). With several values one LP is
        solved per value and the mechanism with the least ``L_0.95`` is returned; all are in
        ``stats["lambdas"]``.
    replacement : "nn" or callable
        ``"nn"`` is ``I_NN,r`` (:func:`nn_replacement`). A callable ``f(distances, r) -> free`` must
        return an ``(n, n)`` boolean mask of the free entries (``free[u, v]`` iff ``u in I(v)``).
    time_limit : float > 0 or None
        Seconds per LP; :class:`mdp.lp.LPTimeout` on timeout.
    solver : str, default "auto"
        ``"auto"``: from ``ROW_BLOCK_MIN_N`` (300) points, where ``epsilon / 2`` times the median
        distance is at most ``ROW_BLOCK_MAX_SCALE`` (25), the row-block interior point method of
        ``gap`` with the target ``EXACT_GAP`` (1e-6), which is faster there
        (``docs/design/lp.md``), and HiGHS with ``"hipo"`` when it cannot certify that gap or
        when its first round violates more than ``ROW_BLOCK_MAX_VIOLATED`` (6) free-free rows
        per point while the product is below ``ROW_BLOCK_WIDE_SCALE`` (15); otherwise HiGHS
        with ``"hipo"``. Any other value is the HiGHS method for every size (see
        :class:`mdp.lp.SparseLP`); with ``lazy`` the method of the first round.
        ``"hipo"`` (HiGHS's HiPO interior point, then crossover) needs HiGHS's extension
        package (module ``highspy_extras``) and runs IPX (``"ipm"``) without it;
        ``stats["solver"]`` names what ran. A HiPO solve that fails is repeated by IPX
        (``stats["failed_attempts"]``). HiPO is the faster first round from a few hundred
        points on; it runs on HiGHS's thread count (:func:`mdp.lp.set_threads`).
    lazy : bool, default True
        Generate the free-free pair rows on demand (:func:`solve_constopt_lp`); same optimum.
    gap : float in [0, 1) or None
        ``None`` (default): the LP is solved exactly (``solver``, ``lazy``). A number:
        by the row-block interior point method of :mod:`mdp.families.constopt_ipm`, which
        exploits the LP's structure (dense rows over ``Y`` only) and stops when the LP objective
        of a solution made exactly private at ``epsilon / 2`` is within ``gap`` relative of a
        rigorous lower bound; ``stats`` hold ``lower_bound``, ``relative_gap`` and
        ``gap_target``. On a numerical failure of that method, or when it cannot certify the
        gap, the LP is solved exactly by HiGHS (``stats["ipm_failure"]`` says why). Faster than HiGHS from a few hundred points on
        (figures in ``docs/design/lp.md``).

    Returns
    -------
    Candidate
        The normalised matrix; stats hold the LP sizes (``variables``, ``rows``, ``nnz``),
        ``theorem1`` (Theorem 1's bounds), solver statistics of the chosen LP, ``lambda`` and
        ``lambdas``.
    """
    n = space.n
    if r >= n:
        raise ParameterError(f"r must be < n = {n} (r >= n frees every entry: use 'optimal'), got {r}")
    lams = _lambdas(lam)
    D = space.distances
    if isinstance(replacement, str):
        free = nn_replacement(D, r)
    else:
        free = np.asarray(replacement(D, r), dtype=bool)
        if free.shape != (n, n):
            raise ParameterError(f"replacement must return an ({n}, {n}) boolean mask, got shape {free.shape}")
    e = epsilon / 2.0
    scale = e * space.median_distance
    row_block = gap is not None or (solver == "auto" and n >= ROW_BLOCK_MIN_N
                                    and scale <= ROW_BLOCK_MAX_SCALE)
    max_violated = (None if gap is not None or scale >= ROW_BLOCK_WIDE_SCALE
                    else ROW_BLOCK_MAX_VIOLATED)
    target = gap if gap is not None else EXACT_GAP
    highs_solver = "hipo" if solver == "auto" else solver
    if row_block:
        # constopt_ipm builds on this module's LP formulas, so it is imported here, not above
        from .constopt_ipm import RowBlockTooDense, solve_constopt_gap
    # set when round 0 of one lambda found the LP too dense for the row-block method: the
    # other lambdas (same free-free rows, nearly the same violations) go to HiGHS directly
    too_dense = None
    best = None
    runs = []
    limit = "none" if time_limit is None else f"{time_limit:g} s"
    failures = []
    for lam_i in lams:
        with explain_failures(f"ConstOPTMech (r = {r}, lambda = {lam_i:g})", n, epsilon,
                              on_timeout=f"a larger time_limit (now {limit} per LP), a smaller r, or "
                                         "fewer lambdas",
                              on_failure="another solver ('simplex' or 'ipm'), lazy=False, or a "
                                         "smaller r"):
            ipm_failure = None
            if row_block and too_dense is not None:
                ipm_failure = too_dense
            elif row_block:
                try:
                    L, lp_stats = solve_constopt_gap(
                        D, e, free, lam_i, target, time_limit=time_limit,
                        max_violated_per_point=max_violated)
                except RowBlockTooDense as exc:
                    ipm_failure = too_dense = str(exc)
                except LPError as exc:
                    if isinstance(exc, LPTimeout):
                        raise
                    ipm_failure = str(exc)
                else:
                    # the bound can be too weak to certify the gap (e^{-e D} underflowing at
                    # very large epsilon): then the exact solve keeps the promise
                    if not lp_stats["relative_gap"] <= target:
                        ipm_failure = (f"certified relative gap {lp_stats['relative_gap']:.3g} above "
                                       f"the target {target:g}")
            if not row_block or ipm_failure is not None:
                try:
                    sol, lp_stats, max_coefficient, left_out, (fu, fv) = _solve_limited(
                        D, e, free, lam_i, lazy=lazy, solver=highs_solver, time_limit=time_limit)
                except LPError as exc:
                    if isinstance(exc, LPTimeout):
                        raise
                    failures.append(f"lambda = {lam_i:g}: {exc}")
                    continue
                lp_stats = {**lp_stats, "lp_objective": sol.objective}
                # in log-probabilities (exact at any e * D), with the rows HiGHS met only to its
                # feasibility tolerance made to hold exactly: the certification then has nothing
                # to repair
                L = lipschitz_log_matrix(sol.x, D, e, free)
                if ipm_failure is not None:
                    lp_stats["ipm_failure"] = ipm_failure
            else:
                # every privacy row at e holds exactly (feasible_log_matrix): no row left out
                max_coefficient, left_out = None, 0
            H, log = _normalised(L, epsilon * D.max() > LOG_DOMAIN_C)
            if left_out:
                H, log, mix = private_candidate(H, D, epsilon, given_log=log, log=log)
        run = {"lam": lam_i, "L_q": mech_loss(H, D, SELECTION_Q, log=log), "loss": mech_loss(H, D, log=log),
               "max_coefficient": max_coefficient, "unresolved_rows": left_out, **lp_stats}
        runs.append(run)
        if best is None or run["L_q"] < best[2]["L_q"]:
            best = (H, log, run)
    if best is None:
        return exponential_floor(None, True, D, epsilon, {"lambdas": failures}, family="ConstOPTMech",
                                 reason="HiGHS found no optimum with any lambda and coefficient limit: "
                                        + "; ".join(failures))
    H, log, run = best
    stats = {k: v for k, v in run.items() if k not in ("L_q", "loss")}
    stats.update(**{"lambda": run["lam"], "lambdas": [{k: x[k] for k in ("lam", "L_q", "loss", "seconds")}
                                                      for x in runs],
                    "seconds_total": float(sum(x["seconds"] for x in runs)),
                    "free_entries": int(free.sum()), "theorem1": theorem1_counts(free), "lp_epsilon": e})
    del stats["lam"]
    if failures:
        stats["failed_lambdas"] = failures
    if run["unresolved_rows"]:
        return exponential_floor(H, log, D, epsilon, stats, family="ConstOPTMech")
    return Candidate(log_matrix=H, stats=stats) if log else Candidate(matrix=H, stats=stats)


def _normalised(L: np.ndarray, log: bool) -> tuple[np.ndarray, bool]:
    """Rows of the log-matrix ``L`` normalised (Algorithm 1), as log-probabilities when ``log``."""
    if not log:
        with np.errstate(under="ignore"):
            return stochastic_rows(np.exp(L)), False
    if not np.all(np.isfinite(L).any(axis=1)):
        raise SolverError(f"the LP solution has no positive entry in row "
                          f"{int(np.argmin(np.isfinite(L).any(axis=1)))}")
    return L - logsumexp(L, axis=1, keepdims=True), True


def _left_out(D: np.ndarray, e: float, free: np.ndarray, max_coefficient: float) -> int:
    """Privacy rows :func:`constopt_lp` leaves out at ``max_coefficient`` (as it selects them)."""
    cmax = float(np.log(max_coefficient))
    fu, fv = np.nonzero(free)
    log_hi, log_lo = _bound_factors(D, free, fu, fv, e)
    out = int(np.count_nonzero(np.isfinite(log_hi) & (log_hi > cmax)))
    out += int(np.count_nonzero(np.isfinite(log_lo) & (-log_lo > cmax)))
    for v in range(D.shape[0]):
        mem = np.nonzero(free[:, v])[0]
        out += int(np.count_nonzero(e * D[np.ix_(mem, mem)] > cmax))
    return out


def _solve_limited(D, e, free, lam, *, lazy, solver, time_limit):
    """The ConstOPTMech LP with rows up to each of ``MAX_COEFFICIENTS`` until HiGHS solves it.

    Returns ``(sol, stats, max_coefficient, left_out_rows, (fu, fv))``; re-raises the last
    :class:`~mdp.lp.LPError` when every limit fails.
    """
    t0 = time.perf_counter()
    errors = []
    def time_left() -> float | None:
        if time_limit is None:
            return None
        left = time_limit - (time.perf_counter() - t0)
        if left <= 0:
            raise LPTimeout(f"LP time limit of {time_limit:g} s reached after {len(errors)} attempts")
        return left

    for max_coefficient in MAX_COEFFICIENTS:
        time_left()
        c, A, lo, hi, (fu, fv), n_base = constopt_lp(D, e, free, lam, split=True,
                                                     max_coefficient=max_coefficient)
        # HiPO is the faster first round on a quiet machine, IPX the more tried one: a failed
        # HiPO solve is repeated by IPX at the same limit before the limit is lowered
        for method in (solver, "ipm") if solver == "hipo" else (solver,):
            try:
                sol, stats = solve_constopt_lp(c, A, lo, hi, n_base, lazy=lazy, solver=method,
                                               time_limit=time_left())
            except LPError as exc:
                if isinstance(exc, LPTimeout):
                    raise
                errors.append(f"rows up to {max_coefficient:g} ({method}): {exc}")
                continue
            if errors:
                stats["failed_attempts"] = list(errors)
            return sol, stats, max_coefficient, _left_out(D, e, free, max_coefficient), (fu, fv)
    raise LPError("; ".join(errors))
