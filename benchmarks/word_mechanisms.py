"""The word mechanisms of the text literature at equal measured privacy, and what each claims.

Two measurements on the embedded GloVe 6B 50d vocabulary (no download):

* ``curves``: ``mdp curves`` on ``glove:200`` with Madlib, Mahalanobis, Vickrey, TEM, SanText,
  SanText+ (as a second SanText entry would need a variant, it is measured in ``claims``),
  CusText and the exponential mechanism, at the eps_tight targets given (delta 1e-3):
  ``L_0.95`` with the median ``N_w`` and ``S_w`` (Feyisetan et al. 2020) beside it;
* ``claims``: every family built at a few claimed epsilons on ``glove:1000`` (matrix mode),
  with the level its paper claims, the level certified (or, for an estimated matrix, measured)
  on its final matrix at delta 0 and 1e-3, the guarantee's kind and the build's seconds.

    python benchmarks/word_mechanisms.py --out docs/results/word-mechanisms
    python benchmarks/word_mechanisms.py --part claims --n 1000 --epsilons 1 2 4
"""

from __future__ import annotations

import argparse
import datetime
import subprocess
import time
from pathlib import Path

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

#: (label, family, parameters) measured by ``claims``.
CLAIMS = [
    ("Madlib (CMP)", "madlib", {}),
    ("Mahalanobis (lam 0.5)", "mahalanobis", {"lam": 0.5}),
    ("Vickrey-CMP (t 0.5)", "vickrey", {"t": 0.5}),
    ("Vickrey-Mhl (t 0.5, lam 0.5)", "vickrey", {"t": 0.5, "noise": "mahalanobis"}),
    ("TEM (beta 1e-3)", "tem", {}),
    ("SanText", "santext", {}),
    ("SanText+ (w 0.9, p 0.3)", "santext", {"sensitive_fraction": 0.9, "p": 0.3}),
    ("CusText (k 20)", "custext", {"k": 20}),
    ("ExpMech", "exponential", {}),
]
CURVE_FAMILIES = ["madlib", "mahalanobis", "vickrey", "tem", "santext", "custext", "exponential"]


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


STYLES = {"madlib": ("C0", "o", "-"), "mahalanobis": ("C1", "s", "-"), "vickrey": ("C2", "^", "-"),
          "exponential": ("C3", "D", "-"), "santext": ("C4", "x", "--"), "tem": ("C5", "+", ":"),
          "custext": ("C6", "v", "-")}


