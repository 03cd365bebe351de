r"""Vocabulary mode of Madlib and of the (weighted) exponential mechanism (no ``n x n`` matrix).

See :mod:`mdp.vocabulary.mode` for the mode and its choice. Both classes re-derive everything
their guarantee depends on from the points and ``epsilon`` in the constructor, which a build
and a load share.

Exponential mechanism: analytic, exactly sampled
------------------------------------------------
Row ``u`` is :math:`\Pr[u \to j] \propto Y_j e^{-\epsilon' d_{uj}/2}` (McSherry and Talwar
2007; Imola et al. 2022, Proposition 1, any positive ``Y``). For each distinct input the row of
log-weights :math:`\tilde L_{uj} = \ell_j - \epsilon' \tilde d_{uj}/2` is computed in float64
(``ell = log Y`` as stored: the weights *are* ``exp(ell)``) and sampled exactly
(:func:`mdp.privacy.sampling.sample_log_row`): what is drawn is exactly ``exp(L~)`` normalised.
Rounding moves each log-weight by at most

.. math:: \eta = \tfrac{\epsilon}{2}\tau + 4u(\max|\ell| + \tfrac{\epsilon}{2} D_{max})
          + \eta_{exp},

(``tau``: :meth:`~mdp.spaces.vector_space.VectorSpace.distance_error`; ``D_max <= 2R + tau``;
``eta_exp``: the exact sampler's evaluation of ``exp``, checked on every row), so for inputs
``u, v`` the sampled rows satisfy :math:`\ln(\tilde p_{uj}/\tilde p_{vj}) \le \epsilon' d_{uv}
+ 4\eta` (each log-weight moves by ``eta``, the normalisers by at most ``eps' d / 2 + 2 eta``).
Points at distance 0 share one row (:attr:`~mdp.spaces.vector_space.VectorSpace.canonical`); distinct
points are at least ``d_lb`` apart (:func:`mdp.vocabulary.nearest.min_distance_lower_bound`), so sampling
at :math:`\epsilon' = \epsilon - 4\eta / d_{lb}` makes the *sampled* distribution exactly
``epsilon``-mDP for the exact distances of the stored points. ``epsilon'`` differs from
``epsilon`` by a relative 1e-5 or less on GloVe.

Madlib: analytic, exact nearest word
------------------------------------
As in matrix mode (:mod:`mdp.families.madlib`): the noise is drawn in float64, the nearest
word is found by an exact index (:class:`mdp.vocabulary.nearest.NearestIndex`) and only the word is
released. The guarantee is the continuous mechanism's (density ratio, then post-processing;
Feyisetan et al. 2020); the float noise differs from the continuous one by rounding, which
Mironov's (2012) attack cannot read because no float is released, but no bit-exact bound is
claimed. Snapping by any deterministic function of the noisy point (even an approximate
index) would be post-processing as well; the exact index keeps the released word Madlib's.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import logsumexp

from ..errors import FileFormatError, ParameterError, PrivacyError
from ..privacy.rounding import UNIT_ROUNDOFF
from ..privacy.sampling import sample_log_row
from ..registry import register_vocabulary
from ..spaces.vector_space import VectorSpace
from ..vocabulary.mode import VocabularyMechanism
from ..vocabulary.nearest import NearestIndex, NearestPlan, min_distance_lower_bound
from .madlib import madlib_noise

__all__ = ["ExponentialRows", "MadlibRows", "inverse_density_log_weights_rows",
           "MAX_RELATIVE_MARGIN", "ROW_EXP_ERROR"]

#: Largest relative reduction ``1 - eps'/eps`` accepted; beyond it the vocabulary has points
#: too close for its rounding and the build is refused.
MAX_RELATIVE_MARGIN = 1e-3
#: Budget of the exact sampler's ``exp`` evaluation per log-weight (checked on every row).
ROW_EXP_ERROR = 1e-12
#: Largest vocabulary whose missing weighted-exponential weights a load recomputes (an
#: ``n x n`` pass: a few seconds at 50,000 words; a Madlib file of all 400,000 GloVe words
#: renamed ``weighted_exponential`` took 8-12 minutes to load before this limit).
RECOMPUTED_WEIGHTS_MAX_N = 50_000
#: Entries of one block of rows computed at once (about 256 MB of float64).
_BLOCK_ENTRIES = 1 << 25


def _block_rows(n: int) -> int:
    return max(1, min(256, _BLOCK_ENTRIES // n))


def inverse_density_log_weights_rows(space: VectorSpace, epsilon: float) -> np.ndarray:
    """``log Y_j = -log sum_k exp(-epsilon d(j, k) / 2)`` computed block by block (O(n^2) time,
    O(n) memory); :func:`mdp.families.exponential.inverse_density_log_weights` without the matrix."""
    out = np.empty(space.n)
    step = _block_rows(space.n)
    for s in range(0, space.n, step):
        idx = np.arange(s, min(s + step, space.n))
        out[idx] = -logsumexp(-0.5 * epsilon * space.distances_from(idx), axis=1)
    return out


class ExponentialRows(VocabularyMechanism):
    """The (weighted) exponential mechanism in vocabulary mode (module docstring).

    ``params["Y"]``: absent for the plain mechanism, ``"inverse_density"`` (recomputed from
    the points) or an array of ``n`` positive weights.
    """

    def _prepare(self) -> dict:
        Y = self.params.get("Y")
        n = self.space.n
        if Y is None:
            self._logw = np.zeros(n)
        elif isinstance(Y, str):
            if Y != "inverse_density":
                raise ParameterError(f"Y must be 'inverse_density' or n positive weights, got {Y!r}")
            self._logw = inverse_density_log_weights_rows(self.space, self.epsilon)
        else:
            w = np.asarray(Y, dtype=float)
            if w.shape != (n,) or not np.all(np.isfinite(w)) or np.any(w <= 0):
                raise ParameterError(f"Y must be {n} finite weights > 0 (Proposition 1), got "
                                     f"shape {w.shape}")
            self._logw = np.log(w)
        tau = self.space.distance_error()
        d_max = 2 * self.space.max_norm + tau
        half = self.epsilon / 2
        eta = (half * tau + 4 * UNIT_ROUNDOFF * (float(np.abs(self._logw).max()) + half * d_max)
               + ROW_EXP_ERROR) * (1 + 1e-6)
        d_lb = min_distance_lower_bound(self.space.points)
        margin = 4 * eta / d_lb if d_lb > 0 else math.inf
        if not margin <= MAX_RELATIVE_MARGIN * self.epsilon:
            raise PrivacyError(
                f"two distinct points are closer ({d_lb:.3g} or less) than the rounding of the "
                f"distances allows at epsilon = {self.epsilon:g} (log-weight error {eta:.3g}); "
                "merge near-duplicate points or build in matrix mode")
        self._eps_sample = (self.epsilon - margin) * (1 - 4 * UNIT_ROUNDOFF)
        self._eta = eta
        return {"guarantee": "analytic, exactly sampled", "claimed_eps": self.epsilon,
                "delta": 0.0, "sampling_epsilon": self._eps_sample,
                "log_weight_error": eta, "distance_error": tau, "min_distance_lower_bound": d_lb,
                "argument": "Pr ~ Y_j exp(-eps' d/2) is eps'-mDP for any positive Y (Imola et al. "
                            "2022, Prop. 1); each row is sampled exactly from its float64 "
                            "log-weights, within eta of exact, so the sampled rows are "
                            "(eps' + 4 eta / d_lb)-mDP <= eps-mDP; equal points share a row",
                "covers": "the distribution actually sampled, for the exact Euclidean distances "
                          "of the stored points; weights are exp of the stored log-weights"}

    def _arrays(self) -> dict:
        # the weights are saved whatever they came from: any positive weights keep the
        # guarantee (Proposition 1), and recomputing the inverse density costs O(n^2) on load
        if self.params.get("Y") is not None:
            return {"log_weights": self._logw}
        return {}

    @classmethod
    def restore(cls, space, epsilon, name, params, stats, data, path):
        params = dict(params)
        if name == "weighted_exponential":
            if "log_weights" in data:
                lw = np.asarray(data["log_weights"], dtype=float)
                if lw.shape != (space.n,) or not np.all(np.isfinite(lw)):
                    raise FileFormatError(path, f"log_weights must be {space.n} finite numbers")
                params["Y"] = np.exp(lw)
            elif space.n > RECOMPUTED_WEIGHTS_MAX_N:
                raise FileFormatError(path, f"a weighted_exponential file on {space.n} words must "
                                            "hold its log_weights (a build saves them); "
                                            "recomputing them costs an n x n pass, over "
                                            f"{RECOMPUTED_WEIGHTS_MAX_N} words too long for a load")
            else:
                params["Y"] = "inverse_density"
        else:
            params.pop("Y", None)
        return cls(space, epsilon, name, params, stats)

    def log_rows(self, idx) -> np.ndarray:
        """The float64 log-weights sampled for inputs ``idx`` (unnormalised), ``(len(idx), n)``."""
        canon = self.space.canonical[np.atleast_1d(np.asarray(idx, dtype=np.int64))]
        return self._logw[None, :] - (0.5 * self._eps_sample) * self.scores(
            self.space.distances_from(canon))

    def scores(self, distances: np.ndarray) -> np.ndarray:
        """The distances that enter the exponent (the exponential mechanism: the distances
        themselves; a subclass may use any 1-Lipschitz function of them, which keeps the
        rounding bound of the module docstring)."""
        return distances

    def sample_indices(self, idx: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Each distinct input's row computed once per call and sampled exactly."""
        idx = np.asarray(idx, dtype=np.int64)
        canon = self.space.canonical[idx]
        rows, inverse = np.unique(canon, return_inverse=True)
        order = np.argsort(inverse, kind="stable")
        counts = np.bincount(inverse, minlength=len(rows))
        starts = np.concatenate([[0], np.cumsum(counts)])
        out = np.empty(len(idx), dtype=np.int64)
        step = _block_rows(self.space.n)
        for s in range(0, len(rows), step):
            block = rows[s:s + step]
            L = self.log_rows(block)
            for k in range(len(block)):
                r = s + k
                draws, eta = sample_log_row(L[k], int(counts[r]), rng)
                if not eta <= ROW_EXP_ERROR:
                    raise PrivacyError(f"exp evaluation error {eta:.3g} exceeds the budget "
                                       f"{ROW_EXP_ERROR:g} of the guarantee")
                out[order[starts[r]:starts[r + 1]]] = draws
        return out

    def _row_losses(self, idx, rng):
        canon = self.space.canonical[np.asarray(idx, dtype=np.int64)]
        out = np.empty(len(canon))
        step = _block_rows(self.space.n)
        for s in range(0, len(canon), step):
            block = canon[s:s + step]
            D = self.space.distances_from(block)
            L = self._logw[None, :] - (0.5 * self._eps_sample) * self.scores(D)
            L -= logsumexp(L, axis=1, keepdims=True)
            out[s:s + len(block)] = np.einsum("ij,ij->i", np.exp(L), D)
        return out, np.zeros(len(out)), None


