"""A small fastText embedding trained with gensim on a real corpus (the paper's second embedding).

The paper (imola2022, section 5.1) uses fastText (Bojanowski et al. 2017) next to GloVe. The
official 300-d English fastText vectors are several GB; here a fastText model is trained with
gensim on the Lee background corpus shipped with gensim (``gensim/test/test_data/lee_background.cor``:
300 news articles from the Australian Broadcasting Corporation, Lee, Pincombe & Welsh 2005,
about 58,000 tokens after ``gensim.utils.simple_preprocess``). Training is deterministic
(``workers=1``, fixed ``seed``; checked identical across processes and ``PYTHONHASHSEED``) and
takes a few seconds; the result can be cached on disk.

The vectors also depend on the BLAS kernel: gensim's training loops call ``sdot`` / ``saxpy``
from SciPy's OpenBLAS, which picks a kernel for the CPU it runs on, and kernels round float32
sums differently. Measured on one AVX-512 machine, by forcing OpenBLAS's kernel
(``OPENBLAS_CORETYPE``): ``Haswell`` and ``Zen`` train the same vectors, ``SkylakeX`` and
``Cooperlake`` other ones, ``Sandybridge`` and ``Prescott`` others again. So by default the
training runs with the ``Haswell`` kernel (AVX2, on every x86-64 CPU since about 2015): in this
process where OpenBLAS already chose ``Haswell`` or ``Zen``, otherwise in a child process with
``OPENBLAS_CORETYPE=Haswell``; the vectors are then the same on every such machine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np

from mdp.errors import FileFormatError, MDPError, MissingFileError, ParameterTypeError
from mdp.io import read_npz
from mdp.validation import check_int

from .embeddings import Embeddings

__all__ = ["train_lee_fasttext", "lee_corpus_path", "PINNED_BLAS_KERNEL", "FASTTEXT_SOURCE"]

#: OpenBLAS kernel that ``train_lee_fasttext(pin_blas=True)`` trains with.
PINNED_BLAS_KERNEL = "Haswell"
#: ``Embeddings.source`` of the vectors trained with the default parameters and the pinned
#: kernel (checked by :mod:`text.sources` when a mechanism file names it).
FASTTEXT_SOURCE = "fasttext-lee"
_NAMED_PARAMS = {"vector_size": 50, "seed": 0, "epochs": 10, "min_count": 3, "window": 5,
                 "blas_kernel": PINNED_BLAS_KERNEL}
# OpenBLAS kernels measured to train the same vectors as PINNED_BLAS_KERNEL (no child needed)
_SAME_AS_PINNED = frozenset({"Haswell", "Zen"})
# OpenBLAS kernels of CPUs with AVX2 + FMA, which can run the pinned kernel
_CAN_RUN_PINNED = frozenset({"Haswell", "Zen", "SkylakeX", "Cooperlake", "SapphireRapids"})


def lee_corpus_path() -> Path:
    """Path of ``lee_background.cor`` inside the installed gensim package.

    Raises
    ------
    ImportError
        gensim is missing (``pip install "mdp-toolkit[text]"``).
    mdp.errors.MissingFileError
        The gensim installation has no test data.
    """
    try:
        import gensim
    except ImportError:
        raise ImportError('training fastText needs gensim: pip install "mdp-toolkit[text]"') from None
    path = Path(gensim.__file__).parent / "test" / "test_data" / "lee_background.cor"
    if not path.is_file():
        raise MissingFileError(f"{path}: gensim's test corpus is missing from this installation")
    return path


def train_lee_fasttext(*, vector_size: int = 50, seed: int = 0, epochs: int = 10,
                       min_count: int = 3, window: int = 5,
                       cache: str | os.PathLike | None = None, pin_blas: bool = True) -> Embeddings:
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
    pin_blas : bool, default True
        Train with OpenBLAS's ``Haswell`` kernel (:data:`PINNED_BLAS_KERNEL`) so that the vectors
        are the same on every x86-64 machine with AVX2 (module docstring). Where SciPy's BLAS is
        not OpenBLAS or the CPU cannot run that kernel, training uses the machine's own kernel
        and warns that the vectors may differ from other machines'. ``False``: the machine's own
        kernel, in this process.

    Returns
    -------
    Embeddings
        The vocabulary words (frequency order) with their fastText vectors (float32); its
        ``source`` is ``"fasttext-lee"`` (:mod:`text.sources`) for the default parameters
        trained with the pinned kernel, the vectors every such machine trains.
    """
    vector_size = check_int(vector_size, "vector_size", low=1)
    seed = check_int(seed, "seed", low=0)
    epochs = check_int(epochs, "epochs", low=1)
    min_count = check_int(min_count, "min_count", low=1)
    window = check_int(window, "window", low=1)
    if not isinstance(pin_blas, (bool, np.bool_)):
        raise ParameterTypeError(f"pin_blas must be True or False, got {pin_blas!r}")
    params = {"vector_size": vector_size, "seed": seed, "epochs": epochs, "min_count": min_count,
              "window": window}
    kernel = _openblas_kernel()
    child = False
    if pin_blas:
        if kernel in _SAME_AS_PINNED:
            kernel = PINNED_BLAS_KERNEL
        elif kernel in _CAN_RUN_PINNED:
            kernel, child = PINNED_BLAS_KERNEL, True
        else:
            warnings.warn(f"SciPy's BLAS ({kernel or 'not an OpenBLAS identified here'}) cannot "
                          f"run OpenBLAS's {PINNED_BLAS_KERNEL} kernel: the fastText vectors are "
                          "trained with this machine's own kernel and may differ from other "
                          "machines'", stacklevel=2)
    params["blas_kernel"] = kernel or "unknown"
    source = FASTTEXT_SOURCE if params == _NAMED_PARAMS else None
    key = np.array(sorted(params.items()), dtype=str)
    if cache is not None:
        cache = Path(cache)
        if cache.is_file():
            try:
                z = read_npz(cache, required=("words", "vectors", "params"), what="fastText cache")
                if np.array_equal(z["params"], key):
                    return Embeddings(z["words"], z["vectors"], source=source)
            except (FileFormatError, ValueError, TypeError):
                pass  # an unreadable or foreign cache is rebuilt below
    gensim_params = {k: v for k, v in params.items() if k != "blas_kernel"}
    if child:
        emb = _train_in_child(gensim_params, PINNED_BLAS_KERNEL)
    else:
        emb = _train(**gensim_params)
    if cache is not None:
        from mdp.io import atomic_write

        atomic_write(cache, lambda fh: np.savez(fh, words=emb.words, vectors=emb.vectors, params=key))
    emb.source = source
    return emb


