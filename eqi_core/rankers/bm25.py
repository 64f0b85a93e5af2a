"""BM25 via bm25s (Lucene scoring), English stop words and Snowball stemming."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import bm25s
import numpy as np
import Stemmer

from eqi_core.collection import Collection
from eqi_core.rankers.base import Queries, as_query_items, canonical_topk
from eqi_core.runs import Run
from eqi_core.store import ArtifactStore

BM25_VERSION = f"bm25s-{bm25s.__version__}"
# How BM25's top k is selected, in the store key of everything BM25 ranks (runs, exposure maps, the
# evaluations that list BM25-reverse): 2 = ``topk_rows`` with ties at the cut by index, not bm25s's own.
BM25_SELECTION = 2


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
    """(scores, passage indices) per text in the canonical order (score descending, then passage
    index), -1 where fewer than k passages share a term with the text.

    bm25s scores each text; the selection is ours (``topk_rows``), not bm25s's ``np.argpartition``:
    a BM25 score row is almost all zeros, and on an AVX-512 CPU numpy 2.4's partition of such a row
    took 20 ms for 147k logged queries (0.1 ms here); it also breaks ties at the cut by passage
    index, where bm25s left the choice among tied passages to numpy's partition (unspecified)."""
    from eqi_core.rankers.topk import topk_rows

    tokens = tokenizer.tokenize(texts, update_vocab=False, return_as="ids", show_progress=False, allow_empty=False)
    indices = np.full((len(texts), k), -1, dtype=np.int64)
    scores = np.zeros((len(texts), k), dtype=np.float32)
    n_docs = int(retriever.scores["num_docs"])
    depth = min(k, n_docs)
    nonempty = [i for i, t in enumerate(tokens) if len(t)]
    step = max(1, min(512, (64 << 20) // (4 * n_docs)))  # score rows per selection: about 64 MB
    block = np.empty((min(step, len(nonempty)), n_docs), dtype=np.float32)
    for start in range(0, len(nonempty), step):
        rows = nonempty[start:start + step]
        for j, i in enumerate(rows):
            block[j] = retriever.get_scores(list(tokens[i]))
        indices[rows, :depth], scores[rows, :depth] = topk_rows(block[:len(rows)], depth)[::-1]
        if progress:
            progress(min(start + step, len(nonempty)), len(nonempty))
    indices[scores <= 0] = -1  # a passage sharing no term with the query is not retrieved
    scores[indices < 0] = 0.0
    return canonical_topk(scores, indices, k)


@dataclass
class BM25WithNewPassage:
    """BM25's lists as they would be with one more passage appended to the collection, for the exact
    exposure of a pasted text. Adding a passage changes the collection's statistics (the number of
    passages, the mean length, the document frequency of its terms), so every passage's score moves:
    the index is rebuilt with the passage (bm25s, the ranker's own tokenizer and parameters) and the
    queries that share a term with it are re-scored in full. Passages and logged queries are
    tokenized once. The appended passage has the last index, so ties go against it (the canonical
    order is score descending, then passage index)."""
    tokenizer: bm25s.tokenization.Tokenizer
    passage_tokens: list[list[int]]
    query_tokens: list[list[int]]
    k1: float = 0.9
    b: float = 0.4
    _last: tuple | None = field(default=None, init=False, repr=False, compare=False)  # (passage key, index)

    @classmethod
    def prepare(cls, passage_texts: list[str], query_texts: list[str], k1: float = 0.9, b: float = 0.4) -> BM25WithNewPassage:
        tok = make_tokenizer()  # one vocabulary for passages and queries: a query term no passage has keeps an id
        passages = tok.tokenize(passage_texts, return_as="ids", show_progress=False)
        queries = tok.tokenize(query_texts, update_vocab=True, return_as="ids", show_progress=False)
        return cls(tok, passages, queries, k1, b)

    def _tokens(self, texts: list[str], fresh: dict[str, int]) -> list[list[int]]:
        """Texts as ids of this vocabulary; terms it lacks get new ids (shared through ``fresh``), so a
        pasted passage's own terms count in its length and match a new query that has them."""
        vocab = self.tokenizer.get_vocab_dict()
        stems = make_tokenizer().tokenize(texts, return_as="string", show_progress=False)  # no vocabulary filter
        return [[vocab[s] if s in vocab else fresh.setdefault(s, len(vocab) + len(fresh)) for s in row if s]
                for row in stems]

    def _ranks(self, new: list[int], queries: list[list[int]], fresh: dict[str, int]) -> np.ndarray:
        """0-based rank of the appended passage for each query (-1: it does not match the query)."""
        out = np.full(len(queries), -1, dtype=np.int64)
        terms = set(new)
        matching = [i for i, q in enumerate(queries) if terms.intersection(q)]
        if not matching:
            return out
        retriever = self._with(new, fresh)
        for i in matching:
            scores = retriever.get_scores(queries[i])
            if scores[-1] > 0:
                out[i] = int((scores[:-1] >= scores[-1]).sum())
        return out

    def _with(self, new: list[int], fresh: dict[str, int]) -> bm25s.BM25:
        """The collection's index with the passage ``new`` appended (its last row). The last one is
        kept: the page asks for the same pasted passage's exposure, then what a selected query shows,
        on every rerun (1.3 s a build on WordNet's 117,659 glosses; milliseconds to score)."""
        key = (tuple(new), tuple(sorted(fresh.items())))
        last = self._last  # one read: another session may replace it meanwhile
        if last is not None and last[0] == key:
            return last[1]
        retriever = bm25s.BM25(k1=self.k1, b=self.b)
        vocab = {**self.tokenizer.get_vocab_dict(), **fresh}  # ids 0..V-1: bm25s sizes its arrays by the vocabulary
        retriever.index((self.passage_tokens + [new], vocab), show_progress=False)
        self._last = (key, retriever)
        return retriever

    def top(self, text: str, query: int, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(passage indices, scores) of logged query ``query``'s top ``k`` with the passage appended
        (index = the number of passages); score descending, then index, so ties go against it, as
        in ``exposing``. What an auditor sees above and below a pasted passage."""
        fresh: dict[str, int] = {}
        scores = self._with(self._tokens([text], fresh)[0], fresh).get_scores(self.query_tokens[query])
        order = np.lexsort((np.arange(len(scores)), -scores))[:k]
        order = order[scores[order] > 0]  # BM25 retrieves only passages sharing a term with the query
        return order, scores[order]

    def exposing(self, text: str, n: int) -> tuple[np.ndarray, np.ndarray]:
        """(logged query indices, 0-based ranks) of the queries whose top n would hold the appended
        passage, by rank then query index."""
        fresh: dict[str, int] = {}
        rank0 = self._ranks(self._tokens([text], fresh)[0], self.query_tokens, fresh)
        q = np.flatnonzero((rank0 >= 0) & (rank0 < n))
        order = np.lexsort((q, rank0[q]))
        return q[order], rank0[q][order]

    def ranks(self, text: str, queries: list[str]) -> np.ndarray:
        """1-based rank of the appended passage for each of any ``queries`` (inf: not retrieved)."""
        fresh: dict[str, int] = {}
        new = self._tokens([text], fresh)[0]
        rank0 = self._ranks(new, self._tokens(queries, fresh), fresh) if queries else np.zeros(0, dtype=np.int64)
        return np.where(rank0 >= 0, rank0 + 1, np.inf).astype(float)
