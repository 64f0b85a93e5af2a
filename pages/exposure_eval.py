"""Exposure evaluation page: EQI methods on held-out passages (paper Table 2), RELQ over patience
parameters, rank-size, retrievability, query traits, training size and an expanding query log."""
import streamlit as st

from eqi_core.errors import DataError
from eqi_core.exposure.audit import min_document_frequency, query_traits, rank_size, summarise_retrievability, trait_probabilities
from eqi_core.exposure.evaluate import (
    UNDEFINED_TEST_NOTE,
    cached_table2,
    expanding_log,
    patience_grid,
    table2_available,
    training_size_grid,
    ttests_at,
    untrained_shares,
)
from eqi_core.exposure.learned import TrainingConfig
from eqi_core.exposure.relq import relq_rbp
from eqi_core.exposure.setup import default_n_dq, degenerate_settings
from eqi_core.figures import exposure as figs
from eqi_core.rankers import ranker_spec
from eqi_core.table_export import csv_bytes
from pages._exports import PLOT_CONFIG, clicked_data, figure_downloads
from pages._progress import with_progress
from pages._rankings import SOURCE_KEY, exposure_rankings_and_setup, small_log_notice
from pages._sidebar import COLLECTION_KEY, RANKER_KEY, sidebar
from pages._state import current_collection, passages_first
from pages._text import literal
from pages._url import copy_link, page_header, sync_url, within

sidebar()
collection = current_collection()
if collection is None:
    st.stop()
spec, ranker_id = st.session_state[COLLECTION_KEY], st.session_state[RANKER_KEY]
URL = {"ev_ntest": ("ntest", int, 500), "ev_ndq": ("ndq", int, default_n_dq(len(collection.queries))),
       "ev_steps": ("steps", int, 2000), SOURCE_KEY: ("log", str, "")}
link = page_header("Exposure evaluation", f"EQI methods against the exact exposure map of {ranker_spec(ranker_id).name} "
                   "on passages held out from training. RELQ_RBP,RBP(γ_q→d, γ_d→q) weighs each found query by how high "
                   "it shows the passage (searcher patience γ_q→d) and how high it is listed (auditor patience γ_d→q).", URL)
rankings, setup = exposure_rankings_and_setup(collection, spec, ranker_id)

for key, low, high in (("ev_ntest", 50, 5000), ("ev_ndq", 1, 200), ("ev_steps", 100, 20000)):
    within(key, low, high)
c1, c2, c3 = st.columns(3)
n_test = c1.number_input("Held-out test passages", 50, 5000, step=50, key="ev_ntest")
n_dq = c2.number_input("n_d→q", 1, 200, step=10, key="ev_ndq")
for warning in degenerate_settings(len(collection.queries), len(collection.passages), setup.depth, int(n_dq),
                                   setup.exposure.every_query_shows_every_passage()):
    st.warning(warning, icon=":material/warning:")
small_log_notice(collection, ranker_id, "pages/exposure_eval.py", "This evaluation on the MS MARCO queries")
steps = c3.number_input("Training steps (batches of 1,000 triples)", 100, 20000, step=100, key="ev_steps")
with link:
    copy_link(sync_url(URL))
config = TrainingConfig(n_dq=int(n_dq), steps=int(steps))
try:
    if not table2_available(setup, int(n_test), int(n_dq), config):
        offer = st.empty()  # cleared once computed: "not computed yet" must not sit above the results
        with offer.container():
            st.info(f"This evaluation has not been computed yet: it {passages_first(setup)}tunes BM25-reverse and "
                    "trains the Append and Residual heads (a few minutes on 2 cores), then is cached.")
            if not st.button("Run the evaluation", key="ev_run", type="primary"):
                st.stop()
        with_progress("Evaluating EQI methods (tuning, training, retrieval)...",
                      lambda p: cached_table2(setup, int(n_test), int(n_dq), config, p))
        offer.empty()
    res = cached_table2(setup, int(n_test), int(n_dq), config)
