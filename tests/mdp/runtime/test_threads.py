"""The ``threads`` knob: validation, the auto plan, and the pool sizes seen inside a build."""

import threading

import highspy
import numba
import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

import mdp
import mdp.lp
from mdp.candidate import Candidate
from mdp.curves.loss import loss_curves
from mdp.errors import ParameterError
from mdp.lp import SparseLP, dense
from mdp.registry import FAMILIES, register
from mdp.runtime import threads as th


def blas_counts() -> dict:
    return {lib["filepath"]: lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"}


def blas_capacity(threads: int) -> dict:
    """Each BLAS library's count when asked for ``threads`` (one built for fewer stays at its own),
    read without trusting the count the process happens to be at."""
    with threadpool_limits(threads, user_api="blas"):
        return blas_counts()


def machine(monkeypatch, cpus: int, busy: float) -> None:
    """A machine of ``cpus`` CPUs of which other processes keep ``busy`` busy."""
    monkeypatch.setattr(th, "available_cpus", lambda: cpus)
    monkeypatch.setattr(th, "busy_cpus", lambda tuning=None: float(busy))


@pytest.fixture
def space():
    rng = np.random.default_rng(3)
    return mdp.MetricSpace.from_points(rng.uniform(0, 4, size=(12, 2)))


@pytest.fixture
def spy_family():
    """A family whose builder records, from inside the build, every pool's size."""
    seen = {}

    @register("_test_thread_spy", description="records the thread counts it runs under")
    def _spy(space, epsilon, *, rng=None):
        seen["numba"] = numba.get_num_threads()
        seen["blas"] = set(blas_counts().values())
        with dense.blas_threads(10 ** 6):               # a step large enough for every core
            seen["blas_large_step"] = set(blas_counts().values())
        with dense.blas_threads(1):
            seen["blas_small_step"] = set(blas_counts().values())
        c = np.array([-1.0, -1.0])
        A = np.array([[1.0, 2.0], [3.0, 1.0]])
        SparseLP(c, A, row_upper=np.array([4.0, 6.0]), col_upper=np.ones(2), solver="hipo").solve()
        D = space.distances
        P = np.exp(-epsilon * D / 2)
        return Candidate(matrix=P / P.sum(1, keepdims=True))

    yield seen
    FAMILIES.unregister("_test_thread_spy")


@pytest.fixture
def highs_threads_option(monkeypatch):
    """The ``threads`` option of every HiGHS solve (a spy on highspy's setter)."""
    values = []
    original = highspy.Highs.setOptionValue

    def spy(self, name, value):
        if name == "threads":
            values.append(value)
        return original(self, name, value)

    monkeypatch.setattr(highspy.Highs, "setOptionValue", spy)
    return values


@pytest.mark.parametrize("bad", [0, -1, "x", "", 1.5, True, [2]])
def test_bad_thread_counts_are_refused_naming_the_parameter(space, bad):
    with pytest.raises(ParameterError, match=r"threads"):
        th.check_threads(bad)
    with pytest.raises(ParameterError, match=r"threads"):
        mdp.build("exponential", space, 1.0, threads=bad)
    with pytest.raises(ParameterError, match=r"threads"):
        mdp.lp.set_threads(bad)
    with pytest.raises(ParameterError, match=r"threads"):
        loss_curves(space, ["exponential"], [1.0], progress=False, threads=bad)


def test_check_threads_accepts_auto_none_and_positive_ints():
    assert th.check_threads(None) == th.AUTO
    assert th.check_threads("auto") == th.AUTO
    assert th.check_threads(3) == 3 and th.check_threads(np.int64(2)) == 2


@pytest.mark.parametrize("cpus, busy, threads, highs", [
    (2, 0, 2, 1),      # quiet 2-core machine: HiGHS's own default, half the cores
    (2, 2, 1, 1),      # beside a job on both cores: one thread everywhere
    (2, 1, 1, 1),
    (2, 0.4, 1, 1),    # a partly busy CPU is not free
    (16, 0, 8, 8),     # pools stop at max_threads; HiGHS gets half the free CPUs
    (16, 6, 8, 5),
    (16, 15, 1, 1),
    (4, 9, 1, 1),      # more busy threads than CPUs
])
def test_auto_plan_from_the_free_cpus(monkeypatch, cpus, busy, threads, highs):
    machine(monkeypatch, cpus, busy)
    plan = th.plan_threads("auto")
    assert (plan.cpus, plan.busy, plan.threads, plan.highs, plan.baseline) == (cpus, busy, threads, highs, 1)
    assert plan.pool(1) == 1
    assert plan.pool(64) == threads
    assert plan.pool(2) == min(2, threads)


def test_auto_pools_follow_the_load_during_the_build(monkeypatch):
    machine(monkeypatch, 4, 0)
    plan = th.plan_threads("auto", th.ThreadTuning(reuse_seconds=0.0))
    assert plan.pool(4) == 4
    machine(monkeypatch, 4, 3)                             # a job started after the plan
    assert plan.pool(4) == 1
    assert plan.highs == 2                                 # HiGHS's scheduler is kept for the build


def test_fixed_plan_reads_no_load(monkeypatch):
    def fail(tuning=None):
        raise AssertionError("a fixed count reads no load")

    monkeypatch.setattr(th, "busy_cpus", fail)
    plan = th.plan_threads(3)
    assert (plan.threads, plan.highs, plan.baseline, plan.pool(1), plan.pool(64)) == (3, 3, 3, 3, 3)


@pytest.mark.parametrize("threads", [1, 2])
def test_a_fixed_count_reaches_highs_blas_and_numba(space, spy_family, highs_threads_option, threads):
    before_blas, before_numba = blas_counts(), numba.get_num_threads()
    mech = mdp.build("_test_thread_spy", space, 1.0, threads=threads)
    want_numba = min(threads, numba.config.NUMBA_NUM_THREADS)
    want_blas = set(blas_capacity(threads).values())
    assert spy_family["numba"] == want_numba
    assert spy_family["blas"] == want_blas
    assert spy_family["blas_large_step"] == want_blas == spy_family["blas_small_step"]
    assert highs_threads_option == [threads]
    assert mech.stats["threads"] == {"requested": threads, "cpus": th.available_cpus(), "busy": 0.0,
                                     "highs": threads, "blas": threads, "baseline": threads}
    assert blas_counts() == before_blas and numba.get_num_threads() == before_numba   # restored


def test_auto_on_a_busy_machine_is_one_thread_everywhere(monkeypatch, space, spy_family,
                                                         highs_threads_option):
    machine(monkeypatch, 2, 2)
    mech = mdp.build("_test_thread_spy", space, 1.0)
    assert spy_family["numba"] == 1
    assert spy_family["blas"] == spy_family["blas_large_step"] == spy_family["blas_small_step"] == {1}
    assert highs_threads_option == [1]
    assert mech.stats["threads"]["requested"] == "auto" and mech.stats["threads"]["blas"] == 1


def test_auto_on_a_quiet_machine_sizes_blas_by_the_step(monkeypatch, space, spy_family,
                                                        highs_threads_option):
    monkeypatch.setattr(dense, "_physical_cores", lambda: 2)
    machine(monkeypatch, 2, 0)
    mech = mdp.build("_test_thread_spy", space, 1.0, threads="auto")
    assert spy_family["blas"] == {1} == spy_family["blas_small_step"]     # un-sized code: serial
    assert spy_family["blas_large_step"] == set(blas_capacity(2).values())
    assert highs_threads_option == [1]                  # half of two CPUs
    assert mech.stats["threads"]["blas"] == 2 and mech.stats["threads"]["highs"] == 1


def test_inner_builds_keep_the_outer_plan_and_set_threads_fixes_the_default(space):
    with th.use_threads(1) as plan:
        assert mdp.lp.get_threads() == 1
        assert mdp.build("exponential", space, 1.0).stats["threads"]["requested"] == 1
        assert mdp.build("exponential", space, 1.0, threads=2).stats["threads"]["requested"] == 2
        assert th.active_plan() is plan
    assert th.active_plan() is None and mdp.lp.get_threads() is None
    try:
        mdp.lp.set_threads(2)
        assert mdp.build("exponential", space, 1.0).stats["threads"]["requested"] == 2
        assert mdp.build("exponential", space, 1.0, threads=1).stats["threads"]["requested"] == 1
    finally:
        mdp.lp.set_threads(None)
    assert mdp.build("exponential", space, 1.0).stats["threads"]["requested"] == "auto"


@pytest.mark.parametrize("family, params", [("optimal", {}), ("optimal", {"method": "blocks"}),
                                            ("constopt", {"r": 4, "lam": 0.1})])
def test_one_thread_and_auto_give_identical_matrices(monkeypatch, family, params):
    # auto on a quiet machine, so that its sized steps run on every core
    monkeypatch.setattr(dense, "_physical_cores", lambda: 2)
    machine(monkeypatch, 2, 0)
    rng = np.random.default_rng(11)
    space = mdp.MetricSpace.from_points(rng.uniform(0, 5, size=(24, 2)))
    one = mdp.build(family, space, 1.0, threads=1, **params)
    auto = mdp.build(family, space, 1.0, threads="auto", **params)
    assert auto.stats["threads"]["requested"] == "auto"
    np.testing.assert_array_equal(one.matrix, auto.matrix)


def run_together(*targets) -> None:
    """Run each target in its own thread and wait for all of them."""
    workers = [threading.Thread(target=f) for f in targets]
    for t in workers:
        t.start()
    for t in workers:
        t.join(20)


@pytest.mark.parametrize("a_threads", [1, 2])
def test_blocks_of_two_threads_that_overlap_restore_the_counts_and_run_on_the_smaller(a_threads):
    # A enters, B enters, A leaves, B leaves. Restoring "the count each found" (threadpoolctl's
    # threadpool_limits) left 1 behind for the rest of the process after two calibrations on one
    # Dask worker's two threads, and ran B's block on A's count once A had left.
    before = blas_counts()
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
    seen = {}

    def a():
        with th.limit_pools(a_threads, "blas"):
            seen["a alone"] = blas_counts()
            a_in.set()
            b_in.wait(10)
            seen["both"] = blas_counts()
        a_out.set()

    def b():
        a_in.wait(10)
        with th.limit_pools(1):
            b_in.set()
            a_out.wait(10)
            seen["b alone"] = blas_counts()

    run_together(a, b)
    assert seen["a alone"] == blas_capacity(a_threads)
    assert seen["both"] == blas_capacity(1) == seen["b alone"]
    assert blas_counts() == before


def openmp_counts() -> dict:
    """The calling thread's OpenMP counts (each runtime keeps one per thread)."""
    return {lib["filepath"]: lib["num_threads"] for lib in threadpool_info()
            if lib["user_api"] == "openmp"}


def test_openmp_counts_stay_each_threads_own_when_blocks_overlap():
    # OpenMP keeps a count per thread: a thread leaving its block while another thread's block is
    # open gets its own count back, not the other thread's limit
    if not openmp_counts():
        pytest.skip("no OpenMP runtime loaded in this process")
    with threadpool_limits(2, user_api="openmp"):
        two = openmp_counts()
    with threadpool_limits(1, user_api="openmp"):
        one = openmp_counts()
    if two == one:
        pytest.skip("the OpenMP runtimes here run one thread whatever they are asked")
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
    seen = {}

    def a():
        with threadpool_limits(2, user_api="openmp"):      # this thread's own count: 2
            seen["a before"] = openmp_counts()
            with th.limit_pools(1):
                a_in.set()
                b_in.wait(10)
                seen["a inside"] = openmp_counts()
            seen["a after"] = openmp_counts()
        a_out.set()

    def b():
        a_in.wait(10)
        with threadpool_limits(2, user_api="openmp"):
            with th.limit_pools(1, "openmp"):
                b_in.set()
                a_out.wait(10)
                seen["b inside"] = openmp_counts()
            seen["b after"] = openmp_counts()

    run_together(a, b)
    assert seen["a before"] == two == seen["a after"] == seen["b after"]
    assert seen["a inside"] == one == seen["b inside"]


def test_nested_blocks_in_one_thread_run_on_the_innermost_and_restore_in_turn():
    before = blas_counts()
    with th.limit_pools(1):
        with th.limit_pools(2, "blas"):
            assert blas_counts() == blas_capacity(2)
            with th.limit_pools(1, "openmp"):             # another runtime: BLAS keeps the 2
                assert blas_counts() == blas_capacity(2)
        assert blas_counts() == blas_capacity(1)
    assert blas_counts() == before
