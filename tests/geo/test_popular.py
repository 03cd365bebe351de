"""Grid and popular-cell spaces (seed imola2022 section 5.1) on the real Geolife and Gowalla data."""

import math

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics.pairwise import haversine_distances

from geo.checkins import read_checkins
from geo.geolife import read_geolife
from geo.grid import GEOLIFE_BEIJING_BOX, Grid
from geo.popular import (
    cell_popularity,
    load_cell_counts,
    popular_cells,
    space_from_spec,
    trace_cell_counts,
)
from mdp.spaces.metric_space import EARTH_RADIUS_KM
from mdp.spaces.specs import load_space


@pytest.fixture(scope="module")
def npz(shared_data):
    return shared_data / "geolife_beijing_cells_0p005.npz"


@pytest.fixture(scope="module")
def counts(npz):
    return load_cell_counts(npz)


@pytest.fixture(scope="module")
def beijing():
    return Grid(*GEOLIFE_BEIJING_BOX, 0.005)


def _pandas_popularity(counts: pd.DataFrame, top: int) -> pd.DataFrame:
    """Independent implementation: sort, groupby-head, value_counts."""
    ranked = counts.sort_values(["trace", "count", "cell_id"], ascending=[True, False, True])
    hist = ranked.groupby("trace").head(top)["cell_id"].value_counts()
    out = hist.rename("traces").rename_axis("cell_id").reset_index()
    return out.sort_values(["traces", "cell_id"], ascending=[False, True], ignore_index=True)


# -- grid ---------------------------------------------------------------------------------------
def test_grid_shape_and_corners(beijing):
    assert (beijing.nrows, beijing.ncols) == (140, 180)
    assert beijing.cell_of(39.6, 115.9) == 0
    assert beijing.cell_of(40.2999999, 116.7999999) == 140 * 180 - 1
    # row counts northward, column eastward: one cell north = +180, one east = +1
    assert beijing.cell_of(39.6051, 115.9001) == 180
    assert beijing.cell_of(39.6001, 115.9051) == 1
    np.testing.assert_allclose(beijing.centres([0, 181]), [[39.6025, 115.9025], [39.6075, 115.9075]])
    assert beijing.labels([0, 181, 140 * 180 - 1]) == ["r0c0", "r1c1", "r139c179"]


def test_grid_roundtrips(beijing):
    ids = np.random.default_rng(0).integers(0, beijing.ncells, 500)
    c = beijing.centres(ids)
    np.testing.assert_array_equal(beijing.cell_of(c[:, 0], c[:, 1]), ids)
    np.testing.assert_array_equal(beijing.ids_of_labels(beijing.labels(ids)), ids)


def test_grid_distances_closed_form_and_sklearn(beijing):
    # Same column, one row apart: a meridian arc of 0.005 deg.
    D = beijing.distances_km([0, 180])
    assert D[0, 1] == pytest.approx(EARTH_RADIUS_KM * math.radians(0.005), rel=1e-12)
    ids = np.array([0, 5_000, 12_345, 25_199])
    c = np.radians(beijing.centres(ids))
    np.testing.assert_allclose(beijing.distances_km(ids), haversine_distances(c) * EARTH_RADIUS_KM,
                               rtol=1e-9, atol=1e-9)


def test_grid_outside_points(beijing):
    with pytest.raises(ValueError, match=r"2 point\(s\) outside the grid box.*first: index 1"):
        beijing.cell_of([40.0, 40.3, 39.0], [116.0, 116.0, 116.0])
    np.testing.assert_array_equal(beijing.contains([40.0, 40.3, 39.6], [116.0, 116.0, 116.8]),
                                  [True, False, False])
    with pytest.raises(ValueError, match="out of range"):
        beijing.centres([140 * 180])


def test_grid_bad_arguments():
    with pytest.raises(ValueError, match="cell_deg must be > 0"):
        Grid(39.6, 40.3, 115.9, 116.8, 0)
    with pytest.raises(ValueError, match="lat_min < lat_max"):
        Grid(40.3, 39.6, 115.9, 116.8, 0.005)
    with pytest.raises(ValueError, match="box must be"):
        Grid.from_box([1, 2, 3], 0.005)
    with pytest.raises(ValueError, match="disagrees"):
        Grid.from_box([39.6, 40.3, 115.9, 116.8, 0.005], 0.01)


