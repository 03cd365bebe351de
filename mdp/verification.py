r"""The one privacy check every mechanism's final matrix passes through.

:func:`certify` takes a candidate transition matrix and the guarantee it claims (pure
``eps``-mDP, seed imola2022 Definition 1) and either returns a matrix that provably satisfies it
or raises :class:`PrivacyError`. It never returns a matrix it has not measured.

Procedure
---------
1. *Stochasticity.* Entries must be finite; negatives down to ``-NEGATIVE_ATOL`` (LP feasibility
   tolerance) are set to 0 and rows within ``ROWSUM_ATOL`` of 1 are rescaled to sum to 1.
   Anything worse is refused.
2. *Measure.* The exact pure level ``eps_tight(M, D, 0)`` (:func:`mdp.accounting.eps_tight`).
   The matrix passes when ``eps_tight <= eps * (1 + PURE_EPS_RTOL)``, ``PURE_EPS_RTOL = 1e-9``.
3. *Repair* (only when the defect is a solver-tolerance artefact). LP solvers meet each row to
   ~1e-7 *absolute*, which for tiny probabilities is an unbounded *multiplicative* violation
   (a 1e-15 entry beside an exact 0 is an infinite ratio). :func:`repair_to_private`

   a. raises every column to its log-Lipschitz envelope at ``eps``,
      ``\tilde M_{vw} = \max_u M_{uw} e^{-\epsilon D_{uv}}`` (a maximum of eps-Lipschitz functions
      of ``v`` in log space, so every column satisfies eps-mDP and ``\tilde M \ge M``), and
      renormalises the rows, which perturbs log-ratios by the spread of the row sums;
   b. mixes in the uniform matrix ``U`` (ratio 1, strictly inside the convex set of eps-mDP
      matrices): ``(1-t) \tilde M + t U`` satisfies row ``(u, v, w)`` iff
      ``t >= V / (V + (e^{eps D_uv} - 1)/n)`` with ``V = \tilde M_uw - e^{eps D_uv} \tilde M_vw``;
      the smallest ``t`` over all triples is used.

   The result is measured again (step 2). The repair is refused when it would move any entry by
   more than ``REPAIR_ATOL`` (then the matrix is simply not private and no tolerance explains it).

The outcome is returned as a dict recorded in ``Mechanism.stats["privacy"]``.
"""

from __future__ import annotations

import numpy as np

from .accounting import eps_tight
from .errors import PrivacyError

__all__ = ["PrivacyError", "certify", "repair_to_private", "PURE_EPS_RTOL", "REPAIR_ATOL"]

#: Relative tolerance on the measured pure eps (floating-point rounding of exp/log).
PURE_EPS_RTOL = 1e-9
#: Largest negative entry accepted as solver tolerance (clipped to 0).
NEGATIVE_ATOL = 1e-7
#: Largest deviation of a row sum from 1 accepted as solver tolerance (rows are rescaled).
ROWSUM_ATOL = 1e-6
#: Largest absolute change of an entry that the repair may make.
REPAIR_ATOL = 1e-6



