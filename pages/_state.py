"""Cached dashboard state: the store, the chosen collection, rankers, runs, the EQI setup and the
latent space, shared by sessions.

Collections, rankers and indexes are read-only once built, so ``st.cache_resource`` shares one
copy between sessions; building goes through the artifact store's file lock, so concurrent
sessions build an index once. What is slow on a first visit is built outside the cached
functions, under a live progress bar; the readiness checks come from the core.
"""
from __future__ import annotations

from pathlib import Path

import streamlit as st

from eqi_core.collection import Collection
from eqi_core.errors import DataError
from eqi_core.loaders import load_collection
from eqi_core.rankers import DEFAULT_RANKER, RANKERS, build_ranker, has_run, is_indexed, ranker_spec, run_all_queries
from eqi_core.runs import Run
from eqi_core.store import ArtifactStore
from pages._progress import with_progress
from pages._sidebar import COLLECTION_KEY, RANKER_KEY
from pages._text import literal

# Curated first-run example on the WordNet default (home page and the Latent traversal page's default):
# a logged query whose gold sense MiniLM-L6 ranks low, fixed along the walk (chosen with `eqi traverse`).
CURATED_TRAVERSAL_QUERY = "hair"
# The Query suggestions page's default on WordNet: a hash-held-out query (no suggester walked or trained
# on it) where the PRF model's suggestion reaches the gold sense and the baselines' do not (chosen with
# `eqi suggest` among 18 held-out queries; the held-out evaluation on the page says how often that happens).
CURATED_SUGGESTION_QUERY = "infinite"


@st.cache_resource(show_spinner=False)
def get_store() -> ArtifactStore:
    return ArtifactStore()


@st.cache_resource(show_spinner=False)
def get_collection(spec: str) -> Collection:
    return load_collection(spec, get_store())


@st.cache_resource(show_spinner=False, max_entries=8)
def _get_ranker(spec: str, ranker_id: str):
    return build_ranker(ranker_id, get_collection(spec), get_store())


def current_collection() -> Collection | None:
    spec = st.session_state.get(COLLECTION_KEY, "wordnet")
    try:
        with st.spinner(f"Loading collection {spec}..."):
            return get_collection(spec)
    except DataError as exc:
        st.error(literal(exc))
        return None


def _index_with_progress(ranker_id: str, collection: Collection) -> None:
    if not is_indexed(ranker_id, collection, get_store()):
        # Built outside the cached function so the progress bar is live, not replayed.
        with_progress(f"Indexing {len(collection.passages):,} passages for {ranker_spec(ranker_id).name}...",
                      lambda p: build_ranker(ranker_id, collection, get_store(), progress=p))


def current_ranker():
    """The chosen ranker over the chosen collection; the first build shows a progress bar."""
    return ranker_by_id(st.session_state.get(RANKER_KEY, DEFAULT_RANKER))


def ranker_by_id(ranker_id: str):
    """A ranker over the chosen collection (the sidebar's, or one to compare with it); the first build
    shows a progress bar; None, with the error shown, when it cannot be built."""
    spec = st.session_state.get(COLLECTION_KEY, "wordnet")
    try:
        _index_with_progress(ranker_id, get_collection(spec))
        return _get_ranker(spec, ranker_id)
    except DataError as exc:
        st.error(literal(exc))
        return None


@st.cache_resource(show_spinner=False, max_entries=16)
def _get_run(spec: str, ranker_id: str, k: int) -> Run:
    collection = get_collection(spec)
    run = run_all_queries(_get_ranker(spec, ranker_id), collection, get_store(), k=k)
    run.name = ranker_id
    return run


def live_run(spec: str, ranker_id: str, k: int = 100) -> Run:
    """A ranker's run over all queries of the collection; the first computation shows progress."""
    collection = get_collection(spec)
    store = get_store()
    _index_with_progress(ranker_id, collection)
    if not has_run(ranker_id, collection, store, k):
        ranker = _get_ranker(spec, ranker_id)
        with_progress(f"Ranking {len(collection.queries):,} queries with {ranker_spec(ranker_id).name}...",
                      lambda p: run_all_queries(ranker, collection, store, k=k, progress=p))
    return _get_run(spec, ranker_id, k)


@st.cache_resource(show_spinner=False, max_entries=4)
def _get_exposure_setup(spec: str, ranker_id: str, space: str | None, source: str):
    from eqi_core.exposure.setup import prepare_exposure

    return prepare_exposure(get_collection(spec), ranker_id, get_store(), space=space, passages=False)


