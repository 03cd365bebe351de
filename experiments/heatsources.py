"""``mdp experiment heatsources``: Gilbert & McMillan (2018), Figures 1-3 and 6.

Figure 3 (noisy, not private): EMD error of l1 recovery versus n, m, T and sigma; defaults
n = 100, m = 50, T = 0.5, sigma = 0.1, k = 1 (the T panel at sigma = 0.2, the sigma panel at
T = 0.05, as in the paper's caption for 3c/3d).
Figure 6 (locally private): versus n, m, T and epsilon; defaults n = 100, m = 50, T = 0.05
(t = 0.1 with mu = 1/2), delta = 0.1, epsilon = 1; sigma from the paper's rule
2 ln(1.25/delta) Delta_2(A)/eps (rule "seed") and from the analytic Gaussian mechanism.
10 trials per point, 95 % Student-t intervals; k = 1 puts the source at 0.5, k > 1 draws the
sources uniformly at random. EMD is in [0, 1] units. Every point also records how many trials
were infeasible at rho = sigma sqrt(m) (radius widened by the policy of
geo.heatsource.recovery.recover),
how many returned f = 0 (scored as the uniform estimate) and how many were certified optimal.
Figures 1-2 style examples: f0 and f_hat for single and paired sources.

Outputs in ``--out`` (default results/heatsources): heatsources.csv, heatsources.md,
fig3_noisy.png, fig6_private.png, examples.png. ``--m-sweep`` runs only the sweep in the number
of sensors with many trials (:mod:`experiments.heatsources_m`; m_sweep.csv/.md,
fig_m_sweep.png, fig_m_model.png).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd

from geo.heatsource import (
    LARGE_N,
    calibrate_sensors,
    compress_matrix,
    heat_matrix,
    mean_ci,
    run_trials,
    sensitivity,
    source_positions,
)
from mdp.io import atomic_write, atomic_write_text

from .common import out_dir

DESCRIPTION = "heat sources: EMD of l1 recovery vs n, m, T, sigma, eps (Gilbert-McMillan Figs 1-3, 6)"

FIG3_DEFAULTS = dict(n=100, m=50, T=0.5, sigma=0.1)
FIG6_DEFAULTS = dict(n=100, m=50, T=0.05, epsilon=1.0, delta=0.1)

GRIDS = {
    "full": {
        "n": [25, 50, 100, 200, 400, 800, 1600],
        "m": [3, 5, 10, 20, 35, 50, 100, 200, 400],
        "T": [0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0],
        "sigma": [0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0],
        "epsilon": [0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0],
    },
    "quick": {
        "n": [25, 50, 100, 200, 400],
        "m": [5, 10, 20, 50, 100],
        "T": [0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0],
        "sigma": [0.01, 0.05, 0.1, 0.2, 0.5, 1.0],
        "epsilon": [0.1, 0.5, 1.0, 2.0, 5.0, 10.0],
    },
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--trials", type=int, default=10, help="trials per point (Gilbert & McMillan: 10)")
    parser.add_argument("--k", type=int, default=1, help="sources per trial (1: at 0.5; else random)")
    parser.add_argument("--rules", nargs="+", default=["seed", "analytic"],
                        choices=["seed", "analytic"], help="calibrations for Figure 6")
    parser.add_argument("--m-sweep", action="store_true",
                        help="only the sweep in the number of sensors m (Figures 3b and 6b) with "
                             "the model's quantities (experiments.heatsources_m); use with --trials")


def _jobs(grid: dict, rules: list[str]) -> list[dict]:
    jobs = []
    for var in ("n", "m", "T", "sigma"):
        for v in grid[var]:
            p = dict(FIG3_DEFAULTS)
            if var == "T":
                p["sigma"] = 0.2
            if var == "sigma":
                p["T"] = 0.05
            p[var] = v
            jobs.append(dict(figure="3", variable=var, value=v, rule="given sigma", **p))
    for var in ("n", "m", "T", "epsilon"):
        for v in grid[var]:
            for rule in rules:
                p = dict(FIG6_DEFAULTS)
                p[var] = v
                jobs.append(dict(figure="6", variable=var, value=v, rule=rule, **p))
    return jobs


def _run_job(job: dict, trials: int, k: int, rng: np.random.Generator) -> dict:
    A = heat_matrix(int(job["n"]), int(job["m"]), job["T"])
    out = dict(job)
    out["sensitivity"] = sensitivity(A)
    if job["figure"] == "6":
        cal = calibrate_sensors(A, job["epsilon"], job["delta"], job["rule"])
        out["sigma"], out["delta_exact"] = cal.sigma, cal.delta_exact
    operator = compress_matrix(A) if job["n"] > LARGE_N else A
    t0 = time.perf_counter()
    rows = run_trials(operator, out["sigma"], trials, k=k, rng=rng)
    out["seconds_per_trial"] = (time.perf_counter() - t0) / trials
    out["emd_mean"], out["emd_ci95"] = mean_ci([r["emd"] for r in rows])
    out["emd_mean_excl_zero"], _ = mean_ci([r["emd_nan"] for r in rows])
    out["trials"] = trials
    out["infeasible"] = sum(r["infeasible"] for r in rows)
    out["zero"] = sum(r["zero"] for r in rows)
    out["optimal"] = sum(r["optimal"] for r in rows)
    out["max_abs_gap"] = max(abs(r["gap"]) for r in rows)
    return out


def _savefig(fig, path: Path) -> None:
    atomic_write(path, lambda fh: fig.savefig(fh, format="png", dpi=110))


def _plot_panels(df: pd.DataFrame, figure: str, variables: list[str], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(variables), figsize=(4.2 * len(variables), 3.4))
    for ax, var in zip(axes, variables, strict=True):
        sub = df[(df.figure == figure) & (df.variable == var)]
        for rule, g in sub.groupby("rule"):
            g = g.sort_values("value")
            ax.errorbar(g["value"], g["emd_mean"], yerr=g["emd_ci95"], marker="o", capsize=3,
                        label=rule)
        ax.set_xscale("log")
        ax.set(xlabel=var, ylabel="EMD error ([0,1] units)")
        ax.grid(alpha=0.3)
        if sub["rule"].nunique() > 1:
            ax.legend(fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    _savefig(fig, path)
    plt.close(fig)


def _examples(path: Path, rng: np.random.Generator) -> list[dict]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    specs = [
        ("Fig 1: n=100, m=50, T=0.5, sigma=0.5", 100, 50, 0.5, 0.5, [0.5]),
        ("Fig 2a: close sources, T=0.05, sigma=0.1", 100, 50, 0.05, 0.1, [0.45, 0.55]),
        ("Fig 2b: far sources, T=0.05, sigma=0.1", 100, 50, 0.05, 0.1, [0.25, 0.75]),
        ("private: T=0.05, eps=1, delta=0.1 (analytic)", 100, 50, 0.05, None, [0.3, 0.7]),
    ]
    fig, axes = plt.subplots(2, 2, figsize=(10, 6))
    rows = []
    for ax, (title, n, m, T, sigma, pos) in zip(axes.ravel(), specs, strict=True):
        A = heat_matrix(n, m, T)
        if sigma is None:
            sigma = calibrate_sensors(A, 1.0, 0.1, "analytic").sigma
        x = source_positions(n)
        f0 = np.zeros(n)
        f0[[int(np.argmin(np.abs(x - p))) for p in pos]] = 1.0
        r = run_trials(A, sigma, 1, sources=f0, rng=rng)[0]
        ax.plot(x, f0 / f0.sum(), "r-", label="f0")
        if r["f"].sum() > 0:
            ax.plot(x, r["f"] / r["f"].sum(), "b--", label="f_hat")
        ax.set_title(f"{title}\nEMD={r['emd']:.3f} ({r['policy']})", fontsize=9)
        ax.legend(fontsize=8)
        rows.append(dict(example=title, sigma=sigma, emd=r["emd"], policy=r["policy"]))
    fig.tight_layout()
    _savefig(fig, path)
    plt.close(fig)
    return rows


def main(args: argparse.Namespace) -> None:
    from tqdm import tqdm

    if getattr(args, "m_sweep", False):
        from .heatsources_m import run_m_sweep

        run_m_sweep(args)
        return

    out = out_dir(args, "heatsources")
    grid = GRIDS["quick" if args.quick else "full"]
    rng = np.random.default_rng(args.seed)
    jobs = _jobs(grid, args.rules)
    start = time.perf_counter()
    records = [_run_job(job, args.trials, args.k, rng)
               for job in tqdm(jobs, desc="heatsources", disable=args.no_progress)]
    df = pd.DataFrame.from_records(records)
    cols = ["figure", "variable", "value", "rule", "n", "m", "T", "sigma", "epsilon", "delta",
            "sensitivity", "emd_mean", "emd_ci95", "emd_mean_excl_zero", "trials", "infeasible",
            "zero", "optimal", "max_abs_gap", "seconds_per_trial"]
    df = df[cols]
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "heatsources.csv", df.to_csv(index=False))
    examples = _examples(out / "examples.png", rng)
    _plot_panels(df, "3", ["n", "m", "T", "sigma"], out / "fig3_noisy.png",
                 f"Fig. 3 (noisy, not private): n=100, m=50, T=0.5, sigma=0.1, k={args.k} "
                 "(T panel: sigma=0.2; sigma panel: T=0.05)")
    _plot_panels(df, "6", ["n", "m", "T", "epsilon"], out / "fig6_private.png",
                 f"Fig. 6 (locally private): n=100, m=50, T=0.05, eps=1, delta=0.1, k={args.k}")
    elapsed = time.perf_counter() - start
    show = ["figure", "variable", "value", "rule", "sigma", "emd_mean", "emd_ci95", "infeasible",
            "zero", "optimal"]
    md = [f"# Heat sources ({'quick' if args.quick else 'full'} run, {args.trials} trials/point, "
          f"k={args.k}, seed={args.seed}, {elapsed:.0f} s)\n",
          "EMD in [0,1] units; `infeasible`: trials whose radius sigma*sqrt(m) admitted no f in "
          "[0,1]^n (widened to 1.0001 x least residual); `zero`: f_hat = 0 (scored as uniform); "
          "`optimal`: duality-gap certificate passed.\n",
          f"Totals: {int(df.infeasible.sum())} infeasible, {int(df.zero.sum())} zero, "
          f"{int(df.optimal.sum())}/{int(df.trials.sum())} certified optimal.\n",
          df[show].to_markdown(index=False, floatfmt=".4g"), "\n## Examples (Figures 1-2 style)\n",
          pd.DataFrame.from_records(examples).to_markdown(index=False, floatfmt=".4g")]
    atomic_write_text(out / "heatsources.md", "\n".join(md))
    print(f"wrote {out}/heatsources.csv, heatsources.md, fig3_noisy.png, fig6_private.png, "
          f"examples.png in {elapsed:.0f} s; infeasible trials: {int(df.infeasible.sum())}, "
          f"f=0 trials: {int(df.zero.sum())}, certified optimal {int(df.optimal.sum())}/"
          f"{int(df.trials.sum())}")
