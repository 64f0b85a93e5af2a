"""Real browser: the Ranker coverage page on TREC DL 2019 with its six run files."""
import re

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import click_plotly_cell, download_on_click, screenshot_path, wait_until_idle
from tests.conftest import shared_dataset

pytestmark = pytest.mark.browser


def choose_in_selectbox(page, label: str, option_text: str) -> None:
    page.get_by_label(label, exact=True).first.click()
    page.get_by_role("option", name=option_text).first.click()


def test_coverage_page_on_dl19(dashboard, page):
    shared_dataset("trec-dl19-passage")
    page.goto(dashboard, wait_until="domcontentloaded")
    page.get_by_text("judged passages in the top", exact=False).first.wait_for(timeout=180_000)
    choose_in_selectbox(page, "Collection", "trec-dl19-passage (BEIR)")
    page.get_by_role("heading", name="trec-dl19-passage").first.wait_for(timeout=60_000)
    page.get_by_role("link", name="Ranker coverage").click()
    heading = page.get_by_role("heading", name="TaSC (chronological)", exact=False).first
    heading.wait_for(timeout=120_000)
    assert "over 43 queries" in heading.inner_text()
    page.get_by_text("tied score groups", exact=False).first.wait_for(timeout=120_000)
    page.get_by_role("tab", name="TaSC").click()
    page.wait_for_timeout(2000)
    path = screenshot_path("coverage.png")
    page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 20_000
    # the drill-down opens on the most disputed query and its highest-graded passage, read in the page
    page.get_by_role("heading", name="One query across rankers").first.scroll_into_view_if_needed()
    opened = page.get_by_text("(grade 3), tasb's rank 1: The Salvation Army was founded", exact=False).first
    opened.wait_for(timeout=60_000)
    page.get_by_text("passages of these top 10s", exact=False).first.click()
    page.get_by_text("every ranker's rank", exact=False).first.scroll_into_view_if_needed()
    page.wait_for_timeout(1500)
    page.get_by_role("heading", name="One query across rankers").first.evaluate("e => e.scrollIntoView({block: 'start'})")
    page.wait_for_timeout(500)
    page.screenshot(path=str(screenshot_path("coverage-drilldown.png")))
    # a click on a Pairwise bar (not the first: that is the most disputed query, already open) drills into its query
    page.get_by_role("tab", name="Pairwise").click()
    chart = page.locator("[data-testid='stPlotlyChart']").filter(has_text="per query").first
    chart.scroll_into_view_if_needed()
    chart.wait_for(state="visible", timeout=60_000)
    page.wait_for_timeout(1000)
    bar, height = chart.locator(".js-plotly-plot").first.evaluate(  # the 4th bar: a clear difference, not the first
        "gd => { const q = gd._fullData[gd._fullData.length - 1]; return [q.customdata[3][0], q.y[3]]; }")  # the layer of points
    assert abs(height) > 0.05
    click_plotly_cell(page, chart, 4, height / 2)  # the 4th query of the sort stands at x = 4
    # the drill-down's box (its value is an input's, not text) now names the clicked bar's query
    query_box = page.get_by_role("combobox", name="Query", exact=True)
    expect(query_box).to_have_value(re.compile(f"^{bar}: "), timeout=60_000)
    # a click on a cell of the clustered heatmap drills into that cell's query
    wait_until_idle(page)
    page.get_by_role("tab", name="Heatmap").click()
    heat = page.locator("[data-testid='stPlotlyChart']").filter(has_text="per query and ranker").first
    heat.wait_for(state="visible", timeout=60_000)
    page.wait_for_timeout(1000)
    rows, rankers = heat.locator(".js-plotly-plot").first.evaluate(
        "gd => [gd._fullLayout.yaxis._categories, gd._fullLayout.xaxis._categories]")
    qid = next(q for q in rows[len(rows) // 2:] if not query_box.input_value().startswith(f"{q}:"))  # not the open one
    click_plotly_cell(page, heat, rankers[0], qid)
    expect(query_box).to_have_value(re.compile(f"^{qid}: "), timeout=60_000)
    # the heatmap's export is made when clicked, without the on-screen click hint
    with page.expect_download(timeout=120_000) as download:
        page.locator(".st-key-dl_fig_heat_html button").click()
    exported = download.value.path().read_text(encoding="utf-8")
    assert "per query and ranker" in exported and "click: this query across rankers" not in exported
    # PNG at slide resolution, twice: the second click finds the server's kaleido browser open
    # (tests/unit/test_figure_export.py counts the starts)
    for _ in range(2):
        png = download_on_click(page, page.locator(".st-key-dl_fig_heat_png button"), timeout_ms=120_000).path().read_bytes()
        assert png.startswith(b"\x89PNG") and int.from_bytes(png[16:20], "big") == 3000  # 1000 px at 3x
    # the comparison report is made when its button is clicked (not on every rerun): the query drilled into is in it
    wait_until_idle(page)
    with page.expect_download(timeout=120_000) as download:
        page.get_by_role("button", name="Comparison report (HTML, opens offline)").click()
    report = download.value.path().read_text(encoding="utf-8")
    assert "<h1>Ranker coverage report</h1>" in report and f"One query across rankers: {qid}</h2>" in report
