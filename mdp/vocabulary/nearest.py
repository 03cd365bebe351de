r"""Exact nearest-neighbour queries over a vocabulary, and a lower bound of its closest pair.

:class:`NearestIndex` answers "which point is nearest to ``z``" exactly, by one of four
algorithms: ``"screened"`` (the default: a float32 screen with a rigorous error bound, then an
exact re-rank of the few candidates, :mod:`mdp.vocabulary.nearest_screen`) or scikit-learn's
``NearestNeighbors`` (``"brute"``, float64 BLAS distances in chunks; ``"kd_tree"``;
``"ball_tree"``). An approximate index (LSH, HNSW) is not offered: releasing
its answer is still post-processing of the noisy point, so the privacy guarantee would not
change, but the released word would no longer be the nearest one, so the mechanism would not
be Madlib and nothing measured on Madlib's matrix (``eps_tight``, ``L_q``) would describe it.

:func:`min_distance_lower_bound` bounds from below the smallest distance between two distinct
points without an ``n x n`` pass: the points are projected on their ``k`` principal directions
(an orthonormal ``P``, so ``||P(x - y)|| <= ||x - y||``), the closest projected pair is found
exactly with a KD-tree (fast in ``k`` dimensions), and the rounding of the projection is
subtracted. The exponential mechanism's vocabulary mode needs it to turn its bound on the
rounding of each log-probability into a pure guarantee (:mod:`mdp.vocabulary.mode`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import ParameterError
from ..privacy.rounding import UNIT_ROUNDOFF
from .nearest_screen import ScreenedNearest, ScreenTuning

__all__ = ["NearestPlan", "NearestIndex", "min_distance_lower_bound", "EXACT_ALGORITHMS"]

#: The exact nearest-neighbour algorithms: the float32 screen with exact re-rank, and
#: scikit-learn's.
EXACT_ALGORITHMS = ("screened", "brute", "kd_tree", "ball_tree")


@dataclass(frozen=True)
class NearestPlan:
    """How nearest-neighbour queries are answered.

    Attributes
    ----------
    algorithm : {"screened", "brute", "kd_tree", "ball_tree"}
        ``"screened"`` (default): the fastest exact method measured on the 400,000 words of
        GloVe in 50 dimensions (10^4 Madlib queries at epsilon 10: 5.6-6.0 CPU seconds against
        16.8-17.2 for ``"brute"``, the same answers), and the only one whose answer is the exact
        nearest point also at near-ties (scikit-learn ranks on rounded distances). The trees
        visit nearly every leaf for noisy queries far from the data: 40x slower than
        ``"brute"``.
    chunk : int
        Queries per scikit-learn call (bounds its temporary ``chunk x n`` distances).
    screen : ScreenTuning
        Blocks and limits of ``"screened"``.
    """

    algorithm: str = "screened"
    chunk: int = 2048
    screen: ScreenTuning = ScreenTuning()

    def __post_init__(self):
        if self.algorithm not in EXACT_ALGORITHMS:
            raise ParameterError(f"algorithm must be one of {EXACT_ALGORITHMS} (exact), got "
                                 f"{self.algorithm!r}")
        if not isinstance(self.chunk, int) or self.chunk < 1:
            raise ParameterError(f"chunk must be a positive integer, got {self.chunk!r}")
        if not isinstance(self.screen, ScreenTuning):
            raise ParameterError(f"screen must be a ScreenTuning, got {self.screen!r}")


class NearestIndex:
    """Exact nearest neighbour of query points among ``points``.

    Parameters
    ----------
    points : ndarray (n, d)
    plan : NearestPlan, optional
    """

    def __init__(self, points: np.ndarray, plan: NearestPlan | None = None):
        self.plan = plan or NearestPlan()
        self._points = points
        if self.plan.algorithm == "screened":
            self._screen = ScreenedNearest(points, self.plan.screen)
            self._nn = None
        else:
            self._screen = None
            from sklearn.neighbors import NearestNeighbors  # on use: half a second to import

            self._nn = NearestNeighbors(n_neighbors=1, algorithm=self.plan.algorithm).fit(points)

    @property
    def last_stats(self) -> dict:
        """What the latest query of the ``"screened"`` algorithm did (empty for the others)."""
        return self._screen.last_stats if self._screen is not None else {}

    def query(self, z) -> np.ndarray:
        """Index of the nearest point to each row of ``z``.

        ``"screened"`` takes ``z`` in float64 and returns the exactly nearest point, the lowest
        index among exact ties; scikit-learn's algorithms round ``z`` to the points' dtype
        and rank on their computed distances (ties: their order).
        """
        if self._screen is not None:
            return self._screen.query(z)
        z = np.atleast_2d(np.asarray(z, dtype=self._points.dtype))
        out = np.empty(len(z), dtype=np.int64)
        for s in range(0, len(z), self.plan.chunk):
            out[s:s + self.plan.chunk] = self._nn.kneighbors(
                z[s:s + self.plan.chunk], n_neighbors=1, return_distance=False)[:, 0]
        return out


    def query_two(self, z) -> tuple[np.ndarray, np.ndarray]:
        """The two nearest points of each row of ``z`` and their distances (columns in order of
        distance): :meth:`ScreenedNearest.query_two`, or scikit-learn's ``kneighbors``."""
        if self._screen is not None:
            return self._screen.query_two(z)
        z = np.atleast_2d(np.asarray(z, dtype=self._points.dtype))
        dist, idx = self._nn.kneighbors(z, n_neighbors=2)
        return idx.astype(np.int64), dist


