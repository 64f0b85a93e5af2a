"""Which words of a query a passage holds, as BM25 sees them: the answer to "why does this query
show this passage?" that an auditor reads first. The analysis is the BM25 ranker's own (bm25s's
splitter: words of two or more word characters, lowercased; English stop words left out; Snowball
stems), so a marked word is one that BM25 scored, and "bank" marks "banks" and "banking" too. A
dense ranker may show a passage that shares no word with the query: that is worth seeing as well."""
from __future__ import annotations

import re
from functools import lru_cache

import pandas as pd


@lru_cache(maxsize=1)
def _analysis():
    from eqi_core.rankers.bm25 import make_tokenizer

    tokenizer = make_tokenizer()
    splitter = re.compile(tokenizer.splitter.__self__.pattern)  # the pattern behind its findall
    return splitter, frozenset(tokenizer.stopwords), tokenizer.stemmer


def query_terms(query: str) -> set[str]:
    """The stems BM25 searches ``query`` for."""
    splitter, stopwords, stem = _analysis()
    words = (w.lower() for w in splitter.findall(str(query)))
    return {stem(w) for w in words if w not in stopwords}


def matched_spans(query: str, text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of every word of ``text`` that BM25 matches with a term of ``query``, in order."""
    terms = query_terms(query)
    if not terms:
        return []
    splitter, stopwords, stem = _analysis()
    spans = []
    for found in splitter.finditer(str(text)):
        word = found.group().lower()
        if word not in stopwords and stem(word) in terms:
            spans.append(found.span())
    return spans


def shared_words(query: str, text: str) -> list[str]:
    """The distinct words of ``text`` (lowercased, in order of first appearance) that match ``query``."""
    seen: dict[str, None] = {}
    for start, end in matched_spans(query, text):
        seen.setdefault(str(text)[start:end].lower(), None)
    return list(seen)


def with_shared_words(exposing: pd.DataFrame, text: str) -> pd.DataFrame:
    """``exposing`` (a frame with a ``query`` column) with a "words in passage" column: each query's
    words that ``text`` holds, comma-separated ("" for none)."""
    return exposing.assign(**{"words in passage": [", ".join(shared_words(q, text)) for q in exposing["query"]]})


def _words_column(frame: pd.DataFrame, text: str) -> pd.Series:
    """The frame's "words in passage" where ``with_shared_words`` already added it, else computed."""
    return frame["words in passage"] if "words in passage" in frame else with_shared_words(frame, text)["words in passage"]


def word_overlap_line(exposing: pd.DataFrame, text: str, examples: int = 3) -> str:
    """How many exposing queries share a word with the passage, and some that share none: exposure a
    lexical ranker cannot give, which an auditor of a dense ranker wants to see first. "" for none."""
    words = _words_column(exposing, text)
    n, none = len(words), list(exposing["query"][words == ""])
    how = "(as BM25 matches words)"
    if n == 0:
        return ""
    listed = ", ".join(f"“{q}”" for q in none[:examples]) + (f" and {len(none) - examples:,} more" if len(none) > examples else "")
    if not none:
        return f"The exposing query shares a word with the passage {how}." if n == 1 else \
            f"All {n:,} exposing queries share a word with the passage {how}."
    if len(none) == n:
        return f"The exposing query shares no word with the passage {how}: {listed}." if n == 1 else \
            f"None of the {n:,} exposing queries shares a word with the passage {how}: {listed}."
    return (f"{n - len(none):,} of the {n:,} exposing queries share a word with the passage {how}; "
            f"{len(none):,} share{'s' if len(none) == 1 else ''} none: {listed}.")


def change_overlap_line(change: pd.DataFrame, text: str, name_a: str, name_b: str) -> str:
    """For a comparison of two rankings (``exposure_change``): of the queries that show the passage
    under one ranking only, how many share no word with it. A ranking that gains queries without
    words in common shows the passage for what it means, not for what it says."""
    words = _words_column(change, text)
    parts = []
    for name in (name_b, name_a):
        only = change["change"] == f"only {name}"
        parts.append(f"{int((words[only] == '').sum()):,} of the {int(only.sum()):,} only under {name}")
    return "Sharing no word with the passage (as BM25 matches words): " + ", ".join(parts) + "."
