"""Command-line inputs read the way users write them: lat,lon headers mean haversine, stdin
privatization keeps one line per line, one list syntax, text words alike on argv and stdin."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest

import mdp
from mdp.cli.args import choose_metric
from mdp.cli.main import build_parser, main

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "docs" / "examples"


def run(argv, capsys, stdin: str | None = None, monkeypatch=None):
    if stdin is not None:
        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture()
def places(tmp_path, capsys):
    """A mechanism built from places.csv (``lat,lon`` header) without --metric."""
    out = tmp_path / "places.npz"
    code, o, e = run(["build", "--space", EXAMPLES / "places.csv", "--mechanism", "exponential",
                      "--epsilon", "2", "-o", out], capsys)
    assert code == 0, e
    assert "metric haversine" in e and "lat,lon" in e and "--metric euclidean" in e
    return out


def test_latlon_header_means_haversine(places, tmp_path, capsys):
    assert mdp.load(places).space.metric == "haversine"
    # --metric says otherwise: no inference, no message
    out = tmp_path / "euclid.npz"
    code, o, e = run(["build", "--space", EXAMPLES / "places.csv", "--metric", "euclidean",
                      "--mechanism", "exponential", "--epsilon", "2", "-o", out], capsys)
    assert code == 0 and "metric haversine" not in e
    assert mdp.load(out).space.metric == "euclidean"
    # lower-bound says it too, and prints km
    code, o, e = run(["lower-bound", "--space", EXAMPLES / "places.csv", "--epsilon", "1"], capsys)
    assert code == 0 and "metric haversine" in e and " km" in o
    # latitude,longitude and a label column
    csv = tmp_path / "named.csv"
    csv.write_text("name,Longitude,Latitude\na,16.37,48.20\nb,16.36,48.21\nc,16.40,48.19\n")
    assert choose_metric(str(csv), None).metric == "haversine"
    assert choose_metric(str(EXAMPLES / "sites.csv"), None).message() is None
    assert choose_metric(str(EXAMPLES / "sites.csv"), None).metric == "euclidean"
    assert choose_metric("glove:20", None).metric is None


def test_privatize_stdin_one_line_per_line(places, capsys, monkeypatch):
    text = (EXAMPLES / "places.csv").read_text()
    code, o, e = run(["privatize", places, "--seed", "1"], capsys, text, monkeypatch)
    assert code == 0, e
    lines_in, lines_out = text.splitlines(), o.splitlines()
    assert len(lines_out) == len(lines_in) and lines_out[0] == "lat,lon"
    points = {tuple(np.round(p, 6)) for p in mdp.load(places).space.points}
    assert all(tuple(float(v) for v in line.split(",")) in points for line in lines_out[1:])
    # blank in, blank out; white space between coordinates
    code, o, e = run(["privatize", places, "--seed", "1"], capsys,
                     "48.2082,16.3738\n\n48.2100 16.3600\n", monkeypatch)
    assert code == 0, e
    assert o.split("\n")[1] == "" and len(o.splitlines()) == 3


@pytest.mark.parametrize("stdin, message", [
    ("48.2,16.3\n48.2,16.3\nabc,16.3\n", "line 3: not a number"),
    ("lat,lon\n48.2,16.3\n\n48.2,16.3,7\n", "line 4: 2 columns expected"),
    ("48.2,16.3\nnan,16.3\n", "line 2: not a finite number"),
    ("95.5,16.3\n", "line 1: not a (lat, lon)"),
])
def test_privatize_bad_line_says_what_not_the_value(places, capsys, monkeypatch, stdin, message):
    code, o, e = run(["privatize", places], capsys, stdin, monkeypatch)
    assert code == 2 and message in e
    for value in ("abc", "16.3", "95.5"):
        assert value not in e


def test_privatize_far_location_counts_lines_from_one(places, capsys, monkeypatch):
    code, o, e = run(["privatize", places], capsys, "\n48.2082,16.3738\n10,10\n", monkeypatch)
    assert code == 2 and "line 3 (1 of 2 locations): farther than --max-snap-km" in e and "--max-snap-km" in e and "--snap" in e
    assert "snap=True" not in e and "10.0" not in e


def test_privatize_planar_points(tmp_path, capsys, monkeypatch):
    csv = tmp_path / "xy.csv"
    csv.write_text("x,y\n0.3,0.4\n0.1,0.2\n0.9,0.8\n0.5,0.5\n")
    mech = tmp_path / "xy.npz"
    assert run(["build", "--space", csv, "--mechanism", "exponential", "--epsilon", "2",
                "-o", mech], capsys)[0] == 0
    code, o, e = run(["privatize", mech, "--seed", "2"], capsys, csv.read_text(), monkeypatch)
    assert code == 0, e
    out = o.splitlines()
    assert out[0] == "x,y" and len(out) == 5
    allowed = {"0.3,0.4", "0.1,0.2", "0.9,0.8", "0.5,0.5"}
    assert set(out[1:]) <= allowed
    # an index still works; a point far outside the space is refused by line
    assert run(["privatize", mech, "2", "--seed", "0"], capsys)[0] == 0
    code, o, e = run(["privatize", mech], capsys, "0.1,0.2\n50,50\n", monkeypatch)
    assert code == 2 and "line 2" in e and "50" not in e
    # a labelled CSV (site,x,y) privatized with the rows build read
    mech2 = tmp_path / "sites.npz"
    assert run(["build", "--space", EXAMPLES / "sites.csv", "--mechanism", "exponential",
                "--epsilon", "2", "-o", mech2], capsys)[0] == 0
    rows = (EXAMPLES / "sites.csv").read_text().splitlines()[:4]
    code, o, e = run(["privatize", mech2, "--seed", "1"], capsys, "\n".join(rows) + "\n",
                     monkeypatch)
    assert code == 0, e
    space = mdp.load(mech2).space
    table = {f"{lab},{x:.10g},{y:.10g}" for lab, (x, y) in zip(space.labels, space.points, strict=True)}
    assert o.splitlines()[0] == rows[0] and set(o.splitlines()[1:]) <= table


@pytest.mark.parametrize("argv, mechanisms, eps", [
    (["--mechanisms", "optimal,spanner", "--eps-tight", "-1,1"], ["optimal", "spanner"], [-1, 1]),
    (["--mechanisms", "optimal", "spanner", "--eps-tight", "0.5", "1,2"], ["optimal", "spanner"],
     [0.5, 1, 2]),
    (["--eps-tight", "-1", "1e-3"], None, [-1, 1e-3]),
    (["--eps-tight=-.5,2"], None, [-0.5, 2]),
])
def test_one_list_syntax(argv, mechanisms, eps):
    args = build_parser().parse_args(["curves"] + argv)
    assert args.mechanisms == mechanisms and args.eps_tight == eps


def test_one_list_syntax_in_experiments():
    from experiments import experiment_parser

    args = experiment_parser("loss-curves").parse_args(["--eps-tight", "-1,1", "--mechanisms",
                                                        "optimal,spanner"])
    assert args.eps_tight == [-1.0, 1.0] and args.mechanisms == ["optimal", "spanner"]


def test_negative_targets_are_refused_by_curves_not_by_the_parser(capsys):
    code, o, e = run(["curves", "--space", EXAMPLES / "sites.csv", "--eps-tight", "-1,1",
                      "--mechanisms", "exponential", "--no-progress", "-o", "/nonexistent/x"],
                     capsys)
    assert code == 2 and "expected one argument" not in e and "eps" in e.lower()


@pytest.fixture(scope="module")
def words(tmp_path_factory):
    out = tmp_path_factory.mktemp("words") / "w.npz"
    assert main(["build", "--space", "glove:200:0", "--mechanism", "exponential", "--epsilon",
                 "2", "-o", str(out)]) == 0
    return out


def test_text_words_on_argv_and_stdin_alike(words, capsys, monkeypatch):
    capsys.readouterr()
    code, argv_out, e = run(["privatize", words, "Japan", "--seed", "3"], capsys)
    assert code == 0, e
    code, stdin_out, e = run(["privatize", words, "--seed", "3"], capsys, "Japan\n", monkeypatch)
    words_of_space = set(mdp.load(words).space.labels.tolist())
    assert code == 0 and argv_out == stdin_out and argv_out.strip().lower() in words_of_space
    code, o, e = run(["privatize", words, "Xyzzy", "--oov", "mask", "--seed", "3"], capsys)
    assert code == 0 and o.strip() == "<unk>"
    code, o, e = run(["privatize", words, "Xyzzy paid"], capsys)
    assert code == 2 and "--oov mask" in e and "oov='mask'" not in e
    code, o2, e = run(["privatize", words, "Xyzzy", "--oov", "mask"], capsys)
    code, o3, e = run(["privatize", words, "--oov", "mask"], capsys, "Xyzzy\n", monkeypatch)
    assert o2 == o3 == "<unk>\n"


def test_plugin_space_with_its_own_metric(tmp_path, capsys):
    spec = f"checkins:{EXAMPLES / 'checkins.txt'}:20"
    code, o, e = run(["lower-bound", "--space", spec, "--metric", "haversine", "--epsilon", "1"],
                     capsys)
    assert code == 0, e
    code, o, e = run(["lower-bound", "--space", spec, "--metric", "euclidean", "--epsilon", "1"],
                     capsys)
    assert code == 2 and "haversine" in e


def test_version(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0 and mdp.__version__ in capsys.readouterr().out
