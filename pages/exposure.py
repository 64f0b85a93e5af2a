"""Exposure page: which queries expose a passage, exactly and by each approximate EQI method."""
import numpy as np
import pandas as pd
import streamlit as st

from eqi_core.errors import DataError
from eqi_core.exposure.audit import passage_retrievability, retrievability_extremes
from eqi_core.exposure.learned import TrainingConfig
from eqi_core.exposure.lookup import (
    change_summary,
    exact_exposure,
    exposure_change,
    passage_exposure,
    patience_grids,
    what_a_query_shows,
    what_a_query_shows_says,
)
from eqi_core.exposure.relq import relq_exh_ndcg, relq_rbp
from eqi_core.exposure.setup import degenerate_settings, listed_n_dq
from eqi_core.figures.exposure import exposure_bars, exposure_change_scatter, relq_heatmaps, retrievability_chart
from eqi_core.matching import change_overlap_line, shared_words, with_shared_words, word_overlap_line
from eqi_core.rankers import ranker_spec
from eqi_core.reports import exposure_report
from eqi_core.table_export import csv_bytes
from pages._exports import PLOT_CONFIG, clicked_data, figure_downloads
from pages._progress import with_progress
from pages._rankings import SOURCE_KEY, compare_with, exposure_rankings_and_setup, small_log_notice
from pages._sidebar import COLLECTION_KEY, RANKER_KEY, sidebar
from pages._state import current_collection, exposure_setup_or_stop, latent_space_or_stop, passages_first
from pages._text import literal, matched_words_line, result_columns
from pages._url import copy_link, incoming, link_onward, page_header, sync_url, within

DEFAULT_PASSAGE = {"wordnet": "08420278-n"}  # "a financial institution that accepts deposits..."

sidebar()
collection = current_collection()
if collection is None:
    st.stop()
spec, ranker_id = st.session_state[COLLECTION_KEY], st.session_state[RANKER_KEY]
URL = {"exp_doc": ("passage", str, DEFAULT_PASSAGE.get(spec)), "exp_nqd": ("nqd", int, 100),
       "exp_ndq": ("ndq", int, listed_n_dq(len(collection.queries))),
       "exp_gqd": ("gqd", float, 0.5), "exp_gdq": ("gdq", float, 0.9), SOURCE_KEY: ("log", str, ""),
       "exp_text": ("text", str, ""), "exp_compare": ("compare", str, None)}
LINKED_TEXT_LIMIT = 2_000  # characters of pasted text a link carries (longer addresses break on some servers)
PASTE = "Paste a new passage"
link = page_header("Exposure", f"Which logged queries put a passage in {ranker_spec(ranker_id).name}'s top results, "
                   "and how high? Exact answer by brute force over the whole query log; approximate answers by reverse "
                   "retrieval and by learned exposure heads (Li, Biega, Mitra et al., WWW 2022).", URL)
rankings, setup = exposure_rankings_and_setup(collection, spec, ranker_id)

# -- the passage -------------------------------------------------------------------------------
if incoming().get("text"):  # a link to a pasted passage opens on it
    st.session_state["exp_source"] = PASTE
