"""What the Suggestions panel and ``eqi suggest`` show: each model's suggestions for one query, with
the dense ranker's nDCG@10 and the gold passage's rank where the collection judges the query."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from eqi_core.decoder.traversal import check_query
from eqi_core.suggestion.baselines import FEEDBACK_WALKS, feedback_walk_suggestions, rm3_suggestions, sampling_suggestions
from eqi_core.suggestion.model import KINDS, MODEL_LABELS, find_suggester

CHOICES = ("prf", "plain", "all")
COLUMNS = ["model", "rank", "suggestion", "ndcg10", "gold_rank"]


def suggestions_by_model(space, store, query: str, model: str = "prf", n: int = 10,
                         suggester_folder: Path | None = None) -> dict[str, list[str]]:
    """label -> suggestions. ``all``: both models plus the RM3, Sampling+QD and feedback-walk baselines."""
    from eqi_core.decoder.base import DecoderError

    query = check_query(query)
    if model not in CHOICES:
        raise DecoderError(f"--model {model!r}: expected one of {', '.join(CHOICES)}")
    kinds = KINDS[::-1] if model == "all" else (model,)
    out = {MODEL_LABELS[k]: find_suggester(k, space.encoder, store, suggester_folder if model != "all" else None)
           .suggest(space, query, n) for k in kinds}
    if model == "all":
        out["RM3"] = rm3_suggestions(space, query, n)
        out["Sampling+QD"] = sampling_suggestions(space, query, n)
        out[FEEDBACK_WALKS] = feedback_walk_suggestions(space, query, n)
    return out


def suggestion_table(space, store, query: str, model: str = "prf", n: int = 10,
                     suggester_folder: Path | None = None) -> pd.DataFrame:
    """One row per suggestion (the original query first); nDCG@10 and the gold passage's rank are
    empty when the collection has no judgments for this query."""
    query = check_query(query)
    by_model = suggestions_by_model(space, store, query, model, n, suggester_folder)
    qid = space.collection.find_query(query)
    gold = space.gold_passage(qid) if qid is not None else None
    rows = [("original query", 0, query)] + [(m, i + 1, t) for m, texts in by_model.items() for i, t in enumerate(texts)]
    table = pd.DataFrame(rows, columns=COLUMNS[:3])
    if gold is None:
        return table.assign(ndcg10=float("nan"), gold_rank=pd.NA)
    emb = space.encode(table["suggestion"].tolist())
    qrels = space.qrels_for(qid, gold)
    return table.assign(ndcg10=space.ndcg10(emb, [qrels] * len(table)),
                        gold_rank=space.ranks(emb, space.passage_index(gold)))
