"""The ``mdp`` command line.

Subcommands: ``list``, ``build``, ``privatize``, ``eps``, ``lower-bound``, ``curves``,
``experiment``, and the spatial commands ``heatmap`` and ``heatsource`` whose code lives beside
their algorithms (see :data:`EXTERNAL_COMMANDS`).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys

import numpy as np

#: Subcommands implemented in other modules: name -> module exposing
#: ``configure_parser(parser)`` and ``run_cli(args) -> int``.
EXTERNAL_COMMANDS: dict[str, tuple[str, str]] = {
    "heatmap": ("geo.heatmap_command", "private heatmap of your own point file (seed ghazi2023)"),
    "heatsource": ("geo.heatsource_command", "calibrate and recover heat sources (seed gilbert-mcmillan)"),
}


def _parse_param(text: str):
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"--param must be key=value, got {text!r}")
    key, value = text.split("=", 1)
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError:
        parsed = value
    return key.strip(), parsed


def _float_list(text: str) -> list[float]:
    try:
        return [float(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from None


def cmd_list(args) -> int:
    from .registry import get, mechanisms

    for name, desc in mechanisms().items():
        params = get(name).params
        ps = ", ".join(f"{k}={v!r}" for k, v in params.items())
        print(f"{name:22s} {desc}\n{'':22s}   module: {get(name).builder.__module__}"
              + (f"; params: {ps}" if ps else ""))
    return 0


def cmd_build(args) -> int:
    from .registry import build
    from .spaces import load_space

    space = load_space(args.space)
    params = dict(args.param or [])
    mech = build(args.mechanism, space, args.epsilon, rng=args.seed, **params)
    mech.save(args.output)
    print(repr(mech))
    print(f"saved to {args.output}")
    return 0


def _read_inputs(args) -> list[str]:
    if args.inputs == ["-"] or not args.inputs:
        return [line.rstrip("\n") for line in sys.stdin if line.strip()]
    return list(args.inputs)


def cmd_privatize(args) -> int:
    from .mechanism import load
    from .privatize import privatize_inputs

    mech = load(args.file)
    for line in privatize_inputs(mech, _read_inputs(args), rng=args.seed):
        print(line)
    return 0


def cmd_eps(args) -> int:
    from .mechanism import load

    mech = load(args.file)
    print(f"eps_tight(delta={args.delta:g}) = {mech.eps_tight(args.delta):.10g}"
          f"  (claimed epsilon {mech.epsilon:g}, mechanism {mech.name!r}, n={mech.space.n})")
    return 0


def cmd_lower_bound(args) -> int:
    from .lower_bound import lower_bound
    from .spaces import load_space

    space = load_space(args.space)
    lb = lower_bound(space, args.epsilon)
    print(repr(lb))
    return 0


def cmd_curves(args) -> int:
    from .curves import run_curves

    run_curves(space_spec=args.space, mechanisms=args.mechanisms, eps_tight=args.eps_tight,
               delta=args.delta, q=args.q, out_dir=args.output, seed=args.seed,
               progress=not args.no_progress)
    return 0


def cmd_experiment(args) -> int:
    from experiments import EXPERIMENTS, experiment_parser, load_experiment

    if args.list or not args.name:
        for name in sorted(EXPERIMENTS):
            try:
                desc = load_experiment(name).DESCRIPTION
            except ValueError:
                desc = "(not available)"
            print(f"{name:14s} {desc}")
        return 0
    module = load_experiment(args.name)
    module.main(experiment_parser(args.name).parse_args(args.rest))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mdp", description="Metric differential privacy toolkit")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("list", help="list registered mechanisms")
    p.set_defaults(func=cmd_list)

    space_help = ("metric space: glove:N[:SEED] (embedded GloVe slice), glove:N:SEED:full (400k GloVe,"
                  " extra 'glove'), fasttext:N[:SEED] (fastText trained on gensim's Lee corpus),"
                  " FILE.csv (coordinates),"
                  " FILE.npy (distance matrix), geolife:PATH:N, checkins:PATH:N")
    p = sub.add_parser("build", help="build a verified mechanism and save it")
    p.add_argument("--space", required=True, help=space_help)
    p.add_argument("--mechanism", required=True)
    p.add_argument("--epsilon", required=True, type=float)
    p.add_argument("--param", action="append", type=_parse_param, metavar="KEY=VALUE")
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("-o", "--output", required=True)
    p.set_defaults(func=cmd_build)

    p = sub.add_parser("privatize", help="privatize inputs (labels, indices, text or lat,lon lines)")
    p.add_argument("file")
    p.add_argument("inputs", nargs="*", help="inputs, or - (default) to read lines from stdin")
    p.add_argument("--seed", type=int, default=None)
    p.set_defaults(func=cmd_privatize)

    p = sub.add_parser("eps", help="exact eps_tight of a saved mechanism")
    p.add_argument("file")
    p.add_argument("--delta", type=float, default=0.0)
    p.set_defaults(func=cmd_eps)

    p = sub.add_parser("lower-bound", help="packing lower bound on the loss of any eps-mDP mechanism")
    p.add_argument("--space", required=True, help=space_help)
    p.add_argument("--epsilon", required=True, type=float)
    p.set_defaults(func=cmd_lower_bound)

    p = sub.add_parser("curves", help="loss versus eps_tight of every applicable mechanism (seed Fig. 1)")
    p.add_argument("--space", default=None, help=space_help + " (default: the embedded glove:50:0)")
    p.add_argument("--mechanisms", nargs="+", default=None)
    p.add_argument("--eps-tight", type=_float_list, default=None, help="comma-separated targets")
    p.add_argument("--delta", type=float, default=1e-3)
    p.add_argument("--q", type=float, default=0.95)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-progress", action="store_true")
    p.add_argument("-o", "--output", default="results/curves")
    p.set_defaults(func=cmd_curves)

    p = sub.add_parser("experiment", help="run a reproducible experiment (mdp experiment --list)")
    p.add_argument("name", nargs="?")
    p.add_argument("--list", action="store_true")
    p.add_argument("rest", nargs=argparse.REMAINDER)
    p.set_defaults(func=cmd_experiment)

    for name, (module, helptext) in EXTERNAL_COMMANDS.items():
        p = sub.add_parser(name, help=helptext)
        p.set_defaults(func=None, external=module, external_name=name)
        p.add_argument("rest", nargs=argparse.REMAINDER)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in EXTERNAL_COMMANDS:
        # Hand every remaining argument (options included) to the command's own parser;
        # argparse.REMAINDER would swallow leading options into the wrong parser.
        args = argparse.Namespace(func=None, external=EXTERNAL_COMMANDS[argv[0]][0],
                                  external_name=argv[0], rest=argv[1:])
    else:
        args = parser.parse_args(argv)
    try:
        if getattr(args, "external", None):
            try:
                module = importlib.import_module(args.external)
            except ModuleNotFoundError:
                parser.error(f"command {args.external_name!r} is not available in this version")
            sub = argparse.ArgumentParser(prog=f"mdp {args.external_name}")
            module.configure_parser(sub)
            return int(module.run_cli(sub.parse_args(args.rest)) or 0)
        return int(args.func(args) or 0)
    except (ValueError, TypeError, KeyError, FileNotFoundError, RuntimeError) as exc:
        msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        print(f"mdp: error: {msg}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    np.set_printoptions(precision=4)
    sys.exit(main())
