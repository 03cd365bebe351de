"""Privacy and utility under a prior: where users are, what an optimal attacker infers, and the
Bayes-optimal remap of a mechanism's outputs.

* :mod:`~mdp.prior.prior` -- :class:`Prior`: uniform, from visit counts (smoothed), or given;
  :func:`load_prior` reads the ``--prior`` option.
* :mod:`~mdp.prior.adversary` -- the Bayes-optimal inference attack (Shokri et al. 2011, 2012),
  its expected error, Bayes vulnerability and multiplicative leakage (Alvim et al. 2012).
* :mod:`~mdp.prior.remap` -- the Bayes-optimal remap of any matrix mechanism's outputs
  (Chatzikokolakis, ElSalamouny, Palamidessi 2017), certified as a new mechanism.
"""

from .adversary import (
    AdversaryReport,
    adversary_error,
    bayes_vulnerability,
    expected_loss,
    measure,
    multiplicative_leakage,
    optimal_guesses,
)
from .prior import Prior, load_prior
from .remap import bayes_remap, remap

__all__ = ["Prior", "load_prior", "optimal_guesses", "adversary_error", "bayes_vulnerability",
           "multiplicative_leakage", "expected_loss", "measure", "AdversaryReport",
           "bayes_remap", "remap"]
