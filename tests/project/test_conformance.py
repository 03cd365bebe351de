"""One conformance test over EVERY registered mechanism family (scikit-learn's
``parametrize_with_checks`` in spirit): a new family gets all of these checks for free."""

from __future__ import annotations

import math

import numpy as np
import pytest

import mdp
from mdp.errors import ParameterError
from mdp.registry import FAMILIES

FAMILY_NAMES = sorted(mdp.mechanisms())
EPS = 1.0


def _spaces() -> dict[str, mdp.MetricSpace]:
    rng = np.random.default_rng(7)
    plane = mdp.MetricSpace.from_points(rng.uniform(0, 3, size=(12, 2)))
    # (lat, lon) points about 3 km apart, for families that need a geographic space
    latlon = np.c_[48.2 + rng.uniform(0, 0.03, 12), 16.37 + rng.uniform(0, 0.04, 12)]
    return {"plane": plane, "geo": mdp.MetricSpace.from_points(latlon, metric="haversine")}


SPACES = _spaces()


def space_for(name: str) -> mdp.MetricSpace:
    """The first test space the family applies to."""
    entry = FAMILIES.get(name)
    return next(s for s in SPACES.values() if entry.applies(s) is None)


@pytest.fixture(scope="module")
def built():
    return {name: mdp.build(name, space_for(name), EPS, rng=0) for name in FAMILY_NAMES}


@pytest.fixture
def space(request):
    return space_for(request.node.callspec.params["name"])


def test_every_family_is_covered():
    # the built-ins at least; plugins add theirs
    assert {"optimal", "spanner", "constopt", "exponential", "weighted_exponential",
            "madlib"} <= set(FAMILY_NAMES)


@pytest.mark.parametrize("name", FAMILY_NAMES)
def test_declares_its_parameters(name):
    entry = FAMILIES.get(name)
    import inspect

    kw = {p.name for p in inspect.signature(entry.builder).parameters.values()
          if p.kind == p.KEYWORD_ONLY and p.name != "rng"}
    assert set(entry.rules) == kw, f"{name}: every keyword parameter needs a Param rule"
    assert entry.display_name and entry.description
    for key, rule in entry.rules.items():
        assert rule.help, f"{name}.{key} has no help text"


@pytest.mark.parametrize("name", FAMILY_NAMES)
def test_builds_a_certified_stochastic_mechanism(name, space, built):
    entry = FAMILIES.get(name)
    mech = built[name]
    assert type(mech) is entry.mechanism_class and mech.name == name and mech.epsilon == EPS
    M = mech.matrix
    assert M.shape == (space.n, space.n) and np.all(np.isfinite(M)) and M.min() >= 0
    assert np.abs(M.sum(axis=1) - 1).max() <= 1e-12
    assert not M.flags.writeable
    privacy = mech.stats["privacy"]
    if entry.guarantee == "matrix":
        assert privacy["verified"] is True
        assert mech.eps_tight() <= EPS * (1 + 1e-9)
        # brute force over every (u, v, w), independent of the accounting code
        D = space.distances
        for u in range(space.n):
            for v in range(space.n):
                bound = math.exp(EPS * D[u, v]) * (1 + 1e-9)
                assert np.all(M[u] <= bound * M[v] + 1e-300), (name, u, v)
    elif entry.guarantee == "scoped":
        # certified among the inputs of each scope: brute force over every (u, v, w) of each
        assert privacy["guarantee"] == "scoped" and privacy["verified"] is True
        for scope in mech.scopes():
            idx, D = scope.indices, scope.distances
            assert np.all(M[np.ix_(idx, np.setdiff1d(np.arange(space.n), idx))] == 0)
            for a, u in enumerate(idx):
                for b, v in enumerate(idx):
                    bound = math.exp(EPS * D[a, b]) * (1 + 1e-9)
                    assert np.all(M[u, idx] <= bound * M[v, idx] + 1e-300), (name, u, v)
    else:
        assert privacy["guarantee"] == "analytic" and privacy["claimed_eps"] == EPS


@pytest.mark.parametrize("name", FAMILY_NAMES)
def test_rejects_bad_parameters_naming_them(name, space):
    entry = FAMILIES.get(name)
    for key, rule in entry.rules.items():
        for bad in rule.bad_values():
            with pytest.raises(ParameterError, match=key):
                mdp.build(name, space, EPS, rng=0, **{key: bad})
    with pytest.raises(TypeError, match="unknown parameter"):
        mdp.build(name, space, EPS, no_such_parameter=1)
    for bad_eps in (0.0, -1.0, float("nan"), float("inf"), "x", True):
        with pytest.raises(ParameterError, match="epsilon"):
            mdp.build(name, space, bad_eps)


@pytest.mark.parametrize("name", FAMILY_NAMES)
def test_save_load_round_trip(name, built, tmp_path):
    mech = built[name]
    back = mdp.load(mech.save(tmp_path / f"{name}.npz"))
    assert type(back) is type(mech) and back.name == name and back.epsilon == mech.epsilon
    np.testing.assert_array_equal(back.matrix, mech.matrix)
    np.testing.assert_array_equal(back.space.distances, mech.space.distances)
    assert back.stats["privacy"]["guarantee"] == mech.stats["privacy"]["guarantee"]


@pytest.mark.parametrize("name", FAMILY_NAMES)
def test_sampling_shape_and_seed(name, built, space):
    mech = built[name]
    idx = np.arange(50) % space.n
    out = mech.sample(idx, rng=3)
    assert out.shape == (50,) and out.min() >= 0 and out.max() < space.n
    np.testing.assert_array_equal(out, mech.sample(idx, rng=3))
    assert 0 <= int(mech.sample(2, rng=1)) < space.n


@pytest.mark.parametrize("name", [n for n in FAMILY_NAMES if FAMILIES.get(n).guarantee == "matrix"])
def test_optimal_is_never_worse(name, built):
    # OPTMech minimises the worst-case loss over every eps-mDP matrix at this epsilon
    optimal = mdp.build("optimal", built[name].space, EPS)
    assert optimal.loss() <= built[name].loss() * (1 + 1e-6)
