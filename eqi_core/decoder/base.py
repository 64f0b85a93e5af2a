"""QueryDecoder protocol: a point of a dense encoder's space -> candidate query strings with scores.

Every decoder names the encoder whose space it inverts; callers check that it matches the ranker
they are traversing, so a decoder is never applied to another encoder's embeddings.
"""
from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from eqi_core.errors import DataError


@dataclass(frozen=True)
class Candidate:
    """One decoded query. ``score``: the decoder's own confidence (log-probability for the neural
    decoder, cosine to the target for guided correction and the nearest-query baseline)."""

    text: str
    score: float
    cosine: float | None = None  # cosine between enc(text) and the decoded point, when measured
    source: str = ""


@runtime_checkable
class QueryDecoder(Protocol):
    encoder_id: str
    name: str

    def decode(self, embeddings: np.ndarray, n: int = 5) -> list[list[Candidate]]:
        """For each row of ``embeddings`` (unit vectors of ``encoder_id``'s space), up to ``n``
        candidates, best first."""
        ...


@dataclass
class EncoderBinding:
    """What ties a decoder checkpoint to its encoder and tokenizer (both decoder configs begin with
    it): the encoder's id and dimension, the tokenizer's digest, its size and special ids, and the
    width of the word embeddings."""

    encoder_id: str
    encoder_dim: int
    vocab_size: int
    tokenizer_sha: str
    bos_id: int
    eos_id: int
    pad_id: int
    word_dim: int


class DecoderError(DataError):
    """A decoder cannot be used as asked (wrong encoder, bad checkpoint): a one-line message."""


def card_of(folder: str | Path, what: str, example: str) -> Path:
    """``folder``/card.json when it is there; else one line naming the folder and what it should hold."""
    path = Path(folder) / "card.json"
    if not path.is_file():
        raise DecoderError(f"{folder}: no card.json; expected {what} folder (card.json and its weights, as {example})")
    return path


_WORD = re.compile(r"[a-z0-9]+(?:['-][a-z0-9]+)*")


def words(text: str) -> list[str]:
    """Lower-cased word tokens, punctuation dropped (as SQuAD-style token F1 counts them). ASCII
    letters and digits only: the decoder's reported metrics are counted this way (``terms`` for
    text in any script)."""
    return _WORD.findall(text.lower())


_TERM = re.compile(r"[^\W_]+(?:['-][^\W_]+)*")


def terms(text: str) -> list[str]:
    """Lower-cased words of any script, accents kept ("données", "東京"): the terms of a
    collection's own text (RM3's relevance model), where ``words`` would cut "café" to "caf"."""
    return _TERM.findall(text.lower())


def is_known_word(word: str, known) -> bool:
    """A word of ``words`` in ``known`` or a number; a compound ("wi-fi", "parkinson's") also when
    every part is (English compounds freely: "pro-functional" is two known words joined)."""
    if word in known or word.isdigit():
        return True
    parts = [w for w in re.split(r"['-]", word) if w]
    return len(parts) > 1 and all(w in known or w.isdigit() for w in parts)


