"""Real browser: the curated examples on the home page open the right page in the right state,
from a click and from a shared deep link; screenshots go to the README."""
import os
import re

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import click_plotly_cell, screenshot_path, wait_until_idle, wait_until_settled

pytestmark = pytest.mark.browser


def open_home(page, dashboard):
    page.goto(dashboard, wait_until="domcontentloaded")
    page.get_by_text("Start here", exact=False).first.wait_for(timeout=180_000)


def test_example_who_exposes_river_bank(dashboard, page):
    open_home(page, dashboard)
    page.get_by_text("Who sees the river-bank sense", exact=False).first.click()
    page.get_by_text("Exposing queries (exact)", exact=False).first.wait_for(timeout=180_000)  # store warmed by the fixture
    page.get_by_text("sloping land (especially the slope beside a body of water)", exact=False).first.wait_for(timeout=120_000)
    assert "passage=09213565-n" in page.url and "ranker=minilm-l6" in page.url
    page.wait_for_timeout(1500)
    page.screenshot(path=str(screenshot_path("example-exposure.png")), full_page=True)


def test_example_ranker_coverage_by_deep_link(dashboard, page):
    page.goto(f"{dashboard}/coverage?collection=wordnet&live=bm25,minilm-l3-onnx&mode=all-others&measure=RR@10",
              wait_until="domcontentloaded")
    heading = page.get_by_role("heading", name="TaSC (all-others)", exact=False).first
    heading.wait_for(timeout=180_000)
    assert "mean RR@10" in heading.inner_text()
    wait_until_settled(page)  # the heading is drawn mid-run; a click then raced the run's URL update
    page.get_by_role("tab", name="Pairwise").click()
    panel = page.get_by_role("tabpanel", name="Pairwise")
    panel.locator("svg.main-svg").first.wait_for(timeout=180_000)  # its charts
    panel.get_by_text("minilm-l3-onnx against bm25, query by query").wait_for(timeout=60_000)  # beside the differences
    page.locator('[data-testid="stStatusWidget"]').wait_for(state="detached", timeout=180_000)  # the run has finished
    page.wait_for_timeout(1500)
    page.screenshot(path=str(screenshot_path("example-coverage.png")), full_page=True)


def test_example_exposure_evaluation(dashboard, page):
    open_home(page, dashboard)
    page.get_by_text("Do learned heads beat reverse retrieval", exact=False).first.click()
    page.get_by_role("heading", name="Exposure evaluation").first.wait_for(timeout=180_000)
    # either the cached Table 2 (a warm store) or the button that computes it
    page.locator("text=/Table 2: mean RELQ|Run the evaluation/").first.wait_for(timeout=120_000)
    assert "ntest=1000" in page.url
    if os.environ.get("EQI_UPDATE_SCREENSHOTS") and not page.get_by_text("Table 2: mean RELQ", exact=False).count():
        # the README's screenshot shows the evaluation, not the button: run it (heads trained, minutes)
        page.get_by_role("button", name="Run the evaluation").click()
        page.get_by_text("Table 2: mean RELQ", exact=False).first.wait_for(timeout=1_200_000)
    if page.get_by_text("Table 2: mean RELQ", exact=False).count():
        page.locator("svg.main-svg").first.wait_for(timeout=120_000)  # the patience heatmaps
    page.wait_for_timeout(1500)
    page.screenshot(path=str(screenshot_path("exposure-evaluation.png")), full_page=True)


def test_example_traversal_fixes_a_failing_query(dashboard, page):
    open_home(page, dashboard)
    page.get_by_text("What should", exact=False).first.click()
    page.get_by_role("heading", name="Latent traversal").first.wait_for(timeout=180_000)
    page.get_by_text("What should have been asked", exact=False).first.wait_for(timeout=300_000)  # 11 decodes
    assert "query=" in page.url and "k=10" in page.url
    page.locator("svg.main-svg").first.wait_for(timeout=180_000)  # the UMAP map
    page.get_by_text("decoded steps", exact=False).first.wait_for(timeout=180_000)  # its legend
    page.set_viewport_size({"width": 1400, "height": 2100})  # the map sits below the full-width steps table
    page.wait_for_timeout(1500)
    page.screenshot(path=str(screenshot_path("example-traversal.png")), full_page=True)
    # a click on a step of the per-step chart shows that step's results
    wait_until_idle(page)
    steps_chart = page.locator("[data-testid='stPlotlyChart']").filter(has_text="nDCG@10 per step").first
    steps_chart.scroll_into_view_if_needed()
    rank = steps_chart.locator(".js-plotly-plot").first.evaluate("gd => gd._fullData[0].y[3]")
    click_plotly_cell(page, steps_chart, 3, rank)
    expect(page.get_by_role("combobox", name="Results of step", exact=True)).to_have_value(re.compile("^3: "), timeout=60_000)
    # the walk's target handed on: who is shown the gold sense of "hair" (a link with the same collection and ranker)
    page.get_by_text("Which logged queries expose the target?", exact=False).first.click()
    page.get_by_text("Exposing queries (exact)", exact=False).first.wait_for(timeout=300_000)
    assert "/exposure?" in page.url and "passage=05254795-n" in page.url and "collection=wordnet" in page.url
    page.get_by_text("a covering for the body (or parts of it)", exact=False).first.wait_for(timeout=60_000)


def test_query_suggestions_open_on_the_curated_held_out_query(dashboard, page):
    open_home(page, dashboard)
    page.get_by_role("link", name="which better query could a searcher type", exact=False).first.click()
    page.get_by_role("heading", name="Query suggestions").first.wait_for(timeout=180_000)
    page.get_by_text("Top 10 for", exact=False).first.wait_for(timeout=180_000)  # the table and the first row's results
    page.get_by_text("a query no suggester was trained on", exact=False).first.wait_for(timeout=60_000)
    assert "model=all" in page.url and "query=infinite" in page.url
    page.wait_for_timeout(1500)
    page.screenshot(path=str(screenshot_path("suggestions.png")), full_page=True)


def test_first_visit_benchmark_finds_every_way_in_it_times(dashboard, page):
    """`eqi bench first-visit` clicks these links by their accessible names: a renamed example must
    fail here, not in a benchmark run."""
    from eqi_core.bench import FIRST_VISIT_EXAMPLE, OTHER_FIRST_CLICKS

    open_home(page, dashboard)
    for link in (FIRST_VISIT_EXAMPLE, *(link for _, link, _ in OTHER_FIRST_CLICKS)):
        page.get_by_role("link", name=link, exact=False).first.wait_for(timeout=60_000)  # fails if renamed
