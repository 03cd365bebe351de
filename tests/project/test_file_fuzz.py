"""Fuzzed files: single-byte flips and truncations of every format the toolkit reads.

The property, for every mutated file: the reader raises :class:`mdp.errors.FileFormatError`
naming the file, or returns content that is identical to the original - except, for formats
without a checksum (text, ``.npy``, word2vec binary), on the one line / value / record the
mutated byte belongs to (a changed digit is a different valid number; no reader can know).
Formats with a checksum (``.npz`` members carry a ZIP CRC-32, gzip a CRC-32 and a length) must
give an error or the identical content. Never another exception type.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from mdp.errors import FileFormatError
from mdp.io import read_npy, read_npz, read_points_csv
from mdp.spaces.specs import load_points_csv, load_space

CASES = 300        # mutations per format (flips and truncations, seeded)


def _mutations(raw: bytes, seed: int, cases: int = CASES):
    """``(offset, mutated)``: flips (a random non-zero XOR of one byte) and truncations."""
    rng = np.random.default_rng(seed)
    for k in range(cases):
        if k % 4 == 3:       # a quarter truncations
            cut = int(rng.integers(0, len(raw)))
            yield cut, raw[:cut]
        else:
            pos = int(rng.integers(0, len(raw)))
            b = bytearray(raw)
            b[pos] ^= int(rng.integers(1, 256))
            yield pos, bytes(b)


def _lines_touched(raw: bytes, offset: int) -> set[int]:
    """1-based lines a mutation at ``offset`` can change (a flipped newline joins two lines)."""
    line = raw[:offset].count(b"\n") + 1
    return {line, line + 1}


def _check(path: Path, raw: bytes, read, same, seed: int, *, min_errors: int = 1) -> int:
    """Run every mutation; ``same(result, offset, truncated)`` asserts the content property."""
    errors = 0
    for offset, data in _mutations(raw, seed):
        path.write_bytes(data)
        try:
            result = read(path)
        except FileFormatError as exc:
            assert str(path) in str(exc), f"error does not name the file: {exc}"
            assert exc.path == str(path)
            errors += 1
            continue
        except Exception as exc:  # noqa: BLE001 - the property under test
            pytest.fail(f"mutation at byte {offset} (len {len(data)} of {len(raw)}) raised "
                        f"{type(exc).__name__}: {exc}")
        same(result, offset, len(data) < len(raw))
    assert errors >= min_errors       # the mutations did exercise the error paths
    return errors


# -- .npz (checksummed): error or identical -----------------------------------------------------
def _mechanism_arrays():
    rng = np.random.default_rng(0)
    pts = rng.uniform(0, 1, (6, 2))
    D = np.sqrt(((pts[:, None] - pts[None]) ** 2).sum(-1))
    M = rng.dirichlet(np.ones(6), size=6)
    meta = {"format_version": 1, "kind": "exponential", "name": "exponential", "epsilon": 1.0,
            "params": {}, "stats": {"privacy": {"guarantee": "matrix"}}, "metric": "euclidean"}
    return {"matrix": M, "distances": D, "metadata": np.array(json.dumps(meta)),
            "labels": np.array(list("abcdef")), "points": pts}


@pytest.mark.parametrize("compressed", [True, False])
def test_npz_flips_and_truncations(tmp_path, compressed):
    arrays = _mechanism_arrays()
    src = tmp_path / "src.npz"
    (np.savez_compressed if compressed else np.savez)(src, **arrays)
    raw = src.read_bytes()
    path = tmp_path / "mech.npz"

    def same(got, offset, truncated):
        assert sorted(got) == sorted(arrays), f"byte {offset}: arrays {sorted(got)}"
        for k, v in arrays.items():
            assert got[k].dtype == v.dtype and got[k].shape == v.shape
            assert np.array_equal(got[k], v), f"byte {offset}: array {k} differs"

    errors = _check(path, raw, lambda p: read_npz(p, required=("matrix", "distances", "metadata"),
                                                  allowed=arrays), same, seed=1 + compressed)
    assert errors >= CASES // 2       # most bytes of an archive matter


def test_npz_refuses_pickles_without_unsafe_advice(tmp_path):
    path = tmp_path / "obj.npz"
    np.savez(path, a=np.array([{"x": 1}], dtype=object))
    with pytest.raises(FileFormatError, match=r"obj.npz: array 'a': holds Python objects") as e:
        read_npz(path)
    assert "allow_pickle" not in str(e.value)
    csv = tmp_path / "ok.csv"
    csv.write_text("1,2\n3,4\n")
    with pytest.raises(FileFormatError, match=r"ok.csv: not a \.npz archive: not a ZIP") as e:
        read_npz(csv)
    assert "allow_pickle" not in str(e.value)
    with pytest.raises(FileFormatError, match=r"ok.csv: not a \.npy file") as e:
        read_npy(csv)
    assert "allow_pickle" not in str(e.value)


def test_npz_required_allowed_and_directory(tmp_path):
    path = tmp_path / "a.npz"
    np.savez(path, x=np.arange(3), y=np.eye(2))
    got = read_npz(path, required=["x"], allowed=["x", "y"])
    assert got["x"].tolist() == [0, 1, 2] and got["y"].flags.writeable
    with pytest.raises(FileFormatError, match=r"a.npz: not a \.npz archive: missing \['z'\]"):
        read_npz(path, required=["z"])
    with pytest.raises(FileFormatError, match=r"a.npz: not a \.npz archive: unexpected array\(s\) \['y'\]"):
        read_npz(path, allowed=["x"])
    with pytest.raises(FileFormatError, match="is a directory"):
        read_npz(tmp_path)
    with pytest.raises(FileNotFoundError, match="no .npz archive at"):
        read_npz(tmp_path / "missing.npz")


# -- .npy distance matrix: error, or one value changed -------------------------------------------
def test_npy_distance_matrix_flips_and_truncations(tmp_path):
    rng = np.random.default_rng(3)
    pts = rng.uniform(0, 1, (6, 2))
    D = np.sqrt(((pts[:, None] - pts[None]) ** 2).sum(-1))
    src = tmp_path / "src.npy"
    np.save(src, D)
    raw = src.read_bytes()
    header = raw.index(b"\n") + 1

    def same(space, offset, truncated):
        got = space.distances
        assert got.shape == D.shape and not truncated
        changed = np.argwhere(got != D)
        if offset < header:
            assert len(changed) == 0, f"header byte {offset} changed the values"
        else:
            assert len(changed) <= 1
            if len(changed):
                i, j = changed[0]
                assert (offset - header) // 8 == i * D.shape[1] + j   # the flipped value

    _check(tmp_path / "D.npy", raw, lambda p: load_space(str(p)), same, seed=4)


# -- points CSV: error, or the touched line's point changed ---------------------------------------
def test_points_csv_flips_and_truncations(tmp_path):
    rng = np.random.default_rng(5)
    pts = np.round(rng.uniform(-50, 50, (15, 2)), 4)
    labels = [f"p{i}" for i in range(15)]
    src = tmp_path / "src.csv"
    pd.DataFrame({"name": labels, "x": pts[:, 0], "y": pts[:, 1]}).to_csv(src, index=False)
    raw = src.read_bytes()

    def same(space, offset, truncated):
        rows = {line - 2 for line in _lines_touched(raw, offset)}
        got_labels = list(space.labels)
        n = len(got_labels)
        assert n == len(labels) or (truncated and n < len(labels))
        keep = [i for i in range(n) if i not in rows and not (truncated and i == n - 1)]
        assert [got_labels[i] for i in keep] == [labels[i] for i in keep]
        np.testing.assert_array_equal(space.points[keep], pts[keep])

    _check(tmp_path / "pts.csv", raw, lambda p: load_space(str(p)), same, seed=6)


# -- check-in logs -----------------------------------------------------------------------------
def _checkin_text() -> bytes:
    rng = np.random.default_rng(7)
    lines = []
    for i in range(20):
        lines.append(f"{int(rng.integers(0, 50))}\t2010-10-{10 + i % 9:02d}T0{i % 10}:21:28Z\t"
                     f"{40.6 + rng.uniform(0, 0.2):.6f}\t{-73.9 + rng.uniform(0, 0.2):.6f}\t{1000 + i}")
    return ("\n".join(lines) + "\n").encode()


def test_checkins_gz_flips_and_truncations(tmp_path):
    from geo.checkins import read_checkins

    text = _checkin_text()
    (tmp_path / "plain.txt").write_bytes(text)
    original = read_checkins(tmp_path / "plain.txt")
    raw = gzip.compress(text, mtime=0)

    def same(df, offset, truncated):
        pd.testing.assert_frame_equal(df, original)

    errors = _check(tmp_path / "c.txt.gz", raw, read_checkins, same, seed=8)
    assert errors >= CASES // 2


def test_checkins_plain_flips_and_truncations(tmp_path):
    from geo.checkins import read_checkins

    raw = _checkin_text()
    (tmp_path / "orig.txt").write_bytes(raw)
    original = read_checkins(tmp_path / "orig.txt")

    def same(df, offset, truncated):
        rows = {line - 1 for line in _lines_touched(raw, offset)}
        n = len(df)
        assert n == len(original) or (truncated and n < len(original))
        keep = [i for i in range(n) if i not in rows and not (truncated and i == n - 1)]
        pd.testing.assert_frame_equal(df.iloc[keep].reset_index(drop=True),
                                      original.iloc[keep].reset_index(drop=True))

    _check(tmp_path / "c.txt", raw, read_checkins, same, seed=9)


def test_checkin_errors_name_file_and_line(tmp_path):
    from geo.checkins import read_checkins

    good = "0\t2010-10-12T00:21:28Z\t40.6\t-73.7\t1\n"
    path = tmp_path / "big.txt"
    path.write_text(good + "99999999999999999999\t2010-10-12T00:21:28Z\t40.6\t-73.7\t1\n")
    with pytest.raises(FileFormatError, match=r"big.txt: line 2: user 99999999999999999999 does "
                                              r"not fit in a 64-bit integer"):
        read_checkins(path)
    gz = tmp_path / "c.txt.gz"
    gz.write_bytes(gzip.compress((good * 200).encode())[:-30])
    with pytest.raises(FileFormatError, match=r"c.txt.gz: unreadable check-in file: the file "
                                              r"ends early \(truncated\?\)"):
        read_checkins(gz)
    plain = tmp_path / "plain.txt.gz"
    plain.write_text(good)
    with pytest.raises(FileFormatError, match=r"plain.txt.gz: not gzip-compressed data"):
        read_checkins(plain)
    bad_crc = bytearray(gzip.compress(good.encode()))
    bad_crc[-6] ^= 1
    (tmp_path / "crc.txt.gz").write_bytes(bytes(bad_crc))
    with pytest.raises(FileFormatError, match=r"crc.txt.gz: unreadable check-in file: .*CRC"):
        read_checkins(tmp_path / "crc.txt.gz")


# -- Geolife PLT -------------------------------------------------------------------------------
def _plt_text() -> bytes:
    header = ("Geolife trajectory\nWGS 84\nAltitude is in Feet\nReserved 3\n"
              "0,2,255,My Track,0,0,2,8421376\n0\n")
    rows = [f"39.{984702 + 37 * i},116.{318417 + 11 * i},0,{492 + i},{39744.1201851852 + i / 86400:.10f},"
            f"2008-10-23,02:53:{i:02d}" for i in range(20)]
    return (header + "\n".join(rows) + "\n").encode()


def test_plt_flips_and_truncations(tmp_path):
    from geo.geolife import PLT_HEADER_LINES, read_plt

    raw = _plt_text()
    (tmp_path / "orig.plt").write_bytes(raw)
    original = read_plt(tmp_path / "orig.plt", trace="t")

    def same(df, offset, truncated):
        rows = {line - PLT_HEADER_LINES - 1 for line in _lines_touched(raw, offset)}
        n = len(df)
        assert n == len(original) or (truncated and n < len(original))
        keep = [i for i in range(n) if i not in rows and not (truncated and i == n - 1)]
        pd.testing.assert_frame_equal(df.iloc[keep].reset_index(drop=True),
                                      original.iloc[keep].reset_index(drop=True))

    _check(tmp_path / "x.plt", raw, lambda p: read_plt(p, trace="t"), same, seed=10)


# -- word vectors ------------------------------------------------------------------------------
def _vectors():
    rng = np.random.default_rng(11)
    words = [f"w{i}x" for i in range(12)]
    return words, np.round(rng.standard_normal((12, 4)), 5).astype(np.float32)


def _text_vectors(header: bool) -> bytes:
    words, vecs = _vectors()
    lines = [f"{len(words)} {vecs.shape[1]}"] if header else []
    lines += [w + " " + " ".join(f"{x:.5f}" for x in v) for w, v in zip(words, vecs, strict=True)]
    return ("\n".join(lines) + "\n").encode()


@pytest.mark.parametrize("header", [True, False], ids=["word2vec", "glove"])
def test_text_vectors_flips_and_truncations(tmp_path, header):
    from text import load_vectors

    raw = _text_vectors(header)
    fmt = "word2vec" if header else "glove"
    words, vecs = _vectors()

    def same(emb, offset, truncated):
        rows = {line - 1 - header for line in _lines_touched(raw, offset)}
        n = len(emb)
        assert n == len(words) or (truncated and n < len(words))
        keep = [i for i in range(n) if i not in rows and not (truncated and i == n - 1)]
        assert [str(emb.words[i]) for i in keep] == [words[i] for i in keep]
        if keep:     # (a file cut inside its first line is a valid file of other dimension)
            np.testing.assert_array_equal(np.asarray(emb.vectors, dtype=np.float32)[keep], vecs[keep])

    _check(tmp_path / "v.txt", raw, lambda p: load_vectors(p, format=fmt), same, seed=12 + header)


def test_word2vec_binary_flips_and_truncations(tmp_path):
    from text import load_vectors

    words, vecs = _vectors()
    raw = f"{len(words)} {vecs.shape[1]}\n".encode() + b"".join(
        w.encode() + b" " + v.astype("<f4").tobytes() + b"\n" for w, v in zip(words, vecs, strict=True))
    starts = np.cumsum([raw.index(b"\n") + 1] + [len(w) + 1 + 16 + 1 for w in words])

    def same(emb, offset, truncated):
        # the record holding the byte; a record's closing newline also starts the next word
        touched = {int(np.searchsorted(starts, offset + k, side="right")) - 1 for k in (0, 1)}
        keep = [i for i in range(len(words)) if i not in touched]
        assert len(emb) == len(words)
        assert [str(emb.words[i]) for i in keep] == [words[i] for i in keep]
        np.testing.assert_array_equal(np.asarray(emb.vectors)[keep], vecs[keep])

    _check(tmp_path / "v.bin", raw, lambda p: load_vectors(p, format="word2vec-binary"), same,
           seed=14)


def test_word2vec_header_must_match_the_vectors(tmp_path):
    from text import load_vectors

    path = tmp_path / "v.vec"
    path.write_text("2 2\na 1 2\nb 3 4\nc 5 6\n")
    with pytest.raises(FileFormatError, match=r"v.vec: line 4: data after the 2 vectors the header"):
        load_vectors(path)
    assert len(load_vectors(path, limit=2)) == 2


# -- hypothesis ---------------------------------------------------------------------------------
_settings = settings(max_examples=60, deadline=None,
                     suppress_health_check=[HealthCheck.function_scoped_fixture])


@_settings
@given(data=st.binary(max_size=400))
def test_arbitrary_bytes_give_an_error_or_arrays(tmp_path, data):
    path = tmp_path / "any.npz"
    path.write_bytes(b"PK\x03\x04" + data)
    try:
        out = read_npz(path)
    except FileFormatError as exc:
        assert exc.path == str(path)
    else:
        assert all(isinstance(v, np.ndarray) for v in out.values())
    npy = tmp_path / "any.npy"
    npy.write_bytes(b"\x93NUMPY" + data)
    try:
        read_npy(npy)
    except FileFormatError as exc:
        assert exc.path == str(npy)


@_settings
@given(points=hnp.arrays(np.float64, st.tuples(st.integers(2, 8), st.integers(1, 3)),
                         elements=st.floats(-1e6, 1e6, allow_nan=False, allow_subnormal=False),
                         unique=True),
       header=st.booleans(), labelled=st.booleans())
def test_points_csv_round_trip(tmp_path, points, header, labelled):
    """Any finite points written by pandas read back exactly, with their labels."""
    labels = [f"pt{i}" for i in range(len(points))]
    df = pd.DataFrame(points, columns=[f"c{j}" for j in range(points.shape[1])])
    if labelled:
        df.insert(0, "name", labels)
    path = tmp_path / "p.csv"
    df.to_csv(path, index=False, header=header)
    got, got_labels = read_points_csv(path)
    np.testing.assert_array_equal(got, points)
    assert got_labels == (labels if labelled else None)


def test_points_csv_errors_name_file_and_line(tmp_path):
    path = tmp_path / "p.csv"
    path.write_text("name,x,y\na,1,2\nb,3,4\n\nc,5,oops\n")
    with pytest.raises(FileFormatError, match=r"p.csv: line 5: coordinate in column 3 is not a "
                                              r"finite number: 'oops'"):
        read_points_csv(path)
    path.write_text("x,y\n1,2\n3,4,5\n")
    with pytest.raises(FileFormatError, match=r"p.csv: line 3: not a points table"):
        read_points_csv(path)
    path.write_text("a,1,2\nb,1,2\n")
    with pytest.raises(FileFormatError, match=r"p.csv: line 2: the point on this line repeats "
                                              r"the point on line 1"):
        load_points_csv(path)
    path.write_text("a,1,2\n1,3,4\n")     # a number among labels: column 1 is a coordinate
    with pytest.raises(FileFormatError, match=r"p.csv: line 1: coordinate in column 1"):
        read_points_csv(path)
    path.write_bytes(b"x,y\n1,2\n\xff,3\n")
    with pytest.raises(FileFormatError, match=r"p.csv: .*not UTF-8"):
        read_points_csv(path)
    space = load_points_csv(_write(tmp_path / "q.csv.gz", gzip.compress(b"x,y\n0,0\n3,4\n")))
    assert space.distances[0, 1] == 5.0 and space.labels is None


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def test_fasttext_truncations_never_hang(tmp_path):
    """gensim loops forever on a model cut inside its word list; the loader checks it first."""
    gensim = pytest.importorskip("gensim")
    from text import load_vectors

    src = Path(gensim.__file__).parent / "test" / "test_data" / "lee_fasttext.bin"
    raw = src.read_bytes()
    original = load_vectors(src)
    rng = np.random.default_rng(15)
    cuts = [8583] + [int(c) for c in rng.integers(0, len(raw), 30)]
    path = tmp_path / "ft.bin"
    errors = 0
    for cut in cuts:
        path.write_bytes(raw[:cut])
        try:
            emb = load_vectors(path, format="fasttext")
        except FileFormatError as exc:
            assert exc.path == str(path)
            errors += 1
            continue
        # the hidden-output matrix at the end is not needed for the word vectors
        assert list(emb.words) == list(original.words)
        np.testing.assert_array_equal(emb.vectors, original.vectors)
    assert errors >= len(cuts) // 2
