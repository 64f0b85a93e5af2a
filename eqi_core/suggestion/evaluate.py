"""Evaluation of query suggestion (paper Figure 5, Tables 6-7) on held-out queries.

For each held-out query with judgments, every method proposes up to 10 suggestions; a method's
score at k is max nDCG@10 over the original query and its first k suggestions (the paper's
best-of-k), averaged over queries with a percentile bootstrap 95% interval over queries. Methods:

- original: the query alone;
- RM3: the query plus one relevance-model term per suggestion (top-5 feedback);
- random feedback term / random term (no feedback): the query plus a random term of the top-5
  passages, or of the collection: probes of how much best-of-k pays for perturbing the query at all;
- Sampling+QD: nucleus samples at random points in an epsilon-ball around the query, filtered and
  picked as the models' samples (no learning: it isolates where the models put their points);
- feedback centroid+QD: the trivial PRF baseline with the same access as the PRF model: decode on
  the way to the mean of the top-5 passages' embeddings, picked the same way as the models' output;
- feedback walks+QD: the other trivial baseline with that access: decode 90% of the way to each of
  the top-5 passages and each passage itself (``baselines.feedback_walk_suggestions``);
- suggester (plain) / suggester (PRF): the trained models;
- walk to gold (oracle): decodings along the walk to the judged passage. It knows the answer, so it
  is an upper reference, never a suggester.

Also per method: Self-BLEU among the suggestions (diversity), non-word and repeated-word rates,
mean length in words, how many suggestions it made, and its best-of-10 minus RM3's on the same
queries with a paired bootstrap interval: two methods' intervals over queries overlap even when one
is better on most queries, so the paired difference is the test that can tell them apart.
"""
from __future__ import annotations

from functools import partial

import numpy as np
import pandas as pd

from eqi_core.decoder.traversal import interpolate
from eqi_core.progress import ProgressFn
from eqi_core.suggestion.baselines import (
    CUTOFFS,
    FEEDBACK_TERM,
    FEEDBACK_WALKS,
    RANDOM_TERM,
    best_of,
    feedback_term_suggestions,
    feedback_walk_suggestions,
    random_term_suggestions,
    rm3_suggestions,
    sampling_suggestions,
    self_bleu,
)
from eqi_core.suggestion.dataset import FEEDBACK
from eqi_core.suggestion.model import MAX_SUGGESTIONS, decode_suggestions

ORACLE = "walk to gold (oracle)"
CENTROID = "feedback centroid+QD"
METHOD_ORDER = ("RM3", FEEDBACK_TERM, RANDOM_TERM, "Sampling+QD", CENTROID, FEEDBACK_WALKS, "suggester (plain)", "suggester (PRF)", ORACLE)


def centroid_suggestions(space, query: str, n: int = MAX_SUGGESTIONS, seed: int = 0) -> list[str]:
    """Decode towards the mean of the query's top-5 passages (Rocchio in the encoder's space)."""
    q = space.encode([query])[0]
    _, fb = space.top(q[None], FEEDBACK)
    target = space.ranker.doc_embeddings[fb[0]].mean(0)
    return decode_suggestions(space, query, q, (target / np.linalg.norm(target)).astype(np.float32), n, seed)


def oracle_suggestions(space, query: str, gold: str, n: int = MAX_SUGGESTIONS, steps: int = 10) -> list[str]:
    """The walk's decodings, nearest the gold passage first (an upper reference: it knows the gold)."""
    q = space.encode([query])[0]
    points = interpolate(q, space.passage_embedding(gold), steps)[1:][::-1]
    own = " ".join(query.lower().split())
    texts = [c[0].text for c in space.model.decode(points, n=1, beam=4) if c]
    return list(dict.fromkeys(t for t in texts if t.strip() and " ".join(t.lower().split()) != own))[:n]


def evaluation_items(space, query_ids: list[str], limit: int, seed: int = 0) -> list[tuple[str, str, str]]:
    """(query_id, text, gold doc_id) for a seeded sample of judged queries."""
    texts = dict(zip(space.collection.queries["query_id"].astype(str), space.collection.queries["text"]))
    pool = sorted(q for q in map(str, query_ids) if q in texts and space.gold_passage(q))
    rng = np.random.default_rng(seed)
    pick = [pool[i] for i in rng.permutation(len(pool))[:limit]]
    return [(q, texts[q], space.gold_passage(q)) for q in pick]


# ``eqi eval-suggestions --only`` names methods by these keys
METHOD_KEYS = {"rm3": "RM3", "feedback-term": FEEDBACK_TERM, "random-term": RANDOM_TERM, "sampling": "Sampling+QD",
               "centroid": CENTROID, "walks": FEEDBACK_WALKS, "plain": "suggester (plain)", "prf": "suggester (PRF)",
               "oracle": ORACLE}


