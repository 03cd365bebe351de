"""DP heatmaps on real Gowalla check-ins in New York (Ghazi et al. 2023, section 4, Figures 1-2).

Data: ``gowalla_nyc_checkins.txt.gz`` (SNAP loc-gowalla_totalCheckins rows in the NYC box; all
dates, whereas the paper used January 2010 over the continental US). Cells are those of the paper's
300 x 300 grid over lon (-135, -60) x lat (0, 50) (0.25 deg x 1/6 deg); cells with at least 200
distinct users are kept and subdivided into ``Delta x Delta``. Each user's check-ins in a cell
form one distribution of mass 1; a trial samples ``n`` users, the truth is their average.

Algorithms: ours (:func:`geo.heatmap.dp_sparse_emd_aggregate`, w = 20, gamma = 1/sqrt 2, start
at q = 2), the Laplace baseline and its top-t% variants. Metrics (:mod:`geo.saliency`) compare the
Gaussian heatmaps (sigma in unit-square units, default 0.02, i.e. 5 cells at Delta = 256; the
paper does not state its sigma) of estimate and truth: SIM, CC, KL and EMD, where
EMD is the paper's (L1 ground distance on the unit square, section 2.1) computed *exactly* on the
heatmaps block-summed to ``--emd-resolution`` (64: ~0.1 s per pair instead of ~15 s at 256).

Sweeps: eps in {0.1, 0.5, 1, 2, 5, 10} at Delta = 256 and n = 200 on all cells (Figure 1);
n in {50, ..., 500} and Delta in {64, 128, 256} on the largest cell at a fixed eps; example
heatmaps side by side at eps = 1 and 5 (Figure 2); and the same runs scored at several sigma
(KL depends strongly on it).
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats
from tqdm import tqdm

from geo.checkins import read_checkins
from geo.heatmap import (
    dp_sparse_emd_aggregate,
    gaussian_heatmap,
    laplace_baseline,
    points_to_cells,
    user_distributions,
)
from geo.saliency import cc, kl, sim
from mdp.emd import block_sum, emd_grid
from mdp.io import atomic_write, atomic_write_text

from .common import out_dir
from .realdata import SYNTHETIC_NOTE, checkins_file

DESCRIPTION = "DP heatmaps on Gowalla NYC: sparse EMD aggregation vs Laplace (Ghazi et al. 2023, Figs 1-2)"

DATA_FILE = "gowalla_nyc_checkins.txt.gz"
# The paper's 300 x 300 grid over the continental US (section 4, "Datasets").
US_LON, US_LAT = (-135.0, -60.0), (0.0, 50.0)
CELL_LON, CELL_LAT = (US_LON[1] - US_LON[0]) / 300, (US_LAT[1] - US_LAT[0]) / 300
METRICS = ["SIM", "CC", "KL", "EMD"]
HIGHER_IS_BETTER = {"SIM": True, "CC": True, "KL": False, "EMD": False}
#: y-axis label (with range or unit) of each metric.
METRIC_LABELS = {"SIM": "SIM (histogram intersection, 0 to 1)",
                 "CC": "CC (Pearson correlation, -1 to 1)",
                 "KL": "KL(truth || estimate) (nats)",
                 "EMD": "EMD (L1 ground distance, unit square)"}
#: x-axis label (with unit) of each sweep variable.
SWEEP_LABELS = {"epsilon": "epsilon (pure DP per user)", "n": "n (users per aggregate)",
                "delta": "Delta (grid side, cells)"}
OURS = "ours (sparse EMD)"
BASELINE = "Laplace"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", default=None, help=f"check-in file (default: shared data {DATA_FILE})")
    parser.add_argument("--min-users", type=int, default=200, help="keep cells with >= this many users")
    parser.add_argument("--n-users", type=int, default=200, help="users sampled per trial")
    parser.add_argument("--eps-fixed", type=float, default=1.0, help="eps of the n and Delta sweeps")
    parser.add_argument("--sigma", type=float, default=0.02, help="heatmap Gaussian s.d. (unit square)")
    parser.add_argument("--sigmas", type=float, nargs="+", default=[0.005, 0.01, 0.02, 0.04],
                        help="sigma sensitivity sweep (metrics of the same runs at several sigmas)")
    parser.add_argument("--emd-resolution", type=int, default=64, help="grid side for the exact EMD")
    parser.add_argument("--top-percent", type=float, nargs="+", default=[0.01, 0.1, 1.0])
    parser.add_argument("--runs", type=int, default=60, help="eps sweep: runs per eps over all cells")
    parser.add_argument("--trials", type=int, default=10, help="n / Delta sweeps: trials per point")
    parser.add_argument("--kl-study", action="store_true",
                        help="run the KL study instead (experiments.heatmaps_kl: why KL lags at low eps)")
    parser.add_argument("--kl-runs", type=int, default=24, help="KL study: runs per eps over all cells")


def _config(args) -> dict:
    if args.quick:
        return dict(eps=[0.1, 1.0, 5.0], n=[50, 200, 500], deltas=[64, 128, 256], runs=6, trials=2,
                    max_cells=3, sigma_eps=[1.0], sigma_trials=1)
    return dict(eps=[0.1, 0.5, 1.0, 2.0, 5.0, 10.0], n=[50, 100, 200, 300, 400, 500],
                deltas=[64, 128, 256], runs=args.runs, trials=args.trials, max_cells=None,
                sigma_eps=[0.5, 1.0, 2.0, 5.0], sigma_trials=2)


def load_cells(path: Path, min_users: int) -> list[dict]:
    """Check-ins grouped by the paper's grid cell; cells with >= ``min_users`` users, largest first."""
    df = read_checkins(path)[["user", "lat", "lon"]]
    ci = np.floor((df.lon.to_numpy() - US_LON[0]) / CELL_LON).astype(int)
    cj = np.floor((df.lat.to_numpy() - US_LAT[0]) / CELL_LAT).astype(int)
    df = df.assign(ci=ci, cj=cj)
    cells = []
    for (i, j), g in df.groupby(["ci", "cj"]):
        if g.user.nunique() >= min_users:
            bounds = (US_LON[0] + i * CELL_LON, US_LON[0] + (i + 1) * CELL_LON,
                      US_LAT[0] + j * CELL_LAT, US_LAT[0] + (j + 1) * CELL_LAT)
            cells.append(dict(name=f"{bounds[2]:.2f}N{bounds[0]:.2f}E", bounds=bounds,
                              users=g.user.nunique(), checkins=len(g), df=g))
    return sorted(cells, key=lambda c: -c["users"])


