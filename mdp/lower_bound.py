r"""Packing lower bound on the loss of any eps-mDP mechanism (Imola et al. 2022, Theorem 3).

For a (c, r, Q)-packing ``S`` (balls ``B(x, r) = {y in W : d(x, y) <= r}`` around the points of
``S`` pairwise disjoint), every eps-mDP mechanism has

.. math:: \mathcal{L}(M) \ge \max_{w \in W} r\Big(1 - \frac{1}{N(w, S)}\Big), \qquad
          N(w, S) = \sum_{s \in S} e^{-\epsilon d(w, s)}.

*Radius.* For centres ``S`` the balls are disjoint exactly when ``r < r*(S)`` with
``r*(S) = min_{x != x' in S} min_{y in W} max(d(x, y), d(x', y))`` (no point of W within r of
two centres). The bound holds for every ``r < r*`` and is continuous in r, hence at ``r = r*``.
``r* >= min_{x != x'} d(x, x') / 2`` by the triangle inequality, and is often larger on a finite
space.

*Approximate mDP.* The same argument holds for (eps, delta)-mDP (Imola et al. 2022, eq. 9) with a loss of
delta: taking ``S = B(s, r)`` in eq. 9 gives ``Pr[M(w) in B(s, r)] >= e^{-eps d(w, s)} (a - delta)``
with ``a = min_s Pr[M(s) in B(s, r)]``; summing over the disjoint balls gives
``a <= 1/N(w, S) + delta`` and so

.. math:: \mathcal{L}(M) \ge \max_{w} r\Big(1 - \frac{1}{N(w, S)} - \delta\Big),

which is the bound that applies on an ``eps_tight(delta)`` axis (``delta = 0`` is Theorem 3).
All bounds are on the *worst-case* loss (eq. 1), not on a quantile loss.

*Packings.* As in the paper, candidates come from k-center: Gonzalez's farthest-first traversal
orders the points so that every prefix of length k is the greedy k-center solution; all
``k = 2..n`` are scored in one pass (``r*`` of a prefix is a running minimum). The best bound
over the candidates (and over the optional extra starting points) is returned with its packing.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import ParameterTypeError
from .spaces.metric_space import MetricSpace
from .validation import check_epsilon, check_int, check_probability, check_rng

__all__ = ["LowerBound", "lower_bound", "farthest_first_order"]


@dataclass(frozen=True)
class LowerBound:
    """The bound and the packing achieving it.

    Attributes
    ----------
    value : float
        ``max_w r (1 - 1/N(w, S) - delta)``; a lower bound on the worst-case loss (Imola et al. 2022, eq. 1)
        of every (eps, delta)-mDP mechanism on the space.
    epsilon : float
    delta : float
    centres : ndarray of int
        Indices of the packing ``S`` (c = len(centres)).
    r : float
        Ball radius ``r*(S)``.
    Q : float
        Largest distance between centres.
    w : int
        The point attaining the maximum over w.
    """

    value: float
    epsilon: float
    delta: float
    centres: np.ndarray
    r: float
    Q: float
    w: int

    @property
    def c(self) -> int:
        return int(len(self.centres))

    def __float__(self) -> float:
        return float(self.value)

    def __repr__(self) -> str:
        return (f"LowerBound(value={self.value:.6g}, epsilon={self.epsilon:g}, delta={self.delta:g}, c={self.c}, "
                f"r={self.r:.6g}, Q={self.Q:.6g}, w={self.w})")


def farthest_first_order(D: np.ndarray, start: int = 0) -> np.ndarray:
    """Gonzalez's farthest-first traversal: each next point is the farthest from those chosen."""
    n = D.shape[0]
    order = np.empty(n, dtype=np.int64)
    order[0] = start
    dist = D[start].copy()
    for k in range(1, n):
        nxt = int(np.argmax(dist))
        order[k] = nxt
        np.minimum(dist, D[nxt], out=dist)
        dist[order[:k + 1]] = -1.0
    return order


