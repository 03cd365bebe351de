r"""Vocabulary mode: mechanisms with an analytic guarantee, sampled without an ``n x n`` matrix.

Matrix mode builds the ``n x n`` transition matrix, certifies it and samples it exactly; its
cost is O(n^2) memory and up to O(n^3) time, out of reach for a real vocabulary (the 400,000
words of GloVe 6B would need 1.3 TB). The families whose guarantee is a theorem about the
sampling procedure (Madlib, Feyisetan et al. 2020; the exponential mechanism, McSherry and
Talwar 2007, and its weighted form, Imola et al. 2022 Proposition 1) need no matrix: Madlib
adds noise to the input's vector and releases the nearest word through an exact
nearest-neighbour index, the exponential mechanism computes each input's row of
log-probabilities when it is needed and samples it exactly (:func:`mdp.privacy.sampling.sample_log_row`).

Which mode
----------
:func:`plan_mode` makes the choice explicit: ``mode="matrix"`` or ``"vocabulary"`` forces one,
``"auto"`` (default) keeps matrix mode up to :attr:`ModeRule.max_matrix_n` points (certified
matrix, exact ``eps_tight``) and goes to vocabulary mode above it, or when the space has no
distance matrix (:class:`~mdp.spaces.vector_space.VectorSpace`). The plan and its reason are recorded
in ``stats["mode"]``.

Loss at scale
-------------
Without the matrix, ``L_q`` (Imola et al. 2022, eq. 11) is estimated by sampling inputs
(and, for Madlib, outputs): :func:`estimate_loss` returns a :class:`LossEstimate` with a
confidence interval: the q-quantile's distribution-free order-statistic interval (binomial
ranks) over the sampled inputs, widened by each row loss's own normal interval.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from ..errors import FileFormatError, ParameterError
from ..io import atomic_write
from ..privacy.provenance import (
    SOURCE_FIELD,
    WORDS_FIELD,
    check_points_source,
    embedding_reference,
    points_from_embedding,
    source_metadata,
)
from ..spaces.vector_space import VectorSpace
from ..validation import check_epsilon, check_int, check_probability, check_rng

__all__ = ["ModeRule", "ModePlan", "plan_mode", "LossEstimate", "estimate_loss",
           "VocabularyMechanism", "MODES", "VOCABULARY_FORMAT"]

#: Values of ``mode=``.
MODES = ("auto", "matrix", "vocabulary")
#: ``format`` field of a vocabulary-mode file's metadata.
VOCABULARY_FORMAT = "vocabulary-1"


@dataclass(frozen=True)
class ModeRule:
    """When ``mode="auto"`` chooses matrix mode.

    Attributes
    ----------
    max_matrix_n : int
        Largest space built as a matrix by default. At 2,000 points Madlib's estimated matrix
        takes about a minute (n = 1,000: 6.9 s; n = 5,000: over 5 minutes), and a matrix not
        of the exponential form on Euclidean points is certified by the ``O(n^3)`` pass. The
        exponential mechanism's matrix is certified in ``O(n^2 d)`` on Euclidean points
        (:mod:`mdp.privacy.exponential_form`; n = 5,000: build and certification 3.8 s, 1.4 GB), and
        ``mode="matrix"`` gives it there.
    """

    max_matrix_n: int = 2000


@dataclass(frozen=True)
class ModePlan:
    """The mode a build uses and why (recorded in ``stats["mode"]``)."""

    mode: str
    requested: str
    reason: str

    def as_dict(self) -> dict:
        return asdict(self)


def plan_mode(space, requested: str, *, family: str, has_vocabulary: bool,
              rule: ModeRule | None = None) -> ModePlan:
    """Choose matrix or vocabulary mode for ``family`` on ``space``.

    Raises
    ------
    ParameterError
        An unknown ``mode``, vocabulary mode for a family without one, or matrix mode on a
        vector space too large for a matrix.
    """
    rule = rule or ModeRule()
    if requested not in MODES:
        raise ParameterError(f"mode must be one of {MODES}, got {requested!r}")
    n = space.n
    matrix_space = not isinstance(space, VectorSpace)
    if requested == "vocabulary":
        if not has_vocabulary:
            raise ParameterError(f"mechanism {family!r} has no vocabulary mode: its guarantee is "
                                 "checked on its matrix (families whose guarantee is analytic "
                                 "have one: `mdp list --vocabulary` names them)")
        return ModePlan("vocabulary", requested, "asked for by name")
    if requested == "matrix":
        if not matrix_space and n > 10 * rule.max_matrix_n:
            raise ParameterError(f"mode='matrix' on {n} points needs an {n} x {n} matrix "
                                 f"({8 * n * n / 2**30:.3g} GiB); use mode='vocabulary' or 'auto'")
        return ModePlan("matrix", requested, "asked for by name")
    euclidean_points = (not matrix_space or (getattr(space, "points", None) is not None
                                             and getattr(space, "metric", None) == "euclidean"))
    if has_vocabulary and not euclidean_points:
        return ModePlan("matrix", requested, "vocabulary mode needs Euclidean points; this "
                                             f"space has metric {space.metric!r}")
    if not has_vocabulary:
        if not matrix_space and n > 10 * rule.max_matrix_n:
            raise ParameterError(f"mechanism {family!r} has only a matrix mode, which on {n} "
                                 f"points needs {8 * n * n / 2**30:.3g} GiB; families with a "
                                 "vocabulary mode: `mdp list --vocabulary` names them")
        return ModePlan("matrix", requested, "the family has only a matrix mode")
    if n > rule.max_matrix_n:
        return ModePlan("vocabulary", requested,
                        f"n = {n} is above {rule.max_matrix_n}, the largest space built as a "
                        "matrix by default (mode='matrix' forces one)")
    return ModePlan("matrix", requested,
                    f"n = {n} <= {rule.max_matrix_n}: the matrix is certified and eps_tight is "
                    "exact (mode='vocabulary' samples without it)")


# -- loss estimates -------------------------------------------------------------------------------
@dataclass(frozen=True)
class LossEstimate:
    """An estimate of ``L_q`` (or of the worst-case loss) with its confidence interval.

    Attributes
    ----------
    value, low, high : float
        Estimate and interval.
    q : float or None
        Quantile (``None``: worst case, estimated by the largest sampled row: a lower
        estimate, ``high`` is then ``inf``).
    confidence : float
    inputs : int
        Inputs whose row loss was measured.
    outputs_per_input : int or None
        Output draws per input (``None``: each row loss is exact).
    method : str
    """

    value: float
    low: float
    high: float
    q: float | None
    confidence: float
    inputs: int
    outputs_per_input: int | None
    method: str

    def __float__(self) -> float:
        return self.value


def estimate_loss(row_losses: Callable, n: int, q: float | None, *, inputs: int = 2000,
                  confidence: float = 0.95, rng=None) -> LossEstimate:
    r"""Estimate ``L_q`` from the row losses of sampled inputs.

    Parameters
    ----------
    row_losses : callable ``(idx, rng) -> (mean, std_error, outputs_per_input)``
        Row loss of each input of ``idx`` (``std_error`` 0 and ``outputs_per_input`` None
        when exact).
    n : int
        Number of inputs.
    q : float or None
    inputs : int
        Inputs sampled uniformly without replacement (all of them when ``inputs >= n``).
    confidence : float

    Notes
    -----
    With ``m`` sampled inputs and sorted estimates, the q-quantile lies between the order
    statistics of ranks ``l = F^{-1}(a/2)`` and ``h = F^{-1}(1 - a/2) + 1`` of
    ``Binomial(m, q)`` with probability ``>= 1 - a`` (distribution-free; Hahn and Meeker
    1991, section 5.2); each row loss adds its own normal interval, so the interval is
    ``[sorted(lower)[l], sorted(upper)[h]]``.
    """
    from scipy import stats as st  # on use: importing scipy.stats takes half a second

    inputs = check_int(inputs, "inputs", low=1)
    confidence = check_probability(confidence, "confidence", inclusive_low=False,
                                   inclusive_high=False)
    rng = check_rng(rng)
    m = min(inputs, n)
    idx = np.arange(n) if m == n else rng.choice(n, size=m, replace=False)
    mean, se, k = row_losses(idx, rng)
    z = float(st.norm.ppf(0.5 + confidence / 2))
    lo, hi = mean - z * se, mean + z * se
    if q is None:
        top = int(np.argmax(mean))
        exact_all = m == n and k is None
        return LossEstimate(float(mean[top]), float(lo.max()),
                            float(hi.max()) if exact_all else float("inf"), None, confidence, m, k,
                            "largest row loss over all inputs" if exact_all else
                            "largest row loss over sampled inputs (a lower estimate)")
    q = check_probability(q, "q")
    value = float(np.quantile(mean, q))
    if m == n:
        return LossEstimate(value, float(np.quantile(lo, q)), float(np.quantile(hi, q)), q,
                            confidence, m, k, "every input; row losses "
                            + ("exact" if k is None else f"from {k} outputs each"))
    a = 1 - confidence
    l_rank = int(st.binom.ppf(a / 2, m, q))
    h_rank = int(st.binom.ppf(1 - a / 2, m, q)) + 1
    low = float(np.sort(lo)[max(l_rank - 1, 0)])
    high = float(np.sort(hi)[h_rank - 1]) if h_rank <= m else float(np.max(hi))
    return LossEstimate(value, low, high, q, confidence, m, k,
                        f"{m} sampled inputs (order-statistic interval); row losses "
                        + ("exact" if k is None else f"from {k} outputs each"))


# -- mechanisms -----------------------------------------------------------------------------------
class VocabularyMechanism:
    """A mechanism sampled without a matrix (base class of the vocabulary-mode families).

    Subclasses implement :meth:`_prepare` (everything the guarantee depends on, recomputed
    from the points and ``epsilon``: a build and a load run the same code),
    :meth:`sample_indices` and :meth:`_row_losses`.

    Attributes
    ----------
    space : VectorSpace
    epsilon : float
    name : str
    params : dict
    stats : dict
        ``privacy`` (the analytic guarantee and what it covers), ``mode`` (the plan).
    """

    kind = "vocabulary"
    guarantee = "analytic"
    #: Inputs sampled by :meth:`loss_estimate` unless told (subclasses whose rows cost more
    #: sample fewer).
    default_inputs = 2000

    def __init__(self, space: VectorSpace, epsilon: float, name: str, params: dict | None = None,
                 stats: dict | None = None):
        if not isinstance(space, VectorSpace):
            raise ParameterError(f"space must be a VectorSpace, got {type(space).__name__}")
        self.space = space
        self.epsilon = check_epsilon(epsilon)
        self.name = str(name)
        self.params = dict(params or {})
        self.stats = dict(stats or {})
        self.stats.pop("privacy", None)
        self.stats["privacy"] = self._prepare()

    # -- subclass hooks ---------------------------------------------------------------------------
    def _prepare(self) -> dict:
        raise NotImplementedError

    def sample_indices(self, idx: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One output index per input index (fresh randomness per input)."""
        raise NotImplementedError

    def _row_losses(self, idx: np.ndarray, rng: np.random.Generator):
        raise NotImplementedError

    def _arrays(self) -> dict:
        """Extra arrays saved with the mechanism (e.g. user weights)."""
        return {}

    # -- sampling ---------------------------------------------------------------------------------
    def sample(self, x, *, rng=None):
        """Privatize ``x`` (labels or indices; scalar in, scalar out), as :meth:`mdp.Mechanism.sample`."""
        return self.space.sample_with(x, self.sample_indices, check_rng(rng))

    # -- measurements -----------------------------------------------------------------------------
    def loss_estimate(self, q: float | None = None, *, inputs: int | None = None,
                      confidence: float = 0.95, rng=None) -> LossEstimate:
        """``L_q`` (or the worst case) estimated by sampling (:func:`estimate_loss`;
        ``inputs`` defaults to :attr:`default_inputs`)."""
        return estimate_loss(self._row_losses, self.space.n, q,
                             inputs=self.default_inputs if inputs is None else inputs,
                             confidence=confidence, rng=rng)

    def loss(self, q: float | None = None, *, rng=0) -> float:
        """The estimate of :meth:`loss_estimate` (seeded: the same number on every call)."""
        return self.loss_estimate(q, rng=rng).value

    def eps_tight(self, delta: float = 0.0) -> float:
        """Not available without the matrix (the analytic level is ``epsilon``).

        Raises
        ------
        ParameterError
            Always; build in matrix mode (``mode="matrix"``) on a space small enough.
        """
        raise ParameterError(
            f"eps_tight needs the transition matrix; this {self.name!r} mechanism is in "
            f"vocabulary mode (n = {self.space.n}), whose guarantee is the analytic pure level "
            f"epsilon = {self.epsilon:g} (stats['privacy']); build with mode='matrix' on a "
            "smaller space to measure eps_tight")

    # -- persistence ------------------------------------------------------------------------------
    def save(self, path: str | os.PathLike) -> Path:
        """Save the space and metadata to one ``.npz`` (uncompressed), atomically. Loading
        recomputes everything the guarantee depends on.

        A space made from an installed named embedding stores no vectors: the file names the
        embedding and its words (:func:`mdp.privacy.provenance.embedding_reference`: the first
        ``n`` words store nothing more, other words their labels), and loading takes the vectors
        from the embedding, so they cannot have been altered. Other spaces store their points
        and labels.
        """
        meta = {"format": VOCABULARY_FORMAT, "mode": "vocabulary", "name": self.name,
                "epsilon": self.epsilon, "params": _jsonable_params(self.params),
                "stats": {k: v for k, v in self.stats.items() if k != "privacy"},
                "metric": "euclidean", **source_metadata(self.space)}
        reference = embedding_reference(self.space)
        arrays = {**self._arrays()}
        if reference is None:
            arrays["points"] = np.asarray(self.space.points)
        else:
            meta.update(reference)
        if self.space.labels is not None and (reference or {}).get(WORDS_FIELD) != "first":
            arrays["labels"] = np.asarray(self.space.labels).astype(str)
        arrays["metadata"] = np.array(json.dumps(meta, default=str))
        return atomic_write(path, lambda fh: np.savez(fh, **arrays))

    @classmethod
    def from_file(cls, path: Path, data: dict, meta: dict) -> VocabularyMechanism:
        """Re-create a saved mechanism: the space from the stored points and labels, the
        guarantee recomputed by the constructor (nothing the file says about it is used)."""
        if "points" in data:
            points, labels = data["points"], data.get("labels")
        else:
            labels, points = points_from_embedding(path, meta, data.get("labels"))
        try:
            space = VectorSpace(points, labels=labels)
        except ParameterError as exc:
            raise FileFormatError(path, f"invalid points or labels ({exc})") from None
        if "points" in data:
            check_points_source(path, space, meta)
        else:
            space.source = meta[SOURCE_FIELD]       # the embedding's own vectors
        params = meta.get("params") or {}
        if not isinstance(params, dict):
            raise FileFormatError(path, f"params must be an object, got {params!r}")
        stats = meta.get("stats") or {}
        stats = dict(stats) if isinstance(stats, dict) else {}
        return cls.restore(space, meta["epsilon"], meta["name"], params, stats, data, path)

    @classmethod
    def restore(cls, space, epsilon, name, params, stats, data, path):
        """Subclasses re-create extra state from ``data`` (default: none)."""
        return cls(space, epsilon, name, params, stats)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(name={self.name!r}, n={self.space.n}, "
                f"epsilon={self.epsilon:.4g}, mode=vocabulary, "
                f"privacy={self.stats['privacy'].get('guarantee')})")


def _jsonable_params(params: dict) -> dict:
    out = {}
    for k, v in params.items():
        if isinstance(v, np.ndarray):
            out[k] = "<array saved beside the metadata>"
        elif isinstance(v, (str, int, float, bool)) or v is None:
            out[k] = v
        else:
            out[k] = repr(v)
    return out
