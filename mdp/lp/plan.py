"""The path an LP build takes, in one vocabulary shared by every LP family.

Each LP family (:mod:`mdp.families.optimal`, :mod:`mdp.families.spanner`,
:mod:`mdp.families.constopt`) decides its whole path in one function, ``plan(space, epsilon,
..., tuning)``, which returns a :class:`Plan`; the build follows it and records what it tried as
:class:`Attempt` values in its :class:`~mdp.lp.build_report.BuildReport`.

Vocabulary
----------
``method``: how the privacy rows enter the LP.

* ``"lazy"`` -- row generation: start from a few rows, add the violated ones round by round
  (:class:`mdp.lp.RowGeneration` on HiGHS, or the rounds of :mod:`mdp.worst_case.block_rounds`).
* ``"full"`` -- every row at once (the worst-case LP dualised; ConstOPTMech's whole LP).

``solver``: what solves each LP.

* ``"blocks"`` -- the toolkit's structured interior point method over the LP's blocks (column
  blocks of the worst-case LP, :mod:`mdp.worst_case.column_blocks`; ConstOPTMech's row blocks,
  :mod:`mdp.families.constopt.ipm`), certified to a relative gap.
* a HiGHS method (:data:`mdp.lp.SOLVERS`: ``"simplex"``, ``"ipm"``, ``"hipo"``, ...).
* ``"clarabel"`` -- Clarabel's conic interior point method (:mod:`mdp.lp.conic`).

``device``: where the dense linear algebra of ``"blocks"`` runs, ``"cpu"`` or ``"gpu"``
(``"cpu"`` for the other solvers, which run on HiGHS's or Clarabel's own threads).

``steps``: the solves the build runs, in order, until one is accepted (:class:`Step`; the first is
the chosen path, the others its retries at a lower coefficient limit or with another HiGHS method),
run by :func:`mdp.lp.runner.run_steps`; each one run is an :class:`Attempt` of the build report,
named by its step's label.

``fallbacks``: what happens within a step when its solver fails (another solver of a chain) and
after the steps (the exponential mechanism).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..params import Param, instance_param

__all__ = ["METHODS", "BLOCKS", "CLARABEL", "AUTO", "Choice", "Option", "GapTarget", "Fallback",
           "Step", "Plan", "Attempt", "tuning_param"]

#: How the rows enter the LP (module docstring).
METHODS = ("lazy", "full")
#: ``solver`` of the structured interior point method over the LP's blocks.
BLOCKS = "blocks"
#: ``solver`` of Clarabel's conic interior point method.
CLARABEL = "clarabel"
#: The default of every ``method`` and ``solver`` parameter: resolved by the family's ``plan``.
AUTO = "auto"


@dataclass(frozen=True)
class Choice:
    """One decision of a plan: the value taken and why."""

    value: str
    reason: str

    def __str__(self) -> str:
        return f"{self.value} ({self.reason})"


def _shown(value: object) -> str:
    """An option's value as the plan prints it: ``1e+12``, ``none``, ``on``/``off``, ``ipm``."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


@dataclass(frozen=True)
class Option:
    """A further decision of a plan: its name, its typed value (what the build reads) and why."""

    name: str
    value: object
    reason: str

    def __str__(self) -> str:
        return f"{self.name}={_shown(self.value)} ({self.reason})"


@dataclass(frozen=True)
class GapTarget:
    """The certified relative gap a build aims at, and how it gets there: decided once, by the
    family's plan, and read by every part of the build (never the ``gap`` parameter itself).

    The certified relative gap of a matrix is ``(loss - bound) / loss``, its worst-case loss
    against a rigorous Lagrangian lower bound on the optimum (Imola et al. 2022, section 2.1).

    Attributes
    ----------
    rtol : float
        The certified relative gap aimed at.
    exact : bool
        True (``gap=None``): the LP is solved to its optimum, every privacy row met, and the
        repaired matrix certified within ``rtol``. False (a gap asked for): the row generation
        may stop as soon as the repaired (private) matrix of a restricted LP is certified within
        ``rtol``, rows of that restricted optimum still violated (the repair answers for them).
    """

    rtol: float
    exact: bool

    @property
    def stop_gap(self) -> float | None:
        """The gap at which the row generation may stop before the optimum (None: exact)."""
        return None if self.exact else self.rtol

    def asked(self) -> str:
        """What was asked for, in a warning's words: ``exact (gap <= 1e-06)`` or ``gap=0.001``."""
        return f"exact (gap <= {self.rtol:g})" if self.exact else f"gap={self.rtol:g}"

    def __str__(self) -> str:
        return f"{self.rtol:g}"


