"""Nothing a file says is trusted (forged files, scaled points or distances)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mdp
from mdp.errors import FileFormatError, ParameterError, PrivacyError
from mdp.spaces.stored import FILE_METRICS


@pytest.fixture
def space():
    return mdp.MetricSpace.from_points(np.random.default_rng(3).uniform(0, 2, size=(8, 2)))


def _rewrite(path, **changes):
    with np.load(path, allow_pickle=False) as z:
        data = {k: z[k] for k in z.files}
    meta = json.loads(str(data["metadata"]))
    for key, value in changes.items():
        if key == "meta":
            value(meta)
        else:
            data[key] = value(data[key])
    data["metadata"] = np.array(json.dumps(meta))
    np.savez_compressed(path, **data)


def test_forged_guarantee_field_is_ignored(space, tmp_path):
    path = mdp.build("exponential", space, 1.0).save(tmp_path / "m.npz")

    def forge(M):
        M = M.copy()
        M[0] = 0.0
        M[0, 0] = 1.0          # input 0 released unchanged every time
        return M

    def claim_analytic(meta):
        meta["stats"]["privacy"] = {"guarantee": "analytic", "verified": True}

    with np.load(path) as z:
        data = {k: z[k] for k in z.files}
    data["matrix"] = np.exp(data.pop("log_matrix"))     # exponential is stored as log_matrix
    np.savez_compressed(path, **data)
    _rewrite(path, matrix=forge, meta=claim_analytic)
    with pytest.raises(PrivacyError, match="fails its privacy check"):
        mdp.load(path)


def test_unknown_family_in_a_file_is_refused(space, tmp_path):
    path = mdp.build("exponential", space, 1.0).save(tmp_path / "m.npz")
    _rewrite(path, meta=lambda meta: meta.update(name="no_such_family"))
    with pytest.raises(FileFormatError, match="unknown mechanism family 'no_such_family'"):
        mdp.load(path)


def test_scaled_points_are_refused(space, tmp_path):
    path = mdp.build("madlib", space, 1.0, rng=0, n_samples=50).save(tmp_path / "madlib.npz")
    _rewrite(path, points=lambda P: P * 1000)
    with pytest.raises(FileFormatError, match="disagree with the euclidean distances"):
        mdp.load(path)


def test_scaled_distances_are_refused(space, tmp_path):
    # built at eps = 3, distances x3 and epsilon set to 1 would "look" 1-mDP: the stored points
    # give the real distances back, on which the matrix is 3-mDP
    path = mdp.build("exponential", space, 3.0).save(tmp_path / "m.npz")
    _rewrite(path, distances=lambda D: D * 3, meta=lambda meta: meta.update(epsilon=1.0))
    with pytest.raises(FileFormatError, match="disagree"):
        mdp.load(path)


def test_lowered_epsilon_is_refused(space, tmp_path):
    path = mdp.build("exponential", space, 3.0).save(tmp_path / "m.npz")
    _rewrite(path, meta=lambda meta: meta.update(epsilon=1.0))
    with pytest.raises(PrivacyError):
        mdp.load(path)


@pytest.mark.parametrize("field,value", [("epsilon", "abc"), ("epsilon", [1]), ("name", 3),
                                         ("params", "x"), ("metric", 5)])
def test_wrong_metadata_types_name_the_file(space, tmp_path, field, value):
    path = mdp.build("exponential", space, 1.0).save(tmp_path / "m.npz")
    _rewrite(path, meta=lambda meta: meta.update({field: value}))
    with pytest.raises(FileFormatError) as info:
        mdp.load(path)
    assert str(path) in str(info.value)


def test_a_csv_is_not_a_mechanism_and_no_unsafe_advice(tmp_path):
    path = tmp_path / "ok.csv"
    path.write_text("0,0\n1,1\n")
    with pytest.raises(FileFormatError) as info:
        mdp.load(path)
    assert "allow_pickle" not in str(info.value) and str(path) in str(info.value)


def test_negative_seed_names_the_parameter():
    with pytest.raises(ParameterError, match="seed"):
        mdp.build("exponential", mdp.MetricSpace.from_points([[0.0], [1.0]]), 1.0, rng=-1)


def test_non_stochastic_builder_is_an_error_naming_the_family(space):
    from mdp.candidate import Candidate
    from mdp.families.exponential import exponential_matrix
    from mdp.registry import FAMILIES, register

    @register("_test_rowsum", description="rows sum to 1 + 5e-7")
    def _sloppy(sp, epsilon, *, rng=None):
        M = exponential_matrix(sp.distances, epsilon)
        M[0] *= 1 + 5e-7
        return Candidate(matrix=M)

    try:
        with pytest.raises(PrivacyError, match=r"mechanism '_test_rowsum' \(n = 8, epsilon = 1\)"):
            mdp.build("_test_rowsum", space, 1.0)
    finally:
        FAMILIES.unregister("_test_rowsum")
    # a certified mechanism holds exactly what was certified: no silent renormalisation
    m = mdp.build("exponential", space, 1.0)
    assert m.stats["privacy"]["verified"] and np.abs(m.matrix.sum(axis=1) - 1).max() <= 1e-12


# -- the metric of a file with points is recomputed, never taken on its word ----------------------
def _words(tmp_path):
    rng = np.random.default_rng(0)
    sp = mdp.MetricSpace.from_points(rng.uniform(0, 3, (10, 2)), labels=[f"w{i}" for i in range(10)])
    return sp, mdp.build("exponential", sp, 1.0).save(tmp_path / "words.npz")


def test_precomputed_metric_beside_points_is_refused(tmp_path):
    # distances x10, epsilon 0.2, metric "precomputed": on its own points the matrix is 0.74-mDP
    sp, path = _words(tmp_path)
    _rewrite(path, distances=lambda D: D * 10,
             meta=lambda meta: meta.update(epsilon=0.2, metric="precomputed"))
    with pytest.raises(FileFormatError, match="'precomputed' beside stored points"):
        mdp.load(path)


def test_data_scaled_metric_is_refused(tmp_path):
    # seuclidean distances are the points' own, but scaled by the point set's variances: renaming
    # the metric rescales every distance and lets epsilon drop to match
    from scipy.spatial.distance import cdist

    sp, path = _words(tmp_path)

    def rename(meta):
        meta.update(metric="seuclidean", epsilon=meta["epsilon"] / ratio)

    P = sp.points
    D2 = cdist(P, P, "seuclidean")
    ratio = float((D2[D2 > 0] / sp.distances[D2 > 0]).min())
    _rewrite(path, distances=lambda D: D2, meta=rename)
    with pytest.raises(FileFormatError, match="metric 'seuclidean' is not one a mechanism file"):
        mdp.load(path)


@pytest.mark.parametrize("metric", ["no_such_metric", "callable", "mahalanobis", ""])
def test_metric_names_the_toolkit_does_not_define_are_refused(tmp_path, metric):
    sp, path = _words(tmp_path)
    _rewrite(path, meta=lambda meta: meta.update(metric=metric))
    with pytest.raises(FileFormatError, match="is not one a mechanism file may state"):
        mdp.load(path)


def test_a_named_metric_without_points_is_refused(tmp_path):
    sp, path = _words(tmp_path)
    with np.load(path) as z:
        data = {k: z[k] for k in z.files if k != "points"}
    np.savez_compressed(path, **data)
    with pytest.raises(FileFormatError, match="cannot be recomputed: the file holds no points"):
        mdp.load(path)


def test_a_file_without_points_is_the_mechanism_of_its_stated_space(tmp_path):
    # the remaining limit: a file consistent with itself is valid for the space it states
    sp = mdp.MetricSpace.from_distances(np.array([[0, 1, 2], [1, 0, 1.5], [2, 1.5, 0.]]))
    m = mdp.build("exponential", sp, 1.0)
    loaded = mdp.load(m.save(tmp_path / "d.npz"))
    assert loaded.space.metric == "precomputed"
    assert np.array_equal(loaded.space.distances, sp.distances)
    assert mdp.eps_tight(loaded.matrix, sp.distances) <= 1.0 * (1 + 1e-9)


@pytest.mark.parametrize("metric", ["cityblock", "chebyshev", "haversine"])
def test_files_with_defined_metrics_round_trip(tmp_path, metric):
    pts = np.random.default_rng(1).uniform(-40, 40, (6, 2))
    sp = mdp.MetricSpace.from_points(pts, metric=metric)
    m = mdp.build("exponential", sp, 0.05 if metric == "haversine" else 1.0)
    loaded = mdp.load(m.save(tmp_path / "m.npz"))
    assert loaded.space.metric == metric and np.array_equal(loaded.matrix, m.matrix)


# -- Madlib: the stored estimate is checked against what the family produces ----------------------
def test_madlib_identity_estimate_is_refused(space, tmp_path):
    path = mdp.build("madlib", space, 1.0, rng=0, n_samples=200).save(tmp_path / "madlib.npz")
    _rewrite(path, matrix=lambda M: np.eye(len(M)))
    with pytest.raises(PrivacyError, match="Madlib estimate is inf-mDP"):
        mdp.load(path)


def test_madlib_genuine_files_load(space, tmp_path):
    for seed, eps, ns in [(0, 1.0, 50), (1, 3.0, 200), (2, 0.3, 500), (3, 10.0, 20)]:
        m = mdp.build("madlib", space, eps, rng=seed, n_samples=ns)
        loaded = mdp.load(m.save(tmp_path / f"m{seed}.npz"))
        assert np.array_equal(loaded.matrix, m.matrix)


def test_a_file_renamed_madlib_is_refused(space, tmp_path):
    # with epsilon lowered: the stored matrix is not 2 eps-mDP, which any estimate is
    path = mdp.build("exponential", space, 1.0).save(tmp_path / "m.npz")

    def as_madlib(meta):
        meta.update(name="madlib", epsilon=0.01)

    with np.load(path) as z:
        data = {k: z[k] for k in z.files}
    data["matrix"] = np.exp(data.pop("log_matrix"))
    np.savez_compressed(path, **data)
    _rewrite(path, meta=as_madlib)
    with pytest.raises(PrivacyError, match="at most 0.02-mDP"):
        mdp.load(path)
    # at its own epsilon: its entries and losses are not Madlib's
    path3 = mdp.build("exponential", space, 3.0).save(tmp_path / "e3.npz")
    with np.load(path3) as z:
        data = {k: z[k] for k in z.files}
    data["matrix"] = np.exp(data.pop("log_matrix"))
    np.savez_compressed(path3, **data)
    _rewrite(path3, meta=lambda meta: meta.update(name="madlib", params={"n_samples": 500}))
    with pytest.raises(PrivacyError, match="not this family's matrix"):
        mdp.load(path3)


# -- fuzz: random edits never load a mechanism above its claim -------------------------------------
_EDITS = st.lists(st.one_of(
    st.tuples(st.just("epsilon"), st.floats(1e-3, 10.0)),
    st.tuples(st.just("metric"), st.sampled_from(["precomputed", "euclidean", "cityblock",
                                                  "chebyshev", "seuclidean", "sqeuclidean",
                                                  "haversine", "minkowski", "cosine", "x"])),
    st.tuples(st.just("name"), st.sampled_from(["exponential", "madlib", "custom", "optimal"])),
    st.tuples(st.just("scale_distances"), st.floats(0.1, 10.0)),
    st.tuples(st.just("scale_points"), st.floats(0.1, 10.0)),
    st.tuples(st.just("drop_points"), st.just(0)),
    st.tuples(st.just("recompute_distances"), st.sampled_from(["cityblock", "chebyshev",
                                                               "seuclidean", "sqeuclidean"])),
    st.tuples(st.just("sharpen_matrix"), st.floats(1.0, 5.0)),
    # a consistent forgery: distances x f and epsilon / f
    st.tuples(st.just("rescale"), st.floats(1.5, 20.0)),
), min_size=1, max_size=4)


def _apply(data: dict, meta: dict, edit) -> None:
    from scipy.spatial.distance import cdist

    kind, value = edit
    if kind in ("epsilon", "metric", "name"):
        meta[kind] = value
    elif kind == "scale_distances":
        data["distances"] = data["distances"] * value
    elif kind == "scale_points" and "points" in data:
        data["points"] = data["points"] * value
    elif kind == "drop_points":
        data.pop("points", None)
    elif kind == "recompute_distances" and "points" in data:
        data["distances"] = cdist(data["points"], data["points"], value)
    elif kind == "rescale":
        data["distances"] = data["distances"] * value
        meta["epsilon"] = meta["epsilon"] / value
    elif kind == "sharpen_matrix":
        M = data["matrix"] ** value
        data["matrix"] = M / M.sum(axis=1, keepdims=True)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edits=_EDITS)
def test_random_edits_never_load_above_the_claim(tmp_path_factory, edits):
    from scipy.spatial.distance import cdist

    tmp = tmp_path_factory.mktemp("fuzz")
    sp = mdp.MetricSpace.from_points(np.random.default_rng(5).uniform(0, 2, (7, 2)))
    path = mdp.build("exponential", sp, 2.0).save(tmp / "m.npz")
    with np.load(path) as z:
        data = {k: z[k] for k in z.files}
    data["matrix"] = np.exp(data.pop("log_matrix"))
    meta = json.loads(str(data["metadata"]))
    for edit in edits:
        _apply(data, meta, edit)
    data["metadata"] = np.array(json.dumps(meta))
    np.savez_compressed(path, **data)
    try:
        mech = mdp.load(path)
    except mdp.MDPError:
        return
    if mech.space.points is None:       # a self-consistent precomputed file: its stated space
        D = mech.space.distances
    elif mech.space.metric == "haversine":
        D = mdp.spaces.metric_space.haversine_km(mech.space.points, mech.space.points)
    else:   # a name the toolkit does not define: the points' original metric
        metric = mech.space.metric if mech.space.metric in FILE_METRICS else "euclidean"
        D = cdist(mech.space.points, mech.space.points, metric)
    level = mdp.eps_tight(mech.matrix, D)
    claim = 2 * mech.epsilon if mech.name == "madlib" else mech.epsilon
    assert level <= claim * (1 + 1e-6), (edits, level, mech.epsilon)


def test_a_remapped_file_is_certified_again_and_a_forged_one_refused(space, tmp_path):
    from mdp.prior import Prior, remap

    prior = Prior.from_counts(np.arange(space.n))
    r = remap(mdp.build("exponential", space, 1.0), prior)
    path = r.save(tmp_path / "r.npz")
    with np.load(path) as z:
        key = "matrix" if "matrix" in z.files else "log_matrix"

    def forge(M):
        M = np.exp(M) if key == "log_matrix" else M.copy()
        M[0] = 0.0
        M[0, 0] = 1.0          # input 0 released unchanged: no longer a remap of anything private
        return np.log(M) if key == "log_matrix" else M

    def claim_remap(meta):
        meta["stats"]["remap"] = {"guarantee": "post-processing of the certified matrix"}

    with np.errstate(divide="ignore"):
        _rewrite(path, **{key: forge}, meta=claim_remap)
    with pytest.raises(PrivacyError, match="fails its privacy check"):
        mdp.load(path)