def min_distance_lower_bound(points: np.ndarray, *, dims: int = 8, sample: int = 5000,
                             rng=0) -> float:
    r"""A rigorous lower bound of ``min ||x - y||`` over pairs of distinct points.

    Projects on ``dims`` principal directions (of a sample of ``sample`` points; orthonormal
    by a QR factorisation), finds the closest pair of projections with a KD-tree, and subtracts
    a bound on the rounding: each projected coordinate is a dot product of ``d`` terms
    (error ``<= gamma_d ||x||``), the orthonormality defect of ``P`` is measured and divided
    out. Bit-identical points are one point (distance 0 is not a distinct pair).

    Returns
    -------
    float
        ``>= 0``; 0 when the projection cannot separate some pair.
    """
    X = np.unique(np.ascontiguousarray(np.asarray(points, dtype=np.float64)), axis=0)
    n, d = X.shape
    if n < 2:
        return math.inf
    k = min(dims, d)
    gen = np.random.default_rng(rng)
    S = X[gen.choice(n, size=min(n, sample), replace=False)]
    _, _, Vt = np.linalg.svd(S - S.mean(axis=0), full_matrices=False)
    Q, _ = np.linalg.qr(Vt[:k].T)                  # d x k, orthonormal columns
    P = Q.T
    # ||P v|| <= sigma_max(P) ||v||: measured defect of the orthonormality, with margin
    sigma = float(np.linalg.norm(P, 2)) * (1 + 1e-12)
    Y = X @ P.T
    from scipy.spatial import cKDTree

    from ..runtime.threads import available_cpus, pool_threads

    # SciPy's tree answers the queries on the plan's threads (scikit-learn's KDTree has one:
    # four times slower on GloVe's 50,000 words, docs/results/word-mechanisms.md)
    dist, _ = cKDTree(Y).query(Y, k=2, workers=pool_threads(available_cpus()))
    closest = float(dist[:, 1].min())
    R = float(np.sqrt(np.einsum("ij,ij->i", X, X).max()))
    gamma = (d + 2) * UNIT_ROUNDOFF / (1 - (d + 2) * UNIT_ROUNDOFF)
    proj_err = 2 * math.sqrt(k) * gamma * R * sigma      # two points, k coordinates each
    tree_err = 4 * (k + 2) * UNIT_ROUNDOFF * (closest + proj_err)   # the tree's own distance rounding
    return max(0.0, (closest - proj_err - tree_err) / sigma * (1 - 1e-12))
