import re
from decimal import Decimal, localcontext

import numpy as np
import pytest

import mdp
from mdp import MetricSpace, ParameterError, PrivacyError, build, certify, eps_tight
from mdp.families.exponential import exponential_log_matrix, exponential_matrix
from mdp.privacy.exact import check_pure_exact
from mdp.privacy.verification import certify_matrix


def space(n=8, seed=0):
    return MetricSpace.from_points(np.random.default_rng(seed).uniform(size=(n, 2)))


def test_passes_valid_matrix_unchanged():
    s = space()
    M = exponential_matrix(s.distances, 2.0)
    out, rep = certify(M, s.distances, 2.0)
    assert rep["verified"] and not rep["repaired"] and rep["measured_eps"] <= 2.0
    np.testing.assert_allclose(out, M, atol=1e-15)


def test_repairs_lp_tolerance_artefact():
    # An LP-like optimum where a solver returned an exact 0 for a ~1e-13 probability (seen in
    # practice): an infinite multiplicative violation caused by an absolute tolerance.
    s = MetricSpace.from_points(40 * np.random.default_rng(1).uniform(size=(8, 2)))
    eps = 2.0
    M = exponential_matrix(s.distances, eps).copy()        # the exponential mechanism is eps-mDP
    u, w = np.unravel_index(np.argmin(M), M.shape)
    assert M[u, w] < 1e-9
    M[u, w] = 0.0
    M /= M.sum(axis=1, keepdims=True)
    assert eps_tight(M, s.distances) == np.inf               # broken as handed over
    out, rep = certify(M, s.distances, eps)
    assert rep["repaired"] and rep["measured_eps_before"] == np.inf
    assert eps_tight(out, s.distances) <= eps * (1 + 1e-9) == rep["claimed_eps"] * (1 + 1e-9)
    assert rep["max_entry_change"] <= 1e-6 and out[u, w] > 0
    np.testing.assert_allclose(out.sum(axis=1), 1.0, atol=1e-12)


def test_refuses_non_private_matrix():
    s = space()
    with pytest.raises(PrivacyError, match="refused"):
        certify(np.eye(s.n), s.distances, 1.0)
    with pytest.raises(PrivacyError, match="row-stochastic"):
        certify(np.full((s.n, s.n), 0.5), s.distances, 1.0)
    M = np.full((s.n, s.n), 1.0 / s.n)
    M[0, 0], M[0, 1] = -0.01, M[0, 1] + 1.0 / s.n + 0.01
    with pytest.raises(PrivacyError, match="negative"):
        certify(M, s.distances, 1.0)
    with pytest.raises(PrivacyError, match="claims"):
        certify(exponential_matrix(s.distances, 10.0), s.distances, 1.0, repair=False)


def test_tiny_relative_violation_repaired_large_one_refused():
    s = space(10, 4)
    M = exponential_matrix(s.distances, 2.0)
    level = eps_tight(M, s.distances)
    out, rep = certify(M, s.distances, level * (1 - 1e-8))   # claims 1e-8 too little
    assert rep["repaired"] and rep["max_entry_change"] < 1e-6
    assert eps_tight(out, s.distances) <= level * (1 - 1e-8) * (1 + 1e-9)
    with pytest.raises(PrivacyError, match="refused"):
        certify(M, s.distances, level * 0.9)                 # a real violation is not "repaired"


def test_underflow_refused_with_hint():
    s = MetricSpace.from_distances(np.array([[0, 1, 2], [1, 0, 1], [2, 1, 0]], dtype=float) * 1000)
    # the log-domain exponential mechanism builds where probabilities underflow float64 ...
    m = build("exponential", s, 2.0)
    L = -0.5 * 2.0 * s.distances
    L -= np.log(np.exp(L - L.max(axis=1, keepdims=True)).sum(axis=1, keepdims=True)) + L.max(
        axis=1, keepdims=True)
    assert m.representation == "log" and m.eps_tight() <= 2.0 * (1 + 1e-9)
    np.testing.assert_allclose(m.log_matrix, L, rtol=1e-12)
    # ... while the same matrix exponentiated (exact zeros beside positive entries) is refused
    with np.errstate(under="ignore"):
        P = np.exp(L)
    with pytest.raises(PrivacyError, match="underflow"):
        mdp.certify(P, s.distances, 2.0)


# -- soundness on near-duplicate points and the log domain -----------------------------------------

NEAR_DUP = [[0.17], [0.18], [0.466], [0.17000000000000015]]


def true_level(M, D, log=False, prec=60):
    """max (ln M[u,w] - ln M[v,w]) / D[u,v] at 60 digits (M, D taken as exact numbers)."""
    best = Decimal(0)
    with localcontext() as ctx:
        ctx.prec = prec
        n = len(M)
        for u in range(n):
            for v in range(n):
                if u == v:
                    continue
                for w in range(n):
                    if log:
                        r = Decimal(M[u, w]) - Decimal(M[v, w])
                    else:
                        r = (Decimal(M[u, w]) / Decimal(M[v, w])).ln()
                    best = max(best, r / Decimal(D[u, v]))
    return best


