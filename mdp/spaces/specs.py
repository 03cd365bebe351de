"""Metric spaces from a SPEC string (the ``--space`` option of the ``mdp`` command).

==============================  ==========================================================
SPEC                            space
==============================  ==========================================================
``glove:N[:SEED]``              N words of the embedded GloVe slice, clustered sampling
                                (Imola et al. 2022 section 5.1), Euclidean distances
``glove:N:SEED:full``           the same from the full 400k-word GloVe (extra ``glove``)
``fasttext:N[:SEED]``           N words of a fastText model trained with gensim on gensim's
                                Lee corpus (:func:`text.fasttext.train_lee_fasttext`)
``FILE.csv``                    points, one row of coordinates per line (optional header;
                                a non-numeric first column is taken as labels); with
                                ``metric="haversine"`` the coordinates are ``lat,lon`` in
                                degrees (columns named ``lat``/``lon`` or ``latitude``/
                                ``longitude`` are put in that order) and distances are in km
``FILE.npy``                    a precomputed n x n distance matrix
``geolife:PATH:N``              the N most popular Geolife cells (PLT tree or the compact
                                per-trace count file)
``checkins:PATH:N``             the N most popular cells of a check-in log
==============================  ==========================================================

Prefixed specs are dispatched through :data:`mdp.plugins.SPACES`: the packages that own the
data (``text`` for word spaces, ``geo`` for location spaces) declare their loaders as entry
points of the ``mdp.spaces`` group; each loader receives the whole spec.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ..errors import FileFormatError, MissingFileError, ParameterError
from ..io import read_npy, read_points_csv
from ..plugins import SPACES
from ..runtime.resources import check_memory, distance_matrix_bytes, memory_limit
from .metric_space import MetricSpace

__all__ = ["load_space", "load_points_csv", "DEFAULT_SPACE"]

DEFAULT_SPACE = "glove:50:0"


#: Copies of a ``.npy`` distance matrix alive while it is read and validated (the file's array,
#: its float64 conversion and the space's symmetric copy).
NPY_COPIES = 3


def load_space(spec: str | None, *, metric: str | None = None,
               max_memory: int | None = None) -> MetricSpace:
    """Build the metric space described by ``spec`` (see the module docstring).

    Parameters
    ----------
    spec : str or None
        ``None`` gives :data:`DEFAULT_SPACE`.
    metric : str or None
        Metric of the points of a ``FILE.csv`` (default ``"euclidean"``; ``"haversine"`` for
        ``lat,lon`` degrees, distances in km; any :func:`scipy.spatial.distance.cdist` name).
        Plugin specs and distance matrices carry their own metric: giving another one is an
        error (giving theirs is accepted).
    max_memory : int or None
        Limit in bytes on the space's arrays, checked before they are allocated (from the
        number of points of a ``FILE.csv``, from the size of a ``FILE.npy``); None: half the
        machine's memory (:func:`mdp.runtime.resources.default_max_memory`). Plugin specs check their
        own sizes against it too (:func:`mdp.runtime.resources.memory_limit`).

    Raises
    ------
    mdp.errors.ResourceLimitError
        The space's arrays would exceed ``max_memory``.
    """
    spec = DEFAULT_SPACE if spec is None else str(spec)
    prefix, _, rest = spec.partition(":")
    if rest and prefix in SPACES:
        with memory_limit(max_memory):
            space = SPACES.get(prefix)(spec)
        if metric is not None and metric != space.metric:
            raise ParameterError(f"--metric {metric}: the space {spec!r} has its own metric, "
                                 f"{space.metric}; --metric applies to FILE.csv spaces")
        return space
    path = Path(spec)
    if path.suffix.lower() == ".npy":
        if metric is not None:
            raise ParameterError(f"--metric applies to FILE.csv spaces; {path} holds distances")
        if not path.exists():
            raise MissingFileError(f"no distance matrix at {path}")
        check_memory(NPY_COPIES * os.path.getsize(path), f"{path}: a distance matrix",
                     max_memory)
        D = read_npy(path)
        if D.dtype.kind not in "biuf":
            raise FileFormatError(path, f"a distance matrix must hold real numbers, got dtype {D.dtype}")
        try:
            return MetricSpace.from_distances(D)
        except (ValueError, TypeError) as exc:
            raise FileFormatError(path, f"not a distance matrix: {exc}") from None
    if path.suffix.lower() in (".csv", ".txt"):
        if not path.exists():
            raise MissingFileError(f"no points file at {path}")
        return load_points_csv(path, metric or "euclidean", max_memory=max_memory)
    prefixes = ", ".join(f"{p}:..." for p in SPACES.names())
    raise ParameterError(f"unknown space spec {spec!r}; use FILE.csv, FILE.npy or one of "
                         f"{prefixes or '(no space plugins installed)'}")


def load_points_csv(path: str | os.PathLike, metric: str = "euclidean", *,
                    max_memory: int | None = None):
    """:func:`read_points_csv` as a :class:`~mdp.spaces.metric_space.MetricSpace`.

    Parameters
    ----------
    path : str or os.PathLike
    metric : str, default "euclidean"
        ``"haversine"`` reads (lat, lon) degrees (see ``latlon`` of :func:`read_points_csv`)
        and gives distances in km; any :func:`scipy.spatial.distance.cdist` name otherwise.
    max_memory : int or None
        Limit in bytes on the distance matrices built (:func:`mdp.runtime.resources.check_memory`,
        checked from the number of points before any is allocated).

    Raises
    ------
    mdp.errors.MissingFileError, mdp.errors.FileFormatError
        As :func:`read_points_csv`; also for points the space refuses (fewer than 2, repeated
        points with both line numbers, repeated labels), with the reason.
    mdp.errors.ResourceLimitError
        The distance matrices would exceed ``max_memory``.
    """
    points, labels, lines = read_points_csv(path, latlon=metric == "haversine",
                                           with_lines=True)
    check_memory(distance_matrix_bytes(len(points)),
                 f"{path}: a metric space of {len(points):,} points", max_memory)
    _, first, inverse = np.unique(points, axis=0, return_index=True, return_inverse=True)
    inverse = np.asarray(inverse).ravel()
    dup = np.flatnonzero(first[inverse] != np.arange(len(points)))
    if dup.size:
        k = int(dup[0])
        raise FileFormatError(path, f"the point on this line repeats the point on line "
                                    f"{int(lines[first[inverse[k]]])}; merge duplicates (a metric "
                                    "space needs distinct points)", line=int(lines[k]))
    try:
        return MetricSpace.from_points(points, metric=metric, labels=labels,
                                       max_memory=max_memory)
    except ValueError as exc:
        raise FileFormatError(path, f"not a valid points table: {exc}") from None
