"""Time the pieces of ``mdp curves --mechanisms exponential`` on an embedded GloVe space.

For each size: the space (``glove:N:0``), one build of the exponential mechanism with its
privacy certification, one exact ``eps_tight`` at delta = 1e-3, and the whole
``mdp curves --space glove:N --mechanisms exponential --eps-tight 1`` run, with the process's
peak resident memory after each size.

Run: python benchmarks/curves_scaling.py [--sizes 500 1000 2000] [--curves]
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time

import mdp
from mdp.curves.loss import run_curves
from mdp.spaces.specs import load_space


def _peak_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[500, 1000, 2000])
    ap.add_argument("--curves", action="store_true", help="also time the whole mdp curves run")
    args = ap.parse_args()
    print(f"{'n':>6} {'space s':>8} {'build+certify s':>16} {'eps_tight s':>12} "
          f"{'curves s':>9} {'peak GiB':>9}")
    for n in args.sizes:
        t = time.perf_counter()
        space = load_space(f"glove:{n}:0")
        t_space = time.perf_counter() - t
        t = time.perf_counter()
        mech = mdp.build("exponential", space, epsilon=1.0, mode="matrix")
        t_build = time.perf_counter() - t
        t = time.perf_counter()
        mech.eps_tight(1e-3)
        t_eps = time.perf_counter() - t
        t_curves = float("nan")
        del mech, space                   # the curves run loads and holds its own
        if args.curves:
            with tempfile.TemporaryDirectory() as out:
                t = time.perf_counter()
                run_curves(f"glove:{n}:0", ["exponential"], [1.0], out_dir=out, progress=False)
                t_curves = time.perf_counter() - t
        print(f"{n:>6} {t_space:>8.2f} {t_build:>16.2f} {t_eps:>12.2f} {t_curves:>9.1f} "
              f"{_peak_gib():>9.2f}", flush=True)


if __name__ == "__main__":
    main()
