r"""The exact nearest point of a large vocabulary: a float32 screen, then an exact re-rank.

Answering "which of ``n`` points is nearest to ``z``" for ``m`` queries costs ``m n d``
multiply-adds whatever the method when the queries lie far from the points (Madlib's noisy
vectors: the trees of scikit-learn visit nearly every leaf). This module does that pass in
float32 (half the memory traffic of float64 and twice the SIMD width), keeps every point that
the float32 rounding could make the nearest, and decides among those few exactly.

Screen (float32, BLAS ``sgemm``)
--------------------------------
For a query ``z`` (float64) and a point ``y`` the quantity compared is
:math:`g(z, y) = \lVert y\rVert^2 - 2 z\cdot y = \lVert z - y\rVert^2 - \lVert z\rVert^2`: the
same argmin as the distance. It is one dot product of ``K = d + 1`` terms,
``[z32, 1] . [-2 y32, q]`` with ``q = fl32(||y32||^2)`` (the factor ``-2`` is exact), so a
matrix product of the queries by the points gives a block of ``g`` at once. Its computed value
``g~`` satisfies, for every point,

.. math:: |\tilde g + \lVert z_{32}\rVert^2 - \lVert z - y\rVert^2| \le e(z) =
   \gamma_K (2aR + R^2) + 2u R^2 + \delta (2(a + R) + \delta) + (K + 2)\,2^{-148},

with ``u = 2^-24``, :math:`\gamma_K = Ku/(1 - Ku)` (a dot product of ``K`` terms in any order,
fused multiply-adds included, Higham 2002, section 3.1; BLAS is taken to compute ``sgemm`` in
IEEE float32 arithmetic, as OpenBLAS and MKL do), ``a >= ||z32||``, ``R >= ||y32||`` for
every point, ``2u R^2`` the rounding of ``q``, :math:`\delta \ge \lVert z - z_{32}\rVert +
\lVert y - y_{32}\rVert` the rounding of the coordinates to float32 (``0`` for float32 points;
:math:`|\,\lVert z-y\rVert^2 - \lVert z_{32}-y_{32}\rVert^2| \le \delta(2\lVert z_{32}-y_{32}
\rVert + \delta)`), and the last term the float32 underflow of ``K`` products and two sums.
So if ``M`` is the smallest ``g~`` of the query, the exact nearest point ``j*`` has
``g~_j* <= M + 2 e(z)`` (in every evaluation of ``g~``, whatever the blocking), and every point
with that property is a *candidate*.

The screen runs by blocks of queries and of points (the block of ``g~`` stays in the
processor's cache): the first pass keeps each block's smallest ``g~``, a second pass
recomputes only the blocks whose minimum is within ``2 e(z)`` of the query's ``M`` (one
block per query, nearly always) and lists their candidates. The blocks of queries are shared
among worker threads, each running BLAS on one thread: no thread waits at another's barrier,
so a CPU taken by another process slows the screen by its share only.

Re-rank (float64, then exact rationals)
---------------------------------------
Each candidate's squared distance is computed directly, :math:`s = \sum_k (z_k - y_k)^2`, in
float64: every term is non-negative, so :math:`|\tilde s - s| \le \gamma^{(64)}_{d+2}\,s +
(d + 2)\,2^{-1074}`. The candidate with the smallest ``s~`` is the nearest point when no
other candidate's interval meets its own; otherwise the candidates whose intervals meet are
compared on their exact squared distances (float coordinates are dyadic rationals:
:class:`fractions.Fraction`). Exact ties go to the lowest index (scikit-learn's order for
duplicate points).

A query is answered by an exact float64 pass over all the points (same re-rank) when its
candidates exceed :attr:`ScreenTuning.max_candidates` (near-duplicate points around it), when
its norm or the points' would overflow float32 (over ``2^50``), or when the dimension makes
``K u`` too large for the bound.
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..errors import ParameterError
from ..privacy.rounding import gamma
from ..runtime.threads import available_cpus, limit_pools, pool_threads
from ..validation import check_tuning

__all__ = ["ScreenTuning", "ScreenedNearest", "exact_nearest"]

#: Unit roundoff of float32 and of float64.
U32 = 2.0 ** -24
U64 = 2.0 ** -53
#: Norms above this are not screened in float32 (squares and sums stay far below its range).
SCREEN_MAX_NORM = 2.0 ** 50
#: Candidates of the two nearest per query, as a multiple of ``ScreenTuning.max_candidates``,
#: above which the query takes the float64 pass over every point (the second nearest's
#: threshold comes from another block's minimum, so its lists are longer: up to 83 on GloVe).
SECOND_CANDIDATES_FACTOR = 16
#: Largest float64.
_DBL_MAX = float(np.finfo(np.float64).max)


@dataclass(frozen=True)
class ScreenTuning:
    """Block sizes and limits of :class:`ScreenedNearest`.

    Attributes
    ----------
    query_block : int
        Queries per block (a task of one worker thread).
    point_block : int
        Points per block; ``point_block x query_block`` float32 values (1 MiB by default) stay
        in a core's cache between the product and its minimum (measured on one core, CPU
        seconds per 256 queries against GloVe's 400,000 words: 0.14 at 1024 x 256 and 512 x
        256, 0.165 at 2048 x 128, 0.161 at 256 x 1024).
    max_candidates : int
        Candidates per query above which the query is answered by the exact float64 pass.
    exact_chunk : int
        Points per chunk of the exact float64 pass.
    """

    query_block: int = 256
    point_block: int = 1024
    max_candidates: int = 64
    exact_chunk: int = 65536

    def __post_init__(self):
        check_tuning(self)
        for name in ("query_block", "point_block", "max_candidates", "exact_chunk"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ParameterError(f"{name} must be a positive integer, got {value!r}")


def _exact_squared(z: np.ndarray, y: np.ndarray) -> Fraction:
    """``||z - y||^2`` as an exact rational (float coordinates are dyadic rationals)."""
    return sum(((Fraction(float(a)) - Fraction(float(b))) ** 2 for a, b in zip(z, y, strict=True)),
               Fraction(0))


def _interval(s: np.ndarray, d: int) -> tuple[np.ndarray, np.ndarray]:
    """Bounds ``lo <= s <= hi`` of exact squared distances from their float64 direct sums
    (an overflowed sum is at least the largest float)."""
    # gamma_{d+2} for the sum, 4u for the two roundings of s (1 -/+ g) themselves
    g = gamma(d + 2, U64) * (1 + 1e-6) + 4 * U64
    slack = (d + 4) * 2.0 ** -1074
    finite = np.isfinite(s)
    with np.errstate(over="ignore", invalid="ignore"):
        lo = np.where(finite, s * (1 - g) - slack, _DBL_MAX * (1 - g))
        hi = np.where(finite, s * (1 + g) + slack, np.inf)
    return lo, hi


def _direct(z: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """Float64 ``sum_k (z_k - y_k)^2`` of ``z`` against every row of ``Y``."""
    with np.errstate(over="ignore", invalid="ignore"):
        diff = np.asarray(Y, dtype=np.float64) - z
        return np.einsum("ij,ij->i", diff, diff)


def _decide(z: np.ndarray, Y: np.ndarray, cand: np.ndarray, s: np.ndarray) -> int:
    """The exact nearest of the points ``cand`` (ascending) given their float64 sums ``s``."""
    lo, hi = _interval(s, len(z))
    near = lo <= hi.min()
    if np.count_nonzero(near) == 1:
        return int(cand[np.flatnonzero(near)[0]])
    best = None
    for j in cand[near]:
        key = (_exact_squared(z, Y[j]), int(j))
        if best is None or key < best:
            best = key
    return best[1]


def exact_nearest(z: np.ndarray, Y: np.ndarray, *, chunk: int = 65536) -> int:
    """Index of the point of ``Y`` exactly nearest to ``z`` (ties: lowest index).

    A float64 pass over all the points in chunks of ``chunk`` rows, then the re-rank of the
    module docstring (float64 intervals, exact rationals where they meet).
    """
    z = np.asarray(z, dtype=np.float64)
    best_hi = np.inf
    kept_idx, kept_s = [], []
    for start in range(0, len(Y), chunk):
        s = _direct(z, Y[start:start + chunk])
        lo, hi = _interval(s, len(z))
        best_hi = min(best_hi, float(hi.min()))
        keep = np.flatnonzero(lo <= best_hi)
        kept_idx.append(keep + start)
        kept_s.append(s[keep])
    cand = np.concatenate(kept_idx)
    return _decide(z, Y, cand, np.concatenate(kept_s))


class ScreenedNearest:
    """Exact nearest point of ``points`` to each query: float32 screen, exact re-rank.

    See the module docstring for the bound that makes the screen safe and for the re-rank.

    Parameters
    ----------
    points : ndarray (n, d)
        Finite coordinates (float32 or float64; kept as given, not copied when float32 and
        C-ordered).
    tuning : ScreenTuning, optional

    Attributes
    ----------
    last_stats : dict
        Of the latest :meth:`query`: worker threads, candidates per query (mean, max), queries
        answered by the exact pass and why.
    """

    def __init__(self, points: np.ndarray, tuning: ScreenTuning | None = None):
        self.tuning = tuning or ScreenTuning()
        P = np.asarray(points)
        if P.ndim != 2 or P.shape[0] < 1 or P.shape[1] < 1:
            raise ParameterError(f"points must be an (n, d) array, got shape {P.shape}")
        if not np.all(np.isfinite(P)):
            raise ParameterError("points must be finite")
        self._points = P
        n, d = P.shape
        self.n, self.dim = n, d
        with np.errstate(over="ignore"):
            Y32 = np.asarray(P, dtype=np.float32)
        finite32 = bool(np.all(np.isfinite(Y32)))
        sq = np.zeros(n)
        for s in range(0, n, self.tuning.exact_chunk):       # float64 without a wide copy
            block = Y32[s:s + self.tuning.exact_chunk].astype(np.float64)
            sq[s:s + len(block)] = np.einsum("ij,ij->i", block, block)
        # ||y32||^2 in float64 has relative error gamma_d(64) << u32; the bound's 2u R^2 covers it
        self._R = float(np.sqrt(sq.max())) * (1 + 1e-9) if n else 0.0
        if P.dtype == np.float32:
            self._delta_y = 0.0
        else:
            self._delta_y = (U32 * float(np.sqrt(np.einsum("ij,ij->i", P, P).max()))
                             + math.sqrt(d) * 2.0 ** -149) * (1 + 1e-6)
        K = d + 1
        self.screenable = (finite32 and self._R <= SCREEN_MAX_NORM and K * U32 < 0.01)
        self._aug = None
        if self.screenable:
            aug = np.empty((n, K), dtype=np.float32)
            np.multiply(Y32, np.float32(-2.0), out=aug[:, :d])
            aug[:, d] = sq.astype(np.float32)
            self._aug = aug
        self.last_stats: dict = {}

    # -- the bound ------------------------------------------------------------------------------
    def screen_margin(self, z: np.ndarray) -> np.ndarray:
        """``e(z)`` of the module docstring for each row of ``z`` (float64, rounded up)."""
        d = self.dim
        K = d + 1
        with np.errstate(over="ignore"):
            zn = np.sqrt(np.einsum("ij,ij->i", z, z)) * (1 + 1e-9)
        delta_z = U32 * zn + math.sqrt(d) * 2.0 ** -149
        a = zn + delta_z
        R = self._R
        delta = delta_z + self._delta_y
        e = (gamma(K, U32) * (2 * a * R + R * R) + 2 * U32 * R * R
             + delta * (2 * (a + R) + delta) + (K + 2) * 2.0 ** -148)
        return e * (1 + 1e-6)

    # -- queries --------------------------------------------------------------------------------
    def _screen_block(self, ZT: np.ndarray, thr_margin: np.ndarray, rank: int = 1):
        """Candidates ``(query, point)`` of one block of queries (``ZT``: its ``[z32, 1]`` as
        columns) and the block's minima. Points by queries: 17% less CPU than queries by
        points in the product, measured.

        ``rank = 2`` lists the candidates for the two nearest points: the threshold is the
        second smallest of the blocks' minima (two distinct points, so the exact second
        smallest value is at most the larger of their exact values) plus ``2 e(z)``."""
        tb = self.tuning.point_block
        starts = range(0, self.n, tb)
        mins = np.empty((len(starts), ZT.shape[1]), dtype=np.float32)
        aug = self._aug
        for t, s in enumerate(starts):
            G = aug[s:s + tb] @ ZT
            G.min(axis=0, out=mins[t])
        if rank == 1:
            M = mins.min(axis=0).astype(np.float64)
        else:
            M = np.partition(mins, 1, axis=0)[1].astype(np.float64)
        thr = M + 2.0 * thr_margin
        t_flag, q_flag = np.nonzero(mins <= thr[None, :])
        rows, cols = [], []
        for t in np.unique(t_flag):
            qs = q_flag[t_flag == t]
            s = int(t) * tb
            H = aug[s:s + tb] @ ZT[:, qs]
            c, r = np.nonzero(H <= thr[qs][None, :])
            rows.append(qs[r])
            cols.append(c + s)
        return np.concatenate(rows), np.concatenate(cols)

    def _checked_queries(self, z) -> np.ndarray:
        Z = np.atleast_2d(np.asarray(z, dtype=np.float64))
        if Z.ndim != 2 or Z.shape[1] != self.dim:
            raise ParameterError(f"queries must have {self.dim} coordinates, got shape {Z.shape}")
        if not np.all(np.isfinite(Z)):
            bad = int(np.flatnonzero(~np.isfinite(Z).all(axis=1))[0])
            raise ParameterError(f"query {bad} holds NaN or inf")
        return Z

    def _screenable_queries(self, Z: np.ndarray):
        """The bound ``e(z)`` and which queries the float32 screen may answer."""
        margin = self.screen_margin(Z) if self.screenable else None
        with np.errstate(over="ignore"):
            ok = (np.zeros(len(Z), bool) if margin is None
                  else np.sqrt(np.einsum("ij,ij->i", Z, Z)) <= SCREEN_MAX_NORM)
        return margin, ok

    def _screen(self, Z: np.ndarray, sel: np.ndarray, margin: np.ndarray, rank: int, stats: dict):
        """Candidate pairs ``(query, point)`` (sorted) of the queries ``sel`` and their counts,
        the blocks of queries shared among worker threads."""
        qb = self.tuning.query_block
        ZT = np.empty((self.dim + 1, len(sel)), dtype=np.float32)
        ZT[:self.dim] = Z[sel].T
        ZT[self.dim] = 1.0
        blocks = [(s, min(s + qb, len(sel))) for s in range(0, len(sel), qb)]
        workers = pool_threads(min(available_cpus(), len(blocks)))
        stats["workers"] = workers

        def task(bounds):
            a, b = bounds
            r, c = self._screen_block(np.ascontiguousarray(ZT[:, a:b]), margin[sel[a:b]], rank)
            return r + a, c

        with limit_pools(1, "blas"):
            if workers > 1:
                with ThreadPoolExecutor(max_workers=workers) as pool:
                    parts = list(pool.map(task, blocks))
            else:
                parts = [task(bnd) for bnd in blocks]
        rows = np.concatenate([p[0] for p in parts])
        cols = np.concatenate([p[1] for p in parts])
        order = np.lexsort((cols, rows))
        rows, cols = rows[order], cols[order]
        counts = np.bincount(rows, minlength=len(sel))
        stats["candidates_mean"] = float(counts.mean())
        stats["candidates_max"] = int(counts.max())
        return rows, cols, counts

    def query(self, z) -> np.ndarray:
        """Index of the exactly nearest point to each row of ``z`` (ties: the lowest index).

        Parameters
        ----------
        z : array-like (m, d)
            Finite query points; taken in float64 (not rounded to the points' dtype).

        Raises
        ------
        ParameterError
            Wrong shape or a coordinate that is NaN or infinite.
        """
        Z = self._checked_queries(z)
        m = len(Z)
        out = np.full(m, -1, dtype=np.int64)
        stats = {"queries": m, "workers": 0, "candidates_mean": 0.0, "candidates_max": 0,
                 "exact_pass": {"too_many_candidates": 0, "not_screenable": 0}}
        margin, ok = self._screenable_queries(Z)
        stats["exact_pass"]["not_screenable"] = int(m - ok.sum())
        sel = np.flatnonzero(ok)
        if len(sel):
            rows, cols, counts = self._screen(Z, sel, margin, 1, stats)
            too_many = counts > self.tuning.max_candidates
            stats["exact_pass"]["too_many_candidates"] = int(too_many.sum())
            keep = ~too_many[rows]
            out[sel] = self._rerank(Z[sel], rows[keep], cols[keep], counts * ~too_many)
            ok[sel[too_many]] = False
        for i in np.flatnonzero(~ok):
            out[i] = exact_nearest(Z[i], self._points, chunk=self.tuning.exact_chunk)
        self.last_stats = stats
        return out

    def query_two(self, z) -> tuple[np.ndarray, np.ndarray]:
        """The two nearest points of each row of ``z`` and their distances, in order.

        The same float32 screen with the threshold of the second nearest (``rank = 2`` of
        :meth:`_screen_block`), then the candidates ranked on their float64 distances (ties:
        the lowest index); queries the screen cannot answer take a float64 pass over all the
        points. The ranking is on float64 sums, not exact rationals: points whose distances
        differ by less than about ``1e-15`` relative may be taken in either order.

        Returns
        -------
        indices : ndarray (m, 2) of int64
        distances : ndarray (m, 2)
        """
        Z = self._checked_queries(z)
        if self.n < 2:
            raise ParameterError("the two nearest points need at least two points")
        m = len(Z)
        idx = np.empty((m, 2), dtype=np.int64)
        dist = np.empty((m, 2))
        stats = {"queries": m, "workers": 0, "candidates_mean": 0.0, "candidates_max": 0,
                 "exact_pass": {"too_many_candidates": 0, "not_screenable": 0}}
        margin, ok = self._screenable_queries(Z)
        if self.n <= self.tuning.point_block:     # one block: its two smallest are the answer
            ok[:] = False
        stats["exact_pass"]["not_screenable"] = int(m - ok.sum())
        sel = np.flatnonzero(ok)
        if len(sel):
            rows, cols, counts = self._screen(Z, sel, margin, 2, stats)
            # no exact rationals here: a longer list costs only its float64 distances
            too_many = counts > SECOND_CANDIDATES_FACTOR * self.tuning.max_candidates
            stats["exact_pass"]["too_many_candidates"] = int(too_many.sum())
            keep = ~too_many[rows]
            rows, cols = rows[keep], cols[keep]
            with np.errstate(over="ignore", invalid="ignore"):
                diff = Z[sel][rows] - self._points[cols].astype(np.float64)
                s = np.einsum("ij,ij->i", diff, diff)
            order = np.lexsort((cols, s, rows))
            rows, cols, s = rows[order], cols[order], s[order]
            first = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]])
            q = sel[rows[first]]
            idx[q, 0], idx[q, 1] = cols[first], cols[first + 1]
            dist[q, 0], dist[q, 1] = np.sqrt(s[first]), np.sqrt(s[first + 1])
            ok[sel[too_many]] = False
        chunk = self.tuning.exact_chunk
        for i in np.flatnonzero(~ok):
            s_all = np.concatenate([_direct(Z[i], self._points[a:a + chunk])
                                    for a in range(0, self.n, chunk)])
            few = np.argpartition(s_all, 1)[:2]
            near = np.flatnonzero(s_all <= s_all[few].max())       # the two, with their ties
            top = near[np.lexsort((near, s_all[near]))][:2]
            idx[i] = top
            dist[i] = np.sqrt(s_all[top])
        self.last_stats = stats
        return idx, dist

    def _rerank(self, Z: np.ndarray, rows: np.ndarray, cols: np.ndarray,
                counts: np.ndarray) -> np.ndarray:
        """Exact nearest among each query's candidates (pairs sorted by query, then point);
        ``-1`` for queries without candidates here."""
        out = np.full(len(Z), -1, dtype=np.int64)
        if len(rows) == 0:
            return out
        d = self.dim
        with np.errstate(over="ignore", invalid="ignore"):
            diff = Z[rows] - self._points[cols].astype(np.float64)
            s = np.einsum("ij,ij->i", diff, diff)
        lo, hi = _interval(s, d)
        starts = np.concatenate([[0], np.cumsum(counts)])[:-1]
        has = counts > 0
        best_hi = np.full(len(Z), np.inf)
        best_hi[has] = np.minimum.reduceat(hi, starts[has])
        near = lo <= best_hi[rows]
        n_near = np.bincount(rows, weights=near, minlength=len(Z)).astype(np.int64)
        single = near & (n_near[rows] == 1)
        out[rows[single]] = cols[single]
        for q in np.flatnonzero(has & (n_near != 1)):
            pick = rows == q
            out[q] = _decide(Z[q], self._points, cols[pick], s[pick])
        return out
