r"""An interior point method for LPs with dense linking rows over small blocks (ConstOPTMech).

The LP

.. math:: \min c^\top x \quad\text{s.t.}\quad x \ge 0,\quad L x \ge h,\quad
          a_{\rho} x_{i_\rho} + b_{\rho} x_{j_\rho} \ge 0 \ \ (\text{local rows } \rho)

has its variables split into *blocks* (every local row touches two variables of one block) and a
few *border* variables that appear in no local row; the *linking* rows ``L`` are few (``m_L``)
but dense over one variable per block. ConstOPTMech's LP (Imola et al. 2022, section 3.2) has
this shape: block ``v`` is the weight ``Y_v`` with the free entries of column ``v``, the local
rows are the privacy rows of column ``v``, the ``2n`` loss and row-sum rows link every ``Y_v``,
and the loss bound ``k`` is the border.

A primal-dual Mehrotra predictor-corrector method (Wright 1997, ch. 10) reduces each Newton step
to ``(H + L^T D_L L) dx = r`` with ``H = B^T D_B B + W X^{-1}`` block diagonal (``B`` the local
rows, ``D = Z S^{-1}`` the row weights). With ``P = H^{-1}`` (one small dense inverse per block)
the linking rows' Schur complement

.. math:: S = D_L^{-1} + L_{\mathcal B} P L_{\mathcal B}^\top \quad (m_L \times m_L)

is one dense matrix product (BLAS-3, ``2 m_L^2 n_{blocks}`` flops) plus a Cholesky factorisation
(``m_L^3 / 3``); the border variables are eliminated last by a bordered solve, so a basic border
variable (``w_k / x_k \to 0``) never puts a huge rank-one term into ``S``. HiGHS's general
interior point codes factorise the same LP with ``~10x`` the flops (``docs/design/lp.md``).

The method returns an approximate optimum (relative gap and infeasibilities below ``tol``) with a
valid-in-the-limit dual bound; callers make the primal solution exactly feasible for the rows
that carry a guarantee (ConstOPTMech's privacy rows) and certify the result, as for every LP.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import scipy.linalg as sl
import scipy.sparse as sp

from ..errors import SolverError, SolverTimeout

__all__ = ["BlockAngularLP", "BlockIPMResult", "solve_block_ipm"]


@dataclass
class BlockAngularLP:
    r"""``min c^T x`` s.t. ``x >= 0``, ``L x >= h`` (linking rows) and 2-variable local rows ``>= 0``.

    Attributes
    ----------
    c : ndarray (nv,)
    block : ndarray of int (nv,)
        Block of each variable; ``-1`` marks a border variable (in no local row).
    dense_vars : ndarray of int (nd,)
        Variables whose linking columns are dense (at most one per block).
    L_dense : ndarray (m_L, nd)
        Linking coefficients of ``dense_vars``.
    L_sparse : scipy.sparse matrix (m_L, nv)
        Linking coefficients of the other variables (zero columns at ``dense_vars``).
    h : ndarray (m_L,)
        Right-hand sides of the linking rows.
    local_i, local_j : ndarray of int (m_B,)
        The two variables of each local row (same block).
    local_a, local_b : ndarray (m_B,)
        Their coefficients: ``local_a * x[local_i] + local_b * x[local_j] >= 0``.
    """

    c: np.ndarray
    block: np.ndarray
    dense_vars: np.ndarray
    L_dense: np.ndarray
    L_sparse: sp.csr_matrix
    h: np.ndarray
    local_i: np.ndarray
    local_j: np.ndarray
    local_a: np.ndarray
    local_b: np.ndarray

    @property
    def num_var(self) -> int:
        return len(self.c)

    def linking(self, x: np.ndarray) -> np.ndarray:
        """``L x``."""
        return self.L_dense @ x[self.dense_vars] + self.L_sparse @ x

    def linking_t(self, y: np.ndarray) -> np.ndarray:
        """``L^T y``."""
        out = self.L_sparse.T @ y
        out[self.dense_vars] += self.L_dense.T @ y
        return out

    def local(self, x: np.ndarray) -> np.ndarray:
        """``B x`` (local rows)."""
        return self.local_a * x[self.local_i] + self.local_b * x[self.local_j]

    def local_t(self, z: np.ndarray) -> np.ndarray:
        """``B^T z``."""
        nv = self.num_var
        return (np.bincount(self.local_i, self.local_a * z, minlength=nv)
                + np.bincount(self.local_j, self.local_b * z, minlength=nv))


@dataclass
class BlockIPMResult:
    """Outcome of :func:`solve_block_ipm`: primal ``x``, duals of linking / local rows, bounds."""

    x: np.ndarray
    y_link: np.ndarray
    y_local: np.ndarray
    objective: float
    dual_objective: float
    iterations: int
    relative_gap: float
    primal_infeasibility: float
    dual_infeasibility: float
    stats: dict = field(default_factory=dict)


class _Blocks:
    """Index maps for the block-diagonal ``H`` and its inverse, blocks grouped by size."""

    def __init__(self, lp: BlockAngularLP):
        block = np.asarray(lp.block)
        inner = np.nonzero(block >= 0)[0]
        self.border = np.nonzero(block < 0)[0]
        order = inner[np.argsort(block[inner], kind="stable")]
        bid = block[order]
        starts = np.flatnonzero(np.r_[True, bid[1:] != bid[:-1]])
        sizes = np.diff(np.r_[starts, len(order)])
        nv = lp.num_var
        self.pos = np.full(nv, -1, dtype=np.int64)     # position of a variable inside its block
        self.slot = np.full(nv, -1, dtype=np.int64)    # index of its block within its size group
        self.group_of = np.full(nv, -1, dtype=np.int64)
        self.pos[order] = np.arange(len(order)) - np.repeat(starts, sizes)
        self.groups = []                                # (size, members (g, s), flat offset)
        offset = 0
        for gi, s in enumerate(np.unique(sizes)):
            which = np.nonzero(sizes == s)[0]
            members = order[starts[which][:, None] + np.arange(s)[None, :]]
            self.group_of[members] = gi
            self.slot[members] = np.arange(len(which))[:, None]
            self.groups.append((int(s), members, offset))
            offset += len(which) * s * s
        self.total = offset
        gi_, gj_ = lp.local_i, lp.local_j
        if np.any(block[gi_] != block[gj_]) or np.any(block[gi_] < 0):
            raise SolverError("a local row joins two blocks or a border variable")
        self._flat_local = (self._flat(gi_, gi_), self._flat(gi_, gj_), self._flat(gj_, gi_),
                            self._flat(gj_, gj_))
        self._flat_diag = self._flat(inner, inner)
        self.inner = inner
        self.nv = nv
        # sparsity pattern of P = H^{-1} as a CSR matrix over all variables (border rows empty)
        rows, cols = [], []
        for s, members, _ in self.groups:
            rows.append(np.repeat(members, s, axis=1).ravel())
            cols.append(np.tile(members, (1, s)).ravel())
        self._p_rows = np.concatenate(rows)
        self._p_cols = np.concatenate(cols)

    def _flat(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        g = self.group_of[a]
        out = np.empty(len(a), dtype=np.int64)
        for gi, (s, _, off) in enumerate(self.groups):
            sel = g == gi
            out[sel] = off + (self.slot[a[sel]] * s + self.pos[a[sel]]) * s + self.pos[b[sel]]
        return out

    def inverses(self, lp: BlockAngularLP, d_local: np.ndarray, diag: np.ndarray) -> list[np.ndarray]:
        """``H^{-1}`` per size group, ``H = B^T diag(d_local) B + diag(diag)`` (inner variables)."""
        a, b = lp.local_a, lp.local_b
        f11, f12, f21, f22 = self._flat_local
        w = np.concatenate([d_local * a * a, d_local * a * b, d_local * a * b, d_local * b * b,
                            diag[self.inner]])
        flat = np.bincount(np.concatenate([f11, f12, f21, f22, self._flat_diag]), w,
                           minlength=self.total)
        out = []
        for s, members, off in self.groups:
            Hg = flat[off:off + len(members) * s * s].reshape(len(members), s, s)
            # symmetric diagonal scaling first: near the optimum the diagonal spans ~1/mu^2
            scale = 1.0 / np.sqrt(np.einsum("gii->gi", Hg))
            outer = scale[:, :, None] * scale[:, None, :]
            Hs = Hg * outer
            try:
                Lc = np.linalg.cholesky(Hs)
                eye = np.broadcast_to(np.eye(s), Hs.shape)
                Li = np.linalg.solve(Lc, eye)
                out.append((np.swapaxes(Li, 1, 2) @ Li) * outer)
            except np.linalg.LinAlgError:
                out.append(np.linalg.pinv(Hs, hermitian=True) * outer)
        return out

    def apply(self, inv: list[np.ndarray], r: np.ndarray) -> np.ndarray:
        """``H^{-1} r`` on the inner variables (border entries 0)."""
        out = np.zeros_like(r)
        for (s, members, _), Pg in zip(self.groups, inv):
            out[members] = np.einsum("gij,gj->gi", Pg, r[members])
        return out

    def as_sparse(self, inv: list[np.ndarray]) -> sp.csr_matrix:
        data = np.concatenate([Pg.ravel() for Pg in inv])
        return sp.csr_matrix((data, (self._p_rows, self._p_cols)), shape=(self.nv, self.nv))


def _max_step(v: np.ndarray, dv: np.ndarray) -> float:
    neg = dv < 0
    if not neg.any():
        return 1.0
    return float(min(1.0, np.min(-v[neg] / dv[neg])))


def solve_block_ipm(lp: BlockAngularLP, *, tol: float = 1e-9, max_iter: int = 200,
                    time_limit: float | None = None, on_iteration=None,
                    refine: int = 10, reg: float = 0.0, accept: float = 1e-6) -> BlockIPMResult:
    r"""Mehrotra predictor-corrector on a :class:`BlockAngularLP`.

    Stops when the relative primal and dual infeasibilities and the relative gap
    ``|c^T x - h^T y| / (1 + |c^T x|)`` are all at most ``tol``.

    Parameters
    ----------
    lp : BlockAngularLP
    tol : float
    max_iter : int
    time_limit : float or None
        Seconds; :class:`~mdp.errors.SolverTimeout` when exceeded.
    on_iteration : callable or None
        Called with a dict (iteration, gap, infeasibilities, seconds) after every iteration.

    Returns
    -------
    BlockIPMResult

    Raises
    ------
    SolverError
        No convergence within ``max_iter`` iterations or a numerical failure.
    """
    t0 = time.perf_counter()
    blocks = _Blocks(lp)
    nv, mL, mB = lp.num_var, len(lp.h), len(lp.local_a)
    c, h = np.asarray(lp.c, float), np.asarray(lp.h, float)
    border = blocks.border
    Ls_T = lp.L_sparse.T.tocsr()
    Lk = lp.L_sparse[:, border].toarray() if len(border) else np.zeros((mL, 0))
    # starting point (scaled to the data: the linking right-hand sides set the size of x)
    x = np.ones(nv)
    Lx, Bx = lp.linking(x), lp.local(x)
    sL = np.maximum(np.abs(Lx - h), 1.0)
    sB = np.maximum(np.abs(Bx), 1.0)
    zL, zB, w = np.ones(mL), np.ones(mB), np.ones(nv)
    nh, nc = 1.0 + np.linalg.norm(h), 1.0 + np.linalg.norm(c)
    m_all = mL + mB + nv
    it = 0
    history = []
    dense_vars = lp.dense_vars
    worst = [0.0]
    best = None
    while True:
        Lx, Bx = lp.linking(x), lp.local(x)
        rpL, rpB = h - Lx + sL, -Bx + sB
        rd = c - lp.linking_t(zL) - lp.local_t(zB) - w
        pobj, dobj = float(c @ x), float(h @ zL)
        gap = abs(pobj - dobj) / (1.0 + abs(pobj))
        pinf = float(np.sqrt(rpL @ rpL + rpB @ rpB)) / nh
        dinf = float(np.linalg.norm(rd)) / nc
        mu = (sL @ zL + sB @ zB + x @ w) / m_all
        history.append((it, pobj, dobj, gap, pinf, dinf))
        if on_iteration is not None:
            on_iteration({"iteration": it, "objective": pobj, "dual_objective": dobj, "gap": gap,
                          "primal_infeasibility": pinf, "dual_infeasibility": dinf,
                          "seconds": time.perf_counter() - t0})
        score = max(gap, pinf, dinf)
        if best is None or score < best[0]:
            best = (score, x, zL, zB, pobj, dobj, gap, pinf, dinf)
        if gap <= tol and pinf <= tol and dinf <= tol:
            break
        if worst[0] > 1e-6:
            # the last Newton system was solved inaccurately (the blocks of H turn singular as
            # mu -> 0): stop at the best iterate if it is good enough, never continue from it
            if best[0] <= accept:
                _, x, zL, zB, pobj, dobj, gap, pinf, dinf = best
                break
            raise SolverError(f"the block interior point method lost accuracy at iteration {it} "
                              f"(relative gap {gap:.2e}, primal {pinf:.2e}, dual {dinf:.2e})")
        if it >= max_iter:
            raise SolverError(f"the block interior point method did not converge in {max_iter} "
                              f"iterations (relative gap {gap:.2e}, primal {pinf:.2e}, dual {dinf:.2e})")
        if time_limit is not None and time.perf_counter() - t0 > time_limit:
            raise SolverTimeout(f"time limit of {time_limit:g} s reached after {it} interior point "
                                f"iterations (relative gap {gap:.2e})")
        it += 1
        # --- factorisation of this iteration -------------------------------------------------
        dL, dB = zL / sL, zB / sB
        diag = w / x
        # primal regularisation of the factorised blocks only (bounds H^{-1} by 1 / reg); the
        # refinement below works with the exact normal matrix
        inv = blocks.inverses(lp, dB, diag + reg)
        P = blocks.as_sparse(inv)
        p_dense = P.diagonal()[dense_vars]
        S = (lp.L_dense * p_dense) @ lp.L_dense.T
        # L P L^T = Ld P_dd Ld^T + Ld (P_d: Ls^T) + its transpose + Ls P Ls^T (Ls is 0 on dense vars)
        Q = (P[dense_vars] @ Ls_T).tocsr()          # (nd, mL), sparse
        cross = np.asarray((Q.T @ lp.L_dense.T).T) if Q.nnz else np.zeros((mL, mL))
        S += cross + cross.T
        S += (lp.L_sparse @ P @ Ls_T).toarray()
        S[np.diag_indices(mL)] += 1.0 / dL
        try:
            cho = sl.cho_factor(S, lower=True, check_finite=False)
        except (np.linalg.LinAlgError, ValueError):
            S[np.diag_indices(mL)] += 1e-12 * np.abs(np.diag(S)).max()
            try:
                cho = sl.cho_factor(S, lower=True, check_finite=False)
            except (np.linalg.LinAlgError, ValueError) as exc:
                raise SolverError(f"the Schur complement of the linking rows is singular at "
                                  f"iteration {it}") from exc
        Hk = diag[border] + reg
        SinvLk = sl.cho_solve(cho, Lk, check_finite=False) if len(border) else np.zeros((mL, 0))
        Kb = np.diag(Hk) + Lk.T @ SinvLk if len(border) else None

        def normal(dx):
            # (B^T D_B B + W X^{-1} + L^T D_L L) dx, the exact product the factorisation inverts
            return lp.local_t(dB * lp.local(dx)) + diag * dx + lp.linking_t(dL * lp.linking(dx))

        def reduced(r):
            g = lp.linking(blocks.apply(inv, r))
            Sg = sl.cho_solve(cho, g, check_finite=False)
            dx = np.zeros(nv)
            if len(border):
                dxk = np.linalg.solve(Kb, r[border] - Lk.T @ Sg)
                dy = Sg + SinvLk @ dxk
                dx[border] = dxk
            else:
                dy = Sg
            dx += blocks.apply(inv, r - lp.linking_t(dy))
            return dx

        def newton(rsL, rsB, rxw):
            # r = G^T ((rsz + Z rp) / S) + rxw / X - rd, then iterative refinement on the
            # unfactorised normal matrix (the blocks of H can be ill-conditioned near the optimum)
            r = (lp.linking_t((rsL + zL * rpL) / sL) + lp.local_t((rsB + zB * rpB) / sB)
                 + rxw / x - rd)
            # preconditioned conjugate gradients on the exact normal matrix, preconditioned by
            # the factorisation with regularised blocks
            rn = np.linalg.norm(r)
            dx = np.zeros_like(r)
            res = r.copy()
            zv = reduced(res)
            pv = zv.copy()
            rz = res @ zv
            err = rn
            for _ in range(refine):
                Np = normal(pv)
                alpha = rz / (pv @ Np)
                dx += alpha * pv
                res -= alpha * Np
                err = np.linalg.norm(res)
                if err <= 1e-12 * rn:
                    break
                zv = reduced(res)
                rz_new = res @ zv
                pv = zv + (rz_new / rz) * pv
                rz = rz_new
            err = np.linalg.norm(r - normal(dx))
            worst[0] = max(worst[0], err / max(np.linalg.norm(r), 1e-300))
            dLx, dBx = lp.linking(dx), lp.local(dx)
            dsL, dsB = dLx - rpL, dBx - rpB
            dzL = (rsL - zL * dsL) / sL
            dzB = (rsB - zB * dsB) / sB
            dw = (rxw - w * dx) / x
            return dx, dsL, dsB, dzL, dzB, dw

        # predictor
        dx, dsL, dsB, dzL, dzB, dw = newton(-sL * zL, -sB * zB, -x * w)
        ap = min(_max_step(x, dx), _max_step(sL, dsL), _max_step(sB, dsB))
        ad = min(_max_step(zL, dzL), _max_step(zB, dzB), _max_step(w, dw))
        mu_aff = ((sL + ap * dsL) @ (zL + ad * dzL) + (sB + ap * dsB) @ (zB + ad * dzB)
                  + (x + ap * dx) @ (w + ad * dw)) / m_all
        sigma = min(1.0, (mu_aff / mu) ** 3)
        # corrector
        dx2, dsL2, dsB2, dzL2, dzB2, dw2 = newton(sigma * mu - sL * zL - dsL * dzL,
                                                  sigma * mu - sB * zB - dsB * dzB,
                                                  sigma * mu - x * w - dx * dw)
        eta = 0.99 if gap > 1e-6 else 0.995
        ap = min(1.0, eta * min(_max_step(x, dx2), _max_step(sL, dsL2), _max_step(sB, dsB2)))
        ad = min(1.0, eta * min(_max_step(zL, dzL2), _max_step(zB, dzB2), _max_step(w, dw2)))
        x = x + ap * dx2
        sL, sB = sL + ap * dsL2, sB + ap * dsB2
        zL, zB, w = zL + ad * dzL2, zB + ad * dzB2, w + ad * dw2
    return BlockIPMResult(x=x, y_link=zL, y_local=zB, objective=pobj, dual_objective=dobj,
                          iterations=it, relative_gap=gap, primal_infeasibility=pinf,
                          dual_infeasibility=dinf,
                          stats={"seconds": time.perf_counter() - t0, "history": history})
