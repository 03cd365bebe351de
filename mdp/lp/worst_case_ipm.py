r"""The worst-case-loss LP over *every* privacy row, by a block-angular interior point method.

The LP of OPTMech and SpannerMech (:mod:`mdp.lp.worst_case`; Imola et al. 2022, section 2.1),

.. math:: \min_{M \ge 0,\, k \ge 0} k \quad\text{s.t.}\quad \sum_w M_{uw} = 1,\quad
          k - \sum_w D_{uw} M_{uw} \ge 0,\quad M_{vw} - e^{-\epsilon_p D_{uv}} M_{uw} \ge 0
          \ \ \forall p = (u, v) \in P,\ \forall w,

has ``n^2 + 1`` variables and ``|P| n`` privacy rows (``n^2 (n - 1)`` for OPTMech: ~10^6 at
n = 100). A privacy row of output column ``w`` touches only column ``w`` of ``M``: the LP is
block-angular, ``n`` blocks (the columns) linked by the ``2n`` row-sum and loss rows. HiGHS
factorises it as a general sparse LP; this module exploits the structure.

**Newton systems.** A Mehrotra predictor-corrector method (Wright 1997, ch. 10) reduces each
Newton system to the normal equations in the variables, ``N dx - E^T dy = h``, ``E dx = r``, with

.. math:: N = \operatorname{blockdiag}_w(H_w) \oplus \theta_k + L^\top W_L L,\qquad
          H_w = Z_w X_w^{-1} + P_w^\top W_w P_w \ (n \times n),

``E`` the row sums and ``L`` the loss rows. With ``C = [L; E]`` (``2n`` rows) and
``B = blockdiag(H_w) + theta_k``, eliminating ``dx = B^{-1} (h - C^T t)`` leaves the dense
``2n x 2n`` system

.. math:: (C B^{-1} C^\top + \operatorname{diag}(W_L^{-1}, 0))\, t = C B^{-1} h - (0, r),

so one iteration costs ``n`` dense ``n x n`` factorisations (``O(n^4)`` flops), ``O(|P| n)``
for the rows' products and one ``2n x 2n`` Cholesky factorisation, whatever the number of rows.

**Accuracy.** Near the optimum ``H_w`` turns singular in the directions pinned only by the
linking rows (a column's entries that no binding privacy row ties together), and the
elimination loses accuracy at a relative gap of about ``1e-7``: this method is not the exact
solver. It serves two purposes that need less: its duals give a rigorous lower bound
(:func:`block_ipm_lower_bound`), and its slacks and duals predict the binding rows, which
start the exact lazy solve of :func:`mdp.lp.worst_case.solve_worst_case_lp_lazy` on HiGHS
(``start="ipm"``) instead of the rows through each column's own point. Measured figures:
``docs/design/lp.md``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import scipy.linalg as sl
import scipy.sparse as sp

from ..errors import SolverError, SolverTimeout

__all__ = ["WorstCaseLP", "BlockIPMResult", "solve_block_ipm", "block_ipm_lower_bound",
           "predicted_rows"]

#: Fraction of the distance to the boundary taken by each step.
STEP_FRACTION = 0.995
#: Rows whose dual exceeds ``ACTIVE_RATIO`` times their slack are predicted binding.
ACTIVE_RATIO = 1e-2
import os
_DEBUG = bool(os.environ.get("MDP_IPM_DEBUG"))
_PREG = float(os.environ.get("MDP_PREG", "0"))
_DREG = float(os.environ.get("MDP_DREG", "0"))


class WorstCaseLP:
    r"""The worst-case-loss LP in the scaled form solved here.

    Parameters
    ----------
    distances : ndarray (n, n)
    pu, pv : int arrays
        Ordered pairs ``p = (u, v)``; the rows ``M_vw >= e^{-eps_p D_uv} M_uw`` are imposed in
        every column ``w`` (the rows of :func:`mdp.lp.worst_case.primal_rows` divided by their
        coefficient ``e^{eps_p D_uv}``, so every coefficient lies in ``(0, 1]``).
    eps_pair : float or array
        Privacy level per pair.
    """

    def __init__(self, distances: np.ndarray, pu: np.ndarray, pv: np.ndarray, eps_pair):
        D = np.asarray(distances, dtype=float)
        n = D.shape[0]
        self.n = n
        self.D = D
        self.pu = np.asarray(pu, dtype=np.int64)
        self.pv = np.asarray(pv, dtype=np.int64)
        eps_pair = np.broadcast_to(np.asarray(eps_pair, dtype=float), self.pu.shape)
        with np.errstate(under="ignore"):
            self.b = np.exp(-eps_pair * D[self.pu, self.pv])
        P = len(self.pu)
        cols = np.arange(P)
        #: ``Sv @ X`` sums X over the pairs whose ``v`` is each row; ``Sub`` weights by ``b``.
        self.Sv = sp.csr_matrix((np.ones(P), (self.pv, cols)), shape=(n, P))
        self.Sub = sp.csr_matrix((self.b, (self.pu, cols)), shape=(n, P))
        self.Sub2 = sp.csr_matrix((self.b ** 2, (self.pu, cols)), shape=(n, P))
        self._off = self.pv * n + self.pu  # flat (row, column) index of pair p inside H_w

    @property
    def num_pairs(self) -> int:
        return len(self.pu)

    def privacy(self, M: np.ndarray) -> np.ndarray:
        """Row activities ``g[p, w] = M[pv, w] - b_p M[pu, w]`` (``|P| x n``)."""
        return M[self.pv] - self.b[:, None] * M[self.pu]

    def privacy_t(self, lam: np.ndarray) -> np.ndarray:
        """``P^T lam`` as an ``n x n`` array over ``M``'s entries."""
        return self.Sv @ lam - self.Sub @ lam

    def loss(self, M: np.ndarray) -> np.ndarray:
        return (self.D * M).sum(axis=1)


