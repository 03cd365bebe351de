"""Priors: construction, smoothing, refusal of zeros and negatives, the --prior files."""

import numpy as np
import pytest

from mdp.errors import FileFormatError, MissingFileError, ParameterError
from mdp.prior import Prior, load_prior


def test_uniform_and_counts_follow_their_formulas():
    assert np.allclose(Prior.uniform(4).probabilities, 0.25)
    p = Prior.from_counts([0, 1, 5, 2])
    # (c + 1) / (sum c + n)
    assert np.allclose(p.probabilities, np.array([1, 2, 6, 3]) / 12)
    q = Prior.from_counts([0, 1, 5, 2], smoothing=0.5)
    assert np.allclose(q.probabilities, (np.array([0, 1, 5, 2]) + 0.5) / 10)
    assert "counts" in p.source and "+1" in p.source
    assert p.entropy_bits() == pytest.approx(-(p.probabilities * np.log2(p.probabilities)).sum())


@pytest.mark.parametrize("bad", [[0.5, 0.5, 0.0], [1.2, -0.2], [0.5, np.nan, 0.5], [0.3, 0.3]])
def test_given_prior_with_zero_negative_nan_or_bad_sum_is_refused(bad):
    with pytest.raises(ParameterError, match="prior"):
        Prior.given(bad)


def test_negative_counts_and_unsmoothed_zeros_are_refused():
    with pytest.raises(ParameterError, match="negative count"):
        Prior.from_counts([3, -1, 2])
    with pytest.raises(ParameterError, match="smoothing"):
        Prior.from_counts([3, 0, 2], smoothing=0)
    with pytest.raises(ParameterError, match="smoothing"):
        Prior.from_counts([3, 1], smoothing=-1)
    assert Prior.from_counts([3, 1], smoothing=0).probabilities[0] == pytest.approx(0.75)


def test_prior_is_read_only_and_checked_against_the_space():
    p = Prior.uniform(3)
    with pytest.raises(ValueError):
        p.probabilities[0] = 1.0
    with pytest.raises(ParameterError, match="3 points, the space has 4"):
        p.check_space(4)


def test_load_prior_specs(tmp_path):
    labels = ["a", "b", "c"]
    assert np.allclose(load_prior("uniform", 3).probabilities, 1 / 3)
    assert np.allclose(load_prior(None, 3).probabilities, 1 / 3)
    counts = tmp_path / "visits.csv"
    counts.write_text("label,count\nc,4\na,1\n")          # b never visited: count 0
    p = load_prior(f"counts:{counts}", 3, labels=labels)
    assert np.allclose(p.probabilities, np.array([2, 1, 5]) / 8)
    plain = tmp_path / "p.txt"
    plain.write_text("0.5\n0.25\n0.25\n")
    assert np.allclose(load_prior(str(plain), 3).probabilities, [0.5, 0.25, 0.25])


def test_prior_files_with_errors_name_the_file_and_line_not_the_value(tmp_path):
    labels = ["a", "b", "c"]
    f = tmp_path / "visits.csv"
    f.write_text("label,count\na,1\nsecret-place,4\n")
    with pytest.raises(FileFormatError, match=r"line 3: label not in the space") as e:
        load_prior(f"counts:{f}", 3, labels=labels)
    assert "secret-place" not in str(e.value)
    f.write_text("a,1\nb,-7\nc,2\n")
    with pytest.raises(FileFormatError, match="negative"):
        load_prior(f"counts:{f}", 3, labels=labels)
    f.write_text("a,1\nb,x9\nc,2\n")
    with pytest.raises(FileFormatError, match="line 2: not a number") as e:
        load_prior(f"counts:{f}", 3, labels=labels)
    assert "x9" not in str(e.value)
    f.write_text("a,1\na,2\n")
    with pytest.raises(FileFormatError, match="line 2: label given twice"):
        load_prior(f"counts:{f}", 3, labels=labels)
    g = tmp_path / "p.txt"
    g.write_text("0.5\n0.5\n0\n")
    with pytest.raises(FileFormatError, match="probability > 0"):
        load_prior(str(g), 3)
    g.write_text("0.5\n0.5\n")
    with pytest.raises(FileFormatError, match="2 probabilities, the space has 3"):
        load_prior(str(g), 3)
    with pytest.raises(MissingFileError):
        load_prior(str(tmp_path / "none.csv"), 3)
    with pytest.raises(ParameterError):
        load_prior(3.5, 3)
