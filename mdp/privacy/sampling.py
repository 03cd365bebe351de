r"""Exact sampling from a certified transition matrix.

A float64 inverse CDF never draws an entry below about ``1e-16`` of its row's mass, so the
distribution it samples is not the certified one (an entry that one row gives ``1e-30`` and
another ``0`` is an infinite privacy loss). :class:`ExactSampler` draws, with exact integer
arithmetic, from the distribution

.. math:: \tilde p_{uw} = \frac{\hat p_{uw}}{\sum_{w'} \hat p_{uw'}},

where ``p_hat`` is the certified matrix itself (float64 probabilities, each an exact dyadic
rational) or, for a log-probability matrix, ``exp(L)`` evaluated once into exact dyadic numbers
``m 2^e`` (53-bit mantissa, unbounded integer exponent: ``e^-10000`` stays positive). Every
entry that is positive in the certified matrix is positive in the sampled one.

Sampling (two levels, both exact)
---------------------------------
Per row, ``m = n + 1`` items (the ``n`` outputs and a *residual* item) get integer weights
``q_w <= m C p_tilde_w`` (``C = 2^k``, ``m C <= 2^62``; rounded down in float64 with a proved
margin) and ``q_res = m C - sum_w q_w``, arranged in an integer alias table (Walker 1977, Vose
1991; built exactly with int64 arithmetic, all rows at once): a uniform column ``j`` in
``[0, m)`` and a uniform ``V`` in ``[0, C)`` (``rng.integers``, both exact) give column ``j``'s
item if ``V < threshold_j`` and its alias otherwise, so item ``i`` comes out with probability
exactly ``q_i / (m C)``. The residual item (probability at most about ``2^-50 + n 2^-61``)
completes the draw from the residual weights ``R_w = m C P_w - q_w T`` (``P_w`` the entries as
integers on a common grid, ``T`` their sum) with Python integers: a uniform integer below
``sum R_w`` by rejection from random 64-bit words. Then

.. math:: \Pr[w] = \frac{q_w}{m C} + \frac{q_{res}}{m C} \frac{R_w}{\sum R}
          = \frac{P_w}{T} = \tilde p_{uw}

exactly. :meth:`ExactSampler.row_distribution` recomputes these probabilities as fractions
from the tables.

Privacy of what is sampled
--------------------------
The sampled matrix differs from the certified one by the row normalisation (rows sum to 1 only
within ``1e-12``) and, for log matrices, by the evaluation of ``exp``. :meth:`ExactSampler.certify`
bounds its pure level rigorously:

.. math:: \tilde\epsilon_{uv} = \frac{r_{uv} + \ln(S_v / S_u)}{D_{uv}},\qquad
          r_{uv} = \max_w \ln\frac{\hat p_{uw}}{\hat p_{vw}},\ S_u = \sum_w \hat p_{uw}

with ``r`` from the certification's pair bounds (probabilities: the same numbers; log matrices:
``max_w (L_uw - L_vw)`` plus the proved error of the ``exp`` evaluation, pairs that need it
re-measured directly on ``p_hat``), ``ln(S_v/S_u) <= (S_v - S_u)/S_u`` with ``S_u - 1`` from
``math.fsum`` (correctly rounded), and ``0`` for pairs of identical rows.
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
import math
from collections.abc import Callable
from fractions import Fraction

import numba as nb
import numpy as np

from ..errors import BuildError, ParameterError, PrivacyError
from ..validation import check_epsilon, check_rng
from .accounting import check_distances, check_matrix, pair_log_ratio_bounds
from .rounding import DIFF_REL, LIBM_RTOL, LOG_REL, SUBNORMAL_SLACK, UNIT_ROUNDOFF, X_REL, round_up
from .verification import PURE_EPS_RTOL, certify_matrix

__all__ = ["ExactSampler", "certified_sampler", "TABLE_BITS", "MAX_ROW_BITS", "sample_log_row"]

#: Smallest log-weight (after the row's maximum is subtracted) for which :func:`sample_log_row`
#: takes ``exp`` directly: ``e^-700`` is a normal float64 (the smallest is about ``e^-708``).
DIRECT_EXP_MIN = -700.0
#: Bits of the alias table's total mass ``m C <= 2^TABLE_BITS`` (int64 arithmetic).
TABLE_BITS = 62
# Cody-Waite split of ln 2: LN2_HI has 32 significant bits, so k * LN2_HI is exact for |k| < 2^21.
_LN2_HI = float.fromhex("0x1.62e42feep-1")
_LN2_LO = float.fromhex("0x1.a39ef35793c76p-33")
#: Rows drawn per batch of random integers (bounds the temporary arrays at 16 MB each).
_CHUNK = 1 << 20
#: Most bits the exact residual weights of one row may take (``sum_w`` of the binary orders of
#: magnitude between the row's largest entry and entry ``w``, plus a 53-bit mantissa each):
#: 2^30 bits is 128 MiB of Python integers per row. A matrix beyond it (the exponential
#: mechanism at ``eps * d`` of about 7e8 and above: log-probabilities whose exponents no longer
#: fit a machine integer) is refused before any table is built, never sampled inexactly.
MAX_ROW_BITS = 1 << 30


def _row_bits(A: np.ndarray, log: bool) -> np.ndarray:
    """Bits of each row's exact residual weights (see :data:`MAX_ROW_BITS`), in float64
    (``inf`` when the orders of magnitude overflow); by blocks of rows (each row alone, so the
    same floats as at once, without ``n x n`` temporaries)."""
    out = np.empty(A.shape[0])
    block = max(1, (1 << 18) // max(1, A.shape[1]))
    for s in range(0, A.shape[0], block):
        out[s:s + block] = _row_bits_block(A[s:s + block], log)
    return out


def _row_bits_block(A: np.ndarray, log: bool) -> np.ndarray:
    if log:
        finite = np.isfinite(A)
        top = np.max(np.where(finite, A, -np.inf), axis=1, keepdims=True)
        with np.errstate(over="ignore", invalid="ignore"):
            span = np.where(finite, (top - A) / math.log(2) + 54.0, 0.0)
    else:
        pos = A > 0
        _, e = np.frexp(np.where(pos, A, 1.0))
        top = np.max(np.where(pos, e, -10_000), axis=1, keepdims=True)
        span = np.where(pos, (top - e) + 54.0, 0.0)
    with np.errstate(over="ignore", invalid="ignore"):
        return np.sum(span, axis=1)


def _exp_extended(L: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``exp(L)`` as exact dyadic numbers ``mant * 2^expo`` and a per-entry error bound.

    Returns ``(mant, expo, eta)``: ``mant`` in ``[0.5, 1)`` (0 for ``L = -inf``), ``expo``
    int64, and ``eta >= |ln(mant 2^expo) - L|`` (range reduction ``L = k ln2 + r`` with
    Cody-Waite constants, ``exp(r)`` within :data:`~mdp.privacy.rounding.LIBM_RTOL`).
    """
    finite = np.isfinite(L)
    Lf = np.where(finite, L, 0.0)
    k = np.floor(Lf / math.log(2) + 0.5)
    r1 = Lf - k * _LN2_HI
    r = r1 - k * _LN2_LO
    mant, e = np.frexp(np.exp(r))
    expo = e.astype(np.int64) + k.astype(np.int64)
    inexact_hi = np.abs(k) >= 2.0 ** 21
    eta = (1.1 * LIBM_RTOL + 1.1 * UNIT_ROUNDOFF * (np.abs(r1) + np.abs(r) + np.abs(k * _LN2_LO))
           + np.abs(k) * 2.0 ** -80 + np.where(inexact_hi, 1.1 * UNIT_ROUNDOFF * np.abs(k * _LN2_HI), 0.0))
    mant = np.where(finite, mant, 0.0)
    expo = np.where(finite, expo, 0)
    eta = np.where(finite, eta, 0.0)
    return mant, expo, eta


