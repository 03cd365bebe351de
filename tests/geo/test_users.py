"""Whole user,lat,lon files: per-user accounting, pandas and Dask, mdp privatize --users."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import mdp
from geo import users_command
from geo.users import privatize_users
from mdp.cli.main import main
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


def test_every_report_is_a_fresh_draw_charged_its_epsilon(mech):
    home = VIENNA[2] + 1e-5
    df = table([("ann", *home)] * 7 + [("bob", *home)] * 7)
    released, summary = privatize_users(df, mech, seed=1)
    assert len(released) == 14
    ann = released[released.user == "ann"][["lat", "lon"]].to_numpy()
    assert len({tuple(p) for p in ann}) > 1              # not one release repeated
    assert summary.largest_spent == pytest.approx(7 * 2.0)  # seven reports' epsilon
    assert summary.rows_refused == 0 and summary.users == 2


def test_budget_refuses_draws_beyond_it_by_name_and_count(mech):
    rows = [("ann", *VIENNA[i]) for i in (0, 1, 0, 2, 3, 2, 1)] + [("bob", *VIENNA[4])]
    released, summary = privatize_users(table(rows), mech, budget=4.0, seed=2)
    # ann: her first two reports fit (2 + 2 = 4); the other five are refused
    assert list(released.index) == [0, 1, 7]
    assert summary.refused == {"ann": 5}
    assert summary.rows_refused == 5 and summary.largest_spent == pytest.approx(4.0)
    assert "ann (5)" in summary.text() and "5 rows refused" in summary.text()
    assert list(released.columns) == ["user", "lat", "lon"]
    assert set(map(tuple, released[["lat", "lon"]].to_numpy())) <= set(map(tuple, VIENNA))


def _pairs(mech, first, second, n, seed, **kw):
    """Output cells of ``n`` users, each reporting the two locations ``first`` and ``second``."""
    rows = []
    for i in range(n):
        rows += [(f"u{i}", *first, 0), (f"u{i}", *second, 1)]
    df = pd.DataFrame(rows, columns=["user", "lat", "lon", "time"])
    released, _ = privatize_users(df, mech, seed=seed, **kw)
    cells = np.array([int(np.flatnonzero((VIENNA == p).all(axis=1))[0])
                      for p in released[["lat", "lon"]].to_numpy()]).reshape(n, 2)
    return cells


def test_two_reports_from_one_place_look_like_two_reports_from_two_places(mech):
    # Reusing an output because two reports came from one place released z1 == z2 with
    # probability 1 from (A, A) and 0.8 from (A, B): no epsilon covers z1 != z2. Fresh draws
    # give each pair of outputs the product of the mechanism's rows, within exp(eps d(A, B)).
    A, B = VIENNA[0], VIENNA[3]
    K = mech.matrix
    n = 20_000
    same = _pairs(mech, A, A, n, seed=11)
    other = _pairs(mech, A, B, n, seed=12)
    k = len(VIENNA)
    for cells, row2 in ((same, K[0]), (other, K[3])):
        joint = np.bincount(cells[:, 0] * k + cells[:, 1], minlength=k * k)
        expected = np.outer(K[0], row2).ravel() * n
        keep = expected > 5
        assert stats.chisquare(joint[keep], expected[keep] * joint[keep].sum()
                               / expected[keep].sum()).pvalue > 1e-3
    # the event that broke the old design: two different outputs from one place
    differ = float(np.mean(same[:, 0] != same[:, 1]))
    assert differ == pytest.approx(1 - float(np.sum(K[0] ** 2)), abs=0.02)
    # exactly, every output pair is within the sequence bound exp(eps (d(A, A) + d(A, B)))
    bound = np.exp(mech.epsilon * mech.space.distances[0, 3]) * (1 + 1e-9)
    pa, pb = np.outer(K[0], K[0]), np.outer(K[0], K[3])
    assert np.all(pa <= bound * pb) and np.all(pb <= bound * pa)


def test_a_time_window_shares_one_draw_whatever_the_places(mech):
    A, B = VIENNA[0], VIENNA[3]
    n = 4000
    one_window = _pairs(mech, A, B, n, seed=13, window=2)       # times 0 and 1: one window
    assert (one_window[:, 0] == one_window[:, 1]).all()           # one output, whatever B is
    counts = np.bincount(one_window[:, 0], minlength=len(VIENNA))
    assert stats.chisquare(counts, mech.matrix[0] * n).pvalue > 1e-3   # drawn from A's row
    two_windows = _pairs(mech, A, A, n, seed=14, window=1)      # times 0 and 1: two windows
    assert np.mean(two_windows[:, 0] != two_windows[:, 1]) > 0.3


def test_released_row_count_does_not_depend_on_the_places(mech):
    A, B = VIENNA[0], VIENNA[5]
    for budget in (2.0, 4.0, 6.0, 7.9):
        counts = set()
        for places in ((A, A, A), (A, B, B), (B, A, A), (A, B, A)):
            df = table([("ann", *p) for p in places])
            released, summary = privatize_users(df, mech, budget=budget, seed=3)
            counts.add((len(released), summary.rows_refused, summary.largest_spent))
        assert len(counts) == 1, (budget, counts)
    # window mode: the count depends on the times only
    for places in ((A, A, A), (A, B, B)):
        df = pd.DataFrame([("ann", *p, t) for p, t in zip(places, (0, 1, 5), strict=True)],
                          columns=["user", "lat", "lon", "time"])
        released, summary = privatize_users(df, mech, budget=2.0, window=2, seed=3)
        assert len(released) == 2 and summary.largest_spent == pytest.approx(2.0)


def test_spellings_of_one_name_share_one_budget(mech):
    names = ["Jos\u00e9", "Jose\u0301", "Jos\u200b\u00e9", "\ufeffJos\u00e9", "\uff2aos\u00e9",
             " Jos\u00e9  "]
    df = table([(u, *VIENNA[0]) for u in names])
    released, summary = privatize_users(df, mech, budget=6.0, seed=4)
    assert summary.users == 1 and len(released) == 3 and summary.rows_refused == 3
    assert set(released.user) == {"Jos\u00e9"}
    with pytest.raises(ParameterError, match="row 1: a user name mixes letters of the scripts "
                                             "CYRILLIC and LATIN") as err:
        privatize_users(table([("Jose", *VIENNA[0]), ("Jos\u0435", *VIENNA[0])]), mech, seed=4)
    assert "Jos" not in str(err.value)
    with pytest.raises(ParameterError, match="row 0: empty user name"):
        privatize_users(table([("\u200b", *VIENNA[0])]), mech, seed=4)
    # one script, or scripts that are not look-alikes, are names like any other
    ok = table([("\u0418\u0432\u0430\u043d", *VIENNA[0]), ("\u7530\u4e2d\u305f\u308d\u3046", *VIENNA[0]),
                ("ann\u7530", *VIENNA[0]), ("Ann", *VIENNA[0]), ("ann", *VIENNA[0])])
    assert privatize_users(ok, mech, seed=4)[1].users == 5


def test_numeric_times_sort_as_numbers(mech):
    rows = pd.DataFrame({"user": ["ann"] * 3, "lat": VIENNA[[0, 1, 2], 0],
                         "lon": VIENNA[[0, 1, 2], 1], "time": ["10", "9", "100"]})
    released, _ = privatize_users(rows, mech, budget=2.0, seed=3)
    assert list(released.index) == [1]                   # 9 is the earliest, not "10"


def test_bad_calls_raise_toolkit_errors(mech):
    df = table([("ann", *VIENNA[0])])
    for call, match in [
            (lambda: privatize_users([["a", 48.2, 16.3]], mech), "pandas or Dask DataFrame"),
            (lambda: privatize_users(df, "mech"), "mdp.Mechanism"),
            (lambda: privatize_users(df.assign(lat=[np.nan]), mech), "lat: 1 of 1 rows"),
            (lambda: privatize_users(df.assign(lat=[95.0]), mech), "lat: 1 of 1 rows"),
            (lambda: privatize_users(df.assign(lon=["x"]), mech), "lon: 1 of 1 rows"),
            (lambda: privatize_users(df, mech, window=1), "window needs a 'time' column"),
            (lambda: privatize_users(df.assign(time=["2024-01-01"]), mech, window=3),
             "duration such as '1h'"),
            (lambda: privatize_users(df.assign(time=[3]), mech, window="1h"), "positive number"),
            (lambda: privatize_users(df.assign(time=["soon"]), mech), "time: row 0"),
            (lambda: privatize_users(df, mech, budget=-1), "budget must be > 0")]:
        with pytest.raises(ParameterError, match=match) as err:
            call()
        assert "48.2" not in str(err.value)
    space = mdp.MetricSpace.from_points(VIENNA)
    with pytest.raises(ParameterError, match="haversine"):
        privatize_users(df, mdp.build("exponential", space, 2.0))


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
    assert "2 users, 5 rows, 2 rows refused" in o and "largest spent by one user 4" in o
    assert "ann (2)" in o
    released = pd.read_csv(out)
    assert list(released.columns) == ["user", "lat", "lon"] and len(released) == 3
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


def test_users_file_names_times_and_seed_as_written(mech, tmp_path, capsys, users_cli):
    mech_path = tmp_path / "m.npz"
    mech.save(mech_path)
    lat, lon = VIENNA[0]
    src = tmp_path / "checkins.csv"
    # "NA" is a user; NFC, NFD, a zero-width space and a byte order mark are one person
    src.write_bytes(("\ufeffuser,lat,lon,time\n"
                     f"NA,{lat},{lon},10\nNA,{lat},{lon},9\n"
                     f"Jos\u00e9,{lat},{lon},1\nJose\u0301,{lat},{lon},2\n"
                     f"Jo\u200bs\u00e9,{lat},{lon},3\n\ufeffJos\u00e9,{lat},{lon},4\n").encode())
    out = tmp_path / "released.csv"
    assert main(["privatize", str(mech_path), "--users", str(src), "--budget", "4", "--seed", "1",
                 "-o", str(out)]) == 0
    captured = capsys.readouterr()
    assert "--seed makes the output reproducible" in captured.err
    assert "2 users, 6 rows, 2 rows refused" in captured.out and "Jos\u00e9 (2)" in captured.out
    released = pd.read_csv(out, keep_default_na=False)
    assert sorted(released.user) == ["Jos\u00e9", "Jos\u00e9", "NA", "NA"]
    # one window of 20 time units: NA's two reports share one draw, José's four too
    assert main(["privatize", str(mech_path), "--users", str(src), "--window", "20", "-o",
                 str(out)]) == 0
    assert "per time window of 20" in capsys.readouterr().out
    released = pd.read_csv(out, keep_default_na=False)
    for _, rows in released.groupby("user"):
        assert len(rows.drop_duplicates()) == 1
    src.write_text(f"user,lat,lon\nann,{lat},{lon}\nJos\u0435,{lat},{lon}\n")
    assert main(["privatize", str(mech_path), "--users", str(src)]) == 2
    err = capsys.readouterr().err
    assert f"{src}: line 3: a user name mixes letters" in err and "Jos" not in err
    src.write_text(f"user,lat,lon,time\nann,{lat},{lon},2024-01-01\nann,{lat},{lon},later\n")
    assert main(["privatize", str(mech_path), "--users", str(src)]) == 2
    err = capsys.readouterr().err
    assert "line 3: 1 of 2 rows have a time" in err and "later" not in err


def test_rows_outside_the_area_are_left_out_and_counted(mech):
    far = (39.9042, 116.4074)                                  # Beijing, far from Vienna
    rows = [("ann", *VIENNA[0]), ("ann", *far), ("bob", *VIENNA[1]), ("bob", *far),
            ("bob", *VIENNA[2])]
    released, summary = privatize_users(table(rows), mech, budget=4.0, seed=1)
    assert list(released.index) == [0, 2, 4]
    assert summary.rows_dropped == 2 and summary.dropped_rows == (1, 3)
    assert summary.rows_refused == 0 and summary.largest_spent == pytest.approx(4.0)
    assert "row 1, row 3" in summary.text() and "--strict" in summary.text()
    assert "39.9" not in summary.text() and "116" not in summary.text()
    with pytest.raises(ParameterError, match=r"inputs 2 and 4 \(2 of 5\): farther than"):
        privatize_users(table(rows), mech, seed=1, strict=True)


def test_a_ledger_keeps_the_budget_across_runs(mech, tmp_path):
    ledger = tmp_path / "ledger.sqlite"
    df = table([("ann", *VIENNA[0]), ("bob", *VIENNA[1])])
    for run in range(2):                                       # 2 + 2 = 4 <= 5
        released, summary = privatize_users(df, mech, budget=5.0, seed=run, ledger=ledger)
        assert len(released) == 2 and summary.largest_total == pytest.approx(2.0 * (run + 1))
    released, summary = privatize_users(df, mech, budget=5.0, seed=3, ledger=ledger)
    assert len(released) == 0 and summary.refused == {"ann": 1, "bob": 1}
    # without the ledger every run would start from zero
    assert len(privatize_users(df, mech, budget=5.0, seed=3)[0]) == 2
    from mdp.privacy.ledger import PrivacyLedger

    assert {e.user: e.spent for e in PrivacyLedger(ledger).entries()} == {"ann": 4.0, "bob": 4.0}


def test_ledger_on_the_command_line_survives_two_runs_and_refuses_the_third(mech, tmp_path,
                                                                            capsys, users_cli):
    mech_path = tmp_path / "m.npz"
    mech.save(mech_path)
    src = tmp_path / "c.csv"
    src.write_text(f"user,lat,lon\nann,{VIENNA[0][0]},{VIENNA[0][1]}\n"
                   f"ann,39.9042,116.4074\n")
    ledger = tmp_path / "l.sqlite"
    for k in range(3):
        assert main(["privatize", str(mech_path), "--users", str(src), "--budget", "5",
                     "--ledger", str(ledger), "-o", str(tmp_path / f"r{k}.csv")]) == 0
        out = capsys.readouterr().out
        assert "1 rows outside the area left out" in out and "line 3" in out
    assert len(pd.read_csv(tmp_path / "r1.csv")) == 1
    assert len(pd.read_csv(tmp_path / "r2.csv")) == 0 and "ann (1)" in out
    assert main(["ledger", "show", str(ledger)]) == 0
    shown = capsys.readouterr().out
    assert "2 releases, 1 users" in shown and "ann: 4 spent in 2 releases" in shown
    assert main(["privatize", str(mech_path), "--users", str(src), "--strict"]) == 2
    assert "farther than --max-snap-km" in capsys.readouterr().err
    assert main(["privatize", str(mech_path), "48.2,16.37", "--ledger", str(ledger)]) == 2
    assert "go with --users" in capsys.readouterr().err
