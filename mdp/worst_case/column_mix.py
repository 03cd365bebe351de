r"""Least-loss per-column mixture of private matrices: a cheaper repair of a restricted optimum.

In ``gap=`` mode OPTMech stops at a *restricted* optimum ``M``: optimal over the privacy rows
generated so far, slightly violating some of the others. The balanced envelope
(:func:`~mdp.lp.output.balanced_envelope`) makes it private, but its column envelopes raise
nearly every input's loss, so several more rounds of row generation are needed only to make that
repair cheap (``docs/design/lp.md``, "Block rounds (OPTMech)").

The privacy rows of output ``w`` involve column ``w`` only, and the private columns form a convex
cone (closed under sums and positive scaling). So from *atoms* ``A_1, ..., A_k``, matrices whose
every column is eps-private, any

.. math:: P_{uw} = \sum_j t_{jw} A^{(j)}_{uw}, \qquad t_{jw} \ge 0,

has private columns; it is a mechanism when its rows sum to 1. :func:`least_loss_column_mix`
chooses the weights by the LP

.. math:: \min_{t \ge 0,\, L} L \quad\text{s.t.}\quad \sum_{j,w} t_{jw} A^{(j)}_{uw} = 1,\quad
          \sum_{j,w} t_{jw} D_{uw} A^{(j)}_{uw} \le L \qquad (u = 1..n),

``k n + 1`` variables and ``2 n`` rows, small next to OPTMech's ``n^2`` variables. With the
balanced envelope itself among the atoms (``t = 1`` on it is feasible) the mix never loses to
it; with the column-wise largest private minorant of ``M`` (:func:`lower_envelope`), the
exponential mechanism's kernel ``e^{-eps D}`` and earlier rounds' repairs beside it, the
certified gap of Geolife and GloVe restricted optima fell 1.5-8x (figures in
``docs/design/lp.md``, "Numerics and certification").

The weights come from HiGHS, so rows sum to 1 only to its tolerances: the result goes through
:func:`~mdp.lp.output.private_candidate` and the registry's certification like any candidate.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

from ..errors import ParameterError
from ..lp.highs import LPError, SparseLP
from ..privacy.verification import column_envelope

__all__ = ["lower_envelope", "least_loss_column_mix"]


def lower_envelope(M: np.ndarray, distances: np.ndarray, epsilon: float) -> np.ndarray:
    r"""Column-wise largest eps-private minorant of a non-negative ``M``.

    .. math:: L_{vw} = \min_u e^{\epsilon D_{uv}} M_{uw}

    Every column of ``L`` satisfies ``L_vw <= e^{eps D_vu} L_uw`` (``D`` a metric) and
    ``L <= M``; a column with a zero entry becomes zero. Computed as ``1 / envelope(1 / M)`` with
    the chunked kernel of :func:`mdp.privacy.verification.repair_to_private`.
    """
    with np.errstate(divide="ignore"):
        inverse = 1.0 / np.asarray(M, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return 1.0 / column_envelope(inverse, np.asarray(distances, dtype=float), epsilon, False)


def least_loss_column_mix(atoms: Sequence[np.ndarray], distances: np.ndarray, *,
                          time_limit: float | None = None) -> np.ndarray | None:
    r"""The least worst-case-loss row-stochastic matrix ``sum_j A_j diag(t_j)``, ``t >= 0``.

    Parameters
    ----------
    atoms : sequence of ndarray (n, n)
        Non-negative matrices whose columns are eps-private (the caller's responsibility; the
        result is certified afterwards anyway).
    distances : ndarray (n, n)
    time_limit : float or None
        Seconds for HiGHS.

    Raises
    ------
    ParameterError
        No atom, or an atom that is not a finite non-negative matrix of the distances' shape.

    Returns
    -------
    ndarray (n, n) or None
        The mixture (rows sum to 1 within HiGHS's tolerance, entries >= 0), or None when HiGHS
        does not reach an optimum (e.g. no mixture has unit row sums).
    """
    D = np.asarray(distances, dtype=float)
    n = D.shape[0]
    atoms = [np.asarray(A, dtype=float) for A in atoms]
    k = len(atoms)
    if k == 0:
        raise ParameterError("atoms must hold at least one matrix")
    for j, Aj in enumerate(atoms):
        if Aj.shape != D.shape or not np.all(np.isfinite(Aj)) or np.any(Aj < 0):
            raise ParameterError(f"atoms[{j}] must be a finite non-negative {D.shape} matrix, got "
                                 f"shape {Aj.shape}")
    sums = np.hstack(atoms)                                                   # (n, k n)
    losses = np.hstack([D * A for A in atoms])
    A = sp.vstack([sp.hstack([sp.csr_matrix(sums), sp.csr_matrix((n, 1))]),
                   sp.hstack([sp.csr_matrix(losses), sp.csr_matrix(-np.ones((n, 1)))])],
                  format="csr")
    c = np.zeros(k * n + 1)
    c[-1] = 1.0
    lower = np.concatenate([np.ones(n), np.full(n, -np.inf)])
    upper = np.concatenate([np.ones(n), np.zeros(n)])
    col_upper = np.full(k * n + 1, np.inf)
    col_lower = np.zeros(k * n + 1)
    col_lower[-1] = -np.inf
    try:
        lp = SparseLP(c, A, row_lower=lower, row_upper=upper, col_lower=col_lower,
                      col_upper=col_upper, solver="simplex", time_limit=time_limit)
        t = np.maximum(lp.solve().x[:-1], 0.0).reshape(k, n)
    except LPError:
        return None
    return sum(Aj * t[j][None, :] for j, Aj in enumerate(atoms))