# WordPiece decoding puts a space around every punctuation token: "parkinson ' s", "wi - fi",
# "( dme )", "1. 8 %". These rejoin them as the text was written (Hugging Face's
# ``clean_up_tokenization`` joins every " ' "; here only before a contraction or a possessive, so
# a quoted ' word ' keeps its spaces). The tokenizer splits both spellings into the same tokens, so
# the encoder reads the result exactly as before.
_JOINS = [
    (re.compile(r"(?<=\w) ([’']) (s|t|re|ve|ll|d|m)\b"), r"\1\2"),  # what ' s, can ' t, i ' ve
    (re.compile(r"(?<=[\w)\]]) ([-/]) (?=[\w(\[])"), r"\1"),         # wi - fi, 1999 - 2000, and / or, (een-2) - induced
    (re.compile(r"(?<=\d)\. (?=\d)"), "."),                          # 1. 8
    (re.compile(r"(?<=\d), (?=\d{3}\b)"), ","),                       # 10, 000
    (re.compile(r"(?<=\w) ([:;]) "), r"\1 "),                         # define : dog
    (re.compile(r"(?<=\d) %"), "%"),                                 # 8 %
    (re.compile(r"([$£€#]) (?=\d)"), r"\1"),                        # $ 3
    (re.compile(r"([(\[“‘]) "), r"\1"),                               # ( dme
    (re.compile(r" ([)\]”’])"), r"\1"),                               # dme )
    (re.compile(r"\b([a-z])\. ([a-z])\.(?=[ ,;:)]|$)"), r"\1.\2."),    # u. s., e. g., i. e.,
    # "in the u. s" (no last period: 14 of the query logs' queries write "u.s", 176 "u.s."); not before
    # "a" or "i", which start a sentence after an initial ("vitamin d. a deficiency")
    (re.compile(r"\b([a-z])\. ([b-hj-z])\b(?![.'’-])"), r"\1.\2"),      # u. s, u. k, p. s
]
# MS MARCO's passages hold UTF-8 read as cp1252 ("Â°" for a degree sign, "â€¢" for a bullet), which
# the uncased tokenizer folds to "a°", "a¢": the decoder learned to write them from passage crops.
# A degree (also written "º"), registered or copyright sign keeps its symbol; a bullet's, an ellipsis'
# or a quote's remains, or a lone "a" glued to another Latin-1 sign ("a·", "a½": "Â" before it),
# mark the text as garbled (``has_mojibake``): "intro¦m", "a¢ the definition". No logged query has one.
_STRAY_A = re.compile(r"(?<![a-z])a([°º®©])")
_MOJIBAKE = re.compile(r"¦|¤|a[€™œ]|(?<![\d$])¢|(?<!\d)(?<!\d )€(?! ?\d)|(?<![a-z0-9])a[\u00a1-\u00bf]")


def has_mojibake(text: str) -> bool:
    """Whether ``text`` holds the remains of mis-decoded UTF-8 (a cent sign is one only away from a
    number, a euro sign only away from a number on either side)."""
    return bool(_MOJIBAKE.search(text))


# A decoder that spells words piece by piece can glue letters to letters with a sign between them:
# "schnau´tpa´sca", "lifenɛodori". ``words`` splits such a string at the sign into parts the word list
# may know ("tpa", "sca"), so each side of a sign inside a word is held to what real text does there
# ("co₂", "m²", "45°c", "£50", "h₂o"): the letters before it a known word or a number, those after it a
# number, or one letter after a number or a symbol of one or two ("bsn°c", "laws²p" are made up).
_RUN = re.compile(r"[a-z0-9]+|[^a-z0-9]+")


def glues_made_up_word(word: str, known, inner_only: bool = True) -> bool:
    """Whether ``word`` (no space in it) joins runs of letters across a sign as real text does not.
    ``inner_only``: only a non-ASCII sign with letters on both sides counts, not a dash, an
    apostrophe or a letter of any script (written text: "“word”", "(een-2)-induced", "5‐ht",
    "zürich", "nf-κb" are fine); otherwise any sign does, at the edges too (the decoding constraint,
    which reads WordPiece pieces, where a sign inside a word is never followed by more letters). The
    run after the last sign may still be growing: the rule holds for it as it stands."""
    runs = _RUN.findall(word.lower())
    for i, run in enumerate(runs):
        if run[0] in _ALNUM:
            continue
        before = runs[i - 1] if i > 0 else ""
        after = runs[i + 1] if i + 1 < len(runs) else ""
        if inner_only and (run.isascii() or not before or not after or all(_joins(ch) for ch in run)
                           or any(ch.isalpha() for ch in run)):
            continue
        if before and not (before in known or before.isdigit()):
            return True
        if after and not after.isdigit() and (len(after) > 1 or not (len(before) <= 2 or before.isdigit())):
            return True
    return False


_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")


def _joins(ch: str) -> bool:
    """A hyphen or dash of any script ("5‐ht", "tnf–α") or a typeset apostrophe ("that’s"): written
    text joins words with them as with "-" and "'"."""
    return ch in "’‘′" or unicodedata.category(ch) == "Pd"


