"""One ranker over every judged query, hardest first (eqi_core/coverage/hardest.py), by hand."""
import math

import pandas as pd
import pytest

from eqi_core.collection import Collection
from eqi_core.coverage.hardest import gold_passages, ranker_effectiveness
from eqi_core.errors import DataError
from eqi_core.runs import Run

PASSAGES = pd.DataFrame({"doc_id": ["a", "b", "c", "d"], "text": ["alpha", "beta", "gamma", "delta"]})
QUERIES = pd.DataFrame({"query_id": ["q1", "q2", "q3", "q4"], "text": ["one", "two", "three", "four"]})
# q1: a (2) and b (1); q2: c (1), and z (2) judged without text; q3: d (1); q4: only a non-relevant judgment
QRELS = pd.DataFrame({"query_id": ["q1", "q1", "q2", "q2", "q3", "q4"], "doc_id": ["a", "b", "c", "z", "d", "a"],
                      "relevance": [2, 1, 1, 2, 1, 0]})
C = Collection("t", PASSAGES, QUERIES, QRELS)
# q1 finds a first; q2 finds c second; q3 never finds d
RUN = Run("r", pd.DataFrame({"query_id": ["q1", "q1", "q2", "q2", "q3", "q3"], "doc_id": ["a", "c", "a", "c", "a", "b"],
                             "rank": [1, 2, 1, 2, 1, 2], "score": [2.0, 1.0, 2.0, 1.0, 2.0, 1.0]}))


def test_gold_passage_is_the_most_relevant_with_text():
    assert gold_passages(C) == {"q1": "a", "q2": "c", "q3": "d"}  # z has no text; q4 judges nothing relevant


def test_measures_gold_ranks_and_order_by_hand():
    eff = ranker_effectiveness(RUN, C)
    rows = eff.per_query.set_index("query_id")
    assert list(rows.index) == ["q3", "q2", "q1"]  # hardest first; q4 has no relevant passage: not in Q
    # q1: gains [2, 0], ideal [2, 1] -> nDCG@10 = 2 / (2 + 1 / log2(3)); q2: gains [0, 1], ideal [2, 1] (z counts)
    assert rows.at["q1", "nDCG@10"] == pytest.approx(2 / (2 + 1 / math.log2(3)))
    assert rows.at["q2", "nDCG@10"] == pytest.approx((1 / math.log2(3)) / (2 + 1 / math.log2(3)))
    assert rows.loc["q3", ["nDCG@10", "RR@10", "R@100"]].tolist() == [0.0, 0.0, 0.0]
    assert rows.at["q2", "RR@10"] == 0.5 and rows.at["q2", "R@100"] == 0.5 and rows.at["q1", "R@100"] == 0.5
    assert rows["gold passage"].tolist() == ["d", "c", "a"] and rows.at["q2", "gold rank"] == 2
    assert math.isnan(rows.at["q3", "gold rank"]) and rows.at["q1", "query"] == "one"
    assert eff.share_failed() == pytest.approx(1 / 3) and eff.depth == 2  # a run file: its deepest rank
    # a live ranker's run was asked for its top 100; BM25 on a small collection may list fewer, and a
    # gold passage it leaves out is not in its top 100 (not "not in its top 2")
    assert ranker_effectiveness(Run(RUN.name, RUN.frame, {"ranker": "bm25", "k": 100}), C).depth == 100
    assert eff.means["RR@10"] == pytest.approx((1 + 0.5 + 0) / 3)
    assert eff.hardest(1)["query_id"].tolist() == ["q3"]


def test_equal_failures_come_in_a_fixed_shuffled_order():
    run = Run("r", pd.DataFrame({"query_id": ["q1", "q2", "q2"], "doc_id": ["d", "d", "c"], "rank": [1, 1, 2],
                                 "score": [1.0, 1.0, 0.5]}))
    order = ranker_effectiveness(run, C).per_query["query_id"].tolist()
    assert order[-1] == "q2" and set(order[:2]) == {"q1", "q3"}  # q1 and q3 score 0, their gold passages nowhere
    import pandas.util

    hashes = pandas.util.hash_pandas_object(pd.Series(["q1", "q3"]), index=False).tolist()
    assert order[:2] == (["q1", "q3"] if hashes[0] < hashes[1] else ["q3", "q1"])  # equal: the fixed shuffled order
    assert ranker_effectiveness(run, C).per_query["query_id"].tolist() == order  # the same on every run


def test_a_collection_without_relevant_judgments_is_one_line():
    bare = Collection("bare", PASSAGES, QUERIES)
    with pytest.raises(DataError, match="has no relevant judgments"):
        ranker_effectiveness(RUN, bare)


def test_among_equal_measures_a_gold_passage_nowhere_comes_before_one_found_deep():
    fillers = [f"x{i}" for i in range(10)]  # unjudged passages ahead of q1's gold passage a, at rank 11
    run = Run("r", pd.DataFrame({"query_id": ["q1"] * 11, "doc_id": fillers + ["a"], "rank": range(1, 12),
                                 "score": [float(20 - i) for i in range(11)]}))
    rows = ranker_effectiveness(run, C).per_query.set_index("query_id")
    assert rows.at["q1", "nDCG@10"] == 0 and rows.at["q1", "gold rank"] == 11 and rows.at["q1", "R@100"] == 0.5
    order = list(rows.index)
    assert order.index("q1") == 2  # q2 and q3 (golds nowhere) first, in their shuffled order; then q1


def test_a_gold_passage_tied_with_another_ranks_where_its_measures_count_it():
    """trec_eval breaks a score tie by doc_id descending, so a gold passage listed before a tied one in
    the file counts after it: the gold rank is the one its measures count (q2's RR@10 0.5, rank 2), not
    the file's (1)."""
    run = Run("r", pd.DataFrame({"query_id": ["q1", "q1", "q1", "q2", "q2"], "doc_id": ["a", "b", "x", "x", "c"],
                                 "rank": [1, 2, 3, 1, 2], "score": [1.0, 1.0, 3.0, 0.5, 0.5]}))
    rows = ranker_effectiveness(run, C).per_query.set_index("query_id")
    # q1: x (3.0) first; a and b tied at 1.0, b (grade 1) before a (gold, grade 2); q2: x and c tied, x first
    assert rows.at["q1", "RR@10"] == 0.5 and rows.at["q1", "gold rank"] == 3
    assert rows.at["q2", "RR@10"] == 0.5 and rows.at["q2", "gold rank"] == 2
    assert math.isnan(rows.at["q3", "gold rank"])
