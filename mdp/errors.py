"""The toolkit's error types: one per kind of failure.

Every error the toolkit raises for a user's input, a file, a solver or a privacy check is one of
these, so callers can catch a kind of failure without parsing messages. Each also derives from
the built-in exception a Python user would expect (``ValueError``, ``TypeError``,
``RuntimeError``, ``KeyError``, ``FileNotFoundError``), so ``except ValueError`` keeps working.

==========================  =================================================================
type                        raised when
==========================  =================================================================
:class:`ParameterError`     a parameter has a bad value (the message names it and the value)
:class:`ParameterTypeError` a parameter has the wrong type
:class:`UnknownInputError`  an input, label, name or index the space / registry does not hold
:class:`MissingFileError`   a file or folder the user named does not exist
:class:`DataNotFoundError`  the real data sets (Geolife, Gowalla) are not on this machine
:class:`FileFormatError`    a file cannot be read or is not what it claims (names file, line)
:class:`PrivacyError`       a matrix violates the guarantee it claims and cannot be repaired
:class:`SolverError`        an LP or cone solver returned no usable optimum
:class:`SolverTimeout`      a solver reached its time limit (no result is returned)
:class:`BuildError`         a mechanism cannot be built (names family, n, epsilon, reason)
:class:`ResourceLimitError` work would need more memory than its limit (estimate and limit)
==========================  =================================================================

Warnings: :class:`AccuracyWarning` when a solver returns a result that holds its privacy
guarantee but is certified less accurately than asked (e.g. OPTMech's exact target);
:class:`UnverifiedPointsWarning` when a loaded file's guarantee rests on points no named source
vouches for; :class:`WeakPrivacyWarning` when epsilon leaves no meaningful privacy on a space.
"""

from __future__ import annotations

import os

__all__ = ["MDPError", "ParameterError", "ParameterTypeError", "UnknownInputError",
           "MissingFileError", "DataNotFoundError", "FileFormatError", "PrivacyError",
           "SolverError", "SolverTimeout", "BuildError", "ResourceLimitError", "AccuracyWarning",
           "UnverifiedPointsWarning", "WeakPrivacyWarning"]


class MDPError(Exception):
    """Base class of every error the toolkit raises on purpose.

    Parameters
    ----------
    *args
        The message (as for ``Exception``).
    cli_message : str, optional
        The same message in command-line terms (``--oov mask`` rather than ``oov='mask'``),
        which the ``mdp`` command prints instead of the message.
    """

    def __init__(self, *args, cli_message: str | None = None):
        super().__init__(*args)
        self.cli_message = cli_message


class ParameterError(MDPError, ValueError):
    """A parameter has an invalid value; the message names the parameter and the value."""


class ParameterTypeError(ParameterError, TypeError):
    """A parameter has the wrong type; the message names the parameter and the type."""


class UnknownInputError(ParameterError, KeyError):
    """An input the space or registry does not hold: an unknown label, name or mechanism family,
    or an index out of range. Also a ``KeyError`` (a lookup that failed) and a ``ValueError``."""

    def __str__(self) -> str:
        # KeyError's str() quotes its argument; the message is for people, so print it plainly.
        return str(self.args[0]) if len(self.args) == 1 else super().__str__()


class MissingFileError(MDPError, FileNotFoundError):
    """A file or folder the user named does not exist (the message names the path)."""


class DataNotFoundError(MissingFileError):
    """The real data sets (Geolife, Gowalla check-ins) are not on this machine.

    The message lists each folder looked in once and says where to get the data
    (``$MDP_DATA_DIR``, docs/guide/data.md).
    """


class FileFormatError(MDPError, ValueError):
    """A file cannot be read, is corrupt, or does not hold what it claims.

    The message is ``"{path}: line {line}: {reason}"`` (without the line part when ``line`` is
    None).

    Parameters
    ----------
    path : str or os.PathLike
        The file.
    reason : str
        What is wrong, in words.
    line : int or None
        1-based line number when the problem is on one line of a text file.
    """

    def __init__(self, path: str | os.PathLike, reason: str, *, line: int | None = None):
        self.path = os.fspath(path)
        self.reason = reason
        self.line = line
        where = f"{self.path}: line {line}" if line is not None else self.path
        super().__init__(f"{where}: {reason}")


class PrivacyError(MDPError, ValueError):
    """A mechanism's matrix does not satisfy the guarantee it claims and cannot be repaired."""


class SolverError(MDPError, RuntimeError):
    """A solver did not return a usable optimum (infeasible, unbounded, numerical failure)."""


class SolverTimeout(SolverError):
    """A solver stopped at its time limit; no result is returned."""


class BuildError(MDPError, RuntimeError):
    """A mechanism could not be built; the message names the family, n, epsilon and why."""


class ResourceLimitError(MDPError, MemoryError):
    """Work was refused before it started: its memory estimate is above the limit.

    The message states the estimate, the limit and the parameter that overrides it
    (``max_memory=``); nothing was allocated.
    """


class AccuracyWarning(UserWarning):
    """A result is private as certified, but its certified optimality gap misses the target asked
    for (the message names the family, n, epsilon, the gap, the target and why)."""


class UnverifiedPointsWarning(UserWarning):
    """A loaded mechanism's guarantee is relative to the points (or distances) stored in its file,
    and no named source could vouch for them (:mod:`mdp.privacy.provenance`)."""


class WeakPrivacyWarning(UserWarning):
    """Epsilon is so large on this space that most inputs are all but released
    (:mod:`mdp.privacy.weak_epsilon`)."""
