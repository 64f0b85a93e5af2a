import math

import pytest

from eqi_core.judged import judge_results
from eqi_core.rankers import build_ranker


def test_judged_results_for_logged_query(tiny, store):
    ranker = build_ranker("bm25", tiny, store)
    j = judge_results(tiny, "River  Bank", ranker.search(["river bank"], k=3), 3)
    assert j.query_id == "q1"
    assert j.results["doc_id"].iloc[0] == "d1" and j.results["grade"].iloc[0] == 2
    # by hand, with trec_eval's linear gains: DCG over the 3 retrieved, ideal over grades [2, 1, 1]
    grades = j.results["grade"].fillna(0).tolist()
    dcg = sum(g / math.log2(i + 2) for i, g in enumerate(grades))
    idcg = 2 + 1 / math.log2(3) + 1 / math.log2(4)
    assert j.measures["nDCG@10"] == pytest.approx(dcg / idcg, abs=1e-6)
    assert j.measures["RR@10"] == 1.0
    assert list(j.measures) == ["nDCG@10", "RR@10", "R@3"]  # shown in this order, whatever order ir_measures returns
    assert set(j.missed["doc_id"]) == {"d1", "d4", "d7"} - set(j.results["doc_id"])


def test_fewer_results_shown_than_scored(tiny, store):
    """Showing 2 results must not change nDCG@10 or RR@10: they are the ranker's own, over its top 10
    (before, a search for 2 results scored nDCG@10 on those 2 alone)."""
    from eqi_core.judged import judged_search

    ranker = build_ranker("bm25", tiny, store)
    two, ten = judged_search(tiny, ranker, "river bank", 2), judged_search(tiny, ranker, "river bank", 10)
    assert list(two.results["rank"]) == [1, 2] and len(ten.results) > 2
    grades = ten.results["grade"].fillna(0).tolist()[:10]  # by hand over the top 10, trec_eval's linear gains
    ideal = sorted(tiny.judgments["q1"].values(), reverse=True)
    dcg = sum(g / math.log2(i + 2) for i, g in enumerate(grades))
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    assert two.measures["nDCG@10"] == pytest.approx(dcg / idcg, abs=1e-6) == ten.measures["nDCG@10"]
    assert two.measures["nDCG@10"] > judge_results(tiny, "river bank", ranker.search(["river bank"], k=2), 2).measures["nDCG@10"]
    assert two.measures["RR@10"] == ten.measures["RR@10"]
    first_relevant = next(i for i, g in enumerate(grades, 1) if g > 0)
    assert ten.measures["RR@10"] == pytest.approx(1 / first_relevant)
    n_relevant = sum(1 for g in ideal if g > 0)
    assert two.measures["R@2"] == pytest.approx(sum(1 for g in grades[:2] if g > 0) / n_relevant)


def test_tied_results_are_listed_as_their_measures_count_them(tiny):
    """A ranker that lists a tie in another order (BM25 on WordNet's short glosses) is shown in trec_eval's
    (score, then passage id descending), so each result's rank is the one its grade is scored at: the
    relevant d1, listed first but tied with the unjudged d9, counts second (RR@10 0.5) and shows second."""
    import pandas as pd

    from eqi_core.runs import Run

    run = Run("r", pd.DataFrame({"query_id": ["x"] * 3, "doc_id": ["d1", "d9", "d2"], "rank": [1, 2, 3],
                                 "score": [2.0, 2.0, 1.0]}))
    j = judge_results(tiny, "river bank", run, 3)
    assert j.results["doc_id"].tolist() == ["d9", "d1", "d2"] and j.results["rank"].tolist() == [1, 2, 3]
    assert j.measures["RR@10"] == 0.5 and j.results.at[1, "grade"] == 2


def test_unlogged_query_has_no_measures(tiny, store):
    ranker = build_ranker("bm25", tiny, store)
    j = judge_results(tiny, "piano hammers", ranker.search(["piano hammers"], k=3), 3)
    assert j.query_id is None and j.measures == {} and j.results["grade"].isna().all()


