import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import mdp
from mdp import MetricSpace, PrivacyError
from mdp.families.exponential import exponential_log_matrix, exponential_matrix
from mdp.privacy.exact import pure_triple_holds
from mdp.privacy.sampling import ExactSampler, _alias_tables, certified_sampler


def space(n=8, seed=0, scale=1.0):
    return MetricSpace.from_points(scale * np.random.default_rng(seed).uniform(size=(n, 2)))


def exact_rows(A):
    """The normalised float rows as exact fractions (what the sampler must draw)."""
    out = []
    for row in A:
        F = [Fraction(float(x)) for x in row]
        T = sum(F)
        out.append([f / T for f in F])
    return out


def sampled_is_private(S, D, limit):
    """Exact check of the pure inequality on the sampler's exact distribution."""
    P = [S.row_distribution(u) for u in range(S.n)]
    for u in range(S.n):
        for v in range(S.n):
            if u != v:
                c = Fraction(limit) * Fraction(float(D[u, v]))
                if not all(pure_triple_holds(P[u][w], P[v][w], c) for w in range(S.n)):
                    return False
    return True


def test_alias_tables_reproduce_integer_weights_exactly():
    rng = np.random.default_rng(0)
    m, C = 9, 1 << 20
    W = rng.integers(0, 3 * C, size=(50, m - 1))
    W = np.concatenate([W, np.zeros((50, 1), dtype=np.int64)], axis=1)
    W[:, -1] = m * C - W.sum(axis=1)
    W = W[W[:, -1] >= 0]
    W[0] = 0
    W[0, 3] = m * C                                       # one certain item
    thr, item, alias = _alias_tables(W[:, :-1], C)          # the last item is the residual
    for u in range(len(W)):
        mass = np.zeros(m, dtype=np.int64)
        sl = slice(u * m, (u + 1) * m)
        np.add.at(mass, item[sl], thr[sl])
        np.add.at(mass, alias[sl], C - thr[sl])
        assert np.array_equal(mass, W[u])


def test_row_distribution_is_exactly_the_normalised_row():
    rng = np.random.default_rng(1)
    A = rng.dirichlet(np.ones(7) * 0.3, size=7)
    A[0, 3] = 1e-30
    A[1, 2] = 5e-320                                      # subnormal
    A[2, 5] = 0.0
    A /= A.sum(axis=1, keepdims=True)
    S = ExactSampler(A)
    for u, row in enumerate(exact_rows(A)):
        assert S.row_distribution(u) == row
    assert S.row_distribution(0)[3] > 0 and S.row_distribution(2)[5] == 0


def test_one_in_1e30_is_reachable():
    A = np.array([[1.0, 1e-30, 0.0], [0.4, 0.3, 0.3], [0.2, 0.3, 0.5]])
    S = ExactSampler(A)
    assert S.row_distribution(0)[1] == Fraction(1e-30) / (1 + Fraction(1e-30))
    # force the alias draw onto the residual item, then the residual integer onto output 1
    m, C = S._m, S._C
    thr, item, alias = (t[:m] for t in S._table()[3:])
    j = next(c for c in range(m) if item[c] == S.n or alias[c] == S.n)
    V = 0 if item[j] == S.n else C - 1
    assert V < thr[j] if item[j] == S.n else V >= thr[j]
    cum, total = S._residual_table(0)
    rows, cols, words = np.array([0, 0, 0]), np.array([j] * 3), np.array([V] * 3)
    picks = iter([cum[0], cum[0] - 1, total - 1])         # first integer of output 1, last of 0, ...
    out = S._draw(rows, cols, words, lambda N: next(picks))
    assert out.tolist() == [1, 0, 1]
    # and an ordinary draw never leaves the support
    assert set(S.sample(np.zeros(10_000, dtype=int), rng=0).tolist()) <= {0, 1}


