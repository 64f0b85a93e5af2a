"""Real browser: the dashboard starts on the WordNet default, a search runs, a screenshot is saved."""
import pytest

from tests.browser.conftest import screenshot_path

pytestmark = pytest.mark.browser


def test_search_bank_in_real_browser(dashboard, page):
    page.goto(dashboard, wait_until="domcontentloaded")
    results = page.get_by_text("judged passages in the top", exact=False).first
    results.wait_for(timeout=180_000)
    assert "Logged query bank" in results.inner_text()
    page.get_by_role("heading", name="WordNet 3.0").first.wait_for(timeout=120_000)

    box = page.get_by_role("textbox", name="Query", exact=True)
    box.fill("interest")
    box.press("Enter")
    caption = page.get_by_text("Logged query interest", exact=False).first
    caption.wait_for(timeout=60_000)
    assert "judged passages in the top 10" in caption.inner_text()
    from tests.browser.conftest import wait_until_idle

    wait_until_idle(page)  # the caption comes before the rest of the run (the chart, the "Stop" widget)
    page.wait_for_timeout(1500)  # let plotly finish drawing before the screenshot
    path = screenshot_path("collection.png")
    page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 20_000


def test_where_the_ranker_fails_in_real_browser(dashboard, page):
    """The Collection page scores the sidebar's ranker on every judged query (one click on a store that
    has no run yet) and lists the queries it fails hardest; a screenshot for the README."""
    from tests.browser.conftest import wait_until_idle

    page.goto(dashboard, wait_until="domcontentloaded")
    heading = page.get_by_role("heading", name="Where BM25 fails")
    heading.wait_for(timeout=180_000)
    wait_until_idle(page)
    button = page.get_by_role("button", name="Score BM25 on every judged query")
    if button.count():
        button.click()
    mean = page.get_by_text("mean nDCG@10", exact=True)
    mean.wait_for(timeout=180_000)
    wait_until_idle(page)
    section = page.get_by_text("The queries it fails hardest", exact=False)
    assert section.count() == 1
    assert page.get_by_text("0.273", exact=True).count() >= 1  # WordNet, BM25: the README's mean nDCG@10
    page.wait_for_timeout(1500)  # plotly draws the histogram
    # scrolled to the top only now, and the box kept inside the viewport: the histogram drawn after an
    # earlier scroll once moved the heading out of view (a busy run: "Clipped area ... outside the image")
    heading.evaluate("el => el.scrollIntoView({block: 'start'})")
    page.wait_for_timeout(300)
    box, height = heading.bounding_box(), page.viewport_size["height"]
    top = min(max(0, box["y"] - 20), height - 760)
    path = screenshot_path("where-it-fails.png")
    page.screenshot(path=str(path), clip={"x": 280, "y": top, "width": 1120, "height": 760})
    assert path.stat().st_size > 20_000
    # a click on a bar of the histogram lists that bar's queries
    from tests.browser.conftest import click_plotly_cell

    histogram = page.locator("[data-testid='stPlotlyChart']").filter(has_text="nDCG@10 per query").first
    label, share = histogram.locator(".js-plotly-plot").first.evaluate(
        "gd => { const y = Array.from(gd._fullData[0].y), i = y.indexOf(Math.max(...y.slice(1)));"
        " return [gd._fullData[0].x[i], y[i]]; }")  # the tallest bar above 0
    click_plotly_cell(page, histogram, label, share / 2)
    page.get_by_text(f"nDCG@10 {label} (the clicked bar", exact=False).first.wait_for(timeout=60_000)