# Spelling piece by piece, a decoder also glues letters of another script to a Latin word:
# "proteinα2", "withα", "alphaβ9", "ptenα3αsα2α23αlα3αs". Real text writes a Greek letter after an
# acronym ("pparγ", "tnfα", "pdgfrα"), a number ("hif-1α", "α2β1") or a dash ("nf-κb", "receptor-α"):
# of 1,664 such words in SciFact's and DL19's passages and the query logs, none follows an English word
# of four letters or more (a WordNet lemma) or a run of more than seven letters, and none holds more than
# three runs of them between slashes ("αvβ3/αvβ5-specific").
def glues_other_script(word: str, english) -> bool:
    """Whether ``word`` (no space in it) glues letters of a non-Latin script to a Latin word as real
    text does not (``english``: words an acronym is not, WordNet's lemmas)."""
    for part in word.lower().split("/"):
        runs = _RUN.findall(part)
        foreign = 0
        for i, run in enumerate(runs):
            if run[0] in _ALNUM or not any(_other_script(ch) for ch in run):
                continue
            foreign += 1
            before = runs[i - 1] if i > 0 and not _joins(run[0]) else ""
            if before and not before[-1].isdigit() and (len(before) > 7 or (len(before) >= 4 and before in english)):
                return True
        if foreign > 3:
            return True
    return False


def _other_script(ch: str) -> bool:
    return ch.isalpha() and "LATIN" not in unicodedata.name(ch, "LATIN")


def english_words() -> frozenset[str]:
    """WordNet's lemma words (``glues_other_script``); none where WordNet cannot be read."""
    from eqi_core.decoder.natural_eval import wordnet_words

    try:
        return wordnet_words()
    except (OSError, DataError):
        return frozenset()


def made_up_words(text: str, known, english=None) -> list[str]:
    """The words of ``text`` (as ``words`` splits it) that are not known (``is_known_word``), with
    every part of a word glued up across a sign (``glues_made_up_word``) or to letters of another
    script (``glues_other_script``; ``english`` defaults to ``english_words()``) among them."""
    out = []
    for token in text.lower().split():
        parts = words(token)
        if not token.isascii() and (glues_made_up_word(token, known)
                                    or glues_other_script(token, english_words() if english is None else english)):
            out += parts
        else:
            out += [w for w in parts if not is_known_word(w, known)]
    return out


def uses_known_words(text: str, known) -> bool:
    """Every word of ``text`` known (``is_known_word``), none glued up from parts across a sign
    (``glues_made_up_word``) or to letters of another script (``glues_other_script``), and no garbled
    character between them: the test a candidate passes to be shown when some candidate does."""
    return not has_mojibake(text) and not made_up_words(text, known)


# a plural possessive ("legionnaires ' disease"): joined only when it is the text's one spaced
# apostrophe, so that a quoted ' word ' (two of them) keeps its spaces
_LONE_APOSTROPHE = re.compile(r" ' ")
_PLURAL_POSSESSIVE = re.compile(r"(?<=\ws) ' (?=\w)")
_QUOTED = re.compile(r'"\s*([^"]*?)\s*"')
_PAIRS = {"(": ")", "[": "]", "“": "”"}
_DANGLING_END = "([{“‘'-–—,;:/&"
_DANGLING_START = ")]}”’,;:.!?-–—/&"


