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

__all__ = ["SOURCE_FIELD", "WORDS_FIELD", "source_metadata", "check_points_source",
           "embedding_reference", "points_from_embedding"]

#: Metadata field naming the embedding a file's points come from.
SOURCE_FIELD = "source"
#: Metadata field of a vocabulary file that stores no vectors: ``"first"`` (the embedding's
#: first ``n`` words, no labels stored either) or ``"labels"`` (the stored labels' vectors).
WORDS_FIELD = "words_from_source"


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
        vectors_of = EMBEDDINGS.get(name).vectors
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
    if stored.dtype == expected.dtype:
        same = stored == expected
    else:
        same = stored.astype(np.float64) == expected.astype(np.float64)
    differ = ~np.all(same, axis=1)
    if differ.any():
        raise FileFormatError(path, f"the vectors of {int(differ.sum())} of its {len(differ)} "
                                    f"words differ from the installed embedding {name!r} (the "
                                    f"first is word {int(np.flatnonzero(differ)[0])}): the file "
                                    "was altered, or made from another version of the embedding, "
                                    "and its guarantee would not hold for the embedding's "
                                    "distances")
    space.source = name


def embedding_reference(space) -> dict | None:
    """How a vocabulary file can name its words instead of storing their vectors.

    For a space whose ``source`` is an installed named embedding and whose points are exactly
    that embedding's vectors of its labels: ``{"words_from_source": "first", "n": n}`` when the
    labels are the embedding's first ``n`` words in its order (nothing else needs storing),
    else ``{"words_from_source": "labels"}`` (the labels are stored, the vectors are not).
    ``None`` for every other space: its points are stored as they are.
    """
    name = getattr(space, "source", None)
    if not isinstance(name, str) or space.labels is None:
        return None
    try:
        embedding = EMBEDDINGS.get(name)
        words, vectors = embedding.first(space.n)
    except (MDPError, ImportError, OSError):
        return None
    points = np.asarray(space.points)
    if np.array_equal(np.asarray(words), space.labels) and np.array_equal(vectors, points):
        return {WORDS_FIELD: "first", "n": int(space.n)}
    try:
        if np.array_equal(embedding.vectors(space.labels), points):
            return {WORDS_FIELD: "labels"}
    except (KeyError, MDPError, ImportError, OSError):
        pass
    return None


def points_from_embedding(path, meta: dict, labels) -> tuple[np.ndarray, np.ndarray]:
    """``(words, vectors)`` of a vocabulary file that names its words (:func:`embedding_reference`),
    from the installed embedding: the vectors are the embedding's, so nothing needs checking.

    Raises
    ------
    FileFormatError
        A malformed reference, an embedding that is not installed here (the message says so),
        or stored labels the embedding does not hold.
    """
    name, how = meta.get(SOURCE_FIELD), meta.get(WORDS_FIELD)
    if not isinstance(name, str) or how not in ("first", "labels"):
        raise FileFormatError(path, "a vocabulary file without 'points' must name the embedding "
                                    "its words come from")
    try:
        embedding = EMBEDDINGS.get(name)
    except MDPError as exc:
        raise FileFormatError(path, f"its words come from the embedding {name!r}, which cannot "
                                    f"be used here ({exc})") from None
    try:
        if how == "first":
            n = meta.get("n")
            if isinstance(n, bool) or not isinstance(n, int):
                raise FileFormatError(path, f"'n' must be a number of words, got {n!r}")
            words, vectors = embedding.first(n)
            return np.asarray(words), np.asarray(vectors)
        if labels is None:
            raise FileFormatError(path, "the file names its words by label but holds no labels")
        return np.asarray(labels), np.asarray(embedding.vectors(labels))
    except KeyError as exc:
        raise FileFormatError(path, f"its words are not all words of the embedding {name!r} "
                                    f"({exc.args[0] if exc.args else exc})") from None
    except (ImportError, OSError, MDPError) as exc:
        if isinstance(exc, FileFormatError):
            raise
        raise FileFormatError(path, f"its words come from the embedding {name!r}, which cannot "
                                    f"be read here ({exc})") from None