def _openblas_kernel() -> str | None:
    """The kernel ("architecture") of the OpenBLAS that SciPy's BLAS wrappers call, or None.

    Other wheels bundle their own OpenBLAS (SCS: 0.3.15, which calls an AVX-512 CPU "Zen"), so
    the library is the one in SciPy's ``scipy.libs`` (pip wheels), else one shared by every
    package (conda, system); None when SciPy's BLAS is not OpenBLAS or that is ambiguous.
    """
    import scipy
    import scipy.linalg.blas  # noqa: F401  (loads SciPy's BLAS so that threadpoolctl sees it)
    from threadpoolctl import threadpool_info

    try:
        blas = scipy.show_config(mode="dicts")["Build Dependencies"]["blas"]["name"]
    except (KeyError, TypeError, ValueError):
        return None
    if "openblas" not in str(blas).lower():
        return None
    libs = [(Path(str(info.get("filepath", ""))).parent.name, info.get("architecture"))
            for info in threadpool_info() if info.get("internal_api") == "openblas"]
    kernels = ({k for folder, k in libs if folder == "scipy.libs"}
               or {k for folder, k in libs if not folder.endswith(".libs")})
    return kernels.pop() if len(kernels) == 1 else None


def _train(*, vector_size: int, seed: int, epochs: int, min_count: int, window: int) -> Embeddings:
    from gensim.models import FastText
    from gensim.utils import simple_preprocess

    with open(lee_corpus_path(), encoding="utf-8") as fh:
        sentences = [simple_preprocess(line) for line in fh]
    model = FastText(sentences=sentences, vector_size=vector_size, window=window,
                     min_count=min_count, epochs=epochs, workers=1, seed=seed)
    return Embeddings(list(model.wv.index_to_key), np.asarray(model.wv.vectors, dtype=np.float32))


def _train_in_child(params: dict, kernel: str) -> Embeddings:
    """:func:`_train` in a fresh interpreter whose OpenBLAS is forced to ``kernel``.

    OpenBLAS reads ``OPENBLAS_CORETYPE`` once, when it loads, so only a new process can change it.
    """
    env = dict(os.environ, OPENBLAS_CORETYPE=kernel)
    with tempfile.TemporaryDirectory(prefix="mdp-fasttext-") as tmp:
        out = Path(tmp) / "vectors.npz"
        code = ("import json, sys, numpy as np; from text.fasttext import _train; "
                "e = _train(**json.loads(sys.argv[1])); "
                "np.savez(sys.argv[2], words=np.array(e.words, dtype=str), vectors=e.vectors)")
        done = subprocess.run([sys.executable, "-c", code, json.dumps(params), str(out)], env=env,
                              capture_output=True, text=True, check=False)
        if done.returncode != 0 or not out.is_file():
            tail = "\n".join(done.stderr.strip().splitlines()[-5:])
            raise MDPError(f"training fastText with OpenBLAS's {kernel} kernel in a child process "
                           f"failed (exit status {done.returncode}); pass pin_blas=False to train "
                           f"with this machine's own kernel. The child said:\n{tail}")
        with np.load(out) as z:
            return Embeddings(z["words"].tolist(), z["vectors"])
