"""Ranker coverage page: per-query comparison and TaSC (do rankers solve the same queries?)."""
import pandas as pd
import streamlit as st

from eqi_core.coverage import MetricMatrix, compute_matrix, tasc_table
from eqi_core.coverage.drilldown import (
    most_relevant_cell,
    passage_ranks,
    query_drilldown,
    query_judgments,
    solved_only_table,
)
from eqi_core.coverage.export import tasc_latex
from eqi_core.coverage.per_query import MEASURE_EXAMPLES
from eqi_core.coverage.significance import CORRECTIONS, p_value_columns, pairwise_tests, readable_tests
from eqi_core.coverage.sources import combine_runs, load_run_files, load_uploaded_runs, run_files_beside
from eqi_core.coverage.tasc import MODES, tasc_weights
from eqi_core.errors import DataError
from eqi_core.figures import coverage as figs
from eqi_core.judged import gold_passage
from eqi_core.loaders.trec import read_qrels
from eqi_core.matching import matched_spans, shared_words
from eqi_core.rankers import RANKERS, release_date_for
from eqi_core.reports import coverage_report
from eqi_core.store import content_digest
from eqi_core.table_export import csv_bytes
from pages._exports import PLOT_CONFIG, clicked_data, figure_downloads
from pages._sidebar import COLLECTION_KEY, sidebar
from pages._state import current_collection, live_run
from pages._text import literal, marked, matched_words_line
from pages._url import as_list, copy_link, link_onward, page_header, sync_url

MEASURES = ["nDCG@10", "RR@10", "R@100", "AP@100", "P@10", "RBP(rel=1)@10"]

sidebar()
collection = current_collection()
if collection is None:
    st.stop()
spec = st.session_state[COLLECTION_KEY]
beside = run_files_beside(collection)
URL = {"cov_live": ("live", as_list, [] if beside else ["bm25", "minilm-l3-onnx"]),
       "cov_measure": ("measure", str, "nDCG@10"), "cov_mode": ("mode", str, "chronological"),
       "cov_query": ("query", str, None)}
link = page_header("Ranker coverage", "Do rankers improve on the same queries, or on different ones? Per-query metrics "
                   "from ir_measures; TaSC (Arabzadeh et al., SIGIR 2023) weighs each query by how badly the reference "
                   "rankers did on it.", URL)


@st.cache_resource(show_spinner="Reading run files...", max_entries=8)
def file_runs(paths: tuple[str, ...]):
    return load_run_files(list(paths))


@st.cache_resource(show_spinner="Reading uploaded runs...", max_entries=8)
def uploaded_runs(files: tuple[tuple[str, bytes], ...]):
    return load_uploaded_runs(list(files))


@st.cache_data(show_spinner=False, max_entries=16)
def paired_tests(values: pd.DataFrame, correction: str, order: tuple[str, ...]) -> pd.DataFrame:
    """``readable_tests(pairwise_tests(...))``, kept per matrix: statsmodels' Holm correction calls
    gc.collect() (0.2 s a call in this process), which every rerun of the page paid twice."""
    return readable_tests(pairwise_tests(values, correction, order=list(order)), correction)


@st.cache_resource(show_spinner=False, max_entries=24)
def figure(name: str, values: pd.DataFrame, args: tuple, texts_of: str, _texts: dict | None = None, **options):
    """``figs.<name>(values, *args, texts=_texts, **options)``, made once per matrix and shared: a
    figure is drawn, never changed, and on WordNet's 13,013 queries the heatmap, the pairwise scatter
    and the TaSC figures took 0.4 s of every rerun of the page (a click anywhere on it). ``texts_of``
    (the collection's fingerprint) stands for the query texts, which are not hashed."""
    make = getattr(figs, name)
    return make(values, *args, **({"texts": _texts} if _texts is not None else {}), **options)


@st.cache_data(show_spinner="Computing per-query metrics...", max_entries=16)
def metric_matrix(_runs, runs_key: str, _qrels, qrels_key: str, measure: str):
    m = compute_matrix(_runs, _qrels, measure)
    return m.values, m.notes, m.measure


