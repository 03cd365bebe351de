import itertools
from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mdp import MetricSpace, build, eps_tight, loss
from mdp.errors import ParameterError
from mdp.privacy.accounting import pairwise_eps


def brute_eps_tight(M, D, delta):
    """Reference: loop over pairs and ALL output subsets S, bisect on eps."""
    n = M.shape[0]
    best = 0.0
    subsets = [list(S) for k in range(1, n + 1) for S in itertools.combinations(range(n), k)]
    for u in range(n):
        for v in range(n):
            if u == v:
                continue
            def ok(e, u=u, v=v):
                return all(M[u, S].sum() <= (np.exp(e * D[u, v]) * M[v, S].sum() if M[v, S].sum() > 0 else 0.0)
                           + delta + 1e-13 for S in subsets)
            if not ok(500.0):
                return np.inf
            lo, hi = 0.0, 500.0
            if ok(0.0):
                continue
            for _ in range(200):
                mid = 0.5 * (lo + hi)
                lo, hi = (lo, mid) if ok(mid) else (mid, hi)
            best = max(best, hi)
    return best


def random_space(n, seed):
    return MetricSpace.from_points(np.random.default_rng(seed).uniform(size=(n, 2)))


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("delta", [0.0, 1e-3, 0.05])
def test_eps_tight_matches_brute_force(seed, delta):
    rng = np.random.default_rng(seed)
    s = random_space(5, seed)
    M = rng.dirichlet(np.ones(5), size=5)
    assert eps_tight(M, s.distances, delta) == pytest.approx(brute_eps_tight(M, s.distances, delta), rel=1e-7, abs=1e-9)


def test_eps_tight_with_zeros_is_exact():
    D = random_space(4, 3).distances
    M = np.array([[0.5, 0.5, 0, 0], [0.4, 0.6, 0, 0], [0.6, 0.3, 0.05, 0.05], [0.2, 0.7, 0.05, 0.05]])
    assert eps_tight(M, D, 0.0) == np.inf             # 0 vs positive at finite distance
    assert eps_tight(M, D, 0.05) == np.inf            # lonely mass 0.1 > delta
    # with delta above the lonely mass the level is finite and equals brute force
    assert eps_tight(M, D, 0.15) == pytest.approx(brute_eps_tight(M, D, 0.15), rel=1e-7)
    assert 0 < eps_tight(M, D, 0.15) < np.inf


@pytest.mark.parametrize("eps, d, delta", [(1.0, 1.0, 0.0), (2.0, 0.7, 0.0), (3.0, 1.3, 1e-3), (0.5, 2.0, 0.01)])
def test_exponential_two_points_closed_form(eps, d, delta):
    s = MetricSpace.from_distances(np.array([[0, d], [d, 0.0]]))
    m = build("exponential", s, eps)
    a = np.exp(-eps * d / 2)
    # f(t) = (1 - t a) / (1 + a) <= delta  =>  t = (1 - delta (1 + a)) / a
    expected = max(0.0, np.log((1 - delta * (1 + a)) / a) / d)
    assert m.eps_tight(delta) == pytest.approx(expected, rel=1e-10)
    if delta == 0:
        assert expected == pytest.approx(eps / 2)


def test_eps_tight_agrees_with_dp_accounting():
    from dp_accounting.pld import privacy_loss_distribution as pld

    rng = np.random.default_rng(7)
    s = random_space(6, 7)
    M = rng.dirichlet(np.ones(6) * 2, size=6)
    delta = 1e-2
    E = pairwise_eps(M, s.distances, delta)
    u, v = np.unravel_index(np.argmax(E), E.shape)
    # dp_accounting gives the eps (not scaled by distance) of the pair of pmfs
    # PLD of (upper = row u, lower = row v), given as log-pmfs
    log_p = {w: float(np.log(M[u, w])) for w in range(6)}
    log_q = {w: float(np.log(M[v, w])) for w in range(6)}
    dist = pld.from_two_probability_mass_functions(log_q, log_p, value_discretization_interval=1e-5)
    eps_pair = dist.get_epsilon_for_delta(delta)
    assert E[u, v] * s.distances[u, v] == pytest.approx(eps_pair, abs=1e-3)


def test_loss_worst_case_and_quantile():
    D = np.array([[0, 1, 2], [1, 0, 1], [2, 1, 0]], dtype=float)
    M = np.array([[0.5, 0.5, 0], [0, 1, 0], [0, 0.5, 0.5]])
    assert loss(M, D) == pytest.approx(0.5)
    assert loss(M, D, q=0.0) == pytest.approx(0.0)
    assert loss(M, D, q=0.5) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="q must be in"):
        loss(M, D, q=1.5)


