"""mdp: metric differential privacy with verified mechanisms.

Quick use::

    import mdp
    space = mdp.MetricSpace.from_points(points)
    mech = mdp.build("exponential", space, epsilon=1.0)
    mech.sample(3, rng=0); mech.loss(q=0.95); mech.eps_tight(delta=1e-3)
    mdp.lower_bound(space, 1.0)

The names below load on first use (:mod:`mdp.lazy`): ``import mdp`` imports none of NumPy,
SciPy or the mechanism families, which register when the registry is first consulted.
"""

from .errors import (
    AccuracyWarning,
    BuildError,
    DataNotFoundError,
    FileFormatError,
    MDPError,
    MissingFileError,
    ParameterError,
    ParameterTypeError,
    PrivacyError,
    SolverError,
    SolverTimeout,
    UnknownInputError,
)
from .lazy import lazy_package

__version__ = "0.1.0"

_EXPORTS = {
    "MetricSpace": ".spaces.metric_space", "Mechanism": ".mechanism", "load": ".loading",
    "build": ".registry", "register": ".registry", "mechanisms": ".registry", "get": ".registry",
    "applicable": ".registry", "calibrate": ".curves.calibration",
    "eps_tight": ".privacy.accounting", "loss": ".privacy.accounting",
    "row_losses": ".privacy.accounting", "lower_bound": ".lower_bound",
    "lower_bounds": ".lower_bound", "LowerBound": ".lower_bound",
    "certify": ".privacy.verification", "emd": ".emd", "emd_1d": ".emd", "emd_grid": ".emd",
    "emd_downsampled": ".emd", "families": ".families",
}
lazy_package(__name__, _EXPORTS)

__all__ = [
    "MetricSpace", "Mechanism", "load", "build", "register", "mechanisms", "get", "applicable",
    "calibrate", "eps_tight", "loss", "row_losses", "lower_bound", "lower_bounds", "LowerBound",
    "certify", "PrivacyError", "emd", "emd_1d", "emd_grid", "emd_downsampled", "__version__",
    "MDPError", "ParameterError", "ParameterTypeError", "FileFormatError", "SolverError",
    "SolverTimeout", "BuildError", "AccuracyWarning", "UnknownInputError", "MissingFileError",
    "DataNotFoundError",
]
