r"""Privacy accounting and utility of a mechanism's transition matrix.

Notation (seed imola2022, section 2): a mechanism on ``n`` points is a row-stochastic matrix
``M`` with ``M[u, w] = Pr[M(u) = w]``; ``D`` is the distance matrix.

* Pure metric DP (Definition 1): ``M[u, w] <= exp(eps D[u, v]) M[v, w]`` for all u, v, w.
* (eps, delta)-mDP (eq. 9): ``Pr[M(u) in S] <= exp(eps D[u, v]) Pr[M(v) in S] + delta``.
* ``eps_tight`` (eq. 10): the smallest eps for which the guarantee holds.
* Loss (eq. 1, 3, 11): ``L(M, u) = sum_w D[u, w] M[u, w]``; worst case or q-quantile over u.
"""

from __future__ import annotations

import numpy as np

from .validation import check_probability

__all__ = ["loss", "row_losses", "eps_tight", "pairwise_eps"]


def _check_matrix(matrix, distances) -> tuple[np.ndarray, np.ndarray]:
    M = np.asarray(matrix, dtype=float)
    D = np.asarray(distances, dtype=float)
    if M.ndim != 2 or M.shape[0] != M.shape[1]:
        raise ValueError(f"matrix must be square (n x n), got shape {M.shape}")
    if D.shape != M.shape:
        raise ValueError(f"distances must have the matrix's shape {M.shape}, got {D.shape}")
    if not np.all(np.isfinite(M)):
        raise ValueError("matrix must be finite (found NaN or inf)")
    if np.any(M < 0):
        raise ValueError(f"matrix must be non-negative, got minimum {M.min():.3g}")
    return M, D


def row_losses(matrix, distances) -> np.ndarray:
    """Expected distance of each row: ``L(M, u) = sum_w D[u, w] M[u, w]`` (seed eq. 3)."""
    M, D = _check_matrix(matrix, distances)
    return np.einsum("uw,uw->u", M, D)


def loss(matrix, distances, q: float | None = None) -> float:
    r"""Loss of a mechanism: worst case (seed eq. 1) or the q-quantile of row losses (eq. 11).

    .. math:: \mathcal{L}(M) = \max_u \sum_w D_{uw} M_{uw}, \qquad
              \mathcal{L}_q(M) = \mathrm{quantile}_q\{\mathcal{L}(M, u)\}

    The quantile uses numpy's default (linear interpolation between order statistics).

    Parameters
    ----------
    matrix, distances : ndarray of shape (n, n)
    q : float in [0, 1] or None
        ``None`` for the worst case (equal to ``q = 1``).
    """
    rl = row_losses(matrix, distances)
    if q is None:
        return float(rl.max())
    q = check_probability(q, "q")
    return float(np.quantile(rl, q))


def _pairs_eps(M: np.ndarray, D: np.ndarray, us: np.ndarray, vs: np.ndarray, delta: float) -> np.ndarray:
    """Smallest eps of each ordered pair ``(us[i], vs[i])`` (see :func:`pairwise_eps`)."""
    P, Q = M[us], M[vs]                                         # (k, n)
    n = M.shape[1]
    with np.errstate(divide="ignore", invalid="ignore"):
        if delta == 0.0:
            # p > 0 = q gives an infinite ratio; p = 0 contributes nothing.
            t = np.where(P > 0, P / Q, 0.0).max(axis=1)
        else:
            inf_mass = np.where((Q == 0) & (P > 0), P, 0.0).sum(axis=1)
            ratio = np.where(Q > 0, P / np.where(Q > 0, Q, 1.0), 0.0)
            order = np.argsort(-ratio, axis=1)
            r = np.take_along_axis(ratio, order, axis=1)
            cp = np.cumsum(np.take_along_axis(np.where(Q > 0, P, 0.0), order, axis=1), axis=1)
            cq = np.cumsum(np.take_along_axis(Q, order, axis=1), axis=1)
            budget = delta - inf_mass                   # what the finite ratios may still use
            # f at breakpoint r_k uses the k largest ratios (indices < k): cp[k-1] - r_k cq[k-1].
            f_at = np.concatenate([np.zeros((len(us), 1)), cp[:, :-1] - r[:, 1:] * cq[:, :-1]], axis=1)
            exceeds = f_at > budget[:, None] * (1 + 1e-12) + 1e-300
            k = np.where(exceeds.any(axis=1), exceeds.argmax(axis=1), n)  # first breakpoint over budget
            km1 = np.clip(k - 1, 0, n - 1)[:, None]
            cpk = np.take_along_axis(cp, km1, axis=1)[:, 0]
            cqk = np.take_along_axis(cq, km1, axis=1)[:, 0]
            # k == n: no breakpoint exceeds the budget and t* lies below the smallest ratio.
            t = np.where(cqk > 0, (cpk - budget) / np.where(cqk > 0, cqk, 1.0), 0.0)
            t = np.where(budget < 0, np.inf, t)
        t = np.maximum(t, 1.0)
        d = D[us, vs]
        return np.where(d > 0, np.log(t) / np.where(d > 0, d, 1.0), 0.0)


