r"""A privacy ledger that outlives a run: what each user has spent, across every release.

A per-user budget that starts from zero on every run does not bound anything: a release run
daily spends the budget every day. :class:`PrivacyLedger` keeps, in one SQLite file, a row per
user and release (the epsilon that release spent on that user), so a budget holds across runs:

.. math:: \sum_{\text{releases } r} \epsilon_r(\text{user}) \le B

by basic composition (Dwork & Roth 2014, Theorem 3.16), whatever the number of runs.

A release goes through :meth:`PrivacyLedger.reserve`, a context manager that holds SQLite's
write lock (``BEGIN IMMEDIATE``) from the moment the spent totals are read until the new rows
are committed: two runs at once are serialised, so neither can spend what the other has just
spent. The caller writes its output only after the block has committed; if it fails before,
nothing is recorded and nothing is released (the order "record, then release" means a crash
can waste budget, never release unaccounted).

Every row records the metric and unit of the epsilon (``haversine``: per km), and a ledger
refuses a release in another unit: epsilons per km and per unit of an embedding do not add up.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import math
import os
import sqlite3
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ..errors import FileFormatError, ParameterError

__all__ = ["PrivacyLedger", "Reservation", "LedgerEntry"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS releases (
    id INTEGER PRIMARY KEY,
    run TEXT NOT NULL,
    user TEXT NOT NULL,
    epsilon REAL NOT NULL CHECK (epsilon >= 0),
    unit TEXT NOT NULL,
    mechanism TEXT NOT NULL,
    at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS releases_user ON releases (user);
"""
#: Seconds a run waits for another run's release to finish before giving up.
LOCK_TIMEOUT = 600.0


@dataclass(frozen=True)
class LedgerEntry:
    """One user's account: ``spent`` (total epsilon), ``releases`` (rows), ``last`` (UTC time of
    the latest release, ISO 8601)."""

    user: str
    spent: float
    releases: int
    last: str


class Reservation:
    """The open transaction of one release (:meth:`PrivacyLedger.reserve`): the totals spent
    before it, and the charges it adds."""

    def __init__(self, connection: sqlite3.Connection, spent: dict[str, float], unit: str,
                 mechanism: str):
        self._connection = connection
        self.spent = spent
        self.unit = unit
        self.mechanism = mechanism
        self.run = uuid.uuid4().hex
        self._charges: dict[str, float] = {}

    def charge(self, charges: dict[str, float]) -> None:
        """Record ``{user: epsilon}`` spent by this release (committed when the block ends)."""
        for user, eps in charges.items():
            eps = float(eps)
            if not (math.isfinite(eps) and eps >= 0):
                raise ParameterError(f"a charge must be a finite epsilon >= 0, got {eps!r}")
            if eps > 0:
                self._charges[str(user)] = self._charges.get(str(user), 0.0) + eps

    def _commit(self) -> None:
        now = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
        self._connection.executemany(
            "INSERT INTO releases (run, user, epsilon, unit, mechanism, at) VALUES (?, ?, ?, ?, ?, ?)",
            [(self.run, user, eps, self.unit, self.mechanism, now)
             for user, eps in sorted(self._charges.items())])


class PrivacyLedger:
    """The spent epsilon of every user, across runs, in one SQLite file (module docstring).

    Parameters
    ----------
    path : path-like
        The ledger file; created (with its table) if missing. Its folder must exist.

    Raises
    ------
    FileFormatError
        The file exists but is not a ledger (not SQLite, or without the ledger's table).
    """

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        if self.path.is_dir():
            raise FileFormatError(self.path, "is a directory; a ledger is a file")
        if not self.path.parent.is_dir():
            from ..errors import MissingFileError

            raise MissingFileError(f"{self.path}: its directory {self.path.parent} does not exist")
        with self._connect() as con:
            try:
                con.executescript(_SCHEMA)
                con.execute("SELECT run, user, epsilon, unit, mechanism, at FROM releases LIMIT 1")
            except sqlite3.DatabaseError as exc:
                raise FileFormatError(self.path, f"not a privacy ledger ({exc})") from None

    @contextlib.contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        con = sqlite3.connect(self.path, timeout=LOCK_TIMEOUT, isolation_level=None)
        try:
            yield con
        finally:
            con.close()

    @contextlib.contextmanager
    def reserve(self, users: Iterable[str], *, unit: str, mechanism: str) -> Iterator[Reservation]:
        """Hold the ledger for one release of ``users`` (module docstring).

        Yields a :class:`Reservation` whose ``spent`` holds each user's total so far (0 for a
        user the ledger has not seen); the charges added with :meth:`Reservation.charge` are
        committed when the block ends without an exception, and discarded otherwise.

        Raises
        ------
        ParameterError
            The ledger holds releases in another unit.
        """
        with self._connect() as con:
            try:
                con.execute("BEGIN IMMEDIATE")          # the write lock, before reading totals
            except sqlite3.OperationalError as exc:
                raise FileFormatError(self.path, f"cannot lock the ledger ({exc})") from None
            try:
                units = {u for (u,) in con.execute("SELECT DISTINCT unit FROM releases")}
                if units - {unit}:
                    raise ParameterError(f"{self.path} holds releases of epsilon "
                                         f"{', '.join(sorted(units))}; this release's epsilon is "
                                         f"{unit}, and the two do not add up: use another ledger")
                wanted = sorted({str(u) for u in users})
                spent = dict.fromkeys(wanted, 0.0)
                for start in range(0, len(wanted), 900):           # SQLite's variable limit
                    chunk = wanted[start:start + 900]
                    rows = con.execute(
                        "SELECT user, SUM(epsilon) FROM releases WHERE user IN "
                        f"({','.join('?' * len(chunk))}) GROUP BY user", chunk)
                    spent.update({u: float(s) for u, s in rows})
                reservation = Reservation(con, spent, unit, mechanism)
                yield reservation
                reservation._commit()
                con.execute("COMMIT")
            except BaseException:
                con.execute("ROLLBACK")
                raise

    def entries(self, users: Iterable[str] | None = None) -> list[LedgerEntry]:
        """Every user's account (or those of ``users``), most spent first."""
        with self._connect() as con:
            rows = con.execute("SELECT user, SUM(epsilon), COUNT(*), MAX(at) FROM releases "
                               "GROUP BY user ORDER BY SUM(epsilon) DESC, user").fetchall()
        wanted = None if users is None else {str(u) for u in users}
        return [LedgerEntry(u, float(s), int(c), str(t)) for u, s, c, t in rows
                if wanted is None or u in wanted]

    def units(self) -> list[str]:
        """The units of the epsilons it holds (one, or none for an empty ledger)."""
        with self._connect() as con:
            return [u for (u,) in con.execute("SELECT DISTINCT unit FROM releases ORDER BY unit")]

    def runs(self) -> int:
        """How many releases (runs) it records."""
        with self._connect() as con:
            return int(con.execute("SELECT COUNT(DISTINCT run) FROM releases").fetchone()[0])
