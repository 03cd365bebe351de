"""OPTMech's tuning: the thresholds that steer its plan and the tolerances of its solves.

One frozen dataclass, :class:`OptimalTuning`, passed to the build as ``tuning=`` (default: its
defaults); every figure behind a default is in ``docs/design/lp.md``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...validation import check_tuning
from ...worst_case.block_rounds import BlockRoundsTuning
from ...worst_case.column_blocks import BlockResources
from ...worst_case.solve import MAX_COEFFICIENTS, LazyRoundsTuning

__all__ = ["OptimalTuning"]


@dataclass(frozen=True)
class OptimalTuning:
    """Thresholds of OPTMech's plan (:func:`mdp.families.optimal.plan.plan`) and tolerances of
    its solves.

    Attributes
    ----------
    blocks_min_n : int, default 50
        Smallest space on which ``solver="auto"`` picks ``"blocks"`` (below it HiGHS's rounds
        are as fast).
    ipm_min_n : int, default 45
        Smallest space on which HiGHS's lazy rounds default to interior rounds (below it the
        simplex rounds are cheaper).
    chain_detour : float, default 0.2
        Largest :func:`~mdp.families.optimal.formulation.median_detour` at which HiGHS's lazy
        rounds default to interior rounds: below it the simplex rounds chain rows slowly
        (fastText n = 100 at 0.004: over 900 s against 187 s), above it they are cheaper (GloVe
        n = 100 at 0.46: 14 s against 21 s).
    chain_slack : float, default 0.6
        Largest :func:`~mdp.families.optimal.formulation.median_two_hop_slack` at which HiGHS's
        lazy rounds default to interior rounds (together with ``chain_detour``): the two solvers
        tie near 0.6 on every space measured.
    finish_solver : str, default "ipm"
        HiGHS method of the lazy finish of ``solver="blocks"`` from the rows of its rounds.
    finish_polish_tol : float, default 1e-12
        Separation tolerance of the finish from its polish on
        (:attr:`mdp.lp.RowGenerationPolicy.polish_tol`): a scaled row's violation is the amount
        the repair lifts an entry by, which costs up to ``n`` times it times the largest
        distance; at the interior rounds' 1e-8 that was 3e-6 of a near-exact mechanism's loss
        (clustered points, n = 100, eps x median 12).
    finish_scaled : bool, default True
        The finish passes the privacy rows in their scaled form ``M_vw - e^{-eps D_uv} M_uw >= 0``
        (coefficients at most 1) rather than ``e^{eps D_uv} M_vw - M_uw >= 0`` (coefficients up
        to ``max_coefficients[0]``): on a 150-point city box in kilometres at eps 23 per km the
        rounds stalled at a certified 5.4e-6 and HiGHS's finish on the unscaled rows ended with
        model status 'Unknown'; on the scaled rows it certified 1.1e-7 (``docs/design/lp.md``).
    violation_atol : float, default 1e-6
        Largest absolute violation ``M[u,w] - e^{eps D_uv} M[v,w]`` accepted from an exact
        solve (it is then repaired by :func:`mdp.privacy.verification.certify`); beyond it the attempt
        fails.
    retry_rtol : float, default 1e-6
        An exact build retries with the next coefficient limit when its relative gap (certified
        loss against the best Lagrangian bound so far) is above this; also the least ``gap``
        target.
    absolute_gap : float, default 1e-12
        A gap target also counts as met when the absolute gap is at most this times the largest
        distance (:func:`~mdp.families.optimal.formulation.gap_target_met`).
    finish_near, finish_time_factor, finish_min_seconds : float, defaults 10, 0.1, 60
        ``solver="blocks"``: where the rounds end above the target with a certified matrix,
        HiGHS's finish gets at most ``finish_time_factor`` times the rounds' seconds (at least
        ``finish_min_seconds``); when it runs out, or fails within ``finish_near`` times the
        target, the rounds' certified result stands (no attempt at a lower coefficient limit
        follows; after a failure farther away each one gets the same time). The finish ended
        within its time only in builds up to about 100 points (Geolife n = 100: 31 s); from 200
        points it never did (fastText n = 200 at eps 2: stopped after 390 s; Geolife n = 200 at
        eps 0.1 and n = 250: after 287 s and 731 s; two scales n = 200 at eps x median 0.3,
        rounds at 3.8e-5: failed after 45 s, and the next limit's rounds ran past 600 s).
    mix_try_factor : float, default 4
    mix_previous : int, default 2
        ``gap=`` mode: the per-column mix is tried on a restricted optimum whose balanced
        envelope is certified within ``mix_try_factor`` of the target (it cut the gap 1.5-8x on
        the Geolife and GloVe iterates measured; its LP takes about 15 s at n = 500), with
        ``mix_previous`` earlier repairs among its atoms.
    sweep_rtol, sweep_near, sweep_far : float, defaults 0.1, 0.1 and 1
        A ``sweep`` build starts with every row of its neighbour's last LP when their epsilons
        are within ``sweep_near`` in log scale, else within ``sweep_far`` with the rows binding
        the neighbour's matrix within ``sweep_rtol``, else cold
        (:class:`mdp.worst_case.sweep_start.Sweep`; figures there).
    max_coefficients : tuple of float, default (1e12, 1e7, 1e5)
        Coefficient limits tried in order (:data:`mdp.worst_case.solve.MAX_COEFFICIENTS`).
    lazy : LazyRoundsTuning
        Tolerances of HiGHS's lazy rounds and of the full solve.
    rounds : BlockRoundsTuning
        Tolerances of the rounds over column blocks.
    resources : BlockResources
        Memory limits and device thresholds of the column-block method.
    """

    def __post_init__(self) -> None:
        check_tuning(self)

    blocks_min_n: int = 50
    ipm_min_n: int = 45
    chain_detour: float = 0.2
    chain_slack: float = 0.6
    finish_solver: str = "ipm"
    finish_scaled: bool = True
    finish_polish_tol: float = 1e-12
    violation_atol: float = 1e-6
    retry_rtol: float = 1e-6
    absolute_gap: float = 1e-12
    finish_near: float = 10.0
    finish_time_factor: float = 0.1
    finish_min_seconds: float = 60.0
    mix_try_factor: float = 4.0
    mix_previous: int = 2
    sweep_rtol: float = 0.1
    sweep_near: float = 0.1
    sweep_far: float = 1.0
    max_coefficients: tuple[float, ...] = MAX_COEFFICIENTS
    lazy: LazyRoundsTuning = field(default_factory=LazyRoundsTuning)
    rounds: BlockRoundsTuning = field(default_factory=BlockRoundsTuning)
    resources: BlockResources = field(default_factory=BlockResources)
