r"""Heatmap similarity metrics of the MIT saliency benchmark (Bylinskii et al., PAMI 2019).

Ghazi et al. (2023, section 4 "Metrics") evaluate DP heatmaps with these four metrics; SIM and
CC grow as the maps get more alike, KL and EMD shrink. Definitions follow the benchmark's MATLAB
code (``similarity.m``, ``CC.m``, ``KLdiv.m``, ``EMD.m``):

* **SIM** -- the MATLAB variant *with* min-max rescaling: each map is rescaled to ``[0, 1]``,
  then normalised to sum 1, and ``SIM = sum_x min(P(x), Q(x))``. (``pysaliency`` omits the
  min-max step; on maps whose minimum is 0, as heatmaps of non-negative data usually are, the two
  agree.)
* **CC** -- Pearson correlation of the two maps.
* **KL** -- ``sum_x G(x) log(eps + G(x) / (S(x) + eps))`` with both maps normalised to sum 1,
  ``eps = 2.2204e-16`` (MATLAB ``eps``), natural log, ``G`` the ground truth, ``S`` the estimate.
* **EMD** -- maps downsampled (factor 32 by default), normalised, exact EMD with Euclidean ground
  distance in downsampled pixels (:func:`mdp.emd.emd_downsampled`).

Arguments are always ``(estimate, truth)``; only KL is asymmetric.
"""

from __future__ import annotations

import numpy as np

from mdp.emd import emd_downsampled
from mdp.errors import ParameterError

__all__ = ["sim", "cc", "kl", "emd", "KL_EPS"]

KL_EPS = 2.2204e-16


def _maps(estimate, truth) -> tuple[np.ndarray, np.ndarray]:
    s = np.asarray(estimate, dtype=float)
    g = np.asarray(truth, dtype=float)
    if s.shape != g.shape:
        raise ParameterError(f"estimate and truth must have the same shape, got {s.shape} and {g.shape}")
    if s.size < 2:
        raise ParameterError(f"maps must have at least 2 cells, got shape {s.shape}")
    for name, m in (("estimate", s), ("truth", g)):
        if not np.all(np.isfinite(m)):
            raise ParameterError(f"{name} must be finite (found nan or inf)")
    return s, g


def _nonneg_mass(name: str, m: np.ndarray) -> np.ndarray:
    if np.any(m < 0):
        raise ParameterError(f"{name} must be non-negative, min is {m.min()}")
    total = m.sum()
    if total <= 0:
        raise ParameterError(f"{name} must have positive mass, got total {total}")
    return m / total


def sim(estimate, truth) -> float:
    r"""Similarity (histogram intersection), MIT benchmark MATLAB variant.

    .. math:: \mathrm{SIM}(S, G) = \sum_x \min(\bar S(x), \bar G(x)), \quad
              \bar M = \frac{\tilde M}{\sum \tilde M},\ \tilde M = \frac{M - \min M}{\max M - \min M}

    In ``[0, 1]``; 1 iff the rescaled maps coincide. A constant map has no min-max rescaling; it
    is taken as uniform.
    """
    s, g = _maps(estimate, truth)

    def rescale(m: np.ndarray) -> np.ndarray:
        span = m.max() - m.min()
        m = (m - m.min()) / span if span > 0 else np.ones_like(m)
        return m / m.sum()

    return float(np.minimum(rescale(s), rescale(g)).sum())


def cc(estimate, truth) -> float:
    r"""Pearson linear correlation coefficient of the two maps.

    .. math:: \mathrm{CC}(S, G) = \frac{\operatorname{cov}(S, G)}{\sigma(S)\,\sigma(G)}

    In ``[-1, 1]``. Undefined (``nan``) when either map is constant.
    """
    s, g = _maps(estimate, truth)
    if np.ptp(s) == 0 or np.ptp(g) == 0:
        return float("nan")
    return float(np.corrcoef(s.ravel(), g.ravel())[0, 1])


def kl(estimate, truth, *, eps: float = KL_EPS) -> float:
    r"""KL divergence of the estimate from the ground truth, MIT benchmark regularisation.

    .. math:: \mathrm{KL}(S, G) = \sum_x G(x) \log\Big(\epsilon + \frac{G(x)}{S(x) + \epsilon}\Big),
              \quad \epsilon = 2.2204 \times 10^{-16}

    with ``S`` and ``G`` normalised to sum 1 and the natural logarithm. Truth mass where the
    estimate is (near) zero costs up to ``log(G(x) / eps)`` per unit, about 25-30 nats for
    heatmap values of ``1e-5``-``1e-3`` with the default ``eps``: KL mostly measures missed mass.

    Parameters
    ----------
    estimate, truth : array_like
        Non-negative maps of the same shape (normalised here).
    eps : float, default ``KL_EPS``
        Regularisation constant; the default is MATLAB's ``eps`` as in the benchmark's
        ``KLdiv.m`` (Bylinskii et al. 2019). Larger values cap the cost of missed mass lower.
    """
    s, g = _maps(estimate, truth)
    s = _nonneg_mass("estimate", s)
    g = _nonneg_mass("truth", g)
    eps = float(eps)
    if not (np.isfinite(eps) and eps > 0):
        raise ParameterError(f"eps must be a positive finite number, got {eps!r}")
    return float(np.sum(g * np.log(eps + g / (s + eps))))


def emd(estimate, truth, *, downsample: int = 32, ground: str = "euclidean") -> float:
    """Saliency-benchmark EMD: block-sum downsampling by ``downsample``, then exact EMD.

    See :func:`mdp.emd.emd_downsampled` (result in downsampled pixels). ``downsample=1`` gives the
    exact EMD at full resolution (``ground="l1"`` is the paper's section 2.1 metric).
    """
    s, g = _maps(estimate, truth)
    return emd_downsampled(s, g, factor=downsample, ground=ground)