def detokenize(text: str) -> str:
    """A decoder's text as a person would write it: punctuation joined back to its words, a
    bracket or quote that is never closed (or never opened) dropped, and no line ending on an
    open bracket, a comma or a hyphen nor starting on a closing one (a sampled text cut at the
    maximum length ends mid-phrase: "... pro-functional p16 ( mir"). No letter or digit is added
    or removed (``words`` reads a joined compound as one word, as it reads a reference's), but for
    the "a" that mis-decoded UTF-8 leaves before a degree sign ("16 a°c" -> "16 °c")."""
    for pattern, repl in _JOINS:
        text = pattern.sub(repl, text)
    text = _STRAY_A.sub(r"\1", text)  # "16 a°c" -> "16 °c"
    if len(_LONE_APOSTROPHE.findall(f" {text} ")) == 1:
        text = _PLURAL_POSSESSIVE.sub("' ", text)
    drop: set[int] = set()
    for open_, close in _PAIRS.items():
        stack = []
        for i, ch in enumerate(text):
            if ch == open_:
                stack.append(i)
            elif ch == close:
                if stack:
                    stack.pop()
                else:
                    drop.add(i)
        drop.update(stack)
    quotes = [i for i, ch in enumerate(text) if ch == '"']
    if len(quotes) % 2:
        drop.add(quotes[-1])
    if drop:
        text = "".join(ch for i, ch in enumerate(text) if i not in drop)
    text = _QUOTED.sub(r'"\1"', text)
    text = " ".join(text.split())
    while text and (text[-1] in _DANGLING_END or text[0] in _DANGLING_START):
        text = text.rstrip(_DANGLING_END).lstrip(_DANGLING_START).strip()
    return text


def fold(word: str) -> str:
    """A word as an uncased BERT tokenizer reads it, accents stripped ("données" -> "donnees"): "cafe"
    and "café" are one word to the dense ranker, so neither expands a query holding the other."""
    return "".join(c for c in unicodedata.normalize("NFKD", word) if not unicodedata.combining(c))


@lru_cache(maxsize=1)
def function_words() -> frozenset[str]:
    """NLTK's English stop words as bm25s ships them: the words a decoded query may repeat (the
    natural decoder's no-repeat rule and word constraint exempt exactly these; its shipped outputs
    were decoded with this list, so it stays separate from the longer ``stopwords``)."""
    try:
        from bm25s.stopwords import STOPWORDS_EN_PLUS
    except ImportError:  # a bare GPU training machine may lack bm25s; decoding here always has it
        return frozenset()
    return frozenset(STOPWORDS_EN_PLUS)


@lru_cache(maxsize=1)
def stopwords() -> frozenset[str]:
    """``function_words`` plus words glosses use as connectives ("used", "especially", "e.g."): what
    content-word counts, copy baselines and pseudo-queries skip."""
    return function_words() | {"used", "usually", "especially", "esp", "etc", "also", "often", "something",
                               "someone", "one", "may", "e", "g", "eg", "ie"}


def content_words(text: str) -> list[str]:
    """Words of ``text`` that carry content: not stop words, not single letters, not numbers."""
    stop = stopwords()
    return [w for w in words(text) if w not in stop and len(w) > 1 and not w.isdigit()]


def repeats_a_content_word(text: str, inflected: bool = False) -> bool:
    """True for "citizens certificates naturalization naturalization": a keyword list, not a query.
    With ``inflected``, also for a word repeated in another form ("how to baking bake bread",
    "a civil judgmental judgment"; one Snowball stem): the encoder rewards those repeats just as
    much, and the word list's no-repeat rule, which compares whole words, lets them through."""
    ws = content_words(text)
    if inflected:
        ws = _stemmer().stemWords(ws)
    return len(ws) != len(set(ws))


_SPACED_DOTS = re.compile(r"\.+|[a-z]\.")  # ". . ." and initials ("george r. r. martin") repeat on purpose


def stutters(text: str) -> bool:
    """True for "the other other people", "0, 0, 1" or "[1] [1]": a token (whitespace-delimited, any
    case) said twice in a row. Nucleus samples stutter on function words and numbers, which
    ``repeats_a_content_word`` lets through; real queries do it mostly as typos ("the the")."""
    tokens = text.lower().split()
    return any(a == b and not _SPACED_DOTS.fullmatch(a) for a, b in zip(tokens, tokens[1:]))


