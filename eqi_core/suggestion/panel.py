"""What the Suggestions panel and ``eqi suggest`` show: each model's suggestions for one query, with
the dense ranker's nDCG@10 and the gold passage's rank where the collection judges the query (and,
on request, another ranker's: ``score_with_ranker``)."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from eqi_core.collection import readable
from eqi_core.decoder.space import judged_grades
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


def feedback_passages(space, query: str) -> pd.DataFrame:
    """The passages the PRF suggester, RM3 and the feedback walks read for ``query``: its top
    ``FEEDBACK`` in the space (rank, doc_id, score, passage, grade, target = the gold passage). Where
    they are off the query's topic, so are those suggestions: the page and ``eqi suggest`` show them."""
    from eqi_core.suggestion.dataset import FEEDBACK

    query = check_query(query)
    qid = space.collection.find_query(query)
    gold = space.gold_passage(qid) if qid is not None else None
    top = space.judged_top(space.encode([query])[0], qid, gold or "", FEEDBACK)
    return top.assign(target=top["target"].str.replace("target", "gold"))


RANKER_DEPTH = 100  # how deep another ranker's gold-passage rank is looked for


def score_with_ranker(table: pd.DataFrame, ranker, judgments: dict[str, int], gold: str,
                      depth: int = RANKER_DEPTH, text_column: str = "suggestion") -> pd.DataFrame:
    """``table`` with each row's text (``text_column``) also scored by ``ranker`` (BM25, SPLADE, another dense model):
    ``ndcg10_<id>`` (ir_measures, against the query's ``judgments``) and ``gold_rank_<id>``, the gold
    passage's rank within that ranker's top ``depth`` (ties counted against it; deeper: empty), and
    ``retrieved_<id>``, how many passages it returned: a lexical ranker may return fewer than ``depth``
    (those sharing a word with the text), and then a gold passage not among them is not retrieved at all.
    Suggestions are made in the dense encoder's space, but a searcher may type them into another
    engine: whether a suggestion still helps there is this ranker's nDCG@10."""
    import ir_measures
    from ir_measures import nDCG

    texts = table[text_column].astype(str).tolist()
    run = ranker.search({str(i): t for i, t in enumerate(texts)}, k=depth).frame
    ndcg = [0.0] * len(texts)  # a text that matches nothing retrieves nothing: nDCG@10 0
    top10 = run[run["rank"] <= 10]
    scored = {q: dict(zip(g["doc_id"], g["score"].astype(float))) for q, g in top10.groupby("query_id")}
    qrels = {str(i): {d: int(g) for d, g in judgments.items()} for i in range(len(texts))}
    for m in ir_measures.iter_calc([nDCG @ 10], qrels, scored):
        ndcg[int(m.query_id)] = float(m.value)
    ranks: list = [pd.NA] * len(texts)
    retrieved = [0] * len(texts)
    for q, g in run.groupby("query_id"):
        retrieved[int(q)] = len(g)
        own = g.loc[g["doc_id"] == gold, "score"]
        if len(own):
            ranks[int(q)] = int((g["score"] >= own.iloc[0]).sum())
    return table.assign(**{f"ndcg10_{ranker.id}": ndcg, f"gold_rank_{ranker.id}": pd.array(ranks, dtype="Int64"),
                           f"retrieved_{ranker.id}": retrieved})


def ranker_top(ranker, collection, text: str, grades: dict[str, int], gold: str, k: int = 10) -> pd.DataFrame:
    """``ranker``'s top ``k`` for ``text`` in the shape of ``LatentSpace.judged_top`` (rank, doc_id,
    score, passage, grade, target), so that a page shows either ranker's results the same way."""
    frame = ranker.search([text], k=k).frame
    texts = collection.passages.set_index("doc_id")["text"]
    ids = frame["doc_id"].astype(str).tolist()
    return pd.DataFrame({"rank": frame["rank"].to_numpy(), "doc_id": ids, "score": frame["score"].to_numpy(),
                         "passage": [readable(texts.get(d, "")) for d in ids], "grade": judged_grades(grades, ids),
                         "target": ["◀ target" if d == gold else "" for d in ids]})


def rank_labels(table: pd.DataFrame, ranker_id: str, depth: int = RANKER_DEPTH) -> pd.Series:
    """``score_with_ranker``'s gold ranks as text for display: "> depth" where the passage is deeper
    than the ranker's top ``depth``, "not retrieved" where the ranker returned fewer than ``depth``
    passages and not this one (no word in common, for BM25)."""
    ranks, retrieved = table[f"gold_rank_{ranker_id}"], table[f"retrieved_{ranker_id}"]
    return pd.Series([str(int(r)) if not pd.isna(r) else f"> {depth}" if n >= depth else "not retrieved"
                      for r, n in zip(ranks, retrieved)], index=table.index)


def with_rank_labels(table: pd.DataFrame, ranker_id: str) -> pd.DataFrame:
    """``table`` as a page or the CLI shows it: the gold rank as ``rank_labels`` says it, without the
    count it was read from."""
    return table.assign(**{f"gold_rank_{ranker_id}": rank_labels(table, ranker_id)}).drop(columns=f"retrieved_{ranker_id}")
