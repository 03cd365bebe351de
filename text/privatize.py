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
from mdp.vocabulary.mode import VocabularyMechanism

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
              mask_token: str = "<unk>", keep_words=None) -> str | list[str]:
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
    keep_words : None, "stop_words" or iterable of str, default None
        Words released unchanged, *unprotected* (warns): CusText+ (Chen et al. 2023) keeps
        stop words, which carry little about the writer and much about the sentence.
        ``"stop_words"`` is scikit-learn's English list (``ENGLISH_STOP_WORDS``, 318 words);
        matched lower-cased. ``None`` (default): every word is privatized.

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
    plan = _plan(mechanism, oov, punctuation, lowercase, mask_token)
    keep = _keep_set(keep_words)
    rng = check_rng(rng)
    tokens, actions = _tokens_and_actions(text_or_tokens, plan, tokenizer)
    actions = _keep_words(tokens, actions, keep)
    if oov == "error" and any(a[0] == "oov" for a in actions):
        positions, n_words = _unknown_positions(actions)
        raise _unknown_words_error([(None, positions)], n_words, len(plan.vocab))
    _warn_unprotected([(tokens, actions)], oov, preserve_case)
    released = _release([(tokens, actions)], mechanism, rng, oov, preserve_case, mask_token)[0]
    if not isinstance(text_or_tokens, str):
        return released
    return " ".join(released)


def _plan(mechanism, oov: str, punctuation: str, lowercase: bool, mask_token: str) -> _Plan:
    """The token plan of a word space, after checking the mechanism and the policies."""
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
    vocab = mechanism.space.label_table()
    return _Plan(vocab, oov, punctuation, lowercase)


def _tokens_and_actions(text_or_tokens, plan: _Plan, tokenizer) -> tuple[list[str], list[tuple]]:
    """The tokens of a text (or a token list), checked, and the plan's action for each."""
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
    return tokens, [plan(tok) for tok in tokens]


def _keep_set(keep_words) -> frozenset:
    """The words ``keep_words`` names, lower-cased (see :func:`privatize`)."""
    if keep_words is None:
        return frozenset()
    if isinstance(keep_words, str):
        if keep_words != "stop_words":
            raise ParameterError("keep_words must be None, 'stop_words' or a list of words; a "
                                 "single string other than 'stop_words' is refused (pass a list)")
        from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

        return frozenset(ENGLISH_STOP_WORDS)
    try:
        words = list(keep_words)
    except TypeError:
        raise ParameterTypeError(f"keep_words must be None, 'stop_words' or an iterable of "
                                 f"words, got {type(keep_words).__name__}") from None
    for k, w in enumerate(words):
        if not isinstance(w, str):
            raise ParameterTypeError(f"keep_words[{k}] must be a string, got {type(w).__name__}")
    return frozenset(w.lower() for w in words)


def _keep_words(tokens: list[str], actions: list[tuple], keep: frozenset) -> list[tuple]:
    """Words of ``keep`` marked to be released unchanged (``("kept_word",)``)."""
    if not keep:
        return actions
    return [("kept_word",) if a[0] == "word" and tok.lower() in keep else a
            for tok, a in zip(tokens, actions, strict=True)]


def _warn_unprotected(texts: list[tuple[list[str], list[tuple]]], oov: str,
                      preserve_case: bool) -> None:
    """One warning per kind of token released without protection, over all the texts."""
    unknown = sum(a[0] == "oov" for _, actions in texts for a in actions)
    if unknown and oov == "keep":
        warnings.warn(f"oov='keep': {unknown} token(s) not in the mechanism's space were "
                      "released unchanged, without privacy protection", UserWarning, stacklevel=3)
    kept = sum(a[0] == "keep" for _, actions in texts for a in actions)
    if kept:
        warnings.warn(f"punctuation='keep': {kept} non-word token(s) (punctuation, symbols, "
                      "invisible characters) were released unchanged, without privacy "
                      "protection", UserWarning, stacklevel=3)
    words_kept = sum(a[0] == "kept_word" for _, actions in texts for a in actions)
    if words_kept:
        warnings.warn(f"keep_words: {words_kept} word(s) of the list were released unchanged, "
                      "without privacy protection", UserWarning, stacklevel=3)
    if preserve_case and any(a[0] == "word" and tok != tok.lower()
                             for tokens, actions in texts
                             for tok, a in zip(tokens, actions, strict=True)):
        warnings.warn("preserve_case=True: the case pattern of the input words (capitals) is "
                      "released unchanged, without privacy protection", UserWarning, stacklevel=3)


def _release(texts: list[tuple[list[str], list[tuple]]], mechanism, rng, oov: str,
             preserve_case: bool, mask_token: str) -> list[list[str]]:
    """The released tokens of every text: one vectorised draw for all their words, each word
    its own independent draw (the same draws as one call per text, in order)."""
    to_sample = [a[1] for _, actions in texts for a in actions if a[0] == "word"]
    drawn = iter(np.atleast_1d(mechanism.sample(to_sample, rng=rng)).tolist() if to_sample else [])
    released = []
    for tokens, actions in texts:
        out: list[str] = []
        for tok, a in zip(tokens, actions, strict=True):
            if a[0] == "word":
                w = str(next(drawn))
                out.append(_restore_case(tok, w) if preserve_case else w)
            elif a[0] in ("keep", "kept_word"):
                out.append(tok)
            elif a[0] == "mask" or (a[0] == "oov" and oov == "mask"):
                out.append(mask_token)
            elif a[0] == "oov" and oov == "keep":
                out.append(tok)
        released.append(out)
    return released


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


def privatize_lines(mech, lines: list[str], *, rng=None, tokenizer=None, oov: str = "error",
                    punctuation: str = "drop", lowercase: bool = True,
                    preserve_case: bool = False, mask_token: str = "<unk>",
                    keep_words=None) -> list[str]:
    """One privatized line per line, as :func:`privatize` gives each, with one draw for all.

    Every line is tokenized and checked first: with ``oov="error"`` (the default) a text with
    unknown words is refused before any draw, naming their lines and positions. Then the words
    of all the lines are drawn in one vectorised call (each word its own independent draw), so a
    file of many short lines costs one pass of the mechanism, not one per line.
    """
    plan = _plan(mech, oov, punctuation, lowercase, mask_token)
    keep = _keep_set(keep_words)
    rng = check_rng(rng)
    texts = [_tokens_and_actions(s, plan, tokenizer) for s in lines]
    if oov == "error" and any(a[0] == "oov" for _, actions in texts for a in actions):
        unknown, n_words = [], 0
        for line, (_, actions) in enumerate(texts, start=1):
            positions, n = _unknown_positions(actions)
            unknown.append((line, positions))
            n_words += n
        raise _unknown_words_error(unknown, n_words, len(plan.vocab))
    texts = [(tokens, _keep_words(tokens, actions, keep)) for tokens, actions in texts]
    _warn_unprotected(texts, oov, preserve_case)
    return [" ".join(out) for out in _release(texts, mech, rng, oov, preserve_case, mask_token)]


#: ``mdp privatize`` input format: free text on a word space (one privatized line per line).
TEXT_INPUT = InputFormat(accepts=_accepts_text,
                         privatize=lambda mech, lines, *, rng=None, **kw:
                         [csv_cell(out) for out in privatize_lines(mech, lines, rng=rng, **kw)],
                         options=("oov", "keep_words"))
