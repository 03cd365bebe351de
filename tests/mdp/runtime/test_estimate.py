"""Long work says so: an estimate before a long run, progress that keeps moving."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
import pytest

import mdp
from mdp.curves.loss import _heartbeat, run_curves
from mdp.runtime.estimate import CostModel, build_seconds, curves_seconds, describe_seconds

EXAMPLES = Path(__file__).resolve().parents[3] / "docs" / "examples"


def test_estimates_scale_as_n_cubed():
    costs = CostModel(build_s_at_1000={"exponential": 8.0}, builds_per_point={}, exponent={})
    assert build_seconds("exponential", 1000, costs) == pytest.approx(8.0)
    assert build_seconds("exponential", 5000, costs) == pytest.approx(1000.0)
    assert curves_seconds(["exponential"], 2000, 3, costs) == {
        "exponential": pytest.approx(3 * costs.default_builds_per_point * 64.0)}
    assert [describe_seconds(s) for s in (40, 720, 12600)] == ["about 40 s", "about 12 min",
                                                                 "about 3.5 h"]


def test_curves_announce_a_long_run(tmp_path, capsys):
    slow = CostModel(default_build_s_at_1000=1e9, build_s_at_1000={})
    run_curves(str(EXAMPLES / "sites.csv"), ["exponential"], [1.0], out_dir=tmp_path / "a",
               progress=False, costs=slow)
    err = capsys.readouterr().err
    assert "mdp curves: estimated" in err and "n = 20 points" in err
    run_curves(str(EXAMPLES / "sites.csv"), ["exponential"], [1.0], out_dir=tmp_path / "b",
               progress=False)
    assert "estimated" not in capsys.readouterr().err


def test_build_announces_a_long_build(tmp_path, capsys, monkeypatch):
    import mdp.cli.main as cli

    pts = tmp_path / "p.csv"
    rng = np.random.default_rng(0)
    pts.write_text("x,y\n" + "\n".join(f"{a},{b}" for a, b in rng.uniform(size=(40, 2))))
    argv = ["build", "--space", str(pts), "--mechanism", "exponential", "--epsilon", "1",
            "-o", str(tmp_path / "m.npz")]
    assert cli.main(argv) == 0
    assert "estimated" not in capsys.readouterr().err      # 40 points: well below a second
    monkeypatch.setattr("mdp.runtime.estimate.build_seconds", lambda name, n: 125.0)
    assert cli.main(argv) == 0
    assert "mdp build: estimated about 2 min for exponential on n = 40" in capsys.readouterr().err
    assert build_seconds("optimal", 400) > 30
    # the exponential mechanism is certified in O(n^2 d): seconds at 5,000 points, minutes at 50,000
    assert build_seconds("exponential", 5000) < 30 < build_seconds("exponential", 50_000)


class _Bar:
    disable = False

    def __init__(self):
        self.refreshes = 0
        self.closed = False
        self.lock = threading.Lock()

    def refresh(self):
        with self.lock:
            self.refreshes += 1

    def close(self):
        self.closed = True


def test_heartbeat_refreshes_while_one_point_runs():
    bar = _Bar()
    with _heartbeat(bar, 0.01):
        time.sleep(0.2)
    assert bar.refreshes >= 5 and bar.closed
    quiet = _Bar()
    with _heartbeat(quiet, None):
        time.sleep(0.05)
    assert quiet.refreshes == 0


def test_calibrate_reports_each_build():
    space = mdp.MetricSpace.from_points(np.random.default_rng(0).uniform(size=(15, 2)))
    seen = []
    mech = mdp.calibrate("exponential", space, 1.0, delta=1e-3,
                         on_build=lambda k, eps, level: seen.append((k, eps, level)))
    cal = mech.stats["calibration"]
    assert [k for k, _, _ in seen] == list(range(1, cal["builds"] + 1))
    assert [(eps, level) for _, eps, level in seen] == [tuple(t) for t in cal["trials"]]
    assert cal["eps_tight"] == mech.eps_tight(1e-3) <= 1.0