def suggestion_lists(space, items, suggesters: dict, progress: ProgressFn | None = None, epsilon: float = 0.4,
                     oracle: bool = True, only: set[str] | None = None) -> pd.DataFrame:
    """One row per (query, method) with its suggestions in order; ``only``: these methods (labels of
    ``METHOD_ORDER``) and no other."""
    rows = []
    for i, (qid, text, gold) in enumerate(items):
        makers = {"RM3": partial(rm3_suggestions, space, text, MAX_SUGGESTIONS),
                  FEEDBACK_TERM: partial(feedback_term_suggestions, space, text, MAX_SUGGESTIONS, seed=i),
                  RANDOM_TERM: partial(random_term_suggestions, space, text, MAX_SUGGESTIONS, seed=i),
                  "Sampling+QD": partial(sampling_suggestions, space, text, MAX_SUGGESTIONS, epsilon, seed=i),
                  CENTROID: partial(centroid_suggestions, space, text, seed=i),
                  FEEDBACK_WALKS: partial(feedback_walk_suggestions, space, text, MAX_SUGGESTIONS)}
        for sugg in suggesters.values():
            makers[sugg.label] = partial(sugg.suggest, space, text, seed=i)
        if oracle:
            makers[ORACLE] = partial(oracle_suggestions, space, text, gold)
        rows += [{"query_id": qid, "query": text, "gold": gold, "method": m, "suggestions": make()}
                 for m, make in makers.items() if only is None or m in only]
        if progress:
            progress(i + 1, len(items))
    return pd.DataFrame(rows)


def score_lists(space, lists: pd.DataFrame) -> pd.DataFrame:
    """Adds the original's and each suggestion's nDCG@10 and the best-of-k columns."""
    out = []
    originals: dict[str, float] = {}
    for _, row in lists.iterrows():
        qrels = space.qrels_for(row["query_id"], row["gold"])
        if row["query_id"] not in originals:
            originals[row["query_id"]] = float(space.ndcg10(space.encode([row["query"]]), [qrels])[0])
        texts = list(row["suggestions"])
        scores = space.ndcg10(space.encode(texts), [qrels] * len(texts)).tolist() if texts else []
        orig = originals[row["query_id"]]
        out.append({**row.to_dict(), "original": orig, "ndcg10": scores,
                    **{f"best@{k}": v for k, v in best_of(orig, scores).items()}})
    return pd.DataFrame(out)


def rescore_lists(lists: pd.DataFrame, ranker, judgments: dict[str, dict[str, int]]) -> pd.DataFrame:
    """An evaluation's suggestion lists (its lists.jsonl) scored by another ranker instead of the
    dense one they were made for: the original's and each suggestion's nDCG@10 under ``ranker``
    (``panel.score_with_ranker``) and the best-of-k columns, in ``score_lists``' shape, so that
    ``summary`` and ``paired_difference`` apply unchanged. The relevant passages are the query's
    judgments, else its gold passage, as in ``LatentSpace.qrels_for``. Asks whether suggestions made
    in MiniLM-L6's space help a searcher who types them into BM25, say."""
    from eqi_core.suggestion.panel import score_with_ranker

    column = f"ndcg10_{ranker.id}"

    def ndcg(texts: list[str], qrels: dict[str, int], gold: str) -> list[float]:
        if not texts:
            return []
        return score_with_ranker(pd.DataFrame({"suggestion": texts}), ranker, qrels, gold)[column].tolist()

    out, originals = [], {}
    for _, row in lists.iterrows():
        qid, gold = str(row["query_id"]), str(row["gold"])
        judged = judgments.get(qid, {})
        qrels = judged if any(g > 0 for g in judged.values()) else {gold: 1}
        if qid not in originals:
            originals[qid] = ndcg([str(row["query"])], qrels, gold)[0]
        scores = ndcg([str(t) for t in row["suggestions"]], qrels, gold)
        out.append({**row.to_dict(), "original": originals[qid], "ndcg10": scores,
                    **{f"best@{k}": v for k, v in best_of(originals[qid], scores).items()}})
    return pd.DataFrame(out)


def merge_rerun(earlier: pd.DataFrame, rerun: pd.DataFrame, items, source: str) -> pd.DataFrame:
    """``earlier``'s scored lists (one collection, from a run's lists.jsonl) with the methods of
    ``rerun`` replaced by its rows; the earlier run must have been on exactly ``items``' queries."""
    from eqi_core.errors import DataError

    asked = [str(q) for q, _, _ in items]
    found = list(dict.fromkeys(earlier["query_id"].astype(str)))
    if found != asked:
        raise DataError(f"{source}: its lists are for {len(found)} other queries than this run's {len(asked)} "
                        "(another --queries, --seed or --all-queries?); run without --only")
    kept = earlier[~earlier["method"].isin(set(rerun["method"]))].assign(query_id=lambda f: f["query_id"].astype(str))
    kept = kept.astype({c: float for c in kept.columns if c == "original" or c.startswith("best@")})
    merged = pd.concat([kept, rerun], ignore_index=True)
    rank = {q: i for i, q in enumerate(asked)}
    order = {m: i for i, m in enumerate(METHOD_ORDER)}
    return merged.sort_values(["query_id", "method"], key=lambda c: c.map(rank if c.name == "query_id" else order),
                              kind="stable", ignore_index=True)


