"""The sweep runner: resume after a kill, Dask and local processes agree, time limits, errors."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import numpy as np
import pytest
from threadpoolctl import threadpool_info

import mdp
from experiments.common import point_task
from experiments.executor import Task, records_frame, run_sweep
from experiments.store import ResultStore, config_key

ROOT = Path(__file__).resolve().parents[2]


# -- task functions (imported by name in workers: this module is on their path) -----------------
def logged_task(config: dict) -> dict:
    """Appends its index to a log file (one line per *call*), sleeps, returns a closed form."""
    with open(config["log"], "a") as fh:
        fh.write(f"{config['i']}\n")
    time.sleep(config.get("sleep", 0.0))
    if config.get("interrupt_at") == config["i"]:
        raise KeyboardInterrupt  # what Ctrl-C does in a serial sweep
    return {"square": config["i"] ** 2}


def failing_task(config: dict) -> dict:
    raise ValueError(f"bad value {config['i']}")


def sleeping_task(config: dict) -> dict:
    time.sleep(config["sleep"])
    return {"slept": config["sleep"]}


def marked_task(config: dict) -> dict:
    """Leaves one marker file per computation (any process), sleeps, returns a closed form.

    It first waits (up to 60 s) until markers from two processes exist, so the runs overlap however
    slowly the second one starts (a loaded machine can spawn a pool after the first run is done).
    """
    marks = Path(config["marks"])
    Path(marks, f"{config['i']}-{os.getpid()}-{uuid.uuid4().hex}").touch()
    deadline = time.monotonic() + 60.0
    while len({m.name.split("-")[1] for m in marks.iterdir()}) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(config["sleep"])
    return {"square": config["i"] ** 2, "pid": os.getpid()}


def _concurrent_sweep(db: str, marks: str, ready: str, name: str, workers: int, out: str) -> None:
    """One of two runs sweeping the same store (started with multiprocessing)."""
    tasks = [Task({"experiment": "concurrent", "task": "tests.experiments.test_executor:marked_task",
                   "i": i, "marks": marks, "sleep": 0.3}) for i in range(12)]
    with ResultStore(db) as store:
        Path(ready, name).touch()               # start together: both runs see every task to do
        deadline = time.monotonic() + 120.0
        while len(list(Path(ready).iterdir())) < 2:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{name}: the other run never opened the store")
            time.sleep(0.01)
        records = run_sweep(tasks, store, workers=workers, progress=False)
    Path(out).write_text(json.dumps({"pid": os.getpid(), "records": records}))


def test_two_concurrent_runs_compute_each_task_once(tmp_path):
    import multiprocessing

    marks, ready = tmp_path / "marks", tmp_path / "ready"
    marks.mkdir()
    ready.mkdir()
    db = tmp_path / "r.sqlite"
    ctx = multiprocessing.get_context("spawn")
    runs = [ctx.Process(target=_concurrent_sweep,
                        args=(str(db), str(marks), str(ready), name, workers, str(tmp_path / f"{name}.json")))
            for name, workers in (("serial", 0), ("pool", 2))]
    try:
        for p in runs:
            p.start()
        for p in runs:
            p.join(timeout=300)
    finally:    # a run left alive would make the interpreter wait for it at exit, forever
        for p in runs:
            if p.is_alive():
                p.kill()
                p.join(timeout=30)
    assert [p.exitcode for p in runs] == [0, 0]
    computed = sorted(int(m.name.split("-")[0]) for m in marks.iterdir())
    assert computed == list(range(12)), "a task was computed twice (or never)"
    outs = [json.loads((tmp_path / f"{name}.json").read_text()) for name in ("serial", "pool")]
    for out in outs:       # each run returns every result, its own and the other run's
        assert [r["result"]["square"] for r in out["records"]] == [i * i for i in range(12)]
        assert all(r["status"] == "ok" and r["computed"] == 1 for r in out["records"])
    by = {r["result"]["pid"] for r in outs[0]["records"]}
    assert outs[0]["pid"] in by and len(by) > 1, "the two runs did not share the work"
    with ResultStore(db) as store:
        assert len(store) == 12 and store.leases() == []


def _tasks(log: Path, count: int, **extra) -> list[Task]:
    return [Task({"experiment": "resume", "task": "tests.experiments.test_executor:logged_task",
                  "i": i, "log": str(log), **extra}) for i in range(count)]


def _calls(log: Path) -> list[int]:
    return [int(x) for x in log.read_text().split()] if log.exists() else []


_SWEEP = textwrap.dedent("""
    import sys
    from pathlib import Path
    sys.path.insert(0, sys.argv[1])
    from experiments.executor import run_sweep
    from experiments.store import ResultStore
    from tests.experiments.test_executor import _tasks
    run_sweep(_tasks(Path(sys.argv[2]), 10, sleep=0.4), ResultStore(sys.argv[3]), workers=2,
              progress=False)