@pytest.mark.parametrize("log", [False, True])
def test_chi_square_on_a_million_draws(log):
    s = space(6, 2)
    L = exponential_log_matrix(s.distances, 3.0)
    S = ExactSampler(L if log else np.exp(L), log=log)
    rng = np.random.default_rng(12345)
    for u in (0, 3, 5):
        out = S.sample(np.full(1_000_000, u), rng)
        counts = np.bincount(out, minlength=6)
        p = np.array([float(x) for x in S.row_distribution(u)])
        np.testing.assert_allclose(p, np.exp(L[u]), rtol=1e-12)
        assert stats.chisquare(counts, 1_000_000 * p).pvalue > 1e-4


def test_rng_none_uses_fresh_entropy_and_seeds_reproduce():
    S = ExactSampler(np.full((50, 50), 1 / 50))
    rows = np.zeros(200, dtype=int)
    assert not np.array_equal(S.sample(rows), S.sample(rows))
    assert np.array_equal(S.sample(rows, rng=7), S.sample(rows, rng=7))


def test_sampled_matrix_passes_exact_check():
    s = space(5, 3)
    D = s.distances
    for eps in (0.5, 4.0):
        cert, S = certified_sampler(exponential_matrix(D, eps), D, eps)
        rep = cert.report["sampling"]
        assert rep["measured_eps"] <= rep["certified_eps"]
        assert sampled_is_private(S, D, rep["certified_eps"])
        # the bound is tight: the exact level of the sampled matrix is within 1e-9 of it
        assert not sampled_is_private(S, D, rep["measured_eps"] * (1 - 1e-9))


def test_log_matrix_far_below_float_range_sampled_exactly():
    s = space(8, 4)
    D = s.distances
    eps = 1e4 / D.max()
    cert, S = certified_sampler(exponential_log_matrix(D, eps), D, eps, log=True)
    assert cert.report["sampling"]["measured_eps"] <= cert.report["certified_eps"]
    P = S.row_distribution(0)
    assert min(P) > 0 and min(P) < Fraction(1, 10 ** 300)       # e^-hundreds stays positive
    with pytest.raises(ValueError):
        S.sample([8])


def test_sampler_refuses_a_sampled_matrix_over_the_limit():
    # rows 0 and 1 differ by log-ratio x on two outputs; row 1 sums to 1 + x^2 / 4 (within the
    # 1e-12 certification tolerance), and normalising it adds x^2 / 4 to the pair's log-ratio
    x = 1e-6
    D = np.array([[0, 1e-3, 1], [1e-3, 0, 1], [1, 1, 0.0]])
    A = np.array([[0.5, 0.25, 0.25], [0.5, 0.25 * math.exp(x), 0.25 * math.exp(-x)],
                  [0.5, 0.25, 0.25]])
    from mdp import certify, eps_tight

    level = eps_tight(A, D)
    assert level == pytest.approx(x / 1e-3, rel=1e-6)
    M, rep = certify(A, D, level)                          # the matrix itself passes
    S = ExactSampler(M)
    sampled = S.measure_eps(D)
    assert sampled == pytest.approx((x + x * x / 4) / 1e-3, rel=1e-6) and sampled > rep["certified_eps"]
    with pytest.raises(PrivacyError, match="exactly sampled"):
        S.certify(D, level)
    assert S.certify(D, level * (1 + 1e-6))["measured_eps"] == sampled


# -- log-probabilities beyond machine-integer exponents -------------------------------------------
@pytest.mark.parametrize("eps", [1e19, 1e50, 1e300])
def test_huge_epsilon_is_refused_before_sampling(eps):
    # exponents of exp(-eps d) beyond int64 once wrapped around: a bare RuntimeError at 1e19,
    # an identity sampler (infinitely private) passed off as 5e49-mDP at 1e50
    sp = mdp.MetricSpace.from_points([[0.0], [2.0], [5.0]])
    with pytest.raises(mdp.errors.BuildError, match=r"cannot be sampled exactly.*lower epsilon"):
        mdp.build("exponential", sp, eps)


