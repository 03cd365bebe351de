r"""Whole location files privatized with each user's privacy loss accounted for.

A check-in file holds many reports per user (``user,lat,lon[,time]``). Privatizing each row as
if it were a new person lets an observer average a user's 500 check-ins from home back to the
home. :func:`privatize_users` releases one output per row with per-user accounting, and the
guarantee covers everything an observer sees of a user: the outputs, which of them are equal,
and how many rows are released.

* **Every report is a fresh draw and adds its epsilon** (default). Basic composition (Dwork &
  Roth 2014, Theorem 3.16, which holds for metric DP too): a user's reports
  :math:`x_1, \dots, x_k` released as :math:`k` independent draws of an
  :math:`\epsilon`-mDP mechanism satisfy, for any other sequence :math:`y_1, \dots, y_k`,

  .. math:: \Pr[z_1, \dots, z_k \mid x] \le e^{\epsilon \sum_i d(x_i, y_i)}
            \Pr[z_1, \dots, z_k \mid y],

  so the user spends :math:`k \epsilon` (per km) against any change of location.
* **One output per time window** (``window=``, Location Guard's cache by time): a user's reports
  whose times fall in one window ``floor(time / window)`` release the output drawn for the
  window's first report (by time, then file order), and the window is charged once. The other
  reports of the window are not used at all, so the bound above holds with one term per window
  (the window's first report), which is at most the sum over all reports. Windows are chosen by
  time alone, never by location: reusing an output because two reports came from one *place*
  (as an earlier design did) tells an observer that the places were equal, with probability 1,
  which no epsilon covers.
* **A per-user budget** refuses a user's fresh draws once their sum would exceed it; the rows of
  a refused draw get no output, and the summary names the users and how many rows each lost.
  Which rows are refused depends on the number of reports (and windows) only, never on where
  they were made.

User names are normalized before accounting (:mod:`geo.user_names`: NFKC, invisible characters
removed, look-alike scripts refused), so two spellings of one name share one budget.

What the guarantee does not cover: the number of reports, their times (visible through which
outputs are equal in window mode) and the user names are released as they are; the budget holds
within one call (a second call starts every user from zero, so two runs over the same user spend
twice).

A user's reports are taken in ``time`` order when the column exists (numbers, or dates and times
that :func:`pandas.to_datetime` reads), else in file order. Each user's randomness comes from
its own stream, ``SeedSequence(seed).spawn`` keyed by a hash of the user's name
(:func:`user_generator`), so the output does not depend on how rows are split into partitions or
in which order users are processed: the same seed gives the same file from pandas and from a
Dask DataFrame partitioned by user. The released table holds the user and the released (lat,
lon) only, never the input location or the time.
"""

from __future__ import annotations

import contextlib
import hashlib
import numbers
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from mdp.errors import ParameterError, ParameterTypeError
from mdp.mechanism import Mechanism
from mdp.privacy.ledger import PrivacyLedger
from mdp.validation import check_positive

from .locations import locate
from .raw_locations import raw_mechanism
from .user_names import normalize_user_names

__all__ = ["UserReleaseSummary", "user_generator", "privatize_users_frame", "privatize_users",
           "report_windows", "parse_report_times", "RELEASED_COLUMNS"]

#: Columns of the released table.
RELEASED_COLUMNS = ("user", "lat", "lon")
_WORK_COLUMNS = {"user": object, "lat": float, "lon": float, "released": bool, "dropped": bool,
                 "spent": float}


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