@st.cache_data(show_spinner="Computing TaSC with bootstrap intervals...", max_entries=32)
def tasc_for(values: pd.DataFrame, mode: str, dates: tuple, baseline: str | None):
    table, results = tasc_table(values, mode, dict(dates), baseline)
    return table, tasc_weights(results)


# -- inputs ----------------------------------------------------------------------------------
with st.container(border=True):
    st.markdown("**Rankings to compare**")
    c1, c2 = st.columns(2)
    unknown = [r for r in st.session_state["cov_live"] if r not in RANKERS]
    if unknown:
        st.warning(f"Ignoring the link's live ranker {literal(', '.join(map(repr, unknown)))}: expected ids among "
                   f"{', '.join(RANKERS)}.")
        st.session_state["cov_live"] = [r for r in st.session_state["cov_live"] if r in RANKERS]
    live_ids = c1.multiselect("Live rankers on this collection", list(RANKERS), key="cov_live",
                              format_func=lambda r: RANKERS[r].name,
                              help="Each runs every query of the collection once (cached in the store).")
    chosen_files = c1.multiselect("Run files beside the collection", [str(p) for p in beside],
                                  default=[str(p) for p in beside], key="cov_files",
                                  format_func=lambda p: p.rsplit("/", 1)[-1]) if beside else []
    uploads = c2.file_uploader("Upload TREC run files", type=["trec", "run", "txt", "tsv", "gz"], accept_multiple_files=True,
                               key="cov_uploads", help="qid Q0 docid rank score tag, one file per ranker")
    qrels_upload = c2.file_uploader("Qrels (optional; default: the collection's)", type=["txt", "tsv", "qrels", "gz"],
                                    key="cov_qrels")

try:
    upload_items = tuple((f.name, f.getvalue()) for f in uploads or [])
    runs = combine_runs({rid: live_run(spec, rid) for rid in live_ids},
                        file_runs(tuple(chosen_files)) if chosen_files else {},
                        uploaded_runs(upload_items) if upload_items else {})
    if qrels_upload is not None:
        qrels = read_qrels(qrels_upload.name, data=qrels_upload.getvalue())
        qrels_key = content_digest(qrels_upload.getvalue())
    else:
        qrels, qrels_key = collection.qrels, collection.fingerprint
    if len(runs) < 2:
        st.info("Choose at least two rankings: live rankers, run files, or uploads.")
        st.stop()
except DataError as exc:
    st.error(literal(exc))
    st.stop()

c1, c2, c3, c4 = st.columns([2, 2, 2, 3])
if st.session_state["cov_measure"] not in MEASURES:
    MEASURES.append(st.session_state["cov_measure"])
measure = c1.selectbox("Per-query metric", MEASURES, key="cov_measure", accept_new_options=True,
                       help=f"Any ir_measures measure in [0, 1]: {MEASURE_EXAMPLES}")
if st.session_state["cov_mode"] not in MODES:
    st.warning(f"Ignoring mode={literal(repr(st.session_state['cov_mode']))}: expected one of {', '.join(MODES)}.")
    st.session_state["cov_mode"] = MODES[0]
mode = c2.radio("Reference rankers", MODES, key="cov_mode", horizontal=True,
                help="chronological: those released before; all-others: every other ranker")
names = list(runs)
baseline = c3.selectbox("Baseline of the earliest", names, key="cov_baseline",
                        index=names.index("bm25") if "bm25" in names else 0,
                        help="The earliest ranker is compared with this one (the paper uses BM25)")
dates_frame = pd.DataFrame({"ranker": names, "release": [release_date_for(n) for n in names]})
with c4.popover("Release dates", icon=":material/calendar_month:"):
    edited = st.data_editor(dates_frame, key="cov_dates", hide_index=True, disabled=["ranker"],
                            column_config={"release": st.column_config.TextColumn("release (YYYY-MM)")})
