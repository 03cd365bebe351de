"""Prototype driver for mdp.lp.block_ipm (ConstOPTMech block interior point method; reverted, see docs/design/lp.md).

Usage: python benchmarks/constopt_block_ipm_prototype.py N REG PCG_ITERATIONS
"""
import numpy as np, time, sys
import mdp
from mdp.spaces import load_space
from mdp.families.constopt import nn_replacement, constopt_block_lp
from mdp.lp import block_ipm as B
n = int(sys.argv[1]); reg = float(sys.argv[2]); ref = int(sys.argv[3])
space = load_space(f"geolife:/work/shared/data/geolife_beijing_cells_0p005.npz:{n}")
D = space.distances; e = 0.25
free = nn_replacement(D, 10)
t = time.perf_counter()
lp, _ = constopt_block_lp(D, e, free, 0.1)
t1 = time.perf_counter() - t
print("build", t1, "local rows", len(lp.local_a), flush=True)
last = [time.perf_counter()]
def cb(d):
    if d["iteration"] % 5 == 0:
        print({k: f"{v:.3e}" for k, v in d.items() if k in ("iteration", "objective", "gap", "primal_infeasibility", "dual_infeasibility", "seconds")}, flush=True)
res = B.solve_block_ipm(lp, tol=1e-9, reg=reg, refine=ref, on_iteration=cb)
print("n", n, "obj", res.objective, "dual", res.dual_objective, "it", res.iterations, "s", res.stats["seconds"], res.relative_gap, res.primal_infeasibility, res.dual_infeasibility)
