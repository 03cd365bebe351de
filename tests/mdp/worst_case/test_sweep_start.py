"""Sweeps over epsilon: each LP build starts from the rows its neighbour's build ended with.

A sweep changes which rows the row generation starts from, never the optimum nor its
certification: swept builds are checked against cold ones and against scipy's linprog on the
full LP, on every synthetic space kind.
"""

import numpy as np
import pytest

import mdp
from mdp.errors import ParameterTypeError
from mdp.families.optimal import OptimalTuning
from mdp.spaces.synthetic import SPACE_KINDS, synthetic_space
from mdp.worst_case.solve import initial_triples, merge_rows
from mdp.worst_case.sweep_start import Sweep, binding_rows
from tests.support.reference_lp import optimal_loss_bracket, optimal_loss_linprog


def _median_eps(space, x):
    return x / space.median_distance


def _check_optimal(mech, space, eps):
    """Certified within 1e-6 of the LP's optimum, which linprog brackets."""
    low, high = optimal_loss_bracket(space.distances, eps)
    scale = space.distances.max()
    assert mech.stats["target_met"]
    assert mech.stats["lower_bound"] <= high * (1 + 1e-7) + 1e-9 * scale
    assert mech.loss() >= low * (1 - 1e-7) - 1e-9 * scale
    if np.isfinite(high):
        assert mech.loss() <= high * (1 + 2e-6) + 1e-9 * scale
    assert mech.eps_tight() <= eps * (1 + 1e-9)


@pytest.mark.parametrize("kind", sorted(SPACE_KINDS))
@pytest.mark.parametrize("step", [1.005, 2.5])
def test_a_swept_build_equals_the_cold_build_and_linprog(kind, step):
    space = synthetic_space(kind, 14, rng=5)
    e0, e1 = _median_eps(space, 1.0), _median_eps(space, step)
    sweep = Sweep()
    mdp.build("optimal", space, e0, sweep=sweep)
    cold = mdp.build("optimal", space, e1)
    warm = mdp.build("optimal", space, e1, sweep=sweep)
    for mech in (cold, warm):
        _check_optimal(mech, space, e1)
    scale = space.distances.max()
    assert warm.loss() == pytest.approx(cold.loss(), rel=3e-6, abs=1e-9 * scale)
    assert warm.stats["sweep_start"]["from_epsilon"] == pytest.approx(e0)
    assert "sweep_start" not in cold.stats
    assert sweep.builds == 2 and sweep.epsilon == pytest.approx(e1)


@pytest.mark.parametrize("step, reused", [(1.005, "every row"), (2.0, "binding")])
def test_the_column_block_rounds_start_from_the_neighbours_rows(step, reused):
    space = synthetic_space("city_latlon", 24, rng=2)
    e0, e1 = _median_eps(space, 2.0), _median_eps(space, 2.0 * step)
    sweep = Sweep()
    mdp.build("optimal", space, e0, solver="blocks", sweep=sweep)
    last_rows = len(sweep.keys)
    cold = mdp.build("optimal", space, e1, solver="blocks")
    warm = mdp.build("optimal", space, e1, solver="blocks", sweep=sweep)
    reference, _ = optimal_loss_linprog(space.distances, e1)
    for mech in (cold, warm):
        assert mech.stats["lower_bound"] <= reference * (1 + 1e-9)
        assert mech.loss() == pytest.approx(reference, rel=2e-6)
    assert reused in warm.stats["sweep_start"]["from"]
    def trace(m):
        return m.stats.get("block_round_trace", m.stats.get("round_trace"))

    # the first round starts with the neighbour's rows besides the usual ones
    assert trace(warm)[0]["rows"] > trace(cold)[0]["rows"]
    if reused == "every row":
        assert trace(warm)[0]["rows"] >= last_rows
        assert len(trace(warm)) <= len(trace(cold))


def test_a_neighbour_beyond_sweep_far_gives_a_cold_start():
    space = synthetic_space("clustered", 14, rng=3)
    e0 = _median_eps(space, 0.5)
    sweep = Sweep()
    mdp.build("optimal", space, e0, sweep=sweep)
    far = mdp.build("optimal", space, 10 * e0, sweep=sweep)
    cold = mdp.build("optimal", space, 10 * e0)
    assert far.stats["sweep_start"]["from"].startswith("none (a cold start): the neighbour is 10x")
    assert far.stats["rounds"] == cold.stats["rounds"]
    assert far.loss() == cold.loss()
    # and the build after it starts from this one
    near = mdp.build("optimal", space, 12 * e0, sweep=sweep)
    assert near.stats["sweep_start"]["from_epsilon"] == pytest.approx(10 * e0)


def test_binding_rows_are_those_the_optimum_meets_with_equality():
    space = synthetic_space("clustered", 9, rng=1)
    D, eps = space.distances, _median_eps(space, 1.5)
    _, M = optimal_loss_linprog(D, eps)
    M = np.maximum(M, 0)
    allowed = ~np.eye(9, dtype=bool)
    u, v, w = binding_rows(M, D, eps, allowed, rtol=1e-6)
    assert 0 < len(u) <= 2 * 9 * 9
    assert np.all(u != v)
    # every row returned binds: M_uw = e^{eps D_uv} M_vw within the margin
    np.testing.assert_allclose(np.exp(-eps * D[u, v]) * M[u, w], M[v, w], rtol=1e-5, atol=1e-9)
    # with a wide margin there are at least as many
    assert len(binding_rows(M, D, eps, allowed, rtol=0.5)[0]) >= len(u)
    # a margin of 0.5 admits no row slack by more than a half
    wu, wv, ww = binding_rows(M, D, eps, allowed, rtol=0.5)
    assert np.all(np.exp(-eps * D[wu, wv]) * M[wu, ww] >= 0.5 * M[wv, ww] - 1e-15)


