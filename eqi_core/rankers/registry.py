"""The ranker registry: one table of everything the workbench knows about a ranker.

Each ``RankerSpec`` holds the id the CLI, the URLs and the store keys use, the display name,
the family, the public release date (chronological TaSC), the colour it has on every figure,
its encoder and embedding dimension, and how it is built. Live rankers (``build`` set) run
here; the other rows name well-known rankers whose *run files* users bring (TREC DL runs), so
that their release dates and colours are known too. ``st:<folder>`` makes a spec on the fly
for any local sentence-transformers model folder.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from eqi_core.errors import DataError

if TYPE_CHECKING:  # the registry stays import-light: figures and pages read it
    from eqi_core.collection import Collection
    from eqi_core.progress import ProgressFn
    from eqi_core.rankers.base import Ranker
    from eqi_core.store import ArtifactStore

PALETTE = ["#4C78A8", "#F58518", "#54A24B", "#E45756", "#72B7B2", "#B279A2", "#FF9DA6", "#9D755D", "#EECA3B", "#BAB0AC"]


@dataclass(frozen=True)
class RankerSpec:
    id: str
    name: str
    family: str  # lexical, dense, learned-sparse; "run" for rankers known only by their run files
    release_date: str  # YYYY-MM (approximate for the small checkpoints); users can override it
    colour: str
    description: str = ""
    encoder: str | None = None  # encoder id (dense and learned-sparse rankers)
    dimension: int | None = None  # embedding size of a dense ranker
    aliases: tuple[str, ...] = ()
    map_source: str = "run"  # how the exact exposure map is sharded: dense (embeddings), bm25 (index), run (its run)
    build: Callable[..., Ranker] | None = field(default=None, compare=False, repr=False)
    index: Callable[..., tuple[str, dict]] | None = field(default=None, compare=False, repr=False)

    @property
    def live(self) -> bool:
        """Runs here (has a builder), as opposed to a name known from run files."""
        return self.build is not None


# -- builders and index artifacts (imports inside: a spec is read far more often than built) ------------
def _bm25(spec, collection, store, progress):
    from eqi_core.rankers.bm25 import BM25Ranker

    return BM25Ranker.build(collection, store, progress=progress)


def _bm25_index(spec, collection):
    from eqi_core.rankers.bm25 import BM25Ranker

    return BM25Ranker.artifact(collection)


def _dense(spec, collection, store, progress):
    from eqi_core.rankers.dense import DenseRanker

    return DenseRanker.build(collection, store, load_encoder(spec.encoder), spec.name, spec.release_date, progress)


def _dense_index(spec, collection):
    from eqi_core.rankers.dense import passage_embeddings_artifact

    return passage_embeddings_artifact(collection, spec.encoder)


def _splade(spec, collection, store, progress):
    from eqi_core.rankers.splade import SpladeRanker

    return SpladeRanker.build(collection, store, load_encoder(spec.encoder), progress=progress)


def _splade_index(spec, collection):
    from eqi_core.rankers.splade import SpladeRanker

    return SpladeRanker.artifact(collection, spec.encoder)


REGISTRY: tuple[RankerSpec, ...] = (
    # live rankers
    RankerSpec("bm25", "BM25", "lexical", "1994-11", "#4C78A8", "bm25s, k1=0.9 b=0.4, English stop words + Snowball stemmer",
               map_source="bm25", build=_bm25, index=_bm25_index),
    RankerSpec("minilm-l6", "MiniLM-L6 (dense)", "dense", "2021-08", "#F58518",
               "all-MiniLM-L6-v2, 384-d, sentence-transformers weights run by onnxruntime (fp32 export)", encoder="minilm-l6", dimension=384,
               map_source="dense", build=_dense, index=_dense_index),
    RankerSpec("minilm-l3-onnx", "MiniLM-L3 (dense, ONNX)", "dense", "2021-06", "#B279A2",
               "paraphrase-MiniLM-L3-v2, 384-d, onnxruntime, mean pooling", encoder="minilm-l3-onnx", dimension=384,
               map_source="dense", build=_dense, index=_dense_index),
    RankerSpec("splade-tiny", "SPLADE-tiny", "learned-sparse", "2021-09", "#8CD17D",
               "SPLADE-tiny MLM head, log(1+relu) max pooling", encoder="splade-tiny", build=_splade, index=_splade_index),
    # rankers known from their run files (../shared/data/trec-dl19-passage/runs)
    RankerSpec("bm25-rm3", "BM25 + RM3", "run", "2004-07", "#9ECAE9", aliases=("rm3",)),
    RankerSpec("tasb", "TAS-B", "run", "2021-04", "#72B7B2", aliases=("tas-b",)),
    RankerSpec("splade-pp-ed", "SPLADE++ ED", "run", "2021-12", "#54A24B", aliases=("splade++",)),
    RankerSpec("openai-ada2", "OpenAI ada-002", "run", "2022-12", "#9D755D", aliases=("ada2",)),
    RankerSpec("repllama", "RepLLaMA", "run", "2023-10", "#E45756"),
)
_BY_NAME = {name: spec for spec in REGISTRY for name in (spec.id, *spec.aliases)}
RANKERS: dict[str, RankerSpec] = {s.id: s for s in REGISTRY if s.live}  # what the dashboard offers
DEFAULT_RANKER = "bm25"


def selection_params(spec: RankerSpec) -> dict:
    """Store-key parameters of how the ranker's top k is selected, for every artifact built from its
    lists (runs, exposure maps, heads and evaluations on them): BM25's ``BM25_SELECTION``."""
    if spec.map_source != "bm25":
        return {}
    from eqi_core.rankers.bm25 import BM25_SELECTION

    return {"bm25_selection": BM25_SELECTION}