def _user_matrix(cell: dict, delta: int):
    key = f"P{delta}"
    if key not in cell:
        g = cell["df"]
        row, col, inside = points_to_cells(g.lon.to_numpy(), g.lat.to_numpy(), delta=delta,
                                           bounds=cell["bounds"])
        cell[key] = user_distributions(g.user.to_numpy()[inside], row[inside], col[inside],
                                       delta=delta)[1]
    return cell[key]


def _estimates(counts: np.ndarray, eps: float, tops: list[float], rng) -> dict:
    t0 = time.perf_counter()
    out = {OURS: dp_sparse_emd_aggregate(counts, eps, rng=rng)}
    out["_seconds"] = time.perf_counter() - t0
    out[BASELINE] = laplace_baseline(counts, eps, rng=rng)
    for t in tops:
        out[f"Laplace top {t:g}%"] = laplace_baseline(counts, eps, top_percent=t, rng=rng)
    return out


def _metrics(est: np.ndarray, truth_heat: np.ndarray, sigma: float, emd_res: int) -> dict:
    h = gaussian_heatmap(est, sigma)
    f = max(1, h.shape[0] // emd_res)
    return {"SIM": sim(h, truth_heat), "CC": cc(h, truth_heat), "KL": kl(h, truth_heat),
            "EMD": emd_grid(block_sum(h, f), block_sum(truth_heat, f), cell_size=f / h.shape[0])}


def _trial(cell, delta, n, eps, args, rng, extra, sigmas=None) -> list[dict]:
    P = _user_matrix(cell, delta)
    idx = rng.choice(P.shape[0], size=min(n, P.shape[0]), replace=False)
    counts = np.asarray(P[idx].sum(axis=0)).reshape(delta, delta)
    ests = _estimates(counts, eps, args.top_percent, rng)
    secs = ests.pop("_seconds")
    rows = []
    for sigma in sigmas or [args.sigma]:
        truth_heat = gaussian_heatmap(counts / counts.sum(), sigma)
        for alg, est in ests.items():
            rows.append(dict(extra, cell=cell["name"], delta=delta, n=len(idx), epsilon=eps,
                             sigma=sigma, algorithm=alg, seconds=secs if alg == OURS else np.nan,
                             **_metrics(est, truth_heat, sigma, args.emd_resolution)))
    return rows


def summarise(raw: pd.DataFrame, by: str | list[str]) -> pd.DataFrame:
    """Mean and 95% t-interval half-width of every metric per (by, algorithm)."""
    by = [by] if isinstance(by, str) else list(by)
    def ci(x):
        x = x.dropna()
        return stats.t.ppf(0.975, len(x) - 1) * stats.sem(x) if len(x) > 1 else np.nan

    g = raw.groupby([*by, "algorithm"], sort=True)[METRICS]
    mean = g.mean().add_suffix("_mean")
    half = g.agg(ci).add_suffix("_ci95")
    runs = g.size().rename("runs")
    out = pd.concat([mean, half, runs], axis=1).reset_index()
    return out[[*by, "algorithm", "runs"] + [f"{m}_{s}" for m in METRICS for s in ("mean", "ci95")]]


def _plot_sweep(summary: pd.DataFrame, by: str, path: Path, title: str, logx: bool) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 4, figsize=(19, 4.4))
    for ax, m in zip(axes, METRICS, strict=True):
        for alg, g in summary.groupby("algorithm", sort=False):
            g = g.sort_values(by)
            style = dict(color="black", lw=2.2, zorder=3) if alg == OURS else {}
            ax.plot(g[by], g[f"{m}_mean"], marker="o", label=alg, **style)
            ax.fill_between(g[by], g[f"{m}_mean"] - g[f"{m}_ci95"], g[f"{m}_mean"] + g[f"{m}_ci95"],
                            alpha=0.2, **({"color": "black"} if alg == OURS else {}))
        ax.set_xlabel(SWEEP_LABELS.get(by, by))
        ax.set_ylabel(METRIC_LABELS[m])
        ax.set_title(f"{m} ({'higher' if HIGHER_IS_BETTER[m] else 'lower'} is better)")
        ax.grid(alpha=0.3)
        values = np.sort(summary[by].unique())
        if logx:
            ax.set_xscale("log")
        if len(values) <= 8:
            # Tick exactly the swept values (a log axis would otherwise tick only 10^k).
            ax.set_xticks(values)
            ax.set_xticklabels([f"{v:g}" for v in values])
            ax.minorticks_off()
    axes[0].legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    _save_fig(fig, path)


