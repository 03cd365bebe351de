r"""A prior over a space's points: where users are, as public knowledge.

The measures of :mod:`mdp.prior.adversary`, the remap of :mod:`mdp.prior.remap` and the
expected-loss objective of the LP families (Bordenabe, Chatzikokolakis, Palamidessi 2014) weigh
each input point ``x`` by ``pi_x``. The prior is what an attacker is assumed to know (Shokri et
al. 2011): it is chosen by the user and is not itself protected. A prior estimated from the same
private check-ins that are later privatized leaks those counts to whoever reads it; the docs
(``docs/guide/adversary.md``) say so.

Counts are smoothed additively (Laplace's rule of succession):

.. math:: \pi_x = \frac{c_x + \alpha}{\sum_y c_y + n \alpha}

so that no point has probability 0 (a zero-probability input would make the attacker's error
and the expected loss blind to it).
"""

from __future__ import annotations

import csv
import math
import os
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike

from ..errors import FileFormatError, ParameterError
from ..io import open_text

__all__ = ["Prior", "load_prior", "OBJECTIVES", "objective_params", "resolve_objective"]

def _vector(values: ArrayLike, name: str) -> np.ndarray:
    try:
        v = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise ParameterError(f"{name} must be a sequence of numbers") from None
    if v.ndim != 1 or v.size == 0:
        raise ParameterError(f"{name} must be a non-empty 1-d sequence, got shape {v.shape}")
    bad = ~np.isfinite(v)
    if bad.any():
        raise ParameterError(f"{name} must be finite numbers; entry {int(np.flatnonzero(bad)[0])} "
                             f"is not ({int(bad.sum())} such)")
    return v


@dataclass(frozen=True)
class Prior:
    """Probabilities ``pi`` over the ``n`` points of a space, every one ``> 0``, summing to 1.

    Build one with :meth:`uniform`, :meth:`from_counts` or :meth:`given`.

    Attributes
    ----------
    probabilities : ndarray (n,), read-only
    source : str
        How it was made (``"uniform"``, ``"counts (+1 smoothing)"``, ``"given"``; a file's name
        when loaded), recorded in results.
    """

    probabilities: np.ndarray = field(repr=False)
    source: str = "given"

    def __post_init__(self) -> None:
        p = _vector(self.probabilities, "prior")
        if (p <= 0).any():
            k = int(np.flatnonzero(p <= 0)[0])
            raise ParameterError(f"prior: every point needs a probability > 0; point {k} has "
                                 f"{'0' if p[k] == 0 else 'a negative value'} "
                                 f"({int((p <= 0).sum())} such). Use counts with smoothing "
                                 "(Prior.from_counts) for points never visited")
        s = math.fsum(p.tolist())
        if abs(s - 1.0) > 1e-9:
            raise ParameterError(f"prior: probabilities must sum to 1, got {s:.12g} (normalise "
                                 "them, or give counts with Prior.from_counts)")
        p = p / s
        p.setflags(write=False)
        object.__setattr__(self, "probabilities", p)

    @property
    def n(self) -> int:
        return int(self.probabilities.size)

    @classmethod
    def uniform(cls, n: int) -> Prior:
        """``pi_x = 1 / n``."""
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise ParameterError(f"n must be an integer >= 1, got {n!r}")
        return cls(np.full(int(n), 1.0 / int(n)), "uniform")

    @classmethod
    def from_counts(cls, counts: ArrayLike, *, smoothing: float = 1.0,
                    source: str = "counts") -> Prior:
        r"""``pi_x = (c_x + alpha) / (sum c + n alpha)`` from visit counts ``c >= 0``.

        Raises
        ------
        mdp.errors.ParameterError
            Negative or non-finite counts, ``smoothing`` not > 0 when some count is 0, or all
            counts 0 without smoothing.
        """
        c = _vector(counts, "counts")
        if (c < 0).any():
            k = int(np.flatnonzero(c < 0)[0])
            raise ParameterError(f"counts must be >= 0; point {k} has a negative count "
                                 f"({int((c < 0).sum())} such)")
        if not (isinstance(smoothing, (int, float)) and not isinstance(smoothing, bool)
                and math.isfinite(smoothing) and smoothing >= 0):
            raise ParameterError(f"smoothing must be a finite number >= 0, got {smoothing!r}")
        if smoothing == 0 and (c == 0).any():
            raise ParameterError("counts: some points have count 0 and smoothing is 0; a prior "
                                 "needs every point > 0 (use smoothing > 0, default 1)")
        p = (c + smoothing) / (c.sum() + c.size * smoothing)
        return cls(p, f"{source} (+{smoothing:g} smoothing)")

    @classmethod
    def given(cls, probabilities: ArrayLike, *, source: str = "given") -> Prior:
        """Probabilities as given (each > 0, summing to 1 within 1e-9; renormalised)."""
        return cls(_vector(probabilities, "prior"), source)

    def check_space(self, n: int, name: str = "prior") -> Prior:
        """Raise unless the prior has ``n`` points."""
        if self.n != n:
            raise ParameterError(f"{name} has {self.n} points, the space has {n}")
        return self

    def entropy_bits(self) -> float:
        """Shannon entropy ``-sum pi log2 pi`` (bits)."""
        p = self.probabilities
        return float(-(p * np.log2(p)).sum())


