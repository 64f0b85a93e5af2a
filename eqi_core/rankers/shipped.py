"""Embeddings shipped in ``assets/embeddings``: the embedded default collection's passage vectors.

Why: a newcomer's first exposure click needs every passage encoded. Encoding WordNet's 20,001
glosses with MiniLM-L6 is ~10 TFLOP, about 60 s at this 2-core machine's sgemm peak and ~80 s in
practice, so no encoder path can put the curated example on screen within a minute of an empty
store. The vectors are made by this project's own encoder (``eqi ship-embeddings``), stored fp16
(half the size; the card records the largest difference from the fp32 vectors and how many
queries' exact top-100 change), and used only for the exact collection (content fingerprint),
field, encoder and encoding path they were made from. Store keys of seeded vectors, and of the
exposure maps built from them, carry the asset's digest, so they are never mixed with vectors
encoded here.
"""
from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from eqi_core.errors import DataError

ASSETS = Path(__file__).resolve().parents[2] / "assets" / "embeddings"
CARD = "card.json"
VECTORS = "embeddings.npy"
FORMAT = 1


@dataclass(frozen=True)
class ShippedEmbeddings:
    folder: Path
    card: dict

    @property
    def digest(self) -> str:
        return self.card["sha256"]

    def load(self) -> np.ndarray:
        """The vectors as float32, after checking the file is the one the card describes."""
        path = self.folder / VECTORS
        data = path.read_bytes()
        if hashlib.sha256(data).hexdigest() != self.digest:
            raise DataError(f"{path}: content does not match the sha256 in {self.folder / CARD}")
        emb = np.load(path, allow_pickle=False)
        if emb.dtype != np.float16 or list(emb.shape) != self.card["shape"]:
            raise DataError(f"{path}: expected float16 {self.card['shape']}, found {emb.dtype} {list(emb.shape)}")
        return emb.astype(np.float32)


def _cards(root: Path):
    if not root.is_dir():
        return
    for card_path in sorted(root.glob(f"*/{CARD}")):
        try:
            card = json.loads(card_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise DataError(f"{card_path}: not a readable JSON card ({exc})") from None
        if card.get("format") == FORMAT:
            yield ShippedEmbeddings(card_path.parent, card)


def find_shipped(encoder_id: str, path: str, collection_fingerprint: str, field: str,
                 root: Path | None = None) -> ShippedEmbeddings | None:
    """The shipped vectors of exactly this collection content, field, encoder and encoding path
    (none when EQI_SHIPPED_EMBEDDINGS=0: every vector encoded here, e.g. for a benchmark's baseline)."""
    if os.environ.get("EQI_SHIPPED_EMBEDDINGS", "1") == "0":
        return None
    for shipped in _cards(root or ASSETS):
        c = shipped.card
        if (c.get("encoder"), c.get("path"), c.get("collection"), c.get("field")) == (
                encoder_id, path, collection_fingerprint, field):
            return shipped
    return None


def ship_embeddings(collection, encoder, field: str, folder: Path, command: str, progress=None) -> dict:
    """Encode ``field`` ("passages" or "queries") of ``collection`` with ``encoder`` here, and write
    the fp16 vectors and their card into ``folder`` (atomically); returns the card."""
    from eqi_core.rankers.dense import exact_topk
    from eqi_core.rankers.registry import encoding_path
    from eqi_core.store import atomic_path, atomic_write

    if field not in ("passages", "queries"):
        raise DataError(f"field {field!r}: expected passages or queries")
    texts = collection.passage_texts() if field == "passages" else list(collection.queries["text"])
    started = time.perf_counter()
    full = encoder.encode(texts, progress=progress)
    seconds = time.perf_counter() - started
    half = full.astype(np.float16)
    back = half.astype(np.float32)
    card = {
        "format": FORMAT, "encoder": encoder.id, "path": encoding_path(encoder.id),
        "collection": collection.fingerprint, "collection_name": collection.name, "field": field,
        "shape": list(half.shape), "dtype": "float16",
        "max_abs_difference_from_fp32": float(np.abs(back - full).max()),
        "encode_seconds_here": round(seconds, 1), "command": command,
        "created": time.strftime("%Y-%m-%d"),
    }
    if field == "passages" and len(collection.queries):  # what fp16 storage changes downstream
        q = encoder.encode(list(collection.queries["text"]))
        _, exact = exact_topk(q, full, 100)
        _, seeded = exact_topk(q, back, 100)
        card["queries_with_the_same_top100_set"] = f"{sum(set(a) == set(b) for a, b in zip(exact, seeded)):,} of {len(q):,}"
    with atomic_path(folder / VECTORS) as tmp, open(tmp, "wb") as fh:  # the card last: it vouches for the file
        np.save(fh, half, allow_pickle=False)
    card["sha256"] = hashlib.sha256((folder / VECTORS).read_bytes()).hexdigest()
    atomic_write(folder / CARD, json.dumps(card, indent=1) + "\n")
    return card
