"""Per-query matrices from ir_measures on hand-built runs and qrels."""
import numpy as np
import pandas as pd
import pytest

from eqi_core.coverage import compute_matrix, parse_measure
from eqi_core.coverage.drilldown import listed_passages, most_relevant_cell, passage_ranks, readable_grades, side_by_side
from eqi_core.coverage.significance import pairwise_tests
from eqi_core.errors import DataError
from eqi_core.runs import Run

QRELS = pd.DataFrame({"query_id": ["q1", "q1", "q2", "q3", "q4"], "doc_id": ["a", "b", "c", "d", "e"],
                      "relevance": [1, 2, 1, 1, 0]})  # q4 has no relevant document


def run(name, rows):
    return Run(name, pd.DataFrame(rows, columns=["query_id", "doc_id", "rank", "score"]))


R1 = run("r1", [("q1", "x", 1, 3.0), ("q1", "a", 2, 2.0), ("q2", "c", 1, 1.0)])  # q3 missing
R2 = run("r2", [("q1", "b", 1, 1.0), ("q2", "z", 1, 2.0), ("q2", "c", 2, 1.0), ("q3", "d", 1, 5.0)])


def test_rr_by_hand_missing_query_zero_no_relevant_left_out():
    m = compute_matrix({"r1": R1, "r2": R2}, QRELS, "RR@10")
    assert list(m.values.index) == ["q1", "q2", "q3"]  # q4 has no relevant document
    assert m.values["r1"].tolist() == [0.5, 1.0, 0.0]  # q3 missing from r1 -> 0
    assert m.values["r2"].tolist() == [1.0, 0.5, 1.0]
    assert any("no relevant document: left out" in n for n in m.notes)
    assert any("run 'r1': 1 of 3 queries in Q have no results: scored 0" in n for n in m.notes)


def test_queries_outside_q_are_one_note_per_count_not_per_run():
    """Live rankers answer every logged query: runs with the same number outside Q share one note."""
    extra = [("q9", "a", 1, 1.0), ("q4", "e", 1, 1.0)]  # unjudged, and judged without a relevant document
    r3 = run("r3", [*R2.frame.itertuples(index=False), *extra])
    r4 = run("r4", [*R1.frame.itertuples(index=False), *extra])
    r5 = run("r5", [*R1.frame.itertuples(index=False), extra[0]])
    notes = compute_matrix({"r3": r3, "r4": r4}, QRELS, "RR@10").notes
    assert [n for n in notes if "not in Q" in n] == [
        "each of the 2 runs: 2 queries are not in Q (unjudged or without relevant documents): ignored"]
    notes = compute_matrix({"r3": r3, "r4": r4, "r5": r5, "r1": R1}, QRELS, "RR@10").notes
    assert [n for n in notes if "not in Q" in n] == [
        "runs 'r3', 'r4': 2 queries are not in Q (unjudged or without relevant documents): ignored",
        "run 'r5': 1 query is not in Q (unjudged or without relevant documents): ignored"]


def test_a_run_of_other_document_ids_scores_zero_with_a_note_saying_why():
    """Right query ids, wrong document ids (another collection's, or prefixed): every query scores 0,
    which a table alone would show as a dreadful ranker; a note names the cause."""
    other = run("other", [("q1", "X1", 1, 2.0), ("q2", "X2", 1, 1.0)])
    m = compute_matrix({"other": other, "r1": R1}, QRELS, "nDCG@10")
    assert m.values["other"].tolist() == [0.0, 0.0, 0.0]
    assert [n for n in m.notes if "is judged" in n] == [
        "run 'other': none of the 2 documents it returns for the judged queries is judged (e.g. 'X1'), so it scores "
        "0 on every query; expected the qrels' document ids"]  # r1 returns judged documents: no note


