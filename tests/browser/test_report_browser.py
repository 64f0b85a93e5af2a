"""A report produced by a test opens in the browser with no network and draws its figures."""
import pytest

from tests.browser.conftest import screenshot_path

pytestmark = pytest.mark.browser


def test_exposure_report_renders_offline(browser, tmp_path):
    from tests.unit.test_reports import build_exposure_report

    _, report = build_exposure_report(tmp_path)  # a report produced by the test itself
    context = browser.new_context(viewport={"width": 1200, "height": 1400}, offline=True)
    page = context.new_page()
    requests = []
    page.on("request", lambda r: requests.append(r.url) if not r.url.startswith(("file:", "data:", "blob:")) else None)
    page.goto(report.as_uri())
    page.wait_for_selector("svg.main-svg", timeout=30_000)
    assert page.locator(".js-plotly-plot").count() >= 1
    assert requests == []
    page.screenshot(path=str(screenshot_path("report.png")), full_page=True)
    context.close()
