"""The fluency judge: interpolated Kneser-Ney trigram probabilities against values worked out by hand
on a two-sentence corpus (module docstring of ``eqi_core.decoder.language_model`` has the formula)."""
import math

import numpy as np
import pytest

from eqi_core.decoder.language_model import KneserNeyLM
from eqi_core.errors import DataError

# Corpus "a b", "a c" (every word kept): vocabulary <s> </s> <unk> a b c, V = 6. Bigram types
# (<s> a) (a b) (a c) (b </s>) (c </s>): N1+(. .) = 5; N1+(. a) = N1+(. b) = N1+(. c) = 1,
# N1+(. </s>) = 2, four words continued, so P1(w) = (max(N1+(. w) - .75, 0) + .75 * 4 / 6) / 5:
P1 = {"a": 0.15, "b": 0.15, "c": 0.15, "</s>": 0.35, "<unk>": 0.1, "<s>": 0.1}


@pytest.fixture(scope="module")
def lm():
    return KneserNeyLM.fit(["a b", "A c"], min_count=1)


def prob(lm, u, v, w):
    ids = {word: i for i, word in enumerate(lm.vocab)}
    arr = [np.array([ids[x]]) for x in (u, v, w)]
    return float(np.exp(lm.log_probs(*arr))[0])


def test_unigram_level_by_hand(lm):
    # a context never seen at any order falls through to P1
    assert lm.vocab[:3] == ["<s>", "</s>", "<unk>"]
    # P(b | c c): (c c) unseen, (c) continues only with </s>: .75 * 1 * P1(b) / 1
    assert prob(lm, "c", "c", "b") == pytest.approx(0.75 * P1["b"])


def test_trigram_probabilities_by_hand(lm):
    # P(a | <s> <s>): c = 2 of 2, one follower; P2(a | <s>) = (1 - .75 + .75 * 1 * .15) / 1 = .3625
    assert prob(lm, "<s>", "<s>", "a") == pytest.approx((2 - 0.75 + 0.75 * 1 * 0.3625) / 2)
    # P(b | <s> a): 1 of 2, two followers; P2(b | a) = (1 - .75 + .75 * 2 * .15) / 2 = .2375
    assert prob(lm, "<s>", "a", "b") == pytest.approx((1 - 0.75 + 0.75 * 2 * 0.2375) / 2)
    # P(</s> | a b): P2(</s> | b) = .25 + .75 * .35 = .5125
    assert prob(lm, "a", "b", "</s>") == pytest.approx(0.25 + 0.75 * 0.5125)
    # unseen trigram in a seen context: P(c | <s> <s>) = .75 * 1 * P2(c | <s>), P2 = .75 * .15
    assert prob(lm, "<s>", "<s>", "c") == pytest.approx(0.75 * 0.75 * 0.15 / 2)


@pytest.mark.parametrize("context", [("<s>", "<s>"), ("<s>", "a"), ("a", "b"), ("c", "a"), ("b", "b")])
def test_every_context_is_a_distribution(lm, context):
    ids = {word: i for i, word in enumerate(lm.vocab)}
    w = np.arange(lm.size)
    u = np.full(lm.size, ids[context[0]])
    v = np.full(lm.size, ids[context[1]])
    assert np.exp(lm.log_probs(u, v, w)).sum() == pytest.approx(1.0)


def test_perplexity_is_per_token_over_all_texts(lm):
    p = [(2 - 0.75 + 0.75 * 0.3625) / 2, (1 - 0.75 + 0.75 * 2 * 0.2375) / 2, 0.25 + 0.75 * 0.5125]
    got = lm.score(["a b"])
    assert got["tokens"] == 3 and got["oov"] == 0.0
    assert got["perplexity"] == pytest.approx(math.exp(-sum(map(math.log, p)) / 3))
    # an unknown word is <unk> (finite), counted in the oov share; an empty text is not scored
    both = lm.score(["a zebra", "", "..."])
    assert both["tokens"] == 3 and both["oov"] == pytest.approx(0.5) and math.isfinite(both["perplexity"])


def test_fluent_text_beats_the_same_words_shuffled():
    texts = ["what is the capital of france", "what is the capital of spain", "what is the population of france",
             "how many people live in spain", "what is the currency of france"] * 3
    lm = KneserNeyLM.fit(texts)
    assert lm.score(["what is the capital of spain"])["perplexity"] < lm.score(["capital spain the what of is"])["perplexity"]


def test_round_trip_through_a_file_without_pickle(lm, tmp_path):
    path = tmp_path / "lm.npz"
    lm.save(path)
    again = KneserNeyLM.load(path)
    assert again.vocab == lm.vocab and again.score(["a c", "c a"]) == lm.score(["a c", "c a"])


def test_too_little_text_is_one_line():
    with pytest.raises(DataError, match="no word is seen 2 times"):
        KneserNeyLM.fit(["one", "two"])
