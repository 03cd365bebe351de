r"""Loss curves where no matrix fits: vocabulary mode, ``L_q`` estimated with its interval.

``mdp curves`` on a :class:`~mdp.spaces.vector_space.VectorSpace` (``--space glove:full``) cannot
calibrate on ``eps_tight``, which needs the matrix. Each family with a vocabulary mode is
built at every target epsilon (its analytic pure level, an upper bound of its ``eps_tight``
at any ``delta``) and its ``L_q`` is estimated by sampling inputs (and outputs for Madlib) with a
confidence interval (:func:`mdp.vocabulary.mode.estimate_loss`); the table and the plot show
the interval. The uniform baseline is estimated the same way; Theorem 3's packing lower bound
needs the distance matrix and is left out.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import ParameterError
from ..io import atomic_write_text
from ..registry import build, get, vocabulary_class
from ..spaces.vector_space import VectorSpace
from ..vocabulary.mode import estimate_loss
from .plotting import finish_and_save

__all__ = ["scale_targets", "scale_curves", "plot_scale_curves", "run_scale_curves",
           "SCALE_EXPONENTIAL_MAX_N"]

#: Largest space on which ``mdp curves`` builds the exponential mechanisms by default in
#: vocabulary mode (the closest-pair bound and the loss rows cost O(n) per input).
SCALE_EXPONENTIAL_MAX_N = 100_000


def _distance_profile(space: VectorSpace, k: int, rng) -> tuple[float, float, np.ndarray]:
    """Median distance, median nearest-neighbour distance and the sampled inputs' rows' mean
    distance (the uniform mechanism's row loss), from ``k`` sampled inputs."""
    idx = rng.choice(space.n, size=min(k, space.n), replace=False)
    med, nn, mean = [], [], []
    for s in range(0, len(idx), 32):
        D = space.distances_from(idx[s:s + 32])
        med.append(np.median(D, axis=1))
        D[np.arange(len(D)), idx[s:s + 32]] = np.inf
        nn.append(D.min(axis=1))
        D[np.isinf(D)] = 0.0
        mean.append(D.sum(axis=1) / space.n)
    return float(np.median(np.concatenate(med))), float(np.median(np.concatenate(nn))), idx


def scale_targets(space: VectorSpace, k: int = 8, *, rng=0) -> np.ndarray:
    """``k`` epsilons from ``0.2 / median distance`` to ``12 / median nearest-neighbour
    distance`` (as :func:`mdp.curves.loss.default_targets`), from 256 sampled inputs."""
    med, nn, _ = _distance_profile(space, 256, np.random.default_rng(rng))
    lo, hi = 0.2 / med, 12.0 / nn
    return np.array([float(f"{x:.3g}") for x in np.geomspace(lo, max(hi, 4 * lo), k)])


def _uniform_rows(space: VectorSpace):
    def rows(idx, rng):
        out = np.empty(len(idx))
        for s in range(0, len(idx), 32):
            out[s:s + 32] = space.distances_from(idx[s:s + 32]).mean(axis=1)
        return out, np.zeros(len(out)), None
    return rows


def default_scale_mechanisms(space: VectorSpace) -> tuple[list[str], dict[str, str]]:
    """Families built by default at scale, and why the others are not."""
    run, left = [], {}
    for name in ("madlib", "exponential", "weighted_exponential"):
        if name == "weighted_exponential":
            left[name] = "its inverse-density weights cost O(n^2); ask for it with --mechanisms"
        elif name == "exponential" and space.n > SCALE_EXPONENTIAL_MAX_N:
            left[name] = (f"n = {space.n} is above {SCALE_EXPONENTIAL_MAX_N}, the largest space "
                          "it is built on by default (cost); ask for it with --mechanisms")
        else:
            run.append(name)
    left["lower_bound"] = "Theorem 3's packing bound needs the distance matrix"
    return run, left


def scale_curves(space: VectorSpace, mechanisms: list[str], epsilons, *, q: float = 0.95,
                 inputs: int | None = None, confidence: float = 0.95, seed: int = 0) -> pd.DataFrame:
    """Tidy table: one row per family and epsilon, ``loss_q`` with ``loss_q_low`` /
    ``loss_q_high`` (and the uniform baseline)."""
    rows = []
    for name in mechanisms:
        if vocabulary_class(name) is None:
            raise ParameterError(f"mechanism {name!r} has no vocabulary mode; at this size only "
                                 "the families `mdp list --vocabulary` names can be built")
        for eps in epsilons:
            t0 = time.perf_counter()
            mech = build(name, space, float(eps), rng=seed, mode="vocabulary")
            est = mech.loss_estimate(q, inputs=inputs, confidence=confidence, rng=seed)
            rows.append({"mechanism": name, "epsilon": float(eps), "eps_tight": np.nan,
                         "loss_q": est.value, "loss_q_low": est.low, "loss_q_high": est.high,
                         "inputs": est.inputs, "outputs_per_input": est.outputs_per_input,
                         "seconds": time.perf_counter() - t0,
                         "guarantee": mech.stats["privacy"]["guarantee"]})
    uni = estimate_loss(_uniform_rows(space), space.n, q, inputs=inputs or 2000,
                        confidence=confidence,
                        rng=seed)
    for eps in epsilons:
        rows.append({"mechanism": "uniform", "epsilon": float(eps), "eps_tight": 0.0,
                     "loss_q": uni.value, "loss_q_low": uni.low, "loss_q_high": uni.high,
                     "inputs": uni.inputs, "outputs_per_input": None, "seconds": 0.0,
                     "guarantee": "uniform"})
    return pd.DataFrame(rows)


def plot_scale_curves(df: pd.DataFrame, path: str | Path, *, title: str = "",
                      q: float = 0.95) -> Path:
    """PNG: estimated ``L_q`` against the analytic epsilon, with the confidence band."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.4), dpi=120)
    for name, g in df.groupby("mechanism", sort=False):
        g = g.sort_values("epsilon")
        if name == "uniform":
            ax.axhline(g["loss_q"].iloc[0], color="gray", ls=":", label="uniform random (estimate)")
            continue
        shown = get(name).display_name
        ax.errorbar(g["epsilon"], g["loss_q"], yerr=[g["loss_q"] - g["loss_q_low"],
                                                     g["loss_q_high"] - g["loss_q"]],
                    marker="o", ms=3.5, capsize=3, label=f"{shown} (vocabulary mode)")
    ax.set_xscale("log")
    ax.set_xlabel(r"$\epsilon$ (analytic pure level, an upper bound of $\epsilon_{tight}$)")
    ax.set_ylabel(rf"$L_{{{q:g}}}$ estimate with its confidence interval")
    return finish_and_save(fig, ax, title, path)


def run_scale_curves(space: VectorSpace, spec: str, mechanisms: list[str] | None, epsilons, *,
                     q: float, out_dir: str | Path, seed: int, inputs: int | None = None
                     ) -> pd.DataFrame:
    """``mdp curves`` on a vector space: writes ``curves.csv``, ``curves.md``, ``curves.png``
    and prints the table with each estimate's interval."""
    t0 = time.perf_counter()
    if mechanisms is None:
        names, left = default_scale_mechanisms(space)
    else:
        names, left = list(mechanisms), {"lower_bound": "Theorem 3's packing bound needs the "
                                                        "distance matrix"}
    epsilons = scale_targets(space, rng=seed) if epsilons is None else list(epsilons)
    df = scale_curves(space, names, epsilons, q=q, inputs=inputs, seed=seed)
    out = Path(out_dir)
    atomic_write_text(out / "curves.csv", df.to_csv(index=False))
    shown = df.assign(interval=[f"[{a:.4g}, {b:.4g}]" for a, b in
                                zip(df["loss_q_low"], df["loss_q_high"], strict=True)])
    table = shown[["mechanism", "epsilon", "loss_q", "interval", "inputs", "outputs_per_input"]]
    summary = "\n".join(
        [f"Space {spec}: n = {space.n} points (no distance matrix): vocabulary mode; L_{q:g} "
         "estimated by sampling inputs (95% interval), against the analytic epsilon.", "",
         "Families built: " + ", ".join(names) + ".", "", "Left out:"]
        + [f"- {k}: {v}" for k, v in left.items()])
    atomic_write_text(out / "curves.md", summary + "\n\n" + table.to_markdown(index=False,
                                                                          floatfmt=".4g") + "\n")
    plot_scale_curves(df, out / "curves.png", title=f"{spec} (n={space.n}, vocabulary mode)", q=q)
    print(summary)
    print()
    print(table.to_string(index=False))
    print(f"wrote {out / 'curves.csv'}, {out / 'curves.md'}, {out / 'curves.png'} "
          f"in {time.perf_counter() - t0:.1f} s")
    return df
