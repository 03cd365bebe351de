"""Benchmark of geo.heatsource.recover (seed Gilbert & McMillan, Algorithm 1).

Prints the wall time of one recovery (min of several repeats, cvxpy + Clarabel, including the
least-residual check of the infeasibility policy) at n = 100 and at n = 1,000 / 10,000 (the
latter with the randomised-SVD compression), with the duality gap of each.

    python benchmarks/heatsource_recovery.py
"""

from __future__ import annotations

import time

import numpy as np

from geo.heatsource import compress_matrix, heat_matrix, random_sources, recover


def bench(n: int, m: int, T: float, sigma: float, repeats: int) -> None:
    A = heat_matrix(n, m, T)
    rng = np.random.default_rng(0)
    t0 = time.perf_counter()
    op = compress_matrix(A) if n > 2000 else A
    t_comp = time.perf_counter() - t0
    times, results = [], []
    for _ in range(repeats):
        y = A @ random_sources(n, 2, rng=rng) + sigma * rng.standard_normal(m)
        t0 = time.perf_counter()
        res = recover(op, y, sigma * np.sqrt(m))
        times.append(time.perf_counter() - t0)
        results.append(res)
    rank = f", compressed to rank {op.rank} in {t_comp:.2f} s" if n > 2000 else ""
    print(f"n={n:6d} m={m} T={T}: recovery first call {times[0]:.3f} s (includes cvxpy "
          f"compilation), min {min(times):.3f} s, median {np.median(times):.3f} s "
          f"over {repeats}{rank}; certified optimal {sum(r.optimal for r in results)}/{repeats}, "
          f"max |gap| {max(abs(r.gap) for r in results):.1e}, "
          f"policies {sorted({r.policy for r in results})}")


if __name__ == "__main__":
    print("(timings on a shared 2-core machine, under load)")
    bench(100, 50, 0.05, 0.1, repeats=10)
    bench(1000, 50, 0.05, 0.1, repeats=3)
    bench(10_000, 50, 0.05, 0.1, repeats=2)
