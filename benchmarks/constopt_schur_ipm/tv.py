import numpy as np, time, sys
sys.path.insert(0, __import__('os').path.dirname(__file__))
from mdp.space import MetricSpace
from mdp.families.constopt import nn_replacement, constopt_lp, solve_constopt_lp
from mdp.spaces import load_space
from cblp import constopt_block_lp  # from commit b2946bc (mdp/families/constopt.py)
from vsc import solve_vsc
cases = [(21, 12, 3, 1.0), (21, 25, 4, 1.0), (8, 40, 5, 1.5), (3, 100, 10, 0.5), (4, 200, 10, 2.0)]
if len(sys.argv) > 1: cases = [("geo", int(a), 10, 0.5) for a in sys.argv[1:]]
for seed, n, r, eps in cases:
    S = load_space(f"geolife:/work/shared/data/geolife_beijing_cells_0p005.npz:{n}") if seed == "geo" else MetricSpace.from_points(np.random.default_rng(seed).random((n, 2)) * 5)
    D = S.distances; e = eps/2
    free = nn_replacement(D, r)
    t1 = float('nan'); obj = float('nan')
    if n <= 200:
        c, A, lo, hi, _, nb = constopt_lp(D, e, free, 0.1, split=True)
        t=time.perf_counter(); sol, st = solve_constopt_lp(c, A, lo, hi, nb, lazy=False); t1=time.perf_counter()-t; obj = sol.objective
    t = time.perf_counter()
    lp, _ = constopt_block_lp(D, e, free, 0.1)
    tb = time.perf_counter() - t
    tm = {}
    try:
        res = solve_vsc(lp, tol=1e-9, timing=tm, on_iteration=(lambda d: print("   ", {k: f"{v:.2e}" for k, v in d.items()}, flush=True) if d["iteration"] % 10 == 0 else None) if n > 200 else None)
        print(n, obj, res["objective"], res["dual_objective"], res["iterations"], f"HiGHS {t1:.2f} s, build {tb:.2f} s, vsc {res['seconds']:.2f} s", f"{res['gap']:.1e} {res['pinf']:.1e} {res['dinf']:.1e}", {k: round(v, 2) for k, v in tm.items()}, flush=True)
    except Exception as ex:
        print(n, "FAIL", ex, flush=True)
