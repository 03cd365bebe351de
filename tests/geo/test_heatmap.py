"""geo.heatmap: privacy accounting, pyramid, reconstruction LP, baselines, heatmaps."""

import numpy as np
import pytest
from scipy import stats
from scipy.optimize import linprog

from geo.heatmap import (
    dp_sparse_emd_aggregate,
    gaussian_heatmap,
    laplace_baseline,
    level_budgets,
    noisy_pyramid,
    points_to_cells,
    pyramid,
    pyramidal_transform,
    reconstruct,
    start_level,
    user_distributions,
)
from mdp.emd import emd_grid


def _sparse_counts(delta, n_users, rng, n_centres=6, spread=2):
    s = np.zeros((delta, delta))
    centres = rng.integers(spread, delta - spread, (n_centres, 2))
    for _ in range(n_users):
        k = rng.integers(1, 4)
        pts = centres[rng.integers(0, n_centres, k)] + rng.integers(-spread, spread + 1, (k, 2))
        np.add.at(s, (pts[:, 0], pts[:, 1]), 1.0 / k)
    return s


# ---------------------------------------------------------------- pyramid ------------------------

def test_pyramid_block_sums_brute_force():
    rng = np.random.default_rng(0)
    s = rng.random((16, 16))
    levels = pyramid(s)
    assert [lv.shape for lv in levels] == [(1, 1), (2, 2), (4, 4), (8, 8), (16, 16)]
    for i, lv in enumerate(levels):
        b = 16 // 2**i
        for r in range(2**i):
            for c in range(2**i):
                assert lv[r, c] == pytest.approx(s[r * b:(r + 1) * b, c * b:(c + 1) * b].sum())
    P = pyramidal_transform(s)
    assert P.size == sum(4**i for i in range(5))
    assert P[0] == pytest.approx(s.sum())
    assert P[-256:] == pytest.approx(s.ravel() / 16)


@pytest.mark.parametrize("seed", range(3))
def test_pyramid_dominates_exact_emd(seed):
    """Lemma 3.5 (Indyk-Thaper): ||z||_EMD <= ||P z||_1 on the unit square, L1 ground."""
    rng = np.random.default_rng(seed)
    p, q = rng.random((16, 16)), rng.random((16, 16))
    p[rng.random((16, 16)) < 0.7] = 0
    p, q = p / p.sum(), q / q.sum()
    exact = emd_grid(p, q, cell_size=1 / 16)
    assert exact <= np.abs(pyramidal_transform(p - q)).sum() + 1e-12
    assert exact > 0


# ---------------------------------------------------------------- privacy ------------------------

def test_start_level_is_floor_log2_sqrt_w():
    assert start_level(20) == 2
    for w in range(1, 300):
        assert start_level(w) == int(np.floor(np.log2(np.sqrt(w)) + 1e-12))


@pytest.mark.parametrize("eps", [0.1, 1.0, 7.5])
@pytest.mark.parametrize("ell", [3, 6, 8])
def test_level_budgets_sum_to_epsilon_and_decay(eps, ell):
    b = level_budgets(eps, ell)
    q = 2
    assert b.sum() == pytest.approx(eps, rel=1e-12)
    assert np.all(b[:q] == 0)
    assert b[q + 1:] / b[q:-1] == pytest.approx(np.full(ell - q, 2**-0.5))
    # Closed form eps_i = eps gamma^(i-q) (1 - gamma) / (1 - gamma^(ell-q+1)).
    g = 2**-0.5
    assert b[q] == pytest.approx(eps * (1 - g) / (1 - g ** (ell - q + 1)))


def test_level_budgets_parameters():
    b = level_budgets(2.0, 5, w=64, gamma=0.8)
    assert np.all(b[:3] == 0) and b.sum() == pytest.approx(2.0)
    assert b[4] / b[3] == pytest.approx(0.8)
    assert np.count_nonzero(level_budgets(1.0, 5, start=0)) == 6
    # A grid coarser than q: measure the last level with the full budget.
    assert level_budgets(1.0, 1).tolist() == [0.0, 1.0]


