"""Table 2 of the paper (imola2022, section 5.2): LP seconds and non-zeros versus the space size.

Each LP mechanism (ConstOPTMech with r = 10 and r = 5, SpannerMech, OPTMech) is calibrated to a
fixed eps_tight (2.0 fastText, 1.0 GloVe, 0.3 Geolife; delta = 1e-3) on spaces of n = 50, 100, ... elements
until ``--max-n`` or until one of its tasks exceeds ``--time-limit`` (see
:mod:`experiments.size_sweep`). Reported per cell, as in the paper: the seconds of the final
(calibrated) build, which for ConstOPTMech includes its three lambdas, and the non-zeros of its
LP; the CSV also has rows, variables, the HiGHS time and the whole calibration time.

Outputs (``-o DIR``, default ``results/scalability``): ``scalability.csv``, ``scalability.md``
(Table 2 layout), ``scalability.png`` (seconds and non-zeros versus n, log scale).
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from .common import (
    MISSING,
    add_sweep_arguments,
    markdown_table,
    out_dir,
    save_figure,
    store_path,
    write_markdown,
    write_table,
)
from .size_sweep import (
    add_size_arguments,
    lp_columns,
    run_size_experiment,
    variant_label,
)

DESCRIPTION = "Imola et al. 2022, Table 2: seconds and non-zeros of each LP mechanism as n grows (fixed eps_tight)"

LP_VARIANTS = ["constopt-10", "constopt-5", "spanner", "optimal"]


def add_arguments(parser) -> None:
    add_size_arguments(parser, default_variants=LP_VARIANTS, quick_max_n=100)
    add_sweep_arguments(parser)


def _cell(rec) -> str:
    if rec["status"] == MISSING:
        return "not computed yet"
    if rec["status"] == "timeout":
        return f"> {rec.get('result.time_limit', rec.get('time_limit', float('nan'))):g} s (limit)"
    if rec["status"] != "ok":
        error = str(rec.get("error", ""))
        if "does not apply" in error:        # the registry refused the size (e.g. OPTMech's n limit)
            return "not applicable: " + error.rsplit(";", 1)[-1].split(" (")[0].strip()[:60]
        return f"failed: {error[:60]}"
    nnz = rec.get("lp_nnz")
    nnz_txt = f"{nnz:.2e} nnz" if nnz is not None and np.isfinite(nnz) else "- nnz"
    return f"{rec['stats.build_seconds']:.2f} s, {nnz_txt}"


def table(df: pd.DataFrame) -> str:
    """Markdown in the paper's Table 2 layout, one table per family."""
    parts = []
    for fam, sub in df.groupby("family", sort=False):
        cells = {}
        for _, rec in sub.iterrows():
            cells.setdefault(variant_label(rec["variant"]), {})[int(rec["n"])] = _cell(rec)
        t = pd.DataFrame(cells).T.sort_index(axis=1)
        t.columns = [f"{c} elements" for c in t.columns]
        t = t.fillna("not run (smaller n over the limit)")
        t.index.name = f"{fam} (eps_tight {sub['eps_tight'].iloc[0]:g})"
        parts += [f"## {fam}", "", markdown_table(t), ""]
    return "\n".join(parts)


def plot(df: pd.DataFrame, path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fams = list(dict.fromkeys(df["family"]))
    fig, axes = plt.subplots(2, len(fams), figsize=(4.8 * len(fams), 7), squeeze=False)
    ok = df[df["status"] == "ok"]
    for j, fam in enumerate(fams):
        for v, g in ok[ok["family"] == fam].groupby("variant", sort=False):
            g = g.sort_values("n")
            axes[0][j].plot(g["n"], g["stats.build_seconds"], marker="o", label=variant_label(v))
            if "lp_nnz" in g and g["lp_nnz"].notna().any():
                axes[1][j].plot(g["n"], g["lp_nnz"], marker="o", label=variant_label(v))
        axes[0][j].set_title(f"{fam}")
        axes[0][j].set_ylabel("seconds (final build)")
        axes[1][j].set_ylabel("LP non-zeros")
        for ax in (axes[0][j], axes[1][j]):
            ax.set_yscale("log")
            ax.set_xlabel("n")
            ax.grid(alpha=0.3)
        if axes[0][j].get_lines():      # a family with no finished task (--report-only) has none
            axes[0][j].legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, path)
    plt.close(fig)


def main(args) -> None:
    out = out_dir(args, "scalability")
    t0 = time.perf_counter()
    df = run_size_experiment(args, out, desc="scalability")
    cols = lp_columns(df)
    for what, col in cols.items():
        df[f"lp_{what}"] = df[col] if col else np.nan
    seconds = time.perf_counter() - t0
    write_table(df, out / "scalability.csv")
    if args.report_only:
        done = int((df["status"] != MISSING).sum())
        when = (f"read from the store {store_path(args, out)} ({done} of {len(df)} tasks "
                "computed; 'not computed yet': resume with the same command without --report-only)")
    else:
        when = f"wall time {seconds:.0f} s on 2 shared cores (under load)"
    md = ["# Scalability (Imola et al. 2022, Table 2)", "",
          f"Seconds of the final calibrated build (ConstOPTMech: all its lambdas) and LP non-zeros; "
          f"per-task time limit {args.time_limit:g} s (whole calibration); {when}.", "", table(df)]
    write_markdown("\n".join(md), out / "scalability.md")
    plot(df, out / "scalability.png")
    print(f"wrote {out / 'scalability.csv'}, {out / 'scalability.md'}, {out / 'scalability.png'} ({seconds:.0f} s)")
