r"""A seeded synthetic check-in log in SNAP's Gowalla layout, for runs without the real data.

The heatmap experiments (Ghazi et al. 2023; Bagdasaryan et al. 2022) read the Gowalla NYC
check-ins, which are third-party data and not shipped with the toolkit. Their ``--quick`` runs use
this log instead when the real file is absent, so that the pipeline can be tried anywhere; the
figures then describe the synthetic city, not the paper's, and the experiment says so.

The model is a city of ``hotspots`` centres with Zipf-distributed weights (rank ``k`` has weight
``k^{-s}``). Each venue sits at a Gaussian offset (``spread`` degrees) from a hotspot drawn by
weight, and has its own Zipf popularity. Each user has a home hotspot (by weight) and makes
``1 + Poisson(checkins - 1)`` check-ins; each check-in is at a venue of the home hotspot with
probability ``local``, else at a venue drawn by popularity over the whole city, and its
coordinates are the venue's. Times are uniform over the Gowalla period (February 2009 to October
2010). The rows have exactly the fields and formats of SNAP's ``loc-gowalla_totalCheckins``, so
:func:`geo.checkins.read_checkins` reads the written file like the real one.
"""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import numpy as np
import pandas as pd

from mdp.errors import ParameterError
from mdp.io import atomic_write
from mdp.validation import check_int, check_probability, check_rng

from .federated.data import NYC_BOX

__all__ = ["synthetic_checkins", "write_snap_checkins"]

#: The Gowalla check-ins' period (SNAP's loc-gowalla), UTC.
GOWALLA_PERIOD = ("2009-02-04", "2010-10-23")


def _zipf_weights(k: int, s: float) -> np.ndarray:
    w = np.arange(1, k + 1, dtype=float) ** -s
    return w / w.sum()


def synthetic_checkins(users: int = 3000, checkins: int = 20, *, hotspots: int = 40,
                       venues: int = 4000, spread: float = 0.012, local: float = 0.7,
                       zipf: float = 1.0, box: tuple[float, float, float, float] = NYC_BOX,
                       rng=None) -> pd.DataFrame:
    r"""A synthetic check-in log of a city (the model is in the module docstring).

    Parameters
    ----------
    users : int, default 3000
        Number of users (ids ``0 .. users - 1``).
    checkins : int, default 20
        Mean check-ins per user (each user makes ``1 + Poisson(checkins - 1)``).
    hotspots, venues : int
        Number of hotspot centres and of venues.
    spread : float, default 0.012
        Standard deviation, in degrees, of a venue's offset from its hotspot.
    local : float in [0, 1], default 0.7
        Probability that a check-in is at a venue of the user's home hotspot.
    zipf : float, default 1.0
        Exponent ``s`` of the hotspots' and venues' Zipf weights.
    box : (lon_min, lat_min, lon_max, lat_max)
        The city's box in degrees (default: the Gowalla NYC extract's); every point lies in it.
    rng : None, int or numpy.random.Generator, keyword-only
        ``None`` draws from OS entropy.

    Returns
    -------
    DataFrame
        Columns ``user`` (int64), ``datetime`` (UTC), ``lat``, ``lon`` (degrees), ``venue`` (str),
        the layout of :func:`geo.checkins.read_checkins`; rows grouped by user.

    Raises
    ------
    mdp.errors.ParameterError
        For a non-positive count or a ``local``, ``spread`` or ``zipf`` out of range.
    """
    users = check_int(users, "users", low=1)
    checkins = check_int(checkins, "checkins", low=1)
    hotspots = check_int(hotspots, "hotspots", low=1)
    venues = check_int(venues, "venues", low=1)
    local = check_probability(local, "local")
    if not (np.isfinite(spread) and spread > 0) or not (np.isfinite(zipf) and zipf >= 0):
        raise ParameterError(f"spread must be > 0 and zipf >= 0, got spread={spread!r}, zipf={zipf!r}")
    lon0, lat0, lon1, lat1 = box
    g = check_rng(rng)
    # Hotspots away from the box's edge, so that their venues mostly stay inside.
    centre = np.column_stack([g.uniform(lon0 + 0.15 * (lon1 - lon0), lon1 - 0.15 * (lon1 - lon0), hotspots),
                              g.uniform(lat0 + 0.15 * (lat1 - lat0), lat1 - 0.15 * (lat1 - lat0), hotspots)])
    hot_w = _zipf_weights(hotspots, zipf)
    venue_hot = g.choice(hotspots, size=venues, p=hot_w)
    where = centre[venue_hot] + g.normal(0.0, spread, (venues, 2))
    where[:, 0] = np.clip(where[:, 0], lon0, lon1)
    where[:, 1] = np.clip(where[:, 1], lat0, lat1)
    venue_w = _zipf_weights(venues, zipf)[g.permutation(venues)]
    by_hot = [np.flatnonzero(venue_hot == h) for h in range(hotspots)]
    home = g.choice(hotspots, size=users, p=hot_w)
    counts = 1 + g.poisson(checkins - 1, users)
    user = np.repeat(np.arange(users, dtype=np.int64), counts)
    total = len(user)
    anywhere = g.choice(venues, size=total, p=venue_w)
    venue = anywhere.copy()
    go_local = g.random(total) < local
    for h in range(hotspots):
        rows = np.flatnonzero(go_local & (home[user] == h))
        if len(rows) and len(by_hot[h]):
            p = venue_w[by_hot[h]] / venue_w[by_hot[h]].sum()
            venue[rows] = by_hot[h][g.choice(len(by_hot[h]), size=len(rows), p=p)]
    start, end = (pd.Timestamp(t, tz="UTC").value // 10**9 for t in GOWALLA_PERIOD)
    seconds = g.integers(start, end, total)
    return pd.DataFrame({"user": user,
                         "datetime": pd.to_datetime(seconds, unit="s", utc=True),
                         "lat": where[venue, 1], "lon": where[venue, 0],
                         "venue": venue.astype(str)})


def write_snap_checkins(frame: pd.DataFrame, path: str | os.PathLike) -> Path:
    """Write check-ins in SNAP's ``loc-gowalla_totalCheckins`` layout (gzip when ``.gz``), atomically.

    Parameters
    ----------
    frame : DataFrame
        Columns ``user``, ``datetime`` (UTC), ``lat``, ``lon``, ``venue``, as
        :func:`synthetic_checkins` and :func:`geo.checkins.read_checkins` return.
    path : path-like
        Destination; a name ending in ``.gz`` is gzip-compressed.

    Returns
    -------
    pathlib.Path
        The path written.
    """
    rows = pd.DataFrame({"user": frame["user"],
                         "time": frame["datetime"].dt.strftime("%Y-%m-%dT%H:%M:%SZ"),
                         "lat": frame["lat"], "lon": frame["lon"], "venue": frame["venue"]})
    data = rows.to_csv(sep="\t", header=False, index=False, lineterminator="\n").encode("utf-8")
    path = Path(path)
    if path.suffix == ".gz":
        data = gzip.compress(data, mtime=0)
    return atomic_write(path, lambda fh: fh.write(data))
