"""The ``mdp`` command line.

Built-in subcommands: ``list``, ``build``, ``privatize``, ``eps``, ``lower-bound``, ``curves``.
Other packages add theirs as :class:`~mdp.plugins.Command` plugins in the ``mdp.commands``
entry-point group (``heatmap`` and ``heatsource`` from ``geo``, ``experiment`` from
``experiments``), so this module imports nothing above ``mdp``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import re
import sys
import time
import warnings

from .. import __version__
from ..curves import DEFAULT_OUT_DIR
from ..errors import MDPError, ParameterError, WeakPrivacyWarning
from ..plugins import COMMANDS
from ..runtime.resources import memory_limit
from .args import MEMORY_HELP, PRIOR_HELP, ArgumentParser, choose_metric, memory_size

# The commands import the numerical modules when they run, not here: building the parser (and
# so `mdp --help` and every argument error) imports neither NumPy nor the mechanism families.


def _parse_param(text: str):
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"--param must be key=value, got {text!r}")
    key, value = text.split("=", 1)
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError:
        parsed = value
    return key.strip(), parsed


def _threads(text: str) -> int | str:
    from ..runtime.threads import check_threads

    try:
        return check_threads(text if text == "auto" else int(text))
    except (ValueError, MDPError):
        raise argparse.ArgumentTypeError(
            f"expected 'auto' or a positive integer, got {text!r}") from None


THREADS_HELP = ("threads of the numeric pools (HiGHS, BLAS, numba): 'auto' (default) sizes each "
                "from the CPUs other processes leave free and its step's size; N fixes every pool")


def _length_km(text: str) -> float:
    """``500m``, ``0.5km``, ``2 km`` -> km (a unit is required: metres or kilometres)."""
    t = text.strip().lower().replace(" ", "")
    for unit, scale in (("km", 1.0), ("m", 1e-3)):
        if t.endswith(unit):
            try:
                value = float(t[:-len(unit)]) * scale
            except ValueError:
                break
            if math.isfinite(value) and value > 0:
                return value
            break
    raise argparse.ArgumentTypeError(f"expected a positive length with a unit (500m, 2km), got {text!r}")


_LEVEL = re.compile(r"^\s*(?:(ln|log)\s*\(?\s*(?P<arg>[^()\s]+)\s*\)?|(?:e\s*\^|exp\s*\()\s*"
                    r"(?P<power>[^()\s]+?)\s*\)?|(?P<number>[^\s]+))\s*$", re.IGNORECASE)


def _level(text: str) -> float:
    """``1.39``, ``ln 4``, ``ln(4)``, ``e^1.4``, ``exp(1.4)`` -> a positive level (Location Guard
    states its levels as ``ln 2``, ``ln 4``, ``ln 6``)."""
    m = _LEVEL.match(text)
    try:
        if m is None:
            raise ValueError
        if m.group("arg") is not None:
            value = math.log(float(m.group("arg")))
        elif m.group("power") is not None:
            value = math.exp(float(m.group("power")))
        else:
            value = float(m.group("number"))
    except (ValueError, OverflowError):
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"expected a positive level such as 1.39, 'ln 4' or "
                                         f"'e^1.4', got {text!r}")
    return value


def _build_epsilon(args, space) -> float:
    """``--epsilon``, or ``--level L --radius R`` on a km space: ``L / R`` (Location Guard)."""
    if args.radius is None and args.level is None:
        if args.epsilon is None:
            raise ParameterError("give --epsilon, or --radius and --level for a location space")
        return args.epsilon
    if args.epsilon is not None or args.radius is None or args.level is None:
        raise ParameterError("give either --epsilon or both --radius and --level "
                         f"(got --epsilon {args.epsilon}, --radius {args.radius}, --level {args.level})")
    if space.metric != "haversine":
        raise ParameterError(f"--radius/--level need a location space (--metric haversine, km), got "
                         f"metric {space.metric!r}; use --epsilon")
    if not (math.isfinite(args.level) and args.level > 0):
        raise ParameterError(f"--level must be a positive number, got {args.level}")
    return args.level / args.radius


def cmd_list(args) -> int:
    from ..registry import get, mechanisms, vocabulary_class

    for name, desc in mechanisms().items():
        entry = get(name)
        vocabulary = vocabulary_class(name) is not None
        if args.vocabulary and not vocabulary:
            continue
        print(f"{name:22s} {entry.display_name}: {desc}\n{'':22s}   module: {entry.builder.__module__}"
              f"\n{'':22s}   guarantee: {entry.guarantee}; vocabulary mode: "
              f"{'yes' if vocabulary else 'no'}")
        for key, default in entry.params.items():
            rule = entry.rules.get(key)
            info = f"{rule.describe()}; {rule.help}" if rule is not None else ""
            print(f"{'':22s}   --param {key}=... (default {default!r}) {info}".rstrip())
    return 0


def _metric(args) -> str | None:
    """The metric of ``--space`` as the user wrote the file (a ``lat,lon`` header means
    haversine unless ``--metric`` says otherwise); an inferred choice is said on stderr."""
    choice = choose_metric(args.space, args.metric)
    if choice.message():
        print(f"mdp: {choice.message()}", file=sys.stderr)
    return choice.metric


def _space(args):
    from ..spaces.specs import load_space

    metric = _metric(args)
    return load_space(args.space, metric=metric, max_memory=args.max_memory), metric


def cmd_build(args) -> int:
    from ..privacy.weak_epsilon import weak_privacy_message
    from ..registry import build, vocabulary_class
    from ..runtime.estimate import HEARTBEAT_SECONDS, LONG_WORK_SECONDS, build_estimate
    from ..vocabulary.mode import plan_mode

    space, _ = _space(args)
    epsilon = _build_epsilon(args, space)
    weak = weak_privacy_message(space, epsilon)
    if weak:
        warnings.warn(weak, WeakPrivacyWarning, stacklevel=1)
    try:
        mode = plan_mode(space, args.mode, family=args.mechanism,
                         has_vocabulary=vocabulary_class(args.mechanism) is not None).mode
    except MDPError:
        mode = "matrix"              # the build itself says what is wrong with the request
    estimate = build_estimate(args.mechanism, space.n, mode=mode)
    bar = not args.no_progress and sys.stderr.isatty()
    if estimate.high > LONG_WORK_SECONDS:
        print(f"mdp build: estimated {estimate.describe()} for {args.mechanism} on "
              f"n = {space.n} points" + ("" if bar else f"; a line every {HEARTBEAT_SECONDS:.0f} "
                                                         "s says it is still running"),
              file=sys.stderr, flush=True)
    params = dict(args.param or [])
    if args.prior is not None:
        # the prior of objective=expected (the family refuses it with the worst-case objective)
        from ..prior import load_prior

        params["prior"] = load_prior(args.prior, space.n, labels=space.labels)
    with _lp_progress(bar), _still_running(None if bar or estimate.high <= LONG_WORK_SECONDS
                                           else HEARTBEAT_SECONDS, args.mechanism, space.n):
        mech = build(args.mechanism, space, epsilon, rng=args.seed,
                     mode=args.mode, max_memory=args.max_memory, **params)
    mech.save(args.output)
    print(repr(mech))
    if args.verbose:
        report = getattr(mech, "report", None)
        if report is None:
            print("(no build plan: this family solves no LP)")
        else:
            for line in report.describe():
                print(line)
    print(f"saved to {args.output}")
    return 0


@contextlib.contextmanager
def _still_running(seconds: float | None, family: str, n: int):
    """A line on stderr every ``seconds`` while a build runs without a progress line."""
    if seconds is None:
        yield
        return
    import threading

    stop = threading.Event()
    t0 = time.perf_counter()

    def beat():
        while not stop.wait(seconds):
            minutes = (time.perf_counter() - t0) / 60
            print(f"mdp build: {family} on n = {n} points still running after {minutes:.0f} min",
                  file=sys.stderr, flush=True)

    thread = threading.Thread(target=beat, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


@contextlib.contextmanager
def _lp_progress(show: bool):
    """One stderr status line per LP round (round, rows, gap to the bound, elapsed) while building."""
    if not show:
        yield
        return
    import numpy as np

    from ..lp import progress

    t0 = time.perf_counter()
    width = [0]

    def line(event):
        if event.method is not None:        # from inside one solve (HiGHS shares no objective)
            gap = (f", gap {event.gap:.2e} (iterate's)" if np.isfinite(event.gap) else "")
            msg = (f"LP solve {event.round} ({event.method}), iteration {event.iteration}: "
                   f"{event.rows:,} rows{gap}, {time.perf_counter() - t0:.0f} s")
        else:
            where = (f"LP round {event.round}" if event.iteration is None
                     else f"LP round {event.round}, iteration {event.iteration}")
            if event.violated and not event.certified:
                # a relaxation's objective: its gap to the bound is no distance to the optimum
                status = (f"relaxation objective {event.objective:.8g}, "
                          f"{event.violated:,} rows still violated")
            else:
                gap = f"{event.gap:.2e}" if np.isfinite(event.gap) else "n/a"
                kind = "certified gap" if event.certified else "gap"
                status = f"objective {event.objective:.8g}, {kind} {gap}"
            msg = f"{where}: {event.rows:,} rows, {status}, {time.perf_counter() - t0:.0f} s"
        width[0] = max(width[0], len(msg))          # a shorter line overwrites a longer one
        print(f"\r{msg.ljust(width[0])}", end="", file=sys.stderr, flush=True)

    try:
        with progress(line):
            yield
    finally:
        print(file=sys.stderr)


def _read_inputs(args) -> list[str]:
    """Input lines: each positional input is a line, else every line of stdin (blank ones too)."""
    if args.inputs == ["-"] or not args.inputs:
        return [line.rstrip("\r\n") for line in sys.stdin]
    return list(args.inputs)


def cmd_privatize(args) -> int:
    from ..loading import load
    from ..release import SEED_WARNING, output_line
    from .input_lines import privatize_lines

    if args.users is not None:
        # a whole user,lat,lon file: the location package's per-user release (a plugin command)
        if "privatize-users" not in COMMANDS.names():
            raise ValueError("--users needs the geo package's privatize-users command, which is "
                             "not installed")
        return int(COMMANDS.get("privatize-users").run(args) or 0)
    if (args.budget is not None or args.output is not None or args.window is not None
            or args.ledger is not None or args.strict):
        raise ParameterError("--budget, --window, --ledger, --strict and --output go with "
                             "--users FILE.csv")
    mech = load(args.file, max_memory=args.max_memory)
    lines = privatize_lines(mech, _read_inputs(args), rng=args.seed, snap=args.snap,
                            max_snap_km=args.max_snap_km, oov=args.oov,
                            keep_words=_keep_words(args.keep_words))
    if mech.space.metric == "haversine" and not args.snap and sys.stderr.isatty():
        print("mdp: lat,lon inputs farther than --max-snap-km from every point of the space "
              "are refused (--snap accepts them)", file=sys.stderr)
    if args.seed is not None:
        print(SEED_WARNING, file=sys.stderr)
    for line in lines:
        print(output_line(line))
    return 0


def _keep_words(spec: str | None):
    """``--keep-words``: ``stop_words``, or a file of one word per line (blank lines skipped);
    a file that cannot be read is named, its words never echoed."""
    if spec is None or spec == "stop_words":
        return spec
    from ..errors import FileFormatError

    try:
        with open(spec, encoding="utf-8") as fh:
            return [w.strip() for w in fh if w.strip()]
    except OSError as exc:
        raise FileFormatError(spec, f"cannot read the --keep-words file ({exc.strerror})") from None
    except UnicodeDecodeError:
        raise FileFormatError(spec, "the --keep-words file is not UTF-8 text") from None


def cmd_explain(args) -> int:
    """What a saved mechanism's epsilon means: in metres for a location mechanism (the
    ``mdp.explainers`` plugins), as plausible deniability for a word mechanism."""
    from ..loading import load
    from ..plugins import EXPLAINERS
    from ..privacy.deniability import explain_words

    mech = load(args.file, max_memory=args.max_memory)
    for _, explainer in EXPLAINERS.items():
        if explainer.accepts(mech):
            ex = explainer.explain(mech)
            break
    else:
        if getattr(mech.space, "labels", None) is None:
            raise ParameterError("mdp explain speaks of location mechanisms (a haversine lat,lon "
                                 "space) and word mechanisms (a space of words); this one's "
                                 f"space is neither (metric {mech.space.metric!r}, no labels)")
        ex = explain_words(mech, draws=args.draws, rng=0)
    record, text = ex.record(), ex.text()
    privacy = mech.stats.get("privacy", {})
    if privacy.get("guarantee") == "scoped" and not privacy.get("covers_the_space"):
        # a guarantee among groups of inputs only: said before anything else is read into it
        scope = (f"Its guarantee is not metric DP over the whole space: {privacy['what']} "
                 f"({privacy['scopes']} group(s) certified; {privacy['unprotected_inputs']} "
                 f"input(s) without a guarantee; eps_tight over the space: "
                 f"{mech.eps_tight():.4g}).")
        record["scope"] = {k: privacy[k] for k in ("what", "scopes", "unprotected_inputs")}
        text = scope + "\n" + text
    if args.prior is not None:
        line, figures = _attacker_line(mech, args.prior)
        record["under_prior"] = figures
        text += "\n" + line
    print(json.dumps(record) if args.json else text)
    return 0


def _attacker_line(mech, spec: str) -> tuple[str, dict]:
    """``mdp explain --prior``: what the Bayes-optimal attacker who knows the prior achieves."""
    from ..prior import load_prior, measure

    if getattr(mech, "kind", "matrix") != "matrix":
        raise ParameterError("--prior needs a mechanism with a matrix (the attack is computed on "
                             "it); this one is in vocabulary mode")
    prior = load_prior(spec, mech.space.n, labels=mech.space.labels)
    rep = measure(mech, prior)
    km = mech.space.metric == "haversine"

    def length(x: float) -> str:
        if not km:
            return f"{x:.4g} (units of distance)"
        return f"{x * 1000:.0f} m" if x < 1 else f"{x:.3g} km"

    line = (f"under the prior ({prior.source}): an attacker who knows where your users usually "
            f"are guesses within {length(rep.adversary_error)} on average (the Bayes-optimal "
            f"guess; Shokri et al. 2011) and is right outright {100 * rep.bayes_vulnerability:.3g}% "
            f"of the time ({100 * rep.prior_vulnerability:.3g}% without seeing the output); the "
            f"expected displacement under the same prior is {length(rep.expected_loss)}")
    return line, rep.as_dict()


def cmd_ledger(args) -> int:
    """``mdp ledger show FILE``: every user's total and number of releases."""
    from pathlib import Path

    from ..errors import MissingFileError
    from ..privacy.ledger import PrivacyLedger

    if not Path(args.file).is_file():
        raise MissingFileError(f"no ledger at {args.file}")
    ledger = PrivacyLedger(args.file)
    entries = ledger.entries(args.user or None)
    if args.json:
        print(json.dumps({"ledger": str(args.file), "units": ledger.units(),
                          "releases": ledger.runs(),
                          "users": [e.__dict__ for e in entries]}))
        return 0
    unit = ", ".join(ledger.units()) or "no releases yet"
    print(f"{args.file}: {ledger.runs()} releases, {len(entries)} users, epsilon {unit}")
    for e in entries[:args.top] if args.top else entries:
        print(f"  {e.user}: {e.spent:g} spent in {e.releases} releases (last {e.last})")
    if args.top and len(entries) > args.top:
        print(f"  ... and {len(entries) - args.top} more users (--top 0 lists all)")
    return 0