def test_eps_tight_speed_n200():
    import time

    s = random_space(200, 0)
    m = build("exponential", s, 3.0)
    t = time.perf_counter()
    e = m.eps_tight(1e-3)
    assert time.perf_counter() - t < 20 and 0 < e < 3.0


# -- guaranteed upper bounds and log-probabilities -------------------------------------------------


def exact_delta_level(M, D, delta, prec=50):
    """max over pairs of ln(t*)/d, t* = max(1, max_S (p(S) - delta) / q(S)), in exact rationals."""
    n = len(M)
    F = [[Fraction(float(x)) for x in row] for row in M]
    dl = Fraction(float(delta))
    best = Decimal(0)
    subsets = [S for k in range(1, n + 1) for S in itertools.combinations(range(n), k)]
    with localcontext() as ctx:
        ctx.prec = prec
        for u in range(n):
            for v in range(n):
                if u == v:
                    continue
                t = Fraction(1)
                for S in subsets:
                    p = sum(F[u][w] for w in S)
                    q = sum(F[v][w] for w in S)
                    if q == 0:
                        if p > dl:
                            return Decimal("Infinity")
                        continue
                    t = max(t, (p - dl) / q)
                best = max(best, (Decimal(t.numerator) / Decimal(t.denominator)).ln()
                           / Decimal(float(D[u, v])))
    return best


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("delta", [0.0, 1e-3, 0.05])
def test_eps_tight_is_a_tight_upper_bound(seed, delta):
    rng = np.random.default_rng(seed)
    pts = rng.uniform(size=(5, 1))
    pts[4] = pts[0] + 1e-12 * (seed + 1)                 # a near-duplicate pair
    D = MetricSpace.from_points(pts).distances
    M = rng.dirichlet(np.ones(5), size=5)
    M[4] = M[0] * (1 + 1e-13 * rng.uniform(-1, 1, 5))
    M[4] /= M[4].sum()
    truth = exact_delta_level(M, D, delta)
    got = eps_tight(M, D, delta)
    assert Decimal(got) >= truth
    assert Decimal(got) <= truth * (1 + Decimal("1e-9")) + Decimal("1e-300")


def test_log_probabilities_measured_exactly():
    rng = np.random.default_rng(5)
    s = random_space(6, 5)
    L = np.log(rng.dirichlet(np.ones(6), size=6))
    L -= np.log(np.exp(L).sum(axis=1, keepdims=True))
    D = s.distances
    exact = max((Fraction(float(L[u, w])) - Fraction(float(L[v, w]))) / Fraction(float(D[u, v]))
                for u in range(6) for v in range(6) if u != v for w in range(6))
    got = eps_tight(L, D, log=True)
    assert Fraction(got) >= exact and Fraction(np.nextafter(got, 0)) < exact   # smallest float above
    M = np.exp(L)
    assert eps_tight(L, D, 1e-2, log=True) == pytest.approx(eps_tight(M, D, 1e-2), rel=1e-9)
    assert loss(L, D, log=True) == pytest.approx(loss(M, D), rel=1e-14)
    assert loss(L, D, 0.5, log=True) == pytest.approx(loss(M, D, 0.5), rel=1e-14)


def test_eps_tight_log_domain_far_below_float_range():
    D = np.array([[0.0, 1.0], [1.0, 0.0]]) * 4000
    L = np.array([[0.0, -4000.0], [-4000.0, 0.0]])       # e^-4000 underflows float64
    L -= np.logaddexp(0.0, -4000.0)
    assert eps_tight(L, D, log=True) == pytest.approx(1.0, rel=1e-15)
    assert eps_tight(L, D, log=True) >= 1.0
    # with delta the true level is (4000 + log(1 - delta)) / 4000; underflowing outputs are
    # counted conservatively, so the bound lies between it and the pure level
    truth = (4000 + np.log1p(-1e-3)) / 4000
    assert truth <= eps_tight(L, D, 1e-3, log=True) <= 1.0 * (1 + 1e-15)


