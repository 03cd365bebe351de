"""mdp: metric differential privacy with verified mechanisms.

Quick use::

    import mdp
    space = mdp.MetricSpace.from_points(points)
    mech = mdp.build("exponential", space, epsilon=1.0)
    mech.sample(3, rng=0); mech.loss(q=0.95); mech.eps_tight(delta=1e-3)
    mdp.lower_bound(space, 1.0)
"""

from . import families  # noqa: F401  (importing registers the built-in mechanism families)
from .curves.calibration import calibrate
from .emd import emd, emd_1d, emd_downsampled, emd_grid
from .errors import (
    AccuracyWarning,
    BuildError,
    DataNotFoundError,
    FileFormatError,
    MDPError,
    MissingFileError,
    ParameterError,
    ParameterTypeError,
    SolverError,
    SolverTimeout,
    UnknownInputError,
)
from .loading import load
from .lower_bound import LowerBound, lower_bound, lower_bounds
from .mechanism import Mechanism
from .privacy.accounting import eps_tight, loss, row_losses
from .privacy.verification import PrivacyError, certify
from .registry import applicable, build, get, mechanisms, register
from .spaces.metric_space import MetricSpace

__version__ = "0.1.0"

__all__ = [
    "MetricSpace", "Mechanism", "load", "build", "register", "mechanisms", "get", "applicable",
    "calibrate", "eps_tight", "loss", "row_losses", "lower_bound", "lower_bounds", "LowerBound",
    "certify", "PrivacyError", "emd", "emd_1d", "emd_grid", "emd_downsampled", "__version__",
    "MDPError", "ParameterError", "ParameterTypeError", "FileFormatError", "SolverError",
    "SolverTimeout", "BuildError", "AccuracyWarning", "UnknownInputError", "MissingFileError",
    "DataNotFoundError",
]
