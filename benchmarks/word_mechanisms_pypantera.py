"""The toolkit's word mechanisms against pyPANTERA's: output distributions and words per second.

pyPANTERA (De Faveri, Faggioli, Ferro, CIKM 2024) implements CMP (Madlib), Mahalanobis,
Vickrey, SanText, TEM and CusText. On the 50 most frequent GloVe words (the embedded slice),
for each mechanism both share and a few input words, this draws ``--draws`` outputs from each
library and compares them:

* a two-sample chi-square test of the two output counts (``p_two_sample``; outputs seen in
  either sample; a small p means the two libraries draw different distributions);
* for the families with an exact matrix (SanText, TEM), pyPANTERA's counts against the
  toolkit's certified row (``p_vs_exact``);
* the share of draws that keep the input word in each library, and the words per second
  (pyPANTERA: one call of its per-word sampler per draw; the toolkit: one vectorised
  ``sample`` of all the draws).

pyPANTERA runs in its own virtual environment (it installs a top-level package named ``src``;
NumPy 2 breaks its CusText), through ``benchmarks/pypantera_side.py``::

    python -m venv /work/pyp-venv
    /work/pyp-venv/bin/pip install pypantera==1.0.2 "numpy<2"
    python benchmarks/word_mechanisms_pypantera.py --python /work/pyp-venv/bin/python

The toolkit's ``epsilon`` is always the level in the embedding's Euclidean distance; pyPANTERA's
Mahalanobis takes the paper's ``eps_M`` per unit of the Mahalanobis norm, so the toolkit is
built at ``eps_M / sigma_min(S)`` (:mod:`mdp.families.mahalanobis`) to draw the same noise law.
CusText and Vickrey on Mahalanobis noise are not compared: pyPANTERA's CusText gives each word
its own output set (the paper's sets are disjoint) and its Mahalanobis noise is renormalised
(below); both differ by definition.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

#: (case, pyPANTERA mechanism, its options, its epsilon, toolkit family, toolkit parameters).
CASES = [
    ("CMP / madlib", "CMP", {}, 10.0, "madlib", {}),
    ("Mahalanobis (lam 0.5)", "Mahalanobis", {"lam": 0.5}, 10.0, "mahalanobis", {"lam": 0.5}),
    ("VickreyCMP (t 0.75)", "VickreyCMP", {"t": 0.75}, 10.0, "vickrey", {"t": 0.75}),
    ("SanText", "SanText", {}, 2.0, "santext", {}),
    ("TEM (beta 0.001)", "TEM", {"beta": 0.001}, 10.0, "tem", {"beta": 0.001}),
    ("TEM (beta 0.1)", "TEM", {"beta": 0.1}, 10.0, "tem", {"beta": 0.1}),
]
SIDE = Path(__file__).with_name("pypantera_side.py")


def _write_embedding(path: Path, n: int):
    import text

    emb = text.load_glove(n)
    with open(path, "w") as fh:
        for w, v in zip(emb.words, emb.vectors, strict=True):
            fh.write(w + " " + " ".join(repr(float(x)) for x in v) + "\n")
    return emb


def _their_counts(python: str, emb_file: Path, mech: str, options: dict, eps: float,
                  words: list[str], draws: int, seed: int, out: Path) -> dict:
    cmd = [python, str(SIDE), "--emb", str(emb_file), "--mechanism", mech, "--epsilon", str(eps),
           "--words", ",".join(words), "--draws", str(draws), "--seed", str(seed),
           "--out", str(out)]
    for key, value in options.items():
        cmd += [f"--{key}", str(value)]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(out.read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--python", default="/work/pyp-venv/bin/python",
                        help="python of the virtual environment holding pypantera")
    parser.add_argument("--words", default="the,he,two")
    parser.add_argument("--draws", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--csv", default=None, help="also write the table here")
    args = parser.parse_args()

    import mdp
    from mdp.families.mahalanobis import mahalanobis_shape

    words = args.words.split(",")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        emb_file = Path(tmp) / "glove50.txt"
        emb = _write_embedding(emb_file, 50)
        space = mdp.MetricSpace.from_points(np.asarray(emb.vectors, dtype=float),
                                            labels=list(emb.words))
        index = {w: i for i, w in enumerate(emb.words)}
        for case, theirs, options, eps, family, params in CASES:
            print(f"{case} ...", file=sys.stderr, flush=True)
            ours_eps = eps
            if family == "mahalanobis":
                ours_eps = eps / mahalanobis_shape(space.points, params["lam"])[1]
            mech = mdp.build(family, space, ours_eps, rng=args.seed, mode="matrix", **params)
            exact = mech.guarantee != "analytic"
            res = _their_counts(args.python, emb_file, theirs, options, eps, words, args.draws,
                                args.seed, Path(tmp) / f"{theirs}.json")
            rng = np.random.default_rng(args.seed + 1)
            for w in words:
                u = index[w]
                t0 = time.perf_counter()
                ours = np.bincount(mech.sample_indices(np.full(args.draws, u), rng),
                                   minlength=space.n)
                ours_wps = args.draws / (time.perf_counter() - t0)
                their = np.zeros(space.n, dtype=np.int64)
                for out_word, count in res["counts"][w].items():
                    their[index[out_word]] = count
                seen = (ours + their) > 0
                table = np.vstack([ours[seen], their[seen]])
                p_two = (float(stats.chi2_contingency(table).pvalue) if seen.sum() > 1
                         else 1.0)
                p_exact = np.nan
                if exact:
                    expected = mech.matrix[u] * their.sum()
                    big = expected >= 5
                    obs = np.append(their[big], their[~big].sum())
                    exp_ = np.append(expected[big], expected[~big].sum())
                    keep = exp_ > 0
                    if keep.sum() > 1:
                        p_exact = float(stats.chisquare(obs[keep], exp_[keep] * obs[keep].sum()
                                                        / exp_[keep].sum()).pvalue)
                    elif their[~big].sum() == 0:
                        p_exact = 1.0
                rows.append({"case": case, "word": w, "epsilon (pyPANTERA)": eps,
                             "p_two_sample": p_two, "p_vs_exact": p_exact,
                             "kept (toolkit)": ours[u] / args.draws,
                             "kept (pyPANTERA)": their[u] / args.draws,
                             "exact kept": mech.matrix[u, u] if exact else np.nan,
                             "words/s (pyPANTERA)": res["words_per_second"],
                             "words/s (toolkit)": ours_wps})
    df = pd.DataFrame(rows)
    if args.csv:
        df.to_csv(args.csv, index=False)
    print(df.to_markdown(index=False, floatfmt=".4g"))


if __name__ == "__main__":
    main()
