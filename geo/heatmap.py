r"""Differentially private heatmaps by sparse EMD aggregation (Ghazi et al., AAAI 2023).

Setting (Ghazi et al. 2023, section 2): each of ``n`` users holds a distribution ``p_i`` (l1 mass <= 1) on the
``Delta x Delta`` grid ``G_Delta`` of the unit square, ``Delta = 2^ell``. The aggregate
``s = sum_i p_i`` is released epsilon-DP (add/remove one user) as a normalised distribution
``a_hat`` close to ``a = s / n`` in EMD; the heatmap is its Gaussian filter (section 2.3).

Pipeline
--------
1. :func:`pyramid` -- the level partition maps ``P_i s`` (block sums, ``4^i`` cells at level i);
   the scaled pyramidal transform (Definition 3.1) is ``P s = [P_0 s, P_1 s / 2, ..., P_l s / 2^ell]``.
2. :func:`level_budgets` / :func:`noisy_pyramid` -- Algorithm 1: ``P_i s + Lap(1/eps_i)`` per cell,
   ``eps_i = eps gamma^(i-q) / Z`` on levels ``i = q..ell`` (section 4 skips levels below
   ``q = floor(log2 sqrt(w))``), ``Z`` making the budgets sum to ``eps``.
3. :func:`reconstruct` -- Algorithm 2: keep the top-``w`` children per level, then solve
   ``min_{s' >= 0} ||y_hat - P s'||_1`` as an LP with ``O(w ell)`` variables on HiGHS.
4. :func:`gaussian_heatmap` -- section 2.3.

Rows of a grid index the second coordinate (``y``/latitude/image row) in increasing order, columns
the first (``x``/longitude/image column).
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog

from mdp.errors import ParameterError, ParameterTypeError
from mdp.validation import (
    as_float_array,
    check_epsilon,
    check_int,
    check_positive,
    check_probability,
    check_rng,
)

__all__ = [
    "pyramid",
    "pyramidal_transform",
    "start_level",
    "level_budgets",
    "noisy_pyramid",
    "reconstruct",
    "dp_sparse_emd_aggregate",
    "laplace_baseline",
    "gaussian_heatmap",
    "points_to_cells",
    "user_distributions",
]


def _check_grid(counts, name: str = "counts") -> tuple[np.ndarray, int]:
    """A square, finite, non-negative grid whose side is a power of two; returns (array, ell)."""
    s = as_float_array(counts, "counts")
    if s.ndim != 2 or s.shape[0] != s.shape[1]:
        raise ParameterError(f"{name} must be a square Delta x Delta grid, got shape {s.shape}")
    delta = s.shape[0]
    if delta < 1 or delta & (delta - 1):
        raise ParameterError(f"{name} side Delta must be a power of two, got {delta}")
    if not np.all(np.isfinite(s)):
        raise ParameterError(f"{name} must be finite (found nan or inf)")
    if np.any(s < 0):
        raise ParameterError(f"{name} must be non-negative, min is {s.min()}")
    return s, delta.bit_length() - 1


def pyramid(counts) -> list[np.ndarray]:
    r"""Level partition maps ``P_i s`` for ``i = 0..ell`` (Ghazi et al. 2023, Definition 3.1, unscaled).

    Level ``i`` is the ``2^i x 2^i`` array of sums over blocks of side ``Delta / 2^i``:
    ``(P_i s)(c) = sum_{x in c} s(x)``.

    Parameters
    ----------
    counts : array_like, shape (Delta, Delta)
        Non-negative grid, ``Delta = 2^ell``.

    Returns
    -------
    list of ``ell + 1`` arrays; element ``i`` has shape ``(2^i, 2^i)``.
    """
    s, ell = _check_grid(counts)
    levels = [s]
    for _ in range(ell):
        t = levels[-1]
        m = t.shape[0] // 2
        levels.append(t.reshape(m, 2, m, 2).sum(axis=(1, 3)))
    return levels[::-1]


def pyramidal_transform(counts) -> np.ndarray:
    r"""The scaled pyramidal transform ``P s`` (Ghazi et al. 2023, Definition 3.1) as one vector.

    .. math:: P s = [P_0 s,\ 2^{-1} P_1 s,\ \dots,\ 2^{-\ell} P_\ell s]

    Row ``c`` of level ``i`` is the indicator of cell ``c`` times its side ``2^{-i}``, so by
    Lemma 3.5 (Indyk and Thaper 2003) ``||z||_EMD <= ||P z||_1`` with the L1 ground distance on the
    unit square. ``counts`` may be signed here (it is a linear map).
    """
    z = as_float_array(counts, "counts")
    _check_grid(np.abs(z))
    ell = z.shape[0].bit_length() - 1
    out, t = [], z
    for i in range(ell, -1, -1):
        out.append(t.ravel() / 2.0**i)
        if i:
            m = t.shape[0] // 2
            t = t.reshape(m, 2, m, 2).sum(axis=(1, 3))
    return np.concatenate(out[::-1])


def start_level(w: int) -> int:
    r"""``q = floor(log2 sqrt(w))``, the first measured level of Ghazi et al. 2023, section 4 (2 for ``w = 20``)."""
    w = check_int(w, "w", low=1)
    # Exact integer form of floor(log2 sqrt(w)) = floor(log2(w) / 2).
    return (w.bit_length() - 1) // 2


def level_budgets(epsilon: float, ell: int, *, w: int = 20, gamma: float = 2**-0.5,
                  start: int | None = None) -> np.ndarray:
    r"""Per-level privacy budgets of Algorithm 1 (Ghazi et al. 2023, section 3.3 with section 4's choices).

    .. math:: \varepsilon_i = \frac{\gamma^{|i - q|}}{Z}\,\varepsilon \ (q \le i \le \ell), \qquad
              \varepsilon_i = 0 \ (i < q), \qquad Z = \sum_{i=q}^{\ell} \gamma^{i - q}

    so that :math:`\sum_i \varepsilon_i = \varepsilon` (basic composition).

    Parameters
    ----------
    epsilon : float
        Total budget, > 0.
    ell : int
        ``log2 Delta`` (levels ``0..ell``).
    w : int, default 20
        Tree width; sets the default start level ``q = floor(log2 sqrt(w))``.
    gamma : float, default 1/sqrt(2)
        Decay rate in ``(0, 1]`` (the paper's choice minimises its error bound).
    start : int, optional
        Override of ``q`` (``0 <= start <= ell``); ``min(q, ell)`` by default.

    Returns
    -------
    ndarray, shape (ell + 1,)
        ``eps_i`` (zero for unmeasured levels).
    """
    epsilon = check_epsilon(epsilon)
    ell = check_int(ell, "ell", low=0)
    gamma = check_probability(gamma, "gamma", inclusive_low=False)
    q = min(start_level(w), ell) if start is None else check_int(start, "start", low=0, high=ell)
    eps = np.zeros(ell + 1)
    eps[q:] = gamma ** np.arange(ell + 1 - q)
    return eps * (epsilon / eps.sum())


def noisy_pyramid(counts, epsilon: float, *, w: int = 20, gamma: float = 2**-0.5,
                  start: int | None = None, rng=None) -> list[np.ndarray | None]:
    r"""Algorithm 1, lines 4-7: noisy level counts ``P_i s + nu_i``, ``nu_i ~ Lap(1/eps_i)^{4^i}``.

    Privacy (Ghazi et al. 2023, section 3.3): one user changes ``s`` by a vector of l1 norm <= 1; ``P_i`` is a
    partition, so ``P_i s`` changes by <= 1 in l1 and the Laplace mechanism with scale
    ``1 / eps_i`` makes level ``i`` ``eps_i``-DP; the levels compose to ``sum eps_i = epsilon``.
    The paper's measurement ``y'_i = 2^{-i}(P_i s + nu_i)`` is this array divided by ``2^i``.

    Returns
    -------
    list of length ``ell + 1``: the noisy counts of level ``i``, or ``None`` for unmeasured levels.
    """
    levels = pyramid(counts)
    rng = check_rng(rng)
    budgets = level_budgets(epsilon, len(levels) - 1, w=w, gamma=gamma, start=start)
    return [None if e == 0 else lv + rng.laplace(0.0, 1.0 / e, size=lv.shape)
            for lv, e in zip(levels, budgets, strict=True)]


def _top(values: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` largest values; ties go to the lower index (stable order)."""
    return np.argsort(-values, kind="stable")[:k]


def reconstruct(noisy: list[np.ndarray | None], w: int = 20, *, siblings: str = "equal"
                ) -> tuple[np.ndarray, dict]:
    r"""Algorithm 2 (RECONSTRUCT) with the ``O(w ell)``-variable LP of Ghazi et al. 2023, section 4.

    Selection: on the first measured level ``q`` keep the ``min(w, 4^q)`` largest cells (all of
    them when ``4^q <= w``, as with ``w = 20``); on each finer level keep the ``w`` largest children
    of the kept cells (``S_i``); the other children are *left out* (``T_i \ S_i``). Ties keep the
    lower row-major index.

    LP: ``min_{s' >= 0} ||y_hat - P s'||_1`` with ``y_hat = y'`` on kept cells and 0 elsewhere.
    Mass of ``s'`` inside a left-out cell ``d`` of level ``i`` costs
    ``sum_{j=i}^{\ell} 2^{-j}`` per unit *wherever* it sits in ``d`` (each of its level-j sub-cells
    has ``y_hat = 0``), so one variable per left-out cell and one per kept pixel suffice:

    .. math:: \min_{u \ge 0,\ t} \sum_{c \in S} 2^{-i(c)} t_c + \sum_{d} u_d \sum_{j=i(d)}^{\ell} 2^{-j}
              \quad \text{s.t.}\ |Y_c - \textstyle\sum_{v \subseteq c} u_v| \le t_c

    with ``Y_c = P_i s + nu_i`` the noisy count of kept cell ``c`` (``2^i y'(c)``).

    Non-unique optimum -- the rule used: (1) mass of a left-out cell is spread *uniformly* over
    its pixels (every placement inside the cell has the same LP cost); (2) the mass the LP puts
    into the left-out children of one kept cell is shared *equally* among them: they have the
    same cost and lie in exactly the same kept cells (their parent and its ancestors), so every
    split of that mass is optimal, and a vertex would put it all in one child; (3) otherwise the
    optimal vertex HiGHS returns (deterministic for given input). Rules (1)-(2) give the widest
    support among these optima, which matters for metrics that punish missed mass, such as
    KL(truth || estimate) (see ``docs/experiments/heatmaps-kl.md``); the LP objective, and hence
    the guarantee of Theorem 3.1, is unchanged.

    Parameters
    ----------
    noisy : list
        Output of :func:`noisy_pyramid` (``None`` for unmeasured levels).
    w : int, default 20
    siblings : {"equal", "vertex"}
        How the mass of the left-out children of one kept cell is shared: rule (2) above
        (default), or ``"vertex"``: the LP vertex as HiGHS returns it, the
        earlier rule, kept for comparisons (``docs/experiments/heatmaps-kl.md``).

    Returns
    -------
    s_hat : ndarray, shape (Delta, Delta)
        Non-negative, unnormalised estimate of ``s``.
    info : dict
        ``selected`` (list of (rows, cols) per level, None if unmeasured), ``n_variables``,
        ``lp_objective``.
    """
    w = check_int(w, "w", low=1)
    if siblings not in ("equal", "vertex"):
        raise ParameterError(f"siblings must be 'equal' or 'vertex', got {siblings!r}")
    ell = len(noisy) - 1
    measured = [i for i, y in enumerate(noisy) if y is not None]
    if not measured:
        raise ParameterError("noisy must contain at least one measured level")
    q = measured[0]
    if measured != list(range(q, ell + 1)):
        raise ParameterError(f"measured levels must be contiguous up to ell={ell}, got {measured}")
    for i in measured:
        if np.shape(noisy[i]) != (2**i, 2**i):
            raise ParameterError(f"noisy[{i}] must have shape {(2**i, 2**i)}, got {np.shape(noisy[i])}")

    # Selection (Algorithm 2 lines 3-7).
    selected: list = [None] * (ell + 1)
    left_out: list = [None] * (ell + 1)
    side = 2**q
    rr, cc = np.divmod(np.arange(side * side), side)
    keep = _top(np.asarray(noisy[q]).ravel(), min(w, side * side))
    selected[q] = (rr[keep], cc[keep])
    for i in range(q + 1, ell + 1):
        pr, pc = selected[i - 1]
        cr = np.concatenate([2 * pr + dr for dr in (0, 0, 1, 1)])
        ccol = np.concatenate([2 * pc + dc for dc in (0, 1, 0, 1)])
        order = np.lexsort((ccol, cr))  # row-major candidate order for deterministic ties
        cr, ccol = cr[order], ccol[order]
        top = _top(np.asarray(noisy[i])[cr, ccol], min(w, cr.size))
        mask = np.zeros(cr.size, bool)
        mask[top] = True
        selected[i] = (cr[mask], ccol[mask])
        left_out[i] = (cr[~mask], ccol[~mask])

    # LP rows: one per kept cell; index lookup per level.
    row_of, n_rows, Y, row_w = [], 0, [], []
    for i in range(ell + 1):
        if selected[i] is None:
            row_of.append(None)
            continue
        lookup = np.full((2**i, 2**i), -1, dtype=np.int64)
        r, c = selected[i]
        lookup[r, c] = np.arange(n_rows, n_rows + r.size)
        row_of.append(lookup)
        Y.append(np.asarray(noisy[i])[r, c])
        row_w.append(np.full(r.size, 2.0**-i))
        n_rows += r.size
    Y, row_w = np.concatenate(Y), np.concatenate(row_w)

    # LP variables: kept pixels (level ell) then left-out cells of levels q+1..ell.
    var_level, var_r, var_c, var_cost = [], [], [], []
    r, c = selected[ell]
    var_level.append(np.full(r.size, ell))
    var_r.append(r)
    var_c.append(c)
    var_cost.append(np.zeros(r.size))
    for i in range(q + 1, ell + 1):
        r, c = left_out[i]
        var_level.append(np.full(r.size, i))
        var_r.append(r)
        var_c.append(c)
        var_cost.append(np.full(r.size, sum(2.0**-j for j in range(i, ell + 1))))
    var_level, var_r, var_c = map(np.concatenate, (var_level, var_r, var_c))
    var_cost = np.concatenate(var_cost)
    n_vars = var_level.size

    # Incidence A[row c, var v] = 1 iff v lies inside kept cell c.
    rows_idx, cols_idx = [], []
    for j in range(q, ell + 1):
        inside = var_level >= j
        v = np.flatnonzero(inside)
        shift = var_level[v] - j
        rows = row_of[j][var_r[v] >> shift, var_c[v] >> shift]
        ok = rows >= 0  # a left-out cell's own level has no kept row for it
        rows_idx.append(rows[ok])
        cols_idx.append(v[ok])
    rows_idx, cols_idx = np.concatenate(rows_idx), np.concatenate(cols_idx)
    A = sp.csr_array((np.ones(rows_idx.size), (rows_idx, cols_idx)), shape=(n_rows, n_vars))
    neg_I = -sp.eye_array(n_rows, format="csr")
    A_ub = sp.vstack([sp.hstack([A, neg_I]), sp.hstack([-A, neg_I])], format="csr")
    b_ub = np.concatenate([Y, -Y])
    cost = np.concatenate([var_cost, row_w])
    res = linprog(cost, A_ub=A_ub, b_ub=b_ub, bounds=(0, None), method="highs")
    if res.status != 0:
        raise RuntimeError(f"reconstruction LP failed: {res.message}")
    u = np.maximum(res.x[:n_vars], 0.0)
    # Rule (2): equal shares for the left-out children of each kept parent (same cost, same
    # constraint rows), so the optimum stays optimal.
    lo = slice(selected[ell][0].size, n_vars)
    if siblings == "equal" and lo.start < n_vars:
        key = (var_level[lo].astype(np.int64) << 42) | ((var_r[lo] >> 1) << 21) | (var_c[lo] >> 1)
        _, group = np.unique(key, return_inverse=True)
        u[lo] = (np.bincount(group, weights=u[lo]) / np.bincount(group))[group]

    delta = 2**ell
    s_hat = np.zeros((delta, delta))
    for lev, r, c, val in zip(var_level, var_r, var_c, u, strict=True):
        if val <= 0:
            continue
        b = 2 ** (ell - lev)
        s_hat[r * b:(r + 1) * b, c * b:(c + 1) * b] += val / (b * b)
    info = {"selected": selected, "n_variables": n_vars + n_rows, "lp_objective": float(res.fun)}
    return s_hat, info


def _normalise_or_uniform(s: np.ndarray) -> np.ndarray:
    total = s.sum()
    return s / total if total > 0 else np.full_like(s, 1.0 / s.size)


def dp_sparse_emd_aggregate(counts, epsilon: float, *, w: int = 20, gamma: float = 2**-0.5,
                            start: int | None = None, rng=None,
                            return_info: bool = False):
    r"""epsilon-DP sparse EMD aggregation (Ghazi et al. 2023, Algorithms 1 and 2, section 4 settings).

    Releases ``a_hat = s_hat / ||s_hat||_1`` with ``s_hat = RECONSTRUCT(P s + nu)``; by Theorem 3.1
    ``EMD(a_hat, a) <= lambda min_{k-sparse a'} EMD(a', a) + O(sqrt(k) / (lambda eps n))`` w.p. 0.99.

    Parameters
    ----------
    counts : array_like, shape (Delta, Delta)
        ``s = sum_i p_i``, the sum of the users' distributions; ``Delta`` a power of two. The
        privacy guarantee requires every user to contribute l1 mass <= 1 (e.g. rows of
        :func:`user_distributions`); this cannot be checked from the sum.
    epsilon : float
        Total privacy budget (pure DP, add/remove one user).
    w : int, default 20
        Cells kept per level.
    gamma : float, default 1/sqrt(2)
        Budget decay per level away from ``q``.
    start : int, optional
        First measured level; default ``q = floor(log2 sqrt(w))``.
    rng : None | int | numpy.random.Generator
    return_info : bool, default False
        Also return a dict with ``budgets``, ``noise_scales`` (``1/eps_i`` on counts) and the
        :func:`reconstruct` info.

    Returns
    -------
    ndarray, shape (Delta, Delta)
        Normalised distribution (sums to 1). If the reconstruction is all zero (possible only when
        every kept noisy count is <= 0) the uniform distribution is returned.
    """
    s, ell = _check_grid(counts)
    w = check_int(w, "w", low=1)
    budgets = level_budgets(epsilon, ell, w=w, gamma=gamma, start=start)
    noisy = noisy_pyramid(s, epsilon, w=w, gamma=gamma, start=start, rng=rng)
    s_hat, info = reconstruct(noisy, w)
    a_hat = _normalise_or_uniform(s_hat)
    if return_info:
        with np.errstate(divide="ignore"):
            scales = np.where(budgets > 0, 1.0 / budgets, np.inf)
        info.update(budgets=budgets, noise_scales=scales)
        return a_hat, info
    return a_hat


def laplace_baseline(counts, epsilon: float, *, top_percent: float | None = None,
                     rng=None) -> np.ndarray:
    r"""Laplace baseline of Ghazi et al. 2023, section 4 (Liu et al. 2019) and its top-t% thresholding variant.

    ``s + Lap(1/eps)`` per cell (l1 sensitivity 1 per user), negatives set to 0; with
    ``top_percent = t`` only the ``ceil(t/100 * Delta^2)`` (at least 1) largest noisy cells are
    kept. The result is normalised (uniform if nothing positive survives).

    Parameters
    ----------
    counts : array_like, shape (R, C)
        Sum of the users' distributions (each of mass <= 1).
    epsilon : float
    top_percent : float, optional
        ``t`` in ``(0, 100]``.
    rng : None | int | numpy.random.Generator

    Returns
    -------
    ndarray, shape (R, C)
    """
    s = as_float_array(counts, "counts")
    if s.ndim != 2:
        raise ParameterError(f"counts must be 2-D, got shape {s.shape}")
    if not np.all(np.isfinite(s)) or np.any(s < 0):
        raise ParameterError("counts must be finite and non-negative")
    epsilon = check_epsilon(epsilon)
    rng = check_rng(rng)
    noisy = np.maximum(s + rng.laplace(0.0, 1.0 / epsilon, size=s.shape), 0.0)
    if top_percent is not None:
        t = check_positive(top_percent, "top_percent")
        if t > 100:
            raise ParameterError(f"top_percent must be in (0, 100], got {top_percent!r}")
        k = max(1, math.ceil(t / 100 * s.size))
        flat = noisy.ravel()
        kept = np.zeros_like(flat)
        top = np.argpartition(-flat, k - 1)[:k] if k < flat.size else np.arange(flat.size)
        kept[top] = flat[top]
        noisy = kept.reshape(s.shape)
    return _normalise_or_uniform(noisy)


def gaussian_heatmap(p, sigma: float) -> np.ndarray:
    r"""Heatmap ``H_p^sigma`` of Ghazi et al. 2023, section 2.3: a mass-preserving Gaussian filter.

    .. math:: H(x) = \sum_{x'} \frac{e^{-\|x - x'\|^2 / 2\sigma^2}}{Z(x')}\, p(x'), \qquad
              Z(x') = \sum_{x'' \in G_\Delta} e^{-\|x' - x''\|^2 / 2\sigma^2}

    on grid points ``(i / R, j / C)`` of the unit square. Each source's kernel is renormalised
    over the grid (unlike ``scipy.ndimage.gaussian_filter``, which loses mass at the border), and
    as kernel and ``Z`` factor over the two axes the filter is ``K_R p K_C^T`` with
    column-normalised 1-D kernels.

    Parameters
    ----------
    p : array_like, shape (R, C)
    sigma : float
        Standard deviation in unit-square units (``sigma = 2 / Delta`` is two cells).
    """
    p = as_float_array(p, "p")
    if p.ndim != 2:
        raise ParameterError(f"p must be 2-D, got shape {p.shape}")
    sigma = check_positive(sigma, "sigma")

    def kernel(n: int) -> np.ndarray:
        x = np.arange(n) / n
        K = np.exp(-((x[:, None] - x[None, :]) ** 2) / (2 * sigma**2))
        return K / K.sum(axis=0, keepdims=True)

    return kernel(p.shape[0]) @ p @ kernel(p.shape[1]).T


def points_to_cells(x, y, *, delta: int, bounds) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Snap points to a ``delta x delta`` grid over ``bounds = (x_min, x_max, y_min, y_max)``.

    Returns ``(row, col, inside)``: ``row`` indexes ``y`` and ``col`` indexes ``x`` (both in
    increasing order); points on the upper edges go to the last cell; ``inside`` flags the points
    within bounds (``row``/``col`` are -1 elsewhere).
    """
    delta = check_int(delta, "delta", low=1)
    try:
        x0, x1, y0, y1 = (float(b) for b in bounds)
    except (TypeError, ValueError):
        raise ParameterError(f"bounds must be (x_min, x_max, y_min, y_max), got {bounds!r}") from None
    if not (x1 > x0 and y1 > y0):
        raise ParameterError(f"bounds must satisfy x_min < x_max and y_min < y_max, got {bounds!r}")
    x = as_float_array(x, "x")
    y = as_float_array(y, "y")
    if x.shape != y.shape or x.ndim != 1:
        raise ParameterError(f"x and y must be 1-D of equal length, got {x.shape} and {y.shape}")
    inside = (x >= x0) & (x <= x1) & (y >= y0) & (y <= y1)
    col = np.minimum(np.floor((x - x0) / (x1 - x0) * delta), delta - 1)
    row = np.minimum(np.floor((y - y0) / (y1 - y0) * delta), delta - 1)
    col = np.where(inside, col, -1).astype(np.int64)
    row = np.where(inside, row, -1).astype(np.int64)
    return row, col, inside


def user_distributions(users, row, col, *, delta: int, weights=None) -> tuple[np.ndarray, sp.csr_array]:
    r"""Per-user distributions on the grid from check-ins / fixations (Ghazi et al. 2023, section 4).

    User ``u``'s distribution is ``p_u(c) = sum_{k: user_k = u, cell_k = c} w_k / sum_{k: user_k = u} w_k``
    (mass exactly 1, the paper's setting), so ``s = sum_u p_u`` has per-user sensitivity 1.

    Parameters
    ----------
    users : array_like, shape (m,)
        User id of each point (any hashable, sortable values).
    row, col : array_like of int, shape (m,)
        Cells from :func:`points_to_cells` (only points inside the grid).
    delta : int
        Grid side.
    weights : array_like, shape (m,), optional
        Non-negative point weights (default 1).

    Returns
    -------
    user_ids : ndarray, shape (n,)
        Sorted distinct users with positive total weight.
    P : scipy.sparse.csr_array, shape (n, delta * delta)
        Row ``k`` is the distribution of ``user_ids[k]`` (row-major cells).
    """
    delta = check_int(delta, "delta", low=1)
    users = np.asarray(users)
    row = np.asarray(row)
    col = np.asarray(col)
    m = users.shape[0] if users.ndim == 1 else -1
    if users.ndim != 1 or row.shape != (m,) or col.shape != (m,):
        raise ParameterError(f"users, row, col must be 1-D of equal length, got "
                         f"{users.shape}, {row.shape}, {col.shape}")
    if not (np.issubdtype(row.dtype, np.integer) and np.issubdtype(col.dtype, np.integer)):
        raise ParameterTypeError("row and col must be integer arrays")
    if m and (row.min() < 0 or col.min() < 0 or row.max() >= delta or col.max() >= delta):
        raise ParameterError(f"row and col must lie in [0, {delta - 1}] (drop points outside bounds first)")
    wts = np.ones(m) if weights is None else as_float_array(weights, "weights")
    if wts.shape != (m,) or not np.all(np.isfinite(wts)) or np.any(wts < 0):
        raise ParameterError("weights must be finite, non-negative and one per point")
    user_ids, uidx = np.unique(users, return_inverse=True)
    P = sp.csr_array((wts, (uidx, row * delta + col)), shape=(user_ids.size, delta * delta))
    P.sum_duplicates()
    totals = np.asarray(P.sum(axis=1)).ravel()
    keep = totals > 0
    P = sp.csr_array(sp.diags_array(1.0 / totals[keep]) @ P[keep.nonzero()[0]])
    return user_ids[keep], P
