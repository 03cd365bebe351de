"""Federated heatmaps (seed bagdasaryan2022): noise, SecAgg, tree, schedule, baselines.

Distributions are checked against scipy.stats (nbinom, dlaplace) with chi-square tests at a
fixed seed; partitions against brute force; closed forms exactly.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import scipy.sparse as sp
from scipy import stats

from geo.federated import (
    PrefixTree,
    adaptive_hierarchical_histogram,
    client_noise_share,
    decode_centered,
    discrete_laplace_variance,
    encode_weighted,
    epsilon_for_std,
    flat_onehot,
    geometric_budget,
    histogram_query,
    level_errors,
    modular_clip,
    multi_location_sensitivity,
    node_bitstring,
    noise_std,
    nonprivate,
    nonprivate_best_level,
    oracle_partition,
    polya,
    population_map,
    schedule_epsilon,
    secure_sum,
    shard_noise,
    shard_noise_variance,
    target_sigma,
    to_density,
    to_pixels,
    update_tree,
)
from geo.federated.baselines import _upsample
from geo.federated.secagg import plan_shards


def _chi2_pvalue(samples: np.ndarray, pmf, support: np.ndarray) -> float:
    """Chi-square goodness of fit on ``support`` plus one bin for everything outside it."""
    counts = np.array([(samples == k).sum() for k in support], dtype=float)
    p = pmf(support)
    counts = np.append(counts, samples.size - counts.sum())
    p = np.append(p, max(1.0 - p.sum(), 0.0))
    keep = p * samples.size >= 5
    exp = p[keep] / p[keep].sum() * counts[keep].sum()
    return stats.chisquare(counts[keep], exp).pvalue


# --- Polya shares and the distributed discrete Laplace mechanism (Theorem 4.1) --------------

def test_polya_is_negative_binomial_with_p_one_minus_beta():
    alpha, beta = 0.7, 0.6
    x = polya(alpha, beta, 200_000, rng=1)
    # mean alpha beta / (1 - beta) = 1.05 (p = beta would give alpha (1-beta)/beta = 0.467)
    assert abs(x.mean() - alpha * beta / (1 - beta)) < 0.02
    pv = _chi2_pvalue(x, lambda k: stats.nbinom.pmf(k, alpha, 1 - beta), np.arange(0, 25))
    assert pv > 1e-3


@pytest.mark.parametrize("eps,delta", [(1.0, 1), (0.5, 2)])
def test_full_shard_noise_is_discrete_laplace(eps, delta):
    z = shard_noise(300_000, eps, clients=10_000, sensitivity=delta, rng=2)
    a = eps / delta
    b = math.exp(-a)
    assert discrete_laplace_variance(eps, delta) == pytest.approx(2 * b / (1 - b) ** 2)
    assert discrete_laplace_variance(eps, delta) == pytest.approx(stats.dlaplace.var(a))
    # sample variance within 4 standard errors (kurtosis of dlaplace from scipy)
    var = stats.dlaplace.var(a)
    se = var * math.sqrt((stats.dlaplace.stats(a, moments="k") + 2) / z.size)
    assert abs(z.var() - var) < 4 * se
    assert _chi2_pvalue(z, lambda k: stats.dlaplace.pmf(k, a), np.arange(-15, 16)) > 1e-3


def test_explicit_client_shares_sum_to_discrete_laplace():
    """Theorem 4.1 without the aggregate shortcut: S clients, alpha = 1/S each."""
    rng = np.random.default_rng(3)
    S, eps = 40, 1.0
    shares = np.stack([client_noise_share(50_000, eps, alpha=1 / S, rng=rng) for _ in range(S)])
    z = shares.sum(axis=0)
    assert _chi2_pvalue(z, lambda k: stats.dlaplace.pmf(k, eps), np.arange(-12, 13)) > 1e-3


def test_dropout_overprovisioning():
    eps = 1.0
    # exactly the provisioned 10% drops out: 9,000 survivors carry total alpha 1 -> discrete Laplace
    z = shard_noise(200_000, eps, clients=10_000, dropout=0.1, rng=4)
    assert _chi2_pvalue(z, lambda k: stats.dlaplace.pmf(k, eps), np.arange(-12, 13)) > 1e-3
    # nobody drops out but shares provisioned for 10%: variance inflated by 1 / 0.9
    v = shard_noise_variance(eps, clients=10_000, dropout=0.0, provisioned_dropout=0.1)
    assert v == pytest.approx(discrete_laplace_variance(eps) / 0.9)
    z = shard_noise(400_000, eps, clients=10_000, dropout=0.0, provisioned_dropout=0.1, rng=5)
    assert abs(z.var() / v - 1) < 0.02
    assert abs(z.var() / discrete_laplace_variance(eps) - 1) > 0.06  # really over-provisioned
    # 5% realised out of 10% provisioned: 9,500 x alpha
    assert shard_noise_variance(eps, clients=10_000, dropout=0.05, provisioned_dropout=0.1) == \
        pytest.approx(9_500 / 9_000 * discrete_laplace_variance(eps))
    with pytest.raises(ValueError, match="exceeds provisioned_dropout"):
        shard_noise(10, eps, clients=10_000, dropout=0.2, provisioned_dropout=0.1, rng=0)


def test_epsilon_for_std_inverts_noise_std():
    for sigma in [0.05, 1.0, 3.7, 1e3, 1e6]:
        assert noise_std(epsilon_for_std(sigma)) == pytest.approx(sigma, rel=1e-9)
    for eps in [1e-4, 0.1, 1.0, 5.0]:
        assert epsilon_for_std(noise_std(eps, 3), 3) == pytest.approx(eps, rel=1e-9)
    assert noise_std(0.0) == math.inf


# --- modular clipping and SecAgg --------------------------------------------------------------

def test_modular_clipping_commutes_with_aggregation_under_overflow():
    rng = np.random.default_rng(6)
    m = 2**8
    x = rng.integers(-300, 300, size=(50, 20)) + client_noise_share((50, 20), 0.05, alpha=1 / 50,
                                                                   rng=rng)
    total = x.sum(axis=0)
    assert np.abs(total).max() >= m // 2  # the true sums overflow the centred range
    server = secure_sum(modular_clip(x, m), m)  # each client clips, SecAgg sums mod m
    np.testing.assert_array_equal(server, modular_clip(total, m))
    dec = decode_centered(server, m)
    inside = (total >= -m // 2) & (total < m // 2)
    np.testing.assert_array_equal(dec[inside], total[inside])
    assert np.all(dec[~inside] != total[~inside])
    np.testing.assert_array_equal(np.mod(dec - total, m), 0)


def test_histogram_query_modulus_overflow_and_exactness():
    slots = np.repeat(np.arange(4), [5, 100, 0, 3000])
    noiseless = histogram_query(slots, 4, None, shard_size=1000, modulus=2**32, rng=0)
    np.testing.assert_array_equal(noiseless.counts, [5, 100, 0, 3000])
    assert noiseless.n_shards == 4 and not noiseless.overflow
    small = histogram_query(slots, 4, None, shard_size=10_000, modulus=2**10, rng=0)
    assert small.overflow and small.counts[3] == 3000 - 2**10 * 3
    dropped = histogram_query(slots, 4, 1.0, shard_size=1000, dropout=0.1, rng=0)
    assert dropped.n_reporting == sum(s - s // 10 for s in dropped.shard_sizes)


# --- prefix tree -----------------------------------------------------------------------------

def test_node_bitstring_matches_seed_example():
    assert node_bitstring(4, 12, 5) == "10110001"


def test_prefix_tree_longest_match_partial_split_and_render():
    t = PrefixTree(2)
    t.set_node(1, 1, 1)  # one child (row 1, col 1) only: the root keeps the other 3 quadrants
    assert t.n_slots == 2
    ps = t.pixel_slots()
    assert (ps == 1).sum() == 4 and (ps[2:, 2:] == 1).all() and (ps == 0).sum() == 12
    m = t.render(np.array([6.0, 2.0]))
    assert m.sum() == pytest.approx(8.0)
    assert np.allclose(m[2:, 2:], 0.5) and np.allclose(m[:2, :], 0.5)
    # orphan: delete the level-1 node, keep a grandchild
    t.set_node(2, 3, 3)
    t.set_node(1, 1, 1, present=False)
    assert t.n_slots == 2 and t.assign(np.array([3, 2]), np.array([3, 3])).tolist() == [1, 0]
    full = PrefixTree.full(2, 2)
    assert full.n_slots == 16
    r, c = np.divmod(np.arange(16), 4)
    np.testing.assert_array_equal(full.assign(r, c), np.arange(5, 21) - 5)


def test_update_tree_split_and_collapse():
    t = PrefixTree.full(3, 1)  # 4 slots at level 1
    new, added, removed = update_tree(t, np.array([100.0, 10.0, 2.0, 30.0]), threshold=20.0)
    assert added == 8 and removed == 1  # slots 0 and 3 split, slot 2 (2 <= 5) collapses
    assert new.n_slots == 1 + 1 + 8  # root (lost a child) + slot 1 + 8 children
    assert not new.present[1][2]


def test_schedule_and_target_sigma():
    assert target_sigma(0.5, 20_000, 10, 10_000) == pytest.approx(0.5 * 2000 / math.sqrt(2))
    # eq. (7) as printed: sqrt(ceil(S_max / U)), 1 for U >= S_max, 2 for U = S_max / 4
    assert target_sigma(0.5, 20_000, 10, 10_000, rule="printed") == pytest.approx(1000.0)
    assert target_sigma(0.5, 2_500, 10, 10_000, rule="printed") == pytest.approx(250.0)
    assert target_sigma(0.5, 10_000, 10, 10_000, rule="printed") == target_sigma(0.5, 10_000, 10,
                                                                                  10_000)
    with pytest.raises(ValueError, match="rule"):
        target_sigma(0.5, 10, 10, 10, rule="x")
    assert schedule_epsilon(1.0, 0.3, 2.0) == (0.3, False)
    assert schedule_epsilon(0.5, 0.3, 2.0) == (0.5, True)


def test_adaptive_accounting_and_recovery():
    rng = np.random.default_rng(7)
    depth = 6
    # two hot pixels and a uniform background
    rows = np.concatenate([np.full(6000, 10), np.full(3000, 50), rng.integers(0, 64, 1000)])
    cols = np.concatenate([np.full(6000, 40), np.full(3000, 5), rng.integers(0, 64, 1000)])
    est = adaptive_hierarchical_histogram(rows, cols, depth, 1.0, c=0.3, shard_size=5000, rng=8)
    acc = est.accounting
    assert acc.epsilon_per_user == pytest.approx(1.0, abs=1e-12)
    assert acc.communication == sum(e["slots"] for e in est.log)
    assert acc.rounds == len(est.log) >= 3
    assert est.density.sum() == pytest.approx(1.0)
    assert est.density[10, 40] > 0.3 and est.density[50, 5] > 0.15
    flat = flat_onehot(rows, cols, depth, 1.0, shard_size=5000, rng=8)
    assert acc.communication < flat.accounting.communication


def test_adaptive_ablation_switches():
    rng = np.random.default_rng(13)
    rows = np.concatenate([np.full(6000, 10), rng.integers(0, 64, 4000)])
    cols = np.concatenate([np.full(6000, 40), rng.integers(0, 64, 4000)])
    kw = dict(c=0.3, shard_size=2500)
    base = adaptive_hierarchical_histogram(rows, cols, 6, 1.0, rng=3, **kw)
    # release threshold 0 only removes negative counts, which clipping removes anyway
    zero = adaptive_hierarchical_histogram(rows, cols, 6, 1.0, release_threshold=0.0, rng=3, **kw)
    np.testing.assert_array_equal(base.density, zero.density)
    huge = adaptive_hierarchical_histogram(rows, cols, 6, 1.0, release_threshold=1e9, rng=3, **kw)
    np.testing.assert_allclose(huge.density, 1 / 64**2)
    # per-shard sigma_rem: the first split threshold is sqrt(n_sh) = 2 times smaller
    shard = adaptive_hierarchical_histogram(rows, cols, 6, 1.0, threshold_noise="shard", rng=3,
                                            **kw)
    assert base.log[0]["threshold"] == pytest.approx(2 * shard.log[0]["threshold"])
    with pytest.raises(ValueError, match="threshold_noise"):
        adaptive_hierarchical_histogram(rows, cols, 6, 1.0, threshold_noise="x")
    with pytest.raises(ValueError, match="target_rule"):
        adaptive_hierarchical_histogram(rows, cols, 6, 1.0, target_rule="x")


def test_oracle_partition_matches_brute_force():
    rng = np.random.default_rng(9)
    truth = to_density(rng.gamma(0.3, size=(4, 4)))
    est = {lv: rng.poisson(20 * _blocks(truth, lv) + 1).astype(float) for lv in range(3)}
    got = oracle_partition(est, truth)
    dens = {lv: _upsample(to_density(e), 4 >> lv) / (4 >> lv) ** 2 for lv, e in est.items()}
    best = np.inf
    # partitions of a depth-2 quadtree: root alone, or each quadrant at level 1 or level 2
    cand = [dens[0]]
    for choice in itertools.product([1, 2], repeat=4):
        m = np.empty((4, 4))
        for q, lv in enumerate(choice):
            r, c = divmod(q, 2)
            m[2 * r:2 * r + 2, 2 * c:2 * c + 2] = dens[lv][2 * r:2 * r + 2, 2 * c:2 * c + 2]
        cand.append(m)
    best = min(((m - truth) ** 2).sum() for m in cand)
    assert ((got - truth) ** 2).sum() == pytest.approx(best, rel=1e-12)


def test_nonprivate_best_level_matches_brute_force():
    """The seed's non-private baseline (section 6.2) against an explicit pixel loop: every level
    rendered cell by cell, MSE summed pixel by pixel, the best level kept."""
    rng = np.random.default_rng(11)
    depth, side = 3, 8
    truth = to_density(rng.gamma(0.5, size=(side, side)))
    rows, cols = rng.integers(0, side, 60), rng.integers(0, side, 60)
    est = nonprivate_best_level(rows, cols, depth, truth, shard_size=1000, rng=0)
    errs = {}
    maps = {}
    for lv in range(depth + 1):
        P = side >> lv
        m = np.zeros((side, side))
        for x in range(side):
            for y in range(side):
                same = [(r // P == x // P) and (c // P == y // P) for r, c in zip(rows, cols, strict=True)]
                m[x, y] = sum(same) / rows.size / P**2
        maps[lv] = m
        errs[lv] = sum((m[x, y] - truth[x, y]) ** 2 for x in range(side) for y in range(side)) / side**2
    best = min(errs, key=errs.get)
    assert est.log[0]["level"] == best
    for lv in errs:
        assert est.log[0]["mse_by_level"][lv] == pytest.approx(errs[lv], rel=1e-12)
    np.testing.assert_allclose(est.density, maps[best], rtol=1e-12, atol=1e-15)
    assert est.accounting.communication == 2


def test_level_errors_closed_form_and_oracle_never_worse():
    rng = np.random.default_rng(12)
    truth = to_density(rng.gamma(0.3, size=(16, 16)))
    counts = rng.poisson(5, size=(4, 4)).astype(float)
    dense = _upsample(to_density(counts), 4) / 16
    assert level_errors(counts, truth) == pytest.approx(((dense - truth) ** 2).sum(), rel=1e-12)
    rows, cols = rng.integers(0, 16, 300), rng.integers(0, 16, 300)
    for seed in range(5):
        one = nonprivate_best_level(rows, cols, 4, truth, shard_size=100, dropout=0.1, rng=seed)
        cell = nonprivate(rows, cols, 4, truth, shard_size=100, dropout=0.1, rng=seed)
        # the same survivors; the per-cell oracle has the single level among its choices
        assert ((cell.density - truth) ** 2).sum() <= ((one.density - truth) ** 2).sum() + 1e-15
    # dropouts: only the survivors of each shard report (seed's 10% dropout setting)
    keep = np.concatenate([s for _, s in plan_shards(300, 100, dropout=0.1, rng=0)])
    got = nonprivate_best_level(rows, cols, 4, truth, shard_size=100, dropout=0.1, rng=0)
    lv = got.log[0]["level"]
    P = 16 >> lv
    h = np.bincount((rows[keep] // P) * (16 // P) + cols[keep] // P, minlength=(16 // P) ** 2)
    np.testing.assert_allclose(got.density, _upsample(h.reshape(16 // P, 16 // P) / keep.size, P)
                               / P**2)


def _blocks(a, lv):
    f = a.shape[0] >> lv
    return a.reshape(1 << lv, f, 1 << lv, f).sum(axis=(1, 3))


def test_geometric_budget():
    e = geometric_budget(1.0, range(1, 11))
    assert e.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(e[1:] / e[:-1], 2 ** (1 / 3))


# --- multiple locations per user (section 5.7) ----------------------------------------------

def test_encode_weighted_bound_and_unbiased():
    visits = sp.csr_matrix(np.array([[3, 0, 1, 0, 0], [1, 1, 1, 1, 1], [0, 0, 0, 0, 7]]))
    gamma, d = 10.0, 5
    assert multi_location_sensitivity(gamma, d) == 15.0
    rng = np.random.default_rng(10)
    acc = np.zeros((3, 5))
    n = 4000
    for _ in range(n):
        enc = encode_weighted(visits, gamma, rng=rng)
        assert enc.dtype == np.int64
        assert np.abs(enc).sum(axis=1).max() <= gamma + d
        acc += enc.toarray()
    expect = gamma * visits.toarray() / visits.toarray().sum(axis=1, keepdims=True)
    np.testing.assert_allclose(acc / n, expect, atol=0.03)


# --- input validation --------------------------------------------------------------------------

def test_bad_inputs_raise_with_names():
    with pytest.raises(ValueError, match="epsilon must be > 0, got -1"):
        shard_noise(3, -1, clients=10)
    with pytest.raises(ValueError, match="clients must be >= 1"):
        shard_noise(3, 1.0, clients=0)
    with pytest.raises(ValueError, match="modulus must be >= 2"):
        modular_clip([1], 1)
    with pytest.raises(ValueError, match="slot indices"):
        histogram_query(np.array([0, 5]), 4, 1.0)
    with pytest.raises(TypeError, match="reports"):
        histogram_query(np.array([0.5]), 4, 1.0)
    with pytest.raises(ValueError, match="pixel coordinates"):
        PrefixTree(2).assign(np.array([4]), np.array([0]))


# --- real data -------------------------------------------------------------------------------

def test_population_map_from_gowalla(shared_data):
    from geo.checkins import read_checkins

    df = read_checkins(shared_data / "gowalla_nyc_checkins.txt.gz")
    r, c, keep = to_pixels(df["lat"].to_numpy(), df["lon"].to_numpy(), 8)
    assert keep.sum() == len(df) == 138_957  # the extract is cut to the NYC box
    f = population_map(df["lat"].to_numpy(), df["lon"].to_numpy(), 8, smooth=2.0)
    assert f.shape == (256, 256) and f.sum() == pytest.approx(1.0) and f.min() >= 0
