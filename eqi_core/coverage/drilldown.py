"""One query across rankers: its metric and TaSC weight per ranker, top-k side by side with judged
grades (DiffIR-style), and the queries only one ranker solves."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from eqi_core.runs import Run


def side_by_side(runs: dict[str, Run], judgments: dict[str, int], query_id: str, k: int = 10) -> pd.DataFrame:
    """Rows = rank 1..k; per ranker a doc_id column and a grade column (NaN = unjudged)."""
    out = pd.DataFrame({"rank": range(1, k + 1)})
    for name, run in runs.items():
        top = run.query_in_trec_eval_order(query_id).head(k)
        docs = list(top["doc_id"]) + [None] * (k - len(top))
        out[name] = docs
        out[f"{name} grade"] = [judgments.get(d) if d is not None else None for d in docs]
    return out


def passage_ranks(runs: dict[str, Run], query_id: str, doc_id: str) -> pd.DataFrame:
    """Where each ranker puts one passage for one query (trec_eval order, the run's full depth), so a
    passage read in the side-by-side can be followed into every other ranker's list."""
    rows = []
    for name, run in runs.items():
        listed = run.query_in_trec_eval_order(query_id)["doc_id"].to_numpy()
        hits = np.flatnonzero(listed == doc_id)
        rank = f"{hits[0] + 1}" if len(hits) else f"not in its top {len(listed):,}" if len(listed) else "no results for this query"
        rows.append({"ranker": name, "rank": rank})
    return pd.DataFrame(rows, columns=["ranker", "rank"])


@dataclass
class QueryDrilldown:
    """One query's drill-down as the page shows it, for the comparison report."""

    query_id: str
    query: str
    metrics: pd.DataFrame  # query_metrics
    side: pd.DataFrame  # readable_grades(side_by_side(...))
    passages: pd.DataFrame  # listed_passages
    # side_by_side(...) itself: passage ids and numeric grades, what a click on the page reads (the report needs none)
    ids: pd.DataFrame = field(default_factory=pd.DataFrame)


def listed_passages(runs: dict[str, Run], judgments: dict[str, int], query_id: str,
                    passage_text: Callable[[str], str | None], k: int = 10, chars: int = 300) -> pd.DataFrame:
    """Every passage some ranker lists in its top k for one query, once: its grade, its rank in every
    ranker's full list (empty where a run stops before it) and its text (cut at ``chars``), the
    highest grade first, then the best rank. The side-by-side's ids, readable on paper."""
    listed = {name: run.query_in_trec_eval_order(query_id)["doc_id"].tolist() for name, run in runs.items()}
    ranks = {name: {d: i + 1 for i, d in reversed(list(enumerate(docs)))} for name, docs in listed.items()}
    shown = list(dict.fromkeys(d for docs in listed.values() for d in docs[:k]))
    rows = []
    for doc in shown:
        text = passage_text(doc)
        text = "" if text is None else text if len(text) <= chars else text[: chars - 1].rstrip() + "…"
        grade = judgments.get(doc)
        rows.append({"doc_id": doc, "grade": "unjudged" if grade is None else str(int(grade)),
                     **{name: ranks[name].get(doc) for name in runs}, "passage": text,
                     "_grade": -1 if grade is None else grade, "_best": min(r[doc] for r in ranks.values() if doc in r)})
    frame = pd.DataFrame(rows, columns=["doc_id", "grade", *runs, "passage", "_grade", "_best"])
    frame = frame.sort_values(["_grade", "_best", "doc_id"], ascending=[False, True, True], kind="stable")
    return frame.drop(columns=["_grade", "_best"]).astype({name: "Int64" for name in runs}).reset_index(drop=True)


def query_drilldown(runs: dict[str, Run], values: pd.DataFrame, weights: pd.DataFrame, judgments: dict[str, int],
                    query_id: str, query: str, passage_text: Callable[[str], str | None], measure: str,
                    k: int = 10) -> QueryDrilldown:
    """The page's drill-down for one query, rankers in ``runs``' order (the report and ``eqi tasc --query``)."""
    order = list(runs)
    ids = side_by_side(runs, judgments, query_id, k)
    return QueryDrilldown(query_id, query, query_metrics(values[order], weights, query_id, measure),
                          readable_grades(ids), listed_passages(runs, judgments, query_id, passage_text, k), ids)


def most_relevant_cell(side: pd.DataFrame) -> tuple[int, str] | None:
    """The side-by-side cell to open on: the highest-graded passage listed, at its best rank (first
    ranker in column order on ties); None when no listed passage is judged relevant."""
    best: tuple[float, int, int] | None = None
    cell = None
    rankers = [c[:-len(" grade")] for c in side.columns if c.endswith(" grade")]
    for col, name in enumerate(rankers):
        for row, grade in enumerate(side[f"{name} grade"]):
            if pd.isna(grade) or grade <= 0:
                continue
            key = (-float(grade), row, col)
            if best is None or key < best:
                best, cell = key, (row, name)
    return cell


def readable_grades(table: pd.DataFrame) -> pd.DataFrame:
    """side_by_side for the eye: grades as text, "unjudged" where a listed passage has no judgment
    and empty where the ranker listed fewer than k passages (a grid of None said neither)."""
    out = table.copy()
    for name in [c[:-len(" grade")] for c in table.columns if c.endswith(" grade")]:
        out[f"{name} grade"] = ["" if pd.isna(d) else "unjudged" if pd.isna(g) else str(int(g))
                                for d, g in zip(table[name], table[f"{name} grade"])]
    return out


def query_metrics(values: pd.DataFrame, weights: pd.DataFrame, query_id: str, measure: str) -> pd.DataFrame:
    """Per ranker: the query's metric and its TaSC weights (1 - aggregate of the references)."""
    out = values.loc[query_id].rename(measure).to_frame()
    out["TaSC weight (1 - agg of references)"] = [
        ", ".join(f"{agg}: {weights.loc[query_id, f'{r} ({agg})']:.3f}" for agg in ("max", "mean")
                  if f"{r} ({agg})" in weights) or "—" for r in out.index]
    return out


def query_judgments(qrels: pd.DataFrame, query_id: str) -> dict[str, int]:
    return qrels[qrels["query_id"] == query_id].set_index("doc_id")["relevance"].to_dict()


def solved_only_table(solved_only: dict[str, list[str]], query_text: dict[str, str], examples: int = 5) -> pd.DataFrame:
    """How many queries only each ranker solves, with a few examples."""
    return pd.DataFrame({"ranker": list(solved_only), "queries solved only by it": [len(v) for v in solved_only.values()],
                         "examples": [", ".join(f"{q} ({query_text.get(q, '')[:30]})" for q in v[:examples])
                                      for v in solved_only.values()]})
