"""mdp.io writing: atomic replacement, the user's umask, a directory refused as output."""

from __future__ import annotations

import os
import stat

import pytest

from mdp.errors import FileFormatError
from mdp.io import atomic_write, atomic_write_text, current_umask, open_text


@pytest.fixture
def umask():
    """Set a umask for one test and restore the previous one."""
    saved = os.umask(0o022)
    os.umask(saved)
    yield lambda mask: os.umask(mask)
    os.umask(saved)


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.mark.parametrize("mask", [0o022, 0o027, 0o077, 0o002])
def test_new_file_gets_the_mode_open_would_give(tmp_path, umask, mask):
    umask(mask)
    assert current_umask() == mask
    assert current_umask() == mask          # reading it does not change it
    atomic_write_text(tmp_path / "a.txt", "hello")
    with open(tmp_path / "b.txt", "w") as fh:    # what open() gives, for comparison
        fh.write("hello")
    assert _mode(tmp_path / "a.txt") == _mode(tmp_path / "b.txt") == 0o666 & ~mask
    assert (tmp_path / "a.txt").read_text() == "hello"


def test_replacing_keeps_the_existing_mode(tmp_path, umask):
    path = tmp_path / "a.txt"
    path.write_text("old")
    os.chmod(path, 0o640)
    umask(0o002)
    atomic_write_text(path, "new")
    assert path.read_text() == "new" and _mode(path) == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["a.txt"]       # no temporary left


def test_directory_output_is_refused_naming_it(tmp_path):
    out = tmp_path / "results"
    out.mkdir()
    with pytest.raises(FileFormatError, match=rf"{out}: is a directory; the output must be a file") as e:
        atomic_write_text(out, "x")
    assert e.value.path == str(out)
    assert list(out.iterdir()) == []
    parent_file = tmp_path / "f"
    parent_file.write_text("")
    with pytest.raises(FileFormatError, match=rf"{parent_file / 'x.txt'}: cannot write: .* is not a directory"):
        atomic_write_text(parent_file / "x.txt", "x")


def test_failed_write_leaves_the_old_file(tmp_path):
    path = tmp_path / "a.bin"
    path.write_bytes(b"old")

    def boom(fh):
        fh.write(b"partial")
        raise RuntimeError("disk on fire")

    with pytest.raises(RuntimeError, match="disk on fire"):
        atomic_write(path, boom)
    assert path.read_bytes() == b"old" and [p.name for p in tmp_path.iterdir()] == ["a.bin"]


def test_open_text_reads_plain_and_gzip_and_names_the_line(tmp_path):
    import gzip

    (tmp_path / "a.txt").write_bytes(b"one\r\ntwo\nthr\xffee\n")
    (tmp_path / "a.gz").write_bytes(gzip.compress(b"one\r\ntwo\n"))
    with open_text(tmp_path / "a.gz") as fh:
        assert list(fh) == ["one\n", "two\n"] and fh.lineno == 2
    with open_text(tmp_path / "a.txt") as fh:
        assert next(fh) == "one\n"
        assert next(fh) == "two\n"
        with pytest.raises(FileFormatError, match=r"a.txt: line 3: not utf-8 text"):
            next(fh)
    with open_text(tmp_path / "a.txt", errors="replace") as fh:
        assert list(fh)[2] == "thr\ufffdee\n"
