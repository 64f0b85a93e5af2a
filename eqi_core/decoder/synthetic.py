"""Synthetic training pairs for the natural decoder: its own samples near the training queries.

The decoder memorises its 60k training queries (teacher-forced loss 0.26 per token on them against
2.09 on held-out ones) and no more real queries exist here. Any text paired with its own embedding
is a correct inversion example, so a trained decoder's nucleus samples at points around the
training queries (Gaussian noise, as in training) give new query-like texts; the next training run
pairs each with its true embedding (encoded like every corpus text), never with the point it was
sampled at. Held out stays held out: a sample whose normalised text is any corpus text (held-out
queries included) or falls in the held-out hash share is dropped, and no held-out query or passage
is ever a sampling point.

Built in resumable parts (``PART`` points each, seeded by the part's number) in the store's work
folder; the augmented corpus (the input table plus rows of kind ``synthetic``) is written atomically.
A further round starts from an augmented corpus: it keeps the earlier samples (a new sample equal to
one is dropped), tags its own rows ``synthetic-N`` and lists the earlier rounds in the summary.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from eqi_core.decoder.base import words
from eqi_core.decoder.corpus import SYNTHETIC_KIND, normalised, query_heldout, read_corpus
from eqi_core.errors import DataError
from eqi_core.progress import ProgressFn
from eqi_core.store import ArtifactStore, atomic_path

PART = 2048


@dataclass
class SyntheticRecipe:
    n: int = 200_000  # sampling points (one sample each); about 65% survive the filters
    noise: tuple[float, ...] = (0.3, 0.45)  # norm of the Gaussian noise around a training query; points take turns
    temperature: float = 1.0
    top_p: float = 0.95
    min_words: int = 2
    seed: int = 0

    def validate(self) -> None:
        if self.n < 1:
            raise DataError(f"synthetic: n = {self.n}; expected at least 1 point")
        if not self.noise or min(self.noise) < 0:
            raise DataError(f"synthetic: noise {self.noise}; expected one or more norms >= 0")
        if not 0 < self.top_p <= 1 or self.temperature <= 0:
            raise DataError(f"synthetic: top_p {self.top_p}, temperature {self.temperature}; expected 0 < top_p <= 1, "
                            "temperature > 0")


def sampling_points(query_emb: np.ndarray, part: int, size: int, recipe: SyntheticRecipe) -> tuple[np.ndarray, np.ndarray]:
    """Part ``part``'s points: random training queries (rows of ``query_emb``) plus noise of the
    recipe's norms, in turn, L2-normalised; seeded by the part alone (a resumed build draws the same)."""
    rng = np.random.default_rng([recipe.seed, part])
    rows = rng.integers(0, len(query_emb), size)
    norms = np.array(recipe.noise, dtype=np.float32)[(part * size + np.arange(size)) % len(recipe.noise)]
    noise = rng.standard_normal((size, query_emb.shape[1])).astype(np.float32) / np.sqrt(query_emb.shape[1])
    points = query_emb[rows] + norms[:, None] * noise
    return points / np.linalg.norm(points, axis=1, keepdims=True), rows


def keep_reason(text: str, seen: set[str], lexicon, min_words: int) -> str:
    """Why a sample is dropped ('' when it is kept); ``seen`` holds the normalised corpus texts (all
    splits) and the samples kept so far."""
    ws = words(text)
    if len(ws) < min_words:
        return "too short"
    if lexicon is not None and any(w not in lexicon for w in ws):
        return "unknown word"
    key = " ".join(ws)
    if query_heldout(text):
        return "held-out hash share"
    if key in seen:
        return "already a corpus text or sample"
    return ""