def _best_over_prefixes(D: np.ndarray, order: np.ndarray, epsilons: np.ndarray, delta: float):
    n = D.shape[0]
    N = np.exp(-np.multiply.outer(epsilons, D[:, order[0]]))        # (E, n): N(w, S_1)
    r_star = np.inf
    best = np.full(len(epsilons), -np.inf)
    best_k = np.zeros(len(epsilons), dtype=np.int64)
    best_r = np.zeros(len(epsilons))
    best_w = np.zeros(len(epsilons), dtype=np.int64)
    # nearest[y] = min_{x in S} d(x, y) over the prefix so far: r*(S) for the new pairs (c, x),
    # min_x min_y max(d(c, y), d(x, y)), is min_y max(d(c, y), nearest[y]) (max is monotone),
    # O(n) per prefix instead of O(k n), and exactly the same floats
    nearest = np.array(D[order[0]], dtype=float)
    for k in range(1, n):
        c = order[k]
        r_star = min(r_star, float(np.maximum(D[c], nearest).min()))
        np.minimum(nearest, D[c], out=nearest)
        N += np.exp(-np.multiply.outer(epsilons, D[:, c]))
        # N underflows to 0 (or a subnormal) for a w far from every centre at a large eps: its
        # bound is -inf, the right limit, and never the maximum
        with np.errstate(divide="ignore", over="ignore"):
            vals = r_star * (1.0 - 1.0 / N - delta)                  # (E, n)
        w = vals.argmax(axis=1)
        v = vals[np.arange(len(epsilons)), w]
        better = v > best
        best = np.where(better, v, best)
        best_k = np.where(better, k + 1, best_k)
        best_r = np.where(better, r_star, best_r)
        best_w = np.where(better, w, best_w)
    return best, best_k, best_r, best_w


def lower_bound(space: MetricSpace, epsilon: float, *, delta: float = 0.0, starts: int = 1,
                rng=None) -> LowerBound:
    """Theorem 3's lower bound, best over k-center packings for k = 2..n.

    Parameters
    ----------
    space : MetricSpace
    epsilon : float > 0
    delta : float in [0, 1), default 0
        For (eps, delta)-mDP mechanisms (module docstring); 0 is the paper's Theorem 3.
    starts : int, default 1
        Number of farthest-first traversals: the first starts at the point of largest
        eccentricity (an endpoint of a diameter), further ones at random points.
    rng : None, int or Generator
        For the extra starting points.

    Returns
    -------
    LowerBound
    """
    epsilon = check_epsilon(epsilon)
    return lower_bounds(space, [epsilon], delta=delta, starts=starts, rng=rng)[0]


def lower_bounds(space: MetricSpace, epsilons, *, delta: float = 0.0, starts: int = 1,
                 rng=None) -> list[LowerBound]:
    """:func:`lower_bound` for several epsilons at once (one traversal serves them all)."""
    if not isinstance(space, MetricSpace):
        raise ParameterTypeError(f"space must be a MetricSpace, got {type(space).__name__}")
    eps = np.array([check_epsilon(e) for e in np.atleast_1d(epsilons)], dtype=float)
    delta = check_probability(delta, "delta")
    starts = check_int(starts, "starts", low=1)
    rng = check_rng(rng)
    D = np.asarray(space.distances)
    first = int(np.argmax(D.max(axis=1)))
    start_points = [first] + [int(s) for s in rng.choice(space.n, size=min(starts - 1, space.n), replace=False)]
    results = [None] * len(eps)
    for s in start_points:
        order = farthest_first_order(D, s)
        best, k, r, w = _best_over_prefixes(D, order, eps, delta)
        for i in range(len(eps)):
            if results[i] is None or best[i] > results[i].value:
                centres = np.sort(order[:k[i]])
                Q = float(D[np.ix_(centres, centres)].max())
                results[i] = LowerBound(float(max(best[i], 0.0)), float(eps[i]), delta, centres, float(r[i]), Q, int(w[i]))
    return results
