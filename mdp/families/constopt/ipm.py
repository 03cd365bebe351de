r"""ConstOPTMech's LP by a structured interior point method, with a certified gap (``gap=``).

The LP of :mod:`mdp.families.constopt.formulation` (Imola et al. 2022, section 3.2) has ``n`` weights ``Y``,
``n r`` free entries ``M_uv`` and the bound ``k``. Its ``2n`` loss and row-sum rows are dense over
``Y``. Every other row is local: a free entry's two bounds against its column's ``Y_v``, and the
free-free rows of one column. HiGHS factorises this as a general sparse LP (the dense rows cost
it ~1e10 flops per iteration at n = 1000, ``docs/design/lp.md``). This module exploits the
structure instead.

**Newton systems.** The Mehrotra predictor-corrector method of :mod:`mdp.lp.interior_point`
(Wright 1997, ch. 10) on
``min k`` s.t. ``x >= 0``, ``L x >= h`` (linking rows), ``B x >= 0`` (local rows) solves at every
iteration ``N dx = r`` with ``N = B^T D_B B + W X^{-1} + L^T D_L L``. The free entries in no
free-free row (set ``S``) appear only in the two linking rows of their matrix row ``u``, in their
own bound rows and on the diagonal. They are eliminated row by row, after the substitution
``z_j = x_j + gamma_j Y_v(j)`` that absorbs the bound rows; what is left is a dense Schur
complement on ``T = (Y, k, free entries in free-free rows)``:

.. math:: S_T = \tilde L^\top \operatorname{blockdiag}_u(M_u) \tilde L + (\text{sparse}),
          \qquad M_u = (D_u^{-1} + C_u^\top \Delta_u^{-1} C_u)^{-1} \ (2 \times 2),

one GEMM and one dense Cholesky factorisation per iteration (:mod:`mdp.lp.dense`: on the CPU,
or on a GPU where CuPy finds one). Every term is assembled as a sum of
non-negative (Gram) terms: ``det`` of ``M_u^{-1}`` and the bound rows' remainder on ``Y`` use
Lagrange's identity. Forming the same matrix by subtraction (``N_TT - N_TS N_SS^{-1} N_ST``) or
inverting per-column blocks lost positive definiteness near the optimum (measured in
``docs/design/lp.md``).

**Free-free rows and the certificate.** The first solve leaves the free-free rows out. That is a
relaxation, so a dual point of it bounds the full optimum from below. Its solution is made
feasible for the full LP by :func:`mdp.families.constopt.formulation.lipschitz_log_matrix`, which makes every
privacy row at ``e`` hold exactly, and by scaling the row sums up to 1. While the certified
relative gap of the result exceeds ``gap``, the violated free-free rows (and those binding in
:func:`fixed_weights_solution`'s completion) are added and the LP is solved again. When no row
is violated, the solution is the full LP's optimum to the method's tolerance. The entries of
those rows join ``T``; :mod:`mdp.lp.dense` eliminates them by a sparse factorisation first.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np
import scipy.sparse as sp
from scipy.special import logsumexp

from ...errors import SolverError, SolverTimeout
from ...lp import SparseLP
from ...lp.arrays import DETECT, GPUChoice
from ...lp.dense import (
    GPU_MIN_SIZE,
    CPUSchur,
    SparseColumns,
    blas_threads,
    matvec,
    rmatvec,
    schur_factor,
)
from ...lp.interior_point import IPMSettings, Scores, run_interior_point
from ...lp.reporting import LPProgress, report
from ...lp.rowgen import warm_rows
from ...lp.solver_entry import solver_entry
from .formulation import free_free_pairs, lipschitz_log_matrix, log_bound_factors

__all__ = ["ConstOptLP", "RowBlockResult", "RowBlockTooDense", "solve_row_block_ipm", "default_start", "warm_start", "certified_lower_bound",
           "free_free_pairs", "feasible_log_matrix", "solve_constopt_gap"]


class RowBlockTooDense(SolverError):
    """Round 0 of :func:`solve_constopt_gap` violates more free-free rows than its caller allows."""


#: Relative violation above which a free-free row joins the next round. Smaller violations are at
#: the interior point method's accuracy; the repair of :func:`feasible_log_matrix` removes them and
#: the certified gap accounts for what that costs.
VIOLATION_RTOL = 1e-6
#: The interior point method returns its best iterate when it has not improved for
#: ``STALL_ITERATIONS`` iterations, or when the factorisation fails, and its relative gap and
#: infeasibilities are all below ``STALL_ACCEPT`` (the bound of :func:`certified_lower_bound` stays
#: rigorous whatever they are).
STALL_ITERATIONS = 15
STALL_ACCEPT = 1e-6
#: A round of :func:`solve_constopt_gap` keeps its first iterate within this relative gap and
#: these infeasibilities to start the next round from (1e-2 did as well, 1e-4 and 1e-5 worse:
#: ``docs/design/lp.md``).
KEEP_GAP = 1e-3
#: Tolerance of each round of :func:`solve_constopt_gap`: ``gap / 100`` clipped to
#: ``[ROUND_TOL_MIN, ROUND_TOL]``. Certifying 1e-6 needs no more than 1e-8; at 1e-9 the dual
#: residual of some rounds hovers at 2e-9 to 4e-9 for ten iterations (Geolife n = 1000: 98
#: against 86 iterations, 28.1 against 25.2 s, certified 1.1e-7 against 1.5e-7).
ROUND_TOL = 1e-8
ROUND_TOL_MIN = 1e-10
#: A round of :func:`solve_constopt_gap` that adds more than this many free-free rows per row of
#: the previous round's LP starts cold (``ConstOPTTuning.warm_added_ratio``, with its figures).
WARM_ADDED_RATIO = 1.0
#: Every multiplier of :func:`default_start` (1 and 1e-3 took more iterations on Geolife cells).
START_DUAL = 1e-2
#: The iteration's rules (:mod:`mdp.lp.interior_point`): Mehrotra's corrector alone (Gondzio's
#: correctors are the column-block method's); ``tol`` and ``max_iter`` are the caller's.
SETTINGS = IPMSettings(tol=1e-9, max_iter=200, stall_accept=STALL_ACCEPT,
                       stall_iterations=STALL_ITERATIONS, stall_factor=1.0, correctors=0,
                       step_factor=0.99, late_step_factor=0.995, late_gap=1e-6)


class ConstOptLP:
    r"""The ConstOPTMech LP at level ``e`` in the form solved here.

    Variables ``x = (Y / s, M_free, k)`` (free entries in the row-major order of ``free``), all
    ``>= 0``; ``min k``. Each weight is scaled by ``s_v = 1 / max_w (D_wv + lam) e^{-e D_wv}``
    over the fixed entries of its column (:attr:`y_scale`; :meth:`weights` gives ``Y``), so
    that every weight's largest linking coefficient is 1: the interior point method's dual
    residual is then relative to that scale, and :func:`certified_lower_bound`, which multiplies
    a weight's reduced cost by its a-priori bound ``k / max_w (D_wv + lam) e^{-e D_wv}``,
    stays tight where all of a column's fixed entries are far (two scales of distance, eps x
    median 3, n = 500: reduced costs of -5e-15 times bounds of 3e14 gave a negative bound).
    Linking rows ``L x >= h``: ``k - sum_v (D_wv + lam) M_wv >= 0`` and ``sum_v M_wv >= 1`` for
    every row ``w``. Local rows ``a x_i + b x_j >= 0``, scaled so that
    their larger coefficient is 1: the bounds ``lo_uv Y_v <= M_uv <= hi_uv Y_v`` of every free
    entry and the free-free rows ``M_u'v >= e^{-e D_uu'} M_uv`` for the pairs given.

    Parameters
    ----------
    distances : ndarray (n, n)
    e : float
        Privacy level of the LP (ConstOPTMech solves at ``epsilon / 2``).
    free : bool ndarray (n, n)
    lam : float
    pairs : (ndarray, ndarray) or None
        Free-free rows as pairs of free-entry indices ``(j, j')``: row
        ``M_j' - e^{-e D} M_j >= 0``; ``None``: none.
    bound_factors : (ndarray, ndarray), optional
        ``(log hi, log lo)`` of the free entries' bounds (``formulation.log_bound_factors``) where
        already at hand: they depend on ``distances``, ``e`` and ``free`` only.
    """

    def __init__(self, distances: np.ndarray, e: float, free: np.ndarray, lam: float,
                 pairs: tuple[np.ndarray, np.ndarray] | None = None, *,
                 bound_factors: tuple[np.ndarray, np.ndarray] | None = None):
        D = np.asarray(distances, dtype=float)
        n = D.shape[0]
        fu, fv = np.nonzero(free)
        f = len(fu)
        self.n, self.f, self.nv, self.kcol = n, f, n + f + 1, n + f
        self.fu, self.fv, self.D, self.e, self.lam = fu, fv, D, float(e), float(lam)
        self.free = np.asarray(free, dtype=bool)
        with np.errstate(under="ignore"):
            E = np.exp(-e * D)
        fixed = ~np.asarray(free, dtype=bool)
        self.W = D + lam
        self.L_Y = np.empty((2 * n, n))
        np.multiply(-self.W * E, fixed, out=self.L_Y[:n])
        top = np.max(-self.L_Y[:n], axis=0)
        #: ``s``: the weight ``Y_v`` is ``s_v x_v`` (1 where a column's fixed entries all vanish)
        self.y_scale = np.where(top > 0, 1.0 / np.where(top > 0, top, 1.0), 1.0)
        self.L_Y[:n] *= self.y_scale
        np.multiply(E * self.y_scale, fixed, out=self.L_Y[n:])
        self.a = -self.W[fu, fv]
        self.h = np.r_[np.zeros(n), np.ones(n)]
        self.c = np.zeros(self.nv)
        self.c[self.kcol] = 1.0
        ids = n + np.arange(f)
        log_hi, log_lo = log_bound_factors(D, free, fu, fv, e) if bound_factors is None else bound_factors
        self.log_hi, self.log_lo = log_hi, log_lo
        # the bound rows on the scaled weights: hi s Y / s and lo s Y / s
        log_s = np.log(self.y_scale)[fv]
        log_hi, log_lo = log_hi + log_s, log_lo + log_s
        li, lj, la, lb = [], [], [], []
        with np.errstate(under="ignore", over="ignore"):
            sel = np.nonzero(np.isfinite(log_hi))[0]          # hi Y_v - M_uv >= 0
            li.append(fv[sel])
            lj.append(ids[sel])
            la.append(np.exp(np.minimum(log_hi[sel], 0.0)))
            lb.append(-np.exp(-np.maximum(log_hi[sel], 0.0)))
            sel = np.nonzero(np.isfinite(log_lo))[0]          # M_uv - lo Y_v >= 0 (lo <= 1)
            li.append(ids[sel])
            lj.append(fv[sel])
            la.append(np.ones(len(sel)))
            lb.append(-np.exp(log_lo[sel]))
        self.n_bound = int(sum(len(x) for x in li))
        self.pairs = (np.zeros(0, np.int64), np.zeros(0, np.int64)) if pairs is None else pairs
        pa, pb = self.pairs
        li.append(ids[pa])
        lj.append(ids[pb])
        with np.errstate(under="ignore"):
            la.append(-np.exp(-e * D[fu[pa], fu[pb]]))
        lb.append(np.ones(len(pa)))
        self.li, self.lj = np.concatenate(li), np.concatenate(lj)
        self.la, self.lb = np.concatenate(la), np.concatenate(lb)
        self.mB = len(self.li)

    def weights(self, x: np.ndarray) -> np.ndarray:
        """The weights ``Y`` of a point ``x`` of the LP."""
        return self.y_scale * x[:self.n]

    def linking(self, x: np.ndarray) -> np.ndarray:
        """``L x``."""
        n, f = self.n, self.f
        m = x[n:n + f]
        out = matvec(self.L_Y, x[:n])
        out[:n] += np.bincount(self.fu, self.a * m, minlength=n) + x[self.kcol]
        out[n:] += np.bincount(self.fu, m, minlength=n)
        return out

    def linking_t(self, y: np.ndarray) -> np.ndarray:
        """``L^T y``."""
        n, f = self.n, self.f
        out = np.empty(self.nv)
        out[:n] = rmatvec(self.L_Y, y)
        out[n:n + f] = self.a * y[self.fu] + y[n + self.fu]
        out[self.kcol] = y[:n].sum()
        return out

    def local(self, x: np.ndarray) -> np.ndarray:
        """``B x``."""
        return self.la * x[self.li] + self.lb * x[self.lj]

    def local_t(self, z: np.ndarray) -> np.ndarray:
        """``B^T z``."""
        return (np.bincount(self.li, self.la * z, minlength=self.nv)
                + np.bincount(self.lj, self.lb * z, minlength=self.nv))


@dataclass
class RowBlockResult:
    """Primal ``x``, duals ``y_link`` / ``y_local`` / ``w`` and convergence figures."""

    x: np.ndarray
    y_link: np.ndarray
    y_local: np.ndarray
    w: np.ndarray
    objective: float
    dual_objective: float
    iterations: int
    relative_gap: float
    primal_infeasibility: float
    dual_infeasibility: float
    seconds: float
    dense_size: int
    stats: dict = field(default_factory=dict)
    #: ``(x, w, s_link, z_link, s_local, z_local)`` of the first iterate whose relative gap and
    #: infeasibilities were all below ``keep_gap`` (a start for the next round), or ``None``
    warm_point: tuple | None = None


class _RowBlockFactor:
    """Index maps of the elimination (fixed for one LP) and the factorisation of one iteration."""

    def __init__(self, lp: ConstOptLP, *, gpu_from: int = GPU_MIN_SIZE, gpu: GPUChoice = DETECT):
        n, f, nv = lp.n, lp.f, lp.nv
        is_T = np.zeros(nv, bool)
        is_T[:n] = True
        is_T[lp.kcol] = True
        ff = np.arange(lp.n_bound, lp.mB)
        is_T[lp.li[ff]] = True
        is_T[lp.lj[ff]] = True
        self.T, self.S = np.nonzero(is_T)[0], np.nonzero(~is_T)[0]
        nT, nS = len(self.T), len(self.S)
        posT = np.full(nv, -1)
        posT[self.T] = np.arange(nT)
        sidx = np.full(nv, -1)
        sidx[self.S] = np.arange(nS)
        jS = self.S - n
        self.uS, self.aS = lp.fu[jS], lp.a[jS]
        self.tS = posT[lp.fv[jS]]                     # each S entry's Y_v, as a T index
        L_T = np.zeros((2 * n, nT))
        L_T[:, :n] = lp.L_Y                           # Y are the first n variables of T
        L_T[:n, posT[lp.kcol]] = 1.0
        jT = self.T[(self.T >= n) & (self.T < n + f)] - n
        L_T[lp.fu[jT], posT[n + jT]] = lp.a[jT]
        L_T[n + lp.fu[jT], posT[n + jT]] = 1.0
        # the free entries of T touch two linking rows each and, through the free-free rows,
        # entries of their own column: eliminated first, in small blocks (mdp.lp.dense)
        pa, pb = lp.pairs
        self.sparse = SparseColumns(posT[n + jT], lp.fu[jT], (posT[n + pa], posT[n + pb]))
        self.schur = schur_factor(L_T, self.sparse, gpu_from=gpu_from, gpu=gpu)
        # bound rows of S entries (at most two each: hi and lo), with the coefficient on M (p)
        # and on Y (q)
        rows = np.arange(lp.n_bound)
        m_first = lp.li[rows] >= n
        mvar = np.where(m_first, lp.li[rows], lp.lj[rows])
        on_S = ~is_T[mvar]
        rows, mvar = rows[on_S], mvar[on_S]
        p = np.where(m_first[on_S], lp.la[rows], lp.lb[rows])
        q = np.where(m_first[on_S], lp.lb[rows], lp.la[rows])
        s_of = sidx[mvar]
        first = np.ones(len(s_of), bool)
        order = np.argsort(s_of, kind="stable")
        first[order[1:]] = s_of[order[1:]] != s_of[order[:-1]]
        if np.any(np.bincount(s_of, minlength=nS) > 2):
            raise SolverError("a free entry has more than two bound rows")
        self.slot_rows = [rows[first], rows[~first]]
        self.slot_s = [s_of[first], s_of[~first]]
        self.slot_pq = [(p[first], q[first]), (p[~first], q[~first])]
        # local rows between T variables only (free-free rows, bounds of T entries)
        tonly = np.nonzero(is_T[lp.li] & is_T[lp.lj])[0]
        self.tonly = tonly
        self.ti, self.tj = posT[lp.li[tonly]], posT[lp.lj[tonly]]
        self.ta, self.tb = lp.la[tonly], lp.lb[tonly]
        # S entries grouped by matrix row, groups of equal size
        order = np.argsort(self.uS, kind="stable")
        cnt = np.bincount(self.uS, minlength=n)
        starts = np.r_[0, np.cumsum(cnt)]
        self.groups = []
        for s in np.unique(cnt[cnt > 0]):
            us = np.nonzero(cnt == s)[0]
            self.groups.append((us, order[starts[us][:, None] + np.arange(s)[None, :]]))
        self.n, self.nv, self.nT, self.nS = n, nv, nT, nS

    def factor(self, dL: np.ndarray, dB: np.ndarray, diag: np.ndarray) -> None:
        n, uS, aS, tS = self.n, self.uS, self.aS, self.tS
        d1, d2 = dL[:n], dL[n:]
        delta = diag[self.S]
        coef = [np.zeros(self.nS) for _ in range(6)]     # b1, p1, q1, b2, p2, q2
        for k, (rows, s, (p, q)) in enumerate(zip(self.slot_rows, self.slot_s, self.slot_pq, strict=True)):
            coef[3 * k][s], coef[3 * k + 1][s], coef[3 * k + 2][s] = dB[rows], p, q
        b1, p1, q1, b2, p2, q2 = coef
        A = b1 * p1 * p1 + b2 * p2 * p2 + delta
        gam = (b1 * p1 * q1 + b2 * p2 * q2) / A
        # what the bound rows leave on Y_v: C - B^2 / A as a sum of non-negative terms
        rem = (b1 * b2 * (p1 * q2 - p2 * q1) ** 2 + delta * (b1 * q1 * q1 + b2 * q2 * q2)) / A
        update = (np.r_[uS, n + uS], np.r_[tS, tS], np.r_[-aS * gam, -gam])
        ia = 1.0 / A
        sum_aa = np.bincount(uS, aS * aS * ia, minlength=n)
        sum_1 = np.bincount(uS, ia, minlength=n)
        s22 = 1.0 / d2 + sum_1
        s12 = np.bincount(uS, aS * ia, minlength=n)
        det = 1.0 / (d1 * d2) + sum_1 / d1 + sum_aa / d2
        for us, mem in self.groups:
            av, iv = aS[mem], ia[mem]
            diff = av[:, :, None] - av[:, None, :]
            det[us] += 0.5 * np.einsum("gij,gi,gj->g", diff * diff, iv, iv)
        dd = dB[self.tonly]
        ti, tj, ta, tb = self.ti, self.tj, self.ta, self.tb
        diagT = np.arange(self.nT)
        extra = (np.r_[diagT, tS, ti, tj, ti, tj], np.r_[diagT, tS, tj, ti, ti, tj],
                 np.r_[diag[self.T], rem, dd * ta * tb, dd * ta * tb, dd * ta * ta, dd * tb * tb])
        # M_u = [[s22, -s12], [-s12, s11]] / det, det = s11 s22 - s12^2 (as the sum above), has
        # the Cholesky factor [[a, b], [0, c]] below: no subtraction, so S stays a Gram matrix
        chol = (np.sqrt(s22 / det), -s12 / np.sqrt(det * s22), 1.0 / np.sqrt(s22))
        try:
            self.schur.factor(update, *chol, extra)
        except MemoryError:
            if self.schur.device == "cpu":
                raise
            # the GPU ran out of memory (a larger dense part in a later round): the CPU goes on
            self.schur = CPUSchur(self.schur.host, self.schur.sparse)
            self.schur.factor(update, *chol, extra)
        try:
            facs = []
            for us, mem in self.groups:
                s = mem.shape[1]
                av = aS[mem]
                R = d1[us][:, None, None] * av[:, :, None] * av[:, None, :] + d2[us][:, None, None]
                R[:, np.arange(s), np.arange(s)] += A[mem]
                facs.append(np.linalg.cholesky(R))
        except (np.linalg.LinAlgError, ValueError) as exc:
            raise SolverError("the interior point method's normal matrix lost positive "
                              "definiteness") from exc
        self.facs, self.gam, self.d1, self.d2 = facs, gam, d1, d2

    def _nss_inv(self, v: np.ndarray) -> np.ndarray:
        out = np.empty_like(v)
        for (_, mem), Lc in zip(self.groups, self.facs, strict=True):
            y = np.linalg.solve(Lc, v[mem][:, :, None])
            out[mem] = np.linalg.solve(np.swapaxes(Lc, 1, 2), y)[:, :, 0]
        return out

    def solve(self, r: np.ndarray) -> np.ndarray:
        """``N^{-1} r`` by the elimination of :meth:`factor`."""
        n, uS, aS, tS, gam, d1, d2 = self.n, self.uS, self.aS, self.tS, self.gam, self.d1, self.d2
        rS = r[self.S]
        rT = r[self.T].copy()
        np.add.at(rT, tS, -gam * rS)
        yS = self._nss_inv(rS)
        cy = np.r_[d1 * np.bincount(uS, aS * yS, minlength=n), d2 * np.bincount(uS, yS, minlength=n)]
        dT, lam = self.schur.solve(rT, cy)
        zS = yS - self._nss_inv(aS * d1[uS] * lam[uS] + d2[uS] * lam[n + uS])
        out = np.empty(self.nv)
        out[self.T] = dT
        out[self.S] = zS - gam * dT[tS]
        return out


@dataclass
class _RowBlockPoint:
    """A primal-dual iterate (or a direction): ``x``, the multipliers ``w`` of ``x >= 0``, slacks
    and multipliers of the linking and local rows."""

    x: np.ndarray
    w: np.ndarray
    sL: np.ndarray
    zL: np.ndarray
    sB: np.ndarray
    zB: np.ndarray

    def astuple(self) -> tuple:
        """``(x, w, s_link, z_link, s_local, z_local)``, as :func:`default_start` gives it."""
        return self.x, self.w, self.sL, self.zL, self.sB, self.zB


class _RowBlockSystem:
    """The Newton system of :class:`ConstOptLP` for
    :func:`mdp.lp.interior_point.run_interior_point`, solved by :class:`_RowBlockFactor`.

    From ``G dx - ds = r_p``, ``G^T dz + dw = r_d``, ``Z ds + S dz = rs``, ``W dx + X dw = rxw``:
    ``N dx = G^T ((rs + Z r_p) / S) + rxw / X - r_d``, then back-substitution.
    """

    name = "the row-block interior point method"

    def __init__(self, lp: ConstOptLP, fac: _RowBlockFactor):
        self.lp, self.fac = lp, fac
        self.nh, self.nc = 1.0 + np.linalg.norm(lp.h), 1.0 + np.linalg.norm(lp.c)
        self.m_all = 2 * lp.n + lp.mB + lp.nv

    def default_start(self) -> _RowBlockPoint:
        return _RowBlockPoint(*default_start(self.lp))

    def measure(self, p: _RowBlockPoint) -> tuple[tuple, Scores]:
        lp = self.lp
        rpL = lp.h - lp.linking(p.x) + p.sL
        rpB = -lp.local(p.x) + p.sB
        rd = lp.c - lp.linking_t(p.zL) - lp.local_t(p.zB) - p.w
        pobj, dobj = float(lp.c @ p.x), float(lp.h @ p.zL)
        gap = abs(pobj - dobj) / (1.0 + abs(pobj))
        pinf = float(np.sqrt(rpL @ rpL + rpB @ rpB)) / self.nh
        dinf = float(np.linalg.norm(rd)) / self.nc
        return (rpL, rpB, rd), Scores(gap=gap, primal=pinf, dual=dinf, objective=pobj,
                                      dual_objective=dobj)

    def mu(self, p: _RowBlockPoint) -> float:
        return float(p.sL @ p.zL + p.sB @ p.zB + p.x @ p.w) / self.m_all

    def pairs(self, p: _RowBlockPoint, d: _RowBlockPoint) -> tuple:
        return (p.sL, d.sL, p.zL, d.zL), (p.sB, d.sB, p.zB, d.zB), (p.x, d.x, p.w, d.w)

    def moved(self, p: _RowBlockPoint, d: _RowBlockPoint, ap: float, ad: float) -> _RowBlockPoint:
        return _RowBlockPoint(x=p.x + ap * d.x, w=p.w + ad * d.w, sL=p.sL + ap * d.sL,
                              zL=p.zL + ad * d.zL, sB=p.sB + ap * d.sB, zB=p.zB + ad * d.zB)

    def factor(self, p: _RowBlockPoint, score: float) -> None:
        self.fac.factor(p.zL / p.sL, p.zB / p.sB, p.w / p.x)

    def newton(self, p: _RowBlockPoint, residuals: tuple, targets: tuple,
               predictor: bool) -> _RowBlockPoint:
        lp = self.lp
        rpL, rpB, rd = residuals
        rsL, rsB, rxw = targets
        r = (lp.linking_t((rsL + p.zL * rpL) / p.sL) + lp.local_t((rsB + p.zB * rpB) / p.sB)
             + rxw / p.x - rd)
        dx = self.fac.solve(r)
        dsL, dsB = lp.linking(dx) - rpL, lp.local(dx) - rpB
        return _RowBlockPoint(x=dx, w=(rxw - p.w * dx) / p.x, sL=dsL, zL=(rsL - p.zL * dsL) / p.sL,
                              sB=dsB, zB=(rsB - p.zB * dsB) / p.sB)


def default_start(lp: ConstOptLP) -> tuple:
    r"""The cold starting point ``(x, w, s_link, z_link, s_local, z_local)`` of the method.

    Every weight and free entry at ``alpha``, the inverse of the median row sum of the all-ones
    matrix (so that the row sums are about 1, as at the optimum), ``k`` at the largest loss of
    that matrix, each slack at its row's value (floored at ``1e-2 max(1, largest)`` for the
    linking rows and ``alpha`` for the local ones) and every multiplier at ``START_DUAL``. Against
    all ones: 23 / 33 / 35 / 40 iterations instead of 38 / 48 / 53 / 53 on random points
    (n = 300), GloVe (n = 1000) and Geolife cells (n = 1000, 2000) (``docs/design/lp.md``).
    """
    n, nv = lp.n, lp.nv
    one = np.ones(nv)
    one[lp.kcol] = 0.0
    sums = lp.linking(one)[n:]
    alpha = 1.0 / float(np.median(sums)) if np.median(sums) > 0 else 1.0
    x = np.full(nv, alpha)
    x[lp.kcol] = 0.0
    x[lp.kcol] = max(float(np.max(-lp.linking(x)[:n])), alpha)
    r = lp.linking(x) - lp.h
    sL = np.maximum(r, 1e-2 * max(1.0, float(r.max())))
    sB = np.maximum(lp.local(x), alpha)
    return (x, np.full(nv, START_DUAL), sL, np.full(2 * n, START_DUAL), sB,
            np.full(lp.mB, START_DUAL))


@solver_entry
def solve_row_block_ipm(lp: ConstOptLP, *, tol: float = 1e-9, max_iter: int = 200,
                        deadline: float | None = None,
                        on_iteration: Callable[[dict], None] | None = None,
                        start: tuple | None = None, keep_gap: float = KEEP_GAP,
                        gpu_from: int = GPU_MIN_SIZE, gpu: GPUChoice = DETECT) -> RowBlockResult:
    """Mehrotra predictor-corrector on :class:`ConstOptLP` with the row-block elimination.

    Stops when the relative gap ``|c^T x - h^T y| / (1 + |c^T x|)`` and the relative primal and
    dual infeasibilities are all at most ``tol``, or returns the best iterate when it stalls, or
    its factorisation fails, below ``STALL_ACCEPT`` (``stats["stalled"]``).

    ``start`` (``x, w, s_link, z_link, s_local, z_local``, all positive, sized for ``lp``) replaces
    the default starting point (:func:`default_start`); the result's ``warm_point`` is the first
    iterate within ``keep_gap`` (see :func:`warm_start`). ``on_iteration`` receives ``iteration``,
    ``objective``, ``relative_gap``, ``primal_infeasibility``, ``dual_infeasibility`` and
    ``seconds`` per iteration. The iterations run under :func:`mdp.lp.dense.blas_threads` (BLAS
    threads by the physical cores and the size of the dense step). ``gpu_from`` and ``gpu``: the
    dense step's device rule (:func:`mdp.lp.dense.schur_factor`).

    Raises
    ------
    SolverError
        No convergence within ``max_iter`` iterations, or a numerical failure before the best
        iterate is below ``STALL_ACCEPT``.
    SolverTimeout
        ``time.perf_counter()`` passed ``deadline``.
    """
    t0 = time.perf_counter()
    fac = _RowBlockFactor(lp, gpu_from=gpu_from, gpu=gpu)
    n, nv, mB = lp.n, lp.nv, lp.mB
    if start is None:
        x, w, sL, zL, sB, zB = default_start(lp)
    else:
        x, w, sL, zL, sB, zB = (np.array(v, dtype=float) for v in start)
        if ([len(v) for v in (x, w, sL, zL, sB, zB)] != [nv, nv, 2 * n, 2 * n, mB, mB]
                or not all(np.all(v > 0) and np.all(np.isfinite(v)) for v in (x, w, sL, zL, sB, zB))):
            raise ValueError("start must be positive, finite vectors sized for the LP")
    system = _RowBlockSystem(lp, fac)

    def log(it: int, p: _RowBlockPoint, scores: Scores) -> None:
        if on_iteration is not None:
            on_iteration({"iteration": it, "objective": scores.objective,
                          "relative_gap": scores.gap, "primal_infeasibility": scores.primal,
                          "dual_infeasibility": scores.dual,
                          "seconds": time.perf_counter() - t0})

    with blas_threads(fac.schur.dense_side):
        out = run_interior_point(system, replace(SETTINGS, tol=tol, max_iter=max_iter),
                                 start=_RowBlockPoint(x, w, sL, zL, sB, zB), deadline=deadline,
                                 keep_gap=keep_gap, log=log)
    p, sc = out.point, out.scores
    return RowBlockResult(x=p.x, y_link=p.zL, y_local=p.zB, w=p.w, objective=sc.objective,
                          dual_objective=sc.dual_objective, iterations=out.iterations,
                          relative_gap=sc.gap, primal_infeasibility=sc.primal,
                          dual_infeasibility=sc.dual, seconds=time.perf_counter() - t0,
                          dense_size=fac.nT,
                          stats={"stalled": out.stalled, "device": fac.schur.device},
                          warm_point=None if out.kept is None else out.kept.astuple())


def warm_start(prev: ConstOptLP, point: tuple, lp: ConstOptLP) -> tuple:
    r"""A starting point for ``lp`` from an iterate ``point`` of ``prev``, the same LP with other
    free-free rows.

    The variables, the linking rows and the rows both LPs have keep their values; a new row
    starts centred (:func:`mdp.lp.rowgen.warm_rows`). As in Gondzio's warm start for
    cutting-plane schemes (Math. Programming 83, 1998), the iterate is an earlier, well-centred
    one (relative gap ``KEEP_GAP``), not the optimum, whose products are too small to move.
    """
    if prev.nv != lp.nv or prev.n_bound != lp.n_bound:
        raise ValueError("warm_start needs two LPs on the same space, epsilon and free entries")
    x, w, sL, zL, sB, zB = point
    nb, f = lp.n_bound, lp.f
    mu = float(sL @ zL + sB @ zB + x @ w) / (len(sL) + len(sB) + len(x))
    slack, mult = warm_rows(prev.pairs[0] * f + prev.pairs[1], sB[nb:], zB[nb:],
                            lp.pairs[0] * f + lp.pairs[1], lp.local(x)[nb:], mu)
    return x, w, sL, zL, np.r_[sB[:nb], slack], np.r_[zB[:nb], mult]


def certified_lower_bound(lp: ConstOptLP, res: RowBlockResult, k_bar: float) -> float:
    r"""A lower bound on the optimum of ``lp`` (and of every LP with more rows) from ``res``'s duals.

    For multipliers ``y >= 0`` of the rows ``G x >= h`` and any feasible ``x`` with
    ``0 <= x <= U``: ``c^T x >= y^T h + sum_j min(0, (c - G^T y)_j) U_j``, whatever the solver's
    tolerances. An optimum has ``k <= k_bar`` (the objective of any feasible point), so
    ``M_wv <= k_bar / (D_wv + lam)`` from its loss row, ``Y_v <= k_bar / max_w (D_wv + lam)
    e^{-e D_wv}`` over the fixed entries of column ``v``, ``M_uv <= hi_uv Y_v`` where the
    entry has that bound row, and ``k <= k_bar``.
    """
    n, f = lp.n, lp.f
    yL = np.maximum(res.y_link, 0.0)
    yB = np.maximum(res.y_local, 0.0)
    red = lp.c - lp.linking_t(yL) - lp.local_t(yB)
    U = np.empty(lp.nv)
    with np.errstate(divide="ignore"):
        U[:n] = k_bar / np.max(-lp.L_Y[:n], axis=0)
    # a free entry is also at most hi_uv Y_v (its bound row): far tighter than k / W_uv where
    # W_uv is small (near entries at a small lam; two scales of distance, eps x median 0.3,
    # n = 1000, lambda 0.001: reduced costs of -1e-9 times bounds of 1e4 held the gap at 1.9e-6)
    with np.errstate(over="ignore", invalid="ignore"):
        by_weight = np.exp(lp.log_hi) * lp.y_scale[lp.fv] * U[lp.fv]
    U[n:n + f] = np.fmin(k_bar / lp.W[lp.fu, lp.fv], by_weight)
    U[lp.kcol] = k_bar
    neg = red < 0
    if np.any(neg & ~np.isfinite(U)):
        return -np.inf
    bound = float(lp.h @ yL) + float(np.sum(red[neg] * U[neg]))
    # summation rounding: a margin far above it, far below any gap a user asks for
    return bound - 1e-12 * abs(bound)


def feasible_log_matrix(x: np.ndarray, lp: ConstOptLP,
                        pairs: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    r"""Log of the LP's matrix from ``x`` with every privacy row at ``e`` holding exactly.

    :func:`mdp.families.constopt.formulation.lipschitz_log_matrix` on ``lp``'s data (clip each free entry
    into its bounds, lift it to its column's envelope over the free entries), with ``x``'s
    weight variables scaled back to the weights (:meth:`ConstOptLP.weights`).
    """
    x = np.r_[lp.weights(x), x[lp.n:]]
    return lipschitz_log_matrix(x, lp.D, lp.e, lp.free, bound_factors=(lp.log_hi, lp.log_lo),
                                pairs=pairs)


def _feasible_objective(L: np.ndarray, lp: ConstOptLP) -> tuple[np.ndarray, float]:
    """``L`` shifted so that every row sums to at least 1, and its LP objective ``k``."""
    rows = logsumexp(L, axis=1)
    if not np.all(np.isfinite(rows)):
        raise SolverError("the interior point solution has a row without positive entries")
    L = L - min(0.0, float(rows.min()))
    with np.errstate(under="ignore"):
        k = float(np.max(np.sum(lp.W * np.exp(L), axis=1)))
    return L, k


@solver_entry
def fixed_weights_solution(lp: ConstOptLP, Y: np.ndarray, all_pairs: tuple[np.ndarray, np.ndarray],
                           time_limit: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    r"""The best free entries and ``k`` for the weights ``Y`` held fixed, with every free-free row.

    With ``Y`` fixed the dense parts of the loss and row-sum rows are constants and the bounds
    ``lo_uv Y_v <= M_uv <= hi_uv Y_v`` are column bounds, so what is left is a sparse LP (HiGHS,
    dual simplex). Its optimum is feasible for the full LP (up to HiGHS's tolerances, which
    :func:`feasible_log_matrix` removes): an upper bound on the full optimum, and a far better
    one than repairing a relaxed solution when the free-free rows bind. ``Y`` are the LP's weight
    variables (``x[:n]``; the weights are :meth:`ConstOptLP.weights`). Returns the full ``x``
    and, per row of ``all_pairs``, whether it binds there (a non-zero dual): near the optimum's
    weights those are the rows the full LP's optimum needs.
    """
    n, f = lp.n, lp.f
    Y = np.maximum(Y, 0.0)
    fixed_part = lp.L_Y @ Y                               # loss rows: -sum W E Y; row sums: sum E Y
    with np.errstate(over="ignore", under="ignore"):
        weights = lp.weights(Y)
        col_lo = np.where(np.isfinite(lp.log_lo), np.exp(lp.log_lo) * weights[lp.fv], 0.0)
        col_hi = np.where(np.isfinite(lp.log_hi), np.exp(lp.log_hi) * weights[lp.fv], np.inf)
    col_hi = np.maximum(col_hi, col_lo)
    pa, pb = all_pairs
    m_ff = len(pa)
    rows = np.r_[lp.fu, np.arange(n), n + lp.fu, 2 * n + np.arange(m_ff), 2 * n + np.arange(m_ff)]
    cols = np.r_[np.arange(f), np.full(n, f), np.arange(f), pb, pa]
    with np.errstate(under="ignore"):
        vals = np.r_[lp.a, np.ones(n), np.ones(f), np.ones(m_ff),
                     -np.exp(-lp.e * lp.D[lp.fu[pa], lp.fu[pb]])]
    A = sp.csr_matrix((vals, (rows, cols)), shape=(2 * n + m_ff, f + 1))
    c = np.zeros(f + 1)
    c[f] = 1.0
    row_lo = np.r_[-fixed_part[:n], 1.0 - fixed_part[n:], np.zeros(m_ff)]
    sol = SparseLP(c, A, row_lower=row_lo, col_lower=np.r_[col_lo, 0.0], col_upper=np.r_[col_hi, np.inf],
                   solver="simplex", time_limit=time_limit).solve()
    return np.r_[Y, sol.x], sol.row_dual[2 * n:] != 0.0


@solver_entry
def solve_constopt_gap(distances: np.ndarray, e: float, free: np.ndarray, lam: float, gap: float,
                       *, time_limit: float | None = None, max_rounds: int = 30,
                       max_violated_per_point: float | None = None,
                       on_round: Callable[[dict], None] | None = None,
                       rows: tuple[np.ndarray, np.ndarray] | None = None,
                       warm_added_ratio: float = WARM_ADDED_RATIO,
                       gpu_from: int = GPU_MIN_SIZE, gpu: GPUChoice = DETECT
                       ) -> tuple[np.ndarray, dict]:
    r"""ConstOPTMech's LP to a certified relative gap by :func:`solve_row_block_ipm`.

    Round 0 solves the LP without free-free rows (or with ``rows``). After every round the
    solution is made feasible for the full LP (:func:`feasible_log_matrix`, row sums scaled up
    to 1, and :func:`fixed_weights_solution` where that is better), giving ``k_feas``, and the
    round's duals give a rigorous lower bound ``k_low`` (:func:`certified_lower_bound`). The loop
    stops when ``k_feas - k_low <= gap * k_feas`` or when the round's solution violates no
    free-free row left out of its LP (then it is the full LP's optimum to the method's
    tolerance). Otherwise the violated free-free rows are added, and those that bind in
    :func:`fixed_weights_solution`'s optimum (Geolife-like points, eps x median 10, n = 1000: 5
    rounds instead of 7; adding every row of their columns instead took fewer rounds but
    tripled the dense part, every row between free entries already in the LP as many rounds).
    The next round starts from this round's iterate at relative gap ``KEEP_GAP``
    (:func:`warm_start`; a warm round that fails is solved again from the default start)
    unless it adds more than ``warm_added_ratio`` rows per row of this round's LP. Each round
    runs to the tolerance ``gap / 100`` clipped to ``[ROUND_TOL_MIN, ROUND_TOL]``.

    ``rows``: free-free rows of the first round, as pairs ``(j, j')`` of free-entry indices
    (:func:`free_free_pairs`' order), e.g. ``stats["free_free_pairs"]`` of the same LP at
    another ``lam``: any subset of the rows keeps the first round a relaxation.

    ``max_violated_per_point``: when round 0's solution violates more than this many free-free
    rows per point, raise :class:`RowBlockTooDense` (a :class:`~mdp.errors.SolverError`) instead
    of going on (``None``: never).
    Those rows join the dense part of every later round, so a caller with another exact solver
    (ConstOPTMech's ``solver="auto"``) hands such LPs to it after one cheap round. ``gpu_from``
    and ``gpu``: the device rule of every round's dense step (:func:`solve_row_block_ipm`).

    Returns
    -------
    L, stats : the log of the feasible (unnormalised) matrix, and ``lp_objective`` (``k_feas``),
    ``lower_bound``, ``relative_gap``, ``gap_target``, ``rounds``, ``iterations``,
    ``free_free_rows`` (of the last round) and ``free_free_pairs`` (those rows, as ``rows``
    takes them), ``variables``, ``rows``, ``nnz``, ``dense_size`` (side of the Schur complement
    on ``T``, free-free entries included), ``ipm_rounds`` (one dict per round, with ``warm``:
    whether it started from the previous round), ``seconds``, ``solver``.
    """
    t0 = time.perf_counter()
    deadline = None if time_limit is None else t0 + time_limit
    D = np.asarray(distances, dtype=float)
    fu, fv = np.nonzero(free)
    all_a, all_b = free_free_pairs(fu, fv)
    all_key = all_a * len(fu) + all_b
    with np.errstate(under="ignore"):
        shrink = np.exp(-e * D[fu[all_a], fu[all_b]])
    key = np.zeros(0, np.int64)                         # the LP's free-free rows, as all_key
    if rows is not None:
        key = np.unique(np.asarray(rows[0], dtype=np.int64) * len(fu)
                        + np.asarray(rows[1], dtype=np.int64))
        if not np.all(np.isin(key, all_key)):
            raise ValueError("rows must be free-free pairs of the LP's free entries")
    factors = log_bound_factors(D, np.asarray(free, dtype=bool), fu, fv, e)
    tol = float(np.clip(gap / 100.0, ROUND_TOL_MIN, ROUND_TOL))
    iterations = 0
    trace = []
    start, lp = None, None
    added = len(key)
    for rnd in range(max_rounds):
        pairs = (key // len(fu), key % len(fu))
        prev, lp = lp, ConstOptLP(D, e, free, lam, pairs, bound_factors=factors)
        if prev is not None and added > warm_added_ratio * len(prev.pairs[0]):
            start = None
        warm = start is not None
        n_rows = 2 * lp.n + lp.mB

        def shown(it: dict, rnd: int = rnd, rows: int = n_rows) -> None:
            report(LPProgress(round=rnd + 1, rows=rows, objective=it["objective"],
                              gap=it["relative_gap"], iteration=it["iteration"]))

        try:
            res = solve_row_block_ipm(lp, tol=tol, deadline=deadline, on_iteration=shown,
                                      start=None if start is None else warm_start(prev, start, lp),
                                      gpu_from=gpu_from, gpu=gpu)
        except (SolverError, ValueError):
            # ValueError: a start the method refuses (an underflowed product); neither is the
            # user's error while the cold start, the tested fall-back, remains
            if not warm:
                raise
            warm = False
            res = solve_row_block_ipm(lp, tol=tol, deadline=deadline, on_iteration=shown,
                                      gpu_from=gpu_from, gpu=gpu)
        start = res.warm_point
        iterations += res.iterations
        L, k_feas = _feasible_objective(feasible_log_matrix(res.x, lp, (all_a, all_b)), lp)
        left = None if deadline is None else max(deadline - time.perf_counter(), 1e-3)
        binding = np.zeros(len(all_a), bool)
        try:
            x2, binding = fixed_weights_solution(lp, res.x[:lp.n], (all_a, all_b), left)
        except SolverTimeout:
            raise
        except SolverError:
            # the weights of an iterate need not admit a feasible completion (row sums that
            # the free entries' upper bounds cannot reach: seen at Geolife n = 2000); the
            # repaired point above stands
            x2 = None
        if x2 is not None:
            L2, k2 = _feasible_objective(feasible_log_matrix(x2, lp, (all_a, all_b)), lp)
            if k2 < k_feas:
                L, k_feas = L2, k2
        bound = certified_lower_bound(lp, res, k_feas)
        rel = (k_feas - bound) / k_feas
        m = res.x[lp.n:lp.n + lp.f]
        viol = shrink * m[all_a] - m[all_b] > VIOLATION_RTOL * np.maximum(m[all_b], 1e-300)
        # rows already in the LP hold to the method's tolerance (the repair removes the rest):
        # adding them again would repeat the round
        new = ~np.isin(all_key, key)
        viol &= new
        info = {"round": rnd, "iterations": res.iterations, "warm": warm,
                "free_free_rows": len(pairs[0]),
                "dense_size": res.dense_size, "lp_objective": k_feas, "lower_bound": bound,
                "relative_gap": rel, "violated": int(viol.sum()),
                "seconds": time.perf_counter() - t0}
        trace.append(info)
        report(LPProgress(round=rnd + 1, rows=n_rows, objective=k_feas, gap=rel, certified=True))
        if on_round is not None:
            on_round(info)
        if rel <= gap or not viol.any():
            break
        if (rnd == 0 and max_violated_per_point is not None
                and info["violated"] > max_violated_per_point * lp.n):
            raise RowBlockTooDense(f"round 0 violates {info['violated']} free-free rows "
                                   f"({info['violated'] / lp.n:.1f} per point, more than "
                                   f"{max_violated_per_point:g}): too many for the row-block method")
        before = len(key)
        key = np.union1d(key, all_key[viol | (binding & new)])
        added = len(key) - before
    nnz = 2 * int(np.count_nonzero(lp.L_Y[lp.n:])) + 2 * lp.f + lp.n + 2 * lp.mB
    return L, {"lp_objective": k_feas, "lower_bound": bound, "relative_gap": rel, "gap_target": gap,
               "rounds": len(trace), "iterations": iterations, "free_free_rows": len(lp.pairs[0]),
               "free_free_pairs": lp.pairs,
               "variables": lp.nv, "rows": 2 * lp.n + lp.mB, "nnz": nnz,
               "dense_size": res.dense_size, "ipm_rounds": trace,
               "seconds": time.perf_counter() - t0,
               "solver": "row-block interior point method (mdp.families.constopt_ipm)",
               "device": res.stats["device"]}
