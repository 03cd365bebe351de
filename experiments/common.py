r"""Pieces shared by the mDP experiments (Imola et al. 2022, section 5): the task that places one
mechanism on the ``eps_tight`` axis, the reference curves, command-line options and outputs.

Reference curves on a ``(eps, delta)`` axis
-------------------------------------------
*Uniform baseline*: output a uniformly random element; row loss ``mean_w d(u, w)``, eps_tight 0.

*Lower bound*: a point of a curve is a mechanism with ``eps_tight(delta) = t``, i.e.
(t, delta)-mDP (Imola et al. 2022, eq. 9), which is weaker than pure t-mDP, so we plot
:func:`mdp.lower_bound` at ``(t, delta)``: Theorem 3 redone with eq. 9,
``L(M) >= r (1 - 1/N(w, S) - delta)`` (derivation in :mod:`mdp.lower_bound`). Like Theorem 3 it
bounds the worst-case loss ``L`` (Imola et al. 2022, eq. 1); the paper plots it beside ``L_q`` (eq. 11), which a
mechanism may push below it on the worst 5 % of elements, so the CSV also carries each
mechanism's worst-case loss and the pure bound.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd

import mdp
from mdp.curves.loss import baseline_curves
from mdp.errors import FileFormatError, MissingFileError
from mdp.io import atomic_write, atomic_write_text, output_directory
from mdp.spaces.metric_space import MetricSpace

from .executor import Task, flatten, records_frame, run_sweep
from .spaces import experiment_space, fingerprint, space_kind
from .store import ResultStore

__all__ = ["calibrated_point", "measure", "point_task", "reference_curves", "add_sweep_arguments",
           "sweep", "stored_sweep", "store_path", "markdown_table", "write_table", "write_markdown", "CODE_VERSION", "MECH_LABELS", "MECH_STYLE"]

#: Part of every configuration: bump when a task's meaning changes (old results then go unused).
#: 2: calibrate accepts a first build inside its window; lazy LP mechanisms; uniform-mix repair.
#: 3: calibrate returns the build closest to the target from below (non-monotone families);
#:    OPTMech retries with lower coefficient limits.
CODE_VERSION = 3

#: Display names: the registry's for every family (one name everywhere), plus the references.
MECH_LABELS = {**{name: mdp.get(name).display_name for name in mdp.mechanisms()},
               "lower_bound": "lower bound", "uniform": "uniform"}
MECH_STYLE = {
    "constopt": dict(color="C3", marker="o"), "optimal": dict(color="C2", marker="s"),
    "spanner": dict(color="C1", marker="^"), "exponential": dict(color="C0", marker="v"),
    "madlib": dict(color="C4", marker="D"), "weighted_exponential": dict(color="C5", marker="x"),
}


def label(mechanism: str, params: dict | None = None) -> str:
    """Display name, with ConstOPTMech's r as in the paper (``ConstOPTMech (10)``)."""
    base = MECH_LABELS.get(mechanism, mechanism)
    if mechanism == "constopt" and params and "r" in params:
        return f"{base} ({params['r']})"
    return base


def measure(mech: mdp.Mechanism, *, q: float, delta: float) -> dict:
    """Losses, eps_tight and every build statistic of ``mech`` (flattened, JSON-able)."""
    stats = flatten(mech.stats)
    out = {"epsilon": mech.epsilon, "eps_tight_measured": mech.eps_tight(delta),
           "loss_q": mech.loss(q), "loss_max": mech.loss(), "loss_mean": float(np.mean(mech.row_losses()))}
    for k, v in stats.items():
        if isinstance(v, (list, tuple, dict)):
            v = json.dumps(v, default=str)
        elif isinstance(v, np.generic):
            v = v.item()
        elif not isinstance(v, (int, float, str, bool, type(None))):
            v = repr(v)
        out[f"stats.{k}"] = v
    return out