def parse_report_times(values) -> tuple[np.ndarray, str, np.ndarray]:
    """Times as sortable numbers: ``(values, kind, bad)``.

    ``kind`` is ``"number"`` when every time is a number (kept as such, so ``"10"`` sorts after
    ``"9"``), else ``"datetime"``: dates and times :func:`pandas.to_datetime` reads (UTC when
    they name no zone), as seconds since 1970. ``bad`` marks the times that are neither (their
    values are NaN).
    """
    s = pd.Series(values)
    if pd.api.types.is_datetime64_any_dtype(s):
        dt = pd.to_datetime(s, utc=True)
    else:
        as_number = pd.to_numeric(s, errors="coerce").to_numpy(dtype=float)
        if np.isfinite(as_number).all():
            return as_number, "number", np.zeros(len(s), dtype=bool)
        try:
            dt = pd.to_datetime(s.astype(str), utc=True, errors="coerce", format="mixed")
        except (ValueError, TypeError, OverflowError):
            dt = pd.Series(pd.NaT, index=s.index)
    bad = dt.isna().to_numpy()
    seconds = (dt - pd.Timestamp(0, tz="UTC")).dt.total_seconds().to_numpy(dtype=float)
    return seconds, "datetime", bad


def _parse_times(values) -> tuple[np.ndarray, str]:
    t, kind, bad = parse_report_times(values)
    if bad.any():
        # the row's position, not its value: a report's time is private
        raise ParameterError(f"time: row {int(np.flatnonzero(bad)[0])} is neither a number nor "
                             f"a date and time ({int(bad.sum())} such rows)")
    return t, kind


def _window_length(window, kind: str) -> float:
    """The window in the times' units: seconds for date-times (``"1h"``, a Timedelta), else a
    positive number in the time column's own units."""
    if kind == "datetime":
        if isinstance(window, numbers.Real) and not isinstance(window, bool):
            raise ParameterError("window must be a duration such as '1h' or '30min' when the "
                                 f"times are dates, got the number {window!r}")
        try:
            seconds = pd.Timedelta(window).total_seconds()
        except (ValueError, TypeError):
            raise ParameterError(f"window must be a duration such as '1h', '30min' or '1D', got "
                                 f"{window!r}") from None
        return check_positive(seconds, "window (seconds)")
    if isinstance(window, str):
        try:
            return check_positive(float(window), "window")
        except ValueError:
            raise ParameterError(f"window must be a positive number in the units of the time "
                                 f"column (the times are numbers), got {window!r}") from None
    return check_positive(window, "window")


def report_windows(times, window) -> np.ndarray:
    """Index of each report's time window, ``floor(time / window)`` (int64).

    Parameters
    ----------
    times : array-like
        Numbers, or dates and times (:func:`pandas.to_datetime`; UTC unless they name a zone).
    window : float, str or pandas.Timedelta
        For numeric times a positive number in their units; for dates a duration (``"1h"``).

    Raises
    ------
    ParameterError
        A time that is neither a number nor a date, or a window of the wrong kind.
    """
    t, kind = _parse_times(times)
    length = _window_length(window, kind)
    keys = np.floor(t / length)
    if not np.isfinite(keys).all() or np.abs(keys).max(initial=0.0) >= 2.0 ** 62:
        raise ParameterError(f"window {window!r} is too short for these times (window indices "
                             "beyond 2^62)")
    return keys.astype(np.int64)