except DataError as exc:
    st.error(literal(exc))
    st.stop()

st.subheader(f"Table 2: mean RELQ over {res['test_passages']:,} held-out passages")
st.dataframe(res["table"].style.format("{:.3f}"), width="stretch", key="ev_table2")
st.download_button("Table 2 (CSV)", csv_bytes(res["table"], index=True), "table2.csv", on_click="ignore", key="ev_dl_t2")
st.caption(f"BM25-tuned: k1 = {res['bm25_tuning']['k1']}, b = {res['bm25_tuning']['b']} (grid search on 300 training "
           "passages). One-tailed paired t-tests on RELQ_RBP,RBP(0.5,0.9) against dense-reverse:")
st.dataframe(res["ttests"].style.format({"mean_diff": "{:+.3f}", "t": "{:.1f}", "p_one_tailed": "{:.2g}"}, na_rep="—"),
             hide_index=True, width="stretch", key="ev_ttests")
if res["ttests"]["p_one_tailed"].isna().any():
    st.caption(UNDEFINED_TEST_NOTE)

lists, test = res["lists"], res["test_docs"]
names = [n for n in lists if n != "Brute force"]


@st.cache_data(show_spinner="Computing RELQ over the patience grid...", max_entries=8)
def grids(key: str, methods: tuple[str, ...]):
    return {m: patience_grid(setup.exposure, test, lists[m], int(n_dq)) for m in methods}


@st.cache_data(show_spinner="Paired t-tests at the clicked patiences...", max_entries=16)
def tests_at(key: str, gamma_qd: float, gamma_dq: float, n: int):
    return ttests_at(setup.exposure, test, lists, relq_rbp(gamma_qd, gamma_dq, n), setup.dense_reverse().name)


@st.cache_data(show_spinner=False, max_entries=8)
def sizes(key: str):
    """Paper Figure 4's rank-size curves, kept per evaluation (0.1 s of every rerun otherwise)."""
    return rank_size(setup.exposure, test, {n: lists[n] for n in names})


@st.cache_data(show_spinner=False, max_entries=16)
def trait_frame(key: str, traits_key: str, by: str, bins: tuple | None):
    """Paper Figure 3's probabilities per query trait, kept per evaluation and grouping (0.15 s)."""
    return trait_probabilities(setup.exposure, test, {n: lists[n] for n in names}, traits(traits_key), by,
                               list(bins) if bins else None)


@st.cache_data(show_spinner="Counting query traits...", max_entries=4)
def traits(key: str):
    q_texts = list(collection.queries["text"])
    return query_traits(q_texts, min_document_frequency(q_texts, setup.texts))


tab_heat, tab_size, tab_retr, tab_traits, tab_train = st.tabs(
    ["Patience heatmaps", "Rank-size", "Retrievability", "Query traits", "Training size & growing log"])
with tab_heat:
    pair = st.multiselect("Methods", names, default=[n for n in names if n.startswith("dense")][:1] + ["Residual"],
                          max_selections=2, key="ev_heat_methods")
    if pair:
        event = st.plotly_chart(figs.relq_heatmaps(grids(res["artifact"], tuple(pair)),
                                                   click_hint="click: paired t-tests at these patiences"),
                                config=PLOT_CONFIG, key="ev_heat", on_select="rerun", selection_mode="points")
        figure_downloads(lambda: figs.relq_heatmaps(grids(res["artifact"], tuple(pair))),  # without the click hint
                         "relq_patience_heatmaps", "ev_heat_dl")
        cell = clicked_data(event)
        if cell and len(cell) >= 2:
            g_qd, g_dq = round(float(cell[0]), 1), round(float(cell[1]), 1)
            st.markdown(f"**At γ_q→d {g_qd:g}, γ_d→q {g_dq:g}** (the clicked cell): each method's mean RELQ and its "
                        "one-tailed paired t-test against dense-reverse, as Table 2's at (0.5, 0.9)")
            cell_tests = tests_at(res["artifact"], g_qd, g_dq, int(n_dq))
            st.dataframe(cell_tests.style.format(
                {"mean RELQ": "{:.3f}", "mean_diff": "{:+.3f}", "t": "{:.1f}", "p_one_tailed": "{:.2g}"}, na_rep="—"),
                hide_index=True, width="stretch", key="ev_cell_tests")
            if cell_tests["p_one_tailed"].isna().any():
                st.caption(UNDEFINED_TEST_NOTE)
        else:
            st.caption("Click a cell for each method's mean RELQ and paired t-test against dense-reverse at its patiences.")
