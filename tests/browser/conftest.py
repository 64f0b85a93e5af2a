"""A real dashboard server (streamlit run) and Debian's chromium driven by Playwright."""
from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--no-first-run", "--disable-sync", "--disable-quic"]


def screenshot_path(name: str) -> Path:
    """README screenshots are refreshed with EQI_UPDATE_SCREENSHOTS=1; otherwise kept out of git."""
    folder = ROOT / "assets" / "screenshots" if os.environ.get("EQI_UPDATE_SCREENSHOTS") else ROOT / "tests" / "_artifacts"
    folder.mkdir(parents=True, exist_ok=True)
    return folder / name


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def dashboard(session_store_home):
    """A dashboard on the session's artifact store for all browser tests."""
    with start_dashboard(session_store_home) as url:
        yield url


@contextlib.contextmanager
def start_dashboard(home: Path):
    """Start ``streamlit run app.py`` on a free loopback port with EQI_HOME=home; yield its URL; stop it."""
    home.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    env = {**os.environ, "EQI_HOME": str(home), "HF_HUB_OFFLINE": "1"}
    shared = ROOT.parent / "shared" / "data"
    if shared.is_dir():  # the real collections appear in the sidebar, as for a user with EQI_DATA_ROOTS set
        env["EQI_DATA_ROOTS"] = str(shared)
    log = open(home / "streamlit.log", "w")  # noqa: SIM115 - the server outlives this function
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.headless", "true",
         "--server.address", "127.0.0.1", "--server.port", str(port), "--browser.gatherUsageStats", "false"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 120
    while time.time() < deadline:
        try:
            if urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read() == b"ok":
                break
        except OSError:
            time.sleep(0.5)
        if proc.poll() is not None:
            pytest.fail(f"streamlit exited early: {(home / 'streamlit.log').read_text()[-2000:]}")
    else:
        proc.kill()
        pytest.fail("streamlit did not become healthy in 120 s")
    try:
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@pytest.fixture(scope="session")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian chromium is not installed (make test installs it with apt-get when run as root)")
    playwright = pytest.importorskip("playwright.sync_api")
    with playwright.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS, headless=True)
        yield b
        b.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 1500}, device_scale_factor=1)
    pg = context.new_page()
    yield pg
    context.close()