@dataclass(frozen=True)
class Fallback:
    """What happens within a step when its solver fails (the next solver of a chain), or after
    the steps (the exponential mechanism): what and when."""

    step: str
    when: str

    def __str__(self) -> str:
        return f"{self.step} (when {self.when})"


@dataclass(frozen=True)
class Step:
    """One solve of a plan, run in order by :func:`mdp.lp.runner.run_steps` until one is accepted.

    Attributes
    ----------
    label : str
        What it runs; the name of its :class:`Attempt`.
    when : str
        When it runs.
    solver : str
        The solver it runs (a HiGHS method, ``"blocks"``, ``"clarabel"``).
    max_coefficient : float
        Rows whose coefficient ``e^{eps D_uv}`` exceeds it are left out (a relaxation).
    budgeted : bool
        Its solve stops past a budget of its own, so that the next step starts (ConstOPTMech's
        warm rounds after HiPO; the full LP's IPX with crossover before a lower limit).
    crossover : bool
        A HiGHS interior point solve ends with crossover to a vertex.
    """

    label: str
    when: str
    solver: str
    max_coefficient: float
    budgeted: bool = False
    crossover: bool = False

    def __str__(self) -> str:
        return f"{self.label} (when {self.when})"


@dataclass(frozen=True)
class Plan:
    """The path of one LP build, decided before it runs (module docstring for the vocabulary).

    Attributes
    ----------
    family : str
        Display name of the family (``"OPTMech"``, ``"SpannerMech"``, ``"ConstOPTMech"``).
    method, solver, device : Choice
        Each choice with its reason.
    fallbacks : tuple of Fallback
        What happens within a step when its solver fails, and after the steps.
    options : tuple of Option
        Further family-specific decisions (starting rows, lazy rows, HiGHS finish, ...), each
        with its typed value.
    steps : tuple of Step
        The solves the build runs, in order, until one is accepted.
    """

    family: str
    method: Choice
    solver: Choice
    device: Choice = Choice("cpu", "the solver runs on the CPU")
    fallbacks: tuple[Fallback, ...] = ()
    options: tuple[Option, ...] = field(default=())
    steps: tuple[Step, ...] = ()

    def option(self, name: str, default: object = None) -> object:
        """The typed value of the option ``name``, or ``default``."""
        return next((o.value for o in self.options if o.name == name), default)

    def describe(self) -> list[str]:
        """The plan as lines of text (``mdp build -v``)."""
        lines = [f"{self.family}: method {self.method}", f"  solver {self.solver}",
                 f"  device {self.device}"]
        lines += [f"  {c}" for c in self.options]
        lines += [f"  step {i}: {s}" for i, s in enumerate(self.steps, 1)]
        lines += [f"  fallback {i}: {f}" for i, f in enumerate(self.fallbacks, 1)]
        return lines

    def as_dict(self) -> dict:
        """A JSON-ready form (saved with a mechanism's statistics)."""
        return {"family": self.family,
                "method": self.method.value, "method_reason": self.method.reason,
                "solver": self.solver.value, "solver_reason": self.solver.reason,
                "device": self.device.value, "device_reason": self.device.reason,
                "options": [str(c) for c in self.options],
                "steps": [str(s) for s in self.steps],
                "fallbacks": [str(f) for f in self.fallbacks]}


@dataclass(frozen=True)
class Attempt:
    """One solve a build tried: what, its outcome and its wall-clock seconds.

    ``outcome`` is ``"ok"`` or ``"failed"`` (or ``"stopped"`` when it ran out of its time or
    stopped short of its target and the build went on); ``detail`` says more (the loss and bound,
    or the error).
    """

    step: str
    outcome: str
    seconds: float
    detail: str = ""

    def __str__(self) -> str:
        return f"{self.step}: {self.detail or self.outcome}"


def tuning_param(cls: type) -> Param:
    """The ``tuning`` parameter rule of a family whose tuning dataclass is ``cls``: an instance
    of it, or None for its defaults."""
    return instance_param(cls, f"{cls.__name__}: thresholds of the plan and tolerances "
                               "(None: defaults)")
