"""Time dp_sparse_emd_aggregate (seed Algorithms 1-2) and the Laplace baseline.

Usage: python benchmarks/heatmap_aggregate.py [--deltas 64 128 256 512] [--n 200] [--repeats 5]

Input: the sum of n users' distributions on a Delta x Delta grid, each user 1-3 check-ins around
a dozen hot spots (the sparse regime of the seed). Prints min / median seconds per call and the
LP size; the target is < 2 s at Delta = 256, n = 200.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from geo.heatmap import dp_sparse_emd_aggregate, laplace_baseline


def synthetic_counts(delta: int, n: int, rng: np.random.Generator) -> np.ndarray:
    s = np.zeros((delta, delta))
    centres = rng.integers(0, delta, (12, 2))
    spread = max(1, delta // 64)
    for _ in range(n):
        k = int(rng.integers(1, 4))
        pts = np.clip(centres[rng.integers(0, 12, k)] + rng.integers(-3 * spread, 3 * spread + 1, (k, 2)),
                      0, delta - 1)
        np.add.at(s, (pts[:, 0], pts[:, 1]), 1.0 / k)
    return s


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--deltas", type=int, nargs="+", default=[64, 128, 256, 512])
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    print(f"{'Delta':>6} {'ours min s':>11} {'ours med s':>11} {'LP vars':>8} {'Laplace med s':>14}")
    for d in args.deltas:
        s = synthetic_counts(d, args.n, rng)
        ours, base, nvars = [], [], 0
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            _, info = dp_sparse_emd_aggregate(s, args.epsilon, rng=rng, return_info=True)
            ours.append(time.perf_counter() - t0)
            nvars = info["n_variables"]
            t0 = time.perf_counter()
            laplace_baseline(s, args.epsilon, rng=rng)
            base.append(time.perf_counter() - t0)
        print(f"{d:>6} {min(ours):>11.3f} {np.median(ours):>11.3f} {nvars:>8} {np.median(base):>14.4f}",
              flush=True)


if __name__ == "__main__":
    main()
