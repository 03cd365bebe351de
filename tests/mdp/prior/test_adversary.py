"""The optimal attack, its error, vulnerability and leakage, and the remap: brute force, closed
forms and scipy's linprog."""

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

import mdp
from mdp.prior import (
    Prior,
    adversary_error,
    bayes_remap,
    bayes_vulnerability,
    expected_loss,
    measure,
    multiplicative_leakage,
    optimal_guesses,
    remap,
)
from mdp.prior.remap import remap_matrix


def _random_case(seed, n=5):
    rng = np.random.default_rng(seed)
    space = mdp.MetricSpace.from_points(rng.random((n, 2)))
    K = rng.random((n, n)) ** 3
    K /= K.sum(axis=1, keepdims=True)
    prior = Prior.from_counts(rng.integers(0, 10, n))
    return space, K, prior


@pytest.mark.parametrize("seed", range(4))
def test_attack_error_equals_brute_force_over_every_guessing_strategy(seed):
    space, K, prior = _random_case(seed, n=4)
    D, pi = space.distances, prior.probabilities
    best = min(sum(pi[x] * K[x, z] * D[x, g[z]] for x in range(4) for z in range(4))
               for g in itertools.product(range(4), repeat=4))
    assert adversary_error(K, prior, D) == pytest.approx(best, rel=1e-12)
    g = optimal_guesses(K, prior, D)
    assert sum(pi[x] * K[x, z] * D[x, g[z]] for x in range(4) for z in range(4)) == \
        pytest.approx(best, rel=1e-12)


def test_vulnerability_and_leakage_closed_forms():
    # randomized response on two points, keep probability p: V = max(p pi0, (1-p) pi1) + ...
    p = 0.8
    K = np.array([[p, 1 - p], [1 - p, p]])
    u = Prior.uniform(2)
    assert bayes_vulnerability(K, u) == pytest.approx(p)
    assert multiplicative_leakage(K, u) == pytest.approx(2 * p)
    skew = Prior.given([0.9, 0.1])
    # outputs: z=0: max(0.72, 0.02); z=1: max(0.18, 0.08)
    assert bayes_vulnerability(K, skew) == pytest.approx(0.72 + 0.18)
    assert multiplicative_leakage(K, skew) == pytest.approx(1.0)   # the guess is always x=0
    # the identity leaks everything, the constant nothing
    assert bayes_vulnerability(np.eye(3), Prior.given([0.5, 0.3, 0.2])) == pytest.approx(1.0)
    assert multiplicative_leakage(np.full((3, 3), 1 / 3), Prior.given([0.5, 0.3, 0.2])) == \
        pytest.approx(1.0)


def test_expected_loss_and_error_of_the_identity_and_constant_mechanisms():
    space, _, prior = _random_case(7)
    D, pi = space.distances, prior.probabilities
    n = space.n
    assert expected_loss(np.eye(n), prior, D) == 0.0
    assert adversary_error(np.eye(n), prior, D) == 0.0
    # a constant mechanism tells nothing: the attacker guesses the prior's 1-median
    assert adversary_error(np.full((n, n), 1 / n), prior, D) == pytest.approx(
        float((D @ pi).min()))


@pytest.mark.parametrize("seed", range(3))
def test_remap_is_the_optimum_of_the_stochastic_remap_lp(seed):
    space, K, prior = _random_case(seed, n=5)
    D, pi = space.distances, prior.probabilities
    n = 5
    # variables R[z, z'] >= 0, rows sum to 1; cost sum_x pi_x K[x, z] D[x, z']
    cost = np.einsum("x,xz,xw->zw", pi, K, D).ravel()
    A_eq = np.kron(np.eye(n), np.ones(n))
    res = linprog(cost, A_eq=A_eq, b_eq=np.ones(n), bounds=(0, None), method="highs")
    r = bayes_remap(K, prior, D)
    assert expected_loss(remap_matrix(K, r), prior, D) == pytest.approx(res.fun, rel=1e-9)


def test_remapped_mechanism_is_certified_at_the_same_epsilon_and_never_worse():
    space, _, prior = _random_case(3, n=20)
    for name in ("exponential", "optimal"):
        m = mdp.build(name, space, 3.0)
        r = remap(m, prior)
        assert r.epsilon == m.epsilon and r.name == name + "+remap"
        assert r.stats["privacy"]["verified"]
        assert r.stats["privacy"]["measured_eps"] <= r.epsilon * (1 + 1e-9)
        assert r.eps_tight() <= m.eps_tight() * (1 + 1e-9)
        assert measure(r, prior).expected_loss <= measure(m, prior).expected_loss + 1e-12
        assert r.stats["remap"]["expected_loss_after"] == pytest.approx(
            measure(m, prior).adversary_error)


def test_remapped_file_loads_and_is_certified_again(tmp_path):
    space, _, prior = _random_case(5, n=12)
    r = remap(mdp.build("exponential", space, 2.0), prior)
    loaded = mdp.load(r.save(tmp_path / "r.npz"))
    assert loaded.name == "exponential+remap"
    assert np.array_equal(loaded.matrix, r.matrix)


def test_remap_refuses_what_is_not_a_matrix_mechanism_or_a_prior_of_another_size():
    space, _, prior = _random_case(2, n=6)
    m = mdp.build("exponential", space, 1.0)
    with pytest.raises(mdp.ParameterError):
        remap("not a mechanism", prior)
    with pytest.raises(mdp.ParameterError, match="7 points, the space has 6"):
        remap(m, Prior.uniform(7))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10 ** 6), n=st.integers(2, 9), eps=st.floats(0.2, 8.0))
def test_attack_never_errs_more_than_the_mechanism_loses_and_remap_never_loses(seed, n, eps):
    rng = np.random.default_rng(seed)
    space = mdp.MetricSpace.from_points(rng.random((n, 2)) * 3)
    prior = Prior.from_counts(rng.integers(0, 50, n) * (rng.random(n) < 0.7))
    m = mdp.build("exponential", space, eps)
    rep = measure(m, prior)
    assert rep.adversary_error <= rep.expected_loss + 1e-12
    assert 1.0 - 1e-12 <= rep.multiplicative_leakage <= n + 1e-9
    assert measure(remap(m, prior), prior).expected_loss <= rep.expected_loss + 1e-12
