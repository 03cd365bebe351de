r"""Locally private heat-source localisation (seed: Gilbert & McMillan, "Local differential
privacy for physical sensor data and sparse recovery", sections 2-5 and appendix B).

Model (seed section 2.1). ``n`` possible sources at ``i/n`` (``i = 1..n``) and ``m`` sensors at
``j/m`` (``j = 1..m``) on ``[0, 1]``; after time ``t`` with diffusion constant ``mu`` (``T = mu t``)
the sensors read ``y = A f0`` with

.. math:: A_{ji} = g(j/m - i/n, T), \qquad g(x, T) = \frac{e^{-x^2/(4T)}}{\sqrt{4\pi T}}.

Privacy (seed section 3). Two source vectors are neighbours when one source moves by one grid
step (Definition 2), so the l2 sensitivity of the readings is
:math:`\Delta_2(A) = \max_i \|A_i - A_{i+1}\|_2` (Proposition 4; entries of ``f0`` lie in
``[0, 1]``). Every sensor adds ``N(0, sigma^2)`` to its own reading before sending it (local
model); ``sigma`` comes from :func:`gaussian_sigma` and the privacy actually obtained is checked
with the exact privacy profile :func:`gaussian_delta`.

Recovery (seed Algorithm 1). :func:`recover` solves

.. math:: \hat f = \arg\min_{f \in [0,1]^n} \|f\|_1 \quad \text{s.t.} \quad \|A f - y\|_2 \le \rho

with cvxpy + Clarabel, returns a duality-gap certificate computed here from the dual vector, and
applies a documented policy when the program is infeasible (see :func:`recover`).

Error (seed section 4.1). :func:`emd_error` is the EMD between the normalised ``f0`` and
``f_hat`` through :func:`mdp.emd.emd_1d` with positions ``i/n``, i.e. **in [0, 1] units** (one
grid step is ``1/n``).
"""

from __future__ import annotations

import functools
import time
import warnings
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import brentq, lsq_linear
from scipy.special import log_ndtr

from mdp.emd import emd_1d
from mdp.validation import check_int, check_positive, check_probability, check_rng

__all__ = [
    "GAUSSIAN_RULES",
    "CompressedMatrix",
    "Lemma5Check",
    "RecoveryResult",
    "SensorCalibration",
    "calibrate_sensors",
    "compress_matrix",
    "emd_error",
    "gaussian_delta",
    "gaussian_sigma",
    "heat_kernel",
    "heat_matrix",
    "least_residual",
    "lemma5",
    "mean_ci",
    "privatize_readings",
    "random_sources",
    "recover",
    "run_trials",
    "sensitivity",
    "sensor_positions",
    "source_positions",
]

#: Calibration rules of :func:`gaussian_sigma`.
GAUSSIAN_RULES: tuple[str, ...] = ("analytic", "classical", "seed")

#: Above this many sources, :func:`recover` compresses ``A`` and :func:`least_residual` uses a
#: cone program instead of BVLS (BVLS took 62 s at n = 10,000 here).
LARGE_N = 2000


# --------------------------------------------------------------------------------------------
# Heat kernel and measurement matrix (seed section 2.1)
# --------------------------------------------------------------------------------------------

def heat_kernel(x, T: float) -> np.ndarray:
    r"""Heat kernel :math:`g(x, T) = (4\pi T)^{-1/2} e^{-x^2/(4T)}` (seed section 2.1, T = mu t)."""
    T = check_positive(T, "T")
    x = np.asarray(x, dtype=float)
    return np.exp(-(x * x) / (4.0 * T)) / np.sqrt(4.0 * np.pi * T)


def source_positions(n: int) -> np.ndarray:
    """Possible source locations ``i/n``, ``i = 1..n`` (seed section 2.1)."""
    n = check_int(n, "n", low=2)
    return np.arange(1, n + 1, dtype=float) / n


