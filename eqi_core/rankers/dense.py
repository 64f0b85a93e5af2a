"""Dense retrieval: passage embeddings in the store, exact top-k by blocked matrix multiply."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from eqi_core.collection import Collection
from eqi_core.encoders import Encoder
from eqi_core.errors import DataError
from eqi_core.progress import ProgressFn
from eqi_core.rankers import int8_gemm
from eqi_core.rankers.base import Queries, as_query_items
from eqi_core.rankers.int8_gemm import Int8Columns
from eqi_core.rankers.topk import NonFiniteScores, merge_sorted, sorted_topk, topk_rows
from eqi_core.runs import Run
from eqi_core.store import ArtifactStore

BLOCK_BYTES = 256 << 20  # bounds the score block; larger blocks measured faster (fewer merges)
SELECT_ROWS = 512  # queries per GEMM when topk_rows selects (measured: 512 steadier than 256 or 384 on a busy machine)
KERNEL_MIN_SCORES = 1 << 22  # from here, the fused path: SELECT_ROWS queries per GEMM into one reused buffer
KERNEL_MIN_SELECT = 1 << 20  # from here, topk_rows selects (its compiled kernel loads once: 0.85 s); below, numpy's
# sorted_topk, which needs no kernel and no torch (one query against 20,001 passages: 0.35 ms)
COPY_MIN_QUERIES = 6144  # from here, copying the passages as contiguous columns first beats a transposed
# view (20,001 x 384: the copy costs 18 ms and saves ~1.5% of each GEMM; break-even measured ~5,500 queries)
FEW_PROBES = 8  # up to this many probes, InnerProductIndex scans an int8 copy (memory-bound); more: blocked GEMM


@dataclass(frozen=True)
class ColumnBlocks:
    """Fixed passage vectors laid out once for ``exact_topk``'s GEMM, for vectors searched again and
    again (a ranker's passages, a query log): the one-off copy that faiss's ``index.add`` also makes,
    kept instead of repeated per call. Either contiguous transposed fp32 blocks (dim x block, the
    layout BLAS streams fastest) or, where ``exact_topk`` takes the int8 path, each block's int8 codes
    (the re-scoring then reads the row-major vectors the caller keeps)."""

    d_block: int
    blocks: tuple[np.ndarray, ...]
    int8: tuple[Int8Columns, ...] | None = None

    @classmethod
    def of(cls, docs: np.ndarray, block_bytes: int = BLOCK_BYTES) -> ColumnBlocks:
        d_block = _doc_block(len(docs), 1, block_bytes)
        docs = np.asarray(docs, dtype=np.float32)
        starts = range(0, len(docs), d_block)
        if int8_gemm.enabled() and np.isfinite(docs).all():
            return cls(d_block, (), tuple(Int8Columns.of(docs[s:s + d_block]) for s in starts))
        return cls(d_block, tuple(np.ascontiguousarray(docs[s:s + d_block].T) for s in starts))

    @property
    def nbytes(self) -> int:
        return sum(b.nbytes for b in self.blocks) + sum(b.nbytes for b in self.int8 or ())

    def fits(self, n_docs: int, d_block: int, int8: bool) -> bool:
        """Laid out for these passages' blocks and this path."""
        blocks = self.int8 if int8 else self.blocks
        return bool(blocks) and self.d_block == d_block and sum(len(b) if int8 else b.shape[1] for b in blocks) == n_docs


def kept_columns(kept: ColumnBlocks | None, n_queries: int, docs: np.ndarray) -> ColumnBlocks | None:
    """``kept``, or ``docs`` laid out now, once, when a search of ``n_queries`` takes the fused path:
    for holders of fixed vectors searched again and again (a dense ranker, the log index)."""
    if kept is None and n_queries * len(docs) >= KERNEL_MIN_SCORES:
        return ColumnBlocks.of(docs)
    return kept


def _doc_block(n_d: int, k: int, block_bytes: int) -> int:
    """Passages per GEMM block of the fused path (score buffer of SELECT_ROWS rows within block_bytes)."""
    return max(k, min(n_d, block_bytes // 4 // SELECT_ROWS))


def exact_topk(
    queries: np.ndarray, docs: np.ndarray, k: int, block_bytes: int = BLOCK_BYTES,
    progress: ProgressFn | None = None, columns: ColumnBlocks | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact inner-product top-k: (scores, indices), each (n_queries, k), best first.

    Scores are computed for a block of queries against a block of passages at a time (one
    GEMM through numpy's BLAS, measured faster than torch's here) and reduced per row: large
    problems by ``topk_rows`` on blocks of ``SELECT_ROWS`` queries, small ones (and non-finite
    scores) by numpy's ``sorted_topk`` (equal scores: lower position first on every path); results
    are merged across passage blocks, so memory stays near ``block_bytes`` whatever the collection
    size. ``columns`` (``ColumnBlocks.of(docs)``, made once by a caller that searches the same
    passages again) saves the per-call layout copy.
    On CPUs with VNNI, large problems take ``int8_gemm``'s path instead: an int8 GEMM picks the
    candidates within a proven bound and they are re-scored in float64 (the same top k; scores
    within float32 rounding of the fp32 GEMM's).
    """
    n_q, n_d = len(queries), len(docs)
    k = min(k, n_d)
    out_s = np.empty((n_q, k), dtype=np.float32)
    out_i = np.empty((n_q, k), dtype=np.int64)
    if n_q == 0 or k == 0:
        return out_s, out_i
    queries = np.ascontiguousarray(queries, dtype=np.float32)
    docs = np.ascontiguousarray(docs, dtype=np.float32)
    fused = n_q * n_d >= KERNEL_MIN_SCORES
    rows = SELECT_ROWS if fused else 256
    d_block = _doc_block(n_d, k, block_bytes)
    if fused and _int8_path(queries, docs, columns, n_d, d_block):
        return _int8_topk(queries, docs, k, d_block, columns, progress, out_s, out_i)
    q_block = rows if fused else max(1, min(n_q, block_bytes // 4 // min(n_d, d_block)))
    if fused:
        buffer = np.empty(min(n_q, q_block) * min(n_d, d_block), dtype=np.float32)
        if columns is not None and columns.fits(n_d, d_block, int8=False):
            blocks_t = columns.blocks
        else:  # the passages as contiguous columns when enough GEMMs amortise the copy and it fits the budget
            copy = n_q >= COPY_MIN_QUERIES and docs.nbytes <= block_bytes
            blocks_t = [np.ascontiguousarray(docs[ds:ds + d_block].T) if copy else docs[ds:ds + d_block].T
                        for ds in range(0, n_d, d_block)]
    for qs in range(0, n_q, q_block):
        q = queries[qs:qs + q_block]
        best_s = best_i = None
        for ds in range(0, n_d, d_block):
            if fused:  # into one reused buffer, which the selection reads while it is still in cache
                block_t = blocks_t[ds // d_block]
                scores = buffer[:len(q) * block_t.shape[1]].reshape(len(q), block_t.shape[1])
                np.matmul(q, block_t, out=scores)
            else:
                scores = q @ docs[ds:ds + d_block].T
            s, i = _block_topk(scores, min(k, scores.shape[1]), fused)
            i += ds
            if best_s is None:
                best_s, best_i = s, i
            else:
                best_s, best_i = _merge(best_s, best_i, s, i, k)
        out_s[qs:qs + len(q)] = best_s
        out_i[qs:qs + len(q)] = best_i
        if progress:
            progress(min(qs + q_block, n_q), n_q)
    return out_s, out_i


def _int8_path(queries: np.ndarray, docs: np.ndarray, columns: ColumnBlocks | None, n_d: int, d_block: int) -> bool:
    """The int8 candidates (``int8_gemm``) where this CPU has them and every value is finite."""
    if not int8_gemm.enabled() or not np.isfinite(queries).all():
        return False
    return (columns is not None and columns.fits(n_d, d_block, int8=True)) or bool(np.isfinite(docs).all())


def _int8_topk(queries, docs, k, d_block, columns, progress, out_s, out_i) -> tuple[np.ndarray, np.ndarray]:
    """``exact_topk`` by int8 candidates re-scored in float64: blocks of ``SELECT_ROWS`` queries, each
    against every passage block, merged as in the fp32 path."""
    n_q, n_d = len(queries), len(docs)
    starts = range(0, n_d, d_block)
    if columns is not None and columns.fits(n_d, d_block, int8=True):
        codes = columns.int8
    else:
        codes = tuple(Int8Columns.of(docs[ds:ds + d_block]) for ds in starts)
    buffer = np.empty(min(n_q, SELECT_ROWS) * min(n_d, d_block), dtype=np.float32)  # reused by every GEMM
    for qs in range(0, n_q, SELECT_ROWS):
        q = queries[qs:qs + SELECT_ROWS]
        best_s = best_i = None
        for ds, block in zip(starts, codes):
            s, i = int8_gemm.int8_block_topk(q, docs[ds:ds + len(block)], block, min(k, len(block)), buffer)
            i += ds
            best_s, best_i = (s, i) if best_s is None else _merge(best_s, best_i, s, i, k)
        out_s[qs:qs + len(q)] = best_s
        out_i[qs:qs + len(q)] = best_i
        if progress:
            progress(min(qs + SELECT_ROWS, n_q), n_q)
    return out_s, out_i


def _block_topk(scores: np.ndarray, k: int, fused: bool) -> tuple[np.ndarray, np.ndarray]:
    if fused or scores.size >= KERNEL_MIN_SELECT:
        try:
            return topk_rows(scores, k)
        except NonFiniteScores:
            pass
    return sorted_topk(scores, k)


def _merge(best_s, best_i, s, i, k) -> tuple[np.ndarray, np.ndarray]:
    return merge_sorted(best_s, best_i, s, i, k)


class InnerProductIndex:
    """Exact inner-product top-k over fixed vectors (a query log), fast for one passage at a time.

    A single probe is a matrix-vector product, bound by reading the vectors from memory; an int8
    copy (one scale per vector) reads a quarter of the bytes and its integer products are exact.
    Each vector x = s_x x' + e_x (x' its int8 code) and the probe q = s_q q' + e_q; by Cauchy-Schwarz
        |q.x - s_q s_x (q'.x')| <= ||q|| ||e_x|| + ||e_q|| ||s_x x'||,
    and the fp32 re-scoring below is within d 2^-23 ||q|| ||x|| of q.x, which joins the first term.
    Vectors whose upper bound reaches the k-th largest lower bound (a group-maxima bound below it)
    are re-scored from the fp32 vectors and the top k taken from those: the same top k as
    ``exact_topk`` (tied scores in any order). Many probes at once (evaluations) go to
    ``exact_topk``'s blocked GEMM, which is faster there.
    """

    def __init__(self, vectors: np.ndarray) -> None:
        self.vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        self._codes: np.ndarray | None = None
        if len(self.vectors) and np.isfinite(self.vectors).all():
            self._codes, self._coef_base, self._err, self._norm = int8_codes(self.vectors)
        self._columns: ColumnBlocks | None = None  # made on the first many-probe search

    def __len__(self) -> int:
        return len(self.vectors)

    def search(self, probes: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(scores, indices), each (n_probes, k), best first: the same top k as ``exact_topk(probes, vectors, k)`` (tied scores in any order)."""
        probes = np.ascontiguousarray(np.atleast_2d(probes), dtype=np.float32)
        k = min(k, len(self.vectors))
        if self._codes is None or len(probes) > FEW_PROBES or k == 0 or not np.isfinite(probes).all():
            self._columns = kept_columns(self._columns, len(probes), self.vectors)
            return exact_topk(probes, self.vectors, k, columns=self._columns)
        out_s = np.empty((len(probes), k), dtype=np.float32)
        out_i = np.empty((len(probes), k), dtype=np.int64)
        for row, probe in enumerate(probes):
            candidates = self.candidates(probe, k)
            exact = self.vectors[candidates] @ probe
            best = np.argsort(-exact, kind="stable")[:k]
            out_s[row], out_i[row] = exact[best], candidates[best]
        return out_s, out_i

    def candidates(self, probe: np.ndarray, k: int) -> np.ndarray:
        """Positions of every vector that can be in the probe's exact top k (a superset of it)."""
        from eqi_core.rankers.topk import int8_upper_bounds

        code, scale, err = int8_code(probe)
        q_norm = _round_up(float(np.linalg.norm(probe.astype(np.float64))))
        n = len(self.vectors)
        groups = n if n <= INT8_GROUPS_PER_K * k else INT8_GROUPS_PER_K * k
        hi, group_max = int8_upper_bounds(self._codes, code, self._coef_base * scale, self._err, self._norm,
                                          q_norm, err, groups)
        # k groups' maxima reach the k-th largest of them: k vectors' lower bounds do, so the k-th best score does
        kth = np.partition(group_max, len(group_max) - k)[len(group_max) - k]
        return np.flatnonzero(hi >= kth)


INT8_GROUPS_PER_K = 40  # groups of vectors in the candidate bound (measured: 40 k groups ~330 candidates of 147,306)
_ROUND_UP = 1 + 2.0 ** -40  # far more than float64 rounding in the norms below, far less than any bound


def _round_up(x: float) -> float:
    return x * _ROUND_UP + 1e-300


def int8_code(x: np.ndarray) -> tuple[np.ndarray, float, float]:
    """One vector's int8 code x', scale s and an upper bound on ||x - s x'|| (for ``InnerProductIndex``)."""
    x64 = np.asarray(x, dtype=np.float64)
    scale = float(np.abs(x64).max()) / 127.0 or 1.0
    code = np.rint(x64 / scale).astype(np.int8)
    return code, scale, _round_up(float(np.linalg.norm(x64 - scale * code)))


def int8_codes(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Row-wise int8 codes of fp32 vectors, with each row's scale, its bound on the coding error plus
    the fp32 re-scoring's rounding (d 2^-23 ||x|| per unit of probe norm), and ||s x'||, both norms
    rounded up (computed in float64 by a numba kernel: 0.17 s for the 147,306-query log on 2 cores)."""
    from eqi_core.rankers.topk import int8_encode

    codes, scale, err, norm = int8_encode(np.ascontiguousarray(vectors, dtype=np.float32))
    return codes, scale, _round_up(err), _round_up(norm)


def embeddings_artifact(encoder_id: str, params: dict) -> tuple[str, dict]:
    """(kind, params) of stored embeddings: what was encoded (``params``), by which encoder and which
    code path (e.g. onnxruntime on an fp32 export), and the digest of shipped vectors where those are used."""
    from eqi_core.rankers.registry import encoding_path

    path = encoding_path(encoder_id)
    params = {**params, "encoder": encoder_id, **({"path": path} if path != "default" else {})}
    shipped = shipped_for(encoder_id, params)
    return "embeddings", {**params, **({"shipped": shipped.digest} if shipped else {})}


def passage_embeddings_artifact(collection: Collection, encoder_id: str) -> tuple[str, dict]:
    return embeddings_artifact(encoder_id, {"collection": collection.fingerprint, "field": "passages"})


def query_embeddings_artifact(encoder_id: str, collection: Collection) -> tuple[str, dict]:
    """(kind, params) of the stored embeddings of every logged query."""
    return embeddings_artifact(encoder_id, {"collection": collection.fingerprint, "field": "queries"})


def query_embeddings(encoder, collection: Collection, store: ArtifactStore, progress: ProgressFn | None = None) -> np.ndarray:
    """Embeddings of every logged query, encoded once and kept in the store beside the passage
    embeddings: the exposure map, dense-reverse, the latent space and the ranker's run over all
    queries share them."""
    _, params = query_embeddings_artifact(encoder.id, collection)
    return encode_texts(encoder, list(collection.queries["text"]), store,
                        {k: v for k, v in params.items() if k != "encoder"}, progress)


def shipped_digests(encoder_id: str | None, collection: Collection) -> list | None:
    """[passages, queries] digests of the vectors shipped for this encoder and collection, or None:
    the store keys of everything built from those vectors (maps, heads, evaluations) carry them."""
    if not encoder_id:
        return None
    digests = [embeddings_artifact(encoder_id, {"collection": collection.fingerprint, "field": f})[1].get("shipped")
               for f in ("passages", "queries")]
    return digests if any(digests) else None


def shipped_for(encoder_id: str, params: dict):
    """The vectors shipped in assets/embeddings for this encoder, collection and field, if any."""
    from eqi_core.rankers.registry import encoding_path
    from eqi_core.rankers.shipped import find_shipped

    if "collection" not in params or "field" not in params:
        return None
    return find_shipped(encoder_id, encoding_path(encoder_id), params["collection"], params["field"])


def encode_texts(
    encoder: Encoder, texts: list[str], store: ArtifactStore, params: dict, progress: ProgressFn | None = None,
) -> np.ndarray:
    """Embeddings of ``texts`` from the store, encoding them once (keyed by ``params``), or taken from
    the vectors shipped in ``assets/embeddings`` for exactly this collection and field."""
    kind, key = embeddings_artifact(encoder.id, params)
    shipped = shipped_for(encoder.id, key)

    def build(tmp: Path) -> dict:
        if shipped is not None:
            emb = shipped.load()
            if len(emb) != len(texts):
                raise DataError(f"{shipped.folder}: {len(emb):,} vectors for {len(texts):,} texts")
            if progress:
                progress(len(texts), len(texts))
        else:
            emb = encoder.encode(texts, progress=progress)
        np.save(tmp / "embeddings.npy", emb, allow_pickle=False)
        return {"shape": list(emb.shape), **({"source": str(shipped.folder.name)} if shipped else {})}

    art = store.get_or_build(kind, key, build)
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
    _columns: ColumnBlocks | None = field(default=None, init=False, repr=False, compare=False)

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
        self._columns = kept_columns(self._columns, len(query_embeddings), self.doc_embeddings)
        scores, idx = exact_topk(query_embeddings, self.doc_embeddings, k, progress=progress, columns=self._columns)
        return Run.from_topk(self.name, qids, self.doc_ids, idx, scores, {"ranker": self.id})
