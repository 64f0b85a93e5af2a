"""Collection page: counts, length distributions, a passage/query browser and a live search box."""
import hashlib

import pandas as pd
import streamlit as st

from eqi_core.coverage.hardest import MEASURES, ranker_effectiveness
from eqi_core.encoders import cut_note, passages_cut
from eqi_core.errors import DataError
from eqi_core.figures.collection import (
    PER_QUERY_BINS,
    grade_distribution,
    length_distributions,
    per_query_bin,
    per_query_histogram,
    result_grades,
    word_counts,
)
from eqi_core.judged import comparison_line, judged_passages, judged_search, judging_queries, rank_under
from eqi_core.loaders.registry import web_log_demo
from eqi_core.matching import matched_spans, shared_words
from eqi_core.rankers import DEFAULT_RANKER, has_run, ranker_spec
from eqi_core.table_export import csv_bytes
from pages._exports import clicked_data
from pages._rankings import compare_with
from pages._sidebar import COLLECTION_KEY, RANKER_KEY, sidebar
from pages._state import (
    CURATED_SUGGESTION_QUERY,
    CURATED_TRAVERSAL_QUERY,
    current_collection,
    current_ranker,
    get_collection,
    get_store,
    live_run,
    ranker_by_id,
)
from pages._text import code, literal, marked, matched_words_line, result_columns
from pages._uploads import add_your_data
from pages._url import copy_link, link_onward, sync_url, url_state, within

sidebar()
collection = current_collection()
if collection is None:
    st.stop()
URL = {"search_query": ("q", str, collection.first_view_query("bank" if collection.source.startswith("wordnet") else "")),
       "search_k": ("k", int, 10), "search_vs": ("vs", str, None)}
url_state(URL)
WEB_LOG_DEMO_PASSAGE = "2022689"  # chocolate and Nobel prizes, shown to dark-chocolate health queries (README)

head, link = st.columns([5, 1])
head.title(literal(collection.name))
st.caption(f"source {code(collection.source)} · fingerprint {code(collection.fingerprint)}")
for note in [*collection.notes, collection.mis_decoded_note()]:
    if note:
        st.info(literal(note), icon=":material/info:")

if collection.source == "wordnet:20000":
    with st.container(border=True):
        st.markdown("**Start here: questions this workbench answers**")
        e1, e2, e3 = st.columns(3)
        e1.page_link("pages/exposure.py", label="Who sees the river-bank sense of *bank*?",
                     icon=":material/visibility:", query_params={"collection": "wordnet", "ranker": "minilm-l6",
                                                                 "passage": "09213565-n", "ndq": "30"})
        e1.caption("Exposing queries of one sense, exact and approximate (first visit: about 30 s to prepare).")
        e2.page_link("pages/latent.py", label="What should a failing query have asked?",
                     icon=":material/route:", query_params={"collection": "wordnet", "query": CURATED_TRAVERSAL_QUERY,
                                                            "k": "10", "mode": "linear", "decoder": "decoder+rerank"})
        e2.caption(f"Walk from “{CURATED_TRAVERSAL_QUERY}” to its gold sense in MiniLM-L6's space and decode each step.")
        e3.page_link("pages/coverage.py", label="Which ranker solves what others miss?",
                     icon=":material/compare_arrows:",
                     query_params={"collection": "wordnet", "live": "bm25,minilm-l3-onnx,minilm-l6", "mode": "all-others"})
        e3.caption("TaSC and per-query comparison of three live rankers.")
        a1, a2 = st.columns(2)
        a1.page_link("pages/exposure_eval.py", label="Also: do learned heads beat reverse retrieval?",
                     icon=":material/analytics:", query_params={"collection": "wordnet", "ranker": "minilm-l6", "ntest": "1000"})
        a2.page_link("pages/suggestions.py", label="Also: which better query could a searcher type?",
                     icon=":material/lightbulb:", query_params={"collection": "wordnet", "query": CURATED_SUGGESTION_QUERY,
                                                                "model": "all"})