def sensor_positions(m: int) -> np.ndarray:
    """Sensor locations ``j/m``, ``j = 1..m`` (seed section 2.1)."""
    m = check_int(m, "m", low=1)
    return np.arange(1, m + 1, dtype=float) / m


def heat_matrix(n: int, m: int, T: float) -> np.ndarray:
    r"""Measurement matrix :math:`A_{ji} = g(j/m - i/n, T)`, shape ``(m, n)`` (seed section 2.1).

    Parameters
    ----------
    n : int
        Number of possible source locations (grid ``1/n, ..., 1``), ``n >= 2``.
    m : int
        Number of sensors (at ``1/m, ..., 1``), ``m >= 1``.
    T : float
        ``mu * t`` > 0 (the seed's experiments use ``mu = 1/2``, so ``T = t/2``).
    """
    n = check_int(n, "n", low=2)
    m = check_int(m, "m", low=1)
    return heat_kernel(sensor_positions(m)[:, None] - source_positions(n)[None, :], T)


def _check_matrix(A, name: str = "A") -> np.ndarray:
    A = np.asarray(A, dtype=float)
    if A.ndim != 2 or A.shape[1] < 2:
        raise ValueError(f"{name} must be a 2-D array with at least 2 columns, got shape {A.shape}")
    if not np.all(np.isfinite(A)):
        raise ValueError(f"{name} must be finite")
    return A


def sensitivity(A) -> float:
    r"""l2 sensitivity :math:`\Delta_2(A) = \max_i \|A_i - A_{i+1}\|_2` (seed Proposition 4).

    Neighbouring source vectors (Definition 2) swap the values ``a, b in [0, 1]`` of two adjacent
    cells, so ``||A f - A f'|| = |a - b| ||A_i - A_{i+1}|| <= ||A_i - A_{i+1}||``.
    Appendix B bounds it by ``O(sqrt(m) / (n T^1.5))``; it is exactly proportional to ``1/n``
    and ``sqrt(m)`` once the grids resolve the kernel, and proportional to ``T^-1.5`` only for
    large ``T`` (for small ``T`` it grows like ``T^-0.75``; see the README).
    """
    A = _check_matrix(A)
    return float(np.max(np.linalg.norm(np.diff(A, axis=1), axis=0)))


# --------------------------------------------------------------------------------------------
# Gaussian mechanism calibration (seed section 3, Lemma 3; Balle & Wang 2018, Theorem 8)
# --------------------------------------------------------------------------------------------

def _log_gaussian_delta(sigma: float, epsilon: float, sens: float) -> float:
    # log of Phi(a) - e^eps Phi(b) without cancellation: log Phi(a) + log1p(-e^{eps + lPhi(b) - lPhi(a)}).
    a = sens / (2.0 * sigma) - epsilon * sigma / sens
    b = -sens / (2.0 * sigma) - epsilon * sigma / sens
    la, lb = log_ndtr(a), log_ndtr(b)
    ratio = epsilon + lb - la
    if not ratio < 0.0:  # the two terms agree to machine precision: delta is below resolution
        return -np.inf
    return float(la + np.log1p(-np.exp(ratio)))


def gaussian_delta(sigma: float, epsilon: float, sensitivity: float) -> float:
    r"""Exact (tight) ``delta`` of the Gaussian mechanism with noise ``sigma`` at ``epsilon``.

    Balle & Wang (ICML 2018), Theorem 8: adding ``N(0, sigma^2 I)`` to a query of l2 sensitivity
    ``Delta`` is ``(epsilon, delta)``-DP iff

    .. math:: \delta \ge \Phi\Big(\frac{\Delta}{2\sigma} - \frac{\epsilon\sigma}{\Delta}\Big)
              - e^{\epsilon}\,\Phi\Big(-\frac{\Delta}{2\sigma} - \frac{\epsilon\sigma}{\Delta}\Big).

    Evaluated in log space (``scipy.special.log_ndtr``).
    """
    sigma = check_positive(sigma, "sigma")
    epsilon = check_positive(epsilon, "epsilon", allow_zero=True)
    sens = check_positive(sensitivity, "sensitivity")
    return float(np.exp(_log_gaussian_delta(sigma, epsilon, sens)))


