r"""Federated heatmaps under distributed DP with secure aggregation: the seed's Table 1
(Bagdasaryan et al., PoPETs 2022, section 6.2) on a real density map.

Population: the Gowalla NYC check-ins (SNAP) binned on a ``2^depth x 2^depth`` grid over the NYC
box and Gaussian-smoothed (``--smooth`` pixels), i.e. a population image as in the seed's
section 6.1; ``U`` users are drawn i.i.d. from it per repeat. Every algorithm gets eps = 1 per user,
SecAgg shards of ``S_max = 10,000`` clients and modulus ``m``; in the dropout setting 10% of every
shard drops out and the Polya shares are provisioned for it (DP shard 9,000). Metrics (section 6.1):
MSE and L1 of the normalised maps, EMD (L1 ground distance, maps block-summed to
``--emd-side``^2, in pixels) from :mod:`mdp.emd`, and communication (integers per client, summed
over rounds).

Outputs in ``--out``: ``table1.csv`` / ``table1.md`` (mean and std over repeats), ``c_sweep.csv`` /
``c_sweep.md`` (sensitivity of the adaptive algorithm to its calibration ``c``), ``maps.png``,
``runs.csv`` (every run) and ``summary.json``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd
from tqdm import tqdm

from experiments.common import markdown_table
from geo.checkins import read_checkins
from geo.federated import (
    adaptive_grid,
    adaptive_hierarchical_histogram,
    count_min_sketch,
    emd_maps,
    flat_onehot,
    hierarchical_onehot,
    l1,
    mse,
    nonprivate,
    population_map,
    sample_users,
    spatial_decomposition,
)
from geo.federated.data import NYC_BOX
from mdp.io import atomic_write, atomic_write_text, shared_data_dir

DESCRIPTION = "federated heatmaps (distributed DP + SecAgg): seed Table 1 on Gowalla NYC"

METHODS = ["Non-private", "Flat one-hot", "Hierarchical one-hot", "Count-min sketch",
           "Adaptive grid", "Spatial decomposition", "Adaptive hierarchical (ours)"]

#: The seed's Table 1 (Manhattan, MSE in 1e-13, Comm) for the README comparison.
SEED_TABLE1 = {
    "Non-private": (7.75, 2, 6.19, 2, 6.55, 2),
    "Flat one-hot": (41.40, 1048576, 21.40, 1048576, 21.93, 1048576),
    "Hierarchical one-hot": (8.81, 1398100, 7.75, 1398100, 7.79, 1398100),
    "Count-min sketch": (11.62, 40000, 11.69, 40000, 11.73, 40000),
    "Adaptive grid": (9.67, 460, 9.89, 3448, 9.96, 2882),
    "Spatial decomposition": (8.56, 1048576, 7.72, 1048576, 7.78, 1048576),
    "Adaptive hierarchical (ours)": (7.88, 340, 6.99, 1254, 7.02, 1244),
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", default=None,
                        help="SNAP check-in file (default: gowalla_nyc_checkins.txt.gz in the shared data)")
    parser.add_argument("--depth", type=int, default=10, help="quadtree depth: 2^depth pixels a side")
    parser.add_argument("--smooth", type=float, default=4.0, help="Gaussian smoothing of the map, pixels")
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--shard-size", type=int, default=10_000)
    parser.add_argument("--modulus-bits", type=int, default=32)
    parser.add_argument("--c", type=float, default=0.3, help="calibration c of eq. (7)")
    parser.add_argument("--c-sweep", default="0.1,0.3,1", help="values of c for the sensitivity table")
    parser.add_argument("--repeats", type=int, default=None, help="runs per setting (default 3, quick 1)")
    parser.add_argument("--emd-side", type=int, default=None, help="EMD grid side (default 128, quick 64)")


def _settings(quick: bool):
    return [("10k", 10_000, 0.0), ("100k", 100_000, 0.0), ("100k, 10% drop", 100_000, 0.1)]


def _run_method(name, rows, cols, depth, truth, eps, secagg, c, rng):
    if name == "Non-private":
        return nonprivate(rows, cols, depth, truth, shard_size=secagg["shard_size"],
                          dropout=secagg["dropout"], rng=rng)
    if name == "Flat one-hot":
        return flat_onehot(rows, cols, depth, eps, rng=rng, **secagg)
    if name == "Hierarchical one-hot":
        return hierarchical_onehot(rows, cols, depth, eps, truth, rng=rng, **secagg)
    if name == "Count-min sketch":
        return count_min_sketch(rows, cols, depth, eps, truth, rng=rng, **secagg)
    if name == "Adaptive grid":
        return adaptive_grid(rows, cols, depth, eps, rng=rng, **secagg)
    if name == "Spatial decomposition":
        return spatial_decomposition(rows, cols, depth, eps, truth, rng=rng, **secagg)
    if name == "Adaptive hierarchical (ours)":
        return adaptive_hierarchical_histogram(rows, cols, depth, eps, c=c, rng=rng, **secagg)
    raise ValueError(f"unknown method {name!r}")


def _plot_maps(path: Path, truth, maps: dict, tree, title: str, box=NYC_BOX) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import LogNorm
    from matplotlib.ticker import MaxNLocator

    from geo.plotting import geo_aspect

    lon_min, lat_min, lon_max, lat_max = box
    extent = (lon_min, lon_max, lat_min, lat_max)
    aspect = geo_aspect(lat_min, lat_max)
    panels = [("ground truth", truth)] + list(maps.items())
    fig, axes = plt.subplots(2, 4, figsize=(17, 9))
    floor = truth[truth > 0].min()
    norm = LogNorm(vmin=max(floor, truth.max() * 1e-4), vmax=truth.max())
    shown = None
    for ax, (name, m) in zip(axes.ravel(), panels, strict=False):
        shown = ax.imshow(np.maximum(m, norm.vmin), origin="lower", cmap="inferno", norm=norm,
                          extent=extent, aspect=aspect, interpolation="nearest")
        ax.set_title(name, fontsize=10)
    ax = axes.ravel()[len(panels)] if len(panels) < 8 else None
    if ax is not None and tree is not None:
        im = ax.imshow(tree.slot_levels[tree.pixel_slots()], origin="lower", cmap="viridis",
                       extent=extent, aspect=aspect, interpolation="nearest")
        ax.set_title("ours: level of the reporting node", fontsize=10)
        cb = fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
        cb.set_label("quadtree level (0 = whole map)")
    used = len(panels) + (1 if tree is not None else 0)
    for extra in axes.ravel()[used:]:
        extra.axis("off")
    for k, ax in enumerate(axes.ravel()[:used]):
        ax.xaxis.set_major_locator(MaxNLocator(3))
        ax.yaxis.set_major_locator(MaxNLocator(4))
        if k // 4 == 1:
            ax.set_xlabel("longitude (deg)")
        else:
            ax.tick_params(labelbottom=False)
        if k % 4 == 0:
            ax.set_ylabel("latitude (deg)")
        else:
            ax.tick_params(labelleft=False)
    if shown is not None:
        cb = fig.colorbar(shown, ax=list(axes.ravel()), orientation="horizontal",
                          fraction=0.035, pad=0.08, aspect=60)
        cb.set_label("share of users per pixel (log scale; every map but the levels)")
    fig.suptitle(title)
    atomic_write(path, lambda fh: fig.savefig(fh, format="png", dpi=90, bbox_inches="tight"))
    plt.close(fig)


def _fmt_table(df: pd.DataFrame, settings) -> pd.DataFrame:
    out = pd.DataFrame(index=METHODS)
    for label, _, _ in settings:
        sub = df[df.setting == label].groupby("method")
        m, s = sub.mean(numeric_only=True), sub.std(numeric_only=True).fillna(0.0)
        out[f"{label}: MSE (1e-12)"] = [f"{m.loc[k, 'mse'] * 1e12:.2f} ± {s.loc[k, 'mse'] * 1e12:.2f}"
                                        for k in METHODS]
        out[f"{label}: L1"] = [f"{m.loc[k, 'l1']:.3f}" for k in METHODS]
        out[f"{label}: EMD (px)"] = [f"{m.loc[k, 'emd']:.1f}" for k in METHODS]
        out[f"{label}: Comm"] = [f"{int(round(m.loc[k, 'comm'])):,}" for k in METHODS]
    out.index.name = "Algorithm"
    return out


def main(args) -> None:
    quick = bool(args.quick)
    out = Path(args.out or "results/federated")
    repeats = args.repeats or (1 if quick else 3)
    emd_side = args.emd_side or (64 if quick else 128)
    c_sweep = [float(x) for x in str(args.c_sweep).split(",") if x.strip()]
    data = Path(args.data) if args.data else shared_data_dir() / "gowalla_nyc_checkins.txt.gz"
    t0 = time.perf_counter()
    df = read_checkins(data)
    truth = population_map(df["lat"].to_numpy(), df["lon"].to_numpy(), args.depth, smooth=args.smooth)
    settings = _settings(quick)
    rng = np.random.default_rng(args.seed)
    records, sweep, example = [], [], {}
    jobs = [(s, r) for s in settings for r in range(repeats)]
    bar = tqdm(total=len(jobs) * (len(METHODS) + len(c_sweep)), disable=args.no_progress,
               desc="federated")
    for (label, users, dropout), rep in jobs:
        rows, cols = sample_users(truth, users, rng=rng)
        secagg = dict(shard_size=args.shard_size, dropout=dropout, provisioned_dropout=dropout,
                      modulus=2**args.modulus_bits)
        for name in METHODS:
            bar.set_postfix_str(f"{label} #{rep} {name}")
            t = time.perf_counter()
            est = _run_method(name, rows, cols, args.depth, truth, args.epsilon, secagg, args.c, rng)
            secs = time.perf_counter() - t
            emd, emd_how = emd_maps(est.density, truth, side=emd_side)
            records.append({"setting": label, "users": users, "dropout": dropout, "repeat": rep,
                            "method": name, "mse": mse(est.density, truth),
                            "l1": l1(est.density, truth), "emd": emd,
                            "comm": est.accounting.communication, "rounds": est.accounting.rounds,
                            "eps_per_user": est.accounting.epsilon_per_user, "seconds": secs})
            if rep == 0 and label == settings[-1][0]:
                example[name] = est
            bar.update()
        for c in c_sweep:
            est = adaptive_hierarchical_histogram(rows, cols, args.depth, args.epsilon, c=c,
                                                  rng=rng, **secagg)
            sweep.append({"setting": label, "repeat": rep, "c": c, "mse": mse(est.density, truth),
                          "l1": l1(est.density, truth), "comm": est.accounting.communication,
                          "rounds": est.accounting.rounds,
                          "final_slots": est.accounting.vector_lengths[-1]})
            bar.update()
    bar.close()
    runs = pd.DataFrame(records)
    table = _fmt_table(runs, settings)
    sw = pd.DataFrame(sweep).groupby(["setting", "c"], sort=False).mean(numeric_only=True)
    sw = sw.drop(columns="repeat").reset_index()
    sw["mse"] = sw["mse"] * 1e12
    sw = sw.rename(columns={"mse": "MSE (1e-12)"})

    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "runs.csv", runs.to_csv(index=False))
    atomic_write_text(out / "table1.csv", table.to_csv())
    atomic_write_text(out / "c_sweep.csv", sw.to_csv(index=False))
    atomic_write_text(out / "c_sweep.md", markdown_table(sw, floatfmt=".3g", index=False) + "\n")
    means = runs.groupby(["setting", "method"]).mean(numeric_only=True)
    checks = {}
    for label, _, _ in settings:
        ours, npv = means.loc[(label, METHODS[-1])], means.loc[(label, "Non-private")]
        flat = means.loc[(label, "Flat one-hot")]
        checks[label] = {"mse_ours_over_nonprivate": ours.mse / npv.mse,
                         "mse_ours_over_flat": ours.mse / flat.mse,
                         "comm_flat_over_ours": flat.comm / ours.comm}
    header = (f"Table 1 layout: eps = {args.epsilon} per user, S_max = {args.shard_size}, "
              f"m = 2^{args.modulus_bits}, {2**args.depth}x{2**args.depth} map (Gowalla NYC, "
              f"smoothed {args.smooth} px), mean ± std over {repeats} run(s); EMD on "
              f"{emd_side}x{emd_side} blocks ({emd_how}), in pixels; c = {args.c}.\n\n")
    atomic_write_text(out / "table1.md", header + markdown_table(table) + "\n")
    summary = {"quick": quick, "repeats": repeats, "depth": args.depth, "smooth": args.smooth,
               "epsilon": args.epsilon, "shard_size": args.shard_size, "c": args.c,
               "emd_method": emd_how, "checks": checks,
               "seconds": time.perf_counter() - t0,
               "example_log": example[METHODS[-1]].log}
    atomic_write_text(out / "summary.json", json.dumps(summary, indent=2, default=float))
    maps = {k: v.density for k, v in example.items() if k != "Count-min sketch"}
    _plot_maps(out / "maps.png", truth, maps, example[METHODS[-1]].tree,
               f"{settings[-1][0]} users, eps = {args.epsilon}")
    print((out / "table1.md").read_text())
    print(markdown_table(sw, floatfmt=".3g", index=False))
    print(json.dumps(checks, indent=2))
    print(f"wrote {out}/ in {summary['seconds']:.0f} s")
