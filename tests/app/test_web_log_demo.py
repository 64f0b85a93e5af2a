"""The realistic demo collection (DL19 passages + the MS MARCO log) loads in the page, from a link."""
import pytest
from streamlit.testing.v1 import AppTest

from tests.app.conftest import APP, as_read
from tests.conftest import SHARED_DATA, shared_dataset

pytestmark = pytest.mark.data


def test_dl19_with_the_ms_marco_log_opens_on_the_collection_page(monkeypatch):
    from eqi_core.loaders.registry import web_log_demo

    shared_dataset("trec-dl19-passage")
    monkeypatch.setenv("EQI_DATA_ROOTS", str(SHARED_DATA))
    at = AppTest.from_file(APP, default_timeout=600)
    at.query_params["collection"] = web_log_demo([SHARED_DATA])
    at.run()
    assert not at.exception, at.exception
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Passages"] == "14,581" and metrics["Queries"] == "6,980"
    assert "msmarco-passage-dev-subset.tsv" in as_read(at.title[0].value)
    assert any("A realistic audit" in m.value for m in at.markdown)  # its own box, linking its curated passage
    # MS MARCO's mis-decoded characters ("thatâ€™s") are repaired in what the page shows, not in the data
    browse = next(d.value for d in at.dataframe if "title" in d.value.columns and len(d.value) == 500)
    mojibake = "\u00e2\u20ac|\u00e2\u0080|\u00c2\u00b0"
    from eqi_core.loaders import load_collection

    raw = load_collection(web_log_demo([SHARED_DATA])).passages.set_index("doc_id").loc[browse["doc_id"], "text"]
    assert raw.str.contains(mojibake).sum() > 50  # in the file (rankers read it as written) ...
    assert not browse["text"].str.contains(mojibake).any()  # ... not on screen
    assert any(as_read(i.value).startswith("3,393 of 14,581 passages (23%) hold mis-decoded characters") for i in at.info)
    assert browse["text"].str.contains("\u2019").any()  # the right single quote, repaired


def test_the_web_log_box_stays_off_other_collections_pages(monkeypatch):
    shared_dataset("cranfield")
    shared_dataset("trec-dl19-passage")
    monkeypatch.setenv("EQI_DATA_ROOTS", str(SHARED_DATA))
    at = AppTest.from_file(APP, default_timeout=600)
    at.query_params["collection"] = f"beir:{SHARED_DATA / 'cranfield'}"
    at.run()
    assert not at.exception, at.exception
    assert {m.label: m.value for m in at.metric}["Passages"] == "1,400"
    assert not any("A realistic audit" in m.value for m in at.markdown)  # a box about DL19 on Cranfield's page

