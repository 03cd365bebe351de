"""Nothing a file says is trusted (forged files, scaled points or distances)."""

from __future__ import annotations

import json

import numpy as np
import pytest

import mdp
from mdp.errors import FileFormatError, ParameterError, PrivacyError


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
