"""Prototype: ConstOPTMech IPM with the normal matrix factorised as
S-variables (free entries not in any free-free row; block diagonal by matrix row u: diagonal +
rank 2) eliminated first, then a dense Schur complement on T = (Y, k, free entries in free-free
rows)."""
import time

import numpy as np
import scipy.linalg as sl
import scipy.sparse as sp

from mdp.families.constopt import _bound_factors


class ConstOptLP:
    """min k, x >= 0; linking rows L x >= h (n loss rows, n row-sum rows); local rows a x_i + b x_j >= 0."""

    def __init__(self, D, e, free, lam, ff_pairs=None):
        D = np.asarray(D, float)
        n = D.shape[0]
        fu, fv = np.nonzero(free)
        f = len(fu)
        self.n, self.f = n, f
        self.fu, self.fv = fu, fv
        self.nv = n + f + 1
        self.kcol = n + f
        with np.errstate(under="ignore"):
            E = np.exp(-e * D)
        fixed = ~free
        self.L_Y = np.empty((2 * n, n))
        np.multiply(-(D + lam) * E, fixed, out=self.L_Y[:n])
        np.multiply(E, fixed, out=self.L_Y[n:])
        self.a = -(D[fu, fv] + lam)          # loss coefficient of free entry j (row fu[j])
        self.h = np.r_[np.zeros(n), np.ones(n)]
        self.c = np.zeros(self.nv)
        self.c[self.kcol] = 1.0
        ids = n + np.arange(f)
        log_hi, log_lo = _bound_factors(D, free, fu, fv, e)
        li, lj, la, lb = [], [], [], []
        sel = np.nonzero(np.isfinite(log_hi))[0]
        li.append(fv[sel]); lj.append(ids[sel])
        with np.errstate(under="ignore", over="ignore"):
            la.append(np.exp(np.minimum(log_hi[sel], 0.0)))
            lb.append(-np.exp(-np.maximum(log_hi[sel], 0.0)))
            sel = np.nonzero(np.isfinite(log_lo))[0]
            li.append(ids[sel]); lj.append(fv[sel])
            la.append(np.ones(len(sel))); lb.append(-np.exp(log_lo[sel]))
        self.n_bound = sum(len(x) for x in li)
        self.D, self.e = D, e
        if ff_pairs is not None and len(ff_pairs[0]):
            A_, B_ = ff_pairs                   # free-entry indices: e^{-e D} M_a <= M_b ... row: M_b - e^{-eD} M_a >= 0? (see below)
            li.append(ids[A_]); lj.append(ids[B_])
            with np.errstate(under="ignore"):
                la.append(-np.exp(-e * D[fu[A_], fu[B_]]))
            lb.append(np.ones(len(A_)))
        self.li, self.lj = np.concatenate(li), np.concatenate(lj)
        self.la, self.lb = np.concatenate(la), np.concatenate(lb)
        self.mB = len(self.li)

    # linking products -------------------------------------------------------------------
    def linking(self, x):
        n, f = self.n, self.f
        m = x[n:n + f]
        out = self.L_Y @ x[:n]
        out[:n] += np.bincount(self.fu, self.a * m, minlength=n) + x[self.kcol]
        out[n:] += np.bincount(self.fu, m, minlength=n)
        return out

    def linking_t(self, y):
        n, f = self.n, self.f
        out = np.empty(self.nv)
        out[:n] = self.L_Y.T @ y
        out[n:n + f] = self.a * y[self.fu] + y[n + self.fu]
        out[self.kcol] = y[:n].sum()
        return out

    def local(self, x):
        return self.la * x[self.li] + self.lb * x[self.lj]

    def local_t(self, z):
        return (np.bincount(self.li, self.la * z, minlength=self.nv)
                + np.bincount(self.lj, self.lb * z, minlength=self.nv))


def _max_step(v, dv):
    neg = dv < 0
    if not neg.any():
        return 1.0
    return float(min(1.0, np.min(-v[neg] / dv[neg])))


