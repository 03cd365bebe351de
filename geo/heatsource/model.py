r"""Physical model of the heat-source problem: heat kernel, measurement matrix, sensitivity.

Gilbert & McMillan (2018), section 2.1: ``n`` possible sources at ``i/n`` (``i = 1..n``) and
``m`` sensors at ``j/m`` (``j = 1..m``) on ``[0, 1]``; after time ``t`` with diffusion constant
``mu`` (``T = mu t``) the sensors read ``y = A f0`` with

.. math:: A_{ji} = g(j/m - i/n, T), \qquad g(x, T) = \frac{e^{-x^2/(4T)}}{\sqrt{4\pi T}}.

Section 3: two source vectors are neighbours when one source moves by one grid step
(Definition 2), so the :math:`\ell_2` sensitivity of the readings is
:math:`\Delta_2(A) = \max_i \|A_i - A_{i+1}\|_2` (Proposition 4). Section 3.1, Lemma 5 relates
it to the condition number of ``A``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mdp.errors import ParameterError
from mdp.validation import check_int, check_positive

__all__ = [
    "Lemma5Check",
    "check_matrix",
    "heat_kernel",
    "heat_matrix",
    "lemma5",
    "sensitivity",
    "sensor_positions",
    "source_positions",
]


def heat_kernel(x, T: float) -> np.ndarray:
    r"""Heat kernel :math:`g(x, T) = (4\pi T)^{-1/2} e^{-x^2/(4T)}`.

    Gilbert & McMillan (2018), section 2.1, with :math:`T = \mu t`.

    Parameters
    ----------
    x : array_like
        Distances between sensor and source.
    T : float
        :math:`\mu t` > 0.

    Returns
    -------
    ndarray
        :math:`g(x, T)`, same shape as ``x``.
    """
    T = check_positive(T, "T")
    x = np.asarray(x, dtype=float)
    return np.exp(-(x * x) / (4.0 * T)) / np.sqrt(4.0 * np.pi * T)


def source_positions(n: int) -> np.ndarray:
    """Possible source locations ``i/n``, ``i = 1..n`` (Gilbert & McMillan 2018, section 2.1).

    Parameters
    ----------
    n : int
        Number of locations, ``n >= 2``.

    Returns
    -------
    ndarray of shape (n,)
    """
    n = check_int(n, "n", low=2)
    return np.arange(1, n + 1, dtype=float) / n


def sensor_positions(m: int) -> np.ndarray:
    """Sensor locations ``j/m``, ``j = 1..m`` (Gilbert & McMillan 2018, section 2.1).

    Parameters
    ----------
    m : int
        Number of sensors, ``m >= 1``.

    Returns
    -------
    ndarray of shape (m,)
    """
    m = check_int(m, "m", low=1)
    return np.arange(1, m + 1, dtype=float) / m


def heat_matrix(n: int, m: int, T: float) -> np.ndarray:
    r"""Measurement matrix :math:`A_{ji} = g(j/m - i/n, T)` (Gilbert & McMillan 2018, 2.1).

    Parameters
    ----------
    n : int
        Number of possible source locations (grid ``1/n, ..., 1``), ``n >= 2``.
    m : int
        Number of sensors (at ``1/m, ..., 1``), ``m >= 1``.
    T : float
        :math:`\mu t` > 0 (the paper's experiments use :math:`\mu = 1/2`, so ``T = t/2``).

    Returns
    -------
    ndarray of shape (m, n)
    """
    n = check_int(n, "n", low=2)
    m = check_int(m, "m", low=1)
    return heat_kernel(sensor_positions(m)[:, None] - source_positions(n)[None, :], T)


def check_matrix(A, name: str = "A") -> np.ndarray:
    """``A`` as a finite float 2-D array with at least two columns, or ParameterError.

    Parameters
    ----------
    A : array_like
        Candidate measurement matrix.
    name : str
        Parameter name used in the error message.

    Returns
    -------
    ndarray
    """
    A = np.asarray(A, dtype=float)
    if A.ndim != 2 or A.shape[1] < 2:
        raise ParameterError(f"{name} must be a 2-D array with at least 2 columns, got shape {A.shape}")
    if not np.all(np.isfinite(A)):
        raise ParameterError(f"{name} must be finite")
    return A


def sensitivity(A) -> float:
    r""":math:`\ell_2` sensitivity :math:`\Delta_2(A) = \max_i \|A_i - A_{i+1}\|_2`.

    Gilbert & McMillan (2018), Proposition 4. Neighbouring source vectors (Definition 2) swap
    the values ``a, b`` in ``[0, 1]`` of two adjacent cells, so
    :math:`\|Af - Af'\| = |a - b|\,\|A_i - A_{i+1}\| \le \|A_i - A_{i+1}\|`.
    Appendix B bounds it by :math:`O(\sqrt m / (n T^{1.5}))`; it is exactly proportional to
    ``1/n`` and :math:`\sqrt m` once the grids resolve the kernel, and proportional to
    :math:`T^{-1.5}` only for large ``T`` (for small ``T`` it grows like :math:`T^{-0.75}`;
    see docs/experiments/heatsources.md).

    Parameters
    ----------
    A : array_like of shape (m, n)
        Measurement matrix (:func:`heat_matrix`).

    Returns
    -------
    float
    """
    A = check_matrix(A)
    return float(np.max(np.linalg.norm(np.diff(A, axis=1), axis=0)))


@dataclass(frozen=True)
class Lemma5Check:
    r"""Gilbert & McMillan (2018) Lemma 5 on :math:`M/\|M\|_2`: :math:`\Delta_2 \ge 1/(\kappa_2\sqrt n)`.

    Attributes
    ----------
    sensitivity : float
        :math:`\Delta_2(M/\|M\|_2)`.
    kappa : float
        :math:`\kappa_2(M) = s_1 / s_{\min(m,n)}` (``inf`` when singular).
    bound : float
        :math:`1/(\kappa_2\sqrt n)`.
    applies : bool
        ``n <= m``. The proof needs the rank-``(n-1)`` matrix
        :math:`[M_1\, M_1\, M_2 \dots M_{n-1}]` to have rank below ``min(m, n)``, true only when
        ``n <= m``; for ``n > m`` the inequality can fail (slowly rotating columns in 2-D).
    holds : bool
        ``sensitivity >= bound`` (up to 1e-12 relative).
    """

    sensitivity: float
    kappa: float
    bound: float
    applies: bool
    holds: bool


def lemma5(M) -> Lemma5Check:
    r"""Check the condition-number relation of Lemma 5 (Gilbert & McMillan 2018, 3.1).

    Parameters
    ----------
    M : array_like of shape (m, n)
        Any nonzero matrix with at least two columns.

    Returns
    -------
    Lemma5Check
    """
    M = check_matrix(M, "M")
    s = np.linalg.svd(M, compute_uv=False)
    if s[0] <= 0:
        raise ParameterError("M must be nonzero")
    sens = sensitivity(M / s[0])
    kappa = float(s[0] / s[-1]) if s[-1] > 0 else float("inf")
    bound = 1.0 / (kappa * np.sqrt(M.shape[1]))
    return Lemma5Check(sensitivity=sens, kappa=kappa, bound=float(bound),
                       applies=M.shape[1] <= M.shape[0],
                       holds=bool(sens >= bound * (1 - 1e-12)))
