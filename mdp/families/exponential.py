r"""Exponential and weighted exponential mechanisms (Imola et al. 2022, section 3.1).

.. math:: \Pr[\mathrm{EXPMECH}_Y(w_i) = w_j] =
          \frac{Y_j e^{-\epsilon d(w_i, w_j)/2}}{\sum_k Y_k e^{-\epsilon d(w_i, w_k)/2}}

``Y = 1`` is the plain exponential mechanism (McSherry & Talwar 2007). Proposition 1: for any
positive weights the mechanism is eps-mDP (each factor moves by at most ``eps d(u, v)/2``).
It is usually *more* private than eps (measured pure level 0.80-0.88 eps, notes section 1),
which is why mechanisms are compared on ``eps_tight`` (:func:`mdp.calibrate`).
"""

from __future__ import annotations

import numpy as np

from ..candidate import Candidate
from ..errors import ParameterError
from ..params import Param
from ..privacy.accounting import loss as mech_loss
from ..privacy.accounting import row_logsumexp
from ..registry import register
from ..spaces.metric_space import MetricSpace

__all__ = ["exponential_floor", "exponential_log_matrix", "exponential_matrix", "inverse_density_weights",
           "inverse_density_log_weights"]


def exponential_log_matrix(distances: np.ndarray, epsilon: float, weights: np.ndarray | None = None,
                           *, log_weights: np.ndarray | None = None) -> np.ndarray:
    r"""Natural log-probabilities of the (weighted) exponential mechanism, by log-sum-exp.

    .. math:: L_{ij} = \log Y_j - \frac{\epsilon d_{ij}}{2}
              - \log \sum_k Y_k e^{-\epsilon d_{ik} / 2}

    No probability underflows: ``L`` is finite for every ``epsilon * d`` (``e^-5000`` is
    ``L = -5000 - ...``), each entry within a few units in the last place of the closed form.

    Parameters
    ----------
    distances : ndarray (n, n)
    epsilon : float
    weights : ndarray (n,), optional
        Positive weights ``Y`` (``None``: all 1).
    log_weights : ndarray (n,), optional, keyword-only
        ``log Y`` instead of ``weights``.
    """
    logits = -0.5 * epsilon * np.asarray(distances, dtype=float)
    if weights is not None:
        logits += np.log(np.asarray(weights, dtype=float))[None, :]
    if log_weights is not None:
        logits += np.asarray(log_weights, dtype=float)[None, :]
    logits -= row_logsumexp(logits)[:, None]
    return logits


def exponential_matrix(distances: np.ndarray, epsilon: float, weights: np.ndarray | None = None) -> np.ndarray:
    """Row-normalised ``Y_j exp(-epsilon D[i, j] / 2)``: ``exp`` of :func:`exponential_log_matrix`
    (entries below ~1e-308 underflow to 0; use the log matrix at large ``epsilon * d``)."""
    with np.errstate(under="ignore"):
        return np.exp(exponential_log_matrix(distances, epsilon, weights))


def inverse_density_log_weights(distances: np.ndarray, epsilon: float) -> np.ndarray:
    """``log Y_j = -log sum_k exp(-epsilon D[j, k] / 2)`` (:func:`inverse_density_weights`)."""
    return -row_logsumexp(-0.5 * epsilon * np.asarray(distances, dtype=float))


def inverse_density_weights(distances: np.ndarray, epsilon: float) -> np.ndarray:
    r"""The default weights ``Y_j = 1 / sum_k exp(-epsilon D[j, k] / 2)``.

    Imola et al. 2022's rule of thumb (section 3.1): dense elements should be weighted less, so
    that a dense cluster does not act as a "black hole" for outliers. Each ``Y_j`` lies in
    ``[1/n, 1]`` (the sum includes ``k = j``), so it never underflows.
    """
    return np.exp(inverse_density_log_weights(distances, epsilon))


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
    """Plain exponential mechanism ``Pr[w_i -> w_j] ~ exp(-eps d(w_i, w_j) / 2)``.

    Returned as log-probabilities (:func:`exponential_log_matrix`): exact at any epsilon.
    """
    return Candidate(log_matrix=exponential_log_matrix(space.distances, epsilon))


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
        logw = inverse_density_log_weights(space.distances, epsilon)
    else:
        w = _check_weights("Y", Y)
        if w.shape != (space.n,):
            raise ParameterError(f"Y must have length n={space.n}, got shape {w.shape}")
        logw = np.log(w)
    return Candidate(log_matrix=exponential_log_matrix(space.distances, epsilon, log_weights=logw))


def exponential_floor(values: np.ndarray | None, log: bool, distances: np.ndarray, epsilon: float,
                      stats: dict, *, family: str, reason: str | None = None) -> Candidate:
    """The LP-derived candidate, or the exponential mechanism when that is better or the LP failed.

    A fallback is never worse (worst-case loss) than the exponential mechanism at the same epsilon
    (McSherry & Talwar 2007, in log-probabilities: exact at any ``eps * d``).

    Parameters
    ----------
    values : ndarray (n, n) or None
        The LP-derived matrix (log-probabilities when ``log``); ``None`` when the LP failed.
    log : bool
    distances : ndarray (n, n)
    epsilon : float
    stats : dict
        Build statistics (copied; ``fallback`` is added when the exponential mechanism is
        returned: ``{"to": "exponential", "reason": ..., "lp_loss": ..., "exponential_loss": ...}``).
    family : str
        Display name for the reason.
    reason : str or None
        Why the LP gave no matrix (with ``values=None``).
    """
    D = np.asarray(distances, dtype=float)
    E = exponential_log_matrix(D, epsilon)
    exp_loss = mech_loss(E, D, log=True)
    stats = dict(stats)
    if values is not None:
        lp_loss = mech_loss(values, D, log=log)
        if lp_loss <= exp_loss:
            return Candidate(log_matrix=values, stats=stats) if log else Candidate(matrix=values, stats=stats)
        reason = (f"the matrix left by the LP (loss {lp_loss:.6g}) is worse than the "
                  f"exponential mechanism (loss {exp_loss:.6g})")
    else:
        lp_loss = None
    stats["fallback"] = {"to": "exponential", "reason": f"{family}: {reason}", "lp_loss": lp_loss,
                         "exponential_loss": exp_loss}
    stats["loss"] = exp_loss
    return Candidate(log_matrix=E, stats=stats)
