"""Shared dashboard state: the store, the chosen collection and ranker, cached across sessions.

Collections, rankers and indexes are read-only once built, so ``st.cache_resource`` shares one
copy between sessions; building goes through the artifact store's file lock, so concurrent
sessions build an index once.
"""
from __future__ import annotations

import streamlit as st

from eqi_core.collection import Collection
from eqi_core.errors import DataError
from eqi_core.loaders import discover_collections, load_collection
from eqi_core.loaders.registry import check_within_roots
from eqi_core.rankers import (DEFAULT_RANKER, RANKERS, build_ranker, has_run, is_indexed, ranker_spec,
                              run_all_queries)
from eqi_core.runs import Run
from eqi_core.store import ArtifactStore

# Curated first-run example on the WordNet default (home page and the Latent traversal page's default):
# a logged query whose gold sense MiniLM-L6 ranks low, fixed along the walk (chosen with `eqi traverse`).
CURATED_TRAVERSAL_QUERY = "hair"

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


def _with_progress(label: str, work) -> None:
    """Run ``work(progress)`` under a live st.status + st.progress (outside any cached function)."""
    with st.status(label, expanded=True) as status:
        bar = st.progress(0.0, text="starting")

        def progress(done: int, total: int) -> None:
            bar.progress(min(1.0, done / max(total, 1)), text=f"{done:,} / {total:,}")

        work(progress)
        status.update(label=label.replace("...", ": done (cached for next time)"), state="complete", expanded=False)


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
    if not is_indexed(ranker_id, collection, store):
        _with_progress(f"Indexing {len(collection.passages):,} passages for {ranker_spec(ranker_id).name}...",
                       lambda p: build_ranker(ranker_id, collection, store, progress=p))
    if not has_run(ranker_id, collection, store, k):
        ranker = _get_ranker(spec, ranker_id)
        _with_progress(f"Ranking {len(collection.queries):,} queries with {ranker_spec(ranker_id).name}...",
                       lambda p: run_all_queries(ranker, collection, store, k=k, progress=p))
    return _get_run(spec, ranker_id, k)


@st.cache_resource(show_spinner=False, max_entries=4)
def _get_exposure_setup(spec: str, ranker_id: str):
    from eqi_core.exposure.evaluate import prepare_exposure

    return prepare_exposure(get_collection(spec), ranker_id, get_store())


def _dense_space_ready(encoder_id: str, collection: Collection, store: ArtifactStore) -> bool:
    """Passage and logged-query embeddings of this encoder are in the store (cheap: no checksums)."""
    from eqi_core.rankers.dense import embeddings_artifact

    queries = embeddings_artifact(encoder_id, {"collection": collection.fingerprint, "field": "queries"})
    return is_indexed(encoder_id, collection, store) and store.load(*queries, verify=False) is not None


def exposure_setup(spec: str, ranker_id: str):
    """The exact exposure map + embedding space for EQI; the first build shows its progress."""
    from eqi_core.exposure.evaluate import prepare_exposure

    collection = get_collection(spec)
    store = get_store()
    space = ranker_id if ranker_spec(ranker_id).family == "dense" else "minilm-l6"
    ready = (is_indexed(ranker_id, collection, store) and has_run(ranker_id, collection, store)
             and _dense_space_ready(space, collection, store))
    if not ready:
        _with_progress(f"Computing the exact exposure map: {len(collection.queries):,} queries through "
                       f"{ranker_spec(ranker_id).name} (once; cached)...",
                       lambda p: prepare_exposure(collection, ranker_id, store, progress=p))
    return _get_exposure_setup(spec, ranker_id)


@st.cache_resource(show_spinner=False, max_entries=2)
def _get_latent_space(spec: str, encoder_id: str):
    from eqi_core.decoder.space import open_space

    return open_space(get_collection(spec), get_store(), encoder_id)


def latent_space_or_stop(spec: str, encoder_id: str):
    """The encoder's latent space with its decoders (first build shows progress), or a clear error."""
    from eqi_core.decoder.space import open_space

    collection = get_collection(spec)
    store = get_store()
    try:
        if not _dense_space_ready(encoder_id, collection, store):
            _with_progress(f"Encoding passages and logged queries with {ranker_spec(encoder_id).name} (once; cached)...",
                           lambda p: open_space(collection, store, encoder_id, progress=p))
        return _get_latent_space(spec, encoder_id)
    except DataError as exc:
        st.error(str(exc))
        st.stop()


