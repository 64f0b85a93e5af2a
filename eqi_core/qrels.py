"""Qrels: graded relevance judgments, query_id -> doc_id -> grade (as ranx's ``Qrels``)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from eqi_core.collection import QRELS_COLUMNS


@dataclass
class Qrels:
    """Judgments as a frame with query_id, doc_id, relevance (int; <= 0 is not relevant)."""

    frame: pd.DataFrame

    def __post_init__(self) -> None:
        self.frame = self.frame[QRELS_COLUMNS].astype({"query_id": str, "doc_id": str, "relevance": "int64"})

    @classmethod
    def from_file(cls, path: str | Path) -> Qrels:
        """TREC (``qid iter docid rel``) or TSV (``qid docid rel``) qrels; bad lines are one-line errors."""
        from eqi_core.loaders.trec import read_qrels

        return cls(read_qrels(path))

    @classmethod
    def from_dict(cls, judgments: dict[str, dict[str, int]]) -> Qrels:
        rows = [(q, d, g) for q, docs in judgments.items() for d, g in docs.items()]
        return cls(pd.DataFrame(rows, columns=QRELS_COLUMNS))

    def to_dict(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for q, d, g in zip(self.frame["query_id"], self.frame["doc_id"], self.frame["relevance"]):
            out.setdefault(q, {})[d] = int(g)
        return out

    def for_query(self, query_id: str) -> dict[str, int]:
        f = self.frame[self.frame["query_id"] == str(query_id)]
        return dict(zip(f["doc_id"], f["relevance"].astype(int)))

    def __len__(self) -> int:
        return len(self.frame)
