"""Ranker registry: ids the CLI and the dashboard share, and how each ranker is built.

Ids: ``bm25``, ``minilm-l6`` (all-MiniLM-L6-v2, the default dense ranker), ``minilm-l3-onnx``
(paraphrase-MiniLM-L3-v2 via onnxruntime), ``splade-tiny``, and ``st:<folder>`` for any local
sentence-transformers model folder. Release dates are public release months (approximate for
the small checkpoints); users can override them where chronology matters.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from eqi_core.collection import Collection, DataError
from eqi_core.progress import ProgressFn
from eqi_core.rankers.base import Queries, Ranker, as_query_items
from eqi_core.runs import Run
from eqi_core.store import ArtifactStore


@dataclass(frozen=True)
class RankerInfo:
    id: str
    name: str
    family: str
    release_date: str
    description: str


RANKERS: dict[str, RankerInfo] = {
    r.id: r
    for r in [
        RankerInfo("bm25", "BM25", "lexical", "1994-11", "bm25s, k1=0.9 b=0.4, English stop words + Snowball stemmer"),
        RankerInfo("minilm-l6", "MiniLM-L6 (dense)", "dense", "2021-08", "all-MiniLM-L6-v2, 384-d, sentence-transformers (torch)"),
        RankerInfo("minilm-l3-onnx", "MiniLM-L3 (dense, ONNX)", "dense", "2021-06", "paraphrase-MiniLM-L3-v2, 384-d, onnxruntime, mean pooling"),
        RankerInfo("splade-tiny", "SPLADE-tiny", "learned-sparse", "2021-09", "SPLADE-tiny MLM head, log(1+relu) max pooling"),
    ]
}
DEFAULT_RANKER = "bm25"


def ranker_info(ranker_id: str) -> RankerInfo:
    if ranker_id in RANKERS:
        return RANKERS[ranker_id]
    if ranker_id.startswith("st:"):
        folder = Path(ranker_id[3:])
        return RankerInfo(ranker_id, f"{folder.name} (dense)", "dense", "", f"local sentence-transformers folder {folder}")
    raise DataError(f"ranker {ranker_id!r}: unknown; expected one of {', '.join(RANKERS)} or st:<model folder>")


@lru_cache(maxsize=8)
def load_encoder(encoder_id: str):
    """Encoders are heavy and stateless: one per process."""
    from eqi_core import encoders as enc

    if encoder_id == "minilm-l6":
        return enc.SentenceTransformerEncoder(enc.minilm_l6_dir(), "minilm-l6")
    if encoder_id == "minilm-l3-onnx":
        return enc.OnnxMeanPoolEncoder(enc.minilm_l3_onnx_file(), enc.minilm_l6_dir() / "tokenizer.json", "minilm-l3-onnx")
    if encoder_id == "splade-tiny":
        return enc.SpladeEncoder(enc.splade_tiny_dir())
    if encoder_id.startswith("st:"):
        folder = Path(encoder_id[3:]).expanduser().resolve()
        try:
            return enc.SentenceTransformerEncoder(folder, f"st:{folder}")
        except (OSError, ValueError) as exc:
            raise DataError(f"{folder}: cannot load a sentence-transformers model ({exc})") from None
    raise DataError(f"encoder {encoder_id!r}: unknown")


def index_artifact(ranker_id: str, collection: Collection) -> tuple[str, dict]:
    """(kind, params) of the stored index a ranker needs for this collection."""
    ranker_info(ranker_id)
    if ranker_id == "bm25":
        from eqi_core.rankers.bm25 import BM25Ranker

        return BM25Ranker.artifact(collection)
    if ranker_id == "splade-tiny":
        from eqi_core.rankers.splade import SpladeRanker

        return SpladeRanker.artifact(collection)
    from eqi_core.rankers.dense import passage_embeddings_artifact

    encoder_id = ranker_id if not ranker_id.startswith("st:") else f"st:{Path(ranker_id[3:]).expanduser().resolve()}"
    return passage_embeddings_artifact(collection, encoder_id)


def is_indexed(ranker_id: str, collection: Collection, store: ArtifactStore) -> bool:
    """Whether the ranker's index for this collection is in the store (cheap: no checksums)."""
    return store.load(*index_artifact(ranker_id, collection), verify=False) is not None


def build_ranker(ranker_id: str, collection: Collection, store: ArtifactStore,
                 progress: ProgressFn | None = None) -> Ranker:
    """Index ``collection`` for this ranker (or load the index from the store) and return it."""
    info = ranker_info(ranker_id)
    if ranker_id == "bm25":
        from eqi_core.rankers.bm25 import BM25Ranker

        return BM25Ranker.build(collection, store, progress=progress)
    if ranker_id == "splade-tiny":
        from eqi_core.rankers.splade import SpladeRanker

        return SpladeRanker.build(collection, store, load_encoder("splade-tiny"), progress=progress)
    from eqi_core.rankers.dense import DenseRanker

    return DenseRanker.build(collection, store, load_encoder(ranker_id), info.name, info.release_date, progress)


def run_artifact(ranker_id: str, collection: Collection, k: int = 100) -> tuple[str, dict]:
    """(kind, params) of a ranker's stored run over all the collection's queries."""
    return "run", {"collection": collection.fingerprint, "ranker": ranker_id, "k": k}


def has_run(ranker_id: str, collection: Collection, store: ArtifactStore, k: int = 100) -> bool:
    return store.load(*run_artifact(ranker_id, collection, k), verify=False) is not None


def run_all_queries(ranker: Ranker, collection: Collection, store: ArtifactStore, k: int = 100,
                    progress: ProgressFn | None = None) -> Run:
    """The ranker's run over every query of the collection, cached in the store as Parquet."""
    import pandas as pd

    _, params = run_artifact(ranker.id, collection, k)

    def build(tmp: Path) -> dict:
        run = ranker.search(dict(zip(collection.queries["query_id"], collection.queries["text"])), k=k, progress=progress)
        run.frame.to_parquet(tmp / "run.parquet", index=False)
        return {"rows": len(run)}

    art = store.get_or_build("run", params, build, sources=[f"collection:{collection.fingerprint}"])
    return Run(ranker.name, pd.read_parquet(art.file("run.parquet")), {"ranker": ranker.id, "k": k, "artifact": art.key})


__all__ = ["RANKERS", "DEFAULT_RANKER", "RankerInfo", "Ranker", "Queries", "as_query_items",
           "ranker_info", "load_encoder", "index_artifact", "is_indexed", "build_ranker", "run_artifact", "has_run", "run_all_queries"]