@pytest.mark.parametrize("eps", [1e19, 1e300])
def test_huge_log_probabilities_are_refused_by_the_sampler(eps):
    L = np.array([[0.0, -eps], [-eps, 0.0]])
    with pytest.raises(mdp.errors.BuildError, match="binary orders of magnitude"):
        ExactSampler(L, log=True)


def test_large_epsilon_within_range_samples_the_certified_matrix_exactly():
    # eps d = 2e5 and 5e5: entries exp(-2e5) are far below float64, yet positive in what is drawn
    sp = mdp.MetricSpace.from_points([[0.0], [2.0], [5.0]])
    m = mdp.build("exponential", sp, 1e5)
    sampling = m.stats["privacy"]["sampling"]
    assert sampling["measured_eps"] <= 1e5 * (1 + 1e-9)
    row = m._sampler.row_distribution(0)
    assert sum(row) == 1 and all(p > 0 for p in row)
    # ln of the exact ratio of the two smallest outputs of row 0 is -eps (5 - 2) / 2 (the
    # exponential mechanism's exp(-eps d / 2)) within the bit-length rounding
    ratio = row[2] / row[1]
    log_ratio = (ratio.numerator.bit_length() - ratio.denominator.bit_length()) * math.log(2)
    assert abs(log_ratio - (-1.5e5)) < 2.0


def _lockstep_alias_reference(W, C):
    """Vose's two-pointer method, all rows in lockstep in NumPy (the compiled kernel's reference)."""
    n, m = W.shape
    order = np.argsort(W, axis=1, kind="stable")
    w = np.take_along_axis(W, order, axis=1)
    thr = np.empty((n, m), dtype=np.int64)
    alias = np.empty((n, m), dtype=np.int64)
    rows = np.arange(n)
    i = np.zeros(n, dtype=np.int64)
    j = np.full(n, m - 1, dtype=np.int64)
    rem = w[:, m - 1].copy()
    for _ in range(m - 1):
        own = rem < C
        col = np.where(own, j, i)
        wi = w[rows, i]
        thr[rows, col] = np.where(own, rem, wi)
        alias[rows, col] = np.where(own, j - 1, j)
        rem = np.where(own, w[rows, np.maximum(j - 1, 0)] - (C - rem), rem - (C - wi))
        i = np.where(own, i, i + 1)
        j = np.where(own, j - 1, j)
    thr[rows, j] = rem
    alias[rows, j] = j
    return thr.ravel(), order.ravel(), np.take_along_axis(order, alias, axis=1).ravel()


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 30), st.integers(3, 40), st.sampled_from(["random", "ties", "one"]),
       st.integers(0, 2**32))
