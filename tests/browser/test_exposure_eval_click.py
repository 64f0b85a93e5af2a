"""Real browser: a click on a cell of the Exposure evaluation page's patience heatmaps shows each
method's mean RELQ and paired t-test at that cell's patiences (on the tests' tiny collection, whose
evaluation takes seconds, in a dashboard of its own)."""
import pytest

from eqi_core.dashboard import start_dashboard
from tests.browser.conftest import ROOT, click_plotly_cell, wait_until_idle

pytestmark = pytest.mark.browser


def test_a_patience_cell_gives_the_t_tests_there(page, tmp_path):
    fixtures = ROOT / "tests" / "fixtures"
    with start_dashboard(tmp_path / "home", env={"EQI_DATA_ROOTS": str(fixtures)}) as url:
        page.goto(f"{url}/exposure_eval?collection=beir:{fixtures / 'tiny_beir'}&ranker=minilm-l6&ntest=50&steps=100",
                  wait_until="domcontentloaded")
        page.get_by_role("button", name="Run the evaluation").click(timeout=300_000)
        page.get_by_text("Table 2: mean RELQ", exact=False).first.wait_for(timeout=300_000)
        page.get_by_text("Click a cell for each method's mean RELQ", exact=False).first.wait_for(timeout=60_000)
        wait_until_idle(page)
        chart = page.locator("[data-testid='stPlotlyChart']").filter(has_text="patience parameters").first
        chart.wait_for(state="visible", timeout=60_000)
        page.wait_for_timeout(1000)
        click_plotly_cell(page, chart, "0.3", "0.2", axes="2")
        page.get_by_text("At γ_q→d 0.2, γ_d→q 0.3", exact=False).first.wait_for(timeout=60_000)
