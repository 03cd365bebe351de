"""OPTMech's curve at three targets against one build, as a user meets them (fresh processes).

For each space (a 150-point lat/lon city box, clustered points, a jittered grid; seeds of this
script's own, not those the defaults were tuned on) the points are written to a CSV as a user
has them, and three fresh processes are timed:

* ``mdp build --mechanism optimal --epsilon T2`` at the middle target;
* ``mdp curves --mechanisms optimal --eps-tight T1 T2 T3`` (the targets of
  :func:`mdp.curves.loss.default_targets` with ``k = 3``, or ``--spacing``: ``T2 / s, T2, T2 s``);
* ``mdp.calibrate("optimal", space, T2)`` at ``delta = 1e-3`` (the curves' default).

Printed: one Markdown row per space with the seconds and the ratios to the build.
``--python`` runs another checkout's interpreter side by side (e.g. ``PYTHONPATH=... python``).

Run: python benchmarks/curves_sweep.py [--n 150] [--spaces city clustered grid] [--spacing 2]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

SEED = 4242


def _points(kind: str, n: int) -> tuple[np.ndarray, str]:
    rng = np.random.default_rng([SEED, n, len(kind)])
    if kind == "city":
        # a box of about 9 x 9 km around Porto, degrees
        return np.c_[rng.uniform(41.12, 41.20, n), rng.uniform(-8.68, -8.57, n)], "haversine"
    if kind == "clustered":
        centres = rng.uniform(0.0, 20.0, size=(5, 2))
        return centres[rng.integers(0, 5, n)] + rng.normal(0.0, 1.0, size=(n, 2)), "euclidean"
    side = int(np.ceil(np.sqrt(n)))
    grid = np.stack(np.divmod(np.arange(n), side), axis=1).astype(float)
    return grid + rng.uniform(-0.3, 0.3, size=(n, 2)), "euclidean"


def _timed(cmd: list[str], env: dict) -> float:
    t = time.perf_counter()
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{out.stderr[-2000:]}")
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=150)
    ap.add_argument("--spaces", nargs="+", default=["city", "clustered", "grid"],
                    choices=["city", "clustered", "grid"])
    ap.add_argument("--spacing", type=float, default=None,
                    help="targets T2 / s, T2, T2 s around the default middle (default: the "
                         "three default targets)")
    ap.add_argument("--python", default=sys.executable, help="interpreter to time")
    ap.add_argument("--pythonpath", default=None, help="PYTHONPATH of the timed processes")
    args = ap.parse_args()
    env = dict(os.environ)
    if args.pythonpath:
        env["PYTHONPATH"] = args.pythonpath
    import mdp
    from mdp.curves.loss import default_targets

    cli = [args.python, "-c", "import sys; from mdp.cli.main import main; sys.exit(main())"]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for kind in args.spaces:
            pts, metric = _points(kind, args.n)
            csv = Path(tmp) / f"{kind}.csv"
            pd.DataFrame(pts, columns=["a", "b"]).to_csv(csv, index=False)
            space = mdp.MetricSpace.from_points(pts, metric=metric)
            t1, t2, t3 = (default_targets(space, 3) if args.spacing is None else
                          np.array([1 / args.spacing, 1.0, args.spacing])
                          * default_targets(space, 3)[1])
            targets = [f"{t:.4g}" for t in (t1, t2, t3)]
            build = _timed(cli + ["build", "--space", str(csv), "--metric", metric, "--mechanism",
                                  "optimal", "--epsilon", targets[1], "-o",
                                  str(Path(tmp) / "m.npz")], env)
            curves = _timed(cli + ["curves", "--space", str(csv), "--metric", metric,
                                   "--mechanisms", "optimal", "--eps-tight", *targets,
                                   "--no-progress", "-o", str(Path(tmp) / f"curves-{kind}")], env)
            calibrate = _timed([args.python, "-c",
                                "import mdp, sys; from mdp.spaces.specs import load_space; "
                                f"s = load_space({str(csv)!r}, metric={metric!r}); "
                                f"mdp.calibrate('optimal', s, {targets[1]}, delta=1e-3)"], env)
            rows.append({"space": f"{kind} n={args.n}", "targets": " ".join(targets),
                         "build s": build, "curves s": curves, "curves / build": curves / build,
                         "calibrate s": calibrate, "calibrate / build": calibrate / build})
            print(pd.DataFrame(rows[-1:]).to_markdown(index=False, floatfmt=".2f"), flush=True)
    print()
    print(pd.DataFrame(rows).to_markdown(index=False, floatfmt=".2f"))
    print(f"\nCPUs {os.cpu_count()}, load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
