r"""Compiled all-pairs maxima of :mod:`mdp.privacy.accounting` (numba).

The certification of an ``n x n`` matrix needs, for every ordered pair of rows,

.. math:: x_{uv} = \max_w \frac{M_{uw} - M_{vw}}{M_{vw}}
          \quad\text{or, in logs,}\quad r_{uv} = \max_w (L_{uw} - L_{vw}),

``n^3`` triples (1.25e11 at n = 5000). NumPy computes them through a buffer of blocks of triples,
so every triple is written to memory and read back. These kernels fuse the operation and the
maximum and keep a block of rows in cache while the other rows stream past.

**Same numbers as NumPy, bit for bit.** Each triple is the same IEEE float64 operations in the
same order (one subtraction, then one division), so the error analysis of
:func:`mdp.privacy.accounting.pair_log_ratios` holds unchanged. The only fast-math flags are ``nnan``
and ``nsz``, which let the compiler vectorise the maximum: they are sound because the kernels
are only called on matrices without zeros (the caller checks), where no triple is NaN, and the
sign of a zero maximum changes nothing downstream (``log1p(+-0) = +-0`` and every bound adds a
positive margin). ``tests/mdp/privacy/test_accounting.py`` checks equality with the NumPy path.

**Pruned divisions (probabilities).** The key ``k_w = fl(fl(P_w - Q_w) / Q_w)`` costs a division
per triple. With ``r_w = P_w / Q_w``, ``x_w = r_w - 1`` and the unit roundoff ``u = 2^-53``:
``|k_w - x_w| <= 2.02 u |x_w|`` (the margin the certification already uses), and
``q_w = fl(P_w fl(1 / Q_w))`` is within ``a = 2u + u^2`` of ``r_w`` relative in the normal range.
:func:`pair_max_prob` keeps the running maximum ``t`` of ``q`` and evaluates ``k_w`` only where
``q_w >= fl(t (1 - rho))``, ``rho = PRUNE_REL``. The running ``t`` never exceeds its final value,
so every ``w`` with ``q_w >= fl(t_final (1 - rho))`` is evaluated; extra ones change nothing.
Suppose a maximiser ``w*`` of ``k`` were not evaluated, and let ``q`` reach ``t_final`` at
``w_t``. Then ``r_{w*} < r_{w_t} (1 - rho + 3a + u + O(u^2))``, so
``x_{w_t} - x_{w*} > (rho - 4a) r_{w_t}``, while the two keys' errors add up to at most
``4.04 u max(1, r_{w_t})``. With ``t_final >= PRUNE_MIN = 1e-3`` (so ``r_{w_t} >= 1e-3 (1 - a)``)
and finite, ``(rho - 4a) r_{w_t} >= 1e-14 > 4.04 u max(1, r_{w_t})`` holds for both
``r_{w_t} < 1`` and ``>= 1``, so ``k_{w*} < k_{w_t}``: a contradiction. (A ``q_{w*}`` that
underflows has ``r_{w*} < 2^-1021`` and ``k_{w*}`` about ``-1 < k_{w_t}``, the same
contradiction.) Otherwise, ``t_final`` infinite (an ``R`` or a product overflowed) or below
``PRUNE_MIN``, every key of the pair is evaluated. So the maximum is the NumPy path's value,
bit for bit, with one division for a few triples per pair.
"""

from __future__ import annotations

import numba as nb
import numpy as np

__all__ = ["pair_max_log", "pair_max_prob", "ROW_BLOCK", "PRUNE_REL", "PRUNE_MIN"]

#: Rows kept in cache while every other row streams past (16 rows of 5,000 entries: 640 kB).
ROW_BLOCK = 16
#: Relative band below the running maximum of ``P_w / Q_w`` (as ``P_w * (1 / Q_w)``) inside which
#: :func:`pair_max_prob` evaluates the exact key (proof in the module docstring).
PRUNE_REL = 1e-11
#: Smallest maximum ratio for which the pruning is used (below it every key is evaluated).
PRUNE_MIN = 1e-3


