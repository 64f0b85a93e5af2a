"""Latent traversal page: walk from a query to a target passage in a dense encoder's space, decode a
reformulation at each step, and see where the target ranks (Adolphs et al., "Decoding a Neural
Retriever's Latent Space for Query Suggestion", EMNLP 2022)."""
import pandas as pd
import streamlit as st

from eqi_core.collection import readable
from eqi_core.decoder.space import ASSETS, DECODER_ALIASES, DECODER_NAMES, decoder_summary, own_samples, shipped_natural_decoders
from eqi_core.decoder.traversal import MODES, traverse
from eqi_core.errors import DataError
from eqi_core.figures.latent import ndcg_curve, suggestion_bars, trajectory, traversal_steps
from eqi_core.rankers import ranker_spec
from eqi_core.suggestion.panel import RANKER_DEPTH, rank_labels, ranker_top, score_with_ranker
from eqi_core.table_export import csv_bytes
from pages._exports import PLOT_CONFIG, clicked_data, figure_downloads
from pages._sidebar import COLLECTION_KEY, sidebar
from pages._state import (
    CURATED_TRAVERSAL_QUERY,
    current_collection,
    latent_encoder,
    latent_space_or_stop,
    sidebar_ranker_beside,
    warn_about_language,
)
from pages._text import code, literal, result_columns
from pages._url import copy_link, flag, link_onward, page_header, sync_url

DECODER_LABELS = {"decoder+rerank": "decoder, hypotheses re-ranked by the encoder", "decoder": "decoder alone (beam search)",
                  "nearest-query": "nearest logged query (baseline)", "word-edit search": "word-edit search (baseline)"}

sidebar()
collection = current_collection()
if collection is None:
    st.stop()
spec = st.session_state[COLLECTION_KEY]
curated = CURATED_TRAVERSAL_QUERY if collection.source.startswith("wordnet") else ""
URL = {"lat_query": ("query", str, collection.first_view_query(curated)), "lat_target": ("target", str, ""),
       "lat_steps": ("k", int, 10), "lat_mode": ("mode", str, "linear"), "lat_decoder": ("decoder", str, "decoder+rerank"),
       "lat_stop": ("stop", flag, False), "lat_weights": ("weights", str, "")}
link = page_header("Latent traversal", "Walk from a query's embedding to a target passage's, decode a query at each "
                   "step, and watch the target climb the ranking: the reformulations a searcher could have typed "
                   "(Adolphs et al., EMNLP 2022).", URL)
encoder_id = latent_encoder("Traversal runs")
if st.session_state.get("lat_decoder") in DECODER_ALIASES:  # links made before the natural decoder
    st.session_state["lat_decoder"] = DECODER_ALIASES[st.session_state["lat_decoder"]]
for key, allowed, default in (("lat_mode", MODES, "linear"), ("lat_decoder", DECODER_NAMES, "decoder+rerank")):
    if st.session_state.get(key) not in allowed:
        st.warning(f"Ignoring {key[4:]}={literal(repr(st.session_state.get(key)))}: expected one of {', '.join(allowed)}.")
        st.session_state[key] = default
if not 1 <= int(st.session_state.get("lat_steps", 10)) <= 20:
    st.warning(f"Ignoring k={literal(st.session_state['lat_steps'])}: the number of steps must be between 1 and 20.")
    st.session_state["lat_steps"] = 10
others = [f.name for f in shipped_natural_decoders(encoder_id)[1:]]  # shipped beside the default, e.g. to compare
if st.session_state.get("lat_weights", "") not in ("", *others):
    st.warning(f"Ignoring weights={literal(repr(st.session_state['lat_weights']))}: expected one of {', '.join(others) or 'none'} "
               "(assets/decoders).")
    st.session_state["lat_weights"] = ""
weights = ""
if others:
    weights = st.selectbox("Decoder weights", ["", *others], key="lat_weights",
                           format_func=lambda n: f"{n}: {decoder_summary(ASSETS / n)}" if n else "the default",
                           help="Other natural-language decoders shipped in assets/decoders for this encoder; each "
                                "one's card (below) says how it was trained and what it measured.")
