"""Looking points up by label or index: shared by every kind of finite space.

A space with ``labels`` (words, cell ids) accepts labels and integer indices; a space without
labels accepts indices only. Subclasses set ``n``, ``labels`` (an array of unique strings or
``None``) and ``_index`` (``None``; the label -> index table is built on first use).
"""

from __future__ import annotations

import numpy as np

from ..errors import UnknownInputError

__all__ = ["LabelIndex"]


def _index_or_minus_one(value) -> int:
    """An integer input as an int64 index; one beyond int64 becomes -1 (out of range)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        if isinstance(value, (float, np.floating)) and float(value).is_integer() \
                and abs(value) < 2.0 ** 63:
            return int(value)
        raise TypeError(f"not an index: {type(value).__name__}")
    return int(value) if -(2 ** 63) <= int(value) < 2 ** 63 else -1


class LabelIndex:
    """Label and index lookup of a finite space (mixin; see the module docstring)."""

    n: int
    labels: np.ndarray | None
    _index: dict | None

    def index_of(self, x) -> np.ndarray | int:
        """Indices of points given labels or indices (scalar in, scalar out).

        Raises
        ------
        mdp.errors.UnknownInputError
            For an unknown label or an index out of range (the message gives its position,
            not the input, which is private; also a ``KeyError``).
        """
        scalar = np.ndim(x) == 0
        try:
            xs = np.atleast_1d(np.asarray(x, dtype=object if self.labels is not None else None))
        except OverflowError:         # an integer beyond int64: no index of any space
            xs = np.atleast_1d(np.asarray(x, dtype=object))
        if self.labels is None:
            try:
                idx = np.array([_index_or_minus_one(v) for v in xs.tolist()], dtype=np.int64) \
                    if xs.dtype == object else xs.astype(np.int64)
            except (TypeError, ValueError):
                raise UnknownInputError(f"this space has no labels; inputs must be indices 0..{self.n - 1}, "
                                        f"got a {type(x).__name__}") from None
            if np.any(idx != xs.astype(float)) if xs.dtype.kind == "f" else False:
                k = int(np.flatnonzero(idx != xs.astype(float))[0])
                raise UnknownInputError(f"input {k + 1} (of {len(xs)}): indices must be integers")
        else:
            table = self.label_table()
            idx = np.empty(len(xs), dtype=np.int64)
            unknown = []
            for k, item in enumerate(xs.tolist()):
                if isinstance(item, (int, np.integer)) and not isinstance(item, bool) and str(item) not in table:
                    idx[k] = _index_or_minus_one(item)
                    continue
                i = table.get(str(item))
                if i is None:
                    unknown.append(k + 1)
                else:
                    idx[k] = i
            if unknown:
                shown = ", ".join(map(str, unknown[:20])) + (" ..." if len(unknown) > 20 else "")
                count = f"{len(unknown)} of {len(xs)}" if len(unknown) > 1 else f"of {len(xs)}"
                raise UnknownInputError(f"input{'s' if len(unknown) > 1 else ''} {shown} "
                                        f"({count}): unknown label: not a label of this space "
                                        f"of {self.n} points")
        if np.any((idx < 0) | (idx >= self.n)):
            k = int(np.flatnonzero((idx < 0) | (idx >= self.n))[0])
            raise UnknownInputError(f"input {k + 1} (of {len(xs)}): index out of range for a "
                                    f"space of {self.n} points (0..{self.n - 1})")
        return int(idx[0]) if scalar else idx

    def label_table(self) -> dict[str, int]:
        """``{label: index}`` of every point, built once (an empty dict without labels)."""
        if self._index is None:
            self._index = ({} if self.labels is None else
                           dict(zip(map(str, self.labels.tolist()), range(len(self.labels)),
                                    strict=True)))
        return self._index

    def label_of(self, idx):
        """Labels of indices (indices themselves when the space has no labels)."""
        idx = np.asarray(idx)
        if self.labels is None:
            return idx.item() if idx.ndim == 0 else idx
        out = self.labels[idx]
        return out.item() if np.ndim(out) == 0 else out

    def sample_with(self, x, sample_indices, rng: np.random.Generator):
        """Outputs of ``sample_indices(indices, rng)`` for labels or indices ``x``, as labels
        (scalar in, scalar out): the body of every mechanism's ``sample``."""
        idx = self.index_of(x)
        out = sample_indices(np.atleast_1d(idx), rng)
        if np.ndim(idx) == 0:
            return self.label_of(int(out[0]))
        return self.label_of(out)
