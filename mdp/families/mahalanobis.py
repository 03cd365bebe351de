r"""The Mahalanobis mechanism (Xu, Aggarwal, Feyisetan, Teissier, SIGIR 2020): elliptical noise.

Madlib (:mod:`mdp.families.madlib`) adds spherical noise, which in a sparse direction of the
embedding lands far from every word and snaps back to the input. Xu et al. shape the noise by
the embedding's covariance, regularised towards the identity:

.. math:: \Sigma_\lambda = \lambda\,\frac{\Sigma}{\operatorname{tr}(\Sigma)/d} + (1 - \lambda) I_d,
          \qquad S = \Sigma_\lambda^{1/2},

(``Sigma`` the covariance of the space's points, ``lambda`` in ``[0, 1]``; ``lambda = 0`` is
Madlib) and release the word nearest to :math:`z = x + S N`, where :math:`N` has density
proportional to :math:`e^{-\epsilon_M \lVert N \rVert}` (radius ``Gamma(d, 1/eps_M)``,
uniform direction). The noise :math:`S N` has density proportional to
:math:`e^{-\epsilon_M \lVert S^{-1} y \rVert}`.

Privacy (analytic). By the triangle inequality the density ratio between inputs ``x, x'`` is at
most :math:`e^{\epsilon_M \lVert S^{-1}(x - x')\rVert}` (Xu et al.'s theorem: ``eps_M``-privacy
in the Mahalanobis norm), and
:math:`\lVert S^{-1} v \rVert \le \lVert v \rVert / \sigma_{min}(S)`. This toolkit's ``epsilon``
is always the level in the space's own distance, so the family draws its noise at

.. math:: \epsilon_M = \epsilon\,\sigma_{min}(S)

(``sigma_min`` the smallest singular value of the ``S`` actually used, computed by an SVD and
lowered by a relative margin): the released word is ``epsilon``-mDP for the Euclidean distance
of the space, whatever ``lambda``. The paper's own epsilon (per unit of the Mahalanobis norm) is
recorded as ``stats["privacy"]["paper_eps"]``; a comparison with a library that takes the
paper's epsilon passes ``eps_M``. The matrix is a Monte Carlo estimate, as Madlib's
(:func:`~mdp.families.madlib.estimate_madlib_matrix` with the noise shape), and ``eps_tight``
measured on it is how the comparison at equal privacy reads this family.
"""

from __future__ import annotations

import numpy as np

from ..candidate import Candidate
from ..errors import ParameterError
from ..params import Param
from ..registry import register, register_vocabulary
from ..spaces.metric_space import MetricSpace
from .analytic_rows import MadlibRows
from .madlib import (
    DEFAULT_N_SAMPLES,
    MadlibMechanism,
    applies_to_points,
    estimate_madlib_matrix,
    madlib_noise,
)

__all__ = ["MahalanobisMechanism", "MahalanobisRows", "mahalanobis_shape", "DEFAULT_LAMBDA", "SIGMA_MARGIN"]

#: Default regularisation ``lambda`` (halfway between Madlib's spherical noise and the
#: embedding's covariance).
DEFAULT_LAMBDA = 0.5
#: Relative margin by which the computed smallest singular value of ``S`` is lowered (an SVD of a
#: d x d symmetric matrix is accurate to a few units of ``d u ||S||``; 1e-9 covers d up to 10^5).
SIGMA_MARGIN = 1e-9
#: Smallest ``sigma_min(S)`` accepted: below it the noise is degenerate in some direction (a
#: singular covariance at ``lambda = 1``) and ``eps_M`` would vanish.
MIN_SIGMA = 1e-6


def mahalanobis_shape(points, lam: float) -> tuple[np.ndarray, float]:
    r"""``S = Sigma_lambda^{1/2}`` of ``points`` and a lower bound of its smallest singular value.

    Parameters
    ----------
    points : ndarray (n, d)
    lam : float in [0, 1]

    Returns
    -------
    S : ndarray (d, d)
        Symmetric positive definite (eigen-decomposition of ``Sigma_lambda``).
    sigma_min : float
        The smallest singular value of the float ``S`` returned, times ``1 - SIGMA_MARGIN``.

    Raises
    ------
    ParameterError
        ``lam`` outside [0, 1], or a covariance so degenerate that ``sigma_min < MIN_SIGMA``
        (``lambda = 1`` on points spanning fewer than ``d`` dimensions).
    """
    if isinstance(lam, bool) or not isinstance(lam, (int, float, np.floating)) or not 0 <= lam <= 1:
        raise ParameterError(f"lam must be a number in [0, 1] (Xu et al. 2020's regularisation), "
                             f"got {lam!r}")
    X = np.asarray(points, dtype=np.float64)
    d = X.shape[1]
    if lam > 0 and X.shape[0] > 1:
        cov = np.atleast_2d(np.cov(X, rowvar=False, ddof=0))
        scale = float(np.trace(cov)) / d
        sigma = cov / scale if scale > 0 else np.eye(d)
    else:
        sigma = np.eye(d)
    sigma_l = lam * sigma + (1.0 - lam) * np.eye(d)
    w, V = np.linalg.eigh((sigma_l + sigma_l.T) / 2)
    S = (V * np.sqrt(np.clip(w, 0.0, None))) @ V.T
    S = (S + S.T) / 2
    sigma_min = float(np.linalg.svd(S, compute_uv=False).min()) * (1.0 - SIGMA_MARGIN)
    if not sigma_min >= MIN_SIGMA:
        raise ParameterError(f"lam = {lam:g}: the points' covariance is singular (they span fewer "
                             f"than {d} dimensions), so the noise would have no spread in some "
                             "direction and no Euclidean guarantee; use lam < 1")
    return S, sigma_min


