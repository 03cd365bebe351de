r"""OPTMech: the exact optimum of the worst-case-loss LP (Imola et al. 2022, section 2.1).

.. math:: \mathcal{P}_{\mathrm{OPTMECH}}(\epsilon):\ \min_{M, k} k \quad\text{s.t.}\quad
          \sum_w D_{uw} M_{uw} \le k,\ \sum_w M_{uw} = 1,\ M \ge 0,\
          M_{uw} \le e^{\epsilon D_{uv}} M_{vw}\ \ \forall u \ne v, w

* :mod:`~mdp.families.optimal.formulation` -- the LP's rows on a space (redundant pairs,
  how nearly points lie between others).
* :mod:`~mdp.families.optimal.tuning` -- :class:`OptimalTuning`, the thresholds and tolerances.
* :mod:`~mdp.families.optimal.plan` -- :func:`plan`, every decision about a build's path.
* :mod:`~mdp.families.optimal.build` -- :func:`build_optimal`, registered as ``"optimal"``.
"""

from .build import PARAMS, build_optimal
from .formulation import (
    HIGHS_MAX_N,
    OPTIMAL_MAX_N,
    QUICK_MAX_N,
    gap_target_met,
    is_map_space,
    left_out_rows,
    median_detour,
    median_two_hop_slack,
    nonredundant_pairs,
    two_hop_distances,
)
from .plan import METHODS, default_knn, default_method, default_solver, plan
from .tuning import OptimalTuning

__all__ = ["build_optimal", "PARAMS", "plan", "OptimalTuning", "two_hop_distances",
           "nonredundant_pairs", "median_detour", "median_two_hop_slack", "is_map_space",
           "gap_target_met", "left_out_rows", "default_knn", "default_solver", "default_method",
           "METHODS", "OPTIMAL_MAX_N", "HIGHS_MAX_N", "QUICK_MAX_N"]