def build_synthetic(corpus_path: Path, decoder, encoder, out: Path, recipe: SyntheticRecipe,
                    store: ArtifactStore, progress: ProgressFn | None = None) -> dict:
    """Sample ``recipe.n`` texts from ``decoder`` (a NaturalDecoderModel) around the corpus's
    training queries and write the corpus plus the kept samples to ``out``; return the summary.
    Resumable: finished parts stay in the store's work folder until the corpus is written."""
    recipe.validate()
    table, summary = read_corpus(corpus_path)
    earlier = ([*summary.get("synthetic_earlier", []), summary["synthetic"]] if "synthetic" in summary else [])
    if (table["kind"] == SYNTHETIC_KIND).any() != bool(earlier):
        raise DataError(f"{corpus_path}: its synthetic rows and its summary's 'synthetic' entry disagree")
    round_no = len(earlier) + 1  # a further round keeps the earlier samples and adds the new decoder's
    queries = table.loc[(table["kind"] == "query") & (table["split"] == "train"), "text"].tolist()
    if not queries:
        raise DataError(f"{corpus_path}: no training queries to sample around")
    card = getattr(decoder, "card", {}) or {}
    decoder_id = hashlib.sha256(json.dumps({k: v for k, v in card.items() if k != "_folder"}, sort_keys=True,
                                           default=str).encode()).hexdigest()[:16]
    params = {"corpus": summary["digest"], "decoder": decoder_id, "encoder": encoder.id, "recipe": asdict(recipe)}
    work = store.work_dir("decoder-synthetic", params)
    emb_file = work / "query_emb.npy"
    if not emb_file.is_file():
        with atomic_path(emb_file) as tmp, open(tmp, "wb") as fh:
            np.save(fh, encoder.encode(queries).astype(np.float32))
    query_emb = np.load(emb_file)
    parts = (recipe.n + PART - 1) // PART
    for part in range(parts):
        file = work / f"part-{part:05d}.parquet"
        if file.is_file():
            if progress:
                progress(part + 1, parts)
            continue
        size = min(PART, recipe.n - part * PART)
        points, rows = sampling_points(query_emb, part, size, recipe)
        texts = [r[0] for r in decoder.sample_rows(points, 1, top_p=recipe.top_p, seed=recipe.seed * 100_003 + part,
                                                    temperature=recipe.temperature)]
        with atomic_path(file) as tmp:
            pd.DataFrame({"text": texts, "around": rows}).to_parquet(tmp, index=False)
        if progress:
            progress(part + 1, parts)
    samples = pd.concat([pd.read_parquet(work / f"part-{p:05d}.parquet") for p in range(parts)], ignore_index=True)
    seen = set(table["text"].map(normalised))
    lexicon = getattr(decoder, "lexicon", None)
    kept, dropped = [], {}
    for text in samples["text"]:
        reason = keep_reason(text, seen, lexicon, recipe.min_words)
        if reason:
            dropped[reason] = dropped.get(reason, 0) + 1
            continue
        seen.add(normalised(text))
        kept.append(text)
    source = SYNTHETIC_KIND if round_no == 1 else f"{SYNTHETIC_KIND}-{round_no}"
    rows = pd.DataFrame({"text": kept, "source": source, "split": "train", "kind": SYNTHETIC_KIND})
    augmented = pd.concat([table, rows], ignore_index=True)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(out) as tmp:
        augmented.to_parquet(tmp, compression="zstd", index=False)
    new = {k: v for k, v in summary.items() if k not in ("digest", "synthetic", "synthetic_earlier")}
    if earlier:
        new["synthetic_earlier"] = earlier
    new["synthetic"] = {"round": round_no, "source": source, "recipe": asdict(recipe), "from_corpus": summary["digest"],
                        "decoder": card.get("command", ""),
                        "decoder_digest": decoder_id, "points": len(samples), "kept": len(kept), "dropped": dropped,
                        "around": f"{len(queries)} training queries", "encoder": encoder.id}
    new["digest"] = hashlib.sha256(out.read_bytes()).hexdigest()[:16]
    with atomic_path(out.with_suffix(".json")) as tmp:
        Path(tmp).write_text(json.dumps(new, indent=1), encoding="utf-8")
    store.clear_work_dir("decoder-synthetic", params)
    return new


__all__ = ["SyntheticRecipe", "build_synthetic", "sampling_points", "keep_reason"]
