"""The per-column mix repair of ``gap=`` mode (``mdp.worst_case.column_mix``), against brute force and
scipy's linprog, and OPTMech's use of it on restricted optima."""

import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

import mdp
from mdp.families.optimal import OptimalTuning
from mdp.families.optimal import build as optimal
from mdp.lp.output import (
    balanced_envelope,
    near_private_candidate,
    private_candidate,
    stochastic_rows,
)
from mdp.privacy.accounting import loss as worst_loss
from mdp.privacy.verification import certify_matrix
from mdp.spaces.metric_space import MetricSpace
from mdp.worst_case.column_mix import least_loss_column_mix, lower_envelope
from tests.support.reference_lp import optimal_loss_linprog, restricted_optimum_linprog


def _points(seed: int, n: int) -> np.ndarray:
    pts = np.random.default_rng(seed).uniform(0, 3, size=(n, 2))
    return MetricSpace.from_points(pts).distances


def _column_ratio_excess(A: np.ndarray, D: np.ndarray, eps: float) -> float:
    """Largest ``A[u, w] / (e^{eps D[u, v]} A[v, w]) - 1`` over all triples (brute force)."""
    n = len(D)
    worst = -np.inf
    for w in range(A.shape[1]):
        for u in range(n):
            for v in range(n):
                if A[v, w] > 0:
                    worst = max(worst, A[u, w] / (np.exp(eps * D[u, v]) * A[v, w]) - 1.0)
                elif A[u, w] > 0:
                    return np.inf
    return worst


def _restricted_optimum(D: np.ndarray, eps: float, k: int) -> tuple[np.ndarray, float]:
    """A restricted optimum (rows to each input's ``k`` nearest only), rows normalised, and the
    restricted LP's value (a valid lower bound)."""
    value, M = restricted_optimum_linprog(D, eps, k)
    M = np.maximum(M, 0.0)
    return M / M.sum(axis=1, keepdims=True), value


def test_lower_envelope_is_the_largest_private_minorant_brute_force():
    D = _points(0, 7)
    eps = 0.8
    M = np.random.default_rng(1).uniform(0.01, 1.0, size=(7, 5))
    L = lower_envelope(M, D, eps)
    brute = np.array([[min(np.exp(eps * D[v, u]) * M[u, w] for u in range(7)) for w in range(5)]
                      for v in range(7)])
    np.testing.assert_allclose(L, brute, rtol=1e-14)
    assert np.all(L <= M * (1 + 1e-15))
    assert _column_ratio_excess(L, D, eps) <= 1e-14
    # a private column is its own lower envelope; a zero entry zeroes its column
    E = np.exp(-eps * D[:, :3])
    np.testing.assert_allclose(lower_envelope(E, D, eps), E, rtol=1e-14)
    M[2, 4] = 0.0
    assert np.all(lower_envelope(M, D, eps)[:, 4] == 0.0)


def _mix_linprog(atoms, D) -> float:
    """The same LP written out independently for scipy's linprog."""
    n, k = len(D), len(atoms)
    A_eq = np.hstack([np.hstack(atoms), np.zeros((n, 1))])
    A_ub = np.hstack([np.hstack([D * A for A in atoms]), -np.ones((n, 1))])
    c = np.zeros(k * n + 1)
    c[-1] = 1.0
    res = linprog(c, A_ub=A_ub, b_ub=np.zeros(n), A_eq=A_eq, b_eq=np.ones(n),
                  bounds=[(0, None)] * (k * n) + [(None, None)], method="highs")
    assert res.status == 0
    return float(res.fun)


def test_mix_matches_linprog_and_never_loses_to_an_atom():
    D = _points(2, 9)
    eps = 1.0
    K = np.exp(-eps * D)
    half = np.exp(-eps / 2 * D)
    expo = half / half.sum(axis=1, keepdims=True)     # the exponential mechanism at eps/2: eps-mDP
    uniform = np.full_like(D, 1.0 / len(D))
    atoms = [expo, uniform, K]
    P = least_loss_column_mix(atoms, D)
    np.testing.assert_allclose(P.sum(axis=1), 1.0, atol=1e-7)
    assert worst_loss(P, D) == pytest.approx(_mix_linprog(atoms, D), rel=1e-7)
    assert worst_loss(P, D) <= min(worst_loss(expo, D), worst_loss(uniform, D)) + 1e-9
    assert _column_ratio_excess(P, D, eps) <= 1e-12          # nonnegative column weights
    # a mechanism alone (invertible): its only mix is itself
    np.testing.assert_allclose(least_loss_column_mix([expo], D), expo, atol=1e-7)


