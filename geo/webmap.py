"""Interactive maps of location mechanisms and releases (folium pages that render offline).

:func:`mechanism_map` draws where one input goes: every point of the mechanism's space as a
marker coloured by the probability that the input's output is that point (log colour scale,
legend, probability on hover), the input, and the circle holding 90% of its outputs
(:func:`geo.explain.radius_holding`). :func:`released_map` draws released points only (no
input), :func:`heat_overlay_map` a released heatmap as an image overlay.

folium (Leaflet for Python) writes the pages. By default folium's pages load Leaflet, jQuery,
Bootstrap and Font Awesome from CDNs; these pages need only Leaflet, which the package ships
under ``geo/static/leaflet`` (Leaflet 1.9.3, BSD-2-Clause, licence beside it) and inlines, and
the legend is plain HTML/CSS, so markers, circles and legend render without network access.
Only the background tiles (OpenStreetMap) need the network.

Text from data (a space's labels, a mechanism's name, titles) reaches the page in three
contexts at once: folium writes a tooltip into a JavaScript template literal, which Leaflet
then sets as HTML, and legends are HTML text. :func:`html_text` writes every character other
than ASCII letters, digits, space and ``.,:;_-()%/`` as an HTML numeric character reference
(``&#96;`` for a backtick), which is inert in all three: no quote, backtick, ``$``, backslash
or ``<`` survives to end a string or open a tag, and the browser shows the original text.
So the page runs no code built from data, whatever a mechanism file's labels hold.
"""

from __future__ import annotations

import base64
import io
from importlib.resources import files

import folium
import matplotlib
import numpy as np
from matplotlib import colormaps
from matplotlib.colors import LogNorm, Normalize, to_hex

from mdp.io import atomic_write_text
from mdp.mechanism import Mechanism

from .explain import radius_holding
from .locations import locate

__all__ = ["mechanism_map", "released_map", "heat_overlay_map", "save_map", "html_text",
           "OUTPUT_CLASS", "RELEASED_CLASS"]

#: CSS class of the output markers of :func:`mechanism_map` (tests count them in the page).
OUTPUT_CLASS = "mdp-output"
#: CSS class of the markers of :func:`released_map`.
RELEASED_CLASS = "mdp-released"
_CMAP = "viridis"
_SAFE_CHARACTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                             " .,:;_-()%/")


def html_text(value) -> str:
    """``value`` as text that is inert in HTML text, HTML attributes and JavaScript strings
    (module docstring): characters outside a small safe set become ``&#N;`` references."""
    return "".join(ch if ch in _SAFE_CHARACTERS else f"&#{ord(ch)};" for ch in str(value))


def _leaflet_inline() -> tuple[str, str]:
    base = files("geo") / "static" / "leaflet"
    return (base / "leaflet.js").read_text(encoding="utf-8"), \
        (base / "leaflet.css").read_text(encoding="utf-8")


def _new_map(latlon: np.ndarray) -> folium.Map:
    m = folium.Map(tiles="OpenStreetMap", control_scale=True)
    # this page's only library is Leaflet, inlined by save_map: no CDN scripts or styles
    m.default_js, m.default_css = [], []
    lo, hi = latlon.min(axis=0), latlon.max(axis=0)
    pad = np.maximum((hi - lo) * 0.1, 1e-3)
    m.fit_bounds([(lo - pad).tolist(), (hi + pad).tolist()])
    return m


def _legend(title: str, stops: list[str], ticks: list[str], extra: str = "") -> folium.Element:
    gradient = ", ".join(stops)
    labels = "".join(f'<span style="flex:1;text-align:center">{html_text(t)}</span>'
                     for t in ticks)
    return folium.Element(
        '<div id="mdp-legend" style="position:fixed;bottom:24px;right:12px;z-index:1000;'
        'background:white;padding:8px 10px;border:1px solid #888;border-radius:4px;'
        f'font:12px sans-serif;width:230px"><b>{html_text(title)}</b>'
        f'<div class="mdp-colorbar" style="height:12px;margin:4px 0;'
        f'background:linear-gradient(to right, {gradient})"></div>'
        f'<div style="display:flex">{labels}</div>{extra}</div>')


def _stops(n: int = 9) -> list[str]:
    cmap = colormaps[_CMAP]
    return [to_hex(cmap(t)) for t in np.linspace(0, 1, n)]