def calibrated_point(config: dict, *, space: MetricSpace) -> dict:
    """Task: the mechanism of ``config`` calibrated to ``config["eps_tight"]`` on ``space``.

    The mechanism is the one :func:`mdp.calibrate` accepts: built at the largest epsilon found
    with ``target / (1 + rtol) <= eps_tight(delta) <= target`` (usually one build for OPTMech,
    whose eps_tight is epsilon, and two for SpannerMech, whose eps_tight is 0.94-0.99 of it). The
    builders' rng is the config's seed, so the result depends on the config only.
    """
    t0 = time.perf_counter()
    name, target, delta, rtol = config["mechanism"], config["eps_tight"], config["delta"], config["rtol"]
    mech = mdp.calibrate(name, space, target, delta=delta, rtol=rtol, rng=config["seed"],
                         **config["params"])
    out = measure(mech, q=config["q"], delta=config["delta"])
    out["calibration_seconds"] = time.perf_counter() - t0
    return out


def space_part(name: str, seed: int) -> tuple[dict, MetricSpace]:
    """The config entries describing a space, and the space."""
    space = experiment_space(name, seed)
    return {"space": name, "kind": space_kind(name), "n": space.n, "space_seed": seed,
            "space_fingerprint": fingerprint(space)}, space


def point_task(experiment: str, space_name: str, mechanism: str, params: dict, eps_tight: float, *,
               seed: int, delta: float, q: float, rtol: float, extra: dict | None = None) -> Task:
    """A :func:`calibrated_point` task."""
    cfg, space = space_part(space_name, seed)
    cfg.update({"experiment": experiment, "task": "experiments.common:calibrated_point",
                "code": CODE_VERSION, "mechanism": mechanism, "params": dict(params),
                "eps_tight": float(eps_tight), "delta": float(delta), "q": float(q),
                "rtol": float(rtol), "seed": int(seed), **(extra or {})})
    return Task(cfg, {"space": space})


def reference_curves(space_name: str, space: MetricSpace, eps_grid, *, q: float, delta: float) -> pd.DataFrame:
    """Rows for the uniform baseline and the lower bound (pure and (eps, delta) forms), from
    :func:`mdp.curves.loss.baseline_curves`, in the experiments' column layout."""
    base = baseline_curves(space, eps_grid, q=q, delta=delta)
    base = base.rename(columns={"target_eps_tight": "eps_tight"})
    base.insert(0, "n", space.n)
    base.insert(0, "space", space_name)
    base["status"] = "ok"
    cols = ["space", "n", "mechanism", "eps_tight", "loss_q", "loss_max", "status",
            "lower_bound_pure", "packing_c", "packing_r", "packing_Q"]
    return base[cols]


# -- command line -------------------------------------------------------------------------------
def add_sweep_arguments(parser: argparse.ArgumentParser) -> None:
    """Options every sweep experiment shares (the CLI already adds --quick, -o/--out, --seed)."""
    g = parser.add_argument_group("execution")
    g.add_argument("--scheduler", default=None, metavar="tcp://HOST:PORT",
                   help="run the tasks on this Dask scheduler (optional extra 'dask')")
    g.add_argument("--workers", type=int, default=None,
                   help="local worker processes (default min(2, cores); 0 = serial, in this process)")
    g.add_argument("--time-limit", type=float, default=None, metavar="SECONDS",
                   help="stop any single task after this many seconds (stored as 'timeout')")
    g.add_argument("--retry-timeouts", action="store_true",
                   help="recompute tasks the store holds as 'timeout' (after the code got faster, "
                        "or with a larger --time-limit); by default a timeout is final")
    g.add_argument("--store", default=None, metavar="PATH",
                   help="results store (default OUT/results.sqlite); finished tasks found there are reused")


def out_dir(args, name: str) -> Path:
    """The experiment's output folder: ``-o DIR`` (its parent must exist: a mistyped path is
    refused, not created), else ``results/NAME``. The writers below create it when they first
    write, so a run refused before its results leaves no folder behind."""
    if not args.out:
        return Path("results") / name
    path = Path(args.out)
    if not path.parent.is_dir():
        raise MissingFileError(f"{path}: its parent directory {path.parent} does not exist "
                               f"(create it first, e.g. mkdir -p {path.parent})")
    return path


def _writable(path: Path) -> Path:
    """``path`` with its folder created (the folder :func:`out_dir` checked)."""
    output_directory(Path(path).parent, parents=True)
    return path


def store_path(args, out: Path) -> Path:
    """The results store of a run: ``--store``, else ``out/results.sqlite``."""
    return Path(getattr(args, "store", None) or out / "results.sqlite")


