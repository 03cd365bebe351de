"""The metric spaces of the experiments (Imola et al. 2022, section 5.1).

========================  =====================================================================
family                    space of size n
========================  =====================================================================
``glove``                 n words of GloVe 6B 50d (embedded 10k-word slice), clustered sampling
                          (:func:`text.sample_vocabulary`, seed = the experiment seed)
``fasttext``              n words of a fastText model trained with gensim on gensim's
                          ``lee_background.cor`` news corpus (:func:`text.fasttext.train_lee_fasttext`;
                          the paper used Facebook's pre-trained fastText, see the README), same
                          clustered sampling
``geolife``               the n most popular 0.005-degree Geolife cells of Beijing
                          (:func:`geo.popular.popular_cells`, haversine km; no randomness)
========================  =====================================================================

A space is named ``FAMILY-N`` (e.g. ``glove-200``). Every configuration stores
:func:`fingerprint` of its space, so a stored result is reused only for the very same distances.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache

import numpy as np

from mdp.io import shared_data_dir
from mdp.spaces.metric_space import MetricSpace
from mdp.validation import check_int

__all__ = ["FAMILIES", "parse_name", "experiment_space", "fingerprint", "space_kind", "GEOLIFE_FILE"]

FAMILIES: dict[str, str] = {
    "glove": "text",
    "fasttext": "text",
    "geolife": "geo",
}

GEOLIFE_FILE = "geolife_beijing_cells_0p005.npz"


def parse_name(name: str) -> tuple[str, int]:
    """``"glove-200"`` -> ``("glove", 200)``; unknown families raise with the valid ones."""
    if not isinstance(name, str):
        raise TypeError(f"space name must be a string, got {type(name).__name__}")
    family, _, n = name.rpartition("-")
    if family not in FAMILIES:
        raise ValueError(f"space name must be FAMILY-N with FAMILY in {sorted(FAMILIES)}, got {name!r}")
    try:
        size = int(n)
    except ValueError:
        raise ValueError(f"space name must end with its size, got {name!r}") from None
    check_int(size, "space size", low=2)
    return family, size


def space_kind(name: str) -> str:
    """``"text"`` or ``"geo"``."""
    return FAMILIES[parse_name(name)[0]]


@lru_cache(maxsize=2)
def _glove():
    from text import load_glove

    return load_glove()


@lru_cache(maxsize=4)
def _fasttext(seed: int):
    from text.fasttext import train_lee_fasttext

    return train_lee_fasttext(seed=seed)


@lru_cache(maxsize=32)
def experiment_space(name: str, seed: int = 0) -> MetricSpace:
    """The space ``FAMILY-N`` (cached per process).

    Parameters
    ----------
    name : str
        ``glove-N``, ``fasttext-N`` or ``geolife-N``.
    seed : int
        Vocabulary sampling seed (text); the fastText model is always trained with seed 0 so that
        every vocabulary comes from the same embedding. Ignored for Geolife.
    """
    from text import sample_vocabulary

    family, n = parse_name(name)
    seed = check_int(seed, "seed", low=0)
    if family == "glove":
        return sample_vocabulary(_glove(), n, rng=seed)
    if family == "fasttext":
        return sample_vocabulary(_fasttext(0), n, rng=seed)
    from geo.popular import popular_cells

    return popular_cells(shared_data_dir() / GEOLIFE_FILE, n=n)


def fingerprint(space: MetricSpace) -> str:
    """First 16 hex digits of SHA-256 over the distances (float64 bytes) and the labels."""
    h = hashlib.sha256(np.ascontiguousarray(space.distances, dtype=np.float64).tobytes())
    if space.labels is not None:
        h.update("\x1f".join(map(str, np.asarray(space.labels).tolist())).encode("utf-8"))
    return h.hexdigest()[:16]
