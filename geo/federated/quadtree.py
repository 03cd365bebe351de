r"""The variable-resolution prefix tree of the adaptive hierarchical histogram (Bagdasaryan et al. 2022, 5.3, 5.6).

A node at level ``l`` (root ``l = 0``) is the cell ``(row, col)`` of the ``2^l x 2^l`` grid over
the map; its four children are the quadrants at level ``l + 1``. Unlike a quadtree, any set of
nodes that contains the root is a valid tree: nodes may have 0-4 children and orphans (a node
whose parent was collapsed) are allowed. Every node with fewer than four children owns one slot of
the aggregated vector; a location reports to the deepest node of the tree that contains it (the
longest matching prefix of its bitstring), so a slot stands for its node's region minus the
regions of its present descendants.

Stored as one boolean array per level (``4^l`` entries, code ``row * 2^l + col``), which makes the
prefix match a handful of vectorised lookups per level even for millions of clients.
"""

from __future__ import annotations

import numpy as np

from mdp.errors import ParameterError
from mdp.validation import check_int

__all__ = ["PrefixTree", "node_bitstring", "cell_codes"]


def node_bitstring(level: int, x: int, y: int) -> str:
    """The paper's node id (section 5.6): for each level the pair (x bit, y bit), most significant
    first. ``node_bitstring(4, 12, 5) == "10110001"`` (the paper's ``{10/11/00/01}``)."""
    level = check_int(level, "level", low=0)
    x = check_int(x, "x", low=0, high=2**level - 1)
    y = check_int(y, "y", low=0, high=2**level - 1)
    return "".join(f"{(x >> s) & 1}{(y >> s) & 1}" for s in range(level - 1, -1, -1))


def cell_codes(rows: np.ndarray, cols: np.ndarray, depth: int, level: int) -> np.ndarray:
    """Codes ``r * 2^level + c`` of the level-``level`` cells containing pixels ``(rows, cols)``
    of the ``2^depth`` grid."""
    s = depth - level
    return (rows >> s) * (1 << level) + (cols >> s)


