r"""The SpannerMech LP's rows: a greedy delta-spanner of the space and its path distances
(Bordenabe, Chatzikokolakis, Palamidessi, CCS 2014; Imola et al. 2022, section 5).

Imposing the privacy rows only on the edges of a delta-spanner ``G`` at level ``eps / delta``,

.. math:: M_{uw} \le e^{(\epsilon/\delta) D_{uv}} M_{vw} \quad \forall (u, v) \in E(G),\ \forall w,

is sound: chaining along a shortest path gives ``M_uw <= e^{(eps/delta) d_G(u,v)} M_vw <=
e^{eps D_uv} M_vw``. The spanner is the classic greedy one (Althoefer et al. 1993): scan pairs by
increasing distance and add ``(u, v)`` when the current graph distance exceeds ``delta D[u, v]``.
The all-pairs graph distances are kept in a dense matrix updated in ``O(n^2)`` per added edge.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import shortest_path

from ...errors import ParameterError

__all__ = ["greedy_spanner", "spanner_distances"]


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


def spanner_distances(distances: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Shortest-path distances ``d_G`` of the spanner with ``edges`` (weights ``D[u, v]``), by
    SciPy's Dijkstra; ``d_G(u, v) = D[u, v]`` on the edges and ``D <= d_G <= stretch D`` elsewhere."""
    D = np.asarray(distances, dtype=float)
    n = D.shape[0]
    graph = csr_matrix((D[edges[:, 0], edges[:, 1]], (edges[:, 0], edges[:, 1])), shape=(n, n))
    return shortest_path(graph, method="D", directed=False)
