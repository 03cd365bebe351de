r"""Whole location files privatized with each user's privacy loss accounted for.

A check-in file holds many reports per user (``user,lat,lon[,time]``). Privatizing each row as
if it were a new person lets an observer average a user's 500 check-ins from home back to the
home. :func:`privatize_users` releases one output per row with per-user accounting:

* **Repeated reports from one cell reuse that cell's first output** (Location Guard's defence
  against averaging; Andres et al. 2013, section 6): a user's second report from the cell of an
  earlier one releases the same point again, which reveals nothing new and costs nothing.
* **Every other report adds its epsilon** (basic composition, Dwork & Roth 2014, Theorem 3.16,
  which holds for metric DP too: the losses of ``k`` reports add, so ``k`` reports of
  ``epsilon``-mDP are ``k epsilon``-mDP, per km).
* **A per-user budget** refuses a user's fresh reports once their sum would exceed it; the rows of
  a refused report (and its later repeats) get no output, and the summary names the users and how
  many rows each lost.

A user's reports are taken in ``time`` order when the column exists, else in file order. Each
user's randomness comes from its own stream, ``SeedSequence(seed).spawn`` keyed by a hash of the
user's name (:func:`user_generator`), so the output does not depend on how rows are split
into partitions or in which order users are processed: the same seed gives the same file from
pandas and from a Dask DataFrame partitioned by user. The released table holds the user and the
released (lat, lon) only, never the input location or the time.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from mdp.errors import ParameterError
from mdp.mechanism import Mechanism
from mdp.validation import check_positive

from .locations import locate

__all__ = ["UserReleaseSummary", "user_generator", "privatize_users_frame", "privatize_users",
           "RELEASED_COLUMNS"]

#: Columns of the released table.
RELEASED_COLUMNS = ("user", "lat", "lon")
_WORK_COLUMNS = {"user": object, "lat": float, "lon": float, "released": bool, "spent": float}


def user_generator(seed_entropy: int, user: str) -> np.random.Generator:
    """The random stream of ``user``: ``SeedSequence(seed_entropy, spawn_key=(h,))``, ``h`` a
    64-bit SHA-256 prefix of the name (so the stream depends on the name only, not on order)."""
    h = int.from_bytes(hashlib.sha256(str(user).encode("utf-8")).digest()[:8], "little")
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed_entropy,
                                                                      spawn_key=(h,))))


def _entropy(seed) -> int:
    if seed is None:
        return int(np.random.SeedSequence().entropy)
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool) and seed >= 0:
        return int(seed)
    raise ParameterError(f"seed must be a non-negative integer or None, got {seed!r}")


def privatize_users_frame(frame: pd.DataFrame, mech: Mechanism, *, epsilon_budget: float | None,
                          seed_entropy: int, snap: bool = False,
                          max_snap_km: float | None = None) -> pd.DataFrame:
    """One partition (every row of each of its users): the accounting of the module docstring.

    Returns a frame with the rows' order and index: ``user``, released ``lat``/``lon`` (NaN
    where refused), ``released`` and ``spent`` (the user's total epsilon after the release).
    """
    out = pd.DataFrame({"user": frame["user"].astype(str).to_numpy(),
                        "lat": np.nan, "lon": np.nan, "released": False, "spent": 0.0},
                       index=frame.index)
    if len(frame) == 0:
        return out.astype(_WORK_COLUMNS)
    cells = locate(mech.space, frame[["lat", "lon"]].to_numpy(dtype=float), snap=snap,
                   max_snap_km=max_snap_km)
    work = pd.DataFrame({"user": out["user"].to_numpy(), "cell": cells,
                         "pos": np.arange(len(frame))})
    if "time" in frame.columns:
        work["time"] = frame["time"].to_numpy()
        work = work.sort_values(["user", "time", "pos"], kind="stable")
    else:
        work = work.sort_values(["user", "pos"], kind="stable")
    first = ~work.duplicated(["user", "cell"])
    fresh = work[first]
    rank = fresh.groupby("user", sort=False).cumcount().to_numpy() + 1
    eps = float(mech.epsilon)
    allowed = np.ones(len(fresh), dtype=bool) if epsilon_budget is None else \
        rank * eps <= epsilon_budget * (1 + 1e-12)
    fresh = fresh.assign(allowed=allowed, rank=rank)
    points = np.asarray(mech.space.points, dtype=float)
    released_cell = np.full(len(fresh), -1, dtype=np.int64)
    users = fresh["user"].to_numpy()
    starts = np.flatnonzero(np.r_[True, users[1:] != users[:-1]])
    ends = np.r_[starts[1:], len(users)]
    fresh_cells = fresh["cell"].to_numpy()
    for s, e in zip(starts, ends, strict=True):
        k = int(allowed[s:e].sum())          # allowed reports are each user's first k
        if k:
            rng = user_generator(seed_entropy, users[s])
            released_cell[s:s + k] = mech.sample_indices(fresh_cells[s:s + k], rng)
    fresh = fresh.assign(out=released_cell)
    spent = fresh.groupby("user", sort=False)["allowed"].sum() * eps
    merged = work.merge(fresh[["user", "cell", "out"]], on=["user", "cell"], how="left")
    pos = merged["pos"].to_numpy()
    got = merged["out"].to_numpy()
    ok = got >= 0
    lat = np.full(len(frame), np.nan)
    lon = np.full(len(frame), np.nan)
    lat[pos[ok]] = points[got[ok], 0]
    lon[pos[ok]] = points[got[ok], 1]
    released = np.zeros(len(frame), dtype=bool)
    released[pos[ok]] = True
    out["lat"], out["lon"], out["released"] = lat, lon, released
    out["spent"] = spent.to_numpy(dtype=float)[spent.index.get_indexer(out["user"])]
    return out


@dataclass(frozen=True)
class UserReleaseSummary:
    """What a per-user release did.

    Attributes
    ----------
    users, rows, rows_refused : int
    largest_spent : float
        Largest total epsilon (per km) a user spent.
    epsilon, budget : float, float or None
        Per report, and per user.
    refused : dict[str, int]
        Rows refused per user (users with none left out).
    """

    users: int
    rows: int
    rows_refused: int
    largest_spent: float
    epsilon: float
    budget: float | None
    refused: dict = field(default_factory=dict)

    def text(self, *, max_names: int = 20) -> str:
        """The summary ``mdp privatize --users`` prints."""
        lines = [f"{self.users} users, {self.rows} rows, {self.rows_refused} rows refused; "
                 f"epsilon {self.epsilon:g} per km per fresh report, largest spent by one user "
                 f"{self.largest_spent:g} per km"
                 + (f" (budget {self.budget:g})" if self.budget is not None else " (no budget)")]
        if self.refused:
            names = sorted(self.refused.items(), key=lambda kv: (-kv[1], kv[0]))
            shown = ", ".join(f"{u} ({c})" for u, c in names[:max_names])
            more = f" and {len(names) - max_names} more users" if len(names) > max_names else ""
            lines.append(f"refused beyond the budget (user (rows)): {shown}{more}")
        return "\n".join(lines)


def _summary(work: pd.DataFrame, eps: float, budget: float | None) -> UserReleaseSummary:
    refused = work.loc[~work["released"], "user"].value_counts()
    spent = work.groupby("user")["spent"].max()
    return UserReleaseSummary(users=int(spent.size), rows=int(len(work)),
                              rows_refused=int(refused.sum()),
                              largest_spent=float(spent.max()) if spent.size else 0.0,
                              epsilon=eps, budget=budget,
                              refused={str(k): int(v) for k, v in refused.items()})


def _check_columns(columns) -> None:
    missing = [c for c in ("user", "lat", "lon") if c not in columns]
    if missing:
        raise ParameterError(f"a users table needs columns user, lat, lon[, time]; missing "
                             f"{missing}, found {list(columns)}")


def privatize_users(data, mech: Mechanism, *, budget: float | None = None, seed=None,
                    snap: bool = False, max_snap_km: float | None = None):
    """Privatize every row of a users table with per-user accounting (module docstring).

    Parameters
    ----------
    data : pandas.DataFrame or dask.dataframe.DataFrame
        Columns ``user``, ``lat``, ``lon`` and optionally ``time`` (sortable). A Dask DataFrame
        must be partitioned by user: all rows of a user in one partition (checked).
    mech : Mechanism
        A mechanism on a haversine (lat, lon) space; locations are located as by
        :func:`geo.locations.locate` (far ones refused unless ``snap``).
    budget : float or None
        Largest total epsilon (per km) per user; ``None``: no limit.
    seed : int or None
        Entropy of the per-user streams (:func:`user_generator`); ``None``: fresh OS entropy.
    snap, max_snap_km
        As :func:`geo.locations.locate`.

    Returns
    -------
    released : DataFrame (pandas, or Dask for Dask input)
        ``user``, ``lat``, ``lon`` of every released row, in input order, with the input's
        index (row labels).
    summary : UserReleaseSummary
    """
    if budget is not None:
        budget = check_positive(budget, "budget")
    _check_columns(data.columns)
    entropy = _entropy(seed)
    eps = float(mech.epsilon)
    kwargs = dict(epsilon_budget=budget, seed_entropy=entropy, snap=snap, max_snap_km=max_snap_km)
    if isinstance(data, pd.DataFrame):
        work = privatize_users_frame(data, mech, **kwargs)
        released = work.loc[work["released"], list(RELEASED_COLUMNS)]
        return released, _summary(work, eps, budget)
    return _privatize_dask(data, mech, eps, budget, kwargs)


def _privatize_dask(ddf, mech: Mechanism, eps: float, budget: float | None, kwargs: dict):
    per_partition = ddf[["user"]].map_partitions(
        lambda p: pd.DataFrame({"user": p["user"].astype(str).unique()}),
        meta={"user": object}).compute()
    dup = per_partition["user"].value_counts()
    if len(dup) and dup.max() > 1:
        raise ParameterError(f"the Dask DataFrame is not partitioned by user: user "
                             f"{dup.index[0]!r} is in {int(dup.iloc[0])} partitions "
                             "(shuffle on 'user' first, e.g. ddf.shuffle('user'))")
    work = ddf.map_partitions(privatize_users_frame, mech, meta=_WORK_COLUMNS, **kwargs).persist()
    summary_frame = work[["user", "released", "spent"]].compute()
    released = work[work["released"]][list(RELEASED_COLUMNS)]
    return released, _summary(summary_frame, eps, budget)
