"""The natural-language decoder's training text: real query logs plus sentences cut from passages.

Held out, never trained on (so evaluation is honest):
- a share of the query-log texts, chosen by a hash of the normalised text (the same question in two
  logs falls on the same side);
- a share of each collection's passages, chosen by a hash of the collection name and passage id,
  plus (WordNet) the judged passages of the collection's own held-out queries; no sentence of a
  held-out passage is cut, and a cut sentence equal to a held-out query is dropped;
- (version 2) every query of the collections the project evaluates on (TREC DL 2019, SciFact,
  Cranfield): 8 of DL19's 43 test queries are in the MS MARCO logs, and the decoders of version 1
  read them. Such log rows stay in the table with split "evaluated" (their words are real words for
  the evaluation's vocabulary) and a cut sentence equal to one is dropped.

The corpus is one Parquet table (text, kind, source, split) written atomically, with a summary.
"""
from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from eqi_core.decoder.base import words
from eqi_core.errors import DataError
from eqi_core.progress import ProgressFn

CORPUS_VERSION = 2  # 1: the shipped decoders' corpus (evaluated queries in training); 2: without them
EVALUATED_SPLIT = "evaluated"
HELDOUT_QUERY_SHARE = 0.05
HELDOUT_PASSAGE_SHARE = 0.1
SYNTHETIC_KIND = "synthetic"  # a trained decoder's own samples (eqi decoder-synthetic), paired with their embeddings
QUERY_KINDS = ("query", SYNTHETIC_KIND)  # the texts drawn for the query share of each training batch


def unit_hash(key: str) -> float:
    """A stable number in [0, 1) for a string (the split decision)."""
    return int(hashlib.sha1(key.encode()).hexdigest()[:8], 16) / 2**32


def normalised(text: str) -> str:
    return " ".join(words(text))


def query_heldout(text: str, share: float = HELDOUT_QUERY_SHARE) -> bool:
    return unit_hash("query:" + normalised(text)) < share


def passage_heldout(collection_key: str, doc_id: str, share: float = HELDOUT_PASSAGE_SHARE) -> bool:
    return unit_hash(f"passage:{collection_key}:{doc_id}") < share


@dataclass
class CorpusRecipe:
    query_logs: list[str]  # query-log files (qid<TAB>text)
    collections: dict[str, str]  # key -> collection spec whose passages are cut into sentences
    crops_per_passage: dict[str, int] = field(default_factory=dict)  # key -> sentences per passage (default 2)
    min_words: int = 3
    max_words: int = 24
    query_share: float = HELDOUT_QUERY_SHARE
    passage_share: float = HELDOUT_PASSAGE_SHARE
    seed: int = 0
    # key -> collection spec whose queries (every split) are never trained on (version 2); left out of
    # the repr, the store's key for version 1, so the shipped decoders' corpus keeps its key and bytes
    evaluated: dict[str, str] = field(default_factory=dict, repr=False)

    @property
    def version(self) -> int:
        return 2 if self.evaluated else 1


_SENTENCE = re.compile(r"(?<=[.!?;])\s+|\s*[\n\r]+\s*")


def sentences(text: str) -> list[str]:
    return [s.strip(" \t.;") for s in _SENTENCE.split(text) if s.strip(" \t.;")]


def crops(text: str, n: int, rng: np.random.Generator, min_words: int, max_words: int) -> list[str]:
    """Up to ``n`` sentences of a passage (a window of one when it is too long), as written."""
    out = []
    for s in sentences(text):
        toks = s.split()
        if len(toks) < min_words:
            continue
        if len(toks) > max_words:
            size = int(rng.integers(max(min_words, 6), max_words + 1))
            start = int(rng.integers(0, len(toks) - size + 1))
            toks = toks[start:start + size]
        out.append(" ".join(toks))
    if len(out) > n:
        out = [out[i] for i in sorted(rng.choice(len(out), size=n, replace=False))]
    return out


def read_logs(paths: Iterable[str]) -> pd.DataFrame:
    from eqi_core.loaders.query_log import read_query_log

    frames = []
    for p in paths:
        log = read_query_log(p)
        frames.append(pd.DataFrame({"text": log["text"].str.strip(), "source": Path(p).stem}))
    if not frames:
        raise DataError("decoder corpus: no query logs given; expected qid<TAB>text files")
    out = pd.concat(frames, ignore_index=True)
    out["key"] = out["text"].map(normalised)
    return out[out["key"] != ""].drop_duplicates("key").drop(columns="key")


def heldout_passages(key: str, collection, share: float) -> set[str]:
    """Held-out passage ids of one collection (hash rule; WordNet adds its held-out queries' judged
    passages, which the WordNet decoder's evaluation uses)."""
    ids = {d for d in collection.passages["doc_id"] if passage_heldout(key, d, share)}
    if key.startswith("wordnet"):
        from eqi_core.decoder.train import heldout_split

        for spec in ("wordnet",):  # the default collection's split (eval-decoder -c wordnet)
            from eqi_core.loaders import load_collection

            ids |= set(heldout_split(load_collection(spec), 0.1)[1])
    return ids


