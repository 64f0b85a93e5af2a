"""The decoder's word list and the decoding constraint built on it.

A decoder that spells words piece by piece (WordPiece) can invent words: "etcanrus", "xhanant".
``Lexicon`` is the set of words of the decoder's own training text (training queries, training
passage sentences, WordNet lemmas; never held-out items), shipped beside the weights as
``lexicon.txt.gz``. ``WordConstraint`` keeps beam search and sampling to those words: a piece that
continues a word must keep it a prefix of a known word, a word may end only when it is known (or a
number), a sign inside a word glues no made-up word ("schnau´tpa": ``base.glues_made_up_word``), no
letter of another script is glued to an English word ("proteinα2": ``base.glues_other_script``), and a
content word is never used twice in one output. Beam search also keeps to outputs that say
nothing twice in a row (``stutter_free``: "been been", "- -", "0, 0,"); sampled candidates are
filtered for that afterwards instead, one by one. A row with no allowed continuation falls back to
the model's own choice, so decoding never stalls.
"""
from __future__ import annotations

import copy
import gzip
from bisect import bisect_left
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from eqi_core.decoder.base import DecoderError, english_words, glues_made_up_word, glues_other_script, is_known_word, terms, words
from eqi_core.decoder.corpus import SYNTHETIC_KIND
from eqi_core.store import atomic_path, content_digest

LEXICON_FILE = "lexicon.txt.gz"


class Lexicon:
    """Known words (lower case, as ``words`` splits text), with fast prefix tests (bisect)."""

    def __init__(self, known: Iterable[str]):
        self.sorted = sorted(set(known))
        self.known = frozenset(self.sorted)

    def __len__(self) -> int:
        return len(self.sorted)

    def __contains__(self, word: str) -> bool:
        return word in self.known

    def has_prefix(self, prefix: str, avoid: frozenset[str] = frozenset()) -> bool:
        """Does some known word outside ``avoid`` start with ``prefix``?"""
        i = bisect_left(self.sorted, prefix)
        for w in self.sorted[i:i + len(avoid) + 1]:  # at most len(avoid) of them can be avoided
            if not w.startswith(prefix):
                return False
            if w not in avoid:
                return True
        return False

    @property
    def digest(self) -> str:
        return content_digest("\n".join(self.sorted))

    @classmethod
    def from_texts(cls, texts: Iterable[str], extra: Iterable[str] = ()) -> Lexicon:
        known = set(extra)
        for t in texts:
            known.update(words(t))
        return cls(known)

    def save(self, folder: Path) -> Path:
        path = Path(folder) / LEXICON_FILE
        with atomic_path(path) as tmp:
            tmp.write_bytes(gzip.compress("\n".join(self.sorted).encode(), 9, mtime=0))
        return path

    @classmethod
    def load(cls, path: Path) -> Lexicon:
        try:
            text = gzip.decompress(Path(path).read_bytes()).decode("utf-8")
        except (OSError, EOFError, UnicodeDecodeError, gzip.BadGzipFile) as exc:
            raise DecoderError(f"{path}: not a gzip-compressed word list ({type(exc).__name__})") from None
        known = [w for w in text.split("\n") if w]
        if not known or any(w != w.strip().lower() for w in known[:1000]):
            raise DecoderError(f"{path}: expected one lower-case word per line")
        return cls(known)


def training_lexicon(corpus, wordnet: Iterable[str]) -> Lexicon:
    """The words of the decoder corpus's training split (queries and passage sentences, not a
    decoder's own samples) plus WordNet's lemmas: held-out queries and passages contribute nothing."""
    real = corpus["split"] == "train"
    if "kind" in corpus.columns:
        real &= corpus["kind"] != SYNTHETIC_KIND
    return Lexicon.from_texts(corpus.loc[real, "text"], wordnet)


State = tuple[str, frozenset, tuple[str, ...]]
STUTTER_SPAN = 3  # the longest run of piece-words checked for an immediate repeat: "[ 1 ] [ 1 ]"


def repeats_itself(tail: tuple[str, ...]) -> bool:
    """Do the last 1-3 piece-words of ``tail`` repeat the ones just before them ("been been", "- -",
    "0 , 0 ,", "[ 1 ] [ 1 ]")? Spaced dots and initials (". . .", "r . r .") repeat on purpose, as in
    ``base.stutters``."""
    for n in range(1, STUTTER_SPAN + 1):
        run = tail[-n:]
        if len(tail) >= 2 * n and run == tail[-2 * n:-n] and not (
                "." in run and all(w == "." or (len(w) == 1 and w.isalpha()) for w in run)):
            return True
    return False


