"""Loss versus eps_tight curves (the ``mdp curves`` command; Imola et al. 2022 Figure 1 layout).

For every mechanism family that applies to the space, and every target ``t`` on the
``eps_tight`` axis, the family is calibrated with :func:`mdp.calibrate` (largest parameter
epsilon with ``eps_tight(delta) <= t``) and its ``L_q`` loss recorded. The uniform-random
baseline (``eps_tight = 0``) and Theorem 3's packing lower bound at ``eps = t`` are added.

The lower bound is :func:`mdp.lower_bound` at ``(t, delta)``: it constrains the *worst-case*
loss (column ``loss_max``) of every mechanism with ``eps_tight(delta) <= t``; the paper draws it
beside the ``L_q`` curves, and so does the plot (a quantile loss may dip below it).
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from ..errors import ParameterError, ParameterTypeError
from ..families.optimal.formulation import HIGHS_MAX_N, QUICK_MAX_N
from ..io import atomic_write_text, output_directory
from ..lower_bound import lower_bounds
from ..prior import Prior, adversary_error, expected_loss, load_prior
from ..privacy.accounting import loss
from ..registry import get
from ..registry import mechanisms as registered
from ..runtime.estimate import (
    DEFAULT_COSTS,
    HEARTBEAT_SECONDS,
    LONG_WORK_SECONDS,
    CostModel,
    Estimate,
    curves_estimate,
    describe_seconds,
)
from ..runtime.resources import check_memory
from ..runtime.threads import check_threads
from ..spaces.metric_space import MetricSpace
from ..spaces.specs import DEFAULT_SPACE, load_space
from ..spaces.vector_space import VectorSpace
from ..validation import check_positive, check_probability
from ..worst_case.sweep_start import Sweep
from . import DEFAULT_OUT_DIR
from .adversary import (
    EXPECTED_VARIANT,
    PRIVACY_AXES,
    display_name,
    plot_tradeoff,
    prior_columns,
    variant_of,
)
from .calibration import calibrate
from .plotting import finish_and_save
from .scale import run_scale_curves

__all__ = ["default_targets", "loss_curves", "run_curves", "plot_curves", "baseline_curves",
           "plan_families", "DEFAULT_OUT_DIR"]

#: Largest ``eps_tight target x closest distance`` accepted: beyond ``exp(700)`` the odds
#: overflow float64 and every mechanism is the identity.
MAX_TARGET_EXPONENT = 700.0


def default_targets(space: MetricSpace, k: int = 10) -> np.ndarray:
    """``k`` eps_tight targets spanning near-uniform to near-exact output, scale-free.

    Geometric from ``0.2 / median distance`` (outputs close to uniform) to
    ``12 / median nearest-neighbour distance`` (outputs mostly exact), rounded to 3 digits.
    """
    D = np.asarray(space.distances)
    off = D + np.diag(np.full(space.n, np.inf))
    nn = float(np.median(off.min(axis=1)))
    med = space.median_distance
    lo, hi = 0.2 / med, 12.0 / nn
    return np.array([float(f"{x:.3g}") for x in np.geomspace(lo, max(hi, 4 * lo), k)])


def plan_families(space: MetricSpace, mechanisms: list[str] | None = None
                  ) -> tuple[list[str], dict[str, str]]:
    """Which families a curve run builds, and why the others are left out.

    Parameters
    ----------
    space : MetricSpace
    mechanisms : list of str or None
        Families asked for by name (every one must apply), or ``None`` for every family that
        applies to ``space`` and whose ``quick_max_n`` admits its size (cost control).

    Returns
    -------
    (run, left_out) : the names to build, and ``{name: reason}`` for every registered family
    that is not built.
    """
    left_out: dict[str, str] = {}
    if mechanisms is not None:
        for name in mechanisms:
            reason = get(variant_of(name)[0]).applies(space)
            if reason:
                raise ParameterError(f"mechanism {name!r} does not apply to this space: {reason}")
        run = list(mechanisms)
        for name in registered():
            if name not in run:
                left_out[name] = "not asked for (--mechanisms)"
        return run, left_out
    run = []
    for name in registered():
        entry = get(name)
        reason = entry.applies(space)
        if reason:
            left_out[name] = f"does not apply: {reason}"
        elif entry.domain == "words" and not _is_word_space(space):
            left_out[name] = ("a word mechanism, built by default on a space of words; ask for "
                              f"it with --mechanisms {name}")
        elif space.n > entry.quick_max_n:
            left_out[name] = (f"n = {space.n} is above {entry.quick_max_n}, the largest size it is "
                              f"built on by default (cost); ask for it with --mechanisms {name}")
        else:
            run.append(name)
    return run, left_out


def default_mechanisms(space: MetricSpace) -> list[str]:
    """Families that apply to ``space`` and are cheap enough for it (``quick_max_n``)."""
    return plan_families(space)[0]


def baseline_curves(space: MetricSpace, targets, *, q: float, delta: float) -> pd.DataFrame:
    """The reference rows of every loss-curve table, built in one place.

    For each target ``t``: the uniform mechanism (``eps_tight = 0``; its ``L_q`` and worst-case
    loss) and Theorem 3's packing lower bound (Imola et al. 2022) at ``(t, delta)`` and at
    ``(t, 0)``.

    Returns
    -------
    DataFrame
        Columns ``mechanism`` (``"uniform"`` or ``"lower_bound"``), ``target_eps_tight``,
        ``loss_q``, ``loss_max``, and for the bound ``lower_bound_pure``, ``packing_c``,
        ``packing_r``, ``packing_Q`` (NaN for the uniform rows).
    """
    targets = [float(t) for t in targets]
    D = np.asarray(space.distances)
    uniform = np.full(D.shape, 1.0 / space.n)
    u_q, u_max = loss(uniform, D, q), loss(uniform, D)
    rows = [{"mechanism": "uniform", "target_eps_tight": t, "loss_q": u_q, "loss_max": u_max}
            for t in targets]
    approx = lower_bounds(space, targets, delta=delta)
    pure = approx if delta == 0 else lower_bounds(space, targets)
    for t, lb, lb0 in zip(targets, approx, pure, strict=True):
        rows.append({"mechanism": "lower_bound", "target_eps_tight": t, "loss_q": lb.value,
                     "loss_max": lb.value, "lower_bound_pure": lb0.value, "packing_c": lb.c,
                     "packing_r": lb.r, "packing_Q": lb.Q})
    return pd.DataFrame(rows)


def loss_curves(space: MetricSpace, mechanisms: list[str] | None = None, targets=None, *,
                delta: float = 1e-3, q: float = 0.95, seed: int = 0, progress: bool = True,
                threads=None, heartbeat: float | None = None,
                keep: str | Path | None = None, prior: Prior | None = None,
                scheduler=None) -> pd.DataFrame:
    """Tidy table of L_q versus eps_tight (one row per family and target).

    Columns: ``mechanism, target_eps_tight, eps_tight, epsilon, loss_q, loss_max, builds,
    seconds, guarantee`` plus rows ``uniform`` and ``lower_bound``. ``threads`` (None, "auto" or
    an int >= 1) is every build's (:func:`mdp.build`, :mod:`mdp.runtime.threads`). Without a
    progress bar, ``heartbeat`` seconds (None: never) pass between the lines on stderr that
    say how many points are done and which build is running, so a slow run is not mistaken for
    a stuck one. ``keep``: a folder (created if its parent exists) where every calibrated
    mechanism is saved as ``FAMILY_eps-tight-TARGET.npz`` (column ``file``), so the one a user
    picks need not be built again. ``prior`` (:class:`mdp.prior.Prior`): every mechanism is also
    measured under it and remapped (columns of :mod:`mdp.curves.adversary`); OPTMech for the
    prior (``objective="expected"``) is the family ``optimal[expected]``, added by itself where
    OPTMech runs on at most ``QUICK_MAX_N`` points and built on up to ``HIGHS_MAX_N`` when named
    (Gowalla New York, 100 cells: about 110 s a build against 14 s for the worst case). ``scheduler`` (``"tcp://HOST:PORT"`` or a
    ``distributed.Client``; the extra ``dask``): the points run as tasks on that Dask cluster,
    an LP family's targets as one task (its sweep), every other point on its own, with the same
    rows as a local run (``keep`` must then be a folder the workers can write).

    The LP families (those taking ``sweep``) sweep their targets in the order given: each build
    starts from the rows the build before it ended with
    (:class:`mdp.worst_case.sweep_start.Sweep`), which changes its time, not its result.
    """
    delta = check_probability(delta, "delta", inclusive_high=False)
    q = check_probability(q, "q")
    check_threads(threads)                # before the builds, whose failures are recorded per point
    names, _ = plan_families(space, mechanisms)
    expected = "optimal" + EXPECTED_VARIANT
    if prior is not None:
        prior.check_space(space.n)
        if "optimal" in names and expected not in names and space.n <= QUICK_MAX_N:
            names = [*names, expected]
    elif expected in names:
        raise ParameterError(f"{expected} is OPTMech for a prior: give one (--prior)")
    if expected in names and space.n > HIGHS_MAX_N:
        raise ParameterError(f"{expected} is solved on HiGHS, up to n = {HIGHS_MAX_N} points (this "
                             f"space has {space.n})")
    targets = default_targets(space) if targets is None else np.array(
        [check_positive(t, "eps_tight target") for t in targets])
    closest = float(space.distances[space.distances > 0].min())
    if targets.max() * closest > MAX_TARGET_EXPONENT:
        raise ParameterError(f"eps_tight target {targets.max():g} is beyond any level that means "
                             f"something on this space: even its two closest points (distance "
                             f"{closest:.4g}) would be told apart with odds exp("
                             f"{targets.max() * closest:.3g}); targets up to about "
                             f"{MAX_TARGET_EXPONENT / closest:.3g} are meaningful")
    keep = None if keep is None else output_directory(keep)
    tasks = [(name, float(t)) for name in names for t in targets]
    settings = _PointSettings(delta=delta, q=q, seed=seed, threads=threads, keep=keep,
                              prior=prior, words=_is_word_space(space))
    status = _Status(total=len(tasks))
    if scheduler is None:
        bar = tqdm(tasks, desc="calibrating", disable=not progress, unit="point")
        with _heartbeat(bar, status, REFRESH_SECONDS if progress else None,
                        None if progress else heartbeat):
            rows = _calibrated_rows(space, bar, status, settings)
    else:
        bar = tqdm(total=len(tasks), desc="calibrating", disable=not progress, unit="point")
        with _heartbeat(bar, status, REFRESH_SECONDS if progress else None,
                        None if progress else heartbeat):
            rows = _cluster_rows(space, tasks, bar, status, settings, scheduler)
    base = baseline_curves(space, targets, q=q, delta=delta)
    uniform_extra = {} if prior is None else _uniform_columns(space, prior)
    for r in base.itertuples(index=False):
        bound = r.mechanism == "lower_bound"
        rows.append({"mechanism": r.mechanism, "target_eps_tight": r.target_eps_tight,
                     "eps_tight": r.target_eps_tight if bound else 0.0,
                     "epsilon": r.target_eps_tight if bound else 0.0, "loss_q": r.loss_q,
                     "loss_max": r.loss_max, "builds": 0, "seconds": 0.0,
                     "guarantee": "theorem3" if bound else "matrix",
                     **({} if bound else uniform_extra)})
    return pd.DataFrame(rows)


def _uniform_columns(space: MetricSpace, prior: Prior) -> dict:
    """The uniform-random baseline under the prior: the attacker guesses the prior's 1-median."""
    n = space.n
    U = np.full((n, n), 1.0 / n)
    out = {"expected_loss": expected_loss(U, prior, space.distances),
           "adversary_error": adversary_error(U, prior, space.distances), "leakage_bits": 0.0}
    out.update(remap_expected_loss=out["adversary_error"],
               remap_adversary_error=out["adversary_error"])
    return out


