import numpy as np, time, sys
from mdp.space import MetricSpace
from mdp.families.constopt import nn_replacement, constopt_block_lp, constopt_lp, solve_constopt_lp
from mdp.lp import block_ipm as B
reg = float(sys.argv[1]); ref = int(sys.argv[2])
for seed, n, r, eps in [(21, 12, 3, 1.0), (21, 25, 4, 1.0), (8, 40, 5, 1.5), (3, 100, 10, 0.5), (4, 200, 10, 2.0)]:
    S = MetricSpace.from_points(np.random.default_rng(seed).random((n, 2)) * 5)
    D = S.distances; e = eps/2
    free = nn_replacement(D, r)
    c, A, lo, hi, _, nb = constopt_lp(D, e, free, 0.1, split=True)
    t=time.perf_counter(); sol, st = solve_constopt_lp(c, A, lo, hi, nb, lazy=False); t1=time.perf_counter()-t
    lp, _ = constopt_block_lp(D, e, free, 0.1)
    t=time.perf_counter()
    try:
        res = B.solve_block_ipm(lp, tol=1e-9, reg=reg, refine=ref); t2=time.perf_counter()-t
        print(n, sol.objective, res.objective, res.dual_objective, res.iterations, f"{t1:.2f} {t2:.2f}", f"{res.relative_gap:.1e} {res.primal_infeasibility:.1e} {res.dual_infeasibility:.1e}", flush=True)
    except Exception as ex:
        print(n, "FAIL", ex, flush=True)
