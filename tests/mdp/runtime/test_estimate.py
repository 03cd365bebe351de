"""Long work says so: an estimate before a long run, progress that keeps moving."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
import pytest

import mdp
from mdp.curves.loss import _heartbeat, _Status, run_curves
from mdp.runtime.estimate import (
    CostModel,
    Estimate,
    build_estimate,
    curves_estimate,
    describe_seconds,
)

EXAMPLES = Path(__file__).resolve().parents[3] / "docs" / "examples"


def test_estimates_interpolate_measured_ranges_and_scale_with_load():
    costs = CostModel(measured={"exponential": ((100, 1.0, 2.0), (1000, 100.0, 1000.0))},
                      builds_per_point={})
    one = build_estimate("exponential", 100, costs=costs, load=1.0)
    assert (one.low, one.high) == (pytest.approx(1.0), pytest.approx(2.0))
    mid = build_estimate("exponential", 316, costs=costs, load=1.0)     # halfway in log n
    assert mid.low == pytest.approx(10.0, rel=0.01) and mid.high == pytest.approx(44.7, rel=0.01)
    far = build_estimate("exponential", 10_000, costs=costs, load=1.0)  # the last slope, on
    assert far.low == pytest.approx(1e4) and far.high == pytest.approx(5e5)
    busy = build_estimate("exponential", 100, costs=costs, load=1.5)
    assert (busy.low, busy.high) == (pytest.approx(1.5), pytest.approx(3.0))
    assert "x1.5 for the load" in busy.describe()
    points = curves_estimate(["exponential"], 100, 3, costs=costs, load=1.0)["exponential"]
    assert points.high == pytest.approx(3 * costs.default_builds_per_point * 2.0)
    assert [describe_seconds(s) for s in (40, 720, 12600)] == ["about 40 s", "about 12 min",
                                                                 "about 3.5 h"]
    assert Estimate(60.0, 240.0).describe() == "1-4 min"
    with pytest.raises(ValueError, match="increasing n"):
        CostModel(measured={"x": ((100, 1.0, 2.0), (50, 1.0, 2.0))})


def test_the_estimates_users_met_are_fixed():
    # OPTMech on 150 points took 222 s of CPU where "about 64 s" was printed; Madlib over the
    # whole GloVe built in 7 s where "about 53333.3 h" was printed
    opt = build_estimate("optimal", 150, load=1.0)
    assert opt.low <= 222 <= opt.high
    madlib = build_estimate("madlib", 400_000, mode="vocabulary", load=1.0)
    assert madlib.low <= 8.6 <= madlib.high


def test_curves_announce_a_long_run(tmp_path, capsys):
    slow = CostModel(default_measured=((10, 1e6, 1e7),), measured={})
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
    monkeypatch.setattr("mdp.runtime.estimate.build_estimate",
                        lambda name, n, mode: Estimate(60.0, 240.0))
    assert cli.main(argv) == 0
    err = capsys.readouterr().err
    assert "mdp build: estimated 1-4 min for exponential on n = 40" in err
    assert "a line every 60 s says it is still running" in err     # stderr is no terminal here
    assert build_estimate("optimal", 400, load=1.0).low > 30
    # matrix mode is quadratic or cubic, vocabulary mode linear: seconds at 50,000 words
    assert build_estimate("exponential", 50_000, mode="vocabulary", load=1.0).high < 30


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


def _wait_for(condition, seconds: float = 30.0) -> None:
    """Until ``condition()`` holds (at most ``seconds``): a loaded machine may be slow to run
    the heartbeat's thread, and the test must not depend on its speed."""
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)


def test_heartbeat_refreshes_while_one_point_runs():
    bar = _Bar()
    with _heartbeat(bar, _Status(3), 0.01, None):
        _wait_for(lambda: bar.refreshes >= 5)
    assert bar.refreshes >= 5 and bar.closed
    quiet = _Bar()
    with _heartbeat(quiet, _Status(3), None, None):
        time.sleep(0.05)
    assert quiet.refreshes == 0


def test_heartbeat_lines_when_there_is_no_bar(capsys):
    bar = _Bar()
    bar.disable = True
    status = _Status(total=15, done=3, now="optimal at eps_tight 2")
    seen = []
    with _heartbeat(bar, status, 0.01, 0.01):
        _wait_for(lambda: seen.append(capsys.readouterr().err) or "points done" in "".join(seen))
    err = "".join(seen)
    assert "mdp curves: 3 of 15 points done after" in err and "now optimal at eps_tight 2" in err
    assert bar.refreshes == 0


def test_curves_without_a_bar_print_heartbeat_lines(tmp_path, capsys):
    from mdp.curves.loss import loss_curves

    space = mdp.MetricSpace.from_points(np.random.default_rng(2).uniform(size=(25, 2)))
    loss_curves(space, ["constopt"], [1.0, 2.0], progress=False, heartbeat=0.01)
    assert "points done after" in capsys.readouterr().err


def test_calibrate_reports_each_build():
    space = mdp.MetricSpace.from_points(np.random.default_rng(0).uniform(size=(15, 2)))
    seen = []
    mech = mdp.calibrate("exponential", space, 1.0, delta=1e-3,
                         on_build=lambda k, eps, level: seen.append((k, eps, level)))
    cal = mech.stats["calibration"]
    assert [k for k, _, _ in seen] == list(range(1, cal["builds"] + 1))
    assert [(eps, level) for _, eps, level in seen] == [tuple(t) for t in cal["trials"]]
    assert cal["eps_tight"] == mech.eps_tight(1e-3) <= 1.0
