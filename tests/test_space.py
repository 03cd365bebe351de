import numpy as np
import pytest

from mdp import MetricSpace
from mdp.space import haversine_km


def test_from_points_euclidean_matches_scipy():
    from scipy.spatial.distance import pdist, squareform

    P = np.random.default_rng(0).normal(size=(12, 3))
    s = MetricSpace.from_points(P, labels=[f"p{i}" for i in range(12)])
    np.testing.assert_allclose(s.distances, squareform(pdist(P)), atol=1e-12)
    assert s.n == 12 and s.points.shape == (12, 3) and s.labels[3] == "p3"


def test_haversine_known_distance():
    # Paris (48.8566, 2.3522) to London (51.5074, -0.1278): 343.5 km on the mean sphere.
    d = haversine_km(np.array([[48.8566, 2.3522]]), np.array([[51.5074, -0.1278]]))[0, 0]
    assert d == pytest.approx(343.5, abs=1.0)
    # One degree of latitude is R * pi / 180.
    d1 = haversine_km(np.array([[10.0, 20.0]]), np.array([[11.0, 20.0]]))[0, 0]
    assert d1 == pytest.approx(6371.0088 * np.pi / 180, rel=1e-12)
    s = MetricSpace.from_points([[39.9, 116.4], [40.0, 116.4], [39.9, 116.5]], metric="haversine")
    assert s.metric == "haversine" and s.distances[0, 1] == pytest.approx(d1 / 10, rel=1e-9)


def test_callable_metric():
    s = MetricSpace.from_points([[0, 0], [3, 4], [6, 8]], metric=lambda a, b: np.abs(a - b).sum())
    assert s.distances[0, 1] == 7 and s.distances[0, 2] == 14


def test_from_distances_keeps_labels_and_no_points():
    D = np.array([[0, 1, 2], [1, 0, 1], [2, 1, 0]], dtype=float)
    s = MetricSpace.from_distances(D, labels=["a", "b", "c"])
    assert s.points is None and s.index_of("c") == 2 and list(s.index_of(["b", "a"])) == [1, 0]
    assert s.label_of(1) == "b"
    with pytest.raises(ValueError):
        s.distances[0, 1] = 5  # read-only


@pytest.mark.parametrize("D, msg", [
    (np.array([[0, np.nan], [np.nan, 0]]), "finite"),
    (np.array([[0, np.inf], [np.inf, 0]]), "finite"),
    (np.array([[0, 1.0], [2.0, 0]]), "symmetric"),
    (np.array([[1.0, 1], [1, 0]]), "zero diagonal"),
    (np.array([[0, -1.0], [-1.0, 0]]), "non-negative"),
    (np.array([[0, 1, 5], [1, 0, 1], [5, 1, 0]], dtype=float), "triangle inequality"),
    (np.array([[0.0]]), "at least 2"),
    (np.zeros((2, 3)), "square"),
    (np.array([[0, 0.0], [0.0, 0]]), "positive distance"),
])
def test_invalid_distances(D, msg):
    with pytest.raises(ValueError, match=msg):
        MetricSpace.from_distances(D)


def test_invalid_labels_and_points():
    D = np.array([[0, 1.0], [1.0, 0]])
    with pytest.raises(ValueError, match="unique"):
        MetricSpace.from_distances(D, labels=["a", "a"])
    with pytest.raises(ValueError, match="length n=2"):
        MetricSpace.from_distances(D, labels=["a"])
    with pytest.raises(ValueError, match="at least 2"):
        MetricSpace.from_points([[1.0, 2.0]])
    with pytest.raises(ValueError, match="finite"):
        MetricSpace.from_points([[1.0, np.nan], [0, 0]])
    with pytest.raises(ValueError, match="lat"):
        MetricSpace.from_points([[100.0, 0], [0, 0]], metric="haversine")


def test_unknown_label_and_index():
    s = MetricSpace.from_distances(np.array([[0, 1.0], [1.0, 0]]), labels=["x", "y"])
    with pytest.raises(KeyError, match="unknown label 'zz'"):
        s.index_of("zz")
    t = MetricSpace.from_distances(np.array([[0, 1.0], [1.0, 0]]))
    with pytest.raises(KeyError, match="out of range"):
        t.index_of(5)


def test_haversine_longitude_and_pole_spellings_are_one_point():
    from mdp.errors import ParameterError

    # lon 180 and -180 (and any longitude at a pole) name one location: an exact duplicate,
    # refused with a clear message instead of two points ~1e-12 km apart
    for pts in ([[10.0, 180.0], [10.0, -180.0], [20.0, 30.0]], [[90.0, 10.0], [90.0, -50.0], [0.0, 0.0]]):
        with pytest.raises(ParameterError, match="duplicates"):
            MetricSpace.from_points(pts, metric="haversine")
    s = MetricSpace.from_points([[10.0, 179.9], [10.0, 180.0], [10.0, -179.9]], metric="haversine")
    assert s.points[1, 1] == -180.0 and s.points[0, 1] == 179.9          # others untouched
    assert s.distances[0, 2] == pytest.approx(haversine_km(np.array([[10.0, 0.0]]),
                                                           np.array([[10.0, 0.2]]))[0, 0], rel=1e-9)
    assert s.distances[0, 1] == pytest.approx(haversine_km(np.array([[10.0, 0.0]]),
                                                           np.array([[10.0, 0.1]]))[0, 0], rel=1e-9)


def test_median_distance_over_distinct_pairs():
    pts = np.array([[0.0, 0.0], [3.0, 0.0], [0.0, 4.0], [3.0, 4.0]])
    space = MetricSpace.from_points(pts)
    # pairs: 3, 4, 5, 5, 4, 3 -> median 4 (the zero diagonal does not count)
    assert space.median_distance == 4.0