def cmd_eps(args) -> int:
    from ..loading import load

    mech = load(args.file, max_memory=args.max_memory)
    print(f"eps_tight(delta={args.delta:g}) = {mech.eps_tight(args.delta):.10g}"
          f"  (claimed epsilon {mech.epsilon:g}, mechanism {mech.name!r}, n={mech.space.n})")
    return 0


def cmd_lower_bound(args) -> int:
    from ..lower_bound import lower_bound

    space, _ = _space(args)
    lb = lower_bound(space, args.epsilon, delta=args.delta)
    record = {"space": args.space, "n": space.n, "metric": space.metric, "epsilon": lb.epsilon,
              "delta": lb.delta, "lower_bound": lb.value, "packing_size": lb.c,
              "radius": lb.r, "max_centre_distance": lb.Q, "worst_point": lb.w}
    if args.json:
        print(json.dumps(record))
        return 0
    unit = " km" if space.metric == "haversine" else " (units of the space's distance)"
    print(f"Lower bound on the worst-case loss of any ({lb.epsilon:g}, {lb.delta:g})-mDP mechanism\n"
          f"on {args.space} (n = {space.n}, metric {space.metric}):\n"
          f"  expected distance >= {lb.value:.6g}{unit}\n"
          f"  from a packing of {lb.c} balls of radius {lb.r:.6g} (Imola et al. 2022, Theorem 3)")
    return 0


