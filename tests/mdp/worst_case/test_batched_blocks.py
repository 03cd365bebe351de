"""The column-block method's batched factorisation (mdp.worst_case.batched_blocks): NumPy's backend against
the packed LAPACK path and independent solvers everywhere; CuPy's where a GPU is present."""

import dataclasses

import numpy as np
import pytest

import mdp
from mdp.errors import ParameterError
from mdp.families.optimal import OptimalTuning
from mdp.lp import LPError
from mdp.lp.arrays import cupy_backend, gpu_available, numpy_backend
from mdp.privacy.verification import certify
from mdp.worst_case import batched_blocks as bb
from mdp.worst_case import column_blocks as cb
from mdp.worst_case.block_kernels import unpack_symmetric
from mdp.worst_case.column_blocks import ColumnBlockLP, TripleBlockLP, solve_worst_case_triples
from tests.mdp.worst_case.test_block_rounds import random_triples, triples_optimum
from tests.mdp.worst_case.test_column_blocks import (
    SPACES,
    dense_blocks,
    solve_against_linprog,
    spanner_pairs,
)
from tests.support.reference_lp import optimal_loss_linprog

needs_gpu = pytest.mark.skipif(not gpu_available(), reason="no CUDA device for CuPy")


def spanner_lp(space, level, seed):
    """``(D, n, pu, pv, lp, dB, wx, dL_inv, rng)``: the spanner LP's column blocks on ``space``
    at ``level``, and random positive weights for one factorisation."""
    D, n = space.distances, space.n
    pu, pv = spanner_pairs(D)
    lp = ColumnBlockLP(D, pu, pv, level)
    rng = np.random.default_rng(seed)
    return (D, n, pu, pv, lp, rng.uniform(0.01, 100, (n, lp.m)), rng.uniform(0.01, 100, (n, n)),
            rng.random(n), rng)


@pytest.mark.parametrize("chunk_blocks", [1, 4, 100])
def test_numpy_batched_factor_equals_the_packed_factor(chunk_blocks):
    D, n, pu, pv, lp, dB, wx, dL_inv, rng = spanner_lp(SPACES[2], 0.9, 5)
    packed = cb._BlockFactor(lp)
    batched = bb.BatchedBlockFactor(lp, numpy_backend(),
                                    chunk_bytes=chunk_blocks * 4 * 8 * n * n)
    assert batched.chunk == min(n, chunk_blocks)
    for fac in (packed, batched):
        fac.factor(dB, wx, dL_inv)
    # every inverse against NumPy's inverse of the dense block
    inv = np.linalg.inv(dense_blocks(D, pu, pv, 0.9, dB, wx))
    assert np.allclose(batched.Kinv, inv, rtol=1e-9, atol=0)
    for w in (0, 11, n - 1):
        assert np.allclose(batched.Kinv[w], unpack_symmetric(packed.Kinv[w], n), rtol=1e-9)
    # the same Schur complement and Newton solves
    L1, L2 = np.tril(packed.cho[0]), np.tril(batched.cho[0])
    assert np.allclose(L2 @ L2.T, L1 @ L1.T, rtol=1e-10, atol=1e-12 * np.abs(L1).max() ** 2)
    assert np.allclose(batched.Se, packed.Se, rtol=1e-8)
    R = rng.normal(size=(n, n))
    assert np.allclose(batched._apply(R), packed._apply(R), rtol=1e-9, atol=1e-12)
    r, rE = rng.normal(size=(n, n)), rng.normal(size=n)
    for a, b in zip(batched.solve(r, rE, 0.3), packed.solve(r, rE, 0.3), strict=True):
        assert np.allclose(a, b, rtol=1e-8, atol=1e-10)