def test_covering_grid_contains_every_point():
    lat = np.array([40.4774, 40.9176, 40.6])
    lon = np.array([-74.2589, -73.7004, -74.0])
    g = Grid.covering(lat, lon, 0.005)
    assert g.contains(lat, lon).all()
    assert g.lat_min <= 40.4774 < g.lat_min + 0.005 and g.lon_min <= -74.2589 < g.lon_min + 0.005
    assert round(g.lat_min / 0.005, 6) == round(g.lat_min / 0.005)


# -- popularity on the compact file ---------------------------------------------------------------
def test_compact_file_popularity_matches_seed_figures(counts):
    table, grid = counts
    assert grid.box == GEOLIFE_BEIJING_BOX and grid.cell_deg == 0.005
    assert table["trace"].nunique() == 17_246
    ranking = cell_popularity(table)
    assert 7_000 <= len(ranking) <= 7_400  # "about 7.2k distinct cells"
    traces = ranking["traces"].to_numpy()
    assert 593 <= traces[99] <= 596
    assert 115 <= traces[499] <= 116
    assert traces[999] == 41
    assert 11 <= traces[1999] <= 12
    pd.testing.assert_frame_equal(ranking, _pandas_popularity(table, 30), check_dtype=False)


def test_tie_breaking_by_cell_id_brute_force():
    # top-2 per trace, ties -> smaller cell id:
    # trace 0: 2 and 5 tie at 3 points, both kept, 9 dropped      -> {2, 5}
    # trace 1: 9, 7, 8 tie at 4 points, the two smallest ids kept -> {7, 8}
    # trace 2: 5 (8 points), then 2 and 1 tie at 7: 1 wins          -> {5, 1}
    # histogram 5: 2 traces; 1, 2, 7, 8: 1 trace each (ties -> smaller id first)
    table = pd.DataFrame({"trace": [0, 0, 0, 1, 1, 1, 2, 2, 2],
                          "cell_id": [5, 2, 9, 9, 7, 8, 5, 2, 1],
                          "count": [3, 3, 1, 4, 4, 4, 8, 7, 7]})
    rank = cell_popularity(table, top_per_trace=2)
    assert rank["cell_id"].tolist() == [5, 1, 2, 7, 8] and rank["traces"].tolist() == [2, 1, 1, 1, 1]
    # a 4 x 4 grid of 0.5 deg cells: id = 4 row + col
    space = popular_cells(table, n=3, top_per_trace=2, box=(0, 2, 0, 2), cell_deg=0.5)
    assert space.labels.tolist() == ["r1c1", "r0c1", "r0c2"]
    np.testing.assert_allclose(space.points, [[0.75, 0.75], [0.25, 0.75], [0.25, 1.25]])
    with pytest.raises(ValueError, match="cell_id must be in"):
        popular_cells(table, n=3, top_per_trace=2, box=(0, 1, 0, 1), cell_deg=0.5)


def test_compact_file_spaces(npz, counts):
    table, grid = counts
    ranking = cell_popularity(table)
    for n in (50, 500):
        space = popular_cells(npz, n=n)
        ids = ranking["cell_id"].to_numpy()[:n]
        assert space.n == n and space.metric == "haversine"
        assert space.labels.tolist() == grid.labels(ids)
        np.testing.assert_allclose(space.points, grid.centres(ids))
        np.testing.assert_allclose(space.distances,
                                   haversine_distances(np.radians(space.points)) * EARTH_RADIUS_KM,
                                   rtol=1e-9, atol=1e-9)
    # the most popular cell holds Tsinghua/Zhongguancun area (lat ~39.98, lon ~116.33)
    assert space.points[0] == pytest.approx([39.9775, 116.3325])


def test_plt_and_counts_give_the_same_cells(shared_data, counts, beijing):
    table, _ = counts
    sample = shared_data / "geolife_sample"
    frame = read_geolife(sample)
    from_plt = trace_cell_counts(frame, beijing)
    # map the four fixture traces to their rows in the compact file
    user, start = table.attrs["trace_user"], table.attrs["trace_start"]
    keys = frame[["user", "trace"]].drop_duplicates().sort_values(["user", "trace"])
    index = [int(np.flatnonzero((user == int(u)) & (start == int(t)))[0]) for u, t in keys.to_numpy()]
    assert index == [0, 1, 171, 172]
    sub = table[table["trace"].isin(index)].copy()
    sub["trace"] = sub["trace"].map({t: k for k, t in enumerate(index)})
    pd.testing.assert_frame_equal(from_plt.reset_index(drop=True), sub.reset_index(drop=True),
                                  check_dtype=False)
    # the same spaces from the PLT tree, the points frame and the count table
    for top in (5, 30):
        nmax = len(cell_popularity(sub, top_per_trace=top))
        a = popular_cells(sample, n=nmax, top_per_trace=top)
        b = popular_cells(frame, n=nmax, top_per_trace=top, box=GEOLIFE_BEIJING_BOX)
        c = popular_cells(sub, n=nmax, top_per_trace=top, box=GEOLIFE_BEIJING_BOX)
        assert a.labels.tolist() == b.labels.tolist() == c.labels.tolist()
        np.testing.assert_array_equal(a.distances, c.distances)
    assert nmax == sub["cell_id"].nunique()  # fewer than 30 cells per trace: all kept


