"""AppTest of the Ranker coverage page."""
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from tests.app.conftest import as_read
from tests.conftest import FIXTURES, TINY_BEIR, shared_dataset

APP = str(Path(__file__).resolve().parents[2] / "app.py")


def open_coverage(spec: str, monkeypatch, roots) -> AppTest:
    monkeypatch.setenv("EQI_DATA_ROOTS", str(roots))
    at = AppTest.from_file(APP, default_timeout=300)
    at.session_state["_kept_collection_spec"] = spec
    at.run()
    at.switch_page("pages/coverage.py").run()
    return at


def tasc_table(at):
    return next(d.value for d in at.dataframe if "TaSC max (95% CI)" in d.value.columns)


def test_live_rankers_on_tiny_collection(monkeypatch):
    at = open_coverage(f"beir:{TINY_BEIR}", monkeypatch, FIXTURES)
    assert not at.exception, at.exception
    from eqi_core.figure_export import image_browser

    images = [b.proto for b in at.get("download_button") if b.proto.label in ("PNG", "SVG")]
    assert images and all(b.disabled == (image_browser() is None) for b in images)  # live where chromium is
    table = tasc_table(at)
    assert table["ranker"].tolist() == ["bm25", "minilm-l3-onnx"]  # chronological: 1994, 2021
    assert at.subheader[0].value.startswith("TaSC (chronological) and mean nDCG@10 over 4 queries")
    at.radio(key="cov_mode").set_value("all-others").run()
    assert not at.exception
    assert tasc_table(at)["TaSC max (95% CI)"].str.match(r"^\d\.\d{4} \[").all()
    query = at.selectbox(key="cov_query")
    assert query.value == "q2" and query.options[0] != "q2"  # opens where the rankers differ most, not on the first
    tests = next(d for d in at.dataframe if "Wilcoxon p" in d.value.columns)
    assert "Wilcoxon p (holm)" in tests.value.columns and '"%.2e"' in tests.proto.columns  # not 0.0000...0008
    side = next(d for d in at.dataframe if "bm25 grade" in d.value.columns)
    assert side.value["bm25"].isna().any() and side.proto.placeholder == "—"  # BM25 lists 6 of 10: not "None"
    # the side-by-side opens on the best judged passage, its text (Markdown-escaped) and where each ranker puts it
    # q2 is "bank loan interest": its words marked as BM25 matches them
    assert any(m.value == "**d6** (grade 2), bm25's rank 1: :orange-background[Loans]\\. a :orange-background[bank] "
                          ":orange-background[loan] is money lent at :orange-background[interest] to be paid back later"
               for m in at.markdown)  # "Loans" too: BM25 stems it to "loan"
    assert any(as_read(c.value).startswith("Words of “bank loan interest” in it") for c in at.caption)
    walk = next(p for p in at.get("page_link") if p.proto.label.startswith("What should it have asked?"))
    assert walk.proto.page == "latent" and "query=bank+loan+interest" in walk.proto.query_string
    assert "target=d6" in walk.proto.query_string  # q2's most relevant passage (grade 2)
    ranks = next(d.value for d in at.dataframe if list(d.value.columns) == ["bm25", "minilm-l3-onnx"])
    assert ranks.loc["rank"].tolist() == ["1", "1"]
    listed = next(d.value for d in at.dataframe if {"doc_id", "grade", "passage"} <= set(d.value.columns))
    assert listed["doc_id"].iloc[0] == "d6" and listed["grade"].iloc[0] == "2"  # every passage of the top 10s, once
    assert listed["doc_id"].is_unique and set(side.value["bm25"].dropna()) | set(side.value["minilm-l3-onnx"].dropna()) == set(listed["doc_id"])
    assert pd.isna(listed.set_index("doc_id").at["d5", "bm25"])  # BM25 does not list d5 at all
    assert listed["passage"].iloc[0].startswith("Loans. a bank loan")  # the text itself, not Markdown-escaped
    at.session_state["cov_side_by_side_q2"] = {"selection": {"cells": [(5, "minilm-l3-onnx")]}}  # a click on d5
    at.run()
    assert any(m.value.startswith("**d5** (unjudged), minilm\\-l3\\-onnx's rank 6:") for m in at.markdown)
    ranks = next(d.value for d in at.dataframe if list(d.value.columns) == ["bm25", "minilm-l3-onnx"])
    assert ranks.loc["rank"].tolist() == ["not in its top 6", "6"]  # BM25 lists six passages for q2, not d5
    at.selectbox(key="cov_measure").set_value("RR@10").run()
    assert "mean RR@10" in at.subheader[0].value
    at.selectbox(key="cov_query").set_value("q2").run()
    side = next(d.value for d in at.dataframe if "bm25 grade" in d.value.columns)
    assert len(side) == 10
    at.multiselect(key="cov_live").set_value(["bm25"]).run()
    assert any("at least two rankings" in as_read(i.value) for i in at.info)


