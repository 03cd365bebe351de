r"""CusText (Chen, Mo, Wang, Chen, Nie, Wang, Cui, ACL Findings 2023): customised output sets.

CusText gives each word a small output set instead of the whole vocabulary. The *customised
mapping* (the paper's Algorithm 1) walks the words in frequency order (here the space's order,
as for SanText+: :mod:`mdp.families.santext`); each word not yet assigned takes its ``k`` nearest
unassigned words (itself included) as a new set, and every word of the set maps to it (the last
set holds what remains). A word :math:`x` of set :math:`S` is replaced by :math:`y \in S` with

.. math:: \Pr[y \mid x] \propto \exp\Big(\frac{\epsilon}{2}\, u(x, y)\Big), \qquad
          u(x, y) = -\frac{d(x, y) - \min_{y' \in S} d(x, y')}
                         {\max_{y' \in S} d(x, y') - \min_{y' \in S} d(x, y')} \in [-1, 0]

(``u = 0`` throughout when every word of the set is at the same distance).

Guarantee. The score's range is 1, so for ``x, x'`` of the same set every probability moves by
at most :math:`e^{\epsilon}`: pure ``epsilon``-DP among the words of each set (the paper's
theorem), certified here per set on the matrix (:mod:`mdp.families.scoped`, distance 1 between
distinct words of a set). Words of different sets have disjoint outputs, so the mechanism is
*not* metric DP on the vocabulary: ``eps_tight`` on the space is infinite, which the comparison
at equal ``eps_tight`` reports instead of hiding. (Some implementations, pyPANTERA's among them,
give every word its own ``k`` nearest words as the set; then no two words share a set and there
is no guarantee between any two words.)
"""

from __future__ import annotations

import numpy as np

from ..candidate import Candidate
from ..errors import ParameterError
from ..params import Param
from ..registry import register
from ..spaces.metric_space import MetricSpace
from .scoped import Scope, ScopedMechanism

__all__ = ["CusTextMechanism", "customized_sets", "custext_log_matrix", "resolve_k", "DEFAULT_K"]

#: Default size ``k`` of an output set (the paper's experiments use 20).
DEFAULT_K = 20


def customized_sets(distances, k: int) -> list[np.ndarray]:
    """The paper's customised mapping: disjoint sets of ``k`` words (module docstring).

    Ties in distance are broken by index (a stable sort), so the sets are a deterministic
    function of the distances.
    """
    D = np.asarray(distances, dtype=float)
    n = D.shape[0]
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ParameterError(f"k must be an integer >= 1, got {k!r}")
    if k > n:
        raise ParameterError(f"k = {k} is larger than the vocabulary ({n} words)")
    free = np.ones(n, dtype=bool)
    sets = []
    for w in range(n):
        if not free[w]:
            continue
        cand = np.flatnonzero(free)
        order = cand[np.argsort(D[w, cand], kind="stable")]
        # w itself first (distance 0; a duplicate of w at distance 0 may share the lead)
        members = order[:k]
        if w not in members:
            members = np.concatenate([[w], members[:k - 1]])
        free[members] = False
        sets.append(np.sort(members))
    return sets


def resolve_k(k: int | None, n: int) -> int:
    """``k`` as given, or :data:`DEFAULT_K` capped at ``n`` when ``None``."""
    return min(DEFAULT_K, n) if k is None else k


def custext_log_matrix(distances, epsilon: float, k: int) -> tuple[np.ndarray, list[np.ndarray]]:
    """Log-probabilities of CusText and its sets (module docstring)."""
    D = np.asarray(distances, dtype=float)
    n = D.shape[0]
    sets = customized_sets(D, k)
    L = np.full((n, n), -np.inf)
    for S in sets:
        block = D[np.ix_(S, S)]
        lo = block.min(axis=1, keepdims=True)
        span = block.max(axis=1, keepdims=True) - lo
        u = np.zeros_like(block)
        np.divide(-(block - lo), span, out=u, where=span > 0)
        logits = 0.5 * epsilon * u
        logits -= np.log(np.exp(logits - logits.max(axis=1, keepdims=True)).sum(
            axis=1, keepdims=True)) + logits.max(axis=1, keepdims=True)
        L[np.ix_(S, S)] = logits
    return L, sets


class CusTextMechanism(ScopedMechanism):
    """CusText with each output set certified (module docstring)."""

    def _sets(self) -> list[np.ndarray]:
        if getattr(self, "_cached_sets", None) is None:
            self._cached_sets = customized_sets(self.space.distances,
                                                resolve_k(self.params.get("k"), self.space.n))
        return self._cached_sets

    def closed_form(self) -> np.ndarray:
        L, self._cached_sets = custext_log_matrix(self.space.distances, self.epsilon,
                                                  resolve_k(self.params.get("k"), self.space.n))
        return L

    def scopes(self) -> list[Scope]:
        out = []
        for i, S in enumerate(self._sets()):
            D1 = np.ones((len(S), len(S))) - np.eye(len(S))
            out.append(Scope(S, D1, f"output set {i} ({len(S)} words)"))
        return out

    def scope_statement(self) -> str:
        return ("epsilon-DP among the words of each output set (distance 1 between any two); "
                "words of different sets have disjoint outputs")


@register("custext",
          description="CusText: exponential mechanism within disjoint sets of k nearest words "
                      "(Chen et al. 2023); DP within a set, no guarantee across sets",
          display_name="CusText", domain="words", guarantee="scoped",
          mechanism_class=CusTextMechanism,
          params={"k": Param("int", None, low=1, allow_none=True,
                             help="size of each output set, at most the vocabulary's size "
                                  f"(None: {DEFAULT_K}, or n when smaller)")})
def build_custext(space: MetricSpace, epsilon: float, *, rng=None, k: int | None = None) -> Candidate:
    """CusText on ``space``: :func:`custext_log_matrix` (``k`` larger than ``n`` is refused;
    ``None``: :data:`DEFAULT_K` or ``n`` when smaller)."""
    L, sets = custext_log_matrix(space.distances, epsilon, resolve_k(k, space.n))
    return Candidate(log_matrix=L, stats={"output_sets": len(sets),
                                          "smallest_set": int(min(len(S) for S in sets))})
