"""Finishing and saving the toolkit's figures (one look for every plot)."""

from __future__ import annotations

from pathlib import Path

from ..io import atomic_write

__all__ = ["finish_and_save"]


def finish_and_save(fig, ax, title: str, path: str | Path, *, legend: dict | None = None) -> Path:
    """Title, grid, legend and tight layout, then the PNG written atomically; the figure is
    closed. ``legend``: keyword arguments of ``ax.legend`` (default ``fontsize=8``)."""
    import matplotlib.pyplot as plt

    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(**({"fontsize": 8} if legend is None else legend))
    fig.tight_layout()
    path = Path(path)
    atomic_write(path, lambda fh: fig.savefig(fh, format="png"))
    plt.close(fig)
    return path
