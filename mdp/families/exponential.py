r"""Exponential and weighted exponential mechanisms (seed imola2022, section 3.1).

.. math:: \Pr[\mathrm{EXPMECH}_Y(w_i) = w_j] =
          \frac{Y_j e^{-\epsilon d(w_i, w_j)/2}}{\sum_k Y_k e^{-\epsilon d(w_i, w_k)/2}}

``Y = 1`` is the plain exponential mechanism (McSherry & Talwar 2007). Proposition 1: for any
positive weights the mechanism is eps-mDP (each factor moves by at most ``eps d(u, v)/2``).
It is usually *more* private than eps (measured pure level 0.80-0.88 eps, notes section 1),
which is why mechanisms are compared on ``eps_tight`` (:func:`mdp.calibrate`).
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

from ..registry import register
from ..space import MetricSpace

__all__ = ["exponential_matrix", "inverse_density_weights"]


def exponential_matrix(distances: np.ndarray, epsilon: float, weights: np.ndarray | None = None) -> np.ndarray:
    """Row-normalised ``Y_j exp(-epsilon D[i, j] / 2)`` computed in log space."""
    logits = -0.5 * epsilon * np.asarray(distances, dtype=float)
    if weights is not None:
        logits = logits + np.log(weights)[None, :]
    return np.exp(logits - logsumexp(logits, axis=1, keepdims=True))


def inverse_density_weights(distances: np.ndarray, epsilon: float) -> np.ndarray:
    r"""The default weights ``Y_j = 1 / sum_k exp(-epsilon D[j, k] / 2)``.

    The seed's rule of thumb (section 3.1): dense elements should be weighted less, so that a
    dense cluster does not act as a "black hole" for outliers.
    """
    return np.exp(-logsumexp(-0.5 * epsilon * np.asarray(distances, dtype=float), axis=1))


@register("exponential", description="exponential mechanism, Pr ~ exp(-eps d/2) (McSherry-Talwar; seed 3.1)")
def build_exponential(space: MetricSpace, epsilon: float, *, rng=None) -> np.ndarray:
    """Plain exponential mechanism ``Pr[w_i -> w_j] ~ exp(-eps d(w_i, w_j) / 2)``."""
    return exponential_matrix(space.distances, epsilon)


@register("weighted_exponential",
          description="weighted exponential mechanism, Pr ~ Y_j exp(-eps d/2) (seed 3.1, Prop. 1)")
def build_weighted_exponential(space: MetricSpace, epsilon: float, *, rng=None,
                               Y="inverse_density") -> np.ndarray:
    """Weighted exponential mechanism ``Pr[w_i -> w_j] ~ Y_j exp(-eps d(w_i, w_j) / 2)``.

    Parameters
    ----------
    Y : array-like of n positive weights, or "inverse_density" (default)
        ``"inverse_density"`` is :func:`inverse_density_weights`. Lemma 1's black-hole fix is
        ``Y = (1, 1/(n-1), ..., 1/(n-1))``.
    """
    if isinstance(Y, str):
        if Y != "inverse_density":
            raise ValueError(f"Y must be an array of weights or 'inverse_density', got {Y!r}")
        w = inverse_density_weights(space.distances, epsilon)
    else:
        w = np.asarray(Y, dtype=float)
        if w.shape != (space.n,):
            raise ValueError(f"Y must have length n={space.n}, got shape {w.shape}")
        if not np.all(np.isfinite(w)) or np.any(w <= 0):
            raise ValueError("Y must be finite and > 0 (Proposition 1 needs positive weights)")
    return exponential_matrix(space.distances, epsilon, w)
