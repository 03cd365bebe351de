"""The interior point core (mdp.lp.interior_point) on its own: a dense normal-equations plug-in
for ``min c^T x`` s.t. ``A x >= b``, ``x >= 0``, checked against SciPy's linprog (HiGHS)."""

from dataclasses import dataclass, replace

import numpy as np
import pytest
from scipy.optimize import linprog

from mdp.errors import SolverError, SolverTimeout
from mdp.lp.interior_point import (
    IPMSettings,
    NoConvergence,
    Scores,
    Status,
    max_step,
    run_interior_point,
)


@dataclass
class Point:
    x: np.ndarray
    w: np.ndarray          # multipliers of x >= 0
    s: np.ndarray          # slacks of A x - s = b
    y: np.ndarray          # multipliers of A x >= b


class DenseLP:
    """``min c^T x`` s.t. ``A x >= b``, ``x >= 0``: the normal equations
    ``(A^T diag(y / s) A + diag(w / x)) dx = rhs`` formed and factored densely."""

    name = "the dense method"

    def __init__(self, c, A, b):
        self.c, self.A, self.b = c, A, b
        self.factored = 0

    def default_start(self):
        m, n = self.A.shape
        return Point(x=np.ones(n), w=np.ones(n), s=np.ones(m), y=np.ones(m))

    def measure(self, p):
        rp = self.b - self.A @ p.x + p.s
        rd = self.c - self.A.T @ p.y - p.w
        pobj, dobj = float(self.c @ p.x), float(self.b @ p.y)
        return (rp, rd), Scores(gap=abs(pobj - dobj) / (1 + abs(pobj)),
                                primal=float(np.linalg.norm(rp)) / (1 + np.linalg.norm(self.b)),
                                dual=float(np.linalg.norm(rd)) / (1 + np.linalg.norm(self.c)),
                                objective=pobj, dual_objective=dobj)

    def mu(self, p):
        return float(p.s @ p.y + p.x @ p.w) / (len(p.s) + len(p.x))

    def pairs(self, p, d):
        return (p.s, d.s, p.y, d.y), (p.x, d.x, p.w, d.w)

    def moved(self, p, d, ap, ad):
        return Point(x=p.x + ap * d.x, w=p.w + ad * d.w, s=p.s + ap * d.s, y=p.y + ad * d.y)

    def factor(self, p, score):
        N = self.A.T @ (self.A * (p.y / p.s)[:, None]) + np.diag(p.w / p.x)
        try:
            self.chol = np.linalg.cholesky(N)
        except np.linalg.LinAlgError as exc:
            raise SolverError("normal matrix lost positive definiteness") from exc
        self.factored += 1

    def newton(self, p, residuals, targets, predictor):
        rp, rd = residuals
        rs, rx = targets
        rhs = self.A.T @ ((rs + p.y * rp) / p.s) + rx / p.x - rd
        dx = np.linalg.solve(self.chol.T, np.linalg.solve(self.chol, rhs))
        ds = self.A @ dx - rp
        return Point(x=dx, w=(rx - p.w * dx) / p.x, s=ds, y=(rs - p.y * ds) / p.s)



def random_lp(seed, m=12, n=8):
    """A feasible, bounded LP: ``A`` positive so that large ``x`` satisfy every row, ``c > 0``."""
    rng = np.random.default_rng(seed)
    A = rng.random((m, n)) + 0.1 * rng.standard_normal((m, n))
    b = rng.standard_normal(m) + 1.0
    c = rng.random(n) + 0.1
    return c, A, b


def reference(c, A, b):
    res = linprog(c, A_ub=-A, b_ub=-b, bounds=[(0, None)] * len(c), method="highs")
    assert res.status == 0
    return res


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("correctors", [0, 2])
def test_reaches_linprogs_optimum(seed, correctors):
    c, A, b = random_lp(seed)
    ref = reference(c, A, b)
    settings = IPMSettings(tol=1e-10, correctors=correctors)
    out = run_interior_point(DenseLP(c, A, b), settings)
    assert out.status is Status.CONVERGED
    assert out.scores.score <= 1e-10
    assert out.scores.objective == pytest.approx(ref.fun, rel=1e-8, abs=1e-10)
    assert np.all(A @ out.point.x >= b - 1e-8) and np.all(out.point.x > 0)
    # the log holds every iterate, the last one the returned point's scores
    assert len(out.log) == out.iterations + 1 and out.log[-1] == out.scores
    # weak duality at the returned point (small residuals): the dual objective is below
    assert out.scores.dual_objective <= ref.fun + 1e-8


def test_correctors_never_take_more_iterations_here():
    its = {k: sum(run_interior_point(DenseLP(*random_lp(s, 30, 20)), IPMSettings(
        tol=1e-9, correctors=k)).iterations for s in range(4)) for k in (0, 2)}
    assert its[2] <= its[0]