""")


def test_killed_sweep_resumes_without_recomputing(tmp_path):
    log, db = tmp_path / "calls.log", tmp_path / "r.sqlite"
    proc = subprocess.Popen([sys.executable, "-c", _SWEEP, str(ROOT), str(log), str(db)],
                            start_new_session=True)
    try:
        deadline = time.time() + 90
        while time.time() < deadline and proc.poll() is None:
            time.sleep(0.1)
            if db.exists():
                with ResultStore(db) as s:
                    if len(s) >= 3:
                        break
        assert proc.poll() is None, "the sweep finished before it could be killed"
        os.killpg(proc.pid, signal.SIGKILL)   # the driver and its worker processes
    finally:
        proc.wait()
    with ResultStore(db) as store:
        finished = {r["config"]["i"] for r in store.records("resume")}
        assert 3 <= len(finished) < 10
        calls_before = _calls(log)
        records = run_sweep(_tasks(log, 10, sleep=0.4), store, workers=0, progress=False)
    rerun_calls = _calls(log)[len(calls_before):]
    assert not finished & set(rerun_calls), "a finished task was recomputed"
    assert sorted(rerun_calls) == sorted(set(range(10)) - finished)
    assert [r["result"]["square"] for r in records] == [i * i for i in range(10)]
    assert all(r["computed"] == 1 for r in records)
    # a finished sweep is not recomputed at all
    with ResultStore(db) as store:
        run_sweep(_tasks(log, 10, sleep=0.4), store, workers=2, progress=False)
    assert len(_calls(log)) == len(calls_before) + len(rerun_calls)


def test_interrupted_serial_sweep_resumes(tmp_path):
    log = tmp_path / "calls.log"
    with ResultStore(tmp_path / "r.sqlite") as store:
        with pytest.raises(KeyboardInterrupt):
            run_sweep(_tasks(log, 6, interrupt_at=4), store, workers=0, progress=False)
        assert len(store) == 4 and _calls(log) == [0, 1, 2, 3, 4]
        # same configs minus the interruption flag are different tasks: the interrupt key only on tasks[4]
        tasks = _tasks(log, 6, interrupt_at=4)
        tasks[4] = Task({**tasks[4].config, "interrupt_at": None})
        tasks[5] = Task({**tasks[5].config})
        records = run_sweep(tasks, store, workers=0, progress=False)
    assert _calls(log) == [0, 1, 2, 3, 4, 4, 5]
    assert [r["computed"] for r in records] == [1] * 6


def test_duplicate_configs_run_once(tmp_path):
    log = tmp_path / "calls.log"
    tasks = _tasks(log, 3) + _tasks(log, 3)
    with ResultStore(tmp_path / "r.sqlite") as store:
        records = run_sweep(tasks, store, workers=0, progress=False)
    assert len(records) == 3 and sorted(_calls(log)) == [0, 1, 2]


def test_errors_are_recorded_and_retried(tmp_path):
    tasks = [Task({"experiment": "err", "task": "tests.experiments.test_executor:failing_task", "i": 7})]
    with ResultStore(tmp_path / "r.sqlite") as store:
        (rec,) = run_sweep(tasks, store, workers=0, progress=False)
        assert rec["status"] == "error" and rec["result"]["error"] == "ValueError: bad value 7"
        (rec,) = run_sweep(tasks, store, workers=0, progress=False)
        assert rec["computed"] == 2
        (rec,) = run_sweep(tasks, store, workers=0, progress=False, retry_errors=False)
        assert rec["computed"] == 2


def test_time_limit_stops_a_task_and_is_stored(tmp_path):
    env_path = os.environ.get("PYTHONPATH", "")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env_path) if p)
    try:
        tasks = [Task({"experiment": "limit", "task": "tests.experiments.test_executor:sleeping_task", "sleep": s})
                 for s in (0.0, 60.0)]
        t0 = time.perf_counter()
        with ResultStore(tmp_path / "r.sqlite") as store:
            fast, slow = run_sweep(tasks, store, workers=0, timeout=12.0, progress=False)
            assert time.perf_counter() - t0 < 45
            assert fast["status"] == "ok" and fast["result"] == {"slept": 0.0}
            assert slow["status"] == "timeout" and slow["result"]["time_limit"] == 12.0
            run_sweep(tasks, store, workers=0, timeout=12.0, progress=False)   # not retried
            assert store.get_record(tasks[1].config)["computed"] == 1
    finally:
        os.environ["PYTHONPATH"] = env_path


def test_timeouts_are_final_unless_retried(tmp_path):
    # a stored timeout is a result; --retry-timeouts (after the code got faster) recomputes it,
    # and only it, then the new result is final like any other
    log = tmp_path / "calls.log"
    done, timed_out = _tasks(log, 2)
    with ResultStore(tmp_path / "r.sqlite") as store:
        run_sweep([done], store, workers=0, progress=False)
        store.put(timed_out.config, {"error": "time limit of 1 s exceeded", "time_limit": 1.0},
                  status="timeout", seconds=1.0)
        (_, rec) = run_sweep([done, timed_out], store, workers=0, progress=False)
        assert rec["status"] == "timeout" and _calls(log) == [0]
        (_, rec) = run_sweep([done, timed_out], store, workers=0, progress=False,
                             retry_timeouts=True)
        assert rec["status"] == "ok" and rec["computed"] == 2 and _calls(log) == [0, 1]
        run_sweep([done, timed_out], store, workers=0, progress=False, retry_timeouts=True)
        assert _calls(log) == [0, 1]


def test_retry_timeouts_flag_reaches_the_sweep(tmp_path, monkeypatch):
    import argparse

    import experiments.common as common

    seen = {}
    monkeypatch.setattr(common, "run_sweep",
                        lambda tasks, store, **kw: seen.update(kw) or [])
    monkeypatch.setattr(common, "_task_rows", lambda records, tasks: None)
    parser = argparse.ArgumentParser()
    parser.add_argument("--no-progress", action="store_true")
    common.add_sweep_arguments(parser)
    for argv, expected in ([], False), (["--retry-timeouts"], True):
        common.sweep([], parser.parse_args(argv + ["--store", str(tmp_path / "r.sqlite")]),
                     tmp_path, desc="x")
        assert seen["retry_timeouts"] is expected


def test_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="needs a non-empty string 'task'"):
        Task({"experiment": "x"})
    with pytest.raises(ValueError, match="must be 'module:function'"):
        Task({"experiment": "x", "task": "nomodule"})
    with ResultStore(tmp_path / "r.sqlite") as store:
        with pytest.raises(ValueError, match="workers must be an int >= 0, got -1"):
            run_sweep([], store, workers=-1)
        with pytest.raises(ValueError, match="timeout must be > 0 seconds, got 0"):
            run_sweep([], store, timeout=0)
        with pytest.raises(TypeError, match="scheduler must be an address"):
            run_sweep(_tasks(tmp_path / "l", 1), store, scheduler=42, progress=False)


# -- the real experiment task: local processes and a Dask cluster agree ------------------------
def _experiment_tasks() -> list[Task]:
    return [point_task("loss-curves", "glove-30", mech, {}, t, seed=0, delta=1e-3, q=0.95, rtol=5e-3)
            for mech in ("exponential", "weighted_exponential") for t in (0.5, 1.0, 2.0)]


def _deterministic_csv(records) -> str:
    df = records_frame(records)
    # wall-clock seconds and the thread plan (sized from the CPUs other processes keep busy at
    # that moment) describe the run, not its result
    timing = [c for c in df.columns if "seconds" in c or c.startswith("stats.threads.")]
    return df.drop(columns=timing).to_csv(index=False)


def test_dask_cluster_and_local_processes_give_identical_csv(tmp_path):
    distributed = pytest.importorskip("distributed", reason="optional extra 'dask' not installed")
    tasks = _experiment_tasks()
    with ResultStore(tmp_path / "local.sqlite") as store:
        local = run_sweep(tasks, store, workers=2, progress=False)
    blas_before = {lib["filepath"]: lib["num_threads"] for lib in threadpool_info()
                   if lib["user_api"] == "blas"}
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as cluster:
        with ResultStore(tmp_path / "dask.sqlite") as store:
            remote = run_sweep(tasks, store, scheduler=cluster.scheduler_address, progress=False)
    # two builds at once on the worker's two threads leave the process's BLAS counts as they were
    assert {lib["filepath"]: lib["num_threads"] for lib in threadpool_info()
            if lib["user_api"] == "blas"} == blas_before
    assert all(r["status"] == "ok" for r in local + remote)
    assert _deterministic_csv(local) == _deterministic_csv(remote)
    # the values are the real ones: an independent in-process calibration agrees
    space = tasks[0].payload["space"]
    direct = mdp.calibrate("exponential", space, 1.0, delta=1e-3, rtol=5e-3, rng=0)
    rec = local[1]
    assert rec["config"]["eps_tight"] == 1.0 and rec["config"]["mechanism"] == "exponential"
    assert rec["result"]["loss_q"] == direct.loss(0.95)
    assert rec["result"]["eps_tight_measured"] <= 1.0
    assert rec["result"]["eps_tight_measured"] == pytest.approx(1.0, rel=5e-3)
    # the key covers the space's distances: another vocabulary seed is another task
    other = point_task("loss-curves", "glove-30", "exponential", {}, 1.0, seed=1, delta=1e-3, q=0.95, rtol=5e-3)
    assert other.config["space_fingerprint"] != tasks[1].config["space_fingerprint"]
    assert config_key(other.config) != config_key(tasks[1].config)
    assert json.loads(json.dumps(rec["result"]))["loss_q"] == pytest.approx(np.float64(direct.loss(0.95)))


def test_reference_curves_lower_bound_delta_form_and_uniform():
    """The plotted bound is Theorem 3 minus r*delta and stays below the exact optimum's loss."""
    from experiments.common import reference_curves

    rng = np.random.default_rng(3)
    space = mdp.MetricSpace.from_points(rng.uniform(0, 3, size=(8, 2)))
    opt = mdp.build("optimal", space, 1.0)
    t = opt.eps_tight(1e-3)
    ref = reference_curves("toy", space, [t, 2.0], q=0.95, delta=1e-3)
    lb = ref[ref["mechanism"] == "lower_bound"].reset_index(drop=True)
    pure = mdp.lower_bound(space, t)
    assert lb.loc[0, "lower_bound_pure"] == pytest.approx(pure.value)
    assert lb.loc[0, "loss_q"] == pytest.approx(max(0.0, pure.value - pure.r * 1e-3))
    assert 0 < lb.loc[0, "loss_q"] <= opt.loss() + 1e-9
    uni = ref[ref["mechanism"] == "uniform"]
    assert uni["loss_max"].iloc[0] == pytest.approx(space.distances.mean(axis=1).max())
    assert uni["loss_q"].iloc[0] == pytest.approx(np.quantile(space.distances.mean(axis=1), 0.95))


