"""User names as the per-user accounting sees them: one person, one name.

Per-user accounting (:mod:`geo.users`) charges each report to the user it names. If two
spellings of one name counted as two users, one person could spend the budget twice: ``José``
typed as one code point (NFC) and as ``e`` plus a combining accent (NFD), with a zero-width
space or a byte order mark inside, or with a Cyrillic ``е`` in place of the Latin ``e``, all
look the same on screen. :func:`normalize_user_names` therefore

1. applies Unicode normalization form NFKC (Unicode Standard Annex 15): canonical and
   compatibility equivalents become one string (NFD and NFC ``José`` agree, and so do full-width
   ``Ｊｏｓé`` and ``José``);
2. removes every format character (general category ``Cf``: zero-width space, joiners, byte
   order mark, soft hyphen, bidirectional marks), which display as nothing;
3. folds runs of white space into one space and strips the ends;
4. refuses a name that mixes letters of two of the scripts whose letters are confusable with
   one another (Latin, Greek, Cyrillic, Armenian, Cherokee, Coptic; Unicode Technical Standard
   39's "mixed-script confusables"): ``Jos`` in Latin with a Cyrillic ``е`` is refused rather
   than counted as a second person. Names written wholly in one script, and names mixing
   scripts that are not confusable with each other (Han with Hiragana and Katakana, Latin with
   Han), are kept.

Case is kept: ``Ann`` and ``ann`` are two users, as in most identifier systems.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

import numpy as np

from mdp.errors import ParameterError

__all__ = ["normalize_user_name", "normalize_user_names", "CONFUSABLE_SCRIPTS"]

#: Scripts whose letters include look-alikes of one another's (UTS 39, section 5): a name using
#: letters of two of them is refused.
CONFUSABLE_SCRIPTS = frozenset({"LATIN", "GREEK", "CYRILLIC", "ARMENIAN", "CHEROKEE", "COPTIC"})
_SPACES = re.compile(r"\s+")


def _script(ch: str) -> str | None:
    """The script of a letter, from its Unicode name (``"LATIN SMALL LETTER E"`` -> LATIN)."""
    if not unicodedata.category(ch).startswith("L"):
        return None
    name = unicodedata.name(ch, "")
    return name.split(" ", 1)[0] if name else None


def normalize_user_name(name: str) -> str:
    """One name normalized (steps 1-3 of the module docstring); see :func:`normalize_user_names`.

    Raises
    ------
    ParameterError
        A name mixing confusable scripts (step 4); the message does not repeat the name.
    """
    text = unicodedata.normalize("NFKC", str(name))
    text = "".join(ch for ch in text if unicodedata.category(ch) != "Cf")
    text = _SPACES.sub(" ", text).strip()
    scripts = {s for s in map(_script, text) if s in CONFUSABLE_SCRIPTS}
    if len(scripts) > 1:
        raise ParameterError("a user name mixes letters of the scripts "
                             f"{' and '.join(sorted(scripts))}, which look alike; it could be "
                             "another user's name in disguise")
    return text


def normalize_user_names(names: Iterable, *, what: str = "row") -> np.ndarray:
    """Every name normalized (module docstring); an object array of ``str``.

    Parameters
    ----------
    names : iterable of str
    what : str
        How messages name a position (``"row"``: ``row 3`` counting from 0 in the input's
        order; ``read_users_csv`` says ``line``).

    Raises
    ------
    ParameterError
        The first name that mixes confusable scripts, or that is empty after normalization
        (its position, never the name).
    """
    values = list(names)
    out = np.empty(len(values), dtype=object)
    cache: dict[str, str] = {}
    for k, raw in enumerate(values):
        key = str(raw)
        if key not in cache:
            try:
                cache[key] = normalize_user_name(key)
            except ParameterError as exc:
                raise ParameterError(f"{what} {k}: {exc}") from None
        if not cache[key]:
            raise ParameterError(f"{what} {k}: empty user name (nothing but white space or "
                                 "invisible characters)")
        out[k] = cache[key]
    return out
