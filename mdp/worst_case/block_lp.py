r"""The column-block form of the worst-case-loss LP and the interface of its factorisations.

:class:`ColumnBlockLP` (SpannerMech's pairs, the same in every column) and :class:`TripleBlockLP`
(OPTMech's row set per column) hold the LP of :mod:`mdp.worst_case.column_blocks` in column blocks;
:class:`BlockFactorBase` is what every factorisation of its Newton system provides, on the CPU
(:mod:`mdp.worst_case.column_blocks`) or in batches on a GPU (:mod:`mdp.worst_case.batched_blocks`). Both
modules build on this one, so neither imports the other's internals.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.linalg import cho_factor, cho_solve

from ..lp.dissection import Dissection
from ..lp.highs import LPError
from .row_kernels import pair_gram, pair_transpose, pair_values, triple_gram

__all__ = ["ColumnBlockLP", "TripleBlockLP", "BlockFactorBase", "REFINE_STEPS", "REFINE_RTOL"]

#: Iterative refinement of each Newton solve: at most this many steps, until the residual is
#: below ``REFINE_RTOL`` relative to the right-hand side.
REFINE_STEPS = 4
REFINE_RTOL = 1e-13


class ColumnBlockLP:
    r"""The worst-case-loss LP over the ordered pairs ``(pu[i], pv[i])``, in column blocks.

    Variables ``X[w, u] = M_uw`` (column ``w`` is row ``w`` of ``X``) and the free loss bound
    ``k``; ``min k`` s.t. ``sum_w M_uw = 1`` (``G_E``), ``k - sum_w D_uw M_uw >= 0`` (``G_L``),
    ``M_{pv,w} - e^{-eps_pair D_{pu,pv}} M_{pu,w} >= 0`` for every pair and column (``B``), and
    ``M >= 0``.
    """

    def __init__(self, distances: np.ndarray, pu: np.ndarray, pv: np.ndarray, eps_pair):
        D = np.asarray(distances, dtype=float)
        n = D.shape[0]
        pu, pv = np.asarray(pu, dtype=np.int64), np.asarray(pv, dtype=np.int64)
        self.n, self.m, self.D = n, len(pu), D
        self.DT = np.ascontiguousarray(D.T)
        self.eps_pair = np.broadcast_to(np.asarray(eps_pair, dtype=float), pu.shape)
        self.log_scale = self.eps_pair * D[pu, pv]
        self.ri, self.rj = pv, pu
        with np.errstate(under="ignore"):
            self.cb = -np.exp(-self.log_scale)
        self.privacy_rows = self.m * n

    def block_rows(self, w: int, dB: np.ndarray) -> tuple:
        """``(ri, rj, cb, d)`` of column ``w``'s privacy rows (row ``r`` of ``B`` is
        ``e_{ri[r]} + cb[r] e_{rj[r]}``) and their weights ``d`` taken from ``dB``."""
        return self.ri, self.rj, self.cb, dB[w]

    def permuted(self, tree: Dissection) -> ColumnBlockLP:
        """The same LP with the points in ``tree``'s order (point ``u`` at
        ``tree.positions[u]``)."""
        pos = tree.positions
        return ColumnBlockLP(self.D[np.ix_(tree.order, tree.order)], pos[self.rj], pos[self.ri],
                             self.eps_pair)

    def privacy(self, X: np.ndarray, minus: np.ndarray | None = None) -> np.ndarray:
        """``B X`` (less ``minus`` if given): the privacy rows' values, shape ``(n, m)``
        (column, pair)."""
        return pair_values(X, self.ri, self.rj, self.cb, minus)

    def privacy_t(self, Z: np.ndarray) -> np.ndarray:
        """``B^T Z`` for multipliers of shape ``(n, m)``."""
        return pair_transpose(Z, self.ri, self.rj, self.cb, self.n)

    def gram(self, X: np.ndarray, d: np.ndarray, q: np.ndarray) -> np.ndarray:
        """``B^T diag(d) B X + q X``: the blocks ``K_w`` applied to the rows of ``X``."""
        return pair_gram(X, d, self.ri, self.rj, self.cb, q)

    def loss(self, X: np.ndarray) -> np.ndarray:
        """``sum_w D_uw M_uw`` per row ``u``."""
        return np.einsum("wu,wu->u", self.DT, X)


class TripleBlockLP:
    r"""The worst-case-loss LP over the privacy rows ``(u[r], v[r], w[r])``, in column blocks.

    As :class:`ColumnBlockLP`, but each column ``w`` has its own rows
    ``M_{v,w} - e^{-eps D_uv} M_{u,w} >= 0`` (OPTMech's lazy row sets differ from column to
    column). The multipliers of the rows are flat arrays in the rows' order, sorted by column.
    """

    def __init__(self, distances: np.ndarray, u: np.ndarray, v: np.ndarray, w: np.ndarray,
                 epsilon: float):
        D = np.asarray(distances, dtype=float)
        n = D.shape[0]
        order = np.lexsort((u, v, w))
        u, v, w = (np.asarray(a, dtype=np.int64)[order] for a in (u, v, w))
        self.n, self.DT = n, np.ascontiguousarray(D.T)
        #: ``(w n + v) n + u`` of each row, ascending (the rows' order)
        self.keys = (w * n + v) * n + u
        self.ri, self.rj = v, u
        self.privacy_rows = len(u)
        with np.errstate(under="ignore"):
            self.cb = -np.exp(-float(epsilon) * D[u, v])
        self.start = np.searchsorted(w, np.arange(n + 1))
        rows = np.arange(len(u))
        # B^T as an (n^2 x rows) matrix over the entries X[w, u] = M_uw, raveled
        self._BT = sp.csr_matrix((np.r_[np.ones(len(u)), self.cb],
                                  (np.r_[w * n + v, w * n + u], np.r_[rows, rows])),
                                 shape=(n * n, len(u)))
        self._B = self._BT.T.tocsr()

    def block_rows(self, w: int, dB: np.ndarray) -> tuple:
        """Column ``w``'s rows and weights (see :meth:`ColumnBlockLP.block_rows`)."""
        a, b = self.start[w], self.start[w + 1]
        return self.ri[a:b], self.rj[a:b], self.cb[a:b], dB[a:b]

    def privacy(self, X: np.ndarray, minus: np.ndarray | None = None) -> np.ndarray:
        """``B X`` (less ``minus`` if given): the rows' values, flat."""
        values = self._B @ X.ravel()
        return values if minus is None else values - minus

    def privacy_t(self, Z: np.ndarray) -> np.ndarray:
        """``B^T Z`` for flat multipliers, shape ``(n, n)``."""
        return (self._BT @ Z).reshape(self.n, self.n)

    def gram(self, X: np.ndarray, d: np.ndarray, q: np.ndarray) -> np.ndarray:
        """``B^T diag(d) B X + q X`` (see :meth:`ColumnBlockLP.gram`)."""
        return triple_gram(X, d, self.start, self.ri, self.rj, self.cb, q)

    def loss(self, X: np.ndarray) -> np.ndarray:
        """``sum_w D_uw M_uw`` per row ``u``."""
        return np.einsum("wu,wu->u", self.DT, X)


