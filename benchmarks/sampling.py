"""Samples per second of the exact sampler (:class:`mdp.privacy.sampling.ExactSampler`) at n = 100, 1000.

Run: python benchmarks/sampling.py [--sizes 100,1000] [--draws 1000000] [--repeats 3]

For each n: a uniform random space in the unit square, the exponential mechanism at
``epsilon * diameter = 20`` (as probabilities) and as log-probabilities at ``epsilon * diameter
= 1e4`` (entries down to ~e^-5000). Prints the table build time and the best of ``repeats``
rates for ``--draws`` draws from random rows, next to the float64 inverse CDF the toolkit used
before (not exact: it never draws entries below ~1e-16 of their row) measured in the same run,
so the ratio does not depend on the machine's load.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from mdp.families.exponential import exponential_log_matrix
from mdp.privacy.sampling import ExactSampler
from mdp.spaces.metric_space import MetricSpace


def float_inverse_cdf(M: np.ndarray, rows: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The previous sampler: float64 cumulative sums, vectorised inverse CDF (for comparison)."""
    cdf = np.cumsum(M, axis=1)
    cdf[:, -1] = np.inf
    u = rng.random(len(rows))
    out = np.empty(len(rows), dtype=np.int64)
    for s in range(0, len(rows), 4096):
        out[s:s + 4096] = np.sum(cdf[rows[s:s + 4096]] < u[s:s + 4096, None], axis=1)
    return out


def best_rate(fn, draws: int, repeats: int) -> float:
    best = np.inf
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return draws / best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="100,1000")
    ap.add_argument("--draws", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    table = []
    for n in [int(x) for x in args.sizes.split(",")]:
        space = MetricSpace.from_points(rng.uniform(size=(n, 2)))
        D = space.distances
        rows = rng.integers(0, n, size=args.draws)
        for label, scale, log in [("probabilities", 20.0, False), ("log-probabilities", 1e4, True)]:
            L = exponential_log_matrix(D, scale / D.max())
            A = L if log else np.exp(L)
            t = time.perf_counter()
            sampler = ExactSampler(A, log=log)
            build = time.perf_counter() - t
            exact = best_rate(lambda s=sampler, r=rows: s.sample(r, rng), args.draws, args.repeats)
            row = {"n": n, "matrix": label, "build s": round(build, 3),
                   "exact samples/s": f"{exact:.3g}"}
            if not log:
                old = best_rate(lambda A=A, r=rows: float_inverse_cdf(A, r, rng), args.draws, args.repeats)
                row["float64 inverse CDF samples/s"] = f"{old:.3g}"
                row["ratio"] = round(exact / old, 2)
            table.append(row)
    print(pd.DataFrame(table).fillna("-").to_markdown(index=False))


if __name__ == "__main__":
    main()
