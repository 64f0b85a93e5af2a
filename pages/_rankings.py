"""Where the Exposure pages' rankings come from: the sidebar's ranker, run here, or a system's
result log (a black box: its run files beside the collection or uploaded)."""
from __future__ import annotations

from pathlib import Path

import streamlit as st

from eqi_core.errors import DataError
from eqi_core.exposure.result_logs import PREFIX, result_log_id
from eqi_core.exposure.setup import small_log_note
from eqi_core.loaders.registry import check_path_within_roots, web_log_for
from eqi_core.rankers import RANKERS, ranker_spec
from eqi_core.uploads import list_uploads, store_result_log
from pages._state import exposure_setup_or_stop, get_store
from pages._text import literal

SOURCE_KEY = "exp_log"  # a result log's path ("" = the sidebar's ranker); in the URL as log=


def small_log_notice(collection, ranker_id: str, page: str, label: str, **params) -> None:
    """The note that a log of a few hundred queries says little (``small_log_note``), with the remedy:
    on TREC DL 2019's passages a link to ``page`` on them searched by the MS MARCO queries (the same
    ranker, and ``params``), elsewhere how to add a real log."""
    real_log = web_log_for(collection.source)
    note = small_log_note(len(collection.queries), "search these passages with the MS MARCO passage queries (real Bing "
                          "searches) instead, below" if real_log else "search these passages with a real query log "
                          "instead (Collection page: Add your data, another query log for this collection)")
    if note:
        st.info(literal(note), icon=":material/info:")
        if real_log:
            st.page_link(page, label=label, icon=":material/travel_explore:",
                         query_params={"collection": real_log, "ranker": ranker_id, **params})


def _available_logs(collection) -> dict[str, str]:
    """path -> label of result logs the user can pick: run files beside the collection, uploads."""
    from eqi_core.coverage.sources import run_files_beside

    found = {str(p.resolve()): f"{p.name} (beside the collection)" for p in run_files_beside(collection)}
    for u in list_uploads(get_store(), "result-log"):
        for f in Path(u["path"]).iterdir():
            if f.name != "manifest.json":
                found[str(f.resolve())] = f"{f.name} (uploaded)"
    return found


RUN_HERE = " (the sidebar's ranker, run here)"


def _source_label(source: str, logs: dict[str, str], ranker_id: str) -> str:
    return f"{ranker_spec(ranker_id).name}{RUN_HERE}" if not source else f"Result log: {literal(logs[source])}"


def _as_source(wanted: str, logs: dict[str, str]) -> str:
    """The choice ``wanted`` names. Read before the radio is drawn, the state can hold the radio's shown
    label instead of its value: Streamlit 1.67 hands back the browser's label when no option of the
    widget it knows has it (seen in a browser walk after a page change: "Ignoring the link's result log
    'MiniLM-L6 (dense) (the sidebar's ranker, run here)'"). A label, even one naming another sidebar
    ranker, is the choice it shows; anything else is a path (a link's)."""
    if wanted.endswith(RUN_HERE):
        return ""
    shown = {f"Result log: {literal(label)}": path for path, label in logs.items()}
    return shown.get(wanted, wanted)


def rankings_source(collection, ranker_id: str) -> str:
    """Draw the choice; returns the ranker id to build the exposure map from (``run:<file>`` for a log)."""
    logs = _available_logs(collection)
    wanted = _as_source(st.session_state.get(SOURCE_KEY) or "", logs)
    if wanted != (st.session_state.get(SOURCE_KEY) or ""):
        st.session_state[SOURCE_KEY] = wanted
    if wanted and wanted not in logs:
        try:  # a link may name a result log inside the data roots or the upload folder, nowhere else
            if check_path_within_roots(wanted).is_file():
                logs[wanted] = f"{Path(wanted).name} (from the link)"
        except DataError as exc:
            st.warning(f"Ignoring the link's result log: {literal(exc)}")
    options = [""] + list(logs)
    if wanted not in options:
        st.warning(f"Ignoring the link's result log {literal(repr(wanted))}: not a file beside the collection or uploaded.")
        st.session_state[SOURCE_KEY] = ""
    with st.expander("Rankings: " + (literal(logs.get(st.session_state.get(SOURCE_KEY) or "", "")) or
                                     f"{ranker_spec(ranker_id).name}, run here"), icon=":material/list_alt:"):
        st.radio("Exposure from", options, key=SOURCE_KEY, horizontal=False,
                 format_func=lambda p: _source_label(p, logs, ranker_id),
                 help="A system's result log is a black box's rankings: its file decides who sees what.")
        up = st.file_uploader("Upload a result log: TREC run, or TSV/CSV/Parquet (qid, docid, rank[, score]) over this "
                              "collection's queries", type=["trec", "run", "txt", "tsv", "csv", "parquet", "gz"], key="exp_log_upload")
        if up is not None and st.button("Use this result log", key="exp_log_add"):
            try:
                path = store_result_log(get_store(), up.name, up.getvalue())
            except DataError as exc:
                st.error(literal(exc))
            else:
                st.session_state["_exp_log_pending"] = str(path.resolve())
                st.rerun()
    chosen = st.session_state.get(SOURCE_KEY) or ""
    return result_log_id(chosen) if chosen else ranker_id


def apply_pending_upload() -> None:
    """A just-uploaded log becomes the choice (before the radio is drawn on the rerun)."""
    pending = st.session_state.pop("_exp_log_pending", None)
    if pending:
        st.session_state[SOURCE_KEY] = pending


def exposure_rankings_and_setup(collection, spec: str, ranker_id: str):
    """Both Exposure pages begin here: a just-uploaded log applied, the rankings chosen (the sidebar's
    ranker or a result log), their exposure setup built (or the page stopped with its error), and
    the setup's notes shown. Returns (rankings, setup)."""
    apply_pending_upload()
    rankings = rankings_source(collection, ranker_id)
    setup = exposure_setup_or_stop(spec, rankings, ranker_id if ranker_spec(ranker_id).family == "dense" else None)
    for note in setup.notes:
        st.info(literal(note), icon=":material/info:")
    return rankings, setup


def is_log(source: str) -> bool:
    return source.startswith(PREFIX)


def compare_with(where, key: str, shown: str, placeholder: str, help: str) -> str | None:
    """A "Compare with" choice among the built-in rankers other than ``shown``: none until one is
    chosen (a comparison may build another index or map); a link's unknown ranker, or the one now
    shown, is cleared."""
    others = [r for r in RANKERS if r != shown]
    if st.session_state.get(key) not in others:
        st.session_state[key] = None
    return where.selectbox("Compare with", others, index=None, key=key, placeholder=placeholder,
                           format_func=lambda r: ranker_spec(r).name, help=help)