demo = web_log_demo()
if demo and (collection.source == "wordnet:20000" or collection.source.split("#")[0] == demo.split("+log:")[0]):
    # on the default's page and on TREC DL 2019's own: elsewhere a box about another collection confuses
    with st.container(border=True):
        st.markdown("**A realistic audit: which real web queries expose a passage?** TREC DL 2019 passages searched by "
                    "6,980 MS MARCO queries (Bing searches).")
        d1, d2, d3 = st.columns(3)
        for col, ranker_id in ((d1, "minilm-l6"), (d2, "bm25")):
            col.page_link("pages/exposure.py", label=f"Exposure under {ranker_spec(ranker_id).name}",
                          icon=":material/travel_explore:", query_params={"collection": demo, "ranker": ranker_id,
                                                                          "passage": WEB_LOG_DEMO_PASSAGE, "ndq": "20"})
        d3.page_link("pages/exposure.py", label="Who gains it: BM25 vs MiniLM-L6",
                     icon=":material/swap_horiz:", query_params={"collection": demo, "ranker": "bm25", "compare": "minilm-l6",
                                                                 "passage": WEB_LOG_DEMO_PASSAGE, "ndq": "20"})
        st.caption("First visit: under a minute under BM25 (its map and the 6,980 queries' vectors), a few minutes "
                   "under MiniLM-L6 (the 14,581 passages encoded too). A system's own result log "
                   "over these queries can be uploaded on the Exposure page (Rankings).")

@st.cache_resource(show_spinner=False, max_entries=8)
def overview(fingerprint: str, _collection):
    """The collection's counts and its two distribution figures, kept per collection (``fingerprint``
    stands for it): they depend on nothing else, and were computed again on every rerun of the page
    (0.1 s on WordNet's 20,001 passages; figures are never changed once drawn)."""
    c = _collection
    lengths = length_distributions(word_counts(c.passages["text"]), word_counts(c.queries["text"]))
    return c.stats(), lengths, grade_distribution(c.qrels) if len(c.qrels) else None


stats, lengths_figure, grades_figure = overview(collection.fingerprint, collection)
cols = st.columns(5)
cols[0].metric("Passages", f"{stats['passages']:,}")
cols[1].metric("Queries", f"{stats['queries']:,}")
cols[2].metric("Judgments", f"{stats['judgments']:,}")
cols[3].metric("Judged queries", f"{stats['judged_queries']:,}")
cols[4].metric("Judgments / query", stats["mean_judgments_per_query"])

add_your_data(st.session_state.get(COLLECTION_KEY, "wordnet"))


def picked_row(selection, frame) -> int | None:
    """The selected row of a table, if it still exists (a new filter shortens the table)."""
    rows = getattr(getattr(selection, "selection", None), "rows", None) or []
    return int(rows[0]) if rows and int(rows[0]) < len(frame) else None


def passage_detail(doc: str, key: str, query: str | None = None) -> None:
    """A selected passage: its whole text, the queries whose judgments name it, and a link to the
    logged queries that expose it (Exposure); the same from a search result and from Browse. From a
    search, the query's words are marked in the text, as BM25 matches them."""
    judging = judging_queries(collection, doc)
    st.markdown(f"**{literal(doc)}**: " + (f"named by the judgments of {len(judging):,} "
                                            f"{'query' if len(judging) == 1 else 'queries'}" if len(judging) else
                                            "no query's judgments name it"))
    whole = collection.display_text(doc)  # whole, where the table cuts it at its width
    if query is None:
        st.text(whole)
    else:
        st.caption(matched_words_line(query, shared_words(query, whole), "it"))
        st.markdown(marked(whole, matched_spans(query, whole)))
    if len(judging):
        st.dataframe(judging, hide_index=True, width="stretch", key=f"{key}_judging")
    link_onward(st, "pages/exposure.py", "Which logged queries expose it? (Exposure)", ":material/visibility:", passage=doc)


def beside_columns(results) -> list[str]:
    """The columns a comparison adds: where the other ranker puts each passage."""
    return [c for c in results.columns if c.startswith("rank under ")]


