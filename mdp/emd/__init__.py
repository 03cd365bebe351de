r"""Earth Mover's Distance: the evaluation shared by every spatial part of the toolkit.

Modules: :mod:`mdp.emd.histograms` (the mass rules below, block sums), :mod:`mdp.emd.general`
(any ground cost, and 1-D), :mod:`mdp.emd.grid` (regular grids, L1 or Euclidean ground) and
:mod:`mdp.emd.network_simplex` (the compiled kernels behind the grid solver).

All functions solve the transport problem exactly, except :func:`emd_downsampled`, which is
exact on block-summed maps (the MIT saliency benchmark's approximation). :func:`emd` uses POT's
network simplex on the given cost matrix; :func:`emd_grid` uses a network simplex on the grid
graph with a multiscale warm start and checks an optimality certificate before returning
(``docs/design/emd.md``).

Mass rules (the same for every function here)
---------------------------------------------
* Inputs must be finite and non-negative with positive total mass, else
  :class:`~mdp.errors.ParameterError` (a ``ValueError``) naming the parameter.
* ``normalize=True`` (default): both histograms are divided by their totals first, so the
  result is the EMD between the two probability distributions (the paper's heatmap setting,
  Ghazi et al. 2023 section 2.1, and the saliency benchmark's convention). Unequal masses are
  therefore allowed and simply rescaled.
* ``normalize=False``: the masses must agree to a relative ``1e-9``; otherwise ``ParameterError``
  (EMD of unequal masses needs a penalty for the excess, which the paper's EMD *norm* handles
  and this module deliberately does not guess). The result is then in mass x distance units.
* Distances are in grid steps (one cell side = 1) unless ``cell_size`` says otherwise; on the
  seed's unit square ``[0, 1]^2`` with a ``Delta x Delta`` grid use ``cell_size=1/Delta``.
"""

from .general import emd, emd_1d
from .grid import GridEMDTuning, emd_downsampled, emd_grid, grid_l1_cost
from .histograms import block_sum

__all__ = ["emd_1d", "emd", "emd_grid", "emd_downsampled", "block_sum", "grid_l1_cost",
           "GridEMDTuning"]
