r"""The LP engine: sparse models on HiGHS, lazy row generation, the worst-case-loss LP.

* :mod:`mdp.lp.highs` -- :class:`SparseLP`, one HiGHS model assembled from a sparse matrix, with
  its solver options (method, crossover, tolerances, time limit, threads) as public parameters
  and methods. It is the only module of the toolkit that touches HiGHS objects.
* :mod:`mdp.lp.rowgen` -- :class:`RowGeneration`, the lazy row-generation loop as an explicit
  state machine (:class:`Phase`: interior rounds, crossover, warm dual simplex, polish, done),
  shared by OPTMech, SpannerMech and ConstOPTMech.
* :mod:`mdp.worst_case.solve` -- the worst-case-loss LP of OPTMech and SpannerMech (row assembly,
  separation, Lagrangian bound, full and lazy solves).
* :mod:`mdp.lp.interior_point` -- the one Mehrotra predictor-corrector core of the structured
  interior point methods, their Newton systems plugged in.
* :mod:`mdp.worst_case.column_blocks` -- the worst-case-loss LP by the interior point core over its column
  blocks (SpannerMech's pairs, or OPTMech's row set per column), with
  :mod:`mdp.lp.dissection`, :mod:`mdp.worst_case.batched_blocks` (GPU) and :mod:`mdp.worst_case.block_kernels`.
* :mod:`mdp.worst_case.block_rounds` -- OPTMech's lazy row generation with each round solved by the
  column-block method.
* :mod:`mdp.lp.conic` -- :func:`mdp.lp.conic.solve_clarabel`, an LP on Clarabel, the full
  worst-case LP's fall-back where HiGHS's interior point codes stop short.
* :mod:`mdp.lp.output` -- stochastic rows and failure messages for LP builders.
* :mod:`mdp.lp.plan` -- :class:`~mdp.lp.plan.Plan` and :class:`~mdp.lp.plan.Attempt`: the path an
  LP family's build takes (method, solver, device, fallbacks, each with its reason), in one
  vocabulary shared by every family; each family decides it in its own ``plan`` function.
* :mod:`mdp.lp.runner` -- :func:`~mdp.lp.runner.run_steps`, the one runner of a plan's steps
  (each family's solves at successive coefficient limits or HiGHS methods), each recorded as an
  attempt.
* :mod:`mdp.lp.solver_entry` -- the solver entry points: every solve a plan names, replaceable
  within a context (how tests force a fallback).
* :mod:`mdp.lp.build_report` -- :class:`~mdp.lp.build_report.BuildReport`, the typed result of
  an LP build (plan, attempts, bound, gap, seconds per phase), with a read-only mapping view.
* :mod:`mdp.lp.dense` -- the dense Schur step of the structured interior point methods, on the
  CPU or on a GPU, with :mod:`mdp.lp.sparse_triangular` (compiled sparse triangular solves).
* :mod:`mdp.lp.arrays` -- the array backend of the GPU paths (NumPy or CuPy) and the one device
  rule (``MDP_DEVICE``).

Design notes and measured figures: ``docs/design/lp.md``.
"""

from .highs import (
           HIPO_AVAILABLE,
           INF,
           SOLVERS,
           LPError,
           LPSolution,
           LPTimeout,
           SparseLP,
           get_threads,
           set_threads,
)
from .output import explain_failures, stochastic_rows
from .reporting import LPProgress, progress, report, report_every
from .rowgen import (
           Cuts,
           Phase,
           RowGeneration,
           RowGenerationPolicy,
           RowGenerationResult,
           RowGenerationState,
)

__all__ = ["SparseLP", "LPSolution", "LPError", "LPTimeout", "INF", "SOLVERS", "HIPO_AVAILABLE", "Phase",
           "RowGenerationPolicy", "Cuts", "RowGenerationState", "RowGenerationResult",
           "RowGeneration", "explain_failures", "stochastic_rows", "progress", "report", "report_every", "LPProgress", "set_threads",
           "get_threads"]
