"""Both sides of the trade-off under a prior: utility loss against the optimal attacker's error
(Shokri et al. 2012; Bordenabe, Chatzikokolakis, Palamidessi 2014, section 6).

With ``mdp curves --prior``, every calibrated mechanism is also measured under the prior
(:func:`mdp.prior.measure`: expected loss, the Bayes-optimal attacker's expected error, the
leakage) and remapped (:func:`mdp.prior.remap`); ``optimal[expected]`` names OPTMech with the
prior-weighted objective (added by itself on small spaces, by name on larger ones). ``--privacy adversary-error`` plots the
expected loss against the attacker's error, one line per family, its remap dashed.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..mechanism import Mechanism
from ..prior import Prior, measure, remap
from ..registry import get
from .plotting import finish_and_save

__all__ = ["PRIVACY_AXES", "EXPECTED_VARIANT", "prior_columns", "plot_tradeoff", "variant_of",
           "display_name"]

#: The x axis of ``mdp curves``: the certified level, or the optimal attacker's error.
PRIVACY_AXES = ("eps-tight", "adversary-error")
#: Suffix of a family built with ``objective="expected"`` under the curve's prior.
EXPECTED_VARIANT = "[expected]"
#: Columns a prior adds to a curve's rows.
PRIOR_COLUMNS = ("expected_loss", "adversary_error", "leakage_bits", "remap_expected_loss",
                 "remap_adversary_error")


def variant_of(key: str) -> tuple[str, dict]:
    """``"optimal[expected]"`` -> ``("optimal", {"objective": "expected"})``; a plain name -> no
    parameters."""
    if key.endswith(EXPECTED_VARIANT):
        return key[:-len(EXPECTED_VARIANT)], {"objective": "expected"}
    return key, {}


def display_name(key: str) -> str:
    """A row key's name in tables and plots (``"OPTMech (expected)"``)."""
    name, params = variant_of(key)
    try:
        shown = get(name).display_name
    except ValueError:
        shown = name
    return shown + (" (expected)" if params else "")


def prior_columns(mech: Mechanism, prior: Prior) -> dict:
    """The prior's columns for one calibrated mechanism: its own measures and its remap's."""
    rep = measure(mech, prior)
    remapped = measure(remap(mech, prior), prior)
    return {"expected_loss": rep.expected_loss, "adversary_error": rep.adversary_error,
            "leakage_bits": rep.leakage_bits, "remap_expected_loss": remapped.expected_loss,
            "remap_adversary_error": remapped.adversary_error}


def plot_tradeoff(df: pd.DataFrame, path: str | Path, *, title: str = "",
                  unit: str | None = None) -> Path:
    """PNG: expected loss (y) against the optimal attacker's expected error (x), one line per
    family over its eps_tight targets, its Bayes-optimal remap dashed in the same colour."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    u = unit or "unit of distance"
    fig, ax = plt.subplots(figsize=(8.4, 4.8), dpi=120)
    rows = df[~df["mechanism"].isin(["uniform", "lower_bound"])].dropna(subset=["adversary_error"])
    for key, g in rows.groupby("mechanism", sort=False):
        g = g.sort_values("target_eps_tight")
        (line,) = ax.plot(g["adversary_error"], g["expected_loss"], marker="o", ms=3.5,
                          label=display_name(key))
        ax.plot(g["remap_adversary_error"], g["remap_expected_loss"], ls="--", marker=".",
                color=line.get_color(), alpha=0.8, label="  its remap")
    base = df[df["mechanism"] == "uniform"].dropna(subset=["adversary_error"])
    if len(base):
        # far to the upper right of every mechanism: named in the legend, not drawn, so that
        # the families keep the axes
        ax.plot([], [], " ", label=f"uniform random: error {base['adversary_error'].iloc[0]:.3g}, "
                                   f"loss {base['expected_loss'].iloc[0]:.3g} {unit or ''}".rstrip())
    xs = pd.concat([rows["adversary_error"], rows["remap_adversary_error"]]).to_numpy(float)
    xs = xs[xs > 0]
    if xs.size:
        lo, hi = float(xs.min()), float(max(xs.max(), rows["expected_loss"].max()))
        ax.plot([lo, hi], [lo, hi], color="gray", lw=0.8, ls=":",
                label="loss = error (no mechanism below)")
        if hi / lo > 10:
            ax.set_xscale("log")
            ax.set_yscale("log")
    ax.set_xlabel(f"optimal attacker's expected error ({u}; larger is more private)")
    ax.set_ylabel(f"expected loss under the prior ({u})")
    # the legend beside the axes: a family and its remap per pair of lines
    return finish_and_save(fig, ax, title, path,
                           legend={"fontsize": 7.5, "loc": "upper left",
                                   "bbox_to_anchor": (1.01, 1.0), "frameon": False})