def gaussian_sigma(epsilon: float, delta: float, sensitivity: float, rule: str = "analytic") -> float:
    r"""Noise standard deviation of the Gaussian mechanism for ``(epsilon, delta)``-DP.

    Rules:

    - ``"seed"``: :math:`\sigma = 2\ln(1.25/\delta)\,\Delta/\epsilon` (seed Lemma 3 /
      Proposition 4; conservative, valid for every ``epsilon``: it is at least the classical
      value whenever ``ln(1.25/delta) >= 1/2``).
    - ``"classical"``: :math:`\sigma = \sqrt{2\ln(1.25/\delta)}\,\Delta/\epsilon` (Dwork & Roth
      2014, Theorem A.1), proved only for ``epsilon < 1``: larger ``epsilon`` raises ValueError.
    - ``"analytic"`` (default): the smallest ``sigma`` satisfying Balle & Wang (2018) Theorem 8
      (see :func:`gaussian_delta`), found by root bracketing in ``log sigma`` and rounded up so
      that ``gaussian_delta(sigma) <= delta`` holds in floating point.

    Parameters
    ----------
    epsilon : float
        > 0.
    delta : float
        In (0, 1).
    sensitivity : float
        l2 sensitivity ``Delta`` > 0 (e.g. :func:`sensitivity` of the heat matrix).
    rule : {"analytic", "classical", "seed"}
    """
    epsilon = check_positive(epsilon, "epsilon")
    delta = check_probability(delta, "delta", inclusive_low=False, inclusive_high=False)
    sens = check_positive(sensitivity, "sensitivity")
    if rule == "seed":
        return 2.0 * np.log(1.25 / delta) * sens / epsilon
    if rule == "classical":
        if epsilon >= 1.0:
            raise ValueError(f"rule 'classical' requires epsilon < 1, got epsilon={epsilon}; "
                             "use rule='analytic'")
        return float(np.sqrt(2.0 * np.log(1.25 / delta)) * sens / epsilon)
    if rule != "analytic":
        raise ValueError(f"rule must be one of {', '.join(GAUSSIAN_RULES)}, got {rule!r}")
    return _analytic_sigma(epsilon, delta, sens)


def _analytic_sigma(epsilon: float, delta: float, sens: float) -> float:
    target = np.log(delta)

    def excess(log_sigma: float) -> float:
        return _log_gaussian_delta(np.exp(log_sigma), epsilon, sens) - target

    # Bracket around the classical scale; delta(sigma) is strictly decreasing in sigma.
    hi = np.log(sens * max(1.0, np.sqrt(2.0 * np.log(1.25 / delta))) / epsilon)
    while excess(hi) > 0:
        hi += np.log(2.0)
    lo = hi - np.log(2.0)
    while excess(lo) <= 0:
        lo -= np.log(2.0)
    # excess(hi) may be -inf (delta below float resolution); bisect until finite values bracket.
    while not np.isfinite(excess(hi)) and hi - lo > 1e-12:
        mid = 0.5 * (lo + hi)
        if excess(mid) > 0:
            lo = mid
        else:
            hi = mid
    root = brentq(excess, lo, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps)
    sigma = float(np.exp(root))
    # Round up: the smallest float sigma at or above the root with delta(sigma) <= delta.
    for _ in range(10_000):
        if _log_gaussian_delta(sigma, epsilon, sens) <= target:
            return sigma
        sigma = float(np.nextafter(sigma, np.inf)) * (1.0 + 2.0 ** -50)
    raise RuntimeError("analytic Gaussian calibration failed to round up")  # pragma: no cover