space = latent_space_or_stop(spec, encoder_id, str(ASSETS / weights) if weights else "")
warn_about_language(space)
own_decoder = space.model.card.get("collection_fingerprint") == collection.fingerprint
on_wordnet = collection.source.startswith("wordnet")
samples_kept, sample_rounds = own_samples(space.model.card.get("corpus", {}))  # trained on its predecessors' samples too
st.caption(f"Decoder model: **{getattr(space.model, 'label', 'decoder')}** "
           + ("(trained on this collection's own query log with `eqi train-decoder`)." if own_decoder else
              f"(`{weights}`, {decoder_summary(ASSETS / weights).split(';')[0]}; see its card below)." if weights else
              "(trained on real search-engine queries and sentences"
              + (f", and on {samples_kept:,} samples of the decoder before it" if sample_rounds == 1 else
                 f", and on {samples_kept:,} samples of the {sample_rounds} decoders before it" if sample_rounds else "")
              + "; see its card below).")
           + (" On WordNet it also beats the WordNet lemma decoder on items neither was trained on (below)."
              if on_wordnet and space.model.card.get("wordnet_comparison") else ""))

# -- query and target ---------------------------------------------------------------------------------
c1, c2 = st.columns(2)
query = c1.text_input("Query (from the log or typed)", key="lat_query", placeholder="a logged query, or any text",
                      help="A logged query uses its judgments for nDCG@10; a typed one treats the target as the relevant passage.")
query_id = collection.find_query(query) if query.strip() else None
gold = space.gold_passage(query_id) if query_id else None
if query.strip():
    c1.caption(f"Logged query {code(query_id)}; gold passage {code(gold)}" if query_id and gold else
               "Logged query without judged passages" if query_id else "Not in the query log: typed query")
    for note in space.typed_notes(query, "query"):
        c1.warning(literal(note), icon=":material/help:")
pattern = c2.text_input("Find a target passage containing", key="lat_find", placeholder="leave empty for the gold passage")
options = list(collection.find_passages(pattern, limit=200)["doc_id"]) if pattern.strip() else []
wanted = st.session_state.get("lat_target") or gold
shown_id = str(wanted).split(": ", 1)[0].removesuffix(" (gold)")
if wanted not in collection.doc_index and shown_id in collection.doc_index:
    # the box's shown label, handed back by Streamlit when the options changed (a new filter): its passage
    wanted = st.session_state["lat_target"] = shown_id
if wanted and wanted not in options:
    options = [wanted] + options
if not options:
    st.info("Type a query from the log (its gold passage becomes the target) or find a target passage.")
    st.stop()
if st.session_state.get("lat_target") not in options:
    st.session_state["lat_target"] = options[0]


def target_text(doc_id: str, missing: str = "(not in the collection)") -> str:
    text = collection.passage_text(doc_id)
    return missing if text is None else text


target = c2.selectbox("Target passage", options, key="lat_target",
                      format_func=lambda d: f"{d}{' (gold)' if d == gold else ''}: {readable(target_text(d))[:80]}")
st.markdown(f"> **Target** {literal(target)}: {literal(readable(target_text(target, '')))}")
if target in collection.doc_index:
    link_onward(st, "pages/exposure.py", "Which logged queries expose the target? (Exposure)", ":material/visibility:",
                passage=target)

p1, p2, p3, p4 = st.columns([2, 2, 3, 2])
steps = p1.slider("Steps K", 1, 20, key="lat_steps", help="q_k = q + (k/K)(d - q); the paper used up to 20")
mode = p2.radio("Path", MODES, key="lat_mode", horizontal=True, help="linear: Eq. 1 in raw space; slerp: along the sphere")
method = p3.selectbox("Decoder", DECODER_NAMES, key="lat_decoder", format_func=DECODER_LABELS.get)
stop = p4.checkbox("Stop when the target is first", key="lat_stop")
with link:
    copy_link(sync_url(URL))


@st.cache_resource(show_spinner=False, max_entries=64)
def _results() -> dict:
    return {}


params = (spec, encoder_id, weights, query.strip(), target, steps, mode, method, bool(stop))
results = _results()
if params not in results:
    bar = st.progress(0.0, text=f"Decoding {steps + 1} points with {DECODER_LABELS[method]}...")
    try:
        trav = traverse(space, query, target, steps, mode, method, query_id, bool(stop),
                        lambda done, total: bar.progress(done / total, text=f"Decoded step {done - 1} of {total - 1}"))
    except DataError as exc:
        bar.empty()
        st.error(literal(exc))
        st.stop()
    bar.empty()
    if len(results) > 64:
        results.pop(next(iter(results)))
    results[params] = trav
