"""Exact OPTMech builds quiet and beside a competing numeric job, per thread setting.

A thread pool whose threads meet at a barrier after every step waits, beside another busy
process, for whichever of its threads the kernel has descheduled (:mod:`mdp.runtime.threads`). This
benchmark measures, side by side in one run, the same builds on a quiet machine and beside one
process doing 300 x 300 matrix products in a loop (NumPy's default threads), for each setting of
the ``threads`` knob.

Usage::

    python benchmarks/threads_busy.py                      # both spaces, auto and 1, 3 repeats
    python benchmarks/threads_busy.py --spaces latlon80 --repeats 5 --settings auto 1 2
    python benchmarks/threads_busy.py --legacy-root /tmp/mdp-old   # also the code at another checkout

Spaces (seeded; neither was used to choose the thread rules): ``latlon80``, 80 uniform points in
a 11 x 11 km city box in lat/lon (haversine, km) at epsilon 1 per km; ``clustered100``, 100
planar points in 6 Gaussian clusters at epsilon 1. Settings: ``auto`` (the default), an int
(every pool fixed at that count), and ``legacy`` (the build of the checkout at
``--legacy-root``, called without ``threads``: that checkout's default). Every build runs in a
fresh process (HiGHS's pool and the BLAS counts start from the library defaults) and only the
build is timed. Printed: min and median seconds quiet and beside the job, the ratio of the
medians, and the threads each build recorded.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: The competing job: one process of matrix products on NumPy's default BLAS threads.
#: Each product overwrites the last (a list of them grew by 0.7 MB per product until the
#: machine swapped and the job was killed).
JOB = ("import numpy as np\na = np.random.rand(300, 300)\nb = np.empty_like(a)\n"
       "while True:\n    np.matmul(a, a, out=b)")

#: One build, run in a child process: prints its seconds and recorded threads as JSON.
CHILD = r"""
import json, sys, time
import numpy as np
import mdp
space_name, setting, limit = sys.argv[1], sys.argv[2], float(sys.argv[3])
rng = np.random.default_rng(2024)
if space_name == "latlon80":
    # 80 uniform points in a city box of about 11 x 11 km (lat, lon in degrees)
    lat = rng.uniform(45.70, 45.80, 80)
    lon = rng.uniform(4.78, 4.92, 80)
    space = mdp.MetricSpace.from_points(np.c_[lat, lon], metric="haversine")
else:
    centres = rng.uniform(0, 12, size=(6, 2))
    X = centres[rng.integers(0, 6, 100)] + rng.normal(0, 0.6, size=(100, 2))
    space = mdp.MetricSpace.from_points(X)
kw = {} if setting == "legacy" else {"threads": setting if setting == "auto" else int(setting)}
t0 = time.perf_counter()
try:
    mech = mdp.build("optimal", space, 1.0, time_limit=limit, **kw)
    seconds, threads = time.perf_counter() - t0, mech.stats.get("threads")
except mdp.SolverTimeout:
    seconds, threads = float("inf"), None
print(json.dumps({"seconds": seconds, "threads": threads}))
"""


def one_build(space: str, setting: str, limit: float, legacy_root: str | None) -> dict:
    root = legacy_root if setting == "legacy" else str(ROOT)
    env = dict(os.environ, PYTHONPATH=root)
    out = subprocess.run([sys.executable, "-c", CHILD, space, setting, str(limit)], env=env,
                         capture_output=True, text=True, timeout=limit + 300, cwd=root)
    if out.returncode != 0:
        raise RuntimeError(f"{space} / {setting}: {out.stderr.strip().splitlines()[-1:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def fmt(values: list[float]) -> str:
    finite = [v for v in values if v != float("inf")]
    if not finite:
        return "over limit"
    med = statistics.median(values)
    return f"{min(values):.1f} / {'over limit' if med == float('inf') else f'{med:.1f}'}"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--spaces", nargs="+", default=["latlon80", "clustered100"],
                   choices=["latlon80", "clustered100"])
    p.add_argument("--settings", nargs="+", default=["auto", "1"],
                   help="'auto', a thread count, or 'legacy' (needs --legacy-root)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--time-limit", type=float, default=240.0, help="seconds per build")
    p.add_argument("--legacy-root", default=None,
                   help="a checkout of the toolkit whose default is measured as 'legacy'")
    a = p.parse_args()
    settings = list(a.settings)
    if a.legacy_root and "legacy" not in settings:
        settings.append("legacy")
    if "legacy" in settings and not a.legacy_root:
        p.error("the 'legacy' setting needs --legacy-root")
    times: dict[tuple, list[float]] = {}
    recorded: dict[tuple, object] = {}
    print(f"CPUs {len(os.sched_getaffinity(0))}, load averages {os.getloadavg()}", flush=True)
    for rep in range(a.repeats):
        for space in a.spaces:
            for setting in settings:
                r = one_build(space, setting, a.time_limit, a.legacy_root)
                times.setdefault((space, setting, "quiet"), []).append(r["seconds"])
                recorded[(space, setting, "quiet")] = r["threads"]
                print(f"  {space} threads {setting} quiet: {r['seconds']:.1f} s", flush=True)
            job = subprocess.Popen([sys.executable, "-c", JOB])
            try:
                time.sleep(1.0)
                for setting in settings:
                    r = one_build(space, setting, a.time_limit, a.legacy_root)
                    times.setdefault((space, setting, "busy"), []).append(r["seconds"])
                    recorded[(space, setting, "busy")] = r["threads"]
                    print(f"  {space} threads {setting} beside the job: {r['seconds']:.1f} s",
                          flush=True)
            finally:
                job.kill()
                job.wait()
        print(f"repeat {rep + 1} of {a.repeats} done; load averages {os.getloadavg()}", flush=True)
    print("\n| space | threads | quiet s (min / median) | beside a job s (min / median) | "
          "median ratio | threads recorded beside the job |")
    print("|---|---|---|---|---|---|")
    for space in a.spaces:
        for setting in settings:
            q, b = times[(space, setting, "quiet")], times[(space, setting, "busy")]
            ratio = statistics.median(b) / statistics.median(q)
            rec = recorded[(space, setting, "busy")]
            rec = ("-" if rec is None else
                   f"HiGHS {rec['highs']}, BLAS {rec['blas']}, rest {rec['baseline']}")
            print(f"| {space} | {setting} | {fmt(q)} | {fmt(b)} | {ratio:.2f} | {rec} |")


if __name__ == "__main__":
    main()
