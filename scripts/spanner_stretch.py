"""SpannerMech's worst-case loss against its stretch, at a fixed ``eps_tight``.

Why SpannerMech is the weakest LP mechanism on GloVe but beats ConstOPTMech on the Geolife cells
(``docs/experiments/loss-curves.md``): its privacy rows sit on the spanner's edges at level
``eps / stretch``. Where the greedy spanner keeps almost every pair (a spread-out embedding, in
which few triples are nearly collinear), the mechanism is close to OPTMech at ``eps / stretch``,
while its ``eps_tight`` is set by the few pairs that are joined through a path; where the
spanner is sparse, most pairs are chained and the budget is used.

Run::

    MDP_DATA_DIR=../shared/data python scripts/spanner_stretch.py glove-50 --eps-tight 1.0 1.5
    MDP_DATA_DIR=../shared/data python scripts/spanner_stretch.py geolife-50 --eps-tight 0.5

Prints one Markdown table (pandas) per space: the spanner's edges per point and share of all
pairs, the calibrated epsilon, the worst-case loss ``L`` and its ratio to OPTMech's (stretch 1).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from experiments.spaces import experiment_space
from mdp.curves.calibration import calibrate
from mdp.families.spanner import greedy_spanner


def sweep(space_name: str, targets: list[float], stretches: list[float], delta: float) -> pd.DataFrame:
    space = experiment_space(space_name, 0)
    n = space.n
    rows = []
    for target in targets:
        optimal_loss = None
        for stretch in stretches:
            t0 = time.perf_counter()
            edges = len(greedy_spanner(space.distances, stretch))
            mech = calibrate("spanner", space, target, delta=delta, stretch=stretch)
            loss = mech.loss()
            if stretch == 1.0:
                optimal_loss = loss
            rows.append({"eps_tight": target, "stretch": stretch,
                         "edges per point": edges / n,
                         "share of pairs": edges / (n * (n - 1) / 2),
                         "epsilon": mech.epsilon, "L": loss,
                         "L / OPTMech": np.nan if optimal_loss is None else loss / optimal_loss,
                         "seconds": time.perf_counter() - t0})
    return pd.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("spaces", nargs="+", help="experiment spaces FAMILY-N, e.g. glove-50")
    parser.add_argument("--eps-tight", type=float, nargs="+", default=[1.0])
    parser.add_argument("--stretches", type=float, nargs="+", default=[1.0, 1.1, 1.25, 1.5, 2.0],
                        help="the first should be 1 (OPTMech's LP), the reference of 'L / OPTMech'")
    parser.add_argument("--delta", type=float, default=1e-3)
    args = parser.parse_args()
    for name in args.spaces:
        table = sweep(name, args.eps_tight, args.stretches, args.delta)
        print(f"\n## {name}\n")
        print(table.to_markdown(index=False, floatfmt=".3f"))


if __name__ == "__main__":
    main()
