"""Independent reference: the full OPTMech LP (seed P_OPTMECH) with scipy.optimize.linprog.

Used by tests to check optimality claims and lower bounds on small spaces.
"""

import numpy as np
from scipy.optimize import linprog
from scipy.sparse import coo_matrix


def optimal_loss_linprog(D: np.ndarray, eps: float) -> tuple[float, np.ndarray]:
    n = D.shape[0]
    nv = n * n + 1                       # M (row-major) then k
    rows, cols, vals, rhs = [], [], [], []
    r = 0
    for u in range(n):                   # loss rows: sum_w D[u,w] M[u,w] - k <= 0
        for w in range(n):
            rows.append(r); cols.append(u * n + w); vals.append(D[u, w])
        rows.append(r); cols.append(n * n); vals.append(-1.0); rhs.append(0.0); r += 1
    for u in range(n):                   # privacy: M[u,w] - e^{eps D[u,v]} M[v,w] <= 0
        for v in range(n):
            if u == v:
                continue
            f = np.exp(eps * D[u, v])
            for w in range(n):
                rows += [r, r]; cols += [u * n + w, v * n + w]; vals += [1.0, -f]; rhs.append(0.0); r += 1
    A_ub = coo_matrix((vals, (rows, cols)), shape=(r, nv)).tocsr()
    A_eq = coo_matrix((np.ones(n * n), (np.repeat(np.arange(n), n), np.arange(n * n))), shape=(n, nv)).tocsr()
    c = np.zeros(nv); c[-1] = 1.0
    res = linprog(c, A_ub=A_ub, b_ub=rhs, A_eq=A_eq, b_eq=np.ones(n), bounds=(0, None), method="highs")
    if res.status != 0:
        raise RuntimeError(res.message)
    return float(res.fun), res.x[:-1].reshape(n, n)