def test_noise_per_level_is_laplace_with_sensitivity_one_scale():
    """Section 3.3: level i gets Lap(1/eps_i) on its counts (l1 sensitivity 1 per user)."""
    rng = np.random.default_rng(1)
    s = _sparse_counts(256, 200, rng)
    eps = 1.0
    noisy = noisy_pyramid(s, eps, rng=2)
    clean = pyramid(s)
    budgets = level_budgets(eps, 8)
    assert noisy[0] is None and noisy[1] is None
    for i in range(2, 9):
        nu = (noisy[i] - clean[i]).ravel()
        scale = 1.0 / budgets[i]
        if nu.size >= 1024:  # enough draws for a distribution test
            assert stats.kstest(nu, stats.laplace(scale=scale).cdf).pvalue > 1e-3
            assert np.mean(np.abs(nu)) == pytest.approx(scale, rel=0.05)
    _, info = dp_sparse_emd_aggregate(s, eps, rng=3, return_info=True)
    assert info["noise_scales"][2:] == pytest.approx(1.0 / budgets[2:])
    assert np.all(np.isinf(info["noise_scales"][:2]))


def test_privacy_loss_bound_with_neighbours():
    """Worst-case log-likelihood ratio of the released pyramid between neighbours is <= eps.

    The released vector is Y_i = P_i s + Lap(1/eps_i); adding a user p (||p||_1 <= 1) shifts
    P_i s by P_i p with ||P_i p||_1 = ||p||_1 (P_i is a partition), so the loss is
    sum_i eps_i ||P_i p||_1 <= eps, with equality for a user of mass 1.
    """
    rng = np.random.default_rng(4)
    s = _sparse_counts(64, 50, rng)
    eps = 2.0
    budgets = level_budgets(eps, 6)
    worst = 0.0
    for _ in range(50):
        p = rng.random((64, 64)) * (rng.random((64, 64)) < 0.01)
        if p.sum() == 0:
            continue
        p *= rng.uniform(0.2, 1.0) / p.sum()
        y = noisy_pyramid(s, eps, rng=rng)
        lv0, lv1 = pyramid(s), pyramid(s + p)
        loss = sum(b * (np.abs(yi - a1).sum() - np.abs(yi - a0).sum())
                   for b, yi, a0, a1 in zip(budgets, y, lv0, lv1, strict=True) if yi is not None)
        sens = [np.abs(a1 - a0).sum() for a0, a1 in zip(lv0, lv1, strict=True)]
        assert sens == pytest.approx([p.sum()] * 7)
        assert abs(loss) <= eps * p.sum() + 1e-9
        worst = max(worst, abs(loss) / p.sum())
    assert worst <= eps + 1e-9


# ---------------------------------------------------------------- reconstruction -----------------

def _full_lp_objective(noisy, selected, delta):
    """min_{s >= 0} ||y_hat - P s||_1 with one variable per pixel (brute-force formulation)."""
    ell = int(np.log2(delta))
    rows, target, weight = [], [], []
    for i, y in enumerate(noisy):
        if y is None:
            continue
        b = delta // 2**i
        sel = np.zeros((2**i, 2**i), bool)
        sel[selected[i]] = True
        for r in range(2**i):
            for c in range(2**i):
                m = np.zeros((delta, delta))
                m[r * b:(r + 1) * b, c * b:(c + 1) * b] = 1
                rows.append(m.ravel())
                target.append(y[r, c] if sel[r, c] else 0.0)
                weight.append(2.0**-i)
    A, Y, wts = np.array(rows), np.array(target), np.array(weight)
    m, n = A.shape
    A_ub = np.block([[A, -np.eye(m)], [-A, -np.eye(m)]])
    res = linprog(np.concatenate([np.zeros(n), wts]), A_ub=A_ub, b_ub=np.concatenate([Y, -Y]),
                  bounds=(0, None), method="highs")
    assert res.status == 0
    return res.fun, (A, Y, wts), ell


