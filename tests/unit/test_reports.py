"""HTML audit reports: self-contained (plotly.js inlined once), escaped, reproducible."""
import io
from pathlib import Path

import pandas as pd
import pytest

from eqi_core.exposure.lookup import passage_exposure
from eqi_core.exposure.relq import relq_rbp
from eqi_core.exposure.setup import prepare_exposure
from eqi_core.figures.exposure import exposure_bars, lorenz_curve
from eqi_core.reports import coverage_report, exposure_report
from tests.conftest import ROOT, TINY_BEIR

REPORTS = ROOT / "tests" / "_artifacts"


def tiny_passage_exposure(store_dir: Path):
    from eqi_core.loaders import load_collection
    from eqi_core.store import ArtifactStore

    setup = prepare_exposure(load_collection(f"beir:{TINY_BEIR}"), "minilm-l3-onnx", ArtifactStore(store_dir), depth=3)
    methods = {"dense": setup.dense_reverse(), "bm25": setup.bm25_reverse()}
    return passage_exposure(setup, methods, [relq_rbp(0.5, 0.9, 5)], n_qd=3, n_dq=5, doc_id="d1")


def write_report(name: str, text: str) -> Path:
    REPORTS.mkdir(parents=True, exist_ok=True)
    path = REPORTS / name
    path.write_text(text, encoding="utf-8")
    return path


def build_exposure_report(store_dir: Path) -> tuple[str, Path]:
    """The report of passage d1 of the fixture collection, written to tests/_artifacts."""
    result = tiny_passage_exposure(store_dir)
    bars = exposure_bars(result.lists, 3, result.relq.iloc[:, 0].to_dict(), "RELQ")
    curve = pd.DataFrame({"passages": [0.0, 0.5, 1.0], "retrievability": [0.0, 0.2, 1.0]})
    lorenz = lorenz_curve(curve, 0.3, 0.5, "d1")  # two figures, as the page passes them: plotly.js inlined once
    page = exposure_report(result, {"collection fingerprint": "abc123", "n_q->d": 3}, [bars, lorenz],
                           {"r": 3, "cutoff": 3, "share_below": 0.5, "gini": 0.3})
    return page, write_report("exposure-report.html", page)


def test_an_empty_list_is_a_sentence_not_a_bare_header(result):
    """A passage no query exposes had header rows with nothing under them in its report."""
    import dataclasses

    unseen = dataclasses.replace(result, exact=result.exact.iloc[:0],
                                 lists={**result.lists, "bm25": result.lists["bm25"].iloc[:0]})
    page = exposure_report(unseen, {}, [])
    assert "No logged query shows this passage in its top 3." in page.split("Exposing queries (exact, brute force)</h2>")[1]
    assert page.split("<h2>bm25</h2>")[1].startswith("<p class='note'>No logged query found.</p>")


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    return tiny_passage_exposure(tmp_path_factory.mktemp("report_store"))


def test_exposure_report_is_self_contained(tmp_path):
    page, _ = build_exposure_report(tmp_path)
    assert page.count("<script type=\"text/javascript\">/**") <= 1  # plotly.js inlined once
    assert "<script src=\"http" not in page  # nothing fetched from the network
    assert "abc123" in page and "River bank. the sloping land" in page and "Exposing queries (exact" in page
    assert page.count("class=\"plotly-graph-div\"") == 2
    ranks = pd.read_html(io.StringIO(page.split("<h2>dense</h2>")[1]), keep_default_na=False)[0]["rank"].astype(str)
    assert set(ranks) <= {"1", "2", "3", "—"} and (ranks == "—").any()  # whole ranks; — beyond n_q->d
    assert "&lt;NA&gt;" not in page and "<td>None</td>" not in page
    exact = pd.read_html(io.StringIO(page.split("Exposing queries (exact, brute force)</h2>")[1]), keep_default_na=False)[0]
    assert "words in passage" in exact.columns  # d1: "River bank. the sloping land beside a river"
    assert exact.set_index("query").at["river bank", "words in passage"] == "river, bank"


def test_report_escapes_text(result):
    from dataclasses import replace

    evil = replace(result, text="<script>alert(1)</script>")
    page = exposure_report(evil, {}, [])
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;" in page


