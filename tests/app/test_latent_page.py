"""AppTest of the Latent traversal page (tiny collection, the decoder shipped in assets/)."""
import json

import pytest

from tests.app.conftest import as_read
from tests.conftest import FIXTURES, TINY_BEIR


def open_page(app, **params):
    app.run()
    params = {"k": "3", "decoder": "decoder", **params}  # small, fast walks unless a test asks otherwise
    app.query_params.update({"collection": f"beir:{TINY_BEIR}", "ranker": "minilm-l3-onnx", **params})
    app.switch_page("pages/latent.py").run()
    assert not app.exception, app.exception
    return app


def test_traversal_from_a_logged_query_to_its_gold_passage(app):
    at = open_page(app, query="river bank", k="4", decoder="neural+guided")  # a link of an earlier version still works
    assert at.title[0].value == "Latent traversal"
    assert at.selectbox(key="lat_decoder").value == "decoder+rerank"
    assert any("MiniLM-L6" in as_read(c.value) for c in at.caption)  # the ONNX ranker has no decoder: MiniLM-L6's space
    assert any("natural-language decoder" in as_read(c.value) for c in at.caption)  # which decoder model, and why
    assert not any("word list" in as_read(w.value) for w in at.warning)  # an English collection: no language warning
    assert at.selectbox(key="lat_target").value == "d1"  # the query's gold passage by default
    onward = next(p for p in at.get("page_link") if p.proto.label.startswith("Which logged queries expose the target?"))
    assert onward.proto.page == "exposure" and "passage=d1" in onward.proto.query_string
    assert "ranker=minilm-l3-onnx" in onward.proto.query_string  # the sidebar's ranker, as the link came in
    metrics = {m.label: m.value for m in at.metric}
    assert int(metrics["Steps decoded"]) == 5
    assert int(metrics["Best rank of a reformulation"]) >= 1
    assert at.success or at.info  # "what should have been asked", or the best step
    said = " ".join(m.value for m in [*at.success, *at.info])
    assert ("already ranks the target first" in said) == (int(metrics["Target rank for the query as typed"]) == 1)
    steps = at.dataframe[0].value
    assert list(steps["step"]) == [0, 1, 2, 3, 4]
    # step 0 is the query itself: "river bank", both words in its gold passage d1 ("River bank. the sloping land ...")
    assert steps["words from target"].iloc[0] == "river, bank" or not steps["repeats query"].iloc[0]
    assert set(steps["source"]) <= {"decoded", "corrected (encoder re-ranked)"}
    itself = steps["repeats query"].astype(bool)
    assert list(itself) == [" ".join(t.lower().split()) == "river bank" for t in steps["decoded"]]
    reform = steps[~itself]
    assert int(metrics["Best rank of a reformulation"]) == (reform["target rank"].min() if len(reform) else steps["target rank"].min())
    assert len(at.get("plotly_chart")) >= 2  # the UMAP trajectory and the per-step curve
    results = at.dataframe[1].value  # the results of the best step, shown by default
    assert len(results) == 10
    if steps["target rank"].min() <= 10:
        assert "◀ target" in set(results["target"])


def test_parameters_change_the_walk_and_the_url(app):
    at = open_page(app, query="musical instrument")
    at.slider(key="lat_steps").set_value(2).run()
    at.radio(key="lat_mode").set_value("slerp").run()
    at.selectbox(key="lat_decoder").set_value("nearest-query").run()
    assert not at.exception, at.exception
    assert len(at.dataframe[0].value) == 3
    assert at.query_params["k"] in ("2", ["2"]) and at.query_params["mode"] in ("slerp", ["slerp"])


def test_decode_box(app):
    at = open_page(app, query="river bank")
    at.text_area(key="lat_decode_text").set_value("an institution where you deposit money and take loans").run()
    assert not at.exception, at.exception
    decoded = [d.value for d in at.dataframe if "decoded query" in d.value.columns]
    assert len(decoded) == 1
    decoded = decoded[0]
    assert 1 <= len(decoded) <= 5
    # each rank recomputed here: 1 + passages the decoded query scores above the pasted text
    from eqi_core.loaders import load_collection
    from eqi_core.rankers import load_encoder

    enc = load_encoder("minilm-l6")
    passages = enc.encode(load_collection(f"beir:{TINY_BEIR}").passage_texts())
    text = enc.encode(["an institution where you deposit money and take loans"])[0]
    q = enc.encode(list(decoded["decoded query"]))
    expected = 1 + ((q @ passages.T) >= (q @ text)[:, None]).sum(axis=1)  # ties count against the text
    assert decoded["passage's rank"].tolist() == expected.tolist()


