"""The LP families on every kind of space of the LP suite (:mod:`mdp.spaces.synthetic`, the
spaces of ``benchmarks/lp_suite.py``) at every eps x median distance of it, small n:

- OPTMech's loss equals the optimum of the textbook LP solved independently with
  :func:`scipy.optimize.linprog` (:mod:`reference_lp`), within its certified gap; where some
  coefficient ``e^{eps D}`` exceeds 1e8 (two scales; 1e8 to 1e14 at c = 0.3, past the floats
  at c = 10) the reference is the LP without those rows, a relaxation, and OPTMech's certified
  bound is checked against the LP with them capped at 1e8, a restriction
  (:func:`reference_lp.optimal_loss_bracket`);
- the packing lower bound (:func:`mdp.lower_bound`) is at most every mechanism's loss;
- OPTMech's loss is at most SpannerMech's and ConstOPTMech's at the same eps (dominance).

The road graph's distances go through a ``.npy`` file and :func:`mdp.spaces.specs.load_space`, as a
user gives them.
"""

from __future__ import annotations

import numpy as np
import pytest

import mdp
from mdp.spaces.specs import load_space
from mdp.spaces.synthetic import SPACE_KINDS, road_graph_distances, synthetic_space
from tests.support.reference_lp import BRACKET_CAP, optimal_loss_bracket

C_VALUES = (0.3, 1.0, 3.0, 10.0)
#: one size per kind, 12 to 22 points: each kind is checked at a different n
SIZES = {kind: 12 + 2 * i for i, kind in enumerate(SPACE_KINDS)}
#: the reference LP's accuracy, relative to the loss: solved with feasibility tolerances of
#: 1e-10 (with HiGHS's defaults and coefficients e^{eps D} of 1e10, as on the city box at c = 10,
#: the simplex stops 2e-5 above the optimum), its optimum was seen 1.5e-7 above the loss of a
#: matrix certified private (coefficients to 1e8, clustered points at c = 10)
REFERENCE_RTOL = 1e-6


@pytest.fixture(scope="module")
def spaces(tmp_path_factory):
    out = {}
    for kind, n in SIZES.items():
        rng = np.random.default_rng([55, SPACE_KINDS.index(kind), n])
        if kind == "road_graph":
            path = tmp_path_factory.mktemp("road") / "road.npy"
            np.save(path, road_graph_distances(n, rng=rng))
            out[kind] = load_space(str(path))
        else:
            out[kind] = synthetic_space(kind, n, rng=rng)
    return out


@pytest.mark.parametrize("c", C_VALUES)
@pytest.mark.parametrize("kind", SPACE_KINDS)
def test_optimal_is_exact_bounded_and_dominates(spaces, kind, c):
    space = spaces[kind]
    eps = c / space.median_distance
    opt = mdp.build("optimal", space, eps)
    ref, restricted = optimal_loss_bracket(space.distances, eps)
    assert (ref == restricted) == (eps * space.diameter <= np.log(BRACKET_CAP))
    report = opt.report
    assert "fallback" not in opt.stats and opt.stats["target_met"]
    # the certified bound is below the optimum (below any restriction's), the returned private
    # matrix above it (above any relaxation's), and the two within the certified gap
    tol = REFERENCE_RTOL * ref
    assert report.bound <= restricted + tol
    assert opt.loss() >= ref - tol
    assert opt.loss() - ref <= report.gap * opt.loss() + tol
    assert report.gap <= 1e-6
    others = {"spanner": mdp.build("spanner", space, eps, stretch=1.5),
              "constopt": mdp.build("constopt", space, eps, r=5),
              "exponential": mdp.build("exponential", space, eps)}
    bound = mdp.lower_bound(space, eps).value
    assert bound <= opt.loss() * (1 + 1e-12)
    for name, mech in others.items():
        assert bound <= mech.loss() * (1 + 1e-12), name
        # dominance: no eps-mDP mechanism beats the optimum (the reference LP's optimum)
        assert ref - tol <= mech.loss(), name
        assert opt.loss() <= mech.loss() * (1 + 1e-6) + 1e-12, name
