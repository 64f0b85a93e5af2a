"""Load: several browser sessions search the default collection at the same time; all get answers,
none sees an error (shared cached rankers, one artifact build)."""
import pytest

pytestmark = pytest.mark.browser
QUERIES = ["bank", "interest", "river", "credit", "light", "run"]


def test_six_concurrent_sessions(dashboard, browser):
    contexts = [browser.new_context(viewport={"width": 1200, "height": 900}) for _ in QUERIES]
    pages = [c.new_page() for c in contexts]
    try:
        for p, q in zip(pages, QUERIES):  # all sessions open and search before any is awaited
            p.goto(f"{dashboard}/?collection=wordnet&ranker=bm25&q={q}", wait_until="commit")
        for p, q in zip(pages, QUERIES):
            caption = p.get_by_text(f"Logged query {q}", exact=False).first
            caption.wait_for(timeout=180_000)
            assert "judged passages in the top" in caption.inner_text()
            assert p.locator("[data-testid='stException']").count() == 0
    finally:
        for c in contexts:
            c.close()