trav = results[params]
frame = trav.steps
other = sidebar_ranker_beside(encoder_id)  # the sidebar's ranker scores every decoded step too
if other is not None:
    other_key = (*params, other.id)
    if other_key not in results:
        results[other_key] = score_with_ranker(frame, other, space.qrels_for(query_id, target), target,
                                               text_column="decoded")
    frame = results[other_key]

# -- summary ----------------------------------------------------------------------------------------------
hit = trav.first_top1()
m1, m2, m3, m4 = st.columns(4)
original_rank = int(space.ranks(trav.query_emb, space.passage_index(target))[0])
m1.metric("Target rank for the query as typed", original_rank)
reform = trav.reformulations
best_rank = int(trav.best()["target_rank"])
m2.metric("Best rank of a reformulation", best_rank, delta=int(original_rank - best_rank) or None)
m3.metric("Best nDCG@10 of a reformulation", f"{reform['ndcg10'].max():.3f}" if len(reform) else "none")
m4.metric("Steps decoded", len(frame))
already = "**The query as typed already ranks the target first.** " if original_rank == 1 else ""
if hit is not None:
    found = f"“{literal(hit['decoded'])}” (step {int(hit['step'])} of {steps})"
    st.success(f"{already}The first reformulation that does too: {found}." if already else
               f"**What should have been asked:** {found} ranks the target first.", icon=":material/lightbulb:")
else:
    best = trav.best()
    st.info(f"{already}No step ranks the target first; the best is “{literal(best['decoded'])}” at rank "
            f"{int(best['target_rank'])} (step {int(best['step'])}).", icon=":material/info:")
if other is not None:
    ranks = frame[f"gold_rank_{other.id}"]
    found = frame[(ranks == 1).fillna(False) & ~frame["original"]]
    label = rank_labels(frame, other.id).iloc[0]
    as_typed = ("the query as typed does not retrieve the target" if label == "not retrieved"
                else f"the query as typed ranks the target {label.replace('> ', 'beyond ')}")
    st.caption(f"Under the sidebar's ranker, {ranker_spec(other.id).name}: {as_typed}; "
               + (f"the first step that ranks it first is {int(found['step'].iloc[0])}, “{literal(found['decoded'].iloc[0])}”."
                  if len(found) else "no reformulation ranks it first.")
               + f" Its nDCG@10 and the target's rank (within its top {RANKER_DEPTH}) are the table's last two columns.")

# -- steps table, then the map and the per-step chart -------------------------------------------------------
def pick_clicked_step(chart_key: str) -> None:
    """A click on a step in the map or the per-step chart (a point whose customdata starts with its
    step) shows that step's results: a callback, so the step box below takes it before it is drawn."""
    data = clicked_data(st.session_state.get(chart_key))
    if data and isinstance(data[0], (int, float)) and not isinstance(data[0], bool):
        st.session_state["lat_step_pick"] = int(data[0])


# the table takes the page's width: in a half-width column the decoded text, its source and the ranks fell
# past the table's edge behind a horizontal scroll
columns = ["step", "original", "decoded", "target_words", "source", "target_rank", "ndcg10", "cos_query", "cos_target"]
shown = frame[columns + ([f"ndcg10_{other.id}", f"gold_rank_{other.id}"] if other is not None else [])].rename(
    columns={"original": "repeats query", "target_words": "words from target", "target_rank": "target rank",
             "ndcg10": "nDCG@10", "cos_query": "cos(q)", "cos_target": "cos(d)"})
narrow = other is not None  # two more columns: the text columns give way so that all stay in view
if other is not None:
    shown = shown.assign(**{f"gold_rank_{other.id}": rank_labels(frame, other.id)}).rename(
        columns={f"ndcg10_{other.id}": f"nDCG@10 ({other.id})", f"gold_rank_{other.id}": f"target rank ({other.id})"})
st.markdown("**Decoded queries along the walk** (select a row, or click a step in the charts below, to see its "
            "results; a step that decodes to the original query is ticked under *repeats query* and never counted "
            "as a reformulation)")
