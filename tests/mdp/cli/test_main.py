import json
import re
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import mdp
from mdp.cli.main import build_parser, main
from mdp.lp import report_every


def run(args, capsys):
    code = main(args)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_console_script_installed():
    res = subprocess.run(["mdp", "list"], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and "exponential" in res.stdout and "module: mdp.families" in res.stdout


def test_build_privatize_eps_roundtrip(tmp_path, capsys):
    pts = tmp_path / "pts.csv"
    pd.DataFrame({"name": list("abcde"), "x": [0, 1, 2, 3, 4.0], "y": [0, 1, 0, 1, 0.0]}).to_csv(pts, index=False)
    out = tmp_path / "m.npz"
    code, o, e = run(["build", "--space", str(pts), "--mechanism", "weighted_exponential", "--epsilon", "2",
                      "--param", 'Y=[1,2,3,4,5]', "-o", str(out)], capsys)
    assert code == 0, e
    m = mdp.load(out)
    assert m.space.labels.tolist() == list("abcde") and m.params["Y"] == [1, 2, 3, 4, 5]
    code, o, e = run(["privatize", str(out), "a", "c", "e", "--seed", "3"], capsys)
    assert code == 0 and len(o.split()) == 3 and set(o.split()) <= set("abcde")
    code, o2, e = run(["privatize", str(out), "a", "c", "e", "--seed", "3"], capsys)
    assert o2 == o                                   # seeded
    code, o, e = run(["eps", str(out), "--delta", "0.001"], capsys)
    assert code == 0 and f"{m.eps_tight(0.001):.10g}" in o
    code, o, e = run(["privatize", str(out), "nope"], capsys)
    assert code == 2 and "input 1: unknown label" in e and "nope" not in e


def test_distance_matrix_space_and_lower_bound(tmp_path, capsys):
    D = np.abs(np.subtract.outer(np.arange(6.0), np.arange(6.0)))
    np.save(tmp_path / "d.npy", D)
    code, o, e = run(["lower-bound", "--space", str(tmp_path / "d.npy"), "--epsilon", "1"], capsys)
    expected = mdp.lower_bound(mdp.MetricSpace.from_distances(D), 1.0)
    assert code == 0 and f"expected distance >= {expected.value:.6g}" in o
    code, o, e = run(["lower-bound", "--space", str(tmp_path / "d.npy"), "--epsilon", "1", "--json"],
                     capsys)
    record = json.loads(o)
    assert code == 0 and record["lower_bound"] == pytest.approx(expected.value, rel=1e-12)
    assert record["n"] == 6 and record["packing_size"] == expected.c


def test_errors_are_clear(tmp_path, capsys):
    np.save(tmp_path / "bad.npy", np.array([[0, 1.0], [2.0, 0]]))
    code, o, e = run(["lower-bound", "--space", str(tmp_path / "bad.npy"), "--epsilon", "1"], capsys)
    assert code == 2 and "symmetric" in e and "bad.npy" in e
    code, o, e = run(["build", "--space", "glove:10", "--mechanism", "nope", "--epsilon", "1", "-o",
                      str(tmp_path / "x.npz")], capsys)
    assert code == 2 and "valid names" in e
    code, o, e = run(["build", "--space", "glove:10", "--mechanism", "exponential", "--epsilon", "-1", "-o",
                      str(tmp_path / "x.npz")], capsys)
    assert code == 2 and "epsilon must be > 0, got -1" in e
    bad = tmp_path / "pts.csv"
    bad.write_text("x,y\n0,1\n2,abc\n")
    code, o, e = run(["lower-bound", "--space", str(bad), "--epsilon", "1"], capsys)
    assert code == 2 and "line 3" in e and "pts.csv" in e   # header is line 1


def test_curves_small(tmp_path, capsys):
    code, o, e = run(["curves", "--space", "glove:12:1", "--mechanisms", "exponential", "weighted_exponential",
                      "--eps-tight", "0.2,1,3", "--no-progress", "-o", str(tmp_path)], capsys)
    assert code == 0, e
    df = pd.read_csv(tmp_path / "curves.csv")
    assert set(df.mechanism) == {"exponential", "weighted_exponential", "uniform", "lower_bound"}
    mech = df[df.mechanism.isin(["exponential", "weighted_exponential"])]
    assert (mech.eps_tight <= mech.target_eps_tight + 1e-12).all()
    uni = df[df.mechanism == "uniform"].loss_q.iloc[0]
    assert (mech.loss_q <= uni + 1e-9).all()
    assert (tmp_path / "curves.png").stat().st_size > 10_000
    # loss decreases as the privacy level is relaxed
    for _, g in mech.groupby("mechanism"):
        assert np.all(np.diff(g.sort_values("target_eps_tight").loss_q) < 0)


@pytest.mark.parametrize("cmd", [["experiment", "nope"]])
def test_unknown_experiment(cmd, capsys):
    code, o, e = run(cmd, capsys)
    assert code == 2 and "valid names" in e


@pytest.mark.parametrize("tty, flag, expected", [(False, [], True), (True, [], False),
                                                  (True, ["--no-progress"], True)])
def test_experiment_progress_bars_only_on_a_terminal(tty, flag, expected, capsys, monkeypatch):
    from experiments import command

    seen = {}

    class Fake:
        DESCRIPTION = "fake"

        @staticmethod
        def add_arguments(parser):
            pass

        @staticmethod
        def main(args):
            seen["no_progress"] = args.no_progress

    monkeypatch.setattr(command, "load_experiment", lambda name: Fake)
    monkeypatch.setattr("experiments.load_experiment", lambda name: Fake)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: tty)
    code, o, e = run(["experiment", "fake", *flag], capsys)
    assert code == 0 and seen["no_progress"] is expected


