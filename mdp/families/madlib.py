r"""Madlib (Feyisetan, Balle, Drake, Diethe, WSDM 2020): continuous noise, then the nearest word.

For an input point :math:`x = \phi(w) \in \mathbb{R}^d` the mechanism draws
:math:`z = x + N` with noise density :math:`p(N) \propto \exp(-\epsilon \lVert N \rVert_2)` and
returns the point of the space nearest to :math:`z` (Imola et al. 2022, section 5.1, "Madlib"
mechanism d; notes section 1). The noise is sampled in polar form: the density of the radius
:math:`r = \lVert N \rVert` is proportional to :math:`r^{d-1} e^{-\epsilon r}`, i.e.
:math:`r \sim \mathrm{Gamma}(\text{shape}=d, \text{scale}=1/\epsilon)`, and the direction is
uniform on the sphere (a standard normal vector divided by its norm).

Privacy (analytic, not checked on a matrix). For any :math:`z` and inputs :math:`x, x'`,
:math:`p(z - x) / p(z - x') = \exp(\epsilon(\lVert z - x' \rVert - \lVert z - x \rVert))
\le \exp(\epsilon \lVert x - x' \rVert)` by the triangle inequality, so releasing :math:`z` is
:math:`\epsilon`-mDP for the Euclidean distance between embedded points, which is exactly the
distance of the space. Snapping :math:`z` to its nearest point is post-processing, so the output
word is :math:`\epsilon`-mDP too (pure, delta = 0). The registry therefore records
``guarantee="analytic"``: the guarantee is a theorem about :meth:`MadlibMechanism.sample`, which
draws fresh noise on every call and never samples from the matrix.

The matrix. Over a finite space the transition matrix :math:`M[u, w] = \Pr[z \in
\mathrm{Voronoi}(w)]` has no closed form (except in 1-D), so :func:`estimate_madlib_matrix`
estimates it by Monte Carlo (``n_samples`` draws per input, pooled across rows by importance
weights so that no output hit by any draw is estimated as impossible from another input).
``loss``, ``L_q`` and ``eps_tight`` computed on ``mech.matrix`` are therefore *estimates*:
``stats["matrix_estimate"]`` records ``n_samples``, the largest standard error of an entry and of
a row loss. ``eps_tight`` of an estimated matrix has no simple standard error; the paper compares
mechanisms on ``eps_tight`` measured on the matrix, and for Madlib that number is a property of
the estimate, not a bound on the sampler (whose guarantee is ``epsilon`` by the argument above).
Measured here on GloVe vocabularies the matrix's ``eps_tight`` is far below ``epsilon``
(0.23-0.41 ``epsilon`` at delta = 1e-3 on glove:50 and glove:200, d = 50): snapping to a few
words discards much of what the continuous output would reveal.

Floating point (Mironov 2012). The noise is drawn in float64 by numpy: a standard normal
direction (Ziggurat) normalised, times a ``Gamma(d, 1)`` radius (Marsaglia-Tsang) divided by
``epsilon``. Mironov's attack on floating-point Laplace noise reads the released *noisy float*:
its low-order bits and the set of representable values reachable from each input differ between
inputs, so some outputs are possible from one input and impossible from another. Madlib never
releases the float: ``z`` is snapped to the nearest point of the space, and only that point's
index is returned. What remains is that the probability of each output (the float sampler's
mass in that point's Voronoi cell) differs from the continuous one by the sampler's rounding,
a relative error of order 1e-15 for cells the noise reaches with non-negligible probability;
a Voronoi cell has positive volume, so it is hit from every input by a dense set of float
values, unlike the single float Mironov's attack reads. So the guarantee is exact for the
continuous mechanism and holds for this float implementation up to that rounding; it is not a
bit-exact guarantee (we have no proof bounding the rounding's effect on the ratio). Users who need one should
use a matrix family (``exponential``), whose sampled distribution is certified exactly.

In 2-D this is the planar Laplace mechanism of geo-indistinguishability (Andres, Bordenabe,
Chatzikokolakis, Palamidessi, CCS 2013: radius ``Gamma(2, 1/eps)``, uniform angle) followed by
remapping to the nearest point of the space. It applies to any space built from Euclidean points
(``MetricSpace.from_points(..., metric="euclidean")``); for haversine spaces the noise would be
in degrees, not km, so the family declines them (project the points to a plane first).
"""