@dataclass(frozen=True)
class SensorCalibration:
    """Noise every sensor adds locally, with the privacy it provably gives.

    Attributes
    ----------
    sensitivity : float
        ``Delta_2(A)``.
    sigma : float
        Per-sensor Gaussian noise standard deviation.
    rule : str
        Calibration rule used (:data:`GAUSSIAN_RULES`).
    epsilon, delta : float
        Requested privacy.
    delta_exact : float
        Exact ``delta`` at ``epsilon`` for this ``sigma`` (:func:`gaussian_delta`); never above
        ``delta`` (checked on construction by :func:`calibrate_sensors`).
    """

    sensitivity: float
    sigma: float
    rule: str
    epsilon: float
    delta: float
    delta_exact: float

    def privatize(self, y, *, rng=None) -> np.ndarray:
        """Each sensor's reading plus its own ``N(0, sigma^2)`` (seed Proposition 4)."""
        return privatize_readings(y, self.sigma, rng=rng)


def calibrate_sensors(A, epsilon: float, delta: float, rule: str = "analytic") -> SensorCalibration:
    """Calibrate the local Gaussian noise for measurement matrix ``A`` and verify it.

    ``sigma = gaussian_sigma(epsilon, delta, sensitivity(A), rule)``; the exact privacy profile
    (Balle & Wang Thm 8) is then evaluated at that ``sigma`` and a ``RuntimeError`` is raised if
    it exceeds ``delta`` (privacy is verified, not assumed).
    """
    sens = sensitivity(A)
    sigma = gaussian_sigma(epsilon, delta, sens, rule)
    exact = gaussian_delta(sigma, epsilon, sens)
    if exact > delta:
        raise RuntimeError(f"rule {rule!r} gives delta={exact:.3g} > {delta}: not private")
    return SensorCalibration(sens, float(sigma), rule, float(epsilon), float(delta), exact)


def privatize_readings(y, sigma: float, *, rng=None) -> np.ndarray:
    r"""Local Gaussian mechanism: :math:`\tilde y_j = y_j + N(0, \sigma^2)` independently.

    Each sensor can apply this to its own reading before transmission (seed section 3).
    """
    sigma = check_positive(sigma, "sigma")
    y = np.asarray(y, dtype=float)
    if y.ndim != 1 or not np.all(np.isfinite(y)):
        raise ValueError(f"y must be a finite 1-D array, got shape {y.shape}")
    return y + sigma * check_rng(rng).standard_normal(y.shape[0])


# --------------------------------------------------------------------------------------------
# Recovery (seed Algorithm 1)
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class CompressedMatrix:
    r"""``A`` with its row space compressed to rank ``r``: ``B = U^T A`` (``U`` orthonormal).

    For every ``f``, :math:`\|Af - y\|^2 = \|Bf - U^T y\|^2 + \|(I - UU^T)(Af - y)\|^2`, and
    :math:`\|(I-UU^T) A f\| \le` ``error`` :math:`\|f\|_2` with ``error`` the exact Frobenius norm
    of ``A - U B``. :func:`recover` replaces the constraint by the compressed one with radius
    :math:`\sqrt{\rho^2 - \|(I-UU^T)y\|^2}` and reports the true residual afterwards.
    """

    A: np.ndarray
    U: np.ndarray
    B: np.ndarray
    error: float

    @property
    def rank(self) -> int:
        return int(self.U.shape[1])

    @property
    def shape(self) -> tuple[int, int]:
        return self.A.shape


def compress_matrix(A, *, rtol: float = 1e-10, max_rank: int = 40, rng=0) -> CompressedMatrix:
    r"""Randomised-SVD compression of the heat matrix (numerical rank ~8-15).

    A randomised range finder (Halko, Martinsson & Tropp 2011, Alg. 4.4;
    ``sklearn.utils.extmath.randomized_range_finder``, 4 power iterations) gives an orthonormal
    ``Q`` (``m x k``, ``k = min(m, n, max_rank)``); ``B = Q^T A`` is rotated to its principal
    directions (``eigh`` of the ``k x k`` Gram matrix) and truncated to the smallest rank ``r``
    whose error :math:`\|A - U_r U_r^T A\|_F \le` ``rtol`` :math:`s_1`. Every product touches
    ``A`` only through ``m x n`` by ``n x k`` multiplies, so ``n = 10,000`` is cheap. The exact
    error ``||A - U B||_F`` is returned with the result.
    """
    from sklearn.utils.extmath import randomized_range_finder

    A = _check_matrix(A)
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
    return CompressedMatrix(A, U, B, float(np.linalg.norm(A - U @ B)))


