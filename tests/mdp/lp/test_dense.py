"""The dense Schur step of the row-block interior point method on CPU and GPU (mdp.lp.dense).

The CPU step is checked against an explicitly formed matrix and numpy's dense solve; the GPU step
(CuPy, only where a CUDA device is present: CI has none) against the CPU step and, through the
whole interior point method, against linprog.
"""

import dataclasses
import os

import numpy as np
import pytest
from scipy.optimize import linprog

from mdp.errors import ParameterError, SolverError
from mdp.families.constopt import constopt_lp, nn_replacement
from mdp.families.constopt.ipm import ConstOptLP, free_free_pairs, solve_row_block_ipm
from mdp.lp import dense
from mdp.lp.arrays import device_choice, gpu_available, numpy_backend
from mdp.lp.dense import CPUSchur, GPUSchur, SparseColumns, schur_factor
from mdp.spaces.metric_space import MetricSpace

needs_gpu = pytest.mark.skipif(not gpu_available(), reason="no CUDA device for CuPy")


def _instance(seed: int, n: int = 6, t: int = 9):
    rng = np.random.default_rng(seed)
    L0 = rng.normal(size=(2 * n, t))
    upd = (rng.integers(0, 2 * n, 15), rng.integers(0, t, 15), rng.normal(size=15))
    a, c = rng.random(n) + 0.5, rng.random(n) + 0.5          # Cholesky factors [[a, b], [0, c]]
    b = rng.normal(size=n)
    pi, pj, pv = rng.integers(0, t, 5), rng.integers(0, t, 5), rng.random(5) * 0.05
    # a diagonally dominant symmetric sparse part, so that S is positive definite
    ext = (np.r_[np.arange(t), pi, pj], np.r_[np.arange(t), pj, pi], np.r_[rng.random(t) + 1.0, pv, pv])
    return L0, upd, a, b, c, ext


