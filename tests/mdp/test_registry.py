import numpy as np
import pytest

import mdp
from mdp import MetricSpace, build


@pytest.fixture
def s():
    return MetricSpace.from_points(np.random.default_rng(0).uniform(size=(5, 2)))


def test_mechanisms_listing():
    names = mdp.mechanisms()
    assert {"exponential", "weighted_exponential"} <= set(names)
    assert all(isinstance(d, str) and d for d in names.values())


def test_unknown_name_lists_valid_names(s):
    with pytest.raises(ValueError, match="unknown mechanism 'nope'; valid names: .*exponential"):
        build("nope", s, 1.0)


@pytest.mark.parametrize("eps, exc, msg", [(-1, ValueError, "epsilon must be > 0, got -1"),
                                           (0, ValueError, "epsilon must be > 0"),
                                           (float("nan"), ValueError, "epsilon must be a number"),
                                           (float("inf"), ValueError, "finite"),
                                           ("1", TypeError, "epsilon must be a real number")])
def test_bad_epsilon(s, eps, exc, msg):
    with pytest.raises(exc, match=msg):
        build("exponential", s, eps)


def test_unknown_parameter_lists_accepted(s):
    with pytest.raises(TypeError, match=r"unknown parameter\(s\) \['r'\]; accepted: \['Y'\]"):
        build("weighted_exponential", s, 1.0, r=3)


def test_bad_weights(s):
    with pytest.raises(ValueError, match="Y must have length n=5"):
        build("weighted_exponential", s, 1.0, Y=[1, 2])
    with pytest.raises(ValueError, match="> 0"):
        build("weighted_exponential", s, 1.0, Y=[1, 2, 3, 4, -1])


def test_every_build_is_certified(s):
    for name in ["exponential", "weighted_exponential"]:
        m = build(name, s, 1.3)
        rep = m.stats["privacy"]
        assert rep["verified"] and rep["measured_eps"] <= 1.3 * (1 + 1e-9)
        assert m.eps_tight() == pytest.approx(rep["measured_eps"])
        np.testing.assert_allclose(m.matrix.sum(1), 1.0)


def test_register_duplicate_and_bad_builder_output(s):
    from mdp.candidate import Candidate
    from mdp.registry import FAMILIES, register

    @register("_test_identity", description="not private")
    def _identity(space, epsilon, *, rng=None):
        return Candidate(matrix=np.eye(space.n))

    @register("_test_bare_array", description="returns a bare array")
    def _bare(space, epsilon, *, rng=None):
        return np.full((space.n, space.n), 1.0 / space.n)

    try:
        with pytest.raises(mdp.PrivacyError):
            build("_test_identity", s, 1.0)
        with pytest.raises(TypeError, match="not a Candidate"):
            build("_test_bare_array", s, 1.0)
        with pytest.raises(ValueError, match="already registered"):
            register("_test_identity", description="x")(_identity)
    finally:
        FAMILIES.unregister("_test_identity")
        FAMILIES.unregister("_test_bare_array")
