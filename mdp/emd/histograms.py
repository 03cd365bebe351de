"""Histograms for the EMD: the mass rules of :mod:`mdp.emd` and mass-preserving block sums."""

from __future__ import annotations

import numpy as np

from ..errors import ParameterError
from ..validation import check_int

__all__ = ["MASS_RTOL", "check_histograms", "block_sum"]

#: Relative difference of total masses accepted with ``normalize=False``.
MASS_RTOL = 1e-9


def check_histograms(p, q, *, normalize: bool,
                     ndim: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Validate two histograms and apply the mass rules of :mod:`mdp.emd`.

    Returns
    -------
    (a, b) : ndarray
        Both divided by their totals (``normalize=True``), or ``p`` and ``q`` rescaled to
        ``p``'s total after checking the totals agree within :data:`MASS_RTOL`.

    Raises
    ------
    ParameterError
        Naming ``p`` or ``q`` and what is wrong with it.
    """
    p = np.asarray(p, dtype=float)
    q = np.asarray(q, dtype=float)
    if ndim is not None and p.ndim != ndim:
        raise ParameterError(f"p must be {ndim}-D, got shape {p.shape}")
    if p.shape != q.shape:
        raise ParameterError(f"p and q must have the same shape, got {p.shape} and {q.shape}")
    for name, h in (("p", p), ("q", q)):
        if not np.all(np.isfinite(h)):
            raise ParameterError(f"{name} must be finite (found nan or inf)")
        if np.any(h < 0):
            raise ParameterError(f"{name} must be non-negative, min is {h.min()}")
        if h.sum() <= 0:
            raise ParameterError(f"{name} must have positive mass, got total {h.sum()}")
    sp_, sq = p.sum(), q.sum()
    if normalize:
        return p / sp_, q / sq
    if abs(sp_ - sq) > MASS_RTOL * max(sp_, sq):
        raise ParameterError(
            f"p and q must have equal mass when normalize=False, got {sp_!r} and {sq!r} "
            "(use normalize=True to compare them as distributions)")
    return p, q * (sp_ / sq)



def block_sum(p, factor: int) -> np.ndarray:
    """Sum ``factor x factor`` blocks of a 2-D map (the last blocks may be smaller).

    Mass preserving; used to downsample before an exact EMD.
    """
    p = np.asarray(p, dtype=float)
    if p.ndim != 2:
        raise ParameterError(f"p must be 2-D, got shape {p.shape}")
    factor = check_int(factor, "factor", low=1)
    r = np.add.reduceat(p, np.arange(0, p.shape[0], factor), axis=0)
    return np.add.reduceat(r, np.arange(0, p.shape[1], factor), axis=1)