@nb.njit(cache=True, fastmath={"nnan", "nsz"}, boundscheck=False)
def pair_max_log(A: np.ndarray, us: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover (compiled)
    """``out[i, v] = max_w (A[us[i], w] - A[v, w])``; ``A`` finite.

    Four rows ``v`` at a time: four independent maxima per load of ``A[u, w]`` (one running
    maximum is bound by the latency of its own chain; 1.5x at n = 1500).
    """
    n = A.shape[0]
    k = us.shape[0]
    n4 = n - n % 4
    for s in range(0, k, ROW_BLOCK):
        e = min(k, s + ROW_BLOCK)
        for v in range(0, n4, 4):
            for i in range(s, e):
                u = us[i]
                m0 = m1 = m2 = m3 = -np.inf
                for w in range(n):
                    a = A[u, w]
                    m0 = max(m0, a - A[v, w])
                    m1 = max(m1, a - A[v + 1, w])
                    m2 = max(m2, a - A[v + 2, w])
                    m3 = max(m3, a - A[v + 3, w])
                out[i, v] = m0
                out[i, v + 1] = m1
                out[i, v + 2] = m2
                out[i, v + 3] = m3
        for v in range(n4, n):
            for i in range(s, e):
                u = us[i]
                m = -np.inf
                for w in range(n):
                    m = max(m, A[u, w] - A[v, w])
                out[i, v] = m


@nb.njit(cache=True, fastmath={"nnan", "nsz"}, boundscheck=False)
def pair_max_prob(A: np.ndarray, R: np.ndarray, us: np.ndarray,
                  out: np.ndarray) -> None:  # pragma: no cover (compiled)
    """``out[i, v] = max_w (A[us[i], w] - A[v, w]) / A[v, w]``; ``A`` positive and finite, ``R = 1 / A``.

    Single pass with a proved pruning (module docstring): the exact key is evaluated only where
    ``A[u, w] * R[v, w]`` reaches ``1 - PRUNE_REL`` of the running maximum of that product; a
    pair whose maximum product is infinite or below ``PRUNE_MIN`` is evaluated in full.
    """
    n = A.shape[0]
    k = us.shape[0]
    for s in range(0, k, ROW_BLOCK):
        e = min(k, s + ROW_BLOCK)
        for v in range(n):
            for i in range(s, e):
                u = us[i]
                t = -np.inf
                thr = -np.inf
                m = -np.inf
                for w in range(n):
                    q = A[u, w] * R[v, w]
                    if q >= thr:
                        m = max(m, (A[u, w] - A[v, w]) / A[v, w])
                        if q > t:
                            t = q
                            thr = t * (1.0 - PRUNE_REL)
                if not (t < np.inf and t >= PRUNE_MIN):
                    m = -np.inf
                    for w in range(n):
                        m = max(m, (A[u, w] - A[v, w]) / A[v, w])
                out[i, v] = m


@nb.njit(cache=True, boundscheck=False)
def level_bound(r: float, d: float, rel: float, slack: float, sign: float) -> float:  # pragma: no cover
    """One entry of :func:`mdp.privacy.accounting.pure_levels`: ``max(0, side(max(r, 0) / d))`` with
    ``side(x) = x + sign (|x| rel) + sign slack`` for finite ``x`` (``round_up`` for
    ``sign = 1``, ``round_down`` for -1) and ``d`` replaced by 1 unless positive."""
    if r < 0.0:
        r = 0.0
    if not d > 0.0:
        d = 1.0
    x = r / d
    if np.isfinite(x):
        x = x + sign * (abs(x) * rel)
        x = x + sign * slack
    if x < 0.0:
        x = 0.0
    return x


@nb.njit(cache=True, boundscheck=False)
def pure_levels_kernel(R: np.ndarray, D: np.ndarray, rel: float, slack: float, sign: float,
                       out: np.ndarray) -> None:  # pragma: no cover (compiled)
    """``out[u, v] = level_bound(R[u, v], D[u, v])``, diagonal 0: the same IEEE operations per
    entry as :func:`mdp.privacy.accounting.pure_levels`'s NumPy expression, without its ``n x n``
    temporaries."""
    n = R.shape[0]
    for u in range(n):
        for v in range(n):
            out[u, v] = 0.0 if u == v else level_bound(R[u, v], D[u, v], rel, slack, sign)


@nb.njit(cache=True, boundscheck=False)
def pairs_at_least(R: np.ndarray, D: np.ndarray, floor: float, rel: float, slack: float,
                   us: np.ndarray, vs: np.ndarray) -> int:  # pragma: no cover (compiled)
    """Off-diagonal pairs whose upper level bound (``level_bound(R, D)``, rounded up) is at
    least ``floor``: their number, the first ``len(us)`` of them written to ``us, vs``."""
    n = R.shape[0]
    count = 0
    for u in range(n):
        for v in range(n):
            if u != v and level_bound(R[u, v], D[u, v], rel, slack, 1.0) >= floor:
                if count < us.shape[0]:
                    us[count] = u
                    vs[count] = v
                count += 1
    return count


@nb.njit(cache=True, boundscheck=False)
def distance_defects(D: np.ndarray):  # pragma: no cover (compiled)
    """One pass over a square matrix for :func:`mdp.privacy.accounting.check_distances`: whether every
    entry is finite, the diagonal zero and the rest positive, the largest ``|D - D.T|``, whether
    ``D == D.T`` exactly, and the largest entry."""
    n = D.shape[0]
    valid = True
    asym = 0.0
    top = -np.inf
    for u in range(n):
        for v in range(n):
            d = D[u, v]
            if not np.isfinite(d):
                valid = False
            elif u == v:
                if d != 0.0:
                    valid = False
            elif not d > 0.0:
                valid = False
            if d > top:
                top = d
            a = abs(d - D[v, u])
            if a > asym:
                asym = a
    return valid, asym, asym == 0.0, top
