"""Time exact eps_tight (delta = 1e-3 and pure) for n = 100, 200, 400.

Run: python benchmarks/eps_tight.py [--sizes 100,200,400] [--repeats 3]
Prints the best of ``repeats`` wall-clock times per size.
"""

import argparse
import time

import mdp
from text import load_glove, sample_vocabulary


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="100,200,400")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    emb = load_glove()
    print(f"{'n':>5} {'eps_tight(1e-3) s':>18} {'pure eps s':>11} {'value':>10}")
    for n in [int(x) for x in args.sizes.split(",")]:
        space = sample_vocabulary(emb, n, rng=0)
        mech = mdp.build("exponential", space, 2.0)
        times, pure = [], []
        for _ in range(args.repeats):
            t = time.perf_counter()
            value = mech.eps_tight(1e-3)
            times.append(time.perf_counter() - t)
            t = time.perf_counter()
            mech.eps_tight(0.0)
            pure.append(time.perf_counter() - t)
        print(f"{n:>5} {min(times):>18.3f} {min(pure):>11.3f} {value:>10.5f}")


if __name__ == "__main__":
    main()
