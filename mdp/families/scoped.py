r"""Mechanisms whose guarantee covers groups of inputs, not every pair (CusText, SanText+).

Some word mechanisms in use are not metric DP over the whole vocabulary, by design: CusText
(Chen et al. 2023) maps each word to one of disjoint output sets, so words of different sets
have disjoint outputs; SanText+ (Yue et al. 2021) keeps a frequent word unchanged with
probability ``1 - p``. Their papers prove a guarantee among some inputs: a *scope*. A
:class:`ScopedMechanism` certifies exactly that, on exactly the matrix it samples:

* the matrix must be the family's closed form on these words and parameters, recomputed here
  (:meth:`ScopedMechanism.closed_form`): nothing a file says is trusted;
* for every scope ``S`` (a set of inputs with a distance ``D_S`` between them), the rows of
  ``S`` put no mass outside ``S``'s outputs and the square block ``M[S, S]`` passes the shared
  certification at ``epsilon`` for ``D_S`` (:func:`mdp.privacy.sampling.certified_sampler`,
  including the level of what the exact sampler draws);
* ``eps_tight`` on the whole space is measured as for any matrix, and is infinite when two
  scopes' outputs are disjoint: that is the common currency in which such a family is compared
  with metric-DP ones, and it says plainly that words of different scopes are told apart.

Inputs in no scope (SanText+'s non-sensitive words when ``p < 1``) have no guarantee, which
``stats["privacy"]["unprotected_inputs"]`` counts.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..errors import PrivacyError
from ..mechanism import Mechanism
from ..privacy.sampling import ExactSampler, certified_sampler

__all__ = ["Scope", "ScopedMechanism", "CLOSED_FORM_ATOL"]

#: Largest difference (in log-probability) accepted between a matrix and the family's closed
#: form recomputed on the same words (rounding of the same float64 formula on another machine).
CLOSED_FORM_ATOL = 1e-9


@dataclass(frozen=True)
class Scope:
    """Inputs among which a guarantee holds.

    Attributes
    ----------
    indices : ndarray of int
        The inputs (and the outputs their rows may use).
    distances : ndarray (len(indices), len(indices))
        The distance the guarantee is stated in (the space's, or 1 between distinct inputs for
        pure DP among them).
    description : str
    whole_space : bool
        The scope is every input with the space's own distance: plain metric DP.
    """

    indices: np.ndarray
    distances: np.ndarray
    description: str
    whole_space: bool = False


class ScopedMechanism(Mechanism):
    """A matrix mechanism certified on each of its scopes (module docstring).

    Subclasses implement :meth:`closed_form` (log-probabilities from ``space``, ``epsilon`` and
    ``params``) and :meth:`scopes`.
    """

    guarantee = "scoped"

    def closed_form(self) -> np.ndarray:
        """The family's log-probability matrix on this space and these parameters."""
        raise NotImplementedError

    def scopes(self) -> list[Scope]:
        """The groups of inputs the guarantee covers."""
        raise NotImplementedError

    def _certify(self, values: np.ndarray, repair: bool) -> np.ndarray:
        t0 = time.perf_counter()
        if not self._log:
            with np.errstate(divide="ignore"):
                values = np.log(values)
            self._log = True
        expected = self.closed_form()
        finite = np.isfinite(expected)
        if (not np.array_equal(finite, np.isfinite(values))
                or np.any(values[~finite] != -np.inf)
                or (finite.any() and np.abs(values[finite] - expected[finite]).max()
                    > CLOSED_FORM_ATOL)):
            raise PrivacyError(f"mechanism {self.name!r}: the matrix is not this family's on these "
                               "words and parameters (recomputed from them)")
        values = np.array(values, dtype=float)
        covered = np.zeros(self.space.n, dtype=bool)
        reports = []
        scopes = self.scopes()
        for scope in scopes:
            idx = np.asarray(scope.indices, dtype=np.int64)
            outside = np.ones(self.space.n, dtype=bool)
            outside[idx] = False
            if np.any(np.isfinite(values[np.ix_(idx, np.flatnonzero(outside))])):
                raise PrivacyError(f"mechanism {self.name!r}: rows of the scope "
                                   f"'{scope.description}' put mass outside it")
            try:
                cert, _ = certified_sampler(values[np.ix_(idx, idx)], scope.distances,
                                            self.epsilon, log=True, repair=False)
            except PrivacyError as exc:
                raise PrivacyError(f"mechanism {self.name!r}, scope '{scope.description}': "
                                   f"{exc}") from None
            covered[idx] = True
            reports.append({"description": scope.description, "size": int(len(idx)),
                            "measured_eps": cert.report["measured_eps"],
                            "sampling_eps": cert.report["sampling"].get("measured_eps")})
        values.setflags(write=False)
        self._sampler = ExactSampler(values, log=True)
        self.stats["privacy"] = {
            "guarantee": "scoped", "verified": True, "claimed_eps": self.epsilon,
            "covers_the_space": any(sc.whole_space and len(sc.indices) == self.space.n
                                    for sc in scopes),
            "scopes": len(reports), "largest_scope": max((r["size"] for r in reports), default=0),
            "scope_reports": reports[:20], "unprotected_inputs": int((~covered).sum()),
            "what": self.scope_statement(), "seconds": time.perf_counter() - t0}
        return values

    def scope_statement(self) -> str:
        """One sentence: what the guarantee covers."""
        return "epsilon-DP among the inputs of each scope"
