"""Start the dashboard as a user does (``streamlit run app.py``) and drive it with Debian's chromium:
shared by the real-browser tests and ``eqi bench first-visit``."""
from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from eqi_core.errors import MissingDependency

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--no-first-run", "--disable-sync", "--disable-quic"]


def network_url(port: int) -> str | None:
    """The address other machines on the network reach a dashboard on ``port`` at, or None. ``make run``
    prints it: the Streamlit config names the server address, so that a headless start does not ask
    checkip.amazonaws.com for the public one, and Streamlit then prints only the local URL. The
    address is this machine's side of a UDP socket aimed at a private address: nothing is sent."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("10.255.255.255", 1))
            address = s.getsockname()[0]
    except OSError:  # no network at all
        return None
    return None if address.startswith("127.") or address == "0.0.0.0" else f"http://{address}:{port}"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def start_dashboard(home: Path, env: dict | None = None, ready_timeout: float = 120) -> Iterator[str]:
    """Start ``streamlit run app.py`` on a free loopback port with EQI_HOME=home; yield its URL once
    the server answers its health check; stop it afterwards. ``env`` adds environment variables."""
    home.mkdir(parents=True, exist_ok=True)
    port = free_port()
    env = {**os.environ, "EQI_HOME": str(home), "HF_HUB_OFFLINE": "1", "OPENBLAS_THREAD_TIMEOUT": "4", **(env or {})}
    from eqi_core.loaders.registry import shared_data

    shared = shared_data()
    if shared.is_dir() and "EQI_DATA_ROOTS" not in env:  # the real collections in the sidebar, as with EQI_DATA_ROOTS set
        env["EQI_DATA_ROOTS"] = str(shared)
    log = open(home / "streamlit.log", "w", encoding="utf-8")  # noqa: SIM115 - the server outlives this function
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.headless", "true",
         "--server.address", "127.0.0.1", "--server.port", str(port), "--browser.gatherUsageStats", "false"],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group: stopping it stops its warm-up child too
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + ready_timeout
        while True:
            try:
                if urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read() == b"ok":
                    break
            except OSError:
                time.sleep(0.2)
            if proc.poll() is not None:
                raise RuntimeError(f"streamlit exited early: {(home / 'streamlit.log').read_text(encoding='utf-8')[-2000:]}")
            if time.time() > deadline:
                raise RuntimeError(f"streamlit did not become healthy in {ready_timeout:.0f} s")
        yield url
    finally:
        _signal_group(proc, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(10)
        _signal_group(proc, signal.SIGKILL)  # whatever of the group is left
        proc.wait()
        log.close()


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)


@contextlib.contextmanager
def chromium() -> Iterator:
    """A headless Debian chromium under Playwright (never a downloaded browser)."""
    if not Path(CHROMIUM).exists():
        raise MissingDependency(f"{CHROMIUM} is missing: install Debian's chromium (make test does, as root)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        raise MissingDependency("playwright is not installed: pip install -e '.[test]'") from None
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()
