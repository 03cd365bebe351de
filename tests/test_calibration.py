import numpy as np
import pytest

from mdp import MetricSpace, build, calibrate


@pytest.fixture
def s():
    return MetricSpace.from_points(np.random.default_rng(1).normal(size=(15, 3)))


@pytest.mark.parametrize("delta", [0.0, 1e-3])
@pytest.mark.parametrize("target", [0.3, 1.0, 4.0])
def test_largest_epsilon_below_target(s, delta, target):
    m = calibrate("exponential", s, target, delta=delta, rtol=1e-4)
    cal = m.stats["calibration"]
    assert m.eps_tight(delta) <= target
    # maximality: a build slightly above is over the target (or the result is within rtol)
    above = build("exponential", s, m.epsilon * (1 + 2e-4))
    assert above.eps_tight(delta) > target or m.eps_tight(delta) >= target * (1 - 1e-4)
    assert 1 <= cal["builds"] <= 40 and len(cal["trials"]) == cal["builds"]


def test_pure_exponential_is_twice(s):
    # exp(-eps d/2): pure level is at most eps, typically much lower; calibration finds it
    m = calibrate("exponential", s, 1.0)
    assert m.epsilon > 1.0 and m.eps_tight() == pytest.approx(1.0, rel=2e-3)


def test_bad_target(s):
    with pytest.raises(ValueError, match="target_eps_tight must be > 0"):
        calibrate("exponential", s, 0.0)
    with pytest.raises(ValueError, match="unknown mechanism"):
        calibrate("nope", s, 1.0)


class _StepFamily:
    """A fake build whose eps_tight drops as epsilon grows past 1.24 (as ConstOPTMech's can)."""

    def __init__(self, eps):
        self.epsilon = eps
        self.stats = {}

    def eps_tight(self, delta=0.0):
        e = self.epsilon
        return 0.8 * e if e < 1.24 else (0.45 * e if e < 2.0 else 2.0)


def test_non_monotone_family_returns_the_build_closest_to_target(s, monkeypatch):
    import mdp.calibration

    monkeypatch.setattr(mdp.calibration, "build", lambda name, space, eps, **kw: _StepFamily(eps))
    m = calibrate("exponential", s, 1.0, rtol=1e-3)
    trials = m.stats["calibration"]["trials"]
    under = [et for _, et in trials if et <= 1.0]
    assert m.eps_tight() == max(under)
    # the bracket closes at the drop (1.24), where eps_tight is 0.56; the build just below is at ~0.99
    assert m.eps_tight() > 0.98 and m.epsilon < 1.24