def mechanism_map(mech: Mechanism, lat: float, lon: float, *, snap: bool = False,
                  max_snap_km: float | None = None) -> folium.Map:
    """Where the location (lat, lon) goes under ``mech``: markers coloured by probability.

    The location is located as :func:`geo.locations.locate` does (far ones refused unless
    ``snap``); the map shows the mechanism's row for that point, its 90% circle and a legend.
    """
    space = mech.space
    u = int(locate(space, [[lat, lon]], snap=snap, max_snap_km=max_snap_km)[0])
    pts = np.asarray(space.points, dtype=float)
    p = np.asarray(mech.matrix, dtype=float)[u]
    positive = p[p > 0]
    norm = LogNorm(vmin=max(positive.min(), positive.max() * 1e-6), vmax=positive.max())
    cmap = colormaps[_CMAP]
    m = _new_map(np.vstack([pts, [[lat, lon]]]))
    labels = ([html_text(lab) for lab in space.labels.tolist()] if space.labels is not None
              else [str(i) for i in range(space.n)])
    for w in np.argsort(p):
        colour = to_hex(cmap(norm(max(p[w], norm.vmin))))
        folium.CircleMarker(pts[w].tolist(), radius=7, color=colour, fill=True, fill_color=colour,
                            fill_opacity=0.85, weight=1, class_name=OUTPUT_CLASS,
                            tooltip=f"{labels[w]}: probability {p[w]:.3g}").add_to(m)
    r90 = float(radius_holding(np.asarray(mech.matrix, dtype=float)[u:u + 1],
                               np.asarray(space.distances, dtype=float)[u:u + 1], 0.9)[0])
    folium.Circle(pts[u].tolist(), radius=r90 * 1000, color="#d62728", weight=2, fill=False,
                  class_name="mdp-radius90",
                  tooltip=f"90% of outputs within {r90:.3g} km of {labels[u]}").add_to(m)
    folium.CircleMarker([lat, lon], radius=5, color="black", fill=True, fill_color="white",
                        fill_opacity=1, weight=3, class_name="mdp-input",
                        tooltip=f"input ({lat:.5f}, {lon:.5f}), located to {labels[u]}").add_to(m)
    ticks = [f"{v:.2g}" for v in np.geomspace(norm.vmin, norm.vmax, 3)]
    extra = ('<div style="margin-top:4px"><span style="color:#d62728">&#9711;</span> 90% of '
             f'outputs ({r90:.3g} km) &nbsp; <b>&#9711;</b> input</div>'
             f'<div>{html_text(mech.name)}, epsilon {mech.epsilon:g} per km</div>')
    m.get_root().html.add_child(_legend("probability of each output", _stops(), ticks, extra))
    return m


def released_map(latlon: np.ndarray) -> folium.Map:
    """Released points only: one marker per distinct point, sized and coloured by its count."""
    P = np.asarray(latlon, dtype=float)
    uniq, counts = np.unique(P, axis=0, return_inverse=False, return_counts=True)
    norm = Normalize(vmin=1, vmax=max(int(counts.max()), 2))
    cmap = colormaps[_CMAP]
    m = _new_map(uniq)
    for (a, b), c in zip(uniq, counts, strict=True):
        colour = to_hex(cmap(norm(c)))
        folium.CircleMarker([float(a), float(b)], radius=4 + 6 * np.sqrt(c / counts.max()),
                            color=colour, fill=True, fill_color=colour, fill_opacity=0.8, weight=1,
                            class_name=RELEASED_CLASS,
                            tooltip=f"released ({a:.5f}, {b:.5f}): {c} row(s)").add_to(m)
    ticks = [f"{v:.0f}" for v in np.linspace(norm.vmin, norm.vmax, 3)]
    m.get_root().html.add_child(_legend(f"released rows per point ({len(P)} rows)", _stops(),
                                        ticks))
    return m


def heat_overlay_map(heat: np.ndarray, bounds: tuple[float, float, float, float], *,
                     title: str, origin: str = "lower") -> folium.Map:
    """A released heatmap (rows = latitude) over ``bounds = (lon_min, lon_max, lat_min, lat_max)``."""
    H = np.asarray(heat, dtype=float)
    if origin == "lower":
        H = H[::-1]                                  # image rows run north to south
    norm = Normalize(vmin=float(H.min()), vmax=float(H.max()) if H.max() > H.min() else H.min() + 1)
    rgba = colormaps[_CMAP](norm(H))
    rgba[..., 3] = 0.65
    buf = io.BytesIO()
    matplotlib.image.imsave(buf, rgba, format="png")
    url = "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")
    x0, x1, y0, y1 = bounds
    m = _new_map(np.array([[y0, x0], [y1, x1]]))
    folium.raster_layers.ImageOverlay(url, bounds=[[y0, x0], [y1, x1]], opacity=0.8,
                                      class_name="mdp-heat").add_to(m)
    ticks = [f"{v:.2g}" for v in np.linspace(norm.vmin, norm.vmax, 3)]
    m.get_root().html.add_child(_legend(title, _stops(), ticks))
    return m


def save_map(m: folium.Map, path) -> None:
    """Write the page atomically with Leaflet's script and style inlined."""
    js, css = _leaflet_inline()
    html = m.get_root().render()
    head = f"<style>{css}</style>\n<script>{js}</script>\n"
    html = html.replace("<head>", "<head>\n" + head, 1)
    atomic_write_text(path, html)