class BlockFactorBase:
    """One iteration's factorisation of the Newton system: the block inverses (kept by the
    subclass, applied by ``_apply``) and the factored Schur complement of the coupling rows.

    Subclasses set ``device`` and implement ``factor(dB, wx, dL_inv)``, which ends with
    :meth:`_set_schur`, and ``_apply(R)``, the inverses applied to the rows of ``R``
    (``out[w] = K_w^{-1} R[w]``).
    """

    device = "cpu"
    #: Most steps of iterative refinement per Newton solve.
    refine_steps = REFINE_STEPS

    def __init__(self, lp: ColumnBlockLP):
        self.lp = lp
        self.e = np.r_[np.ones(lp.n), np.zeros(lp.n)]

    def factor(self, dB: np.ndarray, wx: np.ndarray, dL_inv: np.ndarray) -> None:
        raise NotImplementedError

    def _apply(self, R: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _set_schur(self, SLL: np.ndarray, SLE: np.ndarray, SEE: np.ndarray, dB: np.ndarray,
                   wx: np.ndarray, dL_inv: np.ndarray) -> None:
        """Factor ``S = [[S_LL + diag(dL_inv), S_LE], [S_LE^T, S_EE]]`` on the host."""
        SLL = SLL.copy()
        SLL[np.diag_indices(self.lp.n)] += dL_inv
        try:
            self.cho = cho_factor(np.block([[SLL, SLE], [SLE.T, SEE]]), lower=True)
        except np.linalg.LinAlgError as exc:
            raise LPError("the interior point method's coupling matrix lost positive "
                          "definiteness") from exc
        self.Se = cho_solve(self.cho, self.e)
        self.eSe = float(self.e @ self.Se)
        self.dB, self.wx, self.dL_inv = dB, wx, dL_inv

    def _solve_once(self, r, rE, rho, qL):
        lp, n = self.lp, self.lp.n
        t = self._apply(r)
        a = cho_solve(self.cho, np.r_[-lp.loss(t) - qL, t.sum(axis=0) - rE])
        dk = (rho - a[:n].sum()) / self.eSe
        lam = a + dk * self.Se
        dX = self._apply(r + lp.DT * lam[None, :n] - lam[None, n:])
        return dX, dk, lam[:n], lam[n:]

    def solve(self, r: np.ndarray, rE: np.ndarray, rho: float, rtol: float = REFINE_RTOL):
        r"""``(dX, dk, u, lam_E)`` of ``K dX + G_L^T u + G_E^T lam_E = r``,
        ``G_L dX + dk - diag(s_L / z_L) u = 0``, ``G_E dX = r_E``, ``sum u = rho``, refined
        against ``K`` in its sparse form."""
        lp = self.lp
        qL = np.zeros(lp.n)
        dX, dk, u, lE = self._solve_once(r, rE, rho, qL)
        scale = max(float(np.abs(r).max()), float(np.abs(rE).max()), abs(rho), 1e-300)
        for _ in range(self.refine_steps):
            KdX = lp.gram(dX, self.dB, self.wx)
            e1 = r - (KdX - lp.DT * u[None, :] + lE[None, :])
            e2 = -(-lp.loss(dX) + dk - self.dL_inv * u)
            e3 = rE - dX.sum(axis=0)
            e4 = rho - u.sum()
            if max(float(np.abs(e1).max()), float(np.abs(e2).max()), float(np.abs(e3).max()),
                   abs(e4)) <= rtol * scale:
                break
            c = self._solve_once(e1, e3, e4, e2)
            dX, dk, u, lE = dX + c[0], dk + c[1], u + c[2], lE + c[3]
        return dX, dk, u, lE