def triple_lp(space, eps, seed):
    """``(D, n, u, v, w, lp, dB, wx, dL_inv, rng)``: OPTMech's LP over random rows per column
    (each column its own rows), and random positive weights for one factorisation."""
    D, n = space.distances, space.n
    rng = np.random.default_rng(seed)
    u, v, w = random_triples(n, rng, share=0.3)
    lp = TripleBlockLP(D, u, v, w, eps)
    return (D, n, u, v, w, lp, rng.uniform(0.01, 100, lp.privacy_rows),
            rng.uniform(0.01, 100, (n, n)), rng.random(n), rng)


def dense_triple_blocks(D, eps, u, v, w, dB, wx):
    """Every column's block ``sum_r d_r b_r b_r^T + diag(wx[w])`` row by row, with ``b_r`` the
    row ``e_v - e^{-eps D_uv} e_u`` (``dB`` in :class:`TripleBlockLP`'s column order)."""
    n = D.shape[0]
    order = np.lexsort((u, v, w))
    K = np.array([np.diag(wx[c]) for c in range(n)])
    for r, (a, b, c) in enumerate(zip(u[order], v[order], w[order], strict=True)):
        row = np.zeros(n)
        row[b] += 1.0
        row[a] -= np.exp(-eps * D[a, b])
        K[c] += dB[r] * np.outer(row, row)
    return K


@pytest.mark.parametrize("chunk_blocks", [1, 3, 100])
def test_numpy_batched_factor_of_column_rows_equals_the_packed_factor(chunk_blocks):
    D, n, u, v, w, lp, dB, wx, dL_inv, rng = triple_lp(SPACES[2], 0.7, 8)
    packed = cb._BlockFactor(lp)
    batched = bb.BatchedBlockFactor(lp, numpy_backend(),
                                    chunk_bytes=chunk_blocks * 4 * 8 * n * n)
    for fac in (packed, batched):
        fac.factor(dB, wx, dL_inv)
    inv = np.linalg.inv(dense_triple_blocks(D, 0.7, u, v, w, dB, wx))
    assert np.allclose(batched.Kinv, inv, rtol=1e-9, atol=0)
    for col in (0, 5, n - 1):
        assert np.allclose(batched.Kinv[col], unpack_symmetric(packed.Kinv[col], n), rtol=1e-9)
    R = rng.normal(size=(n, n))
    assert np.allclose(batched._apply(R), packed._apply(R), rtol=1e-9, atol=1e-12)
    r, rE = rng.normal(size=(n, n)), rng.normal(size=n)
    for a, b in zip(batched.solve(r, rE, 0.3), packed.solve(r, rE, 0.3), strict=True):
        assert np.allclose(a, b, rtol=1e-8, atol=1e-10)


def test_entry_map_fills_the_dense_blocks():
    D, n, pu, pv, lp, dB, wx, _, _ = spanner_lp(SPACES[0], 2.0, 1)
    pos, C = bb._entry_map(lp)
    K = np.zeros((n, n * n))
    K[:, pos] = (C @ np.concatenate([dB, wx], axis=1).T).T
    assert np.allclose(K.reshape(n, n, n), dense_blocks(D, pu, pv, 2.0, dB, wx), rtol=1e-14)


def test_a_block_that_is_not_positive_definite_is_named():
    D, n, pu, pv, lp, dB, wx, dL_inv, _ = spanner_lp(SPACES[0], 0.5, 2)
    wx[7, 3] = -1e6
    fac = bb.BatchedBlockFactor(lp, numpy_backend(), chunk_bytes=3 * 4 * 8 * n * n)
    with pytest.raises(LPError, match="column 7"):
        fac.factor(dB, wx, dL_inv)


def fake_gpu(free_bytes=None, **kw):
    """Resources whose GPU is NumPy's backend, with ``free_bytes`` of device memory."""
    backend = numpy_backend()
    if free_bytes is not None:
        backend = dataclasses.replace(backend, free_bytes=lambda: free_bytes)
    return cb.BlockResources(gpu=backend, **kw)


