r"""Certified :math:`\ell_1` recovery of heat sources (Gilbert & McMillan 2018, Algorithm 1).

:func:`recover` solves the cone program

.. math:: \hat f = \arg\min_{f \in [0,1]^n} \|f\|_1 \quad \text{s.t.} \quad \|A f - y\|_2 \le \rho

with cvxpy + Clarabel, returns a duality-gap certificate computed here from the dual vector, and
applies a documented policy when the program is infeasible. For large ``n``,
:func:`compress_matrix` replaces ``A`` by its rank-``r`` row-space compression
(:class:`CompressedMatrix`; the heat matrix has numerical rank ~8-15) without changing the
feasible set beyond a reported, exact error.
"""

from __future__ import annotations

import functools
import time
import warnings
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import lsq_linear

from mdp.errors import ParameterError, SolverError
from mdp.validation import check_int, check_positive, check_rng

from .model import check_matrix

__all__ = [
    "LARGE_N",
    "CompressedMatrix",
    "RecoveryResult",
    "compress_matrix",
    "least_residual",
    "recover",
]

#: Above this many sources, :func:`recover` compresses ``A`` and :func:`least_residual` uses a
#: cone program instead of BVLS (timings in docs/experiments/heatsources.md).
LARGE_N = 2000

#: Problems with at most this many matrix entries are compiled once per shape with the matrix as
#: a cvxpy Parameter, so that re-solves skip canonicalisation (docs/experiments/heatsources.md).
_PARAM_MAX_ENTRIES = 20_000


@dataclass(frozen=True)
class CompressedMatrix:
    r"""``A`` with its row space compressed to rank ``r``: :math:`B = U^T A` (``U`` orthonormal).

    For every ``f``, :math:`\|Af - y\|^2 = \|Bf - U^T y\|^2 + \|(I - UU^T)(Af - y)\|^2`, and
    :math:`\|(I-UU^T) A f\| \le` ``error`` :math:`\|f\|_2` with ``error`` the exact Frobenius norm
    of :math:`A - UB`. :func:`recover` replaces the constraint by the compressed one with radius
    :math:`\sqrt{\rho^2 - \|(I-UU^T)y\|^2}` and reports the true residual afterwards.

    Attributes
    ----------
    A : ndarray of shape (m, n)
        The full matrix.
    U : ndarray of shape (m, r)
        Orthonormal basis of the kept row space.
    B : ndarray of shape (r, n)
        :math:`U^T A`.
    error : float
        :math:`\|A - UB\|_F`.
    """

    A: np.ndarray
    U: np.ndarray
    B: np.ndarray
    error: float

    @property
    def rank(self) -> int:
        """Compression rank ``r``."""
        return int(self.U.shape[1])

    @property
    def shape(self) -> tuple[int, int]:
        """Shape ``(m, n)`` of the full matrix."""
        return self.A.shape


def compress_matrix(A, *, rtol: float = 1e-10, max_rank: int = 40, rng=0) -> CompressedMatrix:
    r"""Randomised-SVD compression of the heat matrix (numerical rank ~8-15).

    A randomised range finder (Halko, Martinsson & Tropp 2011, Alg. 4.4;
    ``sklearn.utils.extmath.randomized_range_finder``, 4 power iterations) gives an orthonormal
    ``Q`` (``m x k``, ``k = min(m, n, max_rank)``); :math:`B = Q^T A` is rotated to its principal
    directions (``eigh`` of the ``k x k`` Gram matrix) and truncated to the smallest rank ``r``
    whose error :math:`\|A - U_r U_r^T A\|_F \le` ``rtol`` :math:`s_1`. Every product touches
    ``A`` only through ``m x n`` by ``n x k`` multiplies, so ``n = 10,000`` is cheap. The exact
    error :math:`\|A - UB\|_F` is returned with the result.

    Parameters
    ----------
    A : array_like of shape (m, n)
    rtol : float
        Relative Frobenius error allowed, > 0.
    max_rank : int
        Largest rank tried.
    rng : None, int or numpy.random.Generator, keyword-only
        Seed of the range finder (default 0: deterministic).

    Returns
    -------
    CompressedMatrix
    """
    from sklearn.utils.extmath import randomized_range_finder

    A = check_matrix(A)
    check_positive(rtol, "rtol")
    max_rank = check_int(max_rank, "max_rank", low=1)
    k = min(A.shape[0], A.shape[1], max_rank)
    seed = int(check_rng(rng).integers(2**31 - 1))
    Q = randomized_range_finder(A, size=k, n_iter=4, random_state=seed)
    B = Q.T @ A
    outside = float(np.linalg.norm(A - Q @ B))  # part of A outside span(Q), measured exactly
    _, W = np.linalg.eigh(B @ B.T)
    W = W[:, ::-1]
    B = W.T @ B
    # Row norms of the rotated B are the singular values, computed without squaring.
    rows = np.linalg.norm(B, axis=1)
    tails = np.sqrt(np.append(np.cumsum((rows**2)[::-1])[::-1][1:], 0.0))
    errors = np.sqrt(outside**2 + tails**2)
    ok = np.flatnonzero(errors <= rtol * rows[0])
    r = int(ok[0]) + 1 if ok.size else k
    U = Q @ W[:, :r]
    B = B[:r]
    return CompressedMatrix(A=A, U=U, B=B, error=float(np.linalg.norm(A - U @ B)))


