r"""The worst-case-loss LP of OPTMech and SpannerMech (Imola et al. 2022, section 2.1).

.. math:: \min_{M, k} k \quad\text{s.t.}\quad
          \sum_w D_{uw} M_{uw} \le k,\ \sum_w M_{uw} = 1,\ M \ge 0,\
          M_{uw} \le e^{\epsilon_{uv} D_{uv}} M_{vw}\ \ \forall (u, v) \in P,\ \forall w

over a set ``P`` of ordered pairs: every non-redundant pair for OPTMech
(:mod:`mdp.families.optimal`), the edges of a spanner at ``eps / stretch`` for SpannerMech
(:mod:`mdp.families.spanner`). Two ways to solve it:

* :func:`solve_worst_case_lp` passes every row at once, in the LP's dual form (``n^2 + 1`` rows,
  one column per privacy row): HiGHS's interior point method factors a system whose size is the
  number of rows, so the dual is the cheap side, and ``M`` is read from the row duals.
* :func:`solve_worst_case_lp_lazy` starts from the rows through each column's own point
  (:func:`initial_triples`) and generates the violated rows (:func:`separate`) with
  :class:`mdp.lp.RowGeneration`.

Either way :func:`lagrangian_lower_bound` turns the dual values into a rigorous lower bound on the
optimum, whatever the solver's tolerances were, and :func:`max_privacy_violation` measures all
``n^2 (n - 1)`` rows on the returned matrix. Design notes and measured figures:
``docs/design/lp.md``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np
import scipy.sparse as sp

from ..errors import ParameterError
from ..lp.conic import solve_clarabel
from ..lp.highs import LPError, LPTimeout, SparseLP, runs_ipx
from ..lp.plan import BLOCKS, CLARABEL, Step
from ..lp.runner import run_steps
from ..lp.rowgen import Cuts, Phase, RowGeneration, RowGenerationPolicy
from ..lp.solver_entry import solver_entry
from ..validation import check_tuning
from .column_blocks import (
    BlockResources,
    BlocksStalled,
    fits_in_memory,
    solve_worst_case_blocks,
)

__all__ = ["primal_rows", "privacy_rows", "lagrangian_lower_bound", "max_privacy_violation",
           "pair_violation", "initial_triples", "unique_triples", "merge_rows", "separate", "privacy_row_generators", "lazy_policy", "gap_ipm_tolerance",
           "solve_worst_case_lp", "solve_worst_case_lp_lazy", "interior_chain_steps", "MAX_COEFFICIENTS",
           "LAZY_SOLVERS", "CLARABEL", "BLOCKS", "check_lazy_solver", "LazyRoundsTuning"]

#: Rows ``M_uw <= e^{eps D_uv} M_vw`` with a coefficient above ``C`` are left out of the LPs, for
#: ``C`` tried in this order by :func:`mdp.families.optimal.build_optimal`. A left-out row only
#: forbids ``M_vw < M_uw / C``: the restricted LP is a relaxation (its Lagrangian bound stays a
#: rigorous lower bound on the optimum), and the final check and :func:`mdp.privacy.verification.certify`
#: measure every row and lift such entries to their envelope (a change of at most ``1 / C``).
#: ``1e12`` stays below HiGHS's 1e20 infinity and is exact to ~1e-12; on very wide ranges of
#: ``e^{eps D}`` HiGHS can fail on these bounded LPs, and the smaller limits then solve them
#: (cases in ``docs/design/lp.md``).
MAX_COEFFICIENTS = (1e12, 1e7, 1e5)

#: HiGHS's smallest matrix value kept, for scaled privacy rows (its least allowed value): the
#: coefficients ``e^{-eps D_uv}`` of the rows within the first coefficient limit are at least it.
SMALL_MATRIX_VALUE = 1e-12
@dataclass(frozen=True)
class LazyRoundsTuning:
    """Tolerances and switches of the lazy worst-case-loss solve (:func:`lazy_policy`).

    Attributes
    ----------
    separation_tol : float, default 1e-9
        Absolute violation above which :func:`separate` adds a row in vertex rounds (the final
        matrix is re-checked and certified anyway; rows meet HiGHS's 1e-10 primal tolerance).
    polish_rtol : float, default 1e-8
        Relative Lagrangian gap above which the final row set is polished (one cold IPM +
        crossover solve).
    ipm_optimality_tol : float, default 1e-10
        Tightest IPM optimality tolerance of the interior rounds in ``gap=`` mode
        (:func:`gap_ipm_tolerance`; HiGHS's default is 1e-8).
    ipm_round_tol : float, default 1e-2
        IPM optimality tolerance (relative primal-dual gap) of the exact mode's interior rounds.
        These rounds only find rows: the crossover and vertex rounds that follow solve the final
        row set exactly. A loosely converged interior point is more central, violates more of
        the rows still missing and so brings them in earlier, which all but removes the warm
        simplex tail (figures in ``docs/design/lp.md``).
    ipm_polish_rtol : float, default 1e-7
        Relative Lagrangian gap accepted from the interior rounds; above it the run polishes.
    ipm_separation_tol : float, default 1e-8
        Separation tolerance of the interior rounds: an interior optimum meets its rows only to
        the IPM tolerances (~1e-9), chasing smaller violations adds rounds that change nothing.
    ipm_switch_fraction : float, default 0.05
        Interior rounds switch to crossover + warm dual simplex once a round adds fewer rows than
        this fraction of the LP (0: never).
    warm_pricing : str, default "devex"
        Dual simplex pricing of the warm rounds (:data:`mdp.lp.highs.SIMPLEX_PRICING`); HiGHS's
        default dual steepest edge first computes a weight for each of the thousands of rows a
        round adds (OPTMech Geolife n = 100: 189 s against 262-274 s, alternated).
    max_rounds : int, default 500
    full_ipm_tol : float, default 1e-10
        IPM optimality tolerance of the full (dualised) solve without crossover
        (:func:`solve_worst_case_lp`, ``crossover=False``).
    crossover_time_factor, crossover_min_seconds : float, default 2.0 and 20.0
        Time budget of the last resort of the full solve's chain (IPX with crossover) when a
        smaller coefficient limit remains to be tried (``last_resort=False``): the larger of
        ``crossover_min_seconds`` and this factor times the chain's time so far. Where every
        interior code failed, crossover faces the same badly scaled LP and can grind for many
        minutes (two scales of distance, eps x median 1, n = 100: over 600 s), while the next
        limit's better-scaled LP solves in seconds.
    stalled_keep, stalled_time_factor, stalled_min_seconds : float, default 1e-2, 0.25 and 60.0
        The full solve by column blocks (``crossover=False``): where the method stalls above
        its acceptance (:class:`~mdp.worst_case.column_blocks.BlocksStalled`) with a best iterate whose
        score is within ``stalled_keep``, HiGHS's chain gets at most the larger of
        ``stalled_min_seconds`` and ``stalled_time_factor`` times the blocks' seconds; past it,
        or when the chain fails, that iterate is returned (``stats["stalled_score"]``) for the
        caller to repair and certify. On the full LP from scratch the chain takes minutes from
        a few hundred points (two scales, n = 500: HiPO about 6 s per iteration on 911,000 rows,
        over 600 s), and at n = 500 it never finished within its budget (``docs/design/lp.md``).
    """

    def __post_init__(self) -> None:
        check_tuning(self)

    separation_tol: float = 1e-9
    polish_rtol: float = 1e-8
    ipm_optimality_tol: float = 1e-10
    ipm_round_tol: float = 1e-2
    ipm_polish_rtol: float = 1e-7
    ipm_separation_tol: float = 1e-8
    ipm_switch_fraction: float = 0.05
    warm_pricing: str = "devex"
    max_rounds: int = 500
    full_ipm_tol: float = 1e-10
    crossover_time_factor: float = 2.0
    crossover_min_seconds: float = 20.0
    stalled_keep: float = 1e-2
    stalled_time_factor: float = 0.25
    stalled_min_seconds: float = 60.0


#: Methods of the lazy solve: warm dual simplex rounds, or interior rounds first.
LAZY_SOLVERS = ("simplex", "ipm")


def check_lazy_solver(solver: str | None) -> None:
    """Raise :class:`~mdp.errors.ParameterError` unless ``solver`` is ``None`` or one of
    :data:`LAZY_SOLVERS` (the families' ``solver=`` with ``method="lazy"``)."""
    if solver is not None and solver not in LAZY_SOLVERS:
        raise ParameterError(f"solver must be 'simplex' or 'ipm' with method='lazy', got {solver!r}")


def primal_rows(D: np.ndarray, pu: np.ndarray, pv: np.ndarray, eps_pair: np.ndarray) -> sp.csr_matrix:
    """The worst-case-loss LP in ``A x >= b`` form, columns ``M`` (row-major) then ``k``.

    Row blocks: row sums (``= 1``), losses ``k - sum_w D_uw M_uw >= 0``, privacy
    ``e^{eps D_uv} M_vw - M_uw >= 0`` for every pair ``(pu[i], pv[i])`` (at ``eps_pair[i]``) and
    every column ``w``.
    """
    n = D.shape[0]
    N = n * n
    u = np.repeat(np.arange(n), n)
    cols = np.arange(N)
    R = sp.csr_matrix((np.ones(N), (u, cols)), shape=(n, N + 1))
    L = sp.csr_matrix((np.r_[-D.ravel(), np.ones(n)], (np.r_[u, np.arange(n)], np.r_[cols, np.full(n, N)])),
                      shape=(n, N + 1))
    P = len(pu)
    m = P * n
    w = np.tile(np.arange(n), P)
    gain = np.repeat(np.exp(eps_pair * D[pu, pv]), n)
    indptr = np.arange(0, 2 * m + 1, 2)
    indices = np.empty(2 * m, dtype=np.int64)
    indices[0::2] = np.repeat(pu, n) * n + w
    indices[1::2] = np.repeat(pv, n) * n + w
    data = np.empty(2 * m)
    data[0::2] = -1.0
    data[1::2] = gain
    Pm = sp.csr_matrix((data, indices, indptr), shape=(m, N + 1))
    Pm.sort_indices()
    return sp.vstack([R, L, Pm], format="csr")


def privacy_rows(D: np.ndarray, eps: float, u: np.ndarray, v: np.ndarray, w: np.ndarray, *,
                 scaled: bool = False) -> sp.csr_matrix:
    """Rows ``e^{eps D_uv} M_vw - M_uw >= 0`` for the triples ``(u, v, w)`` (columns as
    :func:`primal_rows`); ``scaled``: the same rows divided by ``e^{eps D_uv}``,
    ``M_vw - e^{-eps D_uv} M_uw >= 0``, whose coefficients are at most 1 and whose activity is the
    violation :func:`separate` measures (the column blocks' form)."""
    n = D.shape[0]
    m = len(u)
    indices = np.empty(2 * m, dtype=np.int64)
    indices[0::2] = u * n + w
    indices[1::2] = v * n + w
    data = np.empty(2 * m)
    if scaled:
        with np.errstate(under="ignore"):
            data[0::2] = -np.exp(-eps * D[u, v])
        data[1::2] = 1.0
    else:
        data[0::2] = -1.0
        data[1::2] = np.exp(eps * D[u, v])
    A = sp.csr_matrix((data, indices, np.arange(0, 2 * m + 1, 2)), shape=(m, n * n + 1))
    A.sort_indices()
    return A


def lagrangian_lower_bound(A: sp.csr_matrix, y: np.ndarray, n: int) -> float:
    r"""A rigorous lower bound on the LP optimum from any multipliers ``y``.

    For ``min k`` s.t. ``A x >= b`` (first ``n`` rows equalities with ``b = 1``, the rest ``b = 0``),
    multipliers ``y`` (free on the equalities, clipped to ``>= 0`` elsewhere, loss multipliers
    rescaled to sum to 1 so that ``k`` cancels) give, for every feasible ``x`` (every row of ``M``
    a probability vector), with ``r = c - A^T y`` the reduced costs of the entries ``M_uw``,

    .. math:: k \ge \sum_{u} y_u + \sum_u \min_w r_{uw},

    a bound that holds whatever the solver's tolerances were. (Minimising ``r^T M`` over
    row-stochastic ``M`` rather than over ``0 <= M <= 1``, whose minimum
    ``sum_{u,w} min(0, r_uw)`` sums the noise of all ``n^2`` reduced costs, makes the bound
    tighter for inexact multipliers and never looser.)
    """
    y = np.array(y, dtype=float)
    y[n:] = np.maximum(y[n:], 0.0)
    beta_sum = y[n:2 * n].sum()
    if beta_sum <= 0:
        return 0.0
    y[n:] /= beta_sum  # scaling every inequality multiplier keeps them valid and makes k cancel
    c = np.zeros(A.shape[1])
    c[-1] = 1.0
    red = c - A.T @ y
    return float(y[:n].sum() + red[:-1].reshape(n, n).min(axis=1).sum())


def max_privacy_violation(M: np.ndarray, distances: np.ndarray, epsilon: float,
                          max_coefficient: float | None = None) -> float:
    """``max_{u,v,w} e^{-eps D[u,v]} M[u,w] - M[v,w]`` over ALL ``n^2 (n-1)`` triples (vectorised).

    The scaled form is the amount by which ``M[v,w]`` must rise (what the envelope repair of
    :func:`mdp.privacy.verification.certify` moves it by); ``<= 0`` means every privacy row holds.
    With ``max_coefficient``, only the rows the LP held (``e^{eps D_uv} <= max_coefficient``)
    count: the others were left out on purpose and are decided by the envelope.
    """
    D = np.asarray(distances, dtype=float)
    with np.errstate(under="ignore"):
        K = np.exp(-epsilon * D)
    if max_coefficient is not None:
        K[epsilon * D > np.log(max_coefficient)] = 0.0
    n = M.shape[0]
    worst = -np.inf
    block = max(1, int(4e6 // (n * n)))
    for s in range(0, n, block):
        X = M[:, s:s + block]  # columns w in the block
        V = K[:, :, None] * X[:, None, :] - X[None, :, :]  # V[u, v, w]
        worst = max(worst, float(V.max()))
    return worst


def pair_violation(M: np.ndarray, D: np.ndarray, pu: np.ndarray, pv: np.ndarray,
                   eps_pair: np.ndarray) -> float:
    """Largest *relative* violation ``(M[u,w] - e^{eps_uv D_uv} M[v,w]) / M[u,w]`` of the given rows.

    Relative, because a 1e-13 entry beside an exact 0 is an infinite privacy ratio.
    """
    worst = 0.0
    for s in range(0, len(pu), 20000):
        u, v, e = pu[s:s + 20000], pv[s:s + 20000], eps_pair[s:s + 20000]
        Mu = M[u]
        excess = Mu - np.exp(e * D[u, v])[:, None] * M[v]
        worst = max(worst, float(np.max(np.where(Mu > 0, excess / np.where(Mu > 0, Mu, 1.0), 0.0))))
    return worst


def unique_triples(n: int, u, v, w):
    """The distinct rows ``(u, v, w)`` of ``n`` points, sorted by key ``(u n + v) n + w``."""
    key = np.unique((np.asarray(u, np.int64) * n + v) * n + w)
    return key // (n * n), (key // n) % n, key % n


def merge_rows(n: int, allowed: np.ndarray, *row_sets) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The union of row sets ``(u, v, w)``, without the rows of pairs not ``allowed``."""
    u, v, w = (np.concatenate([np.asarray(r[i], dtype=np.int64) for r in row_sets])
               for i in range(3))
    ok = allowed[u, v]
    return unique_triples(n, u[ok], v[ok], w[ok])


def initial_triples(distances: np.ndarray, allowed: np.ndarray,
                    knn: int = 2) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""The starting row set of the lazy solve: rows through each column's own point, and near pairs.

    For column ``w``: every allowed row ``(u, w, w)`` and ``(w, u, w)`` (on the exact optima of
    text spaces most binding rows are ``M_uw >= e^{-eps D_uw} M_ww``, an exponential profile
    around the diagonal), plus every allowed row of the ``knn`` nearest neighbour pairs (both
    orders) in every column, which keeps low-dimensional (map) spaces from chaining mass through
    unconstrained pairs in the first rounds.
    """
    D = np.asarray(distances, dtype=float)
    n = D.shape[0]
    uu, ww = np.nonzero(~np.eye(n, dtype=bool))
    iu, iv, iw = np.r_[uu, ww], np.r_[ww, uu], np.r_[ww, ww]
    if knn > 0:
        nb = np.argsort(D + np.diag(np.full(n, -1.0)), axis=1, kind="stable")[:, 1:knn + 1]
        a = np.repeat(np.arange(n), nb.shape[1])
        b = nb.ravel()
        a, b = np.r_[a, b], np.r_[b, a]
        iu = np.r_[iu, np.repeat(a, n)]
        iv = np.r_[iv, np.repeat(b, n)]
        iw = np.r_[iw, np.tile(np.arange(n), len(a))]
    ok = allowed[iu, iv]
    return unique_triples(n, iu[ok], iv[ok], iw[ok])


def separate(M: np.ndarray, distances: np.ndarray, eps: float, allowed: np.ndarray,
             tol: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    r"""Violated privacy rows of ``M``: for each entry, its most violated row in either role.

    Evaluates the scaled violation ``V[u, v, w] = e^{-eps D_uv} M_uw - M_vw`` (the amount by which
    ``M_vw`` must rise to satisfy the row, which is what the envelope repair of
    :func:`mdp.privacy.verification.certify` moves it by) for every allowed ordered pair and every column
    (vectorised over column blocks, ``n^3`` values) and returns, for each entry ``(u, w)`` with a
    violation above ``tol``, the worst ``v`` (the row bounding ``M_uw`` from above) and, for each
    ``(v, w)``, the worst ``u`` (the row bounding ``M_vw`` from below): at most ``2 n^2`` rows per
    round, unique.

    Returns
    -------
    u, v, w : int arrays of the rows to add; worst : the largest violation (``-inf`` if none).
    """
    D = np.asarray(distances, dtype=float)
    n = M.shape[0]
    K = np.exp(-eps * D)
    mask = ~allowed[:, :, None]
    out_u, out_v, out_w = [], [], []
    worst = -np.inf
    block = max(1, int(4e6 // (n * n)))
    for s in range(0, n, block):
        X = M[:, s:s + block]
        V = K[:, :, None] * X[:, None, :] - X[None, :, :]  # V[u, v, w]
        np.copyto(V, -np.inf, where=mask)
        worst = max(worst, float(V.max()))
        a = V.argmax(axis=1)  # worst v for each (u, w)
        hit = np.take_along_axis(V, a[:, None, :], 1)[:, 0, :] > tol
        uu, ww = np.nonzero(hit)
        out_u.append(uu), out_v.append(a[uu, ww]), out_w.append(ww + s)
        b = V.argmax(axis=0)  # worst u for each (v, w)
        hit = np.take_along_axis(V, b[None, :, :], 0)[0] > tol
        vv, ww = np.nonzero(hit)
        out_u.append(b[vv, ww]), out_v.append(vv), out_w.append(ww + s)
    u, v, w = unique_triples(n, np.concatenate(out_u), np.concatenate(out_v), np.concatenate(out_w))
    return u, v, w, worst


def privacy_row_generators(D: np.ndarray, eps: float, allowed: np.ndarray, *,
                           scaled: bool = False):
    """The separation and row callbacks of :class:`~mdp.lp.RowGeneration` over the privacy rows
    ``(u, v, w)`` (keys ``(u n + v) n + w``) of the allowed pairs, columns as :func:`primal_rows`
    (``M`` row-major first): :func:`separate` on the solution's ``M``, and :func:`privacy_rows`
    with their bounds ``[0, inf)``."""
    n = D.shape[0]
    N = n * n

    def cuts(sol, tol_now: float) -> Cuts:
        M = np.maximum(sol.x[:N].reshape(n, n), 0.0)
        su, sv, sw, worst = separate(M, D, eps, allowed, tol_now)
        return Cuts(keys=(su * n + sv) * n + sw, worst=worst)

    def rows(keys):
        su, sv, sw = keys // N, (keys // n) % n, keys % n
        return (privacy_rows(D, eps, su, sv, sw, scaled=scaled), np.zeros(len(keys)),
                np.full(len(keys), np.inf))

    return cuts, rows


def lazy_policy(solver: str = "simplex", *, tol: float | None = None,
                max_rounds: int | None = None, gap: float | None = None,
                polish_tol: float | None = None,
                tuning: LazyRoundsTuning = LazyRoundsTuning()) -> RowGenerationPolicy:
    """The :class:`~mdp.lp.RowGenerationPolicy` of the lazy worst-case-loss solve.

    ``solver="simplex"``: warm dual simplex rounds from the first solve on; ``"ipm"``: interior
    rounds first (:class:`~mdp.lp.Phase`). Tolerances are those of ``tuning``
    (:class:`LazyRoundsTuning`); ``tol`` and ``max_rounds`` default to its ``separation_tol`` and
    ``max_rounds``; ``polish_tol``: :attr:`~mdp.lp.RowGenerationPolicy.polish_tol`.

    Exact mode (``gap=None``): interior rounds at the loose ``tuning.ipm_round_tol``, which only find
    rows; the crossover and warm simplex rounds then solve the final row set exactly.

    With ``gap`` (certified near-optimal mode) and ``"ipm"``, every round stays interior (no
    switch to crossover and simplex, which only buy the last digits): the same loose rounds
    first, then (``Phase.REFINE``, at the same switch) rounds at the IPM optimality tolerance
    :func:`gap_ipm_tolerance`, since the returned matrix is repaired from a round's point, which
    must then be near the restricted optimum. The Lagrangian bound holds for any multipliers,
    and the matrix is certified by the caller.
    """
    t = tuning
    return RowGenerationPolicy(start=Phase.INTERIOR if solver == "ipm" else Phase.INITIAL,
                               tol=t.separation_tol if tol is None else tol,
                               interior_tol=t.ipm_separation_tol,
                               interior_ipm_tolerance=t.ipm_round_tol,
                               switch_fraction=t.ipm_switch_fraction,
                               switch_to=Phase.CROSSOVER if gap is None else Phase.REFINE,
                               refine_ipm_tolerance=(t.ipm_optimality_tol if gap is None
                                                     else gap_ipm_tolerance(gap, tuning=t)),
                               gap_rtol=t.polish_rtol,
                               interior_gap_rtol=t.ipm_polish_rtol, warm_pricing=t.warm_pricing,
                               max_rounds=t.max_rounds if max_rounds is None else max_rounds,
                               polish_tol=polish_tol)


def gap_ipm_tolerance(gap: float, *, tuning: LazyRoundsTuning = LazyRoundsTuning()) -> float:
    """IPM optimality tolerance of the interior rounds in near-optimal mode: ``gap / 1e4``.

    Clipped to ``[tuning.ipm_optimality_tol, 1e-7]``: the Lagrangian bound of an IPM solution is within
    about its tolerance (relative) of the restricted optimum, which then costs at most ``1e-4`` of
    the ``gap`` budget.
    """
    return float(min(1e-7, max(tuning.ipm_optimality_tol, gap * 1e-4)))


@solver_entry
def solve_worst_case_lp_lazy(distances: np.ndarray, allowed: np.ndarray, eps: float, *,
                             time_limit: float | None = None, solver: str = "simplex", knn: int = 2,
                             tol: float | None = None, max_rounds: int | None = None,
                             max_coefficient: float = MAX_COEFFICIENTS[0],
                             on_round: Callable | None = None,
                             stop: Callable | None = None,
                             gap: float | None = None,
                             privacy_distances: np.ndarray | None = None,
                             initial_rows: tuple | None = None,
                             extra_rows: tuple | None = None,
                             scaled_rows: bool = False,
                             polish_tol: float | None = None,
                             tuning: LazyRoundsTuning = LazyRoundsTuning()) -> tuple[np.ndarray, dict]:
    r"""Worst-case-loss LP with privacy rows on the ``allowed`` pairs, by lazy row generation.

    Solves the primal LP (variables ``M``, ``k``) restricted to :func:`initial_triples`, then
    repeatedly adds the rows returned by :func:`separate` for the current solution and re-solves
    (:class:`~mdp.lp.RowGeneration` with :func:`lazy_policy`), until no allowed row is violated
    by more than ``tol``. The restricted LP is a relaxation of the full one, so its Lagrangian
    bound (:func:`lagrangian_lower_bound` with zero multipliers on the rows never added) is a
    rigorous lower bound on the full optimum.

    Parameters
    ----------
    distances : ndarray (n, n)
    allowed : bool ndarray (n, n)
        Ordered pairs whose rows ``M_uw <= e^{eps D_uv} M_vw`` are imposed in every column.
    eps : float
    time_limit : float or None
        Wall-clock seconds for the whole loop (solves and separation); :class:`mdp.lp.LPTimeout`.
    solver : str
        ``"simplex"``: every round by HiGHS's dual simplex, warm-started from the previous basis.
        ``"ipm"``: interior point rounds *without crossover* (loose: ``tuning.ipm_round_tol``,
        rows separated at ``tuning.ipm_separation_tol``); the interior point is accepted when its
        Lagrangian gap is within ``tuning.ipm_polish_rtol``, otherwise one IPM + crossover solve
        yields a vertex and warm dual simplex rounds finish. The same switch happens as soon as
        a round adds fewer than ``tuning.ipm_switch_fraction`` of the rows (the tail rounds). Another HiGHS
        method name: the first solve by it, then warm dual simplex rounds. Either way the
        returned ``M`` is checked on all rows and the gap is a rigorous bound.
    knn : int
        Near-neighbour pairs in the initial rows.
    tol : float or None
        Absolute violation below which a row counts as satisfied (``None``:
        ``tuning.separation_tol``).
    max_rounds : int or None
        ``None``: ``tuning.max_rounds``.
    max_coefficient : float
        Rows whose coefficient ``e^{eps D_uv}`` exceeds it are left out (see ``MAX_COEFFICIENTS``).
    on_round : callable or None
        Progress callback (:class:`~mdp.lp.RowGeneration`).
    stop : callable ``(M, bound) -> (bool, float)`` or None
        Certified near-optimal mode: after a round with violated rows, ``M`` (the round's matrix)
        and the Lagrangian bound are passed; it returns whether to end the loop with that ``M``
        and the loss of the private matrix repaired from it (reported as the round's certified
        objective).
    gap : float or None
        The relative gap ``stop`` tests (only the rounds' policy uses it:
        :func:`lazy_policy`).
    privacy_distances : ndarray (n, n) or None
        Distances ``P`` of the privacy rows, ``M_uw <= e^{eps P_uv} M_vw`` (starting rows,
        separation and coefficient limit too); ``None``: ``distances``, which always give the
        loss rows. SpannerMech passes its spanner's shortest-path distances with every pair
        allowed: the same feasible set as its edge rows alone, with a chain of edge rows replaced
        by one row.
    initial_rows : ``(u, v, w)`` int arrays or None
        The starting rows (those of disallowed pairs dropped); ``None``: :func:`initial_triples`.
    extra_rows : ``(u, v, w)`` int arrays or None
        Rows added to the starting rows (those of disallowed pairs dropped): a sweep start, the
        rows binding a neighbouring epsilon's optimum (:class:`mdp.worst_case.sweep_start.Sweep`).
    scaled_rows : bool, default False
        Pass the privacy rows to HiGHS in their scaled form (:func:`privacy_rows`), coefficients
        at most 1, instead of ``e^{eps D_uv}`` up to ``max_coefficient``.
    polish_tol : float or None
        Separation tolerance from the polish on (:attr:`mdp.lp.RowGenerationPolicy.polish_tol`):
        with scaled rows, a violation is the amount the repair lifts an entry by.
    tuning : LazyRoundsTuning
        Tolerances and switches of the rounds (:func:`lazy_policy`).

    Returns
    -------
    M : ndarray (n, n) (negatives clipped, not renormalised)
    stats : dict with ``rounds``, ``phases``, ``polished``, ``round_trace``, ``rows`` (rows of the
        final restricted LP), ``nnz``, ``full_rows`` (rows of the unrestricted LP), solver
        statistics, ``lp_objective``, ``lower_bound`` and ``final_violation`` (largest
        allowed-row violation).
    """
    t0 = time.perf_counter()
    loss_distances = np.asarray(distances, dtype=float)
    D = loss_distances if privacy_distances is None else np.asarray(privacy_distances, dtype=float)
    n = D.shape[0]
    N = n * n
    allowed = allowed & (eps * D <= np.log(max_coefficient))
    base = primal_rows(loss_distances, np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0))
    start = initial_triples(D, allowed, knn) if initial_rows is None else initial_rows
    iu, iv, iw = merge_rows(n, allowed, start, *(() if extra_rows is None else (extra_rows,)))
    A = sp.vstack([base, privacy_rows(D, eps, iu, iv, iw, scaled=scaled_rows)], format="csr")
    m = A.shape[0]
    c = np.zeros(N + 1)
    c[-1] = 1.0
    lp = SparseLP(c, A, row_lower=np.r_[np.ones(n), np.zeros(m - n)],
                  row_upper=np.r_[np.ones(n), np.full(m - n, np.inf)],
                  col_lower=np.r_[np.zeros(N), -np.inf], col_upper=np.r_[np.ones(N), np.inf],
                  solver=solver, time_limit=time_limit, primal_tolerance=1e-10, dual_tolerance=1e-10,
                  # scaled rows keep coefficients down to 1 / max_coefficient, which HiGHS would
                  # otherwise drop as below its small_matrix_value (1e-9): a dropped one turns
                  # M_vw >= K M_uw into M_vw >= 0 and leaves a violation of up to K for the repair
                  options={"small_matrix_value": SMALL_MATRIX_VALUE} if scaled_rows else None)

    cuts, rows = privacy_row_generators(D, eps, allowed, scaled=scaled_rows)
    loop = RowGeneration(lp, A, cuts, rows, key_space=n ** 3, initial_keys=(iu * n + iv) * n + iw,
                         bound=lambda A_all, sol: lagrangian_lower_bound(A_all, sol.row_dual, n),
                         policy=lazy_policy(solver, tol=tol, max_rounds=max_rounds, gap=gap,
                                            polish_tol=polish_tol, tuning=tuning),
                         time_limit=time_limit, started=t0, on_round=on_round,
                         stop=None if stop is None else
                         (lambda sol, b: stop(np.maximum(sol.x[:N].reshape(n, n), 0.0), b)))
    out = loop.run()
    sol = out.solution
    M = np.maximum(sol.x[:N].reshape(n, n), 0.0)
    if solver != "ipm":
        how = "(warm dual simplex)"
    elif out.last_phase in (Phase.INTERIOR, Phase.REFINE):
        how = "(IPM rounds, no crossover)"
    else:
        how = "(IPM rounds, then crossover + warm dual simplex)"
    stats = dict(lp.stats)
    stats.update(rounds=out.rounds, phases=list(out.phases), polished=out.polished,
                 round_trace=out.trace, full_rows=2 * n + int(allowed.sum()) * n,
                 privacy_rows=lp.num_row - 2 * n,
                 formulation="primal worst-case-loss LP, lazy row generation " + how,
                 lp_objective=sol.objective, lower_bound=out.bound, final_violation=out.worst,
                 wall_seconds=out.wall_seconds)
    return M, stats


@solver_entry
def solve_worst_case_lp(distances: np.ndarray, pu: np.ndarray, pv: np.ndarray, eps_pair,
                        *, time_limit: float | None = None, solver: str = "ipm",
                        max_coefficient: float = MAX_COEFFICIENTS[0],
                        crossover: bool = True,
                        tuning: LazyRoundsTuning = LazyRoundsTuning(),
                        resources: BlockResources = BlockResources(),
                        device: str | None = None,
                        last_resort: bool = True,
                        blocks_fallback: bool = True) -> tuple[np.ndarray, dict]:
    """Solve ``min max_u sum_w D_uw M_uw`` over stochastic ``M`` with privacy rows on the given pairs.

    Every row at once, dualised (module docstring).

    Parameters
    ----------
    distances : ndarray (n, n)
    pu, pv : int arrays
        Ordered pairs whose privacy rows ``M[u,w] <= e^{eps_pair D[u,v]} M[v,w]`` are imposed for
        every column ``w``.
    eps_pair : float or array
        Privacy level per pair.
    time_limit : float or None
    solver : str
        HiGHS method for the dualised LP (see :class:`mdp.lp.SparseLP`), ``"clarabel"``
        (:data:`CLARABEL`): Clarabel alone on the primal LP (:func:`mdp.lp.conic.solve_clarabel`),
        or ``"blocks"``: the column-block interior point method
        (:func:`mdp.worst_case.column_blocks.solve_worst_case_blocks`); both return an interior point the
        caller repairs as it repairs HiPO's. Clarabel's failure raises, and so does the
        column-block method's with ``crossover=True``; with ``False`` HiPO's chain (below) takes
        over; after a stall with a usable iterate, within a budget (``tuning.stalled_keep``,
        ``stalled_time_factor``, ``stalled_min_seconds``), past which that iterate is returned
        with ``stats["stalled_score"]``.
    max_coefficient : float
        Rows whose coefficient ``e^{eps D_uv}`` exceeds it are left out (see ``MAX_COEFFICIENTS``).
    tuning : LazyRoundsTuning
        ``full_ipm_tol`` is the IPM tolerance without crossover.
    resources, device
        Of the column-block method (:func:`mdp.worst_case.column_blocks.solve_worst_case_blocks`).
    crossover : bool, default True
        ``False`` (interior point solvers): the interior optimum at IPM optimality tolerance
        ``tuning.full_ipm_tol`` is returned as it is, without crossover nor the simplex re-solve; its rows
        hold to about that tolerance and the caller repairs it
        (:func:`mdp.lp.output.private_candidate`). When that solve fails, IPX without crossover
        tries next, then Clarabel on the primal LP (:func:`mdp.lp.conic.solve_clarabel`, its
        point repaired in the same way), then IPX with crossover (then the result is a vertex, as
        with ``True``).
    last_resort : bool, keyword-only, default True
        Whether this coefficient limit is the caller's last. ``False``: the chain's final IPX
        with crossover gets a budget (``tuning.crossover_time_factor``,
        ``tuning.crossover_min_seconds``) and an :class:`~mdp.errors.LPError` past it, so that the
        caller tries its next, smaller limit instead of waiting on a grinding crossover.
    blocks_fallback : bool, keyword-only, default True
        Whether the interior chain (``crossover=False``) tries the column-block method after
        HiGHS's interior codes fail (where its blocks fit in memory). It scales each row, so
        fewer rows do not help it: a caller retrying at a smaller limit after it failed passes
        ``False``.

    Returns
    -------
    M : ndarray (n, n), row-stochastic up to solver tolerance (negatives clipped).
    stats : dict
        LP sizes of the primal LP (``variables``, ``rows``, ``nnz``), solver, iterations,
        seconds, ``lp_objective`` and ``lower_bound`` (:func:`lagrangian_lower_bound`); after a
        failed solve also ``failed_solves`` (method: error) and ``final_method``.
    """
    D = np.asarray(distances, dtype=float)
    eps_pair = np.broadcast_to(np.asarray(eps_pair, dtype=float), pu.shape)
    keep = eps_pair * D[pu, pv] <= np.log(max_coefficient)
    pu, pv, eps_pair = pu[keep], pv[keep], eps_pair[keep]
    failures = []
    spent = 0.0                      # seconds of a failed column-block solve before the chain
    t_chain = time.perf_counter()
    tried_blocks = solver == BLOCKS or not blocks_fallback
    standing = None                  # a stalled column-block iterate, while HiGHS's chain runs
    if solver == BLOCKS:
        t_blocks = time.perf_counter()
        try:
            return solve_worst_case_blocks(D, pu, pv, eps_pair, time_limit=time_limit,
                                           resources=resources, device=device)
        except LPTimeout:
            raise
        except LPError as exc:
            if crossover:
                raise
            # the default order at large n: HiPO's chain goes on with the time left
            failures.append(f"{BLOCKS}: {exc}")
            solver = "hipo"
            spent = time.perf_counter() - t_blocks
            if isinstance(exc, BlocksStalled) and exc.score <= tuning.stalled_keep:
                standing = exc
            if time_limit is not None:
                time_limit -= spent
                if time_limit <= 0:
                    raise LPTimeout("LP time limit reached after the column-block method "
                                    "failed") from exc
    chain = partial(_interior_chain, D, pu, pv, eps_pair, solver=solver, crossover=crossover,
                    tuning=tuning, resources=resources, device=device, last_resort=last_resort,
                    tried_blocks=tried_blocks, failures=failures, spent=spent, t_chain=t_chain)
    if standing is None:
        return chain(time_limit=time_limit)
    # HiGHS's chain on the full LP, from scratch, within a budget; past it the stalled iterate
    # stands (the caller repairs and certifies it as any interior point). Two scales, n = 500,
    # eps x median 1 (SpannerMech): the blocks stall at 2.5e-4 after 35 s, HiPO on 911,000
    # rows takes about 6 s per iteration and ran past 600 s
    budget = max(tuning.stalled_min_seconds, tuning.stalled_time_factor * spent)
    capped = time_limit is None or budget < time_limit
    try:
        return chain(time_limit=budget if capped else time_limit)
    except LPError as exc:
        if isinstance(exc, LPTimeout) and not capped:
            raise
        why = (f"stopped after its budget of {budget:.0f} s" if isinstance(exc, LPTimeout)
               else f"failed: {exc}")
        stats = dict(standing.stats)
        stats.update(failed_solves=failures + [f"HiGHS's chain {why}"],
                     final_method=f"{BLOCKS}, its best iterate (stalled at {standing.score:.1e})",
                     stalled_score=standing.score, seconds=time.perf_counter() - t_chain)
        return standing.matrix, stats


def interior_chain_steps(solver: str, *, crossover: bool, blocks: bool,
                         last_resort: bool = True,
                         max_coefficient: float = np.inf) -> tuple[Step, ...]:
    """The solves of the dualised full LP (:func:`solve_worst_case_lp`), in the order they are
    tried until one returns: what the plans print and what :func:`mdp.lp.runner.run_steps` runs.

    * ``crossover``: HiGHS's ``solver`` with crossover alone (a vertex; its failure raises).
      ``solver="clarabel"``: Clarabel alone.
    * otherwise HiGHS's ``solver`` without crossover, and where a solve fails the next of:
      IPX without crossover (unless ``solver`` runs IPX already: HiPO can stall short of the
      tight tolerance at large ``eps * D``, where IPX from scratch solves the LP); the
      column-block method (``blocks``: where its inverses fit and it has not run before; it
      scales each row to a largest coefficient of 1, where HiGHS's interior codes fail on
      ``e^{eps D}`` spanning many orders); Clarabel on the primal LP (its regularised LDL
      converges where both interior codes stop with "no progress", as on near-uniform LPs); IPX
      with crossover, the dependable last resort, ``budgeted`` unless ``last_resort`` (so that
      the caller tries its next, smaller coefficient limit instead of waiting on a grinding
      crossover).

    Every interior point is repaired by the caller (:func:`mdp.lp.output.private_candidate`).
    """
    c = max_coefficient
    if solver == CLARABEL:
        return (Step("Clarabel on the primal LP", "asked for", CLARABEL, c),)
    if crossover:
        return (Step(f"HiGHS {solver} with crossover", "first", solver, c, crossover=True),)
    steps = [Step(f"HiGHS {solver} without crossover", "first", solver, c)]
    if not runs_ipx(solver):
        # HiPO can stall short of the tight tolerance at large eps * D (Geolife cells at eps 4
        # per km: relative gap 1.7e-6 for 20 iterations, then "Solve error"); IPX from scratch,
        # also without crossover, solves such LPs
        steps.append(Step("IPX without crossover", f"{solver} fails", "ipx", c))
    if blocks:
        # both interior codes fail when e^{eps D} spans many orders (two scales of distance, eps
        # x median 1, n = 100: both after 18 s); the column blocks solve it in about 2 s
        steps.append(Step("the column-block method", "the solve before fails (once, in the "
                          "first step: it scales each row, so fewer rows do not help it)",
                          BLOCKS, c))
    # both interior codes can stop with "no progress" far from the optimum (Geolife cells at eps
    # 0.05 per km, coefficients e^{eps D} between 1 and 3), where Clarabel converges
    steps.append(Step("Clarabel on the primal LP", "the solve before fails", CLARABEL, c))
    steps.append(Step("IPX with crossover", "Clarabel fails", "ipx", c, crossover=True,
                      budgeted=not last_resort))
    return tuple(steps)


def _interior_chain(D: np.ndarray, pu: np.ndarray, pv: np.ndarray, eps_pair: np.ndarray, *,
                    solver: str, time_limit: float | None, crossover: bool,
                    tuning: LazyRoundsTuning, resources: BlockResources, device: str | None,
                    last_resort: bool, tried_blocks: bool, failures: list, spent: float,
                    t_chain: float) -> tuple[np.ndarray, dict]:
    """The steps of :func:`interior_chain_steps`, run by :func:`mdp.lp.runner.run_steps` on the
    dualised LP (:func:`solve_worst_case_lp`); ``failures`` collects each failed solve, ``spent``
    and ``t_chain`` are the seconds and the start of the column-block solve before it."""
    n = D.shape[0]
    A = primal_rows(D, pu, pv, eps_pair)
    N = n * n
    m = A.shape[0]
    b = np.r_[np.ones(n), np.zeros(m - n)]
    cost = np.zeros(N + 1)
    cost[-1] = 1.0
    sizes = dict(variables=N + 1, rows=m, nnz=int(A.nnz), privacy_rows=m - 2 * n)
    steps = interior_chain_steps(solver, crossover=crossover, last_resort=last_resort,
                                 blocks=not tried_blocks and fits_in_memory(n, resources))
    lp = None
    if solver != CLARABEL:
        # Dual of  min k  s.t. A x >= b:  max b^T y  s.t. (A^T y)_j <= c_j for M >= 0, = 1 for
        # free k, y free on the n equality rows and >= 0 elsewhere. HiGHS minimises: cost -b.
        lp = SparseLP(-b, A.T.tocsr(), row_lower=np.r_[np.full(N, -np.inf), 1.0],
                      row_upper=np.r_[np.zeros(N), 1.0],
                      col_lower=np.r_[np.full(n, -np.inf), np.zeros(m - n)],
                      solver=solver, crossover=crossover,
                      ipm_tolerance=None if crossover else tuning.full_ipm_tol,
                      # M is read from the duals, so the dual tolerance bounds its privacy
                      # violations
                      dual_tolerance=1e-9 if crossover else 1e-10,
                      primal_tolerance=1e-9 if crossover else 1e-10)

    def highs(step: Step, left: float | None):
        if step is not steps[0]:
            lp.set_solver(step.solver)
            if step.crossover:
                lp.set_crossover(True)
                lp.set_tolerances(primal=1e-9, dual=1e-9, ipm=1e-8)
            lp.cold_start()
        # the LP's limit counts all its solves: this one gets the chain's time left
        lp.set_time_limit(None if left is None else lp.stats["seconds"] + left)
        if not step.budgeted:
            return lp.solve()
        budget = max(tuning.crossover_min_seconds,
                     tuning.crossover_time_factor * (time.perf_counter() - t_chain))
        with lp.time_budget(budget, f"{step.label} did not finish within its budget of "
                                    f"{budget:.0f} s after {'; '.join(failures)}; a smaller "
                                    "coefficient limit is tried next"):
            return lp.solve()

    def solve(step: Step, left: float | None):
        # ``failures`` as they happen (the budgeted step's message names them); the last step's
        # error is raised and reports itself
        try:
            return run_step(step, left)
        except LPTimeout:
            raise
        except LPError as exc:
            if step is not steps[-1]:
                failures.append(f"{step.solver}: {exc}")
            raise

    def run_step(step: Step, left: float | None):
        if step.solver == BLOCKS:
            return solve_worst_case_blocks(D, pu, pv, eps_pair, time_limit=left,
                                           resources=resources, device=device)
        if step.solver == CLARABEL:
            # the primal LP (Clarabel's point is M itself; its multipliers give the bound)
            return solve_clarabel(cost, A, row_lower=b,
                                  row_upper=np.r_[np.ones(n), np.full(m - n, np.inf)],
                                  col_lower=np.r_[np.zeros(N), -np.inf], time_limit=left)
        return highs(step, left)

    run = run_steps(steps, solve, time_limit=time_limit)
    failed = [r for r in run.records if r.error is not None]
    if not run.results:
        raise failed[-1].error          # every step failed (a timeout raised already)
    step, result = run.last.step, run.last.result
    # seconds of the failed solves outside HiGHS (column blocks, Clarabel)
    away = sum(r.attempt.seconds for r in failed if r.step.solver in (BLOCKS, CLARABEL))
    highs_seconds = 0.0 if lp is None else lp.stats["seconds"]
    if step.solver == BLOCKS:
        M, stats = result
        stats.update(failed_solves=failures, final_method=BLOCKS,
                     seconds=stats["seconds"] + highs_seconds + spent)
        return M, stats
    if step.solver == CLARABEL:
        conic, conic_stats = result
        if lp is None:                                  # Clarabel asked for by name
            return _clarabel_result(conic, conic_stats, A, n, sizes), conic_stats
        # the HiGHS solves' counters stay, their time and iterations add to Clarabel's
        stats = {k: v for k, v in lp.stats.items() if k not in ("variables", "rows", "nnz")}
        stats.update(conic_stats, seconds=conic_stats["seconds"] + highs_seconds + spent + away,
                     ipm_iterations=conic_stats["ipm_iterations"] + lp.stats["ipm_iterations"],
                     failed_solves=failures, final_method=CLARABEL)
        return _clarabel_result(conic, stats, A, n, sizes), stats
    sol = result
    # The primal M is (minus) the dual value of the dual's row j (HiGHS's sign convention for <=).
    M = np.maximum(-sol.row_dual[:N].reshape(n, n), 0.0)
    if (step.crossover and step.solver in ("ipm", "ipx", "hipo")
            and pair_violation(M, D, pu, pv, eps_pair) > 1e-10):
        # crossover's vertex can carry ~1e-8 violations (tolerances hold in the scaled model),
        # which the certification repair would fix at a ~1e-6 loss cost; a simplex re-solve
        # returns exact basic duals instead (slower, only run when needed)
        lp.set_solver("simplex")
        lp.set_tolerances(dual=1e-10)
        lp.cold_start()
        sol = lp.solve()
        M = np.maximum(-sol.row_dual[:N].reshape(n, n), 0.0)
    stats = {k: v for k, v in lp.stats.items() if k not in ("variables", "rows", "nnz")}
    stats.update(sizes, formulation="dual of the worst-case-loss LP", lp_objective=-sol.objective,
                 lower_bound=lagrangian_lower_bound(A, sol.x, n),
                 seconds=lp.stats["seconds"] + spent)
    if failures:
        stats.update(failed_solves=failures,
                     final_method=f"{step.solver} "
                                  f"{'with' if step.crossover else 'without'} crossover")
    return M, stats


def _clarabel_result(conic, stats: dict, A: sp.csr_matrix, n: int, sizes: dict) -> np.ndarray:
    """``M`` of a Clarabel solve of the primal LP; its sizes, objective and bound go into ``stats``."""
    stats.update(sizes, formulation="worst-case-loss LP (primal, Clarabel)", lp_objective=conic.objective,
                 lower_bound=lagrangian_lower_bound(A, conic.row_dual, n))
    return np.maximum(conic.x[:n * n].reshape(n, n), 0.0)
