"""AppTest of the Query suggestions page (tiny collection, the suggesters shipped in assets/)."""
import numpy as np
import pytest

from tests.conftest import FIXTURES, TINY_BEIR


def open_page(app, **params):
    app.run()
    app.query_params.update({"collection": f"beir:{TINY_BEIR}", "ranker": "minilm-l3-onnx", **params})
    app.switch_page("pages/suggestions.py").run()
    assert not app.exception, app.exception
    return app


def test_judged_query_shows_each_models_suggestions_with_their_ndcg(app):
    at = open_page(app, query="river bank", model="prf")
    assert at.title[0].value == "Query suggestions"
    assert any("MiniLM-L6" in c.value for c in at.caption)  # the ONNX ranker has no decoder
    assert any("Its re-ranker" in c.value and "eqi train-suggestion-ranker" in c.value and "word Jaccard" in c.value
               and "beam-4 decodings" in c.value and "not refitted" in c.value  # what it was fitted on, and used on
               for c in at.caption)
    table = at.dataframe[0].value
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
    top = at.dataframe[1].value  # the original query's top 10 until a row is picked
    assert len(top) == 10


def test_all_models_and_a_typed_query_without_judgments(app):
    at = open_page(app, query="volcanic ash over the airport", model="all")
    table = at.dataframe[0].value
    assert {"suggester (PRF)", "suggester (plain)", "RM3", "Sampling+QD", "feedback walks+QD"} <= set(table["model"])
    assert "nDCG@10" not in table.columns  # no judgments: suggestions without scores
    assert any("no judgments" in c.value for c in at.caption)
    assert at.query_params["model"] in ("all", ["all"])


def test_bad_model_in_a_link_is_a_warning(app):
    at = open_page(app, query="river bank", model="best")
    assert any("Ignoring model='best'" in w.value for w in at.warning)
    assert at.selectbox(key="sug_model").value == "all"


def test_a_collection_in_another_language_is_warned_about(app):
    """A French collection: one warning that suggestions will be English words; suggestions still come."""
    at = open_page(app, collection=f"beir:{FIXTURES / 'tiny_french'}", query="intérêts d'un prêt bancaire", model="prf")
    notes = [w.value for w in at.warning if "decoder's English word list" in w.value]
    assert len(notes) == 1 and notes[0].startswith("Only ")
    assert len(at.dataframe[0].value) >= 2  # the query and its suggestions
