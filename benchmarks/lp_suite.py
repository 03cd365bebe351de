"""The LP mechanisms on a fixed, seeded suite of the spaces users bring, quiet or beside a job.

Spaces (:mod:`mdp.spaces.synthetic`, seed ``(SEED, kind, n)``): uniform points of a city box in
lat/lon (haversine, km), clustered points, a jittered grid with ties, two scales (a dense centre
and far suburbs), the shortest-path metric of a road-like graph (written to a ``.npy`` distance
matrix and read back with :func:`mdp.spaces.specs.load_space`, as a user gives one) and 50-d
embedding-like points. Each at ``eps = c / median distance`` for c in {0.3, 1, 3, 10}.

Families (cells): OPTMech exact (n in {50, 100, 200}), OPTMech ``gap=1e-3`` (n in {50, 100, 200,
500}), SpannerMech stretch 1.5 (n in {50, 100, 200, 500}), ConstOPTMech r = 10 (n in {50, 100,
200, 500, 1000}).

Usage::

    python benchmarks/lp_suite.py --quick                  # n 50/100, c 1/10, three families
    python benchmarks/lp_suite.py --quick --background     # the same beside a competing job
    python benchmarks/lp_suite.py --spaces clustered road_graph --families optimal --n 100 \
        --c 1 3 --limit 300 --csv /tmp/suite.csv

Every cell runs in a fresh process (libraries' thread pools start from their defaults) killed
after ``--limit`` seconds, so one slow cell never holds up the suite; only :func:`mdp.build` is
timed, with default settings (no ``threads``). ``--background`` starts one process doing 300 x
300 matrix products on NumPy's default threads (:mod:`benchmarks.threads_busy`'s job) before the
cells and stops it after. Printed: one Markdown table, one row per cell (seconds; the range
``mdp build`` estimates for it, :func:`mdp.runtime.estimate.build_estimate` with the load seen
when the cell starts; the plan taken as method/solver and the build's attempts; LP rounds;
interior point and simplex iterations; the certified relative gap; ok, timeout or error), then
the median and worst cell per family and n, how far the measured times fall from their
estimates, and the CPUs and load averages before and after. Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from threads_busy import JOB  # the thread benchmark's competing job (this folder is on sys.path)
from tqdm import tqdm

import mdp
from mdp.io import atomic_write_text
from mdp.runtime.estimate import build_estimate
from mdp.spaces.specs import load_space
from mdp.spaces.synthetic import SPACE_KINDS, road_graph_distances, synthetic_space

ROOT = Path(__file__).resolve().parents[1]

#: Seed of every space: ``(SEED, index of the kind, n)``.
SEED = 2026
C_VALUES = (0.3, 1.0, 3.0, 10.0)

#: family label -> (registry name, parameters, sizes of the full suite)
FAMILIES = {
    "optimal": ("optimal", {}, (50, 100, 200)),
    "optimal_gap1e-3": ("optimal", {"gap": 1e-3}, (50, 100, 200, 500)),
    "spanner": ("spanner", {"stretch": 1.5}, (50, 100, 200, 500)),
    "constopt": ("constopt", {"r": 10}, (50, 100, 200, 500, 1000)),
}
QUICK = {"n": (50, 100), "c": (1.0, 10.0), "families": ("optimal", "spanner", "constopt")}


def suite_space(kind: str, n: int, workdir: Path):
    """The suite's space of ``kind`` with ``n`` points (the road graph through a ``.npy`` file)."""
    rng = np.random.default_rng([SEED, SPACE_KINDS.index(kind), n])
    if kind != "road_graph":
        return synthetic_space(kind, n, rng=rng)
    path = workdir / f"road_graph_{n}.npy"
    np.save(path, road_graph_distances(n, rng=rng))
    return load_space(str(path))


