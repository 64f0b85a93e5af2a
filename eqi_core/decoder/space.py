"""LatentSpace: one dense encoder's space over a collection, with the decoders that invert it.

It bundles what traversal, suggestions and evaluation all need: the dense ranker (passage
embeddings), the logged queries' embeddings, the judgments, and the decoders: the decoder model
alone, the model with the encoder re-ranking its whole hypotheses (``decoder+rerank``), and two
baselines (the nearest logged query; word-edit search, which builds texts word by word with the
encoder as judge). ``exclude_query_ids`` and ``exclude_doc_ids`` hide held-out items from every
pool (held-out evaluation queries must not be looked up, only decoded).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np
import pandas as pd

from eqi_core.collection import Collection, readable
from eqi_core.decoder.base import DecoderError, QueryDecoder, as_matrix
from eqi_core.decoder.guided import GuidedDecoder, Neighbourhood
from eqi_core.decoder.nearest import NearestQueryDecoder
from eqi_core.decoder.neural import load_decoder, read_card
from eqi_core.decoder.rerank import RerankDecoder
from eqi_core.errors import DataError
from eqi_core.progress import ProgressFn
from eqi_core.store import ArtifactStore

ASSETS = Path(__file__).resolve().parents[2] / "assets" / "decoders"
DECODER_NAMES = ("decoder+rerank", "decoder", "nearest-query", "word-edit search")
# names of earlier versions (deep links, scripts): the decoder alone, the corrected decoder
DECODER_ALIASES = {"neural": "decoder", "neural+guided": "decoder+rerank", "guided": "word-edit search"}


def decoder_name(name: str) -> str:
    """A decoder name, earlier names mapped to today's; a one-line error for an unknown one."""
    name = DECODER_ALIASES.get(name, name)
    if name not in DECODER_NAMES:
        raise DecoderError(f"decoder {name!r}: expected one of {', '.join(DECODER_NAMES)}")
    return name


def shipped_decoders() -> list[Path]:
    """Checkpoint folders shipped in ``assets/decoders`` (made by ``eqi train-decoder --export``)."""
    return sorted(p.parent for p in ASSETS.glob("*/card.json")) if ASSETS.is_dir() else []


def shipped_natural_decoders(encoder_id: str) -> list[Path]:
    """The natural-language decoders shipped for an encoder, the default first (by folder name:
    ``natural-minilm-l6`` before ``natural-minilm-l6-real``)."""
    from eqi_core.decoder.natural import is_natural_card

    return [f for f in shipped_decoders() if is_natural_card(f) and read_card(f)["config"]["encoder_id"] == encoder_id]


def shipped_natural_decoder(encoder_id: str) -> Path:
    """The shipped natural-language decoder for an encoder (query suggestion speaks natural language
    on every collection)."""
    found = shipped_natural_decoders(encoder_id)
    if not found:
        raise DecoderError(f"no natural-language decoder shipped for encoder {encoder_id!r} in {ASSETS}")
    return found[0]


def own_samples(corpus: dict) -> tuple[int, int]:
    """(samples kept, rounds) of ``eqi decoder-synthetic`` in a decoder card's corpus summary."""
    rounds = [*corpus.get("synthetic_earlier", []), corpus["synthetic"]] if corpus.get("synthetic") else []
    return sum(r["kept"] for r in rounds), len(rounds)


def decoder_summary(folder: Path) -> str:
    """One line on how a shipped decoder differs: what a choice between them shows."""
    card = read_card(folder)
    corpus = card.get("corpus", {})
    own, rounds = own_samples(corpus)
    made = (f"also trained on {own:,} of decoders' own samples ({rounds} rounds of eqi decoder-synthetic)"
            if rounds > 1 else
            f"also trained on {own:,} of a decoder's own samples (eqi decoder-synthetic)" if rounds else
            f"trained on {corpus.get('queries_train', 0):,} real queries and {corpus.get('sentences_train', 0):,} "
            "passage sentences" if card.get("arch") else f"trained on {card.get('collection', '?')}")
    if corpus.get("version", 1) >= 2:  # the corpus recipe that leaves out the evaluated collections' queries
        made += ", no query of DL19, SciFact or Cranfield"
    decoder = card.get("natural_metrics", {}).get("summary", {}).get("decoder", {})
    f1, top1 = decoder.get("round_trip_f1"), decoder.get("trec-dl19-passage top1")
    return f"{made}" + (f"; alone: round trip F1 {f1:.3f}" if f1 is not None else "") + (
        f", DL19 passage -> query top-1 {top1:.3f}" if top1 is not None else "")


