"""Decoder evaluation (``eqi eval-decoder``): the paper's Tables 1, 2, 6/7 and Figure 3 on held-out data.

Held-out queries and their judged passages come from ``heldout_split`` (never seen in training),
and they are hidden from the decoders' neighbourhood, so the nearest-query baseline and word-edit
search cannot simply look the answer up; the natural-language evaluation is ``natural_eval``.
"""
from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd

from eqi_core.decoder.base import words
from eqi_core.decoder.space import DECODER_NAMES, LatentSpace
from eqi_core.decoder.traversal import interpolate
from eqi_core.errors import DataError
from eqi_core.progress import ProgressFn
from eqi_core.suggestion.baselines import CUTOFFS, best_of, rm3_suggestions, sampling_suggestions, self_bleu

PAPER = {  # MS MARCO, GTR-base + T5 decoder (paper Tables 1 and 2)
    "token_f1": 0.750, "cosine": 0.960, "top1": 0.551, "top3": 0.737, "top5": 0.796,
}


def token_f1(reference: str, decoded: str) -> float:
    """SQuAD-style bag-of-words F1 between two strings (lower-cased, punctuation dropped)."""
    a, b = words(reference), words(decoded)
    if not a or not b:
        return float(a == b)
    common = sum((Counter(a) & Counter(b)).values())
    if common == 0:
        return 0.0
    p, r = common / len(b), common / len(a)
    return 2 * p * r / (p + r)


def _decode_top1(space: LatentSpace, name: str, emb: np.ndarray, progress: ProgressFn | None = None) -> list[str]:
    dec = space.decoder(name)
    if name not in ("decoder+rerank", "word-edit search"):
        return [c[0].text for c in dec.decode(emb, n=1)]
    out = []
    for i, e in enumerate(emb):  # one at a time, so the caller sees progress
        out.append(dec.decode(e[None], n=1)[0][0].text)
        if progress:
            progress(i + 1, len(emb))
    return out


def round_trip(space: LatentSpace, query_ids: list[str], decoders=DECODER_NAMES,
               progress: ProgressFn | None = None) -> pd.DataFrame:
    """Table 1: decode(enc(q)) against q: token F1 and cosine between enc(q) and enc(decoded)."""
    q = space.collection.queries.set_index("query_id").loc[query_ids, "text"].tolist()
    emb = space.encode(q)
    rows = []
    for name in decoders:
        decoded = _decode_top1(space, name, emb, progress)
        cos = np.einsum("ij,ij->i", emb, space.encode(decoded))
        rows += [{"decoder": name, "query_id": i, "query": t, "decoded": d, "token_f1": token_f1(t, d), "cosine": float(c)}
                 for i, t, d, c in zip(query_ids, q, decoded, cos)]
    return pd.DataFrame(rows)


def passage_to_query(space: LatentSpace, doc_ids: list[str], decoders=DECODER_NAMES,
                     progress: ProgressFn | None = None) -> pd.DataFrame:
    """Table 2: decode a query from a passage's embedding; the passage's exact rank for that query."""
    idx = np.array([space.passage_index(d) for d in doc_ids])
    emb = space.ranker.doc_embeddings[idx]
    rows = []
    for name in decoders:
        decoded = _decode_top1(space, name, emb, progress)
        ranks = space.ranks(space.encode(decoded), idx) if len(idx) else np.zeros(0, int)
        rows += [{"decoder": name, "doc_id": d, "decoded": t, "rank": int(r)} for d, t, r in zip(doc_ids, decoded, ranks)]
    return pd.DataFrame(rows)


def summarise(rt: pd.DataFrame, p2q: pd.DataFrame) -> pd.DataFrame:
    """One row per decoder: Table 1 and Table 2 side by side, with the paper's numbers."""
    t1 = rt.groupby("decoder")[["token_f1", "cosine"]].mean()
    t2 = p2q.assign(top1=p2q["rank"] <= 1, top3=p2q["rank"] <= 3, top5=p2q["rank"] <= 5).groupby("decoder")[
        ["top1", "top3", "top5"]].mean()
    out = t1.join(t2, how="outer").reindex([d for d in DECODER_NAMES if d in set(t1.index) | set(t2.index)])
    paper = pd.DataFrame([PAPER], index=["paper (GTR + T5, MS MARCO)"])
    return pd.concat([out, paper])


def eval_queries(space: LatentSpace, query_ids: list[str]) -> list[tuple[str, str, str]]:
    """(query id, text, gold passage) for the given queries that have a gold passage."""
    texts = dict(zip(space.collection.queries["query_id"], space.collection.queries["text"]))
    out = []
    for q in query_ids:
        gold = space.gold_passage(q)
        if gold is not None:
            out.append((q, texts[q], gold))
    return out


def traversal_curve(space: LatentSpace, items: list[tuple[str, str, str]], steps: int = 10, mode: str = "linear",
                    decoder: str = "decoder", progress: ProgressFn | None = None) -> pd.DataFrame:
    """Figure 3: nDCG@10 of each step's decoding, from the query (step 0) to its gold passage (step K),
    plus the original query's own nDCG@10 (step -1 in the frame, 'query' in the figure)."""
    if not items:
        return pd.DataFrame(columns=["query_id", "step", "decoded", "ndcg10", "target_rank"])
    q_emb = space.encode([t for _, t, _ in items])
    gold_idx = np.array([space.passage_index(g) for _, _, g in items])
    points = np.concatenate([interpolate(q, space.ranker.doc_embeddings[g], steps, mode) for q, g in zip(q_emb, gold_idx)])
    decoded = _decode_top1(space, decoder, points, progress)
    emb = space.encode(decoded)
    qrels = [space.qrels_for(q, g) for q, _, g in items]
    per_point_qrels = [r for r in qrels for _ in range(steps + 1)]
    frame = pd.DataFrame({
        "query_id": [q for q, _, _ in items for _ in range(steps + 1)],
        "step": np.tile(np.arange(steps + 1), len(items)),
        "decoded": decoded,
        "ndcg10": space.ndcg10(emb, per_point_qrels),
        "target_rank": space.ranks(emb, np.repeat(gold_idx, steps + 1)),
    })
    original = pd.DataFrame({"query_id": [q for q, _, _ in items], "step": -1, "decoded": [t for _, t, _ in items],
                             "ndcg10": space.ndcg10(q_emb, qrels), "target_rank": space.ranks(q_emb, gold_idx)})
    return pd.concat([original, frame], ignore_index=True).assign(decoder=decoder, mode=mode)


