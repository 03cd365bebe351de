"""The column-block interior point method (mdp.worst_case.column_blocks) against independent solvers."""

import subprocess
import sys
import time

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import linprog

import mdp
from mdp.families.spanner import SpannerTuning, greedy_spanner
from mdp.lp import LPError, LPTimeout, progress, set_threads
from mdp.spaces.metric_space import MetricSpace
from mdp.worst_case import column_blocks as cb
from mdp.worst_case.block_kernels import fill_block_lower, unpack_symmetric
from mdp.worst_case.column_blocks import ColumnBlockLP, lagrangian_bound, solve_worst_case_blocks
from mdp.worst_case.solve import LazyRoundsTuning, lagrangian_lower_bound, primal_rows


def spanner_pairs(D, stretch=1.5):
    E = greedy_spanner(D, stretch)
    return np.r_[E[:, 0], E[:, 1]], np.r_[E[:, 1], E[:, 0]]


def linprog_optimum(D, pu, pv, level):
    """The worst-case-loss LP over the pairs, by HiGHS's dual simplex through SciPy."""
    A = primal_rows(D, pu, pv, np.full(len(pu), level))
    n = D.shape[0]
    c = np.zeros(A.shape[1])
    c[-1] = 1.0
    res = linprog(c, A_ub=-A[n:], b_ub=np.zeros(A.shape[0] - n), A_eq=A[:n], b_eq=np.ones(n),
                  bounds=[(0, None)] * (n * n) + [(None, None)], method="highs-ds")
    assert res.status == 0
    return res.fun


def dense_blocks(D, pu, pv, level, dB, wx):
    """``B_w^T diag(dB[w]) B_w + diag(wx[w])`` per column ``w``, dense, with ``B_w`` cut out of
    :func:`primal_rows` (privacy rows pair-major, scaled to coefficient 1 as the method scales
    them)."""
    n, m = D.shape[0], len(pu)
    A = primal_rows(D, pu, pv, np.full(m, level)).tocsr()
    scale = sp.diags(np.exp(-level * D[pu, pv]))
    out = []
    for w in range(n):
        Bw = scale @ A[2 * n + np.arange(m) * n + w][:, np.arange(n) * n + w]
        out.append((Bw.T @ sp.diags(dB[w]) @ Bw).toarray() + np.diag(wx[w]))
    return np.stack(out)


def grid(side):
    g = np.arange(side, dtype=float)
    return MetricSpace.from_points(np.stack(np.meshgrid(g, g), -1).reshape(-1, 2))


SPACES = [MetricSpace.from_points(np.random.default_rng(s).random((n, 2)) * 5)
          for s, n in ((1, 12), (2, 20), (3, 25))] + [grid(4), grid(5)]


def solve_against_linprog(D, pu, pv, level, resources=cb.BlockResources()):
    """The column-block method's ``(M, stats)``, checked against HiGHS's dual simplex: the bound
    is rigorous, bound and iterate are near the optimum (the method's plateau is about 1e-6 in
    relative gap ``|k - bound| / (1 + k)``), and the iterate meets the rows to the method's
    accuracy, in the points' own order."""
    ref = linprog_optimum(D, pu, pv, level)
    M, stats = solve_worst_case_blocks(D, pu, pv, level, resources=resources)
    assert stats["solver"] == "blocks"
    near = 2e-5 * (1 + ref)
    assert stats["lower_bound"] <= ref + 1e-9
    assert stats["lower_bound"] >= ref - near
    assert stats["lp_objective"] == pytest.approx(ref, abs=near)
    assert np.abs(M.sum(axis=1) - 1).max() <= 1e-6
    assert np.max(np.einsum("uw,uw->u", M, D)) <= ref + near
    ratio = M[pu] - np.exp(level * D[pu, pv])[:, None] * M[pv]
    assert ratio.max() <= 1e-6
    return M, stats


@pytest.mark.parametrize("space", SPACES, ids=lambda s: f"n{s.n}")
@pytest.mark.parametrize("level", [0.05, 0.4, 2.0, 8.0])
def test_matches_linprog_and_bounds_it(space, level):
    D = space.distances
    pu, pv = spanner_pairs(D)
    _, stats = solve_against_linprog(D, pu, pv, level)
    assert stats["device"] == "cpu"


