"""Real browser: the Exposure page on the WordNet default with BM25 (exact map + reverse methods)."""
import pytest

from tests.browser.conftest import click_plotly_cell, download_on_click, screenshot_path, wait_until_idle, wait_until_settled

pytestmark = pytest.mark.browser


def test_exposure_page_shows_exposing_queries(dashboard, page):
    page.goto(dashboard, wait_until="domcontentloaded")
    page.get_by_text("judged passages in the top", exact=False).first.wait_for(timeout=180_000)
    page.get_by_role("link", name="Exposure", exact=True).click()
    metric = page.get_by_text("Exposing queries (exact)", exact=False).first
    metric.wait_for(timeout=300_000)
    page.get_by_text("Exact (brute force)", exact=False).first.wait_for(timeout=120_000)
    page.get_by_text("a financial institution that accepts deposits", exact=False).first.wait_for(timeout=120_000)
    page.wait_for_timeout(2000)
    path = screenshot_path("exposure.png")
    page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 20_000
    # the audit report is made when its button is clicked (not on every rerun), with what the page shows
    download = download_on_click(page, page.get_by_role("button", name="Audit report (HTML, opens offline)"))
    assert download.suggested_filename == "exposure-report-08420278-n.html"
    report = download.path().read_text(encoding="utf-8")
    assert "<h1>Exposure audit report</h1>" in report and "Exposing queries (exact, brute force)" in report
    assert "a financial institution that accepts deposits" in report and "08420278-n" in report


def test_exposure_under_another_ranker_by_deep_link(dashboard, page):
    """BM25 against MiniLM-L6 on the bank passage: the summary and the rank-against-rank scatter."""
    page.goto(f"{dashboard}/exposure?collection=wordnet&ranker=bm25&passage=08420278-n&ndq=50&compare=minilm-l6",
              wait_until="domcontentloaded")
    summary = page.get_by_text("queries expose it under BM25", exact=False).first
    summary.wait_for(timeout=300_000)
    assert summary.inner_text().startswith("49 queries expose it under BM25, 76 under MiniLM-L6 (dense): 33 under both")
    page.get_by_text("The passage's rank for each exposing query", exact=False).first.wait_for(timeout=60_000)
    page.wait_for_timeout(1500)
    page.get_by_role("heading", name="Under another ranker").first.evaluate("e => e.scrollIntoView({block: 'start'})")
    page.wait_for_timeout(500)
    page.screenshot(path=str(screenshot_path("exposure-compare.png")))


def test_clicks_on_the_patience_heatmap_and_the_exposure_bars(dashboard, page):
    """A click on a cell of the passage's RELQ-over-patience heatmaps moves both patience sliders (and
    the outlined cell, the table's first column and the link) to that cell's pair; a click on a bar of
    the exposure chart shows what its query retrieves."""
    page.goto(f"{dashboard}/exposure?collection=wordnet&ranker=bm25&passage=08420278-n&gqd=0.5&gdq=0.9",
              wait_until="domcontentloaded")
    page.get_by_text("Exposing queries (exact)", exact=False).first.wait_for(timeout=300_000)
    wait_until_idle(page)
    page.get_by_text("RELQ of this passage over all patience parameters", exact=False).first.click()
    wait_until_idle(page)  # opening it reruns the page (it stays open across reruns)
    chart = page.locator("[data-testid='stPlotlyChart']").filter(has_text="patience parameters").first
    chart.wait_for(state="visible", timeout=60_000)
    page.wait_for_timeout(1000)
    click_plotly_cell(page, chart, "0.3", "0.2", axes="2")  # the second method's panel: γ_d→q 0.3, γ_q→d 0.2
    page.get_by_text("(γ_q→d 0.2, γ_d→q 0.3)", exact=False).first.wait_for(timeout=60_000)
    page.wait_for_function("() => location.search.includes('gqd=0.2') && location.search.includes('gdq=0.3')",
                           timeout=30_000)
    wait_until_settled(page)  # the click's URL update can rerun the page once more, replacing the charts
    bars = page.locator("[data-testid='stPlotlyChart']").filter(has_text="Exposing queries found").first
    bars.scroll_into_view_if_needed()
    page.wait_for_timeout(1000)
    x, height, query = bars.locator(".js-plotly-plot").first.evaluate(
        "gd => [gd._fullData[0].x[0], gd._fullData[0].y[0], gd._fullData[0].customdata[0][0]]")
    assert height > 0
    click_plotly_cell(page, bars, x, height / 2)
    page.get_by_text(f"What “{query}” shows", exact=False).first.wait_for(timeout=60_000)
