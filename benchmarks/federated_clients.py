"""Benchmark: simulate 10^6 federated clients (Bagdasaryan et al. 2022, Algorithms 1-2).

Shard noise is drawn exactly in aggregate (sums of Polya variables add their alphas), so the cost
is one negative-binomial pair per shard and coordinate plus the users' one-hot counts.
Prints the minimum wall time of a few repeats for:

1. one basic histogram query (Algorithm 1), 10^6 clients in 100 shards of 10,000, 10% dropout,
   vector of 4^5 = 1,024 cells;
2. the full adaptive hierarchical histogram (Algorithm 2), 10^6 users drawn from the Gowalla NYC
   density map on 1024 x 1024 pixels, eps = 1.

Run: python benchmarks/federated_clients.py [--clients N] [--repeats R]
"""

from __future__ import annotations

import argparse
import time

from geo.checkins import read_checkins
from geo.federated import (
    adaptive_hierarchical_histogram,
    cell_codes,
    histogram_query,
    mse,
    population_map,
    sample_users,
)
from mdp.io import shared_data_dir


def _best(fn, repeats):
    times, out = [], None
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--clients", type=int, default=1_000_000)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    df = read_checkins(shared_data_dir() / "gowalla_nyc_checkins.txt.gz")
    truth = population_map(df["lat"].to_numpy(), df["lon"].to_numpy(), 10, smooth=4.0)
    rows, cols = sample_users(truth, args.clients, rng=0)
    codes = cell_codes(rows, cols, 10, 5)
    t1, h = _best(lambda: histogram_query(codes, 4**5, 1.0, shard_size=10_000, dropout=0.1,
                                          rng=1), args.repeats)
    print(f"Algorithm 1: {args.clients:,} clients, {h.n_shards} shards, {h.n_reporting:,} report, "
          f"d = {h.vector_length}: {t1:.2f} s (min of {args.repeats})")
    t2, est = _best(lambda: adaptive_hierarchical_histogram(rows, cols, 10, 1.0, c=0.3, rng=2),
                    args.repeats)
    acc = est.accounting
    print(f"Algorithm 2: {args.clients:,} clients, {acc.rounds} rounds, comm {acc.communication:,} "
          f"integers/client, eps/user {acc.epsilon_per_user:.3f}, MSE {mse(est.density, truth):.3e}: "
          f"{t2:.2f} s (min of {args.repeats})")
    print(f"under a minute: {max(t1, t2) < 60}")


if __name__ == "__main__":
    main()