def exposure_setup_or_stop(spec: str, ranker_id: str, space: str | None = None):
    """The exact exposure map + embedding space for EQI (first build with progress), or a clear error.
    ``ranker_id`` may be a result log (``run:<file>``); ``space`` the encoder of the dense methods.
    The passages' vectors come only when at hand or needed (a head's training, the evaluation): a
    BM25 or result-log audit of a large collection does not wait for a dense space it does not use."""
    from eqi_core.exposure.result_logs import is_result_log, result_log_digest
    from eqi_core.exposure.setup import exposure_ready, prepare_exposure, space_for

    collection = get_collection(spec)
    store = get_store()
    try:
        if not exposure_ready(collection, ranker_id, store, space=space, passages=False):
            dense_map = ranker_spec(ranker_id).family == "dense"
            with_progress(f"Computing the exact exposure map: {len(collection.queries):,} queries through "
                          f"{ranker_spec(ranker_id).name}"
                          + ("" if dense_map else f", then the log's vectors under {ranker_spec(space_for(ranker_id, space)).name} "
                             "for the approximate methods") + " (once; cached)...",
                          lambda p: prepare_exposure(collection, ranker_id, store, progress=p, space=space, passages=False))
        source = result_log_digest(ranker_id) if is_result_log(ranker_id) else ""  # a changed log file is another setup
        return _get_exposure_setup(spec, ranker_id, space, source)
    except DataError as exc:
        st.error(literal(exc))
        st.stop()


def passages_first(setup) -> str:
    """What a head's training or an evaluation does before its own work on a setup whose passages are
    not encoded yet ("encodes the 500,000 passages with MiniLM-L6 first, then "), else ""."""
    if setup.passages_encoded():
        return ""
    return f"encodes the {len(setup.collection.passages):,} passages with {ranker_spec(setup.space).name} first, then "


@st.cache_resource(show_spinner=False, max_entries=3)
def _get_latent_space(spec: str, encoder_id: str, decoder_folder: str = ""):
    from eqi_core.decoder.space import open_space

    return open_space(get_collection(spec), get_store(), encoder_id, Path(decoder_folder) if decoder_folder else None)


def warn_about_language(space) -> None:
    """Say so when the decoder's (English) words are not the collection's (``LatentSpace.language_fit``)."""
    if space.language_warning:
        st.warning(literal(space.language_warning))  # it quotes the collection's words


def latent_space_or_stop(spec: str, encoder_id: str, decoder_folder: str = ""):
    """The encoder's latent space with its decoders (first build shows progress), or a clear error.
    ``decoder_folder``: a shipped decoder's folder instead of the default one."""
    from eqi_core.decoder.space import open_space
    from eqi_core.exposure.setup import dense_space_ready

    collection = get_collection(spec)
    store = get_store()
    try:
        if not dense_space_ready(encoder_id, collection, store):
            with_progress(f"Encoding passages and logged queries with {ranker_spec(encoder_id).name} (once; cached)...",
                          lambda p: open_space(collection, store, encoder_id, progress=p))
        return _get_latent_space(spec, encoder_id, decoder_folder)
    except DataError as exc:
        st.error(literal(exc))
        st.stop()


@st.cache_resource(show_spinner=False, max_entries=2)
def _get_suggestion_space(spec: str, encoder_id: str):
    from dataclasses import replace

    from eqi_core.decoder.neural import load_decoder
    from eqi_core.suggestion.model import suggestion_decoder

    space = _get_latent_space(spec, encoder_id)
    speaker = suggestion_decoder(encoder_id)
    if Path(getattr(space.model, "card", {}).get("_folder", "")).resolve() == speaker.resolve():
        return space  # already the decoder that speaks the suggesters
    return replace(space, model=load_decoder(speaker, space.encoder))


def suggestion_space_or_stop(spec: str, encoder_id: str):
    """The latent space with the natural-language decoder that speaks the shipped suggesters
    (``suggestion_decoder``: the one they were tuned with; suggestions speak natural language on
    every collection, also where traversal uses a collection's own lemma decoder)."""
    latent_space_or_stop(spec, encoder_id)
    try:
        return _get_suggestion_space(spec, encoder_id)
    except DataError as exc:
        st.error(literal(exc))
        st.stop()


LATENT_ENCODERS = [r for r in RANKERS if ranker_spec(r).family == "dense" and not r.endswith("onnx")]


def sidebar_ranker_beside(encoder_id: str):
    """The sidebar's ranker when it is not ``encoder_id`` (the space a latent page decodes in), else
    None: a reformulation is typed into whatever engine the searcher uses, so the latent pages score
    their decoded texts with it too (``suggestion.panel.score_with_ranker``)."""
    return current_ranker() if st.session_state.get(RANKER_KEY, encoder_id) != encoder_id else None


def latent_encoder(what: str) -> str:
    """The dense encoder whose space a latent-space page decodes: the sidebar's ranker when a decoder
    exists for it, else the first that has one (and a caption saying so)."""
    chosen = st.session_state[RANKER_KEY]
    encoder_id = chosen if chosen in LATENT_ENCODERS else LATENT_ENCODERS[0]
    if chosen != encoder_id:
        st.caption(f"{what} in {ranker_spec(encoder_id).name}'s space: the sidebar's ranker "
                   f"({ranker_spec(chosen).name}) has no embedding space to decode.")
    return encoder_id