class MahalanobisMechanism(MadlibMechanism):
    """The Mahalanobis mechanism: fresh elliptical noise on every draw, then the nearest point.

    ``epsilon`` is the level in the space's Euclidean distance; the noise is drawn at
    ``eps_M = epsilon * sigma_min(S)`` (module docstring). ``matrix`` is a Monte Carlo estimate.
    """

    kind = "madlib"
    display = "Mahalanobis"

    def __init__(self, matrix, space: MetricSpace, epsilon: float, name: str = "mahalanobis",
                 params: dict | None = None, stats: dict | None = None, *, log_matrix=None,
                 repair: bool = True):
        params = dict(params or {})
        if isinstance(space, MetricSpace) and space.points is not None:
            self._set_shape(space, params)
        super().__init__(matrix, space, epsilon, name, params, stats, log_matrix=log_matrix,
                         repair=repair)

    def _set_shape(self, space: MetricSpace, params: dict) -> None:
        self._shape, self._sigma_min = mahalanobis_shape(space.points,
                                                         params.get("lam", DEFAULT_LAMBDA))

    @property
    def noise_epsilon(self) -> float:
        """``eps_M``: the noise's parameter per unit of the Mahalanobis norm."""
        return self.epsilon * self._sigma_min

    def _privacy_record(self) -> dict:
        return {"guarantee": "analytic", "claimed_eps": self.epsilon, "delta": 0.0,
                "paper_eps": self.noise_epsilon, "sigma_min": self._sigma_min,
                "argument": _ARGUMENT}

    def estimator_options(self) -> dict:
        return {"epsilon": self.noise_epsilon, "shape": self._shape}

    def noise(self, m: int, rng) -> np.ndarray:
        """``m`` draws of ``S N`` at ``eps_M`` (radius ``Gamma(d, 1/eps_M)``, uniform direction;
        :func:`~mdp.families.madlib.madlib_noise`)."""
        return madlib_noise(m, self.space.points.shape[1], self.noise_epsilon, rng=rng,
                            shape=self._shape)


LAMBDA_PARAM = Param("float", DEFAULT_LAMBDA, low=0.0, high=1.0,
                     help="regularisation lambda in [0, 1] of the noise's covariance "
                          "(0: spherical, Madlib's; 1: the embedding's)")


@register("mahalanobis",
          description="elliptical noise shaped by the embedding's covariance + nearest point "
                      "(Xu et al. 2020); analytic guarantee, matrix estimated by sampling",
          applies=applies_to_points, guarantee="analytic", quick_max_n=200,
          display_name="Mahalanobis", domain="words",
          mechanism_class=MahalanobisMechanism,
          params={"lam": LAMBDA_PARAM,
                  "n_samples": Param("int", DEFAULT_N_SAMPLES, low=1,
                                     help="Monte Carlo draws per input for the estimated matrix")})
def build_mahalanobis(space: MetricSpace, epsilon: float, *, rng=None, lam: float = DEFAULT_LAMBDA,
                      n_samples: int = DEFAULT_N_SAMPLES) -> Candidate:
    r"""The Mahalanobis mechanism on ``space`` (Euclidean points), ``epsilon``-mDP in its distance.

    Parameters
    ----------
    lam : float in [0, 1], default :data:`DEFAULT_LAMBDA`
        Xu et al. 2020's regularisation ``lambda`` of the noise covariance.
    n_samples : int
        Monte Carlo draws per input for the estimated matrix (measurements only).

    Returns
    -------
    Candidate
        The estimated matrix; ``stats["noise"]`` holds ``eps_M`` and ``sigma_min``.
    """
    S, sigma_min = mahalanobis_shape(space.points, lam)
    noise_eps = epsilon * sigma_min
    M, est = estimate_madlib_matrix(space.points, noise_eps, n_samples, rng=rng, shape=S)
    return Candidate(matrix=M, stats={"matrix_estimate": est,
                                      "noise": {"paper_eps": noise_eps, "sigma_min": sigma_min,
                                                "lam": lam}})



class MahalanobisRows(MadlibRows):
    """The Mahalanobis mechanism in vocabulary mode: fresh elliptical noise at
    ``eps_M = epsilon sigma_min(S)`` (``S`` recomputed from the points and ``lam``), then the
    exact nearest word."""

    def _prepare(self) -> dict:
        record = super()._prepare()
        self._shape, self._sigma_min = mahalanobis_shape(
            np.asarray(self.space.points, dtype=np.float64), self.params.get("lam", DEFAULT_LAMBDA))
        record.update(paper_eps=self.epsilon * self._sigma_min, sigma_min=self._sigma_min,
                      sampling="float64 noise S N (Gamma(d, 1/eps_M) radius, uniform direction); "
                               "exact nearest point",
                      argument=_ARGUMENT)
        return record

    def noise(self, m: int, rng: np.random.Generator) -> np.ndarray:
        return madlib_noise(m, self.space.dim, self.epsilon * self._sigma_min, rng=rng,
                            shape=self._shape)


_ARGUMENT = ("the noise S N has density ~ exp(-eps_M ||S^-1 y||): the density ratio of x + S N is "
             "<= exp(eps_M / sigma_min(S) ||x - x'||) = exp(eps ||x - x'||); the release is "
             "post-processing")

register_vocabulary("mahalanobis", MahalanobisRows)