def least_residual(A, y) -> tuple[float, np.ndarray]:
    r"""Smallest achievable residual :math:`\min_{f \in [0,1]^n} \|Af - y\|_2` and its minimiser.

    ``scipy.optimize.lsq_linear(method='bvls')`` for ``n <= LARGE_N``; above that BVLS is too
    slow and the same problem is solved as a cone program with Clarabel. The returned residual
    is recomputed from the clipped minimiser, so it is always achievable (an upper bound on the
    true minimum, which is what the infeasibility policy of :func:`recover` needs).

    Parameters
    ----------
    A : array_like of shape (m, n) or CompressedMatrix
        A compressed matrix is used through its ``B`` (``y`` must then be :math:`U^T y`).
    y : array_like of shape (m,)

    Returns
    -------
    residual : float
    f : ndarray of shape (n,)
    """
    A = A.B if isinstance(A, CompressedMatrix) else check_matrix(A)
    y = np.asarray(y, dtype=float)
    if A.shape[1] <= LARGE_N:
        f = lsq_linear(A, y, bounds=(0.0, 1.0), method="bvls").x
    else:
        import cvxpy as cp

        fv = cp.Variable(A.shape[1])
        prob = cp.Problem(cp.Minimize(cp.norm(A @ fv - y, 2)), [fv >= 0, fv <= 1])
        prob.solve(solver=cp.CLARABEL)
        f = np.asarray(fv.value, dtype=float)
    f = np.clip(f, 0.0, 1.0)
    return float(np.linalg.norm(A @ f - y)), f


@dataclass(frozen=True)
class RecoveryResult:
    r"""Output of :func:`recover`.

    Attributes
    ----------
    f : ndarray
        Recovered source vector in ``[0, 1]^n`` (clipped solver output).
    rho_requested, rho : float
        Radius asked for and radius used (they differ under the infeasibility policy).
    policy : str
        ``"as-requested"``, ``"widened"`` (requested radius infeasible on the box) or
        ``"zero"`` (:math:`\|y\| \le \rho`: ``f = 0`` is optimal and the EMD is undefined).
    objective : float
        :math:`\|\hat f\|_1`.
    dual_bound : float
        Lower bound on the optimum from the dual vector ``z`` (always valid):
        :math:`D(z) = z^T y - \rho\|z\|_2 + \sum_i \min(0, 1 - (A^T z)_i)`.
    gap : float
        ``objective - dual_bound`` (duality gap; tiny negative values come from the solver's
        ``~1e-10`` relative infeasibility).
    residual : float
        :math:`\|A\hat f - y\|_2` with the full matrix.
    residual_excess : float
        ``max(0, residual - rho) / max(rho, ||y||)``: the radius's excess relative to the radius,
        or to the readings' norm where the radius is smaller (``rho = 0`` asks for ``A f = y``,
        which a conic solver meets to its accuracy relative to ``y``, not exactly).
    optimal : bool
        ``|gap| <= gap_tol (1 + objective)`` and ``residual_excess <= feas_tol``.
    status : str
        Solver status (``"optimal"``, ``"closed-form"`` for the zero case, ...).
    least_residual : float
        Achievable residual on the box used by the policy.
    rank : int or None
        Compression rank when ``A`` was compressed.
    seconds : float
        Wall time of the whole call.
    """

    f: np.ndarray
    rho_requested: float
    rho: float
    policy: str
    objective: float
    dual_bound: float
    gap: float
    residual: float
    residual_excess: float
    optimal: bool
    status: str
    least_residual: float
    rank: int | None = None
    seconds: float = field(default=0.0, compare=False)

    @property
    def infeasible(self) -> bool:
        """The requested radius admitted no ``f`` in the box (radius was widened)."""
        return self.rho > self.rho_requested

    @property
    def is_zero(self) -> bool:
        """``f = 0`` (EMD undefined; see :func:`geo.heatsource.trials.emd_error`)."""
        return self.policy == "zero"


