"""The exact exposure map (brute force, the ground truth of EQI).

Every query of the log is run through the ranker to depth n_q->d (a cached ``Run``), then the
run is inverted: passage -> [(query, 0-based rank)]. Stored compactly as integer arrays sorted by
passage, so the exposing queries of any passage are one slice.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd

from eqi_core.collection import Collection
from eqi_core.errors import DataError
from eqi_core.progress import ProgressFn
from eqi_core.rankers import Ranker, run_all_queries
from eqi_core.runs import Run
from eqi_core.store import ArtifactStore


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

    @classmethod
    def from_run(cls, run: Run, collection: Collection, depth: int) -> "ExposureMap":
        f = run.frame[run.frame["rank"] <= depth]
        q_index = pd.Index(collection.queries["query_id"])
        d_index = pd.Index(collection.passages["doc_id"])
        q = q_index.get_indexer(f["query_id"])
        d = d_index.get_indexer(f["doc_id"])
        keep = (q >= 0) & (d >= 0)
        q, d, r = q[keep].astype(np.int32), d[keep].astype(np.int32), (f["rank"].to_numpy()[keep] - 1).astype(np.int16)
        order = np.lexsort((q, r, d))
        q, d, r = q[order], d[order], r[order]
        offsets = np.zeros(len(d_index) + 1, dtype=np.int64)
        np.add.at(offsets, d + 1, 1)
        return cls(q_index.to_numpy(dtype=object), d_index.to_numpy(dtype=object), depth, q, d, r, np.cumsum(offsets))

    # -- look-ups ------------------------------------------------------------------------------
    @cached_property
    def doc_position(self) -> dict[str, int]:
        return {d: i for i, d in enumerate(self.doc_ids)}

    @cached_property
    def query_position(self) -> dict[str, int]:
        return {q: i for i, q in enumerate(self.query_ids)}

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

    def ranks_of(self, doc: int, query_indices: np.ndarray) -> np.ndarray:
        """rho(d, sigma_q) for each query index (np.inf where q does not expose d)."""
        lookup = self.rank_lookup(doc)
        return np.array([lookup.get(int(q), np.inf) for q in query_indices], dtype=float)

    def restricted_to(self, query_mask: np.ndarray) -> "ExposureMap":
        """The map as if the log held only the queries where ``query_mask`` is True (same indices)."""
        keep = query_mask[self.q_idx]
        d = self.d_idx[keep]
        offsets = np.zeros(len(self.doc_ids) + 1, dtype=np.int64)
        np.add.at(offsets, d + 1, 1)
        return ExposureMap(self.query_ids, self.doc_ids, self.depth, self.q_idx[keep], d, self.rank0[keep],
                           np.cumsum(offsets))


def compute_exposure_map(ranker: Ranker, collection: Collection, store: ArtifactStore, depth: int = 100,
                         progress: ProgressFn | None = None) -> ExposureMap:
    """Brute force: every logged query through the ranker to ``depth`` (run cached in the store), inverted."""
    if depth <= 0:
        raise DataError(f"n_q->d = {depth}: expected a positive depth")
    run = run_all_queries(ranker, collection, store, k=depth, progress=progress)
    return ExposureMap.from_run(run, collection, depth)
