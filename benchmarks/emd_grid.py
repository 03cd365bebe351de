"""Time the exact grid EMD (mdp.emd.emd_grid) on two heatmap-like maps, L1 and Euclidean ground.

Usage: python benchmarks/emd_grid.py [--sizes 64 128 256 512] [--euclid-max 512] [--repeats 3]
       [--compare-max 256]

Maps are Gaussian heatmaps (sigma = 2/Delta) of 300 random sparse point masses, the shape of the
heatmaps compared in the DP-heatmaps experiment. For each size and ground cost it prints the EMD
(unit-square units), the min / median wall time and the min CPU time of the process over the
repeats (the machine is shared: CPU time is the steadier figure). The one-off numba compilation
is done first and reported apart. Checks:

* at sizes <= 64, equality with POT's dense solver (``ot.emd2`` on the full cost matrix);
* at sizes <= ``--compare-max``, the previous L1 method side by side (POT's sparse network simplex
  on the bipartite formulation with pass-through mass, ``mdp.emd.grid_l1_cost``): its time and
  the relative difference of the values.

Targets: 256 x 256 under 3 s and 512 x 512 under 60 s. Euclidean sizes above
``--euclid-max`` are skipped (512 x 512 takes 36-49 s of CPU per run on a 2-core machine; see
docs/design/emd.md).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import ot
import pandas as pd

from geo.heatmap import gaussian_heatmap
from mdp.emd import emd_grid, grid_l1_cost


def sparse_map(n: int, rng: np.random.Generator) -> np.ndarray:
    m = np.zeros((n, n))
    np.add.at(m, (rng.integers(0, n, 300), rng.integers(0, n, 300)), rng.random(300))
    return gaussian_heatmap(m, 2.0 / n)


def dense_emd(p: np.ndarray, q: np.ndarray, metric: str) -> float:
    n = p.shape[0]
    r, c = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    xy = np.column_stack([r.ravel(), c.ravel()]).astype(float)
    return ot.emd2(p.ravel() / p.sum(), q.ravel() / q.sum(), ot.dist(xy, xy, metric),
                   numItermax=10**8) / n


def bipartite_l1(p: np.ndarray, q: np.ndarray) -> float:
    """The previous emd_grid L1 method (POT sparse network simplex, pass-through mass)."""
    n = p.shape[0]
    d = (p / p.sum() - q / q.sum()).ravel()
    pos, neg = np.maximum(d, 0.0), np.maximum(-d, 0.0)
    tv = pos.sum()
    neg *= tv / neg.sum()
    return ot.emd2(pos + tv, neg + tv, grid_l1_cost(n, n), numItermax=2**62) / n


def timed(fn, args, repeats: int, **kwargs):
    wall, cpu, value = [], [], None
    for _ in range(repeats):
        w0, c0 = time.perf_counter(), time.process_time()
        value = fn(*args, **kwargs)
        wall.append(time.perf_counter() - w0)
        cpu.append(time.process_time() - c0)
    return value, wall, cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[64, 128, 256, 512])
    ap.add_argument("--euclid-max", type=int, default=512,
                    help="largest size timed with the Euclidean ground cost")
    ap.add_argument("--compare-max", type=int, default=256,
                    help="largest size at which the previous L1 method is timed alongside")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    w0 = time.perf_counter()
    warm = np.random.default_rng(1).random((12, 12))
    for ground in ("l1", "euclidean"):
        emd_grid(warm, warm.T, ground=ground)
    print(f"first call (numba compile or cache load): {time.perf_counter() - w0:.1f} s\n")

    rng = np.random.default_rng(args.seed)
    rows = []
    for n in args.sizes:
        p, q = sparse_map(n, rng), sparse_map(n, rng)
        for ground, metric in (("l1", "cityblock"), ("euclidean", "euclidean")):
            if ground == "euclidean" and n > args.euclid_max:
                continue
            value, wall, cpu = timed(emd_grid, (p, q), args.repeats, ground=ground,
                                     cell_size=1 / n)
            row = {"Delta": n, "ground": ground, "EMD": value, "min s": min(wall),
                   "median s": float(np.median(wall)), "min CPU s": min(cpu), "check": ""}
            if n <= 64:
                dense = dense_emd(p, q, metric)
                row["check"] = f"POT dense {dense:.12f}, rel diff {abs(dense - value) / dense:.1e}"
            elif ground == "l1" and n <= args.compare_max:
                old, old_wall, _ = timed(bipartite_l1, (p, q), 1)
                row["check"] = (f"previous method {old_wall[0]:.2f} s "
                                f"({old_wall[0] / min(wall):.0f}x), rel diff "
                                f"{abs(old - value) / value:.1e}")
            rows.append(row)
            print(f"{n:>5} {ground:>9}  EMD {value:.10f}  min {min(wall):7.2f} s  "
                  f"median {np.median(wall):7.2f} s  CPU {min(cpu):7.2f} s  {row['check']}",
                  flush=True)
    print()
    print(pd.DataFrame(rows).to_markdown(index=False, floatfmt=".4g"))


if __name__ == "__main__":
    main()
