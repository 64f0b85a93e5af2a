"""Approximate EQI by reverse retrieval: the passage is the query, the query log is the collection.

- BM25-reverse: the log indexed with bm25s, the passage text issued as a query; BM25-tuned picks
  (k1, b) on training passages by RELQ.
- dense-reverse: the nearest logged queries to the passage embedding in the retriever's own space.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import bm25s
import numpy as np

from eqi_core.progress import ProgressFn
from eqi_core.rankers.bm25 import bm25_topk, make_tokenizer
from eqi_core.rankers.dense import InnerProductIndex, query_embeddings, query_embeddings_artifact

__all__ = ["BM25Reverse", "DenseReverse", "query_embeddings", "query_embeddings_artifact"]


@dataclass
class DenseReverse:
    """Nearest queries to a passage in the document-retrieval embedding space."""

    query_emb: np.ndarray
    name: str = "dense-reverse"

    @cached_property
    def index(self) -> InnerProductIndex:
        return InnerProductIndex(self.query_emb)

    def retrieve(self, passage_emb: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
        scores, idx = self.index.search(passage_emb, n)
        return idx, scores


@dataclass
class BM25Reverse:
    """The query log as a BM25 index; a passage's text as the query."""

    retriever: bm25s.BM25
    tokenizer: bm25s.tokenization.Tokenizer
    n_queries: int
    k1: float
    b: float
    name: str = "BM25-reverse"

    @classmethod
    def build(cls, query_texts: list[str], k1: float = 0.9, b: float = 0.4, name: str = "BM25-reverse") -> BM25Reverse:
        tok = make_tokenizer()
        ids = tok.tokenize(query_texts, return_as="ids", show_progress=False)
        retriever = bm25s.BM25(k1=k1, b=b)
        retriever.index(ids, show_progress=False)
        return cls(retriever, tok, len(query_texts), k1, b, name)

    def retrieve_texts(self, texts: list[str], n: int) -> tuple[np.ndarray, np.ndarray]:
        """(logged query indices, scores) per passage text, best first (ties by query index), -1 past
        the queries sharing a term with it."""
        scores, idx = bm25_topk(self.retriever, self.tokenizer, texts, min(n, self.n_queries))
        return idx, scores


def tune_bm25_reverse(query_texts: list[str], passage_texts: list[str], score_fn, n: int,
                      k1_grid=(0.3, 0.6, 0.9, 1.2, 1.6, 2.0), b_grid=(0.0, 0.2, 0.4, 0.6, 0.8, 1.0),
                      progress: ProgressFn | None = None) -> tuple[BM25Reverse, dict]:
    """Grid-search (k1, b) of BM25-reverse on training passages; ``score_fn(idx) -> mean RELQ``."""
    if not passage_texts:  # nothing to tune on: Anserini's defaults, said so in the result
        return BM25Reverse.build(query_texts, 0.9, 0.4, name="BM25-tuned"), {"k1": 0.9, "b": 0.4, "train_relq": None,
                                                                              "grid": {}, "note": "no tuning passages"}
    best, best_score, grid = None, -1.0, {}
    total = len(k1_grid) * len(b_grid)
    for i, (k1, b) in enumerate((k1, b) for k1 in k1_grid for b in b_grid):
        model = BM25Reverse.build(query_texts, k1, b, name="BM25-tuned")
        idx, _ = model.retrieve_texts(passage_texts, n)
        score = float(score_fn(idx))
        grid[(k1, b)] = score
        if best is None or score > best_score:
            best, best_score = model, score
        if progress:
            progress(i + 1, total)
    return best, {"k1": best.k1, "b": best.b, "train_relq": best_score, "grid": {f"{k}": v for k, v in grid.items()}}
