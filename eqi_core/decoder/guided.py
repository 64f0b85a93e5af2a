"""Word-edit search: a search baseline, not a decoder (kept to show what it does and does not do).

Candidates (the decoder's beam and the nearest logged queries) are re-encoded and the ones closest
to the target kept; then word edits (delete, replace, insert) drawn from a pool (the decoder's likely
first words, the words of the target's nearest queries and passages, ranked by their own cosine to
the target) are tried while the cosine to the target improves. With the encoder as the judge this
climbs the evaluation's own metric and tends to build keyword lists ("involvement hindrance assert
..."), so it is reported apart from decoders. The target itself and its near-duplicates (cosine >=
``Neighbourhood.duplicate``) are never in its pool.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from eqi_core.decoder.base import Candidate, as_matrix, dedupe, stopwords, words
from eqi_core.rankers.dense import exact_topk


@dataclass
class Neighbourhood:
    """Texts whose words may be borrowed for edits: logged queries and passages, with embeddings."""

    query_texts: list[str]
    query_emb: np.ndarray
    passage_texts: list[str]
    passage_emb: np.ndarray
    duplicate: float = 0.98  # a text this close to the target is the target (or a copy): never in a pool

    def _near(self, target: np.ndarray, texts: list[str], emb: np.ndarray, n: int) -> list[str]:
        if not n or not len(texts):
            return []
        scores, idx = exact_topk(target[None], emb, min(len(texts), n + 8))
        return [texts[i] for s, i in zip(scores[0], idx[0]) if s < self.duplicate][:n]

    def near(self, target: np.ndarray, n_queries: int, n_passages: int) -> tuple[list[str], list[str]]:
        return (self._near(target, self.query_texts, self.query_emb, n_queries),
                self._near(target, self.passage_texts, self.passage_emb, n_passages))


@dataclass
class GuidedDecoder:
    """Word-edit search seeded by a decoder (implements QueryDecoder; a baseline)."""

    base: object  # a decoder model with .decode and .first_tokens
    encoder: object  # has .encode(texts) -> unit rows
    neighbourhood: Neighbourhood
    beam: int = 8
    keep: int = 3
    rounds: int = 3
    pool_size: int = 12
    max_words: int = 8
    near_queries: int = 3
    near_passages: int = 3
    name: str = "word-edit search"
    stats: dict = field(default_factory=lambda: {"encoded": 0})

    @property
    def encoder_id(self) -> str:
        return self.base.encoder_id

    def decode(self, embeddings: np.ndarray, n: int = 5) -> list[list[Candidate]]:
        x = as_matrix(embeddings, self.base.model.cfg.encoder_dim)
        beams = self.base.decode(x, n=self.beam)
        return [self.correct(t, [c.text for c in b], n) for t, b in zip(x, beams)]

    def _score(self, texts: list[str], target: np.ndarray) -> np.ndarray:
        if not texts:
            return np.zeros(0, dtype=np.float32)
        self.stats["encoded"] += len(texts)
        return self.encoder.encode(texts, batch_size=256) @ target

    def word_pool(self, target: np.ndarray, near_q: list[str], near_p: list[str]) -> list[str]:
        stop = stopwords()
        raw = self.base.first_tokens(target, 12) + [w for t in near_q for w in words(t)] + \
            [w for t in near_p for w in words(t)]
        pool = list(dict.fromkeys(w for w in raw if w not in stop and len(w) > 1 and not w.startswith("##")))
        if len(pool) > self.pool_size:
            sims = self._score(pool, target)
            pool = [pool[i] for i in np.argsort(-sims, kind="stable")[: self.pool_size]]
        return pool

    def correct(self, target: np.ndarray, seeds: list[str], n: int = 5) -> list[Candidate]:
        """Best ``n`` texts by cosine to ``target`` after at most ``rounds`` rounds of word edits."""
        target = as_matrix(target)[0]
        near_q, near_p = self.neighbourhood.near(target, self.near_queries, self.near_passages)
        texts = list(dict.fromkeys(" ".join(words(t)) for t in [*seeds, *near_q] if words(t)))
        cos = dict(zip(texts, self._score(texts, target).tolist()))
        pool = self.word_pool(target, near_q, near_p)
        best = max(cos.values(), default=-1.0)
        for _ in range(self.rounds):
            frontier = sorted(cos, key=cos.get, reverse=True)[: self.keep]
            edits = [e for t in frontier for e in _edits(t.split(), pool, self.max_words) if e not in cos]
            edits = list(dict.fromkeys(edits))
            if not edits:
                break
            cos.update(zip(edits, self._score(edits, target).tolist()))
            new_best = max(cos.values())
            if new_best <= best + 1e-6:
                break
            best = new_best
        ranked = sorted(cos.items(), key=lambda kv: -kv[1])
        return dedupe([Candidate(t, float(c), float(c), self.name) for t, c in ranked], n)


def _edits(ws: list[str], pool: list[str], max_words: int) -> list[str]:
    """Every one-word deletion, replacement and insertion of ``ws`` with words from ``pool``."""
    out = []
    if len(ws) > 1:
        out += [" ".join(ws[:i] + ws[i + 1:]) for i in range(len(ws))]
    for i in range(len(ws)):
        out += [" ".join(ws[:i] + [w] + ws[i + 1:]) for w in pool if w != ws[i]]
    if len(ws) < max_words:
        for i in range(len(ws) + 1):
            out += [" ".join(ws[:i] + [w] + ws[i:]) for w in pool if w not in ws]
    return out
