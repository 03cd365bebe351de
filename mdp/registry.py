"""The mechanism registry: a string name maps to a builder.

Builders register themselves with :func:`register`; :func:`build` looks a name up, validates
the parameters against the builder's signature, builds, and passes the final matrix through the
shared privacy check (:func:`mdp.privacy.verification.certify`). Unknown names raise with the list of
valid names.

A builder has the signature ``builder(space, epsilon, *, rng, **params)`` and returns a
:class:`~mdp.candidate.Candidate` (a matrix or log-matrix with its build statistics). Its keyword
parameters are declared once as :class:`~mdp.params.Param` rules in :func:`register`; the
registry validates user values against them before the builder runs, and turns the candidate
into the family's :class:`~mdp.Mechanism` class, whose constructor certifies it.
"""

from __future__ import annotations

import importlib
import inspect
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from .candidate import Candidate
from .errors import ParameterError, ParameterTypeError
from .mechanism import Mechanism
from .params import Param
from .plugins import Registry, load_family_plugins
from .runtime.resources import check_memory
from .runtime.threads import use_threads
from .spaces.metric_space import MetricSpace
from .spaces.vector_space import VectorSpace
from .validation import check_epsilon, check_rng
from .vocabulary.mode import ModeRule, plan_mode

__all__ = ["register", "build", "mechanisms", "get", "MechanismEntry", "applicable",
           "register_vocabulary", "vocabulary_class"]


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
    guarantee : {"matrix", "analytic", "scoped"}
        ``"matrix"``: pure eps-mDP checked on the final matrix. ``"analytic"``: the guarantee is a
        theorem about the sampling procedure and the matrix is an estimate (Madlib).
        ``"scoped"``: certified on the matrix among groups of inputs only (CusText, SanText+;
        :mod:`mdp.families.scoped`).
    quick_max_n : int
        ``mdp curves`` includes the family by default on spaces up to this size (cost control).
    display_name : str
        Name shown in tables and plots (e.g. ``"OPTMech"``); the same everywhere.
    rules : dict[str, Param]
        Declared keyword parameters (see :mod:`mdp.params`).
    mechanism_class : type
        The :class:`~mdp.Mechanism` class built from the builder's candidate.
    peak_bytes : callable or None
        ``peak_bytes(n, params) -> int``: the build's estimated peak memory on ``n`` points
        with the resolved parameters, checked by :func:`build` against ``max_memory`` before
        the builder runs (None: no estimate).
    domain : {"any", "words"}
        ``"words"``: a word mechanism of the text literature, built by default in ``mdp
        curves`` only on a space of words (it applies wherever ``applies`` says, by name).
    """

    name: str
    builder: Callable
    description: str
    applies: Callable[[MetricSpace], str | None]
    guarantee: str
    quick_max_n: int
    display_name: str = ""
    rules: dict = field(default_factory=dict)
    mechanism_class: type = Mechanism
    peak_bytes: Callable[[int, dict], int] | None = None
    domain: str = "any"

    @property
    def params(self) -> dict[str, object]:
        """Keyword parameters of the family with their defaults."""
        if self.rules:
            return {k: r.default for k, r in self.rules.items()}
        sig = inspect.signature(self.builder)
        return {p.name: p.default for p in sig.parameters.values()
                if p.kind == p.KEYWORD_ONLY and p.name != "rng"}

    def validate_params(self, params: dict) -> dict:
        """All parameters with defaults filled in; user values checked against the rules.

        Raises
        ------
        ParameterTypeError
            An unknown parameter name (the message lists the accepted ones).
        ParameterError
            A value outside its rule (the message names the parameter and the value).
        """
        accepted = self.params
        unknown = sorted(set(params) - set(accepted))
        if unknown:
            raise ParameterTypeError(f"mechanism {self.name!r} got unknown parameter(s) {unknown}; "
                                     f"accepted: {sorted(accepted) or 'none'}")
        checked = dict(accepted)
        for key, value in params.items():
            rule = self.rules.get(key)
            checked[key] = rule.validate(key, value) if rule is not None else value
        return checked


#: Kinds of guarantee a family declares: "matrix" (pure eps-mDP certified on the final matrix),
#: "analytic" (a theorem about the sampler; the matrix is an estimate), "scoped" (certified on
#: the matrix among groups of inputs only, :mod:`mdp.families.scoped`).
GUARANTEES = ("matrix", "analytic", "scoped")

#: The registered mechanism families (filled by :func:`register`; built-in families live in
#: :mod:`mdp.families`, other packages declare modules in the ``mdp.families`` entry-point group).
FAMILIES: Registry[MechanismEntry] = Registry("mechanism", None)


#: Vocabulary-mode classes by family name (:mod:`mdp.vocabulary.mode`).
_VOCABULARY: dict[str, type] = {}


def register_vocabulary(name: str, cls: type) -> type:
    """Declare ``cls`` (a :class:`~mdp.vocabulary.mode.VocabularyMechanism`) as the vocabulary
    mode of family ``name``."""
    _VOCABULARY[name] = cls
    return cls


def vocabulary_class(name: str) -> type | None:
    """The vocabulary-mode class of family ``name`` (``None`` when it has none)."""
    _ensure_loaded()
    return _VOCABULARY.get(name)


def _always(space: MetricSpace) -> None:
    return None


def register(name: str, *, description: str, applies: Callable | None = None,
             guarantee: str = "matrix", quick_max_n: int = 10**9, display_name: str | None = None,
             params: dict[str, Param] | None = None, mechanism_class: type = Mechanism,
             peak_bytes: Callable[[int, dict], int] | None = None, domain: str = "any"):
    """Decorator registering ``builder`` under ``name``.

    Parameters
    ----------
    name : str
        Registry name (``mdp build --mechanism NAME``).
    description : str
        One line for ``mdp list``.
    applies : callable or None
        ``applies(space) -> reason or None``.
    guarantee : {"matrix", "analytic", "scoped"}
        See :class:`MechanismEntry`.
    quick_max_n : int
        Largest space included by default in ``mdp curves``.
    display_name : str or None
        Name in tables and plots (default: ``name``).
    params : dict[str, Param] or None
        Declared keyword parameters of the builder (names must match its signature).
    mechanism_class : type
        :class:`~mdp.Mechanism` subclass to build (e.g. one that samples differently).
    peak_bytes : callable or None
        ``peak_bytes(n, params) -> int``, the build's estimated peak memory (see
        :class:`MechanismEntry`).
    domain : {"any", "words"}
        See :class:`MechanismEntry`.

    Examples
    --------
    >>> @register("uniform_demo", description="uniform output")  # doctest: +SKIP
    ... def build_uniform(space, epsilon, *, rng=None):
    ...     return Candidate(matrix=np.full((space.n, space.n), 1 / space.n))
    """
    if guarantee not in GUARANTEES:
        raise ValueError(f"guarantee must be one of {GUARANTEES}, got {guarantee!r}")
    if domain not in ("any", "words"):
        raise ValueError(f"domain must be 'any' or 'words', got {domain!r}")
    rules = dict(params or {})

    def deco(builder):
        if rules:
            sig = inspect.signature(builder)
            declared = {p.name for p in sig.parameters.values()
                        if p.kind == p.KEYWORD_ONLY and p.name != "rng"}
            if declared != set(rules):
                raise ValueError(f"mechanism {name!r}: declared params {sorted(rules)} differ from "
                                 f"the builder's keyword parameters {sorted(declared)}")
        FAMILIES.register(name, MechanismEntry(name, builder, description, applies or _always,
                                               guarantee, quick_max_n, display_name or name, rules,
                                               mechanism_class, peak_bytes, domain))
        return builder

    return deco


def _ensure_loaded() -> None:
    """Register the built-in families (:mod:`mdp.families`, imported on the first lookup) and
    those of installed plugins."""
    importlib.import_module("mdp.families")
    load_family_plugins()


def mechanisms() -> dict[str, str]:
    """Registered names with their one-line descriptions."""
    _ensure_loaded()
    return {k: e.description for k, e in FAMILIES.items()}


def get(name: str) -> MechanismEntry:
    """The registry entry of ``name``.

    Raises
    ------
    mdp.errors.UnknownInputError
        Unknown name (the message lists the valid names).
    mdp.errors.ParameterTypeError
        A name that is not a string.
    """
    _ensure_loaded()
    if not isinstance(name, str):
        raise ParameterTypeError(f"mechanism name must be a string, got {type(name).__name__}")
    return FAMILIES.get(name)


def applicable(space: MetricSpace) -> dict[str, str | None]:
    """For every registered family, ``None`` if it applies to ``space`` else the reason."""
    _ensure_loaded()
    return {k: e.applies(space) for k, e in FAMILIES.items()}


def build(name: str, space: MetricSpace | VectorSpace, epsilon: float, *, rng=None,
          mode: str = "auto", mode_rule: ModeRule | None = None, threads=None,
          max_memory: int | None = None, **params) -> Mechanism:
    """Build the mechanism ``name`` on ``space`` at privacy level ``epsilon``.

    The result has passed the shared privacy check of its final matrix
    (:func:`mdp.privacy.verification.certify`; outcome in ``stats["privacy"]``).

    Parameters
    ----------
    name : str
        A registered name (see :func:`mechanisms`).
    space : MetricSpace or VectorSpace
        A :class:`~mdp.spaces.vector_space.VectorSpace` (points, no distance matrix) for vocabularies
        too large for a matrix.
    epsilon : float
        Requested pure mDP level, > 0.
    rng : None, int or numpy.random.Generator
        For randomised builders (keyword-only).
    mode : {"auto", "matrix", "vocabulary"}, default "auto"
        Matrix mode (certified matrix) or vocabulary mode (families with an analytic
        guarantee, no matrix; a :class:`~mdp.vocabulary.mode.VocabularyMechanism` is
        returned); ``"auto"`` follows :func:`mdp.vocabulary.mode.plan_mode`. The plan and its
        reason are in ``stats["mode"]``.
    mode_rule : ModeRule, optional
        The size up to which ``"auto"`` keeps matrix mode.
    threads : None, "auto" or int >= 1
        Threads of the build's pools (HiGHS, BLAS, numba; :mod:`mdp.runtime.threads`): ``None`` /
        ``"auto"`` sizes them from the CPUs free and the work's grain (inside another plan's
        block, e.g. :func:`mdp.calibrate`'s, that plan holds); an int fixes every pool. The plan
        is recorded in ``stats["threads"]``.
    max_memory : int or None
        Limit in bytes on the family's estimated peak memory (its ``peak_bytes``, e.g. the LP
        families' rows and block inverses from ``n``), checked before any work; None: half the
        machine's memory (:func:`mdp.runtime.resources.default_max_memory`).
    **params
        Family parameters (see ``mdp list`` or ``mdp.get(name).params``).

    Raises
    ------
    mdp.errors.UnknownInputError
        Unknown name (the message lists the registered ones; also a ``ValueError`` and a
        ``KeyError``).
    mdp.errors.ParameterError
        Invalid epsilon or parameter value, a family that does not apply to the space (also a
        ``ValueError``).
    mdp.errors.ParameterTypeError
        Unknown parameters (the message lists the accepted ones), a space that is not a
        :class:`MetricSpace` (also a ``TypeError``).
    mdp.errors.ResourceLimitError
        The family's memory estimate is above ``max_memory`` (nothing was built; the message
        states the estimate and the limit).
    mdp.errors.PrivacyError
        The final matrix violates the claimed guarantee beyond the tolerance repair.
    mdp.errors.BuildError, mdp.errors.SolverError
        The family's builder cannot produce a mechanism (LP families: no usable optimum).
    """
    entry = get(name)
    if not isinstance(space, (MetricSpace, VectorSpace)):
        raise ParameterTypeError(f"space must be a MetricSpace, got {type(space).__name__}")
    epsilon = check_epsilon(epsilon)
    resolved = entry.validate_params(params)
    reason = entry.applies(space)
    if reason:
        raise ParameterError(f"mechanism {name!r} does not apply to this space: {reason}")
    rng = check_rng(rng)
    plan = plan_mode(space, mode, family=name, has_vocabulary=name in _VOCABULARY, rule=mode_rule)
    if plan.mode != "vocabulary" and entry.peak_bytes is not None:
        check_memory(entry.peak_bytes(space.n, resolved),
                     f"{entry.display_name} on n = {space.n:,} points", max_memory)
    with use_threads(threads) as thread_plan:
        if plan.mode == "vocabulary":
            t0 = time.perf_counter()
            vspace = (space if isinstance(space, VectorSpace)
                      else VectorSpace.from_metric_space(space))
            mech = _VOCABULARY[name](vspace, epsilon, name, resolved, {"mode": plan.as_dict()})
            mech.stats["build_seconds"] = time.perf_counter() - t0
            mech.stats["threads"] = thread_plan.record()
            return mech
        if isinstance(space, VectorSpace):
            space = MetricSpace.from_points(space.points, labels=space.labels)
        t0 = time.perf_counter()
        out = entry.builder(space, epsilon, rng=rng, **resolved)
        build_seconds = time.perf_counter() - t0
    if not isinstance(out, Candidate):
        raise TypeError(f"builder of {name!r} returned {type(out).__name__}, not a Candidate")
    for values in (out.matrix, out.log_matrix):
        # the candidate is the registry's now: read-only, the certification measures (and the
        # sampler draws from) this very array instead of an n x n copy of it
        if isinstance(values, np.ndarray) and values.flags.owndata:
            values.setflags(write=False)
    stats = {**out.stats, "build_seconds": build_seconds, "mode": plan.as_dict(),
             "threads": thread_plan.record()}
    mech = entry.mechanism_class(out.matrix, space, epsilon,
                                 name=name, params=resolved, stats=stats,
                                 log_matrix=out.log_matrix)
    # a typed build report (mdp.lp.build_report.BuildReport) gets the certification's outcome
    certified = getattr(out.stats, "certified", None)
    if certified is not None:
        mech.report = certified(mech.stats.get("privacy"), build_seconds, stats["threads"])
    return mech