#: Seconds between refreshes of the progress bar while one point is being calibrated (its
#: elapsed time and the build it is on keep moving even when one point takes minutes).
REFRESH_SECONDS = 2.0


@dataclass
class _Status:
    """Where a curve run is: points done of ``total``, and the build running ``now``."""

    total: int
    done: int = 0
    now: str = ""


@contextlib.contextmanager
def _heartbeat(bar, status: _Status, refresh: float | None, lines: float | None):
    """Refresh ``bar`` every ``refresh`` seconds, or without a bar print a line every ``lines``
    seconds, from a background thread (None: neither)."""
    seconds = refresh if not bar.disable else lines
    if seconds is None:
        try:
            yield
        finally:
            bar.close()
        return
    stop = threading.Event()
    t0 = time.perf_counter()

    def beat():
        while not stop.wait(seconds):
            if not bar.disable:
                bar.refresh()
                continue
            print(f"mdp curves: {status.done} of {status.total} points done after "
                  f"{describe_seconds(time.perf_counter() - t0).removeprefix('about ')}"
                  + (f"; now {status.now}" if status.now else ""), file=sys.stderr, flush=True)

    thread = threading.Thread(target=beat, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        bar.close()


@dataclass(frozen=True)
class _PointSettings:
    """What every point of a curve shares (sent once to each worker of a cluster)."""

    delta: float
    q: float
    seed: int
    threads: object = None
    keep: Path | None = None
    prior: Prior | None = None
    words: bool = False


#: Uses of one word over which the plausible-deniability columns count (Feyisetan et al. 2020).
DENIABILITY_DRAWS = 1000


def _is_word_space(space) -> bool:
    """A space of words: string labels on embedded points (``glove:N``, ``fasttext:N``)."""
    labels = getattr(space, "labels", None)
    return (labels is not None and getattr(space, "points", None) is not None
            and len(labels) > 0 and isinstance(labels[0], str))


def _deniability_columns(mech, settings: _PointSettings) -> dict:
    """Median N_w and S_w over the words (:func:`mdp.privacy.deniability.explain_words`) for a
    word space, beside the loss; nothing otherwise."""
    if not settings.words:
        return {}
    from ..privacy.deniability import explain_words

    ex = explain_words(mech, draws=DENIABILITY_DRAWS, rng=settings.seed)
    return {"n_w": ex.n_w["p50"], "s_w": ex.s_w["p50"]}


def _deniability_tables(df: pd.DataFrame, names: dict) -> str:
    """Markdown tables of the median N_w and S_w by target (word spaces), or nothing."""
    if "n_w" not in df:
        return ""
    words = df.dropna(subset=["n_w"])
    out = ""
    for column, what in (("n_w", f"N_w, times a word is kept in {DENIABILITY_DRAWS} uses"),
                         ("s_w", f"S_w, distinct outputs of a word in {DENIABILITY_DRAWS} uses")):
        table = words.pivot_table(index="target_eps_tight", columns="mechanism",
                                  values=column).rename(columns=names)
        out += (f"\nMedian over the words of {what} (Feyisetan et al. 2020):\n\n"
                + table.to_markdown(floatfmt=".4g") + "\n")
    return out


def _infinite_level_row(space: MetricSpace, name: str, t: float, settings: _PointSettings,
                        t0: float) -> dict | None:
    """The row of a scoped family (:mod:`mdp.families.scoped`) whose ``eps_tight`` on the whole
    space is infinite: no epsilon reaches a finite target, so it is built once at the target
    as its own epsilon and measured, the row saying so (None for every other family)."""
    family, params = variant_of(name)
    if get(family).guarantee != "scoped":
        return None
    from ..registry import build

    mech = build(family, space, t, rng=settings.seed, threads=settings.threads, **params)
    if np.isfinite(mech.eps_tight(settings.delta)):
        return None
    return {"mechanism": name, "target_eps_tight": t, "eps_tight": np.inf, "epsilon": t,
            "loss_q": mech.loss(settings.q), "loss_max": mech.loss(), "builds": 1,
            "seconds": time.perf_counter() - t0, "guarantee": "scoped", "error": "",
            "note": (f"eps_tight on the space is infinite ({mech.stats['privacy']['what']}); "
                     "built at epsilon = the target"),
            **_deniability_columns(mech, settings)}


def _calibrated_point(space: MetricSpace, name: str, t: float, settings: _PointSettings,
                      on_build=None, chain: dict | None = None) -> dict:
    """The row of one (family, target): calibrated, measured, saved with ``keep``; a point that
    fails is a row with ``guarantee = "failed"`` and the reason (the rest of the curve stands).

    ``chain``: a family that takes ``sweep`` (the LP families) continues the sweep kept in
    ``chain[name]`` (its builds at the family's previous targets, :class:`Sweep`)."""
    t0 = time.perf_counter()
    family, params = variant_of(name)
    if params:
        params = {**params, "prior": settings.prior}
    if chain is not None and "sweep" in get(family).params:
        params = {**params, "sweep": chain.setdefault(name, Sweep())}
    try:
        scoped = _infinite_level_row(space, name, t, settings, t0)
        if scoped is not None:
            return scoped
        mech = calibrate(family, space, t, delta=settings.delta, rng=settings.seed,
                         on_build=on_build, threads=settings.threads, **params)
        extra = {} if settings.prior is None else prior_columns(mech, settings.prior)
    except (RuntimeError, ValueError) as exc:
        # an LP the solver could not finish, a refused matrix: recorded with its reason
        return {"mechanism": name, "target_eps_tight": t, "eps_tight": np.nan,
                "epsilon": np.nan, "loss_q": np.nan, "loss_max": np.nan, "builds": 0,
                "seconds": time.perf_counter() - t0, "guarantee": "failed", "error": str(exc)}
    cal = mech.stats["calibration"]
    file = ""
    if settings.keep is not None:
        file = str(mech.save(settings.keep / f"{name}_eps-tight-{t:g}.npz"))
    return {"mechanism": name, "target_eps_tight": t, "eps_tight": cal["eps_tight"],
            "epsilon": mech.epsilon, "loss_q": mech.loss(settings.q), "loss_max": mech.loss(),
            "builds": cal["builds"], "seconds": time.perf_counter() - t0,
            "guarantee": mech.stats["privacy"].get("guarantee", "matrix"), "error": "",
            "file": file, **extra, **_deniability_columns(mech, settings)}


def _warn_failed(row: dict) -> None:
    if row["guarantee"] == "failed":
        warnings.warn(f"{row['mechanism']} at eps_tight {row['target_eps_tight']:g} failed: "
                      f"{row['error']}", stacklevel=4)


def _calibrated_rows(space: MetricSpace, bar, status: _Status, settings: _PointSettings
                     ) -> list[dict]:
    """One row per (family, target) of ``bar``'s tasks, in this process; the bar (and
    ``status``) say which build is running."""
    rows = []
    chain: dict = {}
    for name, t in bar:
        status.now = f"{name} at eps_tight {t:g}"
        bar.set_postfix_str(f"{name} at {t:g}", refresh=False)

        def on_build(builds: int, eps: float, level: float, name=name, t=t) -> None:
            status.now = f"{name} at eps_tight {t:g}, build {builds} (eps_tight {level:.4g})"
            bar.set_postfix_str(f"{name} at {t:g}: build {builds}, eps_tight {level:.4g}")

        rows.append(_calibrated_point(space, name, t, settings, on_build, chain))
        _warn_failed(rows[-1])
        status.done += 1
    for sweep in chain.values():
        sweep.clear()
    return rows


def _chains(tasks: list) -> list[tuple[str, list[tuple[int, float]]]]:
    """The cluster's tasks: the targets of a family that takes ``sweep`` as one chain (in
    the order of ``tasks``, each build starting from the one before, as a local run does), every
    other point on its own; ``(name, [(index in tasks, target), ...])``."""
    chains: dict[str, list] = {}
    out = []
    for k, (name, t) in enumerate(tasks):
        if "sweep" in get(variant_of(name)[0]).params:
            if name not in chains:
                chains[name] = []
                out.append((name, chains[name]))
            chains[name].append((k, t))
        else:
            out.append((name, [(k, t)]))
    return out


def _calibrated_chain(space: MetricSpace, name: str, points: list, settings: _PointSettings
                      ) -> list[dict]:
    """The rows of ``points`` (``(index, target)``) of one family, in order, chained."""
    chain: dict = {}
    rows = [_calibrated_point(space, name, t, settings, chain=chain) for _, t in points]
    for sweep in chain.values():
        sweep.clear()
    return rows


def _cluster_rows(space: MetricSpace, tasks: list, bar, status: _Status,
                  settings: _PointSettings, scheduler) -> list[dict]:
    """The same rows computed on a Dask cluster (``scheduler``: an address or a
    ``distributed.Client``), tasks as :func:`_chains`; rows in the order of ``tasks``."""
    try:
        from distributed import Client, as_completed
    except ImportError:  # pragma: no cover - depends on the environment
        raise ParameterError("--scheduler needs the optional extra 'dask': pip install "
                             "'mdp-toolkit[dask]'") from None
    own = isinstance(scheduler, str)
    try:
        client = Client(scheduler) if own else scheduler
    except (OSError, TimeoutError, ValueError) as exc:
        raise ParameterError(f"scheduler {scheduler!r}: cannot connect ({exc})") from None
    if not isinstance(client, Client):
        raise ParameterTypeError(f"scheduler must be an address 'tcp://HOST:PORT' or a "
                                 f"distributed.Client, got {type(scheduler).__name__}")
    try:
        shared = client.scatter(space, broadcast=True)
        futures = {client.submit(_calibrated_chain, shared, name, points, settings, pure=False):
                   [k for k, _ in points] for name, points in _chains(tasks)}
        rows: list = [None] * len(tasks)
        status.now = f"{len(tasks)} points on the cluster"
        for fut in as_completed(futures):
            for k, row in zip(futures[fut], fut.result(), strict=True):
                rows[k] = row
                _warn_failed(row)
                status.done += 1
                bar.update(1)
        return rows
    finally:
        if own:
            client.close()


def _below_the_bound(df: pd.DataFrame) -> list[tuple]:
    """``(family, target, L_q, L, bound)`` wherever a family's ``L_q`` lies below the lower bound
    (which bounds the worst-case loss ``L``)."""
    bounds = df[df["mechanism"] == "lower_bound"].set_index("target_eps_tight")["loss_q"]
    out = []
    for r in df[~df["mechanism"].isin(["lower_bound", "uniform"])].itertuples():
        b = bounds.get(r.target_eps_tight)
        if b is not None and np.isfinite(r.loss_q) and r.loss_q < b:
            out.append((r.mechanism, r.target_eps_tight, r.loss_q, r.loss_max, b))
    return out


def plot_curves(df: pd.DataFrame, path: str | Path, *, title: str = "", q: float = 0.95,
                delta: float = 1e-3, unit: str | None = None) -> Path:
    """PNG in the paper's Figure 1 layout: L_q versus eps_tight, one line per mechanism.

    ``unit`` names the unit of distance (``"km"`` for haversine spaces); None: "unit of
    distance"."""
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
            g = g[np.isfinite(g["eps_tight"].to_numpy(dtype=float))]
            if len(g):
                ax.plot(g["eps_tight"], g["loss_q"], marker="o", ms=3.5, label=display_name(name))
    targets = df["target_eps_tight"].to_numpy(dtype=float)
    if targets.size and targets.min() > 0 and targets.max() / targets.min() > 10:
        ax.set_xscale("log")  # the informative part is the low-eps end
    ax.set_xlabel(rf"$\epsilon_{{tight}}$ ($\delta$ = {delta:g}) (per {unit or 'unit of distance'})")
    ax.set_ylabel(rf"$L_{{{q:g}}}$ (expected distance{', ' + unit if unit else ''})")
    return finish_and_save(fig, ax, title, path)


def run_curves(space_spec: str | None = None, mechanisms: list[str] | None = None, eps_tight=None, *,
               metric: str | None = None, delta: float = 1e-3, q: float = 0.95,
               out_dir: str | Path = DEFAULT_OUT_DIR,
               seed: int = 0, progress: bool = True, threads=None,
               costs: CostModel = DEFAULT_COSTS, max_memory: int | None = None,
               keep: str | Path | None = None, prior=None,
               privacy: str = "eps-tight", scheduler=None) -> pd.DataFrame:
    """``mdp curves``: compute, write ``curves.csv`` / ``curves.md`` / ``curves.png``, print a table.

    ``threads``: every build's thread knob (:func:`loss_curves`). A run that ``costs``
    (:mod:`mdp.runtime.estimate`) puts above ``LONG_WORK_SECONDS`` is announced on stderr with its
    estimate before it starts. ``max_memory`` (bytes; None: half the machine's memory) limits
    the space's arrays and every family's estimated peak memory (``peak_bytes`` of the
    registry), both checked before any work (:class:`~mdp.errors.ResourceLimitError`).

    The printed summary and ``curves.md`` list the families that ran, those left out (with the
    reason: not applicable, or too costly for the space's size by default) and every failed
    point (family, target and the error); failed points are also rows of ``curves.csv`` with
    ``guarantee = "failed"`` and the message in ``error``.

    A space without a distance matrix (``glove:full``) goes to
    :func:`mdp.curves.scale.run_scale_curves`: vocabulary mode, ``L_q`` estimated with a
    confidence interval against the analytic epsilon (``eps_tight`` targets are then epsilons).

    ``prior`` (``"uniform"``, ``"counts:FILE"``, ``FILE`` or a :class:`~mdp.prior.Prior`;
    :func:`mdp.prior.load_prior`) adds the measures under it (:func:`loss_curves`);
    ``privacy="adversary-error"`` (uniform prior when none is given) plots the expected loss
    against the optimal attacker's error instead of ``L_q`` against ``eps_tight``.
    ``scheduler``: run the points on a Dask cluster (:func:`loss_curves`).
    """
    spec = space_spec or DEFAULT_SPACE
    t0 = time.perf_counter()
    if privacy not in PRIVACY_AXES:
        raise ParameterError(f"privacy must be one of {PRIVACY_AXES}, got {privacy!r}")
    if eps_tight is not None:           # a bad target is the first thing said, before any folder
        eps_tight = [check_positive(t, "eps_tight target") for t in eps_tight]
    # the default folder (results/curves) is created with its parents, a folder the user named
    # only if its parent exists; either after the inputs are read, before any build
    space = load_space(spec, metric=metric, max_memory=max_memory)
    if isinstance(space, VectorSpace):
        if prior is not None or privacy != "eps-tight":
            raise ParameterError("--prior and --privacy adversary-error need a space with a "
                                 "distance matrix (the attack is computed on the matrices)")
    elif prior is not None or privacy == "adversary-error":
        # a bad prior file is refused before the output folder is made
        prior = load_prior(prior, space.n, labels=space.labels)
    out = output_directory(out_dir, parents=Path(out_dir) == Path(DEFAULT_OUT_DIR))
    if isinstance(space, VectorSpace):
        return run_scale_curves(space, spec, mechanisms, eps_tight, q=q, out_dir=out,
                                seed=seed)
    ran, left_out = plan_families(space, mechanisms)
    for name in ran:
        entry = get(variant_of(name)[0])
        if entry.peak_bytes is not None:
            check_memory(entry.peak_bytes(space.n, entry.validate_params({})),
                         f"{entry.display_name} on n = {space.n:,} points", max_memory)
    n_targets = len(default_targets(space)) if eps_tight is None else len(eps_tight)
    estimate = curves_estimate(ran, space.n, n_targets, costs=costs)
    total = sum(estimate.values(), start=Estimate(0.0, 0.0))
    if total.high > LONG_WORK_SECONDS:
        parts = ", ".join(f"{name} {e.describe().split(' (x')[0]}" for name, e in estimate.items())
        print(f"mdp curves: estimated {total.describe()} for n = {space.n} points and "
              f"{n_targets} target(s) ({parts}); "
              + ("a progress bar follows" if progress else
                 f"a line every {HEARTBEAT_SECONDS:.0f} s says where it is"),
              file=sys.stderr, flush=True)
    df = loss_curves(space, ran, eps_tight, delta=delta, q=q, seed=seed, progress=progress,
                     threads=threads, heartbeat=HEARTBEAT_SECONDS, keep=keep, prior=prior,
                     scheduler=scheduler)
    atomic_write_text(out / "curves.csv", df.to_csv(index=False))
    names = {key: display_name(key) for key in df["mechanism"].unique()
             if key not in ("uniform", "lower_bound")}
    table = df.pivot_table(index="target_eps_tight", columns="mechanism", values="loss_q")
    table = table.rename(columns=names)
    failed = df[df["guarantee"] == "failed"] if "guarantee" in df else df.iloc[:0]
    summary = [f"Space {spec}: n = {space.n}, metric {space.metric}.", "",
               "Families built: " + (", ".join(f"{names[n]} ({n})" for n in names) or "none") + "."]
    if prior is not None:
        summary += ["", f"Prior: {prior.source} (entropy {prior.entropy_bits():.3g} bits); each "
                        "mechanism is also measured under it: expected loss, the optimal "
                        "attacker's expected error, and the same for its Bayes-optimal remap."]
    if left_out:
        summary += ["", "Left out:"] + [f"- {n}: {why}" for n, why in left_out.items()]
    if len(failed):
        summary += ["", f"Failed points ({len(failed)}):"] + [
            f"- {names.get(r.mechanism, r.mechanism)} at eps_tight {r.target_eps_tight:g}: {r.error}"
            for r in failed.itertuples()]
    if "note" in df:
        noted = df[df["note"].fillna("").astype(str) != ""].drop_duplicates("mechanism")
        summary += ["", "Not metric DP on the whole space:"] + [
            f"- {names.get(r.mechanism, r.mechanism)}: {r.note}" for r in noted.itertuples()]
    below = _below_the_bound(df)
    if below:
        summary += ["", f"Note: the lower bound is on the worst-case loss L, not on L_{q:g}; "
                        f"an L_{q:g} below it is no contradiction: " + "; ".join(
                            f"{names.get(m, m)} at {t:g}: L_{q:g} {lq:.4g}, L {lm:.4g} >= bound "
                            f"{b:.4g}" for m, t, lq, lm, b in below[:6])
                    + (f" (and {len(below) - 6} more)" if len(below) > 6 else "") + "."]
    summary_text = "\n".join(summary)
    atomic_write_text(out / "curves.md", summary_text + "\n\n" + f"L_{q:g} by eps_tight target "
                      f"(delta = {delta:g}):\n\n" + table.to_markdown(floatfmt=".4g") + "\n"
                      + _deniability_tables(df, names))
    unit = "km" if space.metric == "haversine" else None
    if privacy == "adversary-error":
        plot_tradeoff(df, out / "curves.png", unit=unit,
                      title=f"{Path(spec).name} (n = {space.n}), prior: {prior.source}")
        table = df[df["mechanism"] != "lower_bound"].pivot_table(
            index="target_eps_tight", columns="mechanism",
            values=["expected_loss", "adversary_error"]).rename(columns=names)
    else:
        plot_curves(df, out / "curves.png", title=f"{spec} (n={space.n})", q=q, delta=delta,
                    unit=unit)
    if prior is not None:
        atomic_write_text(out / "curves.md", (out / "curves.md").read_text() + "\nUnder the prior "
                          f"({prior.source}): expected loss / optimal attacker's error by "
                          "target:\n\n" + df[df["mechanism"] != "lower_bound"].pivot_table(
                              index="target_eps_tight", columns="mechanism",
                              values=["expected_loss", "adversary_error"]).rename(
                              columns=names).to_markdown(floatfmt=".4g") + "\n")
    print(summary_text)
    print()
    print(table.round(4).to_string())
    if "n_w" in df:
        print(_deniability_tables(df, names))
    print(f"wrote {out / 'curves.csv'}, {out / 'curves.md'}, {out / 'curves.png'} "
          f"in {time.perf_counter() - t0:.1f} s")
    return df
