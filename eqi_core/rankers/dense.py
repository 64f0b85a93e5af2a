"""Dense retrieval: passage embeddings in the store, exact top-k by blocked matrix multiply."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from eqi_core.collection import Collection
from eqi_core.encoders import Encoder
from eqi_core.progress import ProgressFn
from eqi_core.rankers.base import Queries, as_query_items
from eqi_core.runs import Run
from eqi_core.store import ArtifactStore

BLOCK_BYTES = 256 << 20  # bounds the score block; larger blocks measured faster (fewer merges)


def exact_topk(
    queries: np.ndarray, docs: np.ndarray, k: int, block_bytes: int = BLOCK_BYTES,
    progress: ProgressFn | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact inner-product top-k: (scores, indices), each (n_queries, k), best first.

    Scores are computed for a block of queries against a block of passages at a time (one
    GEMM through numpy's BLAS, measured faster than torch's here), reduced with ``torch.topk``
    (multi-threaded over rows) and merged across passage blocks, so memory stays near
    ``block_bytes`` whatever the collection size.
    """
    n_q, n_d = len(queries), len(docs)
    k = min(k, n_d)
    out_s = np.empty((n_q, k), dtype=np.float32)
    out_i = np.empty((n_q, k), dtype=np.int64)
    if n_q == 0 or k == 0:
        return out_s, out_i
    queries = np.ascontiguousarray(queries, dtype=np.float32)
    docs = np.ascontiguousarray(docs, dtype=np.float32)
    d_block = max(k, min(n_d, block_bytes // 4 // 256))
    q_block = max(1, min(n_q, block_bytes // 4 // min(n_d, d_block)))
    with torch.inference_mode():
        for qs in range(0, n_q, q_block):
            q = queries[qs:qs + q_block]
            best_s = best_i = None
            for ds in range(0, n_d, d_block):
                scores = torch.from_numpy(q @ docs[ds:ds + d_block].T)
                s, i = torch.topk(scores, min(k, scores.shape[1]), dim=1)
                i += ds
                if best_s is None:
                    best_s, best_i = s, i
                else:
                    cat_s, cat_i = torch.cat([best_s, s], 1), torch.cat([best_i, i], 1)
                    best_s, pos = torch.topk(cat_s, k, dim=1)
                    best_i = torch.gather(cat_i, 1, pos)
            out_s[qs:qs + len(q)] = best_s.numpy()
            out_i[qs:qs + len(q)] = best_i.numpy()
            if progress:
                progress(min(qs + q_block, n_q), n_q)
    return out_s, out_i


def embeddings_artifact(encoder_id: str, params: dict) -> tuple[str, dict]:
    """(kind, params) of stored embeddings: what was encoded (``params``), by which encoder and which
    code path (e.g. onnxruntime on an fp32 export)."""
    from eqi_core.rankers.registry import encoding_path

    path = encoding_path(encoder_id)
    return "embeddings", {**params, "encoder": encoder_id, **({"path": path} if path != "default" else {})}


def passage_embeddings_artifact(collection: Collection, encoder_id: str) -> tuple[str, dict]:
    return embeddings_artifact(encoder_id, {"collection": collection.fingerprint, "field": "passages"})


def encode_texts(
    encoder: Encoder, texts: list[str], store: ArtifactStore, params: dict, progress: ProgressFn | None = None,
) -> np.ndarray:
    """Embeddings of ``texts`` from the store, encoding them once (keyed by ``params``)."""

    def build(tmp: Path) -> dict:
        emb = encoder.encode(texts, progress=progress)
        np.save(tmp / "embeddings.npy", emb, allow_pickle=False)
        return {"shape": list(emb.shape)}

    art = store.get_or_build(*embeddings_artifact(encoder.id, params), build)
    return np.load(art.file("embeddings.npy"), allow_pickle=False)


@dataclass
class DenseRanker:
    encoder: Encoder
    doc_embeddings: np.ndarray
    doc_ids: np.ndarray
    id: str
    name: str
    release_date: str
    family: str = "dense"

    @classmethod
    def build(cls, collection: Collection, store: ArtifactStore, encoder: Encoder, name: str,
              release_date: str, progress: ProgressFn | None = None) -> DenseRanker:
        _, params = passage_embeddings_artifact(collection, encoder.id)
        emb = encode_texts(encoder, collection.passage_texts(), store,
                           {k: v for k, v in params.items() if k != "encoder"}, progress)
        return cls(encoder, emb, collection.passages["doc_id"].to_numpy(dtype=object), encoder.id, name, release_date)

    def encode_queries(self, texts: list[str], progress: ProgressFn | None = None) -> np.ndarray:
        return self.encoder.encode(texts, progress=progress)

    def search(self, queries: Queries, k: int = 100, progress: ProgressFn | None = None) -> Run:
        qids, texts = as_query_items(queries)
        return self.search_embeddings(qids, self.encode_queries(texts), k)

    def search_embeddings(self, qids: list[str], query_embeddings: np.ndarray, k: int = 100,
                          progress: ProgressFn | None = None) -> Run:
        scores, idx = exact_topk(query_embeddings, self.doc_embeddings, k, progress=progress)
        return Run.from_topk(self.name, qids, self.doc_ids, idx, scores, {"ranker": self.id})
