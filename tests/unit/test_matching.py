"""The query's words in a passage, as BM25 matches them (eqi_core/matching.py)."""
from eqi_core.matching import matched_spans, query_terms, shared_words

TEXT = 'Sloping land beside a body of water; "they pulled the canoe up on the Bank"; banking on rivers'


def test_query_terms_are_bm25s_stems_without_stop_words():
    assert query_terms("The banks of the river") == {"bank", "river"}
    assert query_terms("of the a") == set() and query_terms("") == set()


def test_spans_by_hand():
    # "Bank" at 70-74 (case folded), "banking" at 77-84 and "rivers" at 88-94 share stems with "river banks"
    assert TEXT[70:74] == "Bank" and TEXT[77:84] == "banking" and TEXT[88:94] == "rivers"
    assert matched_spans("river banks", TEXT) == [(70, 74), (77, 84), (88, 94)]
    assert shared_words("river banks", TEXT) == ["bank", "banking", "rivers"]


def test_stop_words_and_unmatched_queries_mark_nothing():
    assert matched_spans("the of on", TEXT) == []  # stop words: BM25 never scores them
    assert shared_words("piano hammers", TEXT) == []


def test_the_words_agree_with_bm25_scoring(tiny, store):
    """Every passage BM25 scores above 0 for a query holds one of its words, and none it scores 0 does."""
    from eqi_core.rankers import build_ranker

    ranker = build_ranker("bm25", tiny, store)
    run = ranker.search(["bank loan"], k=len(tiny.passages)).frame
    texts = dict(zip(tiny.passages["doc_id"], tiny.passage_texts()))
    scored = set(run.loc[run["score"] > 0, "doc_id"])
    assert scored and scored != set(texts)
    assert {d for d, t in texts.items() if shared_words("bank loan", t)} == scored


def test_shared_words_column_and_overlap_line_by_hand():
    import pandas as pd

    from eqi_core.matching import with_shared_words, word_overlap_line

    exposing = pd.DataFrame({"query": ["river banks", "canoe", "meadow", "the water", "ridge", "hill"], "rank": [1, 2, 3, 4, 5, 6]})
    shown = with_shared_words(exposing, TEXT)
    assert shown["words in passage"].tolist() == ["bank, banking, rivers", "canoe", "", "water", "", ""]
    assert list(shown.columns) == ["query", "rank", "words in passage"] and "words in passage" not in exposing
    assert word_overlap_line(exposing, TEXT, examples=2) == (
        "3 of the 6 exposing queries share a word with the passage (as BM25 matches words); "
        "3 share none: “meadow”, “ridge” and 1 more.")
    assert word_overlap_line(exposing.head(2), TEXT) == (
        "All 2 exposing queries share a word with the passage (as BM25 matches words).")
    assert word_overlap_line(exposing.tail(1), TEXT) == (
        "The exposing query shares no word with the passage (as BM25 matches words): “hill”.")
    assert word_overlap_line(exposing.head(0), TEXT) == ""


def test_change_overlap_line_by_hand():
    import pandas as pd

    from eqi_core.matching import change_overlap_line

    change = pd.DataFrame({"query": ["river banks", "meadow", "canoe", "hill", "water"],
                           "change": ["same", "only dense", "only dense", "only dense", "only bm25"]})
    assert change_overlap_line(change, TEXT, "bm25", "dense") == (
        "Sharing no word with the passage (as BM25 matches words): 2 of the 3 only under dense, 0 of the 1 only under bm25.")