def test_merge_rows_is_the_union_without_disallowed_pairs():
    D = synthetic_space("grid_ties", 6, rng=0).distances
    allowed = ~np.eye(6, dtype=bool)
    allowed[0, 1] = False
    a = initial_triples(D, allowed, 0)
    b = (np.array([0, 2, 2]), np.array([1, 3, 3]), np.array([4, 5, 5]))
    u, v, w = merge_rows(6, allowed, a, b)
    keys = set(zip(u.tolist(), v.tolist(), w.tolist(), strict=True))
    assert (2, 3, 5) in keys and (0, 1, 4) not in keys
    assert len(keys) == len(u)
    assert keys >= set(zip(*(x.tolist() for x in a), strict=True))


def test_a_sweep_over_another_space_starts_cold_and_a_wrong_type_is_refused():
    sweep = Sweep()
    mdp.build("optimal", synthetic_space("clustered", 9, rng=0), 1.0, sweep=sweep)
    mech = mdp.build("optimal", synthetic_space("clustered", 8, rng=0), 1.0, sweep=sweep)
    assert mech.stats["sweep_start"]["from"].startswith("none")
    with pytest.raises(ParameterTypeError, match="sweep must be a Sweep"):
        mdp.build("optimal", synthetic_space("clustered", 8, rng=0), 1.0, sweep=mech)


def test_a_sweep_is_recorded_without_its_rows_or_matrix(tmp_path):
    space = synthetic_space("clustered", 8, rng=0)
    sweep = Sweep()
    mdp.build("optimal", space, 1.0, sweep=sweep)
    mech = mdp.build("optimal", space, 1.5, sweep=sweep, tuning=OptimalTuning(sweep_rtol=0.5))
    path = mech.save(tmp_path / "m.npz")
    with pytest.warns(mdp.errors.UnverifiedPointsWarning):
        loaded = mdp.load(path)
    assert loaded.params["sweep"] == "Sweep()"
    assert loaded.stats["sweep_start"]["from_epsilon"] == 1.0


@pytest.mark.parametrize("rows", ["edges", "paths"])
def test_spanner_lazy_rounds_take_a_sweep(rows):
    space = synthetic_space("clustered", 16, rng=4)
    e0, e1 = _median_eps(space, 1.0), _median_eps(space, 2.0)
    sweep = Sweep()
    mdp.build("spanner", space, e0, method="lazy", rows=rows, sweep=sweep)
    assert sweep.epsilon == pytest.approx(e0 / 1.5)          # the level of its rows
    cold = mdp.build("spanner", space, e1, method="lazy", rows=rows)
    warm = mdp.build("spanner", space, e1, method="lazy", rows=rows, sweep=sweep)
    assert warm.stats["sweep_start"]["from_epsilon"] == pytest.approx(e0)
    # the same LP: equal optima (both certified against their Lagrangian bounds)
    assert warm.loss() == pytest.approx(cold.loss(), rel=2e-6)
    for mech in (cold, warm):
        assert mech.stats["lower_bound"] <= mech.loss() * (1 + 1e-9)
        assert mech.stats["relative_gap"] <= 2e-6


def test_calibrate_sweeps_its_builds_and_curves_sweep_their_targets(tmp_path):
    from mdp.curves.loss import loss_curves

    space = synthetic_space("city_latlon", 12, rng=1)
    # delta > 0: OPTMech's eps_tight(delta) falls below eps, a second build follows, swept
    mech = mdp.calibrate("optimal", space, _median_eps(space, 0.3), delta=0.05)
    assert mech.stats["calibration"]["builds"] >= 2
    assert mech.stats["sweep_start"]["from_epsilon"] > 0
    assert mech.params["sweep"].keys is None and mech.params["sweep"].matrix is None

    targets = [_median_eps(space, 1.0), _median_eps(space, 2.0), _median_eps(space, 4.0)]
    df = loss_curves(space, ["optimal", "exponential"], targets, progress=False,
                     keep=tmp_path / "kept")
    kept = {p.name: mdp.load(p) for p in (tmp_path / "kept").glob("*.npz")}
    starts = sorted(m.stats["sweep_start"].get("from_epsilon", 0.0)
                    for name, m in kept.items() if name.startswith("optimal"))
    # the first target starts cold, each later one from the target before it
    assert starts == pytest.approx([0.0] + targets[:2], rel=1e-3)
    assert all("sweep" not in m.params for name, m in kept.items()
               if name.startswith("exponential"))
    # and the swept curve equals cold builds at each target
    opt = df[df.mechanism == "optimal"].sort_values("target_eps_tight")
    for t, loss in zip(targets, opt.loss_max, strict=True):
        assert loss == pytest.approx(mdp.build("optimal", space, t).loss(), rel=2e-6)
