"""What an LP build did: its plan, every attempt, the bound and gap, seconds per phase.

A :class:`BuildReport` is the ``stats`` of the :class:`~mdp.candidate.Candidate` an LP family
returns. Its typed fields say what the build did; it is also a read-only mapping over the
solver's statistics (``report["rows"]``, ``mech.stats["relative_gap"]``, ...), so code that reads
the statistics by key keeps working. The registry hands the certified report to the mechanism
(``mech.report``, with the privacy check's outcome in :attr:`BuildReport.privacy`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace

from .plan import Attempt, Plan

__all__ = ["BuildReport"]


@dataclass(frozen=True, eq=False)
class BuildReport(Mapping):
    """The typed result of one LP build.

    Attributes
    ----------
    plan : Plan
        The path decided before the build (:mod:`mdp.lp.plan`).
    attempts : tuple of Attempt
        Every solve tried, in order, with its outcome and seconds.
    fallbacks : tuple of str
        The fallbacks the build took (empty when the planned path succeeded), each with its reason.
    loss, bound, gap : float or None
        Worst-case loss of the returned matrix, a rigorous lower bound on the LP's optimum, and
        the relative gap between them (``None`` where the family does not compute one).
    seconds : mapping str -> float
        Wall-clock seconds per phase (``"plan"``, ``"solve"``, ...; ``"build"`` for the whole
        build once certified).
    threads : mapping, int or None
        The build's thread plan (:meth:`mdp.runtime.threads.ThreadPlan.record`: requested, CPUs, busy,
        HiGHS, BLAS) once certified; before that, HiGHS's thread count
        (:func:`mdp.lp.get_threads`).
    privacy : mapping or None
        The privacy check's outcome (:func:`mdp.privacy.verification.certify`), set once certified.
    details : mapping
        The solver's statistics, keyed as before (LP sizes, iterations, round traces, ...): the
        mapping view of the report.
    """

    plan: Plan
    attempts: tuple[Attempt, ...] = ()
    fallbacks: tuple[str, ...] = ()
    loss: float | None = None
    bound: float | None = None
    gap: float | None = None
    seconds: Mapping[str, float] = field(default_factory=dict)
    threads: Mapping | int | None = None
    privacy: Mapping | None = None
    details: Mapping = field(default_factory=dict)

    def __post_init__(self) -> None:
        view = dict(self.details)
        view["plan"] = self.plan.as_dict()
        view["attempt_log"] = [{"step": a.step, "outcome": a.outcome, "seconds": a.seconds,
                                "detail": a.detail} for a in self.attempts]
        if self.fallbacks:
            view["fallbacks_taken"] = list(self.fallbacks)
        view["seconds_by_phase"] = dict(self.seconds)
        if self.threads is not None:
            view.setdefault("threads", self.threads)
        # plain dicts, so that a report pickles with its mechanism (the Mapping interface has no
        # setters: the view is read-only)
        object.__setattr__(self, "_view", view)
        object.__setattr__(self, "seconds", dict(self.seconds))

    def __getitem__(self, key: str):
        return self._view[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._view)

    def __len__(self) -> int:
        return len(self._view)

    def __repr__(self) -> str:
        return (f"BuildReport(plan={self.plan.method.value}/{self.plan.solver.value}, "
                f"attempts={len(self.attempts)}, loss={self.loss}, bound={self.bound}, "
                f"gap={self.gap})")

    @classmethod
    def of(cls, plan: Plan, stats: Mapping, *, attempts=(), seconds: Mapping | None = None,
           threads: int | None = None) -> BuildReport:
        """The report of a build whose solver statistics are ``stats``: the loss, bound and
        relative gap are read from its ``loss``, ``lower_bound`` and ``relative_gap`` keys, the
        fallback taken from ``fallback`` (:func:`mdp.families.exponential.exponential_floor`)
        and ``fallbacks_taken``."""
        def number(key):
            value = stats.get(key)
            return None if value is None else float(value)

        taken = list(stats.get("fallbacks_taken", ()))
        floor = stats.get("fallback")
        if isinstance(floor, Mapping):
            taken.append(f"{floor.get('to', 'exponential')}: {floor.get('reason', '')}".rstrip(": "))
        return cls(plan=plan, attempts=tuple(attempts), fallbacks=tuple(taken),
                   loss=number("loss"), bound=number("lower_bound"), gap=number("relative_gap"),
                   seconds=dict(seconds or {}), threads=threads,
                   details={k: v for k, v in stats.items() if k != "fallbacks_taken"})

    def certified(self, privacy: Mapping | None, build_seconds: float,
                  threads: Mapping | None = None) -> BuildReport:
        """The report with the privacy check's outcome, the whole build's seconds and (when
        given) the build's thread plan."""
        return replace(self, privacy=privacy, seconds={**self.seconds, "build": build_seconds},
                       threads=self.threads if threads is None else dict(threads))

    def describe(self) -> list[str]:
        """The plan taken and every attempt as lines of text (``mdp build -v``)."""
        lines = ["plan: " + line if i == 0 else line for i, line in enumerate(self.plan.describe())]
        for i, a in enumerate(self.attempts, 1):
            lines.append(f"attempt {i}: {a.step}: {a.outcome}, {a.seconds:.2f} s"
                         + (f" ({a.detail})" if a.detail else ""))
        lines += [f"fallback taken: {f}" for f in self.fallbacks]
        if self.loss is not None:
            lines.append(f"loss {self.loss:.10g}"
                         + ("" if self.bound is None else f", bound {self.bound:.10g}")
                         + ("" if self.gap is None else f", relative gap {self.gap:.3g}"))
        if self.seconds:
            lines.append("seconds: " + ", ".join(f"{k} {v:.2f}" for k, v in self.seconds.items()))
        return lines