@functools.lru_cache(maxsize=16)
def _parametrized_problem(m: int, n: int):
    import cvxpy as cp

    f, r = cp.Variable(n), cp.Variable(m)
    Ap, yp, rp = cp.Parameter((m, n)), cp.Parameter(m), cp.Parameter(nonneg=True)
    eq = Ap @ f - r == yp
    prob = cp.Problem(cp.Minimize(cp.sum(f)), [eq, cp.norm(r, 2) <= rp, f >= 0, f <= 1])
    return prob, f, eq, Ap, yp, rp


def _solve_socp(A: np.ndarray, y: np.ndarray, rho: float):
    import cvxpy as cp

    m, n = A.shape
    if m * n <= _PARAM_MAX_ENTRIES:
        prob, f, eq, Ap, yp, rp = _parametrized_problem(m, n)
        Ap.value, yp.value, rp.value = A, y, rho
    else:
        # The residual is its own variable so the cone is the plain SOC ||r|| <= rho.
        f, r = cp.Variable(n), cp.Variable(m)
        eq = A @ f - r == y
        prob = cp.Problem(cp.Minimize(cp.sum(f)), [eq, cp.norm(r, 2) <= rho, f >= 0, f <= 1])
    try:
        with warnings.catch_warnings():
            # "Solution may be inaccurate" is reported through the status and the certificate.
            warnings.simplefilter("ignore", UserWarning)
            prob.solve(solver=cp.CLARABEL)
    except cp.error.SolverError as exc:
        return None, None, f"solver error: {exc}"
    if f.value is None or eq.dual_value is None:
        return None, None, str(prob.status)
    return np.asarray(f.value, dtype=float), np.asarray(eq.dual_value, dtype=float), str(prob.status)


def _dual_bound(A: np.ndarray, y: np.ndarray, rho: float, z: np.ndarray) -> float:
    # Weak duality: for f in [0,1]^n with ||Af - y|| <= rho,
    # 1^T f = (1 - A^T z)^T f + z^T (A f - y) + z^T y >= sum min(0, 1 - A^T z) - rho ||z|| + z^T y.
    c = 1.0 - A.T @ z
    return float(z @ y - rho * np.linalg.norm(z) + np.minimum(c, 0.0).sum())