def privatize_users_frame(frame: pd.DataFrame, mech: Mechanism, *,
                          epsilon_budget: float | dict | None, seed_entropy: int, window=None,
                          snap: bool = False, max_snap_km: float | None = None,
                          strict: bool = False) -> pd.DataFrame:
    """One partition (every row of each of its users): the accounting of the module docstring.

    ``frame["user"]`` must hold normalized names (:func:`privatize_users` normalizes them);
    ``epsilon_budget`` is one budget for every user, or each user's budget left (a ledger's).
    Returns a frame with the rows' order and index: ``user``, released ``lat``/``lon`` (NaN
    where refused), ``released``, ``dropped`` (outside the mechanism's area, without
    ``strict``) and ``spent`` (the epsilon this release spent on the row's user).
    """
    out = pd.DataFrame({"user": frame["user"].astype(str).to_numpy(),
                        "lat": np.nan, "lon": np.nan, "released": False, "dropped": False,
                        "spent": 0.0}, index=frame.index)
    if len(frame) == 0:
        return out.astype(_WORK_COLUMNS)
    latlon = frame[["lat", "lon"]].to_numpy(dtype=float)
    raw = None if snap else raw_mechanism(mech)
    if raw is not None:
        # planar Laplace from the raw location (geo.raw_locations): no snapping; rows outside
        # the area of its guarantee are left out as far rows are
        if strict:
            raw.check_inside(latlon)          # raises, naming the rows, never their coordinates
        cells = np.where(raw.inside(latlon), 0, -1)
    else:
        cells = locate(mech.space, latlon, snap=snap, max_snap_km=max_snap_km,
                       far="refuse" if strict else "mark")
    pos = np.arange(len(frame))
    work = pd.DataFrame({"user": out["user"].to_numpy(), "cell": cells, "pos": pos})
    if "time" in frame.columns:
        work["time"] = _parse_times(frame["time"].to_numpy())[0]
        work["key"] = pos if window is None else report_windows(frame["time"].to_numpy(), window)
        work = work.sort_values(["user", "time", "pos"], kind="stable")
    else:
        if window is not None:
            raise ParameterError("window needs a 'time' column")
        work["key"] = pos
        work = work.sort_values(["user", "pos"], kind="stable")
    # rows outside the mechanism's area are left out, neither released nor charged
    dropped = work["cell"].to_numpy() < 0
    out["dropped"] = np.isin(pos, work["pos"].to_numpy()[dropped])
    work = work[~dropped]
    # a fresh draw per report, or per (user, window): never keyed on the location
    first = ~work.duplicated(["user", "key"])
    fresh = work[first]
    rank = fresh.groupby("user", sort=False).cumcount().to_numpy() + 1
    eps = float(mech.epsilon)
    if epsilon_budget is None:
        allowed = np.ones(len(fresh), dtype=bool)
    else:
        left = (np.array([epsilon_budget.get(u, 0.0) for u in fresh["user"].to_numpy()])
                if isinstance(epsilon_budget, dict) else epsilon_budget)
        allowed = rank * eps <= left * (1 + 1e-12) + 1e-15
    points = np.asarray(mech.space.points, dtype=float)
    released_cell = np.full(len(fresh), -1, dtype=np.int64)
    users = fresh["user"].to_numpy()
    starts = np.flatnonzero(np.r_[True, users[1:] != users[:-1]])
    ends = np.r_[starts[1:], len(users)]
    fresh_cells = fresh["cell"].to_numpy()
    fresh_pos = fresh["pos"].to_numpy()
    for s, e in zip(starts, ends, strict=True):
        k = int(allowed[s:e].sum())          # allowed draws are each user's first k
        if k:
            rng = user_generator(seed_entropy, users[s])
            released_cell[s:s + k] = (
                mech.sample_indices(fresh_cells[s:s + k], rng) if raw is None
                else raw.privatize_indices(latlon[fresh_pos[s:s + k]], rng=rng))
    fresh = fresh.assign(out=released_cell, allowed=allowed)
    spent = fresh.groupby("user", sort=False)["allowed"].sum() * eps
    merged = work.merge(fresh[["user", "key", "out"]], on=["user", "key"], how="left")
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
    where = spent.index.get_indexer(out["user"])
    out["spent"] = np.where(where >= 0, spent.to_numpy(dtype=float)[where], 0.0)
    return out