def search_columns(results) -> dict:
    """A search's result table: narrow numbers, so the passage gets the width; with a comparison, the
    other ranker's rank of each passage ("—": not in its top k)."""
    return {"rank": st.column_config.NumberColumn("rank", width=50, help=(
                "Equal scores in the order the measures count them (trec_eval's: passage id descending); the "
                "Exposure page's ranks keep the ranker's own order of a tie (passage index)")),
            "judgment": st.column_config.TextColumn("judged", width=90, help="relevance grade in the qrels"),
            "score": st.column_config.NumberColumn("score", format="%.4f", width=75),
            "doc_id": st.column_config.TextColumn("doc_id", width=110),
            "text": st.column_config.TextColumn("passage", width=620 if not beside_columns(results) else 430),
            **{c: st.column_config.NumberColumn(c, width=185, help=f"{c[len('rank under '):]}'s rank of this passage "
                                                                 "for the same query; —: not in its top results")
               for c in beside_columns(results)}}


st.subheader("Search")
ranker = current_ranker()
within("search_k", 1, 100)
left, right, beside = st.columns([4, 1, 2])
query = left.text_input("Query", key="search_query", placeholder="type a query; logged queries show judged grades")
k = right.number_input("Results", min_value=1, max_value=100, key="search_k")
own_id = st.session_state.get(RANKER_KEY, DEFAULT_RANKER)
vs = compare_with(beside, "search_vs", own_id, "another ranker",
                  "Its top results for the same query below, and where each ranker puts the other's passages")
if ranker is not None and query.strip():
    judged = judged_search(collection, ranker, query, int(k))
    other_ranker = ranker_by_id(vs) if vs is not None else None
    other = judged_search(collection, other_ranker, query, int(k)) if other_ranker else None
    if other is not None:  # each list says where the other ranker puts its passages
        judged.results[f"rank under {ranker_spec(vs).name}"] = rank_under(judged.results, other.results)
        other.results[f"rank under {ranker_spec(own_id).name}"] = rank_under(other.results, judged.results)
    for note in dict.fromkeys([*judged.notes, *(other.notes if other is not None else [])]):
        st.warning(literal(note), icon=":material/help:")
    if judged.query_id is None:
        st.caption("Not a logged query: no judgments to show.")
    else:
        n_judged = len(collection.judgments.get(judged.query_id, {}))
        found = int(judged.results["grade"].notna().sum())
        summary = " · ".join(f"{m} {v:.3f}" for m, v in judged.measures.items())
        st.caption(f"Logged query {code(judged.query_id)}: {found} of {n_judged} judged passages in the top {k}. {summary}")
    if judged.results.empty:
        st.warning("No passage shares a term with this query.")
    else:
        st.caption("Select a result to read it in full, see the queries that judge it and who else is shown it.")
        search_id = hashlib.sha1(f"{st.session_state.get(COLLECTION_KEY)}|{ranker.id}|{query}|{k}".encode()).hexdigest()[:12]
        shown = st.dataframe(
            judged.results, hide_index=True, width="stretch", key=f"search_results_{search_id}",
            on_select="rerun", selection_mode="single-row",  # a new query or depth starts unselected
            column_order=["rank", "score", "judgment", "doc_id", "text", *beside_columns(judged.results)],
            column_config=search_columns(judged.results), placeholder="—",
        )
        row = picked_row(shown, judged.results)
        if row is not None:
            passage_detail(str(judged.results["doc_id"].iloc[row]), "search", query)
        st.plotly_chart(result_grades(judged.results), key="search_figure")
    if other is not None:
        st.markdown(f"**{ranker_spec(vs).name}'s top {k}** for the same query: "
                    f"{comparison_line(judged, other, ranker_spec(own_id).name, ranker_spec(vs).name)}.")
        st.dataframe(other.results, hide_index=True, width="stretch", key="search_vs_results", placeholder="—",
                     column_order=["rank", "score", "judgment", "doc_id", "text", *beside_columns(other.results)],
                     column_config=search_columns(other.results))
    if len(judged.missed):
        with st.expander(f"{len(judged.missed):,} judged relevant {'passage' if len(judged.missed) == 1 else 'passages'} "
                         f"not in the top {k}"):
            st.dataframe(judged.missed, hide_index=True, width="stretch")