# words no phrase ends on: articles, possessives, most prepositions and the conjunctions (not "in", "on",
# "up" or "to", which end phrasal verbs: "log in", "turn on")
DANGLING = frozenset({"a", "an", "the", "of", "and", "or", "but", "nor", "with", "from", "for", "by", "between", "among",
                      "than", "whose", "which", "its", "their", "his", "her", "our", "your", "my", "both", "either",
                      "neither", "such", "as", "into", "onto", "via", "per", "including", "during", "because", "while",
                      "if", "whether", "although", "though"})
# a question may strand these at its end, after its verb: "what is famvir prescribed for", "what is it
# made of", "where does it come from", "what is it known as"; not after a noun ("... the level of")
STRANDED = frozenset({"of", "for", "with", "from", "by", "as", "into", "onto"})
QUESTION_STARTS = frozenset({"what", "which", "who", "whom", "whose", "where", "when", "why", "how", "is", "are", "was",
                             "were", "do", "does", "did", "can", "could", "should", "would", "will"})
STRANDING_VERBS = frozenset({"made", "known", "born", "come", "comes", "consist", "consists", "go", "goes", "look",
                             "looks", "use", "used", "mean", "means", "stand", "stands", "belong", "belongs", "grown",
                             "taken", "given", "built", "done", "paid", "sold", "found", "caught", "run", "live", "lives",
                             "work", "works", "apply", "applies", "die", "dies", "suffer", "suffers", "qualify", "pay",
                             "consisting", "looking", "referring", "waiting", "talking", "thinking", "living", "coming"})
_TRAILING = ",;:-–—("


def without_dangling_end(text: str) -> str:
    """``text`` without the words it cannot end on ("a greenhouse of gas resulting from the emission
    of", "... and both": ``DANGLING``; a question keeps a stranded preposition, ``STRANDED``) and a
    trailing comma, colon or dash: a nucleus sample cut at the decoder's length, or a fragment like
    the cut sentences it learned from. The first word always stays; whitespace is tidied."""
    tokens = text.split()
    question = bool(tokens) and tokens[0].lower() in QUESTION_STARTS
    while len(tokens) > 1 and _dangles(tokens, question):
        tokens.pop()
    if tokens and len(tokens[-1]) > 1:
        tokens[-1] = tokens[-1].rstrip(_TRAILING) or tokens[-1]
    return " ".join(tokens)


def _dangles(tokens: list[str], question: bool) -> bool:
    """Whether the last token is one no phrase ends on, keeping a question's preposition stranded
    after a verb (a participle in -ed / -en, or ``STRANDING_VERBS``)."""
    token = tokens[-1]
    word = token.lower().rstrip(_TRAILING)
    if not token.strip(_TRAILING):
        return True
    if word not in DANGLING:
        return False
    before = tokens[-2].lower() if len(tokens) > 1 else ""
    stranded = (question and word in STRANDED and word == token.lower()
                and (before in STRANDING_VERBS or (len(before) > 4 and before.endswith(("ed", "en")))))
    return not stranded


# sentence openers that tie a sentence to one before it ("here, we show that ...", "thus, the ...", "and the
# ..."): a cut passage sentence's, never a query's. A connective counts with its comma; "also" either way
CONNECTIVES = frozenset({"here", "however", "thus", "hence", "therefore", "furthermore", "moreover", "additionally",
                         "together", "taken together", "collectively", "overall", "notably", "importantly",
                         "interestingly", "surprisingly", "remarkably", "conversely", "consequently", "accordingly",
                         "similarly", "likewise", "nevertheless", "nonetheless", "meanwhile", "subsequently", "finally",
                         "first", "second", "third", "indeed", "instead", "also", "specifically", "alternatively",
                         "in addition", "in contrast", "in summary", "in conclusion", "in particular", "of note",
                         "as a result", "for example", "for instance", "on the other hand"})
LEADING_CONJUNCTIONS = frozenset({"and", "but", "or", "nor", "yet", "also", "whereas"})
ARTICLES = frozenset({"a", "an", "the", "these", "this", "those", "its", "their"})
# a structured abstract's headings, which SciFact's and Cranfield's passages run into their first
# sentence ("OBJECTIVE To assess ...", "CONCLUSIONS These findings ..."): a heading counts when a
# colon or a word only a sentence opens with follows ("background signal", "results in" stay)
HEADINGS = frozenset({"background", "objective", "objectives", "purpose", "context", "importance", "methods", "results",
                      "conclusion", "conclusions", "findings", "interpretation", "summary", "introduction"})