from __future__ import annotations

import numpy as np
from scipy import sparse
from scipy.spatial.distance import cdist

from ..candidate import Candidate
from ..errors import ParameterError, PrivacyError
from ..mechanism import Mechanism
from ..params import Param
from ..privacy.accounting import eps_tight, row_losses
from ..registry import register
from ..spaces.metric_space import MetricSpace
from ..validation import check_epsilon, check_int, check_rng

__all__ = ["MadlibMechanism", "madlib_noise", "estimate_madlib_matrix", "check_madlib_estimate",
           "unit_noise", "second_probability", "applies_to_points",
           "DEFAULT_N_SAMPLES"]

#: Default Monte Carlo draws per input when estimating the matrix (every draw serves every row,
#: see :func:`estimate_madlib_matrix`).
DEFAULT_N_SAMPLES = 500


def madlib_noise(m: int, d: int, epsilon: float, *, rng=None, shape=None) -> np.ndarray:
    r"""``m`` draws of noise with density proportional to ``exp(-epsilon ||z||_2)`` in R^d.

    Radius ``Gamma(shape=d, scale=1/epsilon)`` times a uniform direction
    (``rng.standard_normal(d)`` normalised), Feyisetan et al. 2020, section 4. With ``shape``
    (a d x d matrix ``S``) the draws are ``S N``, density proportional to
    ``exp(-epsilon ||S^{-1} z||)``: the Mahalanobis mechanism's noise
    (:mod:`mdp.families.mahalanobis`).

    Returns
    -------
    ndarray of shape (m, d)
    """
    m = check_int(m, "m", low=0)
    d = check_int(d, "d", low=1)
    epsilon = check_epsilon(epsilon)
    rng = check_rng(rng)
    noise = unit_noise(m, d, rng) / epsilon
    return noise if shape is None else noise @ np.asarray(shape).T


def unit_noise(m: int, d: int, rng: np.random.Generator) -> np.ndarray:
    """``m`` draws of noise at epsilon = 1 (divide by epsilon to rescale: the Gamma scale is 1/epsilon)."""
    direction = rng.standard_normal((m, d))
    norms = np.linalg.norm(direction, axis=1, keepdims=True)
    # A zero normal vector has probability 0; guard anyway so no NaN can leak into outputs.
    norms[norms == 0] = 1.0
    radius = rng.gamma(shape=d, scale=1.0, size=(m, 1))
    return radius * direction / norms