def describe_build(mech, seconds: float) -> dict:
    """The row fields read from a certified build's report (``mech.report``)."""
    report = mech.report
    stats = dict(report)
    plan = report.plan
    trace = stats.get("block_round_trace") or stats.get("round_trace") or []
    added = sum(r.get("added", 0) for r in trace if isinstance(r, dict))
    path = f"{plan.method.value}/{plan.solver.value}"
    rounds, finish_rounds = stats.get("rounds"), None
    if "block_rounds" in stats:
        # the column-block rounds stopped short and HiGHS's lazy solve finished from their rows
        path += " + HiGHS finish"
        rounds, finish_rounds = stats["block_rounds"], stats.get("rounds")
    elif stats.get("finish_error"):
        path += f" + finish {stats['finish_outcome']}"
    if any(a.outcome == "stopped" for a in report.attempts):
        path += " + retry stopped"
    if stats.get("stalled_score") is not None:
        path += " + stalled iterate"
    if report.fallbacks:
        path += " + fallback"
    iterations = [f"{stats[k]} {label}" for k, label in (("ipm_iterations", "ipm"),
                                                         ("simplex_iterations", "simplex"))
                  if stats.get(k)]
    return {"seconds": round(seconds, 2),
            "plan": path,
            "rounds": rounds, "finish_rounds": finish_rounds,
            "iterations": ", ".join(iterations) or None,
            "gap": report.gap,
            "status": "ok",
            "rows": stats.get("rows"), "rows_added": added or None,
            "stalled": stats.get("stalled"), "rounds_ended": stats.get("rounds_ended"),
            "block_seconds": stats.get("block_seconds"),
            "block_ipm_iterations": stats.get("block_ipm_iterations"),
            "finish_error": stats.get("finish_error"),
            "loss": report.loss, "bound": report.bound,
            "attempts": "; ".join(f"{a.step}: {a.outcome} {a.seconds:.1f} s"
                                  for a in report.attempts),
            "fallbacks": "; ".join(report.fallbacks) or None,
            "seconds_by_phase": json.dumps({k: round(v, 2) for k, v in report.seconds.items()}),
            "threads": json.dumps(report.threads, default=str)}


def run_child(args: argparse.Namespace) -> None:
    """One cell, in this process: print its row as JSON on the last line of stdout."""
    name, params, _ = FAMILIES[args.family]
    with tempfile.TemporaryDirectory() as tmp:
        space = suite_space(args.kind, args.n_cell, Path(tmp))
    eps = args.c_cell / space.median_distance
    estimate = build_estimate(name, space.n)
    t0 = time.perf_counter()
    mech = mdp.build(name, space, eps, **params)
    row = describe_build(mech, time.perf_counter() - t0)
    # after the timed build: what a comparison of two trees checks to the last bit
    row.update(eps_tight=mech.eps_tight(), matrix_loss=mech.loss())
    row.update(eps=eps, estimate_low=estimate.low, estimate_high=estimate.high,
               load_factor=estimate.load)
    print(json.dumps(row, default=str))


