"""Real browser: the Exposure page on the WordNet default with BM25 (exact map + reverse methods)."""
import pytest

from tests.browser.conftest import screenshot_path

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
