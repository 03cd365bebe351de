"""Whole vocabularies as spaces: every word of an embedding, without a distance matrix.

``glove:full`` (all 400,000 words of GloVe 6B 50d, extra ``glove``) and ``glove:full:N`` (its
``N`` most frequent words) are :class:`mdp.spaces.vector_space.VectorSpace` objects: the mechanisms
with an analytic guarantee run on them in vocabulary mode (:mod:`mdp.vocabulary.mode`), e.g.
``mdp build --space glove:full --mechanism madlib --epsilon 10``.
"""

from __future__ import annotations

from mdp.spaces.vector_space import VectorSpace
from mdp.validation import check_int

from .embeddings import Embeddings, load_glove

__all__ = ["vocabulary_space", "full_glove_space"]


def vocabulary_space(emb: Embeddings) -> VectorSpace:
    """Every word of ``emb`` as a :class:`~mdp.spaces.vector_space.VectorSpace` (labels = words;
    ``source``: the embedding's)."""
    space = VectorSpace(emb.vectors, labels=emb.words)
    space.source = emb.source
    return space


def full_glove_space(n_words: int | None = None) -> VectorSpace:
    """The full GloVe 6B 50d (its first ``n_words`` words in frequency order when given)."""
    if n_words is not None:
        n_words = check_int(n_words, "n_words", low=2)
    return vocabulary_space(load_glove(n_words, full=True))
