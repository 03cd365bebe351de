r"""OPTMech: the exact optimum of the worst-case-loss LP (seed imola2022, section 2.1).

.. math:: \mathcal{P}_{\mathrm{OPTMECH}}(\epsilon):\ \min_{M, k} k \quad\text{s.t.}\quad
          \sum_w D_{uw} M_{uw} \le k,\ \sum_w M_{uw} = 1,\ M \ge 0,\
          M_{uw} \le e^{\epsilon D_{uv}} M_{vw}\ \ \forall u \ne v, w

How it is solved here (and why)
-------------------------------
* **Exact redundancy removal.** A privacy row ``(u, v, w)`` is implied by ``(u, z, w)`` and
  ``(z, v, w)`` whenever ``D[u, z] + D[z, v] == D[u, v]`` (``e^{eps D_uz} e^{eps D_zv} = e^{eps D_uv}``),
  so such pairs are dropped for every column ``w`` (collinear grid cells along meridians; graph
  metrics keep only geodesic-free pairs). The test uses a relative tolerance ``redundancy_rtol``
  (default 1e-12, far below the certification tolerance); the final check below covers the
  dropped rows anyway.
* **Lazy row generation (default, ``method="lazy"``).** Start from the rows through each column's
  own point (about 98% of the binding rows of the exact optimum are
  ``M[u,w] >= e^{-eps D[u,w]} M[w,w]``), plus 2-nearest-neighbour pairs on map spaces; each round
  separates all ``n^2 (n - 1)`` rows in vectorised numpy and adds the worst violated row per
  entry, then re-solves (warm dual simplex on text and small spaces; interior point without
  crossover on map spaces with n >= 80, switching to crossover + warm simplex for the last
  rounds). See :func:`solve_worst_case_lp_lazy`.
* **Dualised full solve (``method="full"``).** The LP has ``n^2 + 1`` variables and up to
  ``n^2 (n - 1)`` rows. HiGHS's interior point method factors a system whose size is the number
  of *rows*, so the full LP is passed in its dual form (``n^2 + 1`` rows, one column per privacy
  row) and ``M`` is read from the row duals of that dual.
* **Certification of exactness.** After solving, all ``n^2 (n - 1)`` privacy constraints are
  evaluated on the returned matrix (vectorised, column blocks) and the largest violation is
  recorded; a violation beyond solver tolerance raises. The optimality gap is the certified loss
  minus a rigorous Lagrangian lower bound built from the dual solution
  (:func:`lagrangian_lower_bound`), so ``stats["optimality_gap"]`` bounds how far the matrix is
  from the true optimum.
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

from ..candidate import Candidate
from ..lp import LPError, LPTimeout, SparseLP
from ..registry import register
from ..space import MetricSpace
from ..validation import check_int, check_positive
from ..verification import certify, repair_to_private

__all__ = ["nonredundant_pairs", "solve_worst_case_lp", "lagrangian_lower_bound",
           "max_privacy_violation", "OPTIMAL_MAX_N"]

#: Largest space on which "optimal" applies: the full LP has n^2 (n-1) rows (10^7 at n=216).
OPTIMAL_MAX_N = 250
#: Largest n included in quick runs (``mdp curves`` builds ~30-60 calibrated mechanisms).
QUICK_MAX_N = 30
#: Largest absolute violation ``M[u,w] - e^{eps D_uv} M[v,w]`` accepted from the solver (it is
#: then repaired by :func:`mdp.verification.certify`); beyond it the build fails.
VIOLATION_ATOL = 1e-6
#: Absolute violation above which :func:`separate` adds a row (the final matrix is re-checked and
#: certified anyway; rows meet HiGHS's 1e-10 primal tolerance).
SEPARATION_TOL = 1e-9
#: Rows ``M_uw <= e^{eps D_uv} M_vw`` with a coefficient above ``C`` are left out of the LPs, for
#: ``C`` tried in this order. A left-out row only forbids ``M_vw < M_uw / C``: the restricted LP is a
#: relaxation (its Lagrangian bound stays a rigorous lower bound on the optimum), and the final check
#: and :func:`mdp.verification.certify` measure every row and lift such entries to their envelope (a
#: change of at most ``1 / C``). ``1e12`` (below HiGHS's 1e20 infinity, which rejected
#: ``e^{eps D}`` at eps = 8 on a 50-word GloVe space) is exact to ~1e-12 but on very wide ranges
#: HiGHS returned "Unknown", "Unbounded" or "Solve error" for these bounded LPs, or a 7.6e-3
#: relative gap (fastText-50 at eps = 8 and 12, Geolife cells at eps = 2.25-3: e^{eps D} spans 13-16
#: orders of magnitude); the next values then solve them (``test_high_eps_wide_range``).
MAX_COEFFICIENTS = (1e12, 1e7, 1e5)
#: A build retries with the next coefficient limit when its relative gap (certified loss against the
#: best Lagrangian bound so far) is above this.
RETRY_RTOL = 1e-6
#: Relative Lagrangian gap of the lazy solve above which the final row set is re-solved cold by IPM.
POLISH_RTOL = 1e-8
#: IPM optimality tolerance of the interior lazy rounds (``solver="ipm"``; HiGHS default 1e-8).
IPM_OPTIMALITY_TOL = 1e-10
#: Relative Lagrangian gap accepted from the interior rounds; above it one crossover solve and
#: warm dual simplex rounds follow (as in the simplex path).
IPM_POLISH_RTOL = 1e-7
#: Separation tolerance of the interior rounds.
IPM_SEPARATION_TOL = 1e-8
#: Interior rounds switch to crossover + warm dual simplex once a round adds fewer rows than
#: this fraction of the LP (0: never). Geolife n = 100, eps = 0.5: 0 -> 13 interior rounds in
#: 222 s (the last 7 add < 4% rows each at ~19 s); 0.05 -> 5 interior rounds, one crossover,
#: 6 warm simplex rounds, 155 s.
IPM_SWITCH_FRACTION = 0.05
#: Smallest map space on which ``build_optimal`` defaults to interior rounds (at n = 50 the
#: simplex rounds are still cheaper: Geolife 7.8 s against 10.4 s).
IPM_MIN_N = 80


def nonredundant_pairs(distances: np.ndarray, rtol: float = 1e-12) -> tuple[np.ndarray, np.ndarray]:
    r"""Ordered pairs ``(u, v)``, ``u != v``, whose privacy rows are not implied by others.

    ``(u, v)`` is implied when some ``z`` outside ``{u, v}`` has
    ``D[u, z] + D[z, v] <= D[u, v] (1 + rtol)``: then ``M_uw <= e^{eps D_uz} M_zw <=
    e^{eps (D_uz + D_zv)} M_vw``. Ties are resolved transitively (the shortest-path witness chain
    of an implied pair consists of strictly shorter pairs, which are kept or implied in turn).

    Returns
    -------
    pu, pv : int arrays of the kept ordered pairs.
    """
    D = np.asarray(distances, dtype=float)
    n = D.shape[0]
    keep = ~np.eye(n, dtype=bool)
    idx = np.arange(n)
    for u in range(n):
        S = D[u][:, None] + D  # S[z, v] = D[u, z] + D[z, v]
        S[u, :] = np.inf
        S[idx, idx] = np.inf
        keep[u] &= ~(S.min(axis=0) <= D[u] * (1.0 + rtol))
    keep[D <= 0] = False  # zero distance: only possible on the diagonal (metric space)
    return np.nonzero(keep)


def _primal_rows(D: np.ndarray, pu: np.ndarray, pv: np.ndarray, eps_pair: np.ndarray) -> sp.csr_matrix:
    """The worst-case-loss LP in ``A x >= b`` form, columns ``M`` (row-major) then ``k``.

    Row blocks: row sums (``= 1``), losses ``k - sum_w D_uw M_uw >= 0``, privacy
    ``e^{eps D_uv} M_vw - M_uw >= 0`` for every kept pair and every column ``w``.
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


