import numpy as np, time, sys
sys.path.insert(0, __import__('os').path.dirname(__file__))
from mdp.spaces import load_space
from mdp.families.constopt import nn_replacement
from rb import ConstOptLP
from rb2 import solve_rb2
n = int(sys.argv[1]); e = 0.25
S = load_space(f"geolife:/work/shared/data/geolife_beijing_cells_0p005.npz:{n}")
D = S.distances
free = nn_replacement(D, 10)
fu, fv = np.nonzero(free)
order = np.argsort(fv, kind="stable")
starts = np.searchsorted(fv[order], np.arange(n + 1))
allA, allB = [], []
for v in range(n):
    mem = order[starts[v]:starts[v + 1]]
    if len(mem) > 1:
        a, b = np.meshgrid(mem, mem, indexing="ij"); off = a != b
        allA.append(a[off]); allB.append(b[off])
allA, allB = np.concatenate(allA), np.concatenate(allB)
print("all ff rows", len(allA), "sizes max", np.diff(starts).max())
ff = (np.zeros(0, int), np.zeros(0, int))
for rnd in range(8):
    lp = ConstOptLP(D, e, free, 0.1, ff_pairs=ff)
    t = time.perf_counter()
    res = solve_rb2(lp, tol=1e-9)
    m = res["x"][n:n + len(fu)]
    # row: M_b - e^{-e D} M_a >= 0   (a, b) = (allA, allB)
    viol = np.exp(-e * D[fu[allA], fu[allB]]) * m[allA] - m[allB]
    bad = viol > 1e-9 * np.maximum(1.0, m[allB])
    nT = res["nT"]
    print(f"round {rnd}: obj {res['objective']:.10f} it {res['iterations']} {time.perf_counter()-t:.1f}s nT {nT} ff rows {len(ff[0])} violated {bad.sum()} max {viol.max():.2e}", flush=True)
    if not bad.any():
        break
    # add violated rows: every pair of the columns with a violation
    cols = np.unique(fv[allA[bad]])
    sel = np.isin(fv[allA], cols) if len(sys.argv) > 2 else bad
    keep = set(zip(ff[0].tolist(), ff[1].tolist()))
    newA = np.r_[ff[0], allA[sel]]; newB = np.r_[ff[1], allB[sel]]
    key = np.unique(newA * len(fu) + newB)
    ff = (key // len(fu), key % len(fu))
