"""Suggestions page: type a query, see better queries proposed by the suggestion models trained on
latent-traversal rewrites (plain, and with pseudo-relevance feedback) beside RM3, Sampling+QD and
feedback walks (the way to each of the top-5 passages, decoded), each with the dense ranker's nDCG@10
(and the sidebar's ranker's, when that is another one) where the collection judges the query
(Adolphs et al. 2022, Section 4)."""
import re
from pathlib import Path

import pandas as pd
import streamlit as st

from eqi_core.errors import DataError
from eqi_core.figures.suggestion import reformulation_histograms, suggestion_intervals, typical_suggestion_gain
from eqi_core.rankers import ranker_spec
from eqi_core.suggestion.baselines import FEEDBACK_WALKS
from eqi_core.suggestion.model import MODEL_LABELS, find_suggester
from eqi_core.suggestion.panel import (
    CHOICES,
    RANKER_DEPTH,
    feedback_passages,
    ranker_top,
    score_with_ranker,
    suggestion_table,
    with_rank_labels,
)
from eqi_core.table_export import csv_bytes
from pages._exports import PLOT_CONFIG, figure_downloads
from pages._sidebar import COLLECTION_KEY, sidebar
from pages._state import (
    CURATED_SUGGESTION_QUERY,
    current_collection,
    get_store,
    latent_encoder,
    sidebar_ranker_beside,
    suggestion_space_or_stop,
    warn_about_language,
)
from pages._text import change_delta, literal, result_columns
from pages._url import copy_link, link_onward, page_header, sync_url

MODEL_CHOICES = {"prf": "PRF suggester (query + top-5 passages)", "plain": "plain suggester (query only)",
                 "all": "both suggesters + 3 baselines (RM3, Sampling+QD, feedback walks)"}
SHORT_NAMES = {MODEL_LABELS["prf"]: "PRF", MODEL_LABELS["plain"]: "plain", FEEDBACK_WALKS: "walks+QD"}  # fit a metric

sidebar()
collection = current_collection()
if collection is None:
    st.stop()
spec = st.session_state[COLLECTION_KEY]

curated = CURATED_SUGGESTION_QUERY if collection.source.startswith("wordnet") else ""
URL = {"sug_query": ("query", str, collection.first_view_query(curated)), "sug_model": ("model", str, "all")}
link = page_header("Query suggestions", "Better queries for a search, from models trained on the rewrites that latent "
                   "traversal found (the query walked to its gold passage, every step decoded, the successful ones "
                   "kept): with pseudo-relevance feedback (the ranker's top-5 passages) and without.", URL)
encoder_id = latent_encoder("Suggestions are made, and first scored,")
if st.session_state.get("sug_model") not in CHOICES:
    st.warning(f"Ignoring model={literal(repr(st.session_state.get('sug_model')))}: expected one of {', '.join(CHOICES)}.")
    st.session_state["sug_model"] = "all"
space = suggestion_space_or_stop(spec, encoder_id)
warn_about_language(space)

c1, c2 = st.columns([3, 2])
query = c1.text_input("Query", key="sug_query", placeholder="e.g. a query from the log, or your own")
model = c2.selectbox("Suggestions from", CHOICES, key="sug_model", format_func=MODEL_CHOICES.get)
with link:
    copy_link(sync_url(URL))
if not query.strip():
    st.info("Type a query: logged queries with judgments show each suggestion's nDCG@10.")
    st.stop()
for note in space.typed_notes(query, "query"):
    st.warning(literal(note), icon=":material/help:")


@st.cache_resource(show_spinner=False, max_entries=64)
def _tables() -> dict:
    return {}


key = (spec, encoder_id, " ".join(query.split()), model)
tables = _tables()
if key not in tables:
    with st.spinner("Suggesting (decoding and re-encoding candidates; about a second per model)..."):
        try:
            tables[key] = suggestion_table(space, get_store(), query, model)
        except DataError as exc:
            st.error(literal(exc))
            st.stop()
    if len(tables) > 64:
        tables.pop(next(iter(tables)))
table = tables[key]
query_id = collection.find_query(query)
gold = space.gold_passage(query_id) if query_id else None
judged = gold is not None
# The sidebar's ranker, when it is not the space the suggestions are made in, scores them too: a
# searcher may type a suggestion into that engine (BM25, say).
other = sidebar_ranker_beside(encoder_id)
other_name = ranker_spec(other.id).name if other is not None else ""
if other is not None and judged:
    other_key = (*key, other.id)
    if other_key not in tables:
        tables[other_key] = score_with_ranker(table, other, collection.judgments.get(query_id, {}), gold)
    table = tables[other_key]
    st.caption(f"Each suggestion is also scored by the sidebar's ranker, {other_name}: its nDCG@10 and the gold "
               f"passage's rank within its top {RANKER_DEPTH} are the table's last two columns ({other.id}); the "
               f"others are {ranker_spec(encoder_id).name}'s, the space the suggestions are made in.")