def test_module_entry_point():
    res = subprocess.run([sys.executable, "-m", "mdp.cli", "list"], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and "weighted_exponential" in res.stdout


def test_build_interrupted_writes_nothing(tmp_path, capsys, monkeypatch):
    # Ctrl-C during a long build: exit 130, a clear message, no output file
    pts = tmp_path / "pts.csv"
    pd.DataFrame({"x": [0, 1, 2.0], "y": [0, 1, 0.0]}).to_csv(pts, index=False)
    out = tmp_path / "m.npz"

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("mdp.registry.build", interrupted)
    code, o, e = run(["build", "--space", str(pts), "--mechanism", "optimal", "--epsilon", "1",
                      "-o", str(out)], capsys)
    assert code == 130 and "interrupted" in e and "nothing was written" in e
    assert not out.exists() and list(tmp_path.iterdir()) == [pts]


def test_build_progress_line_only_on_a_terminal(tmp_path, capsys, monkeypatch):
    pts = tmp_path / "pts.csv"
    pd.DataFrame({"x": [0, 1, 2, 3, 0.5, 2.5], "y": [0, 1, 0, 1, 2, 2.0]}).to_csv(pts, index=False)
    args = ["build", "--space", str(pts), "--mechanism", "optimal", "--epsilon", "1"]
    code, o, e = run(args + ["-o", str(tmp_path / "a.npz")], capsys)  # stderr is no TTY here
    assert code == 0 and "LP round" not in e
    monkeypatch.setattr("sys.stderr.isatty", lambda: True, raising=False)
    code, o, e = run(args + ["-o", str(tmp_path / "b.npz")], capsys)
    assert code == 0 and "LP round 1:" in e and "rows" in e and "gap" in e
    code, o, e = run(args + ["--no-progress", "-o", str(tmp_path / "c.npz")], capsys)
    assert code == 0 and "LP round" not in e
    # rounds whose solution still violates rows show the relaxation's objective and no gap; the
    # last round, which meets every row, its certified gap
    xy = np.random.default_rng(2).random((14, 2)) * 4
    pd.DataFrame({"x": xy[:, 0], "y": xy[:, 1]}).to_csv(pts, index=False)
    code, o, e = run(args + ["--param", "solver=simplex", "-o", str(tmp_path / "d.npz")], capsys)
    assert code == 0
    assert re.search(r"LP round 1: [\d,]+ rows, relaxation objective [\d.]+, 74 rows still violated", e)
    assert re.search(r"LP round 3: [\d,]+ rows, objective [\d.]+, certified gap [\d.e+-]+", e)
    code, o, e = run(args + ["--param", "solver=ipm", "--param", "gap=1e-2", "-o", str(tmp_path / "e.npz")],
                     capsys)
    assert code == 0
    assert re.search(r"LP round 2: [\d,]+ rows, objective [\d.]+, certified gap 3\.00e-04", e)
    # rounds over column blocks: their iterations as one solve's, their ends as rounds
    code, o, e = run(args + ["--param", "method=blocks", "-o", str(tmp_path / "f.npz")], capsys)
    assert code == 0
    assert re.search(r"LP solve 1 \(blocks\), iteration \d+: [\d,]+ rows", e)
    assert re.search(r"LP round 1: [\d,]+ rows, relaxation objective [\d.]+, [\d,]+ rows still "
                     r"violated", e)
    assert re.search(r"LP round \d+: [\d,]+ rows, objective [\d.]+, certified gap [\d.e+-]+", e)


def test_build_progress_of_the_row_block_method(tmp_path, capsys, monkeypatch):
    # ConstOPTMech's row-block interior point method (gap=, and the default from 300 points)
    # reports every iteration and, per round, the certified gap
    pts = tmp_path / "pts.csv"
    xy = np.random.default_rng(3).random((30, 2)) * 5
    pd.DataFrame({"x": xy[:, 0], "y": xy[:, 1]}).to_csv(pts, index=False)
    monkeypatch.setattr("sys.stderr.isatty", lambda: True, raising=False)
    code, o, e = run(["build", "--space", str(pts), "--mechanism", "constopt", "--epsilon", "1",
                      "--param", "r=4", "--param", "lam=0.1", "--param", "gap=1e-3",
                      "-o", str(tmp_path / "m.npz")], capsys)
    assert code == 0
    assert "LP round 1, iteration 1:" in e and "LP round 1: " in e and "certified gap" in e


def test_build_threads(tmp_path, capsys):
    pts = tmp_path / "pts.csv"
    pd.DataFrame({"x": [0, 1, 2, 3, 0.5, 2.5], "y": [0, 1, 0, 1, 2, 2.0]}).to_csv(pts, index=False)
    args = ["build", "--space", str(pts), "--mechanism", "constopt", "--epsilon", "1", "--param", "r=2",
            "-o", str(tmp_path / "a.npz")]
    for flag, highs in (("2", 2), ("1", 1)):
        code, o, e = run(args + ["--threads", flag], capsys)
        assert code == 0
        mech = mdp.load(tmp_path / "a.npz")
        assert mech.stats["privacy"]["verified"]
        assert mech.stats["threads"]["requested"] == highs and mech.stats["threads"]["highs"] == highs
        assert mdp.lp.get_threads() is None           # the command's plan ends with it
    code, o, e = run(args + ["--threads", "auto"], capsys)
    assert code == 0 and mdp.load(tmp_path / "a.npz").stats["threads"]["requested"] == "auto"
    for bad in ("0", "-1", "x", "1.5"):
        with pytest.raises(SystemExit):
            run(args + ["--threads", bad], capsys)
        assert f"expected 'auto' or a positive integer, got '{bad}'" in capsys.readouterr().err


@pytest.mark.parametrize("command", [["curves"], ["eps", "m.npz"], ["lower-bound", "--space", "s.csv",
                                                                      "--epsilon", "1"]])
def test_numeric_commands_take_threads(command):
    parser = build_parser()
    assert parser.parse_args(command + ["--threads", "3"]).threads == 3
    assert parser.parse_args(command + ["--threads", "auto"]).threads == "auto"
    assert parser.parse_args(command).threads is None


def test_build_progress_from_inside_one_highs_solve(tmp_path, capsys, monkeypatch):
    # SpannerMech's full LP is one HiGHS solve: its iterations are shown while it runs
    pts = tmp_path / "pts.csv"
    xy = np.random.default_rng(3).random((20, 2)) * 5
    pd.DataFrame({"x": xy[:, 0], "y": xy[:, 1]}).to_csv(pts, index=False)
    monkeypatch.setattr("sys.stderr.isatty", lambda: True, raising=False)
    with report_every(0.0):
        code, o, e = run(["build", "--space", str(pts), "--mechanism", "spanner", "--epsilon",
                          "1", "-o", str(tmp_path / "m.npz")], capsys)
    assert code == 0
    assert re.search(r"LP solve 1 \(hipo\), iteration \d+: [\d,]+ rows, \d+ s", e)
    # the column-block method reports its iterate's primal-dual gap too
    code, o, e = run(["build", "--space", str(pts), "--mechanism", "spanner", "--epsilon", "1",
                      "--param", "solver=blocks", "-o", str(tmp_path / "b.npz")], capsys)
    assert code == 0
    gaps = [float(g) for g in re.findall(
        r"LP solve 1 \(blocks\), iteration \d+: [\d,]+ rows, gap ([\d.e+-]+) \(iterate's\), \d+ s", e)]
    assert len(gaps) > 10 and gaps[-1] < 1e-4 < gaps[0]


def test_build_verbose_prints_the_plan_and_every_attempt(tmp_path, capsys):
    pts = tmp_path / "pts.csv"
    pd.DataFrame({"x": [0, 1, 2, 3, 0.5, 2.5], "y": [0, 1, 0, 1, 2, 2.0]}).to_csv(pts, index=False)
    args = ["build", "--space", str(pts), "--mechanism", "optimal", "--epsilon", "1",
            "--param", "solver=simplex", "-o", str(tmp_path / "a.npz"), "-v"]
    code, o, e = run(args, capsys)
    assert code == 0, e
    lines = o.splitlines()
    plan = next(i for i, line in enumerate(lines) if line.startswith("plan: OPTMech: method lazy"))
    assert lines[plan + 1].strip().startswith("solver simplex (asked for)")
    # the plan's steps are the attempts' names: what it prints is what runs
    assert any(line.startswith("  step 1: lazy on HiGHS (simplex), rows up to 1e+12 (when first)")
               for line in lines)
    assert any(line.startswith("  step 2: lazy on HiGHS (simplex), rows up to 1e+07") for line in lines)
    assert any(re.match(r"attempt 1: lazy on HiGHS \(simplex\), rows up to 1e\+12: ok, ", line)
               for line in lines)
    assert any(line.startswith("loss ") and "relative gap" in line for line in lines)
    # families that solve no LP have no plan to print
    code, o, e = run(["build", "--space", str(pts), "--mechanism", "exponential", "--epsilon",
                      "1", "-o", str(tmp_path / "b.npz"), "-v"], capsys)
    assert code == 0 and "no build plan" in o


# -- output lines: one per input, CSV cells a spreadsheet does not evaluate ------------------------
@pytest.fixture
def odd_labels(tmp_path):
    labels = ["plain", "two\nlines", "=HYPERLINK(\"http://x\",\"y\")", "+cmd|calc", "a,b", "@sum",
              "-3x", "tab\there"]
    pts = np.arange(len(labels), dtype=float)[:, None] * 100.0
    mech = mdp.build("exponential", mdp.MetricSpace.from_points(pts, labels=labels), 1.0)
    return mech.save(tmp_path / "odd.npz"), labels


def test_privatize_prints_one_line_per_input_with_safe_cells(odd_labels, capsys):
    import csv

    path, labels = odd_labels
    code, out, err = run(["privatize", str(path), *[str(i) for i in range(len(labels))]], capsys)
    assert code == 0, err
    lines = out.splitlines()
    assert len(lines) == len(labels)                      # "two\nlines" is one line
    cells = [next(csv.reader([line])) for line in lines]
    assert all(len(c) == 1 for c in cells)                # "a,b" is one CSV cell
    values = [c[0] for c in cells]
    assert values[0] == "plain" and values[1] == "two\\u000alines" and values[4] == "a,b"
    for v in values:
        assert not v.startswith(("=", "+", "-", "@", "\t", "\r")), v
    assert values[2] == "'" + labels[2] and values[3] == "'+cmd|calc" and values[5] == "'@sum"
    assert values[7] == "tab\\u0009here"


def test_numbers_are_not_neutralised():
    from mdp.release import csv_cell, output_line

    assert output_line("-33.9,151.2") == "-33.9,151.2" and csv_cell("-1e-3") == "-1e-3"
    assert output_line("=1+2,-3") == "'=1+2,-3"
    assert output_line(output_line("=a,\"b,c\"")) == output_line("=a,\"b,c\"")


def test_seed_warns_that_the_output_is_reproducible(odd_labels, capsys):
    path, _ = odd_labels
    code, out, err = run(["privatize", str(path), "0", "--seed", "1"], capsys)
    assert code == 0 and "reproducible" in err and "never to privatize real data" in err
    code, out, err = run(["privatize", str(path), "0"], capsys)
    assert code == 0 and "reproducible" not in err


def test_invalid_utf8_on_stdin_is_refused(odd_labels, capsys, monkeypatch):
    import io

    path, _ = odd_labels
    raw = io.BytesIO(b"plain\nsecret\xff\xfeword\n")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(raw, encoding="utf-8",
                                                       errors="surrogateescape"))
    code, out, err = run(["privatize", str(path)], capsys)
    assert code == 2 and out == ""
    assert "line 2 is not valid UTF-8" in err and "secret" not in err


