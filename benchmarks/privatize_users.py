"""Rows per second of the per-user release and planar Laplace samples per second.

Run: python benchmarks/privatize_users.py [--rows 1000000] [--users 20000] [--n 100] [--repeats 2]

A synthetic check-in table (``--users`` users, each with a home among the ``--n`` points of a
haversine space around Vienna and reports scattered ~300 m around it; locations up to 5 km from a point accepted) goes through
:func:`geo.users.privatize_users` (exponential mechanism, epsilon 2 per km, budget 20 per km)
and through the same table written to CSV and run as ``mdp privatize --users`` would run it
(read, release, write). Then :func:`geo.planar_laplace.sample_planar_noise` and
:func:`geo.planar_laplace.planar_laplace` (projection, noise, truncation, grid, back to lat/lon)
on ``--rows`` locations. Prints the best of ``--repeats`` times.
"""

from __future__ import annotations

import argparse
import io
import time
from pathlib import Path
from tempfile import TemporaryDirectory

import numpy as np
import pandas as pd

import mdp
from geo.planar_laplace import planar_laplace, sample_planar_noise
from geo.projection import LocalProjection
from geo.users import privatize_users
from geo.users_command import read_users_csv


def best(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--users", type=int, default=20_000)
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=2)
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    P = np.c_[48.2 + rng.uniform(-0.05, 0.05, a.n), 16.37 + rng.uniform(-0.07, 0.07, a.n)]
    mech = mdp.build("exponential", mdp.MetricSpace.from_points(P, metric="haversine"), 2.0)
    who = rng.integers(0, a.users, a.rows)
    home = P[rng.integers(0, a.n, a.users)]
    df = pd.DataFrame({"user": np.char.add("u", who.astype(str)),
                       "lat": home[who, 0] + rng.normal(0, 0.003, a.rows),
                       "lon": home[who, 1] + rng.normal(0, 0.004, a.rows)})
    rows = []
    t = best(lambda: privatize_users(df, mech, budget=20.0, seed=1, max_snap_km=5.0), a.repeats)
    rows.append(("privatize_users (pandas, in memory)", a.rows, t))
    with TemporaryDirectory() as tmp:
        src = Path(tmp) / "checkins.csv"
        df.to_csv(src, index=False)

        def whole_file():
            released, _ = privatize_users(read_users_csv(src), mech, budget=20.0, seed=1,
                                           max_snap_km=5.0)
            buf = io.StringIO()
            released.to_csv(buf, index=False, float_format="%.6f")
            (Path(tmp) / "out.csv").write_text(buf.getvalue())

        t = best(whole_file, a.repeats)
        rows.append(("mdp privatize --users (read CSV, release, write CSV)", a.rows, t))
    t = best(lambda: sample_planar_noise(a.rows, 2.0, rng=2), a.repeats)
    rows.append(("planar Laplace noise samples", a.rows, t))
    area = LocalProjection.around(P, margin_km=5.0)
    latlon = df[["lat", "lon"]].to_numpy()
    t = best(lambda: planar_laplace(latlon, 2.0, area=area, rng=3), a.repeats)
    rows.append(("planar_laplace on lat/lon (project, noise, grid, back)", a.rows, t))
    print(f"{'what':58s} {'rows':>9s} {'seconds':>8s} {'per second':>12s}")
    for name, n, s in rows:
        print(f"{name:58s} {n:9d} {s:8.2f} {n / s:12,.0f}")


if __name__ == "__main__":
    main()
