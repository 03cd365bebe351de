"""Files of the previous format load and are re-verified; the log domain at huge eps * d."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import mdp
from mdp.errors import PrivacyError

DATA = Path(__file__).parent / "data"


@pytest.mark.parametrize("name", ["exponential", "optimal"])
def test_version_1_files_load_and_reverify(name, tmp_path):
    # written by the toolkit before the log-domain format (format_version 1, key "matrix")
    mech = mdp.load(DATA / f"{name}_v1.npz")
    assert mech.name == name and mech.epsilon == 1.0 and mech.representation == "probability"
    assert mech.stats["privacy"]["verified"] and mech.eps_tight() <= 1.0 * (1 + 1e-9)
    assert mech.space.labels.tolist() == list("abcde")
    # saved again, it becomes a version 2 file with the same matrix
    again = mdp.load(mech.save(tmp_path / "v2.npz"))
    np.testing.assert_array_equal(again.matrix, mech.matrix)


def test_version_1_file_with_a_violating_matrix_is_refused(tmp_path):
    with np.load(DATA / "exponential_v1.npz") as z:
        data = {k: z[k] for k in z.files}
    data["matrix"] = np.eye(5)
    np.savez_compressed(tmp_path / "bad_v1.npz", **data)
    with pytest.raises(PrivacyError, match="bad_v1.npz"):
        mdp.load(tmp_path / "bad_v1.npz")


def test_exponential_at_eps_times_diameter_1e4_builds_certifies_and_samples(tmp_path):
    pts = np.linspace(0.0, 1.0, 9)[:, None]
    space = mdp.MetricSpace.from_points(pts)
    eps = 1e4 / space.diameter
    mech = mdp.build("exponential", space, eps)
    assert mech.representation == "log"
    # closed form in the log domain: -eps d / 2 - logsumexp_w(-eps d / 2)
    from scipy.special import logsumexp

    logits = -0.5 * eps * space.distances
    closed = logits - logsumexp(logits, axis=1, keepdims=True)
    np.testing.assert_allclose(mech.log_matrix, closed, rtol=1e-12)
    assert mech.log_matrix.min() < -4000           # far below float64's smallest positive number
    assert mech.stats["privacy"]["verified"] and mech.eps_tight() <= eps * (1 + 1e-9)
    assert mech.stats["privacy"]["sampling"]["measured_eps"] <= eps * (1 + 1e-9)
    out = mech.sample(np.arange(9).repeat(50), rng=1)
    assert np.array_equal(out, np.arange(9).repeat(50))   # at this eps the output is the input
    back = mdp.load(mech.save(tmp_path / "huge.npz"))
    np.testing.assert_array_equal(back.log_matrix, mech.log_matrix)
