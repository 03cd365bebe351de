"""Figure 1 of the paper (imola2022, section 5.2): loss L_q versus eps_tight.

For every space (text: GloVe and fastText vocabularies of 50 and 200 words; Geolife: the 50 and
200 most popular cells) and every target ``eps_tight`` (delta = 1e-3) of the space's grid, each
mechanism is placed on the axis with :func:`mdp.calibrate` and its L_0.95 recorded:
ConstOPTMech (r = 10), OPTMech (spaces up to ``--optimal-max-n``; the paper runs it at n = 50
only), SpannerMech, the exponential mechanism, Madlib (text only, as in the paper), plus the
lower bound (see :mod:`experiments.common` for its (eps, delta) form) and the uniform baseline.

Outputs in ``-o DIR`` (default ``results/loss-curves``): ``loss_curves.csv`` (tidy: one row per
mechanism x space x eps_tight x seed, all build and LP statistics), ``loss_curves.png`` (rows:
embeddings / Geolife, columns: sizes, as the paper's Figure 1), ``summary.md``, and the results
store ``results.sqlite`` (rerunning resumes). ``--merge CSV`` keeps an earlier run's points (space,
mechanism, seed, eps_tight) that this run does not compute, so one mechanism can be added to a
finished figure.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from .common import (
    MECH_STYLE,
    add_sweep_arguments,
    label,
    markdown_table,
    merge_results,
    out_dir,
    point_task,
    read_table,
    reference_curves,
    save_figure,
    space_part,
    sweep,
    write_markdown,
    write_table,
)
from .spaces import parse_name, space_kind

DESCRIPTION = "Imola et al. 2022, Figure 1: L_0.95 vs eps_tight (delta=1e-3) of every mechanism, lower bound, uniform"

#: eps_tight grids per family, chosen so that each panel runs from near-uniform loss to near 0
#: (units: 1 / embedding distance for text, 1 / km for Geolife).
GRIDS: dict[str, list[float]] = {
    "glove": [0.1, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 2.5],
    "fasttext": [0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0],
    "geolife": [0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.5],
}
QUICK_GRIDS: dict[str, list[float]] = {
    "glove": [0.25, 0.75, 1.25, 2.0],
    "fasttext": [1.0, 2.0, 4.0, 8.0],
    "geolife": [0.1, 0.3, 0.75, 1.5],
}
FULL_SPACES = ["fasttext-50", "fasttext-200", "glove-50", "glove-200", "geolife-50", "geolife-200"]
QUICK_SPACES = ["glove-50"]
MECHANISMS = ["constopt", "optimal", "spanner", "exponential", "madlib"]
#: Rows of ``--merge`` that this run's rows with the same values replace (point by point, so a run
#: over a few targets adds or replaces only those points).
MERGE_KEYS = ("space", "mechanism", "seed", "eps_tight")


def mechanism_params(name: str, quick: bool, args) -> dict:
    """The paper's settings: ConstOPTMech r = 10 with lambda in {0.001, 0.1, 1.0}."""
    if name == "constopt":
        return {"r": args.r}
    if name == "madlib":
        return {"n_samples": args.madlib_samples or (2000 if quick else 20000)}
    return {}


def add_arguments(parser) -> None:
    parser.add_argument("--spaces", nargs="+", default=None,
                        help=f"spaces FAMILY-N (default {' '.join(FULL_SPACES)}; --quick: {' '.join(QUICK_SPACES)})")
    parser.add_argument("--mechanisms", nargs="+", default=MECHANISMS)
    parser.add_argument("--eps-tight", type=float, nargs="+", default=None,
                        help="targets (default: the family's grid)")
    parser.add_argument("--delta", type=float, default=1e-3)
    parser.add_argument("--q", type=float, default=0.95)
    parser.add_argument("--r", type=int, default=10, help="ConstOPTMech nearest neighbours")
    parser.add_argument("--optimal-max-n", type=int, default=50, help="run OPTMech up to this size")
    parser.add_argument("--spanner-max-n", type=int, default=None,
                        help="run SpannerMech up to this size (default: every size)")
    parser.add_argument("--madlib-samples", type=int, default=None)
    parser.add_argument("--rtol", type=float, default=5e-3, help="calibration tolerance on epsilon")
    parser.add_argument("--seeds", type=int, default=1, help="vocabulary seeds seed..seed+k-1")
    parser.add_argument("--merge", default=None, metavar="CSV",
                        help="loss_curves.csv of an earlier run: its points (space, mechanism, seed, "
                             "eps_tight) that this run does not compute are kept in the outputs (add a "
                             "mechanism to a finished figure without recomputing the others)")
    add_sweep_arguments(parser)