def test_operators_and_bound_match_the_primal_rows():
    space = SPACES[1]
    D, n = space.distances, space.n
    pu, pv = spanner_pairs(D)
    lp = ColumnBlockLP(D, pu, pv, 0.7)
    A = primal_rows(D, pu, pv, np.full(len(pu), 0.7))
    rng = np.random.default_rng(0)
    X = rng.random((n, n))                              # X[w, u] = M_uw
    x = np.r_[X.T.ravel(), 3.0]
    Ax = A @ x
    assert np.allclose(X.sum(axis=0), Ax[:n])
    assert np.allclose(3.0 - lp.loss(X), Ax[n:2 * n])
    scale = np.exp(-lp.log_scale)                       # rows scaled to coefficient 1
    assert np.allclose(lp.privacy(X).T.ravel(), np.repeat(scale, n) * Ax[2 * n:])
    Z = rng.random((n, lp.m))
    assert np.allclose(lp.privacy_t(Z).T.ravel(),
                       A[2 * n:, :-1].T @ (Z * scale[None, :]).T.ravel())
    # the compiled block fill: the lower triangle of the dense block, the rest untouched
    dB, wx = rng.random((n, lp.m)), rng.random((n, n))
    out = np.full((n, n), np.nan, order="F")
    fill_block_lower(out, lp.ri, lp.rj, lp.cb, dB[3], wx[3])
    K3 = dense_blocks(D, pu, pv, 0.7, dB, wx)[3]
    assert np.allclose(np.tril(out), np.tril(K3), rtol=1e-14, atol=0)
    assert np.isnan(out[np.triu_indices(n, 1)]).all()
    for _ in range(3):
        yE, zL, zB = rng.normal(size=n), rng.random(n), rng.random((n, lp.m))
        y = np.r_[yE, zL, (zB * scale[None, :]).T.ravel()]
        assert lagrangian_bound(lp, yE, zL, zB) == pytest.approx(lagrangian_lower_bound(A, y, n),
                                                                 rel=1e-12, abs=1e-12)


def test_packed_inverses_and_schur_complement_match_dense_algebra():
    """The compiled block assembly, packed inverses, their sums and ``dspmv`` applications
    against NumPy on the dense blocks."""
    space = SPACES[2]
    D, n = space.distances, space.n
    pu, pv = spanner_pairs(D)
    lp = ColumnBlockLP(D, pu, pv, 0.9)
    rng = np.random.default_rng(5)
    dB, wx = rng.uniform(0.01, 100, (n, lp.m)), rng.uniform(0.01, 100, (n, n))
    dL_inv = rng.random(n)
    fac = cb._BlockFactor(lp)
    fac.factor(dB, wx, dL_inv)
    K = dense_blocks(D, pu, pv, 0.9, dB, wx)
    inv = np.linalg.inv(K)
    for w in (0, 7, n - 1):
        assert np.allclose(unpack_symmetric(fac.Kinv[w], n), inv[w], rtol=1e-10, atol=0)
    G = [np.vstack([-np.diag(D[:, w]), np.eye(n)]) for w in range(n)]
    S = sum(G[w] @ inv[w] @ G[w].T for w in range(n)) + np.diag(np.r_[dL_inv, np.zeros(n)])
    L = fac.cho[0]
    assert np.allclose(np.tril(L) @ np.tril(L).T, S, rtol=1e-10, atol=1e-12 * np.abs(S).max())
    R = rng.normal(size=(n, n))
    assert np.allclose(fac._apply(R), np.einsum("wuv,wv->wu", inv, R), rtol=1e-10, atol=1e-13)
    # the refined solve meets the unfactored equations
    r, rE = rng.normal(size=(n, n)), rng.normal(size=n)
    dX, dk, u, lE = fac.solve(r, rE, 0.3)
    K_dX = np.einsum("wuv,wv->wu", K, dX)
    assert np.allclose(K_dX - D.T * u[None, :] + lE[None, :], r, atol=1e-9)
    assert np.allclose(dX.sum(axis=0), rE, atol=1e-9)
    assert np.allclose(-lp.loss(dX) + dk - dL_inv * u, 0, atol=1e-9)
    assert u.sum() == pytest.approx(0.3)
    # the dense blocks shared among threads (one BLAS thread each): the same inverses up to
    # rounding; a block that is not positive definite is named
    try:
        set_threads(3)
        shared = cb._BlockFactor(lp, shared=True)
        shared.factor(dB, wx, dL_inv)
        assert np.allclose(shared.Kinv, fac.Kinv, rtol=1e-12, atol=0)
        assert np.allclose(shared.cho[0], fac.cho[0], rtol=1e-12, atol=1e-14)
        # whatever the thread count, the same sums to the last bit
        set_threads(1)
        alone = cb._BlockFactor(lp, shared=True)
        alone.factor(dB, wx, dL_inv)
        assert np.array_equal(alone.cho[0], shared.cho[0])
        set_threads(3)
        bad = wx.copy()
        bad[n - 2, 3] = -1e6
        with pytest.raises(LPError, match=f"column {n - 2}"):
            shared.factor(dB, bad, dL_inv)
    finally:
        set_threads(None)


