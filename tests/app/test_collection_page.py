"""AppTest of the shell (navigation + shared sidebar) and the Collection page."""

import pandas as pd

from tests.app.conftest import as_read, sidebar_select
from tests.conftest import TINY_BEIR


def test_default_wordnet_search_for_bank_shows_graded_senses(app):
    app.run()
    assert not app.exception
    assert as_read(app.title[0].value).startswith("WordNet 3.0")
    metrics = {m.label: m.value for m in app.metric}
    assert metrics["Passages"] == "20,001" and metrics["Queries"] == "13,013"
    results = app.dataframe[0].value
    assert len(results) == 10
    assert results["text"].str.contains("bank").all()
    assert results["grade"].notna().sum() >= 5  # several senses of "bank", each judged
    assert any("Logged query `bank`" in as_read(c.value) for c in app.caption)


def test_sidebar_switches_collection_and_ranker(app):
    app.run()
    sidebar_select(app, "Collection").set_value(f"beir:{TINY_BEIR}").run()
    assert not app.exception
    assert as_read(app.title[0].value) == "tiny_beir"
    app.text_input(key="search_query").set_value("river bank").run()
    results = app.dataframe[0].value
    assert results["doc_id"].iloc[0] == "d1" and results["grade"].iloc[0] == 2
    sidebar_select(app, "Ranker").set_value("minilm-l3-onnx").run()
    assert not app.exception
    assert app.dataframe[0].value["doc_id"].iloc[0] in {"d1", "d4", "d7"}


def test_browser_filters_and_unlogged_query(app):
    app.run()
    sidebar_select(app, "Collection").set_value(f"beir:{TINY_BEIR}").run()
    app.text_input(key="passage_filter").set_value("piano").run()
    assert any("showing 1 passage (at most 500)" in as_read(c.value) for c in app.caption)
    app.text_input(key="search_query").set_value("zebra migration").run()
    assert not app.exception
    assert any("No passage shares a term" in as_read(w.value) for w in app.warning)
    assert any("Not a logged query" in as_read(c.value) for c in app.caption) is False  # q5 is logged


def test_a_query_the_dense_ranker_cannot_read_is_searched_with_a_warning(app):
    app.run()
    sidebar_select(app, "Collection").set_value(f"beir:{TINY_BEIR}").run()
    sidebar_select(app, "Ranker").set_value("minilm-l3-onnx").run()
    app.text_input(key="search_query").set_value("😀").run()
    assert not app.exception
    assert len(app.dataframe[0].value) == 10
    assert [as_read(w.value) for w in app.warning] == [
        "minilm-l3-onnx cannot read this query: “😀” is outside its vocabulary ([UNK]), so its vector, and every "
        "result made from it, says nothing about the query"]
    app.text_input(key="search_query").set_value("river bank").run()
    assert not app.warning


def test_a_collection_chosen_by_the_app_stays_chosen(app):
    """A link (like an upload) picks the collection: the sidebar shows it under a new widget, and it
    stays through a rerun of another widget and a page change."""
    app.run()
    before = sidebar_select(app, "Collection").key
    app.query_params.update({"collection": f"beir:{TINY_BEIR}"})
    app.run()
    picker = sidebar_select(app, "Collection")
    assert picker.value == f"beir:{TINY_BEIR}" and picker.key != before
    app.text_input(key="search_query").set_value("river bank").run()
    assert as_read(app.title[0].value) == "tiny_beir"
    app.switch_page("pages/coverage.py").run()
    assert not app.exception
    assert sidebar_select(app, "Collection").value == f"beir:{TINY_BEIR}"


def test_a_stale_address_sent_back_by_the_browser_does_not_switch_back(app):
    """The browser sends its address with every rerun; if a widget reruns the page before the browser
    has applied our last rewrite, it sends the previous address: that is not a new link."""
    app.run()
    previous = dict(app.query_params)
    assert previous["collection"] == "wordnet"
    app.query_params.update({"collection": f"beir:{TINY_BEIR}"})
    app.run()
    assert app.query_params["collection"] == f"beir:{TINY_BEIR}"
    app.query_params.clear()
    app.query_params.update(previous)  # the address before our rewrite reached the browser
    app.text_input(key="search_query").set_value("river bank").run()
    assert as_read(app.title[0].value) == "tiny_beir"
    assert sidebar_select(app, "Collection").value == f"beir:{TINY_BEIR}"
    assert app.text_input(key="search_query").value == "river bank"