def pairwise_eps(matrix, distances, delta: float = 0.0) -> np.ndarray:
    r"""The smallest eps of every ordered pair: ``E[u, v]`` (``E[u, u] = 0``).

    For rows ``p = M[u]``, ``q = M[v]`` and ``t = exp(eps D[u, v])``, the hockey-stick divergence

    .. math:: f(t) = \sum_w \max(0, p_w - t q_w) = \max_S \big(p(S) - t\, q(S)\big)

    is the largest violation of eq. 9 over output sets S. It is convex, piecewise linear and
    non-increasing in t with breakpoints at the ratios ``p_w / q_w``; ``E[u, v] = log(t*) / D[u, v]``
    with ``t* = min {t >= 1 : f(t) <= delta}``, found exactly by sorting the ratios:
    on the segment where exactly the k largest ratios exceed t, ``f(t) = P_k - t Q_k`` (prefix sums),
    so ``t* = (P_k - delta) / Q_k``. Outputs with ``q_w = 0 < p_w`` have an infinite ratio: their mass
    must fit in delta, else ``E[u, v] = inf``. With ``delta = 0`` this is the pure mDP level
    ``max_w log(p_w / q_w) / D[u, v]``.
    """
    M, D = _check_matrix(matrix, distances)
    delta = check_probability(delta, "delta")
    n = M.shape[0]
    E = np.zeros((n, n))
    if delta == 0.0:
        # blocks of rows u against all v: ratio tensor of shape (b, n, n)
        b = max(1, int(4e6 // (n * n)))
        with np.errstate(divide="ignore", invalid="ignore"):
            for s in range(0, n, b):
                P = M[s:s + b, None, :]
                t = np.maximum(np.where(P > 0, P / M[None, :, :], 0.0).max(axis=2), 1.0)
                d = D[s:s + b]
                E[s:s + b] = np.where(d > 0, np.log(t) / np.where(d > 0, d, 1.0), 0.0)
        np.fill_diagonal(E, 0.0)
        return E
    us, vs = np.nonzero(~np.eye(n, dtype=bool))
    step = max(1, int(4e6 // n))
    for s in range(0, len(us), step):
        E[us[s:s + step], vs[s:s + step]] = _pairs_eps(M, D, us[s:s + step], vs[s:s + step], delta)
    return E


def eps_tight(matrix, distances, delta: float = 0.0) -> float:
    r"""The smallest eps for which ``matrix`` is (eps, delta)-mDP (seed eq. 9-10), exactly.

    .. math:: \epsilon_{tight} = \max_{u \ne v} \min\{\epsilon \ge 0 :
              \sum_w \max(0, M_{uw} - e^{\epsilon D_{uv}} M_{vw}) \le \delta\}

    With ``delta = 0`` this is the pure level
    ``max_{u,v,w} (log M[u,w] - log M[v,w]) / D[u,v]``, where an output that one row gives
    positive probability and the other exactly zero (at finite distance) is infinite.
    Computed exactly for every ordered pair by sorting likelihood ratios (no sampling); see
    :func:`pairwise_eps`.

    With ``delta > 0`` pairs are visited in decreasing order of their pure level (an upper bound
    on their delta level) and the scan stops once no remaining pair can exceed the running
    maximum: exact, and usually a small fraction of the ``n (n - 1)`` pairs.

    Parameters
    ----------
    matrix : ndarray (n, n)
        Row-stochastic transition matrix.
    distances : ndarray (n, n)
    delta : float in [0, 1], default 0
    """
    M, D = _check_matrix(matrix, distances)
    delta = check_probability(delta, "delta")
    pure = pairwise_eps(M, D, 0.0)
    if delta == 0.0:
        return float(pure.max())
    n = M.shape[0]
    us, vs = np.nonzero(~np.eye(n, dtype=bool))
    bound = pure[us, vs]
    order = np.argsort(-bound, kind="stable")
    best = 0.0
    step = max(256, int(2e6 // n))
    for s in range(0, len(order), step):
        idx = order[s:s + step]
        if bound[idx[0]] <= best:
            break
        best = max(best, float(_pairs_eps(M, D, us[idx], vs[idx], delta).max()))
    return best