@pytest.mark.parametrize("seed", range(3))
def test_compact_lp_matches_full_lp(seed):
    rng = np.random.default_rng(seed)
    s = _sparse_counts(16, 30, rng, n_centres=8, spread=1)
    noisy = noisy_pyramid(s, 1.0, w=6, rng=seed)
    s_hat, info = reconstruct(noisy, w=6)
    full, (A, Y, wts), _ = _full_lp_objective(noisy, info["selected"], 16)
    assert info["lp_objective"] == pytest.approx(full, rel=1e-7, abs=1e-9)
    # The uniform spreading rule keeps s_hat optimal for the full LP.
    assert np.sum(wts * np.abs(Y - A @ s_hat.ravel())) == pytest.approx(full, rel=1e-7, abs=1e-9)
    assert np.all(s_hat >= 0)
    assert info["n_variables"] < 16 * 16


def test_left_out_siblings_share_the_residual_equally():
    """Delta = 2, w = 1: the root's 90 units not in the kept pixel cost 1 each left unexplained
    but 1/2 in a left-out pixel, and every split among the three left-out pixels is optimal;
    rule (2) of reconstruct gives 30 to each (an LP vertex gives 90 to one)."""
    noisy = [np.array([[100.0]]), np.array([[10.0, 0.0], [0.0, 0.0]])]
    s_hat, info = reconstruct(noisy, w=1)
    np.testing.assert_allclose(s_hat, [[10.0, 30.0], [30.0, 30.0]], atol=1e-9)
    assert info["lp_objective"] == pytest.approx(45.0)
    vertex, _ = reconstruct(noisy, w=1, siblings="vertex")
    assert vertex[0, 0] == pytest.approx(10.0) and vertex.sum() == pytest.approx(100.0)
    with pytest.raises(ValueError, match="siblings"):
        reconstruct(noisy, w=1, siblings="x")


@pytest.mark.parametrize("seed", range(3))
def test_left_out_siblings_equal_and_still_optimal(seed):
    rng = np.random.default_rng(seed)
    s = _sparse_counts(16, 40, rng, n_centres=6, spread=2)
    noisy = noisy_pyramid(s, 0.3, w=4, rng=seed)
    s_hat, info = reconstruct(noisy, w=4)
    sel = info["selected"]
    for i in range(2, 5):
        kept = set(zip(*(a.tolist() for a in sel[i]), strict=True))
        b = 16 >> i
        for pr, pc in zip(*sel[i - 1], strict=True):
            masses = [s_hat[r * b:(r + 1) * b, c * b:(c + 1) * b].sum()
                      for r in (2 * pr, 2 * pr + 1) for c in (2 * pc, 2 * pc + 1)
                      if (r, c) not in kept]
            assert np.ptp(masses) < 1e-9 if masses else True
    full, (A, Y, wts), _ = _full_lp_objective(noisy, sel, 16)
    assert np.sum(wts * np.abs(Y - A @ s_hat.ravel())) == pytest.approx(full, rel=1e-7, abs=1e-9)


def test_noiseless_sparse_input_is_recovered_exactly():
    s = np.zeros((64, 64))
    for r, c, m in [(3, 4, 10.0), (40, 41, 5.0), (40, 44, 2.0), (63, 0, 1.0), (20, 60, 7.0)]:
        s[r, c] = m
    a_hat = dp_sparse_emd_aggregate(s, 1e9, rng=0)
    assert a_hat == pytest.approx(s / s.sum(), abs=1e-6)


