r"""Sweeps over epsilon: each LP build starts from the rows its neighbour's build ended with.

A sweep (the targets of ``mdp curves``, the builds of :func:`mdp.calibrate`) solves the same
worst-case-loss LP (Imola et al. 2022, section 2.1) at nearby epsilons. Its optimum is pinned by a
few privacy rows per entry, ``M_uw = e^{\epsilon D_uv} M_vw``, and which rows bind changes little
from one epsilon to the next: the row generation of the next build can start from them instead of
rediscovering them round by round. A :class:`Sweep` carries them from build to build:

* a neighbour within ``near`` in log-epsilon (a calibration's second build, 0.5% away): every row
  of its last LP (a 100-point city box at eps 0.0315 per km: 1.5 s against 7.1 s cold);
* a farther one, within ``far``: the rows binding its matrix within ``rtol``
  (:func:`binding_rows`; at twice the epsilon, 13.1 s against 21.4 s; every row of the last LP
  there made each interior point iteration dearer and gained less, 19.6 s);
* beyond ``far``, none: the rows binding a near-uniform optimum say little about those of a
  near-exact one (clustered points, n = 100, from eps x median 0.26 to 12: 82.8 s against
  55.0 s cold).

Rows only restrict the starting LP: every row missing is still generated, every bound is still a
relaxation's and the returned matrix is certified as in a cold build, so a sweep changes the time
of a build, never what is certified.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..params import Param, instance_param
from .solve import separate

__all__ = ["Sweep", "binding_rows", "sweep_param"]


@dataclass(eq=False)
class Sweep:
    """The state of a sweep over epsilon on one space: what the last LP build left for the next.

    Pass the same object as ``sweep=`` to each build of the sweep (:func:`mdp.calibrate` and
    ``mdp curves`` do): a build reads the rows its predecessor left (:meth:`start_rows`) and
    leaves its own (:meth:`record`). A build on another space (another ``n``) starts cold.

    Attributes
    ----------
    epsilon : float or None
        The level of the last build's rows (None: no build yet).
    keys : int ndarray or None
        The privacy rows of the last build's final LP, as keys ``(u n + v) n + w``.
    matrix : ndarray or None
        The last build's matrix (its binding rows start farther builds).
    builds : int
        Builds recorded so far.
    """

    epsilon: float | None = None
    keys: np.ndarray | None = None
    matrix: np.ndarray | None = None
    builds: int = 0

    def __repr__(self) -> str:
        # recorded in each mechanism's params: not the rows nor the matrix
        return "Sweep()"

    def record(self, epsilon: float, matrix: np.ndarray, rows: tuple | None = None) -> None:
        """Leave a build's level, matrix and (where it has them) its final LP's rows."""
        n = matrix.shape[0]
        self.epsilon, self.matrix, self.builds = float(epsilon), matrix, self.builds + 1
        self.keys = (None if rows is None else
                     (np.asarray(rows[0], np.int64) * n + rows[1]) * n + rows[2])

    def clear(self) -> None:
        """Drop the rows and the matrix (a finished sweep: its mechanisms keep it in their
        params)."""
        self.keys = self.matrix = None

    def start_rows(self, distances: np.ndarray, allowed: np.ndarray, epsilon: float, *,
                   rtol: float, near: float, far: float,
                   scale: float = 1.0) -> tuple[tuple | None, dict]:
        """The rows a build at ``epsilon`` starts with besides its own, and what they are.

        Within ``near`` in log-epsilon of the last build: every row of its last LP; within
        ``far``: the rows binding its matrix within ``rtol``; beyond: none (a cold start).
        ``scale``: the level of the rows per unit of epsilon (SpannerMech's ``1 / stretch``).
        Returns ``(rows or None, record)``, the record for the build's statistics.
        """
        n = distances.shape[0]
        if self.epsilon is None or self.matrix is None or self.matrix.shape != (n, n):
            return None, {"from": "none (a cold start)"}
        level = scale * epsilon
        record = {"from_epsilon": self.epsilon / scale}
        step = abs(math.log(level / self.epsilon))
        if step > far:
            record["from"] = (f"none (a cold start): the neighbour is {math.exp(step):.3g}x away, "
                              f"beyond {math.exp(far):.3g}x")
            return None, record
        if self.keys is not None and step <= near:
            keys = self.keys
            rows = (keys // (n * n), (keys // n) % n, keys % n)
            record["from"] = f"every row of the neighbour's last LP (within {near:g} in log-eps)"
        else:
            rows = binding_rows(self.matrix, distances, self.epsilon, allowed, rtol=rtol)
            record["from"] = f"the rows binding the neighbour's matrix within {rtol:g}"
        record["rows"] = int(len(rows[0]))
        return rows, record


def binding_rows(M: np.ndarray, distances: np.ndarray, epsilon: float, allowed: np.ndarray, *,
                 rtol: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""The privacy rows that (nearly) bind ``M``: for each entry, its most binding row in either
    role, kept when it binds within ``rtol``.

    For each entry the row of :func:`~mdp.worst_case.solve.separate` (the ``v`` maximising
    ``e^{-\epsilon D_uv} M_uw - M_vw`` for ``(u, w)``, the ``u`` maximising it for ``(v, w)``),
    kept where ``M_uw > 0`` and ``e^{-\epsilon D_uv} M_uw \ge (1 - rtol) M_vw``: at most
    ``2 n^2`` rows, those an optimum at this epsilon is pinned by.

    Returns
    -------
    u, v, w : int arrays of the rows, unique.
    """
    D = np.asarray(distances, dtype=float)
    M = np.asarray(M, dtype=float)
    u, v, w, _ = separate(M, D, epsilon, allowed, -np.inf)
    with np.errstate(under="ignore"):
        top = np.exp(-epsilon * D[u, v]) * M[u, w]
    keep = (M[u, w] > 0) & (top >= (1.0 - rtol) * M[v, w])
    return u[keep], v[keep], w[keep]


def sweep_param() -> Param:
    """The ``sweep`` parameter rule of an LP family: a :class:`Sweep` or None."""
    return instance_param(Sweep, "a sweep over epsilon: the build starts from the rows its "
                                 "neighbour left and leaves its own (mdp.calibrate and mdp curves "
                                 "pass one; None: cold)",
                          spelled="Sweep (mdp.worst_case.sweep_start.Sweep)")