def test_libm_accuracy_assumption():
    """The one assumption of the sound check: numpy's log1p, log and exp are accurate to
    LIBM_RTOL relative (docs/design/verification.md). Checked against Decimal at 60 digits."""
    from mdp.privacy.accounting import LIBM_RTOL

    rng = np.random.default_rng(0)
    xs = np.concatenate([10.0 ** rng.uniform(-300, 0, 300), rng.uniform(0, 5, 300),
                         -rng.uniform(0, 1, 300)])
    xl = np.concatenate([10.0 ** rng.uniform(-320, 0, 300), 1 + rng.uniform(-1e-3, 1e-3, 300)])
    xe = np.concatenate([rng.uniform(-700, 0, 300), rng.uniform(-0.4, 0.4, 300)])
    worst = 0.0
    with localcontext() as ctx:
        ctx.prec = 700                          # exact for 1 + x with |x| >= 1e-320
        for f, ref, values in [(np.log1p, lambda d: (d + 1).ln(), xs), (np.log, lambda d: d.ln(), xl),
                               (np.exp, lambda d: d.exp(), xe)]:
            for x, y in zip(values, f(values), strict=True):
                t = ref(Decimal(float(x)))
                if t != 0:
                    worst = max(worst, float(abs((Decimal(float(y)) - t) / t)))
    assert worst <= LIBM_RTOL / 64                  # observed ~1 unit in the last place


def _pair_max_both(A, op, us=None):
    """``_pair_max`` by NumPy and by the compiled kernel (``KERNEL_MIN_N`` moved either way)."""
    import mdp.privacy.accounting as acc

    old = acc.KERNEL_MIN_N
    try:
        acc.KERNEL_MIN_N = 10 ** 9
        ref = acc._pair_max(A, op, us)
        acc.KERNEL_MIN_N = 1
        fast = acc._pair_max(A, op, us)
    finally:
        acc.KERNEL_MIN_N = old
    return ref, fast


def _hard_matrices(seed):
    rng = np.random.default_rng(seed)
    n = 37                                           # not a multiple of the kernel's row block
    M = rng.random((n, n)) + 1e-3
    M /= M.sum(axis=1, keepdims=True)
    M[3] = M[4]                                      # equal rows: maxima of exactly 0
    M[5] = np.nextafter(M[6], 1.0)                   # rows one ulp apart (Sterbenz subtractions)
    M[7, :5] = 5e-324                                # subnormal denominators: (P - Q) / Q overflows
    M[8, 2] = 1e-300
    return M, np.log(M) * rng.choice([1.0, 1e3], size=(n, 1))   # log rows of very different scale


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_compiled_pair_maxima_equal_numpy_bit_for_bit(seed):
    from mdp.privacy.accounting import _op_log, _op_prob
    from mdp.privacy.pair_kernels import pair_max_log, pair_max_prob

    M, L = _hard_matrices(seed)
    for A, op in ((M, _op_prob), (L, _op_log)):
        for us in (None, np.array([5, 0, 36, 7, 7])):
            ref, fast = _pair_max_both(A, op, us)
            assert ref.shape == fast.shape
            assert np.array_equal(ref, fast)          # inf where a subnormal denominator overflows
            assert np.array_equal(np.signbit(ref) & (ref != 0), np.signbit(fast) & (fast != 0))
            rows = np.arange(len(A)) if us is None else us
            direct = np.empty((len(rows), len(A)))
            if op is _op_prob:
                with np.errstate(over="ignore"):
                    pair_max_prob(A, 1.0 / A, rows, direct)
            else:
                pair_max_log(A, rows, direct)
            assert np.array_equal(ref, direct)
    ref, _ = _pair_max_both(M, _op_prob)
    assert np.isinf(ref[0, 7]) and ref[3, 4] == 0.0


def test_matrices_with_zeros_keep_the_numpy_path():
    import mdp.privacy.accounting as acc
    from mdp.privacy.accounting import _op_prob

    M, _ = _hard_matrices(4)
    M[2, 3] = 0.0
    M[9, 3] = 0.0                                   # 0/0 ignored, 0 against positive gives inf
    old = acc.KERNEL_MIN_N
    try:
        acc.KERNEL_MIN_N = 1
        out = acc._pair_max(M, _op_prob, None)
    finally:
        acc.KERNEL_MIN_N = old
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        brute = np.array([[np.nanmax(np.where((M[u] == 0) & (M[v] == 0), np.nan, (M[u] - M[v]) / M[v]))
                           for v in range(len(M))] for u in range(len(M))])
    assert np.array_equal(out, brute)
    assert np.isinf(out[0, 2]) and np.isfinite(out[2, 9])


