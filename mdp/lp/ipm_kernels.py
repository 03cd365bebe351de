r"""Compiled passes of the interior point core (:mod:`mdp.lp.interior_point`) over its
complementary pairs ``(v, dv, z, dz)``: a value, its direction, its multiplier and the
multiplier's direction, flat arrays of one length.

Mehrotra's method reads every pair several times per direction (the ratio test, the centring
parameter, the corrector's targets). Where the pairs are far larger than a cache (a spanner LP's
privacy rows: 17.8 million at n = 500 on 50-d points) each NumPy expression is several passes
through memory and a temporary per operation; each kernel here is one pass that writes only its
result. They run on one thread without the GIL. ``tests/mdp/lp/test_ipm_kernels.py`` checks each
against its NumPy formula.
"""

from __future__ import annotations

import numba as nb
import numpy as np

__all__ = ["ratio_test", "moved_product_sum", "centring_targets", "corrector_targets"]


@nb.njit(cache=True, boundscheck=False, nogil=True)
def _ratio_test(v, dv):  # pragma: no cover (compiled)
    step = 1.0
    for i in range(v.shape[0]):
        if dv[i] < 0.0:
            t = -v[i] / dv[i]
            if t < step:
                step = t
    return step


@nb.njit(cache=True, boundscheck=False, nogil=True)
def _moved_product_sum(v, dv, z, dz, ap, ad):  # pragma: no cover (compiled)
    total = 0.0
    for i in range(v.shape[0]):
        total += (v[i] + ap * dv[i]) * (z[i] + ad * dz[i])
    return total


@nb.njit(cache=True, boundscheck=False, nogil=True)
def _centring_targets(v, dv, z, dz, target, out):  # pragma: no cover (compiled)
    for i in range(v.shape[0]):
        out[i] = target - v[i] * z[i] - dv[i] * dz[i]


@nb.njit(cache=True, boundscheck=False, nogil=True)
def _corrector_targets(rs, v, dv, z, dz, tp, td, target, lo, hi, out):  # pragma: no cover
    for i in range(v.shape[0]):
        p = (v[i] + tp * dv[i]) * (z[i] + td * dz[i])
        shift = min(max(p, lo), hi) - p
        out[i] = rs[i] + max(shift, -hi)


def _flat(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float64).reshape(-1)


def ratio_test(v: np.ndarray, dv: np.ndarray) -> float:
    r"""The largest ``a`` in ``[0, 1]`` with ``v + a dv >= 0`` for a positive ``v``:
    ``min(1, min over dv < 0 of -v / dv)``; entries where ``dv`` is NaN are ignored."""
    return float(_ratio_test(_flat(v), _flat(dv)))


def moved_product_sum(v: np.ndarray, dv: np.ndarray, z: np.ndarray, dz: np.ndarray, ap: float,
                      ad: float) -> float:
    r"""``sum (v + ap dv)(z + ad dz)``: the complementarity after a step, without the point."""
    return float(_moved_product_sum(_flat(v), _flat(dv), _flat(z), _flat(dz), float(ap),
                                    float(ad)))


def centring_targets(v: np.ndarray, dv: np.ndarray, z: np.ndarray, dz: np.ndarray,
                     target: float) -> np.ndarray:
    r"""Mehrotra's corrector targets ``sigma mu - v z - dv dz`` (``target = sigma mu``), in
    ``v``'s shape."""
    out = np.empty(np.shape(v))
    _centring_targets(_flat(v), _flat(dv), _flat(z), _flat(dz), float(target), out.reshape(-1))
    return out


def corrector_targets(rs: np.ndarray, v: np.ndarray, dv: np.ndarray, z: np.ndarray,
                      dz: np.ndarray, tp: float, td: float, target: float, beta_min: float,
                      beta_max: float) -> np.ndarray:
    r"""Gondzio's targets: ``rs`` plus the products ``(v + tp dv)(z + td dz)`` moved into
    ``[beta_min, beta_max] x target``, large ones by at most ``beta_max x target``."""
    out = np.empty(np.shape(v))
    _corrector_targets(_flat(rs), _flat(v), _flat(dv), _flat(z), _flat(dz), float(tp), float(td),
                       float(target), beta_min * target, beta_max * target, out.reshape(-1))
    return out
