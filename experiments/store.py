"""Results store: one SQLite file holding every finished task of an experiment sweep.

A task is identified by its *configuration*: a JSON-able dict naming everything that determines
its result (experiment, mechanism, parameters, space and a hash of its distances, target
eps_tight, seed, code version). The key is the SHA-256 of the canonical JSON of that dict
(sorted keys, no whitespace, floats in Python's shortest round-trip form), so the same
configuration always maps to the same row, on any machine and in any process.

Each result is written in its own transaction (SQLite's journal makes it atomic): a sweep killed
at any point leaves only complete rows, and rerunning it skips every configuration already stored.
Within one sweep only the driving process writes (workers return results to it).

Several sweeps may share one store at the same time (two shells, two machines on a shared
disk): a task is computed by the run that *claims* it. :meth:`ResultStore.claim` takes a
*lease* on the task in one ``BEGIN IMMEDIATE`` transaction (SQLite's write lock makes the
check-and-take atomic), so no two runs hold it at once; the other runs skip it and wait for its
result. A lease lasts ``lease_seconds`` and is renewed by a heartbeat while its run lives
(:meth:`ResultStore.leasing`); storing the result ends it. A lease whose run died (its process
is gone on this host, or it was not renewed in time) is stale and any run takes it over, so a
killed sweep resumes without waiting.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import socket
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import numpy as np

__all__ = ["ResultStore", "canonical_json", "config_key", "rerun_status", "STORE_FORMAT", "CLAIMED", "DONE",
           "BUSY"]

#: Part of every key: bump it when the meaning of stored results changes.
STORE_FORMAT = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS results (
    key         TEXT PRIMARY KEY,
    experiment  TEXT NOT NULL,
    config      TEXT NOT NULL,
    status      TEXT NOT NULL,
    result      TEXT NOT NULL,
    seconds     REAL,
    computed    INTEGER NOT NULL DEFAULT 1,
    host        TEXT,
    finished_at REAL
)
"""

# One row per task being computed by some run: who holds it and until when.
_LEASES = """
CREATE TABLE IF NOT EXISTS leases (
    key     TEXT PRIMARY KEY,
    owner   TEXT NOT NULL,
    host    TEXT NOT NULL,
    pid     INTEGER NOT NULL,
    expires REAL NOT NULL
)
"""

#: Seconds a run waits for another run's lock on the store before giving up.
_BUSY_TIMEOUT = 60.0


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


#: Results of :meth:`ResultStore.claim`.
CLAIMED, DONE, BUSY = "claimed", "done", "busy"


def rerun_status(status: str, *, retry_errors: bool, retry_timeouts: bool) -> bool:
    """Whether a task stored with ``status`` is computed again (an error when ``retry_errors``,
    a timeout when ``retry_timeouts``; a result never)."""
    return (retry_errors and status == "error") or (retry_timeouts and status == "timeout")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:     # e.g. PermissionError: it exists, owned by someone else
        return True
    return True


def _plain(obj, path: str = "config"):
    """Convert numpy scalars/arrays to Python values; reject anything JSON cannot hold."""
    if isinstance(obj, Mapping):
        out = {}
        for k, v in obj.items():
            if not isinstance(k, str):
                raise TypeError(f"{path} keys must be strings, got {k!r}")
            out[k] = _plain(v, f"{path}[{k!r}]")
        return out
    if isinstance(obj, (list, tuple)):
        return [_plain(v, f"{path}[{i}]") for i, v in enumerate(obj)]
    if isinstance(obj, np.ndarray):
        return _plain(obj.tolist(), path)
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, bool) or obj is None or isinstance(obj, (int, str)):
        return obj
    if isinstance(obj, float):
        if not math.isfinite(obj):
            raise ValueError(f"{path} must be finite to be part of a key, got {obj!r}")
        return obj
    raise TypeError(f"{path} must be JSON-able (dict, list, str, int, float, bool, None), "
                    f"got {type(obj).__name__}")