def test_near_duplicates_measured_soundly_and_repaired():
    s = MetricSpace.from_points(NEAR_DUP, resolution=0)     # below the resolution rule
    D = s.distances
    M = exponential_matrix(D, 0.468)
    # points 0 and 3 are 1.4e-16 apart, so their rows must agree to ~1e-16 relative; float64
    # rounding can leave them a few ulps apart (whether exponential_matrix's own rounding does
    # depends on numpy's exp), which is a privacy level of several units: make it so here
    step = 4 * np.spacing(M[3, 1])
    M[0] = M[3]
    M[0, 1] += step
    M[0, 2] -= step                                       # still stochastic to 1e-16
    assert abs(M[0].sum() - 1) < 1e-15
    truth = true_level(M, D)
    assert truth > Decimal("1")                           # the float64 matrix is NOT 0.468-mDP
    et = eps_tight(M, D)
    assert Decimal(et) >= truth and (Decimal(et) - truth) / truth < Decimal("1e-15")
    with pytest.raises(PrivacyError, match="claims 0.468-mDP"):
        certify(M, D, 0.468, repair=False)
    out, rep = certify(M, D, 0.468)
    assert rep["repaired"] and rep["merged_points"] == 2 and rep["max_entry_change"] < 1e-12
    assert np.array_equal(out[0], out[3])                 # merged near-duplicates: identical rows
    assert check_pure_exact(out, D, rep["certified_eps"])[0]
    assert Decimal(rep["measured_eps"]) >= true_level(out, D)
    m = build("exponential", s, 0.468)
    assert check_pure_exact(m.matrix, D, m.stats["privacy"]["certified_eps"])[0]


def test_near_duplicate_optimal_is_exactly_private():
    s = MetricSpace.from_points([[0.029], [0.601], [0.029000009934]])
    m = build("optimal", s, 0.033)
    rep = m.stats["privacy"]
    assert check_pure_exact(m.matrix, s.distances, rep["certified_eps"])[0]
    assert Decimal(rep["measured_eps"]) >= true_level(m.matrix, s.distances)


def test_refuses_non_stochastic_and_returns_exactly_what_it_measured():
    s = space(6, 2)
    M = exponential_matrix(s.distances, 1.0)
    out, rep = certify(M, s.distances, 1.0)
    assert out.tobytes() == M.tobytes() and not rep["repaired"]   # bit for bit
    bad = M.copy()
    bad[0] *= 1 + 5e-7
    with pytest.raises(PrivacyError, match=r"row 0 sums to 1 \+ 5\.0000"):
        certify(bad, s.distances, 1.0)
    bad[0] = M[0] * (1 + 1e-11)
    with pytest.raises(PrivacyError, match="row-stochastic"):
        certify(bad, s.distances, 1.0)
    neg = M.copy()
    neg[:, 5] = 0.0                                       # output 5 is never released
    neg /= neg.sum(axis=1, keepdims=True)
    neg[0, 5], neg[0, 0] = -1e-13, neg[0, 0] + 1e-13      # an LP artefact, clipped to 0
    out, rep = certify(neg, s.distances, 10.0)
    w = 5
    assert rep["clipped_negative_entries"] == 1 and out[0, w] == 0.0 and not rep["repaired"]
    changed = out != neg
    assert changed.sum() == 1 and changed[0, w]           # only the documented clipping
    L = np.log(M)
    out, rep = certify(L, s.distances, 1.0, log=True)
    assert out.tobytes() == L.tobytes() and rep["representation"] == "log"


@pytest.mark.parametrize("eps, match", [(float("nan"), "epsilon must be a number"),
                                        (-1.0, "epsilon must be > 0"), (0.0, "epsilon must be > 0"),
                                        (float("inf"), "epsilon must be finite"),
                                        ("1", "epsilon must be a real number")])
def test_invalid_epsilon_named(eps, match):
    s = space(4)
    with pytest.raises(ParameterError, match=match):
        certify(exponential_matrix(s.distances, 1.0), s.distances, eps)


