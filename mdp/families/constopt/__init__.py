r"""ConstOPTMech (Imola et al. 2022, section 3.2, Algorithm 1, Theorems 1-2).

* :mod:`~mdp.families.constopt.formulation` -- the LP at ``eps / 2`` (replacement function,
  free entries, collapsed bounds, free-free rows) and the repair of its solutions.
* :mod:`~mdp.families.constopt.ipm` -- the row-block interior point method with a certified gap.
* :mod:`~mdp.families.constopt.tuning` -- :class:`ConstOPTTuning`, the plan's thresholds.
* :mod:`~mdp.families.constopt.plan` -- :func:`plan`, every decision about a build's path.
* :mod:`~mdp.families.constopt.build` -- :func:`build_constopt`, registered as ``"constopt"``.
"""

from .build import PARAMS, SELECTION_Q, build_constopt, solve_constopt_lp
from .formulation import (
    constopt_lp,
    free_free_pairs,
    left_out_rows,
    lipschitz_log_matrix,
    log_bound_factors,
    nn_replacement,
    theorem1_counts,
)
from .plan import plan
from .tuning import ConstOPTTuning

__all__ = ["build_constopt", "solve_constopt_lp", "PARAMS", "SELECTION_Q", "plan",
           "ConstOPTTuning", "nn_replacement", "free_free_pairs", "theorem1_counts",
           "log_bound_factors", "lipschitz_log_matrix", "constopt_lp", "left_out_rows"]
