r"""When epsilon leaves no meaningful privacy on a space.

mDP bounds the odds of telling inputs :math:`x, x'` apart by :math:`e^{\epsilon d(x, x')}`.
When, for most points, even the nearest other point is allowed odds beyond
:math:`e^{T}` (:data:`NO_PRIVACY_EXPONENT`, :math:`T = 10`: about 22,000 to 1), the outputs
all but reveal the input, and a small loss says so rather than that the mechanism is good.

The rule looks at the distribution of nearest-neighbour distances, not at the closest pair: on
5,000 GloVe words the closest pair is 0.35 apart but the median nearest-neighbour distance is
2.7, so epsilon 10 per unit protects the closest pair a little and almost no other word. The
warning fires when at least half the points have :math:`\epsilon\, d_{nn} > T`. On a space
without a distance matrix (:class:`~mdp.spaces.vector_space.VectorSpace`) the distances are those of a
fixed sample of points to every point.
"""

from __future__ import annotations

import numpy as np

__all__ = ["NO_PRIVACY_EXPONENT", "nearest_neighbour_distances", "weak_privacy_message"]

#: ``epsilon * d`` above which two points are told apart with odds beyond ``exp(10)`` (about
#: 22,000): no meaningful privacy is left between them.
NO_PRIVACY_EXPONENT = 10.0
#: Points of a vector space whose nearest neighbours are measured (a fixed sample: the median
#: of 64 is within about 15% of the whole vocabulary's, enough for a warning; 0.2 s on the
#: 400,000 words of GloVe).
VECTOR_SAMPLE = 64
#: Points of a vector space compared with the sample at once (bounds the temporary products).
_BLOCK = 65536


def nearest_neighbour_distances(space_or_distances, *, sample: int = VECTOR_SAMPLE) -> np.ndarray:
    """Distance from each point (or each of a fixed sample of a vector space's points) to its
    nearest other point; points equal to another (distance 0) are left out.

    Parameters
    ----------
    space_or_distances : ndarray (n, n), MetricSpace or VectorSpace
    sample : int
        Points measured on a space without a distance matrix (a fixed, seeded choice).
    """
    D = getattr(space_or_distances, "distances", space_or_distances)
    if isinstance(D, np.ndarray):
        D = np.asarray(D, dtype=float)
        rows = np.where(D > 0, D, np.inf)
        nn = rows.min(axis=1)
        return nn[np.isfinite(nn)]
    # a vector space: its points against a fixed sample, block by block
    space = space_or_distances
    P = np.asarray(space.points)
    n = int(space.n)
    idx = (np.arange(n) if n <= sample
           else np.sort(np.random.default_rng(0).choice(n, size=sample, replace=False)))
    # float32 where the squares cannot overflow it (a warning needs a few digits), else float64
    dtype = np.float32 if float(np.abs(P[idx]).max(initial=0.0)) < 1e15 else np.float64
    Q = P[idx].astype(dtype)
    q2 = np.einsum("ij,ij->i", Q, Q)
    best = np.full(len(idx), np.inf)
    for s in range(0, n, _BLOCK):
        X = P[s:s + _BLOCK].astype(dtype, copy=False)
        D2 = q2[:, None] + np.einsum("ij,ij->i", X, X)[None, :] - 2.0 * (Q @ X.T)
        # the point itself, or a duplicate (below the type's resolution of its squares)
        D2[D2 <= 1e3 * np.finfo(dtype).eps * (q2[:, None] + np.finfo(dtype).tiny)] = np.inf
        np.minimum(best, D2.min(axis=1), out=best)
    nn = np.sqrt(best)
    return nn[np.isfinite(nn)]


def weak_privacy_message(space_or_distances, epsilon: float) -> str | None:
    """A warning when ``epsilon`` leaves no meaningful privacy on the space (module docstring),
    else None."""
    if not np.isfinite(epsilon):
        return None
    nn = nearest_neighbour_distances(space_or_distances)
    if nn.size == 0:
        return None
    exceed = float(epsilon) * nn > NO_PRIVACY_EXPONENT
    share = float(exceed.mean())
    if share < 0.5:
        return None
    median = float(np.median(nn))
    sampled = "" if isinstance(getattr(space_or_distances, "distances", space_or_distances),
                               np.ndarray) else f" over {nn.size} sampled points"
    who = ("even its two closest points" if share == 1.0 else
           f"for {100 * share:.3g}% of its points even the nearest other point")
    return (f"epsilon = {epsilon:g} gives no meaningful privacy on this space: the guarantee "
            f"lets {who} be told apart with odds above exp({NO_PRIVACY_EXPONENT:g}) (closest "
            f"pair {float(nn.min()):.4g} apart, median nearest-neighbour distance {median:.4g}"
            f"{sampled}), so it protects almost nothing; a meaningful epsilon is at most about "
            f"{NO_PRIVACY_EXPONENT / median:.3g} here (odds exp({NO_PRIVACY_EXPONENT:g}) between a "
            "typical point and its nearest neighbour)")