def estimate_madlib_matrix(points, epsilon: float, n_samples: int = DEFAULT_N_SAMPLES, *,
                           rng=None, shape=None, second_t: float | None = None
                           ) -> tuple[np.ndarray, dict]:
    r"""Monte Carlo estimate of Madlib's transition matrix on ``points`` (n x d).

    Multiple importance sampling (Veach & Guibas 1995, balance heuristic). ``n_samples`` noisy
    points are drawn from each input, ``z_k = x_{s_k} + N_k`` (``K = n * n_samples`` in all,
    stratified over the sources ``s_k``); every draw then serves every row ``v`` with the weight
    ``r_k(v) = p_v(z_k) / q(z_k)``, ``p_v(z) ∝ exp(-eps ||z - x_v||)``,
    ``q = (1/n) sum_u p_u``:

    .. math:: \hat M[v, w] = \frac{1}{K} \sum_k r_k(v)\, [\mathrm{snap}(z_k) = w],

    an unbiased estimate of ``Pr[snap(x_v + N) = w]`` (rows are then divided by their sums,
    which estimate 1). Why not count the draws of each row separately: an output that one row
    reaches and another row's draws happen to miss would be estimated as 0 there, making the
    ratio ``M[u, w] / M[v, w]`` infinite and ``eps_tight`` meaningless. Here every column hit by
    any draw is positive in every row (as in the true matrix), and before the row normalisation
    the estimate is itself exactly ``eps``-mDP, since term by term
    ``r_k(u) / r_k(v) = p_u(z_k) / p_v(z_k) <= exp(eps ||x_u - x_v||)``.

    The noise is drawn at epsilon = 1 and scaled by ``1/epsilon``, so the same ``rng`` seed gives
    the same draws at every epsilon (smooth curves when calibrating).

    Parameters
    ----------
    points : array-like (n, d)
    epsilon : float > 0
    n_samples : int >= 1
        Draws per input.
    rng : None, int or numpy.random.Generator
    shape : ndarray (d, d) or None, keyword-only
        A symmetric positive definite ``S``: the noise is ``S N`` (density proportional to
        ``exp(-epsilon ||S^{-1} z||)``, the Mahalanobis mechanism, :mod:`mdp.families.mahalanobis`)
        and the weights ``p_v`` use that norm; ``None`` is the identity (Madlib).
    second_t : float in [0, 1] or None, keyword-only
        The Vickrey release (:mod:`mdp.families.vickrey`): each draw's second nearest point
        with probability ``t d_1 / (t d_1 + (1 - t) d_2)``, its nearest otherwise, so the
        draw counts fractionally for both; ``None`` releases the nearest point.

    Returns
    -------
    matrix : ndarray (n, n)
    stats : dict
        ``n_samples``, ``total_draws``, ``max_entry_std_error`` and ``max_row_loss_std_error``
        (standard errors from the sample variance of the weighted terms), ``max_row_sum_error``
        (largest ``|row sum - 1|`` before normalisation) and a note that measurements on the
        matrix are estimates.
    """
    X = np.asarray(points, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] < 1 or X.shape[1] < 1:
        raise ValueError(f"points must be a 2-D array (n, d), got shape {X.shape}")
    epsilon = check_epsilon(epsilon)
    n_samples = check_int(n_samples, "n_samples", low=1)
    rng = check_rng(rng)
    n, d = X.shape
    K = n * n_samples
    sources = np.repeat(np.arange(n), n_samples)
    D = cdist(X, X)
    sq_norms = np.einsum("wd,wd->w", X, X)[None, :]
    if shape is not None:
        S = np.asarray(shape, dtype=np.float64)
        S_inv = np.linalg.inv(S)
        Xw = X @ S_inv.T                      # whitened points: ||S^-1 (z - x)|| = ||zw - xw||
        sq_norms_w = np.einsum("wd,wd->w", Xw, Xw)[None, :]
    second = second_t is not None and n >= 2
    A = np.zeros((n, n))          # sum_k r_k(v) c_k(w), c_k: the release's mass on w
    A2 = np.zeros((n, n))         # sum_k r_k(v)^2 c_k(w)^2
    loss1 = np.zeros(n)           # sum_k r_k(v) sum_w c_k(w) D[v, w]
    loss2 = np.zeros(n)
    chunk = max(1, int(4_000_000 // n))
    # BLAS-based distances (scikit-learn); the weights need every distance anyway, so the
    # nearest point is their argmin rather than a separate neighbour query.
    from sklearn.metrics.pairwise import euclidean_distances

    for start in range(0, K, chunk):
        src = sources[start:start + chunk]
        m = len(src)
        rows = np.arange(m)
        noise = unit_noise(m, d, rng) / epsilon
        Z = X[src] + (noise if shape is None else noise @ S.T)
        dist = euclidean_distances(Z, X, Y_norm_squared=sq_norms)          # (c, n)
        if second:
            two = np.argpartition(dist, 1, axis=1)[:, :2]
            d2 = dist[rows[:, None], two]
            swap = d2[:, 0] > d2[:, 1]
            two[swap] = two[swap][:, ::-1]
            d2[swap] = d2[swap][:, ::-1]
            snap, runner_up = two[:, 0], two[:, 1]
            q = second_probability(d2[:, 0], d2[:, 1], second_t)
        else:
            snap = np.argmin(dist, axis=1)
        # r_k(v) = p_v / ((1/n) sum_u p_u), computed relative to the nearest point (no overflow)
        if shape is None:
            R = dist
            R -= dist[rows, snap][:, None]
        else:
            R = euclidean_distances(Z @ S_inv.T, Xw, Y_norm_squared=sq_norms_w)
            R -= R.min(axis=1, keepdims=True)
        R *= -epsilon
        np.exp(R, out=R)
        R *= n / R.sum(axis=1, keepdims=True)
        if second:
            cols = np.concatenate([snap, runner_up])
            vals = np.concatenate([1.0 - q, q])
            hit = sparse.csr_matrix((vals, (np.tile(rows, 2), cols)), shape=(m, n))
            hit2 = sparse.csr_matrix((vals * vals, (np.tile(rows, 2), cols)), shape=(m, n))
            terms = R * ((1.0 - q)[:, None] * D[snap] + q[:, None] * D[runner_up])
        else:
            hit = sparse.csr_matrix((np.ones(m), (rows, snap)), shape=(m, n))
            hit2 = hit
            terms = R * D[snap]                # D symmetric: D[snap_k, v] = D[v, snap_k]
        A += (hit.T @ R).T
        A2 += (hit2.T @ (R * R)).T
        loss1 += terms.sum(axis=0)
        loss2 += np.einsum("kv,kv->v", terms, terms)
    M = A / K
    row_sums = M.sum(axis=1)
    entry_var = np.maximum(A2 / K - M * M, 0.0) / K
    loss_mean = loss1 / K
    loss_var = np.maximum(loss2 / K - loss_mean ** 2, 0.0) / K
    M = M / row_sums[:, None]
    stats = {"n_samples": n_samples, "total_draws": K,
             "estimator": "multiple importance sampling (balance heuristic), rows normalised",
             "max_entry_std_error": float(np.sqrt(entry_var).max()),
             "max_row_loss_std_error": float(np.sqrt(loss_var).max()),
             "max_row_sum_error": float(np.abs(row_sums - 1).max()),
             "note": "Monte Carlo estimate: loss and eps_tight of this matrix are estimates "
                     "(eps_tight has no standard error here); the privacy guarantee is the "
                     "analytic one of the sampler, pure epsilon-mDP"}
    return M, stats


def second_probability(d1: np.ndarray, d2: np.ndarray, t: float) -> np.ndarray:
    """Vickrey's probability of the second nearest point, ``t d1 / (t d1 + (1 - t) d2)``
    (Xu et al. 2021), 0 where the denominator is 0 (the draw sits on its nearest point)."""
    num = t * d1
    den = num + (1.0 - t) * d2
    out = np.zeros_like(d1)
    np.divide(num, den, out=out, where=den > 0)
    return out


class MadlibMechanism(Mechanism):
    """Madlib with fresh noise on every :meth:`sample` and a Monte Carlo matrix for measurements.

    ``matrix`` is an estimate (see the module docstring and ``stats["matrix_estimate"]``);
    ``sample`` / ``sample_indices`` never use it: they add new Gamma-radius noise to the input's
    point and snap to the nearest point with scikit-learn's ``NearestNeighbors``.
    """

    kind = "madlib"
    guarantee = "analytic"
    #: Name in messages.
    display = "Madlib"

    def __init__(self, matrix, space: MetricSpace, epsilon: float, name: str = "madlib",
                 params: dict | None = None, stats: dict | None = None, *, log_matrix=None,
                 repair: bool = True):
        reason = applies_to_points(space) if isinstance(space, MetricSpace) else None
        if reason:
            raise ParameterError(f"Madlib does not apply to this space: {reason}")
        self._nn = None
        super().__init__(matrix, space, epsilon, name, params, stats, log_matrix=log_matrix,
                         repair=repair)

    def _certify(self, M: np.ndarray, repair: bool) -> np.ndarray:
        """Record the analytic guarantee; the matrix is a Monte Carlo estimate, not certified.

        The noise is re-derived from ``epsilon`` and the points on every draw (:meth:`noise`),
        so nothing stored can weaken it; the estimate must still be a probability matrix (it is
        used for measurements only).
        """
        if not np.all(np.isfinite(M)) or M.min() < 0 or np.abs(M.sum(axis=1) - 1).max() > 1e-9:
            raise ParameterError(f"{self.display}'s estimated matrix must be row-stochastic")
        self.stats["privacy"] = self._privacy_record()
        return np.array(M, dtype=float)

    def _privacy_record(self) -> dict:
        return {"guarantee": "analytic", "claimed_eps": self.epsilon, "delta": 0.0,
                "argument": "density ratio of x + noise <= exp(eps ||x - x'||) (triangle "
                            "inequality); snapping to the nearest point is post-processing"}

    def estimator_options(self) -> dict:
        """Keyword arguments of :func:`estimate_madlib_matrix` that make this family's estimate
        (its noise parameter under ``"epsilon"``; subclasses add a noise shape or a release)."""
        return {"epsilon": self.epsilon}

    @classmethod
    def _from_saved(cls, values, space, meta: dict, *, log: bool = False) -> Mechanism:
        """A saved mechanism of this family, its stored estimate checked against a fresh one.

        The sampler's guarantee is re-derived from ``epsilon``, but the stored matrix feeds every
        measurement (``loss``, ``eps_tight``), so it must be an estimate this family produces
        on the stored points: :func:`check_madlib_estimate` (a theorem about the estimator and a
        comparison with a fresh estimate). A forged estimate (an identity matrix reporting loss
        0, another family's file renamed ``"madlib"``) raises :class:`~mdp.errors.PrivacyError`.
        """
        mech = super()._from_saved(values, space, meta, log=log)
        options = mech.estimator_options()
        check_madlib_estimate(mech.matrix, space, mech.epsilon,
                              mech.params.get("n_samples", DEFAULT_N_SAMPLES),
                              noise_epsilon=options.pop("epsilon"), family=cls.display,
                              **options)
        return mech

    def noise(self, m: int, rng) -> np.ndarray:
        """``m`` fresh noise vectors at this mechanism's epsilon (:func:`madlib_noise`)."""
        return madlib_noise(m, self.space.points.shape[1], self.epsilon, rng=rng)

    def snap(self, z) -> np.ndarray:
        """Index of the nearest point of the space to each row of ``z`` (scikit-learn)."""
        if self._nn is None:
            from sklearn.neighbors import NearestNeighbors

            self._nn = NearestNeighbors(n_neighbors=1).fit(self.space.points)
        z = np.atleast_2d(np.asarray(z, dtype=float))
        return self._nn.kneighbors(z, n_neighbors=1, return_distance=False)[:, 0]

    def release(self, z, rng: np.random.Generator) -> np.ndarray:
        """The released point for each noisy point (Madlib: the nearest, :meth:`snap`)."""
        return self.snap(z)

    def sample_indices(self, idx: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Fresh noise: ``argmin_w ||x_idx + N - x_w||`` for a new draw ``N`` per input."""
        idx = np.asarray(idx, dtype=np.int64)
        z = self.space.points[idx] + self.noise(len(idx), rng)
        return self.release(z, rng)


#: Draws per input of the fresh estimate a loaded file's estimate is compared with, at most.
CHECK_N_SAMPLES = 200
#: Standard errors by which a stored row loss may differ from the fresh estimate's.
CHECK_SIGMAS = 8.0


def check_madlib_estimate(matrix, space: MetricSpace, epsilon: float, n_samples: int, *,
                          noise_epsilon: float | None = None, family: str = "Madlib",
                          **options) -> None:
    r"""Check that ``matrix`` is a Madlib estimate on ``space`` at ``epsilon`` (for loaded files).

    Two checks, both on what the estimator of :func:`estimate_madlib_matrix` provably or
    statistically produces:

    1. *Privacy shape (a theorem).* Before its rows are normalised the estimate is exactly
       ``eps``-mDP term by term, and so are its row sums; dividing by them at most doubles the
       level, so the stored matrix must be ``2 eps``-mDP (pure): its rigorous ``eps_tight``
       at delta 0 at most ``2 eps (1 + 1e-6)``. An identity matrix (infinitely private) fails.
    2. *Accuracy (statistical).* A fresh estimate with ``min(n_samples, CHECK_N_SAMPLES)`` draws
       per input (seeded: the check is reproducible) gives every row loss to within
       :data:`CHECK_SIGMAS` combined standard errors of the stored one, and every entry too
       (with the largest entry's standard error).

    ``noise_epsilon`` and ``options`` (``shape``, ``second_t``) make the fresh estimate another
    family's of the same estimator (:mod:`mdp.families.mahalanobis`, :mod:`mdp.families.vickrey`),
    whose level in the space's distance is still ``epsilon``.

    Raises
    ------
    PrivacyError
        Either check fails (the message says which, with the figures).
    """
    noise_epsilon = epsilon if noise_epsilon is None else noise_epsilon
    D = space.distances
    level = eps_tight(matrix, D, 0.0)
    if not level <= 2.0 * epsilon * (1.0 + 1e-6):
        raise PrivacyError(f"the stored {family} estimate is {level:.6g}-mDP; an estimate at "
                           f"epsilon = {epsilon:.6g} is at most {2 * epsilon:.6g}-mDP: it is not "
                           "this family's matrix")
    stored_n = max(1, int(n_samples))
    fresh_n = min(stored_n, CHECK_N_SAMPLES)
    fresh, est = estimate_madlib_matrix(space.points, noise_epsilon, fresh_n, rng=0, **options)
    se_fresh = est["max_row_loss_std_error"]
    se = se_fresh * float(np.sqrt(1.0 + fresh_n / stored_n))  # stored: at most fresh's error
    tol = CHECK_SIGMAS * se + 1e-9 * float(D.max())
    scale = float(np.sqrt(1.0 + fresh_n / stored_n))
    entry_tol = CHECK_SIGMAS * est["max_entry_std_error"] * scale + 1e-12
    diff = np.abs(np.asarray(matrix) - fresh)
    if diff.max() > entry_tol:
        u, w = (int(i) for i in np.unravel_index(np.argmax(diff), diff.shape))
        raise PrivacyError(f"the stored {family} estimate gives M[{u}, {w}] = {matrix[u, w]:.6g}, a "
                           f"fresh estimate {fresh[u, w]:.6g} (tolerance {entry_tol:.3g}): it is "
                           "not this family's matrix on these points")
    gap = np.abs(row_losses(matrix, D) - row_losses(fresh, D))
    worst = int(np.argmax(gap))
    if gap[worst] > tol:
        raise PrivacyError(f"the stored {family} estimate's expected loss of input {worst} is "
                           f"{row_losses(matrix, D)[worst]:.6g}, a fresh estimate gives "
                           f"{row_losses(fresh, D)[worst]:.6g} (standard error {se:.3g}): it "
                           "is not this family's matrix on these points")


def applies_to_points(space: MetricSpace) -> str | None:
    """Why a noise-and-snap family does not apply to ``space`` (None when it does): it needs
    points with the Euclidean metric."""
    if space.points is None:
        return "Madlib adds noise to coordinates: the space has no points (built from distances)"
    if space.metric != "euclidean":
        return (f"Madlib's guarantee is for the Euclidean distance between points, this space's "
                f"metric is {space.metric!r} (project to planar coordinates first)")
    return None


@register("madlib",
          description="Gamma(d, 1/eps)-radius noise + nearest point (Feyisetan et al. 2020); "
                      "analytic guarantee, matrix estimated by sampling",
          applies=applies_to_points, guarantee="analytic", quick_max_n=200, display_name="Madlib",
          mechanism_class=MadlibMechanism,
          params={"n_samples": Param("int", DEFAULT_N_SAMPLES, low=1,
                                     help="Monte Carlo draws per input for the estimated matrix")})
def build_madlib(space: MetricSpace, epsilon: float, *, rng=None,
                 n_samples: int = DEFAULT_N_SAMPLES) -> Candidate:
    r"""Madlib on ``space`` (points required, Euclidean metric).

    Parameters
    ----------
    n_samples : int, default :data:`DEFAULT_N_SAMPLES`
        Monte Carlo draws per input for the estimated matrix (only measurements use it; the
        privacy guarantee is analytic, see the module docstring).

    Returns
    -------
    Candidate
        The estimated matrix; ``stats["matrix_estimate"]`` holds the sampling errors. The
        registry builds a :class:`MadlibMechanism`, whose ``stats["privacy"]`` records the
        analytic guarantee (pure ``epsilon``-mDP of the sampler, by post-processing).
    """
    M, est = estimate_madlib_matrix(space.points, epsilon, n_samples, rng=rng)
    return Candidate(matrix=M, stats={"matrix_estimate": est})