def solve_rb(lp: ConstOptLP, *, tol=1e-9, max_iter=150, on_iteration=None, timing=None):
    t0 = time.perf_counter()
    n, f, nv = lp.n, lp.f, lp.nv
    # T: Y, k, free entries in free-free rows; S: the other free entries
    in_ff = np.zeros(nv, bool)
    ffrows = np.arange(lp.n_bound, lp.mB)
    in_ff[lp.li[ffrows]] = True
    in_ff[lp.lj[ffrows]] = True
    is_T = np.zeros(nv, bool)
    is_T[:n] = True
    is_T[lp.kcol] = True
    is_T |= in_ff
    T = np.nonzero(is_T)[0]
    Sv = np.nonzero(~is_T)[0]                  # global variable ids of S
    nT, nS = len(T), len(Sv)
    posT = np.full(nv, -1)
    posT[T] = np.arange(nT)
    jS = Sv - n                                 # free-entry index of each S variable
    uS = lp.fu[jS]                              # its matrix row
    aS = lp.a[jS]
    # L_T: linking columns of T (dense)
    L_T = np.zeros((2 * n, nT))
    L_T[:, :n] = lp.L_Y                         # Y are T[0:n] (sorted ids)
    L_T[:n, posT[lp.kcol]] = 1.0
    jT = T[(T >= n) & (T < n + f)] - n
    L_T[lp.fu[jT], posT[n + jT]] = lp.a[jT]
    L_T[n + lp.fu[jT], posT[n + jT]] = 1.0
    # local rows: those with an S variable (bound rows of S entries) and the T-only ones
    s_i, s_j = ~is_T[lp.li], ~is_T[lp.lj]
    assert not np.any(s_i & s_j)
    rowsS = np.nonzero(s_i | s_j)[0]
    sv_of = np.where(s_i[rowsS], lp.li[rowsS], lp.lj[rowsS])      # S var of the row
    sc_of = np.where(s_i[rowsS], lp.la[rowsS], lp.lb[rowsS])      # its coefficient
    tv_of = np.where(s_i[rowsS], lp.lj[rowsS], lp.li[rowsS])      # T var
    tc_of = np.where(s_i[rowsS], lp.lb[rowsS], lp.la[rowsS])
    sidx = np.full(nv, -1)
    sidx[Sv] = np.arange(nS)
    tS = np.zeros(nS, dtype=np.int64)
    tS[sidx[sv_of]] = posT[tv_of]
    eS_has = np.zeros(nS, bool)
    eS_has[sidx[sv_of]] = True
    # S grouped by matrix row u: group by count
    order = np.argsort(uS, kind="stable")
    cnt = np.bincount(uS, minlength=n)
    starts = np.r_[0, np.cumsum(cnt)]
    groups = []
    for s in np.unique(cnt[cnt > 0]):
        us = np.nonzero(cnt == s)[0]
        mem = order[starts[us][:, None] + np.arange(s)[None, :]]     # (g, s) indices into S
        groups.append((us, mem))
    # B_T for local rows (T columns only), as CSR with row-local column ids
    Bcols_i, Bcols_j = posT[lp.li], posT[lp.lj]
    x = np.ones(nv)
    sL = np.maximum(np.abs(lp.linking(x) - lp.h), 1.0)
    sB = np.maximum(np.abs(lp.local(x)), 1.0)
    zL, zB, w = np.ones(2 * n), np.ones(lp.mB), np.ones(nv)
    nh, nc = 1.0 + np.linalg.norm(lp.h), 1.0 + np.linalg.norm(lp.c)
    m_all = 2 * n + lp.mB + nv
    it = 0
    tm = dict(assemble=0.0, gemm=0.0, chol=0.0, rest=0.0)
    while True:
        rpL = lp.h - lp.linking(x) + sL
        rpB = -lp.local(x) + sB
        rd = lp.c - lp.linking_t(zL) - lp.local_t(zB) - w
        pobj, dobj = float(lp.c @ x), float(lp.h @ zL)
        gap = abs(pobj - dobj) / (1.0 + abs(pobj))
        pinf = float(np.sqrt(rpL @ rpL + rpB @ rpB)) / nh
        dinf = float(np.linalg.norm(rd)) / nc
        mu = (sL @ zL + sB @ zB + x @ w) / m_all
        if on_iteration is not None:
            on_iteration(dict(iteration=it, objective=pobj, gap=gap, pinf=pinf, dinf=dinf,
                              seconds=time.perf_counter() - t0))
        if gap <= tol and pinf <= tol and dinf <= tol:
            break
        if it >= max_iter:
            raise RuntimeError(f"no convergence: gap {gap:.1e} pinf {pinf:.1e} dinf {dinf:.1e}")
        it += 1
        ta = time.perf_counter()
        dL, dB = zL / sL, zB / sB
        diag = w / x
        # N_SS per row u: diag_j + d_loss a a^T + d_rs 1 1^T
        dS = diag[Sv] + np.bincount(sidx[sv_of], dB[rowsS] * sc_of ** 2, minlength=nS)
        Rinv = []
        for us, mem in groups:
            g, s = mem.shape
            R = (dL[us][:, None, None] * (aS[mem][:, :, None] * aS[mem][:, None, :])
                 + dL[n + us][:, None, None])
            R[:, np.arange(s), np.arange(s)] += dS[mem]
            Rinv.append(np.linalg.inv(R))
        # Gamma = C^T N_SS^-1 C (2x2 per row u), and Schur pieces
        g11 = np.zeros(n); g12 = np.zeros(n); g22 = np.zeros(n)
        for (us, mem), Ri in zip(groups, Rinv):
            av = aS[mem]
            Ra = np.einsum("gij,gj->gi", Ri, av)
            Rb = Ri.sum(axis=2)
            g11[us] = np.einsum("gi,gi->g", av, Ra)
            g12[us] = Ra.sum(axis=1)
            g22[us] = Rb.sum(axis=1)
        d1, d2 = dL[:n], dL[n:]
        # middle = D_L - D_L Gamma D_L (2x2 blocks on (u, n+u))
        m11 = d1 - d1 * g11 * d1
        m12 = -d1 * g12 * d2
        m22 = d2 - d2 * g22 * d2
        ML = np.empty_like(L_T)
        ML[:n] = m11[:, None] * L_T[:n] + m12[:, None] * L_T[n:]
        ML[n:] = m12[:, None] * L_T[:n] + m22[:, None] * L_T[n:]
        tb = time.perf_counter()
        St = L_T.T @ ML
        tc = time.perf_counter()
        # local rows: B_T^T D_B B_T (T-only parts) + diag_T
        both = (Bcols_i >= 0) & (Bcols_j >= 0)
        ri = np.r_[Bcols_i[Bcols_i >= 0], Bcols_j[Bcols_j >= 0], Bcols_i[both], Bcols_j[both]]
        rj = np.r_[Bcols_i[Bcols_i >= 0], Bcols_j[Bcols_j >= 0], Bcols_j[both], Bcols_i[both]]
        vv = np.r_[(dB * lp.la ** 2)[Bcols_i >= 0], (dB * lp.lb ** 2)[Bcols_j >= 0],
                   (dB * lp.la * lp.lb)[both], (dB * lp.la * lp.lb)[both]]
        St += sp.coo_matrix((vv, (ri, rj)), shape=(nT, nT)).toarray()
        St[np.diag_indices(nT)] += diag[T]
        # E (S x T): each S entry's bound rows all pair it with its column's Y: one value per row
        e_S = np.bincount(sidx[sv_of], dB[rowsS] * sc_of * tc_of, minlength=nS)
        E = sp.csr_matrix((e_S[eS_has], (np.nonzero(eS_has)[0], tS[eS_has])), shape=(nS, nT))
        # N_SS^{-1} E is block sparse: row j of group u has entries at the T partners of u's S entries
        gi_, gj_, gv_ = [], [], []          # G = C^T N_SS^{-1} E (2n x nT)
        ei_, ej_, ev_ = [], [], []          # E^T N_SS^{-1} E (nT x nT)
        NiE_parts = []
        for (us, mem), Ri in zip(groups, Rinv):
            g, s_ = mem.shape
            Q = Ri * e_S[mem][:, None, :]                      # Q[g, i, k]: row i, column t_k
            tk = np.broadcast_to(tS[mem][:, None, :], Q.shape)
            NiE_parts.append((mem, Q, tS[mem]))
            av = aS[mem]
            gl = np.einsum("gi,gik->gk", av, Q)
            gr = Q.sum(axis=1)
            uu = np.broadcast_to(us[:, None], gl.shape)
            gi_ += [uu.ravel(), (n + uu).ravel()]
            gj_ += [tS[mem].ravel(), tS[mem].ravel()]
            gv_ += [gl.ravel(), gr.ravel()]
            ti = np.broadcast_to(tS[mem][:, :, None], Q.shape)
            ei_.append(ti.ravel())
            ej_.append(tk.ravel())
            ev_.append((e_S[mem][:, :, None] * Q).ravel())
        G = sp.csr_matrix((np.concatenate(gv_), (np.concatenate(gi_), np.concatenate(gj_))),
                          shape=(2 * n, nT))
        LG = np.asarray((G.T @ (dL[:, None] * L_T)))           # (nT x nT) = G^T D_L L_T
        St -= LG + LG.T
        St -= sp.csr_matrix((np.concatenate(ev_), (np.concatenate(ei_), np.concatenate(ej_))),
                            shape=(nT, nT)).toarray()
        td = time.perf_counter()
        St = 0.5 * (St + St.T)
        cho = sl.cho_factor(St, lower=True, check_finite=False)
        te = time.perf_counter()
        tm["assemble"] += (tb - ta) + (td - tc)
        tm["gemm"] += tc - tb
        tm["chol"] += te - td

        def NSS_inv(v):
            out = np.empty_like(v)
            for (us, mem), Ri in zip(groups, Rinv):
                out[mem] = np.einsum("gij,gj->gi", Ri, v[mem])
            return out

        def NST(xT):
            # N_ST xT = C D_L L_T xT + E xT
            lam = dL * (L_T @ xT)
            return aS * lam[uS] + lam[n + uS] + E @ xT

        def NTS(yS):
            # N_TS yS = L_T^T D_L C^T yS + E^T yS
            cy = np.zeros(2 * n)
            cy[:n] = np.bincount(uS, aS * yS, minlength=n)
            cy[n:] = np.bincount(uS, yS, minlength=n)
            return L_T.T @ (dL * cy) + E.T @ yS

        def solveN(r):
            rS, rT = r[Sv], r[T]
            yS = NSS_inv(rS)
            xT = sl.cho_solve(cho, rT - NTS(yS), check_finite=False)
            out = np.empty(nv)
            out[T] = xT
            out[Sv] = yS - NSS_inv(NST(xT))
            return out

        def newton(rsL, rsB, rxw):
            r = (lp.linking_t((rsL + zL * rpL) / sL) + lp.local_t((rsB + zB * rpB) / sB)
                 + rxw / x - rd)
            dx = solveN(r)
            dsL, dsB = lp.linking(dx) - rpL, lp.local(dx) - rpB
            dzL = (rsL - zL * dsL) / sL
            dzB = (rsB - zB * dsB) / sB
            dw = (rxw - w * dx) / x
            return dx, dsL, dsB, dzL, dzB, dw

        dx, dsL, dsB, dzL, dzB, dw = newton(-sL * zL, -sB * zB, -x * w)
        ap = min(_max_step(x, dx), _max_step(sL, dsL), _max_step(sB, dsB))
        ad = min(_max_step(zL, dzL), _max_step(zB, dzB), _max_step(w, dw))
        mu_aff = ((sL + ap * dsL) @ (zL + ad * dzL) + (sB + ap * dsB) @ (zB + ad * dzB)
                  + (x + ap * dx) @ (w + ad * dw)) / m_all
        sigma = min(1.0, (mu_aff / mu) ** 3)
        dx2, dsL2, dsB2, dzL2, dzB2, dw2 = newton(sigma * mu - sL * zL - dsL * dzL,
                                                  sigma * mu - sB * zB - dsB * dzB,
                                                  sigma * mu - x * w - dx * dw)
        eta = 0.99 if gap > 1e-6 else 0.995
        ap = min(1.0, eta * min(_max_step(x, dx2), _max_step(sL, dsL2), _max_step(sB, dsB2)))
        ad = min(1.0, eta * min(_max_step(zL, dzL2), _max_step(zB, dzB2), _max_step(w, dw2)))
        x = x + ap * dx2
        sL, sB = sL + ap * dsL2, sB + ap * dsB2
        zL, zB, w = zL + ad * dzL2, zB + ad * dzB2, w + ad * dw2
        tm["rest"] += time.perf_counter() - te
    if timing is not None:
        timing.update(tm)
    return dict(x=x, zL=zL, zB=zB, objective=pobj, dual_objective=dobj, iterations=it, gap=gap,
                pinf=pinf, dinf=dinf, seconds=time.perf_counter() - t0, nT=nT)
