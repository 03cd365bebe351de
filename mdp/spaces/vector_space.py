r"""A finite Euclidean space held as its points only: vocabularies too large for a distance matrix.

A :class:`~mdp.MetricSpace` stores its ``n x n`` distances (1.3 TB for the 400,000 words of
GloVe 6B). A :class:`VectorSpace` stores the ``n x d`` points (80 MB for GloVe in float32) and
computes the distances it needs, one block of rows at a time. The distance is the Euclidean
distance between the stored points taken as exact real numbers (float32 points are widened
to float64 without rounding).

Rounding of the computed distances
----------------------------------
Rows of distances are computed with BLAS from
:math:`\lVert x - y \rVert^2 = \lVert x\rVert^2 + \lVert y\rVert^2 - 2 x\cdot y` in float64.
Each of the three terms is a sum of ``d`` products, whose error is at most
:math:`\gamma_d\,\sum_k |x_k y_k|` in any summation order (Higham 2002, section 3.1; fused
multiply-adds included), and two more roundings join them, so

.. math:: |\widetilde{d^2} - d^2| \le \gamma_{d+2}\,(\lVert x\rVert + \lVert y\rVert)^2
          \le 4\gamma_{d+2} R^2,\qquad \gamma_k = \frac{k u}{1 - k u},\ u = 2^{-53},

with ``R`` the largest norm of a point, and after clamping at 0 and a correctly rounded square
root (:math:`|\sqrt a - \sqrt b| \le \sqrt{|a - b|}`) every computed distance is within
:meth:`VectorSpace.distance_error` of the true one.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import ParameterError
from ..privacy.rounding import UNIT_ROUNDOFF
from .labels import LabelIndex

__all__ = ["VectorSpace"]



class VectorSpace(LabelIndex):
    """``n`` points of ``R^d`` with the Euclidean distance, and no distance matrix.

    Parameters
    ----------
    points : array-like (n, d)
        Finite coordinates; float32 stays float32 (half the memory), anything else becomes
        float64.
    labels : sequence of str, optional
        Unique labels (words).

    Attributes
    ----------
    n, dim : int
    points : ndarray (n, d), read-only
    labels : ndarray of str or None
    metric : str
        Always ``"euclidean"``.
    source : str or None
        The named embedding the points are vectors of, as :attr:`mdp.MetricSpace.source`.

    Raises
    ------
    ParameterError
        Fewer than 2 points, non-finite coordinates, labels of the wrong length or repeated.
    """

    metric = "euclidean"
    source: str | None = None

    def __init__(self, points, labels=None):
        P = np.asarray(points)
        if P.dtype != np.float32:
            try:
                P = P.astype(np.float64)
            except (TypeError, ValueError):
                raise ParameterError(f"points must be numeric, got dtype {P.dtype}") from None
        if P.ndim != 2 or P.shape[0] < 2 or P.shape[1] < 1:
            raise ParameterError(f"points must be an (n, d) array with n >= 2 and d >= 1, "
                                 f"got shape {P.shape}")
        finite = np.isfinite(P).all(axis=1)
        if not finite.all():
            raise ParameterError(f"points must be finite: row {int(np.flatnonzero(~finite)[0])} "
                                 "holds NaN or inf")
        P = np.array(P, copy=True)
        P.setflags(write=False)
        self.points = P
        self.n, self.dim = int(P.shape[0]), int(P.shape[1])
        if labels is not None:
            labels = np.asarray(list(labels) if not isinstance(labels, np.ndarray) else labels)
            if labels.dtype.kind != "U":
                labels = labels.astype(str)
            if labels.shape != (self.n,):
                raise ParameterError(f"labels must have length n = {self.n}, got shape {labels.shape}")
            # a set of the strings, not np.unique: sorting 400,000 fixed-width words took 1.2 s
            if len(set(labels.tolist())) != self.n:
                values, counts = np.unique(labels, return_counts=True)
                raise ParameterError(f"labels must be unique, got duplicates "
                                     f"{values[counts > 1][:5].tolist()}")
        self.labels = labels
        self._index = None
        self._wide = None
        self._sq = None
        self._canonical = None

    @classmethod
    def from_metric_space(cls, space) -> VectorSpace:
        """The points and labels of a Euclidean :class:`~mdp.MetricSpace` (its distances dropped).

        Raises
        ------
        ParameterError
            The space has no points or another metric.
        """
        if getattr(space, "points", None) is None or getattr(space, "metric", None) != "euclidean":
            raise ParameterError("vocabulary mode needs a space of Euclidean points; this space "
                                 f"has metric {getattr(space, 'metric', None)!r} and "
                                 f"{'no ' if getattr(space, 'points', None) is None else ''}points")
        out = cls(space.points, labels=space.labels)
        out.source = getattr(space, "source", None)
        return out

    # -- distances --------------------------------------------------------------------------------
    @property
    def wide_points(self) -> np.ndarray:
        """The points in float64 (exact widening; computed once)."""
        if self._wide is None:
            self._wide = np.asarray(self.points, dtype=np.float64)
            self._sq = np.einsum("ij,ij->i", self._wide, self._wide)
        return self._wide

    @property
    def max_norm(self) -> float:
        """Largest Euclidean norm of a point (rounded up)."""
        _ = self.wide_points
        return float(np.sqrt(self._sq.max())) * (1 + 4 * UNIT_ROUNDOFF)

    def distances_from(self, idx) -> np.ndarray:
        """Distances from the points ``idx`` to every point, shape ``(len(idx), n)``, float64.

        Each entry is within :meth:`distance_error` of the exact distance.
        """
        X = self.wide_points
        idx = np.atleast_1d(np.asarray(idx, dtype=np.int64))
        Q = X[idx]
        D2 = Q @ X.T
        D2 *= -2.0
        D2 += self._sq[idx][:, None]
        D2 += self._sq[None, :]
        np.maximum(D2, 0.0, out=D2)
        return np.sqrt(D2, out=D2)

    def distance_error(self) -> float:
        """A bound on ``|computed - exact|`` of every distance of :meth:`distances_from`
        (module docstring), rounded up."""
        k = self.dim + 2
        gamma = k * UNIT_ROUNDOFF / (1 - k * UNIT_ROUNDOFF)
        R = self.max_norm
        return (math.sqrt(4 * gamma) * R + 2 * UNIT_ROUNDOFF * 2 * R) * (1 + 1e-6) + 1e-300

    # -- duplicates -------------------------------------------------------------------------------
    @property
    def canonical(self) -> np.ndarray:
        """``canonical[i]``: the first index whose point is bit-identical to point ``i``.

        Points at distance 0 must get identical output distributions; a mechanism computes
        the row of ``canonical[i]`` for input ``i``.
        """
        if self._canonical is None:
            P = np.ascontiguousarray(self.points)
            _, first, inverse = np.unique(P, axis=0, return_index=True, return_inverse=True)
            self._canonical = first[np.ravel(inverse)].astype(np.int64)
        return self._canonical

    def __len__(self) -> int:
        return self.n

    def __repr__(self) -> str:
        lab = "" if self.labels is None else f", labels=[{', '.join(map(str, self.labels[:3]))}, ...]"
        return f"VectorSpace(n={self.n}, dim={self.dim}, metric='euclidean'{lab})"