def curve_summary(curve: pd.DataFrame) -> pd.DataFrame:
    """Mean nDCG@10 per step, per decoder, on the queries whose step-0 decoding has nDCG@10 < 1
    (room to improve); step -1 is the original query on the same queries."""
    out = []
    for dec, part in curve.groupby("decoder", sort=False):
        room = set(part.loc[(part["step"] == 0) & (part["ndcg10"] < 1), "query_id"])
        sub = part[part["query_id"].isin(room)]
        out.append(sub.groupby("step", as_index=False).agg(ndcg10=("ndcg10", "mean"), queries=("query_id", "nunique"))
                   .assign(decoder=dec))
    cols = ["decoder", "step", "ndcg10", "queries"]
    return pd.concat(out, ignore_index=True)[cols] if out else pd.DataFrame(columns=cols)


def suggestions(space: LatentSpace, items: list[tuple[str, str, str]], curve: pd.DataFrame | None = None, n: int = 10,
                epsilon: float = 0.4, progress: ProgressFn | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Figure 5 / Table 7 and Table 6: best-of-k nDCG@10 and Self-BLEU per suggestion method."""
    rows, lists = [], []
    for i, (qid, text, gold) in enumerate(items):
        qrels = space.qrels_for(qid, gold)
        methods = {"RM3": rm3_suggestions(space, text, n), f"Sampling+QD (eps {epsilon})": sampling_suggestions(space, text, n, epsilon, seed=i)}
        if curve is not None:
            for dec, part in curve[(curve["query_id"] == qid) & (curve["step"] >= 1)].groupby("decoder"):
                methods[f"Traversal to gold, {dec} (oracle)"] = part.sort_values("step")["decoded"].tolist()[::-1][:n]
        original = float(space.ndcg10(space.encode([text]), [qrels])[0])
        for method, texts in methods.items():
            scores = space.ndcg10(space.encode(texts), [qrels] * len(texts)).tolist() if texts else []
            rows.append({"query_id": qid, "method": method, "original": original,
                         **{f"best@{k}": v for k, v in best_of(original, scores).items()}})
            lists.append({"query_id": qid, "method": method, "self_bleu": self_bleu(texts), "suggestions": texts})
        if progress:
            progress(i + 1, len(items))
    table = pd.DataFrame(rows)
    bleu = pd.DataFrame(lists)
    summary = table.groupby("method")[["original", *[f"best@{k}" for k in CUTOFFS]]].mean().join(
        bleu.groupby("method")["self_bleu"].mean())
    return summary, bleu


def run_evaluation(space: LatentSpace, heldout_query_ids: list[str], n_queries: int = 300, n_passages: int = 300,
                   n_traversal: int = 100, n_guided_traversal: int = 30, n_suggest: int = 100, steps: int = 10,
                   mode: str = "linear", seed: int = 0, progress_factory=None) -> dict:
    """Everything ``eqi eval-decoder`` reports, on seeded samples of the held-out queries.
    ``progress_factory(label)`` returns a ProgressFn per stage (or None)."""
    bar = progress_factory or (lambda label: None)
    if not heldout_query_ids:
        raise DataError(f"{space.collection.name}: no held-out queries to evaluate on (the split holds out 10% of "
                        "the query ids; the collection has too few queries)")
    rng = np.random.default_rng(seed)
    pool = sorted(heldout_query_ids)
    sample = lambda n: [pool[i] for i in rng.permutation(len(pool))[: min(n, len(pool))]]
    rt = round_trip(space, sample(n_queries), progress=bar("round trip (encoder-in-the-loop methods)"))
    with_gold = eval_queries(space, sample(len(pool)))
    docs = list(dict.fromkeys(g for _, _, g in with_gold))[:n_passages]
    p2q = passage_to_query(space, docs, progress=bar("passage to query (encoder-in-the-loop methods)"))
    walk = with_gold[:n_traversal]
    curve = traversal_curve(space, walk, steps, mode, "decoder", bar("traversal (decoder alone)"))
    if n_guided_traversal:
        curve = pd.concat([curve, traversal_curve(space, walk[:n_guided_traversal], steps, mode, "decoder+rerank",
                                                  bar("traversal (re-ranked)"))], ignore_index=True)
    sugg, sugg_lists = suggestions(space, walk[:n_suggest], curve, progress=bar("suggestions"))
    return {"summary": summarise(rt, p2q), "round_trip": rt, "passage_to_query": p2q, "curve": curve,
            "curve_summary": curve_summary(curve), "suggestions": sugg, "suggestion_lists": sugg_lists,
            "samples": {"queries": int(rt["query_id"].nunique()), "passages": len(docs), "traversal": len(walk),
                        "guided_traversal": min(n_guided_traversal, len(walk)), "suggest": min(n_suggest, len(walk)),
                        "steps": steps, "mode": mode, "seed": seed}}