def test_invalid_distances_and_matrices_named():
    s = space(4)
    M = exponential_matrix(s.distances, 1.0)
    D = s.distances.copy()
    cases = []
    Z = D.copy(); Z[0, 1] = Z[1, 0] = 0.0; cases.append((Z, "duplicate points"))          # noqa: E702
    N = D.copy(); N[0, 1] = N[1, 0] = -0.5; cases.append((N, "must be positive"))        # noqa: E702
    Q = D.copy(); Q[2, 3] = Q[3, 2] = np.nan; cases.append((Q, "finite"))               # noqa: E702
    A = D.copy(); A[0, 2] *= 1.5; cases.append((A, "symmetric"))                         # noqa: E702
    G = D.copy(); G[1, 1] = 0.1; cases.append((G, "zero diagonal"))                      # noqa: E702
    cases.append((D[:3, :3], "shape"))
    for bad, match in cases:
        with pytest.raises(ParameterError, match=match):
            certify(M, bad, 1.0)
        with pytest.raises(ParameterError, match=match):
            eps_tight(M, bad)
    with pytest.raises(ParameterError, match="row-stochastic"):
        eps_tight(np.full((4, 4), 0.5), D)
    with pytest.raises(ParameterError, match="row-stochastic"):
        eps_tight(np.zeros((4, 4)), D)
    with pytest.raises(ParameterError, match="non-negative"):
        eps_tight(np.array([[1.5, -0.5], [0.5, 0.5]]), D[:2, :2])


def test_messages_show_the_difference():
    s = space(10, 4)
    M = exponential_matrix(s.distances, 2.0)
    level = eps_tight(M, s.distances)
    claim = level * (1 - 3e-9)
    with pytest.raises(PrivacyError) as info:
        certify(M, s.distances, claim, repair=False)
    got = re.search(r"matrix is (\S+)-mDP .* claims (\S+)-mDP", str(info.value))
    assert got and got.group(1) != got.group(2)
    assert float(got.group(1)) >= level and float(got.group(2)) == claim


def closed_form_log(D, eps, prec=50):
    with localcontext() as ctx:
        ctx.prec = prec
        out = []
        for row in D:
            logits = [Decimal(-0.5) * Decimal(eps) * Decimal(d) for d in row]
            top = max(logits)
            lse = top + sum((x - top).exp() for x in logits).ln()
            out.append([float(x - lse) for x in logits])
    return np.array(out)


def test_exponential_log_domain_at_eps_times_diameter_1e4():
    pts = np.random.default_rng(3).uniform(size=(14, 2))
    pts[:7] *= 0.01                                         # two distance scales
    s = MetricSpace.from_points(pts)
    D = s.distances
    eps = 1e4 / D.max()
    L = exponential_log_matrix(D, eps)
    assert L.min() < -4900                                  # e^-4900: far below float64's range
    ref = closed_form_log(D, eps)
    np.testing.assert_allclose(L, ref, rtol=1e-12, atol=0)
    cert = certify_matrix(L, D, eps, log=True)
    assert cert.report["verified"] and not cert.report["repaired"]
    assert cert.matrix.tobytes() == L.tobytes()
    assert 0 < cert.report["measured_eps"] <= eps
    assert Decimal(cert.report["measured_eps"]) >= true_level(L, D, log=True)
    assert check_pure_exact(L, D, cert.report["certified_eps"], log=True)[0]
    # the same mechanism as probabilities underflows and is refused
    with pytest.raises(PrivacyError, match="underflow"):
        certify(np.exp(L), D, eps)


def test_log_domain_repair_matches_probability_repair():
    s = space(10, 4)
    M = exponential_matrix(s.distances, 2.0)
    level = eps_tight(M, s.distances)
    out_p, rep_p = certify(M, s.distances, level * (1 - 1e-8))
    out_l, rep_l = certify(np.log(M), s.distances, level * (1 - 1e-8), log=True)
    assert rep_p["repaired"] and rep_l["repaired"]
    np.testing.assert_allclose(np.exp(out_l), out_p, rtol=1e-9)
    assert rep_l["uniform_mix"] == pytest.approx(rep_p["uniform_mix"], rel=1e-3)
    assert check_pure_exact(out_l, s.distances, rep_l["certified_eps"], log=True)[0]
    assert eps_tight(out_l, s.distances, log=True) <= rep_l["certified_eps"]


def test_read_only_candidate_is_measured_in_place_and_a_writeable_one_copied():
    # no n x n copy of a read-only candidate that owns its data; a writeable one (or one whose
    # negatives must be clipped) is copied, so later writes by the caller change nothing
    from mdp.privacy.verification import certify_matrix

    s = MetricSpace.from_points(np.random.default_rng(3).normal(size=(8, 2)))
    M = exponential_matrix(s.distances, 1.0)
    M.setflags(write=False)
    assert certify_matrix(M, s.distances, 1.0).matrix is M
    W = exponential_matrix(s.distances, 1.0)
    cert = certify_matrix(W, s.distances, 1.0)
    assert cert.matrix is not W
    W[0] = 0.0
    assert np.all(cert.matrix[0] > 0)
    N = exponential_matrix(s.distances, 1.0)
    N[0, 0] += N[0, 1]                         # the row sums to 1 once the negative is clipped
    N[0, 1] = -1e-9                            # a solver-tolerance negative
    N.setflags(write=False)
    with pytest.raises(PrivacyError, match="inf-mDP"):     # clipped to 0 (in a copy): not private
        certify_matrix(N, s.distances, 1.0, repair=False)
    assert N[0, 1] == -1e-9 and not N.flags.writeable
