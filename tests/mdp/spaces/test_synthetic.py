"""mdp.spaces.synthetic: seeded, valid spaces with the property each kind is there for."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.sparse.csgraph import shortest_path

from mdp.errors import ParameterError
from mdp.spaces.synthetic import SPACE_KINDS, road_graph_distances, synthetic_space


def _pairs(space) -> np.ndarray:
    return space.distances[np.triu_indices(space.n, 1)]


@pytest.mark.parametrize("kind", SPACE_KINDS)
def test_a_seed_gives_the_same_space_and_another_seed_another(kind):
    a, b, c = (synthetic_space(kind, 30, rng=s) for s in (3, 3, 4))
    assert a.n == 30
    np.testing.assert_array_equal(a.distances, b.distances)
    assert not np.array_equal(a.distances, c.distances)


def test_each_kind_has_its_property():
    n = 64
    city = synthetic_space("city_latlon", n, rng=0)
    assert city.metric == "haversine" and 3 < city.median_distance < 9 and city.diameter < 16
    # ties: the quarter-lattice grid repeats distances, uniform points never do
    ties = _pairs(synthetic_space("grid_ties", n, rng=0))
    assert len(np.unique(ties)) < 0.3 * len(ties)
    assert len(np.unique(_pairs(synthetic_space("clustered", n, rng=0)))) == n * (n - 1) // 2
    scales = _pairs(synthetic_space("two_scales", n, rng=0))
    assert scales.max() / scales.min() > 1e3 and np.median(scales) < 2
    emb = synthetic_space("embedding", n, rng=0)
    assert emb.points.shape == (n, 50)
    # distances concentrate: the spread is small next to the median
    assert np.std(_pairs(emb)) < 0.3 * np.median(_pairs(emb))


def test_road_graph_is_a_shortest_path_metric():
    D = road_graph_distances(50, rng=1)
    assert np.all(np.isfinite(D)) and np.all(D[np.triu_indices(50, 1)] > 0)
    np.testing.assert_allclose(shortest_path(D, directed=False), D, rtol=1e-12)
    # a road metric: most pairs are joined through others, not by a street of their own
    via = D[:, :, None] + D[None, :, :]
    through_others = np.isclose(D, np.min(via + np.eye(50)[None] * 1e9, axis=1), rtol=1e-12)
    assert through_others.mean() > 0.5
    assert synthetic_space("road_graph", 50, rng=1).metric == "precomputed"


def test_bad_arguments_are_refused():
    with pytest.raises(ParameterError, match="unknown synthetic space kind 'roads'"):
        synthetic_space("roads", 10, rng=0)
    with pytest.raises(ParameterError, match="n must be >= 2"):
        synthetic_space("clustered", 1, rng=0)
    with pytest.raises(ParameterError, match="n must be >= 2"):
        road_graph_distances(0, rng=0)
