"""The Collection page's "Add your data" panel: uploads go into the artifact store (checked by the
loaders first; a bad file is one line and leaves nothing) and appear in the sidebar at once."""
from __future__ import annotations

import streamlit as st

from eqi_core.errors import DataError
from eqi_core.loaders.registry import LOG_SEPARATOR
from eqi_core.uploads import store_beir_zip, store_collection_files, store_query_log
from pages._sidebar import use_collection
from pages._state import get_store
from pages._text import code, literal


def _switch_to(spec: str, what: str) -> None:
    use_collection(spec)
    st.session_state["_upload_done"] = f"{what} added: now selected in the sidebar as {code(spec)}."
    st.rerun()


def add_your_data(current_spec: str) -> None:
    """Three ways in: a BEIR zip; passages + query log (+ qrels); another query log for this collection."""
    done = st.session_state.pop("_upload_done", None)
    if done:
        st.success(done, icon=":material/check_circle:")
    with st.expander("Add your data: a collection, or another query log for this one", icon=":material/upload_file:"):
        st.caption("Files are read here and kept in the artifact store under their content hash (up to 200 MB each); "
                   "nothing leaves this machine.")
        beir, files, log = st.tabs(["BEIR zip", "Passages + query log", "Query log for this collection"])
        with beir:
            up = st.file_uploader("A BEIR zip (corpus.jsonl, queries.jsonl, qrels/*.tsv)", type=["zip"], key="up_beir")
            if up is not None and st.button("Add the collection", key="up_beir_add", type="primary"):
                try:
                    _switch_to(store_beir_zip(get_store(), up.name, up.getvalue()), f"Collection {up.name}")
                except DataError as exc:
                    st.error(literal(exc))
        with files:
            label = st.text_input("Name", key="up_label", placeholder="my collection")
            passages = st.file_uploader("Passages: JSONL (_id, text[, title]) or CSV/TSV (id, text[, title])",
                                        type=["jsonl", "csv", "tsv", "gz"], key="up_passages")
            queries = st.file_uploader("Query log: TSV (qid, text[, count]), CSV or JSONL", type=["tsv", "txt", "csv", "jsonl", "gz"],
                                       key="up_queries")
            qrels = st.file_uploader("Qrels (optional): TREC (qid iter docid rel) or TSV", type=["txt", "tsv", "qrels", "gz"],
                                     key="up_qrels")
            if passages is not None and queries is not None and st.button("Add the collection", key="up_files_add",
                                                                          type="primary"):
                try:
                    spec = store_collection_files(get_store(), label or passages.name.split(".")[0],
                                                  (passages.name, passages.getvalue()), (queries.name, queries.getvalue()),
                                                  (qrels.name, qrels.getvalue()) if qrels is not None else None)
                    _switch_to(spec, f"Collection {label or passages.name}")
                except DataError as exc:
                    st.error(literal(exc))
        with log:
            st.caption("Search this collection's passages with another system's queries, e.g. the MS MARCO log over "
                       "the TREC DL 2019 passages. A count column weights exposure and retrievability.")
            up_log = st.file_uploader("Query log: TSV (qid, text[, count]), CSV or JSONL", type=["tsv", "txt", "csv", "jsonl", "gz"],
                                      key="up_log")
            if up_log is not None and st.button("Use this log", key="up_log_add", type="primary"):
                try:
                    path = store_query_log(get_store(), up_log.name, up_log.getvalue())
                    base = current_spec.split(LOG_SEPARATOR)[0]
                    _switch_to(f"{base}{LOG_SEPARATOR}{path}", f"Query log {up_log.name}")
                except DataError as exc:
                    st.error(literal(exc))
