"""The :class:`Mechanism` object: a verified transition matrix on a metric space.

A mechanism is built once (through :func:`mdp.build`), checked by
:func:`mdp.verification.certify`, and then sampled from, measured and saved. Its file format is
one ``.npz`` archive holding the matrix, the space (distances, labels, points) and a JSON
metadata record; files are written atomically (temporary file + ``os.replace``).
"""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path

import numpy as np

from . import accounting
from .io import atomic_write
from .space import MetricSpace
from .validation import check_rng

__all__ = ["Mechanism", "load", "FORMAT_VERSION"]

FORMAT_VERSION = 1
_KINDS: dict[str, type[Mechanism]] = {}


def _jsonable(obj):
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, float) and not np.isfinite(obj):
        return str(obj)
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    return repr(obj)


class Mechanism:
    """A row-stochastic transition matrix on a :class:`~mdp.MetricSpace`.

    ``matrix[u, w] = Pr[M(u) = w]``. Built by :func:`mdp.build`, which verifies the claimed
    privacy on the final matrix (see :mod:`mdp.verification`) and records the outcome in
    ``stats["privacy"]``.

    Attributes
    ----------
    matrix : ndarray (n, n)
    space : MetricSpace
    epsilon : float
        The requested (claimed) mDP level.
    name : str
        Registry name of the family.
    params : dict
        Parameters the builder used.
    stats : dict
        Build statistics: ``build_seconds``, ``privacy`` and, for LP mechanisms, LP sizes.
    """

    kind = "matrix"

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        _KINDS[cls.kind] = cls

    def __init__(self, matrix, space: MetricSpace, epsilon: float, name: str,
                 params: dict | None = None, stats: dict | None = None):
        M = np.asarray(matrix, dtype=float)
        if M.shape != (space.n, space.n):
            raise ValueError(f"matrix must have shape ({space.n}, {space.n}), got {M.shape}")
        M = M.copy()
        M.setflags(write=False)
        self.matrix = M
        self.space = space
        self.epsilon = float(epsilon)
        self.name = name
        self.params = dict(params or {})
        self.stats = dict(stats or {})
        self._cdf = None

    # -- sampling -------------------------------------------------------------------------------
    def sample_indices(self, idx: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Draw one output index per input index (vectorised inverse-CDF sampling)."""
        if self._cdf is None:
            cdf = np.cumsum(self.matrix, axis=1)
            cdf[:, -1] = np.inf  # rows sum to 1 up to rounding; never fall off the end
            self._cdf = cdf
        u = rng.random(len(idx))
        out = np.empty(len(idx), dtype=np.int64)
        for start in range(0, len(idx), 4096):
            rows = self._cdf[idx[start:start + 4096]]
            out[start:start + 4096] = np.sum(rows < u[start:start + 4096, None], axis=1)
        return out

    def sample(self, x, *, rng=None):
        """Privatize ``x``: one output per input.

        Parameters
        ----------
        x : label, index, or array-like of them
            Inputs; labels when the space has labels (indices are accepted too).
        rng : None, int or numpy.random.Generator
            Source of randomness (keyword-only).

        Returns
        -------
        A label (scalar input) or an array of labels; indices when the space has no labels.

        Raises
        ------
        KeyError
            For a label that is not in the space.
        """
        rng = check_rng(rng)
        idx = self.space.index_of(x)
        out = self.sample_indices(np.atleast_1d(idx), rng)
        if np.ndim(idx) == 0:
            return self.space.label_of(int(out[0]))
        return self.space.label_of(out)

    # -- measurements ---------------------------------------------------------------------------
    def row_losses(self) -> np.ndarray:
        """Expected distance of each input's output (seed eq. 3)."""
        return accounting.row_losses(self.matrix, self.space.distances)

    def loss(self, q: float | None = None) -> float:
        """Worst-case loss (``q=None``) or the q-quantile of row losses (seed eq. 1, 11)."""
        return accounting.loss(self.matrix, self.space.distances, q)

    def eps_tight(self, delta: float = 0.0) -> float:
        """Exact ``eps_tight`` of the matrix at ``delta`` (seed eq. 9-10)."""
        return accounting.eps_tight(self.matrix, self.space.distances, delta)

    # -- persistence ----------------------------------------------------------------------------
    def _metadata(self) -> dict:
        return {"format_version": FORMAT_VERSION, "kind": self.kind, "name": self.name,
                "epsilon": self.epsilon, "params": _jsonable(self.params),
                "stats": _jsonable(self.stats), "metric": self.space.metric}

    def save(self, path: str | os.PathLike) -> Path:
        """Save to one ``.npz`` file (matrix, space, JSON metadata), atomically."""
        arrays = {"matrix": np.asarray(self.matrix), "distances": np.asarray(self.space.distances),
                  "metadata": np.array(json.dumps(self._metadata()))}
        if self.space.labels is not None:
            arrays["labels"] = np.asarray(self.space.labels).astype(str)
        if self.space.points is not None:
            arrays["points"] = np.asarray(self.space.points)
        return atomic_write(path, lambda fh: np.savez_compressed(fh, **arrays))

    @classmethod
    def _from_saved(cls, matrix, space, meta: dict) -> Mechanism:
        return cls(matrix, space, meta["epsilon"], meta["name"], meta.get("params"), meta.get("stats"))

    def __repr__(self) -> str:
        priv = self.stats.get("privacy", {})
        guarantee = priv.get("guarantee", "verified" if priv.get("verified") else "unverified")
        measured = priv.get("measured_eps")
        meas = f", measured_eps={measured:.4g}" if isinstance(measured, float) else ""
        return (f"Mechanism(name={self.name!r}, n={self.space.n}, epsilon={self.epsilon:.4g}"
                f"{meas}, privacy={guarantee}, loss={self.loss():.4g}, L_0.95={self.loss(0.95):.4g})")


def load(path: str | os.PathLike) -> Mechanism:
    """Load a mechanism written by :meth:`Mechanism.save`.

    The space is re-validated and the matrix re-certified, so a tampered file cannot yield a
    mechanism weaker than it claims.

    Raises
    ------
    ValueError
        When the file is missing pieces, corrupt, or not a mechanism file (the message names it).
    """
    from .verification import PrivacyError, certify

    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no mechanism file at {path}")
    try:
        with np.load(path, allow_pickle=False) as z:
            data = {k: z[k] for k in z.files}
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        raise ValueError(f"{path}: not a readable mechanism file ({exc})") from None
    missing = {"matrix", "distances", "metadata"} - set(data)
    if missing:
        raise ValueError(f"{path}: not a mechanism file, missing {sorted(missing)}")
    try:
        meta = json.loads(str(data["metadata"]))
        kind, eps = meta["kind"], float(meta["epsilon"])
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{path}: corrupt metadata ({exc})") from None
    if meta.get("format_version") != FORMAT_VERSION:
        raise ValueError(f"{path}: unsupported format version {meta.get('format_version')!r}")
    import mdp.families  # noqa: F401  (registers Mechanism subclasses by kind)

    if kind not in _KINDS:
        raise ValueError(f"{path}: unknown mechanism kind {kind!r}")
    try:
        space = MetricSpace(data["distances"], labels=data.get("labels"), points=data.get("points"),
                            metric=meta.get("metric", "precomputed"))
    except ValueError as exc:
        raise ValueError(f"{path}: invalid metric space ({exc})") from None
    cls = _KINDS[kind]
    mech = cls._from_saved(data["matrix"], space, meta)
    if mech.stats.get("privacy", {}).get("guarantee", "matrix") == "matrix":
        try:
            certify(mech.matrix, space.distances, eps, repair=False)
        except PrivacyError as exc:
            raise ValueError(f"{path}: stored matrix fails its privacy check: {exc}") from None
    return mech


_KINDS["matrix"] = Mechanism
