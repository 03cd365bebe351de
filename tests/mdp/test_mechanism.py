import numpy as np
import pytest
from scipy import stats

import mdp
from mdp import MetricSpace, build, load


@pytest.fixture
def words():
    P = np.random.default_rng(0).normal(size=(6, 3))
    return MetricSpace.from_points(P, labels=list("abcdef"))


def test_sample_distribution_matches_matrix(words):
    m = build("exponential", words, 1.5)
    out = m.sample(["c"] * 20000, rng=np.random.default_rng(1))
    counts = np.array([(out == lab).sum() for lab in words.labels])
    res = stats.chisquare(counts, 20000 * m.matrix[2])
    assert res.pvalue > 1e-3


def test_sample_scalar_vectorised_and_reproducible(words):
    m = build("exponential", words, 3.0)
    a = m.sample("a", rng=5)
    assert isinstance(a, str) and a in words.labels
    batch = m.sample(["a", "b", 2], rng=7)
    assert batch.shape == (3,)
    np.testing.assert_array_equal(m.sample(list("abcdef") * 10, rng=3), m.sample(list("abcdef") * 10, rng=3))
    with pytest.raises(KeyError, match="input 1 \\(of 1\\): unknown label") as info:
        m.sample("zzz")
    assert "zzz" not in str(info.value)
    with pytest.raises(TypeError, match="rng"):
        m.sample("a", rng="seed")


def test_save_load_roundtrip(words, tmp_path):
    m = build("weighted_exponential", words, 2.0, Y=np.arange(1, 7, dtype=float))
    p = m.save(tmp_path / "m.npz")
    m2 = load(p)
    np.testing.assert_array_equal(m2.matrix, m.matrix)
    assert m2.name == "weighted_exponential" and m2.epsilon == 2.0
    assert list(m2.space.labels) == list(words.labels) and m2.params["Y"] == list(range(1, 7))
    assert m2.stats["privacy"]["verified"] is True
    assert "weighted_exponential" in repr(m2) and "L_0.95" in repr(m2)


def test_load_rejects_corrupt_and_tampered_files(words, tmp_path):
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a zip file")
    with pytest.raises(ValueError, match="bad.npz"):
        load(bad)
    np.savez(tmp_path / "other.npz", x=np.arange(3))
    with pytest.raises(ValueError, match="missing"):
        load(tmp_path / "other.npz")
    # a tampered matrix (identity: not private) must be refused on load
    m = build("exponential", words, 1.0)
    p = m.save(tmp_path / "m.npz")
    with np.load(p) as z:
        arrays = {k: z[k] for k in z.files}
    arrays.pop("log_matrix", None)      # exponential is stored in the log domain
    arrays["matrix"] = np.eye(6)
    np.savez(p, **arrays)
    with pytest.raises(ValueError, match="privacy check"):
        load(p)
    with pytest.raises(FileNotFoundError):
        load(tmp_path / "missing.npz")


def test_save_is_atomic(words, tmp_path, monkeypatch):
    m = build("exponential", words, 1.0)
    p = tmp_path / "keep.npz"
    p.write_bytes(b"user data")

    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(np, "savez_compressed", boom)
    with pytest.raises(OSError):
        m.save(p)
    assert p.read_bytes() == b"user data"
    assert [f.name for f in tmp_path.iterdir()] == ["keep.npz"]


def test_loss_and_eps_methods(words):
    m = build("exponential", words, 2.0)
    rl = (m.matrix * words.distances).sum(1)
    assert m.loss() == pytest.approx(rl.max())
    assert m.loss(0.95) == pytest.approx(np.quantile(rl, 0.95))
    assert m.eps_tight() <= 2.0 and m.eps_tight(1e-3) <= m.eps_tight()
    assert mdp.loss(m.matrix, words.distances) == m.loss()