class WordConstraint:
    """Per-hypothesis state for lexicon-constrained decoding over a decoder's output vocabulary.

    ``pieces[j]``: the text output row j adds (continuations without their ``##``);
    ``continues[j]``: whether row j continues the current word. A state is (current word, content
    words used so far, the last piece-words before it). With ``stutter_free``, a word may not end
    where it repeats what came just before it (``repeats_itself``). ``english`` (WordNet's lemma words
    by default) are the words a letter of another script may not be glued to."""

    def __init__(self, lexicon: Lexicon, pieces: list[str], continues: list[bool], stop: frozenset[str],
                 stutter_free: bool = False, english: frozenset[str] | None = None):
        self.lexicon = lexicon
        self.pieces = ["" if p.startswith("[") and p.endswith("]") else p for p in pieces]  # [SEP] etc. add no text
        self.continues = continues
        self.stop = stop
        self.stutter_free = stutter_free
        self._ends: dict[tuple[str, frozenset], bool] = {}  # by (word, words used): the word list's answer
        self._piece_words = [words(p) for p in self.pieces]
        self._plain = [p.isascii() and p.isalnum() for p in self.pieces]  # letters and digits only
        self._foreign = [any(ch.isalpha() and not ch.isascii() for ch in p) for p in self.pieces]
        self.english = english_words() if english is None else english

    def stutter_free_copy(self) -> WordConstraint:
        """The same word list and rules, outputs that say nothing twice in a row."""
        other = copy.copy(self)
        other.stutter_free = True  # the word-list cache is shared: its answers do not depend on this rule
        return other

    @staticmethod
    def start() -> State:
        return ("", frozenset(), ())

    def _content(self, ws: list[str]) -> list[str]:
        return [w for w in ws if w not in self.stop and len(w) > 1 and not w.isdigit()]

    def can_end_word(self, state: State) -> bool:
        """May the current word end here (a known word or a number, no content word repeated; with
        ``stutter_free``, not a repeat of the piece-words just before it)?"""
        key = state[:2]  # the word list's answer depends on the word and the words used, not on the tail
        hit = self._ends.get(key)
        if hit is None:
            ws = words(state[0])
            content = self._content(ws)
            hit = (all(w in self.lexicon or w.isdigit() for w in ws)
                   and len(set(content)) == len(content) and not (set(content) & state[1]))
            if len(self._ends) > 200_000:
                self._ends.clear()
            self._ends[key] = hit
        current, tail = state[0], state[2]
        # a repeat needs the word among the last STUTTER_SPAN before it: that test first, it is cheap
        return hit and not (self.stutter_free and current and current in tail[-STUTTER_SPAN:]
                            and repeats_itself((*tail, current)))

    def allows(self, state: State, row: int) -> bool:
        """May output row ``row`` follow ``state``? A word start (or the end of text) needs the current
        word to end well; either way the word being spelled must still be able to become a known word
        that is not a content word already used (so sampling, which cannot back up, meets no dead end)."""
        return self.allowed_rows(state, [row])[0]

    def allowed_rows(self, state: State, rows: list[int]) -> list[bool]:
        """``allows`` for each of ``rows``, with what depends on the state alone worked out once
        (sampling asks this for up to 200 rows of each hypothesis at every step)."""
        current, used = state[0], state[1]
        ends = used_after = None
        plain = not current or (current.isascii() and current.isalnum())
        out = []
        for row in rows:
            if self.continues[row]:
                if not (plain and self._plain[row]) and glues_made_up_word(
                        current + self.pieces[row], self.lexicon, inner_only=False):
                    out.append(False)  # "schnau" + "´", "´" + "tp": letters glued across a sign
                    continue
                if self._foreign[row] and current and glues_other_script(current + self.pieces[row], self.english):
                    out.append(False)  # "protein" + "α": a Greek letter glued to an English word
                    continue
                grown, avoid = words(current + self.pieces[row]), used
            else:
                if ends is None:
                    ends = self.can_end_word(state)
                    used_after = used | frozenset(self._content(words(current)))
                if not ends:
                    out.append(False)
                    continue
                grown, avoid = self._piece_words[row], used_after
            out.append(not grown or grown[-1].isdigit() or self.lexicon.has_prefix(grown[-1], avoid))
        return out

    def advance(self, state: State, row: int) -> State:
        current, used, tail = state
        if self.continues[row]:
            return (current + self.pieces[row], used, tail)
        used = used | frozenset(self._content(words(current)))
        return (self.pieces[row], used, (*tail, current)[-2 * STUTTER_SPAN:] if current else tail)