dates = tuple(zip(edited["ranker"], edited["release"].fillna("")))

runs_key = content_digest(spec, tuple(live_ids), tuple(chosen_files), tuple((n, content_digest(b)) for n, b in upload_items))
try:
    values, notes, measure_name = metric_matrix(runs, runs_key, qrels, qrels_key, measure)
    table, weights = tasc_for(values, mode, dates, baseline if mode == "chronological" else None)
except DataError as exc:
    st.error(literal(exc))
    st.stop()
for note in notes:
    st.info(literal(note), icon=":material/info:")

# -- TaSC table --------------------------------------------------------------------------------
st.subheader(f"TaSC ({mode}) and mean {literal(measure_name)} over {len(values):,} queries")
shown = table.copy()
for agg in ("max", "mean"):
    shown[f"TaSC {agg} (95% CI)"] = [
        "—" if pd.isna(v) else f"{v:.4f} [{lo:.3f}, {hi:.3f}]"
        for v, lo, hi in zip(table[f"tasc_{agg}"], table[f"tasc_{agg}_lo"], table[f"tasc_{agg}_hi"])]
st.dataframe(shown[["ranker", "release", "mean_metric", "TaSC max (95% CI)", "TaSC mean (95% CI)", "reference"]],
             hide_index=True, width="stretch", column_config={"mean_metric": st.column_config.NumberColumn(f"mean {measure_name}", format="%.4f")})
d1, d2, d3 = st.columns(3)
d1.download_button("Matrix (CSV)", csv_bytes(values, index=True), "per_query_matrix.csv", "text/csv", on_click="ignore", key="dl_matrix")
d2.download_button("TaSC table (CSV)", csv_bytes(table), "tasc.csv", "text/csv", on_click="ignore", key="dl_tasc")
d3.download_button("TaSC table (LaTeX)", tasc_latex(table, measure_name).encode(), "tasc.tex", "text/x-tex", on_click="ignore", key="dl_latex")

# -- figures -------------------------------------------------------------------------------------
def clicked_query(event, queries: set) -> str | None:
    """The query of the bar, point or heatmap cell clicked (its customdata's first entry), if any. (A
    heatmap's own cells report no selection in Streamlit; the heatmap's figure lays clickable points
    over them.)"""
    data = clicked_data(event)
    qid = str(data[0]) if data else None
    return qid if qid in queries else None


def drill_into_click(chart_key: str, event, queries: set) -> None:
    """Open the drill-down below on a clicked query; only a new click, so that a later choice in the
    drill-down's own box is kept over reruns."""
    picked = clicked_query(event, queries)
    if picked is not None and picked != st.session_state.get(f"_{chart_key}_clicked"):
        st.session_state["cov_query"] = st.session_state[f"_{chart_key}_clicked"] = picked


order = list(table["ranker"])  # the TaSC table's order (chronological by default), not the matrix's
tab_sorted, tab_pair, tab_tasc, tab_heat, tab_unsolved = st.tabs(
    ["Per query", "Pairwise", "TaSC", "Heatmap", "Unsolved"])
with tab_sorted:
    fig = figure("sorted_per_query", values[order], (measure_name,), "")  # legend and colours in the table's order
    st.plotly_chart(fig, config=PLOT_CONFIG, key="fig_sorted")
    figure_downloads(fig, "per_query_sorted", "dl_fig_sorted")
