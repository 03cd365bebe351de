r"""Calibration of the Gaussian mechanism for :math:`(\epsilon, \delta)`-DP, verified exactly.

Adding :math:`N(0, \sigma^2 I)` to a vector query of :math:`\ell_2` sensitivity :math:`\Delta`
is :math:`(\epsilon, \delta)`-DP iff (Balle & Wang 2018, Theorem 8)

.. math:: \delta \ge \Phi\Big(\frac{\Delta}{2\sigma} - \frac{\epsilon\sigma}{\Delta}\Big)
          - e^{\epsilon}\,\Phi\Big(-\frac{\Delta}{2\sigma} - \frac{\epsilon\sigma}{\Delta}\Big).

:func:`gaussian_delta` evaluates the right-hand side (the exact privacy profile);
:func:`gaussian_sigma` returns the noise of one of :data:`GAUSSIAN_RULES`;
:func:`calibrate_gaussian` does both and refuses a noise level whose exact ``delta`` is above
the target (privacy is verified, not assumed). :func:`add_gaussian_noise` applies the noise.

Used by the locally private heat sensors of :mod:`geo.heatsource` (Gilbert & McMillan 2018,
section 3), where every sensor perturbs its own reading; nothing here is specific to them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq
from scipy.special import log_ndtr

from ..errors import ParameterError, PrivacyError
from ..validation import check_positive, check_probability, check_rng

__all__ = [
    "GAUSSIAN_RULES",
    "GaussianCalibration",
    "add_gaussian_noise",
    "calibrate_gaussian",
    "gaussian_delta",
    "gaussian_sigma",
]

#: Calibration rules of :func:`gaussian_sigma`. ``"seed"`` is the rule of Gilbert & McMillan
#: (2018, Lemma 3); the name is kept for the command line and saved results.
GAUSSIAN_RULES: tuple[str, ...] = ("analytic", "classical", "seed")


def _log_gaussian_delta(sigma: float, epsilon: float, sens: float) -> float:
    # log of Phi(a) - e^eps Phi(b) without cancellation: log Phi(a) + log1p(-e^{eps + lPhi(b) - lPhi(a)}).
    a = sens / (2.0 * sigma) - epsilon * sigma / sens
    b = -sens / (2.0 * sigma) - epsilon * sigma / sens
    la, lb = log_ndtr(a), log_ndtr(b)
    ratio = epsilon + lb - la
    if not ratio < 0.0:  # the two terms agree to machine precision: delta is below resolution
        return -np.inf
    return float(la + np.log1p(-np.exp(ratio)))


def gaussian_delta(sigma: float, epsilon: float, sensitivity: float) -> float:
    r"""Exact (tight) ``delta`` of the Gaussian mechanism with noise ``sigma`` at ``epsilon``.

    Balle & Wang (2018), Theorem 8: adding :math:`N(0, \sigma^2 I)` to a query of
    :math:`\ell_2` sensitivity :math:`\Delta` is :math:`(\epsilon, \delta)`-DP iff

    .. math:: \delta \ge \Phi\Big(\frac{\Delta}{2\sigma} - \frac{\epsilon\sigma}{\Delta}\Big)
              - e^{\epsilon}\,\Phi\Big(-\frac{\Delta}{2\sigma} - \frac{\epsilon\sigma}{\Delta}\Big).

    Evaluated in log space (``scipy.special.log_ndtr``), so values far below ``1e-300`` come out
    as 0 rather than as a cancellation error.

    Parameters
    ----------
    sigma : float
        Noise standard deviation, > 0.
    epsilon : float
        >= 0.
    sensitivity : float
        :math:`\ell_2` sensitivity :math:`\Delta` > 0.

    Returns
    -------
    float
        The smallest ``delta`` for which the mechanism is :math:`(\epsilon, \delta)`-DP.
    """
    sigma = check_positive(sigma, "sigma")
    epsilon = check_positive(epsilon, "epsilon", allow_zero=True)
    sens = check_positive(sensitivity, "sensitivity")
    return float(np.exp(_log_gaussian_delta(sigma, epsilon, sens)))


def gaussian_sigma(epsilon: float, delta: float, sensitivity: float, rule: str = "analytic") -> float:
    r"""Noise standard deviation of the Gaussian mechanism for :math:`(\epsilon, \delta)`-DP.

    Rules:

    - ``"seed"``: :math:`\sigma = 2\ln(1.25/\delta)\,\Delta/\epsilon` (Gilbert & McMillan 2018,
      Lemma 3 / Proposition 4; conservative, valid for every ``epsilon``: it is at least the
      classical value whenever :math:`\ln(1.25/\delta) \ge 1/2`).
    - ``"classical"``: :math:`\sigma = \sqrt{2\ln(1.25/\delta)}\,\Delta/\epsilon` (Dwork & Roth
      2014, Theorem A.1), proved only for ``epsilon < 1``: larger ``epsilon`` raises
      :class:`~mdp.errors.ParameterError`.
    - ``"analytic"`` (default): the smallest ``sigma`` satisfying Balle & Wang (2018) Theorem 8
      (see :func:`gaussian_delta`), found by root bracketing in :math:`\log\sigma` and rounded
      up so that ``gaussian_delta(sigma) <= delta`` holds in floating point.

    Parameters
    ----------
    epsilon : float
        > 0.
    delta : float
        In (0, 1).
    sensitivity : float
        :math:`\ell_2` sensitivity :math:`\Delta` > 0.
    rule : {"analytic", "classical", "seed"}

    Returns
    -------
    float
        ``sigma``.
    """
    epsilon = check_positive(epsilon, "epsilon")
    delta = check_probability(delta, "delta", inclusive_low=False, inclusive_high=False)
    sens = check_positive(sensitivity, "sensitivity")
    if rule == "seed":
        return 2.0 * np.log(1.25 / delta) * sens / epsilon
    if rule == "classical":
        if epsilon >= 1.0:
            raise ParameterError(f"rule 'classical' requires epsilon < 1, got epsilon={epsilon}; "
                                 "use rule='analytic'")
        return float(np.sqrt(2.0 * np.log(1.25 / delta)) * sens / epsilon)
    if rule != "analytic":
        raise ParameterError(f"rule must be one of {', '.join(GAUSSIAN_RULES)}, got {rule!r}")
    return _analytic_sigma(epsilon, delta, sens)


def _analytic_sigma(epsilon: float, delta: float, sens: float) -> float:
    target = np.log(delta)

    def excess(log_sigma: float) -> float:
        return _log_gaussian_delta(np.exp(log_sigma), epsilon, sens) - target

    # Bracket around the classical scale; delta(sigma) is strictly decreasing in sigma.
    hi = np.log(sens * max(1.0, np.sqrt(2.0 * np.log(1.25 / delta))) / epsilon)
    while excess(hi) > 0:
        hi += np.log(2.0)
    lo = hi - np.log(2.0)
    while excess(lo) <= 0:
        lo -= np.log(2.0)
    # excess(hi) may be -inf (delta below float resolution); bisect until finite values bracket.
    while not np.isfinite(excess(hi)) and hi - lo > 1e-12:
        mid = 0.5 * (lo + hi)
        if excess(mid) > 0:
            lo = mid
        else:
            hi = mid
    root = brentq(excess, lo, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps)
    sigma = float(np.exp(root))
    # Round up: the smallest float sigma at or above the root with delta(sigma) <= delta.
    for _ in range(10_000):
        if _log_gaussian_delta(sigma, epsilon, sens) <= target:
            return sigma
        sigma = float(np.nextafter(sigma, np.inf)) * (1.0 + 2.0 ** -50)
    raise RuntimeError("analytic Gaussian calibration failed to round up")  # pragma: no cover


def add_gaussian_noise(y, sigma: float, *, rng=None) -> np.ndarray:
    r"""Gaussian mechanism on a vector: :math:`\tilde y_j = y_j + N(0, \sigma^2)` independently.

    Parameters
    ----------
    y : array_like, 1-D, finite
        The query answer.
    sigma : float
        Noise standard deviation > 0 (e.g. :attr:`GaussianCalibration.sigma`).
    rng : None, int or numpy.random.Generator, keyword-only
        ``None`` draws from OS entropy.

    Returns
    -------
    ndarray
        ``y`` plus independent noise, same shape.
    """
    sigma = check_positive(sigma, "sigma")
    y = np.asarray(y, dtype=float)
    if y.ndim != 1 or not np.all(np.isfinite(y)):
        raise ParameterError(f"y must be a finite 1-D array, got shape {y.shape}")
    return y + sigma * check_rng(rng).standard_normal(y.shape[0])


@dataclass(frozen=True)
class GaussianCalibration:
    r"""Gaussian noise for a query of known sensitivity, with the privacy it provably gives.

    Attributes
    ----------
    sensitivity : float
        :math:`\ell_2` sensitivity :math:`\Delta` of the query.
    sigma : float
        Noise standard deviation.
    rule : str
        Calibration rule used (:data:`GAUSSIAN_RULES`).
    epsilon, delta : float
        Requested privacy.
    delta_exact : float
        Exact ``delta`` at ``epsilon`` for this ``sigma`` (:func:`gaussian_delta`); never above
        ``delta`` (checked by :func:`calibrate_gaussian`).
    """

    sensitivity: float
    sigma: float
    rule: str
    epsilon: float
    delta: float
    delta_exact: float

    def privatize(self, y, *, rng=None) -> np.ndarray:
        """``y`` plus independent ``N(0, sigma^2)`` noise (:func:`add_gaussian_noise`)."""
        return add_gaussian_noise(y, self.sigma, rng=rng)


def calibrate_gaussian(sensitivity: float, epsilon: float, delta: float,
                       rule: str = "analytic") -> GaussianCalibration:
    r"""Calibrate the Gaussian mechanism and verify the result with the exact privacy profile.

    ``sigma = gaussian_sigma(epsilon, delta, sensitivity, rule)``; then
    ``gaussian_delta(sigma, epsilon, sensitivity)`` (Balle & Wang 2018, Theorem 8) must not
    exceed ``delta``, else :class:`~mdp.errors.PrivacyError` is raised.

    Parameters
    ----------
    sensitivity : float
        :math:`\ell_2` sensitivity > 0.
    epsilon : float
        > 0.
    delta : float
        In (0, 1).
    rule : {"analytic", "classical", "seed"}
        See :func:`gaussian_sigma`.

    Returns
    -------
    GaussianCalibration
    """
    sens = check_positive(sensitivity, "sensitivity")
    sigma = gaussian_sigma(epsilon, delta, sens, rule)
    exact = gaussian_delta(sigma, epsilon, sens)
    if exact > delta:
        raise PrivacyError(f"rule {rule!r} gives delta={exact:.3g} > {delta}: not private")
    return GaussianCalibration(sensitivity=sens, sigma=float(sigma), rule=rule,
                               epsilon=float(epsilon), delta=float(delta), delta_exact=exact)