# -- adding a mechanism to a finished loss-curves run (--merge) -------------------------------
def test_loss_curves_merge_keeps_the_earlier_rows_and_replaces_what_it_recomputes(tmp_path):
    import pandas as pd

    from mdp.cli.main import main

    common = ["experiment", "loss-curves", "--spaces", "glove-30", "--eps-tight", "0.5", "1.0",
              "--workers", "0", "--no-progress"]
    assert main(common + ["--mechanisms", "exponential", "-o", str(tmp_path / "a")]) == 0
    first = pd.read_csv(tmp_path / "a" / "loss_curves.csv")
    assert main(common + ["--mechanisms", "optimal", "-o", str(tmp_path / "b"),
                          "--merge", str(tmp_path / "a" / "loss_curves.csv")]) == 0
    both = pd.read_csv(tmp_path / "b" / "loss_curves.csv")
    counts = both.groupby("mechanism").size().to_dict()
    # the earlier mechanism kept, the new one added, the references replaced rather than doubled
    assert counts == {"exponential": 2, "optimal": 2, "lower_bound": 2, "uniform": 2}
    kept = both[both.mechanism == "exponential"].sort_values("eps_tight")
    assert kept["loss_q"].tolist() == first[first.mechanism == "exponential"].sort_values("eps_tight")["loss_q"].tolist()
    # OPTMech at equal eps_tight is never worse than the exponential mechanism (worst-case loss)
    opt = both[both.mechanism == "optimal"].sort_values("eps_tight")["loss_max"].to_numpy()
    assert np.all(opt <= kept["loss_max"].to_numpy() + 1e-9)
    # the summary's tables have both mechanisms' columns
    text = (tmp_path / "b" / "summary.md").read_text()
    assert re.search(r"\|\s+exponential\s+\|\s+lower_bound\s+\|\s+optimal\s+\|\s+uniform\s+\|", text)
    assert "a" + os.sep + "loss_curves.csv` that this run did not compute are kept" in text
    # merging a run into itself replaces its own rows: nothing is doubled
    assert main(common + ["--mechanisms", "optimal", "-o", str(tmp_path / "b"),
                          "--merge", str(tmp_path / "b" / "loss_curves.csv")]) == 0
    assert len(pd.read_csv(tmp_path / "b" / "loss_curves.csv")) == len(both)