source = st.radio("Passage", ["From the collection", PASTE], horizontal=True, key="exp_source")
doc_id, text = None, None
if source == "From the collection":
    wanted = st.session_state.get("exp_doc")  # from a link, or the curated default
    if wanted is not None and wanted not in collection.doc_index and incoming().get("passage") == wanted:
        st.warning(f"The link's passage {literal(repr(wanted))} is not in {literal(collection.name)}; pick one below.")
    c1, c2 = st.columns([1, 2])
    pattern = c1.text_input("Find passages containing", key="exp_find", placeholder="a word or phrase of the passage")
    found = collection.find_passages(pattern, limit=200)
    options = list(found["doc_id"])
    # where no passage is curated, the page opens on the one the most queries show (ranker by ranker)
    opened_on = setup.exposure.most_exposed() if spec not in DEFAULT_PASSAGE else None
    if (wanted is None or wanted not in collection.doc_index) and opened_on is not None:
        wanted = st.session_state["exp_doc"] = opened_on[0]
    if wanted is not None and wanted in collection.doc_index and wanted not in options:
        options = [wanted] + options
    if st.session_state.get("exp_doc") not in options:
        st.session_state["exp_doc"] = options[0] if options else None
    if not options:
        st.warning("No passage matches; change the filter.")
        st.stop()
    doc_id = c2.selectbox("Passage", options, key="exp_doc", format_func=lambda d: f"{d}: {(collection.display_text(d) or '')[:90]}")
    st.markdown(f"> {literal(collection.display_text(doc_id) or '')}")
    if opened_on is not None and doc_id == opened_on[0]:
        st.caption(f"The passage the most logged queries show in their top 10 ({opened_on[1]:,}): the page "
                   "opens on it; pick any other above.")
else:
    text = st.text_area("A passage that is not in the collection", key="exp_text", height=100,
                        placeholder="Paste a document: which logged queries would show it, and how high?")
    if len(text or "") > LINKED_TEXT_LIMIT:
        st.caption(f"Copy link leaves out pasted text over {LINKED_TEXT_LIMIT:,} characters.")

@st.cache_resource(show_spinner=False, max_entries=32)
def figure(name: str, *args, **kwargs):
    """``relq_heatmaps`` or ``exposure_bars`` of these arguments, made once and shared: each is drawn
    twice a run (with the click hint on the page, without it for the downloads and the report) and
    was drawn again on every rerun, a click anywhere on the page; figures are never changed once drawn."""
    return {"relq_heatmaps": relq_heatmaps, "exposure_bars": exposure_bars}[name](*args, **kwargs)


# -- parameters ----------------------------------------------------------------------------------
def use_clicked_patiences() -> None:
    """A click on a cell of the patience heatmaps (below) sets the two patience sliders to that cell's
    (gamma_q->d, gamma_d->q): a callback, so the sliders take the values before they are drawn again."""
    data = clicked_data(st.session_state.get("exp_patience"))
    if data and len(data) >= 2:
        st.session_state["exp_gqd"], st.session_state["exp_gdq"] = round(float(data[0]), 1), round(float(data[1]), 1)
        st.session_state["exp_patience_open"] = True  # the heatmaps stay in view


for key, low, high in (("exp_nqd", 1, setup.depth), ("exp_ndq", 1, 100), ("exp_gqd", 0.1, 1.0), ("exp_gdq", 0.1, 1.0)):
    within(key, low, high)
c1, c2, c3, c4 = st.columns(4)
n_qd = c1.slider("n_q→d: results a searcher sees", 1, setup.depth, key="exp_nqd")
n_dq = c2.slider("n_d→q: exposing queries listed", 1, 100, key="exp_ndq")
gamma_qd = c3.slider("γ_q→d: searcher patience", 0.1, 1.0, step=0.1, key="exp_gqd")
gamma_dq = c4.slider("γ_d→q: auditor patience", 0.1, 1.0, step=0.1, key="exp_gdq")
with link:
    left_out = "exp_doc" if source == PASTE else "exp_text"
    long_text = source == PASTE and len(text or "") > LINKED_TEXT_LIMIT
    copy_link(sync_url({k: v for k, v in URL.items() if k != left_out and not (long_text and k == "exp_text")}))
for warning in degenerate_settings(len(collection.queries), len(collection.passages), n_qd, n_dq,
                                   setup.exposure.every_query_shows_every_passage()):
    st.warning(warning, icon=":material/warning:")
small_log_notice(collection, ranker_id, "pages/exposure.py", "This passage's exposure to the MS MARCO queries",
                 **({"passage": doc_id} if doc_id else {}))

