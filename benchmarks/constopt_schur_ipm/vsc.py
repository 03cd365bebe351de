"""Prototype: Mehrotra IPM whose normal matrix N (variable space) is factorised by block Cholesky:
sparse variables (free entries m) first with a sparse LU (SuperLU, symmetric mode), then the dense
Schur complement on T = (Y, k)."""
import time

import numpy as np
import scipy.linalg as sl
import scipy.sparse as sp
import scipy.sparse.linalg as spl


def _max_step(v, dv):
    neg = dv < 0
    if not neg.any():
        return 1.0
    return float(min(1.0, np.min(-v[neg] / dv[neg])))


def solve_vsc(lp, *, tol=1e-9, max_iter=150, on_iteration=None, timing=None):
    t0 = time.perf_counter()
    nv = lp.num_var
    c, h = lp.c, lp.h
    mL, mB = len(h), len(lp.local_a)
    # dense set T: dense vars + border; sparse set: the rest
    is_T = np.zeros(nv, bool)
    is_T[lp.dense_vars] = True
    is_T[lp.block < 0] = True
    T = np.nonzero(is_T)[0]
    S_ = np.nonzero(~is_T)[0]
    pos = np.empty(nv, np.int64)
    pos[T] = np.arange(len(T))
    pos[S_] = np.arange(len(S_))
    nT, nS = len(T), len(S_)
    # full linking matrix split: L_T dense (mL x nT), L_S sparse (mL x nS)
    Lfull_sparse = lp.L_sparse.tocsc()
    L_T = np.zeros((mL, nT))
    L_T[:, pos[lp.dense_vars]] = lp.L_dense
    bT = T[lp.block[T] < 0]
    L_T[:, pos[bT]] += Lfull_sparse[:, bT].toarray()
    L_S = Lfull_sparse[:, S_].tocsr()
    # local rows as a sparse matrix, split
    rows = np.r_[np.arange(mB), np.arange(mB)]
    cols = np.r_[lp.local_i, lp.local_j]
    vals = np.r_[lp.local_a, lp.local_b]
    Bfull = sp.csc_matrix((vals, (rows, cols)), shape=(mB, nv))
    B_T = Bfull[:, T].tocsr()
    B_S = Bfull[:, S_].tocsr()
    x = np.ones(nv)
    sL = np.maximum(np.abs(lp.linking(x) - h), 1.0)
    sB = np.maximum(np.abs(lp.local(x)), 1.0)
    zL, zB, w = np.ones(mL), np.ones(mB), np.ones(nv)
    nh, nc = 1.0 + np.linalg.norm(h), 1.0 + np.linalg.norm(c)
    m_all = mL + mB + nv
    it = 0
    tm = {"assemble": 0.0, "splu": 0.0, "solveZ": 0.0, "schur": 0.0, "rest": 0.0}
    while True:
        rpL = h - lp.linking(x) + sL
        rpB = -lp.local(x) + sB
        rd = c - lp.linking_t(zL) - lp.local_t(zB) - w
        pobj, dobj = float(c @ x), float(h @ zL)
        gap = abs(pobj - dobj) / (1.0 + abs(pobj))
        pinf = float(np.sqrt(rpL @ rpL + rpB @ rpB)) / nh
        dinf = float(np.linalg.norm(rd)) / nc
        mu = (sL @ zL + sB @ zB + x @ w) / m_all
        if on_iteration is not None:
            on_iteration(dict(iteration=it, objective=pobj, dual_objective=dobj, gap=gap, pinf=pinf,
                              dinf=dinf, seconds=time.perf_counter() - t0))
        if gap <= tol and pinf <= tol and dinf <= tol:
            break
        if it >= max_iter:
            raise RuntimeError(f"no convergence: gap {gap:.1e} pinf {pinf:.1e} dinf {dinf:.1e}")
        it += 1
        ta = time.perf_counter()
        dL, dB = zL / sL, zB / sB
        diag = w / x
        # N_SS (sparse), N_ST, N_TT
        DB = sp.diags(dB)
        N_SS = (B_S.T @ DB @ B_S + L_S.T @ sp.diags(dL) @ L_S + sp.diags(diag[S_])).tocsc()
        N_ST = (B_S.T @ DB @ B_T).toarray() + L_S.T @ (dL[:, None] * L_T)
        N_TT = L_T.T @ (dL[:, None] * L_T) + (B_T.T @ DB @ B_T).toarray()
        N_TT[np.diag_indices(nT)] += diag[T]
        tb = time.perf_counter()
        lu = spl.splu(N_SS, permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0,
                      options=dict(SymmetricMode=True))
        tc = time.perf_counter()
        Z = lu.solve(N_ST)
        td = time.perf_counter()
        Sc = N_TT - N_ST.T @ Z
        Sc = 0.5 * (Sc + Sc.T)
        try:
            cho = sl.cho_factor(Sc, lower=True, check_finite=False)
        except np.linalg.LinAlgError:
            Sc[np.diag_indices(nT)] += 1e-14 * np.abs(np.diag(Sc)).max()
            cho = sl.cho_factor(Sc, lower=True, check_finite=False)
        te = time.perf_counter()
        tm["assemble"] += tb - ta
        tm["splu"] += tc - tb
        tm["solveZ"] += td - tc
        tm["schur"] += te - td

        def solveN(r):
            rS, rT = r[S_], r[T]
            yS = lu.solve(rS)
            xT = sl.cho_solve(cho, rT - N_ST.T @ yS, check_finite=False)
            out = np.empty(nv)
            out[T] = xT
            out[S_] = yS - Z @ xT
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
                pinf=pinf, dinf=dinf, seconds=time.perf_counter() - t0)