def test_a_lone_number_on_a_location_space_is_not_an_index(tmp_path, capsys):
    pts = np.array([[48.2082, 16.3738], [48.21, 16.36], [48.2, 16.37], [48.19, 16.38]])
    mech = mdp.build("exponential", mdp.MetricSpace.from_points(pts, metric="haversine"), 2.0)
    path = mech.save(tmp_path / "places.npz")
    code, out, err = run(["privatize", str(path), "3"], capsys)
    assert code == 2 and out == "" and "input 1: not a lat,lon location" in err


def test_refusals_name_the_position_not_the_input(tmp_path, capsys):
    pts = np.array([[0.0], [1.0], [2.0]])
    mech = mdp.build("exponential", mdp.MetricSpace.from_points(pts, labels=["a", "b", "c"]), 2.0)
    path = mech.save(tmp_path / "m.npz")
    code, out, err = run(["privatize", str(path), "a", "my-secret-word"], capsys)
    assert code == 2 and "input 2" in err and "my-secret-word" not in err


NUMERICAL = ("numpy", "scipy", "pandas", "sklearn", "numba", "matplotlib", "folium", "highspy")


@pytest.mark.parametrize("argv", [["--help"], ["build", "--help"], ["build", "--epsilon", "abc"],
                                  ["buld"], ["heatmap", "--help"], ["explain", "--help"]])
