"""The size sweep behind Table 2 (``scalability``) and Figure 2 (``loss-vs-size``) of the paper.

Each mechanism is calibrated to a fixed ``eps_tight`` (delta = 1e-3; the paper's values: 2.0 for
fastText, 1.0 for GloVe, 0.3 for Geolife) on spaces of n = 50, 100, 150, ... elements. Sizes run in increasing order, one stage at
a time (the tasks of a stage run in parallel); a mechanism whose task at some n hit the time limit
(or whose final LP build took longer than the limit) is not run at larger n, as in the paper
("until we reached 400 elements or the time spent solving the LP exceeded 1800 seconds").

Both experiments write configurations with ``experiment = "size-sweep"``: pointed at the same
store (``--store``), the second one recomputes nothing the first has done.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from mdp.errors import FileFormatError

from .common import MISSING, point_task, space_part, store_path, stored_sweep, sweep
from .spaces import parse_name

__all__ = ["EPS_TIGHT", "VARIANTS", "run_size_sweep", "run_size_experiment", "lp_columns", "variant_label"]

#: Fixed eps_tight per family (Imola et al. 2022, section 5.1: 2.0 for fastText, 1.0 for GloVe, 0.3 for Geolife).
EPS_TIGHT = {"fasttext": 2.0, "glove": 1.0, "geolife": 0.3}

#: (mechanism, params) variants of the paper's Table 2 / Figure 2.
VARIANTS: dict[str, tuple[str, dict]] = {
    "constopt-10": ("constopt", {"r": 10}),
    "constopt-5": ("constopt", {"r": 5}),
    "spanner": ("spanner", {}),
    "optimal": ("optimal", {}),
    "exponential": ("exponential", {}),
}


def variant_label(variant: str) -> str:
    return {"constopt-10": "ConstOPTMech (10)", "constopt-5": "ConstOPTMech (5)",
            "spanner": "SpannerMech", "optimal": "OPTMech", "exponential": "ExpMech"}.get(variant, variant)


#: Build statistics holding the LP sizes of the final build (keys of ``Mechanism.stats`` that every
#: LP family sets: :mod:`mdp.lp` reports them for the LP it solved last).
LP_SIZE_KEYS = ("nnz", "rows", "variables")


def lp_columns(df: pd.DataFrame) -> dict[str, str | None]:
    """Columns of ``df`` holding the final build's LP sizes (``stats.nnz`` etc.), None where absent."""
    return {what: f"stats.{what}" if f"stats.{what}" in df.columns else None for what in LP_SIZE_KEYS}


def _too_slow(rec: pd.Series, limit: float | None) -> bool:
    if rec["status"] == MISSING:     # --report-only: larger sizes may still be in the store
        return False
    if rec["status"] == "timeout":
        return True
    if limit is None:
        return False
    build = rec.get("stats.build_seconds")
    return bool(build is not None and np.isfinite(build) and build > limit)


def run_size_sweep(args, out, *, families, sizes, variants, seed: int, desc: str) -> pd.DataFrame:
    """Stage by stage over ``sizes``; returns the tidy frame of every task run or reused."""
    alive = {(fam, v) for fam in families for v in variants}
    report_only = getattr(args, "report_only", False)   # run_size_sweep is public: older namespaces
    frames = []
    for n in sizes:
        tasks, labels = [], []
        for fam in families:
            name = f"{fam}-{n}"
            for v in variants:
                if (fam, v) not in alive:
                    continue
                mech, params = VARIANTS[v]
                space_part(name, seed)  # builds and caches the space before tasks reference it
                tasks.append(point_task("size-sweep", name, mech, params, EPS_TIGHT[fam], seed=seed,
                                        delta=args.delta, q=args.q, rtol=args.rtol))
                labels.append((fam, v))
        if not tasks:
            break
        if report_only:
            df = stored_sweep(tasks, args, out)
        else:
            df = sweep(tasks, args, out, desc=f"{desc} n={n}")
        df["family"] = [f for f, _ in labels]
        df["variant"] = [v for _, v in labels]
        for (fam, v), (_, rec) in zip(labels, df.iterrows(), strict=True):
            if _too_slow(rec, args.time_limit):
                alive.discard((fam, v))
        frames.append(df)
    df = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    if report_only and (df.empty or (df["status"] == MISSING).all()):
        raise FileFormatError(store_path(args, out), f"holds none of the {len(df)} tasks of this run "
                                                     "(another --store, or other options than the run's?)")
    return df


def run_size_experiment(args, out, *, desc: str) -> pd.DataFrame:
    """The sweep described by an experiment's options (:func:`add_size_arguments`), with ``label``.

    Families default to GloVe (``--quick``) or all three; ``--time-limit`` defaults to 300 s
    (``--quick``) or the paper's 1800 s.
    """
    families = check_families(args.families or (["glove"] if args.quick else ["fasttext", "glove", "geolife"]))
    if args.time_limit is None:
        args.time_limit = 300.0 if args.quick else 1800.0
    df = run_size_sweep(args, out, families=families, sizes=sweep_sizes(args), variants=args.variants,
                        seed=args.seed, desc=desc)
    df["label"] = [variant_label(v) for v in df["variant"]]
    return df


def add_size_arguments(parser, *, default_variants: list[str], quick_max_n: int) -> None:
    """Options of a size sweep; the sizes are 50, 100, ... up to ``--max-n`` (see :func:`sweep_sizes`)."""
    parser.add_argument("--families", nargs="+", default=None, help="fasttext, glove, geolife")
    parser.add_argument("--sizes", type=int, nargs="+", default=None)
    parser.add_argument("--max-n", type=int, default=None,
                        help=f"largest size (default 400; --quick {quick_max_n})")
    parser.add_argument("--step", type=int, default=50)
    parser.set_defaults(quick_max_n=quick_max_n)
    parser.add_argument("--variants", nargs="+", default=default_variants, choices=sorted(VARIANTS))
    parser.add_argument("--delta", type=float, default=1e-3)
    parser.add_argument("--q", type=float, default=0.95)
    parser.add_argument("--rtol", type=float, default=5e-3)
    parser.add_argument("--report-only", action="store_true",
                        help="write the outputs from the tasks already in the store and compute "
                             "nothing (e.g. while an interrupted run waits to be resumed)")


def sweep_sizes(args) -> list[int]:
    """``--sizes``, else 50, 50 + step, ... up to ``--max-n`` (400, or the quick limit)."""
    max_n = args.max_n or (args.quick_max_n if args.quick else 400)
    return args.sizes or list(range(50, max_n + 1, args.step))


def check_families(families) -> list[str]:
    for f in families:
        parse_name(f"{f}-50")
    return list(families)
