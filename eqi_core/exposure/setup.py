"""Everything EQI needs for one collection and ranker, built once: the exact exposure map, the
dense space the reverse and learned methods search, and the methods themselves. Pages ask
``exposure_ready`` (cheap: no checksums) before ``prepare_exposure`` so that a first build can
show its progress.

One passage's exposure needs the map, the log's vectors and that passage's vector, not every
passage's: under BM25 or a result log, ``prepare_exposure(passages=False)`` leaves the collection
unencoded until something needs all of it (a learned head, an evaluation), so an audit of a large
collection opens in seconds instead of waiting hours for a dense space it does not use."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from eqi_core.collection import Collection
from eqi_core.errors import DataError
from eqi_core.exposure.exact import ExposureMap
from eqi_core.exposure.relq import relq_per_passage, relq_rbp
from eqi_core.exposure.reverse import (
    BM25Reverse,
    DenseReverse,
    query_embeddings,
    tune_bm25_reverse,
)
from eqi_core.progress import ProgressFn
from eqi_core.rankers import build_ranker, is_indexed, ranker_spec, selection_params
from eqi_core.store import ArtifactStore

if TYPE_CHECKING:  # the heads' module imports torch (1.7 s): loaded when a head is used, not by every page
    from eqi_core.exposure.learned import LearnedEQI, TrainingConfig

DEFAULT_SPACE = "minilm-l6"  # the dense space of EQI methods when the ranker itself has none


def space_for(ranker_id: str, space: str | None = None) -> str:
    """The encoder whose space the dense EQI methods use: the one asked for, else the ranker's own,
    else the default (result logs and lexical rankers have no space of their own)."""
    if space:
        if ranker_spec(space).family != "dense":
            raise DataError(f"space {space!r}: expected a dense encoder, e.g. minilm-l6")
        return space
    return ranker_id if ranker_spec(ranker_id).family == "dense" else DEFAULT_SPACE


def dense_space_ready(encoder_id: str, collection: Collection, store: ArtifactStore) -> bool:
    """Passage and logged-query embeddings of this encoder are in the store (cheap: no checksums)."""
    from eqi_core.exposure.reverse import query_embeddings_artifact

    return (is_indexed(encoder_id, collection, store)
            and store.load(*query_embeddings_artifact(encoder_id, collection), verify=False) is not None)


def passages_at_hand(encoder_id: str, collection: Collection, store: ArtifactStore) -> bool:
    """Every passage's vector in this space is in the store or shipped with the project (cheap to load)."""
    from eqi_core.rankers.dense import passage_embeddings_artifact

    return is_indexed(encoder_id, collection, store) or "shipped" in passage_embeddings_artifact(collection, encoder_id)[1]


def exposure_ready(collection: Collection, ranker_id: str, store: ArtifactStore, depth: int = 100,
                   space: str | None = None, passages: bool = True) -> bool:
    """Whether ``prepare_exposure`` (with the same ``passages``) would only read the store: the map and
    the log's vectors built, and every passage's vector when ``passages``."""
    from eqi_core.exposure.distributed import map_artifact
    from eqi_core.exposure.reverse import query_embeddings_artifact

    encoder_id = space_for(ranker_id, space)
    if store.load(*map_artifact(collection, ranker_id, depth), verify=False) is None:
        return False
    if passages:
        return dense_space_ready(encoder_id, collection, store)
    return store.load(*query_embeddings_artifact(encoder_id, collection), verify=False) is not None


DEFAULT_N_DQ = 100


