"""One iteration of the column-block interior point method, step by step (SpannerMech's full LP).

Times, side by side in one process, the parts of one factorisation of
:class:`mdp.lp.column_blocks._BlockFactor` (building the blocks, LAPACK ``potrf`` and ``potri``,
packing the inverses while adding up the Schur complement) and one application of the ``n``
inverses to a vector per block: BLAS ``dspmv`` on the packed triangles (the method's) against
NumPy's batched ``matmul`` on full inverses (before the twentieth session). Blocks have the
spanner's sparsity on the Geolife cells (stretch 1.5) and random positive weights; the timings do
not depend on the values.

Usage::

    python benchmarks/column_blocks.py --sizes 200 500 --repeats 3

Prints a table of seconds per iteration part (the minimum over repeats) and the ratio of the two
applications. The full inverses need ``8 n^3`` bytes (1 GB at n = 500).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
from scipy.linalg import lapack

from mdp.families.spanner import greedy_spanner
from mdp.io import shared_data_dir
from mdp.lp._block_kernels import (
    fill_block_lower,
    pack_and_accumulate,
    packed_size,
    unpack_symmetric,
)
from mdp.lp.column_blocks import ColumnBlockLP, _BlockFactor
from mdp.lp.dense import SERIAL_BLAS_BELOW, blas_threads


def geolife_lp(n: int, eps: float = 0.5, stretch: float = 1.5) -> ColumnBlockLP:
    from geo.popular import popular_cells

    D = popular_cells(shared_data_dir() / "geolife_beijing_cells_0p005.npz", n=n).distances
    E = greedy_spanner(D, stretch)
    return ColumnBlockLP(D, np.r_[E[:, 0], E[:, 1]], np.r_[E[:, 1], E[:, 0]], eps / stretch)


def time_parts(lp: ColumnBlockLP, rng: np.random.Generator) -> dict:
    """Seconds of each part of one factorisation and of one application of the inverses."""
    n = lp.n
    dB, wx = rng.uniform(0.1, 10, (n, lp.m)), rng.uniform(0.1, 10, (n, n))
    block = np.empty((n, n), order="F")
    packed = np.empty((n, packed_size(n)))
    sums = [np.zeros(packed_size(n)) for _ in range(4)]
    parts = dict(build=0.0, potrf=0.0, potri=0.0, pack=0.0)
    for w in range(n):
        t0 = time.perf_counter()
        fill_block_lower(block, lp.ri, lp.rj, lp.cb, dB[w], wx[w])
        t1 = time.perf_counter()
        c, info = lapack.dpotrf(block, lower=1, overwrite_a=1, clean=0)
        t2 = time.perf_counter()
        c, info = lapack.dpotri(c, lower=1, overwrite_c=1)
        t3 = time.perf_counter()
        pack_and_accumulate(c.T, lp.DT[w], packed[w], *sums)
        t4 = time.perf_counter()
        parts["build"] += t1 - t0
        parts["potrf"] += t2 - t1
        parts["potri"] += t3 - t2
        parts["pack"] += t4 - t3
    fac = _BlockFactor(lp)
    fac.Kinv = packed
    R = rng.standard_normal((n, n))
    t0 = time.perf_counter()
    fac._apply(R)
    parts["apply_packed"] = time.perf_counter() - t0
    full = np.stack([unpack_symmetric(packed[w], n) for w in range(n)])
    t0 = time.perf_counter()
    np.matmul(full, R[:, :, None])
    parts["apply_full"] = time.perf_counter() - t0
    return parts


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[200, 500])
    p.add_argument("--repeats", type=int, default=3, help="report the min over repeats")
    args = p.parse_args()
    rng = np.random.default_rng(0)
    rows = []
    with blas_threads(SERIAL_BLAS_BELOW):
        for n in args.sizes:
            lp = geolife_lp(n)
            time_parts(lp, rng)            # compile the kernels and touch the memory once
            runs = [time_parts(lp, rng) for _ in range(args.repeats)]
            row = {"n": n, "pair_rows": lp.m, **{k: min(r[k] for r in runs) for k in runs[0]}}
            row["apply_full / packed"] = row["apply_full"] / row["apply_packed"]
            rows.append(row)
            print(row, flush=True)
    print(pd.DataFrame(rows).round(4).to_markdown(index=False))


if __name__ == "__main__":
    main()
