"""Thread pools of a build: one ``threads`` knob; pools sized from the free CPUs and the grain.

A build runs numeric code on three kinds of thread pool: HiGHS's task scheduler (its parallel
presolve and HiPO's factorisations), the BLAS and OpenMP runtimes of NumPy and SciPy (OpenBLAS),
and numba's. A pool of ``k`` threads meets at a barrier after every parallel step and OpenBLAS's
threads spin while they wait, so beside another busy process the whole step waits for whichever
thread the kernel has descheduled. On a 2-core machine beside one process doing 300 x 300 matrix
products, an exact OPTMech build of 60 points took over 60 s with two BLAS threads in its interior
point iterations and 7-22 s with one (about 2 s quiet either way; ``benchmarks/threads_busy.py``).

The knob is ``threads``:

- ``None`` or ``"auto"`` (the default): a pool gets more than one thread only where its step is
  large enough to gain from it (the caller's grain rule, e.g.
  :func:`mdp.lp.dense.default_blas_threads`) *and* that many CPUs are free now: the CPUs this
  process may use (affinity and container quota, :func:`available_cpus`) less those other
  processes keep busy at that moment (:func:`busy_cpus`). HiGHS gets half the free CPUs (HiGHS's
  own default is half the cores), fixed for the build because re-creating its scheduler costs a
  solve's start. The rest of the build's BLAS, OpenMP and numba code runs on one thread.
- an int ``k >= 1``: every pool runs on exactly ``k`` threads, whatever the load.

:func:`use_threads` applies a plan for the duration of a block and restores the libraries'
counts afterwards; :func:`mdp.build`, :func:`mdp.calibrate`, :func:`mdp.curves.loss.loss_curves` and
every numeric ``mdp`` command (``--threads``) run under it, and a build records its plan in
``stats["threads"]``. A block nested in another plan's block keeps the outer plan unless it names
its own count.
"""

from __future__ import annotations

import contextlib
import glob
import os
import threading
import time
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field

import joblib
import numba
import numpy as np
from threadpoolctl import ThreadpoolController

from ..errors import ParameterError
from ..validation import check_tuning

__all__ = ["AUTO", "ThreadTuning", "ThreadPlan", "check_threads", "available_cpus", "busy_cpus",
           "plan_threads", "use_threads", "active_plan", "pool_threads", "fixed_threads",
           "highs_threads", "set_default_threads", "limit_pools"]

#: The value of ``threads`` that sizes every pool from the CPUs free and the work's grain.
AUTO = "auto"


@dataclass(frozen=True)
class ThreadTuning:
    """How ``threads="auto"`` turns the machine's state into pool sizes.

    Attributes
    ----------
    max_threads : int
        Most threads one pool gets (a 16-core machine ran the row-block method's dense step
        fastest on 8 BLAS threads; ``docs/design/lp.md``).
    load_samples : int
        Readings of the running-thread count whose largest is taken (a numeric job's threads are
        nearly always running; one reading can fall between two of its time slices).
    load_interval : float
        Seconds between those readings.
    reuse_seconds : float
        How long a reading of the load is reused by later pool-size decisions (interior point
        iterations ask once per iteration).
    """

    def __post_init__(self) -> None:
        check_tuning(self)

    max_threads: int = 8
    load_samples: int = 3
    load_interval: float = 0.002
    reuse_seconds: float = 0.25


def check_threads(threads) -> int | str:
    """``threads`` validated: ``"auto"`` (for ``None`` or ``"auto"``) or an int >= 1.

    Raises
    ------
    mdp.errors.ParameterError
        Any other value (0, negative, a float, a bool, another string); the message names
        ``threads`` and the value.
    """
    if threads is None or (isinstance(threads, str) and threads == AUTO):
        return AUTO
    if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)):
        raise ParameterError(f"threads must be a positive integer, 'auto' or None, got {threads!r}")
    if threads < 1:
        raise ParameterError(f"threads must be >= 1 (or 'auto'), got {threads!r}")
    return int(threads)