def test_loss_curves_merge_refuses_a_file_that_is_not_a_results_table(tmp_path):
    from experiments.common import read_table
    from mdp.errors import FileFormatError

    with pytest.raises(FileFormatError, match=r"nope\.csv: no such file"):
        read_table(tmp_path / "nope.csv")
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n")
    with pytest.raises(FileFormatError, match=r"bad\.csv: not a results table: no column 'space'"):
        read_table(bad, required=("space", "mechanism"))
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(FileFormatError, match=r"empty\.csv: not a results table"):
        read_table(empty)
    # the experiment reads the file before its sweep: nothing is computed for a bad one
    from mdp.cli.main import main

    assert main(["experiment", "loss-curves", "--spaces", "glove-30", "--eps-tight", "1.0",
                 "--mechanisms", "exponential", "--workers", "0", "--no-progress",
                 "-o", str(tmp_path / "c"), "--merge", str(bad)]) != 0
    assert not (tmp_path / "c").exists()


def test_merge_results_replaces_point_by_point():
    import pandas as pd

    from experiments.common import merge_results

    keys = ("space", "mechanism", "seed", "eps_tight")
    earlier = pd.DataFrame({"space": ["g"] * 3, "mechanism": ["lower_bound"] * 3, "seed": [0] * 3,
                            "eps_tight": [0.5, 1.0, 2.0], "loss_q": [1.0, 2.0, 3.0]})
    new = pd.DataFrame({"space": ["g", "g"], "mechanism": ["lower_bound", "spanner"], "seed": [0, 0],
                        "eps_tight": [1.0, 1.0], "loss_q": [20.0, 5.0]})
    out = merge_results(earlier, new, keys=keys).sort_values(["mechanism", "eps_tight"])
    assert out[["mechanism", "eps_tight", "loss_q"]].values.tolist() == [
        ["lower_bound", 0.5, 1.0], ["lower_bound", 1.0, 20.0], ["lower_bound", 2.0, 3.0], ["spanner", 1.0, 5.0]]