def _app_on(monkeypatch, tmp_path, docs: list[dict], query: str):
    """The app on a small BEIR collection of ``docs`` and one query, chosen in the sidebar."""
    import json

    from streamlit.testing.v1 import AppTest

    from tests.app.conftest import APP

    folder = tmp_path / "collection"
    folder.mkdir()
    (folder / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    (folder / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": query}) + "\n", encoding="utf-8")
    monkeypatch.setenv("EQI_DATA_ROOTS", str(tmp_path))
    app = AppTest.from_file(APP, default_timeout=600)
    app.run()
    sidebar_select(app, "Collection").set_value(f"beir:{folder}").run()
    return app


def test_a_dense_ranker_says_how_many_passages_it_reads_only_in_part(monkeypatch, tmp_path):
    """MiniLM-L3 reads 128 word pieces: a collection with a 300-word passage says so under a dense
    ranker (and says nothing under BM25, which reads everything)."""
    app = _app_on(monkeypatch, tmp_path, [{"_id": "p1", "title": "", "text": "river bank " * 150},
                                          {"_id": "p2", "title": "", "text": "piano keys"},
                                          {"_id": "p3", "title": "", "text": "savings account at a bank"}], "river")
    assert not app.exception and not any("word pieces" in as_read(c.value) for c in app.caption)
    sidebar_select(app, "Ranker").set_value("minilm-l3-onnx").run()
    assert not app.exception
    assert any(as_read(c.value).startswith("minilm-l3-onnx reads at most 128 word pieces: 1 of 3 passages (33%) are longer")
               for c in app.caption)


def test_browse_opens_a_querys_judgments_and_a_passages_judging_queries(app):
    app.run()
    sidebar_select(app, "Collection").set_value(f"beir:{TINY_BEIR}").run()
    queries = next(d.value for d in app.dataframe if "judgments" in d.value.columns and "title" not in d.value.columns)
    assert dict(zip(queries["query_id"], queries["judgments"]))["q1"] == 3  # q1 judges d1, d4, d7
    app.session_state["browse_queries"] = {"selection": {"rows": [0], "columns": []}}  # a click on q1
    app.run()
    assert not app.exception, app.exception
    judged = next(d.value for d in app.dataframe if list(d.value.columns) == ["doc_id", "grade", "passage"])
    assert judged["doc_id"].tolist() == ["d1", "d4", "d7"] and judged["grade"].tolist() == [2, 1, 1]  # grade, then id
    assert judged["passage"].iloc[0] == "River bank. the sloping land beside a river where the water meets the shore"
    assert any("3 judged passages" in m.value for m in app.markdown)
    app.button(key="browse_search").click().run()  # the query goes to the search box above
    assert app.text_input(key="search_query").value == "river bank"
    assert any("Logged query `q1`" in as_read(c.value) for c in app.caption)

    passages = next(d.value for d in app.dataframe if "title" in d.value.columns)
    row = passages["doc_id"].tolist().index("d3")
    assert passages["judgments"].iloc[row] == 1
    app.session_state["browse_passages"] = {"selection": {"rows": [row], "columns": []}}
    app.run()
    assert not app.exception, app.exception
    judging = next(d.value for d in app.dataframe if list(d.value.columns) == ["query_id", "query", "grade"])
    assert judging.to_dict("records") == [{"query_id": "q2", "query": "bank loan interest", "grade": 1}]
    assert any("named by the judgments of 1 query" in m.value for m in app.markdown)


def test_a_selected_search_result_opens_its_whole_text_judging_queries_and_exposure_link(app):
    app.run()
    sidebar_select(app, "Collection").set_value(f"beir:{TINY_BEIR}").run()
    app.text_input(key="search_query").set_value("bank loan").run()
    table = app.dataframe[0]
    assert table.key.startswith("search_results_")
    row = table.value["doc_id"].tolist().index("d3")
    app.session_state[table.key] = {"selection": {"rows": [row], "columns": []}}  # a click on d3
    app.run()
    assert not app.exception, app.exception
    assert any(m.value.startswith("**d3**: named by the judgments of 1 query") for m in app.markdown)
    judging = next(d.value for d in app.dataframe if list(d.value.columns) == ["query_id", "query", "grade"])
    assert judging.to_dict("records") == [{"query_id": "q2", "query": "bank loan interest", "grade": 1}]
    from eqi_core.loaders import load_collection

    whole = load_collection(f"beir:{TINY_BEIR}").display_text("d3")
    assert whole == "Savings. money saved in a bank account earns interest over time"
    # the whole text, the query's words marked as BM25 matches them ("loan" is not in it)
    assert any(m.value == r"Savings\. money saved in a :orange-background[bank] account earns interest over time"
               for m in app.markdown)
    assert any(as_read(c.value).startswith("Words of “bank loan” in it") and as_read(c.value).endswith(":orange-background[bank]")
               for c in app.caption)
    # another query starts with nothing selected: its table has another key
    app.text_input(key="search_query").set_value("river bank").run()
    assert app.dataframe[0].key != table.key and not any(m.value.startswith("**d3**") for m in app.markdown)


def test_compare_with_another_ranker_sets_the_two_top_ks_side_by_side(app):
    app.run()
    sidebar_select(app, "Collection").set_value(f"beir:{TINY_BEIR}").run()
    app.text_input(key="search_query").set_value("river bank").run()
    assert "BM25" not in app.selectbox(key="search_vs").options and len(app.selectbox(key="search_vs").options) == 3
    app.selectbox(key="search_vs").set_value("minilm-l3-onnx").run()
    assert not app.exception, app.exception
    mine, theirs = app.dataframe[0].value, next(d.value for d in app.dataframe if "rank under BM25" in d.value.columns)
    from eqi_core.loaders import load_collection
    from eqi_core.rankers import build_ranker
    from eqi_core.store import ArtifactStore

    tiny = load_collection(f"beir:{TINY_BEIR}")
    dense = build_ranker("minilm-l3-onnx", tiny, ArtifactStore()).search(["river bank"], k=10).frame
    assert theirs["doc_id"].tolist() == dense["doc_id"].tolist()
    at_dense = dict(zip(dense["doc_id"], dense["rank"]))
    for doc, rank in zip(mine["doc_id"], mine["rank under MiniLM-L3 (dense, ONNX)"]):
        assert (pd.isna(rank) and doc not in at_dense) or rank == at_dense[doc], doc
    at_bm25 = dict(zip(mine["doc_id"], mine["rank"]))
    for doc, rank in zip(theirs["doc_id"], theirs["rank under BM25"]):
        assert (pd.isna(rank) and doc not in at_bm25) or rank == at_bm25[doc], doc
    common = len(set(mine["doc_id"]) & set(theirs["doc_id"]))
    assert any(m.value.startswith(f"**MiniLM-L3 (dense, ONNX)'s top 10** for the same query: {common} of the top")
               and "nDCG@10" in m.value for m in app.markdown)


def test_where_the_ranker_fails_scores_every_judged_query_and_links_the_hardest(app):
    """The section's means and hardest queries are ranker_effectiveness of the ranker's own run; a
    selected query links to the Latent traversal (with its gold passage) and Query suggestions pages."""
    from eqi_core.coverage.hardest import ranker_effectiveness
    from eqi_core.loaders import load_collection
    from eqi_core.rankers import build_ranker, run_all_queries
    from eqi_core.store import ArtifactStore

    app.run()
    sidebar_select(app, "Collection").set_value(f"beir:{TINY_BEIR}").run()
    assert any(s.value == "Where BM25 fails" for s in app.subheader)
    if any(b.key == "eff_go" for b in app.button):  # not scored yet in this store: one click
        app.button(key="eff_go").click().run()
    assert not app.exception, app.exception
    tiny, store = load_collection(f"beir:{TINY_BEIR}"), ArtifactStore()
    truth = ranker_effectiveness(run_all_queries(build_ranker("bm25", tiny, store), tiny, store), tiny, "BM25")
    metrics = {m.label: m.value for m in app.metric}
    assert metrics["mean nDCG@10"] == f"{truth.means['nDCG@10']:.3f}" and metrics["mean R@100"] == f"{truth.means['R@100']:.3f}"
    table = next(d for d in app.dataframe if (d.key or "").startswith("eff_hardest_bm25_"))
    assert table.value["query_id"].tolist() == truth.per_query["query_id"].tolist()[:20]
    word = truth.per_query["query"].iloc[-1].split()[0]  # the easiest query's first word: a filter keeps the order
    app.text_input(key="eff_find").set_value(word).run()
    table = next(d for d in app.dataframe if (d.key or "").startswith("eff_hardest_bm25_"))
    matching = truth.per_query[truth.per_query["query"].str.contains(word, case=False, regex=False)]
    assert table.value["query_id"].tolist() == matching["query_id"].tolist()[:20] and len(matching) < len(truth.per_query)
    app.session_state[table.key] = {"selection": {"rows": [0], "columns": []}}
    app.run()
    first = matching.iloc[0]
    links = {p.label: p for p in app.get("page_link")}
    latent = links["What should it have asked? (Latent traversal)"]
    assert latent.proto.page == "latent" and f"query={first['query'].replace(' ', '+')}" in latent.proto.query_string
    assert f"target={first['gold passage']}" in latent.proto.query_string
    assert "Better queries (Query suggestions)" in links
    app.button(key="eff_search").click().run()
    assert app.text_input(key="search_query").value == first["query"]


def test_a_new_collection_drops_the_last_ones_queries_and_passages(app):
    """WordNet's Latent traversal opens on "hair" and its gold sense; after switching to another collection,
    which has neither, the page opens on that collection's first judged query instead of an error, and so
    does the Collection page's search."""
    from eqi_core.loaders import load_collection

    tiny = load_collection(f"beir:{TINY_BEIR}")
    first = tiny.first_view_query()
    app.run()
    app.switch_page("pages/latent.py").run()
    assert app.text_input(key="lat_query").value == "hair"
    sidebar_select(app, "Collection").set_value(f"beir:{TINY_BEIR}").run()
    assert not app.exception and not app.error, [e.value for e in app.error]
    assert app.text_input(key="lat_query").value == first
    app.switch_page("pages/collection.py").run()
    assert app.text_input(key="search_query").value == first


def test_every_collection_bound_key_is_a_pages_state_key():
    """The sidebar drops COLLECTION_BOUND on a new collection; a key renamed on its page would silently stay
    behind, so each one must still be a widget key (key="...") or URL key of some page."""
    import re
    from pathlib import Path

    from pages._sidebar import COLLECTION_BOUND

    source = "\n".join(p.read_text(encoding="utf-8") for p in (Path(__file__).resolve().parents[2] / "pages").glob("*.py"))
    used = set(re.findall(r'key="([a-z_]+)"', source)) | set(re.findall(r'"([a-z_]+)": \("', source))
    assert set(COLLECTION_BOUND) <= used, set(COLLECTION_BOUND) - used


def test_every_download_button_leaves_the_script_alone():
    """A download button reruns the page by default, and the rerun drops the deferred file the click
    is fetching: under load the file never came and the button stayed disabled (a fresh-clone run on
    2026-11-29, the Exposure page's audit report). Downloads change nothing, so none reruns."""
    import ast
    from pathlib import Path

    missing = []
    for path in sorted((Path(__file__).resolve().parents[2] / "pages").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "download_button":
                on_click = [k.value for k in node.keywords if k.arg == "on_click"]
                if not (on_click and isinstance(on_click[0], ast.Constant) and on_click[0].value == "ignore"):
                    missing.append(f"{path.name}:{node.lineno}")
    assert not missing, missing


def test_a_data_note_shows_the_collections_ids_as_written(monkeypatch, tmp_path):
    """A data note names passages by their ids; an id such as "__init__" was rendered bold (Markdown)."""
    app = _app_on(monkeypatch, tmp_path, [{"_id": "__init__", "title": "", "text": ""},
                                          {"_id": "p2", "title": "", "text": "piano keys"}], "piano")
    assert not app.exception
    (note,) = [i.value for i in app.info if "no text" in i.value]
    assert "\\_\\_init\\_\\_" in note and as_read(note).startswith("1 of 2 passages has no text ('__init__')")
