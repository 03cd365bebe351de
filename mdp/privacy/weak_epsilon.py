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
#: Points of a vector space whose nearest neighbours are measured (a fixed sample: the
#: median's error is a few percent, and 256 rows over 400,000 words of GloVe take about 0.2 s).
VECTOR_SAMPLE = 256


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
    else:
        space = space_or_distances
        n = int(space.n)
        idx = (np.arange(n) if n <= sample
               else np.sort(np.random.default_rng(0).choice(n, size=sample, replace=False)))
        rows = space.distances_from(idx)
        rows[rows <= 0] = np.inf
    nn = rows.min(axis=1)
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
           f"for {share:.0%} of its points even the nearest other point")
    return (f"epsilon = {epsilon:g} gives no meaningful privacy on this space: {who} may be "
            f"told apart with odds above exp({NO_PRIVACY_EXPONENT:g}) (closest pair "
            f"{float(nn.min()):.4g} apart, median nearest-neighbour distance {median:.4g}"
            f"{sampled}), so outputs all but reveal the input; a meaningful epsilon is at most "
            f"about {NO_PRIVACY_EXPONENT / median:.3g} here (odds exp({NO_PRIVACY_EXPONENT:g}) "
            "between a typical point and its nearest neighbour)")