def build_tasks(args) -> tuple[list, pd.DataFrame]:
    """The sweep's tasks and the reference rows (lower bound, uniform)."""
    spaces = args.spaces or (QUICK_SPACES if args.quick else FULL_SPACES)
    tasks, refs = [], []
    for seed in range(args.seed, args.seed + args.seeds):
        for name in spaces:
            family, n = parse_name(name)
            grid = args.eps_tight or (QUICK_GRIDS if args.quick else GRIDS)[family]
            _, space = space_part(name, seed)
            ref = reference_curves(name, space, grid, q=args.q, delta=args.delta)
            ref["seed"] = seed
            refs.append(ref)
            for mech in args.mechanisms:
                if mech == "optimal" and n > args.optimal_max_n:
                    continue
                if mech == "spanner" and args.spanner_max_n is not None and n > args.spanner_max_n:
                    continue
                if mech == "madlib" and space_kind(name) != "text":
                    continue
                params = mechanism_params(mech, args.quick, args)
                for t in grid:
                    tasks.append(point_task("loss-curves", name, mech, params, t, seed=seed,
                                            delta=args.delta, q=args.q, rtol=args.rtol))
    return tasks, pd.concat(refs, ignore_index=True)


def plot(df: pd.DataFrame, path, *, value: str = "loss_q") -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    spaces = list(dict.fromkeys(df["space"]))
    families = list(dict.fromkeys(parse_name(s)[0] for s in spaces))
    sizes = sorted({parse_name(s)[1] for s in spaces})
    fig, axes = plt.subplots(len(families), len(sizes), figsize=(5.2 * len(sizes), 3.8 * len(families)),
                             squeeze=False)
    seed0 = df["seed"].min()
    for i, fam in enumerate(families):
        for j, n in enumerate(sizes):
            ax = axes[i][j]
            name = f"{fam}-{n}"
            sub = df[(df["space"] == name) & (df["seed"] == seed0)]
            if sub.empty:
                ax.set_visible(False)
                continue
            ok = sub[sub["status"] == "ok"]
            for mech, g in ok[~ok["mechanism"].isin(["uniform", "lower_bound"])].groupby("mechanism", sort=False):
                g = g.sort_values("eps_tight_measured")
                params = {"r": int(g["params.r"].iloc[0])} if "params.r" in g and mech == "constopt" else None
                ax.plot(g["eps_tight_measured"], g[value], label=label(mech, params),
                        lw=1.4, ms=4, **MECH_STYLE.get(mech, {}))
            lb = ok[ok["mechanism"] == "lower_bound"].sort_values("eps_tight")
            ax.plot(lb["eps_tight"], lb[value], "k--", lw=1.2, label="lower bound")
            uni = ok[ok["mechanism"] == "uniform"]
            ax.axhline(uni[value].iloc[0], color="0.4", ls=":", lw=1.2, label="uniform")
            unit = "km" if space_kind(name) == "geo" else "embedding distance"
            ax.set_title(f"{fam} ({n} {'cells' if space_kind(name) == 'geo' else 'words'})")
            ax.set_xlabel(r"$\epsilon_{tight}$ ($\delta$ = 1e-3)")
            ax.set_ylabel(("$L_{0.95}$" if value == "loss_q" else "worst-case loss $L$") + f" ({unit})")
            ax.set_ylim(bottom=0)
            ax.grid(alpha=0.3)
            if i == 0 and j == 0:
                ax.legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, path)
    plt.close(fig)


def _gain(table: pd.DataFrame, mid) -> str:
    """Range over the middle eps_tight of 1 - L(ConstOPTMech) / min(L of ExpMech, Madlib, Spanner)."""
    others = [m for m in ("exponential", "madlib", "spanner") if m in table]
    if "constopt" not in table or not others or mid is None:
        return "n/a"
    g = (1 - table["constopt"] / table[others].min(axis=1))[mid].dropna()
    return f"{100 * g.min():+.0f}% to {100 * g.max():+.0f}%" if len(g) else "n/a"