@pytest.mark.parametrize("seed", [0, 1])
def test_pruned_probability_kernel_equals_numpy_on_adversarial_rows(seed):
    """The pruning of ``pair_max_prob`` (mdp/privacy/pair_kernels.py) loses no maximiser."""
    from mdp.privacy.accounting import _op_prob
    from mdp.privacy.pair_kernels import PRUNE_MIN, PRUNE_REL

    rng = np.random.default_rng(seed)
    n = 41
    base = rng.random(n) + 0.5
    rows = [base]
    # ratios tied to a few ulps, and spread across the pruning band around the maximum
    for k in (1, 3, 50):
        rows.append(base * (1 + k * 2.0 ** -52 * rng.integers(0, 3, n)))
    for band in (0.3, 1.0, 3.0):
        rows.append(base * (1 + band * PRUNE_REL * rng.random(n)))
    i = np.arange(n)
    rows.append(np.exp(5 * i / n))                   # ratios increasing along w: every w a record
    rows.append(np.exp(-5 * i / n))
    rows.append(base * (0.1 * PRUNE_MIN))            # every ratio below PRUNE_MIN against `base`
    rows.append(base * PRUNE_MIN)                    # the maximum ratio exactly at PRUNE_MIN
    rows.append(base * 1e300)                        # products that overflow against small rows
    rows.append(np.full(n, 1e-300))
    rows.append(rng.random(n) * 10.0 ** rng.integers(-8, 9, n))   # scales 1e-8 .. 1e8
    while len(rows) < n:
        rows.append(rng.random(n) + 1e-3)
    A = np.array(rows)
    ref, fast = _pair_max_both(A, _op_prob)
    assert np.array_equal(ref, fast)


@pytest.mark.parametrize("family", ["exponential", "weighted_exponential", "optimal"])
def test_eps_tight_reuses_the_certification_bounds(family, monkeypatch):
    """A mechanism's eps_tight (delta > 0) takes the certification's pair bounds: the same
    float as the full computation, with no second pass over the triples."""
    import mdp
    from mdp.privacy import accounting

    rng = np.random.default_rng(3)
    space = mdp.MetricSpace.from_points(rng.uniform(size=(25, 2)))
    mech = mdp.build(family, space, epsilon=1.5)
    D = space.distances
    values = mech.log_matrix if mech.representation == "log" else mech.matrix
    full = {d: accounting.eps_tight(values, D, d, log=mech.representation == "log")
            for d in (1e-6, 1e-3, 0.1)}

    def no_pass(*args, **kwargs):
        raise AssertionError("a second pass over the triples")

    monkeypatch.setattr(accounting, "pair_log_ratio_bounds", no_pass)
    for d, value in full.items():
        assert mech.eps_tight(d) == value
    with pytest.raises(AssertionError, match="second pass"):
        mech.eps_tight(0.0)          # the pure level refines with the lower bounds: full pass


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([0.0, 1.0, 2.5, np.inf, -1.0]), min_size=1, max_size=60)
       | st.lists(st.floats(-1e3, 1e3), min_size=1, max_size=60),
       st.integers(1, 70))
def test_descending_chunks_are_the_stable_sort(values, step):
    # eps_tight's pair scan selects its first chunk without sorting everything: the chunks must
    # be exactly those of the stable descending sort (ties by index), whatever the ties
    from mdp.privacy.accounting import _descending_chunks

    v = np.array(values, dtype=float)
    chunks = list(_descending_chunks(v, step))
    assert np.array_equal(np.concatenate(chunks), np.argsort(-v, kind="stable"))
    assert all(len(c) == step for c in chunks[:-1]) and 0 < len(chunks[-1]) <= step


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_compiled_pure_levels_equal_the_numpy_expression(seed):
    # from KERNEL_MIN_N points pure_levels is compiled: the same floats bit for bit (signs of
    # zeros included) on ratios and distances spanning the whole float64 range, infinities,
    # zeros and subnormals
    from mdp.privacy.accounting import KERNEL_MIN_N, pure_levels
    from mdp.privacy.rounding import DIFF_REL, round_down, round_up

    rng = np.random.default_rng(seed)
    n = KERNEL_MIN_N + 7
    R = rng.normal(size=(n, n)) * 10.0 ** rng.integers(-300, 300, size=(n, n))
    for value, share in ((np.inf, 0.05), (-np.inf, 0.05), (0.0, 0.05), (-0.0, 0.02), (5e-324, 0.02)):
        R[rng.random((n, n)) < share] = value
    D = np.abs(rng.normal(size=(n, n))) * 10.0 ** rng.integers(-300, 300, size=(n, n))
    np.fill_diagonal(D, 0.0)
    for side in (round_up, round_down):
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            want = side(np.maximum(R, 0.0) / np.where(D > 0, D, 1.0), DIFF_REL)
        want = np.maximum(want, 0.0)
        np.fill_diagonal(want, 0.0)
        got = pure_levels(R, D, side)
        assert np.array_equal(got, want) and np.array_equal(np.signbit(got), np.signbit(want))