@dataclass(frozen=True)
class UserReleaseSummary:
    """What a per-user release did.

    Attributes
    ----------
    users, rows : int
    rows_refused : int
        Rows refused because their user's budget ran out.
    rows_dropped : int
        Rows left out because they lie outside the mechanism's area (without ``strict``).
    largest_spent : float
        Largest epsilon (per km) this release spent on one user.
    epsilon, budget : float, float or None
        Per draw, and per user.
    window : str or None
        The time window sharing one draw (``None``: a draw per report).
    refused : dict[str, int]
        Rows refused per user (users with none left out).
    dropped_rows : tuple
        Index labels of the rows left out (the input frame's; ``mdp privatize --users`` prints
        their line numbers).
    ledger : str or None
        The ledger the release was charged to.
    largest_total : float or None
        With a ledger: the largest total a user has spent, every release included.
    """

    users: int
    rows: int
    rows_refused: int
    largest_spent: float
    epsilon: float
    budget: float | None
    window: str | None = None
    refused: dict = field(default_factory=dict)
    rows_dropped: int = 0
    dropped_rows: tuple = ()
    ledger: str | None = None
    largest_total: float | None = None

    def text(self, *, max_names: int = 20, line_offset: int | None = None) -> str:
        """The summary ``mdp privatize --users`` prints (``line_offset``: add it to a row's
        index label to name its line)."""
        scope = "in this release" if self.ledger else "by one user"
        lines = [f"{self.users} users, {self.rows} rows, {self.rows_refused} rows refused"
                 + (f", {self.rows_dropped} rows outside the area left out"
                    if self.rows_dropped else "")
                 + f"; epsilon {self.epsilon:g} per km per "
                 + ("report" if self.window is None else f"time window of {self.window}")
                 + f", largest spent {scope} {self.largest_spent:g} per km"
                 + (f" (budget {self.budget:g})" if self.budget is not None else " (no budget)")]
        if self.ledger:
            lines.append(f"ledger {self.ledger}: the largest total of a user, every release "
                         f"included, is {self.largest_total:g} per km")
        if self.refused:
            names = sorted(self.refused.items(), key=lambda kv: (-kv[1], kv[0]))
            shown = ", ".join(f"{u} ({c})" for u, c in names[:max_names])
            more = f" and {len(names) - max_names} more users" if len(names) > max_names else ""
            lines.append(f"refused beyond the budget (user (rows)): {shown}{more}")
        if self.rows_dropped:
            where = [(f"line {int(k) + line_offset}" if line_offset is not None else f"row {k}")
                     for k in self.dropped_rows[:max_names]]
            more = (f" and {self.rows_dropped - max_names} more"
                    if self.rows_dropped > max_names else "")
            lines.append(f"left out, farther from every point than the mechanism's area allows: "
                         f"{', '.join(where)}{more}. The released file shows fewer rows for their "
                         "users, which tells that these reports lay outside the area; --strict "
                         "refuses such a file instead")
        return "\n".join(lines)


def _summary(work: pd.DataFrame, eps: float, budget: float | None, window: str | None, *,
             ledger: str | None = None, before: dict | None = None) -> UserReleaseSummary:
    kept = work[~work["dropped"]]
    refused = kept.loc[~kept["released"], "user"].value_counts()
    spent = work.groupby("user")["spent"].max()
    dropped = work.index[work["dropped"].to_numpy()]
    total = None
    if ledger is not None:
        total = max((float(v) + (before or {}).get(str(u), 0.0) for u, v in spent.items()),
                    default=0.0)
    return UserReleaseSummary(users=int(spent.size), rows=int(len(work)),
                              rows_refused=int(refused.sum()),
                              largest_spent=float(spent.max()) if spent.size else 0.0,
                              epsilon=eps, budget=budget, window=window,
                              refused={str(k): int(v) for k, v in refused.items()},
                              rows_dropped=int(len(dropped)), dropped_rows=tuple(dropped.tolist()),
                              ledger=ledger, largest_total=total)


def _check_columns(columns) -> None:
    missing = [c for c in ("user", "lat", "lon") if c not in columns]
    if missing:
        raise ParameterError(f"a users table needs columns user, lat, lon[, time]; missing "
                             f"{missing}, found {list(columns)}")


