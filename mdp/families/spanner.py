r"""SpannerMech (Bordenabe, Chatzikokolakis, Palamidessi, CCS 2014; Imola et al. 2022, section 5).

A *delta-spanner* of the space is a graph ``G`` on its points whose shortest-path distance
satisfies ``d_G(u, v) <= delta D[u, v]``. Imposing the privacy rows only on the edges of ``G`` at
level ``eps / delta``,

.. math:: M_{uw} \le e^{(\epsilon/\delta) D_{uv}} M_{vw} \quad \forall (u, v) \in E(G),\ \forall w,

is sound: chaining along a shortest path gives ``M_uw <= e^{(eps/delta) d_G(u,v)} M_vw <=
e^{eps D_uv} M_vw``. The objective is Imola et al.'s worst-case loss ``min max_u sum_w D_uw M_uw``.
The mechanism is sub-optimal by design (it buys a smaller LP with privacy budget); the notes
measured +5% loss at ``delta = 1.1`` and +20% at ``delta = 1.5``.

The spanner is the classic greedy one (Althoefer et al. 1993): scan pairs by increasing
distance and add ``(u, v)`` when the current graph distance exceeds ``delta D[u, v]``. The
all-pairs graph distances are kept in a dense matrix updated in ``O(n^2)`` per added edge.

The default ``stretch = 1.5`` is our choice for the comparison: Imola et al. 2022 do not
state the dilation they used ("we implement the algorithm as it is described in Bordenabe et al. [2014]"),
and 1.5 is in the range Bordenabe et al. explore (their experiments use 1.1-2.0).
"""

from __future__ import annotations

import time

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import shortest_path

from ..candidate import Candidate
from ..errors import ParameterError
from ..lp import SOLVERS, LPError, LPTimeout, explain_failures, stochastic_rows
from ..lp.column_blocks import fits_in_memory
from ..lp.output import LOG_DOMAIN_C, candidate_loss, private_candidate
from ..lp.worst_case import (
    BLOCKS,
    CLARABEL,
    LAZY_SOLVERS,
    MAX_COEFFICIENTS,
    check_lazy_solver,
    solve_worst_case_lp,
    solve_worst_case_lp_lazy,
)
from ..params import Param
from ..registry import register
from ..space import MetricSpace
from .exponential import exponential_floor
from .optimal import CHAIN_SLACK, IPM_MIN_N, median_two_hop_slack

__all__ = ["greedy_spanner", "spanner_distances", "default_method", "default_lazy_solver",
           "FULL_SOLVER", "BLOCKS_FROM_N", "default_full_solver", "LAZY_EDGES_PER_POINT", "PATH_SLACK"]

#: HiGHS method of the full (dualised) spanner LP when ``solver=None``: HiPO without crossover
#: (figures in ``docs/design/lp.md``, "SpannerMech").
FULL_SOLVER = "hipo"
#: From this many points the full LP's default is the column-block interior point method
#: (:mod:`mdp.lp.column_blocks`): Geolife cells at eps 0.5 per km, n = 300: 55 s against HiPO's
#: 295 s, n = 500: 373 s where HiPO had not finished in 590 s; its certified relative gap (about
#: 1e-5) is looser than HiPO's (about 1e-9), so below it HiPO stays (``docs/design/lp.md``).
BLOCKS_FROM_N = 300
#: ``method="auto"`` solves the spanner LP lazily when the spanner has more edges than this per
#: point (the full LP then has over ``12 n^2`` privacy rows, most never binding): GloVe's spanners
#: have 14-41 edges per point (n = 50-300; lazy 22x faster at n = 100), the Geolife cells' and
#: our fastText vectors' 1.3-4 (full 2-3x faster); Gaussian points tie at 5.7 (5-d) and are
#: solved 3x faster lazily at 9.5 (8-d). Figures in ``docs/design/lp.md``, "SpannerMech"
#: (the plan).
LAZY_EDGES_PER_POINT = 6.0
#: ``rows="auto"`` generates the lazy rows over every pair at its spanner-path distance, with warm
#: dual simplex rounds, when the two-hop slack at ``eps / stretch`` is at most this: there the
#: binding rows chain along the spanner's paths, and one path row replaces a chain of edge rows
#: (n = 100, slack 0.08-0.18: 5-13 s against 35-38 s for interior rounds on the edges and 79-750 s
#: for simplex rounds; GloVe n = 200 at eps 0.1: 172 s, where the edges did not finish in 1500 s).
#: From 0.33 on the edge rows are as fast or faster. Figures in ``docs/design/lp.md``,
#: "SpannerMech" (the plan).
PATH_SLACK = 0.25