@dataclass
class BlockIPMResult:
    """What :func:`solve_block_ipm` returns.

    Attributes
    ----------
    M : ndarray (n, n)
        The last iterate's matrix (non-negative; rows sum to 1 up to ``primal_infeasibility``).
    k : float
        Its bound variable (the primal objective).
    y, beta : ndarray (n,)
        Multipliers of the row-sum and loss rows.
    lam, slack : ndarray (|P|, n)
        Multipliers and slacks of the (scaled) privacy rows.
    iterations : int
    relative_gap : float
        ``|k - sum(y)| / max(1, |k|)`` at the last iterate.
    primal_infeasibility, dual_infeasibility : float
        Largest scaled residuals at the last iterate.
    lower_bound : float
        Rigorous bound of the multipliers (:func:`block_ipm_lower_bound`).
    seconds : float
    status : str
        ``"optimal"`` (all tolerances met), ``"stalled"`` (no progress; the best iterate) or
        ``"iteration limit"``.
    """

    M: np.ndarray
    k: float
    y: np.ndarray
    beta: np.ndarray
    lam: np.ndarray
    slack: np.ndarray
    iterations: int
    relative_gap: float
    primal_infeasibility: float
    dual_infeasibility: float
    lower_bound: float
    seconds: float
    status: str


def block_ipm_lower_bound(lp: WorstCaseLP, y: np.ndarray, beta: np.ndarray,
                          lam: np.ndarray) -> float:
    r"""A rigorous lower bound on the LP optimum from any multipliers.

    With ``beta, lam`` clipped to ``>= 0`` and scaled by ``1 / sum(beta)`` (so that ``k``
    cancels), every feasible ``M`` (``0 <= M <= 1``) satisfies

    .. math:: k \ge \sum_u y_u + \sum_{u, w} \min\bigl(0,\ -y_u + D_{uw} \beta_u
              - (P^\top \lambda)_{uw}\bigr),

    the Lagrangian bound of :func:`mdp.lp.worst_case.lagrangian_lower_bound`.
    """
    beta = np.maximum(beta, 0.0)
    s = beta.sum()
    if not s > 0:
        return 0.0
    beta = beta / s
    lam = np.maximum(lam, 0.0) / s
    red = -y[:, None] + lp.D * beta[:, None] - lp.privacy_t(lam)
    return float(y.sum() + np.minimum(red, 0.0).sum())


