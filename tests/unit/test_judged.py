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
    assert j.measures["RR"] == 1.0
    assert list(j.measures) == ["nDCG@10", "RR", "R@3"]  # shown in this order, whatever order ir_measures returns
    assert set(j.missed["doc_id"]) == {"d1", "d4", "d7"} - set(j.results["doc_id"])


def test_unlogged_query_has_no_measures(tiny, store):
    ranker = build_ranker("bm25", tiny, store)
    j = judge_results(tiny, "piano hammers", ranker.search(["piano hammers"], k=3), 3)
    assert j.query_id is None and j.measures == {} and j.results["grade"].isna().all()