def test_compiled_alias_tables_equal_the_lockstep_reference(n, bits, kind, seed):
    # the compiled per-row tables are the lockstep NumPy method's, entry for entry (ties in the
    # weights included: both sort stably), and every row's exact masses are its weights
    rng = np.random.default_rng(seed)
    m, C = n + 1, 1 << bits
    if kind == "random":
        q = rng.integers(0, C, size=(n, n), dtype=np.int64)
    elif kind == "ties":
        q = rng.integers(0, 3, size=(n, n), dtype=np.int64) * (C // 2)
    else:
        q = np.zeros((n, n), dtype=np.int64)
        q[:, rng.integers(n)] = m * C // 2
    W = np.concatenate([q, (m * C - q.sum(axis=1))[:, None]], axis=1)
    got = _alias_tables(q, C)
    for a, b in zip(_lockstep_alias_reference(W, C), got, strict=True):
        assert np.array_equal(a, b)
    thr, item, alias = (x.reshape(n, m) for x in got)
    for u in range(n):
        mass = np.zeros(m, dtype=object)
        for t, it, al in zip(thr[u].tolist(), item[u].tolist(), alias[u].tolist(), strict=True):
            mass[it] += t
            mass[al] += C - t
        assert mass.tolist() == W[u].tolist()


def test_measurement_from_row_blocks_equals_the_whole_tables():
    # the privacy measurement is made from blocks of rows at construction, the tables at the
    # first draw: both must describe the same exact weights
    from mdp.privacy.sampling import _row_sum_bounds

    s = space(40, 3)
    L = exponential_log_matrix(s.distances, 2.0)
    for A, log in ((L, True), (np.exp(L), False)):
        S = ExactSampler(A, log=log)
        before = S.measure_eps(s.distances)
        mant, expo = S._table()[:2]
        lo, hi = _row_sum_bounds(mant, expo)
        assert np.array_equal(lo, S._sigma_lo) and np.array_equal(hi, S._sigma_hi)
        assert S.measure_eps(s.distances) == before
        keys = [mant[u].tobytes() + expo[u].tobytes() for u in range(s.n)]
        assert S._group.tolist() == [keys.index(k) for k in keys]


def test_a_writeable_matrix_is_copied_a_read_only_one_shared():
    A = np.array([[0.5, 0.5], [0.25, 0.75]])
    S = ExactSampler(A)
    A[0] = [1.0, 0.0]                       # the caller's array changes: the sampler does not
    assert S.row_distribution(0) == [Fraction(1, 2), Fraction(1, 2)]
    B = np.array([[0.5, 0.5], [0.25, 0.75]])
    B.setflags(write=False)
    assert ExactSampler(B)._source is B


def _measure_eps_reference(S, distances, R, limit):
    """The NumPy form of ExactSampler.measure_eps (n x n arrays), the compiled kernel's reference."""
    from mdp.privacy.accounting import check_distances
    from mdp.privacy.rounding import DIFF_REL, round_up

    D = check_distances(distances, S.n)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        corr = round_up(round_up(S._sigma_hi[None, :] - S._sigma_lo[:, None], DIFF_REL)
                        / (1.0 + S._sigma_lo[:, None]), DIFF_REL)
        eta = S._eta_row[:, None] + S._eta_row[None, :]
        total = round_up(round_up(R + eta, DIFF_REL) + corr, DIFF_REL)
        E = round_up(np.maximum(total, 0.0) / np.where(D > 0, D, 1.0), DIFF_REL)
    E[S._group[:, None] == S._group[None, :]] = 0.0
    if limit is not None and S.log:
        for u, v in zip(*np.nonzero(E > limit), strict=True):
            r = round_up(S._pair_upper_direct(int(u), int(v)), DIFF_REL)
            direct = round_up(max(round_up(r + float(corr[u, v]), DIFF_REL), 0.0) / D[u, v], DIFF_REL)
            E[u, v] = min(E[u, v], float(direct))
    return float(E.max(initial=0.0))


@settings(max_examples=30, deadline=None)
@given(st.integers(2, 30), st.floats(0.1, 30.0), st.booleans(), st.integers(0, 2**32))
def test_compiled_sampled_level_equals_the_numpy_form(n, eps, twin, seed):
    # the sampled matrix's level, measured pair by pair in compiled code, is the NumPy form's
    # float, with identical rows, pairs re-measured over a limit and a NaN bound
    from mdp.privacy.accounting import pair_log_ratio_bounds

    s = MetricSpace.from_points(np.random.default_rng(seed).normal(size=(n, 2)))
    L = exponential_log_matrix(s.distances, eps)
    if twin:
        L[1] = L[0]
    for log in (True, False):
        S = ExactSampler(L if log else np.exp(L), log=log)
        R, _ = pair_log_ratio_bounds(S._source, log)
        for limit in (None, eps, 0.5 * eps, 0.0):
            assert S.measure_eps(s.distances, pair_log_ratios=R, limit=limit) == \
                _measure_eps_reference(S, s.distances, R, limit)
        R[0, n - 1] = np.nan                # a NaN bound is no bound (unless the rows are one)
        want = _measure_eps_reference(S, s.distances, R, None)
        got = S.measure_eps(s.distances, pair_log_ratios=R)
        assert got == want or (math.isnan(got) and math.isnan(want))
        assert math.isnan(got) == (S._group[0] != S._group[n - 1])
