"""Interactive maps: mdp map, --privatized, mdp heatmap -o *.html, rendered in headless Chromium."""

from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pytest

import mdp

folium = pytest.importorskip("folium", reason="the maps need the optional extra 'map' (folium)")

from geo import heatmap_command, map_command  # noqa: E402
from geo.explain import radius_holding  # noqa: E402
from geo.webmap import OUTPUT_CLASS, RELEASED_CLASS  # noqa: E402
from mdp.cli import main  # noqa: E402
from mdp.plugins import COMMANDS  # noqa: E402

VIENNA = np.array([(48.2082, 16.3738), (48.2106, 16.3645), (48.2035, 16.3690),
                   (48.2185, 16.3725), (48.1986, 16.3695), (48.2150, 16.3850),
                   (48.2000, 16.3900), (48.2250, 16.3600)])


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


@pytest.fixture
def map_cli():
    registered = "map" not in COMMANDS.names()
    if registered:
        COMMANDS.register("map", map_command.COMMAND)
    yield
    if registered:
        COMMANDS.unregister("map")


@pytest.fixture(scope="module")
def mech_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("map") / "mine.npz"
    mdp.build("exponential", mdp.MetricSpace.from_points(VIENNA, metric="haversine"), 2.0).save(path)
    return path


def test_map_page_has_every_output_with_its_probability(mech_file, tmp_path, map_cli, capsys):
    out = tmp_path / "map.html"
    assert main(["map", str(mech_file), "--input", "48.2090,16.3730", "-o", str(out)]) == 0
    html = out.read_text()
    mech = mdp.load(mech_file)
    assert html.count(f'"className": "{OUTPUT_CLASS}"') == mech.space.n
    shown = sorted(float(x) for x in re.findall(r"\d+: probability ([0-9.e-]+)\s", html))
    assert np.allclose(shown, np.sort(mech.matrix[0]), rtol=2e-3)     # the located row, 3 digits
    r90 = radius_holding(mech.matrix[:1], mech.space.distances[:1], 0.9)[0]
    assert f'"radius": {r90 * 1000!r}' in html or f"within {r90:.3g} km" in html
    assert "mdp-legend" in html and "linear-gradient" in html
    # no script or style from the network: Leaflet is inlined, only tiles are remote
    assert not re.search(r"<script[^>]+src=\"https?:", html)
    assert not re.search(r"<link[^>]+href=\"https?:", html)
    assert "L.circleMarker" in html and "Leaflet" in html


def test_privatized_map_draws_released_points_only(mech_file, tmp_path, map_cli, capsys):
    released = tmp_path / "released.csv"
    released.write_text("user,lat,lon\nann,48.208200,16.373800\nbob,48.208200,16.373800\n"
                        "bob,48.225000,16.360000\n")
    out = tmp_path / "rel.html"
    assert main(["map", "--privatized", str(released), "-o", str(out)]) == 0
    html = out.read_text()
    assert html.count(f'"className": "{RELEASED_CLASS}"') == 2
    assert "2 row(s)" in html and OUTPUT_CLASS not in html
    assert main(["map", str(mech_file), "-o", str(out)]) == 2
    assert "--input" in capsys.readouterr().err


def test_heatmap_html_overlay(tmp_path, capsys):
    rng = np.random.default_rng(0)
    src = tmp_path / "pts.csv"
    lines = [f"u{i % 50},{16.36 + rng.normal(0, 0.01):.6f},{48.21 + rng.normal(0, 0.01):.6f}"
             for i in range(400)]
    src.write_text("user,lon,lat\n" + "\n".join(lines) + "\n")
    out = tmp_path / "heat.html"
    parser = __import__("argparse").ArgumentParser()
    heatmap_command.configure_parser(parser)
    args = parser.parse_args([str(src), "--epsilon", "1", "--delta-grid", "32", "--bounds",
                              "16.30", "16.42", "48.15", "48.27", "--seed", "1", "-o", str(out)])
    assert heatmap_command.run_cli(args) == 0
    html = out.read_text()
    assert "data:image/png;base64," in html and "mdp-heat" in html and "mdp-legend" in html
    assert "16.36" not in html.split("<script>", 1)[0]         # inputs are not in the page
    for line in lines[:20]:
        assert line.split(",", 1)[1] not in html


@pytest.mark.skipif(chromium() is None, reason="no Chromium (apt-get install chromium could not "
                                               "install it here); the page is checked without it")
def test_map_renders_offline_in_headless_chromium(mech_file, tmp_path, map_cli, capsys):
    out = tmp_path / "map.html"
    assert main(["map", str(mech_file), "--input", "48.2090,16.3730", "-o", str(out)]) == 0
    common = [chromium(), "--headless", "--no-sandbox", "--disable-gpu",
              "--host-resolver-rules=MAP * ~NOTFOUND",        # no network: the page must cope
              "--virtual-time-budget=5000", "--window-size=1000,700"]
    dom = subprocess.run([*common, "--dump-dom", out.as_uri()], capture_output=True, text=True,
                         timeout=120).stdout
    # Leaflet drew one SVG path per output (className on the path), the 90% circle and the input
    assert len(re.findall(rf'<path class="{OUTPUT_CLASS} leaflet-interactive"', dom)) == len(VIENNA)
    assert 'class="mdp-radius90 leaflet-interactive"' in dom
    assert 'id="mdp-legend"' in dom and "probability of each output" in dom
    shot = tmp_path / "map.png"
    subprocess.run([*common, f"--screenshot={shot}", out.as_uri()], capture_output=True,
                   timeout=120)
    assert shot.exists() and shot.stat().st_size > 10_000
