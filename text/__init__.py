"""Text: word embeddings, clustered vocabularies and word privatization (Imola et al. 2022 5.1).

* :class:`Embeddings`, :func:`load_glove` (embedded slice, or the full 400k words with the
  ``glove`` extra), :func:`load_vectors` (GloVe/word2vec text, word2vec binary, fastText,
  ``.npz``), :func:`train_lee_fasttext` (a fastText model trained with gensim on a real corpus);
* :func:`sample_vocabulary`: the paper's clustered vocabulary sampling, as a metric space;
* :func:`privatize`: privatize a text or a token list with any mechanism on a word space
  (including ``"madlib"``, :mod:`mdp.families.madlib`).

The names below load on first use (:mod:`mdp.lazy`), so that a command of ``mdp`` imports
only what it runs.
"""

from mdp.lazy import lazy_package

_EXPORTS = {
    "Embeddings": ".embeddings",
    "load_glove": ".embeddings",
    "train_lee_fasttext": ".fasttext",
    "load_vectors": ".loaders",
    "save_vectors": ".loaders",
    "privatize": ".privatize",
    "tokenize": ".privatize",
    "sample_vocabulary": ".vocabulary",
    "word_space": ".vocabulary",
    "full_glove_space": ".vocabulary_scale",
    "vocabulary_space": ".vocabulary_scale",
}
lazy_package(__name__, _EXPORTS)

__all__ = [
    "Embeddings",
    "load_glove",
    "load_vectors",
    "save_vectors",
    "train_lee_fasttext",
    "sample_vocabulary",
    "word_space",
    "privatize",
    "tokenize",
    "full_glove_space",
    "vocabulary_space",
]
