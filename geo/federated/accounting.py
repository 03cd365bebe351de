r"""Privacy and communication accounting of an interactive federated histogram protocol.

Privacy: the same sampled users answer every sub-query, so budgets add up by basic composition
(Bagdasaryan et al. 2022, 5.5): ``eps_user = sum_q eps_q``; shards within a sub-query hold disjoint users and cost
nothing extra (parallel composition). Communication: in sub-query ``q`` a client sends a vector of
``d_q`` integers (Bagdasaryan et al. 2022, 5.5, Table 1 "Comm" = ``sum_q d_q``; SecAgg overhead is ``O(log n + d)``
per client, section 7, so ``d`` is the proxy used throughout).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

__all__ = ["Accounting"]


@dataclass
class Accounting:
    """Per-round log: budget ``epsilons[q]`` and vector length ``vector_lengths[q]``.

    Non-private rounds log ``inf`` budget. ``extra_comm`` counts integers sent outside SecAgg
    vectors (the non-private baseline's 2 coordinates).
    """

    epsilons: list = field(default_factory=list)
    vector_lengths: list = field(default_factory=list)
    extra_comm: int = 0

    def add_round(self, epsilon: float, vector_length: int) -> None:
        self.epsilons.append(float(epsilon))
        self.vector_lengths.append(int(vector_length))

    @property
    def rounds(self) -> int:
        """Number of (sub-)queries, i.e. interaction rounds with the clients."""
        return len(self.epsilons)

    @property
    def epsilon_per_user(self) -> float:
        """Total budget per user, basic composition over rounds."""
        return float(math.fsum(self.epsilons))

    @property
    def communication(self) -> int:
        """Integers each client sends over the whole protocol (``sum_q d_q``)."""
        return int(sum(self.vector_lengths)) + int(self.extra_comm)

    @property
    def max_vector_length(self) -> int:
        """Largest single SecAgg vector (worst round)."""
        return max(self.vector_lengths, default=0)

    def as_dict(self) -> dict:
        return {"rounds": self.rounds, "epsilon_per_user": self.epsilon_per_user,
                "communication": self.communication, "max_vector_length": self.max_vector_length,
                "epsilons": list(self.epsilons), "vector_lengths": list(self.vector_lengths)}