def available_cpus() -> int:
    """Logical CPUs this process may run on: its affinity mask and any container CPU quota
    (joblib's count)."""
    return max(1, int(joblib.cpu_count()))


def _own_running_threads() -> int:
    """Threads of this process the kernel reports running or runnable now (Linux; else 1)."""
    count = 0
    for path in glob.glob("/proc/self/task/*/stat"):
        try:
            with open(path) as fh:
                text = fh.read()
        except OSError:                       # the thread ended while the list was read
            continue
        count += text[text.rindex(")") + 2] == "R"
    return max(1, count)


def _running_threads() -> int | None:
    """Threads running or runnable on the whole machine now (``/proc/loadavg``; None elsewhere)."""
    try:
        with open("/proc/loadavg") as fh:
            return int(fh.read().split()[3].split("/")[0])
    except (OSError, IndexError, ValueError):
        return None


def busy_cpus(tuning: ThreadTuning = ThreadTuning()) -> float:
    """CPUs other processes keep busy now.

    On Linux: the machine's running threads less this process's own, the largest of
    ``tuning.load_samples`` readings. The load averages (``os.getloadavg``) lag a minute behind a
    job that has just started, so they serve only where the instantaneous count is not
    available, less the one CPU this process is taken to use.
    """
    seen = []
    for k in range(tuning.load_samples):
        total = _running_threads()
        if total is None:
            return max(0.0, os.getloadavg()[0] - 1.0) if hasattr(os, "getloadavg") else 0.0
        seen.append(max(0, total - _own_running_threads()))
        if k + 1 < tuning.load_samples:
            time.sleep(tuning.load_interval)
    return float(max(seen))


@dataclass
class _Usage:
    """Most threads each kind of pool was given under a plan (recorded in the build's stats)."""

    blas: int = 1
    reading: tuple[float, float] = (-np.inf, 0.0)     # (time, busy CPUs) of the last load reading


@dataclass(frozen=True)
class ThreadPlan:
    """The thread counts of one build.

    Attributes
    ----------
    requested : int or "auto"
    cpus : int
        CPUs the process may use (:func:`available_cpus`).
    busy : float
        CPUs other processes kept busy when the plan was made (:func:`busy_cpus`; 0 for a fixed
        count, which reads no load).
    threads : int
        The fixed count, or under ``"auto"`` the free CPUs when planned (at least 1): the count
        of the build's un-sized BLAS / OpenMP / numba code is 1 under ``"auto"``.
    highs : int
        HiGHS's thread count for the build.
    tuning : ThreadTuning
    """

    requested: int | str
    cpus: int
    busy: float
    threads: int
    highs: int
    tuning: ThreadTuning = ThreadTuning()
    usage: _Usage = field(default_factory=_Usage, compare=False, repr=False)

    @property
    def fixed(self) -> bool:
        """Whether the user named a count (every pool gets exactly it)."""
        return self.requested != AUTO

    @property
    def baseline(self) -> int:
        """Threads of the build's code that no grain rule sizes (BLAS, OpenMP, numba)."""
        return self.threads if self.fixed else 1

    def free_now(self) -> int:
        """CPUs free at this moment (reading reused for ``tuning.reuse_seconds``)."""
        stamp, busy = self.usage.reading
        now = time.monotonic()
        if now - stamp > self.tuning.reuse_seconds:
            busy = busy_cpus(self.tuning)
            self.usage.reading = (now, busy)
        return max(1, int(self.cpus - np.ceil(busy)))

    def pool(self, wanted: int) -> int:
        """Threads for a pool whose grain rule asks for ``wanted``: the fixed count, or under
        ``"auto"`` the fewest of ``wanted``, the free CPUs now and ``tuning.max_threads``."""
        if self.fixed:
            return self.threads
        return max(1, min(int(wanted), self.free_now(), self.tuning.max_threads))

    def record(self) -> dict:
        """The plan as the build's ``stats["threads"]``: requested, cpus, busy, highs, the most
        BLAS threads a sized step used, and the count of the rest (``baseline``)."""
        return {"requested": self.requested, "cpus": self.cpus, "busy": self.busy,
                "highs": self.highs, "blas": max(self.usage.blas, self.baseline),
                "baseline": self.baseline}


