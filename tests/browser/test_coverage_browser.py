"""Real browser: the Ranker coverage page on TREC DL 2019 with its six run files."""
import pytest

from tests.browser.conftest import screenshot_path
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
    box = chart.bounding_box()
    page.mouse.click(box["x"] + box["width"] * 0.35, box["y"] + box["height"] * 0.55)
    opened = page.locator("[data-testid='stSelectbox']").filter(has_text="when was the salvation army founded")
    opened.first.wait_for(state="detached", timeout=60_000)  # the drill-down's box now names the clicked query
