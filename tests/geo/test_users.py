"""Whole user,lat,lon files: per-user accounting, pandas and Dask, mdp privatize --users."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import mdp
from geo import users_command
from geo.users import privatize_users
from mdp.cli import main
from mdp.errors import ParameterError
from mdp.plugins import COMMANDS

VIENNA = np.array([(48.2082, 16.3738), (48.2106, 16.3645), (48.2035, 16.3690),
                   (48.2185, 16.3725), (48.1986, 16.3695), (48.2150, 16.3850)])


@pytest.fixture(scope="module")
def mech():
    space = mdp.MetricSpace.from_points(VIENNA, metric="haversine")
    return mdp.build("exponential", space, 2.0)


@pytest.fixture
def users_cli():
    registered = "privatize-users" not in COMMANDS.names()
    if registered:
        COMMANDS.register("privatize-users", users_command.COMMAND)
    yield
    if registered:
        COMMANDS.unregister("privatize-users")


def table(rows):
    return pd.DataFrame(rows, columns=["user", "lat", "lon"])


def test_repeats_from_one_cell_reuse_the_first_output(mech):
    home = VIENNA[2] + 1e-5
    df = table([("ann", *home)] * 7 + [("bob", *home)] * 7)
    released, summary = privatize_users(df, mech, seed=1)
    assert len(released) == 14
    ann = released[released.user == "ann"][["lat", "lon"]].to_numpy()
    assert (ann == ann[0]).all()                         # one release, repeated
    assert summary.largest_spent == pytest.approx(2.0)  # one report's epsilon
    assert summary.rows_refused == 0 and summary.users == 2


def test_budget_refuses_fresh_reports_beyond_it_by_name_and_count(mech):
    rows = [("ann", *VIENNA[i]) for i in (0, 1, 0, 2, 3, 2, 1)] + [("bob", *VIENNA[4])]
    released, summary = privatize_users(table(rows), mech, budget=4.0, seed=2)
    # ann: cells 0 and 1 fit (2 + 2 = 4); cell 2 (rows 3 and 5) and cell 3 (row 4) are refused
    assert list(released.index) == [0, 1, 2, 6, 7]
    assert summary.refused == {"ann": 3}
    assert summary.rows_refused == 3 and summary.largest_spent == pytest.approx(4.0)
    assert "ann (3)" in summary.text() and "3 rows refused" in summary.text()
    assert list(released.columns) == ["user", "lat", "lon"]
    assert set(map(tuple, released[["lat", "lon"]].to_numpy())) <= set(map(tuple, VIENNA))


def test_first_report_is_first_in_time(mech):
    rows = pd.DataFrame({"user": ["ann"] * 3, "lat": VIENNA[[0, 1, 2], 0],
                         "lon": VIENNA[[0, 1, 2], 1], "time": ["2024-03", "2024-02", "2024-01"]})
    released, _ = privatize_users(rows, mech, budget=2.0, seed=3)
    assert list(released.index) == [2]                   # the earliest report got the budget


def test_outputs_follow_the_mechanism_row(mech):
    n = 6000
    df = table([(f"u{i}", *VIENNA[0]) for i in range(n)])
    released, _ = privatize_users(df, mech, seed=4)
    idx = mech.space.index_of(0)
    out = [int(np.flatnonzero((VIENNA == p).all(axis=1))[0])
           for p in released[["lat", "lon"]].to_numpy()]
    counts = np.bincount(out, minlength=len(VIENNA))
    assert stats.chisquare(counts, mech.matrix[idx] * n).pvalue > 1e-3


def test_row_order_and_other_users_do_not_change_a_users_outputs(mech):
    rng = np.random.default_rng(0)
    rows = [(f"u{rng.integers(30)}", *VIENNA[rng.integers(6)]) for _ in range(300)]
    df = table(rows)
    a, _ = privatize_users(df, mech, seed=5)
    mixed = df.sort_values("user", kind="stable")   # users no longer interleaved
    b, _ = privatize_users(mixed[mixed.user != "u3"], mech, seed=5)
    # the same user's rows keep their relative order, so every kept row gets the same output
    kept = a[a.user != "u3"]
    pd.testing.assert_frame_equal(kept.sort_index(), b.sort_index())
    c, _ = privatize_users(df, mech, seed=6)
    assert not a.equals(c)


def test_dask_on_a_local_cluster_gives_the_pandas_result(mech):
    dd = pytest.importorskip("dask.dataframe")
    distributed = pytest.importorskip("distributed")
    rng = np.random.default_rng(1)
    df = table([(f"u{rng.integers(40)}", *(VIENNA[rng.integers(6)] + rng.normal(0, 1e-4, 2)))
                for _ in range(2000)])
    expected, summary = privatize_users(df, mech, budget=6.0, seed=7)
    groups = df.user.str[1:].astype(int) % 3
    ddf = dd.concat([dd.from_pandas(df[groups == g], npartitions=1) for g in range(3)])
    with distributed.LocalCluster(n_workers=2, processes=False, dashboard_address=None) as cluster, \
            distributed.Client(cluster):
        released, dsummary = privatize_users(ddf, mech, budget=6.0, seed=7)
        got = released.compute()
    pd.testing.assert_frame_equal(got.sort_index(), expected.sort_index(), check_dtype=False)
    assert dsummary == summary and summary.rows_refused > 0


def test_dask_frame_not_partitioned_by_user_is_refused(mech):
    dd = pytest.importorskip("dask.dataframe")
    df = table([("ann", *VIENNA[0]), ("bob", *VIENNA[1]), ("ann", *VIENNA[2])])
    with pytest.raises(ParameterError, match="not partitioned by user"):
        privatize_users(dd.from_pandas(df, npartitions=2, sort=False), mech, seed=1)


def test_mdp_privatize_users_command(mech, tmp_path, capsys, users_cli):
    mech_path = tmp_path / "m.npz"
    mech.save(mech_path)
    src = tmp_path / "checkins.csv"
    src.write_text("user,lat,lon,time\n" + "".join(
        f"{u},{VIENNA[i][0] + 1e-5},{VIENNA[i][1]},{t}\n"
        for t, (u, i) in enumerate([("ann", 0), ("ann", 0), ("ann", 1), ("ann", 3), ("bob", 2)])))
    out = tmp_path / "released.csv"
    code = main(["privatize", str(mech_path), "--users", str(src), "--budget", "4", "--seed", "1",
                 "-o", str(out)])
    o = capsys.readouterr().out
    assert code == 0
    assert "2 users, 5 rows, 1 rows refused" in o and "largest spent by one user 4" in o
    assert "ann (1)" in o
    released = pd.read_csv(out)
    assert list(released.columns) == ["user", "lat", "lon"] and len(released) == 4
    assert str(VIENNA[0][0] + 1e-5) not in out.read_text()       # never the input
    assert main(["privatize", str(mech_path), "48.2,16.37", "--budget", "4"]) == 2
    assert "go with --users" in capsys.readouterr().err
    bad = tmp_path / "bad.csv"
    bad.write_text("user,lat,lon\nann,48.2,16.37\nbob,91,16.3\n")
    assert main(["privatize", str(mech_path), "--users", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "line 3" in err and str(bad) in err
    assert "1 of 2 rows have a lat" in err and "91" not in err      # a private report
    bad.write_text("name,lat,lon\nann,48.2,16.37\n")
    assert main(["privatize", str(mech_path), "--users", str(bad)]) == 2
    assert "missing column(s) ['user']" in capsys.readouterr().err