def _dense(L0, upd, a, b, c, ext):
    """``L`` and ``S = L^T M L + E`` with the 2 x 2 blocks ``M_u = R_u^T R_u`` formed explicitly."""
    L = L0.copy()
    np.add.at(L, upd[:2], upd[2])
    M = np.block([[np.diag(a * a), np.diag(a * b)], [np.diag(a * b), np.diag(b * b + c * c)]])
    S = L.T @ M @ L
    np.add.at(S, ext[:2], ext[2])
    return L, S


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_cpu_step_solves_the_formed_matrix(seed):
    L0, upd, a, b, c, ext = _instance(seed)
    L, S = _dense(L0, upd, a, b, c, ext)
    rng = np.random.default_rng(seed + 10)
    r, y = rng.normal(size=L.shape[1]), rng.normal(size=L.shape[0])
    step = CPUSchur(L0)
    step.factor(upd, a, b, c, ext)
    d, Ld = step.solve(r, y)
    ref = np.linalg.solve(S, r - L.T @ y)
    np.testing.assert_allclose(d, ref, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(Ld, L @ ref, rtol=1e-9, atol=1e-12)
    # L0 is kept: a second factorisation with no update gives the un-updated matrix's solve
    step.factor((np.zeros(0, int), np.zeros(0, int), np.zeros(0)), a, b, c, ext)
    _, S0 = _dense(L0, (np.zeros(0, int), np.zeros(0, int), np.zeros(0)), a, b, c, ext)
    np.testing.assert_allclose(step.solve(r, y)[0], np.linalg.solve(S0, r - L0.T @ y), rtol=1e-9)


def _two_level_instance(seed: int):
    """A linking matrix whose columns ``sparse.cols`` hold non-zeros in rows u and n + u only.

    Components of the sparse columns (joined by a matrix row or a coupled pair): rows 0 and 1 give
    two of size 2, rows 2-5 joined by pairs one of size 6, row 6 one of size 1; the 5 dense
    columns are interleaved with them.
    """
    rng = np.random.default_rng(seed)
    n, nd = 8, 5
    rows = np.array([0, 0, 1, 1, 2, 3, 3, 4, 5, 5, 6])
    t = nd + len(rows)
    perm = rng.permutation(t)
    dcols, fcols = perm[:nd], perm[nd:]
    L0 = np.zeros((2 * n, t))
    L0[:, dcols] = rng.normal(size=(2 * n, nd))
    L0[rows, fcols] = rng.normal(size=len(rows))
    L0[n + rows, fcols] = rng.random(len(rows)) + 0.5
    pairs = (fcols[[4, 6, 8]], fcols[[5, 7, 9]])                # rows 2-3, 3-4, 5-5 ... joined
    pairs = (np.r_[pairs[0], fcols[7]], np.r_[pairs[1], fcols[8]])   # and 4-5
    upd = (rng.integers(0, 2 * n, 12), rng.choice(dcols, 12), rng.normal(size=12))
    a, c = rng.random(n) + 0.5, rng.random(n) + 0.5
    b = rng.normal(size=n)
    fd = (rng.choice(fcols, 4), rng.choice(dcols, 4))
    pv, fdv = rng.random(len(pairs[0])) * 0.05, rng.random(4) * 0.05
    ext = (np.r_[np.arange(t), pairs[0], pairs[1], fd[0], fd[1]],
           np.r_[np.arange(t), pairs[1], pairs[0], fd[1], fd[0]],
           np.r_[rng.random(t) + 1.0, pv, pv, fdv, fdv])
    return L0, upd, a, b, c, ext, SparseColumns(fcols, rows, pairs)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_two_level_step_solves_the_formed_matrix(seed):
    L0, upd, a, b, c, ext, sparse = _two_level_instance(seed)
    L, S = _dense(L0, upd, a, b, c, ext)
    step = CPUSchur(L0, sparse)
    rng = np.random.default_rng(seed + 20)
    r, y = rng.normal(size=L.shape[1]), rng.normal(size=L.shape[0])
    step.factor(upd, a, b, c, ext)
    d, Ld = step.solve(r, y)
    ref = np.linalg.solve(S, r - L.T @ y)
    np.testing.assert_allclose(d, ref, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(Ld, L @ ref, rtol=1e-9, atol=1e-12)
    flat = CPUSchur(L0)
    flat.factor(upd, a, b, c, ext)
    np.testing.assert_allclose(flat.solve(r, y)[0], d, rtol=1e-9, atol=1e-12)


def test_two_level_step_refuses_a_wrong_structure():
    L0, upd, a, b, c, ext, sparse = _two_level_instance(4)
    n, (fcols, rows) = L0.shape[0] // 2, (sparse.cols, sparse.rows)
    bad = L0.copy()
    bad[(rows[0] + 1) % n, fcols[0]] = 1.0
    with pytest.raises(ValueError, match="outside rows u and n"):
        CPUSchur(bad, sparse)
    dense_col = np.setdiff1d(np.arange(L0.shape[1]), fcols)[0]
    with pytest.raises(ValueError, match="pairs must join"):
        CPUSchur(L0, SparseColumns(fcols, rows, (fcols[:1], np.array([dense_col]))))
    step = CPUSchur(L0, sparse)
    with pytest.raises(ValueError, match="update touches"):
        step.factor((np.array([rows[0]]), fcols[:1], np.ones(1)), a, b, c, ext)
    # the sparse part couples two components (rows 0 and 6) that no pair joins
    cross = (np.r_[ext[0], fcols[0], fcols[-1]], np.r_[ext[1], fcols[-1], fcols[0]],
             np.r_[ext[2], 0.01, 0.01])
    with pytest.raises(ValueError, match="SparseColumns.pairs leaves out"):
        step.factor(upd, a, b, c, cross)
    t = L0.shape[1]
    with pytest.raises(SolverError, match="positive definiteness"):
        step.factor(upd, a, b, c, (np.arange(t), np.arange(t), np.full(t, -1e6)))


def test_interior_point_method_two_level_equals_one_dense_factorisation(monkeypatch):
    # NumPy's backend as "the GPU", from size 0: the whole matrix factored densely
    monkeypatch.setenv("MDP_DEVICE", "auto")
    space = MetricSpace.from_points(np.random.default_rng(9).random((30, 2)) * 5)
    D, e = space.distances, 0.6
    free = nn_replacement(D, 5)
    fu, fv = np.nonzero(free)
    lp = ConstOptLP(D, e, free, 0.1, free_free_pairs(fu, fv))
    two = solve_row_block_ipm(lp, gpu=None)
    flat = solve_row_block_ipm(lp, gpu_from=0, gpu=numpy_backend())
    assert two.stats["device"] == "cpu" and flat.stats["device"] == "numpy"
    assert two.iterations == flat.iterations
    assert two.objective == pytest.approx(flat.objective, rel=1e-9)
    np.testing.assert_allclose(two.x, flat.x, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("order", ["C", "F"])
def test_blas_products_equal_numpy(order):
    rng = np.random.default_rng(4)
    G = np.asarray(rng.normal(size=(40, 17)), order=order)
    W = rng.normal(size=(25, 17))
    lower = np.tril_indices(17)
    S = dense.gram(G)
    np.testing.assert_allclose(S[lower], (G.T @ G)[lower], rtol=1e-12, atol=1e-12)
    # the in-place update S - W^T W (the two-level step's Schur complement)
    S = dense.gram(W, out=S, alpha=-1.0)
    np.testing.assert_allclose(S[lower], (G.T @ G - W.T @ W)[lower], rtol=1e-12, atol=1e-12)
    x, y = rng.normal(size=17), rng.normal(size=40)
    np.testing.assert_allclose(dense.matvec(G, x), G @ x, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(dense.rmatvec(G, y), G.T @ y, rtol=1e-12, atol=1e-12)


def test_blas_threads_follow_the_size_rule_and_set_threads(monkeypatch):
    from threadpoolctl import threadpool_info, threadpool_limits

    from mdp.lp import highs

    def counts():
        return {lib["filepath"]: lib["num_threads"] for lib in threadpool_info()
                if lib["user_api"] == "blas"}

    outside = counts()
    with threadpool_limits(2, user_api="blas"):       # each library's count when asked for 2
        capacity = counts()
    highs.set_threads(None)
    monkeypatch.setattr(dense, "_physical_cores", lambda: 2)
    with dense.blas_threads(dense.SERIAL_BLAS_BELOW - 1):
        assert set(counts().values()) == {1}
    with dense.blas_threads(dense.SERIAL_BLAS_BELOW):
        # a library built for fewer threads (another package's single-threaded BLAS) stays there
        assert counts() == capacity
    assert counts() == outside                        # restored on exit
    highs.set_threads(1)                              # mdp.lp.set_threads(1) wins at every size
    try:
        with dense.blas_threads(10 ** 6):
            assert set(counts().values()) == {1}
    finally:
        highs.set_threads(None)
    assert counts() == outside


@pytest.mark.parametrize("cores, small, large", [(1, 1, 1), (2, 1, 2), (3, 2, 3), (4, 3, 4), (9, 8, 8),
                                                  (16, 8, 8), (128, 8, 8)])
def test_default_blas_threads_leave_a_core_for_small_steps_and_stop_at_eight(monkeypatch, cores, small, large):
    monkeypatch.setattr(dense, "_physical_cores", lambda: cores)
    assert dense.default_blas_threads(1) == small
    assert dense.default_blas_threads(dense.SERIAL_BLAS_BELOW - 1) == small
    assert dense.default_blas_threads(dense.SERIAL_BLAS_BELOW) == large
    assert dense.default_blas_threads(10 ** 6) == large


def test_physical_cores_are_counted_within_the_process_affinity():
    dense._physical_cores.cache_clear()
    cores = dense._physical_cores()
    assert 1 <= cores <= len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else cores >= 1


def test_indefinite_matrix_is_a_solver_error():
    L0, upd, a, b, c, ext = _instance(3)
    t = L0.shape[1]
    bad = (np.arange(t), np.arange(t), np.full(t, -1e6))
    with pytest.raises(SolverError, match="positive definiteness"):
        CPUSchur(L0).factor(upd, a, b, c, bad)


def test_device_choice_reads_the_environment(monkeypatch):
    fake = numpy_backend()
    monkeypatch.setenv("MDP_DEVICE", "cpu")
    assert device_choice(10 ** 6, dense.GPU_MIN_SIZE, fake) == "cpu"
    monkeypatch.setenv("MDP_DEVICE", "tpu")
    with pytest.raises(ParameterError, match="MDP_DEVICE.*'tpu'"):
        device_choice(10, dense.GPU_MIN_SIZE)
    monkeypatch.setenv("MDP_DEVICE", "auto")
    assert device_choice(dense.GPU_MIN_SIZE - 1, dense.GPU_MIN_SIZE, fake) == "cpu"
    assert device_choice(dense.GPU_MIN_SIZE, dense.GPU_MIN_SIZE, fake) == "gpu"
    assert device_choice(dense.GPU_MIN_SIZE, dense.GPU_MIN_SIZE) == (
        "gpu" if gpu_available() else "cpu")
    monkeypatch.delenv("MDP_DEVICE")
    assert device_choice(dense.GPU_MIN_SIZE, dense.GPU_MIN_SIZE, fake) == "gpu"
    assert device_choice(dense.GPU_MIN_SIZE, dense.GPU_MIN_SIZE, None) == "cpu"
    with pytest.raises(ParameterError, match="gpu must be"):
        device_choice(10 ** 6, 1, "cuda")


def test_forced_gpu_without_one_is_a_parameter_error(monkeypatch):
    monkeypatch.setenv("MDP_DEVICE", "gpu")
    with pytest.raises(ParameterError, match="MDP_DEVICE=gpu"):
        device_choice(5000, dense.GPU_MIN_SIZE, None)
    with pytest.raises(ParameterError, match="MDP_DEVICE=gpu"):
        schur_factor(np.zeros((4, 2)), gpu=None)
    with pytest.raises(ParameterError, match="no usable CUDA device"):
        GPUSchur(np.zeros((4, 2)), gpu=None)
    monkeypatch.setenv("MDP_DEVICE", "auto")
    assert device_choice(5000, dense.GPU_MIN_SIZE, None) == "cpu"
    assert schur_factor(np.zeros((4, 2)), gpu=None).device == "cpu"


@pytest.mark.parametrize("seed", [0, 1])
def test_the_gpu_step_on_numpys_backend_equals_the_cpu_step(seed):
    L0, upd, a, b, c, ext = _instance(seed, n=30, t=45)
    rng = np.random.default_rng(seed)
    r, y = rng.normal(size=45), rng.normal(size=60)
    cpu, gpu = CPUSchur(L0), GPUSchur(L0, gpu=numpy_backend())
    for step in (cpu, gpu):
        step.factor(upd, a, b, c, ext)
    (d1, l1), (d2, l2) = cpu.solve(r, y), gpu.solve(r, y)
    np.testing.assert_allclose(d2, d1, rtol=1e-8, atol=1e-10 * np.abs(d1).max())
    np.testing.assert_allclose(l2, l1, rtol=1e-8, atol=1e-10 * np.abs(l1).max())
    t = L0.shape[1]
    with pytest.raises(SolverError, match="positive definiteness"):
        gpu.factor(upd, a, b, c, (np.arange(t), np.arange(t), np.full(t, -1e6)))


def test_interior_point_method_reports_its_device(monkeypatch):
    monkeypatch.setenv("MDP_DEVICE", "cpu")
    space = MetricSpace.from_points(np.random.default_rng(4).random((20, 2)) * 5)
    res = solve_row_block_ipm(ConstOptLP(space.distances, 0.5, nn_replacement(space.distances, 4), 0.1))
    assert res.stats["device"] == "cpu"


@needs_gpu
@pytest.mark.parametrize("seed", [0, 1])
def test_gpu_step_equals_cpu_step(seed):
    L0, upd, a, b, c, ext = _instance(seed, n=300, t=450)
    rng = np.random.default_rng(seed)
    r, y = rng.normal(size=450), rng.normal(size=600)
    cpu, gpu = CPUSchur(L0), GPUSchur(L0)
    for step in (cpu, gpu):
        step.factor(upd, a, b, c, ext)
    (d1, l1), (d2, l2) = cpu.solve(r, y), gpu.solve(r, y)
    np.testing.assert_allclose(d2, d1, rtol=1e-8, atol=1e-10 * np.abs(d1).max())
    np.testing.assert_allclose(l2, l1, rtol=1e-8, atol=1e-10 * np.abs(l1).max())


@needs_gpu
def test_gpu_interior_point_method_matches_linprog(monkeypatch):
    monkeypatch.setenv("MDP_DEVICE", "gpu")
    space = MetricSpace.from_points(np.random.default_rng(8).random((40, 2)) * 5)
    D, e = space.distances, 0.75
    free = nn_replacement(D, 5)
    fu, fv = np.nonzero(free)
    res = solve_row_block_ipm(ConstOptLP(D, e, free, 0.1, free_free_pairs(fu, fv)))
    assert res.stats["device"] == "gpu"
    c, A, lo, hi, _, _ = constopt_lp(D, e, free, 0.1, split=True)
    up = np.isfinite(hi)
    ref = linprog(c, A_ub=np.vstack([A[up].toarray(), -A[~up].toarray()]), b_ub=np.r_[hi[up], -lo[~up]],
                  bounds=[(0, None)] * A.shape[1], method="highs")
    assert res.objective == pytest.approx(ref.fun, rel=1e-7)


def _out_of_memory_after(calls):
    """NumPy's backend as a GPU whose memory runs out after ``calls`` transfers to it."""
    done = []

    def to_device(a):
        done.append(1)
        if len(done) > calls:
            raise MemoryError("out of memory allocating 1 GB")
        return np.asarray(a)

    return dataclasses.replace(numpy_backend(), to_device=to_device)


def test_gpu_out_of_memory_falls_back_to_the_cpu(monkeypatch):
    # the dense step starts on "the GPU" (its matrix fits) and runs out at its first factorisation
    monkeypatch.setenv("MDP_DEVICE", "gpu")
    space = MetricSpace.from_points(np.random.default_rng(5).random((25, 2)) * 5)
    D, e = space.distances, 0.5
    free = nn_replacement(D, 4)
    res = solve_row_block_ipm(ConstOptLP(D, e, free, 0.1), gpu=_out_of_memory_after(1))
    assert res.stats["device"] == "cpu"
    c, A, lo, hi, _, n_base = constopt_lp(D, e, free, 0.1, split=True)
    A, lo, hi = A[:n_base], lo[:n_base], hi[:n_base]
    up = np.isfinite(hi)
    ref = linprog(c, A_ub=np.vstack([A[up].toarray(), -A[~up].toarray()]), b_ub=np.r_[hi[up], -lo[~up]],
                  bounds=[(0, None)] * A.shape[1], method="highs")
    assert res.objective == pytest.approx(ref.fun, rel=1e-7)
