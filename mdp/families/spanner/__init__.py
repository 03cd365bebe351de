r"""SpannerMech (Bordenabe, Chatzikokolakis, Palamidessi, CCS 2014; Imola et al. 2022, section 5).

* :mod:`~mdp.families.spanner.formulation` -- the greedy delta-spanner and its path distances.
* :mod:`~mdp.families.spanner.tuning` -- :class:`SpannerTuning`, the thresholds and tolerances.
* :mod:`~mdp.families.spanner.plan` -- :func:`plan`, every decision about a build's path.
* :mod:`~mdp.families.spanner.build` -- :func:`build_spanner`, registered as ``"spanner"``.
"""

from .build import PARAMS, build_spanner
from .formulation import greedy_spanner, spanner_distances
from .plan import default_full_solver, default_lazy_solver, default_method, plan
from .tuning import SpannerTuning

__all__ = ["build_spanner", "PARAMS", "plan", "SpannerTuning", "greedy_spanner",
           "spanner_distances", "default_method", "default_lazy_solver", "default_full_solver"]