with tab_size:
    rank_size_fig = figs.rank_size(sizes(res["artifact"]))  # not "rank_size": sizes() calls that function
    st.plotly_chart(rank_size_fig, config=PLOT_CONFIG, key="ev_rank_size")
    figure_downloads(rank_size_fig, "rank_size", "ev_rank_size_dl")
with tab_retr:
    cutoff = st.slider("Cutoff c", 1, setup.depth, min(10, setup.depth), key="ev_cutoff")
    summary = summarise_retrievability(setup.exposure, cutoff)
    st.caption(f"{summary.never_retrieved:.1%} of {len(summary.values):,} passages are in no query's top {cutoff}; "
               f"the most retrievable is in {int(summary.values.max()):,} queries' top {cutoff}.")
    lorenz = figs.lorenz_curve(summary.curve, summary.gini)
    st.plotly_chart(lorenz, config=PLOT_CONFIG, key="ev_lorenz")
    figure_downloads(lorenz, f"retrievability_lorenz_c{cutoff}", "ev_lorenz_dl")
with tab_traits:
    by = st.radio("Group queries by", ["length", "min_df"], horizontal=True, key="ev_trait",
                  format_func=lambda b: "length (words)" if b == "length" else "rarity (minimum document frequency)")
    frame = trait_frame(res["artifact"], collection.fingerprint, by, (1, 2, 3, 4, 6) if by == "length" else None)
    trait_fig = figs.trait_curves(frame, by)
    st.plotly_chart(trait_fig, config=PLOT_CONFIG, key="ev_traits")
    figure_downloads(trait_fig, f"query_traits_{by}", "ev_traits_dl")
with tab_train:
    st.caption("Each cell trains a Residual head (cached); the growing-log lines are evaluated without retraining.")
    # results are kept with the settings they were computed for: another collection, ranker or setting
    # must not show this one's curves
    settings = (spec, rankings, int(n_test), int(n_dq), int(steps))

    def on_click(label: str, key: str, working: str, compute, figure, note=lambda result: "") -> None:
        """A long computation behind a button; its figure (and ``note`` on its result, if any) stays shown
        for these settings only."""
        if st.button(label, key=key):
            holder = {}
            try:
                with_progress(working, lambda p: holder.update(result=compute(p)))
            except DataError as exc:  # e.g. a setting no head can be trained under: said, the page goes on
                st.error(literal(exc))
                return
            st.session_state[f"{key}_result"] = (settings, holder["result"])
        kept = st.session_state.get(f"{key}_result")
        if kept is not None and kept[0] == settings:
            drawn = figure(kept[1])
            st.plotly_chart(drawn, config=PLOT_CONFIG, key=f"{key}_fig")
            figure_downloads(drawn, figure.__name__, f"{key}_dl")
            said = note(kept[1])
            if said:
                st.caption(said)

    on_click("Compute the training-size grid", "ev_grid", "Training Residual heads for the grid...",
             lambda p: training_size_grid(setup, test, base=config, n_dq=int(n_dq), progress=p), figs.training_size)
    on_click("Simulate a growing query log", "ev_expand", "Training on part of the log, evaluating as it grows...",
             lambda p: expanding_log(setup, test, base=config, n_dq=int(n_dq), progress=p), figs.expanding_log,
             untrained_shares)