def build_corpus(recipe: CorpusRecipe, out: Path, progress: ProgressFn | None = None) -> dict:
    """Write the corpus Parquet to ``out`` (atomically); return its summary."""
    from eqi_core.loaders import load_collection
    from eqi_core.store import atomic_path

    rng = np.random.default_rng(recipe.seed)
    logs = read_logs(recipe.query_logs)
    logs["split"] = np.where([query_heldout(t, recipe.query_share) for t in logs["text"]], "heldout", "train")
    logs["kind"] = "query"
    held_query_keys = {normalised(t) for t in logs.loc[logs["split"] == "heldout", "text"]}
    evaluated = evaluated_queries(recipe.evaluated)
    moved = (logs["split"] == "train") & logs["text"].map(normalised).isin(evaluated)
    logs.loc[moved, "split"] = EVALUATED_SPLIT
    held_query_keys |= evaluated
    parts = [logs]
    recipe_dict = asdict(recipe)
    if not recipe.evaluated:
        recipe_dict.pop("evaluated")  # version 1's summary, as the shipped decoders' cards hold it
    summary = {"version": recipe.version, "recipe": recipe_dict, "sources": {}}
    for i, (key, spec) in enumerate(recipe.collections.items()):
        coll = load_collection(spec)
        held = heldout_passages(key, coll, recipe.passage_share)
        n = recipe.crops_per_passage.get(key, 2)
        texts = []
        for did, text in zip(coll.passages["doc_id"], coll.passage_texts()):
            if did in held:
                continue
            texts += [c for c in crops(text, n, rng, recipe.min_words, recipe.max_words)
                      if normalised(c) not in held_query_keys]
        parts.append(pd.DataFrame({"text": texts, "source": key, "split": "train", "kind": "passage"}))
        summary["sources"][key] = {"spec": spec, "passages": len(coll.passages), "heldout_passages": len(held),
                                   "sentences": len(texts), "fingerprint": coll.fingerprint}
        if progress:
            progress(i + 1, len(recipe.collections))
    table = pd.concat(parts, ignore_index=True)
    key = table["text"].map(normalised)
    table = table[~key.duplicated() | (table["split"] != "train")].reset_index(drop=True)
    summary["queries_train"] = int(((table["kind"] == "query") & (table["split"] == "train")).sum())
    summary["queries_heldout"] = int((table["split"] == "heldout").sum())
    if recipe.evaluated:
        summary["queries_evaluated"] = {
            "collections": sorted(recipe.evaluated), "distinct": len(evaluated),
            "in_logs": logs.loc[moved].groupby("source").size().to_dict()}
    summary["sentences_train"] = int((table["kind"] == "passage").sum())
    summary["query_sources"] = logs.groupby("source").size().to_dict()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(out) as tmp:
        table.to_parquet(tmp, compression="zstd", index=False)
    digest = hashlib.sha256(out.read_bytes()).hexdigest()[:16]
    summary["digest"] = digest
    with atomic_path(out.with_suffix(".json")) as tmp:
        Path(tmp).write_text(json.dumps(summary, indent=1), encoding="utf-8")
    return summary


def evaluated_queries(collections: dict[str, str]) -> set[str]:
    """The normalised texts of every query of these collections (all splits)."""
    from eqi_core.loaders import load_collection

    keys: set[str] = set()
    for spec in collections.values():
        keys.update(k for k in map(normalised, load_collection(spec).queries["text"]) if k)
    return keys


def read_corpus(path: Path) -> tuple[pd.DataFrame, dict]:
    """The corpus table and its summary; a one-line error when it is not one."""
    path = Path(path)
    try:
        table = pd.read_parquet(path)
    except Exception as exc:  # any unreadable file is the same user error
        raise DataError(f"{path}: not a decoder corpus Parquet file ({type(exc).__name__})") from None
    missing = {"text", "kind", "source", "split"} - set(table.columns)
    if missing:
        raise DataError(f"{path}: decoder corpus lacks column(s) {', '.join(sorted(missing))}")
    meta = path.with_suffix(".json")
    summary = json.loads(meta.read_text(encoding="utf-8")) if meta.is_file() else {}
    summary.setdefault("digest", hashlib.sha256(path.read_bytes()).hexdigest()[:16])
    return table, summary


def default_recipe(data_root: Path, version: int = CORPUS_VERSION) -> CorpusRecipe:
    """The decoders' recipe over ``../shared/data``: every query log, WordNet glosses (full), TREC DL
    2019 passages, SciFact abstracts and Cranfield; version 2 never trains on those collections'
    queries, version 1 (the shipped decoders') did."""
    if version not in (1, 2):
        raise DataError(f"decoder corpus version {version}: expected 1 or 2")
    data_root = Path(data_root)
    logs = sorted(str(p) for p in (data_root / "query-logs").glob("*.tsv"))
    if not logs:
        raise DataError(f"{data_root / 'query-logs'}: no query logs (*.tsv); expected ../shared/data/query-logs")
    colls = {"wordnet-full": "wordnet:full"}
    for key, folder in [("trec-dl19-passage", "trec-dl19-passage"), ("scifact", "scifact"), ("cranfield", "cranfield")]:
        if (data_root / folder).is_dir():
            colls[key] = f"beir:{data_root / folder}"
    evaluated = {k: s for k, s in colls.items() if s.startswith("beir:")} if version == 2 else {}
    return CorpusRecipe(query_logs=logs, collections=colls,
                        crops_per_passage={"wordnet-full": 1, "trec-dl19-passage": 6, "scifact": 8, "cranfield": 6},
                        evaluated=evaluated)


__all__ = ["QUERY_KINDS", "SYNTHETIC_KIND", "EVALUATED_SPLIT", "CorpusRecipe", "evaluated_queries", "build_corpus", "read_corpus", "default_recipe",
           "query_heldout", "passage_heldout", "crops", "sentences", "unit_hash"]
