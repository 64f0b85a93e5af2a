"""Rankers: the registry (``registry.py``: ids, names, families, release dates, colours, encoders,
builders) and the run of every logged query through a ranker, cached in the store.

Ids: ``bm25``, ``minilm-l6`` (all-MiniLM-L6-v2, the default dense ranker), ``minilm-l3-onnx``
(paraphrase-MiniLM-L3-v2 via onnxruntime), ``splade-tiny``, and ``st:<folder>`` for any local
sentence-transformers model folder.
"""
from __future__ import annotations

from pathlib import Path

from eqi_core.collection import Collection
from eqi_core.progress import ProgressFn
from eqi_core.rankers.base import Queries, Ranker, as_query_items
from eqi_core.rankers.registry import (
    DEFAULT_RANKER,
    RANKERS,
    REGISTRY,
    RankerSpec,
    build_ranker,
    colour_for,
    embedding_dimension,
    index_artifact,
    known,
    load_encoder,
    ranker_spec,
    release_date_for,
    selection_params,
)
from eqi_core.runs import Run
from eqi_core.store import ArtifactStore


def is_indexed(ranker_id: str, collection: Collection, store: ArtifactStore) -> bool:
    """Whether the ranker's index for this collection is in the store (cheap: no checksums)."""
    return store.load(*index_artifact(ranker_id, collection), verify=False) is not None


def run_artifact(ranker_id: str, collection: Collection, k: int = 100) -> tuple[str, dict]:
    """(kind, params) of a ranker's stored run over all the collection's queries (with the digests of
    shipped vectors where a dense ranker uses them)."""
    from eqi_core.rankers.dense import shipped_digests

    params = {"collection": collection.fingerprint, "ranker": ranker_id, "k": k}
    spec = ranker_spec(ranker_id)
    params.update(selection_params(spec))
    shipped = shipped_digests(spec.encoder, collection) if spec.family == "dense" else None
    return "run", {**params, "shipped": shipped} if shipped else params


def has_run(ranker_id: str, collection: Collection, store: ArtifactStore, k: int = 100) -> bool:
    return store.load(*run_artifact(ranker_id, collection, k), verify=False) is not None


def run_all_queries(ranker: Ranker, collection: Collection, store: ArtifactStore, k: int = 100,
                    progress: ProgressFn | None = None) -> Run:
    """The ranker's run over every query of the collection, cached in the store as Parquet."""
    import pandas as pd

    _, params = run_artifact(ranker.id, collection, k)

    def build(tmp: Path) -> dict:
        qids = collection.queries["query_id"].tolist()
        if hasattr(ranker, "search_embeddings"):  # dense: the log's stored embeddings, shared with exposure
            from eqi_core.rankers.dense import query_embeddings

            run = ranker.search_embeddings(qids, query_embeddings(ranker.encoder, collection, store, progress), k=k)
        else:
            run = ranker.search(dict(zip(qids, collection.queries["text"])), k=k, progress=progress)
        run.frame.to_parquet(tmp / "run.parquet", index=False)
        return {"rows": len(run)}

    art = store.get_or_build("run", params, build, sources=[f"collection:{collection.fingerprint}"])
    return Run(ranker.name, pd.read_parquet(art.file("run.parquet")), {"ranker": ranker.id, "k": k, "artifact": art.key})


__all__ = ["RANKERS", "REGISTRY", "DEFAULT_RANKER", "RankerSpec", "Ranker", "Queries", "as_query_items",
           "ranker_spec", "selection_params", "known", "release_date_for", "colour_for", "embedding_dimension", "load_encoder",
           "index_artifact", "is_indexed", "build_ranker", "run_artifact", "has_run", "run_all_queries"]
