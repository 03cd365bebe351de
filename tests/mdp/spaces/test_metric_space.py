import numpy as np
import pytest

import mdp
from mdp import MetricSpace
from mdp.spaces.metric_space import haversine_km


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
    with pytest.raises(KeyError, match="input 1 \\(of 1\\): unknown label") as info:
        s.index_of("zz")
    assert "zz" not in str(info.value)                    # inputs are private: position only
    with pytest.raises(KeyError, match=r"inputs 2, 4 \(2 of 4\): unknown label") as info:
        s.index_of(["x", "secret1", "y", "secret2"])
    assert "secret" not in str(info.value)
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


# -- the resolution rule -------------------------------------------------------------------------
def test_points_one_ulp_apart_are_refused_at_construction_with_advice():
    # built, this space failed every build with a late PrivacyError ("6.95-mDP") and no advice
    with pytest.raises(mdp.errors.ParameterError, match=r"points 0 and 1 .*Merge them"):
        mdp.MetricSpace.from_points([[0.3], [0.30000000000000004], [0.7], [0.1]])
    x = 1e6
    with pytest.raises(mdp.errors.ParameterError, match="resolution"):
        mdp.MetricSpace.from_points([[x, 0.0], [np.nextafter(x, 2 * x), 0.0], [x + 5, 0.0]])
    with pytest.raises(mdp.errors.ParameterError, match="resolution"):
        mdp.MetricSpace.from_points([[45.0, 10.0], [45.0, np.nextafter(10.0, 11)], [46.0, 10.0]],
                                    metric="haversine")


def test_close_but_resolved_points_build_a_mechanism():
    sp = mdp.MetricSpace.from_points([[0.3], [0.3 + 1e-9], [0.7], [0.1]])
    m = mdp.build("exponential", sp, 5.0)
    assert m.stats["privacy"]["verified"]
    # the rule's limit sits at 2^-40 of the scale
    from mdp.spaces.resolution import RESOLUTION

    assert 1e-9 / 0.7 > 1000 * RESOLUTION


# -- great-circle distances against 60-digit arithmetic --------------------------------------------
def _reference_km(p, q):
    import mpmath

    with mpmath.workdps(60):
        f1, l1, f2, l2 = (mpmath.mpf(float(v)) * mpmath.pi / 180 for v in (*p, *q))
        h = mpmath.sin((f2 - f1) / 2) ** 2 + mpmath.cos(f1) * mpmath.cos(f2) * mpmath.sin((l2 - l1) / 2) ** 2
        return 2 * mpmath.mpf("6371.0088") * mpmath.asin(mpmath.sqrt(h))


def _pairs():
    rng = np.random.default_rng(11)
    out = []
    for _ in range(150):                                    # anywhere
        out.append((rng.uniform([-90, -180], [90, 180]), rng.uniform([-90, -180], [90, 180])))
    for _ in range(100):                                    # near-antipodal
        p = rng.uniform([-89, -179], [89, 179])
        q = np.array([-p[0], p[1] - 180 if p[1] > 0 else p[1] + 180]) + rng.normal(0, 1e-6, 2)
        out.append((p, q))
    for _ in range(100):                                    # near a pole, tiny and larger gaps
        lat = 90 - 10.0 ** rng.uniform(-12, -2)
        p = np.array([lat * rng.choice([-1, 1]), rng.uniform(-180, 180)])
        out.append((p, p + rng.normal(0, 10.0 ** rng.uniform(-11, -3), 2) * [0, 1]))
        out.append((p, np.array([p[0], p[1] + 180 if p[1] < 0 else p[1] - 180])))
    for _ in range(100):                                    # across the antimeridian
        lat = rng.uniform(-80, 80)
        gap = 10.0 ** rng.uniform(-10, -1)
        out.append((np.array([lat, 180 - gap]), np.array([lat + rng.normal(0, gap), -180 + gap])))
    return out


def test_haversine_matches_60_digit_arithmetic():
    from mdp.spaces.metric_space import haversine_km

    worst = 0.0
    for p, q in _pairs():
        p = np.array([np.clip(p[0], -90, 90), p[1]])
        q = np.array([np.clip(q[0], -90, 90), q[1]])
        got = float(haversine_km(p[None, :], q[None, :])[0, 0])
        ref = float(_reference_km(p, q))
        if ref == 0:
            assert got == 0
            continue
        worst = max(worst, abs(got - ref) / ref)
    assert worst < 1e-12, worst