SENTENCE_OPENERS = frozenset({"the", "a", "an", "this", "these", "we", "our", "there", "here", "here,", "it"})
PURPOSE_HEADINGS = frozenset({"objective", "objectives", "purpose"})  # "objective to assess ..."


def without_leading_connective(text: str) -> str:
    """``text`` without the words that tie a cut passage sentence to the one before it, which no query
    opens with: a connective and its comma ("here, we report that ..." -> "we report that ..."; "taken
    together,"), a conjunction ("and lps requirements ..."), "of" before an article ("of the cells
    are ..."; WordNet's "of or relating to ..." stays), a structured abstract's heading run into the
    sentence ("objective to assess ...", "conclusions these findings ...": ``HEADINGS``). At least one
    word always stays; whitespace is tidied. The counterpart of ``without_dangling_end`` at the other end."""
    tokens = text.split()
    while len(tokens) > 1:
        lowered = [t.lower() for t in tokens]
        cut = _leading_connective(lowered)
        if not cut or cut >= len(tokens):
            break
        tokens = tokens[cut:]
    return " ".join(tokens)


def _leading_connective(lowered: list[str]) -> int:
    """How many leading tokens are a connective (with its comma), a conjunction, "of" + article or a
    structured abstract's heading: 0 if none."""
    for n in (1, 2, 3, 4):
        if len(lowered) > n and lowered[n - 1].endswith(",") and " ".join(lowered[:n])[:-1] in CONNECTIVES:
            return n
    first = lowered[0]
    if first in LEADING_CONJUNCTIONS:
        return 1
    if first == "of" and len(lowered) > 1 and lowered[1] in ARTICLES:
        return 1
    if len(lowered) > 1 and (
            (first.endswith(":") and first[:-1] in HEADINGS)
            or (first in HEADINGS and lowered[1] in SENTENCE_OPENERS)
            or (first in PURPOSE_HEADINGS and lowered[1] == "to")):
        return 1
    return 0


def ends_dangling(text: str) -> bool:
    """True when ``without_dangling_end`` would cut something: the text stops on a word no phrase
    ends on ("... a layer of hair or") or on a comma, colon or dash."""
    return without_dangling_end(text) != " ".join(text.split())


def cut_short(text: str) -> bool:
    """``ends_dangling``, but a text of three words or fewer ending on a word is let be: "stick with",
    "allow for", "make do with" are phrasal verbs (WordNet's lemmas), where "... found in the shape
    of" is a sentence cut off. The rule beam search and the re-ranker's pool set hypotheses aside by."""
    tokens = text.split()
    return ends_dangling(text) and (len(tokens) > 3 or not tokens[-1][-1:].isalnum())


@lru_cache(maxsize=1)
def _stemmer():
    import Stemmer  # PyStemmer: the Snowball stemmer BM25 uses

    return Stemmer.Stemmer("english")


def as_matrix(embeddings: np.ndarray, dim: int | None = None, what: str = "embeddings") -> np.ndarray:
    """Rows as float32 unit vectors; a one-line error for the wrong shape or dimension."""
    x = np.asarray(embeddings, dtype=np.float32)
    if x.ndim == 1:
        x = x[None, :]
    if x.ndim != 2 or (dim is not None and x.shape[1] != dim):
        raise DecoderError(f"{what}: expected rows of dimension {dim}, got shape {tuple(x.shape)}")
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.maximum(norms, 1e-12)


def dedupe(cands: Sequence[Candidate], n: int) -> list[Candidate]:
    """First occurrence of each normalised text, best first, at most ``n``."""
    seen, out = set(), []
    for c in cands:
        key = " ".join(words(c.text))
        if key and key not in seen:
            seen.add(key)
            out.append(c)
        if len(out) >= n:
            break
    return out