def test_aggregate_output_and_determinism():
    rng = np.random.default_rng(8)
    s = _sparse_counts(128, 100, rng)
    a = dp_sparse_emd_aggregate(s, 1.0, rng=5)
    assert a.shape == (128, 128) and np.all(a >= 0) and a.sum() == pytest.approx(1.0)
    assert np.array_equal(a, dp_sparse_emd_aggregate(s, 1.0, rng=5))
    # The LP has O(w ell) variables.
    _, info = dp_sparse_emd_aggregate(s, 1.0, rng=5, return_info=True)
    assert info["n_variables"] <= 20 * 4 * 8 + 16


def test_beats_laplace_baseline_on_sparse_data():
    rng = np.random.default_rng(9)
    ours, base = [], []
    for seed in range(3):
        s = _sparse_counts(64, 200, rng)
        truth = s / s.sum()
        ours.append(emd_grid(dp_sparse_emd_aggregate(s, 1.0, rng=seed), truth, cell_size=1 / 64))
        base.append(emd_grid(laplace_baseline(s, 1.0, rng=seed), truth, cell_size=1 / 64))
    assert np.mean(ours) < 0.5 * np.mean(base)


def test_all_negative_measurements_give_zero_then_uniform():
    noisy = [None, None, -np.ones((4, 4)), -np.ones((8, 8))]
    s_hat, _ = reconstruct(noisy, w=20)
    assert np.all(s_hat == 0)


