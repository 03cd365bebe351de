"""Small things a new user meets first: help texts, units on plots, warnings, --version."""

from __future__ import annotations

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from mdp.cli.main import build_parser, main
from mdp.privacy.weak_epsilon import NO_PRIVACY_EXPONENT, weak_privacy_message


def _subparser(name):
    parser = build_parser()
    action = next(a for a in parser._actions if hasattr(a, "choices") and a.choices
                  and name in a.choices)
    return action.choices[name]


@pytest.mark.parametrize("command, options", [
    ("heatmap", ["--format", "--seed", "--delta-grid", "--epsilon"]),
    ("heatsource", ["--epsilon", "--delta", "--trials", "--seed"]),
])
def test_every_option_has_help(command, options):
    parser = _subparser(command)
    helps = {s: a.help for a in parser._actions for s in a.option_strings}
    for option in options:
        assert helps[option], f"mdp {command} {option} has no help"
    assert "not the delta" in helps.get("--delta-grid", "not the delta")


def test_heatmap_help_is_plain_text(capsys):
    with pytest.raises(SystemExit):
        main(["heatmap", "--help"])
    out = capsys.readouterr().out
    assert "``" not in out and ":func:" not in out and "Delta x Delta" in out


def test_curves_plot_units_for_haversine(tmp_path, monkeypatch):
    from mdp.curves.loss import plot_curves

    figures = []
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig",
                        lambda self, *a, **k: figures.append(self))
    df = pd.DataFrame({"mechanism": ["exponential"] * 2, "target_eps_tight": [0.5, 1.0],
                       "eps_tight": [0.5, 1.0], "loss_q": [2.0, 1.0]})
    plot_curves(df, tmp_path / "a.png", unit="km")
    plot_curves(df, tmp_path / "b.png")
    km, plain = (f.axes[0] for f in figures)
    assert "per km" in km.get_xlabel() and "km" in km.get_ylabel()
    assert "per unit of distance" in plain.get_xlabel()
    plt.close("all")


def test_heatmap_colour_bar_power_in_its_label():
    from geo.plotting import draw_heatmap

    fig, ax = plt.subplots()
    heat = np.linspace(0, 3e-4, 16).reshape(4, 4)
    draw_heatmap(ax, heat, extent=(0, 1, 0, 1), xlabel="x", ylabel="y")
    ax.set_title("title")
    fig.canvas.draw()
    bar = fig.axes[-1]
    assert bar.yaxis.get_offset_text().get_text() == ""    # nothing to collide with the title
    assert "1e-4" in bar.get_ylabel()
    ticks = [t.get_text() for t in bar.get_yticklabels() if t.get_text()]
    assert ticks and all(float(t) <= 3 for t in ticks)
    plt.close(fig)


def test_no_meaningful_privacy_warning(tmp_path, capsys):
    D = np.array([[0.0, 0.5, 1.0], [0.5, 0.0, 0.6], [1.0, 0.6, 0.0]])
    assert weak_privacy_message(D, 1.0) is None
    assert weak_privacy_message(D, 2 * NO_PRIVACY_EXPONENT * 0.99) is None
    message = weak_privacy_message(D, 1e6)
    assert "no meaningful privacy" in message and "0.5" in message
    csv = tmp_path / "p.csv"
    csv.write_text("x,y\n0,0\n1,0\n0,1\n")
    code = main(["build", "--space", str(csv), "--mechanism", "exponential", "--epsilon", "1e6",
                 "-o", str(tmp_path / "m.npz")])
    err = capsys.readouterr().err
    assert code == 0 and "warning" in err and "no meaningful privacy" in err
    main(["build", "--space", str(csv), "--mechanism", "exponential", "--epsilon", "1",
          "-o", str(tmp_path / "m.npz")])
    assert "no meaningful privacy" not in capsys.readouterr().err
