r"""Why KL lags at low eps in the DP heatmaps experiment (Ghazi et al. 2023, section 4).

Run with ``mdp experiment heatmaps --kl-study`` (same data, cells, ``n = 200`` users and
``Delta = 256`` as Figure 1 of the heatmaps experiment). Every trial draws the noisy pyramid of
our algorithm once and reconstructs it twice, with the earlier LP tie-break (``"vertex"``: the
LP vertex HiGHS returns) and with the current one (``"equal"``: mass of the left-out children of
a kept cell shared equally, another optimum of the same LP, :func:`geo.heatmap.reconstruct`), so
the two differ only by the tie-break. The Laplace baseline and its top-t% variants run on the
same counts.

Scored on the Gaussian heatmaps of estimate and truth:

* SIM, CC, EMD (as in the heatmaps experiment) and KL with the MIT benchmark's constant;
* KL with larger regularisation constants ``eps`` and the reverse direction KL(estimate ||
  truth) -- Ghazi et al. cite Bylinskii et al. (2019) for KL but give no formula;
* diagnostics of *missed mass*: the share of KL from pixels where the estimate's heatmap is
  below 1/100 of the truth's, the truth mass farther than ``3 sigma`` from the estimate's
  support, and the estimate's support (share of pixels with mass);
* the same runs at several heatmap widths ``sigma``.

Outputs in ``--out``: ``kl_runs.csv`` (every run), ``kl_summary.csv`` / ``kl_summary.md``,
``kl_epsilon.png``, ``kl_missed_mass.png`` and ``kl_definitions.png``.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import ndimage
from tqdm import tqdm

from geo.heatmap import gaussian_heatmap, laplace_baseline, noisy_pyramid, reconstruct
from geo.saliency import KL_EPS, cc, kl, sim
from mdp.emd import block_sum, emd_grid
from mdp.io import atomic_write, atomic_write_text

from .common import out_dir

__all__ = ["run_kl_study", "KL_CONSTANTS"]

OURS_NEW = "ours (siblings equal)"
OURS_OLD = "ours (LP vertex, before)"
#: Regularisation constants of KL: MATLAB eps (MIT benchmark), then larger ones.
KL_CONSTANTS = (KL_EPS, 1e-12, 1e-9, 1e-7)
STYLE = {OURS_NEW: dict(color="red", lw=2.2), OURS_OLD: dict(color="darkred", ls="--"),
         "Laplace": dict(color="tab:blue"), "Laplace top 0.01%": dict(color="tab:purple"),
         "Laplace top 0.1%": dict(color="tab:orange"), "Laplace top 1%": dict(color="tab:green")}


def _missed(est: np.ndarray, a: np.ndarray, S: np.ndarray, G: np.ndarray, sigma: float) -> dict:
    """Missed-mass diagnostics of one estimate (``est``: the released distribution, ``a`` the
    truth distribution, ``S``/``G`` their normalised heatmaps)."""
    terms = G * np.log(KL_EPS + G / (S + KL_EPS))
    low = S < G / 100
    dist = ndimage.distance_transform_edt(est <= 0) / est.shape[0] if np.any(est > 0) else None
    far = float(a[dist > 3 * sigma].sum()) if dist is not None else 1.0
    return {"KL from S < G/100": float(terms[low].sum()), "truth mass where S < G/100":
            float(G[low].sum()), "truth mass > 3 sigma from support": far,
            "support share": float((est > 0).mean())}


def _score(est, a, truth_heat: dict, main_sigma, emd_res) -> list[dict]:
    out = []
    for sigma, G in truth_heat.items():
        S = gaussian_heatmap(est, sigma)
        S = S / S.sum()
        row = {"sigma": sigma, "SIM": sim(S, G), "CC": cc(S, G)}
        for c in KL_CONSTANTS:
            row[f"KL eps={c:.3g}"] = kl(S, G, eps=c)
        row["KL reverse"] = kl(G, S)
        if sigma == main_sigma:
            f = max(1, S.shape[0] // emd_res)
            row["EMD"] = emd_grid(block_sum(S, f), block_sum(G, f), cell_size=f / S.shape[0])
            row.update(_missed(est, a, S, G, sigma))
        out.append(row)
    return out


def _summary(raw: pd.DataFrame) -> pd.DataFrame:
    metrics = [c for c in raw.columns if c not in ("cell", "trial", "epsilon", "algorithm",
                                                   "sigma")]
    g = raw.groupby(["sigma", "epsilon", "algorithm"], sort=True)[metrics]
    mean = g.mean()
    half = g.sem() * 1.96
    out = mean.copy()
    for m in ("KL eps=2.22e-16", "SIM", "CC", "EMD"):
        if m in mean:
            out[f"{m} ci95"] = half[m]
    out["runs"] = g.size()
    return out.reset_index()


def _best_laplace(sub: pd.DataFrame, col: str) -> pd.Series:
    lap = sub[sub.algorithm.str.startswith("Laplace")]
    return lap.groupby("epsilon")[col].min()


def _plots(out: Path, summ: pd.DataFrame, main_sigma: float, n_runs: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import TwoSlopeNorm
    from matplotlib.ticker import NullLocator

    main = summ[summ.sigma == main_sigma]
    kl0 = f"KL eps={KL_EPS:.3g}"
    # 1. the four metrics against eps, ours before / after and the Laplace family
    fig, axes = plt.subplots(2, 2, figsize=(13, 9.5))
    for ax, m in zip(axes.ravel(), ["SIM", "CC", kl0, "EMD"], strict=True):
        for alg, g in main.groupby("algorithm", sort=False):
            g = g.sort_values("epsilon")
            (line,) = ax.plot(g.epsilon, g[m], marker="o", label=alg,
                              **STYLE.get(alg, dict(lw=1)))
            ci = g.get(f"{m} ci95")
            if ci is not None:
                ax.fill_between(g.epsilon, g[m] - ci, g[m] + ci, alpha=0.12,
                                color=line.get_color())
        ax.set_xscale("log")
        eps_ticks = sorted(main.epsilon.unique())
        ax.set_xticks(eps_ticks)
        ax.set_xticklabels([f"{e:g}" for e in eps_ticks])
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xlabel("privacy budget eps (log scale)")
        better = "higher" if m in ("SIM", "CC") else "lower"
        name = "KL(truth || estimate), MIT constant" if m == kl0 else m
        unit = " (unit-square distance)" if m == "EMD" else " (nats, log scale)" if m == kl0 else ""
        if m == kl0:
            ax.set_yscale("log")
            ax.yaxis.set_minor_locator(NullLocator())
            ax.set_yticks([0.5, 1, 2, 5, 10, 20])
            ax.set_yticklabels(["0.5", "1", "2", "5", "10", "20"])
        ax.set_ylabel(f"{name}{unit}")
        ax.set_title(f"{name}: {better} is better", fontsize=11)
        ax.grid(True, which="both", alpha=0.3)
    axes[0, 0].legend(fontsize=9)
    fig.suptitle(f"Gowalla NYC, Delta = 256, n = 200, sigma = {main_sigma:g}, {n_runs} runs per "
                 "eps (mean, 95% CI)")
    fig.tight_layout()
    atomic_write(out / "kl_epsilon.png", lambda fh: fig.savefig(fh, format="png", dpi=100))
    plt.close(fig)

    # 2. where ours' KL comes from: missed mass
    algs = [OURS_OLD, OURS_NEW, "Laplace", "Laplace top 1%"]
    algs = [a for a in algs if a in set(main.algorithm)]
    eps_vals = sorted(main.epsilon.unique())
    fig, axes = plt.subplots(1, 2, figsize=(14, 4.6))
    width = 0.8 / len(algs)
    for k, alg in enumerate(algs):
        g = main[main.algorithm == alg].set_index("epsilon").loc[eps_vals]
        x = np.arange(len(eps_vals)) + (k - (len(algs) - 1) / 2) * width
        col = STYLE.get(alg, {}).get("color", f"C{k + 2}")
        axes[0].bar(x, g["KL from S < G/100"], width, color=col, label=f"{alg}: missed pixels")
        axes[0].bar(x, g[kl0] - g["KL from S < G/100"], width, bottom=g["KL from S < G/100"],
                    color=col, alpha=0.35, label=f"{alg}: other pixels")
        axes[1].bar(x, 100 * g["truth mass > 3 sigma from support"], width, color=col, label=alg)
    for ax in axes:
        ax.set_xticks(np.arange(len(eps_vals)))
        ax.set_xticklabels([f"{e:g}" for e in eps_vals])
        ax.set_xlabel("privacy budget eps")
        ax.grid(True, axis="y", alpha=0.3)
    axes[0].set_ylabel("KL(truth || estimate) (nats)")
    axes[0].set_title("KL split: pixels where the estimate's heatmap < 1/100 of the truth's "
                      "(solid) and the rest", fontsize=10)
    axes[0].legend(fontsize=7, ncol=2)
    axes[1].set_ylabel("truth mass > 3 sigma from the estimate's support (%)")
    axes[1].set_title("Missed mass", fontsize=10)
    axes[1].legend(fontsize=8)
    fig.tight_layout()
    atomic_write(out / "kl_missed_mass.png", lambda fh: fig.savefig(fh, format="png", dpi=100))
    plt.close(fig)

    # 3. does ours win on KL? (ours - best Laplace variant) per definition, sigma and eps
    defs = [f"KL eps={c:.3g}" for c in KL_CONSTANTS] + ["KL reverse"]
    short = {f"KL eps={KL_EPS:.3g}": "MIT\n(2.2e-16)", "KL reverse": "reverse\n(MIT)"}
    sigmas = sorted(summ.sigma.unique())
    ncol = 2
    nrow = -(-len(sigmas) // ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(6.2 * ncol, 0.55 * len(eps_vals) * nrow + 2.4),
                             squeeze=False)
    lim = 3.0
    for k, (ax, s) in enumerate(zip(axes.ravel(), sigmas, strict=False)):
        sub = summ[summ.sigma == s]
        diff = np.array([(sub[sub.algorithm == OURS_NEW].set_index("epsilon")[d]
                          - _best_laplace(sub, d)).reindex(eps_vals).to_numpy() for d in defs]).T
        im = ax.imshow(diff, cmap="RdBu_r", norm=TwoSlopeNorm(0.0, -lim, lim), aspect="auto")
        for i in range(len(eps_vals)):
            for j in range(len(defs)):
                ax.text(j, i, f"{diff[i, j]:+.2f}", ha="center", va="center", fontsize=8,
                        color="white" if abs(diff[i, j]) > 0.6 * lim else "black")
        ax.set_yticks(range(len(eps_vals)))
        ax.set_yticklabels([f"{e:g}" for e in eps_vals])
        ax.set_ylabel("privacy budget eps")
        ax.set_xticks(range(len(defs)))
        ax.set_xticklabels([short.get(d, d.replace("KL eps=", "eps\n")) for d in defs],
                           fontsize=8)
        if k >= len(sigmas) - ncol:
            ax.set_xlabel("KL regularisation constant (or reverse direction)")
        ax.set_title(f"heatmap sigma = {s:g}", fontsize=11)
    for ax in axes.ravel()[len(sigmas):]:
        ax.axis("off")
    fig.subplots_adjust(hspace=0.35, wspace=0.25, right=0.82)
    fig.colorbar(im, cax=fig.add_axes([0.86, 0.15, 0.02, 0.7]), extend="both",
                 label="KL of ours - KL of the best Laplace variant (nats; < 0: ours wins)")
    fig.suptitle("Ours (siblings equal) against the best Laplace variant on KL, "
                 f"{n_runs} runs per eps")
    atomic_write(out / "kl_definitions.png", lambda fh: fig.savefig(fh, format="png", dpi=100,
                                                                     bbox_inches="tight"))
    plt.close(fig)


def run_kl_study(args, cells: list[dict], user_matrix) -> None:
    """The KL study on the heatmaps experiment's cells (``user_matrix(cell, delta)`` gives the
    users' distributions); writes into ``args.out`` (default ``results/heatmaps``)."""
    out = out_dir(args, "heatmaps")
    quick = bool(args.quick)
    eps_list = [0.1, 1.0, 5.0] if quick else [0.1, 0.5, 1.0, 2.0, 5.0]
    runs = 6 if quick else args.kl_runs
    sigmas = sorted(set(args.sigmas) | {args.sigma})
    if quick:
        cells = cells[:3]
    rng = np.random.default_rng(args.seed)
    delta = 256
    per_cell = math.ceil(runs / len(cells))
    tops = args.top_percent
    t0 = time.perf_counter()
    rows = []
    jobs = [(eps, c, t) for eps in eps_list for c in cells for t in range(per_cell)]
    for eps, cell, t in tqdm(jobs, desc="heatmaps: KL study", disable=args.no_progress):
        P = user_matrix(cell, delta)
        idx = rng.choice(P.shape[0], size=min(args.n_users, P.shape[0]), replace=False)
        counts = np.asarray(P[idx].sum(axis=0)).reshape(delta, delta)
        a = counts / counts.sum()
        truth_heat = {s: gaussian_heatmap(a, s) for s in sigmas}
        truth_heat = {s: g / g.sum() for s, g in truth_heat.items()}
        noisy = noisy_pyramid(counts, eps, rng=rng)
        ests = {}
        for name, rule in ((OURS_NEW, "equal"), (OURS_OLD, "vertex")):
            s_hat, _ = reconstruct(noisy, siblings=rule)
            ests[name] = s_hat / s_hat.sum() if s_hat.sum() > 0 else np.full_like(s_hat, 1 / a.size)
        ests["Laplace"] = laplace_baseline(counts, eps, rng=rng)
        for top in tops:
            ests[f"Laplace top {top:g}%"] = laplace_baseline(counts, eps, top_percent=top, rng=rng)
        for name, est in ests.items():
            for r in _score(est, a, truth_heat, args.sigma, args.emd_resolution):
                rows.append({"cell": cell["name"], "trial": t, "epsilon": eps, "algorithm": name,
                             **r})
    raw = pd.DataFrame(rows)
    summ = _summary(raw)
    seconds = time.perf_counter() - t0
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "kl_runs.csv", raw.to_csv(index=False))
    atomic_write_text(out / "kl_summary.csv", summ.to_csv(index=False))
    n_runs = per_cell * len(cells)
    main = summ[summ.sigma == args.sigma]
    kl0 = f"KL eps={KL_EPS:.3g}"
    show = ["epsilon", "algorithm", "runs", "SIM", "CC", kl0, "EMD", "KL from S < G/100",
            "truth mass > 3 sigma from support", "support share", "KL reverse"]
    defs = [f"KL eps={c:.3g}" for c in KL_CONSTANTS] + ["KL reverse"]
    wins = []
    for s, sub in summ.groupby("sigma"):
        ours = sub[sub.algorithm == OURS_NEW].set_index("epsilon")
        old = sub[sub.algorithm == OURS_OLD].set_index("epsilon")
        for eps in eps_list:
            wins.append({"sigma": s, "epsilon": eps,
                         **{f"{d}: ours - best Laplace": ours.loc[eps, d]
                            - _best_laplace(sub, d).loc[eps] for d in defs},
                         "MIT KL: before - best Laplace": old.loc[eps, kl0]
                         - _best_laplace(sub, kl0).loc[eps]})
    wins = pd.DataFrame(wins)
    md = [f"# KL study ({'quick' if quick else 'full'})", "",
          f"{len(cells)} cells x {per_cell} trials = {n_runs} runs per eps; n = {args.n_users}, "
          f"Delta = {delta}, main sigma = {args.sigma:g}, EMD exact at {args.emd_resolution}; "
          f"seed {args.seed}; run time {seconds:.0f} s.", "",
          f"## All metrics at sigma = {args.sigma:g}", "",
          main[show].to_markdown(index=False, floatfmt=".4g"), "",
          "## KL of ours (siblings equal) minus the best Laplace variant (< 0: ours wins)", "",
          wins.to_markdown(index=False, floatfmt=".3g"), ""]
    atomic_write_text(out / "kl_summary.md", "\n".join(md))
    _plots(out, summ, args.sigma, n_runs)
    print("\n".join(md))
    print(f"wrote {out}/kl_*.csv, kl_summary.md and 3 figures in {seconds:.0f} s")
