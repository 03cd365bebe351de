r"""The Bayes-optimal remap of a mechanism's outputs under a prior.

Given a mechanism ``K`` and a prior ``pi``, replacing each output ``z`` by

.. math:: r(z) = \arg\min_{z'} \sum_x \pi_x K_{xz}\, d(x, z')

minimises the expected loss ``sum_x pi_x sum_z K_xz d(x, r(z))`` over every remap, random ones
included (Chatzikokolakis, ElSalamouny, Palamidessi 2017, "Efficient utility improvement for
location privacy", section 4; the optimal stochastic remap LP has a deterministic optimum, one
minimum per output column). The remapped mechanism ``K R`` (``R[z, r(z)] = 1``) is
post-processing of ``K``: every column of ``K R`` is a sum of columns of ``K``, so the ratios
``K R[x, w] / K R[y, w]`` stay within those of ``K``. The guarantee is the one certified for
``K``; :func:`remap` still certifies the final matrix at that level, as for every mechanism.
"""

from __future__ import annotations

import numpy as np

from ..errors import ParameterError
from ..mechanism import Mechanism
from .adversary import expected_loss, optimal_guesses
from .prior import Prior

__all__ = ["bayes_remap", "remap", "REMAP_SUFFIX"]

#: Name suffix of a remapped mechanism (``"optimal+remap"``); files with it load as matrices.
REMAP_SUFFIX = "+remap"


def bayes_remap(K, prior: Prior, distances) -> np.ndarray:
    r"""``r(z)`` for every output: the point ``z'`` of least expected loss given ``z``.

    The same computation as the optimal attacker's guess
    (:func:`mdp.prior.adversary.optimal_guesses`) when the loss is the attacker's error: the
    remap's expected loss equals the attacker's expected error on ``K``.
    """
    return optimal_guesses(K, prior, distances)


def remap_matrix(K: np.ndarray, r: np.ndarray) -> np.ndarray:
    """``K R``: column ``w`` is the sum of the columns ``z`` with ``r(z) = w``."""
    n = K.shape[0]
    out = np.zeros((n, n))
    for w in np.unique(r):
        out[:, w] = K[:, r == w].sum(axis=1)
    return out


def remap(mech: Mechanism, prior: Prior | None = None) -> Mechanism:
    """The Bayes-optimal remap of ``mech`` under ``prior`` (None: uniform), certified.

    Returns
    -------
    Mechanism
        Named ``mech.name + "+remap"``, at ``mech.epsilon``, its matrix ``K R`` certified on
        creation; ``stats["remap"]`` records the prior, the outputs kept and both expected losses.

    Raises
    ------
    mdp.errors.ParameterError
        A mechanism without a matrix (vocabulary mode), or a prior of another size.
    """
    if not isinstance(mech, Mechanism) or getattr(mech, "kind", "matrix") != "matrix":
        raise ParameterError("remap needs a matrix mechanism (mdp.build in matrix mode)")
    space = mech.space
    prior = Prior.uniform(space.n) if prior is None else prior.check_space(space.n)
    K = mech.matrix
    r = bayes_remap(K, prior, space.distances)
    M = remap_matrix(K, r)
    before, after = expected_loss(K, prior, space.distances), expected_loss(M, prior, space.distances)
    stats = {"remap": {"of": mech.name, "prior": prior.source,
                       "outputs_kept": int(np.unique(r).size),
                       "expected_loss_before": before, "expected_loss_after": after,
                       "guarantee": "post-processing of the certified matrix, certified again"}}
    name = mech.name if mech.name.endswith(REMAP_SUFFIX) else mech.name + REMAP_SUFFIX
    return Mechanism(M, space, mech.epsilon, name=name,
                     params={**mech.params, "remap_prior": prior.source}, stats=stats)
