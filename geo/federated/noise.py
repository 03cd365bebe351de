r"""Polya noise shares and the distributed discrete Laplace mechanism (Bagdasaryan et al. 2022, section 4).

Every client adds ``X - Y`` with ``X, Y ~ Polya(alpha, beta)`` i.i.d. (Definition 4.1):

.. math:: P(X = k) = \binom{\alpha + k - 1}{\alpha - 1} \beta^k (1 - \beta)^\alpha,

which is the negative binomial law with ``alpha`` "successes" and success probability
``1 - beta``. In numpy this is ``rng.negative_binomial(alpha, 1 - beta)``: passing ``p = beta``
draws from the wrong law (mean ``alpha (1-beta)/beta`` instead of ``alpha beta/(1-beta)``).

Theorem 4.1: with ``alpha = 1/S`` and ``beta = exp(-eps/Delta)``, the sum of the ``S`` shares is
discrete Laplace, ``P(Z = k) = (1-beta)/(1+beta) beta^|k|``, which is eps-DP for an integer query
of L1 sensitivity ``Delta``. Sums of Polya variables with the same ``beta`` add their ``alpha``
(a sum of negative binomials), so the noise the server sees in a shard can be drawn exactly in
aggregate: ``NB(n alpha, 1-beta) - NB(n alpha, 1-beta)`` for ``n`` surviving clients. This is what
makes simulating millions of clients cheap, with no approximation.

Dropouts (section 4, "Handling dropouts"): alpha is over-provisioned to
``1 / ((1 - delta_drop) S)`` so that the worst case of ``(1 - delta_drop) S`` survivors still sums
to total ``alpha >= 1`` (discrete Laplace when exactly the provisioned fraction drops out); when
fewer clients drop out the server sees *more* noise than needed: variance
``n alpha * 2 beta / (1 - beta)^2``.
"""

from __future__ import annotations

import math

import numpy as np

from mdp.errors import ParameterError
from mdp.validation import check_epsilon, check_int, check_positive, check_probability, check_rng

__all__ = [
    "discrete_laplace_beta",
    "discrete_laplace_variance",
    "noise_std",
    "epsilon_for_std",
    "polya",
    "client_noise_share",
    "dp_alpha",
    "surviving_clients",
    "shard_noise",
    "shard_noise_variance",
]


def discrete_laplace_beta(epsilon: float, sensitivity: float = 1) -> float:
    r"""``beta = exp(-epsilon / Delta)``, the Polya / discrete Laplace parameter (Theorem 4.1)."""
    epsilon = check_epsilon(epsilon)
    sensitivity = check_positive(sensitivity, "sensitivity")
    return math.exp(-epsilon / sensitivity)


def discrete_laplace_variance(epsilon: float, sensitivity: float = 1) -> float:
    r"""Variance of the discrete Laplace law of eq. (4): ``2 beta / (1 - beta)^2``."""
    b = discrete_laplace_beta(epsilon, sensitivity)
    return 2.0 * b / (1.0 - b) ** 2


def noise_std(epsilon: float, sensitivity: float = 1) -> float:
    r"""tau(eps, Delta) of eq. (5): ``sqrt(2 beta / (1 - beta)^2)``, ``beta = exp(-eps/Delta)``.

    ``epsilon = 0`` (no budget left) gives ``inf``.
    """
    epsilon = check_positive(epsilon, "epsilon", allow_zero=True)
    if epsilon == 0:
        return math.inf
    return math.sqrt(discrete_laplace_variance(epsilon, sensitivity))


def epsilon_for_std(sigma: float, sensitivity: float = 1) -> float:
    r"""phi(sigma) of eq. (8), the inverse of :func:`noise_std`.

    .. math:: \varepsilon = -\Delta \ln\frac{\sigma^2 + 1 - \sqrt{2\sigma^2 + 1}}{\sigma^2}

    Written as ``Delta * log1p`` of a rearranged ratio so that large ``sigma`` (tiny eps, the
    first sub-queries of the adaptive algorithm) does not lose all digits to cancellation:
    ``(s2 + 1 - r)/s2 = 1 - (r - 1)/s2`` with ``r = sqrt(2 s2 + 1)``, and
    ``(r - 1) = 2 s2 / (r + 1)``.
    """
    sigma = check_positive(sigma, "sigma")
    sensitivity = check_positive(sensitivity, "sensitivity")
    s2 = sigma * sigma
    r = math.sqrt(2.0 * s2 + 1.0)
    return -sensitivity * math.log1p(-2.0 / (r + 1.0))


def polya(alpha: float, beta: float, size=None, *, rng=None) -> np.ndarray:
    r"""Draw Polya(alpha, beta) variables (Definition 4.1) = ``negative_binomial(alpha, 1 - beta)``.

    Parameters
    ----------
    alpha : float
        Shape, > 0 (``1/S`` for one of ``S`` clients).
    beta : float
        In (0, 1): ``exp(-eps/Delta)``.
    size : int or tuple, optional
    rng : None, int or numpy.random.Generator
    """
    alpha = check_positive(alpha, "alpha")
    beta = check_probability(beta, "beta", inclusive_low=False, inclusive_high=False)
    rng = check_rng(rng)
    return rng.negative_binomial(alpha, 1.0 - beta, size=size)


