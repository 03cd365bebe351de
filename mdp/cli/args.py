"""Command-line arguments read the way users write them.

- One list syntax everywhere: an option that takes several values takes them separated by
  spaces, by commas, or both (``--mechanisms optimal,spanner`` = ``--mechanisms optimal
  spanner``), and a list may start with a negative number (``--eps-tight -1,1``).
- A points CSV whose header names ``lat``/``lon`` (or ``latitude``/``longitude``) columns is
  read as locations (haversine, km) unless ``--metric`` says otherwise; the command says which
  metric it chose and why (:func:`choose_metric`).
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from ..errors import MDPError
from ..runtime.resources import parse_bytes

__all__ = ["ArgumentParser", "MetricChoice", "choose_metric", "memory_size", "MEMORY_HELP",
           "PRIOR_HELP"]

#: Help of every command's ``--max-memory`` option.
MEMORY_HELP = ("largest memory the command may plan to use, e.g. 8GB or 512MiB (B, KB, MB, GB, "
               "TB, KiB, MiB, GiB, TiB); work estimated above it is refused before it starts "
               "(default: half the machine's memory)")


def memory_size(text: str) -> int:
    """``--max-memory`` values: ``8GB``, ``512MiB``, ``2e9`` -> bytes
    (:func:`mdp.runtime.resources.parse_bytes`); argparse reports a bad one with the option's name."""
    try:
        return parse_bytes(text)
    except MDPError as exc:
        raise argparse.ArgumentTypeError(str(exc).replace("max_memory", "a memory size", 1)) \
            from None

_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"

#: A value that starts with ``-`` but is a number or a list of numbers, not an option.
_NEGATIVE_NUMBERS = re.compile(rf"^-(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?(?:[,\s]+{_NUMBER})*,?$")


class ArgumentParser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` with the toolkit's list syntax.

    Every option declared with ``nargs="+"`` or ``nargs="*"`` splits its values on commas too,
    before each is converted and checked against ``choices``; positional arguments are left
    whole (a ``lat,lon`` input is one value). Values that are negative numbers or lists of them
    are values, not options. Sub-command parsers are of this class too (``add_subparsers``
    makes them of the parent's class).

    A bad argument is one line on standard error, ``mdp build: error: ... (mdp build --help
    lists the options)``, and exit status 2: the usage block is for ``--help``.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # argparse decides "option or value" for a leading '-' with this pattern (only '-1' and
        # '-1.5' by default, so '-1,1' was taken for an unknown option).
        self._negative_number_matcher = _NEGATIVE_NUMBERS

    def _get_values(self, action, arg_strings):
        if action.option_strings and action.nargs in ("+", "*"):
            arg_strings = [part.strip() for s in arg_strings for part in s.split(",")
                           if part.strip()]
            if not arg_strings and action.nargs == "+":
                self.error(f"argument {'/'.join(action.option_strings)}: expected at least one "
                           "value")
        return super()._get_values(action, arg_strings)

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} ({self.prog} --help lists the options)\n")


class MetricChoice:
    """The metric a command uses for ``--space FILE.csv`` and why (for one line of output).

    Attributes
    ----------
    metric : str or None
        The metric to pass on (None: the space chooses, e.g. plugin specs and ``.npy`` files).
    reason : str or None
        Why, in words, when the metric was inferred from the file (None otherwise).
    """

    def __init__(self, metric: str | None, reason: str | None = None):
        self.metric = metric
        self.reason = reason

    def message(self) -> str | None:
        """The line the command prints (None when there is nothing to say)."""
        if self.reason is None:
            return None
        other = "euclidean" if self.metric == "haversine" else "haversine"
        return f"metric {self.metric}: {self.reason} (--metric {other} to override)"


def choose_metric(spec: str | None, metric: str | None) -> MetricChoice:
    """The metric for ``--space spec``: ``metric`` when given; for a CSV without ``--metric``,
    haversine when its header names lat/lon columns, else euclidean.

    Parameters
    ----------
    spec : str or None
        The ``--space`` value.
    metric : str or None
        The ``--metric`` value.

    Returns
    -------
    MetricChoice
    """
    if metric is not None or spec is None:
        return MetricChoice(metric)
    path = Path(spec)
    if path.suffix.lower() not in (".csv", ".txt") or not path.is_file():
        return MetricChoice(None)
    header = _first_line(path)
    if header is None:
        return MetricChoice(None)
    from ..io import latlon_columns

    fields = [f.strip() for f in header.split(",")]
    if latlon_columns(fields) is not None:
        return MetricChoice("haversine", f"the header of {path.name} names lat,lon columns, so "
                                         "distances are great-circle km (epsilon per km)")
    return MetricChoice("euclidean", None)


def _first_line(path: Path) -> str | None:
    """The first non-blank line of a text file (plain or gzip), or None if unreadable."""
    try:
        from ..io import open_text

        with open_text(path, what="points file") as fh:
            for line in fh:
                if line.strip():
                    return line
    except (MDPError, OSError):
        return None       # the space loader reports the problem with the file itself
    return None


#: The ``--prior`` option (:func:`mdp.prior.load_prior` reads it).
PRIOR_HELP = ("where users are, as public knowledge: 'uniform' (default), 'counts:FILE' (visits "
              "per point, smoothed by +1) or FILE (probabilities); FILE is CSV 'label,value' "
              "or one value per line in the space's order")
