"""Table 3 of the paper (imola2022, section 5.3): ConstOPTMech's hyperparameters lambda and r.

On a 200-word fastText vocabulary at eps_tight = 2.0 (delta = 1e-3), ConstOPTMech is calibrated
(a) with r = 5 and each single lambda in {0.1, 1, 10, 50, 250}, and (b) with lambda = 50 and each
r in {1, 3, 5, 7, 9}; recorded: L_0.95, the LP's rows (constraints), non-zeros, variables, and
the seconds of the final build.

Outputs (``-o DIR``, default ``results/ablation``): ``ablation.csv``, ``ablation.md`` (the two
halves of Table 3), ``ablation.png`` (L_q and rows versus lambda and r).
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from .common import (
    add_sweep_arguments,
    markdown_table,
    out_dir,
    point_task,
    save_figure,
    space_part,
    sweep,
    write_markdown,
    write_table,
)
from .size_sweep import lp_columns

DESCRIPTION = "Imola et al. 2022, Table 3: ConstOPTMech ablation over lambda (r=5) and r (lambda=50) at n=200"

LAMBDAS = [0.1, 1.0, 10.0, 50.0, 250.0]
RS = [1, 3, 5, 7, 9]


def add_arguments(parser) -> None:
    parser.add_argument("--space", default=None, help="FAMILY-N (default fasttext-200; --quick fasttext-50)")
    parser.add_argument("--eps-tight", type=float, default=2.0)
    parser.add_argument("--lambdas", type=float, nargs="+", default=LAMBDAS)
    parser.add_argument("--rs", type=int, nargs="+", default=RS)
    parser.add_argument("--fixed-r", type=int, default=5)
    parser.add_argument("--fixed-lambda", type=float, default=50.0)
    parser.add_argument("--delta", type=float, default=1e-3)
    parser.add_argument("--q", type=float, default=0.95)
    parser.add_argument("--rtol", type=float, default=5e-3)
    add_sweep_arguments(parser)


def plot(df: pd.DataFrame, path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    ok = df[df["status"] == "ok"]
    for ax, part, x, xlabel in ((axes[0], "lambda", "params.lam", r"$\lambda$ (r fixed)"),
                                (axes[1], "r", "params.r", r"r ($\lambda$ fixed)")):
        g = ok[ok["sweep"] == part].sort_values(x)
        ax.plot(g[x], g["loss_q"], "o-", color="C3", label="$L_{0.95}$")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("$L_{0.95}$", color="C3")
        if part == "lambda":
            ax.set_xscale("log")
        tw = ax.twinx()
        tw.plot(g[x], g["lp_rows"], "s--", color="0.4")
        tw.set_ylabel("LP rows (constraints)", color="0.4")
        ax.grid(alpha=0.3)
    fig.tight_layout()
    save_figure(fig, path)
    plt.close(fig)


def main(args) -> None:
    out = out_dir(args, "ablation")
    t0 = time.perf_counter()
    name = args.space or ("fasttext-50" if args.quick else "fasttext-200")
    lambdas = args.lambdas if not args.quick or args.lambdas != LAMBDAS else [0.1, 10.0, 250.0]
    rs = args.rs if not args.quick or args.rs != RS else [1, 5, 9]
    space_part(name, args.seed)
    common = dict(seed=args.seed, delta=args.delta, q=args.q, rtol=args.rtol)
    tasks, parts = [], []
    for lam in lambdas:
        tasks.append(point_task("ablation", name, "constopt", {"r": args.fixed_r, "lam": float(lam)},
                                args.eps_tight, **common))
        parts.append("lambda")
    for r in rs:
        tasks.append(point_task("ablation", name, "constopt", {"r": int(r), "lam": float(args.fixed_lambda)},
                                args.eps_tight, **common))
        parts.append("r")
    df = sweep(tasks, args, out, desc="ablation")
    df["sweep"] = parts
    for what, col in lp_columns(df).items():
        df[f"lp_{what}"] = df[col] if col else np.nan
    seconds = time.perf_counter() - t0
    write_table(df, out / "ablation.csv")
    ok = df[df["status"] == "ok"]
    cols = {"loss_q": "L_q", "lp_rows": "No. of constraints", "lp_nnz": "non-zeros",
            "stats.build_seconds": "Time (sec)"}
    t_lam = ok[ok["sweep"] == "lambda"].set_index("params.lam")[list(cols)].rename(columns=cols)
    t_lam.index.name = "lambda"
    t_r = ok[ok["sweep"] == "r"].set_index("params.r")[list(cols)].rename(columns=cols)
    t_r.index.name = "r"
    md = ["# Ablation (Imola et al. 2022, Table 3)", "",
          f"ConstOPTMech on {name}, eps_tight = {args.eps_tight:g} (delta = {args.delta:g}); time = seconds "
          f"of the final calibrated build (one lambda). Wall time {seconds:.0f} s (2 shared cores, under load).", "",
          f"## lambda (r = {args.fixed_r})", "", markdown_table(t_lam, floatfmt=".4g"), "",
          f"## r (lambda = {args.fixed_lambda:g})", "", markdown_table(t_r, floatfmt=".4g"), ""]
    failed = df[df["status"] != "ok"]
    if not failed.empty:
        md += ["Failed: " + "; ".join(f"{p} {s}" for p, s in zip(failed["sweep"], failed["status"], strict=True)), ""]
    write_markdown("\n".join(md), out / "ablation.md")
    plot(df, out / "ablation.png")
    print(f"wrote {out / 'ablation.csv'}, {out / 'ablation.md'}, {out / 'ablation.png'} ({seconds:.0f} s)")
