"""Prototype 2: as rb.py, with the Schur complement on T assembled as a sum of Gram matrices
(no cancellation): per matrix row u the S entries are eliminated after the substitution
z_j = x_j + gamma_j Y_v(j) that absorbs their bound rows."""
import time

import numpy as np
import scipy.linalg as sl
import scipy.sparse as sp

from rb import ConstOptLP, _max_step  # noqa: F401


def solve_rb2(lp: ConstOptLP, *, tol=1e-9, max_iter=150, on_iteration=None, timing=None):
    t0 = time.perf_counter()
    n, f, nv = lp.n, lp.f, lp.nv
    ffrows = np.arange(lp.n_bound, lp.mB)
    is_T = np.zeros(nv, bool)
    is_T[:n] = True
    is_T[lp.kcol] = True
    is_T[lp.li[ffrows]] = True
    is_T[lp.lj[ffrows]] = True
    T = np.nonzero(is_T)[0]
    Sv = np.nonzero(~is_T)[0]
    nT, nS = len(T), len(Sv)
    posT = np.full(nv, -1)
    posT[T] = np.arange(nT)
    sidx = np.full(nv, -1)
    sidx[Sv] = np.arange(nS)
    jS = Sv - n
    uS = lp.fu[jS]
    aS = lp.a[jS]
    tS = posT[lp.fv[jS]]                       # the S entry's Y (its column's weight) in T
    L_T = np.zeros((2 * n, nT))
    L_T[:, :n] = lp.L_Y
    L_T[:n, posT[lp.kcol]] = 1.0
    jT = T[(T >= n) & (T < n + f)] - n
    L_T[lp.fu[jT], posT[n + jT]] = lp.a[jT]
    L_T[n + lp.fu[jT], posT[n + jT]] = 1.0
    # bound rows (rows < n_bound) of S entries: (row, p = coefficient on m, q = on Y)
    brow = np.arange(lp.n_bound)
    m_is_i = lp.li[brow] >= n                  # lo rows: m is li; hi rows: m is lj
    mvar = np.where(m_is_i, lp.li[brow], lp.lj[brow])
    pco = np.where(m_is_i, lp.la[brow], lp.lb[brow])
    qco = np.where(m_is_i, lp.lb[brow], lp.la[brow])
    onS = ~is_T[mvar]
    rS_rows, rS_s = brow[onS], sidx[mvar[onS]]
    rS_p, rS_q = pco[onS], qco[onS]
    # each S entry has at most 2 bound rows: slot them
    slot = np.full((nS, 2), -1)
    k_ = np.zeros(nS, dtype=np.int64)
    for r_, s_ in zip(range(len(rS_rows)), rS_s):
        slot[s_, k_[s_]] = r_
        k_[s_] += 1
    has1, has2 = slot[:, 0] >= 0, slot[:, 1] >= 0
    # T-only local rows
    tonly = np.nonzero(is_T[lp.li] & is_T[lp.lj])[0]
    ti_, tj_ = posT[lp.li[tonly]], posT[lp.lj[tonly]]
    ta_, tb_ = lp.la[tonly], lp.lb[tonly]
    # groups of S entries by matrix row
    order = np.argsort(uS, kind="stable")
    cnt = np.bincount(uS, minlength=n)
    starts = np.r_[0, np.cumsum(cnt)]
    groups = []
    for s in np.unique(cnt[cnt > 0]):
        us = np.nonzero(cnt == s)[0]
        groups.append((us, order[starts[us][:, None] + np.arange(s)[None, :]]))
    x = np.ones(nv)
    sL = np.maximum(np.abs(lp.linking(x) - lp.h), 1.0)
    sB = np.maximum(np.abs(lp.local(x)), 1.0)
    zL, zB, w = np.ones(2 * n), np.ones(lp.mB), np.ones(nv)
    nh, nc = 1.0 + np.linalg.norm(lp.h), 1.0 + np.linalg.norm(lp.c)
    m_all = 2 * n + lp.mB + nv
    it = 0
    tm = dict(assemble=0.0, gemm=0.0, chol=0.0, rest=0.0)
    Lt = np.empty_like(L_T)
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
        d1, d2 = dL[:n], dL[n:]
        # per S entry: A, B, C of its bound rows + delta, and the stable remainder on Y
        delta = diag[Sv]
        b1 = np.where(has1, dB[rS_rows[slot[:, 0]]], 0.0)
        p1 = np.where(has1, rS_p[slot[:, 0]], 0.0)
        q1 = np.where(has1, rS_q[slot[:, 0]], 0.0)
        b2 = np.where(has2, dB[rS_rows[slot[:, 1]]], 0.0)
        p2 = np.where(has2, rS_p[slot[:, 1]], 0.0)
        q2 = np.where(has2, rS_q[slot[:, 1]], 0.0)
        A = b1 * p1 * p1 + b2 * p2 * p2 + delta
        Bq = b1 * p1 * q1 + b2 * p2 * q2
        gam = Bq / A
        rem = (b1 * b2 * (p1 * q2 - p2 * q1) ** 2 + delta * (b1 * q1 * q1 + b2 * q2 * q2)) / A
        # modified linking rows L~ = L_T minus the substitution's corrections
        np.copyto(Lt, L_T)
        np.add.at(Lt, (uS, tS), -aS * gam)
        np.add.at(Lt, (n + uS, tS), -gam)
        # M_u = (D^-1 + C^T Delta^-1 C)^-1 per row (rows without S entries: D)
        ia = 1.0 / A
        s11 = 1.0 / d1 + np.bincount(uS, aS * aS * ia, minlength=n)
        s12 = np.bincount(uS, aS * ia, minlength=n)
        s22 = 1.0 / d2 + np.bincount(uS, ia, minlength=n)
        # det = s11 s22 - s12^2 as a sum of non-negative terms (Lagrange's identity), no cancellation
        det = (1.0 / (d1 * d2) + np.bincount(uS, ia, minlength=n) / d1
               + np.bincount(uS, aS * aS * ia, minlength=n) / d2)
        for us, mem in groups:
            av, iv = aS[mem], ia[mem]
            diff = av[:, :, None] - av[:, None, :]
            det[us] += 0.5 * np.einsum("gij,gi,gj->g", diff * diff, iv, iv)
        m11, m12, m22 = s22 / det, -s12 / det, s11 / det
        ML = np.empty_like(Lt)
        ML[:n] = m11[:, None] * Lt[:n] + m12[:, None] * Lt[n:]
        ML[n:] = m12[:, None] * Lt[:n] + m22[:, None] * Lt[n:]
        tb = time.perf_counter()
        St = Lt.T @ ML
        tc = time.perf_counter()
        St[np.diag_indices(nT)] += diag[T] + 0.0
        np.add.at(St, (tS, tS), rem)
        # T-only local rows (Gram)
        dd = dB[tonly]
        St += sp.coo_matrix((np.r_[dd * ta_ * ta_, dd * tb_ * tb_, dd * ta_ * tb_, dd * ta_ * tb_],
                             (np.r_[ti_, tj_, ti_, tj_], np.r_[ti_, tj_, tj_, ti_])),
                            shape=(nT, nT)).toarray()
        td = time.perf_counter()
        cho = sl.cho_factor(St, lower=True, check_finite=False)
        te = time.perf_counter()
        tm["assemble"] += (tb - ta) + (td - tc)
        tm["gemm"] += tc - tb
        tm["chol"] += te - td
        # per-row small systems (Delta + C D C^T), Cholesky
        facs = []
        for us, mem in groups:
            g, s = mem.shape
            av = aS[mem]
            R = d1[us][:, None, None] * av[:, :, None] * av[:, None, :] + d2[us][:, None, None]
            R[:, np.arange(s), np.arange(s)] += A[mem]
            facs.append(np.linalg.cholesky(R))

        def NSS_inv(v):
            out = np.empty_like(v)
            for (us, mem), Lc in zip(groups, facs):
                y = np.linalg.solve(Lc, v[mem][:, :, None])
                out[mem] = np.linalg.solve(np.swapaxes(Lc, 1, 2), y)[:, :, 0]
            return out

        def solveN(r):
            rS = r[Sv]
            rT = r[T].copy()
            np.add.at(rT, tS, -gam * rS)                       # r~_T = r_T - G^T r_S
            yS = NSS_inv(rS)
            cy1 = d1 * np.bincount(uS, aS * yS, minlength=n)
            cy2 = d2 * np.bincount(uS, yS, minlength=n)
            rhs = rT - Lt.T @ np.r_[cy1, cy2]
            dT = sl.cho_solve(cho, rhs, check_finite=False)
            lam = Lt @ dT
            v = aS * d1[uS] * lam[uS] + d2[uS] * lam[n + uS]
            zS = yS - NSS_inv(v)
            out = np.empty(nv)
            out[T] = dT
            out[Sv] = zS - gam * dT[tS]
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
    return dict(x=x, zL=zL, zB=zB, w=w, objective=pobj, dual_objective=dobj, iterations=it, gap=gap,
                pinf=pinf, dinf=dinf, seconds=time.perf_counter() - t0, nT=nT)
