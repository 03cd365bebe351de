r"""Nested dissection of a sparse graph, for block inverses by recursive elimination.

The column blocks of the worst-case-loss LP (:mod:`mdp.worst_case.column_blocks`) share the sparsity of
the pair graph: ``K_w[u, v] != 0`` only for ``u = v`` or a pair ``(u, v)``. A vertex separator
``s`` splits a set of points into two halves with no pair between them; ordered
``(left, right, separator)`` the block is

.. math:: K = \begin{pmatrix} K_A & B \\ B^\top & K_S \end{pmatrix}, \quad
          K_A = \begin{pmatrix} K_L & 0 \\ 0 & K_R \end{pmatrix}, \qquad
          K^{-1} = \begin{pmatrix} K_A^{-1} + X Z^{-1} X^\top & -X Z^{-1} \\
          -Z^{-1} X^\top & Z^{-1} \end{pmatrix},

with ``X = K_A^{-1} B`` and ``Z = K_S - B^\top X`` (George 1973, nested dissection; this is
block Cholesky elimination in that order, written for the explicit inverse). Recursing on the
halves, the full inverse of a block costs about ``sum_t n_t^2 s_t`` flops over the tree's nodes
``t`` (``n_t`` points below ``t``, ``s_t`` in its separator) instead of ``n^3``: on the Geolife
cells' spanner (stretch 1.5) at n = 1000, separators of 39, 19 / 16, 10-15, ... points and
1.4e8 flops (:meth:`Dissection.flops`) against 1e9.

:func:`nested_dissection` finds the tree by spectral bisection (the median of the Fiedler vector
of each part's graph Laplacian) and a greedy vertex cover of the cut pairs as the separator.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg as sl
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

__all__ = ["DissectionNode", "Dissection", "nested_dissection", "LEAF_SIZE"]

#: Parts of at most this many points are leaves, inverted densely (LAPACK ``potrf`` + ``potri``).
LEAF_SIZE = 64


@dataclass(frozen=True)
class DissectionNode:
    """One node of the tree, over the points ``[start, stop)`` of the dissection order.

    A leaf (``mid == sep == stop``) is inverted densely. Otherwise ``[start, mid)`` and
    ``[mid, sep)`` are the two halves (no pair joins them) and ``[sep, stop)`` the separator;
    ``boundary`` lists the points of ``[start, sep)`` (relative to ``start``) paired with a
    separator point.
    """

    start: int
    mid: int
    sep: int
    stop: int
    boundary: np.ndarray

    @property
    def leaf(self) -> bool:
        return self.sep == self.stop and self.mid == self.sep

    def flops(self) -> float:
        """Flops of this node's step of the explicit inverse (leaf: ``potrf`` + ``potri``)."""
        if self.leaf:
            return float(self.stop - self.start) ** 3
        nt, s, nb = self.sep - self.start, self.stop - self.sep, len(self.boundary)
        return float(2 * nt * nt * s + 2 * nt * nb * s + 2 * nt * s * s + s ** 3)


@dataclass(frozen=True)
class Dissection:
    """A nested dissection: ``order[i]`` is the point placed at position ``i``; ``nodes`` in
    post-order (children before their parent), the root last."""

    order: np.ndarray
    nodes: tuple[DissectionNode, ...]

    @property
    def positions(self) -> np.ndarray:
        """The inverse permutation: ``positions[u]`` is where point ``u`` is placed."""
        pos = np.empty(len(self.order), dtype=np.int64)
        pos[self.order] = np.arange(len(self.order))
        return pos

    def flops(self) -> float:
        """Flops of one explicit inverse by :meth:`DissectionNode.flops` over the nodes."""
        return sum(node.flops() for node in self.nodes)


def _split_components(labels: np.ndarray, count: int) -> np.ndarray:
    """Sides (bool per point) of two groups of whole components, of sizes as equal as the
    greedy rule makes them (largest component first, onto the lighter side)."""
    sizes = np.bincount(labels, minlength=count)
    on_right = np.zeros(count, dtype=bool)
    load = [0, 0]
    for comp in np.argsort(-sizes, kind="stable"):
        side = int(load[1] < load[0])
        on_right[comp] = bool(side)
        load[side] += int(sizes[comp])
    return on_right[labels]


