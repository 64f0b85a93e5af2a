"""A ranker's results for one query, joined with the collection's judgments (the live search box),
and the judgments themselves, by query or by passage (the Browse tabs, ``eqi judgments``)."""
from __future__ import annotations

from dataclasses import dataclass, field

import ir_measures
import pandas as pd

from eqi_core.collection import Collection, readable
from eqi_core.encoders import text_notes
from eqi_core.runs import Run

NOT_IN_CORPUS = "(passage text not in the corpus)"
NO_TEXT = "(a passage without text)"  # in the corpus, title and text empty (two of Cranfield's)


def shown_text(text: str | None) -> str:
    """A judged passage's text as a table shows it: repaired, or what stands in for a missing or empty one."""
    return NOT_IN_CORPUS if text is None else NO_TEXT if not text.strip() else text


@dataclass
class JudgedResults:
    query: str
    query_id: str | None  # the logged query with this text, if any
    results: pd.DataFrame  # rank, score, grade (NaN = unjudged), judgment (label), doc_id, text
    missed: pd.DataFrame  # judged relevant passages not retrieved: doc_id, grade, text
    measures: dict[str, float]  # nDCG@10, RR@10, R@k for logged queries (ir_measures)
    notes: list[str] = field(default_factory=list)  # e.g. the ranker's encoder cannot read the query


MEASURE_DEPTH = 10  # nDCG@10 and RR@10 need the top 10, however few results are shown


def judged_search(collection: Collection, ranker, query: str, k: int) -> JudgedResults:
    """``ranker``'s top ``k`` for ``query``, judged; searched at least ``MEASURE_DEPTH`` deep, so that
    nDCG@10 and RR@10 are the ranker's own whatever ``k`` is (5 results shown, 10 scored)."""
    judged = judge_results(collection, query, ranker.search([query], k=max(int(k), MEASURE_DEPTH)), int(k))
    judged.notes = text_notes(getattr(ranker, "encoder", None), query, "query")
    return judged


def judge_results(collection: Collection, query: str, run: Run, k: int) -> JudgedResults:
    """Attach judged grades to a single-query run's top ``k`` and score the whole run against the
    qrels: nDCG@10, RR@10 (both on the run's top 10, which may be deeper than ``k``) and R@k. Listed in
    the order the measures count (trec_eval's: score, then passage id descending), so that a result
    tied on score with another shows the rank its grade is scored at (BM25 ties often on WordNet's
    short glosses), as the Ranker coverage drill-down lists them."""
    qid = collection.find_query(query)
    grades = collection.judgments.get(qid, {}) if qid else {}
    ranking = run.trec_eval_order().frame
    frame = ranking[ranking["rank"] <= k].copy()
    frame["grade"] = frame["doc_id"].map(grades)
    texts = collection.passages.set_index("doc_id")["text"]
    frame["text"] = frame["doc_id"].map(texts).map(readable)  # shown, so repaired for reading
    frame["judgment"] = frame["grade"].map(lambda g: "unjudged" if pd.isna(g) else f"grade {int(g)}")
    results = frame[["rank", "score", "grade", "judgment", "doc_id", "text"]].reset_index(drop=True)
    relevant = {d: g for d, g in grades.items() if g > 0}
    missed_ids = [d for d in relevant if d not in set(frame["doc_id"])]
    missed = pd.DataFrame({"doc_id": missed_ids, "grade": [relevant[d] for d in missed_ids],
                           "text": [shown_text(collection.display_text(d)) for d in missed_ids]})
    measures: dict[str, float] = {}
    if relevant:
        from eqi_core.coverage.per_query import as_run_dict, trec_eval_top

        qrels = [ir_measures.Qrel(qid, d, g) for d, g in grades.items()]
        # scored as the Ranker coverage page scores runs: every measure in trec_eval's order (ir_measures'
        # RR@k, the MS MARCO script, would break a score tie by passage id ascending, the other way)
        scored = as_run_dict(trec_eval_top(ranking.assign(query_id=qid), None))
        wanted = [ir_measures.nDCG @ 10, ir_measures.RR @ 10, ir_measures.R @ k]
        values = ir_measures.calc_aggregate(wanted, qrels, scored)  # a dict in no fixed order
        measures = {str(m): float(values[m]) for m in wanted}  # shown in this order
    return JudgedResults(query, qid, results, missed.sort_values("grade", ascending=False), measures)


def gold_passage(grades: dict[str, int], known) -> str | None:
    """The most relevant of a query's judged passages among ``known`` ones (those with text), first
    by id among equals: the target the Latent traversal page walks to. None without one."""
    judged = {str(d): g for d, g in grades.items() if g > 0 and str(d) in known}
    return max(sorted(judged), key=judged.get) if judged else None


def judged_passages(collection: Collection, query_id: str) -> pd.DataFrame:
    """A query's judgments, most relevant first (then by doc_id): doc_id, grade, passage (as people
    read it; judged passages without text, as in TREC DL, say so). Empty for a query without any."""
    grades = collection.judgments.get(str(query_id), {})
    frame = pd.DataFrame({"doc_id": list(grades), "grade": [int(g) for g in grades.values()]}, columns=["doc_id", "grade"])
    frame = frame.sort_values(["grade", "doc_id"], ascending=[False, True], kind="stable").reset_index(drop=True)
    texts = [collection.display_text(d) for d in frame["doc_id"]]
    return frame.assign(passage=[shown_text(t) for t in texts])


def judging_queries(collection: Collection, doc_id: str) -> pd.DataFrame:
    """The queries whose judgments name a passage, most relevant first: query_id, query, grade
    (a grade of 0 is a judged non-relevant passage)."""
    qrels = collection.qrels[collection.qrels["doc_id"] == str(doc_id)]
    frame = pd.DataFrame({"query_id": qrels["query_id"].astype(str).to_numpy(), "grade": qrels["relevance"].astype(int).to_numpy()})
    frame = frame.sort_values(["grade", "query_id"], ascending=[False, True], kind="stable").reset_index(drop=True)
    texts = collection.query_text
    return frame.assign(query=[texts.get(q, "") for q in frame["query_id"]])[["query_id", "query", "grade"]]


def rank_under(results: pd.DataFrame, other: pd.DataFrame) -> pd.Series:
    """Each result's rank in ``other``'s results for the same query (<NA> where it is not listed there):
    the column that sets two rankers' top k side by side on the Collection page."""
    return results["doc_id"].map(dict(zip(other["doc_id"], other["rank"]))).astype("Int64")


def comparison_line(a: JudgedResults, b: JudgedResults, name_a: str, name_b: str) -> str:
    """One line for two rankers' results for one query: how many passages both list, and each one's
    measures when the query is logged with judgments."""
    k = max(len(a.results), len(b.results))
    common = len(set(a.results["doc_id"]) & set(b.results["doc_id"]))
    line = f"{common:,} of the top {k:,} passages in common"
    if a.measures and b.measures:
        line += "; " + " · ".join(f"{m} {a.measures[m]:.3f} ({name_a}) vs {b.measures[m]:.3f} ({name_b})" for m in a.measures)
    return line
