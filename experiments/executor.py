"""Sweep runner: independent tasks through an executor, results in a :class:`ResultStore`.

A sweep is a list of :class:`Task` s. Each task names a function ``"module:function"`` and holds

* ``config``: everything that determines the result (JSON-able; its hash is the store key;
  the task function is part of it), and
* ``payload``: inputs that are *derived* from the config and only passed along (e.g. the
  :class:`~mdp.MetricSpace`, whose distance hash is in the config), so workers need not rebuild
  them.

:func:`run_sweep` skips every task whose configuration is already in the store, runs the rest
through local processes (``concurrent.futures.ProcessPoolExecutor``, the default), serially in
this process (``workers=0``) or on a Dask cluster (``scheduler="tcp://HOST:PORT"`` or a
``distributed.Client``; the optional extra ``dask``), and writes each result to the store as it
arrives, in its own transaction. Killing the sweep at any point loses only the tasks in flight.

Several runs may sweep one store at the same time: a run computes only the tasks it claims
(:meth:`ResultStore.claim`, a lease per task), skips those another live run holds and waits for
their results, and takes over the leases of runs that died. So each task is computed once, and
every run returns all the records.

Determinism: a task function draws its randomness only from seeds in its config, so the same
sweep gives the same results whichever executor runs it (timings aside).

Task functions have the signature ``fn(config: dict, **payload) -> dict`` and return a JSON-able
dict of measurements.
"""

from __future__ import annotations

import importlib
import os
import pickle
import subprocess
import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass, field

import pandas as pd
from tqdm.auto import tqdm

from .store import BUSY, CLAIMED, ResultStore, config_key, rerun_status

__all__ = ["Task", "run_sweep", "execute_task", "records_frame", "flatten", "default_workers",
           "worker_pool"]

# How often a run looks again at tasks other runs are computing (seconds).
_POLL_SECONDS = 0.25


@dataclass(frozen=True)
class Task:
    """One unit of a sweep.

    Parameters
    ----------
    config : dict
        JSON-able; must contain ``"experiment"`` and ``"task"`` (``"module:function"``).
    payload : dict
        Extra keyword arguments for the task function, not part of the key.
    """

    config: dict
    payload: dict = field(default_factory=dict)

    def __post_init__(self):
        if not isinstance(self.config, Mapping):
            raise TypeError(f"config must be a dict, got {type(self.config).__name__}")
        for req in ("experiment", "task"):
            if not isinstance(self.config.get(req), str) or not self.config[req]:
                raise ValueError(f"config needs a non-empty string {req!r}, got {self.config.get(req)!r}")
        if ":" not in self.config["task"]:
            raise ValueError(f"config['task'] must be 'module:function', got {self.config['task']!r}")
        if not isinstance(self.payload, Mapping):
            raise TypeError(f"payload must be a dict, got {type(self.payload).__name__}")

    @property
    def key(self) -> str:
        return config_key(self.config)


def default_workers() -> int:
    """Two local processes at most: the machines this runs on are small and shared."""
    return max(1, min(2, os.cpu_count() or 1))


def _resolve(path: str):
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


def _call(config: dict, payload: dict) -> tuple[str, dict]:
    try:
        result = _resolve(config["task"])(dict(config), **payload)
    except Exception as exc:  # a failed task is a result too: recorded, retried on the next run
        return "error", {"error": f"{type(exc).__name__}: {exc}",
                         "traceback": traceback.format_exc(limit=8)}
    if not isinstance(result, Mapping):
        return "error", {"error": f"task returned {type(result).__name__}, expected dict"}
    return "ok", dict(result)


