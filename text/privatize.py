"""Privatize a text word by word with a mechanism over a word space (Imola et al. 2022, section 5.1).

Each in-vocabulary token ``w`` is replaced by an independent draw of ``M(w)`` from the mechanism
(any registered family built on a word space, or Madlib). Tokens that are not words of the space
follow the ``oov`` policy; punctuation follows the ``punctuation`` policy.

Safe default: ``oov="error"`` refuses a text with words outside the space (the error lists them
and the options), so nothing leaves unprotected unless asked for by name. ``oov="mask"`` and
``oov="drop"`` release nothing about such words but their position (mask) or nothing at all
(drop); ``oov="keep"`` releases them unchanged and warns (:class:`UserWarning`).

Privacy: each replaced token is ``epsilon``-mDP with respect to the word metric; a text of ``k``
replaced tokens is ``k * epsilon``-mDP by composition (in the sense that two texts differing in
tokens ``w_i -> w_i'`` are indistinguishable up to ``exp(epsilon * sum_i d(w_i, w_i'))``). Tokens
kept under ``oov="keep"`` and ``punctuation="keep"`` are released *unprotected*.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Sequence

import numpy as np

from mdp.errors import ParameterError, ParameterTypeError
from mdp.mechanism import Mechanism
from mdp.plugins import InputFormat
from mdp.validation import check_rng

__all__ = ["privatize", "tokenize", "TOKEN_PATTERN", "OOV_POLICIES", "PUNCTUATION_POLICIES"]

#: Default tokens: words (letters/digits/underscore, inner apostrophes kept, e.g. "don't"), or a
#: single character that is neither a word character nor white space (punctuation, symbols).
TOKEN_PATTERN = re.compile(r"\w+(?:['\u2019]\w+)*|[^\w\s]")
OOV_POLICIES = ("error", "mask", "drop", "keep")
# Unknown words named in the error message (the rest are counted).
_MAX_LISTED = 20
PUNCTUATION_POLICIES = ("keep", "drop", "privatize")


def tokenize(text: str) -> list[str]:
    """Split ``text`` into the default tokens (:data:`TOKEN_PATTERN`)."""
    if not isinstance(text, str):
        raise ParameterTypeError(f"text must be a string, got {type(text).__name__}")
    return TOKEN_PATTERN.findall(text)


def _is_punctuation(token: str) -> bool:
    return not any(ch.isalnum() or ch == "_" for ch in token)


def _restore_case(original: str, word: str) -> str:
    if original.isupper() and len(original) > 1:
        return word.upper()
    if original[:1].isupper():
        return word[:1].upper() + word[1:]
    return word


class _Plan:
    """What happens to each token: ``("word", vocab_word)``, a punctuation policy or ``("oov",)``."""

    def __init__(self, vocab: dict, oov: str, punctuation: str, lowercase: bool):
        self.vocab, self.oov, self.punctuation, self.lowercase = vocab, oov, punctuation, lowercase

    def __call__(self, token: str) -> tuple:
        if _is_punctuation(token) and self.punctuation != "privatize":
            return (self.punctuation,)
        if token in self.vocab:
            return ("word", token)
        if self.lowercase and token.lower() in self.vocab:
            return ("word", token.lower())
        return ("oov",)


def _unknown_words_error(unknown: list[str], n_vocab: int) -> ParameterError:
    distinct = list(dict.fromkeys(unknown))
    listed = ", ".join(repr(w) for w in distinct[:_MAX_LISTED])
    more = f" and {len(distinct) - _MAX_LISTED} more" if len(distinct) > _MAX_LISTED else ""
    head = (f"{len(distinct)} word(s) of the text are not in the mechanism's space ({n_vocab} "
            f"words) and cannot be privatized: {listed}{more}. Choose ")
    tail = ", or build the mechanism on a vocabulary that contains them."

    def options(mask: str, drop: str, keep: str) -> str:
        return (f"{mask} (replace each by the mask token), {drop} (remove them) or {keep} "
                "(release them unchanged: NOT private)")

    return ParameterError(head + options("oov='mask'", "oov='drop'", "oov='keep'") + tail,
                          cli_message=head + options("--oov mask", "--oov drop", "--oov keep")
                          + tail)


def privatize(text_or_tokens: str | Sequence[str], mechanism: Mechanism, *, rng=None,
              tokenizer: Callable[[str], list[str]] | None = None, oov: str = "error",
              punctuation: str = "keep", lowercase: bool = True, preserve_case: bool = True,
              mask_token: str = "<unk>") -> str | list[str]:
    """Replace every in-vocabulary token by the mechanism's output (one fresh draw per token).

    Parameters
    ----------
    text_or_tokens : str or sequence of str
        A text (returns a string) or a list of tokens (returns a list).
    mechanism : Mechanism
        Built on a space whose labels are words (e.g. ``mdp.build("madlib",
        text.sample_vocabulary(...), eps)``).
    rng : None, int or numpy.random.Generator
    tokenizer : callable ``str -> list[str]``, optional
        Only for string input. ``None`` (default) uses :data:`TOKEN_PATTERN` and keeps the text
        between tokens (spaces, line breaks) verbatim. With a custom tokenizer the output tokens
        are joined with single spaces.
    oov : {"error", "mask", "drop", "keep"}, default "error"
        Tokens that are not words of the space: refused with a
        :class:`~mdp.errors.ParameterError` that lists them (default: nothing is released),
        replaced by ``mask_token``, removed, or left unchanged. ``"keep"`` releases those tokens
        *unprotected* and warns (:class:`UserWarning`).
    punctuation : {"keep", "drop", "privatize"}, default "keep"
        Tokens without letters or digits: left unchanged, removed, or treated like any other
        token (privatized when they are words of the space, as in the full GloVe, else ``oov``).
    lowercase : bool, default True
        A token not in the vocabulary is looked up lower-cased as well (GloVe is lower-case).
    preserve_case : bool, default True
        Give the replacement the case pattern of the token (``"Paris"`` -> ``"London"``,
        ``"NASA"`` -> ``"ESA"``-style upper case).
    mask_token : str, default "<unk>"

    Returns
    -------
    str or list of str

    Raises
    ------
    mdp.errors.ParameterTypeError
        ``mechanism`` is not a Mechanism, its space has no word labels, or the input is neither
        a string nor a sequence of strings.
    mdp.errors.ParameterError
        Unknown ``oov`` / ``punctuation`` policy, or ``oov="error"`` (the default) and tokens
        are not in the vocabulary (the message lists them and the other policies).

    Warns
    -----
    UserWarning
        ``oov="keep"`` and tokens outside the vocabulary were released unchanged.

    Examples
    --------
    >>> import mdp, text                                                 # doctest: +SKIP
    >>> space = text.sample_vocabulary(text.load_glove(), 200, rng=0)    # doctest: +SKIP
    >>> mech = mdp.build("madlib", space, 8.0, rng=0)                    # doctest: +SKIP
    >>> text.privatize("The cat sat.", mech, rng=1, oov="mask")          # doctest: +SKIP
    """
    if not isinstance(mechanism, Mechanism):
        raise ParameterTypeError(f"mechanism must be a Mechanism, got {type(mechanism).__name__}")
    if mechanism.space.labels is None:
        raise ParameterTypeError("mechanism's space has no labels: text privatization needs a word space")
    if oov not in OOV_POLICIES:
        raise ParameterError(f"oov must be one of {OOV_POLICIES}, got {oov!r}")
    if punctuation not in PUNCTUATION_POLICIES:
        raise ParameterError(f"punctuation must be one of {PUNCTUATION_POLICIES}, "
                             f"got {punctuation!r}")
    if not isinstance(mask_token, str):
        raise ParameterTypeError(f"mask_token must be a string, got {type(mask_token).__name__}")
    rng = check_rng(rng)
    vocab = {str(w): i for i, w in enumerate(mechanism.space.labels.tolist())}
    plan = _Plan(vocab, oov, punctuation, lowercase)

    if isinstance(text_or_tokens, str):
        text = text_or_tokens
        if tokenizer is None:
            matches = list(TOKEN_PATTERN.finditer(text))
            tokens = [m.group() for m in matches]
        else:
            if not callable(tokenizer):
                raise ParameterTypeError(f"tokenizer must be callable, got {type(tokenizer).__name__}")
            matches = None
            tokens = list(tokenizer(text))
    else:
        if tokenizer is not None:
            raise ParameterTypeError("tokenizer applies to string input only; got a sequence of tokens")
        if not isinstance(text_or_tokens, (Sequence, np.ndarray)):
            raise ParameterTypeError("text_or_tokens must be a string or a sequence of strings, got "
                            f"{type(text_or_tokens).__name__}")
        tokens = list(text_or_tokens)
        matches = None
    for k, tok in enumerate(tokens):
        if not isinstance(tok, str):
            raise ParameterTypeError(f"token {k} must be a string, got {tok!r} ({type(tok).__name__})")
        if not tok:
            raise ParameterError(f"token {k} is empty")

    actions = [plan(tok) for tok in tokens]
    unknown = [tok for tok, a in zip(tokens, actions, strict=True) if a[0] == "oov"]
    if unknown and oov == "error":
        raise _unknown_words_error(unknown, len(vocab))
    if unknown and oov == "keep":
        warnings.warn(f"oov='keep': {len(unknown)} token(s) not in the mechanism's space were "
                      "released unchanged, without privacy protection", UserWarning, stacklevel=2)
    actions = [(oov,) if a[0] == "oov" else a for a in actions]
    to_sample = [a[1] for a in actions if a[0] == "word"]
    # One vectorised call: every token gets its own independent draw.
    drawn = iter(np.atleast_1d(mechanism.sample(to_sample, rng=rng)).tolist() if to_sample else [])
    out: list[str | None] = []
    for tok, a in zip(tokens, actions, strict=True):
        if a[0] == "word":
            w = str(next(drawn))
            out.append(_restore_case(tok, w) if preserve_case else w)
        elif a[0] == "keep":
            out.append(tok)
        elif a[0] == "mask":
            out.append(mask_token)
        else:
            out.append(None)

    if not isinstance(text_or_tokens, str):
        return [t for t in out if t is not None]
    if matches is None:
        return " ".join(t for t in out if t is not None)
    # Rebuild the text: replacements in place, the text between tokens (always white space: the
    # pattern matches every other character) untouched, except that a dropped token takes the
    # white space before it with it ("a , b" with "," dropped gives "a b").
    pieces, pos = [], 0
    for m, t in zip(matches, out, strict=True):
        if t is not None:
            pieces += [text[pos:m.start()], t]
        pos = m.end()
    pieces.append(text[pos:])
    result = "".join(pieces)
    return result if text[:1].isspace() else result.lstrip()


def _accepts_text(mech: Mechanism, lines: list[str]) -> bool:
    """Text on a word space: some line holds more than one token, or one word that is a label
    in another case (``Japan`` for ``japan``), so that one word is read as the same word in a
    sentence. Lines of exact labels and indices are left to ``mdp privatize`` itself."""
    labels = mech.space.labels
    if labels is None:
        return False
    exact = set(np.asarray(labels).astype(str))
    folded = {w.lower() for w in exact}
    return any(len(s.split()) > 1 or (s.strip() not in exact and s.strip().lower() in folded)
               for s in lines)


#: ``mdp privatize`` input format: free text on a word space (one privatized line per line).
TEXT_INPUT = InputFormat(accepts=_accepts_text,
                         privatize=lambda mech, lines, *, rng=None, **kw:
                         [privatize(s, mech, rng=rng, **kw) for s in lines],
                         options=("oov",))
