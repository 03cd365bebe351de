"""Declared parameters of a mechanism family.

Each family declares its keyword parameters once, as :class:`Param` rules in
:func:`mdp.register`. The registry uses the rules to validate user values before the builder
runs (so builders receive checked values), to print ``mdp list`` and CLI help, and the
conformance test uses them to generate bad values (:meth:`Param.bad_values`), in the spirit of
scikit-learn's declarative parameter validation.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .errors import ParameterError, ParameterTypeError

__all__ = ["Param", "instance_param"]

_KINDS = ("float", "int", "choice", "bool", "custom")


@dataclass(frozen=True)
class Param:
    """The rule of one keyword parameter.

    Parameters
    ----------
    kind : {"float", "int", "choice", "bool", "custom"}
        ``"float"``: a finite real number (``numbers.Real``, not bool); ``"int"``: an integer;
        ``"choice"``: one of ``choices``; ``"bool"``: True/False; ``"custom"``: ``check`` decides.
    default : object
        Value used when the parameter is not given (never validated: families choose it).
    help : str
        One line for ``mdp list`` and the CLI.
    low, high : float or None
        Inclusive bounds for numbers (``low_open``/``high_open`` make them strict).
    choices : tuple or None
        Accepted values for ``"choice"``.
    allow_none : bool
        Accept ``None`` (meaning "automatic"; the builder resolves it).
    check : callable or None
        ``check(name, value) -> value`` for ``"custom"``; raises :class:`ParameterError`.
    """

    kind: str
    default: object = None
    help: str = ""
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    choices: tuple | None = None
    allow_none: bool = False
    check: Callable | None = None

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise ValueError(f"Param kind must be one of {_KINDS}, got {self.kind!r}")
        if self.kind == "choice" and not self.choices:
            raise ValueError("a 'choice' Param needs choices")
        if self.kind == "custom" and self.check is None:
            raise ValueError("a 'custom' Param needs check")

    def describe(self) -> str:
        """Short human-readable rule, e.g. ``float in (0, inf)`` or ``one of 'lazy', 'full'``."""
        if self.kind == "choice":
            text = "one of " + ", ".join(repr(c) for c in self.choices)
        elif self.kind in ("float", "int"):
            lo = "-inf" if self.low is None else f"{self.low:g}"
            hi = "inf" if self.high is None else f"{self.high:g}"
            left = "(" if self.low_open or self.low is None else "["
            right = ")" if self.high_open or self.high is None else "]"
            text = f"{self.kind} in {left}{lo}, {hi}{right}"
        else:
            text = self.kind
        return text + (" or None" if self.allow_none else "")

    def validate(self, name: str, value):
        """Return the checked value, or raise naming the parameter and the value."""
        if value is None and self.allow_none:
            return None
        if self.kind == "custom":
            return self.check(name, value)
        if self.kind == "bool":
            if not isinstance(value, (bool, np.bool_)):
                raise ParameterTypeError(f"{name} must be True or False, got {value!r}")
            return bool(value)
        if self.kind == "choice":
            if isinstance(value, (list, dict, set, np.ndarray)) or value not in self.choices:
                raise ParameterError(f"{name} must be {self.describe()}, got {value!r}")
            return value
        if self.kind == "int":
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
                raise ParameterTypeError(f"{name} must be an integer, got {value!r} "
                                         f"({type(value).__name__})")
            v = int(value)
        else:
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
                raise ParameterTypeError(f"{name} must be a real number, got {value!r} "
                                         f"({type(value).__name__})")
            v = float(value)
            if not np.isfinite(v):
                raise ParameterError(f"{name} must be a finite number, got {value!r}")
        if self.low is not None and (v < self.low or (self.low_open and v == self.low)):
            op = ">" if self.low_open else ">="
            raise ParameterError(f"{name} must be {op} {self.low:g}, got {value!r}")
        if self.high is not None and (v > self.high or (self.high_open and v == self.high)):
            op = "<" if self.high_open else "<="
            raise ParameterError(f"{name} must be {op} {self.high:g}, got {value!r}")
        return v

    def bad_values(self) -> list:
        """Values this rule must refuse (used by the conformance test)."""
        out: list = [] if self.allow_none else [None]
        if self.kind in ("float", "int"):
            out += ["x", True]
            if self.low is not None:
                out.append(self.low - 1 if not self.low_open else self.low)
            if self.high is not None:
                out.append(self.high + 1 if not self.high_open else self.high)
            if self.kind == "float":
                out.append(float("nan"))
            else:
                out.append(1.5)
        elif self.kind == "choice":
            out += ["no-such-choice", [1]]
        elif self.kind == "bool":
            out += ["yes", 2]
        return out


def instance_param(cls: type, help: str, *, spelled: str | None = None) -> Param:
    """The rule of a parameter that takes an instance of ``cls`` or None (``spelled``: how the
    error names the class; default its name)."""
    what = cls.__name__ if spelled is None else spelled

    def check(name: str, value):
        if value is not None and not isinstance(value, cls):
            raise ParameterTypeError(f"{name} must be a {what} or None, got "
                                     f"{type(value).__name__}")
        return value

    return Param("custom", None, check=check, allow_none=True, help=help)