def least_residual(A, y) -> tuple[float, np.ndarray]:
    r"""Smallest achievable residual :math:`\min_{f \in [0,1]^n} \|Af - y\|_2` and its minimiser.

    ``scipy.optimize.lsq_linear(method='bvls')`` for ``n <= LARGE_N``; above that BVLS is too
    slow (62 s at n = 10,000) and the same problem is solved as a cone program with Clarabel.
    The returned residual is recomputed from the clipped minimiser, so it is always achievable
    (an upper bound on the true minimum, which is what the infeasibility policy needs).
    """
    A = A.B if isinstance(A, CompressedMatrix) else _check_matrix(A)
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
        ``"zero"`` (``||y|| <= rho``: ``f = 0`` is optimal and the EMD is undefined).
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
        ``max(0, residual / rho - 1)``.
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
        """``f = 0`` (EMD undefined; see :func:`emd_error`)."""
        return self.policy == "zero"


#: Problems with at most this many matrix entries are compiled once per shape with the matrix as
#: a cvxpy Parameter (re-solves then skip canonicalisation: ~15 ms instead of ~100 ms at n = 100).
_PARAM_MAX_ENTRIES = 20_000


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
    r"""Constrained l1 recovery (seed Algorithm 1) with a certificate.

    .. math:: \hat f = \arg\min \|f\|_1 \ \text{s.t.}\ \|Af - y\|_2 \le \rho,\ 0 \le f \le 1,

    solved by cvxpy with Clarabel, the residual ``r = A f - y`` being its own variable.
    The seed uses ``rho = sigma sqrt(m)``.

    Policy:

    - **zero**: if :math:`\|y\|_2 \le \rho` (the radius used, after the policy below) then
      ``f = 0`` is optimal (objective 0); it is returned without a solver and flagged ``"zero"``
      (its EMD is undefined; see :func:`emd_error`).
    - **infeasible**: with ``rho = sigma sqrt(m)`` the box often admits no feasible ``f``
      (30-70 % of trials at T = 0.05, nonnegativity binds). Then
      ``rho = (1 + margin) * r_min``, ``r_min`` the achievable least residual on the box
      (:func:`least_residual`), and the result is flagged ``"widened"``. ``margin = 1e-4`` (not
      smaller) keeps the feasible set from degenerating to a point, where Clarabel's relative
      infeasibility of ~1e-10 produced duality gaps of ~1e-7.

    Certificate: any dual vector ``z`` gives the lower bound ``D(z)`` of
    :class:`RecoveryResult`; ``z`` is the dual of the equality ``A f - r = y`` (both signs tried,
    both are valid bounds). ``optimal`` requires the gap and the radius excess to be tiny.

    Parameters
    ----------
    A : ndarray (m, n) or CompressedMatrix
        Measurement matrix (:func:`heat_matrix`), or its :func:`compress_matrix` (reuse across
        trials).
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
    """
    start = time.perf_counter()
    comp = A if isinstance(A, CompressedMatrix) else None
    full = comp.A if comp is not None else _check_matrix(A)
    m, n = full.shape
    y = np.asarray(y, dtype=float)
    if y.shape != (m,) or not np.all(np.isfinite(y)):
        raise ValueError(f"y must be a finite array of shape ({m},), got {y.shape}")
    rho_req = check_positive(rho, "rho", allow_zero=True)
    check_positive(margin, "margin")
    if comp is None and (compress if compress is not None else n > LARGE_N):
        comp = compress_matrix(full)

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
    if np.linalg.norm(y) <= rho_used:
        return RecoveryResult(np.zeros(n), rho_req, float(rho_used), "zero", 0.0, 0.0, 0.0,
                              float(np.linalg.norm(y)), 0.0, True, "closed-form", r_min,
                              comp.rank if comp else None, time.perf_counter() - start)
    rho_c = float(np.sqrt(max(rho_used**2 - outside**2, 0.0)))

    f, z, status = _solve_socp(M, yy, rho_c)
    if f is None:
        raise RuntimeError(f"Clarabel failed on a feasible program (status {status}); "
                           f"n={n}, m={m}, rho={rho_used:.6g}")
    f = np.clip(f, 0.0, 1.0)
    objective = float(f.sum())
    bound = max(_dual_bound(M, yy, rho_c, z), _dual_bound(M, yy, rho_c, -z))
    gap = objective - bound
    residual = float(np.linalg.norm(full @ f - y))
    excess = max(0.0, residual / rho_used - 1.0) if rho_used > 0 else residual
    optimal = abs(gap) <= gap_tol * (1.0 + objective) and excess <= feas_tol
    return RecoveryResult(f, rho_req, float(rho_used), policy, objective, bound, float(gap),
                          residual, float(excess), bool(optimal), status, r_min,
                          comp.rank if comp else None, time.perf_counter() - start)