def test_mix_without_a_unit_row_sum_mixture_returns_none():
    D = _points(3, 5)
    atom = np.zeros_like(D)
    atom[:, 0] = 1.0
    atom[0, 0] = 2.0     # rows 0 and 1 need weights 1/2 and 1 on the same column
    assert least_loss_column_mix([atom], D) is None


@pytest.mark.parametrize("atoms,match", [([], "at least one"), ([np.ones((4, 4))], r"atoms\[0\]"),
                                         ([np.ones((5, 5)), -np.ones((5, 5))], r"atoms\[1\]"),
                                         ([np.full((5, 5), np.nan)], r"atoms\[0\]")])
def test_bad_atoms_are_refused_naming_them(atoms, match):
    with pytest.raises(mdp.errors.ParameterError, match=match):
        least_loss_column_mix(atoms, _points(3, 5))


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(4, 9), eps=st.floats(0.2, 3.0),
       k=st.integers(1, 2))
def test_mix_of_a_restricted_optimum_is_certified_and_never_below_the_optimum(seed, n, eps, k):
    """On random spaces: the mix of the repairs of a restricted optimum is certified private by
    the registry's check, never below the independent optimum and never above the repair it
    started from."""
    D = _points(seed, n)
    M, bound = _restricted_optimum(D, eps, k)
    base, log, _ = private_candidate(balanced_envelope(M, D, eps), D, eps)
    atoms = [base, lower_envelope(M, D, eps), np.exp(-eps * D)]
    P = least_loss_column_mix(atoms, D)
    R, log, _ = private_candidate(stochastic_rows(P), D, eps, log=False)
    certify_matrix(R, D, eps, repair=False)
    opt, _ = optimal_loss_linprog(D, eps)
    assert bound <= opt * (1 + 1e-9)
    assert worst_loss(R, D) >= opt * (1 - 1e-9)
    assert worst_loss(R, D) <= worst_loss(base, D) * (1 + 1e-7)


def test_gap_repair_mixes_only_near_the_target_and_keeps_the_cheaper_candidate():
    D = _points(5, 12)
    eps = 1.0
    M, bound = _restricted_optimum(D, eps, 1)
    base = near_private_candidate(M.copy(), D, eps)
    base_loss = worst_loss(base[0], D)
    rel = (base_loss - bound) / base_loss
    assert rel > 1e-3                      # a repair that costs something: the case to improve

    repair = optimal._GapRepair(D, eps, target=rel / 2)       # within 4x of it: mixed
    (R, log, _), loss = repair(M.copy(), bound)
    assert repair.mixes == 1 and not log
    assert loss <= base_loss and loss == pytest.approx(worst_loss(R, D), rel=1e-12)
    certify_matrix(R, D, eps, repair=False)
    assert loss >= optimal_loss_linprog(D, eps)[0] * (1 - 1e-9)
    assert len(repair.previous) == 1       # kept as an atom of the next mix

    for target in (2 * rel, rel / 10):     # already met / too far for the mix to try
        repair = optimal._GapRepair(D, eps, target=target)
        (R, _, _), loss = repair(M.copy(), bound)
        assert repair.mixes == 0 and loss == pytest.approx(base_loss, rel=1e-12)


def _spy_on_mix_time_limits(monkeypatch) -> list:
    """Record the ``time_limit`` each mixing LP of OPTMech's repair is given."""
    calls = []
    real = optimal.least_loss_column_mix

    def spy(atoms, distances, *, time_limit=None):
        calls.append(time_limit)
        return real(atoms, distances, time_limit=time_limit)

    monkeypatch.setattr(optimal, "least_loss_column_mix", spy)
    return calls


