"""Small I/O helpers shared by the toolkit: atomic writes and the shared data directory."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

__all__ = ["atomic_write", "atomic_write_text", "shared_data_dir"]


def atomic_write(path: str | os.PathLike, write: Callable) -> Path:
    """Write ``path`` atomically: ``write(fileobj)`` fills a temporary binary file in the same
    directory, which then replaces ``path`` (``os.replace``). If writing fails, whatever was at
    ``path`` before is untouched.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """Atomically write a UTF-8 text file."""
    return atomic_write(path, lambda fh: fh.write(text.encode("utf-8")))


def shared_data_dir() -> Path:
    """Directory of the real data sets (never shipped in the package).

    ``$MDP_DATA_DIR`` when set, else ``../shared/data`` beside the project checkout.

    Raises
    ------
    FileNotFoundError
        When neither exists (the message says how to point at the data).
    """
    env = os.environ.get("MDP_DATA_DIR")
    candidates = [Path(env)] if env else []
    candidates.append(Path(__file__).resolve().parents[2] / "shared" / "data")
    candidates.append(Path.cwd().parent / "shared" / "data")
    for c in candidates:
        if c.is_dir():
            return c
    raise FileNotFoundError(
        "shared data directory not found: set MDP_DATA_DIR to the folder holding "
        "geolife_beijing_cells_0p005.npz and gowalla_nyc_checkins.txt.gz "
        f"(looked in {', '.join(str(c) for c in candidates)})")
