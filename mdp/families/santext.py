r"""SanText and SanText+ (Yue, Du, Wang, Li, Sun, Chow, ACL Findings 2021).

SanText replaces each word by one drawn from the exponential mechanism on the embedding's
Euclidean distance, :math:`\Pr[y \mid x] \propto e^{-\epsilon d(x, y)/2}`: the same matrix as
:mod:`mdp.families.exponential`. SanText+ splits the vocabulary by frequency: the fraction ``w``
of least frequent words are *sensitive* (:math:`V_S`), outputs are drawn from :math:`V_S` only,
and a non-sensitive word is kept unchanged with probability :math:`1 - p`:

.. math:: \Pr[y \mid x] = \mathbb{1}[x \notin V_S]\,(1 - p)\,\mathbb{1}[y = x]
          + \big(p\,\mathbb{1}[x \notin V_S] + \mathbb{1}[x \in V_S]\big)
          \frac{\mathbb{1}[y \in V_S]\, e^{-\epsilon d(x, y)/2}}{\sum_{y' \in V_S} e^{-\epsilon d(x, y')/2}}.

The space's order is taken as the frequency order, so :math:`V_S` is the last ``ceil(w n)``
words: the most frequent come first in ``glove:full``, ``text.load_glove(n)`` and a
``text.word_space(emb, words)`` given in frequency order (GloVe stores its words so), while a
sampled ``glove:N`` vocabulary is in sampling order (its split is then a random one).

Guarantee. With ``w = 1`` (the default: SanText) or ``p = 1`` every row is the exponential
mechanism restricted to :math:`V_S`, pure ``epsilon``-mDP for the space's distance (Imola et al.
2022, Proposition 1, with weight 0 outside :math:`V_S`); one scope holds every word. With
``w < 1`` and ``p < 1`` the paper's guarantee covers the sensitive words only: a kept word is
an output no other input produces, so ``eps_tight`` on the whole vocabulary is infinite, and the
certified scope is :math:`V_S` (:mod:`mdp.families.scoped`). The safe default ``p = 1`` keeps
no word unprotected; the paper's experiments use ``w = 0.9, p = 0.3``, which must be asked for.
"""

from __future__ import annotations

import math

import numpy as np

from ..candidate import Candidate
from ..errors import ParameterError
from ..params import Param
from ..registry import register, register_vocabulary
from ..spaces.metric_space import MetricSpace
from ..validation import check_probability
from .analytic_rows import ExponentialRows
from .exponential import exponential_log_matrix
from .scoped import Scope, ScopedMechanism

__all__ = ["SanTextMechanism", "SanTextRows", "santext_log_matrix", "sensitive_words"]


def sensitive_words(n: int, fraction: float) -> np.ndarray:
    """Indices of the ``ceil(fraction n)`` least frequent words (the last ones), at least one."""
    k = min(n, max(1, math.ceil(fraction * n - 1e-9)))
    return np.arange(n - k, n)


def santext_log_matrix(distances, epsilon: float, fraction: float = 1.0, p: float = 1.0) -> np.ndarray:
    """Log-probabilities of SanText+ (module docstring; ``fraction = 1``: SanText)."""
    D = np.asarray(distances, dtype=float)
    n = D.shape[0]
    S = sensitive_words(n, fraction)
    L = np.full((n, n), -np.inf)
    L[:, S] = exponential_log_matrix(D[:, S], epsilon)
    if len(S) < n and p < 1:
        rest = np.arange(n - len(S))
        with np.errstate(divide="ignore"):
            L[rest] += np.log(p)
        L[rest, rest] = math.log1p(-p)
    return L


class SanTextMechanism(ScopedMechanism):
    """SanText(+) with its scope certified (module docstring)."""

    def _options(self) -> tuple[float, float]:
        return (check_probability(self.params.get("sensitive_fraction", 1.0), "sensitive_fraction",
                                  inclusive_low=False),
                check_probability(self.params.get("p", 1.0), "p"))

    def closed_form(self) -> np.ndarray:
        fraction, p = self._options()
        return santext_log_matrix(self.space.distances, self.epsilon, fraction, p)

    def scopes(self) -> list[Scope]:
        fraction, p = self._options()
        S = sensitive_words(self.space.n, fraction)
        if len(S) == self.space.n or p == 1:
            idx = np.arange(self.space.n)
            return [Scope(idx, self.space.distances, "every word", whole_space=True)]
        return [Scope(S, self.space.distances[np.ix_(S, S)], "the sensitive words")]

    def scope_statement(self) -> str:
        fraction, p = self._options()
        if fraction >= 1 or p == 1:
            return "epsilon-mDP between every pair of words (the space's distance)"
        return (f"epsilon-mDP among the sensitive words (the {fraction:.0%} least frequent); a "
                f"non-sensitive word is released unchanged with probability {1 - p:g}")


@register("santext",
          description="SanText(+): exponential mechanism on the sensitive words, non-sensitive "
                      "words kept with probability 1 - p (Yue et al. 2021)",
          display_name="SanText", domain="words", guarantee="scoped",
          mechanism_class=SanTextMechanism,
          params={"sensitive_fraction": Param("float", 1.0, low=0.0, high=1.0, low_open=True,
                                              help="fraction w of least frequent words that are "
                                                   "sensitive (1: SanText)"),
                  "p": Param("float", 1.0, low=0.0, high=1.0,
                             help="probability that a non-sensitive word is replaced (1: none "
                                  "is released unchanged)")})
def build_santext(space: MetricSpace, epsilon: float, *, rng=None, sensitive_fraction: float = 1.0,
                  p: float = 1.0) -> Candidate:
    """SanText (``sensitive_fraction=1``) or SanText+ on ``space``: :func:`santext_log_matrix`."""
    L = santext_log_matrix(space.distances, epsilon, sensitive_fraction, p)
    return Candidate(log_matrix=L, stats={"sensitive_words": int(len(sensitive_words(
        space.n, sensitive_fraction)))})


class SanTextRows(ExponentialRows):
    """SanText in vocabulary mode (every word sensitive): the exponential mechanism's rows,
    computed when needed and sampled exactly. SanText+ (``sensitive_fraction < 1``) has only a
    matrix mode: its scope is certified on the matrix."""

    def _prepare(self) -> dict:
        if check_probability(self.params.get("sensitive_fraction", 1.0), "sensitive_fraction",
                             inclusive_low=False) < 1.0:
            raise ParameterError("santext with sensitive_fraction < 1 (SanText+) has only a matrix "
                                 "mode: its guarantee covers the sensitive words and is certified "
                                 "on the matrix; use a smaller vocabulary or sensitive_fraction=1")
        self.params.pop("Y", None)
        return super()._prepare()

    @classmethod
    def restore(cls, space, epsilon, name, params, stats, data, path):
        return cls(space, epsilon, name, params, stats)


register_vocabulary("santext", SanTextRows)