def recover(A, y, rho: float, *, margin: float = 1e-4, compress: bool | None = None,
            gap_tol: float = 1e-6, feas_tol: float = 1e-6) -> RecoveryResult:
    r"""Constrained :math:`\ell_1` recovery (Gilbert & McMillan 2018, Algorithm 1), certified.

    .. math:: \hat f = \arg\min \|f\|_1 \ \text{s.t.}\ \|Af - y\|_2 \le \rho,\ 0 \le f \le 1,

    solved by cvxpy with Clarabel, the residual ``r = A f - y`` being its own variable.
    The paper uses :math:`\rho = \sigma\sqrt m`.

    Policy:

    - **zero**: if :math:`\|y\|_2 \le \rho` (the radius used, after the policy below) then
      ``f = 0`` is optimal (objective 0); it is returned without a solver and flagged ``"zero"``
      (its EMD is undefined; see :func:`geo.heatsource.trials.emd_error`).
    - **infeasible**: with :math:`\rho = \sigma\sqrt m` the box often admits no feasible ``f``
      (30-70 % of trials at T = 0.05, nonnegativity binds). Then
      :math:`\rho = (1 + \text{margin})\, r_{\min}`, :math:`r_{\min}` the achievable least
      residual on the box (:func:`least_residual`), and the result is flagged ``"widened"``.
      ``margin = 1e-4`` (not smaller) keeps the feasible set from degenerating to a point, where
      Clarabel's relative infeasibility of ~1e-10 produced duality gaps of ~1e-7.

    Certificate: any dual vector ``z`` gives the lower bound ``D(z)`` of
    :class:`RecoveryResult`; ``z`` is the dual of the equality ``A f - r = y`` (both signs tried,
    both are valid bounds). ``optimal`` requires the gap and the radius excess to be tiny.

    Parameters
    ----------
    A : ndarray (m, n) or CompressedMatrix
        Measurement matrix (:func:`geo.heatsource.model.heat_matrix`), or its
        :func:`compress_matrix` (reuse across trials).
    y : ndarray (m,)
        (Noisy / private) readings.
    rho : float
        Radius >= 0.
    margin : float
        Relative widening of the least residual under the infeasibility policy.
    compress : bool or None
        Compress ``A`` with :func:`compress_matrix` (default: when ``n > LARGE_N``).
    gap_tol, feas_tol : float
        Tolerances of the ``optimal`` flag.

    Returns
    -------
    RecoveryResult

    Raises
    ------
    SolverError
        Clarabel returned no primal/dual pair on a feasible program.
    """
    start = time.perf_counter()
    comp = A if isinstance(A, CompressedMatrix) else None
    full = comp.A if comp is not None else check_matrix(A)
    m, n = full.shape
    y = np.asarray(y, dtype=float)
    if y.shape != (m,) or not np.all(np.isfinite(y)):
        raise ParameterError(f"y must be a finite array of shape ({m},), got {y.shape}")
    rho_req = check_positive(rho, "rho", allow_zero=True)
    check_positive(margin, "margin")
    if comp is None and (compress if compress is not None else n > LARGE_N):
        comp = compress_matrix(full)
    rank = comp.rank if comp is not None else None

    if comp is not None:
        M, yy = comp.B, comp.U.T @ y
        outside = float(np.linalg.norm(y - comp.U @ yy))  # ||(I - UU^T) y||: fixed part of residual
    else:
        M, yy, outside = full, y, 0.0
    r_min_c, _ = least_residual(M, yy)
    r_min = float(np.hypot(r_min_c, outside))
    rho_used, policy = rho_req, "as-requested"
    if r_min >= rho_req and r_min > 0:
        rho_used, policy = (1.0 + margin) * r_min, "widened"
    y_norm = float(np.linalg.norm(y))
    if y_norm <= rho_used:
        return RecoveryResult(
            f=np.zeros(n), rho_requested=rho_req, rho=float(rho_used), policy="zero",
            objective=0.0, dual_bound=0.0, gap=0.0, residual=y_norm,
            residual_excess=0.0, optimal=True, status="closed-form", least_residual=r_min,
            rank=rank, seconds=time.perf_counter() - start)
    rho_c = float(np.sqrt(max(rho_used**2 - outside**2, 0.0)))

    f, z, status = _solve_socp(M, yy, rho_c)
    if f is None:
        raise SolverError(f"Clarabel failed on a feasible program (status {status}); "
                          f"n={n}, m={m}, rho={rho_used:.6g}")
    f = np.clip(f, 0.0, 1.0)
    objective = float(f.sum())
    bound = max(_dual_bound(M, yy, rho_c, z), _dual_bound(M, yy, rho_c, -z))
    gap = objective - bound
    residual = float(np.linalg.norm(full @ f - y))
    excess = max(0.0, residual - rho_used) / max(rho_used, y_norm)
    optimal = abs(gap) <= gap_tol * (1.0 + objective) and excess <= feas_tol
    return RecoveryResult(
        f=f, rho_requested=rho_req, rho=float(rho_used), policy=policy, objective=objective,
        dual_bound=bound, gap=float(gap), residual=residual, residual_excess=float(excess),
        optimal=bool(optimal), status=status, least_residual=r_min, rank=rank,
        seconds=time.perf_counter() - start)
