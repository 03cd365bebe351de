"""What leaves the toolkit as text: inputs that are real text, output lines that stay lines.

``mdp privatize`` prints one line per input line, and its output is often opened as CSV in a
spreadsheet. Three rules keep that output what it claims to be:

- :func:`check_utf8`: a string holding undecodable bytes (Python reads invalid UTF-8 from
  standard input as lone surrogates, ``surrogateescape``) is refused, never released as
  replacement characters;
- :func:`csv_cell`: one value (a label, a privatized text line) becomes one CSV cell on one
  physical line: control characters and line separators are written as ``\\uXXXX`` escapes,
  a cell a spreadsheet would evaluate as a formula (first character ``=``, ``+``, ``-``, ``@``,
  tab or carriage return, and not a number) gets a leading apostrophe (OWASP's advice against
  CSV injection), and a cell holding a comma or a double quote is quoted;
- :func:`output_line`: a whole output line (cells joined by commas, e.g. ``label,x,y``) with
  the same treatment for each cell.

:data:`SEED_WARNING` is what ``mdp privatize --seed`` prints: a fixed seed makes privatization
a deterministic function of the input.
"""

from __future__ import annotations

import csv
import io
import re

from .errors import ParameterError

__all__ = ["check_utf8", "csv_cell", "output_line", "SEED_WARNING"]

#: Printed on standard error when ``mdp privatize`` is given ``--seed``.
SEED_WARNING = ("mdp: warning: --seed makes the output reproducible: anyone who knows the seed "
                "can re-run the draws and narrow down the inputs. Use it for tests and demos "
                "only, never to privatize real data.")

_SURROGATE = re.compile("[\ud800-\udfff]")
# C0 and C1 controls, and the characters that break lines in Unicode-aware readers
_BREAKING = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def check_utf8(text: str, what: str = "input") -> str:
    """Return ``text`` if it is valid Unicode text (no lone surrogates), else refuse it.

    Raises
    ------
    ParameterError
        Naming ``what`` and the character position, not the text (inputs are private).
    """
    m = _SURROGATE.search(text)
    if m is not None:
        raise ParameterError(f"{what} is not valid UTF-8 (undecodable bytes at character "
                             f"{m.start() + 1}); inputs must be UTF-8 text")
    return text


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def _escape(text: str) -> str:
    return _BREAKING.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _neutralise(cell: str) -> str:
    if cell.startswith(_FORMULA_START) and not _is_number(cell):
        return "'" + cell
    return cell


def _write(cells: list[str]) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="").writerow(cells)
    return buf.getvalue()


def csv_cell(value) -> str:
    """``value`` as one CSV cell on one line (module docstring).

    Examples
    --------
    >>> csv_cell("=HYPERLINK(1)"), csv_cell("a,b"), csv_cell("x\\ny"), csv_cell("-2.5")
    ("'=HYPERLINK(1)", '"a,b"', 'x\\\\u000ay', '-2.5')
    """
    return _write([_neutralise(_escape(str(value)))])


def output_line(line: str) -> str:
    """An output line with each of its CSV cells made safe (:func:`csv_cell`'s rules).

    Idempotent: a line of cells already made safe comes back unchanged.
    """
    line = _escape(str(line))
    if line == "":
        return line
    cells = next(csv.reader([line]))
    return _write([_neutralise(c) for c in cells])