def default_n_dq(n_queries: int) -> int:
    """n_d->q adapted to the log: the paper's 100, at most a tenth of the log (at least 1)."""
    return max(1, min(DEFAULT_N_DQ, n_queries // 10))


LISTED_N_DQ = 50  # exposing queries one passage's view lists: a page's worth, where the evaluation lists the paper's 100


def listed_n_dq(n_queries: int) -> int:
    """n_d->q the Exposure page and ``eqi exposure`` open with: 50, at most a tenth of the log."""
    return min(LISTED_N_DQ, default_n_dq(n_queries))


SMALL_LOG = 1_000  # queries: below this a log is a test collection's topics, not a search engine's users


def small_log_note(n_queries: int, remedy: str) -> str | None:
    """What an auditor should know when the log is a few hundred queries (TREC DL 2019's 43 test
    topics): exposure over them says little about who a search engine shows a passage to.
    ``remedy`` says where a real log is (the page's and the CLI's own words)."""
    if n_queries >= SMALL_LOG:
        return None
    return (f"This log holds only {n_queries:,} {'query' if n_queries == 1 else 'queries'}: exposure over so few says "
            f"little about who a search engine shows a passage to; {remedy}")


def degenerate_settings(n_queries: int, n_passages: int, n_qd: int, n_dq: int, retrieves_all: bool = True) -> list[str]:
    """Warnings for settings where RELQ says nothing: lists as long as the log, or result lists as
    deep as the collection (then every passage is exposed by every query; by a ranker that does not
    return every passage, ``retrieves_all`` False, by every query that retrieves it at all)."""
    out = []
    if n_dq >= n_queries / 2 and n_dq > default_n_dq(n_queries):  # at the least there is, the small-log note says it
        out.append(f"n_d->q = {n_dq} lists {min(1.0, n_dq / max(n_queries, 1)):.0%} of the log's {n_queries:,} queries: "
                   "a method listing that many finds nearly every exposing query, so RELQ with a patient EQI user "
                   f"(e.g. RELQ_RBP,RBP(1,1)) is trivially near 1; use n_d->q <= {default_n_dq(n_queries)} (a tenth of the log)")
    elif n_dq > default_n_dq(n_queries):  # a log under 10 queries: 1 is the least there is, nothing to warn of
        out.append(f"n_d->q = {n_dq} is more than a tenth of the log's {n_queries:,} queries: differences between "
                   "methods shrink as the lists cover the log")
    if n_qd >= n_passages and retrieves_all:
        out.append(f"n_q->d = {n_qd} is at least the collection's {n_passages:,} passages: every query exposes every "
                   "passage, so exposure says nothing")
    elif n_qd >= n_passages:
        out.append(f"n_q->d = {n_qd} is at least the collection's {n_passages:,} passages: every query that "
                   "retrieves a passage at all exposes it, so its exposing queries are merely the queries that "
                   "retrieve it (for BM25: share a word with it)")
    return out


@dataclass
class ExposureSetup:
    """Everything EQI needs for one collection and ranker, built once (artifacts in the store)."""

    collection: Collection
    ranker_id: str
    depth: int
    exposure: ExposureMap
    encoder: object  # the dense encoder whose space the dense methods use
    space: str  # its id
    passage_vectors: np.ndarray | None  # every passage in that space; None until first needed (``doc_emb``)
    query_emb: np.ndarray
    store: ArtifactStore
    texts: list[str] = field(default_factory=list)  # passage texts as rankers see them
    notes: list[str] = field(default_factory=list)  # about the map's source (e.g. a result log's unknown ids)
    source: str = ""  # content digest of a result log (a changed file is another ranker)
    _methods: dict = field(default_factory=dict)  # built methods and look-up tables, per setup

    def params(self) -> dict:
        """Store-key parameters of what is built from this setup (heads, evaluations): the map's and the
        space's inputs, including the digests of shipped vectors where they are used."""
        from eqi_core.rankers.dense import shipped_digests

        params = {"collection": self.collection.fingerprint, "ranker": self.ranker_id, "depth": self.depth,
                  "space": self.space}
        map_spec = ranker_spec(self.ranker_id)
        params.update(selection_params(map_spec))
        map_shipped = shipped_digests(map_spec.encoder, self.collection) if map_spec.map_source == "dense" else None
        space_shipped = shipped_digests(self.space, self.collection)
        if map_shipped or space_shipped:
            params["shipped"] = {"map": map_shipped, "space": space_shipped}
        return {**params, "source": self.source} if self.source else params

    # -- the dense space's passages ------------------------------------------------------------
    @property
    def doc_emb(self) -> np.ndarray:
        """Every passage's vector in the dense space, encoded (or loaded) on first use."""
        return self.encode_passages()

    def passages_encoded(self) -> bool:
        return self.passage_vectors is not None

    def encode_passages(self, progress: ProgressFn | None = None) -> np.ndarray:
        """Every passage's vector, built once in the store (the dense ranker's own index, shared with
        search and the latent space); what heads and evaluations need, and one passage's view does not."""
        if self.passage_vectors is None:
            self.passage_vectors = build_ranker(self.space, self.collection, self.store, progress).doc_embeddings
        return self.passage_vectors

    def passage_vector(self, doc: int) -> np.ndarray:
        """One passage's vector: from every passage's when they are encoded, else the passage encoded
        alone (kept; within float rounding, about 1e-7, of its vector in a batch)."""
        if self.passage_vectors is not None:
            return self.passage_vectors[doc]
        alone = self._methods.setdefault("_passages_alone", {})
        if doc not in alone:
            alone[doc] = self.encoder.encode([self.texts[doc]])[0]
        return alone[doc]

    # -- splits ------------------------------------------------------------------------------
    def test_passages(self, n: int = 1000, seed: int = 0) -> np.ndarray:
        """Held-out passages with at least one exposing query (RELQ is undefined without one); at most
        half of the exposed passages, so that training always has passages left."""
        if n <= 0:
            raise DataError(f"number of test passages = {n}: expected a positive number")
        exposed = np.flatnonzero(self.exposure.counts() > 0)
        if len(exposed) < 2:
            raise DataError("fewer than two passages are exposed by any query: nothing to train and test on")
        rng = np.random.default_rng(seed + 7919)
        return np.sort(rng.choice(exposed, size=min(n, len(exposed) // 2), replace=False))

    # -- methods -------------------------------------------------------------------------------
    def dense_reverse(self) -> DenseReverse:
        if "dense" not in self._methods:
            self._methods["dense"] = DenseReverse(self.query_emb, name=f"dense-reverse ({self.space})")
        return self._methods["dense"]

    def bm25_with_new_passage(self):
        """BM25 (the ranker's parameters) over this collection and log, ready to take one pasted passage."""
        from eqi_core.rankers.bm25 import BM25WithNewPassage

        if "bm25_new_passage" not in self._methods:
            self._methods["bm25_new_passage"] = BM25WithNewPassage.prepare(
                self.collection.passage_texts(), self.collection.queries["text"].tolist())
        return self._methods["bm25_new_passage"]

    def sparse_queries_ready(self) -> bool:
        return "sparse_queries" in self._methods

    def sparse_queries(self, progress=None):
        """The log's sparse vectors under a learned-sparse ranker (SPLADE), from the store or encoded once."""
        from eqi_core.rankers.registry import load_encoder
        from eqi_core.rankers.splade import query_matrix

        if "sparse_queries" not in self._methods:
            encoder = load_encoder(ranker_spec(self.ranker_id).encoder)
            self._methods["sparse_queries"] = query_matrix(self.collection, self.store, encoder, progress)
        return self._methods["sparse_queries"]

    def bm25_reverse(self, k1: float = 0.9, b: float = 0.4) -> BM25Reverse:
        key = ("bm25", k1, b)
        if key not in self._methods:
            self._methods[key] = BM25Reverse.build(list(self.collection.queries["text"]), k1, b)
        return self._methods[key]

    def bm25_tuned(self, train_docs: np.ndarray, n_dq: int, progress: ProgressFn | None = None) -> tuple[BM25Reverse, dict]:
        texts = [self.passage_text(d) for d in train_docs]
        spec = relq_rbp(0.5, 0.9, n_dq)

        def score(idx: np.ndarray) -> float:
            return float(np.nanmean(relq_per_passage(self.exposure, train_docs, idx, spec)))

        return tune_bm25_reverse(list(self.collection.queries["text"]), texts, score, n_dq, progress=progress)

    def learned(self, config: TrainingConfig, exclude_docs: np.ndarray | None,
                progress: ProgressFn | None = None) -> tuple[LearnedEQI, dict]:
        from eqi_core.exposure.learned import LearnedEQI, train_or_load, training_passages

        excl = np.asarray(exclude_docs if exclude_docs is not None else [], dtype=np.int64)
        _, params = self.learned_params(config, excl)
        params = {k: v for k, v in params.items() if k not in ("config", "version")}  # train_or_load adds both
        # a stored head loads without the passages; training one encodes them first, under the same progress
        passages = self.passage_vectors if self.learned_available(config, excl) else self.encode_passages(progress)
        model, info = train_or_load(self.store, params, self.exposure, self.query_emb, passages, config, excl, progress)
        name = {"residual": "Residual", "append": "Append"}[config.arch]
        key = ("trained_on", repr(config), digest(excl))
        if key not in self._methods:  # replayed, not stored: the same draws as the training's (Algorithm 1, lines 1-9)
            self._methods[key] = training_passages(self.exposure, config, excl)
        return LearnedEQI.from_model(model, self.query_emb, name, self._methods[key]), info

    def learned_params(self, config: TrainingConfig, exclude_docs: np.ndarray | None) -> tuple[str, dict]:
        from dataclasses import asdict

        from eqi_core.exposure.learned import HEAD_VERSION

        excl = np.asarray(exclude_docs if exclude_docs is not None else [], dtype=np.int64)
        return "exposure-head", {**self.params(), "excluded": digest(excl), "config": asdict(config), "version": HEAD_VERSION}

    def learned_available(self, config: TrainingConfig, exclude_docs: np.ndarray | None) -> bool:
        """Whether this head is already trained (in the store), without training it."""
        return self.store.load(*self.learned_params(config, exclude_docs), verify=False) is not None

    def passage_text(self, doc: int) -> str:
        return self.texts[doc]

    def query_results(self, query_id: str, k: int) -> pd.DataFrame:
        """What one logged query shows in these rankings: its top ``k`` (rank, doc_id, score), from the
        ranker itself or, for a result log, the log's own rows (ranks as the exposure map read them).
        The Exposure page shows it for an exposing query: which passages stand above this one."""
        from eqi_core.exposure.result_logs import is_result_log, load_result_log

        if is_result_log(self.ranker_id):
            if "_result_log" not in self._methods:
                self._methods["_result_log"] = load_result_log(self.ranker_id, self.collection, self.depth)[0].frame
            log = self._methods["_result_log"]
            frame = log[(log["query_id"] == str(query_id)) & (log["rank"] <= self.depth)].sort_values("rank").head(k)
        else:
            if str(query_id) not in self.collection.query_text:
                raise DataError(f"query id {query_id!r} is not in the query log")
            if "_ranker" not in self._methods:  # built (or loaded from the store) once per setup
                self._methods["_ranker"] = build_ranker(self.ranker_id, self.collection, self.store)
            frame = self._methods["_ranker"].search({str(query_id): self.collection.query_text[str(query_id)]}, k=k).frame
        return frame[["rank", "doc_id", "score"]].reset_index(drop=True)

    def brute_force(self, docs: np.ndarray, n_dq: int) -> np.ndarray:
        """The ideal exposure lists (exposing queries by rank), padded with -1."""
        out = np.full((len(docs), n_dq), -1, dtype=np.int64)
        for i, d in enumerate(docs):
            q, _ = self.exposure.exposing(int(d))
            out[i, : min(n_dq, len(q))] = q[:n_dq]
        return out


def digest(arr: np.ndarray) -> str:
    import hashlib

    return hashlib.sha256(np.ascontiguousarray(arr).tobytes()).hexdigest()[:16]


def prepare_exposure(collection: Collection, ranker_id: str, store: ArtifactStore, depth: int = 100,
                     progress: ProgressFn | None = None, engine=None, space: str | None = None,
                     passages: bool = True) -> ExposureSetup:
    """Build (or load) the exact exposure map and the dense space for EQI. The map comes from the
    one builder, ``compute_exposure_map``: in-process by default, on Dask with an ``engine``.
    ``ranker_id`` may be ``run:<file>``, a system's result log; ``space`` picks the encoder of
    the dense methods (default: the ranker's own, else MiniLM-L6). ``passages=False``: every
    passage's vector only where it is at hand (stored or shipped), else encoded when first needed
    (``ExposureSetup.encode_passages``); one passage's view then encodes that passage alone."""
    from eqi_core.exposure.distributed import compute_exposure_map
    from eqi_core.rankers.registry import load_encoder

    exposure, info = compute_exposure_map(collection, ranker_id, store, depth, engine, progress=progress)
    encoder_id = space_for(ranker_id, space)
    if passages or passages_at_hand(encoder_id, collection, store):
        dense = build_ranker(encoder_id, collection, store, progress)
        encoder, vectors = dense.encoder, dense.doc_embeddings
    else:
        encoder, vectors = load_encoder(encoder_id), None
    q_emb = query_embeddings(encoder, collection, store, progress)
    return ExposureSetup(collection, ranker_id, depth, exposure, encoder, encoder.id,
                         vectors, q_emb, store, collection.passage_texts(), info["notes"], info["source"])
