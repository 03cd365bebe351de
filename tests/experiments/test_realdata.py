"""Experiments on the Gowalla check-ins: real data when present, a synthetic log for --quick."""

from __future__ import annotations

from pathlib import Path

import pytest

from experiments import realdata
from geo.checkins import read_checkins
from mdp.cli.main import main
from mdp.errors import DataNotFoundError


@pytest.fixture
def no_data(monkeypatch, tmp_path):
    """Hide the real data sets, wherever they are."""
    def missing():
        raise DataNotFoundError("real data sets not found (looked in /nowhere)")
    monkeypatch.setattr(realdata, "shared_data_dir", missing)
    return tmp_path


def test_quick_without_data_uses_the_synthetic_log_and_says_so(no_data, capsys):
    path, synthetic = realdata.checkins_file("heatmaps", "gowalla_nyc_checkins.txt.gz", None,
                                             True, no_data / "out")
    assert synthetic and path == no_data / "out" / "synthetic_checkins.txt.gz"
    log = read_checkins(path)
    assert log.user.nunique() == 3000 and len(log) > 3000
    err = capsys.readouterr().err
    assert "synthetic check-in log" in err and "not the paper's data" in err
    assert "synthetic check-in log" in realdata.SYNTHETIC_NOTE


def test_full_run_without_data_is_refused(no_data):
    with pytest.raises(DataNotFoundError) as info:
        realdata.checkins_file("heatmaps", "gowalla_nyc_checkins.txt.gz", None, False, no_data)
    assert "heatmaps" in str(info.value) and "--quick" in str(info.value)
    assert not any(no_data.iterdir())


def test_a_given_file_is_never_replaced(no_data, tmp_path):
    given = tmp_path / "mine.txt"
    given.write_text("0\t2010-10-12T00:21:28Z\t40.64\t-73.78\t23261\n")
    path, synthetic = realdata.checkins_file("federated", "x.gz", str(given), True, tmp_path)
    assert path == Path(given) and not synthetic


def test_heatmaps_quick_runs_without_data(no_data):
    """The whole quick experiment on the synthetic log; the summary carries the note."""
    out = no_data / "hm"
    main(["experiment", "heatmaps", "--quick", "--no-progress", "-o", str(out)])
    summary = (out / "summary.md").read_text()
    assert realdata.SYNTHETIC_NOTE in summary
