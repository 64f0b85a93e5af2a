"""The reformulation dataset (Adolphs et al. 2022, Section 4): walk from each training query's
embedding to each of its gold passages in K steps, decode every step, and keep the rewrites that
succeed. A rewrite succeeds when (the paper's three filters) the gold passage is ranked first by
the encoder's dense ranker, its nDCG@10 beats the original query's, and its inner product with the
gold passage beats the original query's. Held-out queries (``heldout_split``) are never walked.

Built in chunks of walks, each written as a Parquet part in the store's work folder, so an
interrupted build resumes where it stopped; the finished dataset is one store artifact with its
provenance (collection fingerprints, decoder card, K, filters) and statistics (paper Figure 4).
"""
from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from eqi_core.decoder.base import words
from eqi_core.decoder.traversal import interpolate
from eqi_core.errors import DataError
from eqi_core.progress import ProgressFn
from eqi_core.stopping import should_stop
from eqi_core.store import ArtifactStore, atomic_path, content_digest

KIND = "reformulations"
VERSION = 1
FEEDBACK = 5  # the PRF model's context: the ranker's top-5 passages for the original query
FILTERS = ("gold passage at rank 1", "nDCG@10 above the original query's",
           "inner product with the gold passage above the original query's", "text differs from the query")


@dataclass(frozen=True)
class ReformulationRecipe:
    steps: int = 20  # K: decoded points q_1..q_K on the walk (q_K is the passage's own embedding)
    mode: str = "linear"
    beam: int = 2  # beam width of each step's decoding (the best hypothesis is kept)
    max_queries: int = 4000  # per collection, a seeded sample of its training queries
    golds_per_query: int = 2  # walks per query: to its most relevant judged passages
    heldout_share: float = 0.1
    chunk: int = 96  # walks per resumable part
    seed: int = 0

    def validate(self) -> None:
        if not 1 <= self.steps <= 50:
            raise DataError(f"K = {self.steps}: expected 1..50 steps")
        if self.beam < 1 or self.max_queries < 1 or self.golds_per_query < 1 or self.chunk < 1:
            raise DataError("beam, max queries, golds per query and chunk must be positive")


def walk_items(space, recipe: ReformulationRecipe) -> pd.DataFrame:
    """(query_id, query, gold doc_id, grade) for a seeded sample of the collection's training
    queries with judged passages (held-out queries excluded)."""
    from eqi_core.decoder.train import heldout_split

    coll = space.collection
    held, _ = heldout_split(coll, recipe.heldout_share)
    held = set(held)
    texts = dict(zip(coll.queries["query_id"].astype(str), coll.queries["text"]))
    qrels = coll.qrels
    if qrels is None or not len(qrels):
        raise DataError(f"{coll.name}: no relevance judgments; the reformulation dataset walks to judged passages")
    rel = qrels[(qrels["relevance"] > 0) & ~qrels["query_id"].astype(str).isin(held)].copy()
    rel["query_id"] = rel["query_id"].astype(str)
    rel = rel[rel["query_id"].isin(texts.keys()) & rel["doc_id"].astype(str).isin(set(map(str, space.doc_ids)))]
    qids = np.array(sorted(rel["query_id"].unique()))
    rng = np.random.default_rng(recipe.seed)
    qids = set(qids[rng.permutation(len(qids))[: recipe.max_queries]])
    rel = rel[rel["query_id"].isin(qids)].sort_values(["query_id", "relevance", "doc_id"], ascending=[True, False, True])
    rel = rel.groupby("query_id", sort=False).head(recipe.golds_per_query)
    out = pd.DataFrame({"query_id": rel["query_id"].to_numpy(), "query": [texts[q] for q in rel["query_id"]],
                        "doc_id": rel["doc_id"].astype(str).to_numpy(), "grade": rel["relevance"].astype(int).to_numpy()})
    return out[out["query"].str.strip().astype(bool)].reset_index(drop=True)


