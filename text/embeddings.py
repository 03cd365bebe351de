"""Word embeddings: words plus vectors, lookup and nearest neighbours."""

from __future__ import annotations

from importlib import resources

import numpy as np
from sklearn.neighbors import NearestNeighbors

__all__ = ["Embeddings", "load_glove"]


class Embeddings:
    """Words with their vectors (``vectors[i]`` embeds ``words[i]``).

    Parameters
    ----------
    words : sequence of str
        Unique words.
    vectors : array-like of shape (len(words), d)
        Finite vectors.
    """

    def __init__(self, words, vectors):
        words = np.asarray(list(words), dtype=str)
        vectors = np.asarray(vectors, dtype=np.float64)
        if words.ndim != 1 or len(words) == 0:
            raise ValueError("an embedding needs at least one word")
        if vectors.ndim != 2 or vectors.shape[0] != len(words):
            raise ValueError(f"vectors must have shape ({len(words)}, d), got {vectors.shape}")
        if not np.all(np.isfinite(vectors)):
            raise ValueError("vectors must be finite (found NaN or inf)")
        if len(np.unique(words)) != len(words):
            raise ValueError("words must be unique")
        self.words = words
        self.vectors = vectors
        self._index = {w: i for i, w in enumerate(words.tolist())}
        self._nn = None

    @property
    def dim(self) -> int:
        return int(self.vectors.shape[1])

    def __len__(self) -> int:
        return len(self.words)

    def __contains__(self, word) -> bool:
        return word in self._index

    def index(self, word: str) -> int:
        """Row of ``word``; unknown words raise ``KeyError`` naming the word."""
        try:
            return self._index[word]
        except KeyError:
            raise KeyError(f"word {word!r} is not in the embedding ({len(self)} words)") from None

    def __getitem__(self, word: str) -> np.ndarray:
        return self.vectors[self.index(word)]

    def nearest_neighbors(self, queries, k: int) -> np.ndarray:
        """Indices of the ``k`` nearest words (Euclidean) of each query vector, nearest first.

        Uses scikit-learn's ``NearestNeighbors`` (tree or brute force as it sees fit), so the
        full 400k-word GloVe works without an n x n matrix.
        """
        if self._nn is None:
            self._nn = NearestNeighbors().fit(self.vectors)
        q = np.atleast_2d(np.asarray(queries, dtype=float))
        return self._nn.kneighbors(q, n_neighbors=min(k, len(self)), return_distance=False)

    def __repr__(self) -> str:
        return f"Embeddings({len(self)} words, dim={self.dim})"


def load_glove(n_words: int | None = None) -> Embeddings:
    """GloVe 6B 50d (Pennington et al. 2014).

    By default the embedded slice (the 10,000 most frequent alphabetic words, shipped in the
    package; built by ``scripts/build_glove_slice.py``). ``n_words`` keeps the first n words in
    frequency order.
    """
    with resources.files("mdp").joinpath("data/glove_top.npz").open("rb") as fh:
        z = np.load(fh)
        words, vectors = z["words"], z["vectors"]
    if n_words is not None:
        words, vectors = words[:n_words], vectors[:n_words]
    return Embeddings(words, vectors)
