r"""Local privacy of the sensors: each one adds its own Gaussian noise before sending.

Gilbert & McMillan (2018), section 3 and Proposition 4: with :math:`\Delta_2(A)` the
sensitivity of the readings (:func:`geo.heatsource.model.sensitivity`), a sensor that adds
:math:`N(0, \sigma^2)` to its reading makes the vector of readings :math:`(\epsilon,
\delta)`-DP for neighbouring source vectors when ``sigma`` is calibrated to
:math:`\Delta_2(A)`. The calibration itself is the general Gaussian mechanism of
:mod:`mdp.privacy.gaussian` (Balle & Wang 2018 and the other rules); this module only feeds it the
heat matrix's sensitivity.
"""

from __future__ import annotations

import numpy as np

from mdp.privacy.gaussian import GaussianCalibration, add_gaussian_noise, calibrate_gaussian

from .model import sensitivity

__all__ = ["SensorCalibration", "calibrate_sensors", "privatize_readings"]

#: Noise every sensor adds locally, with the privacy it provably gives
#: (:class:`mdp.privacy.gaussian.GaussianCalibration`; ``sensitivity`` is :math:`\Delta_2(A)`).
SensorCalibration = GaussianCalibration


def calibrate_sensors(A, epsilon: float, delta: float, rule: str = "analytic") -> SensorCalibration:
    r"""Calibrate the local Gaussian noise for measurement matrix ``A`` and verify it.

    ``sigma = gaussian_sigma(epsilon, delta, sensitivity(A), rule)``; the exact privacy profile
    (Balle & Wang 2018, Theorem 8) is then evaluated at that ``sigma`` and
    :class:`~mdp.errors.PrivacyError` is raised if it exceeds ``delta`` (privacy is verified,
    not assumed). See :func:`mdp.privacy.gaussian.calibrate_gaussian`.

    Parameters
    ----------
    A : array_like of shape (m, n)
        Measurement matrix (:func:`geo.heatsource.model.heat_matrix`).
    epsilon : float
        > 0.
    delta : float
        In (0, 1).
    rule : {"analytic", "classical", "seed"}
        See :func:`mdp.privacy.gaussian.gaussian_sigma`; ``"seed"`` is Gilbert & McMillan's
        :math:`2\ln(1.25/\delta)\Delta_2/\epsilon`.

    Returns
    -------
    SensorCalibration
    """
    return calibrate_gaussian(sensitivity(A), epsilon, delta, rule)


def privatize_readings(y, sigma: float, *, rng=None) -> np.ndarray:
    r"""Local Gaussian mechanism: :math:`\tilde y_j = y_j + N(0, \sigma^2)` independently.

    Each sensor can apply this to its own reading before transmission (Gilbert & McMillan
    2018, section 3). Same as :func:`mdp.privacy.gaussian.add_gaussian_noise`.

    Parameters
    ----------
    y : array_like of shape (m,)
        Readings.
    sigma : float
        Per-sensor noise > 0.
    rng : None, int or numpy.random.Generator, keyword-only

    Returns
    -------
    ndarray of shape (m,)
    """
    return add_gaussian_noise(y, sigma, rng=rng)
