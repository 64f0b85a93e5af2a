"""A decoder's text as a person writes it: WordPiece's spaced punctuation joined back, brackets and
quotes that never close (or never open) dropped, no dangling end. Hand cases, the encoder's
tokens unchanged where only spacing moved, and the compound rule of the non-word counts."""
import pytest
from tokenizers import Tokenizer

from eqi_core.decoder.base import detokenize, is_known_word, words
from eqi_core.encoders import minilm_l6_dir


@pytest.mark.parametrize("decoded, written", [
    ("what ' s the parkinson ' s disease?", "what's the parkinson's disease?"),
    ("i ' ve been watching, but can ' t", "i've been watching, but can't"),
    ("non - cardiac 1999 - 2000 data / cookies", "non-cardiac 1999-2000 data/cookies"),
    ("price per square foot : $ 3. 25 to $ 5. 50, 1. 8 %", "price per square foot: $3.25 to $5.50, 1.8%"),
    ("between 1, 2 and 10, 000", "between 1, 2 and 10,000"),  # a list stays a list; thousands join
    ("famciclovir ( famvir ) is used", "famciclovir (famvir) is used"),
    ("kinase 2 ( een - 2 ) - induced phenotypes", "kinase 2 (een-2)-induced phenotypes"),
    ('the " kick - ass " film', 'the "kick-ass" film'),
    ("legionnaires ' disease in the u. s. (e. g. ohio)", "legionnaires' disease in the u.s. (e.g. ohio)"),
    ("a rule, i. e., a law (made in the u. s.)", "a rule, i.e., a law (made in the u.s.)"),
    ("military suicide causes in the u. s", "military suicide causes in the u.s"),  # no last period
    ("the u. k economy, p. s", "the u.k economy, p.s"),
    ("low vitamin d. a deficiency of iron", "low vitamin d. a deficiency of iron"),  # an initial, then "a"
    ("the students ' books and ' quoted ' words", "the students ' books and ' quoted ' words"),  # which pairs?
    ("the students ' ' books", "the students ' ' books"),  # two: left as decoded
    ("a ' word ' in quotes", "a ' word ' in quotes"),  # a quoted word is not a possessive
])
def test_spaced_punctuation_is_joined_as_written(decoded, written):
    assert detokenize(decoded) == written


@pytest.mark.parametrize("decoded, written", [
    ("the length of the midpoint is (", "the length of the midpoint is"),  # cut at the maximum length
    ("a cross - structural p16 ( mir", "a cross-structural p16 mir"),
    ("commonwealth of nations ) one of those", "commonwealth of nations one of those"),
    ("sigmet, refers to a set of : ", "sigmet, refers to a set of"),
    ("rn vs bsn -", "rn vs bsn"),
    (', the " extreme " cause of it “', 'the "extreme" cause of it'),
    ('" application adjective is used "', '"application adjective is used"'),  # a closed quote stays
    ('an " odd quote', "an odd quote"),
    ("( sports ) the team that defends", "(sports) the team that defends"),
    ("( ( - ,", ""),
])
def test_unclosed_brackets_and_dangling_punctuation_are_dropped(decoded, written):
    assert detokenize(decoded) == written
    assert detokenize(written) == written  # idempotent


def test_the_encoder_reads_joined_text_as_the_same_tokens():
    """Only spacing moved: MiniLM's tokenizer splits punctuation off again, so every embedding (and
    every nDCG) is what it was; only word counts see the joined words."""
    tok = Tokenizer.from_file(str(minilm_l6_dir() / "tokenizer.json"))
    for text in ["what ' s the parkinson ' s disease?", "non - cardiac 1999 - 2000 ( mir ) can ' t",
                 'the " kick - ass " film, 1. 8 % i \' ve', "costs : $ 3. 25 to $ 5. 50",
                 "kinase 2 ( een - 2 ) - induced phenotypes", "legionnaires ' disease in the u. s.",
                 "military suicide causes in the u. s", "the u. k economy"]:
        assert tok.encode(detokenize(text)).ids == tok.encode(text).ids, text
    assert words("parkinson ' s disease") == ["parkinson", "s", "disease"]
    assert words(detokenize("parkinson ' s disease")) == ["parkinson's", "disease"]  # as a reference writes it


def test_a_compound_is_a_known_word_when_its_parts_are():
    known = {"wi", "fi", "parkinson", "s", "cardiac"}
    assert is_known_word("wi-fi", known) and is_known_word("parkinson's", known)
    assert is_known_word("1999-2000", known) and is_known_word("2021", known)
    assert not is_known_word("non-cardiac", known)  # 'non' is not known
    assert not is_known_word("xhanant", known) and not is_known_word("-", known)


@pytest.mark.parametrize("text, garbled", [
    ("a¢ the definition of the environment", True),      # a bullet's remains ("â€¢")
    ("what is absolute host prescription for intro¦m", True),  # an ellipsis' ("â€¦")
    ("can a™t stop", True), ("the a€œbest", True),
    ("costs 50¢ or €5 or 5 €", False),                     # currency stays currency
    ("the ¢ sign", True), ("the € sign", True),
    ("below 16 °c (423 k)", False), ("windows® and linux", False), ("the greek letters αβγ", False),
    ("a½ cup of sugar", True), ("8 a· 3 means multiply", True), ("a£5 fee", True),  # "Â" before a sign
    ("1½ cups", False), ("nº 5", False), ("£5 fee", False),
])
def test_mis_decoded_utf8_is_recognised(text, garbled):
    from eqi_core.decoder.base import has_mojibake

    assert has_mojibake(text) == garbled


def test_a_degree_sign_loses_the_a_that_mis_decoded_utf8_left():
    assert detokenize("below 16 a°c (423 k) or 61 a°f") == "below 16 °c (423 k) or 61 °f"
    assert detokenize("rifampin a® and (a°c)") == "rifampin ® and (°c)"
    assert detokenize("a data°c") == "a data°c"  # only a lone "a" glued to the sign
    assert detokenize("hydrogen is liquid below -273 k (aº c)") == "hydrogen is liquid below -273 k (º c)"


def test_a_garbled_candidate_is_set_aside_when_a_clean_one_exists():
    from eqi_core.decoder.base import uses_known_words
    from eqi_core.decoder.rerank import fluent

    known = {"the", "definition", "of", "environment", "a"}
    assert uses_known_words("the definition of environment", known)
    assert not uses_known_words("a¢ the definition of environment", known)
    assert fluent(["a¢ the definition of environment", "the definition of environment"], known) == [
        "the definition of environment"]
    assert fluent(["a¢ the definition of environment"], known) == ["a¢ the definition of environment"]  # else kept
