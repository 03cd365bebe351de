import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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
    """A fake build whose eps_tight drops as epsilon grows past 1.04 (as ConstOPTMech's can)."""

    def __init__(self, eps):
        self.epsilon = eps
        self.stats = {}

    def eps_tight(self, delta=0.0):
        e = self.epsilon
        return 0.95 * e if e < 1.04 else (0.45 * e if e < 2.0 else 2.0)


class _PowerFamily:
    """A fake build with ``eps_tight = c * epsilon ** a`` (every build counted)."""

    builds: list = []

    def __init__(self, eps, c, a):
        self.epsilon, self.stats = eps, {}
        self._et = c * eps ** a
        _PowerFamily.builds.append(eps)

    def eps_tight(self, delta=0.0):
        return self._et


def _fake(monkeypatch, family):
    import mdp.curves.calibration

    monkeypatch.setattr(mdp.curves.calibration, "build", lambda name, space, eps, **kw: family(eps))


def test_non_monotone_family_returns_the_build_closest_to_target(s, monkeypatch):
    _fake(monkeypatch, _StepFamily)
    m = calibrate("exponential", s, 1.0, rtol=1e-3)
    trials = m.stats["calibration"]["trials"]
    under = [et for _, et in trials if et <= 1.0]
    assert m.eps_tight() == max(under)
    # the bracket closes at the jump to 2.0 (eps_tight 0.9 just below it); the first build, at
    # epsilon 1 (eps_tight 0.95), is closer to the target and is the one returned
    assert any(1.9 < e < 2.0 for e, _ in trials)
    assert m.epsilon == 1.0 and m.eps_tight() == 0.95


@pytest.mark.parametrize("c", [0.3, 0.5, 0.97, 1.3, 4.0])
def test_proportional_family_is_accepted_at_its_second_build(s, monkeypatch, c):
    # LP families (SpannerMech: eps_tight ~ 0.97 eps) get slower as eps grows: the second build
    # must land on the answer, not at twice the target as a doubling search would
    _PowerFamily.builds = []
    _fake(monkeypatch, lambda eps: _PowerFamily(eps, c, 1.0))
    m = calibrate("exponential", s, 1.0, rtol=1e-3)
    assert m.stats["calibration"]["builds"] == 2
    assert 1.0 / 1.001 <= m.eps_tight() <= 1.0
    assert m.epsilon == pytest.approx(1.0 / c, rel=1e-3)
    assert max(_PowerFamily.builds) == max(1.0, m.epsilon)   # the first build is at the target


@settings(max_examples=200, deadline=None)
@given(ratio=st.floats(1e-3, 1e3), a=st.floats(0.1, 4.0), target=st.floats(1e-3, 50.0),
       rtol=st.sampled_from([1e-4, 1e-3, 1e-2]))
def test_power_families_are_calibrated_in_few_builds_never_far_above(ratio, a, target, rtol):
    # eps_tight = c eps^a, answer (target / c)^(1/a). Every search ends inside the window or with
    # a bracket of width rtol, in a handful of builds even on flat (a << 1) curves; where eps_tight
    # grows no faster than eps (a <= 1) no build lies above both the answer and the first build
    # (the doubling search built up to twice the answer), and never more than 16x above
    import mdp.curves.calibration

    c = target / (ratio * target) ** a         # the answer is ratio * target
    search = mdp.curves.calibration.CalibrationSearch(target, rtol, 40)
    while search.phase is not mdp.curves.calibration.Phase.DONE:
        eps = search.next_epsilon()
        search.record(eps, c * eps ** a)
    answer = (target / c) ** (1.0 / a)
    assert search.lo is not None and search.lo <= answer * (1 + 1e-9)
    assert search.accepted(search.lo_et) or search.hi / search.lo <= 1 + rtol
    assert len(search.trials) <= (6 if a >= 0.5 else 12)
    highest = max(e for e, _ in search.trials) / max(answer, target)
    assert highest <= (1 + 1e-9 if a <= 1.0 else 16.0)


def test_calibration_builds_matrices_above_the_vocabulary_mode_size():
    # eps_tight needs the certified matrix: a space that mode="auto" would build in vocabulary
    # mode (above ModeRule.max_matrix_n) is still calibrated on its matrix
    from mdp.vocabulary.mode import ModeRule

    rng = np.random.default_rng(5)
    space = MetricSpace.from_points(rng.normal(size=(12, 3)))
    mech = calibrate("exponential", space, 1.0, delta=1e-3, mode_rule=ModeRule(max_matrix_n=5))
    assert mech.stats["mode"]["mode"] == "matrix"
    assert mech.eps_tight(1e-3) <= 1.0
