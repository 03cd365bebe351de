r"""The Vickrey mechanism (Xu, Aggarwal, Feyisetan, Teissier, 2021): the nearest or the second.

Madlib and the Mahalanobis mechanism release the word nearest to the noisy point :math:`z`; at
useful epsilons that is mostly the input itself. Xu et al. ("On a utilitarian approach to
privacy preserving text generation", 2021) release the *second* nearest word :math:`w_2`
with probability

.. math:: p(t, z) = \frac{t\, d_1}{t\, d_1 + (1 - t)\, d_2},
          \qquad d_i = \lVert z - w_i \rVert,

and the nearest :math:`w_1` otherwise (``t`` in ``[0, 1]``: ``t = 0`` is the base mechanism,
``t = 0.5`` gives ``d_1 / (d_1 + d_2)``). The noise is Madlib's (``noise="euclidean"``, the
paper's Vickrey-CMP) or the Mahalanobis mechanism's (``noise="mahalanobis"`` with ``lam``,
Vickrey-Mhl).

Privacy (analytic). The release is a randomised function of :math:`z` alone, so it is
post-processing of the continuous noisy point: the word is ``epsilon``-mDP in the space's
Euclidean distance exactly when the noise is (Madlib's argument; for Mahalanobis noise at
``eps_M = epsilon sigma_min(S)``, :mod:`mdp.families.mahalanobis`). The matrix is a Monte
Carlo estimate in which each draw counts ``1 - p`` for its nearest point and ``p`` for its
second (:func:`~mdp.families.madlib.estimate_madlib_matrix` with ``second_t``).
"""

from __future__ import annotations

import numpy as np

from ..candidate import Candidate
from ..errors import ParameterError
from ..params import Param
from ..registry import register, register_vocabulary
from ..spaces.metric_space import MetricSpace
from ..validation import check_probability
from .analytic_rows import MadlibRows
from .madlib import (
    DEFAULT_N_SAMPLES,
    MadlibMechanism,
    applies_to_points,
    estimate_madlib_matrix,
    second_probability,
)
from .mahalanobis import (
    DEFAULT_LAMBDA,
    LAMBDA_PARAM,
    MahalanobisMechanism,
    MahalanobisRows,
    mahalanobis_shape,
)

__all__ = ["VickreyMechanism", "VickreyRows", "vickrey_release", "DEFAULT_T", "NOISES"]

#: Default threshold ``t`` (the paper's balanced choice: ``p = d_1 / (d_1 + d_2)``).
DEFAULT_T = 0.5
#: Noise laws of the base mechanism.
NOISES = ("euclidean", "mahalanobis")


def check_vickrey(params: dict) -> tuple[float, str]:
    """``t`` and the noise law of ``params`` (a build's or a file's), checked."""
    t = check_probability(params.get("t", DEFAULT_T), "t")
    noise = params.get("noise", "euclidean")
    if noise not in NOISES:
        raise ParameterError(f"noise must be one of {NOISES}, got {noise!r}")
    return t, noise


def vickrey_release(two_nearest: np.ndarray, two_distances: np.ndarray, t: float,
                    rng: np.random.Generator) -> np.ndarray:
    """Nearest or second nearest per row: the second with probability ``t d1 / (t d1 + (1-t) d2)``.

    Parameters
    ----------
    two_nearest : ndarray (m, 2) of int
        Nearest and second nearest indices (columns in order of distance).
    two_distances : ndarray (m, 2)
    t : float in [0, 1]
    rng : numpy.random.Generator
    """
    p = second_probability(two_distances[:, 0], two_distances[:, 1], t)
    second = rng.random(len(p)) < p
    return np.where(second, two_nearest[:, 1], two_nearest[:, 0])