methods = {"BM25-reverse": setup.bm25_reverse(), setup.dense_reverse().name: setup.dense_reverse()}
try:
    held_out = setup.test_passages()
    for arch in ("residual", "append"):
        config = TrainingConfig(arch=arch)
        if setup.learned_available(config, held_out):
            model, _ = setup.learned(config, held_out)
            methods[model.name] = model
        elif st.button(f"Train the {arch.title()} exposure head ({passages_first(setup)}about a minute on 2 cores)",
                       key=f"exp_train_{arch}"):
            training = f"{arch.title()} (Algorithm 1 + RankNet)..."
            with_progress(f"Encoding the passages, then training {training}" if passages_first(setup) else f"Training {training}",
                          lambda p, c=config: setup.learned(c, held_out, p))
            st.rerun()
except DataError as exc:
    st.warning(f"Learned heads unavailable: {literal(exc)}")

if source == PASTE and not (text or "").strip():
    st.info("Paste a passage to see which queries would expose it.")
    st.stop()
if text is not None and ranker_spec(ranker_id).family == "learned-sparse" and not setup.sparse_queries_ready():
    with_progress(f"Encoding the query log with {ranker_spec(ranker_id).name} (once; kept in the store)...",
                  setup.sparse_queries)  # what a pasted passage's exact exposure is compared with
main_spec = relq_rbp(gamma_qd, gamma_dq, n_dq)
try:
    result = passage_exposure(setup, methods, [main_spec, relq_rbp(1.0, 1.0, n_dq), relq_exh_ndcg(n_dq)], n_qd, n_dq,
                              doc_id=doc_id, text=text)
except DataError as exc:
    st.error(literal(exc))
    st.stop()
for note in result.notes:
    st.info(literal(note), icon=":material/info:")

# -- results -----------------------------------------------------------------------------------------
if result.exact is not None:
    m1, m2, m3 = st.columns(3)
    m1.metric("Exposing queries (exact)", f"{len(result.exact):,}")
    m2.metric("Best rank reached", int(result.exact["rank"].min()) if len(result.exact) else "—")
    m3.metric("Queries with it in the top 10", int((result.exact["rank"] <= 10).sum()))
    if "searches" in result.exact.columns:
        st.caption(f"The log counts {int(result.exact['searches'].sum()):,} searches by these queries; "
                   f"weighted exposure {int(result.exact['weighted exposure'].sum()):,}.")
patience_fig = None
if result.relq is not None:
    st.dataframe(result.relq.style.format("{:.3f}"), width="stretch", key="exp_relq")
    grids = patience_grids(result, n_dq)
    if grids:
        with st.expander("RELQ of this passage over all patience parameters (paper Figure 5)", key="exp_patience_open",
                         on_change="rerun"):  # a widget, so that it stays open when a click on a cell reruns the page
            st.caption("Each method's RELQ_RBP,RBP for this passage, recomputed for every pair of patiences; the "
                       f"outlined cell is the sliders' choice (γ_q→d {gamma_qd:g}, γ_d→q {gamma_dq:g}), the table's first "
                       "column. A method that keeps its colour along a row or column does not depend on that patience. "
                       "Click a cell to use its patiences.")
            title = "This passage's RELQ over patience parameters"
            patience_fig = figure("relq_heatmaps", grids, title, mark=(gamma_qd, gamma_dq))  # the downloads' and report's
            st.plotly_chart(figure("relq_heatmaps", grids, title, mark=(gamma_qd, gamma_dq), click_hint="click: use these patiences"),
                            config=PLOT_CONFIG, key="exp_patience", on_select=use_clicked_patiences,
                            selection_mode="points")
            figure_downloads(patience_fig, "relq_patience", "exp_patience_fig")