def _walk_chunk(space, items: pd.DataFrame, recipe: ReformulationRecipe) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """Decode and score every step of a chunk of walks: (walk rows, step rows, embeddings: each
    walk's query and feedback passages, each step's rewrite; fp16, so training needs no collection)."""
    q_emb = space.encode(items["query"].tolist())
    gold = np.array([space.passage_index(d) for d in items["doc_id"]])
    d_emb = space.ranker.doc_embeddings[gold]
    k = recipe.steps
    points = np.concatenate([interpolate(q, d, k, recipe.mode)[1:] for q, d in zip(q_emb, d_emb)])
    texts = [c[0].text if c else "" for c in space.model.decode(points, n=1, beam=recipe.beam)]
    r_emb = space.encode([t if t.strip() else "-" for t in texts])
    qrels = [space.qrels_for(q, d) for q, d in zip(items["query_id"], items["doc_id"])]
    orig_ndcg = space.ndcg10(q_emb, qrels)
    orig_ip = np.einsum("ij,ij->i", q_emb, d_emb)
    orig_rank = space.ranks(q_emb, gold)
    step_gold = np.repeat(gold, k)
    ndcg = space.ndcg10(r_emb, [r for r in qrels for _ in range(k)])
    ip = np.einsum("ij,ij->i", r_emb, space.ranker.doc_embeddings[step_gold])
    rank = space.ranks(r_emb, step_gold)
    own = np.repeat([" ".join(words(t)) for t in items["query"]], k)
    differs = np.array([" ".join(words(t)) != o and bool(t.strip()) for t, o in zip(texts, own)])
    success = (rank == 1) & (ndcg > np.repeat(orig_ndcg, k)) & (ip > np.repeat(orig_ip, k)) & differs
    _, fb = space.top(q_emb, FEEDBACK)
    walks = items.assign(orig_ndcg10=orig_ndcg, orig_ip=orig_ip, orig_rank=orig_rank,
                         feedback=[[str(space.doc_ids[j]) for j in row] for row in fb])
    steps = pd.DataFrame({
        "walk": np.repeat(items.index.to_numpy(), k), "step": np.tile(np.arange(1, k + 1), len(items)),
        "rewrite": texts, "ndcg10": ndcg, "ip": ip, "gold_rank": rank, "success": success,
    })
    context = np.concatenate([q_emb[:, None], space.ranker.doc_embeddings[fb]], axis=1).astype(np.float16)
    return walks, steps, {"context": context, "rewrite": r_emb.astype(np.float16)}


def decoder_digest(model) -> str:
    """A decoder's identity in store keys: the digest of its card (training recipe, corpus, metrics), so
    that what it decoded is never reused for another decoder's."""
    card = getattr(model, "card", {}) or {}
    return content_digest(json.dumps({k: v for k, v in card.items() if not k.startswith("_")}, sort_keys=True, default=str))


def dataset_params(spaces: list, recipe: ReformulationRecipe) -> dict:
    return {"collections": [s.collection.fingerprint for s in spaces], "encoder": spaces[0].encoder.id,
            "decoder": decoder_digest(spaces[0].model), "recipe": asdict(recipe), "filters": list(FILTERS),
            "version": VERSION}


def build_reformulations(spaces: list, store: ArtifactStore, recipe: ReformulationRecipe = ReformulationRecipe(),
                         progress: ProgressFn | None = None, deadline: float | None = None):
    """Build (or resume, or load) the dataset over ``spaces`` (LatentSpaces of one encoder, each
    with the natural decoder). Returns the artifact, or None when ``deadline`` stopped it (parts kept)."""
    recipe.validate()
    if not spaces:
        raise DataError("reformulations: no collection given")
    if len({s.encoder.id for s in spaces}) != 1:
        raise DataError("reformulations: every collection must use the same encoder")
    params = dataset_params(spaces, recipe)
    found = store.load(KIND, params)
    if found is not None:
        return found
    work = store.work_dir(KIND, params)
    plan = []
    for ci, space in enumerate(spaces):
        items = walk_items(space, recipe)
        for start in range(0, len(items), recipe.chunk):
            plan.append((ci, start, items.iloc[start:start + recipe.chunk]))
    total = sum(len(p[2]) for p in plan)
    done = sum(len(p[2]) for p in plan if (work / f"part-{p[0]}-{p[1]:07d}.steps.parquet").is_file())
    started = time.time()
    for ci, start, items in plan:
        base = work / f"part-{ci}-{start:07d}"
        if Path(f"{base}.steps.parquet").is_file():
            continue
        if should_stop(deadline):
            return None
        walks, steps, emb = _walk_chunk(spaces[ci], items, recipe)
        walks = walks.assign(collection=spaces[ci].collection.name, collection_index=ci)
        with atomic_path(f"{base}.emb.npz") as tmp, open(tmp, "wb") as fh:
            np.savez(fh, **emb)
        with atomic_path(f"{base}.walks.parquet") as tmp:
            walks.to_parquet(tmp, index=True)
        with atomic_path(f"{base}.steps.parquet") as tmp:  # written last: it marks the part done
            steps.to_parquet(tmp, index=False)
        done += len(items)
        if progress:
            progress(done, total)

    def build(tmp: Path) -> dict:
        walks, steps, context, rewrite = [], [], [], []
        offset = 0
        for ci, start, _ in plan:
            base = work / f"part-{ci}-{start:07d}"
            w = pd.read_parquet(f"{base}.walks.parquet")
            s = pd.read_parquet(f"{base}.steps.parquet")
            with np.load(f"{base}.emb.npz") as emb:
                context.append(emb["context"])
                rewrite.append(emb["rewrite"])
            mapping = {old: offset + i for i, old in enumerate(w.index)}
            s["walk"] = s["walk"].map(mapping)
            walks.append(w.reset_index(drop=True))
            steps.append(s)
            offset += len(w)
        walks_df = pd.concat(walks, ignore_index=True)
        steps_df = pd.concat(steps, ignore_index=True)
        walks_df.to_parquet(tmp / "walks.parquet", index=False)
        steps_df.to_parquet(tmp / "steps.parquet", index=False)
        np.save(tmp / "context_emb.npy", np.concatenate(context))  # (walks, 1 + FEEDBACK, dim): query, top-5
        np.save(tmp / "rewrite_emb.npy", np.concatenate(rewrite))  # (steps, dim), aligned with steps.parquet
        stats = dataset_statistics(walks_df, steps_df)
        stats["seconds_this_call"] = round(time.time() - started, 1)
        (tmp / "stats.json").write_text(json.dumps(stats, indent=1), encoding="utf-8")
        return {"walks": len(walks_df), "successful_rewrites": stats["successful_rewrites"]}

    art = store.get_or_build(KIND, params, build)
    store.clear_work_dir(KIND, params)
    return art


