"""Drawing heatmaps on a map: labelled axes with units, a colour bar, legible ticks.

Shared by ``mdp heatmap`` (:mod:`geo.heatmap_command`) and the heatmaps experiment
(:mod:`experiments.heatmaps`). Only matplotlib objects are touched: the caller owns the figure
and saves it.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["draw_heatmap", "geo_aspect", "MASS_LABEL"]

#: Colour-bar label of a mass-preserving heatmap of a normalised distribution.
MASS_LABEL = "share of users' mass per pixel"


def geo_aspect(lat_min: float, lat_max: float) -> float:
    """Axes aspect (y unit / x unit) that draws a lon/lat box with true proportions.

    One degree of longitude is ``cos(latitude)`` degrees of latitude long; the aspect is
    ``1 / cos`` of the box's middle latitude.
    """
    mid = math.radians((lat_min + lat_max) / 2.0)
    return 1.0 / max(math.cos(mid), 1e-6)


def draw_heatmap(ax, heat: np.ndarray, *, extent: tuple[float, float, float, float],
                 xlabel: str, ylabel: str, colorbar_label: str = MASS_LABEL,
                 origin: str = "lower", aspect: float | str = "equal", cmap: str = "inferno",
                 nticks: int = 4, colorbar: bool = True, vmax: float | None = None):
    """Show ``heat`` (rows = y) on ``ax`` over ``extent`` with labelled axes and a colour bar.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
    heat : ndarray, shape (R, C)
        Row ``i`` is drawn at the ``i``-th y band from the bottom (``origin="lower"``) or the
        top (``origin="upper"``).
    extent : (xmin, xmax, ymin, ymax)
        Data coordinates of the grid's outer edges.
    xlabel, ylabel : str
        Axis labels with their units, e.g. ``"longitude (deg)"``.
    colorbar_label : str
        What the colour means, with its unit.
    origin : {"lower", "upper"}
    aspect : float or "equal" or "auto"
        See :func:`geo_aspect` for lon/lat boxes.
    cmap : str
    nticks : int
        At most this many ticks per axis (keeps tick labels from overlapping).
    colorbar : bool
        Draw the colour bar (for small or large values, the power of ten is in its label).
    vmax : float, optional
        Upper end of the colour scale (default: the maximum of ``heat``).

    Returns
    -------
    matplotlib.image.AxesImage
    """
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    xmin, xmax, ymin, ymax = extent
    shown = (xmin, xmax, ymin, ymax) if origin == "lower" else (xmin, xmax, ymax, ymin)
    im = ax.imshow(heat, origin=origin, cmap=cmap, extent=shown, aspect=aspect,
                   interpolation="nearest", vmin=0.0, vmax=vmax)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.xaxis.set_major_locator(MaxNLocator(nticks))
    ax.yaxis.set_major_locator(MaxNLocator(nticks))
    if colorbar:
        cb = ax.figure.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
        # The power of ten goes into the label, not into matplotlib's offset text above the
        # bar, where it collides with the axes' title.
        top = float(vmax if vmax is not None else np.nanmax(heat)) if heat.size else 0.0
        power = int(np.floor(np.log10(top))) if top > 0 and not 1e-2 <= top < 1e4 else 0
        cb.formatter = FuncFormatter(lambda v, _: f"{v / 10.0 ** power:g}")
        cb.set_label(colorbar_label + (f" (x 1e{power})" if power else ""))
        cb.update_ticks()
    return im
