"""The exact exposure map (brute force, the ground truth of EQI) as a data structure.

passage -> [(query, 0-based rank, score)] for every query of the log run to depth n_q->d, stored
compactly as integer arrays sorted by passage, so the exposing queries of any passage are one
slice. ``ExposureMap.from_pairs`` is the one way to build it; it is computed (in-process or on
Dask, by shards) by ``eqi_core.exposure.distributed.compute_exposure_map``.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd

from eqi_core.collection import Collection
from eqi_core.errors import DataError
from eqi_core.runs import Run


@dataclass
class ExposureMap:
    """passage -> exposing queries with the 0-based rank at which each query shows the passage."""

    query_ids: np.ndarray  # object array, position = query index
    doc_ids: np.ndarray  # object array, position = passage index
    depth: int  # n_q->d
    q_idx: np.ndarray  # int32, one entry per (query, passage) pair, sorted by d_idx then rank
    d_idx: np.ndarray  # int32
    rank0: np.ndarray  # int16, 0-based rank of the passage for the query
    offsets: np.ndarray  # int64, len(doc_ids) + 1: pairs of passage i are [offsets[i], offsets[i+1])

    scores: np.ndarray | None = None  # float64 score of each pair (the ranker's, or the run file's), same order

    @classmethod
    def from_pairs(cls, query_ids, doc_ids, depth: int, q: np.ndarray, d: np.ndarray, rank0: np.ndarray,
                   scores: np.ndarray | None = None) -> ExposureMap:
        """The map from (query index, passage index, 0-based rank[, score]) pairs in any order."""
        q, d, r = np.asarray(q, np.int32), np.asarray(d, np.int32), np.asarray(rank0, np.int16)
        order = np.lexsort((q, r, d))
        offsets = np.zeros(len(doc_ids) + 1, dtype=np.int64)
        np.add.at(offsets, d + 1, 1)
        return cls(np.asarray(query_ids, dtype=object), np.asarray(doc_ids, dtype=object), depth, q[order], d[order],
                   r[order], np.cumsum(offsets), None if scores is None else np.asarray(scores, np.float64)[order])

    @classmethod
    def from_run(cls, run: Run, collection: Collection, depth: int) -> ExposureMap:
        """Invert a run over the collection's queries (ids it does not know are dropped)."""
        q, d, rank0, scores = run_pairs(run, collection, depth)
        return cls.from_pairs(collection.queries["query_id"], collection.passages["doc_id"], depth, q, d, rank0, scores)

    # -- look-ups ------------------------------------------------------------------------------
    @cached_property
    def doc_position(self) -> dict[str, int]:
        return {d: i for i, d in enumerate(self.doc_ids)}

    def doc_index(self, doc_id: str) -> int:
        try:
            return self.doc_position[doc_id]
        except KeyError:
            raise DataError(f"passage id {doc_id!r} is not in the collection") from None

    def exposing(self, doc: int) -> tuple[np.ndarray, np.ndarray]:
        """(query indices, 0-based ranks) of the queries exposing passage index ``doc``, most exposing first."""
        s, e = self.offsets[doc], self.offsets[doc + 1]
        return self.q_idx[s:e], self.rank0[s:e]

    def exposing_frame(self, doc_id: str) -> pd.DataFrame:
        q, r = self.exposing(self.doc_index(doc_id))
        return pd.DataFrame({"query_id": self.query_ids[q], "rank": r.astype(int) + 1})

    def rank_lookup(self, doc: int) -> dict[int, int]:
        q, r = self.exposing(doc)
        return dict(zip(q.tolist(), r.tolist()))

    def counts(self) -> np.ndarray:
        """Number of exposing queries of every passage (0 for never-retrieved passages)."""
        return np.diff(self.offsets)

    def every_query_shows_every_passage(self) -> bool:
        """Whether every query's list within the map's depth holds every passage (a dense ranker on a
        collection no deeper than the map); a sparse ranker leaves out passages sharing no query word."""
        if self.depth < len(self.doc_ids):
            return False
        counts = np.bincount(self.q_idx, minlength=len(self.query_ids))
        return bool(len(counts)) and bool((counts == len(self.doc_ids)).all())

    def most_exposed(self, top: int = 10) -> tuple[str, int] | None:
        """(passage id, number of queries) of the passage the most queries show in their top ``top``
        (ties: the one more queries show within the map's depth, then the earliest), or None when no
        query shows any: a page opens on a passage that has an exposure to show, where none is curated."""
        seen = np.bincount(self.d_idx[self.rank0 < top], minlength=len(self.doc_ids))
        if not len(seen) or seen.max() == 0:
            return None
        best = int(np.lexsort((np.arange(len(seen)), -self.counts(), -seen))[0])
        return str(self.doc_ids[best]), int(seen[best])

    def ranks_of(self, doc: int, query_indices: np.ndarray) -> np.ndarray:
        """rho(d, sigma_q) for each query index (np.inf where q does not expose d)."""
        lookup = self.rank_lookup(doc)
        return np.array([lookup.get(int(q), np.inf) for q in query_indices], dtype=float)

    def restricted_to(self, query_mask: np.ndarray) -> ExposureMap:
        """The map as if the log held only the queries where ``query_mask`` is True (same indices)."""
        keep = query_mask[self.q_idx]
        return ExposureMap.from_pairs(self.query_ids, self.doc_ids, self.depth, self.q_idx[keep], self.d_idx[keep],
                                      self.rank0[keep], None if self.scores is None else self.scores[keep])

    def topk_scores(self) -> np.ndarray:
        """(queries x depth) score of each query's result at each rank, -inf past its list: what a new
        passage must beat to enter a query's top n (exact exposure of pasted text)."""
        if self.scores is None:
            raise DataError("this exposure map holds no scores; rebuild it with compute_exposure_map")
        out = np.full((len(self.query_ids), self.depth), -np.inf, dtype=np.float64)
        out[self.q_idx, self.rank0] = self.scores
        return out


def run_pairs(run: Run, collection: Collection, depth: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(query index, passage index, 0-based rank, score) of a run's rows within ``depth``, in the
    collection's index space; rows naming queries or passages the collection lacks are dropped."""
    f = run.frame[run.frame["rank"] <= depth]
    q = pd.Index(collection.queries["query_id"]).get_indexer(f["query_id"])
    d = pd.Index(collection.passages["doc_id"]).get_indexer(f["doc_id"])
    keep = (q >= 0) & (d >= 0)
    return (q[keep].astype(np.int32), d[keep].astype(np.int32), (f["rank"].to_numpy()[keep] - 1).astype(np.int16),
            f["score"].to_numpy()[keep].astype(np.float64))
