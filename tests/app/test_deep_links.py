"""Every page's state round-trips through the URL (st.query_params)."""

import pytest

from tests.app.conftest import as_read
from tests.conftest import TINY_BEIR


def test_collection_page_link_opens_the_same_search(app):
    app.query_params.update({"collection": f"beir:{TINY_BEIR}", "q": "piano", "k": "3"})
    app.run()
    assert not app.exception
    assert as_read(app.title[0].value) == "tiny_beir"
    assert app.text_input(key="search_query").value == "piano" and app.number_input(key="search_k").value == 3
    assert len(app.dataframe[0].value) <= 3
    app.text_input(key="search_query").set_value("river").run()
    assert app.query_params["q"] == ["river"] or app.query_params["q"] == "river"


def test_a_link_without_a_query_opens_the_first_judged_one(app):
    """Off WordNet (whose Collection page opens on "bank"), the search opens on the collection's first
    query with judgments, so a first view has grades and measures to show."""
    from eqi_core.loaders import load_collection

    tiny = load_collection(f"beir:{TINY_BEIR}")
    first = tiny.queries[tiny.queries["query_id"].isin(tiny.judgments)]["text"].iloc[0]
    app.query_params.update({"collection": f"beir:{TINY_BEIR}"})
    app.run()
    assert not app.exception
    assert app.text_input(key="search_query").value == first
    assert any(as_read(c.value).startswith(f"Logged query `{tiny.find_query(first)}`") for c in app.caption)


def open_exposure_link(app, **params):
    """A link to the Exposure page on the fixture collection, arriving after the home page has run
    (as when a user pastes it)."""
    app.run()
    app.query_params.update({"collection": f"beir:{TINY_BEIR}", **params})
    app.switch_page("pages/exposure.py").run()
    assert not app.exception, app.exception


def test_exposure_page_link(app):
    open_exposure_link(app, ranker="minilm-l3-onnx", passage="d6", nqd="3", ndq="5", gqd="0.3", gdq="1.0")
    assert app.selectbox(key="exp_doc").value == "d6"
    assert app.slider(key="exp_nqd").value == 3 and app.slider(key="exp_gqd").value == pytest.approx(0.3)


def test_exposure_page_link_opens_the_comparison_with_another_ranker(app):
    open_exposure_link(app, ranker="bm25", passage="d1", compare="minilm-l3-onnx")
    assert app.selectbox(key="exp_compare").value == "minilm-l3-onnx"
    assert any("change" in d.value.columns for d in app.dataframe)


@pytest.mark.parametrize("compare", ["bm25", "nope"])
def test_a_link_comparing_with_the_shown_or_an_unknown_ranker_compares_nothing(app, compare):
    open_exposure_link(app, ranker="bm25", passage="d1", compare=compare)
    assert app.selectbox(key="exp_compare").value is None
    assert not any("change" in d.value.columns for d in app.dataframe)


def test_exposure_page_link_to_a_pasted_passage(app):
    open_exposure_link(app, ranker="bm25", text="a loan from the bank", nqd="3")
    assert app.radio(key="exp_source").value == "Paste a new passage"
    assert app.text_area(key="exp_text").value == "a loan from the bank"
    assert "Exposing queries (exact)" in [m.label for m in app.metric]
    params = dict(app.query_params)
    assert "passage" not in params and params["text"] in (["a loan from the bank"], "a loan from the bank")
    app.text_area(key="exp_text").set_value("bank " * 500).run()  # 2,500 characters: not put in the link
    assert "text" not in dict(app.query_params) and any("leaves out pasted text" in as_read(c.value) for c in app.caption)
    app.radio(key="exp_source").set_value("From the collection").run()
    assert "text" not in dict(app.query_params) and "passage" in dict(app.query_params)


def test_bad_link_value_is_ignored_with_a_warning(app):
    app.query_params.update({"collection": f"beir:{TINY_BEIR}", "k": "many"})
    app.run()
    assert not app.exception
    assert any("Ignoring the link's k='many'" in as_read(w.value) for w in app.warning)
    assert app.number_input(key="search_k").value == 10


def test_a_link_with_nan_or_a_nul_character_is_ignored_with_a_warning(app):
    """?gqd=nan passed every range check and stopped the Exposure page with RELQ's error; a NUL in
    ?log= stopped it with "embedded null byte" (found by running every page with odd link values)."""
    app.run()
    app.query_params.update({"collection": f"beir:{TINY_BEIR}", "ranker": "bm25", "gqd": "nan", "log": "a\x00b"})
    app.switch_page("pages/exposure.py").run()
    assert not app.exception, app.exception
    warnings = " ".join(as_read(w.value) for w in app.warning)
    assert "Ignoring the link's gqd='nan': not a valid value" in warnings
    assert "Ignoring the link's log='a\\x00b': not a valid value" in warnings
    assert app.slider(key="exp_gqd").value == 0.5


def test_exposure_link_to_an_unknown_passage_or_too_deep_a_cut_says_so(app):
    app.run()
    app.query_params.update({"collection": f"beir:{TINY_BEIR}", "ranker": "bm25", "passage": "no-such-id", "nqd": "5000"})
    app.switch_page("pages/exposure.py").run()
    assert not app.exception, app.exception
    warnings = " ".join(as_read(w.value) for w in app.warning)
    assert "passage 'no-such-id' is not in" in warnings and "nqd=5000 is outside" in warnings
    assert app.selectbox(key="exp_doc").value != "no-such-id" and app.slider(key="exp_nqd").value == 100


def test_out_of_range_link_numbers_are_brought_inside_with_a_warning(app):
    app.query_params.update({"collection": f"beir:{TINY_BEIR}", "k": "5000"})
    app.run()
    assert not app.exception, app.exception
    assert any("k=5000 is outside 1–100" in as_read(w.value) for w in app.warning)
    assert app.number_input(key="search_k").value == 100


def test_coverage_link_with_an_unknown_ranker_and_mode_says_what_it_ignored(app):
    app.run()
    app.query_params.update({"collection": f"beir:{TINY_BEIR}", "live": "nosuch,bm25,minilm-l3-onnx", "mode": "weird"})
    app.switch_page("pages/coverage.py").run()
    assert not app.exception, app.exception
    warnings = " ".join(as_read(w.value) for w in app.warning)
    assert "Ignoring the link's live ranker 'nosuch'" in warnings and "Ignoring mode='weird'" in warnings
    assert app.multiselect(key="cov_live").value == ["bm25", "minilm-l3-onnx"]
    assert app.radio(key="cov_mode").value == "chronological"


def test_a_link_value_is_shown_as_written_not_as_markdown(app):
    """A shared link is someone else's text: a Markdown link in it must not become a link in our warning."""
    app.query_params.update({"collection": f"beir:{TINY_BEIR}", "k": "[click here](https://example.org)"})
    app.run()
    assert not app.exception
    shown = [w.value for w in app.warning if "Ignoring the link's k=" in w.value]  # as written: escaped
    assert shown and r"\[click here\]\(https" in shown[0] and "[click here](" not in shown[0]