@st.cache_resource(show_spinner="Scoring every judged query...", max_entries=8)
def _effectiveness(spec: str, ranker_id: str, _run):
    """Keyed by collection and ranker: ``_run`` is that ranker's stored run over the collection."""
    return ranker_effectiveness(_run, get_collection(spec), ranker_spec(ranker_id).name)


def where_the_ranker_fails() -> None:
    """The sidebar's ranker over every judged query: its means, their spread, and the queries it fails
    hardest, each one click from the pages that ask what it should have been."""
    relevant = collection.qrels[collection.qrels["relevance"] > 0]["query_id"].nunique() if len(collection.qrels) else 0
    if ranker is None or relevant == 0:
        return
    name, spec = ranker_spec(ranker.id).name, st.session_state[COLLECTION_KEY]
    st.subheader(f"Where {name} fails")
    if not has_run(ranker.id, collection, get_store()) and st.session_state.get("_eff_asked") != (spec, ranker.id):
        st.caption(f"Runs all {len(collection.queries):,} queries through {name} once (kept in the store), then scores "
                   f"the {relevant:,} with a relevant judgment: nDCG@10, RR@10, R@100 and the queries it fails hardest.")
        st.button(f"Score {name} on every judged query", key="eff_go", icon=":material/leaderboard:",
                  on_click=lambda: st.session_state.update(_eff_asked=(spec, ranker.id)))
        return
    try:
        eff = _effectiveness(spec, ranker.id, live_run(spec, ranker.id))  # the first run shows progress
    except DataError as exc:
        st.error(literal(exc))
        return
    cols = st.columns(4)
    for col, (measure, value) in zip(cols, eff.means.items()):
        col.metric(f"mean {measure}", f"{value:.3f}")
    cols[3].metric("queries with nDCG@10 = 0", f"{eff.share_failed():.1%}")
    if eff.notes:
        with st.expander(f"Notes on the scoring ({len(eff.notes)})"):
            for note in eff.notes:
                st.caption(literal(note))
    left, right = st.columns([1, 1])
    clicked = clicked_data(left.plotly_chart(
        per_query_histogram(eff.per_query["nDCG@10"], "nDCG@10", name, click_hint="click: these queries (right)"),
        key="eff_figure", on_select="rerun", selection_mode="points"))
    in_bar = int(clicked[1]) if clicked and len(clicked) >= 2 else None
    right.markdown("**The queries it fails hardest** (lowest nDCG@10, then RR@10, then where the gold passage ranks; "
                   "equal ones in a fixed shuffled order). Select one for what it should have asked; click a bar of the "
                   "histogram for its queries.")
    wanted = right.text_input("Find a judged query", key="eff_find", placeholder="a word of the query (all queries, hardest first)")
    listed = eff.per_query[eff.per_query["query"].str.contains(wanted.strip(), case=False, regex=False)] if wanted.strip() \
        else eff.per_query
    if in_bar is not None:
        listed = listed[per_query_bin(listed["nDCG@10"]) == in_bar]
    hardest = listed.head(20).reset_index(drop=True)
    if wanted.strip() or in_bar is not None:
        one = len(listed) == 1
        found = [f"{'contains' if one else 'contain'} “{literal(wanted.strip())}”"] if wanted.strip() else []
        found += [f"{'has' if one else 'have'} nDCG@10 {PER_QUERY_BINS[in_bar]} (the clicked bar; click it again for all)"] \
            if in_bar is not None else []
        right.caption(f"{len(listed):,} judged {'query' if len(listed) == 1 else 'queries'} " + " and ".join(found)
                      + ("; the 20 hardest shown." if len(listed) > 20 else "."))
    table_key = (f"eff_hardest_{ranker.id}_{hashlib.sha1(wanted.strip().encode()).hexdigest()[:8]}"
                 f"_{in_bar}")  # a new filter: unselected
    picked = right.dataframe(hardest, hide_index=True, width="stretch", key=table_key, on_select="rerun",
                             selection_mode="single-row", placeholder=f"> {eff.depth}",
                             height=min(300, 35 * (len(hardest) + 1) + 3),  # no blank rows under a short list
                             column_order=["query", *MEASURES, "gold rank", "gold passage", "query_id"],
                             column_config={m: st.column_config.NumberColumn(format="%.3f", width=70) for m in MEASURES} | {
                                 "gold rank": st.column_config.NumberColumn(format="%d", width=75, help=(
                                     f"rank of the query's most relevant passage, ties broken as its measures break them (trec_eval: score, "
                                     f"then passage id descending); > {eff.depth}: not in {name}'s top {eff.depth}"))})
    rows = picked.selection.rows
    if rows:
        row = hardest.iloc[rows[0]]
        links = st.container(horizontal=True)
        links.button(f"Search “{literal(row['query'])}” above", key="eff_search", icon=":material/search:",
                     on_click=lambda q=row["query"]: st.session_state.update(search_query=q))
        gold = row["gold passage"] if pd.notna(row["gold passage"]) else None
        link_onward(links, "pages/latent.py", "What should it have asked? (Latent traversal)", ":material/route:",
                    query=row["query"], target=gold)
        link_onward(links, "pages/suggestions.py", "Better queries (Query suggestions)", ":material/lightbulb:", query=row["query"])
    right.download_button("Every judged query (CSV)", lambda: csv_bytes(eff.per_query),
                          f"per_query_{ranker.id}.csv", "text/csv", on_click="ignore", key="eff_csv")  # made when clicked


