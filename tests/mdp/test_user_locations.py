"""A privacy engineer's own lat/lon points, end to end through the command line."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import mdp
from mdp.cli.main import main
from mdp.spaces.metric_space import haversine_km

# a few places in Vienna (lat, lon), 0.5-5 km apart
VIENNA = [(48.2082, 16.3738), (48.2106, 16.3645), (48.2035, 16.3690), (48.2185, 16.3725),
          (48.1986, 16.3695), (48.2150, 16.3850), (48.2000, 16.3900), (48.2250, 16.3600)]


def run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def places(tmp_path):
    path = tmp_path / "places.csv"
    # columns in lon, lat order with a label column: the header decides, not the position
    pd.DataFrame({"name": [f"p{i}" for i in range(len(VIENNA))],
                  "lon": [b for _, b in VIENNA], "lat": [a for a, _ in VIENNA]}).to_csv(path, index=False)
    return path


def test_latlon_csv_build_privatize_round_trip(places, tmp_path, capsys):
    out = tmp_path / "mech.npz"
    code, o, e = run(["build", "--space", str(places), "--metric", "haversine", "--mechanism",
                      "exponential", "--epsilon", "2", "--seed", "1", "-o", str(out)], capsys)
    assert code == 0, e
    mech = mdp.load(out)
    assert mech.space.metric == "haversine"
    P = np.array(VIENNA)
    # distances are great-circle km between (lat, lon) points, whatever the column order
    np.testing.assert_allclose(mech.space.distances, haversine_km(P, P), rtol=1e-12)
    lines = ["48.2080,16.3740", "48.2105,16.3646", "48.1990,16.3700"]
    code, o, e = run(["privatize", str(out), *lines, "--seed", "3"], capsys)
    assert code == 0, e
    got = o.split()
    assert len(got) == 3
    centres = {f"{a:.6f},{b:.6f}" for a, b in VIENNA}
    assert set(got) <= centres                       # outputs are points of the space
    code, o2, _ = run(["privatize", str(out), *lines, "--seed", "3"], capsys)
    assert o2 == o


def test_far_location_is_refused_by_default(places, tmp_path, capsys):
    out = tmp_path / "mech.npz"
    assert run(["build", "--space", str(places), "--metric", "haversine", "--mechanism",
                "exponential", "--epsilon", "1", "-o", str(out)], capsys)[0] == 0
    beijing = "39.9042,116.4074"
    code, o, e = run(["privatize", str(out), beijing, "--seed", "1"], capsys)
    assert code == 2 and o == ""
    assert "line 1 (1 of 1 locations): farther than --max-snap-km" in e and "--snap" in e
    assert "39.9" not in e and "116.4" not in e                   # the location is private
    code, o, e = run(["privatize", str(out), beijing, "--seed", "1", "--snap"], capsys)
    assert code == 0 and o.strip() in {f"{a:.6f},{b:.6f}" for a, b in VIENNA}
    # a threshold large enough admits it too
    code, o, e = run(["privatize", str(out), beijing, "--max-snap-km", "10000"], capsys)
    assert code == 0


def test_lower_bound_and_degree_ranges_with_haversine(places, tmp_path, capsys):
    code, o, e = run(["lower-bound", "--space", str(places), "--metric", "haversine",
                      "--epsilon", "1"], capsys)
    assert code == 0 and " km" in o
    bad = tmp_path / "bad.csv"
    bad.write_text("lat,lon\n48.2,16.3\n95.0,16.3\n")
    code, o, e = run(["lower-bound", "--space", str(bad), "--metric", "haversine",
                      "--epsilon", "1"], capsys)
    assert code == 2 and "line 3" in e and str(bad) in e