def test_row_logsumexp_is_scipy_bit_for_bit():
    # by blocks of rows, the same floats as SciPy's whole-matrix call (rows of -inf included)
    from scipy.special import logsumexp

    from mdp.privacy.accounting import row_logsumexp

    rng = np.random.default_rng(4)
    for n, m in [(1200, 900), (3, 200_000), (1, 1)]:
        A = rng.normal(size=(n, m)) * 50.0
        A[rng.random((n, m)) < 0.01] = -np.inf
        A[n // 2] = -np.inf
        with np.errstate(divide="ignore"):
            want = logsumexp(A, axis=1)
        assert np.array_equal(row_logsumexp(A), want)


@pytest.mark.parametrize("defect", [None, "nan", "inf", "diagonal", "zero", "negative",
                                    "asymmetric", "slightly asymmetric", "transposed"])
def test_compiled_distance_check_agrees_with_numpy(defect):
    # from KERNEL_MIN_N points one compiled pass validates the distances: the same refusals
    # (with the NumPy checks' messages) and the same min(D, D.T)
    from mdp.privacy.accounting import KERNEL_MIN_N, check_distances

    rng = np.random.default_rng(8)
    for n in (5, KERNEL_MIN_N + 3):
        X = rng.normal(size=(n, 3))
        D = np.sqrt(((X[:, None] - X[None]) ** 2).sum(-1))
        D = 0.5 * (D + D.T)
        np.fill_diagonal(D, 0.0)
        if defect == "nan":
            D[1, 2] = np.nan
        elif defect == "inf":
            D[2, 1] = np.inf
        elif defect == "diagonal":
            D[3, 3] = 1e-300
        elif defect == "zero":
            D[0, 4] = D[4, 0] = 0.0
        elif defect == "negative":
            D[0, 4] = -1.0
        elif defect == "asymmetric":
            D[0, 1] *= 1.5
        elif defect == "slightly asymmetric":
            D[0, 1] *= 1 + 1e-12
        elif defect == "transposed":
            D = np.triu(D) + np.triu(D, 1).T * (1 - 1e-13)
        bad = defect not in (None, "slightly asymmetric", "transposed")
        if bad:
            with pytest.raises(ParameterError):
                check_distances(D)
            continue
        got = check_distances(D)
        assert np.array_equal(got, np.minimum(D, D.T))
        if defect is None and n >= KERNEL_MIN_N:
            assert np.shares_memory(got, D) and not got.flags.writeable


@pytest.mark.parametrize("kind", ["normal", "ties", "few on top", "few at the start"])
def test_descending_chunks_on_large_arrays(kind):
    # beyond the sample's stride: the first chunks are still those of the stable sort
    from mdp.privacy.accounting import _descending_chunks

    rng = np.random.default_rng(1)
    v = {"normal": rng.normal(size=300_000),
         "ties": rng.integers(0, 3, size=300_000).astype(float),
         "few on top": np.r_[np.zeros(299_990), np.ones(10)],
         "few at the start": np.r_[np.ones(10), np.zeros(299_990)]}[kind]
    for step in (1, 1000, 7777):
        chunks = _descending_chunks(v, step)
        got = np.concatenate([next(chunks) for _ in range(30)])
        assert np.array_equal(got, np.argsort(-v, kind="stable")[:len(got)])


@pytest.mark.parametrize("eps", [0.3, 3.0])
def test_pair_levels_on_demand_equal_the_array(eps):
    # eps_tight with the certification's bounds computes the pairs' levels when asked (no
    # n x n array from KERNEL_MIN_N points): the same chunks, in the same order, with the same
    # floats as pure_levels' array
    from mdp.privacy.accounting import KERNEL_MIN_N, _descending_chunks, _PairLevels, pure_levels
    from mdp.privacy.rounding import round_up

    rng = np.random.default_rng(6)
    space = MetricSpace.from_points(rng.normal(size=(KERNEL_MIN_N + 20, 3)))
    mech = build("exponential", space, eps)
    R, D = mech._pair_log_ratios, space.distances
    E = pure_levels(R, D, round_up).ravel()
    lazy = _PairLevels(R=R, D=D)
    assert lazy.E is None
    for step in (64, 1000):
        for n_chunk, (a, b) in enumerate(zip(_descending_chunks(lazy, step),
                                             _descending_chunks(E, step), strict=False)):
            assert np.array_equal(a, b) and np.array_equal(lazy.at(a), E[b])
            if n_chunk > 40:
                break
    assert np.array_equal(lazy.at(np.arange(E.size)), E)
    for t in (0.0, float(np.median(E)), float(E.max())):
        assert np.array_equal(lazy.at_least(t), np.flatnonzero(E >= t))