names = list(result.lists)
chosen = st.multiselect("Methods in the chart", names, default=names[-2:] if len(names) > 2 else names, key="exp_chart_methods")
if chosen and result.exact is not None:
    relq_values = result.relq[str(main_spec)].to_dict() if result.relq is not None else None
    fig = figure("exposure_bars", {n: result.lists[n] for n in chosen}, n_qd, relq_values, str(main_spec))  # the downloads'
    st.plotly_chart(figure("exposure_bars", {n: result.lists[n] for n in chosen}, n_qd, relq_values, str(main_spec),
                           click_hint="click: what this query shows (below)"),
                    config=PLOT_CONFIG, key="exp_bars", selection_mode="points",
                    on_select=lambda: st.session_state.update(exp_picked="exp_bars"))
    figure_downloads(fig, "exposure_bars", "exp_fig")

cols = st.columns(1 + len(names))
if result.exact is not None:
    cols[0].markdown("**Exact (brute force)**")
    if len(result.exact):
        cols[0].dataframe(result.exact[["query", "rank"]].head(n_dq), hide_index=True, key="exp_exact",
                          on_select=lambda: st.session_state.update(exp_picked="exp_exact"), selection_mode="single-row")
    else:  # a sentence, as in the report, not a bare header
        cols[0].caption(f"No logged query shows this passage in its top {n_qd}.")
    exact_words = with_shared_words(result.exact, result.text)  # the CSV's column and the line below, once
    cols[0].download_button("CSV", csv_bytes(exact_words),
                            "exact_exposing_queries.csv", on_click="ignore", key="exp_dl_exact")
for col, name in zip(cols[1:] if result.exact is not None else cols, names):
    col.markdown(f"**{name}**")
    col.dataframe(result.lists[name][["query", "rank"]], hide_index=True, key=f"exp_list_{name}",
                  on_select=lambda key=f"exp_list_{name}": st.session_state.update(exp_picked=key), selection_mode="single-row",
                  placeholder=f"> {n_qd}", column_config={"rank": st.column_config.NumberColumn(
                      "rank", format="%d", help=f"the passage's rank for this query (exact); '> {n_qd}': this query "
                                                f"does not show it in its top {n_qd}")})
    col.download_button("CSV", csv_bytes(result.lists[name].astype({"rank": "Int64"})), f"{name}.csv",
                        on_click="ignore", key=f"exp_dl_{name}")

if result.exact is not None and len(result.exact):
    st.caption(word_overlap_line(exact_words, result.text))  # lexical or not: what a dense ranker adds

# -- what one listed query shows ---------------------------------------------------------------------------
TOP_SHOWN = 10  # a selected query's results shown: its top 10, then this passage's row if it is deeper


def clicked_bar_query():
    """The query of the bar clicked in the exposure chart (its customdata's query id), as a row of
    the lists above, or None."""
    data = clicked_data(st.session_state.get("exp_bars"))
    if not data or len(data) < 3:
        return None
    for frame in [result.exact, *result.lists.values()]:
        if frame is not None and len(hit := frame[frame["query_id"].astype(str) == str(data[2])]):
            return hit.iloc[0]
    return None


def picked_query():
    """The query selected in one of the lists above or clicked in the chart (the last one), or None."""
    shown = {"exp_exact": result.exact.head(n_dq) if result.exact is not None else None,
             **{f"exp_list_{name}": frame for name, frame in result.lists.items()}}
    last = st.session_state.get("exp_picked")
    if last == "exp_bars" and (bar := clicked_bar_query()) is not None:
        return bar
    for key in sorted(shown, key=lambda k: k != last):  # the last clicked first; then any selection
        state = st.session_state.get(key) or {}  # a dict-like selection state: {"selection": {"rows": [...]}}
        rows = (state.get("selection") or {}).get("rows", [])
        if rows and shown[key] is not None and int(rows[0]) < len(shown[key]):
            return shown[key].iloc[int(rows[0])]
    return None


