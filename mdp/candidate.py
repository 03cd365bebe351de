"""What a mechanism builder returns: a candidate matrix and its build statistics.

Every registered builder (:func:`mdp.register`) returns one :class:`Candidate`. The registry
turns it into a :class:`~mdp.Mechanism`, whose constructor certifies the privacy guarantee on
exactly the matrix that will be sampled; a candidate is never sampled from directly.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["Candidate"]


@dataclass
class Candidate:
    """A builder's output, before certification.

    Exactly one of ``matrix`` and ``log_matrix`` is given.

    Attributes
    ----------
    matrix : ndarray (n, n) or None
        Row-stochastic transition matrix ``M[u, w] = Pr[M(u) = w]`` (up to solver tolerance).
    log_matrix : ndarray (n, n) or None
        Natural logarithms of the probabilities (``-inf`` for zeros), for mechanisms whose
        probabilities underflow float64 (``exp(-eps d / 2)`` below ~1e-308).
    stats : dict
        Build statistics (LP sizes, solver, gaps, ...), copied into ``Mechanism.stats``.
    """

    matrix: np.ndarray | None = None
    log_matrix: np.ndarray | None = None
    stats: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if (self.matrix is None) == (self.log_matrix is None):
            raise ValueError("a Candidate holds exactly one of matrix and log_matrix")