def test_a_passage_longer_than_a_query_is_decoded_with_a_note_on_what_the_encoder_reads(app):
    """A SciFact-length abstract (over 1,000 characters, a query's limit) decodes; the note says the
    encoder reads its first word pieces only."""
    at = open_page(app, query="river bank")
    abstract = " ".join(["the sloping land beside a river where the water meets the bank"] * 24)
    at.text_area(key="lat_decode_text").set_value(abstract).run()
    assert not at.exception and not at.error, (at.exception, [e.value for e in at.error])
    assert any("reads only the first 256" in as_read(w.value) for w in at.warning)
    assert any("decoded query" in d.value.columns for d in at.dataframe)


def test_text_the_encoder_cannot_read_is_walked_and_decoded_with_a_warning(app):
    """A typed query with an emoji and a pasted passage of emoji: MiniLM-L6 reads them as [UNK]."""
    at = open_page(app, query="river 😀", target="d1")
    assert [as_read(w.value) for w in at.warning] == [
        "minilm-l6 cannot read much of this query: 1 of its 2 word pieces (“😀”) is outside its vocabulary ([UNK]), "
        "so its vector says little about the query"]
    at.text_input(key="lat_query").set_value("river bank").run()
    assert not at.warning
    at.text_area(key="lat_decode_text").set_value("🎉🎉 🎉").run()
    assert not at.exception, at.exception
    assert [as_read(w.value) for w in at.warning] == [
        "minilm-l6 cannot read this passage: “🎉🎉”, “🎉” are outside its vocabulary ([UNK]), so its vector, and "
        "every result made from it, says nothing about the passage"]
    assert any("decoded query" in d.value.columns for d in at.dataframe)  # still decoded: the user sees what it makes


def test_decoder_card_and_evaluation_are_shown(app):
    at = open_page(app, query="river bank")
    tables = [d.value for d in at.dataframe if "round_trip_f1" in d.value.columns]
    assert tables and {"decoder", "decoder+rerank", "nearest logged query", "first 3 content words"} <= set(tables[0].index)
    from eqi_core.decoder.space import ASSETS  # the page shows the card's numbers, unaltered

    card = json.loads((ASSETS / "natural-minilm-l6" / "card.json").read_text(encoding="utf-8"))
    for name, row in card["natural_metrics"]["summary"].items():
        if row.get("round_trip_f1") is not None:
            assert tables[0].loc[name, "round_trip_f1"] == pytest.approx(row["round_trip_f1"])
    # the round trip by query source: MS MARCO is the paper's own family
    by_source = [d.value for d in at.dataframe if "family" in d.value.columns]
    marco = next(r for r in card["natural_metrics"]["by_source"] if (r["method"], r["family"]) == ("decoder", "MS MARCO"))
    shown = by_source[0].set_index(["method", "family"]).loc[("decoder", "MS MARCO")]
    assert (shown["n"], shown["token_f1"]) == (marco["n"], pytest.approx(marco["token_f1"]))