def plan_threads(threads=None, tuning: ThreadTuning = ThreadTuning()) -> ThreadPlan:
    """The plan for ``threads`` on this machine now (see the module's description)."""
    requested = check_threads(threads)
    cpus = available_cpus()
    if requested != AUTO:
        return ThreadPlan(requested, cpus, 0.0, requested, requested, tuning)
    busy = busy_cpus(tuning)
    free = max(1, int(cpus - np.ceil(busy)))
    plan = ThreadPlan(AUTO, cpus, busy, min(free, tuning.max_threads), max(1, free // 2), tuning)
    plan.usage.reading = (time.monotonic(), busy)
    return plan


#: The plan of the innermost :func:`use_threads` block of this context (None outside any).
_ACTIVE: ContextVar[ThreadPlan | None] = ContextVar("mdp_thread_plan", default=None)
#: The count :func:`set_default_threads` fixed for every plan that names none (None: "auto").
_DEFAULT: list[int | None] = [None]


def set_default_threads(threads: int | str | None) -> None:
    """Fix the count of every later build of this process that names none (``None`` or
    ``"auto"``: size the pools, :func:`plan_threads`).

    :func:`mdp.lp.set_threads` is this function.
    """
    value = check_threads(threads)
    _DEFAULT[0] = None if value == AUTO else value


def active_plan() -> ThreadPlan | None:
    """The plan in force here (None outside every :func:`use_threads` block)."""
    return _ACTIVE.get()


def fixed_threads() -> int | None:
    """The count every pool must use: the active plan's fixed count, else the process default of
    :func:`set_default_threads`; None where pools are sized by their grain."""
    plan = _ACTIVE.get()
    if plan is not None:
        return plan.threads if plan.fixed else None
    return _DEFAULT[0]


def highs_threads() -> int | None:
    """HiGHS's thread count for a solve that names none (None: HiGHS's default, outside plans)."""
    plan = _ACTIVE.get()
    if plan is not None:
        return plan.highs
    return _DEFAULT[0]


def pool_threads(wanted: int) -> int:
    """Threads for a pool whose grain rule asks for ``wanted`` (:meth:`ThreadPlan.pool`; outside
    every plan, ``wanted`` itself)."""
    plan = _ACTIVE.get()
    if plan is None:
        return max(1, int(wanted))
    size = plan.pool(wanted)
    plan.usage.blas = max(plan.usage.blas, size)
    return size


@contextlib.contextmanager
def use_threads(threads=None, tuning: ThreadTuning = ThreadTuning()) -> Iterator[ThreadPlan]:
    """Run the block under the plan for ``threads``; the libraries' counts are restored on exit.

    ``threads=None`` inside another plan's block keeps that plan; outside, it is the count of
    :func:`set_default_threads` where one was set, else ``"auto"``. BLAS and OpenMP (threadpoolctl)
    and numba run on :attr:`ThreadPlan.baseline` threads, except in steps sized by
    :func:`pool_threads`; HiGHS reads :func:`highs_threads` at each solve.

    Yields
    ------
    ThreadPlan
    """
    outer = _ACTIVE.get()
    if threads is None and outer is not None:
        yield outer
        return
    plan = plan_threads(_DEFAULT[0] if threads is None else threads, tuning)
    token = _ACTIVE.set(plan)
    numba_before = numba.get_num_threads()
    try:
        numba.set_num_threads(min(plan.baseline, numba.config.NUMBA_NUM_THREADS))
        with limit_pools(plan.baseline):
            yield plan
    finally:
        numba.set_num_threads(numba_before)
        _ACTIVE.reset(token)


#: The BLAS and OpenMP runtimes' programming interfaces (threadpoolctl's ``user_api``).
POOL_APIS = ("blas", "openmp")


class _PoolLimits:
    """The BLAS and OpenMP thread counts of the blocks of every thread.

    OpenBLAS on its own threads keeps one count for the whole process, so a block cannot restore
    "the count it found": two threads' blocks that overlap would each restore the other's limit
    and leave it behind (two calibrations on a Dask worker's two threads left OpenBLAS at one
    thread for the rest of the process). Here each thread keeps a stack of its blocks; such a
    library runs on the smallest of the threads' innermost limits, and on the count it had
    before the first block once none is open. OpenMP runtimes (and an OpenBLAS built on one)
    keep a count per thread instead: each thread's own innermost limit, and its own count back
    when its last block closes.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stacks: dict[int, list[tuple[int, tuple[str, ...]]]] = {}
        # a process-wide library's count before the first block; a thread's own counts before
        # its first; the runtimes loaded when the first block opened
        self._shared_original: dict[str, int] = {}
        self._thread_original: dict[int, dict[str, int]] = {}
        self._libraries: list = []

    @staticmethod
    def _per_thread(lib) -> bool:
        """Whether ``lib``'s count is the calling thread's (OpenMP's ``omp_set_num_threads``)."""
        return lib.user_api == "openmp" or getattr(lib, "threading_layer", None) == "openmp"

    @staticmethod
    def _innermost(stack: list, api: str) -> int | None:
        return next((k for k, apis in reversed(stack) if api in apis), None)

    def _apply(self, me: int) -> None:
        """Set every library's count for the open blocks, from thread ``me`` (lock held)."""
        shared = {api: min((k for k in (self._innermost(st, api) for st in self._stacks.values())
                            if k is not None), default=None) for api in POOL_APIS}
        own_stack = self._stacks.get(me, [])
        own_original = self._thread_original.setdefault(me, {})
        for lib in self._libraries:
            if lib.user_api not in POOL_APIS:
                continue
            if self._per_thread(lib):
                original = own_original.setdefault(lib.filepath, lib.num_threads)
                count = self._innermost(own_stack, lib.user_api)
                lib.set_num_threads(original if count is None else count)
                continue
            original = self._shared_original.setdefault(lib.filepath, lib.num_threads)
            count = shared[lib.user_api]
            # threadpoolctl >= 3.8 lets only the first thread that sets OpenBLAS's process-wide
            # count set it again until that thread lets go: this lock serialises every change
            release = getattr(lib, "clear_controlling_thread", None)
            if release is not None:
                release(force=True)
            lib.set_num_threads(original if count is None else count)
            if release is not None:
                release(force=True)
        if not own_stack:
            del self._thread_original[me]
        if not self._stacks:
            self._shared_original.clear()

    @contextlib.contextmanager
    def limit(self, threads: int, user_api: str | None = None) -> Iterator[None]:
        entry = (int(threads), POOL_APIS if user_api is None else (user_api,))
        me = threading.get_ident()
        with self._lock:
            if not self._stacks:                     # finding the loaded libraries costs ~3 ms
                self._libraries = ThreadpoolController().lib_controllers
            self._stacks.setdefault(me, []).append(entry)
            self._apply(me)
        try:
            yield
        finally:
            with self._lock:
                stack = self._stacks[me]
                del stack[len(stack) - 1 - stack[::-1].index(entry)]
                if not stack:
                    del self._stacks[me]
                self._apply(me)


_POOLS = _PoolLimits()


def limit_pools(threads: int, user_api: str | None = None) -> contextlib.AbstractContextManager:
    """Context in which the BLAS (``user_api="blas"``), OpenMP (``"openmp"``) or both (``None``)
    runtimes run on ``threads`` threads; safe for blocks open in several threads at once.

    A library built for fewer threads stays at its count. Where blocks of several threads
    overlap, each runtime runs on the smallest of their innermost limits; once the last block
    closes every library is back at the count it had before the first one opened.
    """
    return _POOLS.limit(threads, user_api)
