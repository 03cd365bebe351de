"""The privacy ledger: totals across runs, serialised writers, refusal of mixed units."""

from __future__ import annotations

import multiprocessing as mp
import sqlite3

import pytest

from mdp.errors import FileFormatError, ParameterError
from mdp.privacy.ledger import PrivacyLedger


def test_totals_add_up_across_releases(tmp_path):
    ledger = PrivacyLedger(tmp_path / "l.sqlite")
    with ledger.reserve(["ann", "bob"], unit="per km", mechanism="exponential") as held:
        assert held.spent == {"ann": 0.0, "bob": 0.0}
        held.charge({"ann": 2.5, "bob": 1.0})
    with PrivacyLedger(tmp_path / "l.sqlite").reserve(["ann", "cy"], unit="per km",
                                                      mechanism="exponential") as held:
        assert held.spent == {"ann": 2.5, "cy": 0.0}
        held.charge({"ann": 2.5, "cy": 0.0})
    entries = {e.user: (e.spent, e.releases) for e in ledger.entries()}
    assert entries == {"ann": (5.0, 2), "bob": (1.0, 1)}
    assert ledger.runs() == 2 and ledger.units() == ["per km"]


def test_a_failed_release_records_nothing(tmp_path):
    ledger = PrivacyLedger(tmp_path / "l.sqlite")
    with pytest.raises(RuntimeError), ledger.reserve(["ann"], unit="per km",
                                                     mechanism="exponential") as held:
        held.charge({"ann": 3.0})
        raise RuntimeError("the release failed before its output was written")
    assert ledger.entries() == []


def test_units_do_not_mix_and_bad_files_are_refused(tmp_path):
    ledger = PrivacyLedger(tmp_path / "l.sqlite")
    with ledger.reserve(["ann"], unit="per km", mechanism="exponential") as held:
        held.charge({"ann": 1.0})
    with pytest.raises(ParameterError, match="do not add up"), \
            ledger.reserve(["ann"], unit="per unit (euclidean)", mechanism="madlib"):
        pass
    (tmp_path / "x.sqlite").write_bytes(b"not a database at all" * 100)
    with pytest.raises(FileFormatError, match="not a privacy ledger"):
        PrivacyLedger(tmp_path / "x.sqlite")
    con = sqlite3.connect(tmp_path / "other.sqlite")
    con.execute("CREATE TABLE releases (a TEXT)")
    con.commit()
    con.close()
    with pytest.raises(FileFormatError, match="not a privacy ledger"):
        PrivacyLedger(tmp_path / "other.sqlite")
    with pytest.raises(ParameterError, match="finite epsilon"), \
            ledger.reserve(["ann"], unit="per km", mechanism="exponential") as held:
        held.charge({"ann": float("nan")})


def _spend(path, budget, eps, queue):
    ledger = PrivacyLedger(path)
    with ledger.reserve(["ann"], unit="per km", mechanism="exponential") as held:
        left = budget - held.spent["ann"]
        granted = eps if eps <= left + 1e-12 else 0.0
        held.charge({"ann": granted})
    queue.put(granted)


def test_concurrent_releases_never_exceed_the_budget(tmp_path):
    path = tmp_path / "l.sqlite"
    PrivacyLedger(path)
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_spend, args=(path, 6.0, 2.8, queue)) for _ in range(6)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    granted = sorted(queue.get(timeout=10) for _ in procs)
    assert granted == [0.0] * 4 + [2.8, 2.8]              # two fit in 6, whatever the order
    assert PrivacyLedger(path).entries()[0].spent == pytest.approx(5.6)
