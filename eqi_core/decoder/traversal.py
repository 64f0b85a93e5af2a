"""Latent traversal: walk from a query's embedding to a target passage's and decode each step.

q_k = q + (k/K)(d - q), k = 0..K (paper Eq. 1), or the spherical path (slerp) between the two
unit vectors, which keeps every point on the sphere the encoder's outputs live on. Each step's
decoded query is re-encoded and retrieved with the encoder's dense ranker: the target's exact
rank, nDCG@10 (the query's judgments, or the target as the one relevant passage), and cosines.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from eqi_core.decoder.base import DecoderError, QueryDecoder, words
from eqi_core.matching import shared_words
from eqi_core.progress import ProgressFn

MAX_STEPS = 50
# where a step's text came from, as the page shows it
SOURCE_LABELS = {"decoded": "decoded", "corrected": "corrected (encoder re-ranked)", "nearest-query": "looked up in the log",
                 "nearest logged query": "looked up in the log", "word-edit search": "word edits (search baseline)"}
MODES = ("linear", "slerp")


def check_walk(steps: int, mode: str) -> None:
    """One line for a walk that cannot be made: K outside 1..MAX_STEPS or an unknown mode."""
    if not 1 <= steps <= MAX_STEPS:
        raise DecoderError(f"K = {steps}: the number of steps must be between 1 and {MAX_STEPS}")
    if mode not in MODES:
        raise DecoderError(f"mode {mode!r}: expected one of {', '.join(MODES)}")


def interpolate(q: np.ndarray, d: np.ndarray, steps: int, mode: str = "linear") -> np.ndarray:
    """K + 1 points from q (k = 0) to d (k = K). Linear: Eq. 1 in raw space. Slerp: constant angular
    speed along the great circle between q/|q| and d/|d| (falls back to linear when they coincide)."""
    check_walk(steps, mode)
    q = np.asarray(q, dtype=np.float64)
    d = np.asarray(d, dtype=np.float64)
    t = np.arange(steps + 1)[:, None] / steps
    if mode == "linear":
        return (q + t * (d - q)).astype(np.float32)
    qn, dn = q / np.linalg.norm(q), d / np.linalg.norm(d)
    omega = np.arccos(np.clip(qn @ dn, -1.0, 1.0))
    if omega < 1e-6:
        return (qn + t * (dn - qn)).astype(np.float32)
    return ((np.sin((1 - t) * omega) * qn + np.sin(t * omega) * dn) / np.sin(omega)).astype(np.float32)


def cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = np.atleast_2d(a)
    b = np.atleast_2d(b)
    return (a @ b.T / np.outer(np.linalg.norm(a, axis=1), np.linalg.norm(b, axis=1))).squeeze()


@dataclass
class Traversal:
    """One walk. ``steps``: step, fraction, decoded, source (decoded / corrected / looked up),
    original (the text is the query itself), target_words (its words the target passage holds, as BM25 matches
    them), target_rank, ndcg10, cos_query, cos_target, cos_point.
    ``points``: the interpolated embeddings; ``decoded_emb``: re-encoded decodings."""

    query: str
    query_id: str | None
    target_id: str
    mode: str
    decoder: str
    steps: pd.DataFrame
    points: np.ndarray
    decoded_emb: np.ndarray
    query_emb: np.ndarray
    target_emb: np.ndarray

    @property
    def reformulations(self) -> pd.DataFrame:
        """Steps whose text is not the original query (those are never counted as reformulations)."""
        return self.steps[~self.steps["original"]]

    def first_top1(self) -> pd.Series | None:
        """The first reformulation that ranks the target first: what should have been asked."""
        hit = self.reformulations[self.reformulations["target_rank"] == 1]
        return hit.iloc[0] if len(hit) else None

    def best(self) -> pd.Series:
        """The best-ranked reformulation (or the original query, when every step repeats it)."""
        steps = self.reformulations if len(self.reformulations) else self.steps
        return steps.sort_values(["target_rank", "step"]).iloc[0]


MAX_QUERY_CHARS = 1000


def check_query(text: str, what: str = "query", hint: str = "type a query or pick one from the log",
                limit: int = MAX_QUERY_CHARS) -> str:
    """The text with its whitespace collapsed, or one line saying why it cannot be used."""
    text = " ".join(str(text or "").split())
    if not text:
        raise DecoderError(f"{what}: empty; {hint}")
    if len(text) > limit:
        raise DecoderError(f"{what}: {len(text):,} characters; at most {limit:,}")
    return text


def traverse(space, query: str, target_id: str, steps: int = 10, mode: str = "linear",
             decoder: QueryDecoder | str = "decoder+rerank", query_id: str | None = None, stop_early: bool = False,
             progress: ProgressFn | None = None) -> Traversal:
    """Decode every point of the walk from ``query`` to passage ``target_id`` (see module doc)."""
    query = check_query(query)
    target_index = space.passage_index(target_id)
    if query_id is None:
        query_id = space.collection.find_query(query)
    dec = space.decoder(decoder) if isinstance(decoder, str) else decoder
    if dec.encoder_id != space.encoder.id:
        raise DecoderError(f"decoder for {dec.encoder_id!r} cannot decode {space.encoder.id!r} embeddings")
    q = space.encode([query])[0]
    d = space.ranker.doc_embeddings[target_index]
    points = interpolate(q, d, steps, mode)
    qrels = space.qrels_for(query_id, target_id)
    own = " ".join(words(query))
    texts: list[str] = []
    sources: list[str] = []
    encoded: list[np.ndarray] = []  # with stop-early, each step is encoded as it is decoded
    if not stop_early:  # every point in one batched call (rows share the decoder's memory-bound steps)
        for cands in dec.decode(points, n=1):
            texts.append(cands[0].text)
            sources.append(SOURCE_LABELS.get(cands[0].source, cands[0].source or "decoded"))
        if progress:
            progress(len(points), len(points))
    for k, point in enumerate(points if stop_early else []):
        cand = dec.decode(point[None], n=1)[0][0]
        texts.append(cand.text)
        sources.append(SOURCE_LABELS.get(cand.source, cand.source or "decoded"))
        if progress:
            progress(k + 1, len(points))
        if stop_early:
            encoded.append(space.encode(texts[-1:]))
            if space.ranks(encoded[-1], target_index)[0] == 1 and " ".join(words(texts[-1])) != own:
                points = points[: k + 1]
                if progress:
                    progress(len(points), len(points))
                break
    emb = np.concatenate(encoded) if encoded else space.encode(texts)
    target_text = space.collection.display_text(str(target_id)) or ""  # a step that copies the target's words says so
    frame = pd.DataFrame({
        "step": np.arange(len(texts)),
        "fraction": np.arange(len(texts)) / steps,
        "decoded": texts,
        "source": sources,
        "original": [" ".join(words(t)) == own for t in texts],
        "target_words": [", ".join(shared_words(target_text, t)) for t in texts],  # the step's own words
        "target_rank": space.ranks(emb, target_index),
        "ndcg10": space.ndcg10(emb, [qrels] * len(texts)),
        "cos_query": np.atleast_1d(cosine(emb, q)),
        "cos_target": np.atleast_1d(cosine(emb, d)),
        "cos_point": np.einsum("ij,ij->i", emb, points / np.linalg.norm(points, axis=1, keepdims=True)),
    })
    return Traversal(query, query_id, str(target_id), mode, getattr(dec, "name", str(decoder)), frame, points, emb, q, d)