def constraint_for(tok, out_ids: list[int], lexicon: Lexicon, stop: frozenset[str]) -> WordConstraint:
    pieces, continues = [], []
    for i in out_ids:
        t = tok.id_to_token(int(i)) or ""
        continues.append(t.startswith("##"))
        pieces.append(t[2:] if t.startswith("##") else t)
    return WordConstraint(lexicon, pieces, continues, stop)


# Below this share of a collection's words in the decoder's word list, its decodings and suggestions
# are in another language than the collection's (measured: DL19 0.986, SciFact 0.991, Cranfield and WordNet
# 0.998; a French collection 0.59).
LANGUAGE_FIT_WARN = 0.8


@dataclass(frozen=True)
class LanguageFit:
    """How much of a collection's text the decoder's (English) word list covers: ``share`` of the
    running words of ``passages`` sampled passages (numbers left out), and the most frequent words
    it does not know."""

    share: float
    words: int
    passages: int
    unknown: tuple[str, ...]

    def warning(self, collection_name: str = "this collection") -> str | None:
        """One line for the page and the CLI when the decoder does not speak the collection's language."""
        if self.words == 0 or self.share >= LANGUAGE_FIT_WARN:
            return None
        examples = ", ".join(f"“{w}”" for w in self.unknown[:5])
        return (f"Only {self.share:.0%} of the words of {collection_name} are in the decoder's English word list "
                f"(e.g. {examples}): decoded queries and suggestions will be written in English words, "
                f"not in the collection's language.")


# A typed query is short and may hold a name the word list lacks ("coram ny"): it is warned about only
# when fewer than half of at least two words are known (German, Russian, French text).
TYPED_FIT_WARN, TYPED_MIN_WORDS = 0.5, 2


def typed_text_warning(text: str, lexicon: Lexicon | None, what: str = "query") -> str | None:
    """One line when a typed text is mostly in a language the decoder does not write (its word list is
    English): its decodings and suggestions will be English words, whatever the text's language."""
    if lexicon is None:
        return None
    fit = language_fit([text], lexicon, limit=0)
    if fit.words < TYPED_MIN_WORDS or fit.share >= TYPED_FIT_WARN:
        return None
    known = round(fit.share * fit.words)
    examples = ", ".join(f"“{w}”" for w in fit.unknown[:5])
    return (f"{'None' if known == 0 else f'Only {known}'} of the {fit.words} words of this {what} "
            f"{'is' if known == 1 else 'are'} in the decoder's English word list (e.g. {examples}): what is decoded "
            f"from it is written in English words, not in the {what}'s language.")


def language_fit(texts: Sequence[str], lexicon: Lexicon, limit: int = 2000) -> LanguageFit:
    """Share of the running words (any script: ``terms``) of up to ``limit`` texts, spread evenly over
    the collection, that the decoder's word list knows; "café" and "東京" count as unknown words,
    where the decoder's own ``words`` would cut them to "caf" and nothing."""
    step = max(1, len(texts) // limit) if limit else 1
    sample = texts[::step][:limit] if limit else texts
    counts = Counter(t for text in sample for t in terms(text) if not t.isdigit())
    total = sum(counts.values())
    unknown = Counter({w: n for w, n in counts.items() if not (w.isascii() and is_known_word(w, lexicon.known))})
    share = 1 - sum(unknown.values()) / total if total else 1.0
    return LanguageFit(share, total, len(sample), tuple(w for w, _ in unknown.most_common(10)))


def lexicon_card(lexicon: Lexicon, source: str) -> dict:
    return {"file": LEXICON_FILE, "words": len(lexicon), "digest": lexicon.digest, "source": source}


__all__ = ["Lexicon", "WordConstraint", "training_lexicon", "constraint_for", "lexicon_card", "LEXICON_FILE",
           "LanguageFit", "language_fit", "LANGUAGE_FIT_WARN", "typed_text_warning"]