def read_reformulations(folder: Path) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    folder = Path(folder)
    try:
        return (pd.read_parquet(folder / "walks.parquet"), pd.read_parquet(folder / "steps.parquet"),
                json.loads((folder / "stats.json").read_text(encoding="utf-8")))
    except (OSError, ValueError) as exc:
        raise DataError(f"{folder}: not a reformulation dataset ({type(exc).__name__}: {exc})") from None


def successful_pairs(walks: pd.DataFrame, steps: pd.DataFrame) -> pd.DataFrame:
    """One row per distinct successful (query, rewrite): the suggestion models' training pairs."""
    ok = steps[steps["success"]].merge(walks[["query_id", "query", "doc_id", "collection", "feedback"]],
                                       left_on="walk", right_index=True)
    ok = ok.assign(norm=[" ".join(words(t)) for t in ok["rewrite"]])
    return ok.drop_duplicates(["collection", "query_id", "norm"]).drop(columns="norm").reset_index(drop=True)


def _hist(values: np.ndarray, edges: np.ndarray) -> list[int]:
    return np.histogram(np.clip(values, edges[0], edges[-1]), bins=edges)[0].tolist()


def dataset_statistics(walks: pd.DataFrame, steps: pd.DataFrame) -> dict:
    """Counts, the share of queries with at least one successful rewrite (paper: > 80% on MS MARCO)
    and Figure 4's histograms: nDCG@10 and inner product of the original query vs the best rewrite."""
    pairs = successful_pairs(walks, steps)
    best = steps.sort_values(["walk", "gold_rank", "ndcg10", "ip"], ascending=[True, True, False, False]) \
        .drop_duplicates("walk").set_index("walk").reindex(walks.index)
    ndcg_edges = np.linspace(0, 1, 11)
    ip_lo = float(min(walks["orig_ip"].min(), best["ip"].min()))
    ip_edges = np.linspace(np.floor(ip_lo * 10) / 10, 1.0, 11)
    walk_ok = steps.groupby("walk")["success"].any().reindex(walks.index, fill_value=False)
    query_ok = walks.assign(ok=walk_ok.to_numpy()).groupby(["collection", "query_id"], sort=False)["ok"].any()
    per_coll = {}
    for name, part in walks.groupby("collection", sort=False):
        q_ok = query_ok.loc[name]
        per_coll[name] = {"queries": int(part["query_id"].nunique()), "walks": len(part),
                          "queries_with_success": round(float(q_ok.mean()), 4),
                          "successful_rewrites": int((pairs["collection"] == name).sum()),
                          "original_ndcg10": round(float(part["orig_ndcg10"].mean()), 4),
                          "best_rewrite_ndcg10": round(float(best.loc[part.index, "ndcg10"].mean()), 4)}
    return {
        "walks": len(walks), "queries": int(walks.groupby(["collection", "query_id"]).ngroups),
        "decoded_steps": len(steps), "successful_steps": int(steps["success"].sum()),
        "successful_rewrites": len(pairs),
        "queries_with_success": round(float(query_ok.mean()), 4) if len(query_ok) else 0.0,
        "per_collection": per_coll,
        "figure4": {"ndcg_edges": ndcg_edges.round(3).tolist(),
                    "ndcg_original": _hist(walks["orig_ndcg10"].to_numpy(), ndcg_edges),
                    "ndcg_best": _hist(best["ndcg10"].to_numpy(), ndcg_edges),
                    "ip_edges": ip_edges.round(3).tolist(),
                    "ip_original": _hist(walks["orig_ip"].to_numpy(), ip_edges),
                    "ip_best": _hist(best["ip"].to_numpy(), ip_edges)},
        "filters": list(FILTERS),
    }