def test_other_shipped_decoder_weights_can_be_chosen_and_linked(app):
    """The decoder trained on real text only (the default until it was re-trained with its own samples),
    shipped beside the default: the default until chosen, then its card, its walk and a link that keeps
    it; an unknown name in a link is ignored with a warning."""
    from eqi_core.decoder.space import ASSETS, own_samples

    at = open_page(app, query="river bank")
    choice = at.selectbox(key="lat_weights")
    assert choice.value == "" and "natural-minilm-l6-real" in choice.options[1]
    default_card = json.loads((ASSETS / "natural-minilm-l6" / "card.json").read_text(encoding="utf-8"))
    kept = f"{own_samples(default_card['corpus'])[0]:,} samples of the decoder before it"
    assert any(kept in as_read(c.value) for c in at.caption)  # the default says how it was made
    default_steps = at.dataframe[0].value
    choice.set_value("natural-minilm-l6-real").run()
    assert not at.exception, at.exception
    card = json.loads((ASSETS / "natural-minilm-l6-real" / "card.json").read_text(encoding="utf-8"))
    queries = f"{card['corpus']['queries_train']:,} real queries"
    assert any(queries in as_read(c.value) and "natural-minilm-l6-real" in as_read(c.value) for c in at.caption)  # which, and how made
    tables = [d.value for d in at.dataframe if "round_trip_f1" in d.value.columns]
    assert tables[0].loc["decoder", "round_trip_f1"] == pytest.approx(card["natural_metrics"]["summary"]["decoder"]["round_trip_f1"])
    assert at.query_params["weights"] in ("natural-minilm-l6-real", ["natural-minilm-l6-real"])
    assert list(at.dataframe[0].value["step"]) == list(default_steps["step"])  # the same walk, decoded by other weights
    linked = open_page(app, query="river bank", weights="no-such-weights")
    assert any("weights='no-such-weights'" in as_read(w.value) for w in linked.warning)
    assert linked.selectbox(key="lat_weights").value == ""


def test_bad_input_gives_one_line_messages(app):
    at = open_page(app, query="river bank", target="no-such-passage", k="99", mode="zigzag")
    assert any("k=99" in as_read(w.value) for w in at.warning) and any("mode='zigzag'" in as_read(w.value) for w in at.warning)
    assert any("target passage 'no-such-passage'" in as_read(e.value) for e in at.error)
    at.text_input(key="lat_query").set_value("   ").run()
    assert not at.exception
    assert any("query: empty" in as_read(e.value) for e in at.error)


def test_a_collection_without_a_curated_query_opens_on_its_first_judged_query(app):
    from eqi_core.loaders import load_collection

    at = open_page(app)  # no query in the link: the page walks something rather than showing an empty box
    expected = load_collection(f"beir:{TINY_BEIR}").first_view_query()
    assert expected and at.text_input(key="lat_query").value == expected
    assert any("gold passage" in as_read(c.value) for c in at.caption) and at.dataframe


def test_a_collection_in_another_language_is_warned_about(app):
    """A French collection: the page says the decoder writes English words (its word list covers
    few of the collection's words) and still walks."""
    at = open_page(app, collection=f"beir:{FIXTURES / 'tiny_french'}", query="rive de la rivière", k="2")
    notes = [as_read(w.value) for w in at.warning if "decoder's English word list" in as_read(w.value)]
    assert len(notes) == 1 and notes[0].startswith("Only ") and "“intérêts”" in notes[0]
    assert len(at.dataframe[0].value) == 3  # the walk still runs
    assert int({m.label: m.value for m in at.metric}["Target rank for the query as typed"]) == 1
    assert any(s.value.startswith("**The query as typed already ranks the target first.**") for s in [*at.success, *at.info])


def test_the_sidebars_ranker_scores_every_decoded_step_too(app):
    """The walk runs in MiniLM-L6's space; with BM25 in the sidebar each step also gets BM25's rank of
    the target (ties against it, as counted here from BM25's own scores) and BM25's top 10 on demand."""
    from eqi_core.loaders import load_collection
    from eqi_core.rankers import build_ranker
    from eqi_core.store import ArtifactStore

    at = open_page(app, query="bank loan interest", target="d3", ranker="bm25")  # d3 is judged 1, not the gold
    steps = at.dataframe[0].value
    assert {"nDCG@10 (bm25)", "target rank (bm25)"} <= set(steps.columns)
    bm25 = build_ranker("bm25", load_collection(f"beir:{TINY_BEIR}"), ArtifactStore())
    for text, got in zip(steps["decoded"], steps["target rank (bm25)"]):
        run = bm25.search([text], k=100).frame
        own = run.loc[run["doc_id"] == "d3", "score"]
        assert got == (str(int((run["score"] >= own.iloc[0]).sum())) if len(own) else
                       "> 100" if len(run) == 100 else "not retrieved"), text
    assert any(as_read(c.value).startswith("Under the sidebar's ranker, BM25: the query as typed ranks the target")
               for c in at.caption)
    at.radio(key="lat_top_by").set_value(at.radio(key="lat_top_by").options[1]).run()
    picked = at.selectbox(key="lat_step_pick").value
    top = at.dataframe[1].value
    assert top["doc_id"].tolist() == bm25.search([steps["decoded"].iloc[picked]], k=10).frame["doc_id"].tolist()


