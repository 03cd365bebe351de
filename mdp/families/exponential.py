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

from ..candidate import Candidate
from ..errors import ParameterError
from ..params import Param
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


def _check_weights(name: str, value):
    if isinstance(value, str):
        if value != "inverse_density":
            raise ParameterError(f"{name} must be an array of weights or 'inverse_density', "
                                 f"got {value!r}")
        return value
    try:
        w = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ParameterError(f"{name} must be an array of positive numbers or "
                             f"'inverse_density', got {value!r}") from None
    if w.ndim != 1 or not np.all(np.isfinite(w)) or np.any(w <= 0):
        raise ParameterError(f"{name} must be a 1-d array of finite weights > 0 (Proposition 1 "
                             f"needs positive weights), got {value!r}")
    return w


@register("exponential", description="exponential mechanism, Pr ~ exp(-eps d/2) "
          "(McSherry & Talwar 2007; Imola et al. 2022, 3.1)", display_name="ExpMech")
def build_exponential(space: MetricSpace, epsilon: float, *, rng=None) -> Candidate:
    """Plain exponential mechanism ``Pr[w_i -> w_j] ~ exp(-eps d(w_i, w_j) / 2)``."""
    return Candidate(matrix=exponential_matrix(space.distances, epsilon))


@register("weighted_exponential",
          description="weighted exponential mechanism, Pr ~ Y_j exp(-eps d/2) "
          "(Imola et al. 2022, 3.1, Prop. 1)", display_name="weighted ExpMech",
          params={"Y": Param("custom", "inverse_density", check=_check_weights,
                             help="n positive weights, or 'inverse_density'")})
def build_weighted_exponential(space: MetricSpace, epsilon: float, *, rng=None,
                               Y="inverse_density") -> Candidate:
    """Weighted exponential mechanism ``Pr[w_i -> w_j] ~ Y_j exp(-eps d(w_i, w_j) / 2)``.

    Parameters
    ----------
    Y : array-like of n positive weights, or "inverse_density" (default)
        ``"inverse_density"`` is :func:`inverse_density_weights`. Lemma 1's black-hole fix is
        ``Y = (1, 1/(n-1), ..., 1/(n-1))``.
    """
    if isinstance(Y, str):
        w = inverse_density_weights(space.distances, epsilon)
    else:
        w = _check_weights("Y", Y)
        if w.shape != (space.n,):
            raise ParameterError(f"Y must have length n={space.n}, got shape {w.shape}")
    return Candidate(matrix=exponential_matrix(space.distances, epsilon, w))
