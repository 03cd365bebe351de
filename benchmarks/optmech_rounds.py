"""OPTMech's exact column-block rounds on an experiment space, round by round, per closure rule.

Builds OPTMech (``mdp.build("optimal", ...)``, so the time includes the certification) on one of
the experiments' spaces (``experiments.spaces``: ``fasttext-200``, ``geolife-200``, ...) at each
epsilon, once per pair-closure rule of the rounds (``mdp.worst_case.block_rounds``): ``gated`` (the
default: after ``closure_after`` flat tight rounds), ``first`` (from the first tight round, the
rule measured against it) and ``off``; the rules run one after the other in one process, for
side-by-side ratios. Prints each tight round (rows, rows added, closure rows, certified gap,
seconds) and a summary table.

Usage::

    python benchmarks/optmech_rounds.py --space fasttext-200 --eps 12 6 --rules gated off

Figures are in ``docs/design/lp.md`` ("Block rounds (OPTMech)"). Depends on machine
load: run nothing else beside it.
"""

from __future__ import annotations

import argparse
import time

import pandas as pd

import mdp
from experiments.spaces import experiment_space, fingerprint
from mdp.families.optimal import OptimalTuning
from mdp.lp import LPTimeout
from mdp.worst_case.block_rounds import BlockRoundsTuning

#: ``closure_after`` per rule (None: the default); "off": never reached
RULES = {"gated": None, "first": 0, "off": 10**9}


def build(space, eps: float, rule: str, time_limit: float) -> dict:
    rounds = (BlockRoundsTuning() if RULES[rule] is None
              else BlockRoundsTuning(closure_after=RULES[rule]))
    t0 = time.perf_counter()
    try:
        st = mdp.build("optimal", space, eps, time_limit=time_limit,
                       tuning=OptimalTuning(rounds=rounds)).stats
        out = {"status": "ok", "loss": st["loss"], "certified_gap": st["relative_gap"],
               "end": st.get("finish_error") or st.get("certified_by") or "rounds"}
    except LPTimeout as exc:
        st, out = {}, {"status": "timeout", "end": str(exc)[:60]}
    out["seconds"] = time.perf_counter() - t0
    trace = st.get("block_round_trace", st.get("round_trace", []))
    for t in trace:
        if t["phase"] == "tight":
            gap = (t["certified"] - t["bound"]) / t["certified"]
            print(f"  tight round: rows {t['rows']:>9,d} added {t['added']:>8,d} closure "
                  f"{t['closure']:>8,d} certified gap {gap:9.2e} {t['seconds']:7.1f} s", flush=True)
    out.update(rounds=len(trace), rows=trace[-1]["rows"] if trace else None,
               closure_rows=sum(t["closure"] for t in trace))
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--space", default="fasttext-200", help="an experiments.spaces name")
    p.add_argument("--eps", type=float, nargs="+", default=[12.0, 6.0])
    p.add_argument("--rules", nargs="+", default=["gated", "off"], choices=list(RULES))
    p.add_argument("--time-limit", type=float, default=1500.0, help="seconds per build")
    args = p.parse_args()
    space = experiment_space(args.space)
    print(f"{args.space}: n = {space.n}, fingerprint {fingerprint(space)}", flush=True)
    rows = []
    for eps in args.eps:
        for rule in args.rules:
            print(f"eps {eps:g}, closure {rule}:", flush=True)
            rows.append({"eps": eps, "closure": rule, **build(space, eps, rule, args.time_limit)})
            print(f"  -> {rows[-1]}", flush=True)
    print(pd.DataFrame(rows).to_markdown(index=False, floatfmt=".9g"))


if __name__ == "__main__":
    main()
