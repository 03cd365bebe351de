r"""Experimental protocol of Gilbert & McMillan (2018), section 5: sources, EMD error, trials.

A trial draws unit sources ``f0`` (:func:`random_sources`), reads
:math:`y = A f_0 + N(0, \sigma^2 I)`, recovers ``f_hat`` with
:func:`geo.heatsource.recovery.recover` at :math:`\rho = \sigma\sqrt m` and scores it by
:func:`emd_error`, the EMD between the normalised ``f0`` and ``f_hat`` through
:func:`mdp.emd.emd_1d` with positions ``i/n``, i.e. **in [0, 1] units** (one grid step is
``1/n``). :func:`run_trials` repeats this; :func:`mean_ci` gives the mean and its Student-t
interval. Shared by the ``mdp heatsource`` command and ``mdp experiment heatsources``.
"""

from __future__ import annotations

import numpy as np

from mdp.emd import emd_1d
from mdp.errors import ParameterError
from mdp.validation import check_int, check_positive, check_rng

from .model import check_matrix, source_positions
from .recovery import CompressedMatrix, recover

__all__ = ["emd_error", "mean_ci", "random_sources", "run_trials"]


def random_sources(n: int, k: int = 1, *, rng=None) -> np.ndarray:
    """Unit-intensity source vector (Gilbert & McMillan 2018, section 5).

    ``k = 1``: the single source sits at 0.5 (index ``n//2 - 1``, position ``(n//2)/n``), as in
    the paper; ``k > 1``: ``k`` distinct locations drawn uniformly at random.

    Parameters
    ----------
    n : int
        Grid size, ``n >= 2``.
    k : int
        Number of sources, ``1 <= k <= n``.
    rng : None, int or numpy.random.Generator, keyword-only
        Used only when ``k > 1``.

    Returns
    -------
    ndarray of shape (n,)
        Entries in {0, 1}, ``k`` ones.
    """
    n = check_int(n, "n", low=2)
    k = check_int(k, "k", low=1, high=n)
    f = np.zeros(n)
    if k == 1:
        f[n // 2 - 1] = 1.0
    else:
        f[check_rng(rng).choice(n, size=k, replace=False)] = 1.0
    return f


def emd_error(f0, f_hat, *, zero_policy: str = "uniform") -> float:
    r"""EMD between the normalised true and recovered source vectors, **in [0, 1] units**.

    :math:`\mathrm{EMD}(f_0/\|f_0\|_1, \hat f/\|\hat f\|_1)` on positions ``i/n`` (Gilbert &
    McMillan 2018, section 5), computed by :func:`mdp.emd.emd_1d`. Multiply by ``n`` for grid
    steps.

    Parameters
    ----------
    f0, f_hat : array_like of shape (n,)
        True and recovered source vectors (nonnegative; ``f_hat`` is clipped at 0 because solver
        output may hold ``-1e-12``).
    zero_policy : {"uniform", "nan"}
        When ``f_hat = 0`` the EMD is undefined: ``"uniform"`` (default) scores the estimate as
        the uniform distribution on the grid (an analyst who learned nothing), ``"nan"`` returns
        NaN. Experiments count these trials either way.

    Returns
    -------
    float
    """
    f0 = np.asarray(f0, dtype=float)
    f_hat = np.clip(np.asarray(f_hat, dtype=float), 0.0, None)
    if f0.ndim != 1 or f0.shape != f_hat.shape:
        raise ParameterError(f"f0 and f_hat must be 1-D of equal length, got {f0.shape} and "
                             f"{f_hat.shape}")
    if zero_policy not in ("uniform", "nan"):
        raise ParameterError(f"zero_policy must be 'uniform' or 'nan', got {zero_policy!r}")
    if f_hat.sum() <= 0:
        if zero_policy == "nan":
            return float("nan")
        f_hat = np.ones_like(f0)
    return emd_1d(f0, f_hat, positions=source_positions(f0.shape[0]))


def run_trials(A, sigma: float, trials: int, *, k: int = 1, sources=None, rng=None) -> list[dict]:
    r"""Repeat: sources, readings :math:`A f_0 + N(0, \sigma^2 I)`, recovery, EMD error.

    Recovery is :func:`geo.heatsource.recovery.recover` with :math:`\rho = \sigma\sqrt m`
    (Gilbert & McMillan 2018, Algorithm 1); the error is :func:`emd_error` (section 5).

    Parameters
    ----------
    A : ndarray (m, n) or CompressedMatrix
    sigma : float
        Per-sensor noise (e.g. ``SensorCalibration.sigma`` for the private algorithm).
    trials : int
    k : int
        Number of unit sources (``k = 1``: at 0.5; else uniformly at random), unless ``sources``
        (a fixed source vector) is given.
    sources : array_like of shape (n,) or None
        Fixed source vector used in every trial.
    rng : None, int or numpy.random.Generator, keyword-only

    Returns
    -------
    list of dict
        One per trial: ``emd`` (zero policy "uniform"), ``emd_nan`` (NaN when ``f = 0``),
        ``policy``, ``infeasible``, ``zero``, ``optimal``, ``gap``, ``seconds``, ``f0``, ``f``,
        the readings ``y``, ``noise_norm`` (:math:`\|y - Af_0\|_2`), ``rho`` (radius used) and
        ``mass`` (:math:`\|\hat f\|_1`).
    """
    rng = check_rng(rng)
    trials = check_int(trials, "trials", low=1)
    full = A.A if isinstance(A, CompressedMatrix) else check_matrix(A)
    m, n = full.shape
    sigma = check_positive(sigma, "sigma")
    out = []
    for _ in range(trials):
        f0 = np.asarray(sources, dtype=float) if sources is not None else random_sources(n, k, rng=rng)
        noise = sigma * rng.standard_normal(m)
        y = full @ f0 + noise
        res = recover(A, y, sigma * np.sqrt(m))
        out.append(dict(emd=emd_error(f0, res.f), emd_nan=emd_error(f0, res.f, zero_policy="nan"),
                        policy=res.policy, infeasible=res.infeasible, zero=res.is_zero,
                        optimal=res.optimal, gap=res.gap, seconds=res.seconds, f0=f0, f=res.f,
                        y=y, noise_norm=float(np.linalg.norm(noise)), rho=res.rho,
                        mass=res.objective))
    return out


def mean_ci(values, level: float = 0.95) -> tuple[float, float]:
    r"""Mean and half-width of the Student-t confidence interval of the mean.

    :math:`\bar x \pm t_{(1+\text{level})/2,\,N-1}\, s/\sqrt N` (Gilbert & McMillan 2018 draw
    95 % bars over 10 trials). NaNs are ignored.

    Parameters
    ----------
    values : array_like
    level : float
        Confidence level in (0, 1).

    Returns
    -------
    mean : float
        NaN when no value is left.
    half_width : float
        NaN with fewer than two values.
    """
    from scipy.stats import t as student_t

    x = np.asarray(values, dtype=float)
    x = x[~np.isnan(x)]
    if x.size == 0:
        return float("nan"), float("nan")
    if x.size < 2:
        return float(x.mean()), float("nan")
    half = student_t.ppf(0.5 + level / 2, x.size - 1) * x.std(ddof=1) / np.sqrt(x.size)
    return float(x.mean()), float(half)
