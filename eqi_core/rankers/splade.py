"""SPLADE-tiny learned sparse retrieval: sparse passage vectors in the store, sparse dot products."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from eqi_core.collection import Collection
from eqi_core.encoders import SpladeEncoder
from eqi_core.progress import ProgressFn
from eqi_core.rankers.base import Queries, as_query_items
from eqi_core.runs import Run
from eqi_core.store import ArtifactStore


@dataclass
class SpladeRanker:
    encoder: SpladeEncoder
    doc_matrix: sp.csr_matrix  # passages x vocabulary
    doc_ids: np.ndarray
    id: str = "splade-tiny"
    name: str = "SPLADE-tiny"
    family: str = "learned-sparse"
    release_date: str = "2021-09"

    def __post_init__(self) -> None:
        self._vocab_by_doc = self.doc_matrix.T.tocsr()  # vocabulary x passages, for q @ D^T

    @staticmethod
    def artifact(collection: Collection, encoder_id: str = "splade-tiny") -> tuple[str, dict]:
        """(kind, params) of the sparse passage matrix in the store."""
        return "splade", {"collection": collection.fingerprint, "encoder": encoder_id}

    @classmethod
    def build(cls, collection: Collection, store: ArtifactStore, encoder: SpladeEncoder,
              progress: ProgressFn | None = None) -> SpladeRanker:
        def build(tmp: Path) -> dict:
            m = encoder.encode_sparse(collection.passage_texts(), progress=progress)
            sp.save_npz(tmp / "passages.npz", m, compressed=False)
            return {"shape": list(m.shape), "nnz": int(m.nnz)}

        art = store.get_or_build(*cls.artifact(collection, encoder.id), build)
        matrix = sp.load_npz(art.file("passages.npz")).tocsr()
        return cls(encoder, matrix, collection.passages["doc_id"].to_numpy(dtype=object))

    def ranks_of_new_passage(self, queries: list[str], text: str) -> np.ndarray:
        """1-based rank a passage not in the collection would have for each query, among all passages
        (inf: it shares no expansion term with the query); ties go against it, as appended last."""
        q = self.encoder.encode_sparse(queries)
        own = (q @ self.encoder.encode_sparse([text]).T).toarray().ravel()
        listed = (q @ self._vocab_by_doc).toarray()
        return np.where(own > 0, 1 + (listed >= own[:, None]).sum(axis=1), np.inf).astype(float)

    def search(self, queries: Queries, k: int = 100, progress: ProgressFn | None = None) -> Run:
        qids, texts = as_query_items(queries)
        q = self.encoder.encode_sparse(texts)
        k = min(k, len(self.doc_ids))
        indices = np.full((len(texts), k), -1, dtype=np.int64)
        scores = np.zeros((len(texts), k), dtype=np.float32)
        step = 256
        for start in range(0, len(texts), step):
            dense = (q[start:start + step] @ self._vocab_by_doc).toarray()
            s, i = rowwise_topk(dense, k)
            scores[start:start + len(dense)], indices[start:start + len(dense)] = s, i
            if progress:
                progress(min(start + step, len(texts)), len(texts))
        indices[scores <= 0] = -1  # no shared expansion term: not retrieved
        return Run.from_topk(self.name, qids, self.doc_ids, indices, scores, {"ranker": self.id})


def query_matrix(collection: Collection, store: ArtifactStore, encoder: SpladeEncoder,
                 progress: ProgressFn | None = None) -> sp.csr_matrix:
    """The logged queries' sparse vectors (queries x vocabulary), encoded in one call as the ranker's
    run over the log encodes them, and kept in the store: a pasted passage's exact exposure is then
    one sparse product."""
    def build(tmp: Path) -> dict:
        m = encoder.encode_sparse(collection.queries["text"].tolist(), progress=progress)
        sp.save_npz(tmp / "queries.npz", m, compressed=False)
        return {"shape": list(m.shape), "nnz": int(m.nnz)}

    art = store.get_or_build("splade-queries", {"collection": collection.fingerprint, "encoder": encoder.id}, build,
                             sources=[f"collection:{collection.fingerprint}"])
    return sp.load_npz(art.file("queries.npz")).tocsr()


def rowwise_topk(scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Top-k of each row of a dense score matrix: (scores, indices), best first."""
    part = np.argpartition(-scores, k - 1, axis=1)[:, :k]
    part_scores = np.take_along_axis(scores, part, 1)
    order = np.argsort(-part_scores, axis=1, kind="stable")
    return np.take_along_axis(part_scores, order, 1), np.take_along_axis(part, order, 1)
