"""Vocabulary mode at the scale of a real vocabulary: build, privatize 10^4 words, peak memory.

Cases (each in its own process, so that its peak resident memory is its own):

* ``madlib``: Madlib over all 400,000 words of GloVe 6B 50d (extra ``glove``), epsilon 10;
* ``mahalanobis``, ``vickrey``: the noise-and-snap word mechanisms of Xu et al. (2020, 2021)
  over the same 400,000 words;
* ``exponential``, ``tem``, ``santext``: the exponential mechanism and the two word mechanisms
  built on it (Carvalho et al. 2023; Yue et al. 2021) over the 50,000 most frequent GloVe
  words, epsilon 10 (each distinct input word costs a row of n log-weights).

Each prints the seconds to load the embedding, to build, to privatize a text of 10^4 words
(tokens drawn from the 10,000 most frequent alphabetic words with Zipf frequencies, seeded) in
wall-clock and in CPU seconds of the process (all its threads), the peak resident memory of the
process, and the machine's load average (the machine may be shared). For Madlib it also
prints the nearest-neighbour algorithm (``--index``: ``screened``, the default, or
scikit-learn's ``brute``) and what the screen did (worker threads, candidates per query,
queries answered by the exact float64 pass).

    python benchmarks/vocabulary_scale.py                 # both cases
    python benchmarks/vocabulary_scale.py --case madlib --words 10000
    python benchmarks/vocabulary_scale.py --case madlib --index brute
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time

import numpy as np

CASES = {"madlib": ("madlib", None), "mahalanobis": ("mahalanobis", None),
         "vickrey": ("vickrey", None), "exponential": ("exponential", 50_000),
         "tem": ("tem", 50_000), "santext": ("santext", 50_000)}


def _text(words: np.ndarray, n_tokens: int, seed: int) -> str:
    ranks = np.arange(1, len(words) + 1)
    p = 1.0 / ranks
    rng = np.random.default_rng(seed)
    tokens = words[rng.choice(len(words), size=n_tokens, p=p / p.sum())]
    return "\n".join(" ".join(tokens[i:i + 12]) for i in range(0, n_tokens, 12))


def run_case(case: str, n_tokens: int, epsilon: float, seed: int, index: str) -> None:
    import mdp
    import text
    from text.privatize import privatize_lines

    family, n_words = CASES[case]
    load1 = os.getloadavg()[0]
    t0 = time.perf_counter()
    space = text.full_glove_space(n_words)
    t_load = time.perf_counter() - t0
    t0 = time.perf_counter()
    mech = mdp.build(family, space, epsilon, rng=seed)
    if family == "madlib" and index != mech.nearest_index.plan.algorithm:
        from mdp.families.analytic_rows import MadlibRows

        # the same vocabulary-mode Madlib on another exact index (a parameter of the class)
        mech = MadlibRows(space, epsilon, "madlib", {"index": index}, {"mode": mech.stats["mode"]})
    t_build = time.perf_counter() - t0
    words = np.array([w for w in space.labels[:12_000].tolist() if w.isalpha()][:10_000])
    doc = _text(words, n_tokens, seed)
    t0, c0 = time.perf_counter(), time.process_time()
    out = text.privatize(doc, mech, rng=seed + 1)
    t_priv, c_priv = time.perf_counter() - t0, time.process_time() - c0
    lines = doc.split("\n")
    t0 = time.perf_counter()
    privatize_lines(mech, lines, rng=seed + 2)
    t_lines = time.perf_counter() - t0
    peak_gib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    changed = np.mean([a != b for a, b in zip(doc.split(), out.split(), strict=True)])
    print(f"{case:12s} n={space.n:7d} eps={epsilon:g} mode={mech.stats['mode']['mode']}: "
          f"load {t_load:5.1f} s, build {t_build:5.1f} s, privatize {n_tokens} words "
          f"{t_priv:5.1f} s (CPU {c_priv:5.1f} s; {changed:.0%} replaced), as {len(lines)} lines "
          f"(mdp privatize) {t_lines:5.1f} s, peak {peak_gib:.2f} GiB, load average "
          f"{load1:.1f} -> {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores", flush=True)
    if family in ("madlib", "mahalanobis"):
        st = mech.nearest_index.last_stats
        extra = ""
        if st:
            extra = (f": {st['workers']} worker threads, candidates per query mean "
                     f"{st['candidates_mean']:.4f} max {st['candidates_max']}, exact float64 "
                     f"pass {st['exact_pass']}")
        print(f"{'':12s} nearest index {index}{extra} (latest query)", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--case", choices=sorted(CASES), default=None)
    parser.add_argument("--words", type=int, default=10_000)
    parser.add_argument("--epsilon", type=float, default=10.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--index", choices=["screened", "brute"], default="screened",
                        help="Madlib's exact nearest-neighbour algorithm")
    args = parser.parse_args()
    if args.case is not None:
        run_case(args.case, args.words, args.epsilon, args.seed, args.index)
        return
    for case in CASES:
        subprocess.run([sys.executable, __file__, "--case", case, "--words", str(args.words),
                        "--epsilon", str(args.epsilon), "--seed", str(args.seed),
                        "--index", args.index], check=True)


if __name__ == "__main__":
    main()
