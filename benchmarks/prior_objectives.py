"""Timings of the toolkit under a prior: the expected-loss LP against the worst-case one, the
Bayes-optimal remap, and ``mdp curves --prior ... --privacy adversary-error``.

Each figure is one fresh build in this process, side by side in one run (the ratio is what to
read). The space is the ``n`` most popular 0.005-degree cells of a check-in log (the Gowalla New
York log of the shared data when present, else the toolkit's synthetic check-ins), and the prior
is their visit counts.

    python benchmarks/prior_objectives.py [--sizes 100 200] [--remap-n 500] [--curves-n 100]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

import mdp
from geo import popular_cells, read_checkins, visit_counts
from geo.synthetic_checkins import synthetic_checkins
from mdp.io import shared_data_dir
from mdp.prior import Prior, remap


def checkins() -> tuple[pd.DataFrame, str]:
    try:
        path = shared_data_dir() / "gowalla_nyc_checkins.txt.gz"
        if path.exists():
            return read_checkins(path), "Gowalla New York"
    except mdp.DataNotFoundError:
        pass
    return synthetic_checkins(rng=0), "synthetic check-ins"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", type=int, nargs="+", default=[100, 200])
    ap.add_argument("--eps-km", type=float, default=1.5, help="epsilon per km of the LP builds")
    ap.add_argument("--remap-n", type=int, default=500)
    ap.add_argument("--curves-n", type=int, default=100)
    ap.add_argument("--time-limit", type=float, default=900.0,
                    help="seconds for each expected-objective build (a timeout is reported)")
    ap.add_argument("--skip", nargs="*", default=[], choices=["lp", "remap", "curves"])
    args = ap.parse_args()
    frame, source = checkins()
    print(f"data: {source}, {len(frame):,} check-ins")
    rows = []
    for n in ([] if "lp" in args.skip else args.sizes):
        space = popular_cells(frame, n=n)
        prior = Prior.from_counts(visit_counts(space, frame[["lat", "lon"]].to_numpy()))
        t0 = time.perf_counter()
        mdp.build("optimal", space, args.eps_km)
        tw = time.perf_counter() - t0
        t0 = time.perf_counter()
        try:
            exp = mdp.build("optimal", space, args.eps_km, objective="expected", prior=prior,
                            time_limit=args.time_limit)
        except mdp.SolverTimeout:
            exp = None
        te = time.perf_counter() - t0
        rows.append({"n": n, "eps per km": args.eps_km, "worst-case s": round(tw, 1),
                     "expected s": round(te, 1) if exp else f"> {args.time_limit:g}",
                     "ratio": round(te / tw, 2) if exp else f"> {args.time_limit / tw:.0f}",
                     "expected rounds": exp.stats["rounds"] if exp else "",
                     "expected gap": f"{exp.stats['relative_gap']:.1e}" if exp else ""})
        print(rows[-1], flush=True)
    if rows:
        print(pd.DataFrame(rows).to_markdown(index=False))
    if "remap" not in args.skip:
        remap_figures(frame, args)
    if "curves" not in args.skip:
        curves_figure(frame, args)


def remap_figures(frame, args) -> None:
    space = popular_cells(frame, n=args.remap_n)
    prior = Prior.from_counts(visit_counts(space, frame[["lat", "lon"]].to_numpy()))
    t0 = time.perf_counter()
    pl = mdp.build("planar_laplace", space, args.eps_km)
    tb = time.perf_counter() - t0
    t0 = time.perf_counter()
    r = remap(pl, prior)
    tr = time.perf_counter() - t0
    print(f"planar Laplace n = {args.remap_n}: build {tb:.1f} s, remap {tr:.2f} s (certified "
          f"again); expected loss {r.stats['remap']['expected_loss_before']:.4f} -> "
          f"{r.stats['remap']['expected_loss_after']:.4f} km", flush=True)


def curves_figure(frame, args) -> None:
    space = popular_cells(frame, n=args.curves_n)
    counts = visit_counts(space, frame[["lat", "lon"]].to_numpy())
    with tempfile.TemporaryDirectory() as tmp:
        pts = Path(tmp) / "cells.csv"
        pd.DataFrame({"label": space.labels, "lat": space.points[:, 0],
                      "lon": space.points[:, 1]}).to_csv(pts, index=False)
        cfile = Path(tmp) / "visits.csv"
        pd.DataFrame({"label": space.labels, "count": counts}).to_csv(cfile, index=False)
        cmd = ["mdp", "curves", "--space", str(pts), "--metric", "haversine", "--mechanisms",
               "optimal", "spanner", "constopt", "exponential", "planar_laplace",
               "--eps-tight", "1.5", "--prior", f"counts:{cfile}", "--privacy", "adversary-error",
               "--no-progress", "-o", str(Path(tmp) / "out")]
        t0 = time.perf_counter()
        res = subprocess.run(cmd, capture_output=True, text=True)
        tc = time.perf_counter() - t0
        print(f"mdp curves --prior counts --privacy adversary-error, n = {args.curves_n}, five "
              f"families, one target: {tc:.1f} s (rc {res.returncode})")
        if res.returncode:
            print(res.stderr[-2000:], file=sys.stderr)


if __name__ == "__main__":
    main()
