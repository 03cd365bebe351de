r"""Locally private heat-source localisation (Gilbert & McMillan 2018, sections 2-5, appendix B).

``n`` possible heat sources on the grid ``i/n`` of ``[0, 1]``, ``m`` sensors at ``j/m`` reading
:math:`y = A f_0` with :math:`A_{ji} = g(j/m - i/n, T)`; each sensor adds Gaussian noise
calibrated to :math:`\Delta_2(A)`; the analyst recovers
:math:`\hat f = \arg\min \|f\|_1` s.t. :math:`\|Af - y\|_2 \le \rho`, :math:`0 \le f \le 1`,
and is scored by the EMD between the normalised :math:`f_0` and :math:`\hat f`.

Modules (every public name is re-exported here):

=====================================  =========================================================
:mod:`geo.heatsource.model`            heat kernel, measurement matrix, sensitivity, Lemma 5
:mod:`geo.heatsource.privacy`          per-sensor Gaussian noise calibrated to
                                       :math:`\Delta_2(A)` (on :mod:`mdp.privacy.gaussian`)
:mod:`geo.heatsource.recovery`         SVD compression and the certified cone-program recovery
                                       (cvxpy + Clarabel)
:mod:`geo.heatsource.trials`           unit sources, EMD error, repeated trials, mean and CI
:mod:`mdp.privacy.gaussian`                    analytic Gaussian mechanism (Balle & Wang 2018) and the
                                       other calibration rules
=====================================  =========================================================
"""

from mdp.privacy.gaussian import GAUSSIAN_RULES, gaussian_delta, gaussian_sigma

from .model import (
    Lemma5Check,
    heat_kernel,
    heat_matrix,
    lemma5,
    sensitivity,
    sensor_positions,
    source_positions,
)
from .privacy import SensorCalibration, calibrate_sensors, privatize_readings
from .recovery import (
    LARGE_N,
    CompressedMatrix,
    RecoveryResult,
    compress_matrix,
    least_residual,
    recover,
)
from .trials import emd_error, mean_ci, random_sources, run_trials

__all__ = [
    "GAUSSIAN_RULES",
    "CompressedMatrix",
    "LARGE_N",
    "Lemma5Check",
    "RecoveryResult",
    "SensorCalibration",
    "calibrate_sensors",
    "compress_matrix",
    "emd_error",
    "gaussian_delta",
    "gaussian_sigma",
    "heat_kernel",
    "heat_matrix",
    "least_residual",
    "lemma5",
    "mean_ci",
    "privatize_readings",
    "random_sources",
    "recover",
    "run_trials",
    "sensitivity",
    "sensor_positions",
    "source_positions",
]
