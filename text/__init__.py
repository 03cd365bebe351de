"""Text: word embeddings, clustered vocabularies and word privatization (Imola et al. 2022 5.1).

* :class:`Embeddings`, :func:`load_glove` (embedded slice, or the full 400k words with the
  ``glove`` extra), :func:`load_vectors` (GloVe/word2vec text, word2vec binary, fastText,
  ``.npz``), :func:`train_lee_fasttext` (a fastText model trained with gensim on a real corpus);
* :func:`sample_vocabulary`: the paper's clustered vocabulary sampling, as a metric space;
* :func:`privatize`: privatize a text or a token list with any mechanism on a word space
  (including ``"madlib"``, :mod:`mdp.families.madlib`).
"""

from .embeddings import Embeddings, load_glove
from .fasttext import train_lee_fasttext
from .loaders import load_vectors, save_vectors
from .privatize import privatize, tokenize
from .vocabulary import sample_vocabulary, word_space
from .vocabulary_scale import full_glove_space, vocabulary_space

__all__ = ["Embeddings", "load_glove", "load_vectors", "save_vectors", "train_lee_fasttext",
           "sample_vocabulary", "word_space", "privatize", "tokenize", "full_glove_space",
           "vocabulary_space"]
