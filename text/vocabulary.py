"""Clustered vocabulary sampling (Imola et al. 2022, section 5.1)."""

from __future__ import annotations

import numpy as np

from mdp.errors import ParameterError
from mdp.spaces.metric_space import MetricSpace
from mdp.spaces.vector_space import VectorSpace
from mdp.validation import check_int, check_probability, check_rng

from .embeddings import Embeddings
from .vocabulary_scale import full_glove_space

__all__ = ["sample_vocabulary", "word_space", "space_from_spec"]


#: Embeddings up to this many words get every word's neighbours in one query when a vocabulary
#: needs more than ``BATCH_NEIGHBOURS_MIN_QUERIES`` neighbour draws (expected).
BATCH_NEIGHBOURS_MAX_WORDS = 20_000
BATCH_NEIGHBOURS_MIN_QUERIES = 100


def sample_vocabulary(emb: Embeddings, size: int, *, rng=None, p_random: float = 0.5,
                      neighbours: int = 50) -> MetricSpace:
    """Sample a clustered vocabulary and return it as a Euclidean metric space.

    Seed section 5.1: start from one random word; then repeatedly, with probability
    ``p_random`` add a uniformly random word, otherwise pick a random word already in the
    vocabulary and add one of its ``neighbours`` nearest words (uniformly). Words already in the
    vocabulary are redrawn.

    Parameters
    ----------
    emb : Embeddings
    size : int
        Number of words, ``2 <= size <= len(emb)``.
    rng : None, int or numpy.random.Generator
    p_random : float in [0, 1]
    neighbours : int >= 1

    Returns
    -------
    MetricSpace with the words as labels and the vectors as points (``source``: the
    embedding's, so a mechanism file records which embedding its vectors must match).
    """
    size = check_int(size, "size", low=2)
    if size > len(emb):
        raise ParameterError(f"size must be <= the embedding's {len(emb)} words, got {size}")
    p_random = check_probability(p_random, "p_random")
    neighbours = check_int(neighbours, "neighbours", low=1)
    rng = check_rng(rng)
    chosen = [int(rng.integers(len(emb)))]
    seen = set(chosen)
    nn_cache: dict[int, np.ndarray] = {}
    if len(emb) <= BATCH_NEIGHBOURS_MAX_WORDS and size * (1.0 - p_random) > BATCH_NEIGHBOURS_MIN_QUERIES:
        # One query for every word at once (3 s for the embedded 10,000 words) instead of one
        # per base word (30 ms each, thousands of them at a few thousand words); the rows are
        # the same neighbours in the same order.
        everyone = emb.nearest_neighbors(emb.vectors, neighbours + 1)
        nn_cache = {i: row[1:] for i, row in enumerate(everyone)}
    attempts = 0
    while len(chosen) < size:
        attempts += 1
        if attempts > 1000 * size:
            raise RuntimeError("vocabulary sampling made no progress")
        if rng.random() < p_random:
            cand = int(rng.integers(len(emb)))
        else:
            base = chosen[int(rng.integers(len(chosen)))]
            if base not in nn_cache:
                # neighbours + 1 because the nearest word of a word is itself
                nn_cache[base] = emb.nearest_neighbors(emb.vectors[base], neighbours + 1)[0][1:]
            cand = int(rng.choice(nn_cache[base]))
        if cand not in seen:
            seen.add(cand)
            chosen.append(cand)
    idx = np.array(chosen)
    space = MetricSpace.from_points(emb.vectors[idx], labels=emb.words[idx])
    space.source = emb.source
    return space


def word_space(emb: Embeddings, words) -> MetricSpace:
    """The Euclidean metric space of chosen ``words`` of ``emb`` (labels = the words).

    Unknown words raise ``KeyError`` naming the word; repeated words raise ``ValueError``.
    """
    sub = emb.subset(list(words))
    space = MetricSpace.from_points(sub.vectors, labels=sub.words)
    space.source = emb.source
    return space


def space_from_spec(spec: str) -> MetricSpace | VectorSpace:
    """A clustered vocabulary from a ``--space`` SPEC string.

    ==========================  ==================================================================
    ``glove:N[:SEED]``          N words of the embedded GloVe slice (10,000 words)
    ``glove:N:SEED:full``       N words of the full 400k-word GloVe (optional extra ``glove``)
    ``fasttext:N[:SEED]``       N words of :func:`text.fasttext.train_lee_fasttext` (defaults)
    ``glove:full[:N]``          every word of the full GloVe (its N most frequent), as a
                                :class:`~mdp.spaces.vector_space.VectorSpace` (vocabulary mode)
    ==========================  ==================================================================

    Sampling is :func:`sample_vocabulary` with ``rng=SEED`` (default 0).
    """
    from .embeddings import load_glove

    parts = str(spec).split(":")
    prefix = parts[0]
    if prefix == "glove" and len(parts) in (2, 3) and parts[1] == "full":
        try:
            n_words = int(parts[2]) if len(parts) == 3 else None
        except ValueError:
            raise ParameterError(f"glove:full:N needs an integer N, got {spec!r}") from None
        return full_glove_space(n_words)
    usage = "glove:N[:SEED[:full]] or fasttext:N[:SEED]"
    if prefix not in ("glove", "fasttext") or not 2 <= len(parts) <= (4 if prefix == "glove" else 3):
        raise ParameterError(f"space spec must be {usage}, got {spec!r}")
    try:
        n = int(parts[1])
        seed = int(parts[2]) if len(parts) > 2 and parts[2] else 0
    except ValueError:
        raise ParameterError(f"space spec must be {usage} with integers N and SEED, got {spec!r}") from None
    if len(parts) == 4 and parts[3] != "full":
        raise ParameterError(f"the 4th field of a glove spec can only be 'full', got {parts[3]!r} in {spec!r}")
    if prefix == "fasttext":
        from .fasttext import train_lee_fasttext

        emb = train_lee_fasttext()
    else:
        emb = load_glove(full=len(parts) == 4)
    return sample_vocabulary(emb, n, rng=seed)