def _randbelow(rng: np.random.Generator, N: int) -> int:
    """A uniform integer in ``[0, N)`` from 64-bit words of ``rng`` (exact, by rejection)."""
    k = N.bit_length()
    words = -(-k // 64)
    mask = (1 << k) - 1
    while True:
        raw = rng.integers(0, 2 ** 64 - 1, size=words, dtype=np.uint64, endpoint=True)
        x = int.from_bytes(raw.tobytes(), "little") & mask
        if x < N:
            return x


@nb.njit(cache=True, boundscheck=False)
def _alias_rows(q: np.ndarray, total: int, C: int, thr: np.ndarray, item: np.ndarray,
                alias: np.ndarray) -> bool:  # pragma: no cover (compiled)
    """:func:`_alias_tables` row by row (compiled): the weights of row ``u`` are ``q[u]`` and the
    residual item ``total - sum q[u]``; writes ``thr``, ``item``, ``alias`` of shape
    ``(rows, k + 1)`` for ``q`` of shape ``(rows, k)`` and returns whether every row kept the
    invariant."""
    rows, n = q.shape
    m = n + 1
    w = np.empty(m, dtype=np.int64)
    al = np.empty(m, dtype=np.int64)
    ok = True
    for u in range(rows):
        s = 0
        for k in range(n):
            w[k] = q[u, k]
            s += q[u, k]
        w[n] = total - s
        order = np.argsort(w, kind="mergesort")          # stable, as NumPy's "stable"
        ws = w[order]
        i = 0
        j = m - 1
        rem = ws[m - 1]
        for _ in range(m - 1):
            if rem < C:                   # the large item became small: place it
                thr[u, j] = rem
                al[j] = j - 1
                rem = ws[max(j - 1, 0)] - (C - rem)
                j -= 1
            else:
                wi = ws[i]
                thr[u, i] = wi
                al[i] = j
                rem = rem - (C - wi)
                i += 1
        thr[u, j] = rem
        al[j] = j
        if rem != C:
            ok = False
        for k in range(m):
            t = thr[u, k]
            if t < 0 or t > C:
                ok = False
            item[u, k] = order[k]
            alias[u, k] = order[al[k]]
    return ok


def _alias_tables(q: np.ndarray, C: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Exact integer alias tables of every row of weights ``[q[u], m C - sum q[u]]``
    (``q`` of shape ``(rows, m - 1)``).

    Two-pointer form of Vose's method on the weights sorted ascending (stable): the current
    *large* item ``j`` (from the right) fills the column of the next *small* item (from the
    left) or, once its remainder is below ``C``, its own column with alias ``j - 1``. The
    invariant "unplaced weight = C times the number of unplaced items" makes every threshold
    lie in ``[0, C]``; this is checked. Compiled, one row at a time (:func:`_alias_rows`): no
    ``n x n`` temporaries beyond the tables themselves.

    Returns
    -------
    thr, item, alias : flat arrays of length ``n m`` (row-major): column ``j`` of row ``u``
        yields ``item`` if ``V < thr`` else ``alias``.
    """
    rows, m = q.shape[0], q.shape[1] + 1
    small = np.int32 if m < 2 ** 31 else np.int64
    thr = np.empty((rows, m), dtype=np.int64)
    item = np.empty((rows, m), dtype=small)
    alias = np.empty((rows, m), dtype=small)
    if not _alias_rows(np.ascontiguousarray(q, dtype=np.int64), m * C, C, thr, item, alias):
        raise RuntimeError("alias table construction failed its invariant (a bug)")
    return thr.ravel(), item.ravel(), alias.ravel()


@nb.njit(cache=True, boundscheck=False)
def _up_kept(x: float, rel: float, slack: float) -> float:  # pragma: no cover (compiled)
    """:func:`mdp.privacy.rounding.round_up` of one float (infinities and NaN kept)."""
    if np.isfinite(x):
        return (x + abs(x) * rel) + slack
    return x


@nb.njit(cache=True, boundscheck=False)
def _sampled_levels(R, D, sig_lo, sig_hi, eta_row, group, rel, slack, cut, us, vs,
                    Es):  # pragma: no cover (compiled)
    """Per pair ``E[u, v]`` of :meth:`ExactSampler.measure_eps` (the same operations in the same
    order as its NumPy form: ``corr``, ``eta``, the total and the division, each rounded up;
    pairs of one group are 0). Returns the largest ``E`` at most ``cut`` and the number of
    pairs above ``cut``, which it writes to ``us, vs, Es`` when they are large enough to hold
    them; ``(nan, 0)`` when some ``E`` is NaN."""
    n = R.shape[0]
    best = 0.0
    count = 0
    for u in range(n):
        for v in range(n):
            if group[u] == group[v]:
                continue
            c = _up_kept(_up_kept(sig_hi[v] - sig_lo[u], rel, slack) / (1.0 + sig_lo[u]), rel, slack)
            eta = eta_row[u] + eta_row[v]
            total = _up_kept(_up_kept(R[u, v] + eta, rel, slack) + c, rel, slack)
            if total < 0.0:
                total = 0.0
            d = D[u, v]
            if not d > 0.0:
                d = 1.0
            e = _up_kept(total / d, rel, slack)
            if e != e:                      # NaN: no bound (the measurement refuses)
                return np.nan, 0
            if e <= cut:
                if e > best:
                    best = e
            else:
                if count < us.shape[0]:
                    us[count] = u
                    vs[count] = v
                    Es[count] = e
                count += 1
    return best, count


def _row_sum_bounds(mant: np.ndarray, expo: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Bounds of ``S_u - 1`` for the exact row sums ``S_u = sum_w mant 2^expo`` (per row given)."""
    rows = mant.shape[0]
    lo = np.empty(rows)
    hi = np.empty(rows)
    normal = expo >= -1020           # mant * 2^expo is then an exact float64
    with np.errstate(under="ignore"):
        vals = np.where(normal, np.ldexp(mant, np.clip(expo, -1100, 1100).astype(np.int32)), 0.0)
    tail = np.count_nonzero(~normal & (mant > 0), axis=1) * 2.0 ** -1020
    for u in range(rows):
        s = math.fsum([*vals[u].tolist(), -1.0])       # correctly rounded
        lo[u] = s - abs(s) * 2.0 ** -52 - 2.0 ** -1070
        hi[u] = s + abs(s) * 2.0 ** -52 + 2.0 ** -1070 + tail[u] * 1.01
    return lo, hi


class ExactSampler:
    """Exact sampler of the row-normalised certified matrix (module docstring).

    Parameters
    ----------
    matrix : ndarray (n, n)
        The certified matrix: probabilities, or natural log-probabilities with ``log=True``.
        Rows must sum to 1 within :data:`mdp.privacy.accounting.MEASURE_ROWSUM_ATOL`.
    log : bool, keyword-only

    Attributes
    ----------
    n : int
    log : bool
    """

    def __init__(self, matrix, *, log: bool = False):
        A = check_matrix(matrix, log=log)
        self.n = A.shape[0]
        bits = _row_bits(A, log)
        if not np.all(bits <= MAX_ROW_BITS):
            u = int(np.argmax(np.where(np.isnan(bits), np.inf, bits)))
            raise BuildError(
                f"row {u} of the matrix cannot be sampled exactly: its probabilities span about "
                f"{bits[u] / max(self.n, 1):.3g} binary orders of magnitude on average "
                f"({bits[u]:.3g} bits of exact weights, the limit is {MAX_ROW_BITS}); such a "
                "mechanism releases its input almost surely: lower epsilon")
        self.log = bool(log)
        # the certified matrix is shared when it is read-only (mdp.privacy.sampling.certified_sampler
        # makes it so): an n x n copy less per mechanism
        shared = not A.flags.writeable and A.flags.owndata
        self._source = A if shared else np.array(A, copy=True)
        self._source.setflags(write=False)
        m = self.n + 1
        k = TABLE_BITS - (m - 1).bit_length()
        self._m, self._C, self._k = m, 1 << k, k
        # What the privacy measurement of the sampled matrix needs (row sums, the exp error,
        # identical rows) from blocks of rows; the n x n tables are built at the first draw, by
        # the same deterministic functions of the same read-only matrix (a mechanism that is
        # only measured, as in a calibration, never holds them)
        self._eta_row = np.zeros(self.n)
        self._sigma_lo, self._sigma_hi = np.empty(self.n), np.empty(self.n)
        # identical sampled rows share a group (their pairs have level 0): rows are found by a
        # digest of their weights and confirmed equal weight for weight, so a digest collision
        # can only split a group (a looser bound), never join different rows; only the
        # digests are held, not n x n bytes
        first: dict[bytes, list[int]] = {}
        group = np.arange(self.n)
        block = max(1, (1 << 18) // max(self.n, 1))
        for s in range(0, self.n, block):
            mant, expo, eta = self._dyadic(slice(s, s + block))
            self._eta_row[s:s + block] = eta.max(axis=1)
            self._sigma_lo[s:s + block], self._sigma_hi[s:s + block] = _row_sum_bounds(mant, expo)
            for i in range(len(mant)):
                key = hashlib.blake2b(mant[i].tobytes() + expo[i].tobytes(), digest_size=16).digest()
                for u in first.setdefault(key, []):
                    m0, e0, _ = self._dyadic(slice(u, u + 1))
                    if np.array_equal(m0[0], mant[i]) and np.array_equal(e0[0], expo[i]):
                        group[s + i] = u
                        break
                else:
                    first[key].append(s + i)
        self._group = group
        self._tables = None
        self._residual: dict[int, tuple[list[int], int]] = {}

    def _dyadic(self, rows) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(mant, expo, eta)`` of the sampled weights of ``rows`` (elementwise, so any block
        of rows gives the same numbers as the whole matrix)."""
        A = self._source[rows]
        if self.log:
            return _exp_extended(A)
        mant, e = np.frexp(A)
        return mant, e.astype(np.int64), np.zeros(A.shape)

    def _table(self):
        """``(mant, expo, q, thr, item, alias)`` of every row, built once (at the first draw)."""
        if self._tables is None:
            mant, expo, _ = self._dyadic(slice(None))
            # q_w <= m C p_w / S: the factor (1 - 2^-50) covers the roundings of this float formula
            fac = float(self._m) * (1.0 - 2.0 ** -50) / (1.0 + self._sigma_hi)
            ek = np.clip(expo + self._k, -1100, 1100).astype(np.int32)
            with np.errstate(under="ignore"):
                y = np.ldexp(mant, ek) * fac[:, None]
            q = np.floor(y).astype(np.int64)
            del y, ek
            self._tables = (mant, expo, q, *_alias_tables(q, self._C))
        return self._tables

    # -- sampling ---------------------------------------------------------------------------------
    def _residual_table(self, u: int) -> tuple[list[int], int]:
        """Cumulative exact residual weights ``R_w = m C P_w - q_w T`` of row ``u`` (lazily)."""
        if u in self._residual:
            return self._residual[u]
        mant, expo, q = self._table()[:3]
        m = mant[u]
        pos = m > 0
        M53 = (m * 2.0 ** 53).astype(np.int64).tolist()
        E = (expo[u] - 53).tolist()
        g = min(e for e, p in zip(E, pos.tolist(), strict=True) if p)
        P = [mm << (e - g) if p else 0 for mm, e, p in zip(M53, E, pos.tolist(), strict=True)]
        T = sum(P)
        mC = self._m * self._C
        R = [p * mC - qq * T for p, qq in zip(P, q[u].tolist(), strict=True)]
        if min(R) < 0:
            raise RuntimeError(f"sampler table of row {u} exceeds the exact probabilities")
        cum = list(itertools.accumulate(R))
        self._residual[u] = (cum, cum[-1])
        return self._residual[u]

    def _residual_pick(self, u: int, x: int) -> int:
        """Output for a residual integer ``x`` in ``[0, sum R)`` of row ``u``."""
        cum, _ = self._residual_table(u)
        return bisect.bisect_right(cum, x)

    def _draw(self, rows: np.ndarray, cols: np.ndarray, V: np.ndarray,
              below: Callable[[int], int]) -> np.ndarray:
        """Outputs for alias columns ``cols``, table words ``V`` and a residual source
        ``below(N)`` uniform on ``[0, N)`` (the random inputs are explicit for testing)."""
        thr, item, alias = self._table()[3:]
        idx = rows * self._m + cols
        out = np.where(V < thr[idx], item[idx], alias[idx]).astype(np.int64)
        for i in np.flatnonzero(out == self.n).tolist():
            u = int(rows[i])
            _, total = self._residual_table(u)
            out[i] = self._residual_pick(u, below(total))
        return out

    def sample(self, rows, rng=None) -> np.ndarray:
        """One output index per input row index, drawn exactly from the sampled distribution.

        Parameters
        ----------
        rows : array-like of int
            Input indices in ``[0, n)``.
        rng : None, int or numpy.random.Generator
            Source of randomness; ``None`` draws from OS entropy (``SeedSequence()``).

        Returns
        -------
        ndarray of int64
        """
        rng = check_rng(rng)
        rows = np.asarray(rows, dtype=np.int64).ravel()
        if rows.size and (rows.min() < 0 or rows.max() >= self.n):
            raise ParameterError(f"rows must be indices in [0, {self.n}), got values "
                                 f"{rows.min()}..{rows.max()}")
        out = np.empty(len(rows), dtype=np.int64)
        for s in range(0, len(rows), _CHUNK):
            r = rows[s:s + _CHUNK]
            cols = rng.integers(0, self._m, size=len(r), dtype=np.int64)
            V = rng.integers(0, self._C, size=len(r), dtype=np.int64)
            out[s:s + _CHUNK] = self._draw(r, cols, V, lambda N: _randbelow(rng, N))
        return out

    def row_distribution(self, u: int) -> list[Fraction]:
        """The exact probabilities with which :meth:`sample` draws each output from row ``u``,
        recomputed from the alias table and the residual weights."""
        u = int(u)
        m, C = self._m, self._C
        sl = slice(u * m, (u + 1) * m)
        mass = [0] * m
        thrs, items, aliases = self._table()[3:]
        for thr, item, alias in zip(thrs[sl].tolist(), items[sl].tolist(),
                                    aliases[sl].tolist(), strict=True):
            mass[item] += thr
            mass[alias] += C - thr
        cum, total = self._residual_table(u)
        R = [b - a for a, b in zip([0] + cum[:-1], cum, strict=True)]
        res = Fraction(mass[self.n], m * C)
        return [Fraction(mass[w], m * C) + res * Fraction(R[w], total) for w in range(self.n)]

    def sampled_matrix(self) -> np.ndarray:
        """The sampled probabilities rounded to float64 (for display; :meth:`row_distribution`
        is exact)."""
        with np.errstate(under="ignore"):
            mant, expo = self._table()[:2]
            vals = np.ldexp(mant, np.clip(expo, -1100, 1100).astype(np.int32))
        return vals / (1.0 + (self._sigma_lo + self._sigma_hi) / 2)[:, None]

    # -- privacy of what is sampled -----------------------------------------------------------------
    def _pair_upper_direct(self, u: int, v: int) -> float:
        """Upper bound of ``max_w ln(p_hat[u, w] / p_hat[v, w])`` measured on ``p_hat`` itself."""
        mant, expo, _ = self._dyadic([u, v])
        mu, mv = mant[0], mant[1]
        pos = mu > 0
        if np.any(pos & (mv == 0)):
            return math.inf
        mu, mv = mu[pos], mv[pos]
        de = expo[0][pos] - expo[1][pos]
        small = np.abs(de) <= 1000
        with np.errstate(over="ignore"):
            x = (np.ldexp(mu[small], de[small].astype(np.int32)) - mv[small]) / mv[small]
            r_small = round_up(np.log1p(round_up(x, X_REL)), LOG_REL)
            r_big = round_up(np.log(mu[~small]) - np.log(mv[~small]) + de[~small] * math.log(2), LOG_REL)
        return float(max(r_small.max(initial=-math.inf), r_big.max(initial=-math.inf)))

    def measure_eps(self, distances, *, pair_log_ratios=None, limit: float | None = None) -> float:
        """A rigorous upper bound of the pure level of the sampled matrix (module docstring).

        Parameters
        ----------
        distances : ndarray (n, n)
        pair_log_ratios : ndarray (n, n), optional
            Upper bounds of ``max_w ln(M[u, w] / M[v, w])`` of the matrix this sampler was
            built from (:class:`mdp.privacy.verification.Certification`); computed when omitted.
        limit : float, optional
            Pairs whose bound exceeds ``limit`` are re-measured directly on ``p_hat``.
        """
        D = check_distances(distances, self.n)
        R = pair_log_ratios
        if R is None:
            R, _ = pair_log_ratio_bounds(self._source, self.log)
        R = np.asarray(R, dtype=float)
        if R.shape != (self.n, self.n):
            raise ParameterError(f"pair_log_ratios must have shape ({self.n}, {self.n}), got {R.shape}")
        R = np.ascontiguousarray(R)
        cut = math.inf if limit is None or not self.log else float(limit)
        args = (R, D, self._sigma_lo, self._sigma_hi, self._eta_row, self._group, DIFF_REL,
                SUBNORMAL_SLACK, cut)
        best, count = _sampled_levels(*args, np.empty(0, np.int64), np.empty(0, np.int64),
                                      np.empty(0))
        if count:
            us, vs, Es = np.empty(count, np.int64), np.empty(count, np.int64), np.empty(count)
            _sampled_levels(*args, us, vs, Es)
            for u, v, e in zip(us.tolist(), vs.tolist(), Es.tolist(), strict=True):
                with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
                    corr = round_up(round_up(self._sigma_hi[v] - self._sigma_lo[u], DIFF_REL)
                                    / (1.0 + self._sigma_lo[u]), DIFF_REL)
                    r = round_up(self._pair_upper_direct(u, v), DIFF_REL)
                    direct = round_up(max(round_up(r + corr, DIFF_REL), 0.0) / D[u, v], DIFF_REL)
                best = max(best, min(e, float(direct)))
        return float(best)

    def certify(self, distances, epsilon: float, *, pair_log_ratios=None) -> dict:
        """Check that the sampled matrix is ``epsilon``-mDP (same limit as :func:`mdp.certify`).

        Returns
        -------
        dict
            ``method``, ``table_bits``, ``measured_eps`` (rigorous upper bound of the sampled
            matrix's pure level) and ``certified_eps``; goes in ``stats["privacy"]["sampling"]``.

        Raises
        ------
        PrivacyError
            The sampled matrix exceeds ``fl(epsilon (1 + PURE_EPS_RTOL))``.
        """
        epsilon = check_epsilon(epsilon)
        limit = epsilon * (1.0 + PURE_EPS_RTOL)
        measured = self.measure_eps(distances, pair_log_ratios=pair_log_ratios, limit=limit)
        if not measured <= limit:
            raise PrivacyError(
                f"the exactly sampled (row-normalised) matrix is {measured:.17g}-mDP but claims "
                f"{epsilon!r}-mDP (certified limit {limit!r}); the certified rows are too far from "
                "summing to 1 for a pair of nearby points")
        return {"method": f"exact integer alias table ({TABLE_BITS}-bit, exact residual)",
                "table_bits": TABLE_BITS, "measured_eps": measured, "certified_eps": limit,
                "representation": "log" if self.log else "probability"}


def certified_sampler(matrix, distances, epsilon: float, *, log: bool = False,
                      repair: bool = True, points=None):
    """Certify a candidate and build the exact sampler of the certified matrix, in one call.

    ``points``: as :func:`mdp.privacy.verification.certify_matrix` (Euclidean coordinates that allow
    the ``O(n^2 d)`` bounds of a log matrix of the exponential form).

    Returns
    -------
    (certification, sampler) : :class:`mdp.privacy.verification.Certification` (its ``report`` gains
        ``"sampling"``: :meth:`ExactSampler.certify`'s dict) and the :class:`ExactSampler`.

    Raises
    ------
    ParameterError, PrivacyError
        As :func:`mdp.certify`, or when the sampled matrix fails the limit.
    BuildError
        The certified matrix is beyond the exact sampler's range (:data:`MAX_ROW_BITS`).
    """
    cert = certify_matrix(matrix, distances, epsilon, repair=repair, log=log, points=points)
    cert.matrix.setflags(write=False)      # what is sampled: shared with the sampler, not copied
    sampler = ExactSampler(cert.matrix, log=log)
    cert.report["sampling"] = sampler.certify(distances, epsilon,
                                              pair_log_ratios=cert.pair_log_ratios)
    return cert, sampler


def sample_log_row(log_weights, size: int, rng=None) -> tuple[np.ndarray, float]:
    """``size`` exact draws from one row of weights ``exp(L)`` (no matrix, no alias table).

    The weights are evaluated once into exact dyadic numbers ``w_j = mant_j 2^e_j`` (as
    :class:`ExactSampler` does for a log matrix; when every log-weight is at least
    :data:`DIRECT_EXP_MIN` below the row's largest, the float64 ``exp(L_j)`` themselves, all
    normal numbers, five times faster) and each draw is exactly ``w_j / sum w``: an
    integer ``V`` uniform below ``2^62`` picks ``j`` with ``q_j <= 2^62 w_j / sum w`` by a
    search in the cumulative ``q`` (int64, exact); when ``V`` falls beyond ``sum q`` the draw
    comes from the exact residual weights ``2^62 P_j - q_j T`` (Python integers, probability
    at most about ``n 2^-61``), which completes every probability to ``P_j / T`` exactly.
    O(n) per row plus O(log n) per draw.

    Parameters
    ----------
    log_weights : ndarray (n,)
        Natural logarithms of unnormalised weights (``-inf`` for 0; at least one finite).
    size : int
    rng : None, int or numpy.random.Generator

    Returns
    -------
    draws : ndarray of int64 (size,)
    eta : float
        Largest ``|ln w_j - L_j|``: the evaluated weights' distance to ``exp(L)``.
    """
    rng = check_rng(rng)
    L = np.asarray(log_weights, dtype=float).ravel()
    if L.size == 0 or np.isnan(L).any() or not np.isfinite(L).any() or np.any(L == np.inf):
        raise ParameterError("log_weights must hold finite values or -inf, at least one finite")
    L = L - float(L[np.isfinite(L)].max())      # the evaluation's error is measured after this
    n = L.size
    if float(np.min(L, initial=0.0, where=np.isfinite(L))) >= DIRECT_EXP_MIN:
        # every weight is a normal float64: exp(L) itself, within LIBM_RTOL (the bound
        # _exp_extended assumes of exp on its reduced argument), is the exact dyadic weight
        # w_j, and its frexp (taken only if the residual is drawn) gives the same numbers
        vals = np.exp(L)
        mant = expo = None
        eta = np.array([1.1 * LIBM_RTOL])
    else:
        mant, expo, eta = _exp_extended(L)
        with np.errstate(under="ignore"):
            vals = np.ldexp(mant, np.clip(expo, -1100, 1100).astype(np.int32))
    # sum w <= S_hi: a float sum of n non-negative terms in any order is within
    # gamma_{n-1} <= 2 n u of the exact sum (Higham 2002, 4.2); entries below 2^-1020 are
    # counted as that much
    s_hi = float(vals.sum()) * (1 + 2.0 * n * 2.0 ** -53) * (1 + 2.0 ** -50) + n * 2.0 ** -1020
    total = 1 << TABLE_BITS
    with np.errstate(under="ignore"):
        q = np.floor(vals * (float(total) * (1 - 2.0 ** -50) / s_hi)).astype(np.int64)
    cum = np.cumsum(q)
    V = rng.integers(0, total, size=int(size), dtype=np.int64)
    out = np.searchsorted(cum, V, side="right").astype(np.int64)
    spill = np.flatnonzero(out >= n)
    if spill.size:
        if mant is None:
            mant, e = np.frexp(vals)
            expo = e.astype(np.int64)
        pos = mant > 0
        M53 = (mant * 2.0 ** 53).astype(np.int64).tolist()
        E = (expo - 53).tolist()
        g = min(e for e, p in zip(E, pos.tolist(), strict=True) if p)
        P = [m << (e - g) if p else 0 for m, e, p in zip(M53, E, pos.tolist(), strict=True)]
        T = sum(P)
        R = [p * total - qq * T for p, qq in zip(P, q.tolist(), strict=True)]
        if min(R) < 0:
            raise RuntimeError("row sampler weights exceed the exact probabilities (a bug)")
        rcum = list(itertools.accumulate(R))
        for i in spill.tolist():
            out[i] = bisect.bisect_right(rcum, _randbelow(rng, rcum[-1]))
    return out, float(eta.max())
