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

from pathlib import Path

import numpy as np
import pandas as pd

from .errors import ParameterError
from .plugins import SPACES
from .space import MetricSpace

__all__ = ["load_space", "DEFAULT_SPACE"]

DEFAULT_SPACE = "glove:50:0"


_LAT_NAMES = ("lat", "latitude")
_LON_NAMES = ("lon", "lng", "long", "longitude")


def _latlon_order(header: list[str]) -> list[int] | None:
    """Column positions of (lat, lon) when the header names them, else None."""
    low = [str(h).strip().lower() for h in header]
    lat = [i for i, h in enumerate(low) if h in _LAT_NAMES]
    lon = [i for i, h in enumerate(low) if h in _LON_NAMES]
    return [lat[0], lon[0]] if len(lat) == 1 and len(lon) == 1 else None


def _points_csv(path: Path, metric: str = "euclidean") -> MetricSpace:
    try:
        df = pd.read_csv(path, header=None)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: cannot read points CSV ({exc})") from None
    if df.empty:
        raise ValueError(f"{path}: no points")
    # A header row is detected as a first row that does not parse as numbers.
    first_numeric = pd.to_numeric(df.iloc[0, 1:] if df.shape[1] > 1 else df.iloc[0], errors="coerce")
    order = None
    if first_numeric.isna().any():
        order = _latlon_order(df.iloc[0].tolist()) if metric == "haversine" else None
        if order is not None:
            label_cols = [c for c in range(df.shape[1]) if c not in order]
            df = df.iloc[:, label_cols[:1] + order] if label_cols else df.iloc[:, order]
            df.columns = range(df.shape[1])
        df = df.iloc[1:].reset_index(drop=True)
    labels = None
    col0 = pd.to_numeric(df.iloc[:, 0], errors="coerce")
    if col0.isna().any() and df.shape[1] > 1:
        labels = df.iloc[:, 0].astype(str).tolist()
        df = df.iloc[:, 1:]
    values = df.apply(pd.to_numeric, errors="coerce")
    if values.isna().any().any():
        row, col = np.argwhere(values.isna().to_numpy())[0]
        raise ValueError(f"{path}: line {row + 1 + (1 if first_numeric.isna().any() else 0)}: "
                         f"non-numeric coordinate in column {col + 1}")
    P = values.to_numpy(dtype=float)
    if metric == "haversine":
        if P.shape[1] != 2:
            raise ParameterError(f"{path}: --metric haversine needs two coordinate columns "
                                 f"(lat, lon in degrees), got {P.shape[1]}")
        bad = np.flatnonzero((np.abs(P[:, 0]) > 90) | (np.abs(P[:, 1]) > 180))
        if bad.size:
            k = int(bad[0])
            line = k + 1 + (1 if first_numeric.isna().any() else 0)
            raise ParameterError(f"{path}: line {line}: ({P[k, 0]:g}, {P[k, 1]:g}) is not a "
                                 "(lat, lon) in degrees (|lat| <= 90, |lon| <= 180)")
    try:
        return MetricSpace.from_points(P, metric=metric, labels=labels)
    except ValueError as exc:
        raise ParameterError(f"{path}: {exc}") from None


def load_space(spec: str | None, *, metric: str | None = None) -> MetricSpace:
    """Build the metric space described by ``spec`` (see the module docstring).

    Parameters
    ----------
    spec : str or None
        ``None`` gives :data:`DEFAULT_SPACE`.
    metric : str or None
        Metric of the points of a ``FILE.csv`` (default ``"euclidean"``; ``"haversine"`` for
        ``lat,lon`` degrees, distances in km; any :func:`scipy.spatial.distance.cdist` name).
        Plugin specs and distance matrices carry their own metric: giving one is an error.
    """
    spec = DEFAULT_SPACE if spec is None else str(spec)
    prefix, _, rest = spec.partition(":")
    if rest and prefix in SPACES:
        if metric is not None:
            raise ParameterError(f"--metric applies to FILE.csv spaces, not to {spec!r}")
        return SPACES.get(prefix)(spec)
    path = Path(spec)
    if path.suffix.lower() == ".npy":
        if metric is not None:
            raise ParameterError(f"--metric applies to FILE.csv spaces; {path} holds distances")
        if not path.exists():
            raise FileNotFoundError(f"no distance matrix at {path}")
        try:
            D = np.load(path, allow_pickle=False)
        except (ValueError, OSError) as exc:
            raise ValueError(f"{path}: not a readable .npy distance matrix ({exc})") from None
        try:
            return MetricSpace.from_distances(D)
        except ValueError as exc:
            raise ValueError(f"{path}: {exc}") from None
    if path.suffix.lower() in (".csv", ".txt"):
        if not path.exists():
            raise FileNotFoundError(f"no points file at {path}")
        return _points_csv(path, metric or "euclidean")
    prefixes = ", ".join(f"{p}:..." for p in SPACES.names())
    raise ParameterError(f"unknown space spec {spec!r}; use FILE.csv, FILE.npy or one of "
                         f"{prefixes or '(no space plugins installed)'}")