def find_decoder(collection: Collection, encoder, store: ArtifactStore):
    """The decoder for this encoder: one trained on this collection in the store (someone asked for
    it), else the shipped natural-language decoder, else another shipped one, else a one-line error.
    The natural decoder is the default on WordNet too: on WordNet items neither decoder was trained
    on it beats the WordNet lemma decoder (`eqi eval-decoder --natural --on-wordnet`: round trip
    F1 0.886 vs 0.822, passage -> query top-1 0.969 vs 0.486); that one is kept for `--decoder`."""
    trained = [a for a in store.list("decoder")
               if a.params.get("collection") == collection.fingerprint and a.params.get("encoder") == encoder.id]
    if trained:
        return load_decoder(max(trained, key=lambda a: a.manifest.get("created", "")).path, encoder)
    shipped = [(read_card(f).get("config", {}).get("arch") != "bert-prefix", f.name, f) for f in shipped_decoders()
               if read_card(f)["config"]["encoder_id"] == encoder.id]
    if shipped:
        return load_decoder(sorted(shipped)[0][-1], encoder)
    raise DecoderError(f"no query decoder for encoder {encoder.id!r}: train one with "
                       f"`eqi train-decoder -c <collection> -e {encoder.id}`")


def _source_family(spec: str) -> str:
    """"wordnet" for any WordNet spec, else the spec's resolved path (no "#split"): collections of
    one family share passage ids."""
    kind, _, rest = spec.partition(":")
    if kind.startswith("wordnet"):
        return "wordnet"
    return f"{kind}:{Path(rest.split('#')[0]).resolve()}" if rest else spec


def unseen_passages(card: dict, collection: Collection) -> list[str]:
    """Ids of the collection's passages the decoder was never trained on, for honest evaluation: a
    decoder trained on this collection held out its held-out queries' gold passages; the natural
    decoder held out a hashed tenth of each collection whose sentences its corpus took; any other
    collection's decoder never saw these passages at all."""
    from eqi_core.decoder.corpus import passage_heldout
    from eqi_core.decoder.train import DecoderTraining, heldout_split

    ids = collection.passages["doc_id"].tolist()
    if card.get("collection_fingerprint") == collection.fingerprint:
        return heldout_split(collection, DecoderTraining().heldout_share)[1]
    family = _source_family(collection.source)
    keys = [k for k, src in card.get("corpus", {}).get("sources", {}).items() if _source_family(src.get("spec", "")) == family]
    return [d for d in ids if all(passage_heldout(k, d) for k in keys)]


