r"""The truncated exponential mechanism, TEM (Carvalho, Vasiloudis, Feyisetan, Wang, SDM 2023).

TEM turns privatizing a word into a selection. For the input :math:`w` it keeps the words
within a threshold :math:`\gamma`, :math:`L_w = \{w' : d(w, w') \le \gamma\}`, scores each by
:math:`-d(w, w')`, adds a *bottom bucket* :math:`\bot` scored
:math:`-\gamma + \frac{2}{\epsilon}\ln\lvert V \setminus L_w\rvert`, adds Gumbel noise of scale
:math:`2/\epsilon` to every score, takes the largest, and when :math:`\bot` wins releases a word
of :math:`V \setminus L_w` uniformly at random. The Gumbel-max trick makes this a draw with
probability proportional to :math:`e^{\epsilon s / 2}`, and the bucket's score spreads
:math:`\lvert V \setminus L_w\rvert e^{-\epsilon\gamma/2}` evenly over the words outside, so in
closed form

.. math:: \Pr[\mathrm{TEM}(w) = w'] = \frac{e^{-\epsilon \min(d(w, w'), \gamma)/2}}
          {\sum_{v} e^{-\epsilon \min(d(w, v), \gamma)/2}},

the exponential mechanism on the truncated distance :math:`\min(d, \gamma)`. That is the matrix
this family builds and samples exactly (the result the paper's sampler draws, without its
floating-point Gumbel noise). The threshold is the paper's
:math:`\gamma = \frac{2}{\epsilon}\ln\frac{(1 - \beta)(n - 1)}{\beta}` unless given.

Privacy. :math:`|\min(d(u, w), \gamma) - \min(d(v, w), \gamma)| \le d(u, v)` (truncation is
1-Lipschitz and ``d`` a metric), so each factor moves by at most
:math:`e^{\epsilon d(u, v)/2}` and the row by at most :math:`e^{\epsilon d(u, v)}`: pure
``epsilon``-mDP in any metric, as the paper proves. The matrix is certified like every matrix
family; in vocabulary mode the rows are computed when needed and sampled exactly, as the
exponential mechanism's (:class:`~mdp.families.analytic_rows.ExponentialRows`, whose rounding
bound holds for any 1-Lipschitz function of the distance).
"""

from __future__ import annotations

import math

import numpy as np

from ..candidate import Candidate
from ..errors import ParameterError
from ..params import Param
from ..registry import register, register_vocabulary
from ..spaces.metric_space import MetricSpace
from .analytic_rows import ExponentialRows
from .exponential import exponential_log_matrix

__all__ = ["tem_threshold", "tem_log_matrix", "TruncatedExponentialRows", "DEFAULT_BETA"]

#: The paper's default ``beta`` (the threshold keeps the bucket's total weight at about
#: ``beta`` of a row whose words are all at distance 0).
DEFAULT_BETA = 1e-3


def tem_threshold(n: int, epsilon: float, beta: float = DEFAULT_BETA,
                  gamma: float | None = None) -> float:
    r"""TEM's threshold: ``gamma`` when given, else
    :math:`\frac{2}{\epsilon}\ln\frac{(1 - \beta)(n - 1)}{\beta}` (Carvalho et al. 2023), at
    least 0."""
    if gamma is not None:
        return float(gamma)
    if not 0 < beta < 1:
        raise ParameterError(f"beta must be in (0, 1), got {beta!r}")
    if n < 2:
        return 0.0
    return max(0.0, 2.0 / epsilon * math.log((1.0 - beta) * (n - 1) / beta))


def tem_log_matrix(distances, epsilon: float, gamma: float) -> np.ndarray:
    """Log-probabilities of TEM: the exponential mechanism on ``min(distances, gamma)``."""
    return exponential_log_matrix(np.minimum(np.asarray(distances, dtype=float), gamma), epsilon)


class TruncatedExponentialRows(ExponentialRows):
    """TEM in vocabulary mode: rows of ``exp(-eps' min(d, gamma) / 2)`` sampled exactly."""

    def _prepare(self) -> dict:
        params = dict(self.params)
        self._gamma = tem_threshold(self.space.n, self.epsilon, params.get("beta", DEFAULT_BETA),
                                    params.get("gamma"))
        if not (math.isfinite(self._gamma) and self._gamma >= 0):
            raise ParameterError(f"gamma must be a finite number >= 0, got {self._gamma!r}")
        self.params.pop("Y", None)
        record = super()._prepare()
        record["gamma"] = self._gamma
        record["argument"] = ("Pr ~ exp(-eps' min(d, gamma)/2) is eps'-mDP: truncation is "
                              "1-Lipschitz (Carvalho et al. 2023); each row is sampled exactly "
                              "from its float64 log-weights, within eta of exact, so the sampled "
                              "rows are (eps' + 4 eta / d_lb)-mDP <= eps-mDP; equal points share "
                              "a row")
        return record

    def scores(self, distances: np.ndarray) -> np.ndarray:
        return np.minimum(distances, self._gamma)

    @classmethod
    def restore(cls, space, epsilon, name, params, stats, data, path):
        return cls(space, epsilon, name, params, stats)


@register("tem",
          description="truncated exponential mechanism, Pr ~ exp(-eps min(d, gamma)/2) "
                      "(Carvalho et al. 2023)", display_name="TEM", domain="words",
          params={"beta": Param("float", DEFAULT_BETA, low=0.0, high=1.0, low_open=True,
                                high_open=True,
                                help="the paper's beta in (0, 1): gamma = 2/eps ln((1-beta)(n-1)/beta)"),
                  "gamma": Param("float", None, low=0.0, allow_none=True,
                                 help="threshold gamma >= 0 in the space's unit (None: from beta)")})
def build_tem(space: MetricSpace, epsilon: float, *, rng=None, beta: float = DEFAULT_BETA,
              gamma: float | None = None) -> Candidate:
    r"""TEM on ``space`` (any metric): log-probabilities of :func:`tem_log_matrix`.

    Parameters
    ----------
    beta : float in (0, 1), default :data:`DEFAULT_BETA`
    gamma : float >= 0 or None
        The threshold in the space's unit; ``None`` derives it from ``beta``.

    Returns
    -------
    Candidate
        ``stats["gamma"]``: the threshold used; ``stats["inside_threshold"]``: the median over
        inputs of ``|L_w|``, the words scored individually.
    """
    g = tem_threshold(space.n, epsilon, beta, gamma)
    D = space.distances
    inside = int(np.median((D <= g).sum(axis=1)))
    return Candidate(log_matrix=tem_log_matrix(D, epsilon, g),
                     stats={"gamma": g, "inside_threshold": inside})


register_vocabulary("tem", TruncatedExponentialRows)
