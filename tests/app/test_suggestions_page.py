"""AppTest of the Query suggestions page (tiny collection, the suggesters shipped in assets/)."""
import numpy as np
import pytest

from tests.app.conftest import as_read
from tests.conftest import FIXTURES, TINY_BEIR


def open_page(app, **params):
    app.run()
    app.query_params.update({"collection": f"beir:{TINY_BEIR}", "ranker": "minilm-l3-onnx", **params})
    app.switch_page("pages/suggestions.py").run()
    assert not app.exception, app.exception
    return app


def suggestions(at):
    """The suggestions table (the one whose rows can be picked)."""
    return next(d for d in at.dataframe if d.key == "sug_table").value


def top_ten(at):
    """The top 10 of the picked suggestion (the query's until one is picked): the table after the suggestions."""
    frames = list(at.dataframe)
    return frames[next(i for i, d in enumerate(frames) if d.key == "sug_table") + 1].value


def test_judged_query_shows_each_models_suggestions_with_their_ndcg(app):
    at = open_page(app, query="river bank", model="prf")
    assert at.title[0].value == "Query suggestions"
    assert any("MiniLM-L6" in as_read(c.value) for c in at.caption)  # the ONNX ranker has no decoder
    assert any("Its re-ranker" in as_read(c.value) and "eqi train-suggestion-ranker" in as_read(c.value) and "word Jaccard" in as_read(c.value)
               and "beam-4 decodings" in as_read(c.value) and "not refitted" in as_read(c.value)  # what it was fitted on, and used on
               for c in at.caption)
    assert any("Spoken by" in as_read(c.value) and "natural-minilm-l6-real" in as_read(c.value) and "development queries" in as_read(c.value)
               for c in at.caption)  # which decoder speaks the suggesters, and why (their card's speaks_with)
    table = suggestions(at)
    assert table["model"].iloc[0] == "original query" and table["suggestion"].iloc[0] == "river bank"
    made = table[table["model"] == "suggester (PRF)"]
    assert 1 <= len(made) <= 10 and "river bank" not in set(made["suggestion"].str.lower())
    # nDCG@10 recomputed here with the dense ranker and q1's judgments
    from eqi_core.loaders import load_collection
    from eqi_core.rankers import load_encoder

    coll = load_collection(f"beir:{TINY_BEIR}")
    enc = load_encoder("minilm-l6")
    p = enc.encode(coll.passage_texts())
    q = enc.encode(table["suggestion"].tolist())
    ids = coll.passages["doc_id"].tolist()
    judged = coll.judgments["q1"]
    for got, scores in zip(table["nDCG@10"], q @ p.T):
        order = np.argsort(-scores, kind="stable")[:10]
        gains = [judged.get(ids[j], 0) for j in order]
        ideal = sorted(judged.values(), reverse=True)[:10]
        dcg = sum(g / np.log2(i + 2) for i, g in enumerate(gains))  # trec_eval: linear gains
        idcg = sum(g / np.log2(i + 2) for i, g in enumerate(ideal))
        assert got == pytest.approx(dcg / idcg, abs=1e-6)
    metrics = {m.label: m.value for m in at.metric}
    assert float(metrics["nDCG@10 of the query"]) == pytest.approx(table["nDCG@10"].iloc[0], abs=5e-4)
    assert at.success or at.info  # which suggestions reach the gold passage
    oracle = next(p for p in at.get("page_link") if p.proto.label.startswith("Walk from the query to its gold passage"))
    assert oracle.proto.page == "latent" and "target=d1" in oracle.proto.query_string  # "river bank"'s gold passage
    top = top_ten(at)  # the original query's top 10 until a row is picked
    assert len(top) == 10
    # the feedback the PRF suggester read: the query's top 5 in the same space, its gold passage marked
    fed = next(e for e in at.expander if e.label.startswith("What feedback they read")).dataframe[0].value
    assert fed["doc_id"].tolist() == top["doc_id"].tolist()[:5]
    assert fed["doc_id"].tolist() == [ids[j] for j in np.argsort(-(enc.encode(["river bank"]) @ p.T)[0], kind="stable")[:5]]
    assert set(fed["target"]) <= {"◀ gold", ""} and (fed["target"] == "◀ gold").sum() == ("d1" in set(fed["doc_id"]))
    # the cards' held-out table, with the probes told apart from the suggesters
    held_out = next(d.value for d in at.dataframe if "method" in d.value.columns and "best@10" in d.value.columns)
    assert {"suggester (PRF)", "RM3", "random feedback term (probe)", "random term, no feedback (probe)"} <= set(held_out["method"])
    assert any("marked *probe*" in m.value for m in at.markdown)
    # the dataset's histograms (paper Figure 4) and each collection's best-of-k chart download for slides
    ids = [b.proto.id for b in at.get("download_button")]
    assert any(i.endswith("sug_fig4_dl_png") for i in ids)
    assert sum(i.endswith("_dl_png") and "sug_eval_" in i for i in ids) == held_out["collection"].nunique() >= 3


