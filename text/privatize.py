"""Privatize a text word by word with a mechanism over a word space (Imola et al. 2022, section 5.1).

Each in-vocabulary token ``w`` is replaced by an independent draw of ``M(w)`` from the mechanism
(any registered family built on a word space, or Madlib). Tokens that are not words of the space
follow the ``oov`` policy; tokens without letters or digits (punctuation, symbols, emoji,
zero-width characters, lone combining marks) follow the ``punctuation`` policy.

Safe defaults: the output holds nothing but mechanism outputs, joined by single spaces.

- ``oov="error"`` refuses a text with words outside the space (the error gives their count
  and positions, never the words, and the options). ``oov="mask"`` and ``oov="drop"`` release
  nothing about such words but their position (mask) or nothing at all (drop);
  ``oov="keep"`` releases them unchanged and warns.
- ``punctuation="drop"`` removes every non-word token; ``"keep"`` releases them unchanged and
  warns; ``"privatize"`` treats them as words.
- Replacements are the space's labels as they are (lower-case for GloVe): the case of the input
  is not released. ``preserve_case=True`` gives each replacement its token's case pattern,
  which is *not* protected (an upper-case input word gives an upper-case output whatever the
  draw) and warns.
- The text between tokens (spaces, tabs, line breaks) is never copied: the output's layout says
  nothing but the number of released tokens.

Privacy: each replaced token is ``epsilon``-mDP with respect to the word metric; a text of ``k``
replaced tokens is ``k * epsilon``-mDP by composition (in the sense that two texts differing in
tokens ``w_i -> w_i'`` are indistinguishable up to ``exp(epsilon * sum_i d(w_i, w_i'))``). What
is not protected: the number of tokens and their positions (mask), and whatever is released
by name (``oov="keep"``, ``punctuation="keep"``, ``preserve_case=True``).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Sequence

import numpy as np

from mdp.errors import ParameterError, ParameterTypeError
from mdp.mechanism import Mechanism
from mdp.plugins import InputFormat
from mdp.release import check_utf8, csv_cell
from mdp.validation import check_rng
from mdp.vocabulary_mode import VocabularyMechanism

__all__ = ["privatize", "tokenize", "TOKEN_PATTERN", "OOV_POLICIES", "PUNCTUATION_POLICIES"]

#: Default tokens: words (letters/digits/underscore, inner apostrophes kept, e.g. "don't"), or a
#: single character that is neither a word character nor white space (punctuation, symbols).
TOKEN_PATTERN = re.compile(r"\w+(?:['\u2019]\w+)*|[^\w\s]")
OOV_POLICIES = ("error", "mask", "drop", "keep")
# Unknown words named in the error message (the rest are counted).
_MAX_LISTED = 20
PUNCTUATION_POLICIES = ("drop", "keep", "privatize")


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


def _numbers(ks: list[int]) -> str:
    """``[2]`` -> ``"word 2"``, ``[2, 5, 9]`` -> ``"words 2, 5 and 9"`` (at most
    :data:`_MAX_LISTED` numbers, the rest counted)."""
    if len(ks) == 1:
        return f"word {ks[0]}"
    shown = [str(k) for k in ks[:_MAX_LISTED]]
    if len(ks) > _MAX_LISTED:
        return f"words {', '.join(shown)} and {len(ks) - _MAX_LISTED} more"
    return f"words {', '.join(shown[:-1])} and {shown[-1]}"


def _unknown_words_error(unknown: list[tuple[int | None, list[int]]], n_words: int,
                         n_vocab: int) -> ParameterError:
    """The refusal of words outside the space: their count and positions (1-based word numbers,
    per line when ``line`` is given), never the words themselves (the text is private)."""
    parts = [_numbers(ks) + ("" if line is None else f" of line {line}")
             for line, ks in unknown if ks]
    listed = "; ".join(parts[:_MAX_LISTED])
    if len(parts) > _MAX_LISTED:
        listed += f"; and words of {len(parts) - _MAX_LISTED} more lines"
    count = sum(len(ks) for _, ks in unknown)
    where = "" if any(line is not None for line, _ in unknown) else " of the text"
    head = (f"{listed}{where} {'is' if count == 1 else 'are'} not in the vocabulary of the "
            f"mechanism's space ({count} of {n_words} words; the space has {n_vocab} words) "
            "and cannot be privatized. Choose ")
    tail = ", or build the mechanism on a vocabulary that contains them."

    def options(mask: str, drop: str, keep: str) -> str:
        return (f"{mask} (replace each by the mask token), {drop} (remove them) or {keep} "
                "(release them unchanged: NOT private)")

    return ParameterError(head + options("oov='mask'", "oov='drop'", "oov='keep'") + tail,
                          cli_message=head + options("--oov mask", "--oov drop", "--oov keep")
                          + tail)


def _unknown_positions(actions: list[tuple]) -> tuple[list[int], int]:
    """1-based numbers of the unknown words among the words (tokens that are not punctuation
    under a drop/keep policy), and the number of words."""
    words = [a for a in actions if a[0] in ("word", "oov")]
    return [k for k, a in enumerate(words, start=1) if a[0] == "oov"], len(words)


def privatize(text_or_tokens: str | Sequence[str], mechanism: Mechanism, *, rng=None,
              tokenizer: Callable[[str], list[str]] | None = None, oov: str = "error",
              punctuation: str = "drop", lowercase: bool = True, preserve_case: bool = False,
              mask_token: str = "<unk>") -> str | list[str]:
    """Replace every in-vocabulary token by the mechanism's output (one fresh draw per token).

    Parameters
    ----------
    text_or_tokens : str or sequence of str
        A text (returns a string) or a list of tokens (returns a list).
    mechanism : Mechanism or VocabularyMechanism
        Built on a space whose labels are words (vocabulary mode: e.g. ``mdp.build("madlib",
        text.full_glove_space(), 10)``) (e.g. ``mdp.build("madlib",
        text.sample_vocabulary(...), eps)``).
    rng : None, int or numpy.random.Generator
    tokenizer : callable ``str -> list[str]``, optional
        Only for string input. ``None`` (default) uses :data:`TOKEN_PATTERN`. The output tokens
        are joined with single spaces either way (the input's spacing and line breaks are not
        released).
    oov : {"error", "mask", "drop", "keep"}, default "error"
        Tokens that are not words of the space: refused with a
        :class:`~mdp.errors.ParameterError` that gives their count and positions, never the
        words (default: nothing is released),
        replaced by ``mask_token``, removed, or left unchanged. ``"keep"`` releases those tokens
        *unprotected* and warns (:class:`UserWarning`).
    punctuation : {"drop", "keep", "privatize"}, default "drop"
        Tokens without letters or digits (punctuation, symbols, emoji, zero-width characters,
        combining marks): removed, left unchanged (*unprotected*, warns), or treated like any
        other token (privatized when they are words of the space, as in the full GloVe, else
        ``oov``).
    lowercase : bool, default True
        A token not in the vocabulary is looked up lower-cased as well (GloVe is lower-case).
    preserve_case : bool, default False
        Give the replacement the case pattern of the token (``"Paris"`` -> ``"London"``,
        ``"NASA"`` -> ``"ESA"``-style upper case). The case pattern is released *unprotected*
        (a capitalised input gives a capitalised output on every draw): warns.
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
        are not in the vocabulary (the message gives their count and positions and the other policies).

    Warns
    -----
    UserWarning
        ``oov="keep"`` and tokens outside the vocabulary were released unchanged;
        ``punctuation="keep"`` and non-word tokens were released unchanged; ``preserve_case``
        and a replaced token's case pattern was released.

    Examples
    --------
    >>> import mdp, text                                                 # doctest: +SKIP
    >>> space = text.sample_vocabulary(text.load_glove(), 200, rng=0)    # doctest: +SKIP
    >>> mech = mdp.build("madlib", space, 8.0, rng=0)                    # doctest: +SKIP
    >>> text.privatize("The cat sat.", mech, rng=1, oov="mask")          # doctest: +SKIP
    """
    if not isinstance(mechanism, (Mechanism, VocabularyMechanism)):
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
            tokens = TOKEN_PATTERN.findall(text)
        else:
            if not callable(tokenizer):
                raise ParameterTypeError(f"tokenizer must be callable, got {type(tokenizer).__name__}")
            tokens = list(tokenizer(text))
    else:
        if tokenizer is not None:
            raise ParameterTypeError("tokenizer applies to string input only; got a sequence of tokens")
        if not isinstance(text_or_tokens, (Sequence, np.ndarray)):
            raise ParameterTypeError("text_or_tokens must be a string or a sequence of strings, got "
                            f"{type(text_or_tokens).__name__}")
        tokens = list(text_or_tokens)
    for k, tok in enumerate(tokens):
        if not isinstance(tok, str):
            raise ParameterTypeError(f"token {k} must be a string, got {type(tok).__name__}")
        if not tok:
            raise ParameterError(f"token {k} is empty")
    if isinstance(text_or_tokens, str):
        check_utf8(text_or_tokens, "text")
    else:
        for k, tok in enumerate(tokens):
            check_utf8(tok, f"token {k}")

    actions = [plan(tok) for tok in tokens]
    unknown = [tok for tok, a in zip(tokens, actions, strict=True) if a[0] == "oov"]
    if unknown and oov == "error":
        positions, n_words = _unknown_positions(actions)
        raise _unknown_words_error([(None, positions)], n_words, len(vocab))
    if unknown and oov == "keep":
        warnings.warn(f"oov='keep': {len(unknown)} token(s) not in the mechanism's space were "
                      "released unchanged, without privacy protection", UserWarning, stacklevel=2)
    kept = sum(1 for a in actions if a[0] == "keep")
    if kept:
        warnings.warn(f"punctuation='keep': {kept} non-word token(s) (punctuation, symbols, "
                      "invisible characters) were released unchanged, without privacy "
                      "protection", UserWarning, stacklevel=2)
    if preserve_case and any(a[0] == "word" and tok != tok.lower()
                             for tok, a in zip(tokens, actions, strict=True)):
        warnings.warn("preserve_case=True: the case pattern of the input words (capitals) is "
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

    released = [t for t in out if t is not None]
    if not isinstance(text_or_tokens, str):
        return released
    return " ".join(released)


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


def privatize_lines(mech, lines: list[str], *, rng=None, **options) -> list[str]:
    """One privatized line per line (one :func:`privatize` call each), after refusing, before
    any draw, a text with unknown words (``oov="error"``), naming their lines and positions."""
    rng = check_rng(rng)
    if options.get("oov", "error") == "error" and mech.space.labels is not None:
        # refuse before any draw, with the unknown words' positions line by line
        vocab = {str(w): i for i, w in enumerate(mech.space.labels.tolist())}
        plan = _Plan(vocab, "error", options.get("punctuation", "drop"),
                     options.get("lowercase", True))
        tokenizer = options.get("tokenizer") or TOKEN_PATTERN.findall
        unknown, n_words = [], 0
        for line, s in enumerate(lines, start=1):
            positions, n = _unknown_positions([plan(t) for t in tokenizer(s)]
                                              if isinstance(s, str) and callable(tokenizer)
                                              else [])
            unknown.append((line, positions))
            n_words += n
        if any(ks for _, ks in unknown):
            raise _unknown_words_error(unknown, n_words, len(vocab))
    return [privatize(s, mech, rng=rng, **options) for s in lines]


#: ``mdp privatize`` input format: free text on a word space (one privatized line per line).
TEXT_INPUT = InputFormat(accepts=_accepts_text,
                         privatize=lambda mech, lines, *, rng=None, **kw:
                         [csv_cell(out) for out in privatize_lines(mech, lines, rng=rng, **kw)],
                         options=("oov",))
