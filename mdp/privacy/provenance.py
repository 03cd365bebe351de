r"""Where a mechanism file's points come from, checked when it is loaded.

A mechanism's guarantee holds for the distances of its space, and a file's distances are
recomputed from its stored points (:mod:`mdp.spaces.stored`). For locations that settles it:
the points *are* the places (latitude and longitude). For words it does not: the points are
vectors an embedding assigns to the words, and the file could hold other ones. A Madlib file
whose GloVe vectors were multiplied by ``1e300`` loads with its stated epsilon and releases
every word unchanged; vectors scaled by 10 make the exponential mechanism 5 times weaker against
the real GloVe distances, two words' vectors swapped 3 times.

So a space built from a named embedding records it (``space.source``, saved as the file's
``source`` field), and :func:`check_points_source` compares, on load, every stored point with
the vector the installed embedding gives its word (bit for bit: the file stores the same
float32 or float64 values the embedding has). The embeddings are plugins in the
``mdp.embeddings`` entry-point group (:data:`mdp.plugins.EMBEDDINGS`; ``text`` declares
``glove``, ``glove-full`` and ``fasttext-lee``). A file whose points no named source vouches
for (the user's own vectors, another metric's points, a stated distance matrix, a source that
is not installed here) loads with an :class:`~mdp.errors.UnverifiedPointsWarning`: its
guarantee is relative to the points stored in the file. Location files (``haversine``) are
exempt.
"""

from __future__ import annotations

import os
import warnings

import numpy as np

from ..errors import FileFormatError, MDPError, UnverifiedPointsWarning
from ..plugins import EMBEDDINGS

__all__ = ["SOURCE_FIELD", "source_metadata", "check_points_source"]

#: Metadata field naming the embedding a file's points come from.
SOURCE_FIELD = "source"


def source_metadata(space) -> dict:
    """``{"source": name}`` for a space built from a named embedding, else ``{}``."""
    name = getattr(space, "source", None)
    return {SOURCE_FIELD: name} if isinstance(name, str) and name else {}


def _unverified(path, why: str) -> None:
    warnings.warn(f"{os.fspath(path)}: {why}; its guarantee is relative to the points stored in "
                  "the file. If someone else made it, make sure they are the points you expect "
                  "(rescaled or swapped vectors change what epsilon means)",
                  UnverifiedPointsWarning, stacklevel=3)


def check_points_source(path, space, meta: dict) -> None:
    """Check a loaded space's points against the embedding its file names (module docstring).

    On success ``space.source`` is set to the name (so saving the mechanism again keeps it).

    Parameters
    ----------
    path : path-like
        The file (for messages).
    space : MetricSpace or VectorSpace
        The space rebuilt from the file.
    meta : dict
        The file's metadata.

    Warns
    -----
    UnverifiedPointsWarning
        No source is named, or the named one is unknown or not installed here.

    Raises
    ------
    FileFormatError
        A source is named and the file's words or vectors are not the embedding's (the message
        gives how many words differ and the first one's position, never a vector).
    """
    if getattr(space, "metric", None) == "haversine":
        return
    name = meta.get(SOURCE_FIELD)
    points = getattr(space, "points", None)
    if not isinstance(name, str) or not name:
        what = "points" if points is not None else "distances"
        _unverified(path, f"this file's {what} name no embedding they come from")
        return
    if points is None or space.labels is None:
        raise FileFormatError(path, f"the file names the embedding {name!r} but holds no words "
                                    "and vectors to check against it")
    try:
        vectors_of = EMBEDDINGS.get(name)
    except MDPError as exc:
        _unverified(path, f"the embedding {name!r} it names cannot be checked here ({exc})")
        return
    try:
        expected = np.asarray(vectors_of(space.labels))
    except KeyError as exc:
        raise FileFormatError(path, f"its words are not all words of the embedding {name!r} "
                                    f"({exc.args[0] if exc.args else exc})") from None
    except (ImportError, MDPError, OSError) as exc:
        _unverified(path, f"the embedding {name!r} it names cannot be read here ({exc})")
        return
    stored = np.asarray(points)
    if expected.shape != stored.shape:
        raise FileFormatError(path, f"its vectors have shape {stored.shape}, the embedding "
                                    f"{name!r} gives {expected.shape} for its words")
    differ = ~np.all(stored.astype(np.float64) == expected.astype(np.float64), axis=1)
    if differ.any():
        raise FileFormatError(path, f"the vectors of {int(differ.sum())} of its {len(differ)} "
                                    f"words differ from the installed embedding {name!r} (the "
                                    f"first is word {int(np.flatnonzero(differ)[0])}): the file "
                                    "was altered, or made from another version of the embedding, "
                                    "and its guarantee would not hold for the embedding's "
                                    "distances")
    space.source = name
