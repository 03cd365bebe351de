"""BLAS threads of the row-block interior point method: seconds per iteration against the thread count.

The dense step of ConstOPTMech's row-block method (:mod:`mdp.families.constopt.ipm`) factorises an
``(n + 1)``-square matrix per iteration. :func:`mdp.lp.dense.blas_threads` runs its BLAS on
:func:`mdp.lp.dense.default_blas_threads` threads: the physical cores, at most
``MAX_BLAS_THREADS``, less one below a dense side of ``SERIAL_BLAS_BELOW``. This benchmark
measures each count on the machine it runs on, so the rule can be checked there.

Usage::

    python benchmarks/blas_threads.py --sizes 500 1000 2000 --threads 1 2
    python benchmarks/blas_threads.py --sizes 500 1000 1500 2000 3000 --threads 1 2 4 8 16

For each size ``n`` (the ``n`` most popular Geolife cells when the shared data are found, else
``n`` uniform random points in a square of the same median distance), the relaxation of
ConstOPTMech's LP (r = 10, lambda = 0.1, ``e = eps / 2`` with ``eps`` = 0.5 per km) is solved by
the row-block method for ``--iterations`` iterations under each thread count (``default``: the
rule of :func:`~mdp.lp.dense.default_blas_threads`). Printed: the median seconds of an iteration
after the first two (which include start-up), per count, and the fastest count.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import pandas as pd

import mdp.lp
from mdp.errors import SolverError
from mdp.families.constopt import nn_replacement
from mdp.families.constopt.ipm import ConstOptLP, solve_row_block_ipm
from mdp.lp import dense


def points(n: int) -> tuple[np.ndarray, str]:
    """Distances (km) of ``n`` Geolife cells, or of ``n`` random points where the data are absent."""
    try:
        from lp_scaling import geolife_space

        return geolife_space(n).distances, "geolife"
    except Exception:  # noqa: BLE001 -- no shared data here: a synthetic space of the same scale
        rng = np.random.default_rng(0)
        X = rng.uniform(0.0, 12.0, size=(n, 2))
        return np.sqrt(((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)), "uniform"


def per_iteration(lp: ConstOptLP, threads: int | None, iterations: int) -> float:
    """Median seconds of iterations 3.. of the row-block method under ``threads`` (None: the rule)."""
    stamps: list[float] = []
    mdp.lp.set_threads(threads)
    try:
        solve_row_block_ipm(lp, max_iter=iterations, tol=1e-300,
                            on_iteration=lambda d: stamps.append(d["seconds"]))
    except SolverError:
        pass                                  # max_iter reached: the iterations were timed
    finally:
        mdp.lp.set_threads(None)
    steps = np.diff(stamps)
    return float(np.median(steps[2:] if len(steps) > 4 else steps))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[500, 1000, 1500, 2000])
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    p.add_argument("--iterations", type=int, default=12)
    p.add_argument("--csv", default=None, help="also write the table here")
    a = p.parse_args()
    os.environ.setdefault("MDP_DEVICE", "cpu")
    print(f"logical cores: {os.cpu_count()}, physical: {dense._physical_cores()}; default threads: "
          + ", ".join(f"n = {n}: {dense.default_blas_threads(n + 1)}" for n in a.sizes), flush=True)
    rows = []
    for n in a.sizes:
        D, kind = points(n)
        lp = ConstOptLP(D, 0.25, nn_replacement(D, 10), 0.1)
        for threads in [None, *a.threads]:
            t = time.perf_counter()
            s = per_iteration(lp, threads, a.iterations)
            label = "default" if threads is None else str(threads)
            rows.append({"n": n, "space": kind, "threads": label, "s/iteration": s})
            print(f"n {n:5d} ({kind}) threads {label:>7}: {s:.4f} s/iteration "
                  f"({time.perf_counter() - t:.1f} s)", flush=True)
    df = pd.DataFrame(rows)
    table = df.pivot(index="n", columns="threads", values="s/iteration")
    table["fastest"] = table.drop(columns="default").idxmin(axis=1)
    print(table.to_markdown(floatfmt=".4f"))
    if a.csv:
        df.to_csv(a.csv, index=False)


if __name__ == "__main__":
    main()
