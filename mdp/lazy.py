"""Package names that load on first use (PEP 562), so that ``mdp --help`` imports no NumPy.

A package lists its public names with the module that defines each and calls
:func:`lazy_package`. ``import mdp`` then costs almost nothing, and ``mdp.build`` imports the
registry (and the built-in families) the first time it is used; the value is cached in the
package, so later lookups are ordinary attribute reads.

One rule keeps the names what they were when the package imported them eagerly: when a public
name is also the name of the module that defines it (``geo.explain``, ``text.privatize``,
``mdp.lower_bound``), importing that submodule binds the *function* of that name on the package,
as ``from .explain import explain`` in the package did, not the submodule (reach the module
with ``from geo.explain import ...`` or ``sys.modules``).
"""

from __future__ import annotations

import importlib
import sys
import types

__all__ = ["lazy_package", "LazyPackage"]


class LazyPackage(types.ModuleType):
    """A package module whose public names (``_EXPORTS``: name -> defining module, relative)
    load on first use."""

    def __getattr__(self, name: str):
        where = self.__dict__.get("_EXPORTS", {}).get(name)
        if where is None:
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")
        module = importlib.import_module(where, self.__name__)
        value = getattr(module, name) if hasattr(module, name) else module
        setattr(self, name, value)
        return value

    def __setattr__(self, name: str, value) -> None:
        exports = self.__dict__.get("_EXPORTS", {})
        if (isinstance(value, types.ModuleType) and name in exports
                and value.__name__ == f"{self.__name__}.{name}" and hasattr(value, name)):
            value = getattr(value, name)     # the import system binding a submodule: see above
        super().__setattr__(name, value)

    def __dir__(self) -> list[str]:
        return sorted(set(self.__dict__) | set(self.__dict__.get("_EXPORTS", {})))


def lazy_package(name: str, exports: dict[str, str]) -> None:
    """Make the package ``name`` (its ``__name__``) a :class:`LazyPackage` exporting ``exports``
    (public name -> the module that defines it, relative to the package: ``".registry"``; a
    name whose module is itself, ``"saliency": ".saliency"``, gives the module)."""
    module = sys.modules[name]
    module._EXPORTS = dict(exports)
    module.__class__ = LazyPackage
