"""pyPANTERA's side of the word-mechanism comparison: output counts and sampling speed.

Draws ``--draws`` outputs of one pyPANTERA 1.0.2 mechanism (De Faveri, Faggioli, Ferro, CIKM 2024;
``pip install pypantera``) for each input word and writes the counts and the time taken as
JSON; the toolkit's side is measured separately and the two JSON files are compared.

This script imports nothing from ``mdp`` and must be run by the python of its own virtual
environment: pyPANTERA installs a top-level package named ``src``, which would clash with
other projects' ``src`` (it also pulls gensim, nltk, pandas, scikit-learn)::

    python -m venv /work/pyp-venv
    /work/pyp-venv/bin/pip install pypantera==1.0.2 "numpy<2"
    /work/pyp-venv/bin/python benchmarks/pypantera_side.py --emb glove50.txt \\
        --mechanism TEM --epsilon 10 --words the,of,and --draws 2000 --out tem.json

``--emb`` is a GloVe-style text file (``word v1 v2 ...`` per line). One draw is one call of
the mechanism's per-word sampler: ``processText([word])`` for the sampling mechanisms
(SanText, TEM, CusText), ``processText(mech.noisyEmb([word]))`` for the embedding ones
(CMP, Mahalanobis, VickreyCMP, VickreyMhl). pyPANTERA samples with numpy's global RNG,
which ``--seed`` seeds. Output JSON::

    {"mechanism", "epsilon", "options": {lam|t|beta|k|distance}, "draws",
     "vocab_size", "vocab_order_matches_file", "counts": {input: {output: count}},
     "seconds" (sampling only, all words), "words_per_second"}

numpy<2: under NumPy 2's scalar promotion (NEP 50) CusText's probabilities stay float32 and
``np.random.choice`` rejects them ("probabilities do not sum to 1") for most words.
BLAS defaults to one thread (override with OMP_NUM_THREADS / OPENBLAS_NUM_THREADS).

``vocab_order_matches_file``: pyPANTERA reads the file in parallel byte chunks
(``src/utils/vocab.py``); a line that starts exactly on a chunk boundary is skipped, so its
vocabulary can differ from the file's.
"""

import argparse
import json
import os
import time
from collections import Counter

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # per-word work is tiny: BLAS threads only add overhead

import numpy as np  # noqa: E402
from src.EmbeddingPerturbationMechanism.cmp import CMP  # noqa: E402
from src.EmbeddingPerturbationMechanism.mahalanobis import Mahalanobis  # noqa: E402
from src.EmbeddingPerturbationMechanism.vickrey import VickreyCMP, VickreyMhl  # noqa: E402
from src.SamplingPerturbationMechanism.custext import CusText  # noqa: E402
from src.SamplingPerturbationMechanism.santext import SanText  # noqa: E402
from src.SamplingPerturbationMechanism.tem import TEM  # noqa: E402

MECHANISMS = {  # class, its option names, embedding mechanism?
    "CMP": (CMP, (), True),
    "Mahalanobis": (Mahalanobis, ("lam",), True),
    "VickreyCMP": (VickreyCMP, ("t",), True),
    "VickreyMhl": (VickreyMhl, ("lam", "t"), True),
    "SanText": (SanText, (), False),
    "TEM": (TEM, ("beta",), False),
    "CusText": (CusText, ("k", "distance"), False),
}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--emb", required=True, help="GloVe-style text file")
    ap.add_argument("--mechanism", required=True, choices=sorted(MECHANISMS))
    ap.add_argument("--epsilon", type=float, required=True)
    ap.add_argument("--lam", type=float, default=1.0, help="Mahalanobis, VickreyMhl")
    ap.add_argument("--t", type=float, default=0.75, help="VickreyCMP, VickreyMhl")
    ap.add_argument("--beta", type=float, default=0.001, help="TEM")
    ap.add_argument("--k", type=int, default=10, help="CusText")
    ap.add_argument("--distance", default="euclidean", choices=["euclidean", "cosine"],
                    help="CusText")
    ap.add_argument("--words", required=True, help="comma-separated input words")
    ap.add_argument("--draws", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", required=True, help="JSON output file")
    a = ap.parse_args(argv)

    cls, opt_names, embedding = MECHANISMS[a.mechanism]
    options = {name: getattr(a, name) for name in opt_names}
    mech = cls({"embPath": a.emb, "epsilon": a.epsilon, **options})
    with open(a.emb, encoding="utf-8") as fh:
        file_words = [line.split(" ", 1)[0] for line in fh if line.strip()]
    vocab_words = list(mech.vocab.embeddings)  # before TEM may add out-of-vocabulary words

    np.random.seed(a.seed)
    words = [w for w in a.words.split(",") if w]
    counts, seconds = {}, 0.0
    for word in words:
        out = []
        start = time.perf_counter()
        if embedding:
            for _ in range(a.draws):
                out.append(mech.processText(mech.noisyEmb([word])))
        else:
            for _ in range(a.draws):
                out.append(mech.processText([word]))
        seconds += time.perf_counter() - start
        counts[word] = dict(Counter(out).most_common())

    result = {"mechanism": a.mechanism, "epsilon": a.epsilon, "options": options,
              "draws": a.draws, "seed": a.seed, "emb": a.emb,
              "vocab_size": len(vocab_words),
              "vocab_order_matches_file": vocab_words == file_words,
              "counts": counts, "seconds": seconds,
              "words_per_second": len(words) * a.draws / seconds if seconds else None}
    with open(a.out, "w", encoding="utf-8") as fh:
        json.dump(result, fh, indent=1)
    print(f"{a.mechanism} eps={a.epsilon} {options}: {result['words_per_second']:.0f} words/s, "
          f"vocab {len(vocab_words)} (order matches file: {result['vocab_order_matches_file']})")


if __name__ == "__main__":
    main()