with tab_pair:
    p1, p2 = st.columns(2)
    a = p1.selectbox("Ranker A", order, index=len(order) - 1, key="cov_pair_a",  # the latest against the baseline
                     help="A is the later ranker, as in the paired tests below: above 0, A did better")
    b = p2.selectbox("Ranker B", [n for n in order if n != a], key="cov_pair_b")
    st.caption("Click a bar or a point to drill into that query below (a point standing for several queries opens the "
               "first; its hover lists them).")
    left, right = st.columns(2)
    with left:
        fig_pair = figure("pairwise_difference", values, (a, b, measure_name), collection.fingerprint, collection.query_text)
        drill_into_click("fig_pair", st.plotly_chart(fig_pair, config=PLOT_CONFIG, key="fig_pair", on_select="rerun",
                                                     selection_mode="points"), set(values.index))
        figure_downloads(fig_pair, f"pairwise_{a}_{b}", "dl_fig_pair")
    with right:
        fig_scatter = figure("pairwise_scatter", values, (a, b, measure_name), collection.fingerprint, collection.query_text)
        drill_into_click("fig_pair_scatter", st.plotly_chart(fig_scatter, config=PLOT_CONFIG, key="fig_pair_scatter",
                                                             on_select="rerun", selection_mode="points"), set(values.index))
        figure_downloads(fig_scatter, f"pairwise_scatter_{a}_{b}", "dl_fig_pair_scatter")
with tab_tasc:
    tfigs = figure("tasc_figures", table, (measure_name,), "")
    st.plotly_chart(tfigs["bars"], config=PLOT_CONFIG, key="fig_tasc_bars")
    figure_downloads(tfigs["bars"], "tasc_bars", "dl_fig_tasc")
    for agg in ("max", "mean"):  # full width: rankers of the same years crowd together, their names need room
        st.plotly_chart(tfigs[f"bubble_{agg}"], config=PLOT_CONFIG, key=f"fig_bubble_{agg}")
        figure_downloads(tfigs[f"bubble_{agg}"], f"tasc_bubble_{agg}", f"dl_fig_bubble_{agg}")
with tab_heat:
    st.caption("Click a cell to drill into that query below.")
    drill_into_click("fig_heat", st.plotly_chart(
        figure("clustered_heatmap", values[order], (measure_name,), collection.fingerprint, collection.query_text,
               click_hint="click: this query across rankers"),
        config=PLOT_CONFIG, key="fig_heat", on_select="rerun", selection_mode="points"), set(values.index))
    figure_downloads(lambda: figs.clustered_heatmap(values[order], measure_name, texts=collection.query_text),
                     "per_query_heatmap", "dl_fig_heat")  # without the click hint, made when clicked
with tab_unsolved:
    fig_unsolved = figure("solved_by_count", values, (), "")
    st.plotly_chart(fig_unsolved, config=PLOT_CONFIG, key="fig_unsolved")
    figure_downloads(fig_unsolved, "unsolved", "dl_fig_unsolved")

# -- drill-down ------------------------------------------------------------------------------
st.subheader("One query across rankers")
texts = collection.query_text
matrix = MetricMatrix(measure_name, values)
solved_only = {r: matrix.solved_only_by(r) for r in names}
disputed = matrix.most_disputed()
if st.session_state.get("cov_query") not in set(values.index):
    st.session_state["cov_query"] = disputed
qid = st.selectbox("Query", list(values.index), key="cov_query",
                   format_func=lambda q: f"{q}: {texts.get(q, '')[:80]}",
                   help=f"Opens on the query where the rankers' {measure_name} differs most ({disputed}).")
judgments = query_judgments(qrels, qid)
drilldown = query_drilldown({r: runs[r] for r in order}, values, weights, judgments, qid, texts.get(qid, ""),
                            collection.display_text, measure_name)  # what the report shows of this query
st.dataframe(drilldown.metrics, width="stretch", key="cov_query_metrics",
             column_config={measure_name: st.column_config.NumberColumn(format="%.4f")})  # 1.0000 beside 0.0663
if texts.get(qid):  # the query's own text: the pages that ask what it should have been take it from here
    onward = st.container(horizontal=True)
    link_onward(onward, "pages/latent.py", "What should it have asked? (Latent traversal)", ":material/route:",
                query=texts[qid], target=gold_passage(judgments, collection.doc_index))
    link_onward(onward, "pages/suggestions.py", "Better queries (Query suggestions)", ":material/lightbulb:", query=texts[qid])
