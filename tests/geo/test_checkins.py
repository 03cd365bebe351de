"""Check-in readers: the real SNAP Gowalla NYC extract and a Foursquare TSMC2014-layout file."""

import gzip
from datetime import UTC, datetime

import numpy as np
import pandas as pd
import pytest

from geo.checkins import read_checkins

# Rows in the original dataset_TSMC2014_NYC.txt layout (tab-separated, no header).
FOURSQUARE_ROWS = [
    ["470", "49bbd6c0f964a520f4531fe3", "4bf58dd8d48988d127951735", "Arts & Crafts Store",
     "40.719810375488535", "-74.00258103213994", "-240", "Tue Apr 03 18:00:09 +0000 2012"],
    ["979", "4a43c0aef964a520c6a61fe3", "4bf58dd8d48988d1df941735", "Bridge",
     "40.60679958140643", "-74.04416981025437", "-240", "Tue Apr 03 18:00:25 +0000 2012"],
    ["69", "4c5cc7b485a1e21e00d35711", "4bf58dd8d48988d103941735", "Home (private)",
     "40.71616168484322", "-73.88307005845945", "-240", "Tue Apr 03 18:02:24 +0000 2012"],
    ["470", "4d0cc47f903d37041864bf55", "4bf58dd8d48988d1e0931735", "Caf\u00e9",
     "40.7", "-74.0", "-300", "Wed Apr 04 01:05:10 +0000 2012"],
]


@pytest.fixture(scope="module")
def gowalla(shared_data):
    return shared_data / "gowalla_nyc_checkins.txt.gz"


@pytest.fixture(scope="module")
def gowalla_df(gowalla):
    return read_checkins(gowalla)


def test_gowalla_counts_and_box(gowalla_df):
    df = gowalla_df
    assert len(df) == 138_957
    assert df["user"].nunique() == 7_115
    assert list(df.columns) == ["user", "datetime", "lat", "lon", "venue"]
    # the NYC box of the data README (lon_min, lat_min, lon_max, lat_max)
    assert df["lon"].between(-74.2589, -73.7004).all() and df["lat"].between(40.4774, 40.9176).all()
    assert str(df["datetime"].dt.tz) == "UTC"


def test_gowalla_rows_match_hand_parse(gowalla, gowalla_df):
    with gzip.open(gowalla, "rt") as fh:
        lines = fh.read().splitlines()
    assert len(lines) == len(gowalla_df)
    for k in (0, 1, 70_000, len(lines) - 1):
        user, when, lat, lon, loc = lines[k].split("\t")
        row = gowalla_df.iloc[k]
        assert row["user"] == int(user) and row["venue"] == loc
        assert row["lat"] == float(lat) and row["lon"] == float(lon)
        want = datetime.strptime(when, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
        assert row["datetime"].to_pydatetime() == want


def test_plain_and_gz_agree(tmp_path, gowalla):
    with gzip.open(gowalla, "rt") as fh:
        head = [next(fh) for _ in range(500)]
    plain = tmp_path / "loc-gowalla_totalCheckins.txt"
    plain.write_text("".join(head))
    zipped = tmp_path / "loc-gowalla_totalCheckins.txt.gz"
    with gzip.open(zipped, "wt") as fh:
        fh.write("".join(head))
    a, b = read_checkins(plain), read_checkins(zipped)
    pd.testing.assert_frame_equal(a, b)
    assert len(a) == 500
    assert read_checkins(plain, format="auto").equals(a)


@pytest.fixture
def foursquare_file(tmp_path):
    f = tmp_path / "dataset_TSMC2014_NYC.txt"
    f.write_text("".join("\t".join(r) + "\r\n" for r in FOURSQUARE_ROWS), encoding="utf-8")
    return f


def test_foursquare_layout(foursquare_file):
    df = read_checkins(foursquare_file, format="foursquare")
    assert list(df.columns) == ["user", "datetime", "lat", "lon", "venue", "category_id",
                                "category", "tz_offset_min"]
    assert df["user"].tolist() == [int(r[0]) for r in FOURSQUARE_ROWS]
    assert df["venue"].tolist() == [r[1] for r in FOURSQUARE_ROWS]
    assert df["category"].tolist() == [r[3] for r in FOURSQUARE_ROWS]
    np.testing.assert_array_equal(df["lat"], [float(r[4]) for r in FOURSQUARE_ROWS])
    np.testing.assert_array_equal(df["lon"], [float(r[5]) for r in FOURSQUARE_ROWS])
    assert df["tz_offset_min"].tolist() == [-240, -240, -240, -300]
    assert df["datetime"].iloc[0].to_pydatetime() == datetime(2012, 4, 3, 18, 0, 9, tzinfo=UTC)
    assert df["datetime"].iloc[3].to_pydatetime() == datetime(2012, 4, 4, 1, 5, 10, tzinfo=UTC)
    pd.testing.assert_frame_equal(read_checkins(foursquare_file, format="auto"), df)


def test_foursquare_latin1_bytes_do_not_fail(tmp_path):
    f = tmp_path / "tky.txt"
    rows = [r[:] for r in FOURSQUARE_ROWS[:2]]
    f.write_bytes(("\t".join(rows[0]) + "\n").encode() + ("\t".join(rows[1][:3]) + "\tCaf\xe9\t"
                  + "\t".join(rows[1][4:]) + "\n").encode("latin-1"))
    df = read_checkins(f, format="foursquare")
    assert df["category"].tolist() == ["Arts & Crafts Store", "Caf\ufffd"]


@pytest.mark.parametrize("fmt, lineno, bad, words", [
    ("snap", 3, "7\t2010-10-12T00:21:28Z\t40.64\t-73.78", "expected 5"),
    ("snap", 2, "7\t2010-10-12T00:21:28Z\tnorth\t-73.78\t23261", "non-numeric"),
    ("snap", 4, "7\t2010-10-12 00:21:28\t40.64\t-73.78\t23261", "does not match"),
    ("snap", 3, "7\t2010-10-12T00:21:28Z\t40.64\t-273.78\t23261", "out of range"),
    ("snap", 2, "7\t2010-10-12T00:21:28Z\t40.64\t-73.78\t", "empty field"),
    ("foursquare", 2, "\t".join(FOURSQUARE_ROWS[0][:7] + ["2012-04-03 18:00:09"]), "does not match"),
])
def test_malformed_line_names_file_and_line(tmp_path, fmt, lineno, bad, words):
    good_snap = "0\t2010-10-12T00:21:28Z\t40.6438845363\t-73.78280639649999\t23261"
    good = good_snap if fmt == "snap" else "\t".join(FOURSQUARE_ROWS[0])
    lines = [good] * 5
    lines[lineno - 1] = bad
    f = tmp_path / "bad.txt"
    f.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=rf"bad.txt: line {lineno}: .*{words}"):
        read_checkins(f, format=fmt)


def test_bad_arguments(tmp_path, foursquare_file):
    with pytest.raises(ValueError, match="format must be one of"):
        read_checkins(foursquare_file, format="gowalla")
    with pytest.raises(FileNotFoundError):
        read_checkins(tmp_path / "missing.txt")
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    with pytest.raises(ValueError, match="no check-ins"):
        read_checkins(empty)
    # a Foursquare file read as SNAP: wrong field count on line 1
    with pytest.raises(ValueError, match="line 1: expected 5"):
        read_checkins(foursquare_file, format="snap")