def test_gap_repair_gives_the_mixing_lp_only_the_time_left(monkeypatch):
    """The mixing LP is bounded by the build's deadline: no deadline, no limit; otherwise HiGHS
    gets the seconds left, and once they are spent no mix is tried (the repair alone stands)."""
    D = _points(5, 12)
    eps = 1.0
    M, bound = _restricted_optimum(D, eps, 1)
    base_loss = worst_loss(near_private_candidate(M.copy(), D, eps)[0], D)
    rel = (base_loss - bound) / base_loss
    calls = _spy_on_mix_time_limits(monkeypatch)

    optimal._GapRepair(D, eps, target=rel / 2)(M.copy(), bound)
    assert calls == [None]
    start = time.perf_counter()
    repair = optimal._GapRepair(D, eps, target=rel / 2, deadline=start + 60.0)
    repair(M.copy(), bound)
    assert repair.mixes == 1 and 0 < calls[-1] <= 60.0
    repair = optimal._GapRepair(D, eps, target=rel / 2, deadline=time.perf_counter() - 1.0)
    (_, _, _), loss = repair(M.copy(), bound)
    assert len(calls) == 2 and repair.mixes == 0
    assert loss == pytest.approx(base_loss, rel=1e-12)


@pytest.mark.parametrize(("method", "n", "seed", "gap", "options"),
                         [("lazy", 12, 2, 0.2, {"knn": 0, "solver": "simplex"}),
                          ("blocks", 55, 0, 3e-3, {})])
def test_gap_build_bounds_its_mixes_by_the_time_limit(monkeypatch, method, n, seed, gap, options):
    """Both ``gap=`` paths hand the build's ``time_limit`` on to the mixing LP (it was unbounded:
    a build could overrun its limit by a whole mix). The spaces are those of the tests below,
    where each path tries the mix."""
    pts = np.random.default_rng(seed).uniform(0, 3, size=(n, 2))
    calls = _spy_on_mix_time_limits(monkeypatch)
    mech = mdp.build("optimal", MetricSpace.from_points(pts), 1.0, gap=gap, time_limit=300.0,
                     **options)
    assert mech.report.plan.solver.value == ("blocks" if method == "blocks" else "simplex")
    assert mech.stats["method"] == "lazy"
    assert calls and all(t is not None and 0 < t <= 300.0 for t in calls)


def test_gap_build_reports_its_mixes_and_stays_certified(monkeypatch):
    """A whole ``gap=`` build on the block rounds: the mix is tried and kept, reported, and the
    result is certified by the registry within the gap of its bound; with the mix switched off
    the same build reports none."""
    pts = np.random.default_rng(0).uniform(0, 3, size=(55, 2))
    space = MetricSpace.from_points(pts)
    mech = mdp.build("optimal", space, 1.0, gap=3e-3)
    st_ = mech.stats
    assert st_["plan"]["solver"] == "blocks" and st_["target_met"]
    assert st_["column_mixes"] >= st_["column_mixes_kept"] >= 1
    assert mech.loss() - st_["lower_bound"] <= 3e-3 * mech.loss() + 1e-12
    plain = mdp.build("optimal", space, 1.0, gap=3e-3,
                      tuning=OptimalTuning(mix_try_factor=0.0)).stats
    assert plain["column_mixes"] == 0 and plain["target_met"]


def test_lazy_gap_build_releases_the_mix_it_tested():
    """``method="lazy"`` (small spaces): the candidate the stop test certified, mixed, is the one
    released (a regression: it was recomputed without the mix and missed the target)."""
    pts = np.random.default_rng(2).uniform(0, 3, size=(12, 2))
    mech = mdp.build("optimal", MetricSpace.from_points(pts), 1.0, gap=0.2, knn=0, solver="simplex")
    st_ = mech.stats
    assert st_["column_mixes_kept"] >= 1 and st_["target_met"]
    assert mech.loss() - st_["lower_bound"] <= 0.2 * mech.loss()
    assert mech.loss() >= optimal_loss_linprog(MetricSpace.from_points(pts).distances, 1.0)[0] * (1 - 1e-9)
