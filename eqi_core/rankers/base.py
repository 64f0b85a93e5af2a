"""The Ranker protocol: every ranker searches a collection and returns a Run."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

import numpy as np

from eqi_core.runs import Run

Queries = Mapping[str, str] | Sequence[str]


def as_query_items(queries: Queries) -> tuple[list[str], list[str]]:
    """(ids, texts) from {id: text} or a list of texts (ids q1, q2, ...)."""
    if isinstance(queries, str):
        queries = [queries]
    if isinstance(queries, Mapping):
        return [str(q) for q in queries], [str(t) for t in queries.values()]
    return [f"q{i + 1}" for i in range(len(queries))], [str(t) for t in queries]


class Ranker(Protocol):
    """``search(queries, k) -> Run`` over the collection it was built for."""

    id: str
    name: str
    family: str  # "lexical", "dense", "learned-sparse"
    release_date: str  # YYYY-MM, editable by users for chronological comparisons

    def search(self, queries: Queries, k: int = 100) -> Run: ...


def canonical_topk(scores: np.ndarray, idx: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Row-wise top-k by (score descending, passage index ascending), empty (-1) slots last: the one
    order of tied results everywhere (rankers' runs, exposure maps, shards), whatever the backend."""
    s = np.where(idx < 0, -np.inf, scores)
    order = np.lexsort((np.where(idx < 0, np.iinfo(np.int64).max, idx), -s), axis=-1)[:, :k]
    return np.take_along_axis(scores, order, 1), np.take_along_axis(idx, order, 1)