def test_log_inspect_and_kept_point():
    c, A, b = random_lp(1)
    seen = []
    lp = DenseLP(c, A, b)
    out = run_interior_point(lp, IPMSettings(tol=1e-9), keep_gap=1e-2,
                             log=lambda it, p, s: seen.append((it, s.score)))
    assert [it for it, _ in seen] == list(range(out.iterations + 1))
    first = next(k for k, (_, sc) in enumerate(seen) if sc <= 1e-2)
    kept_scores = lp.measure(out.kept)[1]
    assert kept_scores.score == seen[first][1]
    # a warm start from the kept point converges in fewer iterations than the cold start
    warm = run_interior_point(lp, IPMSettings(tol=1e-9), start=out.kept)
    assert warm.iterations < out.iterations
    assert warm.scores.objective == pytest.approx(out.scores.objective, rel=1e-8)
    # inspection stops the method at the iterate it returns True for
    stop = run_interior_point(lp, IPMSettings(tol=1e-9), inspect=lambda it, p, s: it == 3)
    assert stop.status is Status.STOPPED and stop.iterations == 3
    assert stop.scores.score == seen[3][1]


def test_stall_returns_the_best_iterate_and_failure_raises():
    c, A, b = random_lp(2)
    lp = DenseLP(c, A, b)
    # an unreachable tolerance: the method stalls once it stops improving, with its best iterate
    out = run_interior_point(lp, IPMSettings(tol=0.0, stall_accept=1e-6, stall_iterations=3))
    assert out.status is Status.STALLED and out.stalled
    assert out.scores.score == min(s.score for s in out.log)
    # out of iterations before any iterate is acceptable: the problem's failure
    with pytest.raises(SolverError, match="the dense method stopped after 2 iterations"):
        run_interior_point(lp, IPMSettings(tol=1e-9, max_iter=2))
    with pytest.raises(SolverTimeout, match="time limit reached after 0 iterations of the dense"):
        run_interior_point(lp, IPMSettings(tol=1e-9), deadline=0.0)


def test_a_plateau_above_the_acceptance_ends_early_with_the_best_iterate():
    c, A, b = random_lp(2)
    # nothing is acceptable: without the rule the method runs on past its last progress
    settings = IPMSettings(tol=0.0, stall_accept=0.0, stall_factor=0.8, max_iter=80)
    with pytest.raises(NoConvergence) as full:
        run_interior_point(DenseLP(c, A, b), settings)
    with pytest.raises(NoConvergence, match="no progress for 5 iterations") as early:
        run_interior_point(DenseLP(c, A, b), replace(settings, give_up_iterations=5))
    best, late = early.value.best, full.value.best
    assert len(best.log) < len(late.log)
    assert best.scores.score == min(s.score for s in best.log)
    # it gives up after five iterations without a fifth of progress, at the same best point
    mark, last = np.inf, 0
    for k, scores in enumerate(best.log):
        if scores.score < 0.8 * mark:
            mark, last = scores.score, k
    assert len(best.log) - 1 - last == 5
    assert best.scores.score == pytest.approx(
        min(s.score for s in late.log[:len(best.log)]), rel=0)


def test_a_failed_factorisation_is_an_error_far_from_the_optimum_and_a_stall_near_it():
    c, A, b = random_lp(3)

    class Failing(DenseLP):
        def __init__(self, fail_at):
            super().__init__(c, A, b)
            self.fail_at = fail_at

        def factor(self, p, score):
            if self.factored >= self.fail_at:
                raise SolverError("normal matrix lost positive definiteness")
            super().factor(p, score)

    with pytest.raises(SolverError, match="positive definiteness"):
        run_interior_point(Failing(2), IPMSettings(tol=1e-12))
    total = run_interior_point(DenseLP(c, A, b), IPMSettings(tol=1e-12)).iterations
    out = run_interior_point(Failing(total - 1), IPMSettings(tol=1e-12, stall_accept=1e-3))
    assert out.status is Status.STALLED and out.iterations == total - 1
    assert out.scores.score <= 1e-3


def test_step_rules():
    v = np.array([1.0, 2.0, 4.0])
    assert max_step(v, np.array([1.0, 0.0, 2.0])) == 1.0
    assert max_step(v, np.array([-4.0, 1.0, -2.0])) == 0.25
    assert max_step(v, np.array([-4.0, np.nan, -2.0])) == 0.25


def test_settings_are_data():
    s = IPMSettings(tol=1e-8)
    assert replace(s, correctors=2).correctors == 2 and s.correctors == 0
    with pytest.raises(AttributeError):
        s.tol = 1.0