def test_help_and_argument_errors_import_no_numerical_module(argv):
    # what made `mdp --help` take 4 s: importing NumPy, SciPy, numba and every family first
    code = ("import sys\nfrom mdp.cli.main import main\n"
            f"try:\n    main({argv!r})\nexcept SystemExit:\n    pass\n"
            f"print(sorted(m for m in sys.modules if m.split('.')[0] in {NUMERICAL!r}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stderr[-500:]


def test_a_bad_argument_is_one_line(capsys):
    with pytest.raises(SystemExit) as exit_code:
        main(["build", "--space", "x.csv", "--mechanism", "exponential", "--epsilon", "abc",
              "-o", "m.npz"])
    err = capsys.readouterr().err
    assert exit_code.value.code == 2 and err.count("\n") == 1
    assert err.startswith("mdp build: error: argument --epsilon: invalid float value: 'abc'")
    assert "mdp build --help lists the options" in err and "usage:" not in err


@pytest.mark.parametrize("level, value", [("1.39", 1.39), ("ln 4", np.log(4)),
                                          ("ln(6)", np.log(6)), ("e^1.4", np.exp(1.4)),
                                          ("exp(0.5)", np.exp(0.5))])
def test_level_in_location_guards_words(tmp_path, capsys, level, value):
    pts = tmp_path / "p.csv"
    pts.write_text("lat,lon\n48.2082,16.3738\n48.2106,16.3645\n48.2035,16.3690\n")
    out = tmp_path / "m.npz"
    code, o, e = run(["build", "--space", str(pts), "--mechanism", "exponential", "--radius",
                      "500m", "--level", level, "-o", str(out)], capsys)
    assert code == 0, e
    assert mdp.load(out).epsilon == pytest.approx(value / 0.5, rel=1e-12)
    with pytest.raises(SystemExit):
        main(["build", "--space", str(pts), "--mechanism", "exponential", "--radius", "500m",
              "--level", "ln -4", "-o", str(out)])
    assert "expected a positive level such as 1.39, 'ln 4'" in capsys.readouterr().err