def figure_downloads(fig, name: str, key: str) -> None:
    """PNG (3x, slide resolution) and SVG rendered by kaleido only when clicked; self-contained HTML."""
    from eqi_core.coverage.export import SLIDE_SCALE, figure_html

    c1, c2, c3, _ = st.columns([1, 1, 1, 5])
    size = {"width": 1000, "height": fig.layout.height or 420}
    c1.download_button("PNG", lambda: fig.to_image(format="png", scale=SLIDE_SCALE, **size), f"{name}.png", "image/png",
                       key=f"{key}_png", icon=":material/image:")
    c2.download_button("SVG", lambda: fig.to_image(format="svg", **size), f"{name}.svg", "image/svg+xml",
                       key=f"{key}_svg", icon=":material/draw:")
    c3.download_button("HTML", lambda: figure_html(fig), f"{name}.html", "text/html", key=f"{key}_html",
                       icon=":material/code:")


def with_progress(label: str, work) -> None:
    """Public form of the live progress wrapper for page-level long work (training, evaluation)."""
    _with_progress(label, work)


def current_ranker():
    """The chosen ranker over the chosen collection; the first build shows a progress bar."""
    spec = st.session_state.get(COLLECTION_KEY, "wordnet")
    ranker_id = st.session_state.get(RANKER_KEY, DEFAULT_RANKER)
    try:
        info = ranker_spec(ranker_id)
        collection = get_collection(spec)
        if not is_indexed(ranker_id, collection, get_store()):
            # Build outside the cached function so the progress bar is live, not replayed.
            _with_progress(f"Indexing {len(collection.passages):,} passages for {info.name}...",
                           lambda p: build_ranker(ranker_id, collection, get_store(), progress=p))
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


# -- deep links --------------------------------------------------------------------------------
# Every page's state lives in the URL: values arriving in the URL (a shared link, a curated
# example) are applied to the widgets before they are drawn; after drawing, the URL is rewritten
# from the widgets, so copying the address bar (or the "Copy link" box) reopens the same view.
_WRITTEN = "_url_written"
URL_NAMES = {COLLECTION_KEY: "collection", RANKER_KEY: "ranker"}


def _incoming() -> dict[str, str]:
    """URL parameters that did not come from our own last rewrite (new link or first load)."""
    current = {k: st.query_params.get(k) for k in st.query_params.keys()}
    return {} if current == st.session_state.get(_WRITTEN) else current


def url_state(spec: dict[str, tuple[str, type, object]]) -> None:
    """Initialise widgets ``{widget_key: (url_name, cast, default)}`` from the URL, else their default."""
    incoming = _incoming()
    for key, (name, cast, default) in spec.items():
        if name in incoming:
            try:
                value = cast(incoming[name])
            except (TypeError, ValueError):
                st.warning(f"Ignoring the link's {name}={incoming[name]!r}: not a valid value.")
                value = default
            st.session_state[key] = value
        else:
            st.session_state.setdefault(key, default)
    st.session_state.setdefault("_url_spec", {}).update({k: (n, c) for k, (n, c, _) in spec.items()})


def as_list(text: str) -> list[str]:
    return [t for t in str(text).split(",") if t]


def _url_value(value) -> str:
    return ",".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)


def sync_url(spec: dict[str, tuple[str, type, object]] | None = None) -> dict[str, str]:
    """Rewrite the URL from the sidebar and the page's widgets; returns the parameters."""
    params = {name: _url_value(st.session_state[key]) for key, name in URL_NAMES.items() if key in st.session_state}
    for key, (name, _cast, _default) in (spec or {}).items():
        if key in st.session_state and st.session_state[key] not in (None, "", []):
            params[name] = _url_value(st.session_state[key])
    if {k: st.query_params.get(k) for k in st.query_params.keys()} != params:
        st.query_params.from_dict(params)
    st.session_state[_WRITTEN] = params
    return params


def copy_link(params: dict[str, str]) -> None:
    """A box with this view's full address (its copy icon puts it on the clipboard)."""
    from urllib.parse import urlencode

    base = (st.context.url or "").split("?")[0]
    with st.popover("Copy link", icon=":material/link:"):
        st.caption("This address reopens exactly this view:")
        st.code(f"{base}?{urlencode(params)}", language=None, wrap_lines=True)


def page_header(title: str, caption: str, url_spec: dict):
    """Title, caption and URL state of a page; returns the column that holds its Copy-link box."""
    url_state(url_spec)
    head, link = st.columns([5, 1])
    head.title(title)
    st.caption(caption)
    return link


def exposure_setup_or_stop(spec: str, ranker_id: str):
    """The EQI setup for the sidebar's choice, or a clear error and the end of the page."""
    try:
        return exposure_setup(spec, ranker_id)
    except DataError as exc:
        st.error(str(exc))
        st.stop()


def sidebar() -> None:
    """Collection and ranker pickers; every page calls this first, so the choice follows the user."""
    incoming = _incoming()
    if "collection" in incoming:
        try:
            st.session_state[_KEPT[COLLECTION_KEY]] = check_within_roots(incoming["collection"])
        except DataError as exc:
            st.warning(f"Ignoring the link's collection: {exc}")
    if "ranker" in incoming and incoming["ranker"] in RANKERS:
        st.session_state[_KEPT[RANKER_KEY]] = incoming["ranker"]
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