if curated and query.strip().lower() == curated:
    st.caption(f"Example: “{curated}”, a query no suggester was trained on, chosen because a "
               "PRF suggestion ranks its gold sense first; the held-out evaluation (below) says how often that happens.")
if judged:
    original = float(table["ndcg10"].iloc[0])
    best = table.iloc[1:].groupby("model")["ndcg10"].max()
    m = st.columns(1 + len(best))
    m[0].metric("nDCG@10 of the query", f"{original:.3f}")
    for col, (name, value) in zip(m[1:], best.items()):
        col.metric(f"Best of {SHORT_NAMES.get(name, name)}", f"{value:.3f}", **change_delta(value, original))
    if other is not None:
        column = f"ndcg10_{other.id}"
        best_row = table.iloc[1:][column].idxmax() if len(table) > 1 else 0
        st.caption(f"Under {other_name}: the query's nDCG@10 {table[column].iloc[0]:.3f}; the best suggestion's "
                   f"{table[column].iloc[best_row]:.3f} ({table['model'].iloc[best_row]}: "
                   f"“{literal(table['suggestion'].iloc[best_row])}”).")
    reach = table.iloc[1:][table["gold_rank"].iloc[1:] == 1]
    if len(reach):
        which = "1 suggestion ranks" if len(reach) == 1 else f"{len(reach)} suggestions rank"
        shown = "" if len(reach) <= 3 else " (the first 3 in the table below)"
        st.success(f"{which} the gold passage {literal(gold)} first{shown}: "
                   + "; ".join(f"“{literal(t)}” ({m})" for t, m in zip(reach["suggestion"][:3], reach["model"][:3])),
                   icon=":material/lightbulb:")
    else:
        st.info(f"No suggestion ranks the gold passage {literal(gold)} first.", icon=":material/info:")
    link_onward(st, "pages/latent.py", "Walk from the query to its gold passage (Latent traversal, the oracle)",
                ":material/route:", query=query, target=gold)
else:
    st.caption("This query has no judgments in the collection: suggestions are shown without nDCG@10.")

if model != "plain":
    readers = "The PRF suggester, RM3 and the feedback walks read" if model == "all" else "The PRF suggester reads"
    with st.expander(f"What feedback they read: the query's top 5 passages in {ranker_spec(encoder_id).name}'s space"):
        st.caption(f"{readers} these passages beside the query; where they are off its topic, so are the suggestions.")
        fed = feedback_passages(space, query)
        st.dataframe(fed if judged else fed.drop(columns=["grade", "target"]), hide_index=True, key="sug_feedback",
                     column_config=result_columns(), placeholder="unjudged")

shown = table.rename(columns={"ndcg10": "nDCG@10", "gold_rank": "gold passage's rank"})
if other is not None and judged:
    shown = with_rank_labels(shown, other.id).rename(
        columns={f"ndcg10_{other.id}": f"nDCG@10 ({other.id})", f"gold_rank_{other.id}": f"gold rank ({other.id})"})
if not judged:
    shown = shown.drop(columns=["nDCG@10", "gold passage's rank"])
st.markdown("**Suggestions** (select a row to see its top results)")
picked = st.dataframe(shown, hide_index=True, on_select="rerun", selection_mode="single-row", key="sug_table",
                      column_config={"nDCG@10": st.column_config.NumberColumn(format="%.3f", help=(
                                         f"nDCG@10 of the suggestion under {ranker_spec(encoder_id).name}")),
                                     "gold passage's rank": st.column_config.NumberColumn(
                                         "gold rank", width=80 if other is not None else None,
                                         help=f"the gold passage's rank for the suggestion under {ranker_spec(encoder_id).name}"),
                                     **({} if other is None else {  # both rankers' columns in view beside the text
                                         "model": st.column_config.TextColumn(width=125),
                                         "rank": st.column_config.NumberColumn(width=45),
                                         "suggestion": st.column_config.TextColumn(width=330),
                                         f"nDCG@10 ({other.id})": st.column_config.NumberColumn(
                                             format="%.3f", width=110, help=f"nDCG@10 of the suggestion under {other_name}"),
                                         f"gold rank ({other.id})": st.column_config.TextColumn(
                                             width=110, help=f"the gold passage's rank for the suggestion under {other_name} "
                                                             "(within its top 100)")})})
st.download_button("Suggestions as CSV", csv_bytes(table), "suggestions.csv", on_click="ignore", key="sug_csv",
                   icon=":material/download:")