def lagrangian_lower_bound(A: sp.csr_matrix, y: np.ndarray, n: int) -> float:
    r"""A rigorous lower bound on the LP optimum from any multipliers ``y``.

    For ``min k`` s.t. ``A x >= b`` (first ``n`` rows equalities with ``b = 1``, the rest ``b = 0``),
    multipliers ``y`` (free on the equalities, clipped to ``>= 0`` elsewhere, loss multipliers
    rescaled to sum to 1 so that ``k`` cancels) give, for every feasible ``x`` (``0 <= M <= 1``),

    .. math:: k \ge \sum_{u} y_u + \sum_j \min(0, (c - A^\top y)_j),

    a bound that holds whatever the solver's tolerances were.
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
    return float(y[:n].sum() + np.minimum(red[:-1], 0.0).sum())


def max_privacy_violation(M: np.ndarray, distances: np.ndarray, epsilon: float) -> float:
    """``max_{u,v,w} e^{-eps D[u,v]} M[u,w] - M[v,w]`` over ALL ``n^2 (n-1)`` triples (vectorised).

    The scaled form is the amount by which ``M[v,w]`` must rise (what the envelope repair of
    :func:`mdp.verification.certify` moves it by); ``<= 0`` means every privacy row holds.
    """
    K = np.exp(-epsilon * np.asarray(distances, dtype=float))
    n = M.shape[0]
    worst = -np.inf
    block = max(1, int(4e6 // (n * n)))
    for s in range(0, n, block):
        X = M[:, s:s + block]  # columns w in the block
        V = K[:, :, None] * X[:, None, :] - X[None, :, :]  # V[u, v, w]
        worst = max(worst, float(V.max()))
    return worst


def _pair_violation(M, D, pu, pv, eps_pair) -> float:
    """Largest *relative* violation ``(M[u,w] - e^{eps_uv D_uv} M[v,w]) / M[u,w]`` of the imposed rows.

    Relative, because a 1e-13 entry beside an exact 0 is an infinite privacy ratio.
    """
    worst = 0.0
    for s in range(0, len(pu), 20000):
        u, v, e = pu[s:s + 20000], pv[s:s + 20000], eps_pair[s:s + 20000]
        Mu = M[u]
        excess = Mu - np.exp(e * D[u, v])[:, None] * M[v]
        worst = max(worst, float(np.max(np.where(Mu > 0, excess / np.where(Mu > 0, Mu, 1.0), 0.0))))
    return worst


def _privacy_rows(D: np.ndarray, eps: float, u: np.ndarray, v: np.ndarray, w: np.ndarray) -> sp.csr_matrix:
    """Rows ``e^{eps D_uv} M_vw - M_uw >= 0`` for the triples ``(u, v, w)`` (columns as :func:`_primal_rows`)."""
    n = D.shape[0]
    m = len(u)
    indices = np.empty(2 * m, dtype=np.int64)
    indices[0::2] = u * n + w
    indices[1::2] = v * n + w
    data = np.empty(2 * m)
    data[0::2] = -1.0
    data[1::2] = np.exp(eps * D[u, v])
    A = sp.csr_matrix((data, indices, np.arange(0, 2 * m + 1, 2)), shape=(m, n * n + 1))
    A.sort_indices()
    return A


def _unique_triples(n: int, u, v, w):
    key = np.unique((np.asarray(u, np.int64) * n + v) * n + w)
    return key // (n * n), (key // n) % n, key % n


def initial_triples(distances: np.ndarray, allowed: np.ndarray, knn: int = 2):
    r"""The starting row set of the lazy solve: rows through each column's own point, and near pairs.

    For column ``w``: every allowed row ``(u, w, w)`` and ``(w, u, w)`` (measured on the exact
    optima of text spaces: ~98% of the binding rows are ``M_uw >= e^{-eps D_uw} M_ww``, an
    exponential profile around the diagonal), plus every allowed row of the ``knn`` nearest
    neighbour pairs (both orders) in every column, which keeps low-dimensional (map) spaces from
    chaining mass through unconstrained pairs in the first rounds.
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
    return _unique_triples(n, iu[ok], iv[ok], iw[ok])


