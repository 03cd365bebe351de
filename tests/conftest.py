"""Shared fixtures, and the rule for tests that need the real data sets.

A test that reads the Geolife / Gowalla data (the ``shared_data`` fixture, or the ``data``
marker for a test that reaches the data another way) is marked ``data``. Where the data are not
on the machine it is skipped with a reason naming the data and how to get them, so ``pytest``
passes on a fresh clone. With ``MDP_REQUIRE_DATA=1`` (set by ``.ci/run``, which has the data
beside the checkout) a data test that skips fails instead: CI cannot silently lose them.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import matplotlib
import pytest

from mdp.errors import DataNotFoundError
from mdp.io import shared_data_dir

matplotlib.use("Agg")

ROOT = Path(__file__).resolve().parents[1]

#: Environment variable that turns a skipped data test into a failure.
REQUIRE_DATA = "MDP_REQUIRE_DATA"

#: Prefix of every data test's skip reason (``.ci/run`` checks it on the run without data).
SKIP_PREFIX = "needs the real Geolife/Gowalla data sets"


def data_required() -> bool:
    return os.environ.get(REQUIRE_DATA, "") not in ("", "0")


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "data: needs the real Geolife/Gowalla data sets ($MDP_DATA_DIR or "
                   "../shared/data); skipped where they are absent")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    for item in items:
        if "shared_data" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.data)


def pytest_runtest_setup(item):
    if item.get_closest_marker("data") is None:
        return
    try:
        shared_data_dir()
    except DataNotFoundError as exc:
        if data_required():
            pytest.fail(f"{REQUIRE_DATA} is set but the data are missing: {exc}", pytrace=False)
        pytest.skip(f"{SKIP_PREFIX}: {exc}")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.skipped and data_required() and item.get_closest_marker("data") is not None:
        report.outcome = "failed"
        report.longrepr = (f"{item.nodeid}: a data test skipped while {REQUIRE_DATA} is set "
                           f"({report.longrepr})")


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The real data in ``../shared/data`` or ``$MDP_DATA_DIR`` (the test is marked ``data``)."""
    return shared_data_dir()


@pytest.fixture
def ctrl_c():
    """Python's default SIGINT handler for the test's duration.

    A shell starts a background job (``pytest &``) with SIGINT ignored, so a test that sends
    itself Ctrl-C would see nothing; this gives it the handler an interactive run has, and
    puts back the one it found.
    """
    import signal

    found = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, found)


@pytest.fixture
def inject():
    """``inject(entry, solver)``: for the rest of the test, calls of the solver entry point
    ``entry`` (:mod:`mdp.lp.solver_entry`) go to ``solver``; how a test forces a plan's fallback
    (a solver that fails, stalls or runs out of time) without patching a module."""
    with contextlib.ExitStack() as stack:
        def replace(entry, solver):
            stack.enter_context(entry.replaced(solver))
        yield replace
