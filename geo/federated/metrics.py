r"""Density maps and their errors (Bagdasaryan et al. 2022, section 6.1).

Every estimate is turned into a normalised density ``f*`` over the ``n x n`` pixels (negative
noisy counts clipped to 0, then divided by the total: post-processing) and compared with the
normalised ground truth ``f``:

.. math:: \mathrm{MSE} = \frac{1}{n^2}\sum_{x,y} (f^*(x,y) - f(x,y))^2, \qquad
          L_1 = \sum_{x,y} |f^*(x,y) - f(x,y)| \in [0, 2].

EMD uses the shared evaluation :func:`mdp.emd.emd_grid` (exact, L1 ground distance, in pixels of
the original map after block-summing it with :func:`mdp.emd.block_sum`).
"""

from __future__ import annotations

import numpy as np

from mdp.emd import block_sum, emd_grid
from mdp.errors import ParameterError

__all__ = ["density_map", "to_density", "mse", "l1", "block_sum", "emd_maps"]


def density_map(rows, cols, depth: int, weights=None) -> np.ndarray:
    """Normalised ``2^depth x 2^depth`` histogram of pixel coordinates."""
    side = 1 << depth
    h = np.bincount(np.asarray(rows) * side + np.asarray(cols), weights=weights,
                    minlength=side * side).astype(float)
    if h.sum() <= 0:
        raise ParameterError("density_map needs at least one point with positive weight")
    return (h / h.sum()).reshape(side, side)


def to_density(values) -> np.ndarray:
    """Clip negatives to 0 and normalise to sum 1 (uniform if nothing positive is left)."""
    v = np.clip(np.asarray(values, dtype=float), 0.0, None)
    s = v.sum()
    return v / s if s > 0 else np.full_like(v, 1.0 / v.size)


def _check_pair(est, truth):
    est = np.asarray(est, dtype=float)
    truth = np.asarray(truth, dtype=float)
    if est.shape != truth.shape:
        raise ParameterError(f"maps must have the same shape, got {est.shape} and {truth.shape}")
    return est, truth


def mse(est, truth) -> float:
    """Mean squared error over pixels of two density maps (Bagdasaryan et al. 2022, 6.1)."""
    est, truth = _check_pair(est, truth)
    return float(np.mean((est - truth) ** 2))


def l1(est, truth) -> float:
    """Sum of absolute differences of two density maps (``2 x`` total variation)."""
    est, truth = _check_pair(est, truth)
    return float(np.abs(est - truth).sum())


def emd_maps(est, truth, side: int = 64) -> tuple[float, str]:
    """Exact EMD with L1 ground distance between two density maps, coarsened to ``side x side``.

    Both maps go through :func:`to_density`, are block-summed by ``factor = n // side``
    (:func:`mdp.emd.block_sum`) and compared with :func:`mdp.emd.emd_grid` (``ground="l1"``),
    whose result, in cells of the coarsened map, is multiplied by ``factor``. Returns
    ``(value in pixels of the original map, "mdp.emd.emd_grid")``; the second item names the
    method for the results table and is always the same."""
    est, truth = _check_pair(est, truth)
    factor = est.shape[0] // side
    p, q = block_sum(to_density(est), factor), block_sum(to_density(truth), factor)
    return float(emd_grid(p, q, ground="l1")) * factor, "mdp.emd.emd_grid"