def cmd_curves(args) -> int:
    from ..curves.loss import run_curves

    run_curves(space_spec=args.space, metric=_metric(args), mechanisms=args.mechanisms, eps_tight=args.eps_tight,
               delta=args.delta, q=args.q, out_dir=args.output, seed=args.seed,
               progress=not args.no_progress, max_memory=args.max_memory, keep=args.keep,
               prior=args.prior, privacy=args.privacy, scheduler=args.scheduler)
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The ``mdp`` parser: built-in subcommands, then the plugin commands."""

    parser = ArgumentParser(prog="mdp", description="Metric differential privacy toolkit")
    parser.add_argument("--version", action="version", version=f"mdp-toolkit {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("list", help="list registered mechanisms with their parameters")
    p.add_argument("--vocabulary", action="store_true",
                   help="only the families with a vocabulary mode (no n x n matrix)")
    p.set_defaults(func=cmd_list)

    space_help = ("metric space: FILE.csv (one point per line; optional header and label column),"
                  " FILE.npy (n x n distance matrix), or a plugin spec: glove:N[:SEED] (embedded"
                  " GloVe slice), glove:N:SEED:full (400k GloVe, extra 'glove'), glove:full[:N] (every word of the 400k GloVe, or its N most frequent: vocabulary mode), fasttext:N[:SEED]"
                  " (fastText on gensim's Lee corpus), geolife:PATH:N, checkins:PATH:N")
    seed_help = "random seed (default: fresh OS entropy)"
    metric_help = ("metric of the points of FILE.csv: euclidean (default) or haversine (lat,lon "
                   "in degrees, distances and epsilon per km); any scipy cdist name")
    p = sub.add_parser("build", help="build a verified mechanism and save it")
    p.add_argument("--space", required=True, help=space_help)
    p.add_argument("--metric", default=None, help=metric_help)
    p.add_argument("--mechanism", required=True, help="family name (see mdp list)")
    p.add_argument("--epsilon", type=float, default=None,
                   help="pure mDP level per unit of distance (> 0)")
    p.add_argument("--radius", type=_length_km, default=None,
                   help="location spaces: with --level, epsilon = level / radius (500m, 2km)")
    p.add_argument("--level", type=_level, default=None,
                   help="location spaces: privacy level within --radius: a number, 'ln 4' "
                        "(= 1.39, Location Guard's medium level) or 'e^1.4'")
    p.add_argument("--param", action="append", type=_parse_param, metavar="KEY=VALUE",
                   help="family parameter, repeatable; VALUE is JSON or a string (see mdp list)")
    p.add_argument("--prior", default=None, metavar="SPEC",
                   help="the prior of --param objective=expected (optimal, spanner): " + PRIOR_HELP)
    p.add_argument("--seed", type=int, default=None, help=seed_help)
    p.add_argument("--mode", choices=("auto", "matrix", "vocabulary"), default="auto",
                   help="matrix (certified n x n matrix) or vocabulary (madlib, exponential, "
                        "weighted_exponential without a matrix); auto: matrix up to 2,000 points")
    p.add_argument("-o", "--output", required=True, help="mechanism file to write (.npz)")
    p.add_argument("--no-progress", action="store_true",
                   help="no LP progress line (it is shown only when stderr is a terminal)")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="print the build's plan (method, solver, device, fallbacks, each with "
                        "its reason) and every attempt")
    p.add_argument("--threads", type=_threads, default=None, help=THREADS_HELP)
    p.add_argument("--max-memory", type=memory_size, default=None, metavar="SIZE", help=MEMORY_HELP)
    p.set_defaults(func=cmd_build)

    p = sub.add_parser("privatize", help="privatize inputs (labels, indices, text or lat,lon lines)")
    p.add_argument("file", help="mechanism file written by mdp build")
    p.add_argument("inputs", nargs="*", help="inputs, or - (default) to read lines from stdin")
    p.add_argument("--seed", type=int, default=None,
                   help="random seed: the output becomes reproducible by anyone who knows it "
                        "(tests and demos only; default: fresh OS entropy)")
    p.add_argument("--max-snap-km", type=float, default=None,
                   help="lat,lon inputs: refuse a location farther than this from every point "
                        "of the space (default: the space's largest nearest-neighbour distance)")
    p.add_argument("--snap", action="store_true",
                   help="lat,lon inputs: snap every location to its nearest point, however far")
    p.add_argument("--oov", choices=("error", "mask", "drop", "keep"), default=None,
                   help="text inputs: words not in the space (default: error; keep releases "
                        "them unprotected)")
    p.add_argument("--keep-words", default=None, metavar="stop_words|FILE",
                   help="text inputs: release these words unchanged, UNPROTECTED (warns): "
                        "'stop_words' (scikit-learn's English list, as CusText+ keeps them) or a "
                        "file of one word per line")
    p.add_argument("--users", default=None, metavar="FILE.csv",
                   help="a user,lat,lon[,time] file: one output per row with per-user accounting")
    p.add_argument("--budget", type=float, default=None,
                   help="with --users: largest total epsilon per user; reports beyond are refused")
    p.add_argument("--window", default=None, metavar="DURATION",
                   help="with --users: one draw per user and time window of the 'time' column "
                        "(1h, 30min, 1D, or a number in the column's units); default: every "
                        "report is a fresh draw")
    p.add_argument("--strict", action="store_true",
                   help="with --users: refuse the file when a location lies outside the "
                        "mechanism's area (default: leave such rows out and count them)")
    p.add_argument("--ledger", default=None, metavar="FILE",
                   help="with --users: privacy ledger (SQLite) keeping each user's spending "
                        "across runs; --budget then bounds the total")
    p.add_argument("-o", "--output", default=None, help="with --users: released CSV (default stdout)")
    p.add_argument("--max-memory", type=memory_size, default=None, metavar="SIZE", help=MEMORY_HELP)
    p.set_defaults(func=cmd_privatize)

    p = sub.add_parser("explain", help="what a mechanism's epsilon means: metres for locations, "
                       "how often a word is kept for words")
    p.add_argument("file", help="mechanism file written by mdp build")
    p.add_argument("--json", action="store_true", help="print the figures as one JSON record")
    p.add_argument("--draws", type=int, default=1000,
                   help="words: the uses k over which N_w and S_w count (default 1000)")
    p.add_argument("--prior", default=None, metavar="SPEC",
                   help="add what an optimal attacker who knows the prior infers: " + PRIOR_HELP)
    p.add_argument("--max-memory", type=memory_size, default=None, metavar="SIZE", help=MEMORY_HELP)
    p.set_defaults(func=cmd_explain)

    p = sub.add_parser("ledger", help="show what a privacy ledger holds (mdp privatize --ledger)")
    p.add_argument("action", choices=("show",), help="show: every user's total spending")
    p.add_argument("file", help="ledger file")
    p.add_argument("--user", nargs="+", default=None, metavar="NAME", help="only these users")
    p.add_argument("--top", type=int, default=20,
                   help="users listed, most spent first (default 20; 0: all)")
    p.add_argument("--json", action="store_true", help="print one JSON record")
    p.set_defaults(func=cmd_ledger)

    p = sub.add_parser("eps", help="exact eps_tight of a saved mechanism")
    p.add_argument("file", help="mechanism file written by mdp build")
    p.add_argument("--delta", type=float, default=0.0, help="delta of eps_tight (default 0: pure)")
    p.add_argument("--threads", type=_threads, default=None, help=THREADS_HELP)
    p.add_argument("--max-memory", type=memory_size, default=None, metavar="SIZE", help=MEMORY_HELP)
    p.set_defaults(func=cmd_eps)

    p = sub.add_parser("lower-bound", help="packing lower bound on the loss of any eps-mDP mechanism")
    p.add_argument("--space", required=True, help=space_help)
    p.add_argument("--metric", default=None, help=metric_help)
    p.add_argument("--epsilon", required=True, type=float, help="mDP level (> 0)")
    p.add_argument("--delta", type=float, default=0.0, help="delta of (eps, delta)-mDP (default 0)")
    p.add_argument("--json", action="store_true", help="print one JSON record")
    p.add_argument("--threads", type=_threads, default=None, help=THREADS_HELP)
    p.add_argument("--max-memory", type=memory_size, default=None, metavar="SIZE", help=MEMORY_HELP)
    p.set_defaults(func=cmd_lower_bound)

    p = sub.add_parser("curves", help="loss versus eps_tight of every applicable mechanism "
                       "(Imola et al. 2022, Figure 1)")
    p.add_argument("--space", default=None, help=space_help + " (default: the embedded glove:50:0)")
    p.add_argument("--metric", default=None, help=metric_help)
    p.add_argument("--mechanisms", nargs="+", default=None, metavar="NAME",
                   help="families to compare, separated by spaces or commas (default: every "
                        "applicable family cheap enough for the space's size; the output lists "
                        "those left out)")
    p.add_argument("--eps-tight", type=float, nargs="+", default=None, metavar="EPS",
                   help="eps_tight targets, separated by spaces or commas (default: 10 spanning "
                        "the space's scale)")
    p.add_argument("--delta", type=float, default=1e-3, help="delta of eps_tight (default 1e-3)")
    p.add_argument("--q", type=float, default=0.95, help="loss quantile L_q (default 0.95)")
    p.add_argument("--seed", type=int, default=0, help="random seed of randomised builds (default 0)")
    p.add_argument("--keep", default=None, metavar="DIR",
                   help="save every calibrated mechanism in DIR as FAMILY_eps-tight-T.npz "
                        "(ready for mdp privatize; listed in curves.csv's column file)")
    p.add_argument("--prior", default=None, metavar="SPEC",
                   help="measure every mechanism under a prior too: " + PRIOR_HELP)
    p.add_argument("--privacy", choices=("eps-tight", "adversary-error"), default="eps-tight",
                   help="x axis of the plot: the certified eps_tight (default), or the optimal "
                        "attacker's expected error under --prior (Shokri et al. 2012)")
    p.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="run the points on a Dask cluster, tcp://HOST:PORT (the extra 'dask'): "
                        "an LP family's targets as one task (its sweep), others point by point; "
                        "--keep must then be a folder the workers can write")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("-o", "--output", default=DEFAULT_OUT_DIR,
                   help=f"output directory (default {DEFAULT_OUT_DIR}; another one's parent must "
                        "exist)")
    p.add_argument("--threads", type=_threads, default=None, help=THREADS_HELP)
    p.add_argument("--max-memory", type=memory_size, default=None, metavar="SIZE", help=MEMORY_HELP)
    p.set_defaults(func=cmd_curves)

    for name in COMMANDS.names():
        try:
            command = COMMANDS.get(name)
        except ValueError as exc:  # a plugin whose optional dependencies are missing
            p = sub.add_parser(name, help=f"(not available: {exc})")
            p.set_defaults(func=None, plugin=None, unavailable=str(exc))
            continue
        p = sub.add_parser(name, help=command.help)
        command.configure_parser(p)
        p.set_defaults(func=None, plugin=command)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the ``mdp`` command; returns the exit code (2 with a one-line message on bad input)."""
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(argv)
    def show(message, category, filename, lineno, file=None, line=None):
        # user-facing warnings as one readable line; numerical ones are the toolkit's business
        if not issubclass(category, RuntimeWarning):
            print(f"mdp: warning: {message}", file=sys.stderr)

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("default")
            warnings.showwarning = show
            if getattr(args, "unavailable", None):
                raise ValueError(args.unavailable)
            from ..runtime.threads import use_threads

            with use_threads(getattr(args, "threads", None)), \
                    memory_limit(getattr(args, "max_memory", None)):
                if getattr(args, "plugin", None) is not None:
                    return int(args.plugin.run(args) or 0)
                return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("mdp: interrupted; nothing was written", file=sys.stderr)
        return 130
    except (MDPError, ValueError, TypeError, KeyError, OSError, RuntimeError) as exc:
        msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        msg = getattr(exc, "cli_message", None) or msg
        print(f"mdp: error: {msg}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
