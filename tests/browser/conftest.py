"""A real dashboard server (streamlit run) and Debian's chromium driven by Playwright."""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from eqi_core.dashboard import CHROMIUM, CHROMIUM_FLAGS, start_dashboard

ROOT = Path(__file__).resolve().parents[2]


def wait_until_idle(page, timeout_ms: int = 300_000) -> None:
    """Wait until the page's script run has finished (Streamlit's "Running..." icon is gone), so the
    next action is not sent while the first load is still drawing."""
    page.wait_for_timeout(500)  # the icon shows after a short delay
    page.locator("[data-testid='stStatusWidgetRunningIcon']").wait_for(state="detached", timeout=timeout_ms)


def wait_until_settled(page, quiet_ms: int = 1500, timeout_ms: int = 300_000) -> None:
    """Idle, and still idle ``quiet_ms`` later. A rerun can start right after a run ends (a click's URL
    update, a chart's selection), and an element found in the gap is then replaced under the test:
    "Element is not attached to the DOM", or a click left waiting for the page (a fresh-clone run on
    2026-11-29 failed both ways)."""
    running = page.locator("[data-testid='stStatusWidgetRunningIcon']")
    deadline = time.time() + timeout_ms / 1000
    while True:
        wait_until_idle(page, timeout_ms)
        page.wait_for_timeout(quiet_ms)
        if running.count() == 0:
            return
        if time.time() > deadline:
            raise TimeoutError(f"the page kept rerunning for {timeout_ms / 1000:.0f} s")


def download_on_click(page, button, timeout_ms: int = 90_000):
    """The file a download button gives when clicked, once the page is idle. A click that gets no file
    (once in seven tries here, beside an evaluation, with nothing on the page or in the server log to say why)
    is made once more after the page is idle again; a second miss fails the test."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    for attempt in (1, 2):
        wait_until_idle(page)
        try:
            with page.expect_download(timeout=timeout_ms) as download:
                button.click()
            return download.value
        except PlaywrightTimeout:
            if attempt == 2:
                raise
            print("download_on_click: no file after the first click; clicking again")


def click_plotly_cell(page, chart, x, y, axes: str = "") -> None:
    """Click a Plotly chart (a locator of its stPlotlyChart) at ``x``, ``y`` (a category's name on a
    category axis, else a value) of the axes ``x{axes}``/``y{axes}`` (a subplot's), from the axes' own
    data-to-pixel maps: a fixed fraction of the chart's box hits another point (or none) when the
    page is laid out a little differently."""
    chart.scroll_into_view_if_needed()
    point = chart.locator(".js-plotly-plot").first.evaluate(
        """(gd, [x, y, axes]) => {
            const xa = gd._fullLayout['xaxis' + axes], ya = gd._fullLayout['yaxis' + axes];
            const box = gd.getBoundingClientRect();  // d2p misreads numeric-looking category names: by index
            const at = (ax, v) => ax._offset + ax.l2p(ax.type === 'category' ? ax._categories.indexOf(v) : ax.d2l(v));
            return [box.left + at(xa, x), box.top + at(ya, y)];
        }""", [x, y, axes])
    page.mouse.move(point[0], point[1])
    page.wait_for_timeout(300)  # plotly finds the hovered point before the click
    page.mouse.click(point[0], point[1])


def screenshot_path(name: str) -> Path:
    """README screenshots are refreshed with EQI_UPDATE_SCREENSHOTS=1; otherwise kept out of git."""
    folder = ROOT / "assets" / "screenshots" if os.environ.get("EQI_UPDATE_SCREENSHOTS") else ROOT / "tests" / "_artifacts"
    folder.mkdir(parents=True, exist_ok=True)
    return folder / name


def skip_without_chromium() -> None:
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian chromium is not installed (make test installs it with apt-get when run as root)")


@pytest.fixture(scope="session")
def warm_store(session_store_home, request):
    """Build, once and in this process, every artifact the browser tests' pages need (WordNet default:
    the MiniLM-L6 exposure map and space, the runs of the curated coverage example, the latent space),
    with progress lines on the terminal, so that browser waits measure the browser, not indexing on
    a busy machine. A warm store (EQI_TEST_HOME) makes this a few seconds of reading. Without chromium
    nothing is built: every test that needs this store skips."""
    skip_without_chromium()
    from eqi_core.coverage.sources import live_runs
    from eqi_core.decoder.space import open_space
    from eqi_core.exposure.setup import prepare_exposure
    from eqi_core.loaders import load_collection
    from eqi_core.progress import line_progress
    from eqi_core.rankers import build_ranker
    from eqi_core.store import ArtifactStore

    capture = request.config.pluginmanager.get_plugin("capturemanager")

    def say(done: int, total: int, report) -> None:  # on the terminal even under pytest's capture
        with capture.global_and_fixture_disabled():
            report(done, total)

    store = ArtifactStore(session_store_home)
    wordnet = load_collection("wordnet", store)
    steps = {
        "browser tests: BM25 index": lambda p: build_ranker("bm25", wordnet, store, p),
        "browser tests: MiniLM-L6 exposure map and space": lambda p: prepare_exposure(wordnet, "minilm-l6", store, progress=p),
        "browser tests: runs of the curated coverage example": lambda p: live_runs(
            wordnet, ["bm25", "minilm-l3-onnx", "minilm-l6"], store, progress_for=lambda rid, stage: p),
        "browser tests: latent space": lambda p: open_space(wordnet, store, "minilm-l6", progress=p),
    }
    for label, work in steps.items():
        started = time.time()
        report = line_progress(label, "item", stream=sys.stderr)
        work(lambda done, total, r=report: say(done, total, r))
        with capture.global_and_fixture_disabled():
            print(f"\n[eqi] {label}: ready in {time.time() - started:.0f} s", file=sys.stderr, flush=True)
    return store


@pytest.fixture(scope="session")
def dashboard(session_store_home, warm_store):
    """A dashboard on the session's (warm) artifact store for all browser tests."""
    with start_dashboard(session_store_home) as url:
        yield url


@pytest.fixture(scope="session")
def browser():
    skip_without_chromium()
    playwright = pytest.importorskip("playwright.sync_api")
    with playwright.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS, headless=True)
        yield b
        b.close()


@pytest.fixture
def page(browser):
    """A page of its own; every test using it also checks that nothing the dashboard shows asked for
    anything outside this machine (the favicon was fetched from fonts.gstatic.com on every page view)."""
    context = browser.new_context(viewport={"width": 1400, "height": 1500}, device_scale_factor=1)
    pg = context.new_page()
    outside = []
    pg.on("request", lambda request: None if is_local(request.url) else outside.append(request.url))
    yield pg
    context.close()
    assert not outside, f"the dashboard asked for something outside this machine: {sorted(set(outside))[:3]}"


def is_local(url: str) -> bool:
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    return parts.scheme in ("data", "blob", "about", "file", "chrome-extension") or parts.hostname in ("localhost", "127.0.0.1", "::1")