shown_query = None
if result.lists or result.exact is not None:
    chosen_query = picked_query()
    if chosen_query is not None:
        top = what_a_query_shows(setup, result, str(chosen_query["query_id"]), TOP_SHOWN)
        says = what_a_query_shows_says(result, str(chosen_query["query_id"]), ranker_spec(rankings).name, TOP_SHOWN)
        shown_query = (str(chosen_query["query_id"]), str(chosen_query["query"]), says, top)  # for the audit report
        st.markdown(f"**What “{literal(chosen_query['query'])}” shows**: {literal(says)}")
        st.dataframe(top, hide_index=True, width="stretch", key="exp_query_top", column_config=result_columns(),
                     height=35 * (len(top) + 1) + 3)  # every row in view, the passage's last
        passage_text = text if doc_id is None else collection.display_text(doc_id) or ""
        st.caption(matched_words_line(str(chosen_query["query"]), shared_words(str(chosen_query["query"]), passage_text),
                                      "this passage" if doc_id is not None else "the pasted passage"))
        if doc_id is not None:  # how the query would have to change to show the passage first
            link_onward(st, "pages/latent.py", f"Walk from “{chosen_query['query']}” to this passage (Latent traversal)",
                        ":material/route:", query=chosen_query["query"], target=doc_id)
    else:
        st.caption("Select a query in any list above, or click its bar in the chart, to see what it shows, down to this "
                   "passage.")

# -- under another ranker ------------------------------------------------------------------------------------
change_fig, change, change_line, other_setup, other_exact = None, None, "", None, None
st.subheader("Under another ranker")
st.caption("Who keeps, gains and loses sight of this passage when the ranking changes: its exact exposing queries "
           f"under {ranker_spec(rankings).name} and under another ranker, side by side (top {n_qd} of each query).")
other = compare_with(st, "exp_compare", rankings, "choose a ranker",
                     "Its exact exposure map is computed once (with progress) and kept in the store.")
if other is not None and result.exact is None:
    st.info(f"{ranker_spec(rankings).name} has no exact exposing queries for pasted text: nothing to compare.")
elif other is not None:
    other_setup = exposure_setup_or_stop(spec, other, other if ranker_spec(other).family == "dense" else None)
    if text is not None and ranker_spec(other).family == "learned-sparse" and not other_setup.sparse_queries_ready():
        with_progress(f"Encoding the query log with {ranker_spec(other).name} (once; kept in the store)...",
                      other_setup.sparse_queries)
    other_exact, _ = exact_exposure(other_setup, n_qd, doc_id, text)
    name_a, name_b = ranker_spec(rankings).name, ranker_spec(other).name
    change = with_shared_words(exposure_change(result.exact, other_exact, name_a, name_b), result.text)
    change_line = change_summary(change, name_a, name_b) + ". " + change_overlap_line(change, result.text, name_a, name_b)
    st.markdown(change_line)
    change_fig = exposure_change_scatter(change, name_a, name_b, n_qd)
    st.plotly_chart(change_fig, config=PLOT_CONFIG, key="exp_change_fig")
    figure_downloads(change_fig, "exposure_change", "exp_change_dl")
    outside = f"—: not in that ranker's top {n_qd} for this query"
    st.dataframe(change, hide_index=True, width="stretch", key="exp_change", placeholder="—",
                 column_config={f"rank ({name_a})": st.column_config.NumberColumn(help=outside),
                                f"rank ({name_b})": st.column_config.NumberColumn(help=outside),
                                "places up": st.column_config.NumberColumn(
                                    format="%+d", help=f"rank under {name_a} minus rank under {name_b}: above 0, "
                                                       f"{name_b} shows it higher")})
    st.download_button("CSV", csv_bytes(change), "exposure_change.csv", on_click="ignore", key="exp_change_csv")

# -- queries no log holds yet ------------------------------------------------------------------------------
generated = None
st.subheader("Queries no log holds yet")
if ranker_spec(rankings).build is None:
    st.caption("A result log cannot rank queries it does not hold: choose a ranker that runs here to decode new ones.")