def test_checkins_each_user_is_a_trace(shared_data):
    frame = read_checkins(shared_data / "gowalla_nyc_checkins.txt.gz")
    space = popular_cells(frame[["user", "lat", "lon"]], n=100)
    grid = Grid.covering(frame["lat"], frame["lon"], 0.005)
    cells = grid.cell_of(frame["lat"].to_numpy(), frame["lon"].to_numpy())
    per_user = pd.DataFrame({"trace": frame["user"], "cell_id": cells}).value_counts().rename("count").reset_index()
    expected = _pandas_popularity(per_user, 30)["cell_id"].to_numpy()[:100]
    assert space.labels.tolist() == grid.labels(expected)
    spec = space_from_spec(f"checkins:{shared_data / 'gowalla_nyc_checkins.txt.gz'}:100")
    assert spec.labels.tolist() == space.labels.tolist()


def test_spec_strings(npz):
    a = load_space(f"geolife:{npz}:60")
    b = popular_cells(npz, n=60)
    assert a.labels.tolist() == b.labels.tolist()
    with pytest.raises(ValueError, match="N must be an integer"):
        space_from_spec(f"geolife:{npz}:many")
    with pytest.raises(ValueError, match="geolife:PATH:N"):
        space_from_spec("geolife:50")
    with pytest.raises(FileNotFoundError):
        space_from_spec("geolife:/no/such/file.npz:50")


def test_bad_input(npz, counts, shared_data):
    ncells = len(cell_popularity(counts[0]))
    with pytest.raises(ValueError, match=rf"n must be <= .*\({ncells} inside box.*got 8000"):
        popular_cells(npz, n=8000)
    with pytest.raises(ValueError, match="n must be >= 2"):
        popular_cells(npz, n=1)
    with pytest.raises(ValueError, match="cell_deg must be the file's 0.005"):
        popular_cells(npz, n=50, cell_deg=0.01)
    with pytest.raises(ValueError, match="box must be None or the file's box"):
        popular_cells(npz, n=50, box=(39.0, 41.0, 115.0, 117.0))
    with pytest.raises(ValueError, match="box is required"):
        popular_cells(counts[0], n=50)
    with pytest.raises(ValueError, match="'trace' and/or 'user'"):
        popular_cells(pd.DataFrame({"lat": [40.0, 40.1], "lon": [116.0, 116.1]}), n=2)
    with pytest.raises(TypeError, match="source must be"):
        popular_cells(42, n=50)
    with pytest.raises(ValueError, match="n must be <= .*\\(33 inside"):
        popular_cells(shared_data / "geolife_sample", n=40)


def test_malformed_plt_tree(tmp_path, shared_data):
    sample = shared_data / "geolife_sample" / "Data"
    for user in ("000", "001"):
        (tmp_path / user / "Trajectory").mkdir(parents=True)
        for f in (sample / user / "Trajectory").glob("*.plt"):
            (tmp_path / user / "Trajectory" / f.name).write_text(f.read_text())
    bad = tmp_path / "000" / "Trajectory" / "20081024020959.plt"
    lines = bad.read_text().splitlines()
    lines[19] = "39.9,116.3,0,492"
    bad.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=r"20081024020959.plt: line 20: expected 7"):
        popular_cells(tmp_path, n=10)
    with pytest.warns(UserWarning, match="line 20"):
        skipped = popular_cells(tmp_path, n=10, on_error="skip")
    good = read_geolife(shared_data / "geolife_sample")
    good = good[good["trace"] != "20081024020959"]
    same = popular_cells(good, n=10, box=GEOLIFE_BEIJING_BOX)
    assert skipped.labels.tolist() == same.labels.tolist()
    with pytest.raises(ValueError, match="on_error must be"):
        popular_cells(tmp_path, n=10, on_error="ignore")
