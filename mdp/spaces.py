"""Metric spaces from a SPEC string (the ``--space`` option of the ``mdp`` command).

==============================  ==========================================================
SPEC                            space
==============================  ==========================================================
``glove:N[:SEED]``              N words of the embedded GloVe slice, clustered sampling
                                (seed imola2022 section 5.1), Euclidean distances
``glove:N:SEED:full``           the same from the full 400k-word GloVe (extra ``glove``)
``fasttext:N[:SEED]``           N words of a fastText model trained with gensim on gensim's
                                Lee corpus (:func:`text.fasttext.train_lee_fasttext`)
``FILE.csv``                    points, one row of coordinates per line (optional header;
                                a non-numeric first column is taken as labels)
``FILE.npy``                    a precomputed n x n distance matrix
``geolife:PATH:N``              the N most popular Geolife cells (PLT tree or the compact
                                per-trace count file)
``checkins:PATH:N``             the N most popular cells of a check-in log
==============================  ==========================================================

Prefixed specs are dispatched through :data:`SPACE_LOADERS` (``prefix -> "module:function"``,
imported lazily); the function receives the text after the prefix.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from .errors import FileFormatError
from .io import load_points_csv, read_npy
from .space import MetricSpace

__all__ = ["load_space", "SPACE_LOADERS", "DEFAULT_SPACE"]

DEFAULT_SPACE = "glove:50:0"

SPACE_LOADERS: dict[str, str] = {
    "glove": "text.vocabulary:space_from_spec",
    "fasttext": "text.vocabulary:space_from_spec",
    "geolife": "geo.popular:space_from_spec",
    "checkins": "geo.popular:space_from_spec",
}


def _points_csv(path: Path) -> MetricSpace:
    return load_points_csv(path)


def load_space(spec: str | None) -> MetricSpace:
    """Build the metric space described by ``spec`` (see the module docstring).

    ``None`` gives :data:`DEFAULT_SPACE`.
    """
    spec = DEFAULT_SPACE if spec is None else str(spec)
    prefix, _, rest = spec.partition(":")
    if rest and prefix in SPACE_LOADERS:
        module, func = SPACE_LOADERS[prefix].split(":")
        return getattr(importlib.import_module(module), func)(spec)
    path = Path(spec)
    if path.suffix.lower() == ".npy":
        if not path.exists():
            raise FileNotFoundError(f"no distance matrix at {path}")
        D = read_npy(path)
        if D.dtype.kind not in "biuf":
            raise FileFormatError(path, f"a distance matrix must hold real numbers, got dtype {D.dtype}")
        try:
            return MetricSpace.from_distances(D)
        except (ValueError, TypeError) as exc:
            raise FileFormatError(path, f"not a distance matrix: {exc}") from None
    if path.suffix.lower() in (".csv", ".txt"):
        if not path.exists():
            raise FileNotFoundError(f"no points file at {path}")
        return _points_csv(path)
    raise ValueError(f"unknown space spec {spec!r}; use glove:N[:SEED], glove:N:SEED:full, "
                     "fasttext:N[:SEED], FILE.csv, FILE.npy, geolife:PATH:N or checkins:PATH:N")