def replace_card_rows(rows: list[dict], new: list[dict]) -> list[dict]:
    """A card's evaluation rows with each collection of ``new`` replaced where it stood (a collection
    not there yet goes last): re-running one collection leaves the order of the page's tables as it was."""
    fresh = {r.get("collection") for r in new}
    out, placed = [], False
    for name in dict.fromkeys(r.get("collection") for r in rows):
        if name not in fresh:
            out += [r for r in rows if r.get("collection") == name]
        elif not placed:
            out, placed = out + list(new), True
    return out if placed else out + list(new)


def bootstrap_mean_ci(x: np.ndarray, n_boot: int = 2000, seed: int = 0) -> tuple[float, float]:
    from eqi_core.coverage.tasc import bootstrap_ci

    return bootstrap_ci(pd.Series(x), n_boot=n_boot, seed=seed)


def paired_difference(scored: pd.DataFrame, method: str, reference: str = "RM3", k: int = 10) -> dict:
    """Mean best-of-k of ``method`` minus ``reference`` over the queries both answered, with a
    percentile bootstrap 95% interval resampling queries (paired); {} when there is nothing to pair."""
    pivot = scored[scored["method"].isin([method, reference])].pivot_table(
        index="query_id", columns="method", values=f"best@{k}", aggfunc="first")
    if method == reference or method not in pivot or reference not in pivot:
        return {}
    diff = (pivot[method] - pivot[reference]).dropna()
    if diff.empty:
        return {}
    lo, hi = bootstrap_mean_ci(diff.to_numpy())
    return {f"best@{k}_minus_{reference}": float(diff.mean()), f"best@{k}_minus_{reference}_lo": lo,
            f"best@{k}_minus_{reference}_hi": hi}


def summary(scored: pd.DataFrame, lexicon: frozenset[str] | None = None, judge=None) -> pd.DataFrame:
    """Per method: mean best-of-k with 95% intervals, Self-BLEU, fluency, suggestions per query, a
    typical suggestion's nDCG@10 gain over its query (``mean_gain``: per query the mean over its
    suggestions, then over queries) and the share of suggestions above their query, and the paired
    best-of-10 difference from RM3. With a ``judge`` (``natural_eval.fluency_judge``), the per-token
    perplexity of all the method's suggestions and the share of their words it does not know (the
    paper's Table 6 PPL; the original queries get theirs too)."""
    from eqi_core.decoder.natural_eval import fluency

    rows = []
    first = scored.drop_duplicates("query_id")
    lo, hi = bootstrap_mean_ci(first["original"].to_numpy())
    rows.append({"method": "original query", "queries": len(first), **{f"best@{k}": first["original"].mean() for k in CUTOFFS},
                 **{f"best@{k}_{end}": v for k in CUTOFFS for end, v in (("lo", lo), ("hi", hi))},
                 **(_perplexity(judge, first["query"].tolist()) if judge is not None else {})})
    for method in [m for m in METHOD_ORDER if m in set(scored["method"])]:
        part = scored[scored["method"] == method]
        row = {"method": method, "queries": len(part)}
        for k in CUTOFFS:
            row[f"best@{k}"] = part[f"best@{k}"].mean()
            row[f"best@{k}_lo"], row[f"best@{k}_hi"] = bootstrap_mean_ci(part[f"best@{k}"].to_numpy())
        texts = [t for s in part["suggestions"] for t in s]
        row["suggestions_per_query"] = float(np.mean([len(s) for s in part["suggestions"]]))
        defined = [b for b in (self_bleu(list(s)) for s in part["suggestions"]) if not np.isnan(b)]  # needs 2 suggestions
        row["self_bleu"] = float(np.mean(defined)) if defined else np.nan
        # a typical suggestion, where best-of-k keeps only the luckiest of k tries
        gains = [np.asarray(s, dtype=np.float64) - o for s, o in zip(part["ndcg10"], part["original"]) if len(s)]
        row["mean_gain"] = float(np.mean([g.mean() for g in gains])) if gains else np.nan
        row["share_above_query"] = float(np.mean(np.concatenate(gains) > 0)) if gains else np.nan
        if lexicon is not None:
            fl = fluency(texts, lexicon)
            row.update({k: fl[k] for k in ("nonword", "repeat", "repeat_inflected", "words")})
        if judge is not None:
            row.update(_perplexity(judge, texts))
        row.update(paired_difference(scored, method))
        rows.append(row)
    return pd.DataFrame(rows)


def _perplexity(judge, texts: list[str]) -> dict:
    got = judge.score(texts)
    return {"perplexity": got["perplexity"], "judge_oov": got["oov"]}
