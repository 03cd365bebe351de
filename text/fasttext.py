"""A small fastText embedding trained with gensim on a real corpus (the paper's second embedding).

The paper (imola2022, section 5.1) uses fastText (Bojanowski et al. 2017) next to GloVe. The
official 300-d English fastText vectors are several GB; here a fastText model is trained with
gensim on the Lee background corpus shipped with gensim (``gensim/test/test_data/lee_background.cor``:
300 news articles from the Australian Broadcasting Corporation, Lee, Pincombe & Welsh 2005,
about 58,000 tokens after ``gensim.utils.simple_preprocess``). Training is deterministic
(``workers=1``, fixed ``seed``; checked identical across processes and ``PYTHONHASHSEED``) and
takes a few seconds; the result can be cached on disk.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from mdp.errors import FileFormatError
from mdp.io import read_npz
from mdp.validation import check_int

from .embeddings import Embeddings

__all__ = ["train_lee_fasttext", "lee_corpus_path"]


def lee_corpus_path() -> Path:
    """Path of ``lee_background.cor`` inside the installed gensim package.

    Raises
    ------
    ImportError
        gensim is missing (``pip install "mdp-toolkit[text]"``).
    FileNotFoundError
        The gensim installation has no test data.
    """
    try:
        import gensim
    except ImportError:
        raise ImportError('training fastText needs gensim: pip install "mdp-toolkit[text]"') from None
    path = Path(gensim.__file__).parent / "test" / "test_data" / "lee_background.cor"
    if not path.is_file():
        raise FileNotFoundError(f"{path}: gensim's test corpus is missing from this installation")
    return path


def train_lee_fasttext(*, vector_size: int = 50, seed: int = 0, epochs: int = 10,
                       min_count: int = 3, window: int = 5,
                       cache: str | os.PathLike | None = None) -> Embeddings:
    """Train gensim ``FastText`` on the Lee background corpus and return its word vectors.

    Each line of the corpus is one document, tokenised with ``gensim.utils.simple_preprocess``
    (lower case, accents removed, tokens of 2-15 letters). Architecture: gensim's defaults (CBOW,
    negative sampling, character n-grams of 3-6 letters).

    Parameters
    ----------
    vector_size : int, default 50
        Dimension ``d`` of the vectors.
    seed : int, default 0
        gensim's seed; with ``workers=1`` the vectors are bit-for-bit reproducible.
    epochs, min_count, window : int
        gensim ``FastText`` parameters. With the defaults the vocabulary has 2,747 words and
        training takes ~3 s on one core.
    cache : path, optional
        An ``.npz`` file: loaded when it exists and was trained with the same parameters,
        otherwise written (atomically) after training.

    Returns
    -------
    Embeddings
        The vocabulary words (frequency order) with their fastText vectors (float32).
    """
    vector_size = check_int(vector_size, "vector_size", low=1)
    seed = check_int(seed, "seed", low=0)
    epochs = check_int(epochs, "epochs", low=1)
    min_count = check_int(min_count, "min_count", low=1)
    window = check_int(window, "window", low=1)
    params = {"vector_size": vector_size, "seed": seed, "epochs": epochs, "min_count": min_count,
              "window": window}
    key = np.array(sorted(params.items()), dtype=str)
    if cache is not None:
        cache = Path(cache)
        if cache.is_file():
            try:
                z = read_npz(cache, required=("words", "vectors", "params"), what="fastText cache")
                if np.array_equal(z["params"], key):
                    return Embeddings(z["words"], z["vectors"])
            except (FileFormatError, ValueError, TypeError):
                pass  # an unreadable or foreign cache is rebuilt below
    from gensim.models import FastText
    from gensim.utils import simple_preprocess

    with open(lee_corpus_path(), encoding="utf-8") as fh:
        sentences = [simple_preprocess(line) for line in fh]
    model = FastText(sentences=sentences, vector_size=vector_size, window=window,
                     min_count=min_count, epochs=epochs, workers=1, seed=seed)
    emb = Embeddings(list(model.wv.index_to_key), np.asarray(model.wv.vectors, dtype=np.float32))
    if cache is not None:
        from mdp.io import atomic_write

        atomic_write(cache, lambda fh: np.savez(fh, words=emb.words, vectors=emb.vectors, params=key))
    return emb
