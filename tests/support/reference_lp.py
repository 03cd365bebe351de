"""Independent reference: the full OPTMech LP (seed P_OPTMECH) with scipy.optimize.linprog.

Used by tests to check optimality claims and lower bounds on small spaces. Deliberately written
as the textbook LP (every privacy row, no reduction), assembled with scipy.sparse.
"""

import numpy as np
from scipy.optimize import linprog
from scipy.sparse import coo_matrix, vstack


def _solve(D: np.ndarray, eps: float, u: np.ndarray, v: np.ndarray, w: np.ndarray,
           cap: float = np.inf, options: dict | None = None) -> tuple[float, np.ndarray]:
    """The worst-case-loss LP with the privacy rows ``M[u,w] <= e^{eps D[u,v]} M[v,w]`` given
    (coefficients above ``cap`` replaced by ``cap``; ``options`` for HiGHS)."""
    n = D.shape[0]
    nv = n * n + 1                                   # M[u, w] at u * n + w, then k
    rows = np.repeat(np.arange(n), n)
    loss_rows = coo_matrix((D.ravel(), (rows, np.arange(n * n))), shape=(n, nv)).tolil()
    loss_rows[:, n * n] = -1.0                       # sum_w D[u,w] M[u,w] - k <= 0
    r = np.arange(len(u))                            # M[u,w] - e^{eps D[u,v]} M[v,w] <= 0
    priv = coo_matrix((np.r_[np.ones(len(u)), -np.exp(np.minimum(eps * D[u, v], np.log(cap)))],
                       (np.r_[r, r], np.r_[u * n + w, v * n + w])), shape=(len(u), nv))
    A_ub = vstack([loss_rows.tocsr(), priv.tocsr()]).tocsr()
    A_eq = coo_matrix((np.ones(n * n), (rows, np.arange(n * n))), shape=(n, nv)).tocsr()
    c = np.zeros(nv)
    c[-1] = 1.0
    res = linprog(c, A_ub=A_ub, b_ub=np.zeros(A_ub.shape[0]), A_eq=A_eq, b_eq=np.ones(n),
                  bounds=(0, None), method="highs", options=options)
    if res.status != 0:
        raise RuntimeError(res.message)
    return float(res.fun), res.x[:-1].reshape(n, n)


def optimal_loss_linprog(D: np.ndarray, eps: float) -> tuple[float, np.ndarray]:
    """Minimum worst-case loss over eps-mDP mechanisms, and a minimiser (row-major M)."""
    n = D.shape[0]
    u, v, w = (a.ravel() for a in np.meshgrid(np.arange(n), np.arange(n), np.arange(n), indexing="ij"))
    keep = u != v
    return _solve(D, eps, u[keep], v[keep], w[keep])


def restricted_optimum_linprog(D: np.ndarray, eps: float, k: int) -> tuple[float, np.ndarray]:
    """The same LP with only the privacy rows from each input to its ``k`` nearest others: a
    relaxation (its value is a valid lower bound) whose optimum violates other rows."""
    n = D.shape[0]
    near = np.argsort(D, axis=1)[:, 1:k + 1]
    u = np.repeat(np.arange(n), k * n)
    v = np.repeat(near.ravel(), n)
    w = np.tile(np.arange(n), n * k)
    return _solve(D, eps, u, v, w)


#: Largest privacy coefficient ``e^{eps D}`` of :func:`optimal_loss_bracket`'s LPs, and the HiGHS
#: feasibility tolerances it solves them with.
BRACKET_CAP = 1e8
TIGHT = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}


def optimal_loss_bracket(D: np.ndarray, eps: float, cap: float = BRACKET_CAP
                         ) -> tuple[float, float]:
    """``(low, high)`` around the minimum worst-case loss, from LPs whose coefficients stay at
    most ``cap``: ``low`` drops every privacy row with ``e^{eps D[u,v]} > cap`` (a relaxation),
    ``high`` replaces the coefficient by ``cap`` (a restriction). Both equal the optimum when no
    coefficient exceeds ``cap``. ``high`` is ``inf`` where HiGHS fails on the restriction
    with both its defaults and :data:`TIGHT` (seen on two scales at a cap of 1e8).

    Past about 1e10 the full LP is beyond HiGHS's tolerances (a dual simplex was seen to stop at
    32.7 where the optimum is 0.62, and at a cap of 1e9 to fail; past e^709 a coefficient is not
    even a float), while a row with a coefficient above ``cap`` only constrains an entry to at
    least ``1/cap`` of another: the relaxation is the optimum to about 1e-7 wherever such
    entries carry little loss (the restriction, whose rows force entries of ``1/cap``, is
    looser: about 1e-5).
    """
    n = D.shape[0]
    u, v, w = (a.ravel() for a in np.meshgrid(np.arange(n), np.arange(n), np.arange(n), indexing="ij"))
    keep = u != v
    u, v, w = u[keep], v[keep], w[keep]
    small = eps * D[u, v] <= np.log(cap)
    if small.all():
        value, _ = _solve(D, eps, u, v, w, options=TIGHT)
        return value, value
    low, _ = _solve(D, eps, u[small], v[small], w[small], options=TIGHT)
    for options in (TIGHT, None):
        try:
            return low, _solve(D, eps, u, v, w, cap=cap, options=options)[0]
        except RuntimeError:
            continue
    return low, np.inf