def summary(df: pd.DataFrame, seconds: float, merged: str | None = None) -> str:
    """Markdown: L_q per space and eps_tight, and the paper's claims checked point by point."""
    lines = ["# Loss curves (Imola et al. 2022, Figure 1)", "",
             f"L_0.95 versus eps_tight (delta = {df['delta'].dropna().iloc[0]:g}); wall time of this run "
             f"{seconds:.0f} s; sum of task times {df['task_seconds'].sum():.0f} s (2 shared cores, under load).", ""]
    if merged is not None:
        lines += [f"Points of `{merged}` that this run did not compute are kept (`--merge`); the task "
                  "times include theirs.", ""]
    claims = []
    for name, sub in df.groupby("space", sort=False):
        ok = sub[sub["status"] == "ok"]
        if ok.empty:
            continue
        table = ok.pivot_table(index="eps_tight", columns="mechanism", values="loss_q", aggfunc="mean")
        worst = ok.pivot_table(index="eps_tight", columns="mechanism", values="loss_max", aggfunc="mean")
        lines += [f"## {name}", "", "L_0.95 (Imola et al. 2022, eq. 11):", "", markdown_table(table), "",
                  "Worst-case loss L (Imola et al. 2022, eq. 1; what the LP mechanisms minimise and Theorem 3 bounds):", "",
                  markdown_table(worst), ""]
        failed = sub[sub["status"] != "ok"]
        if not failed.empty:
            lines += ["Failed or timed-out points: " + ", ".join(
                f"{m} at {t:g} ({s})" for m, t, s in zip(failed["mechanism"], failed["eps_tight"], failed["status"], strict=True)), ""]
        lb = table.get("lower_bound")
        uni = table.get("uniform")
        mechs = [c for c in table.columns if c not in ("lower_bound", "uniform")]
        below_lb = (sum(int((worst[m] < lb - 1e-9).sum()) for m in mechs if m in worst)
                    if lb is not None else 0)
        below_lb_q = sum(int((table[m] < lb - 1e-9).sum()) for m in mechs) if lb is not None else 0
        above_uni = sum(int((table[m] > uni + 1e-9).sum()) for m in mechs) if uni is not None else 0
        mid = None
        if "exponential" in table and uni is not None:
            mid = (table["exponential"] > 0.1 * uni) & (table["exponential"] < 0.9 * uni)
        gain_q, gain_l = _gain(table, mid), _gain(worst, mid)
        vs_opt = ""
        if "constopt" in table and "optimal" in table:
            ratio = (table["constopt"] / table["optimal"]).replace([np.inf], np.nan).dropna()
            ratio_l = (worst["constopt"] / worst["optimal"]).replace([np.inf], np.nan).dropna()
            if len(ratio):
                vs_opt = f"{ratio.min():.2f} to {ratio.max():.2f} (L: {ratio_l.min():.2f} to {ratio_l.max():.2f})"
        claims.append(f"| {name} | {gain_q} | {gain_l} | {vs_opt or 'n/a'} | {below_lb} | {below_lb_q} | {above_uni} |")
    lines += ["## Claims", "",
              "Middle range = eps_tight where the exponential mechanism's L_q is between 10% and 90% of "
              "the uniform baseline. Gain = 1 - L(ConstOPTMech) / min(L of ExpMech, Madlib, SpannerMech).", "",
              "The lower bound bounds the worst-case loss L (Theorem 3, in its (eps, delta) form, see "
              "mdp/lower_bound.py); the paper plots it next to L_q, which may legitimately dip below it.", "",
              "| space | ConstOPT gain on L_q, middle range | gain on L | ConstOPT / OPT on L_q | worst-case L below bound "
              "| L_q below bound | L_q above uniform |",
              "|---|---|---|---|---|---|---|", *claims, ""]
    return "\n".join(lines)


def main(args) -> None:
    t0 = time.perf_counter()
    # read before the sweep (and before any folder is made): a bad file is refused at once,
    # not after hours of tasks
    earlier = None if args.merge is None else read_table(args.merge, required=MERGE_KEYS + ("status",))
    out = out_dir(args, "loss-curves")
    tasks, refs = build_tasks(args)
    df = sweep(tasks, args, out, desc="loss-curves")
    df = pd.concat([df, refs], ignore_index=True)
    if earlier is not None:
        df = merge_results(earlier, df, keys=MERGE_KEYS)
    df["label"] = [label(m) for m in df["mechanism"]]
    seconds = time.perf_counter() - t0
    write_table(df, out / "loss_curves.csv")
    plot(df, out / "loss_curves.png")
    plot(df, out / "loss_curves_worst.png", value="loss_max")
    write_markdown(summary(df, seconds, merged=args.merge), out / "summary.md")
    print(f"wrote {out / 'loss_curves.csv'}, {out / 'loss_curves.png'}, {out / 'summary.md'} "
          f"({seconds:.0f} s)")