def plot_words(curves: pd.DataFrame, path: Path, n: int) -> Path:
    """Two panels over the eps_tight targets: L_0.95 and the median N_w (TEM and SanText
    coincide with the exponential mechanism here and are drawn dashed and dotted on it)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from mdp.curves.adversary import display_name
    from mdp.curves.plotting import finish_and_save

    fig, (ax, bx) = plt.subplots(1, 2, figsize=(13.5, 4.6), dpi=120)
    for name, g in curves.groupby("mechanism", sort=False):
        g = g.sort_values("target_eps_tight")
        if name == "uniform":
            ax.axhline(g["loss_q"].iloc[0], color="gray", ls=":", label="uniform random")
            continue
        if name == "lower_bound":
            ax.plot(g["target_eps_tight"], g["loss_q"], "k--", lw=1,
                    label="lower bound on worst-case loss (Thm 3)")
            continue
        color, marker, ls = STYLES.get(name, ("k", ".", "-"))
        width = 4 if name == "exponential" else 1.5      # under TEM and SanText, which it equals
        label = display_name(name)
        x = g["eps_tight"].to_numpy(dtype=float)
        if not np.isfinite(x).any():              # CusText: plotted at its own epsilon
            x = g["target_eps_tight"].to_numpy(dtype=float)
            label += " (eps_tight infinite; at epsilon = target)"
        z = 1 if name == "exponential" else 2
        ax.plot(x, g["loss_q"], color=color, marker=marker, ls=ls, ms=5, lw=width, zorder=z,
                alpha=0.6 if name == "exponential" else 1, label=label)
        bx.plot(x, g["n_w"], color=color, marker=marker, ls=ls, ms=5, lw=width, zorder=z,
                alpha=0.6 if name == "exponential" else 1, label=label)
    for a in (ax, bx):
        a.set_xscale("log", base=2)
        a.set_xlabel(r"$\epsilon_{tight}$ ($\delta$ = 0.001), per unit of GloVe distance")
    ax.set_ylabel(r"$L_{0.95}$ (expected GloVe distance moved)")
    bx.set_ylabel(r"median $N_w$: uses of 1000 that keep the word")
    bx.set_yscale("log")
    ax.grid(alpha=0.3)
    ax.set_title(f"word mechanisms on glove:{n} at equal eps_tight")
    handles, labels = ax.get_legend_handles_labels()
    bx.plot([], [])
    return finish_and_save(fig, bx, "plausible deniability (Feyisetan et al. 2020)", path,
                           legend={"handles": handles, "labels": labels, "fontsize": 8,
                                   "loc": "center left", "bbox_to_anchor": (1.02, 0.5)})


def claims(n: int, epsilons: list[float], seed: int) -> pd.DataFrame:
    import mdp
    from mdp.spaces.specs import load_space

    space = load_space(f"glove:{n}")
    rows = []
    for eps in tqdm(epsilons, desc="claimed epsilons"):
        for label, family, params in CLAIMS:
            t0 = time.perf_counter()
            mech = mdp.build(family, space, eps, rng=seed, mode="matrix", **params)
            seconds = time.perf_counter() - t0
            priv = mech.stats["privacy"]
            rows.append({"mechanism": label, "family": family, "claimed_eps": eps,
                         "paper_eps": priv.get("paper_eps", eps),
                         "guarantee": priv["guarantee"] + (" (every pair)" if
                                                           priv.get("covers_the_space") else ""),
                         "eps_tight_0": mech.eps_tight(0.0), "eps_tight_1e-3": mech.eps_tight(1e-3),
                         "L_0.95": mech.loss(0.95), "kept": float(np.median(np.diag(mech.matrix))),
                         "unprotected_words": priv.get("unprotected_inputs", 0),
                         "build_seconds": seconds})
    return pd.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--part", choices=["curves", "claims", "both"], default="both")
    parser.add_argument("--out", default="results/word-mechanisms")
    parser.add_argument("--n", type=int, default=1000, help="words of the claims table")
    parser.add_argument("--curve-n", type=int, default=200, help="words of the curves")
    parser.add_argument("--epsilons", type=float, nargs="+", default=[1.0, 2.0, 4.0])
    parser.add_argument("--eps-tight", type=float, nargs="+", default=[0.25, 0.5, 1.0, 2.0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--plot-only", action="store_true",
                        help="redraw the figure from the curves' CSV of an earlier run")
    args = parser.parse_args()
    if args.plot_only:
        out = Path(args.out)
        df = pd.read_csv(out / f"glove{args.curve_n}" / "curves.csv")
        print(f"wrote {plot_words(df, out / f'words_glove{args.curve_n}.png', args.curve_n)}")
        return
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stamp = f"{datetime.date.today().isoformat()}, commit {_commit()}"
    if args.part in ("curves", "both"):
        from mdp.curves.loss import run_curves

        df = run_curves(f"glove:{args.curve_n}", CURVE_FAMILIES, args.eps_tight, delta=1e-3,
                        out_dir=out / f"glove{args.curve_n}", seed=args.seed)
        print(f"wrote {plot_words(df, out / f'words_glove{args.curve_n}.png', args.curve_n)}")
    if args.part in ("claims", "both"):
        df = claims(args.n, args.epsilons, args.seed)
        df.to_csv(out / f"claims_glove{args.n}.csv", index=False)
        print(f"\nClaimed epsilon against the level on the final matrix, glove:{args.n} ({stamp})\n")
        print(df.to_markdown(index=False, floatfmt=".4g"))


if __name__ == "__main__":
    main()
