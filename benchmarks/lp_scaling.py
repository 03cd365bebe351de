"""LP scaling of the LP mechanisms (Imola et al. 2022 Table 2): seconds and non-zeros versus n.

Spaces: a Geolife-like clustered space (the n most popular 0.005-degree Beijing cells: top-30
cells per trace, histogram over traces, haversine distances between cell centres, km) and a text
space (``text.sample_vocabulary(text.load_glove(), n, rng=0)``, Euclidean).

Usage::

    python benchmarks/lp_scaling.py --sizes 50 100 200 400 --mechanisms constopt spanner optimal \
        --time-limit 900
    python benchmarks/lp_scaling.py --spaces geolife --sizes 1000 5000 --mechanisms constopt \
        --constopt-solver hipo --time-limit 900

Each (space, mechanism, n) builds through :func:`mdp.build` (so the time includes certification)
and prints LP seconds, total seconds, variables, rows, non-zeros, the loss, the certified relative
gap (OPTMech) and the load average before and after the build; ``--trace`` also prints the lazy
solve's rounds (phase, rows, seconds, objective; OPTMech's column-block rounds with their
iterations, bound, rows added and the certified loss of the tight ones) after each build, and
``--live`` prints each round as it ends and every tenth interior point iteration while the build
runs (so a build that times out still shows where its time went). A mechanism is skipped for
larger n after it times out. Figures depend on machine load: take the min of repeats.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import time
from functools import partial

import pandas as pd

import mdp
from mdp.io import shared_data_dir
from mdp.lp import LPTimeout
from mdp.spaces.metric_space import MetricSpace

DEFAULT_EPS = {"geolife": 0.5, "glove": 1.0}
PARAMS = {"constopt": {"r": 10, "lam": 0.1}, "spanner": {"stretch": 1.5}, "optimal": {}}


def geolife_space(n: int) -> MetricSpace:
    """The n most popular Geolife cells (seed 5.1), via :func:`geo.popular.popular_cells`."""
    from geo.popular import popular_cells

    return popular_cells(shared_data_dir() / "geolife_beijing_cells_0p005.npz", n=n)


def glove_space(n: int) -> MetricSpace:
    from text import load_glove, sample_vocabulary

    return sample_vocabulary(load_glove(), n, rng=0)


def print_progress(t0: float, event: mdp.lp.LPProgress) -> None:
    """One line per round's end and per tenth interior point iteration (``--live``)."""
    if event.iteration is not None and event.iteration % 10:
        return
    where = (f"round {event.round} it. {event.iteration}" if event.iteration is not None
             else f"round {event.round} ends: {event.violated} rows violated"
             if event.violated is not None else f"round {event.round}")
    what = "certified" if event.certified else "gap"
    print(f"  [{time.perf_counter() - t0:8.1f} s] {where}, rows {event.rows:,d}, objective "
          f"{event.objective:.10g}, {what} {event.gap:.2e}", flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[50, 100, 200, 400])
    p.add_argument("--mechanisms", nargs="+", default=["constopt", "spanner", "optimal"])
    p.add_argument("--spaces", nargs="+", default=["geolife", "glove"], choices=["geolife", "glove"])
    p.add_argument("--time-limit", type=float, default=900.0, help="seconds per LP")
    p.add_argument("--repeats", type=int, default=1, help="report the min over repeats")
    p.add_argument("--optimal-gap", type=float, default=None,
                   help="OPTMech's gap= (certified near-optimal mode; default exact)")
    p.add_argument("--optimal-method", default=None, choices=("blocks", "lazy", "full"),
                   help="OPTMech's method= (default the family's choice by size: 'blocks' from 50 "
                        "points)")
    p.add_argument("--constopt-gap", type=float, default=None,
                   help="ConstOPTMech's gap= (row-block interior point method; default exact: "
                        "HiGHS below 600 points, the row-block method to 1e-6 from there)")
    p.add_argument("--constopt-solver", default=None, choices=mdp.lp.SOLVERS,
                   help="ConstOPTMech's solver= (a HiGHS method at every size; default the "
                        "family's 'auto')")
    p.add_argument("--spanner-solver", default=None,
                   choices=(*mdp.lp.SOLVERS, "clarabel", "blocks"),
                   help="SpannerMech's solver= (default the family's choice by size)")
    p.add_argument("--csv", default=None, help="also write the table to this CSV file")
    p.add_argument("--threads", type=int, default=None,
                   help="threads of HiGHS and of the row-block method's BLAS (mdp.lp.set_threads; "
                        "default HiGHS's, half the cores, and BLAS by the physical cores and the "
                        "dense step's size)")
    p.add_argument("--trace", action="store_true", help="print every round of the lazy solves")
    p.add_argument("--live", action="store_true",
                   help="print each round as it ends and every tenth interior point iteration, "
                        "with the seconds since the build started (mdp.lp.progress)")
    args = p.parse_args()
    mdp.lp.set_threads(args.threads)
    if args.constopt_solver is not None:
        PARAMS["constopt"] = {**PARAMS["constopt"], "solver": args.constopt_solver}
    if args.spanner_solver is not None:
        PARAMS["spanner"] = {**PARAMS["spanner"], "solver": args.spanner_solver}
    if args.constopt_gap is not None:
        PARAMS["constopt"] = {**PARAMS["constopt"], "gap": args.constopt_gap}
    if args.optimal_gap is not None:
        PARAMS["optimal"] = {**PARAMS["optimal"], "gap": args.optimal_gap}
    if args.optimal_method is not None:
        PARAMS["optimal"] = {**PARAMS["optimal"], "method": args.optimal_method}
    rows = []
    for space_name in args.spaces:
        timed_out: set[str] = set()
        for n in args.sizes:
            space = geolife_space(n) if space_name == "geolife" else glove_space(n)
            for name in args.mechanisms:
                if name in timed_out or mdp.get(name).applies(space):
                    continue
                best = None
                load_before = os.getloadavg()[0]
                for _ in range(args.repeats):
                    t0 = time.perf_counter()
                    live = (mdp.lp.progress(partial(print_progress, t0)) if args.live
                            else contextlib.nullcontext())
                    try:
                        with live:
                            mech = mdp.build(name, space, DEFAULT_EPS[space_name],
                                             time_limit=args.time_limit, **PARAMS[name])
                    except LPTimeout:
                        timed_out.add(name)
                        best = None
                        break
                    total = time.perf_counter() - t0
                    if best is None or total < best[0]:
                        best = (total, mech)
                load = f"{load_before:.1f}-{os.getloadavg()[0]:.1f}"
                if best is None:
                    row = {"space": space_name, "n": n, "mechanism": name, "total_s": f"> {args.time_limit:g}",
                           "load": load}
                else:
                    total, mech = best
                    st = mech.stats
                    row = {"space": space_name, "n": n, "mechanism": name, "lp_s": round(st["seconds"], 2),
                           "total_s": round(total, 2), "variables": st["variables"], "rows": st["rows"],
                           "nnz": st["nnz"], "loss": round(mech.loss(), 4), "L_0.95": round(mech.loss(0.95), 4),
                           "method": st.get("method"), "lazy_rows": st.get("lazy_rows"), "rounds": st.get("rounds"), "rel_gap": st.get("relative_gap"),
                           "gap_target": st.get("gap_target"), "solver": st.get("solver"),
                           "threads": args.threads or "default", "device": st.get("device", "cpu"),
                           "ipm_iterations": st.get("ipm_iterations"),
                           "column_mixes": st.get("column_mixes_kept"),
                           "dissection_levels": st.get("dissection_levels"),
                           "load": load}
                    if args.trace and st.get("ipm_rounds"):
                        for r in st["ipm_rounds"]:
                            print(f"  round {r['round']:3d} interior  free-free rows {r['free_free_rows']:9,d} "
                                  f"{r['iterations']:3d} it. dense {r['dense_size']:6,d} {r['seconds']:8.2f} s "
                                  f"objective {r['lp_objective']:.10g} bound {r['lower_bound']:.10g}")
                    blocks = st.get("block_round_trace") or (
                        st.get("round_trace") if "phases" not in st else None)
                    if args.trace and blocks:
                        for i, r in enumerate(blocks, 1):
                            start = "warm" if r.get("warm") else "cold"
                            print(f"  round {i:3d} blocks {r['phase']:5s} {start} rows {r['rows']:10,d} "
                                  f"{r['iterations']:3d} it. {r['seconds']:8.2f} s objective "
                                  f"{r['objective']:.10g} bound {r['bound']:.10g} added {r['added']:,d} "
                                  f"certified {r['certified']:.10g}")
                    if args.trace and st.get("round_trace") and "phases" in st:
                        for i, (phase, (m, sec, obj)) in enumerate(zip(st["phases"], st["round_trace"],
                                                                       strict=True), 1):
                            print(f"  round {i:3d} {phase:9s} rows {m:9,d} {sec:8.2f} s objective {obj:.10g}")
                rows.append(row)
                print(row, flush=True)
    table = pd.DataFrame(rows)
    print(table.to_markdown(index=False))
    if args.csv:
        from mdp.io import atomic_write_text

        atomic_write_text(args.csv, table.to_csv(index=False))


if __name__ == "__main__":
    main()
