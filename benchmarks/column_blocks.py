"""One iteration of the column-block interior point method, step by step (SpannerMech's full LP).

Times, side by side in one process, the parts of one factorisation of
:class:`mdp.worst_case.column_blocks._BlockFactor` with dense blocks (building the blocks, LAPACK ``potrf``
and ``potri``, packing the inverses, adding them into the Schur complement's sums in batches) and
one application of the ``n``
inverses to a vector per block: BLAS ``dspmv`` on the packed triangles (the method's) against
NumPy's batched ``matmul`` on full inverses (the layout before the packed one). Blocks have the
spanner's sparsity on the Geolife cells (stretch 1.5) and random positive weights; the timings do
not depend on the values.

Usage::

    python benchmarks/column_blocks.py --sizes 200 500 --repeats 3
    python benchmarks/column_blocks.py --sizes 500 1000 --devices cpu tree --repeats 2
    python benchmarks/column_blocks.py --sizes 500 1000 --devices gpu --repeats 3

Prints a table of seconds per iteration part (the minimum over repeats) and the ratio of the two
applications. The full inverses need ``8 n^3`` bytes (1 GB at n = 500).

``--devices tree`` times whole factorisations (``factor``) of the CPU method with the blocks
inverted densely (``dense``) and along the nested dissection of the pair graph
(:mod:`mdp.lp.dissection`, the points in its order), side by side, with the dissection's flop
ratio and levels. ``--devices gpu`` adds whole factorisations and applications of
:class:`mdp.worst_case.batched_blocks.BatchedBlockFactor` on CuPy's GPU (``factor``: seconds of one
``factor`` call, the Schur complement's transfer included; ``apply``: one application, transfers
included); ``cpu`` is the packed method's parts, with ``factor`` their sum.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
from scipy.linalg import lapack

from mdp.families.spanner import greedy_spanner
from mdp.io import shared_data_dir
from mdp.lp.dense import SERIAL_BLAS_BELOW, blas_threads
from mdp.worst_case.block_kernels import (
    accumulate_packed,
    fill_block_lower,
    pack_lower,
    packed_size,
    unpack_symmetric,
)
from mdp.worst_case.column_blocks import BATCH, ColumnBlockLP, _BlockFactor


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
        pack_lower(c.T, packed[w])
        t4 = time.perf_counter()
        parts["build"] += t1 - t0
        parts["potrf"] += t2 - t1
        parts["potri"] += t3 - t2
        parts["pack"] += t4 - t3
    t0 = time.perf_counter()
    for w0 in range(0, n, BATCH):
        accumulate_packed(packed[w0:w0 + BATCH], lp.DT[w0:w0 + BATCH], *sums)
    parts["sums"] = time.perf_counter() - t0
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


def time_batched(lp: ColumnBlockLP, rng: np.random.Generator) -> dict:
    """Seconds of one ``factor`` and one ``_apply`` of the GPU's batched factor."""
    from mdp.lp.arrays import cupy_backend
    from mdp.worst_case.batched_blocks import BatchedBlockFactor

    n = lp.n
    dB, wx = rng.uniform(0.1, 10, (n, lp.m)), rng.uniform(0.1, 10, (n, n))
    fac = BatchedBlockFactor(lp, cupy_backend())
    t0 = time.perf_counter()
    fac.factor(dB, wx, rng.random(n))
    t1 = time.perf_counter()
    fac._apply(rng.standard_normal((n, n)))
    t2 = time.perf_counter()
    del fac
    return dict(factor=t1 - t0, apply=t2 - t1)


def time_tree(lp: ColumnBlockLP, rng: np.random.Generator) -> dict:
    """Seconds of one whole ``factor`` of the CPU method, dense and along the dissection."""
    from mdp.lp.dissection import nested_dissection
    from mdp.worst_case.column_blocks import _levels

    n = lp.n
    t0 = time.perf_counter()
    tree = nested_dissection(n, lp.rj, lp.ri)
    t1 = time.perf_counter()
    lp_t = lp.permuted(tree)
    dB, wx = rng.uniform(0.1, 10, (n, lp.m)), rng.uniform(0.1, 10, (n, n))
    dL = rng.random(n)
    out = dict(dissect=t1 - t0, levels=_levels(tree), flop_ratio=n ** 3 / tree.flops())
    for name, fac in (("dense", _BlockFactor(lp_t)), ("tree", _BlockFactor(lp_t, tree))):
        t0 = time.perf_counter()
        fac.factor(dB, wx, dL)
        out[name] = time.perf_counter() - t0
        del fac
    out["dense / tree"] = out["dense"] / out["tree"]
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[200, 500])
    p.add_argument("--repeats", type=int, default=3, help="report the min over repeats")
    p.add_argument("--devices", nargs="+", default=["cpu"], choices=["cpu", "tree", "gpu"])
    args = p.parse_args()
    rng = np.random.default_rng(0)
    rows = []
    with blas_threads(SERIAL_BLAS_BELOW):
        for n in args.sizes:
            lp = geolife_lp(n)
            for device in args.devices:
                if device == "cpu":
                    def run(lp=lp):
                        return time_parts(lp, rng)
                elif device == "tree":
                    def run(lp=lp):
                        return time_tree(lp, rng)
                else:
                    def run(lp=lp):
                        return time_batched(lp, rng)
                run()                      # compile the kernels and touch the memory once
                runs = [run() for _ in range(args.repeats)]
                row = {"n": n, "device": device, "pair_rows": lp.m,
                       **{k: min(r[k] for r in runs) for k in runs[0]}}
                if device == "cpu":
                    row["factor"] = sum(row[k] for k in ("build", "potrf", "potri", "pack", "sums"))
                    row["apply_full / packed"] = row["apply_full"] / row["apply_packed"]
                rows.append(row)
                print(row, flush=True)
    print(pd.DataFrame(rows).round(4).to_markdown(index=False))


if __name__ == "__main__":
    main()