def test_dense_blocks_are_shared_among_cores_from_shared_from_n():
    D = SPACES[2].distances
    n = D.shape[0]
    pu, pv = spanner_pairs(D)
    lp = ColumnBlockLP(D, pu, pv, 0.9)
    assert not cb._block_factor(lp, "cpu").shared
    assert cb._block_factor(lp, "cpu", resources=cb.BlockResources(shared_from_n=n)).shared
    assert not cb._block_factor(
        lp, "cpu", resources=cb.BlockResources(shared_from_n=n + 1)).shared
    # a build with shared blocks matches linprog as the serial one does
    _, stats = solve_against_linprog(D, pu, pv, 0.9, resources=cb.BlockResources(shared_from_n=2))
    assert stats["dissection_levels"] == 0


def test_serial_dense_blocks_compile_no_uncached_kernel():
    """Below ``shared_from_n`` the dense blocks go through SciPy's LAPACK wrappers: the
    GIL-free kernels hold LAPACK's addresses, cannot be cached, and compiling them in every
    process took longer than a 50-point build. Run in a fresh interpreter, where nothing else
    has compiled them."""
    code = (
        "import numpy as np\n"
        "from mdp.worst_case import block_kernels as bk\n"
        "from mdp.worst_case.column_blocks import solve_worst_case_blocks\n"
        "rng = np.random.default_rng(0)\n"
        "P = rng.random((12, 2))\n"
        "D = np.sqrt(((P[:, None] - P[None]) ** 2).sum(-1))\n"
        "pu, pv = np.nonzero(~np.eye(12, dtype=bool))\n"
        "M, st = solve_worst_case_blocks(D, pu, pv, 1.0)\n"
        "assert st['dissection_levels'] == 0 and np.allclose(M.sum(1), 1, atol=1e-6)\n"
        "print(len(bk.dense_inverse.signatures), len(bk.dissected_inverse.signatures))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["0", "0"]


def test_spanner_by_name_is_certified_near_the_vertex():
    space = SPACES[2]
    vertex = mdp.build("spanner", space, 0.5, solver="ipm")
    blocks = mdp.build("spanner", space, 0.5, solver="blocks")
    assert blocks.stats["method"] == "full" and blocks.stats["solver"] == "blocks"
    assert blocks.stats["lower_bound"] <= vertex.stats["lp_objective"] + 1e-12
    assert vertex.loss() - 1e-9 <= blocks.loss() <= vertex.loss() * (1 + 1e-5)
    assert 0 <= blocks.stats["relative_gap"] <= 1e-5
    assert blocks.stats["privacy"]["measured_eps"] <= 0.5 * (1 + 1e-9)
    with pytest.raises(ValueError, match="solver"):
        mdp.build("spanner", space, 0.5, method="lazy", solver="blocks")


def test_refusals_timeout_and_progress():
    D = SPACES[0].distances
    pu, pv = spanner_pairs(D)
    with pytest.raises(LPTimeout, match="time limit"):
        solve_worst_case_blocks(D, pu, pv, 0.5, time_limit=1e-9)
    events = []
    with progress(events.append):
        solve_worst_case_blocks(D, pu, pv, 0.5)
    assert events and all(e.method == "blocks" and e.iteration is not None for e in events)
    assert events[-1].gap < 1e-4 and events[0].iteration == 0
    assert cb.block_bytes(12) == 8 * 12 * 78               # packed lower triangles
    small = cb.BlockResources(max_block_bytes=cb.block_bytes(11))
    with pytest.raises(LPError, match="GiB.*solver='hipo'"):
        solve_worst_case_blocks(D, pu, pv, 0.5, resources=small)
    # through the registry a failed LP falls back to the exponential mechanism, and says why
    mech = mdp.build("spanner", SPACES[0], 0.5, solver="blocks",
                     tuning=SpannerTuning(resources=small))
    assert "GiB" in mech.stats["fallback"]["reason"]
    assert mech.stats["privacy"]["measured_eps"] <= 0.5 * (1 + 1e-9)


def test_default_from_blocks_from_n(monkeypatch):
    from mdp.families import spanner

    assert SpannerTuning().blocks_from_n == 50
    assert spanner.default_full_solver(49) == "hipo"
    assert spanner.default_full_solver(50) == "blocks"
    monkeypatch.setattr(cb, "available_memory", lambda: 64 * 2 ** 30)
    assert spanner.default_full_solver(1285) == "blocks"        # 7.9 GiB of packed inverses
    assert spanner.default_full_solver(1290) == "hipo"          # 8.0003 GiB: above max_block_bytes
    monkeypatch.setattr(cb, "available_memory", lambda: 6 * 2 ** 30)
    assert spanner.default_full_solver(1000) == "hipo"          # 3.7 GiB: more than half of 6
    assert spanner.default_full_solver(900) == "blocks"         # 2.7 GiB
    monkeypatch.setattr(cb, "available_memory", lambda: None)   # the system does not say
    assert spanner.default_full_solver(1000) == "blocks"
    # the default at that size (here lowered to 20 points): the column-block method, repaired
    # and certified like HiPO's point
    space = SPACES[2]
    auto = mdp.build("spanner", space, 0.5, tuning=SpannerTuning(blocks_from_n=20))
    assert auto.report.plan.solver.value == "blocks" and auto.report.plan.device.value == "cpu"
    hipo = mdp.build("spanner", space, 0.5, solver="hipo")
    assert auto.stats["solver"] == "blocks" and "failed_solves" not in auto.stats
    assert auto.loss() == pytest.approx(hipo.loss(), rel=2e-5)
    assert auto.stats["privacy"]["measured_eps"] <= 0.5 * (1 + 1e-9)


def test_default_falls_back_to_hipo_when_blocks_fail(inject):
    from mdp.worst_case import solve as worst_case

    def fail(*args, **kwargs):
        time.sleep(0.3)
        raise LPError("no convergence (forced)")

    inject(solve_worst_case_blocks, fail)
    D = SPACES[1].distances
    pu, pv = spanner_pairs(D)
    ref = linprog_optimum(D, pu, pv, 0.5)
    M, stats = worst_case.solve_worst_case_lp(D, pu, pv, 0.5, solver="blocks", crossover=False)
    assert stats["failed_solves"] == ["blocks: no convergence (forced)"]
    assert "hipo" in stats["solver"]                            # HiPO's chain went on
    assert stats["seconds"] >= 0.3                              # the failed attempt's time too
    assert stats["lower_bound"] <= ref + 1e-9
    assert stats["lp_objective"] == pytest.approx(ref, rel=1e-6)
    # named explicitly (crossover=True), the failure is the caller's
    with pytest.raises(LPError, match="forced"):
        worst_case.solve_worst_case_lp(D, pu, pv, 0.5, solver="blocks", crossover=True)


def test_a_stalled_solve_carries_its_best_iterate():
    # out of iterations far from the acceptance: the error carries the best iterate, whose
    # multipliers still bound the optimum and whose entries are the method's matrix
    D = SPACES[1].distances
    pu, pv = spanner_pairs(D)
    ref = linprog_optimum(D, pu, pv, 0.5)
    with pytest.raises(cb.BlocksStalled, match="without converging") as err:
        solve_worst_case_blocks(D, pu, pv, 0.5, max_iter=8)
    stalled = err.value
    assert cb.STALL_ACCEPT < stalled.score < 1.0
    assert stalled.stats["stalled"] and stalled.stats["ipm_iterations"] == 8
    assert stalled.stats["lower_bound"] <= ref + 1e-9
    assert stalled.matrix.shape == D.shape and np.all(stalled.matrix >= 0)
    # its rows are near stochastic and its loss near the optimum, as the score says
    np.testing.assert_allclose(stalled.matrix.sum(axis=1), 1.0, atol=10 * stalled.score)
    loss = np.max(np.einsum("uw,uw->u", stalled.matrix, D))
    assert loss == pytest.approx(ref, rel=10 * stalled.score)


@pytest.mark.parametrize("budget", ["runs out", "enough"])
def test_a_stalled_iterate_stands_when_highs_runs_out_of_its_budget(inject, budget):
    # the column blocks stall above their acceptance: HiGHS's chain gets a bounded time, and past
    # it SpannerMech repairs and certifies the stalled iterate, and warns with its gap
    real = solve_worst_case_blocks.default
    stalls = []

    def stalling(*args, **kwargs):
        try:
            real(*args, max_iter=8, **kwargs)
        except cb.BlocksStalled as exc:
            stalls.append(exc.score)
            raise
        raise AssertionError("8 iterations converged")

    inject(solve_worst_case_blocks, stalling)
    space = SPACES[1]
    D = space.distances
    pu, pv = spanner_pairs(D)
    ref = linprog_optimum(D, pu, pv, 0.5 / 1.5)
    lazy = (LazyRoundsTuning(stalled_time_factor=0.0, stalled_min_seconds=1e-6)
            if budget == "runs out" else LazyRoundsTuning())
    tuning = SpannerTuning(blocks_from_n=10, lazy=lazy)
    if budget == "runs out":
        with pytest.warns(mdp.AccuracyWarning, match="stalled"):
            mech = mdp.build("spanner", space, 0.5, tuning=tuning)
        st = mech.stats
        assert st["stalled_score"] == stalls[0] and "stalled" in st["final_method"]
        assert "budget" in st["failed_solves"][-1]
        assert st["lower_bound"] <= ref + 1e-9
        assert st["relative_gap"] == pytest.approx((st["loss"] - st["lower_bound"]) / st["loss"])
        assert mech.loss() >= ref * (1 - 1e-6)
    else:
        mech = mdp.build("spanner", space, 0.5, tuning=tuning)
        st = mech.stats
        assert "stalled_score" not in st and "stalled" not in st["final_method"]
        assert st["lp_objective"] == pytest.approx(ref, rel=1e-6)
    assert len(stalls) == 1
    assert mech.stats["privacy"]["measured_eps"] <= 0.5 * (1 + 1e-9)


def test_available_memory_reads_the_system():
    import os
    import sys

    avail = cb.available_memory()
    if sys.platform.startswith("linux"):
        total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        assert avail is not None and 0 < avail <= total
    if avail is not None:
        top = cb.BlockResources()
        assert cb.block_byte_limit() == min(top.max_block_bytes, int(top.memory_share * avail))


def test_default_runs_blocks_once_when_every_solver_fails(inject):
    # the coefficient-limit retries of SpannerMech are HiGHS's: after the column-block method and
    # HiPO's chain failed, the next limits run the chain only; the build falls back to the
    # exponential mechanism and says why
    from mdp.lp.conic import solve_clarabel
    from mdp.lp.highs import run_highs

    calls = []

    def blocks_fail(*args, **kwargs):
        calls.append(1)
        raise LPError("no convergence (forced)")

    def fail(*args, **kwargs):
        raise LPError("solver failed (forced)")

    inject(solve_worst_case_blocks, blocks_fail)
    inject(solve_clarabel, fail)
    inject(run_highs, fail)
    mech = mdp.build("spanner", SPACES[0], 0.5, tuning=SpannerTuning(blocks_from_n=10))
    assert len(calls) == 1
    assert len(mech.stats["attempts"]) == 3
    assert mech.stats["fallback"]["to"] == "exponential"
    assert mech.stats["privacy"]["measured_eps"] <= 0.5 * (1 + 1e-9)


@pytest.mark.parametrize("batch", [1, 3, 5])
def test_batched_sums_of_packed_triangles(batch):
    """accumulate_packed adds a batch of packed lower triangles into the Schur complement's four
    packed sums, as dense algebra does."""
    from mdp.worst_case.block_kernels import accumulate_packed, pack_lower, packed_size

    rng = np.random.default_rng(batch)
    n = 7
    mats = rng.normal(size=(batch, n, n))
    mats = mats + mats.transpose(0, 2, 1)
    a = rng.random((batch, n))
    packed = np.empty((batch, packed_size(n)))
    for b in range(batch):
        pack_lower(mats[b], packed[b])
    sums = [np.full(packed_size(n), 0.5) for _ in range(4)]
    accumulate_packed(packed, a, *sums)
    jj, ii = np.triu_indices(n)                     # packed order: column j, rows i >= j
    ref = [mats.sum(0), np.einsum("bi,bij,bj->ij", a, mats, a),
           np.einsum("bij,bj->ij", mats, a), np.einsum("bi,bij->ij", a, mats)]
    for got, want in zip(sums, ref, strict=True):
        assert np.allclose(got, 0.5 + want[ii, jj], rtol=1e-13)
    assert np.allclose(unpack_symmetric(packed[0], n), mats[0], rtol=0, atol=0)