# -- reporting an interrupted size sweep from its store (--report-only) -----------------------
@pytest.mark.data   # the report lists a Geolife space, read from the real data
def test_scalability_report_only_reads_the_store_and_computes_nothing(tmp_path, capsys):
    import sqlite3

    import pandas as pd

    from experiments.store import ResultStore
    from mdp.cli.main import main

    store = tmp_path / "store.sqlite"
    common = ["experiment", "scalability", "--families", "glove", "--variants", "constopt-5",
              "--workers", "0", "--no-progress", "--store", str(store)]
    # the interrupted run: only n = 20 finished
    assert main(common + ["--sizes", "20", "-o", str(tmp_path / "run")]) == 0
    first = pd.read_csv(tmp_path / "run" / "scalability.csv")
    with ResultStore(store) as s:
        before = [(r["key"], r["computed"]) for r in s.records()]
    assert len(before) == 1

    capsys.readouterr()
    # a second family that has no finished task at all is reported too (and plotted without error)
    assert main(common[:3] + ["glove", "geolife"] + common[4:]
                + ["--sizes", "20", "30", "--report-only", "-o", str(tmp_path / "rep")]) == 0
    assert "warning" not in capsys.readouterr().err
    rep = pd.read_csv(tmp_path / "rep" / "scalability.csv")
    assert rep["space"].tolist() == ["glove-20", "geolife-20", "glove-30", "geolife-30"]
    assert rep["status"].tolist() == ["ok", "missing", "missing", "missing"]
    assert rep["stats.build_seconds"].iloc[0] == first["stats.build_seconds"].iloc[0]
    text = (tmp_path / "rep" / "scalability.md").read_text()
    assert "not computed yet" in text and "1 of 4 tasks computed" in text
    with ResultStore(store) as s:       # nothing computed, nothing written
        assert [(r["key"], r["computed"]) for r in s.records()] == before
    # loss-vs-size shares the tasks: its report has the stored point
    assert main(["experiment", "loss-vs-size", "--families", "glove", "geolife", "--variants", "constopt-5",
                 "--sizes", "20", "30", "--report-only", "--store", str(store), "--no-progress",
                 "-o", str(tmp_path / "fig2")]) == 0
    fig2 = pd.read_csv(tmp_path / "fig2" / "loss_vs_size.csv")
    assert fig2.loc[fig2["status"] == "ok", "loss_q"].tolist() == first["loss_q"].tolist()

    # no store, or a store with none of the run's tasks: a clear error, no outputs
    capsys.readouterr()
    assert main(common[:-1] + [str(tmp_path / "none.sqlite"), "--sizes", "20", "--report-only",
                               "-o", str(tmp_path / "x")]) == 2
    assert "none.sqlite: no results store here" in capsys.readouterr().err
    assert not (tmp_path / "none.sqlite").exists() and not (tmp_path / "x").exists()
    assert main(common + ["--sizes", "40", "--report-only", "-o", str(tmp_path / "y")]) == 2
    assert "store.sqlite: holds none of the 1 tasks of this run" in capsys.readouterr().err
    assert not (tmp_path / "y").exists()
    with sqlite3.connect(store) as conn:
        assert conn.execute("SELECT COUNT(*) FROM results").fetchone()[0] == 1


def test_pool_workers_end_when_their_parent_is_killed(tmp_path):
    """A SIGKILLed sweep left its idle pool workers running; they now exit on their own."""
    import signal
    import subprocess
    import sys
    import time

    script = (
        "import os, sys, time\n"
        "from experiments.executor import worker_pool\n"
        "pool = worker_pool(2)\n"
        "pids = {pool.submit(os.getpid).result() for _ in range(8)}\n"
        "print(' '.join(map(str, sorted(pids))), flush=True)\n"
        "time.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                            cwd=str(tmp_path), env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    pids = [int(p) for p in proc.stdout.readline().split()]
    assert pids
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()

    def alive(pid):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True

    deadline = time.monotonic() + 15
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    survivors = [p for p in pids if alive(p)]
    for p in survivors:                   # do not leave them behind if the test fails
        os.kill(p, signal.SIGKILL)
    assert not survivors