else:
    st.caption(f"Queries decoded from MiniLM-L6's space around this passage (its embedding, halfway to its exposing "
               f"queries, a small ball around it), each ranked exactly by {ranker_spec(rankings).name}: which unseen "
               f"searches would show it in the top {n_qd}, and how high.")
    g1, g2 = st.columns([1, 3])
    n_generate = g1.number_input("Decoded queries", 5, 60, 20, step=5, key="exp_gen_n")
    wanted = (spec, rankings, doc_id, text, int(n_generate), n_qd)
    if g2.button("Decode candidate queries", key="exp_gen", icon=":material/auto_awesome:"):
        from eqi_core.exposure.generative import generate_exposure

        try:
            space = latent_space_or_stop(spec, "minilm-l6")
            with st.spinner("Decoding and ranking..."):
                st.session_state["_exp_generated"] = (wanted, generate_exposure(setup, space, int(n_generate), n_qd,
                                                                                doc_id=doc_id, text=text,
                                                                                exact=result.exact))
        except DataError as exc:
            st.error(literal(exc))
    done = st.session_state.get("_exp_generated")
    if done and done[0] == wanted:
        generated = g = done[1]  # for the audit report too
        for note in g.notes:
            st.caption(literal(note))
        k1, k2, k3 = st.columns(3)
        k1.metric(f"Unseen queries exposing it (top {n_qd})", len(g.unseen_exposing))
        k2.metric("Exposure from the log", g.logged_total)
        k3.metric("… plus the unseen queries", g.logged_total + g.generated_total, delta=g.generated_total or None)
        shown = g.candidates.rename(columns={"in_log": "in the log", "logged_as": "logged as", "rank": "its rank"})
        shown["its rank"] = shown["its rank"].replace(np.inf, np.nan)  # inf: the ranker does not retrieve it
        st.dataframe(shown, hide_index=True, key="exp_gen_table", placeholder="not retrieved",
                     column_config={"its rank": st.column_config.NumberColumn(format="%d")})
        st.caption("In the log: the log holds the decoded query, word for word or reworded (the same content words, "
                   "or nearly: *logged as* says which query); only the others count as unseen.")
        st.download_button("CSV", csv_bytes(g.candidates), "decoded_exposing_queries.csv",
                           on_click="ignore", key="exp_gen_csv")


def retrievability_extremes_table(summary, n_qd: int, weighted: bool) -> None:
    """The collection's least or most retrievable passages, each one click from its own audit: where
    an auditor looks for content that no query shows (then asks which unseen queries would)."""
    st.markdown(f"**The collection's least and most retrievable passages** (r(d) at n_q→d = {n_qd})")
    which = st.radio("List", ["least", "most"], horizontal=True, key="exp_retr_which",
                     format_func=lambda w: f"{w} retrievable", label_visibility="collapsed")
    extremes = retrievability_extremes(summary, setup.exposure.doc_ids, which, limit=20)
    extremes["passage"] = [collection.display_text(d) or "" for d in extremes["doc_id"]]
    never = int((summary.values == 0).sum())
    if which == "least" and never > len(extremes):
        st.caption(f"{never:,} passages are in no {'search' if weighted else 'query'}'s top {n_qd}; listed: the "
                   f"first {len(extremes)} of them in the collection's order.")
    picked = st.dataframe(extremes, hide_index=True, width="stretch", key=f"exp_retr_{which}", on_select="rerun",
                          selection_mode="single-row", column_config={
                              "doc_id": st.column_config.TextColumn(width=110), "r(d)": st.column_config.NumberColumn(width=60),
                              "less retrievable": st.column_config.NumberColumn(format="percent", width=110,
                                                                                help="share of passages with a lower r(d)"),
                              "passage": st.column_config.TextColumn(width=560)})
    rows = picked.selection.rows
    if rows and str(extremes["doc_id"].iloc[rows[0]]) != doc_id:
        chosen_doc = str(extremes["doc_id"].iloc[rows[0]])
        st.button(f"Audit {literal(chosen_doc)} instead", key="exp_retr_open", icon=":material/visibility:",
                  on_click=lambda: st.session_state.update(exp_source="From the collection", exp_doc=chosen_doc, exp_find=""))
    st.download_button("r(d) of every passage (CSV)",  # made when clicked
                       lambda: csv_bytes(pd.DataFrame({"doc_id": setup.exposure.doc_ids, "r(d)": summary.values})),
                       "retrievability.csv", "text/csv", on_click="ignore", key="exp_retr_csv")


