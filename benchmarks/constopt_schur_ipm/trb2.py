import numpy as np, time, sys
sys.path.insert(0, __import__('os').path.dirname(__file__))
from mdp.space import MetricSpace
from mdp.families.constopt import nn_replacement, constopt_lp, solve_constopt_lp, _bound_factors
from mdp.spaces import load_space
from rb import ConstOptLP
from rb2 import solve_rb2 as solve_rb
import scipy.sparse as sp
from scipy.optimize import linprog
cases = [(21, 12, 3, 1.0), (21, 25, 4, 1.0), (8, 40, 5, 1.5), (3, 100, 10, 0.5), (4, 200, 10, 2.0)]
if len(sys.argv) > 1: cases = [("geo", int(a), 10, 0.5) for a in sys.argv[1:]]
for seed, n, r, eps in cases:
    S = load_space(f"geolife:/work/shared/data/geolife_beijing_cells_0p005.npz:{n}") if seed == "geo" else MetricSpace.from_points(np.random.default_rng(seed).random((n, 2)) * 5)
    D = S.distances; e = eps/2
    free = nn_replacement(D, r)
    c, A, lo, hi, _, nb = constopt_lp(D, e, free, 0.1, split=True)
    # relaxation (no free-free rows) by HiGHS for reference
    import os
    if os.environ.get('NOHIGHS'):
        class _S: objective = float('nan')
        sol = _S(); t1 = float('nan')
    else:
        t=time.perf_counter(); sol, st = solve_constopt_lp(c, A[:nb], lo[:nb], hi[:nb], nb, lazy=False); t1=time.perf_counter()-t
    lp = ConstOptLP(D, e, free, 0.1)
    tm = {}
    try:
        res = solve_rb(lp, tol=1e-9, timing=tm, on_iteration=(lambda d: print("   ", {k: f"{v:.2e}" for k, v in d.items()}, flush=True) if d["iteration"] % 10 == 0 else None) if n > 200 else None)
        print(n, "relax HiGHS", sol.objective, f"{t1:.2f}s", "rb", res["objective"], res["dual_objective"], res["iterations"], f"{res['seconds']:.2f}s", f"{res['gap']:.1e} {res['pinf']:.1e} {res['dinf']:.1e}", {k: round(v, 2) for k, v in tm.items()}, flush=True)
    except Exception as ex:
        import traceback; traceback.print_exc()
        print(n, "FAIL", ex, flush=True)
