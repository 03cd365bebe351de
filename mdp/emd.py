r"""Earth Mover's Distance: the evaluation shared by every spatial part of the toolkit.

(Issue 7 completes this module: grid EMD, general EMD, normalisation rules.)
"""

from __future__ import annotations

import numpy as np

__all__ = ["emd_1d"]


def emd_1d(p, q, positions=None) -> float:
    r"""Exact 1-D EMD (Wasserstein-1) between two histograms on the same positions.

    .. math:: \mathrm{EMD}(p, q) = \sum_{i} |P_i - Q_i| (x_{i+1} - x_i)

    where ``P``, ``Q`` are the cumulative sums of the normalised histograms and ``x`` the sorted
    positions (default ``0, 1, ..., n-1``, i.e. the result is in grid steps).
    """
    p = np.asarray(p, dtype=float)
    q = np.asarray(q, dtype=float)
    if p.ndim != 1 or p.shape != q.shape:
        raise ValueError(f"p and q must be 1-D of equal length, got {p.shape} and {q.shape}")
    if np.any(p < 0) or np.any(q < 0):
        raise ValueError("p and q must be non-negative")
    sp, sq = p.sum(), q.sum()
    if sp <= 0 or sq <= 0:
        raise ValueError("p and q must have positive mass")
    x = np.arange(len(p), dtype=float) if positions is None else np.asarray(positions, dtype=float)
    if x.shape != p.shape:
        raise ValueError(f"positions must have length {len(p)}, got {x.shape}")
    order = np.argsort(x, kind="stable")
    x, p, q = x[order], p[order] / sp, q[order] / sq
    return float(np.sum(np.abs(np.cumsum(p - q))[:-1] * np.diff(x)))