def _read_values(path: str | os.PathLike, labels, what: str) -> np.ndarray:
    """A CSV file of ``label,value`` rows (labels of the space; a header line allowed) or one
    value per line in the space's order. Errors name the file and line, never the value."""
    rows: list[tuple[int, list[str]]] = []
    with open_text(path, what=what) as fh:
        for k, row in enumerate(csv.reader(fh), start=1):
            if not row or all(not c.strip() for c in row):
                continue
            rows.append((k, [c.strip() for c in row]))
    if not rows:
        raise FileFormatError(path, f"empty {what}")
    widths = {len(r) for _, r in rows}
    if widths - {1, 2} or len(widths) != 1:
        raise FileFormatError(path, "expected 'label,value' on every line or one value per line",
                              line=next(k for k, r in rows if len(r) != len(rows[0][1])
                                        or len(r) not in (1, 2)))
    def number(k: int, s: str) -> float:
        try:
            v = float(s)
        except ValueError:
            raise FileFormatError(path, "not a number", line=k) from None
        if not math.isfinite(v):
            raise FileFormatError(path, "not a finite number", line=k)
        return v

    if widths == {1}:
        first_k, first = rows[0]
        try:
            float(first[0])
        except ValueError:
            rows = rows[1:]          # a header
        return np.array([number(k, r[0]) for k, r in rows])
    index = None if labels is None else {str(lab): i for i, lab in enumerate(labels)}
    if index is None:
        raise FileFormatError(path, "'label,value' lines need a space with labels")
    try:
        float(rows[0][1][1])
    except ValueError:
        rows = rows[1:]
    out = np.full(len(index), np.nan)
    for k, (lab, val) in rows:
        i = index.get(lab)
        if i is None:
            raise FileFormatError(path, "label not in the space", line=k)
        if not np.isnan(out[i]):
            raise FileFormatError(path, "label given twice", line=k)
        out[i] = number(k, val)
    return out


def load_prior(spec: str | Prior | None, n: int, *, labels=None,
               smoothing: float = 1.0) -> Prior:
    """The prior named by the command line's ``--prior``.

    Parameters
    ----------
    spec : str, Prior or None
        ``None`` or ``"uniform"``; ``"counts:FILE"`` (visits per point, :meth:`Prior.from_counts`
        with ``smoothing``; points missing from a ``label,count`` file count 0); ``FILE``
        (probabilities, every point > 0, summing to 1); or a :class:`Prior`.
    n : int
        Points of the space.
    labels : sequence or None
        The space's labels (for ``label,value`` files; compared as text, e.g. ``space.labels``).

    Raises
    ------
    mdp.errors.ParameterError, mdp.errors.FileFormatError, mdp.errors.MissingFileError
    """
    if spec is None or (isinstance(spec, str) and spec.strip().lower() == "uniform"):
        return Prior.uniform(n)
    if isinstance(spec, Prior):
        return spec.check_space(n)
    if not isinstance(spec, (str, os.PathLike)):
        raise ParameterError(f"prior must be 'uniform', 'counts:FILE', a file or a Prior, got "
                             f"{type(spec).__name__}")
    spec = os.fspath(spec)
    if spec.startswith("counts:"):
        path = spec[len("counts:"):]
        c = _read_values(path, labels, "counts file")
        if len(c) != n:
            raise FileFormatError(path, f"has {len(c)} counts, the space has {n} points")
        c = np.where(np.isnan(c), 0.0, c)
        if (c < 0).any():
            raise FileFormatError(path, "counts must be >= 0 (a negative count)")
        return Prior.from_counts(c, smoothing=smoothing, source=f"counts of {os.path.basename(path)}")
    p = _read_values(spec, labels, "prior file")
    if len(p) != n:
        raise FileFormatError(spec, f"has {len(p)} probabilities, the space has {n} points")
    if np.isnan(p).any():
        raise FileFormatError(spec, f"gives no probability for {int(np.isnan(p).sum())} point(s) "
                                    "of the space (every point needs one > 0)")
    try:
        return Prior.given(p, source=os.path.basename(spec))
    except ParameterError as exc:
        raise FileFormatError(spec, str(exc).removeprefix("prior: ")) from None


#: The LP families' ``objective`` choices: least worst-case loss (Imola et al. 2022, the
#: default) or least prior-weighted expected loss (Bordenabe et al. 2014).
OBJECTIVES = ("worst", "expected")


def _check_prior(name: str, value):
    if not isinstance(value, Prior):
        raise ParameterError(f"{name} must be a Prior (mdp.prior.Prior.uniform, from_counts or "
                             f"given) or None, got {type(value).__name__}")
    return value


def objective_params() -> dict:
    """The declared ``objective`` and ``prior`` parameters of the LP families."""
    from ..params import Param

    return {
        "objective": Param("choice", "worst", choices=OBJECTIVES,
                           help="'worst': least worst-case loss (default); 'expected': least "
                                "loss weighted by the prior (Bordenabe et al. 2014)"),
        "prior": Param("custom", None, allow_none=True, check=_check_prior,
                       help="Prior of objective='expected' (None: uniform)"),
    }


def resolve_objective(objective: str, prior: Prior | None, n: int) -> Prior | None:
    """The prior an LP build weighs by: None for the worst case (a prior given with it is refused:
    it would change nothing), the prior (uniform by default) for the expected objective."""
    if objective == "worst":
        if prior is not None:
            raise ParameterError("prior is used by objective='expected' only; with the default "
                                 "objective='worst' it would change nothing")
        return None
    return Prior.uniform(n) if prior is None else prior.check_space(n, "prior")
