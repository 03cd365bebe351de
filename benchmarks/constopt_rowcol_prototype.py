# Prototype (issue 18): row + column generation on ConstOPTMech's dense block (loss rows, row-sum rows, weights Y);
# exact, 8.9 s at n = 400 but 124 s at n = 1000 (docs/design/lp.md). Kept in history, reverted.
import sys, time, numpy as np, scipy.sparse as sp
sys.path.insert(0, '/work/wt/constopt'); sys.path.insert(0, '/work/wt/constopt/benchmarks')
from lp_scaling import geolife_space
from mdp.families.constopt import nn_replacement, _bound_factors
from mdp.lp import SparseLP
import highspy

def add_cols(lp, A, cost=None):
    A = sp.csc_matrix(A, dtype=float); m, k = A.shape
    if k == 0: return
    A.sort_indices()
    INF = highspy.kHighsInf
    st = lp._h.addCols(int(k), np.zeros(k) if cost is None else cost, np.zeros(k), np.full(k, INF), int(A.nnz),
                       A.indptr[:-1].astype(np.int32), A.indices.astype(np.int32), A.data)
    assert st != highspy.HighsStatus.kError
    lp._update_sizes()

def run(n, start_frac=0.1, cap_frac=0.1, warm='simplex', first='ipm', seed_mode='ff', cmax=np.log(1e12), tol=1e-9, dtol=1e-9):
    t0 = time.perf_counter()
    S_ = geolife_space(n); D = S_.distances; e = 0.25; lam = 0.1
    free = nn_replacement(D, 10)
    fu, fv = np.nonzero(free); f = len(fu)
    E = np.exp(-e * D); E[free] = 0.0
    W = (D + lam) * E
    wfree = D[fu, fv] + lam
    log_hi, log_lo = _bound_factors(D, free, fu, fv, e)
    # bound rows over M (cols 0..f-1), Y part separately
    b_rows, b_M, b_v, b_coef, b_lo, b_hi = [], [], [], [], [], []
    nr = 0
    for logb, lo_b, hi_b in ((log_hi, -np.inf, 0.0), (log_lo, 0.0, np.inf)):
        sel = np.nonzero(np.isfinite(logb) & (np.abs(logb) <= cmax))[0]
        b_rows.append(nr + np.arange(len(sel))); b_M.append(sel); b_v.append(fv[sel]); b_coef.append(-np.exp(logb[sel]))
        b_lo.append(np.full(len(sel), lo_b)); b_hi.append(np.full(len(sel), hi_b)); nr += len(sel)
    b_rows, b_M, b_v, b_coef = map(np.concatenate, (b_rows, b_M, b_v, b_coef))
    b_lo, b_hi = np.concatenate(b_lo), np.concatenate(b_hi)
    nb = nr
    # Y coefficients in bound rows, as csc over v: (nb x n)
    BY = sp.csc_matrix((b_coef, (b_rows, b_v)), shape=(nb, n))
    # pair rows over M
    var_of = np.full((n, n), -1, dtype=np.int64); var_of[fu, fv] = np.arange(f)
    pa, pb, pc = [], [], []
    for v in range(n):
        mem = np.nonzero(free[:, v])[0]
        if len(mem) > 1:
            a, b = np.meshgrid(mem, mem, indexing='ij'); off = (a != b) & (e * D[a, b] <= cmax)
            pa.append(a[off]); pb.append(b[off]); pc.append(np.full(int(off.sum()), v))
    a, b, v = map(np.concatenate, (pa, pb, pc))
    npair = len(a)
    P = sp.csr_matrix((np.concatenate([np.ones(npair), -np.exp(e * D[a, b])]),
                       (np.concatenate([np.arange(npair)] * 2), np.concatenate([var_of[a, v], var_of[b, v]]))),
                      shape=(npair, f + 1))
    # start sets
    if seed_mode == 'ff':
        m0 = max(10, int(start_frac * n))
        sel = [0]; dmin = D[0].copy()
        for _ in range(m0 - 1):
            j = int(np.argmax(dmin)); sel.append(j); dmin = np.minimum(dmin, D[j])
        S = np.array(sorted(sel)); RL = S.copy(); RS = S.copy()
    elif seed_mode == 'all':
        S = np.arange(n); RL = np.arange(n); RS = np.arange(n)
    # initial model: cols M (f), k, Y_S ; rows: bound rows, loss rows RL, sum rows RS
    Mrow_loss = sp.csr_matrix((wfree, (fu, np.arange(f))), shape=(n, f + 1)).tolil()
    Mloss = sp.csr_matrix((np.concatenate([wfree, -np.ones(n)]), (np.concatenate([fu, np.arange(n)]), np.concatenate([np.arange(f), np.full(n, f)]))), shape=(n, f + 1))
    Msum = sp.csr_matrix((np.ones(f), (fu, np.arange(f))), shape=(n, f + 1))
    Bm = sp.csr_matrix((np.ones(nb), (b_rows, b_M)), shape=(nb, f + 1))
    c = np.zeros(f + 1); c[f] = 1.0
    lp = SparseLP(c, Bm, row_lower=b_lo, row_upper=b_hi, solver=first)
    rowkind = [('b', nb)]
    Lrows = np.zeros(0, int); Srows = np.zeros(0, int); Ycols = np.zeros(0, int)  # model indices
    RLl, RSl, Sl = [], [], []
    Pin = np.zeros(npair, bool); Pidx = []
    def add_dense_rows(L, Sm):
        nonlocal RLl, RSl
        base = lp.num_row
        Ys = np.array(Sl, dtype=int)
        A1 = sp.hstack([Mloss[L], sp.csr_matrix(W[np.ix_(L, Ys)]) if len(Ys) else sp.csr_matrix((len(L), 0))])
        A2 = sp.hstack([Msum[Sm], sp.csr_matrix(E[np.ix_(Sm, Ys)]) if len(Ys) else sp.csr_matrix((len(Sm), 0))])
        lp.add_rows(sp.vstack([A1, A2]).tocsr(), np.concatenate([np.full(len(L), -np.inf), np.ones(len(Sm))]),
                    np.concatenate([np.zeros(len(L)), np.full(len(Sm), np.inf)]))
        RLl += list(zip(L, base + np.arange(len(L)))); RSl += list(zip(Sm, base + len(L) + np.arange(len(Sm))))
    def add_ycols(vs):
        # rows: bound rows (0..nb-1), dense rows, pair rows(no Y)
        m = lp.num_row
        col = sp.lil_matrix((m, len(vs)))
        Bv = BY[:, vs].tocoo()
        rr = [Bv.row]; cc = [Bv.col]; vv = [Bv.data]
        if RLl:
            w_, ri = np.array(RLl).T
            blk = W[np.ix_(w_, vs)]; rr.append(np.repeat(ri, len(vs))); cc.append(np.tile(np.arange(len(vs)), len(ri))); vv.append(blk.ravel())
        if RSl:
            w_, ri = np.array(RSl).T
            blk = E[np.ix_(w_, vs)]; rr.append(np.repeat(ri, len(vs))); cc.append(np.tile(np.arange(len(vs)), len(ri))); vv.append(blk.ravel())
        A = sp.csc_matrix((np.concatenate(vv), (np.concatenate(rr), np.concatenate(cc))), shape=(m, len(vs)))
        add_cols(lp, A)
        Sl.extend(list(vs))
    add_ycols(np.asarray(S))
    add_dense_rows(np.asarray(RL), np.asarray(RS))
    print(f'setup {time.perf_counter()-t0:.1f}s  f={f} npair={npair} nb={nb}', flush=True)
    rnd = 0
    while True:
        rnd += 1
        ts = time.perf_counter()
        sol = lp.solve()
        dt = time.perf_counter() - ts
        x = sol.x; M = x[:f]; k = x[f]
        Y = np.zeros(n); Y[np.array(Sl, dtype=int)] = x[f + 1:]
        loss = W @ Y + np.bincount(fu, wfree * M, minlength=n)
        rs = E @ Y + np.bincount(fu, M, minlength=n)
        inL = np.zeros(n, bool); inL[[w for w, _ in RLl]] = True
        inS = np.zeros(n, bool); inS[[w for w, _ in RSl]] = True
        vL = np.nonzero((loss > k + tol) & ~inL)[0]; vS = np.nonzero((rs < 1 - tol) & ~inS)[0]
        pact = P[:, :f] @ M; vP = np.nonzero((pact > tol) & ~Pin)[0]
        # pricing
        yL = np.zeros(n); yS = np.zeros(n)
        if RLl:
            w_, ri = np.array(RLl).T; yL[w_] = sol.row_dual[ri]
        if RSl:
            w_, ri = np.array(RSl).T; yS[w_] = sol.row_dual[ri]
        yB = sol.row_dual[:nb]
        d = -(W.T @ yL + E.T @ yS + BY.T @ yB)
        inY = np.zeros(n, bool); inY[Sl] = True
        vY = np.nonzero((d < -dtol) & ~inY)[0]
        cap = max(20, int(cap_frac * n))
        vL = vL[np.argsort(-(loss[vL] - k))][:cap]; vS = vS[np.argsort(rs[vS])][:cap]; vY = vY[np.argsort(d[vY])][:cap]
        print(f'round {rnd}: solve {dt:.2f}s obj {sol.objective:.10g} rows {lp.num_row} cols {lp.num_col} nnz {lp.stats["nnz"]} '
              f'add L {len(vL)} S {len(vS)} Y {len(vY)} P {len(vP)} (min d {d[~inY].min(initial=0):.2e}) it {lp.stats["simplex_iterations"]}/{lp.stats["ipm_iterations"]}', flush=True)
        if not (len(vL) or len(vS) or len(vY) or len(vP)):
            break
        if len(vP):
            lp.add_rows(P[vP], np.full(len(vP), -np.inf), np.zeros(len(vP))) if False else None
            A = sp.hstack([P[vP], sp.csr_matrix((len(vP), lp.num_col - f - 1))]).tocsr()
            lp.add_rows(A, np.full(len(vP), -np.inf), np.zeros(len(vP))); Pin[vP] = True
        if len(vL) or len(vS):
            add_dense_rows(vL, vS)
        if len(vY):
            add_ycols(vY)
        lp.set_solver(warm)
        if rnd >= int(__import__('os').environ.get('LOGR', '99')): lp._h.setOptionValue('output_flag', True); lp._h.setOptionValue('log_dev_level', 1)
    print(f'total {time.perf_counter()-t0:.1f}s obj {sol.objective:.10g} Ypos {(Y>1e-12).sum()} L {len(RLl)} S {len(RSl)} Y {len(Sl)}')

if __name__ == '__main__':
    n = int(sys.argv[1]); kw = dict(a.split('=') for a in sys.argv[2:])
    for key in ('start_frac', 'cap_frac'):
        if key in kw: kw[key] = float(kw[key])
    run(n, **kw)