@dataclass
class LatentSpace:
    collection: Collection
    ranker: object  # DenseRanker of the decoder's encoder
    query_emb: np.ndarray
    model: object  # NaturalDecoderModel or NeuralDecoder: the decoder alone
    exclude_query_ids: frozenset = field(default_factory=frozenset)
    guided_options: dict = field(default_factory=dict)
    exclude_doc_ids: frozenset = field(default_factory=frozenset)

    @property
    def encoder(self):
        return self.ranker.encoder

    @property
    def judgments(self) -> dict[str, dict[str, int]]:
        return self.collection.judgments

    @cached_property
    def doc_ids(self) -> np.ndarray:
        return self.ranker.doc_ids

    @cached_property
    def language_fit(self):
        """``LanguageFit`` of the collection's passages to the decoder's word list (None for a decoder
        without one), and ``language_warning`` its one line when they are in another language."""
        from eqi_core.decoder.lexicon import language_fit

        lexicon = getattr(self.model, "lexicon", None)
        return language_fit(self.collection.passage_texts(), lexicon) if lexicon is not None else None

    @property
    def language_warning(self) -> str | None:
        fit = self.language_fit
        return fit.warning(self.collection.name) if fit is not None else None

    def typed_notes(self, text: str, what: str = "query") -> list[str]:
        """What a user should know about a typed text before reading what is decoded from it: the
        encoder's unread or cut pieces (``encoders.text_notes``), and a language the decoder does not
        write (``lexicon.typed_text_warning``)."""
        from eqi_core.decoder.lexicon import typed_text_warning
        from eqi_core.encoders import text_notes

        language = None if self.language_warning else typed_text_warning(  # the collection's warning says it already
            text, getattr(self.model, "lexicon", None), what)
        return [*text_notes(self.encoder, text, what), *([language] if language else [])]

    @cached_property
    def _doc_pos(self) -> dict[str, int]:
        return {d: i for i, d in enumerate(self.doc_ids)}

    @cached_property
    def _visible_queries(self) -> np.ndarray:
        ids = self.collection.queries["query_id"].to_numpy()
        return np.flatnonzero(~np.isin(ids, list(self.exclude_query_ids))) if self.exclude_query_ids else np.arange(len(ids))

    @cached_property
    def neighbourhood(self) -> Neighbourhood:
        keep = self._visible_queries
        texts = self.collection.queries["text"].to_numpy()
        docs = np.flatnonzero(~np.isin(self.doc_ids, list(self.exclude_doc_ids))) if self.exclude_doc_ids \
            else np.arange(len(self.doc_ids))
        passages = self.collection.passage_texts()
        return Neighbourhood([texts[i] for i in keep], self.query_emb[keep], [passages[i] for i in docs],
                             self.ranker.doc_embeddings[docs])

    @cached_property
    def decoders(self) -> dict[str, QueryDecoder]:
        hood = self.neighbourhood
        return {
            "decoder+rerank": RerankDecoder(self.model, self.encoder),
            "decoder": self.model,
            "nearest-query": NearestQueryDecoder(hood.query_texts, hood.query_emb, self.encoder.id),
            "word-edit search": GuidedDecoder(self.model, self.encoder, hood, **self.guided_options),
        }

    def decoder(self, name: str) -> QueryDecoder:
        return self.decoders[decoder_name(name)]

    # -- lookups with one-line errors --------------------------------------------------------------
    def passage_index(self, doc_id: str) -> int:
        pos = self._doc_pos.get(str(doc_id))
        if pos is None:
            raise DecoderError(f"target passage {doc_id!r}: not in collection {self.collection.name}")
        return pos

    def passage_embedding(self, doc_id: str) -> np.ndarray:
        return self.ranker.doc_embeddings[self.passage_index(doc_id)]

    def encode(self, texts: list[str]) -> np.ndarray:
        return self.encoder.encode(list(texts), batch_size=256)

    def gold_passage(self, query_id: str) -> str | None:
        """The query's most relevant judged passage (first by id among equals), if any."""
        from eqi_core.judged import gold_passage

        return gold_passage(self.judgments.get(str(query_id), {}), self._doc_pos)

    # -- retrieval of decoded queries --------------------------------------------------------------
    def ranks(self, query_emb: np.ndarray, doc_index: int | np.ndarray) -> np.ndarray:
        """Exact 1-based rank of a passage for each query embedding (no depth cut-off)."""
        q = as_matrix(query_emb)
        scores = q @ self.ranker.doc_embeddings.T
        idx = np.broadcast_to(np.asarray(doc_index), (len(q),))
        own = scores[np.arange(len(q)), idx]
        return (scores >= own[:, None]).sum(axis=1)  # ties counted against the passage

    def ranks_of_vector(self, query_emb: np.ndarray, passage_emb: np.ndarray) -> np.ndarray:
        """Rank a passage that is not in the collection would get among its passages, per query."""
        q = as_matrix(query_emb)
        own = q @ np.asarray(passage_emb, dtype=np.float32)
        return 1 + (q @ self.ranker.doc_embeddings.T >= own[:, None]).sum(axis=1)  # ties counted against it

    def top(self, query_emb: np.ndarray, k: int = 10) -> tuple[np.ndarray, np.ndarray]:
        from eqi_core.rankers.dense import exact_topk

        return exact_topk(as_matrix(query_emb), self.ranker.doc_embeddings, k)

    def ndcg10(self, query_emb: np.ndarray, qrels: list[dict[str, int]]) -> np.ndarray:
        """nDCG@10 (ir_measures) of each query embedding's top 10 against its own qrels."""
        import ir_measures
        from ir_measures import nDCG

        scores, idx = self.top(query_emb, 10)
        run = {str(i): {str(self.doc_ids[j]): float(s) for s, j in zip(srow, irow)}
               for i, (srow, irow) in enumerate(zip(scores, idx))}
        judged = {str(i): {d: int(g) for d, g in q.items()} for i, q in enumerate(qrels) if q}
        out = np.zeros(len(run))
        for m in ir_measures.iter_calc([nDCG @ 10], judged, {k: v for k, v in run.items() if k in judged}):
            out[int(m.query_id)] = m.value
        return out

    def decode_text(self, text: str, method: str = "decoder+rerank", n: int = 5) -> pd.DataFrame:
        """Queries decoded from a text's embedding (e.g. a passage), each with its cosine to the text
        and the rank the text would get for it among the collection's passages (page and CLI)."""
        from eqi_core.decoder.traversal import check_query
        from eqi_core.encoders import MAX_PASSAGE_CHARS

        # a passage, not a query: as long as the Exposure page's pasted passages (the encoder reads its
        # first word pieces; ``typed_notes`` says how much is cut)
        emb = self.encode([check_query(text, "text", "give the text to decode, e.g. a passage", MAX_PASSAGE_CHARS)])
        cands = self.decoder(method).decode(emb, n=n)[0]
        c_emb = self.encode([c.text for c in cands])
        return pd.DataFrame({"decoded query": [c.text for c in cands], "source": [c.source for c in cands],
                             "cos to passage": c_emb @ emb[0], "passage's rank": self.ranks_of_vector(c_emb, emb[0])})

    def judged_top(self, query_emb: np.ndarray, query_id: str | None, target_id: str, k: int = 10) -> pd.DataFrame:
        """A point's top-k passages with their grades (the query's judgments, else the target as the
        one relevant passage; <NA> where unjudged, which a judged 0 is not) and the target marked."""
        scores, idx = self.top(query_emb[None] if np.ndim(query_emb) == 1 else query_emb, k)
        grades = self.qrels_for(query_id, target_id)
        texts = self.collection.passage_texts()
        ids = [str(self.doc_ids[j]) for j in idx[0]]
        return pd.DataFrame({"rank": range(1, len(ids) + 1), "doc_id": ids, "score": scores[0],
                             "passage": [readable(texts[j]) for j in idx[0]], "grade": judged_grades(grades, ids),
                             "target": ["◀ target" if d == target_id else "" for d in ids]})

    def qrels_for(self, query_id: str | None, target_id: str) -> dict[str, int]:
        """The query's judgments when it has any, else the target passage as the one relevant."""
        judged = self.judgments.get(str(query_id), {}) if query_id is not None else {}
        return judged if any(g > 0 for g in judged.values()) else {target_id: 1}