def test_the_decoder_without_evaluated_queries_can_be_chosen(app):
    """natural-minilm-l6-v2 (the default's recipe without DL19's, SciFact's and Cranfield's queries) is offered
    beside the default; chosen, the caption says how it was made and its card's evaluation is shown."""
    from eqi_core.decoder.space import ASSETS

    at = open_page(app, query="river bank")
    assert any(o.startswith("natural-minilm-l6-v2") for o in at.selectbox(key="lat_weights").options)
    at.selectbox(key="lat_weights").set_value("natural-minilm-l6-v2").run()
    assert not at.exception, at.exception
    assert any("natural-minilm-l6-v2" in as_read(c.value) and "no query of DL19, SciFact or Cranfield" in as_read(c.value) for c in at.caption)
    card = json.loads((ASSETS / "natural-minilm-l6-v2" / "card.json").read_text(encoding="utf-8"))
    tables = [d.value for d in at.dataframe if "round_trip_f1" in d.value.columns]
    assert tables[0].loc["decoder", "trec-dl19-passage top1"] == pytest.approx(
        card["natural_metrics"]["summary"]["decoder"]["trec-dl19-passage top1"])


def test_ids_are_shown_as_written(app, monkeypatch, tmp_path):
    """A query id "__q__" was shown bold and a passage id "*d*" in italics (Markdown)."""
    import json

    folder = tmp_path / "marked"
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in [
        {"_id": "*d*", "text": "the sloping land beside a river"}, {"_id": "p2", "text": "a bank lends money"}]),
        encoding="utf-8")
    (folder / "queries.jsonl").write_text(json.dumps({"_id": "__q__", "text": "river bank"}) + "\n", encoding="utf-8")
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n__q__\t*d*\t1\n", encoding="utf-8")
    monkeypatch.setenv("EQI_DATA_ROOTS", str(tmp_path))
    at = open_page(app, collection=f"beir:{folder}", query="river bank", k="2")
    assert "Logged query `__q__`; gold passage `*d*`" in [as_read(c.value) for c in at.caption]


@pytest.mark.parametrize("stop", [True, False])
def test_the_stop_box_survives_its_own_link(app, stop):
    """The URL wrote the checked box as stop=True, which the link read back with ``int``: a shared link
    warned "Ignoring the link's stop='True'" and lost the setting; a huge value stopped the page
    (OverflowError in the checkbox). Now written 1/0 and read as a flag."""
    from streamlit.testing.v1 import AppTest

    from tests.app.conftest import APP

    at = open_page(app)
    at.checkbox(key="lat_stop").set_value(stop).run()
    link = dict(at.query_params)
    assert link["stop"] == str(int(stop))
    again = AppTest.from_file(APP, default_timeout=600)
    again.run()
    again.query_params.update(link)
    again.switch_page("pages/latent.py").run()
    assert not again.exception and not again.warning, [w.value for w in again.warning]
    assert again.checkbox(key="lat_stop").value is stop


def test_a_stop_link_that_is_not_a_flag_is_ignored_with_a_warning(app):
    at = open_page(app, stop="99999999999999999999")
    assert [as_read(w.value) for w in at.warning] == ["Ignoring the link's stop='99999999999999999999': not a valid value."]
    assert at.checkbox(key="lat_stop").value is False
    assert open_page(app, stop="TRUE").checkbox(key="lat_stop").value is True  # an older link's "True", any case


def test_the_target_boxs_shown_label_in_the_state_is_its_passage(app):
    """A browser walk (2026-12-08): a filter that found nothing left the target box's shown label in the
    state ("d1 (gold): River bank. ..."), and the page then refused it as a passage id. A label is the
    passage it shows."""
    at = open_page(app, query="river bank")
    label = at.selectbox(key="lat_target").options[0]
    assert label.startswith("d1 (gold): ")
    at.switch_page("pages/collection.py").run()  # the box not drawn, so AppTest can hand the label over
    at.session_state["lat_target"] = label
    at.switch_page("pages/latent.py").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.selectbox(key="lat_target").value == "d1"
