"""One error family: every error raised for a user's input is an ``mdp.MDPError`` that is also
the built-in exception a Python user expects; docstrings' Raises sections name them."""

from __future__ import annotations

import inspect
import os
from pathlib import Path

import numpy as np
import pytest

import mdp
from mdp.errors import DataNotFoundError, MissingFileError, ParameterError, UnknownInputError
from mdp.io import shared_data_dir
from mdp.spaces.specs import load_space


@pytest.fixture(scope="module")
def space():
    return mdp.MetricSpace.from_points(np.random.default_rng(0).uniform(size=(10, 2)))


def test_unknown_family_is_an_mdp_error_and_a_lookup_error(space):
    with pytest.raises(UnknownInputError) as info:
        mdp.build("expo", space, epsilon=1.0)
    assert isinstance(info.value, mdp.MDPError)
    assert isinstance(info.value, KeyError) and isinstance(info.value, ValueError)
    # printed plainly (KeyError's str() would quote the whole message)
    assert str(info.value).startswith("unknown mechanism 'expo'; valid names: ")
    assert "exponential" in str(info.value)


@pytest.mark.parametrize("points, metric, words", [
    ([[0.0, np.nan], [1.0, 1.0]], "euclidean", "finite"),
    ([[0.0, 1.0]], "euclidean", "at least 2 points"),
    ([[95.0, 1.0], [1.0, 1.0]], "haversine", "|lat| <= 90"),
    ([[5.0, 1.0], [1.0, 1.0]], "nope", "unknown metric 'nope'"),
    ([["a", "b"], [1.0, 1.0]], "euclidean", "must be numbers"),
])
def test_from_points_checks_raise_parameter_errors(points, metric, words):
    with pytest.raises(ParameterError, match=words) as info:
        mdp.MetricSpace.from_points(points, metric=metric)
    assert isinstance(info.value, mdp.MDPError) and isinstance(info.value, ValueError)


def test_metric_of_the_wrong_type():
    with pytest.raises(mdp.ParameterTypeError) as info:
        mdp.MetricSpace.from_points([[0.0, 1.0], [1.0, 1.0]], metric=3)
    assert isinstance(info.value, TypeError)


def test_sample_an_unknown_input(space):
    mech = mdp.build("exponential", space, epsilon=1.0)
    with pytest.raises(UnknownInputError, match=r"input 1 \(of 1\): index out of range") as info:
        mech.sample([99], rng=0)
    assert isinstance(info.value, mdp.MDPError) and isinstance(info.value, KeyError)
    labelled = mdp.MetricSpace.from_points([[0.0], [1.0], [3.0]], labels=["a", "b", "c"])
    with pytest.raises(UnknownInputError, match="input 1 \\(of 1\\): unknown label"):
        mdp.build("exponential", labelled, epsilon=1.0).sample("z", rng=0)


def test_load_a_missing_file(tmp_path):
    with pytest.raises(MissingFileError, match="no mechanism file at") as info:
        mdp.load(tmp_path / "none.npz")
    assert isinstance(info.value, mdp.MDPError) and isinstance(info.value, FileNotFoundError)


def test_missing_spec_files_are_missing_file_errors(tmp_path):
    for spec in (str(tmp_path / "none.csv"), str(tmp_path / "none.npy")):
        with pytest.raises(MissingFileError):
            load_space(spec)


def test_data_folder_not_found(tmp_path, monkeypatch):
    """The message lists each folder once and says where to get the data."""
    monkeypatch.setenv("MDP_DATA_DIR", str(tmp_path / "nowhere"))
    monkeypatch.chdir(tmp_path)
    real_is_dir = Path.is_dir
    monkeypatch.setattr(Path, "is_dir", lambda self: False if self.name == "data" or
                        self.name == "nowhere" else real_is_dir(self))
    with pytest.raises(DataNotFoundError) as info:
        shared_data_dir()
    message = str(info.value)
    assert isinstance(info.value, FileNotFoundError) and isinstance(info.value, mdp.MDPError)
    looked = message[message.index("(looked in ") + 11:message.index(")")].split(", ")
    assert len(looked) == len(set(looked)) and str(tmp_path / "nowhere") in looked
    for words in ("MDP_DATA_DIR", "Geolife", "Gowalla", "docs/guide/data.md"):
        assert words in message
    assert (Path(__file__).resolve().parents[2] / "docs" / "guide" / "data.md").exists()


@pytest.mark.parametrize("func", [mdp.build, mdp.get, mdp.load, mdp.MetricSpace.from_points,
                                  mdp.MetricSpace.index_of, mdp.Mechanism.sample])
def test_raises_sections_name_the_toolkit_errors(func):
    doc = inspect.getdoc(func)
    raises = doc[doc.index("Raises"):]
    assert "mdp.errors." in raises
    for builtin in ("\nValueError", "\nKeyError", "\nTypeError", "\nFileNotFoundError"):
        assert builtin not in raises, f"{func.__qualname__}: Raises names bare {builtin.strip()}"


def test_data_tests_are_marked(request):
    """Tests that use the real data carry the ``data`` marker (and skip without the data)."""
    items = [item for item in request.session.items
             if "shared_data" in getattr(item, "fixturenames", ())]
    assert all(item.get_closest_marker("data") for item in items)
    assert os.environ.get("MDP_REQUIRE_DATA", "") in ("", "0", "1")


def test_experiments_say_they_need_the_real_data(monkeypatch, capsys, tmp_path):
    """An experiment on the real data says so before it starts, and a full run stops at once
    without them, naming the experiment, the data and where to get them (a quick run uses a
    synthetic log instead: tests/experiments/test_realdata.py)."""
    import experiments.realdata as realdata
    from mdp.cli.main import main

    def absent():
        raise DataNotFoundError("real data sets not found (looked in /nowhere). See "
                                "docs/guide/data.md")

    monkeypatch.setattr(realdata, "shared_data_dir", absent)
    code = main(["experiment", "heatmaps", "-o", str(tmp_path / "h")])
    err = capsys.readouterr().err
    assert code == 2 and "experiment heatmaps needs the Gowalla check-ins" in err
    assert "docs/guide/data.md" in err and not (tmp_path / "h").exists()
    path = realdata.real_data_file("federated", "x.txt.gz", "the Gowalla check-ins",
                                   str(tmp_path / "given.txt"))
    assert path == tmp_path / "given.txt"
    assert "federated: reads the Gowalla check-ins from" in capsys.readouterr().err