@pytest.mark.parametrize("chart, customdata", [("fig_pair", lambda q: [q, f"{q}: its text"]),
                                                ("fig_pair_scatter", lambda q: [q, 2, f"{q}: its text<br>q9"])])
def test_a_click_on_a_pairwise_bar_or_point_drills_into_that_query(monkeypatch, chart, customdata):
    at = open_coverage(f"beir:{TINY_BEIR}", monkeypatch, FIXTURES)
    assert at.selectbox(key="cov_query").value == "q2"  # the most disputed, before any click
    other = next(label.split(":")[0] for label in at.selectbox(key="cov_query").options if not label.startswith("q2:"))
    at.session_state[chart] = {"selection": {"points": [{"customdata": customdata(other), "point_index": 0}],
                                             "box": [], "lasso": []}}
    at.run()
    assert not at.exception, at.exception
    assert at.selectbox(key="cov_query").value == other
    at.selectbox(key="cov_query").set_value("q2").run()  # a choice in the box afterwards is not undone by the old click
    assert at.selectbox(key="cov_query").value == "q2"


@pytest.mark.data
def test_dl19_six_runs_published_means(monkeypatch):
    folder = shared_dataset("trec-dl19-passage")
    at = open_coverage(f"beir:{folder}", monkeypatch, folder.parent)
    assert not at.exception
    means = dict(zip(tasc_table(at)["ranker"], at.dataframe[1].value["mean_metric"]))
    assert round(means["bm25"], 4) == 0.5058 and round(means["repllama"], 4) == 0.7384
    assert any("2,359 tied score groups" in as_read(i.value) for i in at.info)
    # paired tests in the table's (chronological) order, A the later ranker: A − B > 0 means it improved
    tests = next(d.value for d in at.dataframe if "A − B" in d.value.columns)
    order = tasc_table(at)["ranker"].tolist()
    assert order[:2] == ["bm25", "bm25-rm3"] and len(tests) == 15
    assert [tuple(r) for r in tests[["A", "B"]].head(2).to_numpy()] == [("repllama", "openai-ada2"), ("repllama", "splade-pp-ed")]
    assert all(order.index(a) > order.index(b) for a, b in tests[["A", "B"]].to_numpy())
    first = tests.iloc[0]
    assert round(first["A − B"], 4) == round(means["repllama"] - means["openai-ada2"], 4) == 0.0349
    # the figures list the rankers in the table's order too; the Pairwise tab opens on the latest vs the baseline
    sorted_fig = next(c for c in at.get("plotly_chart") if "fig_sorted" in c.proto.id)
    import plotly.io

    assert [t.name for t in plotly.io.from_json(sorted_fig.proto.spec).data] == order
    assert (at.selectbox(key="cov_pair_a").value, at.selectbox(key="cov_pair_b").value) == ("repllama", "bm25")
    at.multiselect(key="cov_live").set_value(["bm25"]).run()  # the live BM25 beside the run file bm25.dl19.trec
    assert not at.exception, at.exception
    rankers = tasc_table(at)["ranker"].tolist()
    assert "bm25" in rankers and "bm25.dl19" in rankers and len(rankers) == 7  # the file no longer replaces it


def test_figure_images_are_greyed_out_saying_why_without_a_browser(monkeypatch):
    """Without chromium a PNG click could only fail: the buttons say what to install; HTML still works.
    (With a browser they are live: test_live_rankers_on_tiny_collection.)"""
    monkeypatch.setenv("BROWSER_PATH", "/nonexistent/chromium")
    at = open_coverage(f"beir:{TINY_BEIR}", monkeypatch, FIXTURES)
    assert not at.exception, at.exception
    buttons = [b.proto for b in at.get("download_button") if b.proto.label in ("PNG", "SVG", "HTML")]
    images = [b for b in buttons if b.label in ("PNG", "SVG")]
    assert images and all(b.disabled and "apt install chromium" in b.help for b in images)
    assert not any(b.disabled for b in buttons if b.label == "HTML")
