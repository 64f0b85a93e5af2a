"""Shared dashboard state: the store, the chosen collection and ranker, cached across sessions.

Collections, rankers and indexes are read-only once built, so ``st.cache_resource`` shares one
copy between sessions; building goes through the artifact store's file lock, so concurrent
sessions build an index once.
"""
from __future__ import annotations

import streamlit as st

from eqi_core.collection import Collection, DataError
from eqi_core.loaders import discover_collections, load_collection
from eqi_core.rankers import DEFAULT_RANKER, RANKERS, build_ranker, ranker_info
from eqi_core.store import ArtifactStore

COLLECTION_KEY = "collection_spec"
RANKER_KEY = "ranker_id"


@st.cache_resource(show_spinner=False)
def get_store() -> ArtifactStore:
    return ArtifactStore()


@st.cache_resource(show_spinner=False)
def get_collection(spec: str) -> Collection:
    return load_collection(spec, get_store())


@st.cache_resource(show_spinner=False, max_entries=8)
def _get_ranker(spec: str, ranker_id: str, _progress=None):
    return build_ranker(ranker_id, get_collection(spec), get_store(), progress=_progress)


def current_collection() -> Collection | None:
    spec = st.session_state.get(COLLECTION_KEY, "wordnet")
    try:
        with st.spinner(f"Loading collection {spec}..."):
            return get_collection(spec)
    except DataError as exc:
        st.error(str(exc))
        return None


def current_ranker():
    """The chosen ranker over the chosen collection; the first build shows a progress bar."""
    spec = st.session_state.get(COLLECTION_KEY, "wordnet")
    ranker_id = st.session_state.get(RANKER_KEY, DEFAULT_RANKER)
    info = ranker_info(ranker_id)
    with st.status(f"Preparing {info.name} on this collection...", expanded=False) as status:
        bar = st.progress(0.0, text="encoding / indexing passages")

        def progress(done: int, total: int) -> None:
            bar.progress(min(1.0, done / max(total, 1)), text=f"{done:,} / {total:,} passages")

        try:
            ranker = _get_ranker(spec, ranker_id, _progress=progress)
        except DataError as exc:
            status.update(label=str(exc), state="error")
            return None
        bar.empty()
        status.update(label=f"{info.name} ready", state="complete")
    return ranker


def sidebar() -> None:
    """Collection and ranker pickers shared by every page (kept in session state)."""
    options = discover_collections()
    specs = list(options.values())
    current = st.session_state.get(COLLECTION_KEY, "wordnet")
    if current not in specs:
        specs.append(current)
        options[current] = current
    labels = {v: k for k, v in options.items()}
    st.sidebar.selectbox("Collection", specs, index=specs.index(current), key=COLLECTION_KEY,
                         format_func=lambda s: labels.get(s, s),
                         help="WordNet is embedded; add BEIR / MS MARCO folders with EQI_DATA_ROOTS")
    rankers = list(RANKERS)
    st.sidebar.selectbox("Ranker", rankers, index=rankers.index(st.session_state.get(RANKER_KEY, DEFAULT_RANKER)),
                         key=RANKER_KEY, format_func=lambda r: RANKERS[r].name,
                         help="; ".join(f"{r.name}: {r.description}" for r in RANKERS.values()))
    st.sidebar.caption(f"Artifact store: `{get_store().root}`")
