"""Shared dashboard state: the store, the chosen collection and ranker, cached across sessions.

Collections, rankers and indexes are read-only once built, so ``st.cache_resource`` shares one
copy between sessions; building goes through the artifact store's file lock, so concurrent
sessions build an index once.
"""
from __future__ import annotations

import streamlit as st

from eqi_core.collection import Collection, DataError
from eqi_core.loaders import discover_collections, load_collection
from eqi_core.rankers import DEFAULT_RANKER, RANKERS, build_ranker, is_indexed, ranker_info
from eqi_core.store import ArtifactStore

COLLECTION_KEY = "collection_spec"
RANKER_KEY = "ranker_id"
# Widget state is dropped when a page without the widget runs; these keys keep the choice.
_KEPT = {COLLECTION_KEY: "_kept_collection_spec", RANKER_KEY: "_kept_ranker_id"}


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
        st.error(str(exc))
        return None


def current_ranker():
    """The chosen ranker over the chosen collection; the first build shows a progress bar."""
    spec = st.session_state.get(COLLECTION_KEY, "wordnet")
    ranker_id = st.session_state.get(RANKER_KEY, DEFAULT_RANKER)
    try:
        info = ranker_info(ranker_id)
        collection = get_collection(spec)
        if not is_indexed(ranker_id, collection, get_store()):
            # Build outside the cached function so the progress bar is live, not replayed.
            with st.status(f"Indexing {len(collection.passages):,} passages for {info.name}...", expanded=True) as status:
                bar = st.progress(0.0, text="starting")

                def progress(done: int, total: int) -> None:
                    bar.progress(min(1.0, done / max(total, 1)), text=f"{done:,} / {total:,} passages")

                build_ranker(ranker_id, collection, get_store(), progress=progress)
                status.update(label=f"{info.name} index ready (cached for next time)", state="complete", expanded=False)
        return _get_ranker(spec, ranker_id)
    except DataError as exc:
        st.error(str(exc))
        return None


def _keep(widget_key: str) -> None:
    st.session_state[_KEPT[widget_key]] = st.session_state[widget_key]


def _restore(widget_key: str, default: str) -> str:
    value = st.session_state.setdefault(_KEPT[widget_key], default)
    st.session_state[widget_key] = value
    return value


def sidebar() -> None:
    """Collection and ranker pickers; every page calls this first, so the choice follows the user."""
    options = discover_collections()
    specs = list(options.values())
    current = _restore(COLLECTION_KEY, "wordnet")
    _restore(RANKER_KEY, DEFAULT_RANKER)
    if current not in specs:
        specs.append(current)
        options[current] = current
    labels = {v: k for k, v in options.items()}
    st.sidebar.selectbox("Collection", specs, key=COLLECTION_KEY, on_change=_keep, args=(COLLECTION_KEY,),
                         format_func=lambda s: labels.get(s, s),
                         help="WordNet is embedded; add BEIR / MS MARCO folders with EQI_DATA_ROOTS")
    rankers = list(RANKERS)
    st.sidebar.selectbox("Ranker", rankers, key=RANKER_KEY, on_change=_keep, args=(RANKER_KEY,), format_func=lambda r: RANKERS[r].name,
                         help="; ".join(f"{r.name}: {r.description}" for r in RANKERS.values()))
    st.sidebar.caption(f"Artifact store: `{get_store().root}`")
