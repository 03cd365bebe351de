r"""What a word mechanism's epsilon means: how often a word survives, and how far it moves.

A location user reads "level 1.39 within 500 m"; a word user needs the same kind of statement.
Feyisetan, Balle, Drake and Diethe (WSDM 2020, section 5) measure a word mechanism's *plausible
deniability* from ``k`` draws of ``M(w)`` for each word ``w``:

* :math:`N_w`, how many of the ``k`` outputs are ``w`` itself (expected :math:`k\,M_{ww}`);
* :math:`S_w`, how many distinct words the ``k`` outputs hold (expected
  :math:`\sum_z 1 - (1 - M_{wz})^k`).

:func:`explain_words` reports both (with ``k = 1000`` by default), the probability that a word is
kept, and the expected distance it moves (its row loss), each at the 5th, 50th and 95th
percentile over the vocabulary's words, next to the epsilon that the nearest-neighbour distances
of the space make meaningful (:mod:`mdp.privacy.weak_epsilon`). A matrix mechanism's rows are
exact, so are the figures; the exponential mechanism without a matrix computes each sampled
word's row exactly; Madlib's rows come from its Monte Carlo matrix, and without a matrix it draws
``k`` outputs per sampled word, so its :math:`N_w` and :math:`S_w` are the counts of those draws
(the paper's own estimator).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from ..errors import ParameterError
from ..validation import check_int, check_rng
from .weak_epsilon import NO_PRIVACY_EXPONENT, nearest_neighbour_distances

__all__ = ["WordExplanation", "explain_words", "QUANTILES"]

#: Percentiles over words at which the figures are given.
QUANTILES = (0.05, 0.5, 0.95)


@dataclass(frozen=True)
class WordExplanation:
    """A word mechanism's plausible deniability (module docstring).

    Attributes
    ----------
    family : str
    n : int
        Words in the vocabulary.
    epsilon : float
        Per unit of the embedding's distance.
    draws : int
        ``k`` of :math:`N_w` and :math:`S_w`.
    kept, n_w, s_w, moved : dict[str, float]
        Probability a word is output unchanged, :math:`N_w`, :math:`S_w` and the expected
        distance moved, at the 5th / 50th / 95th percentile over words (keys ``"p5"``,
        ``"p50"``, ``"p95"``).
    median_nn_distance : float
        Median distance from a word to its nearest other word.
    meaningful_epsilon : float
        ``10 / median_nn_distance``: the epsilon at which a typical word and its nearest
        neighbour are told apart with odds ``exp(10)``.
    words_measured : int
        Words whose rows were measured (all of them for a matrix).
    method : str
        ``"exact rows"``, ``"rows of its Monte Carlo matrix"`` or ``"k draws per word"``.
    """

    family: str
    n: int
    epsilon: float
    draws: int
    kept: dict = field(default_factory=dict)
    n_w: dict = field(default_factory=dict)
    s_w: dict = field(default_factory=dict)
    moved: dict = field(default_factory=dict)
    median_nn_distance: float = float("nan")
    meaningful_epsilon: float = float("nan")
    words_measured: int = 0
    method: str = ""

    def sentence(self) -> str:
        """The median word in one sentence."""
        return (f"At epsilon = {self.epsilon:g}, the median word is kept with probability "
                f"{self.kept['p50']:.3g}: over {self.draws} uses it comes out as itself about "
                f"{self.n_w['p50']:.0f} times (N_w) among about {self.s_w['p50']:.0f} distinct "
                f"words (S_w), moving {self.moved['p50']:.3g} on average in the embedding's "
                f"distance.")

    def text(self) -> str:
        """The figures ``mdp explain`` prints for a word mechanism."""
        def row(label, d, fmt):
            return f"  {label:38s} " + "   ".join(f"{k}: {format(d[k], fmt)}" for k in d)

        lines = [self.sentence(),
                 f"{self.family} on {self.n} words, epsilon {self.epsilon:g}; percentiles over "
                 f"words ({self.method}, {self.words_measured} words measured):",
                 row("probability the word is kept", self.kept, ".3g"),
                 row(f"N_w (kept, of {self.draws} draws)", self.n_w, ".1f"),
                 row(f"S_w (distinct words, of {self.draws} draws)", self.s_w, ".1f"),
                 row("expected distance moved", self.moved, ".3g"),
                 f"nearest other word: median distance {self.median_nn_distance:.3g}; epsilon up "
                 f"to about {self.meaningful_epsilon:.3g} keeps a typical word and its nearest "
                 f"neighbour within odds exp({NO_PRIVACY_EXPONENT:g}) of each other "
                 "(Feyisetan et al. 2020 report N_w and S_w at k = 1000)"]
        return "\n".join(lines)

    def record(self) -> dict:
        """The figures as one JSON-ready record."""
        out = asdict(self)
        out["sentence"] = self.sentence()
        return out


def _quantiles(values: np.ndarray) -> dict[str, float]:
    return {f"p{round(100 * q)}": float(np.quantile(values, q)) for q in QUANTILES}


def _exact_rows(mech, idx: np.ndarray) -> np.ndarray:
    """Rows ``M[w]`` of the words ``idx`` (probabilities), from the matrix or, for the
    exponential mechanism without one, from its exact log-weights."""
    if getattr(mech, "kind", None) == "vocabulary":
        L = mech.log_rows(idx)
        L = L - L.max(axis=1, keepdims=True)
        P = np.exp(L)
        return P / P.sum(axis=1, keepdims=True)
    return np.asarray(mech.matrix, dtype=float)[idx]


def explain_words(mech, *, draws: int = 1000, words: int | None = None, rng=0) -> WordExplanation:
    """Plausible deniability of a mechanism on a word space (module docstring).

    Parameters
    ----------
    mech : Mechanism or VocabularyMechanism
        On a space with labels (words).
    draws : int
        ``k``, the uses of one word that :math:`N_w` and :math:`S_w` count over.
    words : int or None
        Words measured (a seeded sample); ``None``: every word of a matrix mechanism, 500 of a
        vocabulary-mode one.
    rng : None, int or Generator
        The sample of words, and Madlib's draws.

    Raises
    ------
    ParameterError
        A space without labels, or a bad ``draws`` / ``words``.
    """
    space = mech.space
    if getattr(space, "labels", None) is None:
        raise ParameterError("explaining a word mechanism needs a space of words (labels)")
    draws = check_int(draws, "draws", low=1)
    rng = check_rng(rng)
    vocabulary = getattr(mech, "kind", None) == "vocabulary"
    n = int(space.n)
    m = (min(n, 500) if vocabulary else n) if words is None else check_int(words, "words", low=1)
    m = min(m, n)
    idx = np.arange(n) if m == n else np.sort(rng.choice(n, size=m, replace=False))
    exact = not vocabulary or hasattr(mech, "log_rows")
    if exact:
        kept, s_w, moved = np.empty(m), np.empty(m), np.empty(m)
        for s in range(0, m, 64):
            block = idx[s:s + 64]
            P = _exact_rows(mech, block)
            D = (space.distances_from(block) if vocabulary
                 else np.asarray(space.distances, dtype=float)[block])
            kept[s:s + len(block)] = P[np.arange(len(block)), block]
            # 1 - (1 - p)^k without cancellation for tiny p
            s_w[s:s + len(block)] = (-np.expm1(draws * np.log1p(-np.minimum(P, 1.0)))).sum(axis=1)
            moved[s:s + len(block)] = (P * D).sum(axis=1)
        n_w = draws * kept
        method = ("rows of its Monte Carlo matrix" if getattr(mech, "kind", None) == "madlib"
                  else "exact rows")
    else:
        out = mech.sample_indices(np.repeat(idx, draws), rng).reshape(m, draws)
        same = out == idx[:, None]
        n_w = same.sum(axis=1).astype(float)
        kept = n_w / draws
        s_w = np.array([len(np.unique(r)) for r in out], dtype=float)
        moved = np.array([space.distances_from([w])[0][r].mean() for w, r in zip(idx, out,
                                                                                  strict=True)])
        method = f"{draws} draws per word"
    nn = nearest_neighbour_distances(space)
    median_nn = float(np.median(nn)) if nn.size else float("nan")
    return WordExplanation(family=mech.name, n=n, epsilon=float(mech.epsilon), draws=draws,
                           kept=_quantiles(kept), n_w=_quantiles(n_w), s_w=_quantiles(s_w),
                           moved=_quantiles(moved), median_nn_distance=median_nn,
                           meaningful_epsilon=NO_PRIVACY_EXPONENT / median_nn,
                           words_measured=m, method=method)
