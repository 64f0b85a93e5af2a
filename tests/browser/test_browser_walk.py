"""The real-browser walker (``tests/browser_walk.py``, ``make walk-browser``) does what it says: its chart
step clicks a drawn point of a Plotly chart, and an exception box on the page is what it reports."""
import random

import pytest

from tests.browser_walk import act, problems_on

pytestmark = pytest.mark.browser


def _page_with(browser, tmp_path, body: str):
    path = tmp_path / "page.html"
    path.write_text(f"<html><body>{body}</body></html>", encoding="utf-8")
    context = browser.new_context(viewport={"width": 1000, "height": 800})
    page = context.new_page()
    page.goto(path.as_uri())
    return context, page


def test_the_chart_step_clicks_a_drawn_point(browser, tmp_path):
    """A bar chart, a scatter and a heatmap on one page (plotly.js loaded once): every chart step's
    click lands on a drawn point, which Plotly reports as clicked."""
    import plotly.graph_objects as go

    traces = {"bar": go.Bar(x=["a", "b", "c"], y=[3, 1, 2]), "scatter": go.Scatter(x=["a", "b", "c"], y=[3, 1, 2]),
              "heatmap": go.Heatmap(x=["a", "b", "c"], y=["r", "s"], z=[[1, 2, 3], [4, None, 6]])}
    charts = "".join(
        f"<div data-testid='stPlotlyChart'>"
        f"{go.Figure(trace, layout={'width': 500, 'height': 250}).to_html(include_plotlyjs=kind == 'bar', full_html=False, div_id=kind)}"
        f"</div><script>document.getElementById('{kind}').on('plotly_click', e => "
        f"document.getElementById('clicked').textContent += '{kind}:' + e.points[0].x + ' ');</script>"
        for kind, trace in traces.items())
    context, page = _page_with(browser, tmp_path, f"<pre id='clicked'></pre>{charts}")
    page.wait_for_selector("#heatmap svg.main-svg")
    done = [act(page, random.Random(seed), "chart") for seed in range(9)]
    page.wait_for_timeout(300)
    clicked = page.locator("#clicked").inner_text().split()
    context.close()
    assert all(d.startswith("chart point") for d in done) and len(clicked) == len(done), (done, clicked)
    assert {c.split(":")[0] for c in clicked} == set(traces) and {c.split(":")[1] for c in clicked} <= {"a", "b", "c"}


def test_an_exception_box_is_a_problem_and_a_page_without_one_is_not(browser, tmp_path):
    context, page = _page_with(browser, tmp_path, "<div data-testid='stException'>ValueError: broken</div>")
    found = problems_on(page)
    page.set_content("<div data-testid='stMarkdown'>fine</div>")
    assert found == ["ValueError: broken"] and problems_on(page) == []
    context.close()
