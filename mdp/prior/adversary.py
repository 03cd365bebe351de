r"""The Bayes-optimal inference attack on a mechanism, and what it learns.

For a mechanism ``K`` (``K[x, z] = Pr[z | x]``), a prior ``pi`` and the space's distances
``d``, an attacker who sees the output ``z`` and knows ``pi`` and ``K`` guesses

.. math:: \hat x(z) = \arg\min_{x'} \sum_x \pi_x K_{xz}\, d(x, x')

(Shokri, Theodorakopoulos, Le Boudec, Hubaux 2011, "Quantifying location privacy", section
IV; Shokri et al. 2012, section 3), with expected error (their ``ExpErr``, the privacy measure,
in the space's units)

.. math:: \mathrm{AdvError}(\pi, K) = \sum_z \min_{x'} \sum_x \pi_x K_{xz}\, d(x, x').

The Bayes vulnerability (the probability that a one-try guess is right) and the multiplicative
leakage (Alvim, Chatzikokolakis, Palamidessi, Smith 2012, "Measuring information leakage using
generalized gain functions", section 3; libqif's ``bayes_vuln`` and ``mult_leakage``) are

.. math:: V(\pi, K) = \sum_z \max_x \pi_x K_{xz}, \qquad
          \mathcal L^\times(\pi, K) = V(\pi, K) / \max_x \pi_x,

``log2`` of the latter being the min-entropy leakage in bits. The utility side is the
prior-weighted loss ``sum_x pi_x sum_z K_xz d(x, z)`` (Bordenabe et al. 2014's objective).
All are exact on a matrix (no sampling): ``O(n^2 m)`` for the attack, ``O(n m)`` otherwise.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from ..errors import ParameterError
from .prior import Prior

__all__ = ["optimal_guesses", "adversary_error", "bayes_vulnerability", "multiplicative_leakage",
           "expected_loss", "measure", "AdversaryReport"]

#: Output columns processed at once by the attack (``n x block`` temporaries).
_BLOCK_BYTES = 64 * 2 ** 20


def _checked(K, prior: Prior, distances=None):
    K = np.asarray(K, dtype=float)
    if K.ndim != 2:
        raise ParameterError(f"mechanism matrix must be 2-d, got shape {K.shape}")
    if not isinstance(prior, Prior):
        raise ParameterError(f"prior must be a Prior, got {type(prior).__name__}")
    prior.check_space(K.shape[0])
    if distances is None:
        return K, None
    D = np.asarray(distances, dtype=float)
    if D.shape != (K.shape[0], K.shape[0]):
        raise ParameterError(f"distances must have shape ({K.shape[0]}, {K.shape[0]}), got "
                             f"{D.shape}")
    return K, D


def _costs(K: np.ndarray, prior: Prior, D: np.ndarray):
    """Per output block: ``C[x', z] = sum_x D[x', x] pi_x K[x, z]``; yields (start, C)."""
    J = prior.probabilities[:, None] * K
    n, m = K.shape
    step = max(1, _BLOCK_BYTES // (8 * n))
    for s in range(0, m, step):
        yield s, D @ J[:, s:s + step]


def optimal_guesses(K, prior: Prior, distances) -> np.ndarray:
    r"""The Bayes-optimal guess ``argmin_{x'} sum_x pi_x K[x, z] d(x, x')`` for every output
    ``z`` (ties to the lowest index).

    Parameters
    ----------
    K : ndarray (n, m)
        Row-stochastic: ``K[x, z] = Pr[z | x]``.
    prior : Prior
        Over the ``n`` inputs.
    distances : ndarray (n, n)
        The attacker's error ``d(x, x')`` between inputs.

    Returns
    -------
    int ndarray (m,)
    """
    K, D = _checked(K, prior, distances)
    out = np.empty(K.shape[1], dtype=np.int64)
    for s, C in _costs(K, prior, D):
        out[s:s + C.shape[1]] = np.argmin(C, axis=0)
    return out


def adversary_error(K, prior: Prior, distances) -> float:
    r"""The optimal attacker's expected error, ``sum_z min_{x'} sum_x pi_x K[x, z] d(x, x')``
    (Shokri et al. 2011's ExpErr; in the distances' unit)."""
    K, D = _checked(K, prior, distances)
    return float(math.fsum(float(C.min(axis=0).sum()) for _, C in _costs(K, prior, D)))


def expected_loss(K, prior: Prior, distances) -> float:
    r"""The prior-weighted utility loss ``sum_x pi_x sum_z K[x, z] d(x, z)`` (outputs are the
    space's points, ``m = n``)."""
    K, D = _checked(K, prior, distances)
    if K.shape[1] != K.shape[0]:
        raise ParameterError("expected_loss needs outputs on the space's points (an n x n matrix)")
    return float(prior.probabilities @ (K * D).sum(axis=1))


def bayes_vulnerability(K, prior: Prior) -> float:
    r"""``V(pi, K) = sum_z max_x pi_x K[x, z]``: the chance that the attacker's one best guess
    is the true input."""
    K, _ = _checked(K, prior)
    return float((prior.probabilities[:, None] * K).max(axis=0).sum())


def multiplicative_leakage(K, prior: Prior) -> float:
    r"""``V(pi, K) / max_x pi_x`` (>= 1; ``log2`` of it is the min-entropy leakage in bits)."""
    return bayes_vulnerability(K, prior) / float(prior.probabilities.max())


@dataclass(frozen=True)
class AdversaryReport:
    """Both sides of a mechanism under a prior (:func:`measure`).

    Attributes
    ----------
    expected_loss : float
        Utility loss ``sum_x pi_x sum_z K_xz d(x, z)`` (distance units).
    adversary_error : float
        The Bayes-optimal attacker's expected error (distance units; larger is more private).
    bayes_vulnerability, prior_vulnerability : float
        ``V(pi, K)`` and ``max pi``.
    multiplicative_leakage : float
        Their ratio; ``leakage_bits`` its ``log2``.
    prior : str
        The prior's source.
    """

    expected_loss: float
    adversary_error: float
    bayes_vulnerability: float
    prior_vulnerability: float
    multiplicative_leakage: float
    leakage_bits: float
    prior: str

    def as_dict(self) -> dict:
        return asdict(self)


def measure(mech, prior: Prior | None = None) -> AdversaryReport:
    """Utility loss and the optimal attacker's error, vulnerability and leakage of a matrix
    mechanism under ``prior`` (None: uniform), exactly."""
    space = mech.space
    prior = Prior.uniform(space.n) if prior is None else prior.check_space(space.n)
    K = mech.matrix
    V = bayes_vulnerability(K, prior)
    top = float(prior.probabilities.max())
    return AdversaryReport(expected_loss=expected_loss(K, prior, space.distances),
                           adversary_error=adversary_error(K, prior, space.distances),
                           bayes_vulnerability=V, prior_vulnerability=top,
                           multiplicative_leakage=V / top, leakage_bits=math.log2(V / top),
                           prior=prior.source)
