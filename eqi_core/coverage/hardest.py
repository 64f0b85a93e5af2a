"""One ranker over every judged query: its mean measures and the queries it fails hardest, each with
where its most relevant passage ranks. This is where a researcher asks what a failing query should
have been; the Latent traversal and Query suggestions pages take it from there."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from eqi_core.collection import Collection
from eqi_core.coverage.per_query import compute_matrix
from eqi_core.errors import DataError
from eqi_core.judged import gold_passage
from eqi_core.runs import Run

MEASURES = ("nDCG@10", "RR@10", "R@100")


@dataclass
class RankerEffectiveness:
    """Per-query measures of one run, hardest query first."""

    ranker: str
    per_query: pd.DataFrame  # query_id, query, nDCG@10, RR@10, R@100, gold passage, gold rank (NaN: not in the run)
    depth: int  # how deep the run goes: a gold passage deeper than this has no rank
    notes: list[str] = field(default_factory=list)

    @property
    def means(self) -> dict[str, float]:
        return {m: float(self.per_query[m].mean()) for m in MEASURES}

    def share_failed(self, measure: str = "nDCG@10") -> float:
        """Share of the judged queries that score 0: not one relevant passage in the measure's cut-off."""
        return float((self.per_query[measure] == 0).mean()) if len(self.per_query) else 0.0

    def hardest(self, n: int = 20) -> pd.DataFrame:
        return self.per_query.head(n)


def gold_passages(collection: Collection) -> dict[str, str]:
    """``gold_passage`` of every judged query of ``collection`` that has one."""
    known = set(collection.doc_index)
    golds = {q: gold_passage(grades, known) for q, grades in collection.judgments.items()}
    return {q: d for q, d in golds.items() if d is not None}


def gold_ranks(run: Run, golds: dict[str, str]) -> dict[str, int]:
    """The rank of each query's gold passage in ``run`` under trec_eval's tie-break (score desc, then doc_id
    desc), the order its measures are computed in, so that a gold passage tied with another shows the rank
    its RR@10 counts, not the file's; a gold passage the run does not list has no entry."""
    frame = run.frame
    wanted = pd.DataFrame({"query_id": list(golds), "gold": list(golds.values())})
    found = frame.merge(wanted, left_on=["query_id", "doc_id"], right_on=["query_id", "gold"])
    found = found.drop_duplicates("query_id")[["query_id", "gold", "score"]].rename(columns={"score": "gold_score"})
    lists = frame[frame["query_id"].isin(found["query_id"])].merge(found, on="query_id")
    ahead = (lists["score"] > lists["gold_score"]) | ((lists["score"] == lists["gold_score"]) & (lists["doc_id"] > lists["gold"]))
    counts = ahead.groupby(lists["query_id"]).sum()
    return {str(q): int(n) + 1 for q, n in counts.items()}


def check_judged(collection: Collection) -> None:
    """One line before any work when the collection judges no passage relevant."""
    if collection.qrels is None or not (collection.qrels["relevance"] > 0).any():
        raise DataError(f"collection {collection.name!r} has no relevant judgments: nothing to score a ranker on")


def ranker_effectiveness(run: Run, collection: Collection, name: str | None = None) -> RankerEffectiveness:
    """nDCG@10, RR@10 and R@100 (ir_measures, trec_eval's tie-break) of every judged query with a
    relevant passage, and the rank of its gold passage in ``run``, sorted hardest first: by nDCG@10,
    then RR@10, then the gold passage's rank (not found first), then in a fixed shuffled order (a hash
    of the query id: the same on every run)."""
    check_judged(collection)
    name = name or run.name
    notes: list[str] = []
    columns = {}
    for measure in MEASURES:
        matrix = compute_matrix({name: run}, collection.qrels, measure)
        columns[measure] = matrix.values[name]
        notes += [n for n in matrix.notes if n not in notes]
    frame = pd.DataFrame(columns)
    frame.index = frame.index.astype(str)
    gold = gold_passages(collection)
    ranks = gold_ranks(run, {q: gold[q] for q in frame.index if q in gold})
    frame["gold passage"] = [gold.get(q) for q in frame.index]
    frame["gold rank"] = [float(ranks.get(q, np.nan)) for q in frame.index]
    texts = collection.query_text
    frame.insert(0, "query", [texts.get(q, "") for q in frame.index])
    frame = frame.rename_axis("query_id").reset_index()
    # equal failures (thousands of WordNet lemmas score 0 with the gold passage nowhere) in a fixed
    # shuffled order, so the first rows show a spread of queries rather than ids sorted as text ("0", "1", "10")
    shuffled = pd.util.hash_pandas_object(frame["query_id"], index=False).to_numpy()
    order = frame.assign(_rank=frame["gold rank"].fillna(np.inf), _tie=shuffled)
    order = order.sort_values(["nDCG@10", "RR@10", "_rank", "_tie"], ascending=[True, True, False, True], kind="stable")
    # a live ranker's depth is the k it was asked for (BM25 may return fewer passages on a small
    # collection: "not in its top 1" would be wrong); a run file's, the deepest rank it holds
    depth = int(run.meta.get("k") or (run.frame["rank"].max() if len(run.frame) else 0))
    return RankerEffectiveness(name, order.drop(columns=["_rank", "_tie"]).reset_index(drop=True), depth, notes)