def greedy_spanner(distances: np.ndarray, stretch: float) -> np.ndarray:
    """Edges ``(u, v)``, ``u < v``, of the greedy ``stretch``-spanner (array of shape (E, 2)).

    Guarantees ``d_G(u, v) <= stretch * D[u, v]`` for every pair (a test checks it with
    scipy's shortest paths).
    """
    stretch = float(stretch)
    if not np.isfinite(stretch) or stretch < 1.0:
        raise ParameterError(f"stretch must be a finite number >= 1, got {stretch}")
    D = np.asarray(distances, dtype=float)
    n = D.shape[0]
    iu, iv = np.triu_indices(n, 1)
    order = np.argsort(D[iu, iv], kind="stable")
    G = np.full((n, n), np.inf)
    np.fill_diagonal(G, 0.0)
    edges = []
    for a, b in zip(iu[order], iv[order], strict=True):
        d = D[a, b]
        if G[a, b] <= stretch * d:
            continue
        edges.append((a, b))
        # shortest paths through the new edge: u -> a -> b -> v or u -> b -> a -> v
        via = np.minimum(G[:, a, None] + d + G[None, b, :], G[:, b, None] + d + G[None, a, :])
        np.minimum(G, via, out=G)
    return np.array(edges, dtype=np.int64).reshape(-1, 2)


PARAMS = {
    "stretch": Param("float", 1.5, low=1.0, help="spanner dilation delta (1: OPTMech's LP)"),
    "time_limit": Param("float", None, low=0.0, low_open=True, allow_none=True,
                        help="seconds for the LP (None: no limit)"),
    "method": Param("choice", "auto", choices=("auto", "lazy", "full"),
                    help="'full' LP (dualised), 'lazy' row generation over the spanner rows, or "
                         "'auto': lazy on dense spanners (more than LAZY_EDGES_PER_POINT edges "
                         "per point)"),
    "solver": Param("choice", None, choices=(*SOLVERS, CLARABEL, BLOCKS), allow_none=True,
                    help="HiGHS method, or 'clarabel' or 'blocks' (full LP only); None: by the "
                         "space and eps (lazy, as OPTMech's rounds) or 'hipo' without crossover "
                         "(full)"),
    "knn": Param("int", 0, low=0, help="near-neighbour pairs in the lazy starting rows"),
    "rows": Param("choice", "auto", choices=("auto", "edges", "paths"),
                  help="rows the lazy method generates: the spanner's 'edges', or every pair at "
                       "its spanner-path distance ('paths', the same LP); 'auto': paths when the "
                       "two-hop slack at eps/stretch is at most PATH_SLACK (with simplex rounds)"),
}