def test_a_query_the_dense_encoder_cannot_read_says_so(tiny, store):
    """An emoji query still gets the dense ranker's results (they are what a search returns), with a note
    that its encoder reads it as [UNK]; BM25, which matches terms, and a readable query get none."""
    from eqi_core.judged import judged_search

    dense = judged_search(tiny, build_ranker("minilm-l3-onnx", tiny, store), "😀", 3)
    assert len(dense.results) == 3 and dense.notes == [
        "minilm-l3-onnx cannot read this query: “😀” is outside its vocabulary ([UNK]), so its vector, and every "
        "result made from it, says nothing about the query"]
    assert judged_search(tiny, build_ranker("bm25", tiny, store), "😀", 3).notes == []
    assert judged_search(tiny, build_ranker("minilm-l3-onnx", tiny, store), "river bank", 3).notes == []
    long = judged_search(tiny, build_ranker("minilm-l3-onnx", tiny, store), "river bank " * 100, 3)
    assert long.notes == ["minilm-l3-onnx reads only the first 128 of this query's 202 word pieces: the rest cannot "
                          "change its vector"]  # 200 words + [CLS] + [SEP]


def test_judgments_by_query_and_by_passage_by_hand():
    import pandas as pd

    from eqi_core.collection import Collection
    from eqi_core.judged import NOT_IN_CORPUS, judged_passages, judging_queries

    passages = pd.DataFrame({"doc_id": ["a", "b", "c"], "title": ["", "", ""],
                             "text": ["alpha", "beta \u00e2\u20ac\u201c two", "gamma"]})  # b as MS MARCO stores a dash
    queries = pd.DataFrame({"query_id": ["q1", "q2", "q3"], "text": ["first", "second", "third"]})
    qrels = pd.DataFrame({"query_id": ["q1", "q1", "q1", "q1", "q2"], "doc_id": ["c", "a", "zz", "b", "b"],
                          "relevance": [1, 2, 2, 0, 3]})  # zz: judged, not in the corpus (as in TREC DL)
    coll = Collection("hand", passages, queries, qrels)
    q1 = judged_passages(coll, "q1")
    assert q1["doc_id"].tolist() == ["a", "zz", "c", "b"] and q1["grade"].tolist() == [2, 2, 1, 0]  # grade, then id
    assert q1["passage"].tolist() == ["alpha", NOT_IN_CORPUS, "gamma", "beta \u2013 two"]  # shown repaired
    assert judged_passages(coll, "q3").empty and list(judged_passages(coll, "q3").columns) == ["doc_id", "grade", "passage"]
    b = judging_queries(coll, "b")
    assert b.to_dict("records") == [{"query_id": "q2", "query": "second", "grade": 3},
                                    {"query_id": "q1", "query": "first", "grade": 0}]
    assert judging_queries(coll, "zz")["query_id"].tolist() == ["q1"] and judging_queries(coll, "nothing").empty
    assert coll.find_queries()["judgments"].tolist() == [4, 1, 0]
    assert coll.find_passages()["judgments"].tolist() == [1, 2, 1]  # zz is judged but has no row


def test_two_rankers_results_side_by_side_by_hand():
    import pandas as pd

    from eqi_core.judged import JudgedResults, comparison_line, rank_under

    a = pd.DataFrame({"rank": [1, 2, 3], "doc_id": ["d1", "d2", "d3"]})
    b = pd.DataFrame({"rank": [1, 2, 3], "doc_id": ["d3", "d9", "d1"]})
    assert rank_under(a, b).tolist()[::2] == [3, 1] and pd.isna(rank_under(a, b).iloc[1])
    assert rank_under(b, a).tolist()[::2] == [3, 1] and rank_under(b, a).dtype == "Int64"
    ja = JudgedResults("q", "q1", a, pd.DataFrame(), {"nDCG@10": 0.5, "RR": 1.0})
    jb = JudgedResults("q", "q1", b, pd.DataFrame(), {"nDCG@10": 0.25, "RR": 0.5})
    assert comparison_line(ja, jb, "BM25", "dense") == ("2 of the top 3 passages in common; nDCG@10 0.500 (BM25) vs "
                                                         "0.250 (dense) · RR 1.000 (BM25) vs 0.500 (dense)")
    assert comparison_line(JudgedResults("q", None, a, pd.DataFrame(), {}), jb, "BM25", "dense") == \
        "2 of the top 3 passages in common"


def test_gold_passage_by_hand():
    from eqi_core.judged import gold_passage

    grades = {"b": 2, "a": 2, "c": 3, "z": 3, "d": 0}
    assert gold_passage(grades, {"a", "b", "c", "d"}) == "c"  # z has no text
    assert gold_passage(grades, {"a", "b"}) == "a"  # equal grades: the first by id
    assert gold_passage({"d": 0}, {"d"}) is None and gold_passage({}, set()) is None