@pytest.mark.parametrize("level", [0.05, 2.0])
def test_the_method_on_the_batched_path_matches_linprog(monkeypatch, level):
    monkeypatch.setenv("MDP_DEVICE", "gpu")
    D = SPACES[3].distances
    pu, pv = spanner_pairs(D)
    _, stats = solve_against_linprog(D, pu, pv, level, resources=fake_gpu())
    assert stats["device"] == "numpy"


@pytest.mark.parametrize("eps", [0.3, 2.0])
def test_the_triples_method_on_the_batched_path_matches_linprog(monkeypatch, eps):
    monkeypatch.setenv("MDP_DEVICE", "gpu")
    D = SPACES[1].distances
    u, v, w = random_triples(D.shape[0], np.random.default_rng(2), share=0.3)
    ref = triples_optimum(D, eps, u, v, w)
    M, stats = solve_worst_case_triples(D, u, v, w, eps, resources=fake_gpu())
    assert stats["device"] == "numpy"
    assert ref - 2e-5 * (1 + ref) <= stats["lower_bound"] <= ref + 1e-9
    assert stats["lp_objective"] == pytest.approx(ref, abs=2e-5 * (1 + ref))


def test_optmech_block_rounds_on_the_batched_path_are_exact_and_private(monkeypatch):
    monkeypatch.setenv("MDP_DEVICE", "gpu")
    space = SPACES[2]
    ref, _ = optimal_loss_linprog(space.distances, 1.5)
    mech = mdp.build("optimal", space, 1.5, method="blocks",
                     tuning=OptimalTuning(resources=fake_gpu()))
    st = mech.stats
    assert st["device"] == "numpy" and st["plan"]["solver"] == "blocks"
    assert st["lower_bound"] <= ref * (1 + 3e-7) and st["loss"] >= ref * (1 - 3e-7)
    assert st["loss"] == pytest.approx(ref, rel=1.1e-6)
    certify(mech.matrix, space.distances, 1.5, repair=False)


def test_device_choice_and_memory_rules(monkeypatch):
    monkeypatch.delenv("MDP_DEVICE", raising=False)
    no_gpu = cb.BlockResources(gpu=None)
    gpu_from_n = no_gpu.gpu_from_n
    assert cb.block_device(gpu_from_n, no_gpu) == "cpu"           # no GPU
    monkeypatch.setenv("MDP_DEVICE", "gpu")
    with pytest.raises(ParameterError, match="MDP_DEVICE=gpu"):
        cb.block_device(20, no_gpu)
    # a GPU with 8 n^3 bytes and a chunk free takes n from gpu_from_n under "auto"
    n = gpu_from_n
    gpu = fake_gpu(free_bytes=int(bb.batched_bytes(n) / bb.GPU_MEMORY_SHARE) + 1)
    monkeypatch.setenv("MDP_DEVICE", "auto")
    assert cb.block_device(n, gpu) == "gpu"
    assert cb.block_device(n - 1, gpu) == "cpu"
    assert cb.block_device(n + 10, gpu) == "cpu"                   # too little device memory
    assert cb.block_device(n - 1, dataclasses.replace(gpu, gpu_from_n=n - 1)) == "gpu"
    monkeypatch.setenv("MDP_DEVICE", "cpu")
    assert cb.block_device(n, gpu) == "cpu"
    # on neither device: None, and the method refuses with the sizes
    monkeypatch.setenv("MDP_DEVICE", "auto")
    tight = dataclasses.replace(gpu, max_block_bytes=cb.block_bytes(n))
    assert cb.block_device(n + 10, tight) is None and not cb.fits_in_memory(n + 10, tight)
    assert cb.fits_in_memory(n, tight)


def test_short_device_memory_falls_back_to_the_cpu():
    space = SPACES[0]
    D = space.distances
    pu, pv = spanner_pairs(D)
    lp = ColumnBlockLP(D, pu, pv, 0.5)
    short = fake_gpu(free_bytes=1000)
    with pytest.raises(MemoryError, match="GiB"):
        bb.BatchedBlockFactor(lp, short.gpu)
    assert cb._block_factor(lp, "gpu", resources=short).device == "cpu"
    with pytest.raises(LPError, match="GPU memory"):
        cb._block_factor(lp, "gpu", resources=dataclasses.replace(short, max_block_bytes=10))