def dp_alpha(clients: int, provisioned_dropout: float = 0.0) -> float:
    r"""Per-client Polya shape: ``alpha = 1 / ((1 - delta_drop) S)`` (Algorithm 1 line 5).

    ``(1 - delta_drop) S`` is the paper's "DP shard size" (e.g. 9,000 for ``S = 10,000`` and 10%
    dropout).
    """
    clients = check_int(clients, "clients", low=1)
    d = check_probability(provisioned_dropout, "provisioned_dropout", inclusive_high=False)
    return 1.0 / ((1.0 - d) * clients)


def surviving_clients(clients: int, dropout: float) -> int:
    """Clients of a shard that report back: ``clients - floor(dropout * clients)``.

    A fixed count (the worst case the deployment is provisioned for) keeps the privacy analysis
    exact; the identity of who drops out is random (see :func:`geo.federated.secagg.plan_shards`).
    """
    clients = check_int(clients, "clients", low=1)
    dropout = check_probability(dropout, "dropout", inclusive_high=False)
    return clients - int(math.floor(dropout * clients + 1e-9))


def client_noise_share(size, epsilon: float, *, alpha: float, sensitivity: float = 1,
                       rng=None) -> np.ndarray:
    r"""One client's integer noise share ``X - Y``, ``X, Y ~ Polya(alpha, exp(-eps/Delta))``
    (Algorithm 1, ``Noise``)."""
    b = discrete_laplace_beta(epsilon, sensitivity)
    rng = check_rng(rng)
    return polya(alpha, b, size, rng=rng) - polya(alpha, b, size, rng=rng)


def shard_noise(size, epsilon: float, *, clients: int, dropout: float = 0.0,
                provisioned_dropout: float | None = None, sensitivity: float = 1,
                rng=None) -> np.ndarray:
    r"""The integer noise the server sees in one secure-aggregation shard, drawn exactly.

    ``clients`` clients are admitted, ``floor(dropout * clients)`` drop out, and each survivor
    adds ``X_i - Y_i`` with ``X_i, Y_i ~ Polya(alpha, beta)``,
    ``alpha = 1 / ((1 - provisioned_dropout) * clients)``, ``beta = exp(-epsilon/sensitivity)``.
    The sum over the ``n`` survivors is ``NB(n alpha, 1 - beta) - NB(n alpha, 1 - beta)`` because
    Polya variables with the same ``beta`` add their ``alpha`` (Bagdasaryan et al. 2022, Theorem 4.1 and eq. 3).

    Parameters
    ----------
    size : int or tuple
        Shape of the noise vector (the histogram length).
    epsilon : float
        Privacy budget of this query.
    clients : int
        Clients admitted to the shard (at most ``S_max``).
    dropout : float, default 0
        Fraction that drops out (realised).
    provisioned_dropout : float, optional
        Dropout rate the noise shares are over-provisioned for; defaults to ``dropout``.
        The guarantee holds only while ``dropout <= provisioned_dropout``.
    sensitivity : float, default 1
        L1 sensitivity ``Delta`` of one client's vector.
    rng : None, int or numpy.random.Generator

    Returns
    -------
    numpy.ndarray of int64
        ``Z`` with ``Var Z = n alpha * 2 beta / (1 - beta)^2``; exactly discrete Laplace when
        ``n alpha = 1``.

    Raises
    ------
    ValueError
        When more clients drop out than provisioned (the shard would not be eps-DP; real SecAgg
        aborts such a shard, Bagdasaryan et al. 2022, section 4).
    """
    epsilon = check_epsilon(epsilon)
    pd = dropout if provisioned_dropout is None else provisioned_dropout
    alpha = dp_alpha(clients, pd)
    n = surviving_clients(clients, dropout)
    if n * alpha < 1.0 - 1e-12:
        raise ParameterError(
            f"dropout {dropout!r} exceeds provisioned_dropout {pd!r}: {n} survivors of {clients} "
            f"carry total alpha {n * alpha:.4f} < 1, the shard would not be {epsilon}-DP")
    b = discrete_laplace_beta(epsilon, sensitivity)
    rng = check_rng(rng)
    total = n * alpha
    return (rng.negative_binomial(total, 1.0 - b, size=size)
            - rng.negative_binomial(total, 1.0 - b, size=size)).astype(np.int64)


def shard_noise_variance(epsilon: float, *, clients: int, dropout: float = 0.0,
                         provisioned_dropout: float | None = None,
                         sensitivity: float = 1) -> float:
    r"""Variance of :func:`shard_noise` per coordinate: ``n alpha * 2 beta / (1 - beta)^2``.

    With no dropout but ``provisioned_dropout = d`` this is the discrete Laplace variance times
    ``1 / (1 - d)`` (up to the floor in the survivor count): the price of over-provisioning.
    """
    pd = dropout if provisioned_dropout is None else provisioned_dropout
    alpha = dp_alpha(clients, pd)
    n = surviving_clients(clients, dropout)
    return n * alpha * discrete_laplace_variance(epsilon, sensitivity)
