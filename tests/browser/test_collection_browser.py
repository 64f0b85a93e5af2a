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
    page.wait_for_timeout(1500)  # let plotly finish drawing before the screenshot
    path = screenshot_path("collection.png")
    page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 20_000
