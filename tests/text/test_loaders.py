"""Loading word vectors: gensim's real test data (fastText, word2vec, GloVe) and corrupt files."""

from pathlib import Path

import numpy as np
import pytest

from text import Embeddings, load_vectors, save_vectors
from text.loaders import detect_format

gensim = pytest.importorskip("gensim", reason="optional extra 'text' (gensim) not installed")
from gensim.models import KeyedVectors  # noqa: E402
from gensim.models.fasttext import load_facebook_vectors  # noqa: E402

DATA = Path(gensim.__file__).parent / "test" / "test_data"


def test_fasttext_bin_from_gensim_test_data():
    path = DATA / "lee_fasttext.bin"
    assert detect_format(path) == "fasttext"
    emb = load_vectors(path)
    kv = load_facebook_vectors(str(path))
    assert len(emb) == len(kv.index_to_key) == 1762 and emb.dim == 10
    assert list(emb.words) == list(kv.index_to_key)
    np.testing.assert_array_equal(emb.vectors, kv.vectors)
    # the .vec export of the same model (text, 5 significant digits) agrees
    vec = load_vectors(DATA / "lee_fasttext.vec")
    assert detect_format(DATA / "lee_fasttext.vec") == "word2vec"
    assert list(vec.words) == list(emb.words)
    np.testing.assert_allclose(vec.vectors, emb.vectors, rtol=1e-4, atol=1e-4)
    # newer fastText files carry a magic number: detected too
    assert len(load_vectors(DATA / "lee_fasttext_new.bin")) == 1763
    assert len(load_vectors(path, limit=100)) == 100


def test_word2vec_binary_from_gensim_test_data():
    path = DATA / "euclidean_vectors.bin"
    assert detect_format(path) == "word2vec-binary"
    emb = load_vectors(path)
    kv = KeyedVectors.load_word2vec_format(str(path), binary=True)
    assert list(emb.words) == list(kv.index_to_key) and emb.dim == 10
    np.testing.assert_array_equal(emb.vectors, kv.vectors)


def test_glove_text_against_an_independent_parse():
    path = DATA / "test_glove.txt"
    assert detect_format(path) == "glove"
    emb = load_vectors(path)
    lines = path.read_text(encoding="utf-8").splitlines()
    words = [ln.split(" ")[0] for ln in lines]
    values = np.array([[float(x) for x in ln.split(" ")[1:]] for ln in lines])
    assert list(emb.words) == words
    np.testing.assert_allclose(emb.vectors, values, rtol=1e-6)


def test_roundtrips(tmp_path):
    emb = load_vectors(DATA / "lee_fasttext.bin", limit=50)
    kv = KeyedVectors(emb.dim)
    kv.add_vectors(list(emb.words), emb.vectors)
    kv.save_word2vec_format(str(tmp_path / "w.txt"), binary=False)
    kv.save_word2vec_format(str(tmp_path / "w.bin"), binary=True)
    np.testing.assert_allclose(load_vectors(tmp_path / "w.txt").vectors, emb.vectors, rtol=1e-5)
    np.testing.assert_array_equal(load_vectors(tmp_path / "w.bin").vectors, emb.vectors)
    save_vectors(emb, tmp_path / "w.npz")
    back = load_vectors(tmp_path / "w.npz")
    assert list(back.words) == list(emb.words)
    np.testing.assert_array_equal(back.vectors, emb.vectors)
    with pytest.raises(TypeError, match="Embeddings"):
        save_vectors("x", tmp_path / "y.npz")
    # from numpy arrays directly
    assert len(Embeddings(np.array(["a", "b"]), np.eye(2))) == 2


@pytest.mark.parametrize("content,message", [
    ("2 3\nfoo 1 2 3\nbar 1 x 3\n", r"line 3: value 2 of word 'bar' is not a number: 'x'"),
    ("3 3\nfoo 1 2 3\nbar 1 3\nbaz 1 2 3\n", r"line 3: word 'bar' has 2 values, expected 3"),
    ("3 3\nfoo 1 2 3\nbar 1 3 4\n", r"line 4: file ends after 2 vectors, the header promises 3"),
    ("foo 1 2\nbar 3 4 5\n", r"line 2: word 'bar' has 3 values, expected 2"),
    ("foo 1 2\nbar 3 nan\n", r"line 2: the vector of 'bar' is not finite"),
    ("2 2\nfoo 1 2\nbar 3 inf\n", r"line 3: the vector of 'bar' is not finite"),
    ("foo 1 2\nbar 3 4\nfoo 5 6\n", r"line 3: word 'foo' repeats line 1"),
])
def test_corrupt_text_files_name_file_and_line(tmp_path, content, message):
    path = tmp_path / "vectors.txt"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ValueError, match=str(path).replace("\\", "\\\\") + ": " + message):
        load_vectors(path)


def test_non_utf8_text_names_the_line(tmp_path):
    path = tmp_path / "v.txt"
    path.write_bytes(b"foo 1 2\nb\xe9r 3 4\n")
    with pytest.raises(ValueError, match="v.txt: line 2: not UTF-8"):
        load_vectors(path, format="glove")


def test_truncated_binary_files(tmp_path):
    raw = (DATA / "lee_fasttext.bin").read_bytes()
    (tmp_path / "ft.bin").write_bytes(raw[: len(raw) // 3])
    with pytest.raises(ValueError, match="ft.bin: corrupt fastText .bin model"):
        load_vectors(tmp_path / "ft.bin")
    raw = (DATA / "euclidean_vectors.bin").read_bytes()
    (tmp_path / "w2v.bin").write_bytes(raw[: len(raw) // 3])
    with pytest.raises(ValueError, match=r"w2v.bin: corrupt word2vec binary file; the header \(line 1\) "
                                         r"promises 2747 vectors of dimension 10"):
        load_vectors(tmp_path / "w2v.bin")


def test_other_bad_input(tmp_path):
    with pytest.raises(FileNotFoundError, match="no vector file"):
        load_vectors(tmp_path / "missing.vec")
    (tmp_path / "empty.txt").write_text("")
    with pytest.raises(ValueError, match="empty.txt: empty file"):
        load_vectors(tmp_path / "empty.txt")
    with pytest.raises(ValueError, match="format must be one of"):
        load_vectors(DATA / "test_glove.txt", format="elmo")
    with pytest.raises(ValueError, match="limit must be >= 1"):
        load_vectors(DATA / "test_glove.txt", limit=0)
    np.savez(tmp_path / "bad.npz", words=np.array(["a", "b"]))
    with pytest.raises(ValueError, match=r"bad.npz: .*missing \['vectors'\]"):
        load_vectors(tmp_path / "bad.npz")
    np.savez(tmp_path / "dims.npz", words=np.array(["a", "b"]), vectors=np.zeros((3, 2)))
    with pytest.raises(ValueError, match=r"dims.npz: vectors must have shape \(2, d\)"):
        load_vectors(tmp_path / "dims.npz")
