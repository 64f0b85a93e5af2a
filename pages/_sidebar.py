"""The sidebar every page draws first: collection and ranker pickers whose choice follows the user."""
from __future__ import annotations

from pathlib import Path

import streamlit as st

from eqi_core.errors import DataError
from eqi_core.loaders import discover_collections
from eqi_core.loaders.registry import LOG_SEPARATOR, check_within_roots
from eqi_core.rankers import DEFAULT_RANKER, RANKERS
from pages._text import code, literal
from pages._url import URL_NAMES, incoming

COLLECTION_KEY = "collection_spec"
RANKER_KEY = "ranker_id"
assert set(URL_NAMES) == {COLLECTION_KEY, RANKER_KEY}
# Widget state is dropped when a page without the widget runs; these keys keep the choice.
_KEPT = {COLLECTION_KEY: "_kept_collection_spec", RANKER_KEY: "_kept_ranker_id"}
# A choice made by the app (an upload, a link) bumps the widget's generation: the browser then gets a
# new widget showing it, instead of reconciling a server-set value with its own (a stale value sent
# back on the next rerun would silently switch the collection back).
_GENERATION = "_sidebar_generation"
_LEFT_PAGES_MODE = "_left_streamlit_pages_mode"


def widget_key(key: str) -> str:
    """The sidebar widget's key for ``key`` (COLLECTION_KEY or RANKER_KEY) in this session."""
    return f"{key}__widget{st.session_state.get(_GENERATION, 0)}"


# Page state that names one collection's queries, passages or files. A new collection drops it, so each
# page opens on the new collection's own defaults (a link's values still apply, after the sidebar): kept,
# WordNet's "hair" and its gold sense would follow the user to a collection that has neither.
COLLECTION_BOUND = ("search_query", "eff_find", "passage_filter", "query_filter", "browse_queries", "browse_passages",
                    "browse_judged", "exp_doc", "exp_find", "exp_ndq", "ev_ndq", "lat_query", "lat_target", "lat_find",
                    "lat_step_pick", "sug_query", "cov_files", "cov_query")


def _forget_collection_state() -> None:
    for key in COLLECTION_BOUND:
        st.session_state.pop(key, None)


def _keep(key: str) -> None:
    if key == COLLECTION_KEY and st.session_state[widget_key(key)] != st.session_state.get(_KEPT[key]):
        _forget_collection_state()
    st.session_state[_KEPT[key]] = st.session_state[widget_key(key)]


def _choose(key: str, value: str) -> None:
    if st.session_state.get(_KEPT[key]) != value:
        if key == COLLECTION_KEY and _KEPT[key] in st.session_state:
            _forget_collection_state()
        st.session_state[_KEPT[key]] = value
        st.session_state[_GENERATION] = st.session_state.get(_GENERATION, 0) + 1


def use_collection(spec: str) -> None:
    """Select a collection in the sidebar from a page (e.g. after an upload); takes effect on rerun."""
    _choose(COLLECTION_KEY, spec)


def _through_app_navigation() -> None:
    """On a fresh server, until some session has run app.py's ``st.navigation``, Streamlit runs a
    deep link (``/suggestions?...``) in its older ``pages/`` mode: the page alone, under an automatic
    menu that lists this folder's helper modules as pages ("exports", "sidebar"...), for the whole
    session. Leave that mode and rerun: the same page then runs through app.py's navigation (same
    URL path, same page hash). ``PagesManager.uses_pages_directory`` is the flag Streamlit itself
    clears in ``st.navigation``; where a Streamlit version lacks it, nothing happens. Once per
    session at most: AppTest sets the flag again before every run, and a rerun there would drop a
    clicked button."""
    from streamlit.runtime.pages_manager import PagesManager

    if getattr(PagesManager, "uses_pages_directory", None) and not st.session_state.get(_LEFT_PAGES_MODE):
        st.session_state[_LEFT_PAGES_MODE] = True
        PagesManager.uses_pages_directory = False
        st.rerun()


def sidebar() -> None:
    """Collection and ranker pickers; every page calls this first, so the choice follows the user."""
    from pages._state import get_store

    _through_app_navigation()
    arriving = incoming()
    if "collection" in arriving:
        try:
            _choose(COLLECTION_KEY, check_within_roots(arriving["collection"]))
        except DataError as exc:
            st.warning(f"Ignoring the link's collection: {literal(exc)}")
    if "ranker" in arriving and arriving["ranker"] in RANKERS:
        _choose(RANKER_KEY, arriving["ranker"])
    from eqi_core.uploads import uploaded_collections

    options = {**discover_collections(), **uploaded_collections(get_store())}
    specs = list(options.values())
    current = st.session_state.setdefault(_KEPT[COLLECTION_KEY], "wordnet")
    ranker = st.session_state.setdefault(_KEPT[RANKER_KEY], DEFAULT_RANKER)
    if current not in specs:
        specs.append(current)
        options[current] = current
    labels = {v: k for k, v in options.items()}

    def label(spec: str) -> str:
        base, sep, log = spec.partition(LOG_SEPARATOR)
        return f"{labels.get(base, base)} + log {Path(log).name}" if sep else labels.get(spec, spec)

    for key, value in ((COLLECTION_KEY, current), (RANKER_KEY, ranker)):
        st.session_state[widget_key(key)] = value  # re-drawn on every page with the kept choice
    st.session_state[COLLECTION_KEY] = st.sidebar.selectbox(
        "Collection", specs, key=widget_key(COLLECTION_KEY), on_change=_keep, args=(COLLECTION_KEY,),
        format_func=label, help="WordNet is embedded; add BEIR / MS MARCO folders with EQI_DATA_ROOTS")
    st.session_state[RANKER_KEY] = st.sidebar.selectbox(
        "Ranker", list(RANKERS), key=widget_key(RANKER_KEY), on_change=_keep, args=(RANKER_KEY,),
        format_func=lambda r: RANKERS[r].name, help="; ".join(f"{r.name}: {r.description}" for r in RANKERS.values()))
    st.sidebar.caption(f"Artifact store: {code(get_store().root)}")
