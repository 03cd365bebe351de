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
from mdp.cli.main import main  # noqa: E402
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


# -- hostile labels ---------------------------------------------------------------------------
def _mark(k: int) -> str:
    return f"document.documentElement.setAttribute('data-pwned','{k}')"


#: Labels that ran code in the page when written into it as they were: closing folium's
#: template literal, interpolating into it, tags set as the tooltip's HTML (on hover), a script
#: end, and text that only needs to come back unchanged.
HOSTILE = [f"`;{_mark(1)};`", f"${{{_mark(2)}}}", f'<img src=x onerror="{_mark(3)}">',
           f"</script><script>{_mark(4)}</script>", f"<svg onload={_mark(5)}>",
           f"'\"><script>{_mark(6)}</script>", f"\\`${{{_mark(7)}}}", "a\\u0041b \\x41 \\",
           "\u2028\u2029 separators", "S\u00e3o Tom\u00e9 & Pr\u00edncipe", "\u65e5\u672c\u8a9e",
           "<!-- c", "{{ 7*7 }} {% raw %}", "\x00nul\x7f"]


def _hostile_mechanism(path, labels):
    rng = np.random.default_rng(5)
    pts = np.c_[48.2 + rng.uniform(-0.02, 0.02, len(labels)),
                16.37 + rng.uniform(-0.03, 0.03, len(labels))]
    space = mdp.MetricSpace.from_points(pts, metric="haversine", labels=labels)
    mdp.build("exponential", space, 2.0).save(path)
    return pts


def test_html_text_is_inert_and_reversible():
    import html as html_lib

    from hypothesis import given
    from hypothesis import strategies as st

    from geo.webmap import html_text

    @given(st.text())
    def inert(s):
        assert re.fullmatch(r"(?:[A-Za-z0-9 .,:;_\-()%/]|&#\d+;)*", html_text(s))

    @given(st.text(st.characters(blacklist_categories=("Cc", "Cs", "Cn"))))
    def shown_as_written(s):
        assert html_lib.unescape(html_text(s)) == s

    inert()
    shown_as_written()
    for label in HOSTILE:
        assert not set("`$\\<>'\"{}") & set(html_text(label))


def test_hostile_labels_reach_the_page_as_text_only(tmp_path, map_cli):
    mech_path = tmp_path / "hostile.npz"
    pts = _hostile_mechanism(mech_path, HOSTILE)
    out = tmp_path / "map.html"
    assert main(["map", str(mech_path), "--input", f"{pts[0, 0]},{pts[0, 1]}", "-o",
                 str(out)]) == 0
    page = out.read_text()
    body = page.split("</style>", 2)[-1]                      # after the inlined Leaflet
    for label in HOSTILE:
        assert label not in body
    assert "data-pwned" not in body.replace("&#39;data-pwned&#39;", "")
    # every tooltip is one template literal with nothing a label could end it with
    tips = re.findall(r"bindTooltip\(\s*`(.*?)`,", body, flags=re.S)
    assert len(tips) == len(HOSTILE) + 2
    for tip in tips:
        assert not set("`$\\") & set(tip)


def _open_tooltips_and_dump(path, tmp_path) -> str:
    """The page's DOM after load, with every tooltip opened (what hovering would show)."""
    opener = ("<script>window.addEventListener('load', function () { setTimeout(function () {"
              "for (const k of Object.keys(window)) { const m = window[k];"
              "if (m instanceof L.Map) { m.eachLayer(function (l) {"
              "if (l.getTooltip && l.getTooltip()) { l.openTooltip(); } }); } } }, 50); });"
              "</script>")
    probe = tmp_path / f"probe-{path.name}"
    probe.write_text(path.read_text().replace("</body>", opener + "</body>"))
    common = [chromium(), "--headless", "--no-sandbox", "--disable-gpu",
              "--disable-background-networking", "--host-resolver-rules=MAP * ~NOTFOUND",
              "--virtual-time-budget=5000", "--window-size=1000,700"]
    return subprocess.run([*common, "--dump-dom", probe.as_uri()], capture_output=True,
                          text=True, timeout=120).stdout


@pytest.mark.skipif(chromium() is None, reason="no Chromium (apt-get install chromium could not "
                                               "install it here); the page is checked without it")
def test_hostile_labels_run_no_script_in_chromium(tmp_path, map_cli, capsys):
    # fixed hostile labels, and random ones from the characters that matter to HTML and JS
    rng = np.random.default_rng(7)
    alphabet = list("<>\"'`$\\{}/;=&#()!-\u2028\u2029\u00e9\u65e5 ") + ["script", "img",
                                                                            "onerror", _mark(8)]
    fuzz = {"".join(rng.choice(alphabet, size=rng.integers(3, 12))) for _ in range(30)}
    labels = HOSTILE + sorted(fuzz - set(HOSTILE))
    mech_path = tmp_path / "hostile.npz"
    pts = _hostile_mechanism(mech_path, labels)
    out = tmp_path / "map.html"
    assert main(["map", str(mech_path), "--input", f"{pts[0, 0]},{pts[0, 1]}", "-o",
                 str(out)]) == 0
    dom = _open_tooltips_and_dump(out, tmp_path)
    assert "leaflet-tooltip" in dom and 'id="mdp-legend"' in dom     # the page did run
    assert dom.count('class="leaflet-tooltip') == len(labels) + 2   # every tooltip opened
    assert "data-pwned=" not in dom                                   # no label ran code
    assert "<img src=\"x\"" not in dom and "<svg onload" not in dom   # no label became a tag
    assert "S\u00e3o Tom\u00e9 &amp; Pr\u00edncipe" in dom           # shown as written


@pytest.mark.skipif(chromium() is None, reason="no Chromium (apt-get install chromium could not "
                                               "install it here); the page is checked without it")
def test_heatmap_page_from_hostile_user_names_runs_no_script(tmp_path):
    rng = np.random.default_rng(3)
    src = tmp_path / "pts.csv"
    names = [label.replace(",", ";").replace("\n", " ") for label in HOSTILE[:7]]
    rows = [f'"{names[i % 7].replace(chr(34), chr(34) * 2)}",{16.36 + rng.normal(0, 0.01):.6f},'
            f"{48.21 + rng.normal(0, 0.01):.6f}" for i in range(300)]
    src.write_text("user,lon,lat\n" + "\n".join(rows) + "\n")
    out = tmp_path / "heat.html"
    parser = __import__("argparse").ArgumentParser()
    heatmap_command.configure_parser(parser)
    args = parser.parse_args([str(src), "--epsilon", "1", "--delta-grid", "32", "--bounds",
                              "16.30", "16.42", "48.15", "48.27", "--seed", "1", "-o", str(out)])
    assert heatmap_command.run_cli(args) == 0
    page = out.read_text()
    assert "data-pwned" not in page                     # user names never reach the page
    dom = _open_tooltips_and_dump(out, tmp_path)
    assert 'id="mdp-legend"' in dom and "data-pwned=" not in dom