@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(counts=np.ones((6, 6)), epsilon=1.0), ValueError, "power of two"),
    (dict(counts=np.ones((4, 8)), epsilon=1.0), ValueError, "square"),
    (dict(counts=-np.ones((4, 4)), epsilon=1.0), ValueError, "non-negative"),
    (dict(counts=np.ones((4, 4)), epsilon=-1.0), ValueError, "epsilon must be > 0"),
    (dict(counts=np.ones((4, 4)), epsilon=1.0, w=0), ValueError, "w must be >= 1"),
    (dict(counts=np.ones((4, 4)), epsilon=1.0, gamma=1.5), ValueError, "gamma"),
    (dict(counts=np.ones((4, 4)), epsilon=1.0, rng="x"), TypeError, "rng"),
])
def test_aggregate_rejects_bad_input(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        dp_sparse_emd_aggregate(**kwargs)


# ---------------------------------------------------------------- baseline -----------------------

def test_laplace_baseline():
    rng = np.random.default_rng(10)
    s = _sparse_counts(64, 100, rng)
    out = laplace_baseline(s, 1e9, rng=0)
    assert out == pytest.approx(s / s.sum(), abs=1e-8)
    top = laplace_baseline(s, 1.0, top_percent=1.0, rng=0)
    assert np.count_nonzero(top) <= int(np.ceil(0.01 * 64 * 64))
    assert top.sum() == pytest.approx(1.0)
    # Noise scale 1/eps on every cell (sensitivity 1). One heavy cell C among N empty ones keeps
    # the share C / (C + sum max(Lap(b), 0)) and E max(Lap(b), 0) = b / 2, so b is recoverable.
    heavy = np.zeros((256, 256))
    heavy[0, 0] = 1e4
    share = laplace_baseline(heavy, 0.5, rng=1)[0, 0]
    b_hat = 2 * (1e4 / share - 1e4) / (heavy.size - 1)
    assert b_hat == pytest.approx(1 / 0.5, rel=0.02)
    with pytest.raises(ValueError, match="top_percent"):
        laplace_baseline(s, 1.0, top_percent=150)


# ---------------------------------------------------------------- heatmap & users ----------------

def test_gaussian_heatmap_matches_section_2_3_formula():
    rng = np.random.default_rng(11)
    p = rng.random((6, 5))
    sigma = 0.15
    H = gaussian_heatmap(p, sigma)
    pts = [(i / 6, j / 5) for i in range(6) for j in range(5)]
    ref = np.zeros(30)
    for k, (x, y) in enumerate(pts):
        for k2, (x2, y2) in enumerate(pts):
            Z = sum(np.exp(-((x2 - a) ** 2 + (y2 - b) ** 2) / (2 * sigma**2)) for a, b in pts)
            ref[k] += np.exp(-((x - x2) ** 2 + (y - y2) ** 2) / (2 * sigma**2)) / Z * p.ravel()[k2]
    assert H.ravel() == pytest.approx(ref, rel=1e-12)
    assert H.sum() == pytest.approx(p.sum())
    assert gaussian_heatmap(p, 1e-4) == pytest.approx(p)


def test_user_distributions_and_cells():
    users = np.array([7, 7, 7, 3, 9, 9])
    x = np.array([0.0, 1.0, 0.49, 0.5, 0.99, 2.0])
    y = np.array([0.0, 1.0, 0.49, 0.5, 0.01, 0.5])
    row, col, inside = points_to_cells(x, y, delta=2, bounds=(0, 1, 0, 1))
    assert inside.tolist() == [True] * 5 + [False]
    assert row[:5].tolist() == [0, 1, 0, 1, 0] and col[:5].tolist() == [0, 1, 0, 1, 1]
    ids, P = user_distributions(users[inside], row[inside], col[inside], delta=2)
    assert ids.tolist() == [3, 7, 9]
    D = P.toarray()
    assert D.sum(axis=1) == pytest.approx([1, 1, 1])
    assert D[1].tolist() == pytest.approx([2 / 3, 0, 0, 1 / 3])
    assert D[2].tolist() == pytest.approx([0, 1, 0, 0])
    with pytest.raises(ValueError, match="bounds"):
        points_to_cells(x, y, delta=2, bounds=(1, 0, 0, 1))
    with pytest.raises(ValueError, match="row and col"):
        user_distributions(users, row, col, delta=2)


# ---------------------------------------------------------------- command line -------------------

def test_heatmap_command(tmp_path):
    from mdp.cli.main import main

    rng = np.random.default_rng(12)
    lines = ["user,x,y"] + [f"{u},{rng.normal(0.3 + 0.4 * (u % 2), 0.05):.4f},{rng.uniform(0, 1):.4f}"
                            for u in rng.integers(0, 60, 400)]
    src = tmp_path / "points.csv"
    src.write_text("\n".join(lines) + "\n")
    out, npy = tmp_path / "heat.png", tmp_path / "a.npy"
    assert main(["heatmap", str(src), "--epsilon", "1", "--delta-grid", "32", "--bounds", "0", "1",
                 "0", "1", "--seed", "0", "-o", str(out), "--save-npy", str(npy)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # --max-memory limits the grid's arrays, checked before the points are read
    assert main(["heatmap", str(src), "--epsilon", "1", "--delta-grid", "32", "--bounds", "0", "1",
                 "0", "1", "--max-memory", "10KB", "-o", str(tmp_path / "h2.png")]) == 2
    assert not (tmp_path / "h2.png").exists()
    a = np.load(npy)
    assert a.shape == (32, 32) and a.sum() == pytest.approx(1.0)
    bad = tmp_path / "bad.csv"
    bad.write_text("user,x,y\n1,0.1,0.2\n2,abc,0.3\n")
    from geo.heatmap_command import read_points

    with pytest.raises(ValueError, match="line 3"):
        read_points(bad)
    assert main(["heatmap", str(bad), "--epsilon", "1", "-o", str(out)]) == 2


def test_heatmap_refuses_a_grid_beyond_memory_before_work(tmp_path, capsys):
    # --delta-grid 1048576 died with "MemoryError: std::bad_alloc"
    from mdp.cli.main import main

    src = tmp_path / "points.csv"
    src.write_text("user,x,y\n1,0.1,0.2\n2,0.5,0.3\n")
    out = tmp_path / "heat.png"
    assert main(["heatmap", str(src), "--epsilon", "1", "--delta-grid", "1048576", "--bounds",
                 "0", "1", "0", "1", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "1048576 x 1048576 heatmap grid" in err and "needs about" in err
    assert "Traceback" not in err and not out.exists()
