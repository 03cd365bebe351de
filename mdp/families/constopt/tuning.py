"""ConstOPTMech's tuning: the thresholds that steer its plan.

One frozen dataclass, :class:`ConstOPTTuning`, passed to the build as ``tuning=`` (default: its
defaults); every figure behind a default is in ``docs/design/lp.md``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...lp.arrays import DETECT, GPUChoice
from ...lp.dense import GPU_MIN_SIZE
from ...validation import check_tuning
from .ipm import WARM_ADDED_RATIO

__all__ = ["ConstOPTTuning"]


@dataclass(frozen=True)
class ConstOPTTuning:
    """Thresholds of ConstOPTMech's plan (:func:`mdp.families.constopt.plan.plan`).

    Attributes
    ----------
    row_block_min_n : int, default 300
        With ``solver="auto"`` and no ``gap``, spaces of at least this many points are solved by
        the row-block interior point method (:mod:`mdp.families.constopt.ipm`) to the certified
        relative gap ``exact_gap`` instead of by HiGHS (whole builds on a 2-core machine, HiGHS
        against the row-block method: Geolife cells 3.0 / 1.9 s at n = 300, 13.4 / 8.7 s at
        600, GloVe words 2.9 / 2.0 s at 300, 14.3 / 3.7 s at 600; at 200 points GloVe 2.0 /
        2.9 s).
    row_block_max_scale : float, default 25
        ... and where ``epsilon / 2`` times the median distance is at most this. Far beyond it
        the method cannot certify its gap (``e^{-e D}`` spans hundreds of orders of magnitude)
        and the attempt only delays HiGHS (Geolife cells, n = 600, product 91: 246 s against
        34 s); up to it it won or came close (product 2.7-2.9: 1.6-2.2x faster at n = 1000;
        9.1: 41 s against 32 s; 22.8: 269 s against more than 9 minutes for HiGHS).
    row_block_max_violated : float, default 6
        ... and, where that product is below ``row_block_wide_scale``, as long as round 0 of the
        method violates at most this many free-free rows per point (they join the dense part of
        every later round); beyond it HiGHS solves the LP. GloVe, eps ~2 (product 5.2-5.8): 300
        words 25.7 per point, 55.6 s against 9.9 s for HiPO; 400 words 10.3 and 8.9 per point,
        35-46 s against 15 s. Up to 3.5 the method won, tied or lost by at most 1.3x.
    row_block_wide_scale : float, default 15
        From this product on HiGHS slows down on the LP's wide coefficient range, and the method
        won with more violated rows (Geolife cells, n = 600, eps 5, product 22.9: 7.8 per point,
        269 s against more than 558 s for HiGHS), so no violation limit applies.
    exact_gap : float, default 1e-6
        What "exact" means for the row-block method: the certified relative gap of the returned
        LP point (the registry's exactness for every LP mechanism).
    highs_solver : str, default "hipo"
        HiGHS method of ``solver="auto"`` where HiGHS solves the LP (HiPO, then IPX when it
        fails: the faster first round from a few hundred points on).
    warm_pricing : str, default "devex"
        Dual simplex pricing of the warm rounds that add free-free rows. With HiGHS's own
        choice (dual steepest edge) the first warm rounds spend far more on the edge weights,
        with the dense loss / row-sum rows in the basis, than on the few dozen pivots a round
        needs. A warm solve that fails with Devex is re-solved with HiGHS's choice
        (:class:`mdp.lp.RowGeneration`).
    max_coefficients : tuple of float, default (1e7, 1e5)
        Coefficient limits of HiGHS's LP, tried in order (rows left out are decided by the
        envelope, :func:`~mdp.families.constopt.formulation.lipschitz_log_matrix`, and the
        result is compared with the exponential mechanism). HiGHS drops matrix entries below
        1e-9, which the dense loss and row-sum rows (``e^{-e D}``) reach, so a limit ``C`` gives
        the LP a coefficient range of ``1e9 C``: beyond ``1e7`` that passes double precision's
        ``1e16``. With ``1e12`` first, two scales of distance at eps x median 1, n = 100 took
        41 s (each warm dual simplex round at ~24 ms per pivot, ending in status Unknown or
        in a solution whose envelope lifted entries by up to ``e^8``), with ``1e7`` 2.2 s; on
        36 other cells (six kinds of space, eps x median 0.3-50) the loss was the same or lower
        (embedding-like points, 20: 1.193 against 1.217) and the time the same.
    retry_warm_time_factor, retry_warm_min_seconds : float, default 20 and 20
        Budget of the warm rounds after a HiPO first solve that IPX would repeat if it failed
        (:class:`mdp.lp.RowGenerationPolicy` ``warm_time_factor`` / ``warm_min_seconds``): past
        it IPX starts the run again. Two scales of distance at eps x median 1, n = 100: the warm
        dual simplex from HiPO's basis crawled for 223 s on one round (lambda = 1) where the
        IPX-started run took 0.3 s.
    warm_added_ratio : float, default 1
        A round of the row-block method that adds more than this many free-free rows per row of
        the previous round's LP starts cold instead of from that round's iterate
        (:func:`mdp.families.constopt.ipm.solve_constopt_gap`; road graph and two scales of
        distance, eps x median 10 and 1, n = 500: the round after round 0 in 26 and 61
        iterations cold against 55 and 102 warm; later rounds, adding a quarter of the rows or
        less, as fast or faster warm).
    gpu_from_size : int, default 1000
        Side of the row-block method's dense Schur complement from which ``MDP_DEVICE=auto``
        factors it on a GPU where there is one (:func:`mdp.lp.arrays.device_choice`; below it
        the transfers and kernel launches cost more than the flops saved).
    gpu : ArrayBackend, None or "detect"
        The backend that stands for the GPU (:func:`mdp.lp.arrays.resolve_gpu`).
    """

    def __post_init__(self) -> None:
        check_tuning(self)

    row_block_min_n: int = 300
    row_block_max_scale: float = 25.0
    row_block_max_violated: float = 6.0
    row_block_wide_scale: float = 15.0
    exact_gap: float = 1e-6
    highs_solver: str = "hipo"
    warm_pricing: str = "devex"
    max_coefficients: tuple[float, ...] = (1e7, 1e5)
    retry_warm_time_factor: float = 20.0
    retry_warm_min_seconds: float = 20.0
    warm_added_ratio: float = WARM_ADDED_RATIO
    gpu_from_size: int = GPU_MIN_SIZE
    gpu: GPUChoice = DETECT