def _call_in_subprocess(config: dict, payload: dict, timeout: float) -> tuple[str, dict]:
    # A child interpreter rather than multiprocessing: Dask and pool workers may be daemonic
    # (no children allowed), and an LP solver stuck in C code can only be stopped by killing.
    try:
        proc = subprocess.run([sys.executable, "-m", "experiments.executor"],
                              input=pickle.dumps((config, payload)), capture_output=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout", {"error": f"time limit of {timeout:g} s exceeded", "time_limit": timeout}
    if proc.returncode != 0:
        tail = proc.stderr.decode(errors="replace")[-2000:]
        return "error", {"error": f"task process exited with code {proc.returncode}", "stderr": tail}
    return pickle.loads(proc.stdout)


def execute_task(config: dict, payload: dict, timeout: float | None = None) -> tuple[str, dict, float]:
    """Run one task (in a worker): ``(status, result, seconds)``.

    ``status`` is ``"ok"``, ``"error"`` (the exception, with traceback, is the result) or
    ``"timeout"`` (only with ``timeout``: the task then runs in a child process killed after
    ``timeout`` seconds).
    """
    t0 = time.perf_counter()
    if timeout is None:
        status, result = _call(config, payload)
    else:
        status, result = _call_in_subprocess(config, payload, timeout)
    return status, result, time.perf_counter() - t0


class _SerialRunner:
    """Runs each task in this process as it is submitted."""

    def __init__(self, timeout):
        self.timeout, self._done = timeout, []
        self.capacity = 1

    @property
    def active(self) -> int:
        return len(self._done)

    def submit(self, task: Task) -> None:
        self._done.append((task, execute_task(task.config, task.payload, self.timeout)))

    def collect(self, wait_s: float) -> list:
        done, self._done = self._done, []
        return done

    def close(self) -> None:
        pass


#: How often a pool worker checks that the process that started it is still alive (seconds).
PARENT_CHECK_SECONDS = 1.0


def _exit_with_parent(parent: int, every: float) -> None:
    """Pool worker initializer: a daemon thread ends this worker once its parent is gone.

    A sweep killed with SIGKILL cannot shut its pool down; its workers, re-parented to init,
    would otherwise idle forever holding their memory. Polling the parent id works on every
    POSIX system (Linux's ``PR_SET_PDEATHSIG`` fires when the starting *thread* exits, which
    for a pool is not the process).
    """
    def watch() -> None:
        while True:
            time.sleep(every)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


def worker_pool(workers: int) -> ProcessPoolExecutor:
    """A process pool whose workers end within :data:`PARENT_CHECK_SECONDS` of their parent's
    death (however it died)."""
    return ProcessPoolExecutor(max_workers=workers, initializer=_exit_with_parent,
                               initargs=(os.getpid(), PARENT_CHECK_SECONDS))


class _PoolRunner:
    """Local processes; at most ``workers`` tasks in flight, so concurrent runs share the work."""

    def __init__(self, workers: int, timeout):
        self.timeout, self.capacity = timeout, workers
        self._pool = worker_pool(workers)
        self._pending: dict = {}

    @property
    def active(self) -> int:
        return len(self._pending)

    def submit(self, task: Task) -> None:
        fut = self._pool.submit(execute_task, task.config, task.payload, self.timeout)
        self._pending[fut] = task

    def collect(self, wait_s: float) -> list:
        done, _ = wait(self._pending, timeout=wait_s, return_when=FIRST_COMPLETED)
        return [(self._pending.pop(f), f.result()) for f in done]

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


class _DaskRunner:
    """A Dask cluster: every claimed task is submitted at once."""

    def __init__(self, scheduler, timeout):
        try:
            from distributed import Client
        except ImportError:  # pragma: no cover - depends on the environment
            raise ImportError("running on a Dask cluster needs the optional extra 'dask': "
                              "pip install 'mdp-toolkit[dask]'") from None
        self._own = isinstance(scheduler, str)
        self._client = Client(scheduler) if self._own else scheduler
        if not isinstance(self._client, Client):
            raise TypeError(f"scheduler must be an address 'tcp://HOST:PORT' or a distributed.Client, "
                            f"got {type(scheduler).__name__}")
        self.timeout, self.capacity = timeout, sys.maxsize
        self._pending: dict = {}

    @property
    def active(self) -> int:
        return len(self._pending)

    def submit(self, task: Task) -> None:
        fut = self._client.submit(execute_task, task.config, task.payload, self.timeout, pure=False)
        self._pending[fut] = task

    def collect(self, wait_s: float) -> list:
        from distributed import wait as dask_wait

        try:
            dask_wait(list(self._pending), timeout=wait_s, return_when="FIRST_COMPLETED")
        except TimeoutError:
            return []
        done = [f for f in self._pending if f.done()]
        return [(self._pending.pop(f), f.result()) for f in done]

    def close(self) -> None:
        if self._own:
            self._client.close()


class _Claims:
    """Which tasks of a sweep this run computes, under the store's leases.

    Each task is *pending* (not yet claimed), *claimed* by this run (then submitted), *busy*
    (another live run holds it: this run waits for its result) or *finished* (a result is
    stored, by any run). :meth:`next` claims pending tasks in order; :meth:`recheck` puts busy
    tasks back to pending, to be claimed when their holder died or finished.
    """

    def __init__(self, store: ResultStore, tasks: list[Task], retry_errors: bool,
                 retry_timeouts: bool = False):
        self.store, self.retry_errors, self.retry_timeouts = store, retry_errors, retry_timeouts
        self.started = time.time()
        self.pending = deque(tasks)
        self.busy: list[Task] = []
        self.finished_elsewhere = 0

    @property
    def waiting(self) -> bool:
        return bool(self.pending or self.busy)

    def next(self) -> Task | None:
        while self.pending:
            task = self.pending.popleft()
            state = self.store.claim(task.config, retry_errors=self.retry_errors,
                                     errors_before=self.started,
                                     retry_timeouts=self.retry_timeouts)
            if state == CLAIMED:
                return task
            if state == BUSY:
                self.busy.append(task)
            else:
                self.finished_elsewhere += 1
        return None

    def recheck(self) -> None:
        self.pending.extend(self.busy)
        self.busy = []


def _runner(scheduler, workers: int, timeout):
    if scheduler is not None:
        return _DaskRunner(scheduler, timeout)
    return _SerialRunner(timeout) if workers == 0 else _PoolRunner(workers, timeout)


def run_sweep(tasks: Sequence[Task], store: ResultStore, *, scheduler=None,
              workers: int | None = None, timeout: float | None = None, progress: bool = True,
              desc: str = "sweep", retry_errors: bool = True,
              retry_timeouts: bool = False) -> list[dict]:
    """Run every task not yet in ``store`` and return all their records, in task order.

    Parameters
    ----------
    tasks : sequence of Task
        Duplicated configurations run once.
    store : ResultStore
        Finished tasks are read from and written to it (one transaction per result). Other
        runs may use it at the same time: tasks are claimed under leases (see the module doc).
    scheduler : None, str or distributed.Client
        ``None``: local processes. ``"tcp://HOST:PORT"`` or a ``Client``: a Dask cluster (the
        workers must have this package installed).
    workers : int, optional
        Local processes (default :func:`default_workers`); ``0`` runs serially in this process.
    timeout : float, optional
        Per-task time limit in seconds; a task over it is stopped and stored as ``"timeout"``
        (not retried unless ``retry_timeouts``; a larger limit is a different configuration only
        if the task puts it in its config).
    progress : bool
        tqdm progress bar.
    retry_errors : bool, default True
        Recompute tasks stored with status ``"error"``.
    retry_timeouts : bool, default False
        Recompute tasks stored with status ``"timeout"`` (after the code got faster, or with a
        larger ``timeout``).

    Returns
    -------
    list of dict
        One record per distinct task: ``config``, ``status``, ``result``, ``seconds``,
        ``computed`` (how many times it has been computed, over all runs).
    """
    tasks = list(tasks)
    for t in tasks:
        if not isinstance(t, Task):
            raise TypeError(f"tasks must be Task objects, got {type(t).__name__}")
    if not isinstance(store, ResultStore):
        raise TypeError(f"store must be a ResultStore, got {type(store).__name__}")
    if workers is None:
        workers = default_workers()
    if not isinstance(workers, int) or isinstance(workers, bool) or workers < 0:
        raise ValueError(f"workers must be an int >= 0, got {workers!r}")
    if timeout is not None and not timeout > 0:
        raise ValueError(f"timeout must be > 0 seconds, got {timeout!r}")

    unique: dict[str, Task] = {}
    for t in tasks:
        unique.setdefault(t.key, t)
    todo = []
    for t in unique.values():
        rec = store.get_record(t.config)
        if rec is None or rerun_status(rec["status"], retry_errors=retry_errors,
                                       retry_timeouts=retry_timeouts):
            todo.append(t)
    done_before = len(unique) - len(todo)
    bar = tqdm(total=len(unique), initial=done_before, desc=desc, disable=not progress,
               unit="task", dynamic_ncols=True)
    claims = _Claims(store, todo, retry_errors, retry_timeouts)
    try:
        with store.leasing():
            runner = _runner(scheduler, workers, timeout) if todo else None
            try:
                failed = 0
                while runner is not None and (runner.active or claims.waiting):
                    while runner.active < runner.capacity and (task := claims.next()) is not None:
                        runner.submit(task)
                    if runner.active:
                        finished = runner.collect(_POLL_SECONDS)
                    else:                    # only tasks other runs compute: wait for them
                        if claims.busy:
                            time.sleep(_POLL_SECONDS)
                        finished = []
                    for task, (status, result, seconds) in finished:
                        store.put(task.config, result, status=status, seconds=seconds)
                        failed += status != "ok"
                        bar.update(1)
                        if failed:
                            bar.set_postfix(failed=failed)
                    bar.update(claims.finished_elsewhere)
                    claims.finished_elsewhere = 0
                    claims.recheck()
            finally:
                if runner is not None:
                    runner.close()
    finally:
        bar.close()
    records = []
    for t in unique.values():
        rec = store.get_record(t.config)
        records.append({"config": dict(t.config), **{k: rec[k] for k in ("status", "result", "seconds", "computed")}})
    return records


def flatten(d: Mapping, prefix: str = "", sep: str = ".") -> dict:
    """Nested dicts to one level, keys joined by ``sep``; lists are kept as they are."""
    out = {}
    for k, v in d.items():
        name = f"{prefix}{sep}{k}" if prefix else str(k)
        if isinstance(v, Mapping):
            out.update(flatten(v, name, sep))
        else:
            out[name] = v
    return out


def records_frame(records: Sequence[dict], *, drop: Sequence[str] = ("task",)) -> pd.DataFrame:
    """Tidy table: one row per record, config columns then ``status`` then result columns.

    Result keys that clash with config keys get the prefix ``result.``; ``seconds`` is the wall
    time of the task and ``computed`` how many times it ran.
    """
    rows = []
    for rec in records:
        cfg = {k: v for k, v in flatten(rec["config"]).items() if k not in drop}
        res = flatten(rec["result"])
        row = dict(cfg)
        row["status"] = rec["status"]
        for k, v in res.items():
            row[f"result.{k}" if k in cfg else k] = v
        row["task_seconds"] = rec["seconds"]
        rows.append(row)
    return pd.DataFrame(rows)


def _child_main() -> None:
    config, payload = pickle.loads(sys.stdin.buffer.read())
    out = sys.stdout.buffer
    sys.stdout = sys.stderr  # anything the task prints must not corrupt the pickled answer
    status, result = _call(config, payload)
    out.write(pickle.dumps((status, result)))
    out.flush()


if __name__ == "__main__":
    _child_main()
