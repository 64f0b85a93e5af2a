"""Real browser: the very first visit to a fresh server is a shared deep link. Streamlit used to run
such a page on its own under an automatic menu of the pages/ folder (helper modules listed as pages,
for the whole session); it must open the same page, with its query, under the app's own navigation."""
import pytest

from eqi_core.dashboard import start_dashboard

pytestmark = pytest.mark.browser


def test_a_deep_link_as_a_fresh_servers_first_visit_keeps_the_apps_navigation(session_store_home, warm_store, browser):
    with start_dashboard(session_store_home) as url:  # its own server: no session has run app.py yet
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        page = context.new_page()
        page.goto(f"{url}/suggestions?collection=wordnet&query=enlarge&model=plain", wait_until="domcontentloaded")
        page.get_by_text("Top 10 for", exact=False).first.wait_for(timeout=180_000)
        nav = page.locator("[data-testid='stSidebarNav']").inner_text()
        assert "Query suggestions" in nav and "Latent traversal" in nav
        assert "exports" not in nav and "sidebar" not in nav  # not the pages/ folder's file names
        assert "/suggestions?" in page.url and "query=enlarge" in page.url and "model=plain" in page.url
        assert page.locator("input[aria-label='Query']").input_value() == "enlarge"
        context.close()