def test_trec_eval_names_and_cutoff_truncation_agree():
    full = compute_matrix({"r2": R2}, QRELS, "ndcg_cut_10")
    assert full.measure == "nDCG@10"
    assert full.values["r2"].tolist() == pytest.approx([2 / 2.6309297535714578 * 1 + 0, 1 / 1.5849625007211563, 1.0])


def test_ties_noticed_when_they_change_the_metric():
    tied = run("t", [("q1", "b", 1, 1.0), ("q1", "x", 2, 1.0)])  # trec_eval puts 'x' (doc_id desc) first
    m = compute_matrix({"t": tied}, QRELS, "RR@10")
    assert m.values["t"].tolist()[0] == 0.5
    assert any("1 tied score groups" in n and "mean RR@10 is 0.1667, in the file's order 0.3333" in n for n in m.notes)


@pytest.mark.parametrize("runs,qrels,message", [
    ({"r": run("r", [("zz", "a", 1, 1.0)])}, QRELS, "none of its 1 queries is judged"),
    ({"r": R1}, QRELS.iloc[0:0], "no judgments"),
    ({}, QRELS, "no runs given"),
])
def test_bad_inputs(runs, qrels, message):
    with pytest.raises(DataError, match=message):
        compute_matrix(runs, qrels, "RR@10")


def test_unknown_metric():
    with pytest.raises(DataError, match="metric 'bogus@3' does not exist"):
        parse_measure("bogus@3")
    assert str(parse_measure("recip_rank")) == "RR" and str(parse_measure("RBP(p=0.5)")) == "RBP(p=0.5)"


def test_corrections_by_hand():
    """Three rankers, three pairs: Holm multiplies the sorted p-values by 3, 2, 1 (running max, cap 1);
    Bonferroni by 3; BH by 3/rank (running min from the largest)."""
    v = pd.DataFrame({"a": [1.0, 0.9, 0.8, 0.7, 0.6, 0.5], "b": [0.1, 0.8, 0.3, 0.75, 0.2, 0.4],
                      "c": [0.0, 0.1, 0.85, 0.1, 0.65, 0.45]})
    raw = pairwise_tests(v, "holm")["t_p"].to_numpy()
    order = raw.argsort()
    holm = np.empty(3)
    holm[order] = np.minimum(1, np.maximum.accumulate(raw[order] * [3, 2, 1]))
    bh = np.empty(3)
    bh[order] = np.minimum.accumulate((raw[order] * 3 / np.arange(1, 4))[::-1])[::-1]
    assert pairwise_tests(v, "holm")["t_p_adj"].tolist() == pytest.approx(holm.tolist())
    assert pairwise_tests(v, "bonferroni")["t_p_adj"].tolist() == pytest.approx(np.minimum(1, raw * 3).tolist())
    assert pairwise_tests(v, "bh")["t_p_adj"].tolist() == pytest.approx(np.minimum(1, bh).tolist())


def test_pairwise_tests_counts():
    v = pd.DataFrame({"a": [1.0, 0.5, 0.0, 0.2], "b": [0.0, 0.5, 0.0, 0.1]})
    t = pairwise_tests(v, "bonferroni")
    row = t.iloc[0]
    assert (row["a_better"], row["b_better"], row["ties"]) == (2, 0, 2)
    assert 0 <= row["t_p_adj"] <= 1
    later_first = pairwise_tests(v, "bonferroni", order=["a", "b"]).iloc[0]  # b is the later ranker: A
    assert (later_first["a"], later_first["b"], later_first["a_better"], later_first["b_better"]) == ("b", "a", 0, 2)
    assert later_first["mean_diff"] == pytest.approx(-row["mean_diff"]) and later_first["t_p"] == pytest.approx(row["t_p"])


