"""Nearest-query baseline: the logged queries closest to a point (always fluent, never new)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from eqi_core.decoder.base import Candidate, as_matrix
from eqi_core.rankers.dense import exact_topk


@dataclass
class NearestQueryDecoder:
    texts: list[str]
    embeddings: np.ndarray  # unit rows, one per text
    encoder_id: str
    name: str = "nearest-query"

    def decode(self, embeddings: np.ndarray, n: int = 5) -> list[list[Candidate]]:
        x = as_matrix(embeddings, self.embeddings.shape[1])
        scores, idx = exact_topk(x, self.embeddings, n)
        return [[Candidate(self.texts[j], float(s), float(s), self.name) for s, j in zip(srow, irow)]
                for srow, irow in zip(scores, idx)]
