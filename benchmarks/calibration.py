"""Builds and seconds of ``mdp.calibrate`` per family, experiment space and target eps_tight.

Run: python benchmarks/calibration.py [--spaces geolife-50 glove-50 fasttext-50]
     [--mechanisms spanner constopt exponential] [--targets 0.1 0.5 1.0 2.0]

Prints, per calibration, the number of builds, the largest epsilon built over the returned one
(a build far above the answer is the slowest one for an LP family), the returned eps_tight over
the target, and the wall-clock seconds. ConstOPTMech is calibrated at delta = 1e-3 (as in the
experiments), the other families at delta = 0. Needs the data of ``../shared/data`` (or
``MDP_DATA_DIR``) for the experiment spaces.
"""

import argparse
import time

import mdp
from experiments.spaces import experiment_space


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--spaces", nargs="+", default=["geolife-50", "glove-50", "fasttext-50"])
    ap.add_argument("--mechanisms", nargs="+", default=["spanner", "constopt", "exponential"])
    ap.add_argument("--targets", nargs="+", type=float, default=[0.1, 0.5, 1.0, 2.0])
    args = ap.parse_args()
    print(f"{'space':<13} {'mechanism':<12} {'target':>6} {'builds':>6} {'max eps/eps':>11} "
          f"{'eps_tight/target':>16} {'seconds':>8}")
    total_builds, total_seconds = 0, 0.0
    for name in args.spaces:
        space = experiment_space(name, 0)
        for mech in args.mechanisms:
            delta = 1e-3 if mech == "constopt" else 0.0
            for target in args.targets:
                t = time.perf_counter()
                m = mdp.calibrate(mech, space, target, delta=delta, rng=0)
                seconds = time.perf_counter() - t
                trials = m.stats["calibration"]["trials"]
                highest = max(eps for eps, _ in trials) / m.epsilon
                total_builds, total_seconds = total_builds + len(trials), total_seconds + seconds
                print(f"{name:<13} {mech:<12} {target:>6g} {len(trials):>6} {highest:>11.2f} "
                      f"{m.eps_tight(delta) / target:>16.5f} {seconds:>8.1f}", flush=True)
    print(f"total: {total_builds} builds, {total_seconds:.1f} s")


if __name__ == "__main__":
    main()