class MadlibRows(VocabularyMechanism):
    """Madlib in vocabulary mode: fresh noise, then the exact nearest point (module docstring).

    ``params["index"]``: a :class:`~mdp.vocabulary.nearest.NearestPlan` algorithm name (default
    ``"screened"``). ``params["outputs_per_input"]``: draws per input for loss estimates
    (default 50; each draw is a nearest-neighbour query, so 200 inputs by default).
    """

    default_inputs = 200

    def _prepare(self) -> dict:
        algorithm = self.params.get("index", "screened")
        self._index = NearestIndex(self.space.points, NearestPlan(algorithm=algorithm))
        return {"guarantee": "analytic", "claimed_eps": self.epsilon, "delta": 0.0,
                "sampling": f"float64 noise (Gamma(d, 1/eps) radius, uniform direction); exact "
                            f"nearest point ({algorithm})",
                "argument": "density ratio of x + noise <= exp(eps ||x - x'||) (triangle "
                            "inequality); snapping to the nearest point is post-processing",
                "covers": "the continuous mechanism exactly; the float64 noise up to its "
                          "rounding (no float is released, Mironov 2012), not bit-exact"}

    @property
    def nearest_index(self) -> NearestIndex:
        """The exact index that snaps the noisy points (its ``last_stats``: the latest query)."""
        return self._index

    def noise(self, m: int, rng: np.random.Generator) -> np.ndarray:
        """``m`` fresh noise vectors (Madlib's: :func:`~mdp.families.madlib.madlib_noise`)."""
        return madlib_noise(m, self.space.dim, self.epsilon, rng=rng)

    def release(self, z: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """The released word of each noisy point (Madlib: the exact nearest)."""
        return self._index.query(z)

    def sample_indices(self, idx: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        idx = np.asarray(idx, dtype=np.int64)
        z = np.asarray(self.space.points[idx], dtype=np.float64) + self.noise(len(idx), rng)
        return self.release(z, rng)

    def _row_losses(self, idx, rng):
        k = int(self.params.get("outputs_per_input", 50))
        X = self.space.wide_points
        idx = np.asarray(idx, dtype=np.int64)
        rep = np.repeat(idx, k)
        out = self.sample_indices(rep, rng)
        d = np.linalg.norm(X[rep] - X[out], axis=1).reshape(len(idx), k)
        return d.mean(axis=1), d.std(axis=1, ddof=1) / math.sqrt(k), k


register_vocabulary("exponential", ExponentialRows)
register_vocabulary("weighted_exponential", ExponentialRows)
register_vocabulary("madlib", MadlibRows)
