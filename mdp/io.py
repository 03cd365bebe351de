"""File I/O shared by the toolkit: atomic writes and readers that never leak a raw traceback.

Every reader here maps every way a file can be broken (truncated, bit-flipped, not the format
its name says, wrong types inside) to :class:`mdp.errors.FileFormatError`, whose message names
the file and, for text, the line. A missing file is a :class:`~mdp.errors.MissingFileError` (a
``FileNotFoundError``) naming the path.

=============================  ===============================================================
function                       reads
=============================  ===============================================================
:func:`read_npz`               every array of a ``.npz`` archive (no pickles), CRC-checked
:func:`read_npy`               one ``.npy`` array (no pickles), size checked against its header
:func:`open_text`              a text file, plain or gzip-compressed, line by line
:func:`open_binary`            a file's bytes, plain or gzip-compressed (e.g. for pandas)
:func:`read_points_csv`        a points table (optional header, optional label column); as a
                               metric space: :func:`mdp.spaces.specs.load_points_csv`
:func:`npz_json`               a JSON object stored as a 0-d string array of an archive
=============================  ===============================================================

Compression is detected from the content (the gzip magic bytes ``1f 8b``), not the name; a file
named ``*.gz`` that is not gzip data is refused.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import math
import os
import re
import stat
import tempfile
import threading
import warnings
import zipfile
import zlib
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import numpy as np

from .errors import (
    DataNotFoundError,
    FileFormatError,
    MissingFileError,
    ParameterTypeError,
    ResourceLimitError,
)
from .runtime.resources import check_memory, format_bytes

__all__ = ["atomic_write", "atomic_write_text", "output_directory", "shared_data_dir",
           "latlon_columns", "read_npz", "read_npy", "npz_json", "open_text", "open_binary", "read_points_csv",
           "file_errors", "current_umask"]

_GZIP_MAGIC = b"\x1f\x8b"
_NPY_MAGIC = b"\x93NUMPY"
# Errors of the decompressors and decoders a corrupt file can raise while being read.
_DECODE_ERRORS = (OSError, EOFError, zlib.error, zipfile.BadZipFile, gzip.BadGzipFile,
                  UnicodeDecodeError, NotImplementedError)


# -- writing ------------------------------------------------------------------------------------
_UMASK_LOCK = threading.Lock()


def current_umask() -> int:
    """The process umask, read without changing it where the system allows.

    Linux reports it in ``/proc/self/status``; elsewhere it is read by setting and restoring it
    (under a lock, so concurrent callers in this module do not see the temporary value).
    """
    with contextlib.suppress(OSError, ValueError):
        with open("/proc/self/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    with _UMASK_LOCK:
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


def _check_path_type(path, what: str = "path") -> Path:
    if not isinstance(path, (str, os.PathLike)):
        raise ParameterTypeError(f"{what} must be a file path (str or os.PathLike), got "
                                 f"{type(path).__name__}")
    return Path(path)


def _output_path(path: str | os.PathLike) -> Path:
    path = _check_path_type(path, "output path")
    if path.is_dir():
        raise FileFormatError(path, "is a directory; the output must be a file path "
                                    f"(e.g. {path / 'out.npz'})")
    parent = path.parent
    if parent.exists() and not parent.is_dir():
        raise FileFormatError(path, f"cannot write: {parent} is not a directory")
    if not parent.exists():
        # a mistyped directory is not created behind the user's back
        raise MissingFileError(f"{path}: its directory {parent} does not exist (create it "
                               f"first, e.g. mkdir -p {parent})")
    return path


def output_directory(path: str | os.PathLike, *, parents: bool = False) -> Path:
    """An output directory the user named (``mdp curves -o DIR``), created if missing.

    Its parent must exist unless ``parents`` (a command's default such as ``results/curves``):
    a mistyped path is refused rather than created.

    Raises
    ------
    MissingFileError
        The parent directory does not exist (and not ``parents``).
    FileFormatError
        ``path`` is a file, or cannot be created.
    """
    path = _check_path_type(path, "output directory")
    if path.exists() and not path.is_dir():
        raise FileFormatError(path, "is a file; the output must be a directory")
    if not parents and not path.parent.is_dir():
        raise MissingFileError(f"{path}: its parent directory {path.parent} does not exist "
                               f"(create it first, e.g. mkdir -p {path.parent})")
    try:
        path.mkdir(parents=parents, exist_ok=True)
    except OSError as exc:
        raise FileFormatError(path, f"cannot create the directory ({exc.strerror or exc})") \
            from None
    return path


def atomic_write(path: str | os.PathLike, write: Callable) -> Path:
    """Write ``path`` atomically: ``write(fileobj)`` fills a temporary binary file in the same
    directory, which then replaces ``path`` (``os.replace``). If writing fails, whatever was at
    ``path`` before is untouched.

    The file gets the permissions ``open()`` would give it: those of the file it replaces, else
    ``0o666 & ~umask`` (the temporary file itself is created private, mode 0600).

    Raises
    ------
    FileFormatError
        ``path`` is a directory, or its directory is not one (the message names it).
    MissingFileError
        Its directory does not exist (it is not created: a mistyped path would be).
    ParameterTypeError
        ``path`` is not a path.
    """
    path = _output_path(path)
    try:
        mode = stat.S_IMODE(path.stat().st_mode) if path.is_file() else 0o666 & ~current_umask()
    except OSError:
        mode = 0o666 & ~current_umask()
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise FileFormatError(path, f"cannot write in {path.parent} ({exc.strerror or exc})") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fchmod(fh.fileno(), mode)
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

    ``$MDP_DATA_DIR`` when set, else ``../shared/data`` beside the project checkout (or beside
    the working directory).

    Raises
    ------
    mdp.errors.DataNotFoundError
        When none exists (also a ``FileNotFoundError``); the message lists each folder looked in
        once and says where to get the data.
    """
    env = os.environ.get("MDP_DATA_DIR")
    candidates = [Path(env)] if env else []
    candidates.append(Path(__file__).resolve().parents[2] / "shared" / "data")
    candidates.append(Path.cwd().parent / "shared" / "data")
    for c in candidates:
        if c.is_dir():
            return c
    looked = list(dict.fromkeys(str(c) for c in candidates))
    raise DataNotFoundError(
        f"real data sets not found (looked in {', '.join(looked)}). {DATA_HOWTO}")


#: Where the real data sets come from and how to point the toolkit at them (for messages).
DATA_HOWTO = ("The Geolife and Gowalla data are not shipped with the toolkit: download Geolife "
              "Trajectories 1.3 (Microsoft Research) and SNAP's loc-gowalla check-ins, put "
              "geolife_beijing_cells_0p005.npz and gowalla_nyc_checkins.txt.gz in a folder and "
              "set MDP_DATA_DIR to it (see docs/guide/data.md)")


# -- common checks ------------------------------------------------------------------------------
def _existing_file(path: str | os.PathLike, what: str = "file") -> Path:
    path = Path(path)
    if not path.exists():
        raise MissingFileError(f"no {what} at {path}")
    if path.is_dir():
        raise FileFormatError(path, f"is a directory, expected a {what}")
    if not path.is_file():      # a FIFO would block the reader forever, a device never ends
        raise FileFormatError(path, f"is not a regular file (a pipe, socket or device), "
                                    f"expected a {what}")
    return path


def _describe(exc: BaseException) -> str:
    if isinstance(exc, EOFError):
        return f"the file ends early (truncated?): {exc}" if str(exc) else "the file ends early (truncated?)"
    if isinstance(exc, UnicodeDecodeError):
        return f"not {exc.encoding} text ({exc.reason} at byte {exc.start} of the chunk)"
    if isinstance(exc, OSError) and exc.strerror:
        return f"cannot read ({exc.strerror})"
    text = str(exc) or type(exc).__name__
    return f"corrupt data ({type(exc).__name__}: {text})"


@contextlib.contextmanager
def file_errors(path: str | os.PathLike, what: str = "file", *, line: int | None = None):
    """Context manager: turn decompression, decoding and OS errors into :class:`FileFormatError`.

    For wrapping a third-party reader (pandas, gensim) of ``path``. Parse errors the caller
    understands better (with a line number) should be caught inside; toolkit errors and
    :class:`FileNotFoundError` pass through unchanged.
    """
    try:
        yield
    except (FileFormatError, FileNotFoundError):
        raise
    except _DECODE_ERRORS as exc:
        raise FileFormatError(path, f"unreadable {what}: {_describe(exc)}", line=line) from None


# -- compressed or plain streams ----------------------------------------------------------------
class _GuardedRaw(io.RawIOBase):
    """A raw stream over ``inner`` whose read errors become :class:`FileFormatError`."""

    def __init__(self, inner, path: Path, what: str, closer: Callable[[], None]):
        self._inner, self._path, self._what, self._closer = inner, path, what, closer

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        try:
            return self._inner.readinto(b)
        except _DECODE_ERRORS as exc:
            raise FileFormatError(self._path, f"unreadable {self._what}: {_describe(exc)}") from None

    def close(self) -> None:
        if not self.closed:
            self._closer()
        super().close()


def open_binary(path: str | os.PathLike, *, what: str = "file") -> io.BufferedReader:
    """Open ``path`` for reading bytes, decompressing gzip data transparently.

    Returns a buffered binary stream (usable as a context manager and by pandas). A gzip file
    that is truncated or corrupt (bad CRC or length, bad deflate data) raises
    :class:`FileFormatError` naming the file when the damaged part is read.

    Raises
    ------
    mdp.errors.MissingFileError
        No such file.
    FileFormatError
        A directory, a file that cannot be opened, or a ``*.gz`` name on data that is not gzip.
    """
    path = _existing_file(path, what)
    try:
        fh = open(path, "rb")
    except OSError as exc:
        raise FileFormatError(path, f"cannot open {what} ({exc.strerror or exc})") from None
    try:
        magic = fh.read(2)
    except OSError as exc:
        fh.close()
        raise FileFormatError(path, f"cannot read {what} ({exc.strerror or exc})") from None
    fh.seek(0)
    if magic == _GZIP_MAGIC:
        inner = gzip.GzipFile(fileobj=fh, mode="rb")

        def closer():
            inner.close()
            fh.close()
    else:
        if path.suffix.lower() == ".gz":
            fh.close()
            raise FileFormatError(path, f"not gzip-compressed data although the name ends in .gz "
                                        f"(first bytes {magic!r}, gzip starts with {_GZIP_MAGIC!r})")
        inner, closer = fh, fh.close
    return io.BufferedReader(_GuardedRaw(inner, path, what, closer), buffer_size=1 << 16)


class TextFile:
    """Lines of a text file (see :func:`open_text`); ``lineno`` is the number of the last line read."""

    def __init__(self, path: Path, encoding: str, errors: str, what: str):
        self.path, self.encoding, self.errors, self.what = path, encoding, errors, what
        self.lineno = 0
        self._raw = open_binary(path, what=what)

    def __enter__(self) -> TextFile:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._raw.close()

    def __iter__(self) -> Iterator[str]:
        return self

    def __next__(self) -> str:
        raw = self._raw.readline()
        if not raw:
            raise StopIteration
        self.lineno += 1
        try:
            line = raw.decode(self.encoding, self.errors)
        except UnicodeDecodeError as exc:
            raise FileFormatError(self.path, f"not {self.encoding} text ({exc.reason} at byte "
                                             f"{exc.start} of the line)", line=self.lineno) from None
        return line[:-2] + "\n" if line.endswith("\r\n") else line


def open_text(path: str | os.PathLike, *, encoding: str = "utf-8", errors: str = "strict",
              what: str = "text file") -> TextFile:
    """Open a text file, plain or gzip-compressed, for reading line by line.

    Lines keep their ``"\\n"`` (``"\\r\\n"`` becomes ``"\\n"``). Undecodable bytes raise
    :class:`FileFormatError` naming the file and line (with ``errors="strict"``); a truncated or
    corrupt gzip stream raises it naming the file when the damaged part is reached.

    Examples
    --------
    >>> with open_text("checkins.txt.gz") as fh:             # doctest: +SKIP
    ...     for line in fh:
    ...         if bad(line):
    ...             raise FileFormatError(fh.path, "bad line", line=fh.lineno)
    """
    return TextFile(_existing_file(path, what), encoding, errors, what)


# -- numpy files --------------------------------------------------------------------------------
def _npy_header(fp, path: Path, name: str) -> tuple[tuple[int, ...], bool, np.dtype]:
    """Parse a .npy header at the position of ``fp`` (magic, version, dict)."""
    fmt = np.lib.format
    where = f"array {name!r}: " if name else ""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a damaged header can trip ast's syntax warnings
            version = fmt.read_magic(fp)
            if version == (1, 0):
                shape, fortran, dtype = fmt.read_array_header_1_0(fp)
            elif version in ((2, 0), (3, 0)):
                shape, fortran, dtype = fmt.read_array_header_2_0(fp)
            else:
                raise ValueError(f"unsupported .npy format version {version}")
    except Exception as exc:  # numpy parses the header with ast: many error types
        raise FileFormatError(path, f"{where}not a valid .npy array header "
                                    f"({type(exc).__name__}: {exc})") from None
    if dtype.hasobject:
        raise FileFormatError(path, f"{where}holds Python objects (dtype {dtype}), which are never "
                                    "loaded (only plain numeric and string arrays are read)")
    if any(int(s) < 0 for s in shape):
        raise FileFormatError(path, f"{where}negative dimension in shape {shape}")
    return tuple(int(s) for s in shape), bool(fortran), dtype


def _npy_array(buffer, offset: int, shape, fortran: bool, dtype: np.dtype) -> np.ndarray:
    count = math.prod(shape)
    flat = np.frombuffer(buffer, dtype=dtype, count=count, offset=offset)
    if fortran:
        return flat.reshape(shape[::-1]).transpose()
    return flat.reshape(shape)


def _npy_from_bytes(data: bytearray, path: Path, name: str) -> np.ndarray:
    fp = io.BytesIO(data)
    shape, fortran, dtype = _npy_header(fp, path, name)
    offset = fp.tell()
    expected = math.prod(shape) * dtype.itemsize
    if len(data) - offset != expected:
        raise FileFormatError(path, f"array {name!r}: holds {len(data) - offset} data bytes, its "
                                    f"header (shape {shape}, dtype {dtype}) promises {expected}")
    try:
        return _npy_array(data, offset, shape, fortran, dtype)
    except (ValueError, TypeError) as exc:
        raise FileFormatError(path, f"array {name!r}: cannot be decoded ({exc})") from None


def read_npy(path: str | os.PathLike) -> np.ndarray:
    """Read one ``.npy`` file without pickles.

    The header is validated and the file's size must equal the header's promise exactly (a
    truncated file, or one whose shape or dtype was altered, is refused). Byte order and Fortran
    order are honoured.

    Raises
    ------
    mdp.errors.MissingFileError
        No such file.
    FileFormatError
        Not a ``.npy`` file, an object (pickled) array, or a size that disagrees with the header.
    """
    path = _existing_file(path, ".npy file")
    try:
        with open(path, "rb") as fh:
            if fh.read(len(_NPY_MAGIC)) != _NPY_MAGIC:
                raise FileFormatError(path, "not a .npy file (it does not start with the .npy "
                                            "magic bytes \\x93NUMPY)")
            fh.seek(0)
            shape, fortran, dtype = _npy_header(fh, path, "")
            offset = fh.tell()
            size = os.fstat(fh.fileno()).st_size
            expected = math.prod(shape) * dtype.itemsize
            if size - offset != expected:
                raise FileFormatError(path, f"holds {size - offset} data bytes, its header (shape "
                                            f"{shape}, dtype {dtype}) promises {expected} "
                                            "(truncated or altered)")
            flat = np.fromfile(fh, dtype=dtype, count=math.prod(shape))
    except OSError as exc:
        raise FileFormatError(path, f"cannot read ({exc.strerror or exc})") from None
    if flat.size != math.prod(shape):
        raise FileFormatError(path, f"file ends early: read {flat.size} of {math.prod(shape)} values")
    return flat.reshape(shape[::-1]).transpose() if fortran else flat.reshape(shape)


def read_npz(path: str | os.PathLike, *, required: Iterable[str] = (),
             allowed: Iterable[str] | None = None, what: str = ".npz archive",
             max_memory: int | None = None, work_factor: int = 1) -> dict[str, np.ndarray]:
    """Read every array of a ``.npz`` archive (``numpy.savez`` / ``savez_compressed``) into memory.

    Contract:

    - returns ``{name: ndarray}`` with the member names without ``.npy``, like ``numpy.load``;
      arrays own their memory and are writeable; 0-d string arrays stay 0-d arrays;
    - nothing is unpickled: an object array is refused, never loaded;
    - each member is read whole, so the ZIP CRC-32 of every member is checked: a byte flipped
      anywhere in compressed or stored data, or a truncated archive, is an error, never a
      silently different array; each array's byte count must match its ``.npy`` header;
    - ``required`` names must be present and, when ``allowed`` is given, no other name may be;
    - every failure is a :class:`~mdp.errors.FileFormatError` naming the file (and the array),
      except a missing file, which is a :class:`~mdp.errors.MissingFileError`. Values are not
      checked (shapes, dtypes, ranges are the caller's business).

    Parameters
    ----------
    path : path-like
    required : iterable of str
        Array names that must be present.
    allowed : iterable of str, optional
        The only names that may be present (``required`` is added to it).
    what : str
        What the file should be, for messages (e.g. ``"mechanism file"``).
    max_memory : int or None
        Limit in bytes (None: :func:`mdp.runtime.resources.default_max_memory`) on ``work_factor``
        times the arrays' total size as the archive's directory declares it, checked before
        any member is read.
    work_factor : int
        Copies of the arrays the caller's work will hold (e.g. a check and a sampler).

    Raises
    ------
    mdp.errors.MissingFileError, mdp.errors.FileFormatError
    mdp.errors.ResourceLimitError
        The declared sizes are above ``max_memory`` (nothing was read).
    """
    path = _existing_file(path, what)
    required = list(required)
    try:
        with open(path, "rb") as fh:
            head = fh.read(4)
    except OSError as exc:
        raise FileFormatError(path, f"cannot read ({exc.strerror or exc})") from None
    if head[:2] != b"PK":
        raise FileFormatError(path, f"not a {what}: not a ZIP/.npz archive (first bytes {head!r})")
    arrays: dict[str, np.ndarray] = {}
    try:
        with zipfile.ZipFile(path) as zf:
            names = zf.namelist()
            # zipfile does not compare the directory with the end record's entry count: a
            # damaged length field in one entry can hide the entries after it.
            zf.fp.seek(0)
            end = zipfile._EndRecData(zf.fp)
            if end is None or end[zipfile._ECD_ENTRIES_TOTAL] != len(names):
                raise FileFormatError(path, f"corrupt {what}: the archive's directory lists "
                                            f"{len(names)} members, its end record "
                                            f"{end[zipfile._ECD_ENTRIES_TOTAL] if end else '(missing)'}")
            declared = sum(info.file_size for info in zf.infolist())
            check_memory(declared * work_factor, f"{path}: the {what} (its arrays declare "
                                                 f"{format_bytes(declared)})", max_memory)
            dupes = sorted({n for n in names if names.count(n) > 1})
            if dupes:
                raise FileFormatError(path, f"not a {what}: members {dupes} appear more than once")
            for info in zf.infolist():
                if not info.filename.endswith(".npy") or info.is_dir():
                    raise FileFormatError(path, f"not a {what}: member {info.filename!r} is not a "
                                                ".npy array")
                name = info.filename[:-4]
                data = bytearray(zf.read(info))      # reads to the end: checks the CRC-32
                arrays[name] = _npy_from_bytes(data, path, name)
    except (FileFormatError, ResourceLimitError):
        raise
    except Exception as exc:  # zipfile/zlib/struct raise many types on corrupt input
        raise FileFormatError(path, f"corrupt or truncated {what}: {_describe(exc)}") from None
    missing = [k for k in required if k not in arrays]
    if missing:
        raise FileFormatError(path, f"not a {what}: missing {missing} (has {sorted(arrays)})")
    if allowed is not None:
        extra = sorted(set(arrays) - set(allowed) - set(required))
        if extra:
            raise FileFormatError(path, f"not a {what}: unexpected array(s) {extra}")
    return arrays


def npz_json(arrays: dict[str, np.ndarray], name: str, path: str | os.PathLike) -> dict:
    """Decode ``arrays[name]``, a 0-d string array holding a JSON object, into a dict.

    Raises
    ------
    FileFormatError
        Missing, not a 0-d string array, not JSON, or not a JSON object.
    """
    if name not in arrays:
        raise FileFormatError(path, f"missing array {name!r}")
    a = arrays[name]
    if a.ndim != 0 or a.dtype.kind not in "US":
        raise FileFormatError(path, f"array {name!r} must be a single string (JSON), got dtype "
                                    f"{a.dtype} and shape {a.shape}")
    text = a.item()
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise FileFormatError(path, f"array {name!r} is not UTF-8 ({exc.reason})") from None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise FileFormatError(path, f"array {name!r} is not valid JSON ({exc})") from None
    if not isinstance(value, dict):
        raise FileFormatError(path, f"array {name!r} must hold a JSON object, got "
                                    f"{type(value).__name__}")
    return value


# -- points tables ------------------------------------------------------------------------------
def _numbers(values: np.ndarray) -> np.ndarray:
    """Parse strings as floats; NaN where a value is not a finite number."""
    import pandas as pd

    out = pd.to_numeric(pd.Series(values.ravel(), dtype=object), errors="coerce").to_numpy(dtype=float, copy=True)
    out[~np.isfinite(out)] = np.nan
    return out.reshape(values.shape)


def read_points_csv(path: str | os.PathLike, *, latlon: bool = False, with_lines: bool = False):
    """Read a points table: one point per line, comma-separated coordinates.

    - The first line is a header when none of its fields is a finite number.
    - The first column is taken as labels when the table has at least two columns and no value
      in it (below the header) is a finite number; otherwise every column is a coordinate.
    - Blank lines are skipped; every other line must have the same number of fields and every
      coordinate must be a finite number.
    - Plain or gzip-compressed, UTF-8.

    These rules are local: changing one value changes one point or gives an error, it never
    reinterprets the rest of the file.

    Parameters
    ----------
    path : str or os.PathLike
    latlon : bool, default False
        The coordinates are (lat, lon) in degrees: a header naming ``lat``/``latitude`` and
        ``lon``/``lng``/``long``/``longitude`` columns puts them in that order (other columns:
        the first becomes the labels), and every point must have ``|lat| <= 90``,
        ``|lon| <= 180``.

    with_lines : bool, default False
        Also return each point's line number (for messages about a point).

    Returns
    -------
    points : ndarray, shape (n, d), float
    labels : list of str or None
    lines : ndarray of int, only with ``with_lines``

    Raises
    ------
    mdp.errors.MissingFileError
        No such file.
    FileFormatError
        Naming the file and the line: unreadable or non-UTF-8 text, ragged lines, a
        non-numeric or non-finite coordinate, no points.
    """
    points, labels, lines = _read_points(path, latlon)
    return (points, labels, lines) if with_lines else (points, labels)


_LAT_NAMES = ("lat", "latitude")
_LON_NAMES = ("lon", "lng", "long", "longitude")


def latlon_columns(header) -> list[int] | None:
    """Positions ``[lat, lon]`` of the latitude and longitude columns named in ``header``
    (``lat``/``latitude`` and ``lon``/``lng``/``long``/``longitude``, any case), or None."""
    low = [str(h).strip().lower() for h in header]
    lat = [i for i, h in enumerate(low) if h in _LAT_NAMES]
    lon = [i for i, h in enumerate(low) if h in _LON_NAMES]
    return [lat[0], lon[0]] if len(lat) == 1 and len(lon) == 1 else None


def _read_points(path, latlon: bool):
    """:func:`read_points_csv` plus the 1-based line number of every point."""
    import pandas as pd

    path = _existing_file(path, "points file")
    try:
        with open_binary(path, what="points file") as fh:
            df = pd.read_csv(fh, header=None, dtype=str, keep_default_na=False, na_filter=False,
                             skip_blank_lines=False, encoding="utf-8", engine="c")
    except pd.errors.EmptyDataError:
        raise FileFormatError(path, "no points (empty file)") from None
    except pd.errors.ParserError as exc:
        m = re.search(r"line (\d+)", str(exc))
        raise FileFormatError(path, f"not a points table ({str(exc).strip()})",
                              line=int(m.group(1)) if m else None) from None
    except UnicodeDecodeError as exc:
        raise FileFormatError(path, f"not UTF-8 text ({exc.reason})") from None
    except ValueError as exc:   # e.g. NUL bytes the tokenizer rejects
        if isinstance(exc, FileFormatError):
            raise
        raise FileFormatError(path, f"not a points table ({exc})") from None
    cells = df.to_numpy(dtype=object)
    cells = np.where(pd.isna(cells), "", cells).astype(str)
    lines = np.arange(1, len(cells) + 1)
    blank = np.all(np.char.strip(cells) == "", axis=1)
    cells, lines = cells[~blank], lines[~blank]
    if len(cells) == 0:
        raise FileFormatError(path, "no points (no non-blank line)")
    has_header = bool(np.all(np.isnan(_numbers(cells[0]))))
    if has_header:
        order = latlon_columns(cells[0]) if latlon else None
        if order is not None:
            rest = [c for c in range(cells.shape[1]) if c not in order]
            cells = cells[:, rest[:1] + order]
        cells, lines = cells[1:], lines[1:]
    if len(cells) == 0:
        raise FileFormatError(path, "no points (only a header line)")
    labels = None
    if cells.shape[1] > 1 and np.all(np.isnan(_numbers(cells[:, 0]))):
        labels = [str(s) for s in cells[:, 0]]
        cells = cells[:, 1:]
    values = _numbers(cells)
    bad = np.isnan(values)
    if bad.any():
        row, col = (int(i) for i in np.argwhere(bad)[0])
        raw = cells[row, col]
        kind = "empty" if not raw.strip() else f"not a finite number: {raw[:40]!r}"
        raise FileFormatError(path, f"coordinate in column {col + 1 + (labels is not None)} is "
                                    f"{kind}", line=int(lines[row]))
    if latlon:
        if values.shape[1] != 2:
            raise FileFormatError(path, "lat,lon points need exactly two coordinate columns, "
                                        f"got {values.shape[1]}")
        out = np.flatnonzero((np.abs(values[:, 0]) > 90) | (np.abs(values[:, 1]) > 180))
        if out.size:
            k = int(out[0])
            raise FileFormatError(path, f"({values[k, 0]:g}, {values[k, 1]:g}) is not a (lat, lon) "
                                        "in degrees (|lat| <= 90, |lon| <= 180)", line=int(lines[k]))
    return values, labels, lines