def _envelope(M: np.ndarray, D: np.ndarray, eps: float) -> np.ndarray:
    """Column-wise log-Lipschitz envelope ``max_u M[u, w] exp(-eps D[u, v])``."""
    n = M.shape[0]
    K = np.exp(-eps * D)
    out = np.empty_like(M)
    block = max(1, int(8e6 // (n * n)))
    for s in range(0, n, block):
        out[s:s + block] = np.max(K[:, s:s + block, None] * M[:, None, :], axis=0)
    return out


def repair_to_private(M: np.ndarray, distances: np.ndarray, epsilon: float) -> tuple[np.ndarray, float]:
    """Envelope at ``epsilon``, renormalise, then the smallest uniform mix (module docstring, 3).

    Returns
    -------
    (matrix, t) : the repaired row-stochastic matrix and the uniform weight ``t`` used.
    """
    D = np.asarray(distances, dtype=float)
    n = D.shape[0]
    E = _envelope(np.asarray(M, dtype=float), D, epsilon)
    E /= E.sum(axis=1, keepdims=True)
    with np.errstate(over="ignore", invalid="ignore"):
        Ku = np.exp(epsilon * D)
        den = (Ku - 1.0) / n
        np.fill_diagonal(den, np.inf)
        t = 0.0
        block = max(1, int(4e6 // (n * n)))
        for s in range(0, n, block):
            X = E[:, s:s + block]
            V = X[:, None, :] - Ku[:, :, None] * X[None, :, :]          # V[u, v, w]
            if np.isnan(V).any():        # 0 against a positive entry at an overflowing ratio
                t = 1.0
                break
            pos = V > 0
            if pos.any():
                t = max(t, float(np.max(V[pos] / (V[pos] + np.broadcast_to(den[:, :, None], V.shape)[pos]))))
    if t > 0:
        t = min(1.0, t * (1 + 1e-6) + 1e-15)
        E = (1.0 - t) * E + t / n
    return E, t


def _underflow_hint(M: np.ndarray, D: np.ndarray, epsilon: float) -> str:
    pos = M > 0
    mixed = np.any(pos, axis=0) & ~np.all(pos, axis=0)
    if np.any(mixed) and epsilon * D.max() > 700:
        return (f" The matrix has exact zeros beside positive entries in {int(mixed.sum())} columns:"
                f" epsilon * diameter = {epsilon * D.max():.4g} makes probabilities underflow double"
                " precision (below ~1e-308); use a smaller epsilon for this space.")
    return ""


def certify(matrix, distances, epsilon: float, *, repair: bool = True) -> tuple[np.ndarray, dict]:
    """Check (and if needed repair) that ``matrix`` is ``epsilon``-mDP on ``distances``.

    Parameters
    ----------
    matrix : ndarray (n, n)
        Candidate transition matrix (rows ~ probability vectors).
    distances : ndarray (n, n)
        The space's distances.
    epsilon : float
        The claimed pure mDP level.
    repair : bool, default True
        Allow the tolerance repair described in the module docstring.

    Returns
    -------
    matrix : ndarray (n, n)
        A row-stochastic matrix whose measured pure eps is ``<= epsilon * (1 + PURE_EPS_RTOL)``.
    report : dict
        ``verified`` (True), ``claimed_eps``, ``measured_eps``, ``repaired`` and, when repaired,
        ``measured_eps_before``, ``uniform_mix`` and ``max_entry_change``.

    Raises
    ------
    PrivacyError
        When the matrix is not (nearly) stochastic or violates the guarantee beyond repair.
    """
    M = np.array(matrix, dtype=float, copy=True)
    D = np.asarray(distances, dtype=float)
    if M.shape != D.shape or M.ndim != 2:
        raise PrivacyError(f"matrix shape {M.shape} does not match distances {D.shape}")
    if not np.all(np.isfinite(M)):
        raise PrivacyError("matrix has NaN or inf entries")
    if M.min() < -NEGATIVE_ATOL:
        raise PrivacyError(f"matrix has a negative entry {M.min():.3g} (beyond solver tolerance {NEGATIVE_ATOL})")
    clipped = int(np.count_nonzero(M < 0))
    np.maximum(M, 0.0, out=M)
    sums = M.sum(axis=1)
    worst = float(np.max(np.abs(sums - 1.0)))
    if worst > ROWSUM_ATOL:
        raise PrivacyError(f"matrix is not row-stochastic: a row sums to {sums[np.argmax(np.abs(sums - 1))]:.9g}")
    if worst > 1e-12:  # keep a stochastic-to-rounding matrix bit for bit (load round trip)
        M /= sums[:, None]
    report = {"guarantee": "matrix", "verified": True, "claimed_eps": float(epsilon), "rtol": PURE_EPS_RTOL,
              "clipped_negative_entries": clipped, "max_rowsum_error": worst, "repaired": False}
    limit = epsilon * (1.0 + PURE_EPS_RTOL)
    measured = eps_tight(M, D, 0.0)
    report["measured_eps"] = measured
    if measured <= limit:
        return M, report
    if not repair:
        raise PrivacyError(
            f"matrix is {measured:.6g}-mDP but claims {epsilon:.6g}-mDP (ratio {measured / epsilon:.4g})."
            + _underflow_hint(M, D, epsilon))
    H, mix = repair_to_private(M, D, epsilon)
    after = eps_tight(H, D, 0.0)
    change = float(np.abs(H - M).max())
    if change > REPAIR_ATOL or not after <= limit:
        raise PrivacyError(
            f"matrix is {measured:.6g}-mDP but claims {epsilon:.6g}-mDP (ratio {measured / epsilon:.4g});"
            f" the tolerance repair would change entries by up to {change:.3g} (limit {REPAIR_ATOL})"
            f" and reaches {after:.6g}, so the mechanism is refused." + _underflow_hint(M, D, epsilon))
    report.update(repaired=True, measured_eps_before=measured, measured_eps=after,
                  uniform_mix=mix, max_entry_change=change)
    return H, report
