"""Memory checked before work: estimates from sizes, refused above a limit before allocating.

An ``n``-point space holds an ``n x n`` float64 distance matrix, and its construction briefly
needs a few more (the pairwise distances, their transpose, the symmetrised copy): 20,000 points
ask for about 13 GB before any mechanism is built. A mechanism file declares its arrays' sizes
in its headers. Both are checked here against a limit, so that a too-large request is refused
with :class:`~mdp.errors.ResourceLimitError` stating the estimate and the limit, instead of
numpy's ``MemoryError`` traceback (or the machine swapping) halfway through.

The default limit is half the machine's physical memory (:func:`default_max_memory`); every
function that checks takes ``max_memory=`` (bytes) to change it. Code that cannot pass it down
(a space plugin's loader, which takes only its spec) runs inside :func:`memory_limit`, whose
limit every check without its own ``max_memory`` then uses; the CLI runs each command inside the
limit of its ``--max-memory``.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
from collections.abc import Iterator

from ..errors import ParameterError, ResourceLimitError

__all__ = ["default_max_memory", "check_memory", "memory_limit", "distance_matrix_bytes", "format_bytes",
           "lp_bytes", "parse_bytes", "SPACE_COPIES", "LP_BYTES_PER_NONZERO", "LP_BYTES_PER_ROW"]

#: ``n x n`` float64 arrays alive at once while a space is built from points (pairwise distances,
#: transpose, symmetrised copy, the space's own copy).
SPACE_COPIES = 4


#: Bytes per nonzero of an LP held by HiGHS: its matrix column-wise and row-wise (8-byte values,
#: 4-byte indices) and a presolved copy of both. An estimate for refusing work that cannot fit
#: (a safe side of the figure, not a measurement).
LP_BYTES_PER_NONZERO = 48

#: Bytes per row of an LP: bounds, dual value and basis status in HiGHS, and the toolkit's own
#: row arrays while it builds them (an estimate, as :data:`LP_BYTES_PER_NONZERO`).
LP_BYTES_PER_ROW = 64

#: The limit of the innermost :func:`memory_limit` (None outside any).
_SCOPED_LIMIT: contextvars.ContextVar[int | None] = contextvars.ContextVar("max_memory", default=None)

_UNITS = {"b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
          "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}


def default_max_memory() -> int:
    """Half the physical memory of this machine, in bytes (8 GiB where it cannot be read)."""
    try:
        total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return 8 << 30
    return int(total) // 2 if total > 0 else 8 << 30


def format_bytes(b: float) -> str:
    """``b`` bytes in binary units (``"3.4 GiB"``)."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(b) < 1024 or unit == "PiB":
            return f"{b:.0f} {unit}" if unit == "B" else f"{b:.3g} {unit}"
        b /= 1024
    return f"{b:.3g} PiB"


def distance_matrix_bytes(n: int, copies: int = SPACE_COPIES) -> int:
    """Bytes of ``copies`` float64 ``n x n`` matrices."""
    return int(copies) * int(n) * int(n) * 8


def lp_bytes(rows: int, nonzeros: int) -> int:
    """Estimated bytes of an LP of ``rows`` rows and ``nonzeros`` nonzeros held by HiGHS
    (:data:`LP_BYTES_PER_ROW`, :data:`LP_BYTES_PER_NONZERO`)."""
    return int(rows) * LP_BYTES_PER_ROW + int(nonzeros) * LP_BYTES_PER_NONZERO


def parse_bytes(text: str) -> int:
    """``"8GB"``, ``"512 MiB"``, ``"2e9"`` -> bytes (B, KB, MB, GB, TB are powers of 1000;
    KiB, MiB, GiB, TiB powers of 1024; a bare number is bytes).

    Raises
    ------
    ParameterError
        Not a positive size with a known unit (the message names the value and the units).
    """
    t = str(text).strip().lower().replace(" ", "")
    number = t.rstrip("abcdefghijklmnopqrstuvwxyz")
    unit = t[len(number):] or "b"
    try:
        value = float(number) * _UNITS[unit]
    except (ValueError, KeyError):
        value = float("nan")
    if not (value >= 1 and value < 2**63):
        raise ParameterError(f"max_memory must be a positive size such as 8GB, 512MiB or a "
                             f"number of bytes (units: B, KB, MB, GB, TB, KiB, MiB, GiB, TiB), "
                             f"got {text!r}")
    return int(value)


def _checked_limit(max_memory) -> int:
    if isinstance(max_memory, bool) or not isinstance(max_memory, int) or max_memory <= 0:
        raise ParameterError(f"max_memory must be a positive number of bytes, got {max_memory!r}")
    return max_memory


@contextlib.contextmanager
def memory_limit(max_memory: int | None) -> Iterator[None]:
    """Within the block, checks given no ``max_memory`` use this one (``None``: no change).

    Parameters
    ----------
    max_memory : int or None
        Limit in bytes; None leaves the current limit (an enclosing block's, else the default).

    Raises
    ------
    ParameterError
        ``max_memory`` is not a positive integer.
    """
    if max_memory is None:
        yield
        return
    token = _SCOPED_LIMIT.set(_checked_limit(max_memory))
    try:
        yield
    finally:
        _SCOPED_LIMIT.reset(token)


def check_memory(estimate: int, what: str, max_memory: int | None = None) -> None:
    """Refuse work whose memory ``estimate`` (bytes) is above ``max_memory``.

    Parameters
    ----------
    estimate : int
        Bytes the work would allocate.
    what : str
        The work, for the message (``"a space of 20,000 points"``).
    max_memory : int or None
        The limit in bytes; None uses the enclosing :func:`memory_limit`'s, else
        :func:`default_max_memory`.

    Raises
    ------
    ResourceLimitError
        With the estimate, the limit and how to raise it.
    ParameterError
        ``max_memory`` is not a positive integer.
    """
    if max_memory is None:
        max_memory = _SCOPED_LIMIT.get()
    limit = default_max_memory() if max_memory is None else max_memory
    _checked_limit(limit)
    if estimate > limit:
        head = (f"{what} needs about {format_bytes(estimate)} of memory, above the limit of "
                f"{format_bytes(limit)} (")
        tail = "); nothing was allocated. Use fewer points, or pass a larger "
        raise ResourceLimitError(
            f"{head}max_memory={limit}{tail}max_memory= if this machine has the memory",
            cli_message=f"{head}--max-memory {limit}B{tail}--max-memory (e.g. --max-memory 64GB) "
                        "if this machine has the memory")