def test_side_by_side_grades():
    table = side_by_side({"r1": R1, "r2": R2}, {"a": 1, "b": 2}, "q1", k=3)
    assert table["r1"].tolist()[:2] == ["x", "a"] and pd.isna(table["r1"].iloc[2])
    assert pd.isna(table["r1 grade"].iloc[0]) and table["r1 grade"].iloc[1] == 1
    assert table["r2"].tolist()[0] == "b" and table["r2 grade"].tolist()[0] == 2
    shown = readable_grades(table)  # what the page shows: no grid of None
    assert shown["r1 grade"].tolist() == ["unjudged", "1", ""] and table["r1 grade"].iloc[1] == 1


def test_a_passage_followed_into_every_ranker():
    assert passage_ranks({"r1": R1, "r2": R2}, "q1", "a").to_dict("list") == {
        "ranker": ["r1", "r2"], "rank": ["2", "not in its top 1"]}
    tied = run("t", [("q1", "b", 1, 1.0), ("q1", "x", 2, 1.0)])  # trec_eval order: x (doc_id desc) before b
    assert passage_ranks({"t": tied}, "q1", "b")["rank"].tolist() == ["2"]
    assert passage_ranks({"r1": R1}, "q3", "d")["rank"].tolist() == ["no results for this query"]  # r1 has no q3


def test_side_by_side_opens_on_the_best_judged_passage():
    table = side_by_side({"r1": R1, "r2": R2}, {"a": 1, "b": 2}, "q1", k=3)
    assert most_relevant_cell(table) == (0, "r2")  # grade 2 beats grade 1, whatever the column order
    assert most_relevant_cell(side_by_side({"r1": R1, "r2": R2}, {"a": 1, "b": 1}, "q1", k=3)) == (0, "r2")  # tie: best rank
    assert most_relevant_cell(side_by_side({"r1": R1, "r2": R2}, {"x": 1, "b": 1}, "q1", k=3)) == (0, "r1")  # tie: first column
    assert most_relevant_cell(side_by_side({"r1": R1}, {"a": 0}, "q1", k=3)) is None  # nothing relevant listed


def test_most_disputed_query_is_where_rankers_differ_most():
    from eqi_core.coverage import MetricMatrix

    values = pd.DataFrame({"a": [0.5, 1.0, 0.0, 0.2], "b": [0.5, 0.2, 0.8, 0.9]}, index=["q1", "q2", "q3", "q4"])
    assert MetricMatrix("nDCG@10", values).most_disputed() == "q2"  # spreads 0, .8, .8, .7: the first of the ties
    assert MetricMatrix("nDCG@10", values.iloc[[0]]).most_disputed() == "q1"  # no disagreement anywhere: the first


def test_every_listed_passage_once_with_its_text_and_ranks():
    texts = {"x": "x text", "a": "a" * 20, "b": "bee"}
    listed = listed_passages({"r1": R1, "r2": R2}, {"a": 1, "b": 2}, "q1", texts.get, k=1, chars=10)
    # top 1s: r1 lists x, r2 lists b; a (r1's rank 2) is beyond k = 1 and not listed
    assert listed["doc_id"].tolist() == ["b", "x"]  # grade 2 first, then unjudged
    assert listed["grade"].tolist() == ["2", "unjudged"]
    assert listed["r1"].isna().tolist() == [True, False] and listed["r1"].iloc[1] == 1  # r1 never lists b
    assert listed["r2"].tolist()[0] == 1 and pd.isna(listed["r2"].iloc[1])
    listed = listed_passages({"r1": R1, "r2": R2}, {"a": 1, "b": 2}, "q1", texts.get, k=3, chars=10)
    assert listed["doc_id"].tolist() == ["b", "a", "x"]  # grade 2, grade 1, unjudged
    assert listed.set_index("doc_id").at["a", "passage"] == "aaaaaaaaa…"  # cut at 10 characters
    tied = run("t", [("q1", "b", 1, 1.0), ("q1", "x", 2, 1.0)])  # trec_eval order puts x first
    assert listed_passages({"t": tied}, {}, "q1", {}.get, k=1)[["doc_id", "t", "passage"]].values.tolist() == [["x", 1, ""]]
