"""Bad input gets a toolkit error, from Python and from the command line, and never echoes it.

Each case is a call that once ended in a raw NumPy, pandas or Python error (``ValueError:
arange: cannot compute length``, ``OverflowError``, ``AttributeError: 'list' object has no
attribute 'columns'``, a UTF-8 error naming no file) or echoed a private location.
"""

from __future__ import annotations

import contextlib
import io
import math

import numpy as np
import pandas as pd
import pytest

import geo
import mdp
from mdp.cli.main import build_parser
from mdp.errors import MDPError
from mdp.plugins import COMMANDS

VIENNA = np.array([(48.2082, 16.3738), (48.2106, 16.3645), (48.2035, 16.3690),
                   (48.2185, 16.3725)])
#: A coordinate that appears in no valid input of the cases below: a message holding it echoed
#: a private input.
SECRET = 48.3012


@pytest.fixture(scope="module")
def geo_mech():
    return mdp.build("exponential", mdp.MetricSpace.from_points(VIENNA, metric="haversine"), 2.0)


@pytest.fixture(scope="module")
def plain_mech():
    space = mdp.MetricSpace.from_points(np.random.default_rng(0).uniform(size=(6, 2)))
    return mdp.build("exponential", space, 2.0)


def _api_cases(geo_mech, plain_mech, tmp_path):
    area = geo.LocalProjection(48.21, 16.37, 10.0)
    users = pd.DataFrame({"user": ["a", "b"], "lat": [48.2, 48.21], "lon": [16.37, 16.37]})
    return {
        "locations with NaN": lambda: geo.privatize_locations(geo_mech, [[math.nan, 16.0]]),
        "latitude 95": lambda: geo.privatize_locations(geo_mech, [[95.0, 16.0]]),
        "locations as text": lambda: geo.privatize_locations(geo_mech, "abc"),
        "one location as text": lambda: geo.privatize_location(geo_mech, "a", 1),
        "users as a list": lambda: geo.privatize_users([["a", 48.2, 16.3]], geo_mech),
        "users with NaN": lambda: geo.privatize_users(users.assign(lat=[math.nan, 48.2]),
                                                      geo_mech),
        "users at latitude 95": lambda: geo.privatize_users(users.assign(lat=[95.0, 48.2]),
                                                           geo_mech),
        "users on a plane": lambda: geo.privatize_users(users, plain_mech),
        "users with a name": lambda: geo.privatize_users(users, "mech"),
        "far location": lambda: geo.privatize_locations(geo_mech, [[SECRET, 16.5551]]),
        "planar Laplace outside": lambda: geo.planar_laplace([[SECRET, 16.5551]], 2.8,
                                                             area=geo.LocalProjection(48.2, 16.37,
                                                                                      5.0)),
        "planar Laplace area as text": lambda: geo.planar_laplace([[48.2, 16.37]], 2.8,
                                                                  area="x"),
        "planar Laplace without area": lambda: geo.planar_laplace([[48.2, 16.37]], 2.8),
        "planar Laplace grid 1e-12": lambda: geo.planar_laplace(
            [[48.2, 16.37]], 2.8, area=area, settings=geo.PlanarLaplaceSettings(grid_m=1e-12)),
        "index 10^30": lambda: plain_mech.sample(10**30),
        "indices 10^30": lambda: plain_mech.sample([1, 10**30]),
        "load None": lambda: mdp.load(None),
        "load 123": lambda: mdp.load(123),
        "save None": lambda: plain_mech.save(None),
        "save into a missing folder": lambda: plain_mech.save(tmp_path / "no" / "such" / "m.npz"),
        "lower bound of text": lambda: mdp.lower_bound("x", 1),
        "heatmap of text": lambda: geo.gaussian_heatmap("x", 1),
        "ConstOPTMech r >= n": lambda: mdp.build("constopt", plain_mech.space, 1.0, r=6),
    }