def predicted_rows(lp: WorstCaseLP, res: BlockIPMResult,
                   ratio: float = ACTIVE_RATIO) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Privacy rows ``(u, v, w)`` predicted binding: dual above ``ratio`` times slack."""
    p, w = np.nonzero(res.lam > ratio * res.slack)
    return lp.pu[p], lp.pv[p], w


def _max_step(v: np.ndarray, dv: np.ndarray) -> float:
    neg = dv < 0
    if not neg.any():
        return 1.0
    return float(min(1.0, np.min(-v[neg] / dv[neg])))


class _Newton:
    """Factorisation of one Newton system (module docstring) and solves with it."""

    def __init__(self, lp: WorstCaseLP, M, zM, k, zk, sL, bL, sP, lP, reg: float, dreg: float = 0.0):
        n = lp.n
        D = lp.D
        W = 1.0 / (sP / lP + dreg)
        self.W = W
        self.WL = 1.0 / (sL / bL + dreg)
        self.thk = zk / k
        Hd = (lp.Sv @ W) + (lp.Sub2 @ W) + zM / M + reg  # diagonal, [u, w]
        H = np.zeros((n, n * n))
        H[:, lp._off] = -(lp.b[:, None] * W).T
        H = H.reshape(n, n, n)
        H += H.transpose(0, 2, 1)
        idx = np.arange(n)
        H[:, idx, idx] += Hd.T
        self.H = H
        self.lp = lp
        # batched inverse of the SPD column blocks (LU of each n x n block)
        # Jacobi scaling first: the entries of a column span many orders of magnitude
        dh = 1.0 / np.sqrt(H[:, idx, idx])  # [w, u]
        Hs = H * dh[:, :, None] * dh[:, None, :]
        self.Hinv = np.linalg.inv(Hs) * dh[:, :, None] * dh[:, None, :]
        Hi = self.Hinv
        DT = D.T  # DT[w, u] = D[u, w]
        HD = Hi * DT[:, :, None]  # HD[w, u, v] = Hinv_w[u, v] D[u, w]
        S = np.empty((2 * n, 2 * n))
        S[:n, :n] = (HD * DT[:, None, :]).sum(axis=0) + 1.0 / self.thk + np.diag(1.0 / self.WL)
        S[:n, n:] = -HD.sum(axis=0)
        S[n:, :n] = S[:n, n:].T
        S[n:, n:] = Hi.sum(axis=0)
        S = 0.5 * (S + S.T)
        ds = 1.0 / np.sqrt(np.diag(S))
        S = S * ds[:, None] * ds[None, :]
        self.ds = ds
        try:
            self.S = sl.cho_factor(S, lower=True, check_finite=False)
        except np.linalg.LinAlgError:
            S[np.diag_indices(2 * n)] += 1e-14
            self.S = sl.cho_factor(S, lower=True, check_finite=False)
        self.D = D

    def Binv(self, hM, hk):
        return np.einsum("wuv,vw->uw", self.Hinv, hM), hk / self.thk

    def apply(self, dM, dk, dy):
        """``(N dx - E^T dy, E dx)`` (for iterative refinement)."""
        D = self.D
        Ldx = dk - (D * dM).sum(axis=1)
        v = self.WL * Ldx
        oM = np.einsum("wuv,vw->uw", self.H, dM) - D * v[:, None] - dy[:, None]
        ok = self.thk * dk + v.sum()
        return oM, ok, dM.sum(axis=1)

    def solve(self, hM, hk, rp, refine: int = 2):
        """``N dx - E^T dy = h``, ``E dx = rp`` with ``refine`` steps of iterative refinement."""
        dM, dk, dy = self._solve(hM, hk, rp)
        for _ in range(refine):
            oM, ok, oE = self.apply(dM, dk, dy)
            cM, ck, cy = self._solve(hM - oM, hk - ok, rp - oE)
            dM, dk, dy = dM + cM, dk + ck, dy + cy
        return dM, dk, dy

    def _solve(self, hM, hk, rp):
        """``N dx - E^T dy = h``, ``E dx = rp``: returns ``dM, dk, dy``."""
        n = hM.shape[0]
        D = self.D
        bM, bk = self.Binv(hM, hk)
        rhs = np.r_[-(D * bM).sum(axis=1) + bk, bM.sum(axis=1) - rp]
        t = self.ds * sl.cho_solve(self.S, self.ds * rhs, check_finite=False)
        t1, t2 = t[:n], t[n:]
        cM = hM - (-D * t1[:, None] + t2[:, None])
        ck = hk - t1.sum()
        dM, dk = self.Binv(cM, ck)
        return dM, dk, -t2


def solve_block_ipm(lp: WorstCaseLP, *, tol: float = 1e-8, max_iter: int = 200,
                    time_limit: float | None = None, started: float | None = None,
                    on_iteration=None) -> BlockIPMResult:
    r"""Solve :class:`WorstCaseLP` by a Mehrotra predictor-corrector method (module docstring).

    Parameters
    ----------
    lp : WorstCaseLP
    tol : float
        Relative gap and scaled infeasibilities at which the method stops (``"optimal"``).
    max_iter : int
    time_limit : float or None
        Wall-clock seconds from ``started``; :class:`mdp.errors.SolverTimeout` beyond.
    started : float or None
        ``time.perf_counter()`` at which the caller's clock started (default: now).
    on_iteration : callable or None
        Called with ``(iteration, relative_gap, infeasibility)`` after each iteration.

    Returns
    -------
    BlockIPMResult
        The last iterate, or the best one when the method stalls (``status``).
    """
    t0 = time.perf_counter() if started is None else started
    n = lp.n
    D = lp.D
    P = lp.num_pairs
    # start: the uniform matrix, slacks and multipliers of one scale (infeasible start)
    M = np.full((n, n), 1.0 / n)
    k = 1.1 * float(lp.loss(M).max()) + 1.0 / n
    sL = k - lp.loss(M)
    sP = np.maximum(lp.privacy(M), 1.0 / n)
    zM = np.full((n, n), 1.0 / n)
    zk = 1.0 / n
    bL = np.full(n, 1.0 / n)
    lP = np.full((P, n), 1.0 / n)
    y = np.zeros(n)
    count = n * n + 1 + n + P * n
    best = None
    status = "iteration limit"
    it = 0
    for it in range(1, max_iter + 1):
        # residuals: rp = 1 - E x, rg = G x - s, rd = c - E^T y - G^T lam - z
        rp = 1.0 - M.sum(axis=1)
        rgL = k - lp.loss(M) - sL
        rgP = lp.privacy(M) - sP
        rdM = -y[:, None] + D * bL[:, None] - lp.privacy_t(lP) - zM
        rdk = 1.0 - bL.sum() - zk
        mu = (float((M * zM).sum()) + k * zk + float(sL @ bL) + float((sP * lP).sum())) / count
        gap = abs(k - y.sum()) / max(1.0, abs(k))
        pinf = max(float(np.abs(rp).max()), float(np.abs(rgL).max()) / max(1.0, k),
                   float(np.abs(rgP).max()) if P else 0.0)
        dinf = max(float(np.abs(rdM).max()), abs(rdk))
        score = max(gap, pinf, dinf)
        if on_iteration is not None:
            on_iteration(it, gap, max(pinf, dinf))
        if best is None or score < best[0]:
            best = (score, it, M.copy(), k, y.copy(), bL.copy(), lP.copy(), sP.copy(), gap, pinf, dinf)
        if score <= tol:
            status = "optimal"
            break
        if it - best[1] >= 10:
            status = "stalled"
            break
        if time_limit is not None and time.perf_counter() - t0 > time_limit:
            raise SolverTimeout(f"the block interior point method reached its time limit of "
                                f"{time_limit:g} s after {it} iterations (relative gap {gap:.2g})")
        reg = 1e-14 * max(1.0, float(np.abs(zM / M).max()))
        try:
            fac = _Newton(lp, M, zM, k, zk, sL, bL, sP, lP, reg + _PREG, _DREG)
        except (np.linalg.LinAlgError, ValueError):
            status = "stalled"
            break

        def direction(rxz, rxzk, rsl, rsp):
            # h = -rd - G^T W rg + G^T S^{-1} r_sl + X^{-1} r_xz
            aL = fac.WL * (-rgL + rsl / bL)
            aP = fac.W * (-rgP + rsp / lP)
            hM = -rdM + (-D * aL[:, None]) + lp.privacy_t(aP) + rxz / M
            hk = -rdk + aL.sum() + rxzk / k
            dM, dk, dy = fac.solve(hM, hk, rp)
            dbL = -fac.WL * ((dk - (D * dM).sum(axis=1)) + rgL) + fac.WL * rsl / bL
            dlP = -fac.W * (lp.privacy(dM) + rgP) + fac.W * rsp / lP
            dsL = (rsl - sL * dbL) / bL
            dsP = (rsp - sP * dlP) / lP
            dzM = (rxz - zM * dM) / M
            dzk = (rxzk - zk * dk) / k
            return dM, dk, dy, dbL, dlP, dsL, dsP, dzM, dzk

        # predictor (affine scaling)
        aff = direction(-M * zM, -k * zk, -sL * bL, -sP * lP)
        dM, dk, dy, dbL, dlP, dsL, dsP, dzM, dzk = aff
        ap = min(_max_step(M, dM), _max_step(np.array([k]), np.array([dk])), _max_step(sL, dsL),
                 _max_step(sP, dsP))
        ad = min(_max_step(zM, dzM), _max_step(np.array([zk]), np.array([dzk])), _max_step(bL, dbL),
                 _max_step(lP, dlP))
        mu_aff = (float(((M + ap * dM) * (zM + ad * dzM)).sum()) + (k + ap * dk) * (zk + ad * dzk)
                  + float((sL + ap * dsL) @ (bL + ad * dbL))
                  + float(((sP + ap * dsP) * (lP + ad * dlP)).sum())) / count
        sigma = min(1.0, (mu_aff / mu) ** 3)
        # corrector
        sm = sigma * mu
        cor = direction(sm - M * zM - dM * dzM, sm - k * zk - dk * dzk, sm - sL * bL - dsL * dbL,
                        sm - sP * lP - dsP * dlP)
        dM, dk, dy, dbL, dlP, dsL, dsP, dzM, dzk = cor
        ap = STEP_FRACTION * min(_max_step(M, dM), _max_step(np.array([k]), np.array([dk])),
                                 _max_step(sL, dsL), _max_step(sP, dsP))
        ad = STEP_FRACTION * min(_max_step(zM, dzM), _max_step(np.array([zk]), np.array([dzk])),
                                 _max_step(bL, dbL), _max_step(lP, dlP))
        ap = min(ap, 1.0)
        ad = min(ad, 1.0)
        if _DEBUG:
            oM, ok, oE = fac.apply(dM, dk, dy)
            print("   lim p", _max_step(M, dM), _max_step(np.array([k]), np.array([dk])), _max_step(sL, dsL), _max_step(sP, dsP),
                  "d", _max_step(zM, dzM), _max_step(np.array([zk]), np.array([dzk])), _max_step(bL, dbL), _max_step(lP, dlP))
            print(f"   ap {ap:.3g} ad {ad:.3g} sigma {sigma:.2g} mu {mu:.2g} rp {np.abs(rp).max():.2g} "
                  f"rgL {np.abs(rgL).max():.2g} rgP {np.abs(rgP).max():.2g} rdM {np.abs(rdM).max():.2g} "
                  f"rdk {abs(rdk):.2g} Erp {np.abs(oE - rp).max():.2g} minM {M.min():.2g} maxzx {(zM/M).max():.2g} maxW {(lP/sP).max():.2g}")
        M = M + ap * dM
        k = k + ap * dk
        sL = sL + ap * dsL
        sP = sP + ap * dsP
        zM = zM + ad * dzM
        zk = zk + ad * dzk
        bL = bL + ad * dbL
        lP = lP + ad * dlP
        y = y + ad * dy
        if not (np.isfinite(k) and np.isfinite(y).all()):
            status = "stalled"
            break
    _, _, Mb, kb, yb, bLb, lPb, sPb, gap, pinf, dinf = best
    if not np.isfinite(kb):
        raise SolverError("the block interior point method diverged")
    return BlockIPMResult(M=np.maximum(Mb, 0.0), k=float(kb), y=yb, beta=bLb, lam=lPb, slack=sPb,
                          iterations=it, relative_gap=gap, primal_infeasibility=pinf,
                          dual_infeasibility=dinf, lower_bound=block_ipm_lower_bound(lp, yb, bLb, lPb),
                          seconds=time.perf_counter() - t0, status=status)