def run_cell(kind: str, c: float, n: int, family: str, limit: float) -> dict:
    """One cell in a fresh process killed after ``limit`` seconds."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", "--kind", kind,
           "--c-cell", repr(c), "--n-cell", str(n), "--family", family]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    base = {"space": kind, "c": c, "n": n, "family": family}
    t0 = time.perf_counter()
    try:
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=limit,
                             cwd=str(ROOT))
    except subprocess.TimeoutExpired:
        return {**base, "seconds": round(time.perf_counter() - t0, 1), "status": "timeout"}
    lines = out.stdout.strip().splitlines()
    if out.returncode != 0 or not lines:
        err = (out.stderr.strip().splitlines() or [f"exit status {out.returncode}"])[-1]
        return {**base, "status": "error", "error": err[:200]}
    return {**base, **json.loads(lines[-1])}


def summary(table: pd.DataFrame, limit: float) -> pd.DataFrame:
    """Median and worst seconds per family and n: a cell over its limit counts as the limit, a
    cell that failed is left out of both (and counted)."""
    rows = []
    for (family, n), cells in table.groupby(["family", "n"], sort=False):
        seconds = cells["seconds"].astype(float).where(cells["status"] == "ok", limit)
        seconds = seconds.where(cells["status"] != "error")
        row = {"family": family, "n": n, "cells": len(cells),
               "timeouts": int((cells["status"] == "timeout").sum()),
               "errors": int((cells["status"] == "error").sum())}
        if seconds.notna().any():
            worst = cells.loc[seconds.idxmax()]
            row.update({"median s": round(float(seconds.median()), 2),
                        "worst s": (f"{seconds.max():.2f}" if worst["status"] == "ok"
                                    else f"> {limit:g}"),
                        "worst cell": f"{worst['space']} c={worst['c']:g}"})
        rows.append(row)
    return pd.DataFrame(rows)


def estimate_misses(table: pd.DataFrame) -> dict:
    """How far the measured seconds fall from the estimated ranges: per cell the factor by which
    the time lies outside its range (1 inside), over the cells that finished."""
    done = table[(table["status"] == "ok") & table.get("estimate_low", pd.Series(dtype=float))
                 .notna()]
    if done.empty:
        return {}
    t = done["seconds"].astype(float)
    lo, hi = done["estimate_low"].astype(float), done["estimate_high"].astype(float)
    factor = np.maximum(np.maximum(lo / t, t / hi), 1.0)
    return {"cells": len(done), "inside": int((factor <= 1.0).sum()),
            "within 2x": int((factor <= 2.0).sum()), "worst factor": float(factor.max()),
            "worst cell": (lambda r: f"{r['family']} n={r['n']} {r['space']} c={r['c']:g}")(
                done.loc[factor.idxmax()])}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true",
                   help=f"n {QUICK['n']}, c {QUICK['c']}, families {QUICK['families']}, every "
                        "space (unless given)")
    p.add_argument("--background", action="store_true",
                   help="run the cells beside one process doing 300 x 300 matrix products")
    p.add_argument("--spaces", nargs="+", choices=SPACE_KINDS, default=None)
    p.add_argument("--families", nargs="+", choices=tuple(FAMILIES), default=None)
    p.add_argument("--n", type=int, nargs="+", default=None,
                   help="sizes (default each family's suite sizes)")
    p.add_argument("--c", type=float, nargs="+", default=None,
                   help=f"eps x median distance (default {C_VALUES})")
    p.add_argument("--limit", type=float, default=600.0, help="seconds per cell (default 600)")
    p.add_argument("--csv", default=None,
                   help="also write every row (all fields) to this CSV (rewritten after each cell)")
    # one cell (internal: the suite runs each cell as such a child process)
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--kind", help=argparse.SUPPRESS)
    p.add_argument("--c-cell", type=float, help=argparse.SUPPRESS)
    p.add_argument("--n-cell", type=int, help=argparse.SUPPRESS)
    p.add_argument("--family", choices=tuple(FAMILIES), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        run_child(args)
        return
    spaces = args.spaces or SPACE_KINDS
    families = args.families or (QUICK["families"] if args.quick else tuple(FAMILIES))
    c_values = args.c or (QUICK["c"] if args.quick else C_VALUES)
    cells = [(kind, c, n, family)
             for family in families
             for n in (args.n or (QUICK["n"] if args.quick else FAMILIES[family][2]))
             for kind, c in itertools.product(spaces, c_values)]
    before = os.getloadavg()
    job = subprocess.Popen([sys.executable, "-c", JOB]) if args.background else None
    rows = []
    try:
        if job is not None:
            time.sleep(1.0)
        for cell in tqdm(cells, desc="lp suite", unit="cell", file=sys.stderr):
            rows.append(run_cell(*cell, args.limit))
            if args.csv:
                # after every cell, so that a suite stopped part-way keeps its rows
                atomic_write_text(args.csv, pd.DataFrame(rows).to_csv(index=False))
    finally:
        if job is not None:
            job.kill()
            job.wait()
    after = os.getloadavg()
    table = pd.DataFrame(rows)
    for column in ("plan", "rounds", "iterations", "gap", "error"):
        if column not in table:
            table[column] = None
    for column in ("estimate_low", "estimate_high"):
        if column not in table:
            table[column] = np.nan
    table["estimate"] = [("" if pd.isna(a) else f"{a:.2g}-{b:.2g}")
                         for a, b in zip(table["estimate_low"], table["estimate_high"],
                                         strict=True)]
    shown = table[["space", "c", "n", "family", "seconds", "estimate", "plan", "rounds",
                   "iterations", "gap", "status"]].copy()
    shown["gap"] = shown["gap"].map(lambda g: "" if g is None or pd.isna(g) else f"{g:.1e}")
    if "finish_rounds" not in table:
        table["finish_rounds"] = None

    def rounds(row) -> str:
        if row["rounds"] is None or pd.isna(row["rounds"]):
            return ""
        finish = row["finish_rounds"]
        more = "" if finish is None or pd.isna(finish) else f" + {int(finish)} finish"
        return f"{int(row['rounds'])}{more}"

    shown["rounds"] = table.apply(rounds, axis=1)
    print(f"{'beside one competing numeric job' if job is not None else 'no competing job'}; "
          f"CPUs {len(os.sched_getaffinity(0))}; load averages before "
          f"{', '.join(f'{x:.2f}' for x in before)}, after {', '.join(f'{x:.2f}' for x in after)}; "
          f"limit {args.limit:g} s per cell\n")
    print(shown.to_markdown(index=False))
    print()
    print(summary(table, args.limit).to_markdown(index=False))
    misses = estimate_misses(table)
    if misses:
        print(f"\nestimates (mdp build's range) against measured: {misses['inside']} of "
              f"{misses['cells']} cells inside their range, {misses['within 2x']} within 2x of "
              f"it; the farthest {misses['worst factor']:.2g}x ({misses['worst cell']})")
    errors = table[table["status"] == "error"]
    for _, r in errors.iterrows():
        print(f"error: {r['space']} c={r['c']:g} n={r['n']} {r['family']}: {r['error']}")
    if args.csv:
        atomic_write_text(args.csv, table.to_csv(index=False))


if __name__ == "__main__":
    main()
