"""Epsilon in plain words: --radius/--level and mdp explain."""

from __future__ import annotations

import json

import numpy as np
import pytest

import mdp
from geo.explain import explain, radius_holding
from geo.locations import snap_threshold_km
from mdp.cli.main import main
from mdp.plugins import COMMANDS
from mdp.spaces.metric_space import haversine_km

VIENNA = [(48.2082, 16.3738), (48.2106, 16.3645), (48.2035, 16.3690), (48.2185, 16.3725),
          (48.1986, 16.3695), (48.2150, 16.3850), (48.2000, 16.3900), (48.2250, 16.3600)]


@pytest.fixture
def places(tmp_path):
    path = tmp_path / "mine.csv"
    path.write_text("lat,lon\n" + "".join(f"{a},{b}\n" for a, b in VIENNA))
    return path


def test_radius_and_level_give_epsilon(places, tmp_path, capsys):
    out = tmp_path / "m.npz"
    code = main(["build", "--space", str(places), "--metric", "haversine", "--mechanism",
                 "exponential", "--radius", "500m", "--level", "1.4", "-o", str(out)])
    assert code == 0, capsys.readouterr().err
    assert mdp.load(out).epsilon == pytest.approx(1.4 / 0.5)
    code = main(["build", "--space", str(places), "--metric", "haversine", "--mechanism",
                 "exponential", "--radius", "2 km", "--level", "1", "-o", str(out)])
    assert code == 0 and mdp.load(out).epsilon == pytest.approx(0.5)


@pytest.mark.parametrize("argv, message", [
    (["--radius", "500m"], "both --radius and --level"),
    (["--radius", "500m", "--level", "1", "--epsilon", "2"], "either --epsilon"),
    ([], "give --epsilon"),
])
def test_radius_level_misuse_is_a_clear_error(places, tmp_path, capsys, argv, message):
    code = main(["build", "--space", str(places), "--metric", "haversine", "--mechanism",
                 "exponential", "-o", str(tmp_path / "m.npz"), *argv])
    assert code == 2 and message in capsys.readouterr().err


def test_radius_needs_a_unit_and_a_location_space(tmp_path, capsys):
    pts = tmp_path / "xy.csv"
    pts.write_text("0,0\n1,0\n0,1\n")
    with pytest.raises(SystemExit):
        main(["build", "--space", str(pts), "--mechanism", "exponential", "--radius", "500",
              "--level", "1", "-o", str(tmp_path / "m.npz")])
    assert "with a unit" in capsys.readouterr().err
    code = main(["build", "--space", str(pts), "--mechanism", "exponential", "--radius", "500m",
                 "--level", "1", "-o", str(tmp_path / "m.npz")])
    assert code == 2 and "location space" in capsys.readouterr().err


def test_radius_holding_matches_brute_force():
    rng = np.random.default_rng(0)
    M = rng.random((12, 12))
    M /= M.sum(axis=1, keepdims=True)
    D = rng.random((12, 12))
    for q in (0.5, 0.9, 0.95):
        got = radius_holding(M, D, q)
        for u in range(12):
            feasible = [r for r in D[u] if M[u][D[u] <= r].sum() >= q]
            assert got[u] == min(feasible)


def test_explanation_figures_and_sentence():
    P = np.array(VIENNA)
    space = mdp.MetricSpace.from_points(P, metric="haversine")
    mech = mdp.build("exponential", space, 2.8)
    ex = explain(mech)
    assert ex.mean_displacement_km == pytest.approx(float(np.mean(mech.row_losses())))
    assert ex.worst_displacement_km == pytest.approx(float(np.max(mech.row_losses())))
    assert ex.radius_95_km["worst input"] >= ex.radius_90_km["worst input"]
    assert ex.levels[0.5] == pytest.approx(1.4)
    s = ex.sentence()
    assert "level 1.4 within 500 m" in s and "2.8 per km" in s and f"{np.exp(1.4):.3g}" in s
    assert ex.raw_slack_kind == "twice the snapping threshold"


def test_cell_diagonal_on_a_grid_space():
    c = 0.005
    rows, cols = np.meshgrid(np.arange(3), np.arange(4), indexing="ij")
    lat = 39.6 + (rows.ravel() + 0.5) * c
    lon = 115.9 + (cols.ravel() + 0.5) * c
    labels = [f"r{r}c{k}" for r, k in zip(rows.ravel(), cols.ravel(), strict=True)]
    space = mdp.MetricSpace.from_points(np.c_[lat, lon], metric="haversine", labels=labels)
    ex = explain(mdp.build("exponential", space, 1.0))
    corner = haversine_km(np.array([[39.6, 0.0]]), np.array([[39.6 + c, c]]))[0, 0]
    # between locations inside cells: one cell diagonal (the widest: the southern row); over
    # every location the command accepts, twice the snapping threshold, at least that
    assert ex.cell_slack_km == pytest.approx(corner, rel=1e-6)
    assert ex.raw_slack_kind == "twice the snapping threshold"
    assert ex.raw_slack_km == pytest.approx(2 * snap_threshold_km(space))
    assert ex.raw_slack_km >= corner         # each location within half a diagonal of its centre
    assert "one cell diagonal, for two locations inside the space's cells" in ex.text()


def test_mdp_explain_command(places, tmp_path, capsys):
    out = tmp_path / "m.npz"
    assert main(["build", "--space", str(places), "--metric", "haversine", "--mechanism",
                 "exponential", "--radius", "200m", "--level", "1.4", "-o", str(out)]) == 0
    capsys.readouterr()
    assert main(["explain", str(out)]) == 0
    text = capsys.readouterr().out
    assert "level 3.5 within 500 m" in text and "1.4 within 200 m" in text and "90% of outputs within" in text
    assert "expected displacement" in text and "raw locations" in text
    assert main(["explain", str(out), "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["epsilon"] == pytest.approx(1.4 / 0.2)
    words = tmp_path / "w.npz"
    mdp.build("exponential", mdp.MetricSpace.from_points(np.eye(3)), 1.0).save(words)
    assert main(["explain", str(words)]) == 2
    assert "haversine" in capsys.readouterr().err


def test_help_of_the_location_commands(capsys):
    from geo import map_command, users_command

    added = []
    for name, command in (("map", map_command.COMMAND),
                          ("privatize-users", users_command.COMMAND)):
        if name not in COMMANDS.names():
            COMMANDS.register(name, command)
            added.append(name)
    try:
        for argv in (["--help"], ["explain", "--help"], ["map", "--help"],
                     ["privatize", "--help"], ["build", "--help"]):
            with pytest.raises(SystemExit) as exit_:
                main(argv)
            assert exit_.value.code == 0
        text = capsys.readouterr().out
        assert "--radius" in text and "--users" in text and "--privatized" in text
    finally:
        for name in added:
            COMMANDS.unregister(name)