def test_chunk_sizes():
    assert bb.chunk_size(1000) == 2 * 2 ** 30 // (32 * 10 ** 6) == 67
    assert bb.chunk_size(10, chunk_bytes=1) == 1
    assert bb.chunk_size(10, chunk_bytes=10 ** 9) == 10
    assert bb.batched_bytes(1000) == 8 * 10 ** 9 + 32 * 10 ** 6 * 67


@needs_gpu
def test_gpu_factor_equals_the_numpy_factor():
    D, n, pu, pv, lp, dB, wx, dL_inv, rng = spanner_lp(SPACES[4], 0.9, 3)
    ref = bb.BatchedBlockFactor(lp, numpy_backend())
    gpu = bb.BatchedBlockFactor(lp, cupy_backend(), chunk_bytes=7 * 4 * 8 * n * n)
    for fac in (ref, gpu):
        fac.factor(dB, wx, dL_inv)
    assert np.allclose(cupy_backend().to_host(gpu.Kinv), ref.Kinv, rtol=1e-9, atol=0)
    R = rng.normal(size=(n, n))
    assert np.allclose(gpu._apply(R), ref._apply(R), rtol=1e-9, atol=1e-12)
    r, rE = rng.normal(size=(n, n)), rng.normal(size=n)
    for a, b in zip(gpu.solve(r, rE, 0.3), ref.solve(r, rE, 0.3), strict=True):
        assert np.allclose(a, b, rtol=1e-8, atol=1e-10)
    wx[2, 0] = -1e6
    with pytest.raises(LPError, match="column 2"):
        gpu.factor(dB, wx, dL_inv)


@needs_gpu
@pytest.mark.parametrize("level", [0.05, 0.4, 8.0])
def test_gpu_method_matches_linprog(monkeypatch, level):
    monkeypatch.setenv("MDP_DEVICE", "gpu")
    D = SPACES[4].distances
    pu, pv = spanner_pairs(D)
    _, stats = solve_against_linprog(D, pu, pv, level)
    assert stats["device"] == "gpu"


@needs_gpu
def test_gpu_factor_of_column_rows_equals_the_numpy_factor():
    D, n, u, v, w, lp, dB, wx, dL_inv, rng = triple_lp(SPACES[4], 0.9, 4)
    ref = bb.BatchedBlockFactor(lp, numpy_backend())
    gpu = bb.BatchedBlockFactor(lp, cupy_backend(), chunk_bytes=7 * 4 * 8 * n * n)
    for fac in (ref, gpu):
        fac.factor(dB, wx, dL_inv)
    assert np.allclose(cupy_backend().to_host(gpu.Kinv), ref.Kinv, rtol=1e-9, atol=0)
    r, rE = rng.normal(size=(n, n)), rng.normal(size=n)
    for a, b in zip(gpu.solve(r, rE, 0.3), ref.solve(r, rE, 0.3), strict=True):
        assert np.allclose(a, b, rtol=1e-8, atol=1e-10)


@needs_gpu
@pytest.mark.parametrize("eps", [0.5, 2.0])     # the rounds certify alone (no HiGHS finish)
def test_gpu_optmech_block_rounds_are_exact_and_private(monkeypatch, eps):
    monkeypatch.setenv("MDP_DEVICE", "gpu")
    space = SPACES[4]
    ref, _ = optimal_loss_linprog(space.distances, eps)
    mech = mdp.build("optimal", space, eps, method="blocks")
    assert mech.stats["device"] == "gpu"
    assert mech.stats["lower_bound"] <= ref * (1 + 3e-7)
    assert mech.stats["loss"] == pytest.approx(ref, rel=1.1e-6)
    certify(mech.matrix, space.distances, eps, repair=False)
