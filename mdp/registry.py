"""The mechanism registry: a string name maps to a builder.

Builders register themselves with :func:`register`; :func:`build` looks a name up, validates
the parameters against the builder's signature, builds, and passes the final matrix through the
shared privacy check (:func:`mdp.verification.certify`). Unknown names raise with the list of
valid names.

A builder has the signature ``builder(space, epsilon, *, rng, **params)`` and returns either an
``ndarray`` transition matrix, a tuple ``(matrix, stats)``, or a :class:`~mdp.Mechanism`
(subclasses that sample differently, e.g. Madlib).
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable
from dataclasses import dataclass

from .mechanism import Mechanism
from .space import MetricSpace
from .validation import check_epsilon, check_rng
from .verification import certify

__all__ = ["register", "build", "mechanisms", "get", "MechanismEntry", "applicable"]


@dataclass(frozen=True)
class MechanismEntry:
    """A registered mechanism family.

    Attributes
    ----------
    name : str
    builder : callable
    description : str
        One line shown by ``mdp list``.
    applies : callable
        ``applies(space) -> str | None``: ``None`` when the family applies, else the reason.
    guarantee : {"matrix", "analytic"}
        ``"matrix"``: pure eps-mDP checked on the final matrix. ``"analytic"``: the guarantee is a
        theorem about the sampling procedure and the matrix is an estimate (Madlib).
    quick_max_n : int
        ``mdp curves`` includes the family by default on spaces up to this size (cost control).
    """

    name: str
    builder: Callable
    description: str
    applies: Callable[[MetricSpace], str | None]
    guarantee: str
    quick_max_n: int

    @property
    def params(self) -> dict[str, object]:
        """Keyword parameters of the builder with their defaults."""
        sig = inspect.signature(self.builder)
        return {p.name: p.default for p in sig.parameters.values()
                if p.kind == p.KEYWORD_ONLY and p.name != "rng"}


_REGISTRY: dict[str, MechanismEntry] = {}


def _always(space: MetricSpace) -> None:
    return None


def register(name: str, *, description: str, applies: Callable | None = None,
             guarantee: str = "matrix", quick_max_n: int = 10**9):
    """Decorator registering ``builder`` under ``name``.

    Examples
    --------
    >>> @register("uniform_demo", description="uniform output")  # doctest: +SKIP
    ... def build_uniform(space, epsilon, *, rng=None):
    ...     return np.full((space.n, space.n), 1 / space.n)
    """
    if guarantee not in ("matrix", "analytic"):
        raise ValueError(f"guarantee must be 'matrix' or 'analytic', got {guarantee!r}")

    def deco(builder):
        if name in _REGISTRY:
            raise ValueError(f"mechanism {name!r} is already registered")
        _REGISTRY[name] = MechanismEntry(name, builder, description, applies or _always,
                                         guarantee, quick_max_n)
        return builder

    return deco


def _ensure_loaded() -> None:
    import mdp.families  # noqa: F401  (importing registers the built-in families)


def mechanisms() -> dict[str, str]:
    """Registered names with their one-line descriptions."""
    _ensure_loaded()
    return {k: e.description for k, e in sorted(_REGISTRY.items())}


def get(name: str) -> MechanismEntry:
    """The registry entry of ``name``; unknown names raise with the list of valid names."""
    _ensure_loaded()
    if not isinstance(name, str):
        raise TypeError(f"mechanism name must be a string, got {type(name).__name__}")
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(
            f"unknown mechanism {name!r}; valid names: {', '.join(sorted(_REGISTRY))}") from None


def applicable(space: MetricSpace) -> dict[str, str | None]:
    """For every registered family, ``None`` if it applies to ``space`` else the reason."""
    _ensure_loaded()
    return {k: e.applies(space) for k, e in sorted(_REGISTRY.items())}


def build(name: str, space: MetricSpace, epsilon: float, *, rng=None, **params) -> Mechanism:
    """Build the mechanism ``name`` on ``space`` at privacy level ``epsilon``.

    The result has passed the shared privacy check of its final matrix
    (:func:`mdp.verification.certify`; outcome in ``stats["privacy"]``).

    Parameters
    ----------
    name : str
        A registered name (see :func:`mechanisms`).
    space : MetricSpace
    epsilon : float
        Requested pure mDP level, > 0.
    rng : None, int or numpy.random.Generator
        For randomised builders (keyword-only).
    **params
        Family parameters (see ``mdp list`` or ``mdp.get(name).params``).

    Raises
    ------
    ValueError
        Unknown name, invalid epsilon, a family that does not apply to the space.
    TypeError
        Unknown parameters (the message lists the accepted ones).
    mdp.verification.PrivacyError
        The final matrix violates the claimed guarantee beyond the tolerance repair.
    """
    entry = get(name)
    if not isinstance(space, MetricSpace):
        raise TypeError(f"space must be a MetricSpace, got {type(space).__name__}")
    epsilon = check_epsilon(epsilon)
    accepted = entry.params
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        raise TypeError(f"mechanism {name!r} got unknown parameter(s) {unknown}; "
                        f"accepted: {sorted(accepted) or 'none'}")
    reason = entry.applies(space)
    if reason:
        raise ValueError(f"mechanism {name!r} does not apply to this space: {reason}")
    rng = check_rng(rng)
    t0 = time.perf_counter()
    out = entry.builder(space, epsilon, rng=rng, **params)
    build_seconds = time.perf_counter() - t0
    resolved = {**accepted, **params}
    if isinstance(out, Mechanism):
        mech = out
        mech.params = {**resolved, **mech.params}
    else:
        matrix, stats = out if isinstance(out, tuple) else (out, {})
        mech = Mechanism(matrix, space, epsilon, name, resolved, stats)
    mech.stats["build_seconds"] = build_seconds
    if entry.guarantee == "matrix":
        t1 = time.perf_counter()
        matrix, report = certify(mech.matrix, space.distances, epsilon)
        report["seconds"] = time.perf_counter() - t1
        if report["repaired"]:
            matrix.setflags(write=False)
            mech.matrix = matrix
            mech._cdf = None
        mech.stats["privacy"] = report
    else:
        mech.stats.setdefault("privacy", {"guarantee": "analytic", "claimed_eps": epsilon})
    return mech

