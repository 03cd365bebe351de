"""OPTMech ``gap=``: certified near-optimal mode (issue 18), against the full LP in scipy linprog."""

import numpy as np
import pytest
from reference_lp import optimal_loss_linprog

import mdp
from mdp.space import MetricSpace


def _space(seed: int, n: int) -> MetricSpace:
    pts = np.random.default_rng(seed).uniform(0, 3, size=(n, 2))
    return MetricSpace.from_points(pts)


@pytest.mark.parametrize("seed,n,gap", [(0, 8, 0.05), (1, 10, 1e-3), (2, 12, 0.2), (3, 12, 0.0)])
def test_gap_bound_valid_and_loss_within_gap(seed, n, gap):
    space = _space(seed, n)
    eps = 1.0
    opt, _ = optimal_loss_linprog(space.distances, eps)
    mech = mdp.build("optimal", space, eps, gap=gap, knn=0, solver="simplex")
    st = mech.stats
    assert st["gap_target"] == gap
    assert st["lower_bound"] <= opt * (1 + 1e-9) + 1e-12  # the bound never exceeds the optimum
    loss = mech.loss()
    assert loss >= opt * (1 - 1e-9)  # certified private, so never below the optimum
    assert loss - st["lower_bound"] <= max(gap, 1e-6) * loss + 1e-12
    assert st["relative_gap"] == pytest.approx((loss - st["lower_bound"]) / loss, abs=1e-9)


def test_default_is_exact():
    space = _space(4, 10)
    opt, _ = optimal_loss_linprog(space.distances, 1.0)
    mech = mdp.build("optimal", space, 1.0)
    assert mech.stats["gap_target"] == 1e-6
    assert mech.loss() == pytest.approx(opt, rel=1e-6)


@pytest.mark.parametrize("bad", [1.0, -0.1, 2.0])
def test_gap_outside_domain_refused(bad):
    with pytest.raises(mdp.errors.ParameterError, match="gap"):
        mdp.build("optimal", _space(0, 6), 1.0, gap=bad)


def test_gap_needs_lazy():
    with pytest.raises(mdp.errors.ParameterError, match="gap"):
        mdp.build("optimal", _space(0, 6), 1.0, gap=1e-3, method="full")
