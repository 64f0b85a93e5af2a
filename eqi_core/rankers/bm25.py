"""BM25 via bm25s (Lucene scoring), English stop words and Snowball stemming."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import bm25s
import numpy as np
import Stemmer

from eqi_core.collection import Collection
from eqi_core.rankers.base import Queries, as_query_items, canonical_topk
from eqi_core.runs import Run
from eqi_core.store import ArtifactStore

BM25_VERSION = f"bm25s-{bm25s.__version__}"


def make_tokenizer() -> bm25s.tokenization.Tokenizer:
    return bm25s.tokenization.Tokenizer(stemmer=Stemmer.Stemmer("english"), stopwords="en")


@dataclass
class BM25Ranker:
    retriever: bm25s.BM25
    tokenizer: bm25s.tokenization.Tokenizer
    doc_ids: np.ndarray
    k1: float = 0.9
    b: float = 0.4
    id: str = "bm25"
    name: str = "BM25"
    family: str = "lexical"
    release_date: str = "1994-11"

    @staticmethod
    def artifact(collection: Collection, k1: float = 0.9, b: float = 0.4) -> tuple[str, dict]:
        """(kind, params) of this ranker's index in the store."""
        return "bm25", {"collection": collection.fingerprint, "k1": k1, "b": b, "version": BM25_VERSION}

    @classmethod
    def build(cls, collection: Collection, store: ArtifactStore, k1: float = 0.9, b: float = 0.4,
              progress=None) -> BM25Ranker:
        kind, params = cls.artifact(collection, k1, b)

        def build(tmp: Path) -> dict:
            n = len(collection.passages)  # bm25s indexes in one call: reported as started, then done
            if progress:
                progress(0, n)
            tok = make_tokenizer()
            ids = tok.tokenize(collection.passage_texts(), return_as="ids", show_progress=progress is None)
            retriever = bm25s.BM25(k1=k1, b=b)
            retriever.index(ids, show_progress=progress is None)
            retriever.save(str(tmp / "index"))
            tok.save_vocab(str(tmp / "index"))
            tok.save_stopwords(str(tmp / "index"))
            if progress:
                progress(n, n)
            return {"vocabulary": len(tok.get_vocab_dict())}

        art = store.get_or_build(kind, params, build, sources=[f"collection:{collection.fingerprint}"])
        retriever, tok = load_index(art.file("index"))
        return cls(retriever, tok, collection.passages["doc_id"].to_numpy(dtype=object), k1, b)

    def topk(self, texts: list[str], k: int, progress=None) -> tuple[np.ndarray, np.ndarray]:
        """(scores, passage indices) per text, best first; index -1 where fewer than k passages match."""
        return bm25_topk(self.retriever, self.tokenizer, texts, max(1, min(k, len(self.doc_ids))), progress)

    def search(self, queries: Queries, k: int = 100, progress=None) -> Run:
        qids, texts = as_query_items(queries)
        scores, indices = self.topk(texts, k, progress)
        return Run.from_topk(self.name, qids, self.doc_ids, indices, scores,
                             {"ranker": self.id, "k1": self.k1, "b": self.b})


def load_index(folder: Path, mmap: bool = False) -> tuple[bm25s.BM25, bm25s.tokenization.Tokenizer]:
    """A stored bm25s index and its tokenizer (vocabulary, stop words); ``mmap`` maps the index
    arrays instead of reading them (what distributed workers do)."""
    retriever = bm25s.BM25.load(str(folder), allow_pickle=False, mmap=mmap)
    tok = make_tokenizer()
    tok.load_vocab(str(folder))
    tok.load_stopwords(str(folder))
    return retriever, tok


def bm25_topk(retriever: bm25s.BM25, tokenizer, texts: list[str], k: int, progress=None) -> tuple[np.ndarray, np.ndarray]:
    tokens = tokenizer.tokenize(texts, update_vocab=False, return_as="ids", show_progress=False, allow_empty=False)
    indices = np.full((len(texts), k), -1, dtype=np.int64)
    scores = np.zeros((len(texts), k), dtype=np.float32)
    depth = min(k, int(retriever.scores["num_docs"]))  # bm25s refuses k above the collection size
    nonempty = [i for i, t in enumerate(tokens) if len(t)]
    step = 2048
    for start in range(0, len(nonempty), step):
        rows = nonempty[start:start + step]
        docs, sc = retriever.retrieve([tokens[i] for i in rows], k=depth, show_progress=False, n_threads=1)
        indices[rows, :depth], scores[rows, :depth] = docs, sc
        if progress:
            progress(min(start + step, len(nonempty)), len(nonempty))
    indices[scores <= 0] = -1  # a passage sharing no term with the query is not retrieved
    scores[indices < 0] = 0.0
    return canonical_topk(scores, indices, k)
