"""Seeded synthetic metric spaces of the kinds users bring to the LP mechanisms.

Each kind stresses the LP builds differently (spread of distances, ties, scales, dimension):

================  ============================================================================
kind              space
================  ============================================================================
``city_latlon``   uniform points in a city box of about 11 x 11 km, (lat, lon) in degrees,
                  haversine distances in km
``clustered``     planar points in 6 Gaussian clusters (sd 0.6) with centres in a 12 x 12 box
``grid_ties``     a unit grid whose points are moved by multiples of 1/4 in each coordinate:
                  many pairs at exactly equal distances and many collinear triples
``two_scales``    3/4 of the points in a unit square (a dense centre), the rest in far suburbs
                  at 20 to 60 units from it: distances span about four decades
``road_graph``    shortest-path distances on a road-like graph: a jittered grid of junctions
                  whose streets (lengths times 1 to 1.3) are kept with probability 0.8, and
                  always along a random spanning tree so every junction is reachable
``embedding``     50-dimensional points of an 8-component Gaussian mixture (embedding-like:
                  the distances concentrate around their median)
================  ============================================================================

The road graph's distances are those a user computes (all-pairs shortest paths,
:func:`scipy.sparse.csgraph.shortest_path`) and gives as a ``.npy`` distance matrix; every other
kind is built from its points with :meth:`mdp.spaces.metric_space.MetricSpace.from_points`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import minimum_spanning_tree, shortest_path

from ..errors import ParameterError
from ..validation import check_int, check_rng
from .metric_space import MetricSpace

__all__ = ["SPACE_KINDS", "synthetic_space"]


def _city_latlon(n: int, rng: np.random.Generator) -> MetricSpace:
    lat = rng.uniform(45.70, 45.80, n)
    lon = rng.uniform(4.78, 4.92, n)
    return MetricSpace.from_points(np.c_[lat, lon], metric="haversine")


def _clustered(n: int, rng: np.random.Generator) -> MetricSpace:
    centres = rng.uniform(0.0, 12.0, size=(6, 2))
    return MetricSpace.from_points(centres[rng.integers(0, 6, n)]
                                   + rng.normal(0.0, 0.6, size=(n, 2)))


def _grid_side(n: int) -> int:
    return int(np.ceil(np.sqrt(n)))


def _grid_ties(n: int, rng: np.random.Generator) -> MetricSpace:
    side = _grid_side(n)
    grid = np.stack(np.divmod(np.arange(n), side), axis=1).astype(float)
    # moves of -1/4, 0 or 1/4 keep every point on a quarter lattice (distinct: a move is under
    # half the spacing), so equal distances are common rather than accidental
    return MetricSpace.from_points(grid + 0.25 * rng.integers(-1, 2, size=(n, 2)))


def _two_scales(n: int, rng: np.random.Generator) -> MetricSpace:
    centre = rng.uniform(0.0, 1.0, size=(n - n // 4, 2))
    radius = rng.uniform(20.0, 60.0, n // 4)
    angle = rng.uniform(0.0, 2.0 * np.pi, n // 4)
    suburbs = 0.5 + radius[:, None] * np.c_[np.cos(angle), np.sin(angle)]
    return MetricSpace.from_points(np.r_[centre, suburbs])


def road_graph_distances(n: int, *, rng=None) -> np.ndarray:
    """All-pairs shortest-path distances of a seeded road-like graph of ``n`` junctions.

    Junctions sit on a unit grid (row-major, ``ceil(sqrt(n))`` per row) moved by up to 0.3 in
    each coordinate; each street joins grid neighbours with length its Euclidean length times a
    factor uniform in [1, 1.3] (streets are not straight). A street is kept with probability 0.8
    and always when it lies on the minimum spanning tree of random weights, so the graph is
    connected.

    Parameters
    ----------
    n : int
        Number of junctions, at least 2.
    rng : None, int or numpy.random.Generator, keyword-only

    Returns
    -------
    ndarray of shape (n, n)
        The distance matrix (symmetric, zero diagonal, triangle inequality by construction).
    """
    n = check_int(n, "n", low=2)
    rng = check_rng(rng)
    side = _grid_side(n)
    row, col = np.divmod(np.arange(n), side)
    xy = np.c_[col, row] + rng.uniform(-0.3, 0.3, size=(n, 2))
    right = np.flatnonzero((col + 1 < side) & (np.arange(n) + 1 < n))
    down = np.flatnonzero(np.arange(n) + side < n)
    u = np.r_[right, down]
    v = np.r_[right + 1, down + side]
    length = np.linalg.norm(xy[u] - xy[v], axis=1) * rng.uniform(1.0, 1.3, len(u))
    tree = minimum_spanning_tree(coo_matrix((rng.uniform(1.0, 2.0, len(u)), (u, v)),
                                            shape=(n, n))).tocoo()
    in_tree = np.zeros((n, n), dtype=bool)
    in_tree[tree.row, tree.col] = True
    keep = (rng.random(len(u)) < 0.8) | in_tree[u, v] | in_tree[v, u]
    graph = coo_matrix((length[keep], (u[keep], v[keep])), shape=(n, n)).tocsr()
    D = shortest_path(graph, method="D", directed=False)
    return 0.5 * (D + D.T)


def _road_graph(n: int, rng: np.random.Generator) -> MetricSpace:
    return MetricSpace.from_distances(road_graph_distances(n, rng=rng))


def _embedding(n: int, rng: np.random.Generator) -> MetricSpace:
    centres = rng.normal(0.0, 1.0, size=(8, 50))
    return MetricSpace.from_points(centres[rng.integers(0, 8, n)]
                                   + rng.normal(0.0, 0.5, size=(n, 50)))


_BUILDERS: dict[str, Callable[[int, np.random.Generator], MetricSpace]] = {
    "city_latlon": _city_latlon,
    "clustered": _clustered,
    "grid_ties": _grid_ties,
    "two_scales": _two_scales,
    "road_graph": _road_graph,
    "embedding": _embedding,
}

#: The kinds of :func:`synthetic_space`, in the order of the module docstring's table.
SPACE_KINDS: tuple[str, ...] = tuple(_BUILDERS)


def synthetic_space(kind: str, n: int, *, rng=None) -> MetricSpace:
    """A seeded synthetic space of ``n`` points of one of :data:`SPACE_KINDS`.

    Parameters
    ----------
    kind : str
        One of :data:`SPACE_KINDS` (module docstring for what each is).
    n : int
        Number of points, at least 2.
    rng : None, int or numpy.random.Generator, keyword-only
        The points' randomness (None: OS entropy); the same seed gives the same space.

    Returns
    -------
    MetricSpace

    Raises
    ------
    mdp.errors.ParameterError
        An unknown ``kind`` or ``n < 2``.
    """
    if kind not in _BUILDERS:
        raise ParameterError(f"unknown synthetic space kind {kind!r}; use one of "
                             f"{', '.join(SPACE_KINDS)}")
    return _BUILDERS[kind](check_int(n, "n", low=2), check_rng(rng))