figures = ([fig] if chosen and result.exact is not None else []) + [f for f in (patience_fig, change_fig) if f is not None]
retr = None
if doc_id is not None or result.exact is not None:  # a pasted passage: its exact exposing queries give its r(d)
    with st.expander("Retrievability: where this passage sits among all passages"):
        weighted = "count" in collection.queries.columns  # a log with frequencies: each search counts
        weights = collection.query_weights if weighted else None
        summary, retr = passage_retrievability(setup.exposure, n_qd, weights, doc_id,
                                               result.exact["query_id"] if doc_id is None else ())
        one = retr["r"] == 1
        who = ("search" if one else "searches") if weighted else ("query" if one else "queries")
        how = f"rank{'s' if one else ''} it" if doc_id is not None else "would rank the pasted passage"
        st.caption(f"r(d) = {retr['r']} {who} {how} within {'its' if one else 'their'} top {n_qd}"
                   + ("" if doc_id is not None else " (placed among the collection's passages as they are)")
                   + f"; {summary.never_retrieved:.1%} of passages are never retrieved; Gini {summary.gini:.3f}.")
        if other_setup is not None:  # "Under another ranker" is open: the same under it, on one chart
            other_summary, other_retr = passage_retrievability(other_setup.exposure, n_qd, weights, doc_id,
                                                               other_exact["query_id"] if doc_id is None else ())
            st.caption(f"Under {ranker_spec(other).name}: r(d) = {other_retr['r']}, "
                       f"{other_retr['share_below']:.1%} of passages less retrievable (under {ranker_spec(rankings).name}: "
                       f"{retr['share_below']:.1%}); {other_summary.never_retrieved:.1%} never retrieved; Gini "
                       f"{other_summary.gini:.3f} against {summary.gini:.3f}.")
            lorenz_fig = retrievability_chart({rankings: (summary, retr), other: (other_summary, other_retr)},
                                              doc_id or "the pasted passage",
                                              {r: ranker_spec(r).name for r in (rankings, other)})
        else:
            lorenz_fig = retrievability_chart({rankings: (summary, retr)}, doc_id or "pasted passage")
        st.plotly_chart(lorenz_fig, config=PLOT_CONFIG, key="exp_lorenz")
        figure_downloads(lorenz_fig, "retrievability", "exp_lorenz_dl")
        figures.append(lorenz_fig)
        retrievability_extremes_table(summary, n_qd, weighted)

meta = {"collection": collection.name, "collection fingerprint": collection.fingerprint, "collection spec": spec,
        "ranker": ranker_spec(rankings).name, "passage": doc_id or "(pasted text)", "n_q->d": n_qd, "n_d->q": n_dq,
        "gamma_q->d": gamma_qd, "gamma_d->q": gamma_dq, "methods": ", ".join(names)}
if change is not None:
    meta["compared with"] = ranker_spec(other).name
# made when clicked: building it (every figure as HTML) took 0.04-0.06 s of every rerun
st.download_button("Audit report (HTML, opens offline)",
                   lambda: exposure_report(result, meta, figures, retr, change, change_line,
                                           [shown_query] if shown_query else [], generated),
                   f"exposure-report-{doc_id or 'pasted'}.html", "text/html", on_click="ignore", key="exp_report", type="primary")
