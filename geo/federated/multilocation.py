r"""Multiple locations per user (Bagdasaryan et al. 2022, section 5.7): weighted normalisation, scaling by ``gamma``
and stochastic rounding to integers.

A user's vector of visit counts over the ``d`` slots is normalised to L1 norm 1, scaled by
``gamma`` and every entry rounded up with probability equal to its fractional part (unbiased).
The rounded vector has L1 norm ``<= gamma + d`` (each entry gains less than 1), so the
distributed discrete Laplace noise uses sensitivity ``gamma + d``; the server divides the sum by
``gamma``. The relative noise blow-up is at most ``1 + d/gamma``.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from mdp.errors import ParameterError
from mdp.validation import check_int, check_positive, check_rng

__all__ = ["multi_location_sensitivity", "encode_weighted"]


def multi_location_sensitivity(gamma: float, d: int) -> float:
    """L1 sensitivity ``gamma + d`` of a scaled, stochastically rounded vector of length ``d``."""
    return check_positive(gamma, "gamma") + check_int(d, "d", low=1)


def encode_weighted(visits, gamma: float, *, rng=None) -> sp.csr_matrix:
    r"""Encode users' visit counts ``(users, d)`` (dense or sparse, non-negative) as integer
    vectors: ``round_stoch(gamma * v / ||v||_1)``. Rows with no visits stay zero.

    Parameters
    ----------
    visits : array-like or scipy.sparse matrix, shape (users, d)
    gamma : float
        Scaling constant (Bagdasaryan et al. 2022, 5.7), ``>> d`` keeps the rounding blow-up small.
    rng : None, int or numpy.random.Generator

    Returns
    -------
    scipy.sparse.csr_matrix of int64
    """
    gamma = check_positive(gamma, "gamma")
    rng = check_rng(rng)
    m = sp.csr_matrix(visits, dtype=float)
    if m.nnz and m.data.min() < 0:
        raise ParameterError("visits must be non-negative")
    norms = np.asarray(m.sum(axis=1)).ravel()
    scale = np.divide(gamma, norms, out=np.zeros_like(norms), where=norms > 0)
    m = sp.diags(scale) @ m
    m = sp.csr_matrix(m)
    floor = np.floor(m.data)
    m.data = floor + (rng.random(m.data.size) < (m.data - floor))
    m.data = m.data.astype(np.int64)
    m.eliminate_zeros()
    return m.astype(np.int64)
