"""The synthetic check-in log: its model's figures, and a round trip through the SNAP reader."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from geo.checkins import read_checkins
from geo.federated.data import NYC_BOX
from geo.synthetic_checkins import synthetic_checkins, write_snap_checkins
from mdp.errors import ParameterError, ParameterTypeError


def test_same_seed_same_log_and_points_in_the_box():
    a = synthetic_checkins(300, 12, rng=5)
    b = synthetic_checkins(300, 12, rng=5)
    assert a.equals(b)
    assert not a.equals(synthetic_checkins(300, 12, rng=6))
    lon0, lat0, lon1, lat1 = NYC_BOX
    assert a.lon.between(lon0, lon1).all() and a.lat.between(lat0, lat1).all()
    assert sorted(a.user.unique()) == list(range(300))
    assert a.datetime.min().year >= 2009 and a.datetime.max().year <= 2010


def test_counts_follow_the_model():
    """Each user makes 1 + Poisson(c - 1) check-ins: the total is Poisson(users (c - 1)) + users."""
    users, c = 2000, 15
    log = synthetic_checkins(users, c, rng=1)
    extra = len(log) - users
    lo, hi = stats.poisson.ppf([1e-6, 1 - 1e-6], users * (c - 1))
    assert lo <= extra <= hi
    assert log.groupby("user").size().min() >= 1


def test_local_share():
    """With local = 1 every check-in is at a venue of one hotspot, so a user's spread is small;
    with local = 0 check-ins are drawn over the whole city."""
    near = synthetic_checkins(400, 20, local=1.0, hotspots=20, spread=0.005, rng=2)
    far = synthetic_checkins(400, 20, local=0.0, hotspots=20, spread=0.005, rng=2)
    spread_near = near.groupby("user")[["lat", "lon"]].std().mean().mean()
    spread_far = far.groupby("user")[["lat", "lon"]].std().mean().mean()
    assert spread_near < 0.03 < spread_far


def test_round_trip_through_the_snap_reader(tmp_path):
    log = synthetic_checkins(50, 6, rng=3)
    for name in ("log.txt", "log.txt.gz"):
        back = read_checkins(write_snap_checkins(log, tmp_path / name))
        assert np.array_equal(back.lat.to_numpy(), log.lat.to_numpy())
        assert np.array_equal(back.lon.to_numpy(), log.lon.to_numpy())
        assert (back.user.to_numpy() == log.user.to_numpy()).all()
        assert (back.venue.to_numpy() == log.venue.to_numpy()).all()
        assert (back.datetime.to_numpy() == log.datetime.dt.floor("s").to_numpy()).all()


@pytest.mark.parametrize("kwargs", [dict(users=0), dict(checkins=-1), dict(local=1.5),
                                    dict(spread=0.0), dict(zipf=float("nan"))])
def test_bad_parameters_are_named(kwargs):
    with pytest.raises(ParameterError) as info:
        synthetic_checkins(**kwargs)
    assert next(iter(kwargs)) in str(info.value)


def test_bad_types_are_named():
    with pytest.raises(ParameterTypeError, match="users"):
        synthetic_checkins(users=2.5)