rows = getattr(getattr(picked, "selection", None), "rows", None) or []
row = int(rows[0]) if rows else 0
text = table["suggestion"].iloc[row]
by = None
if other is not None:
    by = st.radio("Top 10 by", (ranker_spec(encoder_id).name, other_name), horizontal=True, key="sug_top_by")
st.markdown(f"**Top 10 for** “{literal(text)}” ({table['model'].iloc[row]})")
if other is not None and by == other_name:
    top = ranker_top(other, collection, text, space.qrels_for(query_id, gold or ""), gold or "", 10)
else:
    top = space.judged_top(space.encode([text])[0], query_id, gold or "", 10)
if not judged:
    top = top.drop(columns=["grade", "target"])
else:
    top["target"] = top["target"].str.replace("target", "gold")
st.dataframe(top, hide_index=True, key="sug_top", column_config=result_columns(), placeholder="unjudged")

with st.expander("About the suggestion models: training data and evaluation (eqi train-suggester, eqi eval-suggestions)"):
    cards, rankers = {}, {}
    for kind in ("prf", "plain"):
        try:
            found = find_suggester(kind, space.encoder, get_store())
        except DataError as exc:
            st.caption(str(exc))
            continue
        cards[kind] = found.card
        if found.ranker is not None:
            rankers[kind] = found.ranker.card or {}
    for card in cards.values():
        data = card.get("dataset", {})
        st.caption(f"**{card.get('label')}**: {card.get('parameters', 0):,} parameters, trained on "
                   f"{card.get('training_rewrites', 0):,} successful rewrites of {data.get('queries', 0):,} training "
                   f"queries ({', '.join(data.get('per_collection', {}))}) by `{card.get('command', '')}`. "
                   f"Checkpoint `{card.get('_folder')}`.")
    for ranker in rankers.values():
        pools = ranker.get("pools") or {}
        fitted = ", ".join(f"{name} ({c.get('queries', 0):,} queries, {c.get('candidates', 0):,} candidates)"
                           for name, c in ranker.get("trained_on", {}).items())
        samples = f"{ranker['pool_samples']} samples at the predicted points" if ranker.get("pool_samples") else "its samples"
        st.caption(f"**Its re-ranker** picks the PRF suggestions from {samples} and a sample at each feedback-walk point: "
                   f"a linear model of each candidate ({ranker.get('target', 'its nDCG@10 gain over the query')}), "
                   f"fitted on training queries of "
                   f"{fitted} by `{ranker.get('command', '')}`; {ranker.get('pick', '')}."
                   + (f" Fitted on pools of {pools['candidates']}; {pools['used_on']}." if pools.get("used_on") else ""))
    card = cards.get("prf", {})
    st.caption(f"**Spoken by** the natural decoder `{Path(space.model.card.get('_folder', '')).name}`"
               + (f": {card['speaks_with_why']}." if card.get("speaks_with_why") else "."))
    data = card.get("dataset", {})
    if data.get("figure4"):
        st.markdown(f"**The reformulation dataset** ({data.get('successful_rewrites', 0):,} successful rewrites; "
                    f"{data.get('queries_with_success', 0):.0%} of the walked queries have at least one)")
        fig4 = reformulation_histograms(data["figure4"])
        st.plotly_chart(fig4, config=PLOT_CONFIG, key="sug_fig4")
        figure_downloads(fig4, "reformulation_histograms", "sug_fig4_dl")
    if card.get("evaluation"):
        st.markdown("**Held-out evaluation** (`eqi eval-suggestions`: best-of-k nDCG@10 with bootstrap 95% intervals "
                    "over queries; the oracle walk knows the gold passage and is an upper reference; the rows marked "
                    "*probe* are the query plus a random word, of the top-5 passages or of the collection: what "
                    "best-of-k gives for merely perturbing the query)")
        table = pd.DataFrame(card["evaluation"])
        for name, part in table.groupby("collection", sort=False):
            how = f" (decoding: {part['decoding'].iloc[0]})" if "decoding" in part and part["decoding"].notna().any() else ""
            intervals = suggestion_intervals(part, f"{name}: best of k suggestions{how}")
            st.plotly_chart(intervals, config=PLOT_CONFIG, key=f"sug_eval_{name}")
            figure_downloads(intervals, "best_of_k_" + re.sub(r"[^A-Za-z0-9]+", "_", str(name)).strip("_"), f"sug_eval_{name}_dl")
            if "mean_gain" in part and part["mean_gain"].notna().any():
                st.plotly_chart(typical_suggestion_gain(part, f"{name}: a typical suggestion's nDCG@10 minus the query's"),
                                config=PLOT_CONFIG, key=f"sug_typical_{name}")
            commands = card.get("evaluation_commands")
            if isinstance(commands, dict) and commands.get(name):
                st.caption(f"Measured by `{commands[name]}`")
        st.dataframe(table, hide_index=True, key="sug_eval_table")