picked = st.dataframe(shown, hide_index=True, on_select="rerun", selection_mode="single-row", key="lat_table",
                      column_config={"step": st.column_config.NumberColumn(width=40 if narrow else 45),
                                     "repeats query": st.column_config.CheckboxColumn(
                                         width=70 if narrow else 105,
                                         help="this step decodes to the original query: not a reformulation"),
                                     "decoded": st.column_config.TextColumn(width=170 if narrow else 280),
                                     "words from target": st.column_config.TextColumn(
                                         width=90 if narrow else 140,
                                         help="the step's words that the target passage holds, as BM25 matches them "
                                              "(stems, stop words left out): a step may near the target by copying it"),
                                     "source": st.column_config.TextColumn(
                                         width=90 if narrow else 185,
                                         help="decoded, corrected (re-ranked by the encoder) or looked up from the log"),
                                     "target rank": st.column_config.NumberColumn(width=70 if narrow else 85),
                                     **({} if other is None else {
                                         f"nDCG@10 ({other.id})": st.column_config.NumberColumn(
                                             format="%.3f", width=100, help=f"nDCG@10 of the step under {ranker_spec(other.id).name}"),
                                         f"target rank ({other.id})": st.column_config.TextColumn(
                                             width=105, help=f"the target's rank for the step under {ranker_spec(other.id).name} "
                                                             f"(within its top {RANKER_DEPTH})")}),
                                     "nDCG@10": st.column_config.NumberColumn(format="%.3f", width=70 if narrow else 75),
                                     "cos(q)": st.column_config.NumberColumn(format="%.3f", width=50 if narrow else 60),
                                     "cos(d)": st.column_config.NumberColumn(format="%.3f", width=50 if narrow else 60)})
st.download_button("Steps as CSV", csv_bytes(frame), "traversal_steps.csv", on_click="ignore", key="lat_csv",
                   icon=":material/download:")
left, right = st.columns([1, 1])
with left:
    from eqi_core.projection import trajectory_map

    with st.spinner("Fitting the UMAP map of the neighbourhood (the first map in a process compiles UMAP)..."):
        points, path = trajectory_map(space, trav)
    fig_map = trajectory(points, path)
    st.plotly_chart(fig_map, config=PLOT_CONFIG, key="lat_map", on_select=lambda: pick_clicked_step("lat_map"),
                    selection_mode="points")
    figure_downloads(fig_map, "traversal_map", "lat_map_dl")
with right:
    fig_steps = traversal_steps(frame)
    st.plotly_chart(fig_steps, config=PLOT_CONFIG, key="lat_steps_fig", on_select=lambda: pick_clicked_step("lat_steps_fig"),
                    selection_mode="points")
    figure_downloads(fig_steps, "traversal_steps", "lat_steps_dl")

# -- one step's results ---------------------------------------------------------------------------------------
rows = getattr(getattr(picked, "selection", None), "rows", None) or []
step_options = list(frame["step"])
if rows and rows != st.session_state.get("_lat_table_rows"):  # a new click in the steps table picks the step
    st.session_state["lat_step_pick"] = int(rows[0])
elif st.session_state.get("_lat_step_walk") != params or st.session_state.get("lat_step_pick") not in step_options:
    st.session_state["lat_step_pick"] = int(hit["step"]) if hit is not None else int(trav.best()["step"])  # a new walk
st.session_state["_lat_step_walk"], st.session_state["_lat_table_rows"] = params, rows
step = st.selectbox("Results of step", step_options, key="lat_step_pick",
                    format_func=lambda k: f"{k}: {frame['decoded'].iloc[k]}")
by = None
if other is not None:
    by = st.radio("Top 10 by", (ranker_spec(encoder_id).name, ranker_spec(other.id).name), horizontal=True, key="lat_top_by")
if other is not None and by == ranker_spec(other.id).name:
    top = ranker_top(other, collection, frame["decoded"].iloc[step], space.qrels_for(query_id, target), target, 10)
else:
    top = space.judged_top(trav.decoded_emb[step], trav.query_id, target, 10)
st.dataframe(top, hide_index=True, key="lat_top", column_config=result_columns(), placeholder="unjudged")

# -- decode box --------------------------------------------------------------------------------------------------
st.subheader("Decode a passage")
st.caption("Paste any passage: queries decoded from its embedding, and where the passage would rank for each "
           "among this collection's passages.")
pasted = st.text_area("Passage", key="lat_decode_text", height=90, placeholder="e.g. sloping land beside a body of water")
d1, d2 = st.columns([3, 1])
decode_with = d1.selectbox("Decoder", DECODER_NAMES, key="lat_decode_method", format_func=DECODER_LABELS.get)
n_decoded = d2.number_input("Queries", 1, 10, 5, key="lat_decode_n")
if pasted.strip():
    for note in space.typed_notes(pasted, "passage"):
        st.warning(literal(note), icon=":material/help:")
    try:
        decoded = space.decode_text(pasted, decode_with, int(n_decoded))
    except DataError as exc:
        st.error(literal(exc))
    else:
        st.dataframe(decoded, hide_index=True, key="lat_decoded",
                     column_config={"cos to passage": st.column_config.NumberColumn(format="%.3f")})