def _save_fig(fig, path: Path) -> None:
    import io

    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    atomic_write(path, lambda fh: fh.write(buf.getvalue()))


def _plot_examples(cell: dict, args, rng, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from geo.plotting import draw_heatmap, geo_aspect

    delta = 256
    P = _user_matrix(cell, delta)
    idx = rng.choice(P.shape[0], size=min(args.n_users, P.shape[0]), replace=False)
    counts = np.asarray(P[idx].sum(axis=0)).reshape(delta, delta)
    top = min(args.top_percent)
    cols = ["original (no privacy)", BASELINE, f"Laplace top {top:g}%", OURS]
    lon0, lon1, lat0, lat1 = cell["bounds"]
    fig, axes = plt.subplots(2, 4, figsize=(19, 8.6))
    for r, eps in enumerate([1.0, 5.0]):
        maps = [counts / counts.sum(), laplace_baseline(counts, eps, rng=rng),
                laplace_baseline(counts, eps, top_percent=top, rng=rng),
                dp_sparse_emd_aggregate(counts, eps, rng=rng)]
        for c, (ax, name, m) in enumerate(zip(axes[r], cols, maps, strict=True)):
            draw_heatmap(ax, gaussian_heatmap(m, args.sigma), extent=cell["bounds"],
                         xlabel="longitude (deg)" if r == 1 else "",
                         ylabel=f"epsilon = {eps:g}\nlatitude (deg)" if c == 0 else "",
                         aspect=geo_aspect(lat0, lat1), nticks=3,
                         colorbar_label="share of users' mass per pixel" if c == 3 else "")
            ax.set_title(name if r == 0 or c == 0 else f"{name}, epsilon = {eps:g}", fontsize=10)
            if r == 0:
                ax.tick_params(labelbottom=False)
            if c > 0:
                ax.tick_params(labelleft=False)
    fig.suptitle(f"cell {cell['name']} (lat {lat0:.2f} to {lat1:.2f}, lon {lon0:.2f} to {lon1:.2f}), "
                 f"{len(idx)} users, Delta = {delta}, Gaussian sigma = {args.sigma:g} of the cell "
                 "side; colour = share of users' mass per pixel (own scale per panel)")
    fig.tight_layout()
    _save_fig(fig, path)


def _claims(eps_sum: pd.DataFrame, delta_sum: pd.DataFrame) -> str:
    lines = ["## Claims", ""]
    rows = []
    for eps, g in eps_sum.groupby("epsilon"):
        g = g.set_index("algorithm")
        wins = [(g.loc[OURS, f"{m}_mean"] > g.loc[BASELINE, f"{m}_mean"]) == HIGHER_IS_BETTER[m]
                for m in METRICS]
        others = [a for a in g.index if a != OURS]
        best_all = [all((g.loc[OURS, f"{m}_mean"] >= g.loc[a, f"{m}_mean"]) == HIGHER_IS_BETTER[m]
                        for a in others) for m in METRICS]
        rows.append(dict(epsilon=eps, **{f"beats Laplace on {m}": w for m, w in zip(METRICS, wins, strict=True)},
                         **{f"best of all on {m}": b for m, b in zip(METRICS, best_all, strict=True)}))
    lines += [pd.DataFrame(rows).to_markdown(index=False, floatfmt=".4f"), ""]
    band = [r for r in rows if 0.5 <= r["epsilon"] <= 5]
    ok = all(all(r[f"beats Laplace on {m}"] for m in METRICS) for r in band)
    lines.append(f"- Ours beats the plain Laplace baseline on all four metrics for every "
                 f"0.5 <= eps <= 5 in this run: **{'yes' if ok else 'no'}**.")
    ours = delta_sum[delta_sum.algorithm == OURS].set_index("delta")["EMD_mean"]
    base = delta_sum[delta_sum.algorithm == BASELINE].set_index("delta")["EMD_mean"]
    lines.append(f"- EMD over Delta {list(ours.index)}: ours {[round(v, 4) for v in ours]} "
                 f"(max/min {ours.max() / ours.min():.2f}); Laplace {[round(v, 4) for v in base]} "
                 f"(max/min {base.max() / base.min():.2f}).")
    return "\n".join(lines) + "\n"


def main(args) -> None:
    out = out_dir(args, "heatmaps")
    cfg = _config(args)
    data, synthetic = checkins_file("heatmaps", DATA_FILE, args.data, args.quick, out)
    cells = load_cells(data, args.min_users)
    if not cells:
        raise ValueError(f"no cell of {data} has >= {args.min_users} users")
    if getattr(args, "kl_study", False):
        from experiments.heatmaps_kl import run_kl_study

        run_kl_study(args, cells, _user_matrix)
        return
    if cfg["max_cells"]:
        cells = cells[:cfg["max_cells"]]
    rng = np.random.default_rng(args.seed)
    t_start = time.perf_counter()
    cell_table = pd.DataFrame([{k: c[k] for k in ("name", "users", "checkins")} for c in cells])

    # Figure 1: eps sweep over all cells.
    per_cell = math.ceil(cfg["runs"] / len(cells))
    raw_eps = []
    jobs = [(eps, c) for eps in cfg["eps"] for c in cells for _ in range(per_cell)]
    for eps, c in tqdm(jobs, desc="heatmaps: eps sweep", disable=args.no_progress):
        raw_eps += _trial(c, 256, args.n_users, eps, args, rng, {"sweep": "epsilon"})
    # n and Delta sweeps on the largest cell.
    big = cells[0]
    raw_n, raw_d = [], []
    for n in tqdm([m for m in cfg["n"] for _ in range(cfg["trials"])], desc="heatmaps: n sweep", disable=args.no_progress):
        raw_n += _trial(big, 256, n, args.eps_fixed, args, rng, {"sweep": "n"})
    for d in tqdm([m for m in cfg["deltas"] for _ in range(cfg["trials"])], desc="heatmaps: Delta sweep", disable=args.no_progress):
        raw_d += _trial(big, d, args.n_users, args.eps_fixed, args, rng, {"sweep": "delta"})

    raw_s = []
    jobs = [(eps, c) for eps in cfg["sigma_eps"] for c in cells for _ in range(cfg["sigma_trials"])]
    for eps, c in tqdm(jobs, desc="heatmaps: sigma sweep", disable=args.no_progress):
        raw_s += _trial(c, 256, args.n_users, eps, args, rng, {"sweep": "sigma"}, sigmas=args.sigmas)

    raw = pd.DataFrame(raw_eps + raw_n + raw_d + raw_s)
    s_sum = summarise(pd.DataFrame(raw_s), ["sigma", "epsilon"])
    eps_sum = summarise(pd.DataFrame(raw_eps), "epsilon")
    n_sum = summarise(pd.DataFrame(raw_n), "n")
    d_sum = summarise(pd.DataFrame(raw_d), "delta")

    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "raw.csv", raw.to_csv(index=False))
    for name, s in (("epsilon", eps_sum), ("n", n_sum), ("delta", d_sum), ("sigma", s_sum)):
        atomic_write_text(out / f"summary_{name}.csv", s.to_csv(index=False))
    _plot_sweep(eps_sum, "epsilon", out / "fig1_epsilon.png",
                f"Delta=256, n={args.n_users}, {len(cells)} cells x {per_cell} trials", logx=True)
    _plot_sweep(n_sum, "n", out / "fig_n.png",
                f"cell {big['name']}, eps={args.eps_fixed:g}, Delta=256, {cfg['trials']} trials", logx=False)
    _plot_sweep(d_sum, "delta", out / "fig_delta.png",
                f"cell {big['name']}, eps={args.eps_fixed:g}, n={args.n_users}, {cfg['trials']} trials",
                logx=True)
    _plot_examples(cells[0], args, rng, out / "fig2_examples.png")

    ours_secs = raw.loc[(raw.algorithm == OURS) & (raw.delta == 256), "seconds"]
    md = [f"# Heatmaps experiment ({'quick' if args.quick else 'full'})", "",
          *([SYNTHETIC_NOTE, ""] if synthetic else []),
          f"Data: {data.name}; sigma={args.sigma:g}; EMD exact (L1, unit square) at "
          f"{args.emd_resolution}x{args.emd_resolution}; seed {args.seed}; "
          f"run time {time.perf_counter() - t_start:.0f} s; dp_sparse_emd_aggregate at Delta=256: "
          f"median {ours_secs.median():.3f} s, max {ours_secs.max():.3f} s per call.", "",
          "## Cells", "", cell_table.to_markdown(index=False, floatfmt=".4f"), "",
          "## Epsilon sweep (Figure 1)", "", eps_sum.to_markdown(index=False, floatfmt=".4f"), "",
          "## Number of users", "", n_sum.to_markdown(index=False, floatfmt=".4f"), "",
          "## Resolution Delta", "", d_sum.to_markdown(index=False, floatfmt=".4f"), "",
          "## Heatmap width sigma (same runs, metrics at several sigma)", "",
          (s_sum[["sigma", "epsilon", "algorithm", "runs"] + [f"{m}_mean" for m in METRICS]]).to_markdown(index=False, floatfmt=".4f"),
          "", _claims(eps_sum, d_sum)]
    atomic_write_text(out / "summary.md", "\n".join(md))
    print(f"wrote {out}/summary.md, summary_*.csv, raw.csv and 4 figures")
