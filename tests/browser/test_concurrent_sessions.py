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
            # six sessions share the 2 cores: 55 s idle, 107 s beside an evaluation; beside an evaluation and a
            # second test run (2026-11-30) the caption did not come within 180 s
            caption.wait_for(timeout=300_000)
            assert "judged passages in the top" in caption.inner_text()
            assert p.locator("[data-testid='stException']").count() == 0
    finally:
        for c in contexts:
            c.close()
