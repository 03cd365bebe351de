"""Loss versus eps_tight curves (the ``mdp curves`` command; seed imola2022 Figure 1 layout).

For every mechanism family that applies to the space, and every target ``t`` on the
``eps_tight`` axis, the family is calibrated with :func:`mdp.calibrate` (largest parameter
epsilon with ``eps_tight(delta) <= t``) and its ``L_q`` loss recorded. The uniform-random
baseline (``eps_tight = 0``) and Theorem 3's packing lower bound at ``eps = t`` are added.

The lower bound is :func:`mdp.lower_bound` at ``(t, delta)``: it constrains the *worst-case*
loss (column ``loss_max``) of every mechanism with ``eps_tight(delta) <= t``; the seed draws it
beside the ``L_q`` curves, and so does the plot (a quantile loss may dip below it).
"""

from __future__ import annotations

import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from .calibration import calibrate
from .io import atomic_write, atomic_write_text
from .lower_bound import lower_bounds
from .registry import get
from .registry import mechanisms as registered
from .space import MetricSpace
from .spaces import DEFAULT_SPACE, load_space
from .validation import check_positive, check_probability

__all__ = ["default_targets", "loss_curves", "run_curves", "plot_curves"]


def default_targets(space: MetricSpace, k: int = 10) -> np.ndarray:
    """``k`` eps_tight targets spanning near-uniform to near-exact output, scale-free.

    Geometric from ``0.2 / median distance`` (outputs close to uniform) to
    ``12 / median nearest-neighbour distance`` (outputs mostly exact), rounded to 3 digits.
    """
    D = np.asarray(space.distances)
    off = D + np.diag(np.full(space.n, np.inf))
    nn = float(np.median(off.min(axis=1)))
    med = float(np.median(D[np.triu_indices(space.n, 1)]))
    lo, hi = 0.2 / med, 12.0 / nn
    return np.array([float(f"{x:.3g}") for x in np.geomspace(lo, max(hi, 4 * lo), k)])


def default_mechanisms(space: MetricSpace) -> list[str]:
    """Families that apply to ``space`` and are cheap enough for it (``quick_max_n``)."""
    out = []
    for name in registered():
        entry = get(name)
        if entry.applies(space) is None and space.n <= entry.quick_max_n:
            out.append(name)
    return out


def loss_curves(space: MetricSpace, mechanisms: list[str] | None = None, targets=None, *,
                delta: float = 1e-3, q: float = 0.95, seed: int = 0, progress: bool = True) -> pd.DataFrame:
    """Tidy table of L_q versus eps_tight (one row per family and target).

    Columns: ``mechanism, target_eps_tight, eps_tight, epsilon, loss_q, loss_max, builds,
    seconds, guarantee`` plus rows ``uniform`` and ``lower_bound``.
    """
    delta = check_probability(delta, "delta")
    q = check_probability(q, "q")
    names = default_mechanisms(space) if mechanisms is None else list(mechanisms)
    for name in names:
        reason = get(name).applies(space)
        if reason:
            raise ValueError(f"mechanism {name!r} does not apply to this space: {reason}")
    targets = default_targets(space) if targets is None else np.array(
        [check_positive(t, "eps_tight target") for t in targets])
    rows = []
    tasks = [(name, float(t)) for name in names for t in targets]
    for name, t in tqdm(tasks, desc="calibrating", disable=not progress, unit="point"):
        t0 = time.perf_counter()
        try:
            mech = calibrate(name, space, t, delta=delta, rng=seed)
        except (RuntimeError, ValueError) as exc:
            # One failed point (an LP the solver could not finish, a refused matrix) must not
            # discard the rest of the curve: it is recorded with its reason and reported.
            warnings.warn(f"{name} at eps_tight {t:g} failed: {exc}", stacklevel=2)
            rows.append({"mechanism": name, "target_eps_tight": t, "eps_tight": np.nan,
                         "epsilon": np.nan, "loss_q": np.nan, "loss_max": np.nan, "builds": 0,
                         "seconds": time.perf_counter() - t0, "guarantee": "failed",
                         "error": str(exc)})
            continue
        cal = mech.stats["calibration"]
        rows.append({"mechanism": name, "target_eps_tight": t, "eps_tight": cal["eps_tight"],
                     "epsilon": mech.epsilon, "loss_q": mech.loss(q), "loss_max": mech.loss(),
                     "builds": cal["builds"], "seconds": time.perf_counter() - t0,
                     "guarantee": mech.stats["privacy"].get("guarantee", "matrix"), "error": ""})
    uniform = np.full((space.n, space.n), 1.0 / space.n)
    rl = (uniform * space.distances).sum(axis=1)
    for t in targets:
        rows.append({"mechanism": "uniform", "target_eps_tight": float(t), "eps_tight": 0.0,
                     "epsilon": 0.0, "loss_q": float(np.quantile(rl, q)), "loss_max": float(rl.max()),
                     "builds": 0, "seconds": 0.0, "guarantee": "matrix"})
    for t, lb in zip(targets, lower_bounds(space, targets, delta=delta), strict=True):
        rows.append({"mechanism": "lower_bound", "target_eps_tight": float(t), "eps_tight": float(t),
                     "epsilon": float(t), "loss_q": lb.value, "loss_max": lb.value,
                     "builds": 0, "seconds": 0.0, "guarantee": "theorem3"})
    return pd.DataFrame(rows)


