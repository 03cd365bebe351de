"""Parameter validation shared by the whole toolkit.

Every public entry point validates user input with these helpers so that bad input raises a
``ParameterError``/``ParameterTypeError`` (subclasses of ``ValueError``/``TypeError``) that names the parameter and the offending value, in the style of
scikit-learn. Nothing here uses ``assert``.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import types
import typing

from .errors import ParameterError, ParameterTypeError

__all__ = [
    "check_epsilon",
    "check_positive",
    "check_probability",
    "check_int",
    "check_rng",
    "as_float_array",
    "check_tuning",
]


def check_positive(value, name: str, *, allow_zero: bool = False, allow_inf: bool = False) -> float:
    """Return ``value`` as a float after checking it is a finite positive real number.

    Parameters
    ----------
    value : object
        The value to check.
    name : str
        Parameter name used in the error message.
    allow_zero : bool, default False
        Accept 0.
    allow_inf : bool, default False
        Accept +inf.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ParameterTypeError(f"{name} must be a real number, got {value!r} ({type(value).__name__})")
    v = float(value)
    if math.isnan(v):
        raise ParameterError(f"{name} must be a number, got nan")
    if math.isinf(v) and not allow_inf:
        raise ParameterError(f"{name} must be finite, got {v}")
    if allow_zero:
        if v < 0:
            raise ParameterError(f"{name} must be >= 0, got {value!r}")
    elif v <= 0:
        raise ParameterError(f"{name} must be > 0, got {value!r}")
    return v


def check_epsilon(epsilon, name: str = "epsilon") -> float:
    """Validate a privacy parameter: a finite real number > 0."""
    return check_positive(epsilon, name)


def check_probability(value, name: str, *, inclusive_low: bool = True, inclusive_high: bool = True) -> float:
    """Validate a number in [0, 1] (bounds inclusive unless told otherwise)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ParameterTypeError(f"{name} must be a real number, got {value!r} ({type(value).__name__})")
    v = float(value)
    lo_ok = v >= 0 if inclusive_low else v > 0
    hi_ok = v <= 1 if inclusive_high else v < 1
    if math.isnan(v) or not (lo_ok and hi_ok):
        lo = "[" if inclusive_low else "("
        hi = "]" if inclusive_high else ")"
        raise ParameterError(f"{name} must be in {lo}0, 1{hi}, got {value!r}")
    return v


def check_int(value, name: str, *, low: int | None = None, high: int | None = None) -> int:
    """Validate an integer with optional inclusive bounds."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ParameterTypeError(f"{name} must be an integer, got {value!r} ({type(value).__name__})")
    v = int(value)
    if low is not None and v < low:
        raise ParameterError(f"{name} must be >= {low}, got {v}")
    if high is not None and v > high:
        raise ParameterError(f"{name} must be <= {high}, got {v}")
    return v


def check_rng(rng):
    """Turn ``None``, an int seed or a ``numpy.random.Generator`` into a Generator.

    No global random state is ever used.
    """
    import numpy as np  # here, so that validating the command line imports no NumPy

    if rng is None or isinstance(rng, (numbers.Integral, np.random.Generator, np.random.SeedSequence)):
        if isinstance(rng, bool):
            raise ParameterTypeError(f"rng must be None, an int seed or a numpy.random.Generator, got {rng!r}")
        if isinstance(rng, numbers.Integral) and rng < 0:
            raise ParameterError(f"rng (the random seed) must be an integer >= 0, got {rng}")
        return np.random.default_rng(rng)
    raise ParameterTypeError(
        f"rng must be None, an int seed or a numpy.random.Generator, got {type(rng).__name__}"
    )


def as_float_array(value, name: str):
    """``value`` as a float ndarray; anything that is not numbers raises a ParameterError
    naming ``name`` (never numpy's own message)."""
    import numpy as np

    try:
        return np.asarray(value, dtype=float)
    except (TypeError, ValueError, OverflowError):
        raise ParameterError(f"{name} must be an array of numbers, got "
                             f"{type(value).__name__}") from None


def check_tuning(obj) -> None:
    """Check the fields of a tuning dataclass against their annotations.

    Tuning is data passed in (a frozen dataclass per algorithm); a value a user sets is checked
    when the object is made, not when the solver that reads it fails. By annotation: ``int``
    an integer >= 0 (not a bool), ``float`` a real number, not NaN (a threshold compared with a
    measured quantity may be ``inf`` or below zero: always, or never),
    ``bool`` a bool, ``str`` a string, ``tuple[float, ...]`` a non-empty tuple of numbers > 0,
    ``X | None`` also None, a dataclass type an instance of it; other annotations are left to
    the class.

    Raises
    ------
    ParameterError, ParameterTypeError
        Naming the class and the field.
    """
    cls = type(obj)
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(obj):
        if f.name.startswith("_") or f.name not in hints:
            continue
        value, hint = getattr(obj, f.name), hints[f.name]
        name = f"{cls.__name__}.{f.name}"
        if typing.get_origin(hint) in (typing.Union, types.UnionType):
            args = [a for a in typing.get_args(hint) if a is not type(None)]
            if value is None and len(args) < len(typing.get_args(hint)):
                continue
            if len(args) != 1:
                continue
            hint = args[0]
        _check_tuning_value(name, value, hint)


def _check_tuning_value(name: str, value, hint) -> None:
    if hint is bool:
        if not isinstance(value, bool):
            raise ParameterTypeError(f"{name} must be True or False, got {value!r}")
    elif hint is int:
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise ParameterTypeError(f"{name} must be an integer, got {value!r}")
        if value < 0:
            raise ParameterError(f"{name} must be >= 0, got {value!r}")
    elif hint is float:
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise ParameterTypeError(f"{name} must be a number, got {value!r}")
        if math.isnan(value):
            raise ParameterError(f"{name} must be a number, got {value!r}")
    elif hint is str:
        if not isinstance(value, str):
            raise ParameterTypeError(f"{name} must be a string, got {value!r}")
    elif typing.get_origin(hint) is tuple:
        if (not isinstance(value, tuple) or not value
                or any(isinstance(v, bool) or not isinstance(v, numbers.Real) or not v > 0
                       for v in value)):
            raise ParameterError(f"{name} must be a non-empty tuple of numbers > 0, got {value!r}")
    elif isinstance(hint, type) and dataclasses.is_dataclass(hint):
        if not isinstance(value, hint):
            raise ParameterTypeError(f"{name} must be a {hint.__name__}, got {value!r}")