class VickreyMechanism(MahalanobisMechanism):
    """The Vickrey mechanism: fresh noise (Euclidean or Mahalanobis), then the nearest or the
    second nearest point (module docstring). ``matrix`` is a Monte Carlo estimate."""

    display = "Vickrey"

    def _set_shape(self, space: MetricSpace, params: dict) -> None:
        self._t, self._base = check_vickrey(params)
        if self._base == "mahalanobis":
            super()._set_shape(space, params)
        else:
            self._shape, self._sigma_min = None, 1.0

    def _privacy_record(self) -> dict:
        record = (super()._privacy_record() if self._shape is not None
                  else MadlibMechanism._privacy_record(self))
        record["argument"] += ("; choosing the nearest or second nearest point from the noisy "
                               "point alone is post-processing")
        return record

    def estimator_options(self) -> dict:
        return {"epsilon": self.noise_epsilon, "shape": self._shape, "second_t": self._t}

    def release(self, z, rng: np.random.Generator) -> np.ndarray:
        """Nearest or second nearest point of each noisy point (:func:`vickrey_release`)."""
        if self.space.n < 2:
            return self.snap(z)
        if self._nn is None:
            from sklearn.neighbors import NearestNeighbors

            self._nn = NearestNeighbors(n_neighbors=2).fit(self.space.points)
        z = np.atleast_2d(np.asarray(z, dtype=float))
        dist, idx = self._nn.kneighbors(z, n_neighbors=2)
        return vickrey_release(idx, dist, self._t, rng)


@register("vickrey",
          description="noise + the nearest or the second nearest point (Xu et al. 2021); "
                      "analytic guarantee, matrix estimated by sampling",
          applies=applies_to_points, guarantee="analytic", quick_max_n=200,
          display_name="Vickrey", domain="words",
          mechanism_class=VickreyMechanism,
          params={"t": Param("float", DEFAULT_T, low=0.0, high=1.0,
                             help="threshold t in [0, 1]: the second nearest point with "
                                  "probability t d1 / (t d1 + (1 - t) d2)"),
                  "noise": Param("choice", "euclidean", choices=NOISES,
                                 help="the base noise: euclidean (Madlib's) or mahalanobis"),
                  "lam": LAMBDA_PARAM,
                  "n_samples": Param("int", DEFAULT_N_SAMPLES, low=1,
                                     help="Monte Carlo draws per input for the estimated matrix")})
def build_vickrey(space: MetricSpace, epsilon: float, *, rng=None, t: float = DEFAULT_T,
                  noise: str = "euclidean", lam: float = DEFAULT_LAMBDA,
                  n_samples: int = DEFAULT_N_SAMPLES) -> Candidate:
    r"""The Vickrey mechanism on ``space`` (Euclidean points), ``epsilon``-mDP in its distance.

    Parameters
    ----------
    t : float in [0, 1], default :data:`DEFAULT_T`
    noise : {"euclidean", "mahalanobis"}
    lam : float in [0, 1]
        The Mahalanobis noise's regularisation (used with ``noise="mahalanobis"``).
    n_samples : int
        Monte Carlo draws per input for the estimated matrix (measurements only).
    """
    if noise == "mahalanobis":
        S, sigma_min = mahalanobis_shape(space.points, lam)
    else:
        S, sigma_min = None, 1.0
    noise_eps = epsilon * sigma_min
    M, est = estimate_madlib_matrix(space.points, noise_eps, n_samples, rng=rng, shape=S,
                                    second_t=t)
    return Candidate(matrix=M, stats={"matrix_estimate": est,
                                      "noise": {"law": noise, "paper_eps": noise_eps,
                                                "sigma_min": sigma_min, "t": t}})


class VickreyRows(MahalanobisRows):
    """The Vickrey mechanism in vocabulary mode: fresh noise (Euclidean or Mahalanobis), then
    the nearest or second nearest word (:meth:`mdp.vocabulary.nearest.NearestIndex.query_two`:
    the float32 screen, candidates ranked in float64)."""

    def _prepare(self) -> dict:
        self._t, self._base = check_vickrey(self.params)
        if self._base == "mahalanobis":
            record = super()._prepare()
        else:
            record = MadlibRows._prepare(self)
            self._shape, self._sigma_min = None, 1.0
        record["argument"] += ("; choosing the nearest or second nearest word from the noisy "
                               "point alone is post-processing")
        record["sampling"] += "; the two nearest from the same screen (float64 ranking)"
        return record

    def release(self, z: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        if self.space.n < 2:
            return self._index.query(z)
        idx, dist = self._index.query_two(np.atleast_2d(z))
        return vickrey_release(idx, dist, self._t, rng)


register_vocabulary("vickrey", VickreyRows)