def sweep(tasks: list[Task], args, out: Path, *, desc: str, timeout: float | None = None) -> pd.DataFrame:
    """Run ``tasks`` through :func:`run_sweep` (store :func:`store_path`); one row per task, in
    task order."""
    with ResultStore(store_path(args, out)) as store:
        records = run_sweep(tasks, store, scheduler=args.scheduler, workers=args.workers,
                            timeout=timeout if timeout is not None else args.time_limit,
                            progress=not args.no_progress, desc=desc,
                            retry_timeouts=getattr(args, "retry_timeouts", False))
    return _task_rows(records, tasks)


def _task_rows(records: list[dict], tasks: list[Task]) -> pd.DataFrame:
    """One row per task from one record per distinct configuration, in task order (a
    configuration listed twice, e.g. the (r, lambda) point shared by both ablation halves, gets a
    row for each listing)."""
    position = {key: i for i, key in enumerate(dict.fromkeys(t.key for t in tasks))}
    df = records_frame(records)
    return df.iloc[[position[t.key] for t in tasks]].reset_index(drop=True)


#: Status of a task that :func:`stored_sweep` did not find in the store.
MISSING = "missing"


def stored_sweep(tasks: list[Task], args, out: Path) -> pd.DataFrame:
    """What :func:`sweep` returns, read from the store alone: nothing is computed.

    A task not in the store gets the status :data:`MISSING` (so an interrupted sweep can be
    reported while it is resumed later: ``--report-only``). The caller decides whether a store
    that holds none of a run's tasks is an error (it may be looking at one stage of a run).

    Parameters
    ----------
    tasks : list of Task
    args : argparse.Namespace
        ``store`` (default ``out/results.sqlite``, :func:`store_path`).
    out : Path

    Raises
    ------
    mdp.errors.FileFormatError
        There is no store at the path.
    """
    path = store_path(args, out)
    if not path.is_file():
        raise FileFormatError(path, "no results store here (run the experiment without --report-only first)")
    records = []
    with ResultStore(path) as store:
        for t in dict((t.key, t) for t in tasks).values():
            rec = store.get_record(t.config)
            records.append({"config": dict(t.config), "status": MISSING, "result": {}, "seconds": None}
                           if rec is None else
                           {"config": dict(t.config), **{k: rec[k] for k in ("status", "result", "seconds")}})
    return _task_rows(records, tasks)


def markdown_table(df: pd.DataFrame, *, floatfmt: str = ".3f", index: bool = True) -> str:
    """A pipe table (pandas ``to_markdown``)."""
    return (df.reset_index() if index else df).to_markdown(index=False, floatfmt=floatfmt)


def write_table(df: pd.DataFrame, path: Path) -> Path:
    """Atomic CSV."""
    return atomic_write_text(_writable(path), df.to_csv(index=False))


def read_table(path: str | Path, *, required: tuple[str, ...] = ()) -> pd.DataFrame:
    """A results CSV written by :func:`write_table`.

    Raises
    ------
    mdp.errors.FileFormatError
        The file is missing, is not a CSV, or lacks one of the ``required`` columns (named).
    """
    path = Path(path)
    try:
        df = pd.read_csv(path)
    except FileNotFoundError:
        raise FileFormatError(path, "no such file") from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, OSError) as exc:
        raise FileFormatError(path, f"not a results table: {exc}") from None
    missing = [c for c in required if c not in df.columns]
    if missing:
        raise FileFormatError(path, f"not a results table: no column {missing[0]!r}")
    return df


def merge_results(earlier: pd.DataFrame, new: pd.DataFrame, *, keys: tuple[str, ...]) -> pd.DataFrame:
    """The rows of ``earlier`` whose ``keys`` the ``new`` run does not hold, then every new row.

    So a run that adds a mechanism (or re-runs some points) replaces exactly what it computed and
    keeps the rest of an earlier table.
    """
    held = set(new[list(keys)].itertuples(index=False, name=None))
    keep = [t not in held for t in earlier[list(keys)].itertuples(index=False, name=None)]
    return pd.concat([earlier[keep], new], ignore_index=True)


def write_markdown(text: str, path: Path) -> Path:
    return atomic_write_text(_writable(path), text)


def save_figure(fig, path: Path) -> Path:
    """Atomic PNG."""
    return atomic_write(_writable(path), lambda fh: fig.savefig(fh, format="png", dpi=130, bbox_inches="tight"))
