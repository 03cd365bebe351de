"""Privatizing lat/lon locations with a mechanism on a popular-cell space."""

import numpy as np
import pytest
from scipy.stats import chisquare
from sklearn.metrics.pairwise import haversine_distances

import mdp
from geo.grid import GEOLIFE_BEIJING_BOX, Grid
from geo.locations import grid_of_space, locate, parse_latlon_lines
from geo.popular import popular_cells
from geo.release import privatize_latlon_lines, privatize_location, privatize_locations
from mdp.loading import load
from mdp.privatize import privatize_inputs
from mdp.spaces.metric_space import EARTH_RADIUS_KM, MetricSpace


@pytest.fixture(scope="module")
def space(shared_data):
    return popular_cells(shared_data / "geolife_beijing_cells_0p005.npz", n=60)


@pytest.fixture(scope="module")
def mech(space):
    return mdp.build("exponential", space, 2.0)


@pytest.fixture(scope="module")
def beijing():
    return Grid(*GEOLIFE_BEIJING_BOX, 0.005)


def _nearest_by_sklearn(space, P):
    D = haversine_distances(np.radians(P), np.radians(space.points)) * EARTH_RADIUS_KM
    return D.argmin(axis=1)


def test_grid_recovered_from_space(space):
    g = grid_of_space(space)
    assert (g.lat_min, g.lon_min, g.cell_deg) == (39.6, 115.9, 0.005)


def test_points_in_space_cells_map_to_their_cell(space, beijing):
    rng = np.random.default_rng(1)
    # random points strictly inside each space cell
    P = np.repeat(space.points, 20, axis=0) + rng.uniform(-0.00249, 0.00249, (space.n * 20, 2))
    idx = locate(space, P)
    np.testing.assert_array_equal(idx, np.repeat(np.arange(space.n), 20))
    # the same through the Beijing grid directly
    labels = beijing.labels(beijing.cell_of(P[:, 0], P[:, 1]))
    assert [space.labels[i] for i in idx] == labels


def test_points_outside_space_snap_to_nearest_centre(space, beijing):
    rng = np.random.default_rng(2)
    P = np.column_stack([rng.uniform(39.6, 40.3, 3000), rng.uniform(115.9, 116.8, 3000)])
    labels = beijing.labels(beijing.cell_of(P[:, 0], P[:, 1]))
    outside = np.array([lab not in set(space.labels) for lab in labels])
    assert outside.sum() > 2500
    np.testing.assert_array_equal(locate(space, P[outside], snap=True),
                                  _nearest_by_sklearn(space, P[outside]))
    far = np.array([[31.23, 121.47], [-33.9, 151.2]])  # Shanghai, Sydney: outside the box
    np.testing.assert_array_equal(locate(space, far, snap=True), _nearest_by_sklearn(space, far))
    # by default a location far outside the mechanism's area is refused, by position only
    with pytest.raises(ValueError, match=r"^inputs 1 and 2 \(2 of 2\): farther than "
                                         r"max_snap_km = [0-9.]+ km from every point") as info:
        locate(space, far)
    assert "31.2" not in str(info.value) and "121" not in str(info.value)
    with pytest.raises(ValueError, match=r"^input 3 \(of 3\): farther than max_snap_km"):
        locate(space, np.vstack([space.points[:2], far[:1]]))
    # within the threshold it snaps to the nearest centre, as with snap=True
    near = space.points[:3] + [0.0, 0.004]
    np.testing.assert_array_equal(locate(space, near, max_snap_km=2.0),
                                  _nearest_by_sklearn(space, near))
    with pytest.raises(ValueError, match=r"^inputs 1 and 2 \(2 of 2\): in no cell of the space"):
        locate(space, far, strict=True)


def test_outputs_follow_the_mechanism_row(space, mech):
    u = 7
    lat, lon = space.points[u] + 0.001
    out = privatize_locations(mech, np.tile([lat, lon], (20_000, 1)), rng=3)
    # every output is a cell centre; their frequencies follow row u of the matrix
    lookup = {tuple(p): i for i, p in enumerate(space.points.tolist())}
    idx = np.array([lookup[tuple(p)] for p in out.tolist()])
    observed = np.bincount(idx, minlength=space.n)
    expected = mech.matrix[u] * len(idx)
    keep = expected >= 5
    stat = chisquare(np.r_[observed[keep], observed[~keep].sum()],
                     np.r_[expected[keep], expected[~keep].sum()])
    assert stat.pvalue > 1e-3
    assert privatize_location(mech, lat, lon, rng=4) == tuple(privatize_locations(mech, [lat, lon], rng=4)[0])


def test_latlon_lines_and_privatize_dispatch(space, mech, tmp_path):
    lines = ["39.9775,116.3325", " 40.05 , 116.40", "31.23,121.47"]
    with pytest.raises(ValueError, match="farther than max_snap_km"):
        privatize_latlon_lines(mech, lines, rng=5)
    got = privatize_latlon_lines(mech, lines, rng=5, snap=True)
    centres = {f"{a:.6f},{b:.6f}" for a, b in space.points}
    assert len(got) == 3 and set(got) <= centres
    assert got == privatize_latlon_lines(mech, lines, rng=5, snap=True)
    # through mdp privatize's dispatcher, after a save/load round trip (labels come back as str)
    path = mech.save(tmp_path / "geo.npz")
    loaded = load(path)
    assert grid_of_space(loaded.space) is not None
    assert privatize_inputs(loaded, lines, rng=5, snap=True) == got


def test_bad_lines_and_spaces(space, mech):
    with pytest.raises(ValueError, match="line 2: expected 'lat,lon'"):
        parse_latlon_lines(["39.9,116.3", "39.9;116.3"])
    with pytest.raises(ValueError, match="line 1: .*out of range"):
        parse_latlon_lines(["95,116.3"])
    with pytest.raises(ValueError, match=r"not so: input 2 \(of 2\)$") as info:
        locate(space, [[39.9, 116.3], [np.nan, 116.3]])
    assert "116.3" not in str(info.value)
    euclid = MetricSpace.from_points([[0, 0], [1, 1]])
    with pytest.raises(ValueError, match="haversine space"):
        locate(euclid, [[0.5, 0.5]])


def test_space_without_cell_labels_uses_nearest_centre():
    pts = np.array([[39.9, 116.3], [40.0, 116.4], [39.95, 116.5]])
    named = MetricSpace.from_points(pts, metric="haversine", labels=["a", "b", "c"])
    assert grid_of_space(named) is None
    P = np.array([[39.91, 116.31], [39.96, 116.49], [40.1, 116.4]])
    np.testing.assert_array_equal(locate(named, P, snap=True), _nearest_by_sklearn(named, P))
    # cell-like labels whose centres do not fit one grid: also nearest centre
    odd = MetricSpace.from_points(pts, metric="haversine", labels=["r0c0", "r0c1", "r5c9"])
    assert grid_of_space(odd) is None