def judged_grades(grades: dict[str, int], doc_ids) -> pd.Series:
    """Each passage's judged grade, <NA> for an unjudged one (a top 10 shows it as "unjudged", as the
    Collection page does, instead of a 0 that reads as judged non-relevant)."""
    return pd.Series([grades.get(d) for d in doc_ids], dtype="Int64")


def open_space(collection: Collection, store: ArtifactStore, encoder_id: str = "minilm-l6",
               decoder_path: Path | None = None, exclude_query_ids=(), progress: ProgressFn | None = None,
               exclude_doc_ids=(), **guided_options) -> LatentSpace:
    """Build (or load from the store) everything a latent-space view needs for one encoder."""
    from eqi_core.exposure.reverse import query_embeddings
    from eqi_core.rankers import build_ranker, load_encoder, ranker_spec

    if ranker_spec(encoder_id).family != "dense":
        raise DataError(f"encoder {encoder_id!r}: latent traversal needs a dense encoder (e.g. minilm-l6)")
    ranker = build_ranker(encoder_id, collection, store, progress)
    encoder = load_encoder(encoder_id)
    model = load_decoder(decoder_path, encoder) if decoder_path else find_decoder(collection, encoder, store)
    q_emb = query_embeddings(encoder, collection, store, progress)
    return LatentSpace(collection, ranker, q_emb, model, frozenset(map(str, exclude_query_ids)), guided_options,
                       frozenset(map(str, exclude_doc_ids)))