# --------------------------------------------------------------------------------------------
# Sources, EMD error, Lemma 5
# --------------------------------------------------------------------------------------------

def random_sources(n: int, k: int = 1, *, rng=None) -> np.ndarray:
    """Unit-intensity source vector (seed section 5).

    ``k = 1``: the single source sits at 0.5 (index ``n//2 - 1``, position ``(n//2)/n``), as in
    the seed; ``k > 1``: ``k`` distinct locations drawn uniformly at random.
    """
    n = check_int(n, "n", low=2)
    k = check_int(k, "k", low=1, high=n)
    f = np.zeros(n)
    if k == 1:
        f[n // 2 - 1] = 1.0
    else:
        f[check_rng(rng).choice(n, size=k, replace=False)] = 1.0
    return f


def emd_error(f0, f_hat, *, zero_policy: str = "uniform") -> float:
    r"""EMD between the normalised true and recovered source vectors, **in [0, 1] units**.

    :math:`\mathrm{EMD}(f_0/\|f_0\|_1, \hat f/\|\hat f\|_1)` on positions ``i/n`` (seed section
    5), computed by :func:`mdp.emd.emd_1d`. Multiply by ``n`` for grid steps.

    When ``f_hat = 0`` the EMD is undefined; ``zero_policy="uniform"`` (default) scores the
    estimate as the uniform distribution on the grid (an analyst who learned nothing), and
    ``"nan"`` returns NaN. Experiments count these trials either way.
    """
    f0 = np.asarray(f0, dtype=float)
    f_hat = np.clip(np.asarray(f_hat, dtype=float), 0.0, None)  # solver output may hold -1e-12
    if f0.ndim != 1 or f0.shape != f_hat.shape:
        raise ValueError(f"f0 and f_hat must be 1-D of equal length, got {f0.shape} and {f_hat.shape}")
    if zero_policy not in ("uniform", "nan"):
        raise ValueError(f"zero_policy must be 'uniform' or 'nan', got {zero_policy!r}")
    if f_hat.sum() <= 0:
        if zero_policy == "nan":
            return float("nan")
        f_hat = np.ones_like(f0)
    return emd_1d(f0, f_hat, positions=source_positions(f0.shape[0]))


@dataclass(frozen=True)
class Lemma5Check:
    r"""Seed Lemma 5 on ``M / ||M||_2``: :math:`\Delta_2 \ge 1/(\kappa_2\sqrt n)`.

    Attributes
    ----------
    sensitivity : float
        :math:`\Delta_2(M/\|M\|_2)`.
    kappa : float
        :math:`\kappa_2(M) = s_1 / s_{\min(m,n)}` (``inf`` when singular).
    bound : float
        :math:`1/(\kappa_2\sqrt n)`.
    applies : bool
        ``n <= m``. The seed's proof needs the rank-``(n-1)`` matrix
        ``[M_1 M_1 M_2 ... M_{n-1}]`` to have rank below ``min(m, n)``, true only when
        ``n <= m``; for ``n > m`` the inequality can fail (slowly rotating columns in 2-D).
    holds : bool
        ``sensitivity >= bound`` (up to 1e-12 relative).
    """

    sensitivity: float
    kappa: float
    bound: float
    applies: bool
    holds: bool


def lemma5(M) -> Lemma5Check:
    """Check the condition-number relation of seed Lemma 5 (section 3.1) for a matrix ``M``."""
    M = _check_matrix(M, "M")
    s = np.linalg.svd(M, compute_uv=False)
    if s[0] <= 0:
        raise ValueError("M must be nonzero")
    sens = sensitivity(M / s[0])
    kappa = float(s[0] / s[-1]) if s[-1] > 0 else float("inf")
    bound = 1.0 / (kappa * np.sqrt(M.shape[1]))
    return Lemma5Check(sens, kappa, float(bound), M.shape[1] <= M.shape[0],
                       bool(sens >= bound * (1 - 1e-12)))


# --------------------------------------------------------------------------------------------
# Trials (shared by the `mdp heatsource` command and the experiment)
# --------------------------------------------------------------------------------------------

def run_trials(A, sigma: float, trials: int, *, k: int = 1, sources=None, rng=None) -> list[dict]:
    r"""Repeat: sources -> readings ``A f0 + N(0, sigma^2 I)`` -> :func:`recover` with
    ``rho = sigma sqrt(m)`` (seed Algorithm 1) -> :func:`emd_error` (seed section 5).

    Parameters
    ----------
    A : ndarray (m, n) or CompressedMatrix
    sigma : float
        Per-sensor noise (e.g. ``SensorCalibration.sigma`` for the private algorithm).
    trials : int
    k : int
        Number of unit sources (``k = 1``: at 0.5; else uniformly at random), unless ``sources``
        (a fixed source vector) is given.
    rng : None, int or Generator

    Returns
    -------
    list of dict
        One per trial: ``emd`` (zero policy "uniform"), ``emd_nan`` (NaN when ``f = 0``),
        ``policy``, ``infeasible``, ``zero``, ``optimal``, ``gap``, ``seconds``, ``f0``, ``f``.
    """
    rng = check_rng(rng)
    trials = check_int(trials, "trials", low=1)
    full = A.A if isinstance(A, CompressedMatrix) else _check_matrix(A)
    m, n = full.shape
    sigma = check_positive(sigma, "sigma")
    out = []
    for _ in range(trials):
        f0 = np.asarray(sources, dtype=float) if sources is not None else random_sources(n, k, rng=rng)
        y = full @ f0 + sigma * rng.standard_normal(m)
        res = recover(A, y, sigma * np.sqrt(m))
        out.append(dict(emd=emd_error(f0, res.f), emd_nan=emd_error(f0, res.f, zero_policy="nan"),
                        policy=res.policy, infeasible=res.infeasible, zero=res.is_zero,
                        optimal=res.optimal, gap=res.gap, seconds=res.seconds, f0=f0, f=res.f))
    return out


def mean_ci(values, level: float = 0.95) -> tuple[float, float]:
    r"""Mean and half-width of the Student-t confidence interval
    :math:`\bar x \pm t_{(1+level)/2,\,N-1}\, s/\sqrt N` (the seed's 95 % bars over 10 trials);
    NaNs are ignored, half-width is NaN with fewer than two values."""
    from scipy.stats import t as student_t

    x = np.asarray(values, dtype=float)
    x = x[~np.isnan(x)]
    if x.size == 0:
        return float("nan"), float("nan")
    if x.size < 2:
        return float(x.mean()), float("nan")
    half = student_t.ppf(0.5 + level / 2, x.size - 1) * x.std(ddof=1) / np.sqrt(x.size)
    return float(x.mean()), float(half)