def test_all_models_and_a_typed_query_without_judgments(app):
    at = open_page(app, query="volcanic ash over the airport", model="all")
    table = suggestions(at)
    assert {"suggester (PRF)", "suggester (plain)", "RM3", "Sampling+QD", "feedback walks+QD"} <= set(table["model"])
    assert "nDCG@10" not in table.columns  # no judgments: suggestions without scores
    fed = next(e for e in at.expander if e.label.startswith("What feedback they read")).dataframe[0].value  # PRF, RM3, walks
    assert len(fed) == 5 and "grade" not in fed.columns
    assert any("no judgments" in as_read(c.value) for c in at.caption)
    assert at.query_params["model"] in ("all", ["all"])


def test_a_query_the_encoder_cannot_read_is_warned_about(app):
    at = open_page(app, query="😀", model="plain")
    assert [as_read(w.value) for w in at.warning] == [
        "minilm-l6 cannot read this query: “😀” is outside its vocabulary ([UNK]), so its vector, and every result "
        "made from it, says nothing about the query"]
    assert len(suggestions(at)) > 1
    at.text_input(key="sug_query").set_value("wie funktioniert eine Impfung").run()
    assert [as_read(w.value) for w in at.warning] == [
        "None of the 4 words of this query are in the decoder's English word list (e.g. “wie”, “funktioniert”, "
        "“eine”, “impfung”): what is decoded from it is written in English words, not in the query's language."]


def test_bad_model_in_a_link_is_a_warning(app):
    at = open_page(app, query="river bank", model="best")
    assert any("Ignoring model='best'" in as_read(w.value) for w in at.warning)
    assert at.selectbox(key="sug_model").value == "all"


def test_a_collection_in_another_language_is_warned_about(app):
    """A French collection: one warning that suggestions will be English words; suggestions still come."""
    at = open_page(app, collection=f"beir:{FIXTURES / 'tiny_french'}", query="intérêts d'un prêt bancaire", model="prf")
    notes = [as_read(w.value) for w in at.warning if "decoder's English word list" in as_read(w.value)]
    assert len(notes) == 1 and notes[0].startswith("Only ")
    assert len(suggestions(at)) >= 2  # the query and its suggestions


def test_the_sidebars_ranker_scores_every_suggestion_too(app):
    """Suggestions are made in MiniLM-L6's space; with BM25 in the sidebar each is also scored by BM25
    (as the Collection page scores a search) and its top 10 can be shown; with MiniLM-L6, nothing extra."""
    from eqi_core.judged import judge_results
    from eqi_core.loaders import load_collection
    from eqi_core.rankers import build_ranker
    from eqi_core.store import ArtifactStore

    at = open_page(app, query="river bank", model="prf", ranker="bm25")
    table = suggestions(at)
    assert {"nDCG@10 (bm25)", "gold rank (bm25)"} <= set(table.columns)
    coll = load_collection(f"beir:{TINY_BEIR}")
    bm25 = build_ranker("bm25", coll, ArtifactStore())
    page = judge_results(coll, "river bank", bm25.search(["river bank"], k=10), 10)  # the Collection page's number
    assert table["nDCG@10 (bm25)"].iloc[0] == pytest.approx(page.measures["nDCG@10"], abs=1e-9)
    judged = coll.judgments["q1"]
    ideal = sum(g / np.log2(r + 2) for r, g in enumerate(sorted(judged.values(), reverse=True)))
    for text, got in zip(table["suggestion"], table["nDCG@10 (bm25)"]):  # each against q1's judgments
        run = bm25.search([text], k=10).frame
        order = sorted(zip(run["score"], run["doc_id"]), reverse=True)  # trec_eval: score, then doc id, descending
        dcg = sum(judged.get(d, 0) / np.log2(r + 2) for r, (_, d) in enumerate(order))
        assert got == pytest.approx(dcg / ideal, abs=1e-9), text
    assert any(as_read(c.value).startswith("Under BM25: the query's nDCG@10") for c in at.caption)
    # BM25 returns only the tiny collection's passages sharing a word with a suggestion: one it misses is not retrieved
    assert all(r.isdigit() or r == "not retrieved" for r in table["gold rank (bm25)"])
    at.radio(key="sug_top_by").set_value(at.radio(key="sug_top_by").options[1]).run()
    top = top_ten(at)
    assert top["doc_id"].tolist() == bm25.search(["river bank"], k=10).frame["doc_id"].tolist()

    at = open_page(app, query="river bank", model="prf", ranker="minilm-l6")
    assert not any("(bm25)" in c or "(minilm" in c for c in suggestions(at).columns)
    assert not at.radio