class PrefixTree:
    """Set of quadtree nodes containing the root, over a ``2^depth x 2^depth`` pixel grid.

    Parameters
    ----------
    depth : int
        Maximum level (the pixel level), ``>= 0``.
    """

    def __init__(self, depth: int):
        self.depth = check_int(depth, "depth", low=0, high=14)
        self.present = [np.zeros(4**lv, dtype=bool) for lv in range(self.depth + 1)]
        self.present[0][0] = True
        self._cache = None

    # -- construction -------------------------------------------------------------------------
    @classmethod
    def full(cls, depth: int, level: int) -> PrefixTree:
        """Complete tree down to ``level`` (a uniform ``2^level`` grid of slots)."""
        t = cls(depth)
        level = check_int(level, "level", low=0, high=t.depth)
        for lv in range(level + 1):
            t.present[lv][:] = True
        return t

    def copy(self) -> PrefixTree:
        t = PrefixTree(self.depth)
        t.present = [p.copy() for p in self.present]
        return t

    # -- slots --------------------------------------------------------------------------------
    def _children_count(self, level: int) -> np.ndarray:
        if level == self.depth:
            return np.zeros(4**level, dtype=np.int64)
        n = 1 << level
        ch = self.present[level + 1].reshape(n, 2, n, 2)
        return ch.sum(axis=(1, 3)).ravel()

    def _slots(self):
        if self._cache is None:
            levels, codes, index = [], [], []
            k = 0
            for lv in range(self.depth + 1):
                is_slot = self.present[lv] & (self._children_count(lv) < 4)
                c = np.flatnonzero(is_slot)
                idx = np.full(4**lv, -1, dtype=np.int64)
                idx[c] = np.arange(k, k + c.size)
                k += c.size
                levels.append(np.full(c.size, lv, dtype=np.int64))
                codes.append(c)
                index.append(idx)
            self._cache = (np.concatenate(levels), np.concatenate(codes), index)
        return self._cache

    @property
    def n_slots(self) -> int:
        """Vector length a client sends: nodes with fewer than four children (Bagdasaryan et al. 2022, 5.5)."""
        return int(self._slots()[0].size)

    @property
    def slot_levels(self) -> np.ndarray:
        return self._slots()[0]

    @property
    def slot_codes(self) -> np.ndarray:
        return self._slots()[1]

    def n_nodes(self) -> int:
        return int(sum(p.sum() for p in self.present))

    def max_level(self) -> int:
        """Deepest level holding a node."""
        return max(lv for lv in range(self.depth + 1) if self.present[lv].any())

    # -- reporting and rendering --------------------------------------------------------------
    def assign(self, rows, cols) -> np.ndarray:
        """Slot index of the deepest present node containing each pixel (longest prefix match)."""
        rows = np.asarray(rows, dtype=np.int64)
        cols = np.asarray(cols, dtype=np.int64)
        side = 1 << self.depth
        if rows.shape != cols.shape:
            raise ParameterError(f"rows and cols must have the same shape, got {rows.shape}, {cols.shape}")
        if rows.size and (rows.min() < 0 or cols.min() < 0 or rows.max() >= side or cols.max() >= side):
            raise ParameterError(f"pixel coordinates must be in [0, {side}), got rows "
                             f"[{rows.min()}, {rows.max()}], cols [{cols.min()}, {cols.max()}]")
        _, _, index = self._slots()
        best = np.full(rows.shape, -1, dtype=np.int64)
        for lv in range(self.depth + 1):
            codes = cell_codes(rows, cols, self.depth, lv)
            hit = self.present[lv][codes]
            best = np.where(hit, index[lv][codes], best)
        return best

    def pixel_slots(self) -> np.ndarray:
        """Slot of every pixel, shape ``(2^depth, 2^depth)``."""
        side = 1 << self.depth
        r, c = np.divmod(np.arange(side * side, dtype=np.int64), side)
        return self.assign(r, c).reshape(side, side)

    def render(self, values) -> np.ndarray:
        """Spread each slot's value uniformly over the pixels it represents (Bagdasaryan et al. 2022, 6.1):
        a slot covering ``P^2`` pixels of which ``psi`` belong to descendants gives
        ``v / (P^2 - psi)`` to each remaining pixel."""
        values = np.asarray(values, dtype=float)
        if values.shape != (self.n_slots,):
            raise ParameterError(f"values must have length n_slots={self.n_slots}, got {values.shape}")
        ps = self.pixel_slots()
        npix = np.bincount(ps.ravel(), minlength=self.n_slots)
        with np.errstate(divide="ignore", invalid="ignore"):
            per_pixel = np.where(npix > 0, values / np.maximum(npix, 1), 0.0)
        return per_pixel[ps]

    # -- updates (Algorithm 2, UpdateTree) ----------------------------------------------------
    def set_node(self, level: int, row: int, col: int, present: bool = True) -> None:
        """Add (or with ``present=False`` delete) the node ``(level, row, col)``; the root stays."""
        level = check_int(level, "level", low=0, high=self.depth)
        row = check_int(row, "row", low=0, high=(1 << level) - 1)
        col = check_int(col, "col", low=0, high=(1 << level) - 1)
        if level == 0 and not present:
            raise ParameterError("the root cannot be deleted")
        self.present[level][row * (1 << level) + col] = bool(present)
        self._cache = None

    def split(self, slots) -> int:
        """Add the four children of the given slots (those above the pixel level). Returns the
        number of nodes added."""
        lv_all, code_all, _ = self._slots()
        slots = np.asarray(slots, dtype=np.int64)
        added = 0
        for lv in np.unique(lv_all[slots]):
            if lv >= self.depth:
                continue
            codes = code_all[slots[lv_all[slots] == lv]]
            n = 1 << lv
            r, c = np.divmod(codes, n)
            for dr in (0, 1):
                for dc in (0, 1):
                    child = (2 * r + dr) * (2 * n) + (2 * c + dc)
                    added += int((~self.present[lv + 1][child]).sum())
                    self.present[lv + 1][child] = True
        self._cache = None
        return added

    def collapse(self, slots) -> int:
        """Delete the given slot nodes (never the root); their region reports to the nearest
        present ancestor from now on, their descendants stay (orphans allowed, seed 5.6)."""
        lv_all, code_all, _ = self._slots()
        slots = np.asarray(slots, dtype=np.int64)
        removed = 0
        for lv in np.unique(lv_all[slots]):
            if lv == 0:
                continue
            codes = np.unique(code_all[slots[lv_all[slots] == lv]])
            removed += int(self.present[lv][codes].sum())
            self.present[lv][codes] = False
        self._cache = None
        return removed