def ranker_spec(ranker_id: str) -> RankerSpec:
    """The spec of a live ranker id or ``st:<folder>``; a one-line DataError otherwise."""
    if ranker_id in RANKERS:
        return RANKERS[ranker_id]
    if ranker_id.startswith("st:"):
        folder = Path(ranker_id[3:]).expanduser().resolve()
        return RankerSpec(ranker_id, f"{folder.name} (dense)", "dense", "", colour_for(ranker_id),
                          f"local sentence-transformers folder {folder}", encoder=f"st:{folder}",
                          map_source="dense", build=_dense, index=_dense_index)
    if ranker_id.startswith("run:"):  # a system's result log (eqi_core.exposure.result_logs)
        path = Path(ranker_id[4:])
        return RankerSpec(ranker_id, f"{path.name.split('.')[0]} (result log)", "run", "", colour_for(path.name),
                          f"results read from {path}", map_source="run")
    raise DataError(f"ranker {ranker_id!r}: unknown; expected one of {', '.join(RANKERS)}, st:<model folder> "
                    "or run:<result log file>")


def known(name: str) -> RankerSpec | None:
    """The spec a ranker or run name refers to ('bm25', 'tas-b', 'bm25.dl19' -> bm25), else None."""
    key = name.lower()
    return _BY_NAME.get(key) or _BY_NAME.get(key.split(".")[0])


def release_date_for(name: str) -> str:
    spec = known(name)
    return spec.release_date if spec else ""


def colour_for(name: str) -> str:
    """The same colour for a ranker on every page: registered names fixed, others by a stable hash."""
    spec = known(name) if not name.startswith("st:") else None
    return spec.colour if spec else PALETTE[sum(map(ord, name)) % len(PALETTE)]


ENCODING_PATHS = {"minilm-l6": "onnxruntime-fp32-export"}  # how an encoder's vectors are computed (store keys)


def encoding_path(encoder_id: str) -> str:
    """Which code path makes an encoder's embeddings: part of their store key, so vectors from
    another path (another numeric result) are never mixed with these."""
    return ENCODING_PATHS.get(encoder_id, "default")


def embedding_dimension(ranker_id: str) -> int:
    """Size of a dense ranker's vectors (0 for others); loads a local st: model to ask it."""
    spec = ranker_spec(ranker_id)
    if spec.family != "dense":
        return 0
    return spec.dimension or int(load_encoder(spec.encoder).dim)


# -- encoders -----------------------------------------------------------------------------------------
def _minilm_l6():
    from eqi_core import encoders as enc

    return enc.SentenceTransformerEncoder(enc.minilm_l6_dir(), "minilm-l6", onnx=True)


def _minilm_l3_onnx():
    from eqi_core import encoders as enc

    return enc.OnnxMeanPoolEncoder(enc.minilm_l3_onnx_file(), enc.minilm_l6_dir() / "tokenizer.json", "minilm-l3-onnx")


def _splade_tiny():
    from eqi_core import encoders as enc

    return enc.SpladeEncoder(enc.splade_tiny_dir())


ENCODERS: dict[str, Callable[[], object]] = {"minilm-l6": _minilm_l6, "minilm-l3-onnx": _minilm_l3_onnx,
                                             "splade-tiny": _splade_tiny}


@lru_cache(maxsize=8)
def load_encoder(encoder_id: str):
    """Encoders are heavy and stateless: one per process."""
    if encoder_id in ENCODERS:
        return ENCODERS[encoder_id]()
    if encoder_id.startswith("st:"):
        from eqi_core import encoders as enc

        folder = Path(encoder_id[3:]).expanduser().resolve()
        try:
            return enc.SentenceTransformerEncoder(folder, f"st:{folder}")
        except (OSError, ValueError) as exc:
            raise DataError(f"{folder}: cannot load a sentence-transformers model ({exc})") from None
    raise DataError(f"encoder {encoder_id!r}: unknown; expected one of {', '.join(ENCODERS)} or st:<model folder>")


def build_ranker(ranker_id: str, collection: Collection, store: ArtifactStore,
                 progress: ProgressFn | None = None) -> Ranker:
    """Index ``collection`` for this ranker (or load the index from the store) and return it."""
    spec = ranker_spec(ranker_id)
    if spec.build is None:
        raise DataError(f"{spec.name}: rankings come from a result log; it cannot rank new queries")
    return spec.build(spec, collection, store, progress)


def index_artifact(ranker_id: str, collection: Collection) -> tuple[str, dict]:
    """(kind, params) of the stored index a ranker needs for this collection."""
    spec = ranker_spec(ranker_id)
    return spec.index(spec, collection)