def _bisect(adj: sp.csr_matrix, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(left, right, separator)`` of ``nodes``: whole connected components on either side with
    an empty separator where the part's graph is disconnected; else the median split of the
    Fiedler vector, separator a greedy vertex cover of the pairs across it.

    A disconnected part (a spanner whose long edges the coefficient limit dropped, or a half
    whose separator was taken out) has no unique Fiedler vector: a median split of one cuts
    through a component and pays for a separator the components do not need
    (``docs/design/lp.md``).
    """
    sub = adj[nodes][:, nodes].tocsr()
    count, labels = connected_components(sub, directed=False)
    if count > 1:
        side = _split_components(labels, count)
        return nodes[~side], nodes[side], nodes[:0]
    sub = sub.tocoo()
    k = len(nodes)
    lap = -sub.toarray()
    lap[np.diag_indices(k)] = 0.0
    lap[np.diag_indices(k)] = -lap.sum(axis=1)
    _, vec = sl.eigh(lap, subset_by_index=[1, 1], check_finite=False)
    side = np.zeros(k, dtype=bool)
    side[np.argsort(vec[:, 0], kind="stable")[k // 2:]] = True
    across = (side[sub.row] != side[sub.col]) & (sub.row < sub.col)
    a, b = sub.row[across], sub.col[across]
    cover = []
    while len(a):
        # the point on the most uncovered pairs joins the separator
        v = int(np.argmax(np.bincount(np.r_[a, b], minlength=k)))
        cover.append(v)
        keep = (a != v) & (b != v)
        a, b = a[keep], b[keep]
    in_sep = np.zeros(k, dtype=bool)
    in_sep[cover] = True
    return nodes[~side & ~in_sep], nodes[side & ~in_sep], nodes[np.sort(np.asarray(cover, dtype=int))]


def nested_dissection(n: int, pi: np.ndarray, pj: np.ndarray, *,
                      leaf_size: int | None = None) -> Dissection:
    """The nested dissection of the graph on ``n`` points with edges ``(pi[k], pj[k])``.

    Parameters
    ----------
    n : int
    pi, pj : int arrays
        Edges (either direction; repeats allowed).
    leaf_size : int, optional
        Parts of at most this many points are not split (default :data:`LEAF_SIZE`).

    Returns
    -------
    Dissection
        Points reordered so that every node's halves and separator are contiguous.
    """
    leaf_size = LEAF_SIZE if leaf_size is None else leaf_size
    adj = sp.csr_matrix((np.ones(len(pi)), (np.asarray(pi), np.asarray(pj))), shape=(n, n))
    adj = ((adj + adj.T) > 0).astype(float).tocsr()
    order: list[np.ndarray] = []
    spans: list[tuple[int, int, int, int]] = []      # (start, mid, sep, stop) in post-order

    def place(points: np.ndarray, start: int) -> int:
        """Order ``points`` from position ``start`` (children, then the separator); the stop."""
        if len(points) > leaf_size:
            left, right, sep = _bisect(adj, points)
            if len(left) and len(right):
                mid = place(left, start)
                sep_start = place(right, mid)
                order.append(sep)
                spans.append((start, mid, sep_start, sep_start + len(sep)))
                return sep_start + len(sep)
        order.append(points)
        stop = start + len(points)
        spans.append((start, stop, stop, stop))
        return stop

    place(np.arange(n), 0)           # depth ~ log2(n / leaf_size): the median split halves
    tree_order = np.concatenate(order) if order else np.zeros(0, dtype=np.int64)
    pos = np.empty(n, dtype=np.int64)
    pos[tree_order] = np.arange(n)
    pairs = adj.tocoo()
    a, b = pos[pairs.row], pos[pairs.col]
    nodes = []
    for start, mid, sep, stop in spans:
        # the points below the node paired with its separator, relative to its start
        below = (a >= start) & (a < sep) & (b >= sep) & (b < stop)
        nodes.append(DissectionNode(start, mid, sep, stop, np.unique(a[below] - start)))
    return Dissection(tree_order, tuple(nodes))
