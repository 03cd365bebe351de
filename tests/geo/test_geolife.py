"""Geolife PLT reader: real fixtures parsed against an independent line-by-line reading."""

from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from geo.geolife import find_plt_files, iter_geolife, read_geolife, read_plt


@pytest.fixture(scope="module")
def sample(shared_data) -> Path:
    return shared_data / "geolife_sample"


def _by_hand(path: Path):
    """Independent reading: drop the 6 header lines, split the first/last point by hand."""
    lines = [ln for ln in path.read_text().splitlines()[6:] if ln.strip()]

    def point(line):
        lat, lon, _, alt, days, date, time = line.split(",")
        return float(lat), float(lon), float(alt), float(days), datetime.strptime(f"{date} {time}", "%Y-%m-%d %H:%M:%S")

    return len(lines), point(lines[0]), point(lines[-1])


def test_fixture_files_found_in_user_trace_order(sample):
    found = find_plt_files(sample)
    assert [(u, t) for u, t, _ in found] == [
        ("000", "20081023025304"), ("000", "20081024020959"),
        ("001", "20081023055305"), ("001", "20081023234104")]


def test_each_plt_file_matches_hand_parse(sample):
    total = 0
    for user, trace, f in find_plt_files(sample):
        df = read_plt(f, user=user)
        rows, first, last = _by_hand(f)
        total += rows
        assert len(df) == rows
        assert (df["user"] == user).all() and (df["trace"] == trace).all()
        for got, want in ((df.iloc[0], first), (df.iloc[-1], last)):
            assert got["lat"] == want[0] and got["lon"] == want[1]
            assert got["altitude_ft"] == want[2] and got["days"] == want[3]
            assert got["datetime"].to_pydatetime() == want[4]
    # wc -l of the four files minus 4 x 6 header lines
    assert total == 4265 - 24


def test_known_values_of_one_file(sample):
    df = read_plt(sample / "Data/000/Trajectory/20081024020959.plt")
    assert len(df) == 244
    assert df["datetime"].iloc[0] == datetime(2008, 10, 24, 2, 9, 59)
    assert df["datetime"].iloc[-1] == datetime(2008, 10, 24, 2, 47, 6)
    assert (df["lat"].iloc[-1], df["lon"].iloc[-1]) == (40.009209, 116.321162)


def test_datetime_agrees_with_days_field(sample):
    # "days" counts days since 1899-12-30: an independent encoding of the same instant.
    df = read_geolife(sample)
    from_days = [datetime(1899, 12, 30) + timedelta(days=d) for d in df["days"]]
    gap = np.abs([(a - b.to_pydatetime()).total_seconds() for a, b in zip(from_days, df["datetime"], strict=True)])
    assert gap.max() < 1.0
    for _, g in df.groupby("trace", observed=True):
        assert g["datetime"].is_monotonic_increasing


def test_read_geolife_concatenates_streamed_traces(sample):
    frames = list(iter_geolife(sample))
    df = read_geolife(sample)
    assert [len(f) for f in frames] == [908, 244, 961, 2128]
    assert len(df) == 4241
    assert list(df["user"].cat.categories) == ["000", "001"]
    assert df.groupby("user", observed=True).size().to_dict() == {"000": 1152, "001": 3089}


def test_users_filter_and_single_file(sample):
    only = read_geolife(sample, users=[1])
    assert set(only["user"]) == {"001"} and len(only) == 961 + 2128
    assert len(read_geolife(sample / "Data/000")) == 908 + 244
    one = read_geolife(sample / "Data/001/Trajectory/20081023055305.plt")
    assert set(one["user"]) == {"001"} and len(one) == 961


def _tree_with(tmp_path, sample, edit):
    src = sample / "Data/000/Trajectory/20081024020959.plt"
    dst = tmp_path / "Data" / "007" / "Trajectory" / src.name
    dst.parent.mkdir(parents=True)
    lines = src.read_text().splitlines()
    edit(lines)
    dst.write_text("\n".join(lines) + "\n")
    return dst


@pytest.mark.parametrize("lineno, bad, words", [
    (10, "40.0,abc,0,492,39745.09,2008-10-24,02:10:30", "non-numeric"),
    (8, "40.0,116.3,0,492,39745.09,2008-10-24", "expected 7"),
    (9, "40.0,116.3,0,492,39745.09,2008-10-24,02:10:30,extra", "expected 7"),
    (100, "40.0,116.3,0,492,39745.09,2008-13-24,02:10:30", "date/time"),
    (244, "140.0,116.3,0,492,39745.09,2008-10-24,02:10:30", "out of range"),
])
def test_malformed_line_names_file_and_line(tmp_path, sample, lineno, bad, words):
    def edit(lines):
        lines[lineno - 1] = bad

    f = _tree_with(tmp_path, sample, edit)
    with pytest.raises(ValueError, match=rf"{f.name}: line {lineno}: .*{words}"):
        read_geolife(tmp_path)


def test_truncated_header(tmp_path, sample):
    f = _tree_with(tmp_path, sample, lambda lines: lines.__delitem__(slice(4, None)))
    with pytest.raises(ValueError, match=rf"{f.name}: truncated PLT header"):
        read_plt(f)


def test_skip_malformed_files_with_warning(tmp_path, sample):
    def edit(lines):
        lines[11] = "garbage"

    _tree_with(tmp_path, sample, edit)
    good = tmp_path / "Data" / "008" / "Trajectory" / "20081023025304.plt"
    good.parent.mkdir(parents=True)
    good.write_text((sample / "Data/000/Trajectory/20081023025304.plt").read_text())
    with pytest.warns(UserWarning, match="line 12"):
        df = read_geolife(tmp_path, on_error="skip")
    assert set(df["user"]) == {"008"} and len(df) == 908
    with pytest.raises(ValueError, match="on_error"):
        read_geolife(tmp_path, on_error="ignore")


def test_missing_paths(tmp_path):
    with pytest.raises(FileNotFoundError, match="no Geolife data"):
        read_geolife(tmp_path / "nope")
    with pytest.raises(FileNotFoundError, match="no .plt files"):
        read_geolife(tmp_path)
