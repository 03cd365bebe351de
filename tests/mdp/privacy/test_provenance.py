"""A file's points are checked against the embedding it names; unnamed points are warned about."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

import mdp
from mdp.errors import FileFormatError, UnverifiedPointsWarning, WeakPrivacyWarning
from mdp.plugins import EMBEDDINGS, NamedEmbedding
from mdp.spaces.vector_space import VectorSpace

WORDS = [f"w{i}" for i in range(12)]
VECTORS = np.random.default_rng(4).normal(size=(12, 5))


@pytest.fixture
def toy_embedding():
    """A named embedding of 12 words, registered as the ``text`` package registers GloVe."""
    table = dict(zip(WORDS, VECTORS, strict=True))

    def vectors(words):
        missing = [w for w in words if w not in table]
        if missing:
            raise KeyError(f"{len(missing)} words are not in 'toy'")
        return np.array([table[w] for w in words])

    def first(n):
        n = len(WORDS) if n is None else n
        return np.array(WORDS[:n]), VECTORS[:n]

    EMBEDDINGS.register("toy", NamedEmbedding(vectors=vectors, first=first), replace=True)
    yield
    EMBEDDINGS.unregister("toy")


def _space(cls=mdp.MetricSpace, source="toy", idx=slice(0, 10)):
    space = (cls.from_points(VECTORS[idx], labels=np.array(WORDS)[idx]) if cls is mdp.MetricSpace
             else VectorSpace(VECTORS[idx], labels=np.array(WORDS)[idx]))
    space.source = source
    return space


def _rewrite(path, points=None, meta=None):
    with np.load(path, allow_pickle=False) as z:
        data = {k: z[k] for k in z.files}
    if points is not None:
        if "points" not in data:          # a file that names its words: forge stored vectors
            data["labels"] = np.array(WORDS[:10])
            m = json.loads(str(data["metadata"]))
            m.pop("words_from_source", None)
            data["metadata"] = np.array(json.dumps(m))
        data["points"] = points(data.get("points", VECTORS[:10]))
        if "distances" in data:       # a consistent forgery: distances recomputed from the points
            P = data["points"]
            data["distances"] = np.linalg.norm(P[:, None] - P[None], axis=2)
    if meta is not None:
        m = json.loads(str(data["metadata"]))
        meta(m)
        data["metadata"] = np.array(json.dumps(m))
    np.savez(path, **data)


def _load_quietly(path):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mech = mdp.load(path)
    return mech, [w.category for w in caught]


@pytest.mark.parametrize("mode", ["matrix", "vocabulary"])
def test_named_embedding_checked_on_load(toy_embedding, tmp_path, mode):
    space = _space() if mode == "matrix" else _space(VectorSpace)
    path = mdp.build("exponential", space, 1.0, mode=mode).save(tmp_path / "m.npz")
    mech, caught = _load_quietly(path)
    assert UnverifiedPointsWarning not in caught and mech.space.source == "toy"
    assert np.array_equal(mech.space.points, VECTORS[:10])
    with np.load(path) as z:      # a vocabulary file names the embedding's words, nothing else
        assert ("points" in z.files) == (mode == "matrix")
    for forge, match in [
            (lambda P: P * 10, "the vectors of 10 of its 10 words differ"),      # rescaled
            (lambda P: np.rint(P * 100), "the vectors of 10 of its 10 words"),   # integer x 100
            (lambda P: P[[1, 0, *range(2, 10)]], "the vectors of 2 of its 10 words"),  # swapped
            (lambda P: P * (1 + 1e-15), "differ from the installed embedding 'toy'")]:
        bad = tmp_path / "bad.npz"
        bad.write_bytes(path.read_bytes())
        _rewrite(bad, points=forge)
        with pytest.raises(FileFormatError, match=match):
            mdp.load(bad)


def test_words_not_in_the_named_embedding_are_refused(toy_embedding, tmp_path):
    path = mdp.build("exponential", _space(), 1.0).save(tmp_path / "m.npz")
    with np.load(path) as z:
        data = {k: z[k] for k in z.files}
    data["labels"] = np.array([*WORDS[:9], "zebra"])
    np.savez(path, **data)
    with pytest.raises(FileFormatError, match="not all words of the embedding 'toy'"):
        mdp.load(path)


def test_unnamed_or_unknown_sources_load_with_a_warning(toy_embedding, tmp_path):
    path = mdp.build("exponential", _space(source=None), 1.0).save(tmp_path / "own.npz")
    with pytest.warns(UnverifiedPointsWarning, match="name no embedding they come from"):
        mdp.load(path)
    # a forger who scales the vectors and deletes the source field gets both warnings: the
    # points are unverified, and epsilon no longer protects anything on them
    named = mdp.build("exponential", _space(), 1.0).save(tmp_path / "named.npz")
    _rewrite(named, points=lambda P: P * 1e6, meta=lambda m: m.pop("source"))
    _, caught = _load_quietly(named)
    assert UnverifiedPointsWarning in caught and WeakPrivacyWarning in caught
    _rewrite(named, meta=lambda m: m.update(source="no-such-embedding"))
    with pytest.warns(UnverifiedPointsWarning, match="'no-such-embedding' it names cannot be "
                                                     "checked here"):
        mdp.load(named)


def test_location_files_need_no_source(tmp_path):
    latlon = np.array([(48.2082, 16.3738), (48.2106, 16.3645), (48.2035, 16.3690)])
    path = mdp.build("exponential", mdp.MetricSpace.from_points(latlon, metric="haversine"),
                     2.0).save(tmp_path / "places.npz")
    _, caught = _load_quietly(path)
    assert UnverifiedPointsWarning not in caught


def test_weighted_exponential_vocabulary_file_without_weights_is_refused_fast(tmp_path):
    from mdp.families.analytic_rows import RECOMPUTED_WEIGHTS_MAX_N
    from mdp.vocabulary.mode import VOCABULARY_FORMAT

    n = RECOMPUTED_WEIGHTS_MAX_N + 1
    meta = {"format": VOCABULARY_FORMAT, "mode": "vocabulary", "name": "weighted_exponential",
            "epsilon": 1.0, "params": {"Y": "inverse_density"}, "stats": {},
            "metric": "euclidean"}
    np.savez(tmp_path / "w.npz", points=np.random.default_rng(0).normal(size=(n, 3)),
             metadata=np.array(json.dumps(meta)))
    with pytest.raises(FileFormatError, match="must hold its log_weights"):
        _load_quietly(tmp_path / "w.npz")
    # a build saves them, and a load takes them instead of the n x n pass
    space = VectorSpace(VECTORS, labels=WORDS)
    mech = mdp.build("weighted_exponential", space, 1.0, mode="vocabulary")
    mech.save(tmp_path / "v.npz")
    with np.load(tmp_path / "v.npz") as z:
        assert "log_weights" in z.files
    again, _ = _load_quietly(tmp_path / "v.npz")
    assert np.array_equal(again.log_rows([3]), mech.log_rows([3]))


def test_vocabulary_file_of_chosen_words_stores_labels_not_vectors(toy_embedding, tmp_path):
    idx = [7, 2, 11, 0, 5]
    space = VectorSpace(VECTORS[idx], labels=np.array(WORDS)[idx])
    space.source = "toy"
    path = mdp.build("madlib", space, 1.0, mode="vocabulary").save(tmp_path / "m.npz")
    with np.load(path) as z:
        assert "points" not in z.files and list(z["labels"]) == [WORDS[i] for i in idx]
    mech, caught = _load_quietly(path)
    assert np.array_equal(mech.space.points, VECTORS[idx]) and UnverifiedPointsWarning not in caught
    with np.load(path) as z:
        data = {k: z[k] for k in z.files}
    data["labels"] = np.array(["w1", "w2", "w3", "w4", "zebra"])
    np.savez(path, **data)
    with pytest.raises(FileFormatError, match="not all words of the embedding 'toy'"):
        mdp.load(path)
    EMBEDDINGS.unregister("toy")
    with pytest.raises(FileFormatError, match="the embedding 'toy', which cannot be used here"):
        mdp.load(path)
