"""Every page's state round-trips through the URL (st.query_params)."""
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import FIXTURES, TINY_BEIR

APP = str(Path(__file__).resolve().parents[2] / "app.py")


@pytest.fixture
def at(monkeypatch):
    monkeypatch.setenv("EQI_DATA_ROOTS", str(FIXTURES))
    return AppTest.from_file(APP, default_timeout=300)


def test_collection_page_link_opens_the_same_search(at):
    at.query_params.update({"collection": f"beir:{TINY_BEIR}", "q": "piano", "k": "3"})
    at.run()
    assert not at.exception
    assert at.title[0].value == "tiny_beir"
    assert at.text_input(key="search_query").value == "piano" and at.number_input(key="search_k").value == 3
    assert len(at.dataframe[0].value) <= 3
    at.text_input(key="search_query").set_value("river").run()
    assert at.query_params["q"] == ["river"] or at.query_params["q"] == "river"


def test_exposure_page_link(at):
    at.run()  # AppTest opens the home page first; the link then arrives, as when a user pastes it
    at.query_params.update({"collection": f"beir:{TINY_BEIR}", "ranker": "minilm-l3-onnx", "passage": "d6",
                            "nqd": "3", "ndq": "5", "gqd": "0.3", "gdq": "1.0"})
    at.switch_page("pages/exposure.py").run()
    assert not at.exception, at.exception
    assert at.selectbox(key="exp_doc").value == "d6"
    assert at.slider(key="exp_nqd").value == 3 and at.slider(key="exp_gqd").value == pytest.approx(0.3)


def test_bad_link_value_is_ignored_with_a_warning(at):
    at.query_params.update({"collection": f"beir:{TINY_BEIR}", "k": "many"})
    at.run()
    assert not at.exception
    assert any("Ignoring the link's k='many'" in w.value for w in at.warning)
    assert at.number_input(key="search_k").value == 10