def spanner_distances(distances: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Shortest-path distances ``d_G`` of the spanner with ``edges`` (weights ``D[u, v]``), by
    SciPy's Dijkstra; ``d_G(u, v) = D[u, v]`` on the edges and ``D <= d_G <= stretch D`` elsewhere."""
    D = np.asarray(distances, dtype=float)
    n = D.shape[0]
    graph = csr_matrix((D[edges[:, 0], edges[:, 1]], (edges[:, 0], edges[:, 1])), shape=(n, n))
    return shortest_path(graph, method="D", directed=False)


def default_full_solver(n: int) -> str:
    """The full LP's default solver: the column-block method from :data:`BLOCKS_FROM_N` points
    while its block inverses fit in memory (:func:`mdp.lp.column_blocks.fits_in_memory`: on the
    CPU ``n^3 / 2`` doubles, at most 8 GiB and half the memory available; on a GPU that
    ``MDP_DEVICE`` allows, ``n^3`` doubles of its free memory), else HiPO (:data:`FULL_SOLVER`)."""
    return BLOCKS if BLOCKS_FROM_N <= n and fits_in_memory(n) else FULL_SOLVER


def default_method(n: int, edges: int) -> str:
    """``"lazy"`` when a spanner of ``edges`` edges on ``n`` points has more than
    :data:`LAZY_EDGES_PER_POINT` edges per point, else ``"full"``.

    The full LP has ``2 E n`` privacy rows; the lazy solve's final row set grows like OPTMech's
    (its binding rows), whatever the spanner's density, so dense spanners (spread-out embeddings
    such as GloVe) are solved lazily and sparse ones (maps, clustered embeddings) in full.
    """
    return "lazy" if edges > LAZY_EDGES_PER_POINT * n else "full"


def default_lazy_solver(space: MetricSpace, level: float, *, slack: float | None = None) -> str:
    """HiGHS method of the lazy rounds when ``solver=None``: ``"ipm"`` (interior rounds) on spaces
    of ``n >= IPM_MIN_N`` points whose
    :func:`~mdp.families.optimal.median_two_hop_slack` at the spanner rows' level
    ``eps / stretch`` is at most ``CHAIN_SLACK``, else ``"simplex"`` (warm dual simplex rounds).

    Unlike OPTMech's rows, the spanner's rows join only neighbours in the spanner, so the binding
    rows form chains along its paths on every space, GloVe included: GloVe n = 100 at eps 0.1 (slack
    0.18) took 64 simplex rounds, 114 s, against 34 s for interior rounds, and at eps 1.5 (slack
    2.8) 11 s against 37 s (``docs/design/lp.md``, "SpannerMech").
    ``slack``: that slack if already computed. (With ``rows="auto"``, slacks up to
    :data:`PATH_SLACK` are solved by simplex rounds over the path rows instead.)
    """
    if slack is None:
        slack = median_two_hop_slack(space.distances, level)
    if space.n >= IPM_MIN_N and slack <= CHAIN_SLACK:
        return "ipm"
    return "simplex"


@register("spanner", description="LP with privacy rows on a greedy delta-spanner (Bordenabe et al. 2014)",
          quick_max_n=30, display_name="SpannerMech", params=PARAMS)
def build_spanner(space: MetricSpace, epsilon: float, *, rng=None, stretch: float = 1.5,
                  time_limit: float | None = None, method: str = "auto", solver: str | None = None,
                  knn: int = 0, rows: str = "auto") -> Candidate:
    """SpannerMech: worst-case-loss LP with privacy rows on spanner edges at ``eps / stretch``.

    Parameters
    ----------
    space : MetricSpace
    epsilon : float
    rng : unused (deterministic)
    stretch : float >= 1, default 1.5
        Spanner dilation ``delta``. ``1`` keeps every non-implied pair (then the LP is OPTMech's).
    time_limit : float > 0 or None
        Seconds for the LP; :class:`mdp.lp.LPTimeout` on timeout.
    method : {"auto", "lazy", "full"}, default "auto"
        ``"lazy"``: row generation over the spanner rows
        (:func:`mdp.lp.worst_case.solve_worst_case_lp_lazy`); ``"full"``: all spanner rows at
        once, dualised (:func:`mdp.lp.worst_case.solve_worst_case_lp`); ``"auto"``:
        :func:`default_method` (lazy when the spanner has more than ``LAZY_EDGES_PER_POINT``
        edges per point; full when ``solver`` is one the lazy rounds do not take).
        ``stats["method"]`` records the one used.
    solver : str or None
        HiGHS method (default for the lazy rounds: interior or warm dual simplex rounds by
        :func:`default_lazy_solver`; for the full LP from :data:`BLOCKS_FROM_N` points the
        column-block method below (HiPO's chain if it fails), else ``"hipo"``, HiGHS's
        HiPO interior point code, *without crossover*: on these dualised LPs its direct
        factorisation beats IPX's iterative one from n ~ 200 on, and the interior optimum
        (optimality tolerance 1e-10) is repaired to its private envelope; where HiPO fails, IPX
        without crossover, then Clarabel (:func:`mdp.lp.conic.solve_clarabel`), then IPX with
        crossover take over, ``stats["final_method"]`` says which; an explicit ``"ipm"`` or
        ``"ipx"`` runs IPX with crossover, ``"clarabel"`` Clarabel alone, repaired like HiPO's
        point: the fast choice at small eps on map spaces, where HiPO and IPX stop short;
        ``"blocks"`` the column-block interior point method
        (:func:`mdp.lp.column_blocks.solve_worst_case_blocks`; ``n^3 / 2`` doubles of memory,
        or ``n^3`` on a GPU where CuPy sees one),
        repaired the same way: much faster from n ~ 100 on sparse spanners, but certified only
        to a relative gap of about 1e-6 to 1e-4, which ``stats["relative_gap"]`` reports).
    knn : int >= 0, default 0
        Near-neighbour pairs (that are spanner edges) in the initial lazy rows.
    rows : {"auto", "edges", "paths"}, default "auto"
        Rows the lazy method generates. ``"edges"``: the spanner's edge rows above.
        ``"paths"``: every pair ``(u, v)`` at its spanner-path distance,
        ``M_uw <= e^{(eps/delta) d_G(u,v)} M_vw``; each is implied by a chain of edge rows and the
        edges are among the pairs, so the LP and its optimum are the same, but a violation spread
        along a path is cut by one row instead of one round per edge. ``"auto"``: ``"paths"``
        (with simplex rounds) when the two-hop slack at ``eps / delta`` is at most
        :data:`PATH_SLACK` and ``solver`` is ``None`` or ``"simplex"``, else ``"edges"``. An
        explicit ``"edges"`` or ``"paths"`` with ``method="auto"`` asks for the lazy method.
        ``stats["lazy_rows"]`` records the one used.

    Returns
    -------
    Candidate
        The matrix (rows renormalised) with the LP sizes, ``spanner_edges``, solver statistics,
        ``lower_bound`` (Lagrangian bound on the LP's optimum) and ``relative_gap`` (the matrix's
        loss against that bound).
    """
    E = greedy_spanner(space.distances, stretch)
    if method == "full" and rows != "auto":
        raise ParameterError(f"rows={rows!r} applies to method='lazy' (the full LP holds every "
                             f"edge row), got method='full'")
    if method == "auto":
        # a solver that only the full LP takes (e.g. "hipo") asks for the full LP; rows, the lazy one
        if rows != "auto":
            method = "lazy"
        elif solver in (None, *LAZY_SOLVERS):
            method = default_method(space.n, len(E))
        else:
            method = "full"
    pu = np.r_[E[:, 0], E[:, 1]]
    pv = np.r_[E[:, 1], E[:, 0]]
    level = epsilon / stretch
    limit = "none" if time_limit is None else f"{time_limit:g} s"
    D = space.distances
    if method == "lazy":
        check_lazy_solver(solver)
        slack = None  # an O(n^3) pass, made once and only when a default needs it
        if rows == "auto":
            if solver in (None, "simplex"):
                slack = median_two_hop_slack(D, level)
                rows = "paths" if slack <= PATH_SLACK else "edges"
            else:
                rows = "edges"
        if solver is not None:
            lazy_solver = solver
        elif rows == "paths":
            lazy_solver = "simplex"
        else:
            lazy_solver = default_lazy_solver(space, level, slack=slack)
        if rows == "paths":
            # every pair at its path distance; pairs beyond the coefficient limit are left out,
            # the edges of their paths are not (unless too long themselves)
            allowed = ~np.eye(space.n, dtype=bool)
            path_distances = spanner_distances(D, E)
        else:
            allowed = np.zeros((space.n, space.n), dtype=bool)
            allowed[pu, pv] = True
            path_distances = None
    other = "full" if method == "lazy" else "lazy"
    full_solver = solver or default_full_solver(space.n)
    attempts = []
    M = None
    t0 = time.perf_counter()
    with explain_failures("SpannerMech", space.n, epsilon,
                          on_timeout=f"a larger time_limit (now {limit}), a larger stretch (fewer "
                                     f"edges), or method='{other}'",
                          on_failure=f"method='{other}' or another solver ('simplex', 'ipm')"):
        # HiGHS mis-solves these bounded LPs when e^{eps D} spans too many orders of magnitude:
        # retry with fewer rows (a relaxation; the envelope decides the entries left open)
        for max_coefficient in MAX_COEFFICIENTS:
            left = None if time_limit is None else time_limit - (time.perf_counter() - t0)
            if left is not None and left <= 0:
                # the spanner itself used the whole budget (seen on a loaded machine at 1e-4 s)
                raise LPTimeout(f"time limit of {time_limit:g} s reached before the LP was solved")
            try:
                if method == "lazy":
                    M, stats = solve_worst_case_lp_lazy(D, allowed, level, time_limit=left,
                                                        solver=lazy_solver, knn=knn,
                                                        max_coefficient=max_coefficient,
                                                        privacy_distances=path_distances)
                else:
                    M, stats = solve_worst_case_lp(D, pu, pv, level, time_limit=left,
                                                   solver=full_solver,
                                                   max_coefficient=max_coefficient,
                                                   crossover=solver is not None)
                M = stochastic_rows(M)
            except LPError as exc:
                if isinstance(exc, LPTimeout):
                    raise
                attempts.append(f"rows up to {max_coefficient:g}: {exc}")
                M = None
                if full_solver == BLOCKS and solver is None:
                    # the column-block method scales its rows, so fewer rows do not help it:
                    # after it failed once (and HiPO's chain after it), only the chain retries
                    full_solver = FULL_SOLVER
                continue
            break
    base = {"spanner_edges": len(E), "stretch": float(stretch), "attempts": attempts,
            "method": method}
    if method == "lazy":
        base["lazy_rows"] = rows
    if M is None:
        return exponential_floor(None, True, D, epsilon, base, family="SpannerMech",
                                 reason="no solver found an optimum of the LP with any coefficient "
                                        "limit: " + "; ".join(attempts))
    left_out = int(np.count_nonzero(level * D[pu, pv] > np.log(max_coefficient))) * space.n
    stats.update(base, max_coefficient=max_coefficient, unresolved_rows=left_out)
    interior = method == "full" and solver in (None, CLARABEL, BLOCKS)
    if left_out or interior or epsilon * D.max() > LOG_DOMAIN_C:
        # entries only a left-out row bounds, or an interior optimum's tolerance-level violations:
        # decided by the envelope at eps (in log-probabilities where e^{-eps D} underflows), never
        # worse than the exponential mechanism
        values, log, mix = private_candidate(M, D, epsilon)
        stats.update(uniform_mix=mix, loss=candidate_loss(values, D, log))
        stats["relative_gap"] = _relative_gap(stats)
        return exponential_floor(values, log, D, epsilon, stats, family="SpannerMech")
    stats["loss"] = float(np.max(np.einsum("uw,uw->u", M, D)))
    stats["relative_gap"] = _relative_gap(stats)
    return Candidate(matrix=M, stats=stats)


def _relative_gap(stats: dict) -> float:
    """``(loss - lower_bound) / loss`` of the LP-derived matrix, at least 0: the matrix's worst-case
    loss is within this relative distance of the SpannerMech LP's optimum (the Lagrangian bound
    holds whatever the solver's tolerances; a repaired matrix need not meet the spanner rows, so
    its loss can fall a hair below the bound)."""
    loss, bound = stats["loss"], stats.get("lower_bound")
    if bound is None or not loss > 0:
        return float("nan")
    return max(0.0, (loss - bound) / loss)