side = drilldown.ids  # ids and grades for the click
opening = most_relevant_cell(side)
picked = st.dataframe(drilldown.side, hide_index=True, width="stretch", key=f"cov_side_by_side_{qid}",
                      placeholder="—", on_select="rerun", selection_mode="single-cell",
                      selection_default={"selection": {"cells": [opening]}} if opening else None)
empty = [r for r in order if side[r].isna().all()]
if empty:
    st.caption(f"{literal(', '.join(empty))} returned no passage for this query (scored 0).")
cells = [(row, col) for row, col in picked.selection.cells if col in runs and pd.notna(side.at[row, col])]
if cells:
    row, col = cells[0]
    doc = side.at[row, col]
    grade = judgments.get(doc)
    body = collection.display_text(doc)
    query_text = texts.get(qid, "")
    st.markdown(f"**{literal(doc)}** ({'unjudged' if grade is None else f'grade {grade}'}), {literal(col)}'s rank {row + 1}: "
                f"{marked(body, matched_spans(query_text, body)) if body is not None else '*not among the collection passages*'}")
    if body is not None and query_text:
        st.caption(matched_words_line(query_text, shared_words(query_text, body), "it"))
    st.dataframe(passage_ranks({r: runs[r] for r in order}, qid, doc).set_index("ranker").T,
                 width="stretch", key="cov_passage_ranks")
else:
    st.caption("Click a passage id to read it and see where every ranker puts it.")
listed = drilldown.passages
with st.expander(f"All {len(listed)} passages of these top 10s, with their text and every ranker's rank"):
    st.dataframe(listed, hide_index=True, width="stretch", key="cov_listed", placeholder="—",
                 column_config={"passage": st.column_config.TextColumn(width="large")})
with st.expander("Queries solved by only one ranker (metric > 0 for it, 0 for all others)"):
    st.dataframe(solved_only_table(solved_only, texts), hide_index=True, width="stretch")

# -- statistics ------------------------------------------------------------------------------
st.subheader("Paired significance tests")
st.caption("A significant difference in means says nothing about which queries each ranker covers: read it next to TaSC. "
           "A is the later ranker of each pair in the TaSC table's order, so A − B > 0 means it did better.")
correction = st.radio("Multiple-testing correction", CORRECTIONS, horizontal=True, key="cov_correction")
tests = paired_tests(values, correction, tuple(order))
st.dataframe(tests, hide_index=True, width="stretch", key="cov_tests", column_config={
    **{c: st.column_config.NumberColumn(format="%.2e") for c in p_value_columns(tests)},
    "mean A": st.column_config.NumberColumn(format="%.4f"), "mean B": st.column_config.NumberColumn(format="%.4f"),
    "A − B": st.column_config.NumberColumn(format="%+.4f")})

meta = {"collection": collection.name, "collection fingerprint": collection.fingerprint, "qrels": qrels_key,
        "rankings": ", ".join(names), "measure": measure_name, "mode": mode, "baseline": baseline if mode == "chronological" else "—",
        "release dates": ", ".join(f"{r}={d}" for r, d in dates), "bootstrap": "1000 resamples of queries, 95% percentile",
        "multiple-testing correction": correction}


def comparison_report() -> str:
    """The report, made when its button is clicked: its figures and tables took 0.7 s of every rerun."""
    report_figures = [figure("sorted_per_query", values[order], (measure_name,), ""), fig_pair, fig_scatter,  # the pair chosen above
                      *figure("tasc_figures", table, (measure_name,), "").values(), fig_unsolved]
    return coverage_report(table, values, measure_name, meta, report_figures, notes,
                           {r: list(solved_only[r]) for r in names}, texts, tests, drilldown)


st.download_button("Comparison report (HTML, opens offline)", comparison_report, "coverage-report.html", "text/html",
                   on_click="ignore", key="cov_report", type="primary",
                   help=f"The TaSC table, figures and tests, and query {qid} as drilled into above, passages' text included.")

with link:
    copy_link(sync_url(URL))