def plot_curves(df: pd.DataFrame, path: str | Path, *, title: str = "", q: float = 0.95,
                delta: float = 1e-3) -> Path:
    """PNG in the seed's Figure 1 layout: L_q versus eps_tight, one line per mechanism."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.4), dpi=120)
    for name, g in df.groupby("mechanism", sort=False):
        g = g.sort_values("target_eps_tight")
        if name == "uniform":
            ax.axhline(g["loss_q"].iloc[0], color="gray", ls=":", label="uniform random")
        elif name == "lower_bound":
            ax.plot(g["target_eps_tight"], g["loss_q"], "k--", label="lower bound on worst-case loss (Thm 3)")
        else:
            g = g.dropna(subset=["eps_tight"])
            ax.plot(g["eps_tight"], g["loss_q"], marker="o", ms=3.5, label=name)
    ax.set_xlabel(rf"$\epsilon_{{tight}}$ ($\delta$ = {delta:g})")
    ax.set_ylabel(rf"$L_{{{q:g}}}$ (expected distance)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path = Path(path)
    atomic_write(path, lambda fh: fig.savefig(fh, format="png"))
    plt.close(fig)
    return path


def run_curves(space_spec: str | None = None, mechanisms: list[str] | None = None, eps_tight=None, *,
               delta: float = 1e-3, q: float = 0.95, out_dir: str | Path = "results/curves",
               seed: int = 0, progress: bool = True) -> pd.DataFrame:
    """``mdp curves``: compute, write ``curves.csv`` / ``curves.md`` / ``curves.png``, print a table."""
    spec = space_spec or DEFAULT_SPACE
    t0 = time.perf_counter()
    space = load_space(spec)
    df = loss_curves(space, mechanisms, eps_tight, delta=delta, q=q, seed=seed, progress=progress)
    out = Path(out_dir)
    atomic_write_text(out / "curves.csv", df.to_csv(index=False))
    table = df.pivot_table(index="target_eps_tight", columns="mechanism", values="loss_q")
    atomic_write_text(out / "curves.md", table.to_markdown(floatfmt=".4g"))
    plot_curves(df, out / "curves.png", title=f"{spec} (n={space.n})", q=q, delta=delta)
    print(f"space {spec}: {space!r}")
    print(table.round(4).to_string())
    print(f"wrote {out / 'curves.csv'}, {out / 'curves.md'}, {out / 'curves.png'} "
          f"in {time.perf_counter() - t0:.1f} s")
    return df