def test_coverage_report():
    from eqi_core.coverage.tasc import tasc_table
    from eqi_core.figures import coverage as figs

    values = pd.DataFrame({"bm25": [1.0, 0.0, 0.0], "dense": [0.5, 1.0, 0.0]}, index=["q1", "q2", "q3"])
    table, _ = tasc_table(values, "all-others", n_boot=100)
    page = coverage_report(table, values, "RR@10", {"collection fingerprint": "f00"}, [figs.tasc_bars(table)], [],
                           {"bm25": [], "dense": ["q2"]}, {"q2": "second query", "q3": "third"})
    assert "Unsolved by every ranker (1 query)" in page and "Solved only by dense (1 query)" in page
    assert "second query" in page and "f00" in page and "Paired significance tests" not in page
    from eqi_core.coverage.significance import pairwise_tests, readable_tests

    tests = readable_tests(pairwise_tests(values, "holm"), "holm")
    page = coverage_report(table, values, "RR@10", {}, [], [], {}, {}, tests)
    assert "Paired significance tests" in page and "Wilcoxon p (holm)" in page
    assert f"{tests['t-test p'].iloc[0]:.1e}" in page and "-0.1667" in page  # p as 7.4e-01; A − B = 1/3 - 1/2, signed
    write_report("coverage-report.html", page)
    from eqi_core.coverage.drilldown import QueryDrilldown

    metrics = pd.DataFrame({"RR@10": [1.0, 0.5]}, index=["bm25", "dense"])
    side = pd.DataFrame({"rank": [1, 2], "bm25": ["d1", None], "bm25 grade": ["1", ""]})
    passages = pd.DataFrame({"doc_id": ["d1"], "grade": ["1"], "bm25": pd.array([1], dtype="Int64"),
                             "dense": pd.array([None], dtype="Int64"), "passage": ["<b>river</b> bank"]})
    page = coverage_report(table, values, "RR@10", {}, [], [], {}, {}, None,
                           QueryDrilldown("q1", "bank of a river", metrics, side, passages))
    assert "One query across rankers: q1" in page and "bank of a river" in page
    assert "&lt;b&gt;river&lt;/b&gt; bank" in page and "<b>river</b>" not in page  # data text escaped
    assert "&lt;NA&gt;" not in page and "<td>None</td>" not in page and "The 1 passage listed" in page


def test_exposure_report_holds_what_the_auditor_looked_at(result):
    """A selected query's results and the decoded queries no log holds go into the report as the page
    shows them: the line over the table, the marked row, '—' for a decoded query that misses it."""
    from eqi_core.exposure.generative import GeneratedExposure

    top = pd.DataFrame({"rank": [1, 2], "doc_id": ["d4", "d1"], "score": [1.5, 1.25],
                        "passage": ["Fishing.", "River bank."], "target": ["", "◀ this passage"]})
    decoded = pd.DataFrame({"query": ["bank river", "shore"], "origin": ["between", "passage"],
                            "rank": [2.0, float("inf")], "in_log": [False, False], "exposes": [True, False],
                            "exposure": [2, 0]})
    page = exposure_report(result, {}, [], shown=[("q1", "river <bank>", "its top 10 (this passage at rank 2)", top)],
                           generated=GeneratedExposure(decoded, 3, 7))
    section = page.split("<h2>What “river &lt;bank&gt;” (q1) shows</h2>")[1]
    assert section.startswith("<p>Its top 10 (this passage at rank 2).</p>")
    table = pd.read_html(io.StringIO(section), keep_default_na=False)[0]
    assert table["target"].tolist() == ["", "◀ this passage"] and table["rank"].tolist() == [1, 2]
    generated = page.split("<h2>Queries no log holds yet</h2>")[1]
    assert "<b>1</b> decoded query the log does not hold shows this passage in its top 3" in generated  # 1 of 2
    assert "exposure 7 from the log, +2 from them (9 in all)" in generated
    rows = pd.read_html(io.StringIO(generated), keep_default_na=False)[0]
    assert rows["rank"].astype(str).tolist() == ["2", "—"] and rows["in the log"].tolist() == ["no", "no"]
    assert page.index("shows</h2>") < page.index("Queries no log holds yet")  # the page's order