def test_every_bad_python_call_raises_a_toolkit_error(geo_mech, plain_mech, tmp_path):
    for name, call in _api_cases(geo_mech, plain_mech, tmp_path).items():
        with pytest.raises(MDPError) as err:
            call()
        assert str(SECRET) not in str(err.value), name
    assert not (tmp_path / "no").exists()                 # no folder created behind the user


def test_constopt_default_r_fits_small_spaces():
    for n in (2, 3, 10, 11):
        space = mdp.MetricSpace.from_points(np.random.default_rng(n).uniform(size=(n, 2)))
        mech = mdp.build("constopt", space, 1.0)
        assert mech.matrix.shape == (n, n)
        assert mech.eps_tight() <= 1.0 * (1 + 1e-9)


@pytest.fixture
def files(tmp_path):
    (tmp_path / "mine.csv").write_text("lat,lon\n" + "".join(f"{a},{b}\n" for a, b in VIENNA))
    (tmp_path / "bad-utf8.csv").write_bytes(b"lat,lon\n\xff\xfe1,2\n")
    (tmp_path / "far.csv").write_text("lat,lon\n1e308,2\n")
    (tmp_path / "pts.csv").write_text("user,lon,lat\nu1,16.37,48.2\nu2,16.38,48.21\n")
    mdp.build("exponential", mdp.MetricSpace.from_points(VIENNA, metric="haversine"),
              2.0).save(tmp_path / "places.npz")
    return tmp_path


def _run(argv) -> BaseException | int:
    """What ``mdp ARGV`` raised (or its exit code), without ``main``'s handler."""
    args = build_parser().parse_args(argv)
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            run = args.plugin.run if getattr(args, "plugin", None) is not None else args.func
            return run(args)
        except BaseException as exc:          # noqa: BLE001 (the test inspects it)
            return exc


@pytest.mark.parametrize("argv", [
    ["curves", "--space", "{d}/mine.csv", "--eps-tight", "1e308", "-o", "{d}/c"],
    ["curves", "--space", "{d}/mine.csv", "--eps-tight", "1", "-o", "{d}/no/such/dir"],
    ["heatmap", "{d}/pts.csv", "--epsilon", "1", "--bounds", "-1e308", "1e308", "0", "1", "-o",
     "{d}/h.png"],
    ["heatmap", "{d}/pts.csv", "--epsilon", "1", "--bounds", "1", "0", "0", "1", "-o",
     "{d}/h.png"],
    ["heatmap", "{d}/pts.csv", "--epsilon", "1", "--bounds", "16", "17", "48", "49", "-o",
     "{d}/h.xyz"],
    ["map", "--privatized", "{d}/bad-utf8.csv", "-o", "{d}/m.html"],
    ["map", "--privatized", "{d}/far.csv", "-o", "{d}/m.html"],
    ["build", "--space", "{d}/mine.csv", "--mechanism", "exponential", "--epsilon", "1", "-o",
     "{d}/no/such/m.npz"],
    ["build", "--space", "glove:1e9", "--mechanism", "exponential", "--epsilon", "1", "-o",
     "{d}/m.npz"],
    ["privatize", "{d}/places.npz", "--users", "{d}/bad-utf8.csv"],
    ["heatsource", "--n", "10", "--m", "5", "--T", "1e308"],
])
def test_every_bad_command_line_gets_a_toolkit_error(argv, files):
    for name in ("heatmap", "map", "heatsource", "privatize-users"):
        assert name in COMMANDS.names()
    result = _run([a.replace("{d}", str(files)) for a in argv])
    assert isinstance(result, MDPError), f"{type(result).__name__}: {result}"
    assert "places.npz" not in str(result)          # the file at fault is named, not another
    assert not (files / "no").exists()


def test_constopt_default_on_three_points_from_the_command_line(files):
    (files / "three.csv").write_text("x,y\n0,0\n1,0\n0,1\n")
    assert _run(["build", "--space", str(files / "three.csv"), "--mechanism", "constopt",
                 "--epsilon", "1", "-o", str(files / "c.npz")]) == 0