def canonical_json(config: Mapping) -> str:
    """Canonical JSON text of ``config``: sorted keys, compact separators, finite floats.

    ``1`` and ``1.0`` are different configurations (JSON keeps the distinction); numpy scalars
    are converted to Python numbers first.

    Raises
    ------
    TypeError
        ``config`` is not a dict or holds a value JSON cannot represent (the message names it).
    ValueError
        A float is NaN or infinite.
    """
    if not isinstance(config, Mapping):
        raise TypeError(f"config must be a dict, got {type(config).__name__}")
    return json.dumps(_plain(config), sort_keys=True, separators=(",", ":"), allow_nan=False)


def config_key(config: Mapping) -> str:
    """SHA-256 (hex) of ``{"store_format": STORE_FORMAT, "config": config}`` in canonical JSON."""
    text = canonical_json({"store_format": STORE_FORMAT, "config": _plain(config)})
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _result_json(result: Mapping) -> str:
    def default(o):
        if isinstance(o, np.generic):
            return o.item()
        if isinstance(o, np.ndarray):
            return o.tolist()
        return repr(o)

    # NaN / inf are legitimate measurements (e.g. a diverged solve): Python's JSON round-trips them.
    return json.dumps(result, sort_keys=True, default=default, allow_nan=True)


class ResultStore:
    """A SQLite file of finished tasks, keyed by :func:`config_key`.

    Parameters
    ----------
    path : str or PathLike
        The database file; created with its parent directory if missing.
    lease_seconds : float
        How long a claim on a task lasts without a heartbeat (see :meth:`claim`).

    Raises
    ------
    ValueError
        ``path`` exists and is not a results store (the message names the file).
    TimeoutError
        Another process kept the file locked for 60 s while this one opened it.

    Examples
    --------
    >>> store = ResultStore(tmp_path / "results.sqlite")          # doctest: +SKIP
    >>> store.put({"experiment": "demo", "seed": 0}, {"loss": 1.5})  # doctest: +SKIP
    >>> store.get({"experiment": "demo", "seed": 0})               # doctest: +SKIP
    {'loss': 1.5}
    """

    def __init__(self, path: str | os.PathLike, *, lease_seconds: float = 60.0):
        if not (isinstance(lease_seconds, (int, float)) and math.isfinite(lease_seconds)
                and lease_seconds > 0):
            raise ValueError(f"lease_seconds must be a finite number > 0, got {lease_seconds!r}")
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.lease_seconds = float(lease_seconds)
        self.host, self.pid = socket.gethostname(), os.getpid()
        #: Identifies this store object's leases (one run may hold several).
        self.owner = f"{self.host}:{self.pid}:{uuid.uuid4().hex[:12]}"
        # isolation_level=None: explicit BEGIN/COMMIT below, one transaction per write.
        self._conn = self._connect()
        try:
            self._set_up()
        except sqlite3.DatabaseError as exc:
            self._conn.close()
            if isinstance(exc, sqlite3.OperationalError) and _is_busy(exc):
                raise TimeoutError(f"{self.path}: the results store stayed locked by another process "
                                   f"for {_BUSY_TIMEOUT:g} s while opening it ({exc})") from None
            raise ValueError(f"{self.path}: not a results store ({exc})") from None

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=_BUSY_TIMEOUT, isolation_level=None)

    def _set_up(self) -> None:
        """WAL journal and the two tables, safe against other runs opening the same file at once.

        SQLite answers a journal-mode change with "database is locked" at once, without waiting
        on the busy timeout, while another connection is opening the file; so that step is retried
        until the timeout. The tables are created under the write lock, which does wait.
        """
        deadline = time.monotonic() + _BUSY_TIMEOUT
        pause = 0.005
        while True:
            try:
                self._conn.execute("PRAGMA journal_mode=WAL")
                break
            except sqlite3.OperationalError as exc:
                if not _is_busy(exc) or time.monotonic() >= deadline:
                    raise
                time.sleep(pause)
                pause = min(2 * pause, 0.25)
        self._conn.execute("PRAGMA synchronous=FULL")
        with self._transaction():
            self._conn.execute(_SCHEMA)
            self._conn.execute(_LEASES)

    @contextmanager
    def _transaction(self, conn: sqlite3.Connection | None = None):
        conn = self._conn if conn is None else conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    # -- context management ---------------------------------------------------------------------
    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> ResultStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- reading --------------------------------------------------------------------------------
    def __contains__(self, config: Mapping) -> bool:
        return self.get_record(config) is not None

    def __len__(self) -> int:
        return int(self._conn.execute("SELECT COUNT(*) FROM results").fetchone()[0])

    def get_record(self, config: Mapping) -> dict | None:
        """The stored row of ``config`` (keys: key, status, result, seconds, computed), or None."""
        row = self._conn.execute(
            "SELECT key, status, result, seconds, computed FROM results WHERE key = ?",
            (config_key(config),)).fetchone()
        if row is None:
            return None
        return {"key": row[0], "status": row[1], "result": json.loads(row[2]),
                "seconds": row[3], "computed": row[4]}

    def get(self, config: Mapping) -> dict | None:
        """The stored result of ``config``, or None when it has not been computed."""
        rec = self.get_record(config)
        return None if rec is None else rec["result"]

    def keys(self) -> set[str]:
        return {r[0] for r in self._conn.execute("SELECT key FROM results")}

    def records(self, experiment: str | None = None) -> Iterator[dict]:
        """Every stored row (optionally of one experiment), config and result decoded."""
        sql = "SELECT key, experiment, config, status, result, seconds, computed FROM results"
        args: tuple = ()
        if experiment is not None:
            sql += " WHERE experiment = ?"
            args = (experiment,)
        for key, exp, cfg, status, res, secs, computed in self._conn.execute(sql + " ORDER BY rowid", args):
            yield {"key": key, "experiment": exp, "config": json.loads(cfg), "status": status,
                   "result": json.loads(res), "seconds": secs, "computed": computed}

    # -- writing --------------------------------------------------------------------------------
    def put(self, config: Mapping, result: Mapping, *, status: str = "ok",
            seconds: float | None = None) -> str:
        """Store ``result`` for ``config`` in one transaction; returns the key.

        Writing a configuration again replaces its result and increments its ``computed`` count
        (how many times it was computed: the resume tests read it).
        """
        if not isinstance(result, Mapping):
            raise TypeError(f"result must be a dict, got {type(result).__name__}")
        if not isinstance(status, str) or not status:
            raise ValueError(f"status must be a non-empty string, got {status!r}")
        key = config_key(config)
        cfg = canonical_json(config)
        experiment = str(config.get("experiment", ""))
        payload = _result_json(result)
        with self._transaction() as conn:
            conn.execute(
                "INSERT INTO results (key, experiment, config, status, result, seconds, computed, host,"
                " finished_at) VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?)"
                " ON CONFLICT(key) DO UPDATE SET status = excluded.status, result = excluded.result,"
                " seconds = excluded.seconds, computed = results.computed + 1, host = excluded.host,"
                " finished_at = excluded.finished_at",
                (key, experiment, cfg, status, payload, seconds, self.host, time.time()))
            conn.execute("DELETE FROM leases WHERE key = ?", (key,))   # the task is finished
        return key

    def delete(self, config: Mapping) -> bool:
        """Forget ``config`` (so the next sweep recomputes it); True when a row was removed."""
        with self._transaction() as conn:
            cur = conn.execute("DELETE FROM results WHERE key = ?", (config_key(config),))
        return cur.rowcount > 0

    # -- leases: one run computes a task ------------------------------------------------------------
    def _stale(self, host: str, pid: int, expires: float, now: float) -> bool:
        return expires < now or (host == self.host and not _pid_alive(pid))

    def claim(self, config: Mapping, *, retry_errors: bool = True,
              errors_before: float | None = None, retry_timeouts: bool = False) -> str:
        """Take the lease on ``config`` unless it is finished or another live run holds it.

        Check and take happen in one ``BEGIN IMMEDIATE`` transaction, so of several runs
        claiming the same task exactly one gets it.

        Parameters
        ----------
        config : dict
        retry_errors : bool, default True
            A task stored with status ``"error"`` may be claimed again ...
        errors_before : float, optional
            ... but only when that error was stored before this time (``time.time()``; a run
            passes its start time, so an error another run stored meanwhile is final for it).
        retry_timeouts : bool, default False
            Likewise for a task stored with status ``"timeout"`` (final unless asked: a timeout
            is a result of the configuration's time limit).

        Returns
        -------
        str
            :data:`CLAIMED` (compute it, then :meth:`put` it), :data:`DONE` (a result is
            stored) or :data:`BUSY` (another live run holds the lease: wait for its result).
        """
        key = config_key(config)
        now = time.time()
        with self._transaction() as conn:
            row = conn.execute("SELECT status, finished_at FROM results WHERE key = ?",
                               (key,)).fetchone()
            if row is not None:
                retry = rerun_status(row[0], retry_errors=retry_errors,
                                     retry_timeouts=retry_timeouts) and (
                    errors_before is None or row[1] is None or row[1] < errors_before)
                if not retry:
                    return DONE
            lease = conn.execute("SELECT owner, host, pid, expires FROM leases WHERE key = ?",
                                 (key,)).fetchone()
            if lease is not None and lease[0] != self.owner and not self._stale(*lease[1:], now):
                return BUSY
            conn.execute("INSERT OR REPLACE INTO leases (key, owner, host, pid, expires) "
                         "VALUES (?, ?, ?, ?, ?)",
                         (key, self.owner, self.host, self.pid, now + self.lease_seconds))
        return CLAIMED

    def release(self, config: Mapping | None = None) -> None:
        """Give up this store's lease on ``config`` (all of its leases when None)."""
        with self._transaction() as conn:
            if config is None:
                conn.execute("DELETE FROM leases WHERE owner = ?", (self.owner,))
            else:
                conn.execute("DELETE FROM leases WHERE key = ? AND owner = ?",
                             (config_key(config), self.owner))

    def leases(self) -> list[dict]:
        """The current leases (key, owner, host, pid, expires), e.g. to see who computes what."""
        rows = self._conn.execute("SELECT key, owner, host, pid, expires FROM leases ORDER BY key")
        return [dict(zip(("key", "owner", "host", "pid", "expires"), r, strict=True)) for r in rows]

    def _renew(self, conn: sqlite3.Connection) -> None:
        with self._transaction(conn):
            conn.execute("UPDATE leases SET expires = ? WHERE owner = ?",
                         (time.time() + self.lease_seconds, self.owner))

    @contextmanager
    def leasing(self):
        """Keep this store's leases alive while the block runs; release them all at its end.

        A heartbeat thread (with its own connection) renews them every ``lease_seconds / 4``
        seconds, so a task may run far longer than ``lease_seconds`` without being taken over.
        """
        stop = threading.Event()

        def beat():
            conn = self._connect()
            try:
                while not stop.wait(self.lease_seconds / 4):
                    try:
                        self._renew(conn)
                    except sqlite3.Error:   # busy beyond the timeout: try again next beat
                        pass
            finally:
                conn.close()

        thread = threading.Thread(target=beat, name="result-store-leases", daemon=True)
        thread.start()
        try:
            yield self
        finally:
            stop.set()
            thread.join()
            self.release()

    def __repr__(self) -> str:
        return f"ResultStore({str(self.path)!r}, {len(self)} results)"