def _check_coordinates(frame: pd.DataFrame) -> pd.DataFrame:
    """``lat``/``lon`` as numbers of degrees in range (positions in the message, never values)."""
    out = frame.copy()
    for name, limit in (("lat", 90.0), ("lon", 180.0)):
        vals = pd.to_numeric(frame[name], errors="coerce").to_numpy(dtype=float)
        bad = ~np.isfinite(vals) | (np.abs(vals) > limit)
        if bad.any():
            raise ParameterError(f"{name}: {int(bad.sum())} of {len(vals)} rows are not a number "
                                 f"of degrees with |{name}| <= {limit:g} (the first is row "
                                 f"{int(np.flatnonzero(bad)[0])})")
        out[name] = vals
    return out


def _normalized_users(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.assign(user=normalize_user_names(frame["user"].to_numpy()))


def privatize_users(data, mech: Mechanism, *, budget: float | None = None, window=None,
                    seed=None, snap: bool = False, max_snap_km: float | None = None,
                    strict: bool = False, ledger=None):
    """Privatize every row of a users table with per-user accounting (module docstring).

    Parameters
    ----------
    data : pandas.DataFrame or dask.dataframe.DataFrame
        Columns ``user``, ``lat``, ``lon`` and optionally ``time`` (numbers, or dates and
        times). A Dask DataFrame must be partitioned by user: all rows of a user in one
        partition (checked after the names are normalized).
    mech : Mechanism
        A mechanism on a haversine (lat, lon) space; locations are located as by
        :func:`geo.locations.locate` (far ones refused unless ``snap``). A ``planar_laplace``
        mechanism draws from the raw locations instead (:mod:`geo.raw_locations`; ``snap``
        asks for the located path), leaving out rows outside the area of its guarantee.
    budget : float or None
        Largest total epsilon (per km) per user; ``None``: no limit.
    window : None, float, str or pandas.Timedelta
        ``None`` (default): every report is a fresh draw. Otherwise one draw per user and
        time window (:func:`report_windows`; needs a ``time`` column), released for every
        report of the window.
    seed : int or None
        Entropy of the per-user streams (:func:`user_generator`); ``None``: fresh OS entropy.
    snap, max_snap_km
        As :func:`geo.locations.locate`.
    strict : bool, default False
        Refuse the whole table when a location lies outside the mechanism's area (farther than
        ``max_snap_km`` from every point). By default such rows are left out, neither released
        nor charged, and counted in the summary (their users' row counts in the released table
        then show that those reports lay outside the area).
    ledger : path-like, :class:`mdp.privacy.ledger.PrivacyLedger` or None
        A ledger that outlives the run: each user starts from what earlier releases spent on
        them (``budget`` bounds the total across runs), and this release's spending is
        recorded before the released table is returned. Concurrent releases on one ledger are
        serialised.

    Returns
    -------
    released : DataFrame (pandas, or Dask for Dask input)
        ``user`` (normalized), ``lat``, ``lon`` of every released row, in input order, with
        the input's index (row labels).
    summary : UserReleaseSummary

    Raises
    ------
    mdp.errors.ParameterError
        A missing column, a coordinate that is not a number of degrees in range, a name that
        mixes look-alike scripts, a time that is neither a number nor a date, a bad ``budget``,
        ``window`` or ``seed``, or a location outside the mechanism's area (positions only:
        never a location, time or name).
    mdp.errors.ParameterTypeError
        ``data`` that is not a DataFrame, or ``mech`` that is not a mechanism.
    """
    if not isinstance(mech, Mechanism):
        raise ParameterTypeError(f"mech must be an mdp.Mechanism on a haversine (lat, lon) "
                                 f"space, got {type(mech).__name__}")
    if budget is not None:
        budget = check_positive(budget, "budget")
    columns = getattr(data, "columns", None)
    if columns is None or not hasattr(data, "map_partitions") and not isinstance(data,
                                                                                pd.DataFrame):
        raise ParameterTypeError(f"data must be a pandas or Dask DataFrame with columns user, "
                                 f"lat, lon[, time], got {type(data).__name__}")
    _check_columns(columns)
    if window is not None and "time" not in columns:
        raise ParameterError("window needs a 'time' column")
    entropy = _entropy(seed)
    eps = float(mech.epsilon)
    kwargs = dict(epsilon_budget=budget, seed_entropy=entropy, window=window, snap=snap,
                  max_snap_km=max_snap_km, strict=bool(strict))
    shown = None if window is None else str(window)
    if ledger is not None and not isinstance(ledger, PrivacyLedger):
        ledger = PrivacyLedger(ledger)
    if isinstance(data, pd.DataFrame):
        frame = _normalized_users(_check_coordinates(data))
        if window is not None and len(frame):
            report_windows(frame["time"].to_numpy(), window)     # the window's kind, up front
        with _ledger_hold(ledger, frame["user"].unique(), mech) as held:
            if held is not None:
                kwargs["epsilon_budget"] = _budget_left(budget, held.spent)
            work = privatize_users_frame(frame, mech, **kwargs)
            _charge(held, work)
        released = work.loc[work["released"], list(RELEASED_COLUMNS)]
        return released, _summary(work, eps, budget, shown,
                                  ledger=None if ledger is None else str(ledger.path),
                                  before=None if held is None else held.spent)
    return _privatize_dask(data, mech, eps, budget, shown, kwargs, ledger)


def _ledger_unit(mech: Mechanism) -> str:
    return f"per {'km' if mech.space.metric == 'haversine' else 'unit'} ({mech.space.metric})"


@contextlib.contextmanager
def _ledger_hold(ledger, users, mech: Mechanism):
    """The ledger's reservation for ``users`` (``None`` without a ledger)."""
    if ledger is None:
        yield None
        return
    with ledger.reserve(users, unit=_ledger_unit(mech), mechanism=mech.name) as held:
        yield held


def _budget_left(budget: float | None, spent: dict) -> dict | None:
    """Each user's budget left after earlier releases (``None``: no budget, nothing refused)."""
    if budget is None:
        return None
    return {u: budget - s for u, s in spent.items()}


def _charge(held, work: pd.DataFrame) -> None:
    if held is not None:
        per_user = work.groupby("user")["spent"].max()
        held.charge({str(u): float(v) for u, v in per_user.items()})


def _privatize_dask(ddf, mech: Mechanism, eps: float, budget: float | None, window: str | None,
                    kwargs: dict, ledger):
    ddf = ddf.map_partitions(lambda p: _normalized_users(_check_coordinates(p)),
                             meta=ddf._meta)
    per_partition = ddf[["user"]].map_partitions(
        lambda p: pd.DataFrame({"user": p["user"].astype(str).unique()}),
        meta={"user": object}).compute()
    dup = per_partition["user"].value_counts()
    if len(dup) and dup.max() > 1:
        raise ParameterError(f"the Dask DataFrame is not partitioned by user: user "
                             f"{dup.index[0]!r} is in {int(dup.iloc[0])} partitions "
                             "(shuffle on 'user' first, e.g. ddf.shuffle('user'))")
    with _ledger_hold(ledger, per_partition["user"].tolist(), mech) as held:
        if held is not None:
            kwargs = {**kwargs, "epsilon_budget": _budget_left(budget, held.spent)}
        work = ddf.map_partitions(privatize_users_frame, mech, meta=_WORK_COLUMNS,
                                  **kwargs).persist()
        summary_frame = work[["user", "released", "dropped", "spent"]].compute()
        _charge(held, summary_frame)
    released = work[work["released"]][list(RELEASED_COLUMNS)]
    return released, _summary(summary_frame, eps, budget, window,
                              ledger=None if ledger is None else str(ledger.path),
                              before=None if held is None else held.spent)
