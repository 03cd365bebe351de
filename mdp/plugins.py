"""One registry pattern for everything that is looked up by name.

``mdp`` is the bottom layer: it never imports ``geo``, ``text`` or ``experiments``. What those
packages add to it (space specs such as ``glove:N``, CLI commands such as ``mdp heatmap``,
experiments, input formats of ``mdp privatize``) is declared as Python *entry points* in the
project's ``pyproject.toml``, the ecosystem's plugin convention (``importlib.metadata``), and
loaded on first use. Code may also register objects directly (tests, third-party packages).

=====================  ===========================  ===========================================
registry               entry-point group            object registered
=====================  ===========================  ===========================================
:data:`SPACES`         ``mdp.spaces``               ``loader(spec: str) -> MetricSpace``
:data:`COMMANDS`       ``mdp.commands``             a :class:`Command`
:data:`EXPERIMENTS`    ``mdp.experiments``          a module (``DESCRIPTION``, ``add_arguments``,
                                                    ``main``)
:data:`INPUTS`         ``mdp.inputs``               an :class:`InputFormat`
:data:`EXPLAINERS`     ``mdp.explainers``           an :class:`Explainer` (what ``mdp explain``
                                                    says of a kind of mechanism)
:data:`EMBEDDINGS`     ``mdp.embeddings``           a :class:`NamedEmbedding`: the words and
                                                    vectors a mechanism file's points are
                                                    checked against or taken from
                                                    (:mod:`mdp.privacy.provenance`)
families               ``mdp.families``             a module whose import registers families
                                                    with :func:`mdp.register`
=====================  ===========================  ===========================================
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any, Generic, TypeVar

from .errors import ParameterError, UnknownInputError

__all__ = ["Registry", "Command", "InputFormat", "NamedEmbedding", "Explainer", "SPACES",
           "COMMANDS", "EXPERIMENTS", "INPUTS", "EMBEDDINGS", "EXPLAINERS", "load_family_plugins"]

T = TypeVar("T")


class Registry(Generic[T]):
    """A name -> object table filled by :meth:`register` and by entry points.

    Parameters
    ----------
    kind : str
        What the objects are, for messages (``"space prefix"``).
    group : str or None
        Entry-point group whose entries are loaded (lazily, once) on first lookup; ``None``
        for a table filled only by :meth:`register`.
    """

    def __init__(self, kind: str, group: str | None):
        self.kind = kind
        self.group = group
        self._objects: dict[str, T] = {}
        self._pending: dict[str, Any] = {}
        self._discovered = False

    def _discover(self) -> None:
        if self._discovered:
            return
        self._discovered = True
        if self.group is None:
            return
        for ep in entry_points(group=self.group):
            if ep.name not in self._objects:
                self._pending.setdefault(ep.name, ep)

    def register(self, name: str, obj: T, *, replace: bool = False) -> T:
        """Register ``obj`` under ``name`` (an existing name raises unless ``replace``)."""
        if not isinstance(name, str) or not name:
            raise ValueError(f"{self.kind} name must be a non-empty string, got {name!r}")
        if not replace and name in self._objects:
            raise ValueError(f"{self.kind} {name!r} is already registered")
        self._objects[name] = obj
        self._pending.pop(name, None)
        return obj

    def unregister(self, name: str) -> None:
        """Remove ``name`` (tests)."""
        self._objects.pop(name, None)
        self._pending.pop(name, None)

    def names(self) -> list[str]:
        """Every registered name, sorted (entry points included, not yet imported)."""
        self._discover()
        return sorted(set(self._objects) | set(self._pending))

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self.names()

    def get(self, name: str) -> T:
        """The object registered as ``name``; unknown names raise listing the valid ones.

        Raises
        ------
        mdp.errors.UnknownInputError
            Unknown name (also a ``ValueError`` and a ``KeyError``; the message lists the valid
            names).
        mdp.errors.ParameterError
            A plugin that cannot be imported (the message says which).
        """
        self._discover()
        if name in self._objects:
            return self._objects[name]
        if name in self._pending:
            ep = self._pending.pop(name)
            try:
                obj = ep.load()
            except ImportError as exc:
                raise ParameterError(f"{self.kind} {name!r} is not available: its plugin "
                                     f"{ep.value!r} cannot be imported ({exc})") from None
            self._objects[name] = obj
            return obj
        raise UnknownInputError(f"unknown {self.kind} {name!r}; valid names: "
                                f"{', '.join(self.names()) or 'none'}")

    def items(self) -> Iterator[tuple[str, T]]:
        """``(name, object)`` pairs, importing pending plugins."""
        for name in self.names():
            yield name, self.get(name)


@dataclass(frozen=True)
class Command:
    """A subcommand of the ``mdp`` command line contributed by a package.

    Attributes
    ----------
    help : str
        One line for ``mdp --help``.
    configure_parser : callable
        ``configure_parser(parser: argparse.ArgumentParser) -> None``: adds the options.
    run : callable
        ``run(args: argparse.Namespace) -> int``: runs the command, returns the exit code.
    """

    help: str
    configure_parser: Callable
    run: Callable


@dataclass(frozen=True)
class InputFormat:
    """A kind of input line of ``mdp privatize`` beyond labels and indices.

    Attributes
    ----------
    accepts : callable
        ``accepts(mechanism, lines: list[str]) -> bool``: whether these lines are of this
        format for this mechanism (e.g. ``lat,lon`` lines on a haversine space).
    privatize : callable
        ``privatize(mechanism, lines, *, rng, **options) -> list[str]``: one output per line.
    options : tuple of str
        Names of the keyword options ``privatize`` takes (``mdp privatize`` passes only these).
    """

    accepts: Callable
    privatize: Callable
    options: tuple = ()


@dataclass(frozen=True)
class NamedEmbedding:
    """An installed word embedding that mechanism files may name (:mod:`mdp.privacy.provenance`).

    Attributes
    ----------
    vectors : callable
        ``vectors(words) -> ndarray``: the embedding's vectors of ``words``, in their order, with
        the dtype its loader uses; a word it does not hold raises a ``KeyError``
        (:class:`~mdp.errors.UnknownInputError`).
    first : callable
        ``first(n) -> (words, vectors)``: its ``n`` first words (in its own order) and their
        vectors; ``first(None)`` gives every word.
    """

    vectors: Callable
    first: Callable


@dataclass(frozen=True)
class Explainer:
    """What ``mdp explain`` says of one kind of mechanism (``geo``: locations, in metres).

    Attributes
    ----------
    accepts : callable
        ``accepts(mechanism) -> bool``.
    explain : callable
        ``explain(mechanism)``: an object with ``text() -> str`` and ``record() -> dict``.
    """

    accepts: Callable
    explain: Callable


SPACES: Registry[Callable] = Registry("space prefix", "mdp.spaces")
COMMANDS: Registry[Command] = Registry("command", "mdp.commands")
EXPERIMENTS: Registry[Any] = Registry("experiment", "mdp.experiments")
INPUTS: Registry[InputFormat] = Registry("input format", "mdp.inputs")
EMBEDDINGS: Registry[NamedEmbedding] = Registry("embedding", "mdp.embeddings")
EXPLAINERS: Registry[Explainer] = Registry("explainer", "mdp.explainers")

_FAMILY_PLUGINS_LOADED = False


def load_family_plugins() -> None:
    """Import the modules declared in the ``mdp.families`` entry-point group (once)."""
    global _FAMILY_PLUGINS_LOADED
    if _FAMILY_PLUGINS_LOADED:
        return
    _FAMILY_PLUGINS_LOADED = True
    for ep in entry_points(group="mdp.families"):
        importlib.import_module(ep.value.partition(":")[0])
