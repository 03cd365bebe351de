"""Read word vectors from files: GloVe/word2vec text, word2vec binary, fastText, numpy archives.

Parsing is done by gensim (``KeyedVectors.load_word2vec_format`` and
``gensim.models.fasttext.load_facebook_vectors``); gensim's own errors do not say where a file is
broken, so when it fails on a text file :func:`load_vectors` scans the file once more to name the
first bad line (``path: line N: ...``).

========================  =====================================================================
format                    file
========================  =====================================================================
``"glove"``               text, one ``word x1 ... xd`` per line, no header (GloVe's release)
``"word2vec"``            text with a ``count dim`` header line (word2vec ``-binary 0``, ``.vec``)
``"word2vec-binary"``     word2vec ``-binary 1`` (header line, then raw float32 records)
``"fasttext"``            a fastText model ``.bin`` (Facebook format; only the word vectors are
                          kept, the sub-word n-grams are dropped)
``"npz"``                 a numpy archive with arrays ``words`` (str) and ``vectors`` (n x d)
========================  =====================================================================

``format="auto"`` picks by content: the fastText magic number, a ``.npz`` zip, a text header of
two integers (word2vec text, or binary when the records are not text), other binary content
(fastText models older than the magic number), else GloVe text.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from mdp.errors import FileFormatError, MissingFileError, ParameterError, ParameterTypeError
from mdp.io import open_binary, open_text, read_npz

from .embeddings import Embeddings

__all__ = ["load_vectors", "save_vectors", "detect_format", "FORMATS"]

FORMATS = ("auto", "glove", "word2vec", "word2vec-binary", "fasttext", "npz")

# First 4 bytes of a fastText .bin model: the little-endian int32 793712314 (FASTTEXT_FILEFORMAT_MAGIC).
_FASTTEXT_MAGIC = (793712314).to_bytes(4, "little")


def _head(path: Path, size: int = 4096) -> bytes:
    with open_binary(path, what="vector file") as fh:
        return fh.read(size)


def _text_header(path: Path) -> tuple[int, int] | None:
    """``(count, dim)`` when the first line is a word2vec header, else None."""
    with open_binary(path, what="vector file") as fh:
        first = fh.readline(4096)
    parts = first.split()
    if len(parts) == 2 and all(p.isdigit() for p in parts):
        return int(parts[0]), int(parts[1])
    return None


def detect_format(path: str | os.PathLike) -> str:
    """Guess the vector format of ``path`` from its first bytes (see the module table).

    Gzip-compressed files are looked into (the format is that of the content).
    """
    path = Path(path)
    head = _head(path)
    if not head:
        raise FileFormatError(path, "empty file, no vectors")
    if head[:4] == _FASTTEXT_MAGIC:
        return "fasttext"
    if head[:4] == b"PK\x03\x04":
        return "npz"
    if _text_header(path) is not None:
        # word2vec binary records are raw float32 after "word ": almost never valid UTF-8 text
        body = head.split(b"\n", 1)[1] if b"\n" in head else b""
        try:
            body[:1024].decode("utf-8")
            text_like = b"\x00" not in body[:1024]
        except UnicodeDecodeError:
            text_like = False
        return "word2vec" if text_like else "word2vec-binary"
    if b"\x00" in head:
        # fastText models written before the magic number (e.g. gensim's lee_fasttext.bin) start
        # directly with int32 hyper-parameters: binary, and no word2vec header
        return "fasttext"
    return "glove"


def _first_bad_text_line(path: Path, header: bool, limit: int | None = None) -> str | None:
    """Name the first malformed line of a text vector file, or None when every line is fine."""
    dim = None
    expected_count = None
    count = 0
    lineno = 0
    with open_binary(path, what="vector file") as fh:   # binary: decode line by line
        for lineno, raw in enumerate(fh, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                return f"line {lineno}: not UTF-8 text ({exc.reason} at byte {exc.start})"
            parts = line.rstrip("\r\n").rstrip().split(" ")
            if header and lineno == 1:
                try:
                    expected_count, dim = int(parts[0]), int(parts[1])
                except (ValueError, IndexError):
                    return f"line 1: expected a 'count dim' header, got {line.strip()[:60]!r}"
                if len(parts) != 2 or expected_count < 0 or dim < 1:
                    return f"line 1: expected a 'count dim' header, got {line.strip()[:60]!r}"
                continue
            if not line.strip():
                if header and count < expected_count:
                    return f"line {lineno}: empty line"
                continue
            if header and count == expected_count:
                if limit is not None:
                    break
                return (f"line {lineno}: data after the {expected_count} vectors the header "
                        "(line 1) promises")
            word, values = parts[0], parts[1:]
            if dim is None:
                dim = len(values)
            if len(values) != dim:
                return f"line {lineno}: word {word!r} has {len(values)} values, expected {dim}"
            for k, v in enumerate(values, start=1):
                try:
                    x = float(v)
                except ValueError:
                    return f"line {lineno}: value {k} of word {word!r} is not a number: {v[:30]!r}"
                if not np.isfinite(x):
                    return f"line {lineno}: value {k} of word {word!r} is {v!r} (not finite)"
            count += 1
            if limit is not None and count >= limit:
                break
    if expected_count is not None and count < expected_count and (limit is None or count < limit):
        return (f"line {lineno + 1}: file ends after {count} vectors, the header promises "
                f"{expected_count}")
    return None


def _extra_lines(path: Path, count: int) -> str | None:
    """Where a word2vec text file holds data after the ``count`` vectors its header promises."""
    with open_binary(path, what="vector file") as fh:
        for lineno, raw in enumerate(fh, start=1):
            if lineno > count + 1 and raw.strip():
                return f"line {lineno}: data after the {count} vectors the header (line 1) promises"
    return None


def _load_text(path: Path, fmt: str, limit: int | None) -> Embeddings:
    from gensim.models import KeyedVectors

    header = fmt == "word2vec"
    try:
        with np.errstate(over="ignore"):   # values beyond float32 become inf, refused below
            kv = KeyedVectors.load_word2vec_format(str(path), binary=False, no_header=not header,
                                                   limit=limit, unicode_errors="strict")
    except FileFormatError:
        raise
    except Exception as exc:  # gensim raises many types on malformed text
        where = _first_bad_text_line(path, header, limit)
        raise FileFormatError(path, f"{where or 'not a ' + fmt + ' text vector file'} "
                                    f"(gensim: {type(exc).__name__}: {exc})") from None
    if header and limit is None:
        extra = _extra_lines(path, len(kv.index_to_key))
        if extra:
            raise FileFormatError(path, extra)
    return _from_kv(kv, path, header_lines=1 if header else 0)


def _duplicate_line(path: Path, header: bool) -> str:
    """Name the first repeated word of a text vector file and both its lines."""
    seen: dict[str, int] = {}
    with open_text(path, what="vector file") as fh:
        for line in fh:
            if (header and fh.lineno == 1) or not line.strip():
                continue
            word = line.split(" ", 1)[0]
            if word in seen:
                return f"line {fh.lineno}: word {word!r} repeats line {seen[word]}"
            seen[word] = fh.lineno
    return "duplicate words"


def _embeddings(path: Path, words, vectors) -> Embeddings:
    try:
        return Embeddings(words, vectors)
    except (ValueError, TypeError) as exc:
        raise FileFormatError(path, str(exc)) from None


def _from_kv(kv, path: Path, header_lines: int) -> Embeddings:
    words = list(kv.index_to_key)
    # gensim keeps the first of repeated words and leaves None placeholders behind: refuse, since
    # which vector a repeated word should get is ambiguous
    if any(w is None for w in words):
        raise FileFormatError(path, _duplicate_line(path, header_lines == 1))
    vectors = np.asarray(kv.vectors)
    bad = ~np.isfinite(vectors).all(axis=1)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise FileFormatError(path, f"the vector of {words[i]!r} is not finite",
                              line=i + 1 + header_lines)
    return _embeddings(path, words, vectors)


def _binary_size_problem(path: Path, words: list[str], dim: int) -> str | None:
    """Compare the file size with the records read (word, space, ``dim`` float32, optional newline)."""
    with open_binary(path, what="vector file") as fh:
        header = len(fh.readline())
        size = header + sum(len(chunk) for chunk in iter(lambda: fh.read(1 << 20), b""))
    least = header + sum(len(w.encode("utf-8")) + 1 + 4 * dim for w in words)
    if size > least + len(words):
        return (f"{size - least} bytes follow the start of the {len(words)} records the header "
                "(line 1) promises, at most one newline per record is allowed (extra data, or a "
                "header count that is too small)")
    return None


def _load_word2vec_binary(path: Path, limit: int | None) -> Embeddings:
    from gensim.models import KeyedVectors

    head = _text_header(path)
    promise = f"; the header (line 1) promises {head[0]} vectors of dimension {head[1]}" if head else ""
    try:
        kv = KeyedVectors.load_word2vec_format(str(path), binary=True, limit=limit,
                                               unicode_errors="strict")
    except FileFormatError:
        raise
    except Exception as exc:  # gensim raises many types on corrupt binary records
        raise FileFormatError(path, f"corrupt word2vec binary file{promise} "
                                    f"(gensim: {type(exc).__name__}: {exc})") from None
    # Binary records have no lines; a record index is the best location we can give.
    words = list(kv.index_to_key)
    if any(w is None for w in words):
        raise FileFormatError(path, f"repeated words in a word2vec binary file "
                                    f"({len(words) - words.count(None)} distinct of {len(words)} records)")
    vectors = np.asarray(kv.vectors)
    if limit is None:
        problem = _binary_size_problem(path, words, vectors.shape[1])
        if problem:
            raise FileFormatError(path, f"corrupt word2vec binary file{promise}: {problem}")
    bad = ~np.isfinite(vectors).all(axis=1)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise FileFormatError(path, f"record {i + 1} (word {words[i]!r}) holds a non-finite value")
    return _embeddings(path, words, vectors)


def _fasttext_vocabulary_problem(path: Path) -> str | None:
    """Check that the vocabulary of a fastText model ends inside the file.

    gensim reads each word byte by byte until a NUL and loops forever when the file ends first
    (a truncated model), so the word list is located here before gensim reads it. Only plain
    files are checked (a gzip-compressed model is handed to gensim as it is).
    """
    import mmap
    import struct

    from gensim.models import _fasttext_bin as fb

    size = path.stat().st_size
    with open(path, "rb") as fh:
        if fh.read(2) == b"\x1f\x8b":
            return None
        if size < 8:
            return f"file of {size} bytes ends inside the header"
        with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            magic, _ = struct.unpack_from("@2i", mm, 0)
            spec = fb._NEW_HEADER_FORMAT if magic == fb._FASTTEXT_FILEFORMAT_MAGIC else fb._OLD_HEADER_FORMAT
            pos = 8 + sum(struct.calcsize(fmt) for _, fmt in spec)
            if pos + 12 > size:
                return f"file of {size} bytes ends inside the header"
            vocab_size = struct.unpack_from("@3i", mm, pos)[0]
            pos += 12 + 8 + (8 if magic == fb._FASTTEXT_FILEFORMAT_MAGIC else 0)
            for i in range(max(vocab_size, 0)):
                end = mm.find(b"\x00", pos)
                if end < 0 or end + 10 > size:
                    return (f"the file ends inside word {i + 1} of the {vocab_size} words its "
                            "header promises (truncated?)")
                pos = end + 1 + struct.calcsize("@qb")
    return None


def _load_fasttext(path: Path, limit: int | None) -> Embeddings:
    from gensim.models.fasttext import load_facebook_vectors

    problem = _fasttext_vocabulary_problem(path)
    if problem:
        raise FileFormatError(path, f"corrupt fastText .bin model: {problem}")
    try:
        kv = load_facebook_vectors(str(path))
    except FileFormatError:
        raise
    except Exception as exc:  # gensim asserts, or fails in numpy/struct, on a corrupt model
        raise FileFormatError(path, f"corrupt fastText .bin model (gensim: {exc!r})") from None
    words = list(kv.index_to_key)
    vectors = np.asarray(kv.vectors)
    if not np.isfinite(vectors).all():
        i = int(np.flatnonzero(~np.isfinite(vectors).all(axis=1))[0])
        raise FileFormatError(path, f"corrupt fastText .bin model: the vector of word {i + 1} "
                                    f"({words[i]!r}) is not finite")
    if limit is not None:
        words, vectors = words[:limit], vectors[:limit]
    return _embeddings(path, words, vectors)


def _load_npz(path: Path, limit: int | None) -> Embeddings:
    data = read_npz(path, required=("words", "vectors"), what="vector archive")
    words, vectors = data["words"], data["vectors"]
    if words.dtype.kind not in "US":
        raise FileFormatError(path, f"array 'words' must hold strings, got dtype {words.dtype}")
    if vectors.dtype.kind not in "iuf":
        raise FileFormatError(path, f"array 'vectors' must hold real numbers, got dtype {vectors.dtype}")
    if limit is not None:
        words, vectors = words[:limit], vectors[:limit]
    return _embeddings(path, words, vectors)


def load_vectors(path: str | os.PathLike, *, format: str = "auto", limit: int | None = None) -> Embeddings:
    """Read word vectors from a file into :class:`~text.Embeddings`.

    Parameters
    ----------
    path : str or path-like
    format : {"auto", "glove", "word2vec", "word2vec-binary", "fasttext", "npz"}, default "auto"
        See the module table; ``"auto"`` detects it with :func:`detect_format`.
    limit : int, optional
        Read only the first ``limit`` vectors (files are usually in frequency order).

    Returns
    -------
    Embeddings

    Raises
    ------
    mdp.errors.MissingFileError
        No such file.
    ParameterError
        Unknown format or bad ``limit``.
    FileFormatError
        A malformed, truncated or corrupt file: the message names the file and, for text
        formats, the first bad line (``path: line N: ...``). A word2vec file must hold exactly
        the vectors its header promises (unless ``limit`` is given).

    Examples
    --------
    >>> emb = load_vectors("wiki.en.vec", limit=50_000)       # doctest: +SKIP
    >>> emb = load_vectors("lee_fasttext.bin")                  # doctest: +SKIP
    """
    path = Path(path)
    if format not in FORMATS:
        raise ParameterError(f"format must be one of {FORMATS}, got {format!r}")
    if limit is not None:
        from mdp.validation import check_int

        limit = check_int(limit, "limit", low=1)
    if not path.is_file():
        raise MissingFileError(f"no vector file at {path}")
    fmt = detect_format(path) if format == "auto" else format
    if fmt in ("glove", "word2vec"):
        return _load_text(path, fmt, limit)
    if fmt == "word2vec-binary":
        return _load_word2vec_binary(path, limit)
    if fmt == "fasttext":
        return _load_fasttext(path, limit)
    return _load_npz(path, limit)


def save_vectors(emb: Embeddings, path: str | os.PathLike) -> Path:
    """Write ``emb`` as a ``.npz`` archive (``words``, ``vectors``) readable by :func:`load_vectors`.

    The file is written atomically (:func:`mdp.io.atomic_write`).
    """
    from mdp.io import atomic_write

    if not isinstance(emb, Embeddings):
        raise ParameterTypeError(f"emb must be an Embeddings, got {type(emb).__name__}")
    return atomic_write(path, lambda fh: np.savez(fh, words=emb.words, vectors=emb.vectors))