# -- how good is the decoder ----------------------------------------------------------------------------------------
card = space.model.card
with st.expander("About this decoder: training data and evaluation (eqi eval-decoder)"):
    if card.get("arch"):
        corpus = card.get("corpus", {})
        runs = card.get("trained_on", [])
        st.caption(f"{getattr(space.model, 'label', '')} for {card.get('encoder', '?')}: {card.get('warm_start', '')}, "
                   f"{card.get('trainable_parameters', 0):,} trained parameters; corpus of {corpus.get('queries_train', 0):,} "
                   f"real queries and {corpus.get('sentences_train', 0):,} passage sentences "
                   + (f"plus {samples_kept:,} of a decoder's own samples " if sample_rounds == 1 else
                      f"plus {samples_kept:,} of decoders' own samples ({sample_rounds} rounds) " if sample_rounds else "") +
                   f"({corpus.get('queries_heldout', 0):,} queries held out). Trained by `{card.get('command', '')}` on "
                   f"{', '.join(r['device'] for r in runs) or '?'} in {card.get('train_seconds', 0):.0f} s. "
                   f"Checkpoint `{card.get('_folder')}`.")
        if getattr(space.model, "lexicon", None) is not None:
            st.caption(f"Decodes known words only: {len(space.model.lexicon):,} words of its training text and "
                       "WordNet (no held-out item), no content word twice (`lexicon.txt.gz`; the evaluation's "
                       "'decoder (no word list)' row is the same weights without it).")
    else:
        st.caption(f"Trained on {card.get('collection', '?')} for {card.get('encoder', '?')}: "
                   f"{card.get('data', {})}; {card.get('parameters', 0):,} parameters. Checkpoint `{card.get('_folder')}`.")
    natural = card.get("natural_metrics")
    if natural:
        st.markdown("**Natural-language evaluation** (held-out queries and passages; decoder alone, encoder in the loop "
                    "and baselines reported apart; non-word and repeat shares of outputs)")
        st.dataframe(pd.DataFrame(natural["summary"]).T, key="lat_eval_natural")
        if natural.get("by_source"):
            st.markdown("**Round trip by query source** (the paper's F1 0.75 / cosine 0.96 are on MS MARCO queries; "
                        "the other logs hold titles, claims and multi-hop questions)")
            st.dataframe(pd.DataFrame(natural["by_source"]), key="lat_eval_by_source", hide_index=True,
                         column_config={c: st.column_config.NumberColumn(format="%.3f") for c in ("token_f1", "cosine")}
                         | {"words": st.column_config.NumberColumn(format="%.1f")})
    compared = card.get("wordnet_comparison")
    if compared and on_wordnet:
        st.markdown(f"**On WordNet, against the WordNet lemma decoder** (both alone, on held-out items neither was "
                    f"trained on: {compared['settings']['n_queries']} lemma queries, {compared['settings']['n_passages']} "
                    f"glosses; `{compared.get('command', 'eqi eval-decoder --natural --on-wordnet')}`)")
        st.dataframe(pd.DataFrame(compared["summary"]).T, key="lat_eval_wordnet")
    metrics = card.get("metrics")
    if not metrics and not natural:
        st.info("No evaluation in this decoder's card yet: run `eqi eval-decoder --write-card <folder>`.")
    elif metrics:
        st.markdown(f"Held-out samples: {metrics.get('samples')}")
        earlier = {"neural": "decoder (alone)", "neural+guided": "word-edit search (earlier pools)"}  # names in older cards
        st.dataframe(pd.DataFrame(metrics["summary"]).T.rename(index=earlier), key="lat_eval_table",
                     column_config={c: st.column_config.NumberColumn(format="%.3f") for c in
                                    ("token_f1", "cosine", "top1", "top3", "top5")})
        curve = pd.DataFrame(metrics["curve"])
        e1, e2 = st.columns(2)
        e1.plotly_chart(ndcg_curve(curve), config=PLOT_CONFIG, key="lat_eval_curve")
        e2.plotly_chart(suggestion_bars(pd.DataFrame(metrics["suggestions"]).T.drop(columns="self_bleu", errors="ignore")),
                        config=PLOT_CONFIG, key="lat_eval_sugg")