where_the_ranker_fails()

st.subheader("Distributions")
left, right = st.columns([2, 1])
left.plotly_chart(lengths_figure, key="length_figure")
if grades_figure is not None:
    right.plotly_chart(grades_figure, key="grade_figure")
if ranker is not None and hasattr(ranker, "encoder"):  # a dense ranker reads only the start of long passages
    cut = cut_note(passages_cut(collection, ranker.encoder, get_store()))
    if cut:
        st.caption(cut)

st.subheader("Browse")
passages_tab, queries_tab = st.tabs(["Passages", "Queries"])
judged_collection = len(collection.qrels) > 0


with passages_tab:
    pattern = st.text_input("Filter passages (id or text contains)", key="passage_filter")
    found = collection.find_passages(pattern)
    if not judged_collection:
        found = found.drop(columns="judgments")
    st.caption(f"showing {len(found):,} {'passage' if len(found) == 1 else 'passages'} (at most 500); "
               "select one for its whole text, the queries that judge it and who sees it")
    picked = st.dataframe(found, hide_index=True, width="stretch", on_select="rerun", selection_mode="single-row",
                          key="browse_passages", column_config={"text": st.column_config.TextColumn(width="large"),
                                                                "judgments": st.column_config.NumberColumn(
                                                                    help="how many queries' judgments name it")})
    row = picked_row(picked, found)
    if row is not None:
        passage_detail(str(found["doc_id"].iloc[row]), "browse")
with queries_tab:
    pattern = st.text_input("Filter queries (id or text contains)", key="query_filter")
    found = collection.find_queries(pattern)
    if not judged_collection:
        found = found.drop(columns="judgments")
    st.caption(f"showing {len(found):,} {'query' if len(found) == 1 else 'queries'} (at most 500)"
               + ("; select one for its judged passages" if judged_collection else ""))
    picked = st.dataframe(found, hide_index=True, width="stretch", on_select="rerun", selection_mode="single-row",
                          key="browse_queries")
    row = picked_row(picked, found)
    if row is not None:
        qid, text = str(found["query_id"].iloc[row]), str(found["text"].iloc[row])
        judged_table = judged_passages(collection, qid)
        st.markdown(f"**{literal(text)}** (query {literal(qid)}): " + (f"{len(judged_table):,} judged passages, most relevant first"
                                                          if len(judged_table) else "no judgments"))
        st.button("Search it above", key="browse_search", icon=":material/search:",
                  on_click=lambda: st.session_state.update(search_query=text))
        if len(judged_table):
            st.dataframe(judged_table, hide_index=True, width="stretch", key="browse_judged",  # the text takes the width
                         column_config={**result_columns(), "passage": st.column_config.TextColumn(width=770)})

with link:
    copy_link(sync_url(URL))