def separate(M: np.ndarray, distances: np.ndarray, eps: float, allowed: np.ndarray, tol: float):
    r"""Violated privacy rows of ``M``: for each entry, its most violated row in either role.

    Evaluates the scaled violation ``V[u, v, w] = e^{-eps D_uv} M_uw - M_vw`` (the amount by which
    ``M_vw`` must rise to satisfy the row, which is what the envelope repair of
    :func:`mdp.verification.certify` moves it by) for every allowed ordered pair and every column
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
    u, v, w = _unique_triples(n, np.concatenate(out_u), np.concatenate(out_v), np.concatenate(out_w))
    return u, v, w, worst


def _next_solve_to_vertex(lp: SparseLP) -> None:
    """Make the next solve a cold IPM + crossover (a vertex and a basis for warm re-solves)."""
    lp._h.setOptionValue("run_crossover", "on")
    # crossover turns HiGHS's default IPM accuracy into a vertex (with the tighter one IPX can
    # end "imprecise" and HiGHS reports status Unknown)
    lp._h.setOptionValue("ipm_optimality_tolerance", 1e-8)
    lp._h.clearSolver()
    lp.set_solver("ipm")


def solve_worst_case_lp_lazy(distances: np.ndarray, allowed: np.ndarray, eps: float, *,
                             time_limit: float | None = None, solver: str = "simplex", knn: int = 2,
                             tol: float = SEPARATION_TOL, max_rounds: int = 500,
                             max_coefficient: float = MAX_COEFFICIENTS[0]) -> tuple[np.ndarray, dict]:
    r"""Worst-case-loss LP with privacy rows on the ``allowed`` pairs, by lazy row generation.

    Solves the primal LP (variables ``M``, ``k``) restricted to :func:`initial_triples`, then
    repeatedly adds the rows returned by :func:`separate` for the current solution and re-solves
    with HiGHS's dual simplex, warm-started from the previous basis (added rows keep the basis
    dual feasible), until no allowed row is violated by more than ``tol``. The restricted LP is
    a relaxation of the full one, so its Lagrangian bound (:func:`lagrangian_lower_bound` with
    zero multipliers on the rows never added) is a rigorous lower bound on the full optimum.

    Parameters
    ----------
    distances : ndarray (n, n)
    allowed : bool ndarray (n, n)
        Ordered pairs whose rows ``M_uw <= e^{eps D_uv} M_vw`` are imposed in every column.
    eps : float
    time_limit : float or None
        Wall-clock seconds for the whole loop (solves and separation); :class:`mdp.lp.LPTimeout`.
    solver : {"simplex", "ipm"}
        ``"simplex"``: every round by HiGHS's dual simplex, warm-started from the previous basis.
        ``"ipm"``: every round by HiGHS's interior point method *without crossover*
        (``ipm_optimality_tolerance = IPM_OPTIMALITY_TOL``, rows separated at
        ``IPM_SEPARATION_TOL``); the interior optimum is accepted when its Lagrangian gap is
        within ``IPM_POLISH_RTOL``, otherwise one IPM + crossover solve yields a vertex and warm
        dual simplex rounds finish as in the simplex path. The same switch happens as soon as a
        round adds fewer than ``IPM_SWITCH_FRACTION`` of the rows (the tail rounds). If IPM +
        crossover ends without an optimum, a cold dual simplex solve replaces it. Either way the
        returned ``M`` is checked on all rows and the gap is a rigorous bound.
    knn : int
        Near-neighbour pairs in the initial rows.
    tol : float
        Absolute violation below which a row counts as satisfied.
    max_rounds : int
    max_coefficient : float
        Rows whose coefficient ``e^{eps D_uv}`` exceeds it are left out (see ``MAX_COEFFICIENTS``).

    Returns
    -------
    M : ndarray (n, n) (negatives clipped, not renormalised)
    stats : dict with ``rounds``, ``rows`` (rows of the final restricted LP), ``nnz``,
        ``full_rows`` (rows of the unrestricted LP), solver statistics, ``lp_objective``,
        ``lower_bound`` and ``final_violation`` (largest allowed-row violation).
    """
    t0 = time.perf_counter()
    D = np.asarray(distances, dtype=float)
    n = D.shape[0]
    N = n * n
    allowed = allowed & (eps * D <= np.log(max_coefficient))
    base = _primal_rows(D, np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0))
    iu, iv, iw = initial_triples(D, allowed, knn)
    A = sp.vstack([base, _privacy_rows(D, eps, iu, iv, iw)], format="csr")
    m = A.shape[0]
    c = np.zeros(N + 1)
    c[-1] = 1.0
    lp = SparseLP(c, A, row_lower=np.r_[np.ones(n), np.zeros(m - n)],
                  row_upper=np.r_[np.ones(n), np.full(m - n, np.inf)],
                  col_lower=np.r_[np.zeros(N), -np.inf], col_upper=np.r_[np.ones(N), np.inf],
                  solver=solver, time_limit=time_limit,
                  options={"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10})
    interior = solver == "ipm"
    if interior:
        # IPM rounds without crossover: on the Geolife cells a round costs ~11-19 s at n = 100
        # against 25-45 s for the warm dual simplex, and the interior (central) optimum violates
        # rows in fewer rounds (10 vs 12+) than the simplex vertex
        lp._h.setOptionValue("run_crossover", "off")
        lp._h.setOptionValue("ipm_optimality_tolerance", IPM_OPTIMALITY_TOL)
    simplex_tol = tol
    if interior:
        # an interior optimum meets its rows only to the IPM tolerances (~1e-9): chasing smaller
        # violations adds rounds that change nothing (the final check and the repair cover them)
        tol = max(tol, IPM_SEPARATION_TOL)
    blocks = [A]
    in_lp = np.zeros(n ** 3, dtype=bool)
    in_lp[(iu * n + iv) * n + iw] = True
    rounds = 0
    polished = False
    trace = []
    crossover_pending = False
    while True:
        t_round = time.perf_counter()
        try:
            sol = lp.solve()
        except LPTimeout:
            raise
        except LPError:
            if not crossover_pending:
                raise
            # IPX + crossover can end with status Unknown on these degenerate LPs (seen at n = 20,
            # eps = 0.3): the dual simplex from scratch is the dependable fallback
            lp._h.clearSolver()
            lp.set_solver("simplex")
            sol = lp.solve()
        crossover_pending = False
        rounds += 1
        trace.append((lp.num_row, round(time.perf_counter() - t_round, 2), sol.objective))
        M = np.maximum(sol.x[:N].reshape(n, n), 0.0)
        su, sv, sw, worst = separate(M, D, eps, allowed, tol)
        key = (su * n + sv) * n + sw
        new = ~in_lp[key]
        # rows already in the LP are violated only within HiGHS's (scaled) tolerance: no progress
        # is possible by adding them again; the final check and certification handle the rest
        su, sv, sw = su[new], sv[new], sw[new]
        if len(su) == 0:
            A = sp.vstack(blocks, format="csr")
            bound = lagrangian_lower_bound(A, sol.row_dual, n)
            rtol = IPM_POLISH_RTOL if interior else POLISH_RTOL
            if polished or sol.objective - bound <= rtol * abs(sol.objective):
                break
            # the warm dual simplex can stop with a Lagrangian gap far above its tolerances on badly
            # scaled columns (seen: 6.6e-5 relative at eps = 2, entries ~1e-9), and an interior
            # solve can stop short of IPM_POLISH_RTOL: one cold IPM + crossover solve of the final
            # row set repairs it (its vertex may violate further rows: the loop goes on with the
            # warm dual simplex)
            polished = True
            interior = False
            _next_solve_to_vertex(lp)
            crossover_pending = True
            continue
        in_lp[key[new]] = True
        if time_limit is not None and time.perf_counter() - t0 > time_limit:
            raise LPTimeout(f"LP time limit of {time_limit:g} s reached after {rounds} rounds of row "
                            f"generation ({lp.num_row} rows); no solution is returned")
        if rounds >= max_rounds:
            raise LPError(f"row generation did not converge in {max_rounds} rounds (largest violation {worst:.3g})")
        P = _privacy_rows(D, eps, su, sv, sw)
        blocks.append(P)
        lp.add_rows(P, np.zeros(len(su)), np.full(len(su), np.inf))
        if interior and len(su) < IPM_SWITCH_FRACTION * lp.num_row:
            # few rows left to find: one IPM + crossover solve gives a vertex, the tail rounds
            # then re-solve by the warm dual simplex
            interior, tol = False, simplex_tol
            _next_solve_to_vertex(lp)
            crossover_pending = True
            continue
        lp.set_solver("ipm" if interior else "simplex")
    stats = dict(lp.stats)
    stats.update(rounds=rounds, polished=polished, round_trace=trace, full_rows=2 * n + int(allowed.sum()) * n, privacy_rows=A.shape[0] - 2 * n,
                 formulation="primal worst-case-loss LP, lazy row generation "
                 + ("(warm dual simplex)" if solver != "ipm" else "(IPM rounds, no crossover)"
                    if interior else "(IPM rounds, then crossover + warm dual simplex)"),
                 lp_objective=sol.objective, lower_bound=bound, final_violation=worst,
                 wall_seconds=time.perf_counter() - t0)
    return M, stats


def solve_worst_case_lp(distances: np.ndarray, pu: np.ndarray, pv: np.ndarray, eps_pair,
                        *, time_limit: float | None = None, solver: str = "ipm",
                        max_coefficient: float = MAX_COEFFICIENTS[0]) -> tuple[np.ndarray, dict]:
    """Solve ``min max_u sum_w D_uw M_uw`` over stochastic ``M`` with privacy rows on the given pairs.

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
        HiGHS solver for the dualised LP (see :class:`mdp.lp.SparseLP`).
    max_coefficient : float
        Rows whose coefficient ``e^{eps D_uv}`` exceeds it are left out (see ``MAX_COEFFICIENTS``).

    Returns
    -------
    M : ndarray (n, n), row-stochastic up to solver tolerance (negatives clipped).
    stats : dict
        LP sizes of the primal LP (``variables``, ``rows``, ``nnz``), solver, iterations,
        seconds, ``lp_objective`` and ``lower_bound`` (:func:`lagrangian_lower_bound`).
    """
    D = np.asarray(distances, dtype=float)
    n = D.shape[0]
    eps_pair = np.broadcast_to(np.asarray(eps_pair, dtype=float), pu.shape)
    keep = eps_pair * D[pu, pv] <= np.log(max_coefficient)
    pu, pv, eps_pair = pu[keep], pv[keep], eps_pair[keep]
    A = _primal_rows(D, pu, pv, eps_pair)
    N = n * n
    m = A.shape[0]
    # Dual of  min k  s.t. A x >= b:  max b^T y  s.t. (A^T y)_j <= c_j for M >= 0, = 1 for free k,
    # y free on the n equality rows and >= 0 elsewhere. HiGHS minimises, so the cost is -b.
    b = np.r_[np.ones(n), np.zeros(m - n)]
    lp = SparseLP(-b, A.T.tocsr(), row_lower=np.r_[np.full(N, -np.inf), 1.0],
                  row_upper=np.r_[np.zeros(N), 1.0], col_lower=np.r_[np.full(n, -np.inf), np.zeros(m - n)],
                  solver=solver, time_limit=time_limit,
                  # M is read from the duals, so the dual tolerance bounds its privacy violations
                  options={"dual_feasibility_tolerance": 1e-9, "primal_feasibility_tolerance": 1e-9})
    sol = lp.solve()
    # The primal M is (minus) the dual value of the dual's row j (HiGHS's sign convention for <=).
    M = np.maximum(-sol.row_dual[:N].reshape(n, n), 0.0)
    if solver == "ipm" and _pair_violation(M, D, pu, pv, eps_pair) > 1e-10:
        # crossover's vertex can carry ~1e-8 violations (tolerances hold in the scaled model),
        # which the certification repair would fix at a ~1e-6 loss cost; a simplex re-solve
        # returns exact basic duals instead (slower, only run when needed)
        lp.set_solver("simplex")
        lp._h.setOptionValue("dual_feasibility_tolerance", 1e-10)
        lp._h.clearSolver()
        sol = lp.solve()
        M = np.maximum(-sol.row_dual[:N].reshape(n, n), 0.0)
    bound = lagrangian_lower_bound(A, sol.x, n)
    stats = {k: v for k, v in lp.stats.items() if k not in ("variables", "rows", "nnz")}
    stats.update(variables=N + 1, rows=m, nnz=int(A.nnz), privacy_rows=m - 2 * n,
                 formulation="dual of the worst-case-loss LP", lp_objective=-sol.objective,
                 lower_bound=bound)
    return M, stats


def _applies(space: MetricSpace) -> str | None:
    if space.n > OPTIMAL_MAX_N:
        return (f"the exact LP has n^2(n-1) = {space.n ** 2 * (space.n - 1):,} privacy rows; "
                f"'optimal' is limited to n <= {OPTIMAL_MAX_N} (use 'constopt' or 'spanner')")
    return None


METHODS = ("lazy", "full")


@register("optimal", description="exact optimal mechanism, worst-case-loss LP on HiGHS (OPTMech; seed 2.1)",
          applies=_applies, quick_max_n=QUICK_MAX_N, display_name="OPTMech")
def build_optimal(space: MetricSpace, epsilon: float, *, rng=None, time_limit: float | None = None,
                  redundancy_rtol: float = 1e-12, method: str = "lazy", solver: str | None = None,
                  knn: int | None = None) -> Candidate:
    """The exact eps-mDP mechanism of least worst-case loss (OPTMech).

    Parameters
    ----------
    space : MetricSpace
    epsilon : float
    rng : unused (deterministic)
    time_limit : float or None
        Wall-clock seconds for the LP work; on timeout :class:`mdp.lp.LPTimeout` is raised (no matrix).
    redundancy_rtol : float in [0, 1e-9], default 1e-12
        Relative tolerance of the exact redundancy test (:func:`nonredundant_pairs`).
    method : {"lazy", "full"}, default "lazy"
        ``"lazy"``: row generation (:func:`solve_worst_case_lp_lazy`); ``"full"``: every
        non-redundant row at once, dualised (:func:`solve_worst_case_lp`).
    solver : str or None
        ``"lazy"``: ``"simplex"`` (warm-started dual simplex rounds) or ``"ipm"`` (interior point
        rounds without crossover, see :func:`solve_worst_case_lp_lazy`); ``None``: ``"ipm"`` on
        map spaces (as for ``knn``) with ``n >= IPM_MIN_N`` (Geolife n = 100, eps = 0.5: 155 s
        against > 240 s for simplex rounds of 25-45 s), ``"simplex"`` otherwise (text spaces
        converge in 3-8 cheap simplex rounds). ``"full"``: HiGHS solver of the dualised LP
        (``None``: ``"ipm"``).
    knn : int >= 0 or None
        Near-neighbour pairs in the initial rows of the lazy method (:func:`initial_triples`).
        ``None``: 2 for spaces of points in at most 3 dimensions or on the sphere (map spaces,
        where they halve the rounds), 0 otherwise (text: the diagonal rows already hold ~98% of the
        binding rows and extra rows only slow the first solve).

    Returns
    -------
    (M, stats) : the optimal matrix and LP statistics: sizes (``variables``, ``rows`` of the
    LP last solved, ``nnz``), ``full_privacy_rows`` = n^2(n-1), ``redundant_pairs``, solver,
    iterations, ``rounds`` (lazy), seconds, ``lp_objective``, ``lower_bound``, ``loss``,
    ``optimality_gap``, ``relative_gap`` and ``max_privacy_violation`` over all n^2(n-1) triples
    (before the tolerance repair of :func:`mdp.verification.certify`; ``loss`` and the gaps are of
    the certified matrix), ``max_coefficient`` and ``attempts``: the LP is solved with the rows of
    coefficient up to ``MAX_COEFFICIENTS[0]``, and again with the next limit when HiGHS fails or the
    relative gap exceeds ``RETRY_RTOL``; the least certified loss is returned, with the best bound.

    Raises
    ------
    mdp.lp.LPTimeout
        When ``time_limit`` is reached.
    mdp.lp.LPError
        Solver failure, or a returned matrix violating a privacy row beyond ``1e-6``, with every
        coefficient limit.
    """
    if time_limit is not None:
        time_limit = check_positive(time_limit, "time_limit")
    redundancy_rtol = float(redundancy_rtol)
    if not 0.0 <= redundancy_rtol <= 1e-9:
        raise ValueError(f"redundancy_rtol must be in [0, 1e-9], got {redundancy_rtol}")
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    pts = space.points
    map_space = space.metric == "haversine" or (pts is not None and np.ndim(pts) == 2 and pts.shape[1] <= 3)
    if knn is None:
        knn = 2 if map_space else 0
    if solver is None:
        solver = "ipm" if method == "full" or (map_space and space.n >= IPM_MIN_N) else "simplex"
    knn = check_int(knn, "knn", low=0)
    D = space.distances
    n = space.n
    pu, pv = nonredundant_pairs(D, redundancy_rtol)
    if method == "lazy" and solver not in ("simplex", "ipm"):
        raise ValueError(f"solver must be 'simplex' or 'ipm' with method='lazy', got {solver!r}")
    allowed = np.zeros((n, n), dtype=bool)
    allowed[pu, pv] = True
    t0 = time.perf_counter()
    best, best_bound, attempts = None, -np.inf, []
    for max_coefficient in MAX_COEFFICIENTS:
        left = None if time_limit is None else time_limit - (time.perf_counter() - t0)
        if left is not None and left <= 0:
            raise LPTimeout(f"LP time limit of {time_limit:g} s reached after {len(attempts)} attempts")
        try:
            if method == "lazy":
                M, stats = solve_worst_case_lp_lazy(D, allowed, epsilon, time_limit=left, solver=solver,
                                                    knn=knn, max_coefficient=max_coefficient)
            else:
                M, stats = solve_worst_case_lp(D, pu, pv, epsilon, time_limit=left, solver=solver,
                                               max_coefficient=max_coefficient)
            M /= M.sum(axis=1, keepdims=True)
            violation = max_privacy_violation(M, D, epsilon)
            if violation > VIOLATION_ATOL:
                raise LPError(f"the LP solution violates a privacy row by {violation:.3g} (> {VIOLATION_ATOL}); "
                              "the solver did not converge to a feasible optimum")
        except LPTimeout:
            raise
        except LPError as exc:
            attempts.append(f"rows up to {max_coefficient:g}: {exc}")
            continue
        M, mix = repair_to_private(M, D, epsilon)
        # the gap is measured on the matrix that is returned: certify first (the registry re-checks)
        M, _ = certify(M, D, epsilon)
        loss = float(np.max(np.einsum("uw,uw->u", M, D)))
        # every restricted LP is a relaxation of the full one: each bound holds, keep the best
        best_bound = max(best_bound, stats["lower_bound"])
        attempts.append(f"rows up to {max_coefficient:g}: loss {loss:.10g}, bound {stats['lower_bound']:.10g}")
        if best is None or loss < best[2]:
            best = (M, stats, loss, violation, mix, max_coefficient)
        if best[2] - best_bound <= RETRY_RTOL * best[2]:
            break
    if best is None:
        raise LPError("HiGHS found no optimum of the OPTMech LP with any coefficient limit: "
                      + "; ".join(attempts))
    M, stats, loss, violation, mix, max_coefficient = best
    gap = loss - best_bound
    stats.update(full_privacy_rows=n * n * (n - 1), redundant_pairs=n * (n - 1) - len(pu),
                 max_privacy_violation=violation, loss=loss, lower_bound=best_bound, optimality_gap=gap,
                 relative_gap=gap / loss if loss > 0 else 0.0, method=method, uniform_mix=mix,
                 max_coefficient=max_coefficient, attempts=attempts)
    return Candidate(matrix=M, stats=stats)
