"""Figures out of the app: self-contained HTML, and PNG/SVG/PDF rendered by one kaleido browser that
is kept open between renders.

kaleido drives the system's chromium. Starting it is most of an image's cost (a PNG click: 4.3 s with
a browser per click, 0.7 s with the browser kept, on 2 Zen 3 cores: ``eqi bench figures``), so the
dashboard's PNG and SVG buttons, ``eqi tasc -o`` and the CLI's ``--figures`` share one browser per
process: opened on the first render, closed after ``IDLE_CLOSE_S`` without one (and at exit),
replaced when it fails. Renders are serialised: one browser, one tab.
"""
from __future__ import annotations

import asyncio
import atexit
import os
import shutil
import threading
import weakref
from pathlib import Path

import plotly.graph_objects as go

from eqi_core.errors import DataError, FigureExportError
from eqi_core.store import atomic_write

SLIDE_SCALE = 3  # 3x a 1000-px-wide figure: sharp on a projector
IMAGE_FORMATS = ("png", "svg", "jpg", "jpeg", "webp", "pdf")  # what kaleido renders
IDLE_CLOSE_S = 600.0  # a browser unused this long is closed (about 150 MB of chromium)
RENDER_TIMEOUT_S = 120.0  # a batch that takes longer is abandoned, its browser killed
# kaleido's chromium gets no way off this machine: its page is a local file, but chromium looked up
# clients2.google.com and start.duckduckgo.com at every start; through a proxy that is not there
# (port 9, discard, closed) no request resolves a name or leaves. choreographer passes no other flags.
NO_NETWORK_PROXY = "127.0.0.1:9"


def figure_html(fig: go.Figure) -> str:
    """A self-contained HTML page (plotly.js inlined: opens with no network)."""
    return fig.to_html(full_html=True, include_plotlyjs=True)


def figure_image(fig: go.Figure, fmt: str = "png", scale: float = 1, width: int = 1000, height: int | None = None) -> bytes:
    """PNG or SVG bytes via kaleido; see ``figure_images``."""
    return figure_images([fig], fmt, scale, width, height)[0]


def figure_images(figures: list[go.Figure], fmt: str = "png", scale: float = 1, width: int = 1000,
                  height: int | None = None) -> list[bytes]:
    """Each figure as PNG or SVG bytes, rendered by the process's kaleido browser (``RENDERER``).
    ``fig.to_image`` starts chromium anew for every figure: three PNGs took 21.5 s that way against 8.8 s
    in one browser on 2 busy Zen 3 cores (byte-identical images), and a second click in the dashboard
    finds the browser open. A failure is one line (FigureExportError)."""
    if fmt not in IMAGE_FORMATS:  # before a browser is started for nothing
        raise FigureExportError(f"could not render the figure as {fmt.upper()}: expected one of {', '.join(IMAGE_FORMATS)}")
    specs = [(fig.to_dict(), {"format": fmt, "width": width, "height": height or fig.layout.height or 420, "scale": scale})
             for fig in figures]
    return RENDERER.render(specs, fmt)


def write_figure_files(figures: dict[str, go.Figure], directory: Path, formats: tuple[str, ...] = ("png",)) -> list[Path]:
    """Each figure as NAME.html (plotly.js inlined, opens offline) and as each of ``formats`` (PNG at
    slide resolution; SVG or PDF, vector, for a paper), all rendered in one browser before any file is
    written: a failed render leaves no half set. ``eqi tasc -o`` and the ``--figures`` of ``eqi
    exposure``, ``eval-exposure`` and ``traverse``."""
    unknown = [f for f in formats if f not in IMAGE_FORMATS]
    if unknown:
        raise FigureExportError(f"figure format {unknown[0]!r}: expected one of {', '.join(IMAGE_FORMATS)}")
    rendered = {fmt: figure_images(list(figures.values()), fmt, scale=SLIDE_SCALE if fmt == "png" else 1)
                for fmt in dict.fromkeys(formats)}
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for i, (name, fig) in enumerate(figures.items()):
        written.append(atomic_write(directory / f"{name}.html", figure_html(fig)))
        written += [atomic_write(directory / f"{name}.{fmt}", images[i]) for fmt, images in rendered.items()]
    return written


def figure_formats(text: str) -> tuple[str, ...]:
    """``--figure-formats png,pdf`` as a tuple, every name checked (one line for a wrong one)."""
    formats = tuple(f.strip().lower() for f in text.split(",") if f.strip())
    for fmt in formats or ("",):
        if fmt not in IMAGE_FORMATS:
            raise DataError(f"--figure-formats: {fmt!r} is not one of {', '.join(IMAGE_FORMATS)}")
    return formats


class FigureRenderer:
    """One kaleido browser in an event loop of its own thread (kaleido's API is async; a thread of its
    own also works where a loop already runs, as in notebooks). Not kaleido's global sync server,
    which hangs when its browser fails. A failed or timed-out batch closes (or kills) the browser
    and is tried once more in a fresh one, so a browser that died between clicks costs one restart."""

    def __init__(self, idle_close_s: float = IDLE_CLOSE_S, timeout_s: float = RENDER_TIMEOUT_S):
        self.idle_close_s = idle_close_s
        self.timeout_s = timeout_s
        self.browsers_started = 0  # how many browsers this renderer opened (tests, diagnostics)
        self.failed_batches = 0  # attempts that failed (each closes its browser; the batch is tried again once)
        self._lock = threading.Lock()  # one batch at a time
        self._loop: asyncio.AbstractEventLoop | None = None
        self._kaleido = None
        self._idle_timer: asyncio.TimerHandle | None = None
        forget = weakref.WeakMethod(self._forget_after_fork)
        os.register_at_fork(after_in_child=lambda: (method := forget()) and method())

    def _forget_after_fork(self) -> None:
        """In a forked child the loop's thread and the browser's pipes are the parent's: start afresh."""
        self._lock = threading.Lock()
        self._loop = self._kaleido = self._idle_timer = None

    @property
    def is_open(self) -> bool:
        return self._kaleido is not None

    def render(self, specs: list[tuple[dict, dict]], fmt: str = "png") -> list[bytes]:
        """Bytes of each (figure dict, options) in one browser, opened if none is."""
        with self._lock:
            for attempt in (1, 2):
                try:
                    images = self._call(self._render(specs), self.timeout_s)
                    self._call(self._arm_idle_close(), 5)
                    return images
                except KeyboardInterrupt:
                    self._discard_browser()
                    raise
                except Exception as exc:  # kaleido raises many kinds; the user needs one sentence
                    self.failed_batches += 1
                    self._discard_browser()
                    if attempt == 2:
                        raise FigureExportError(f"could not render the figure as {fmt.upper()} with kaleido: "
                                                f"{_one_line(exc)}") from None
        raise AssertionError("unreachable")

    def close(self) -> None:
        """Close the browser (at exit, or when asked); the next render opens another. A render still
        running after 15 s is left to the process's exit (chromium ends with its pipe)."""
        if self._lock.acquire(timeout=15):
            try:
                self._discard_browser()
            finally:
                self._lock.release()

    def _call(self, coroutine, timeout: float):
        if self._loop is None or not self._loop.is_running():
            self._loop = asyncio.new_event_loop()
            threading.Thread(target=self._loop.run_forever, name="kaleido-renderer", daemon=True).start()
        future = asyncio.run_coroutine_threadsafe(coroutine, self._loop)
        try:
            return future.result(timeout)
        except TimeoutError:
            future.cancel()
            raise TimeoutError(f"no image after {timeout:.0f} s") from None

    async def _render(self, specs) -> list[bytes]:
        import kaleido

        if self._idle_timer is not None:
            self._idle_timer.cancel()
        if self._kaleido is None:
            _silence_kaleido()
            # mathjax=False: kaleido's page loads MathJax from cdnjs.cloudflare.com otherwise (a request off this
            # machine at every browser start); no figure here writes LaTeX. NO_NETWORK_PROXY: chromium's own.
            browser = kaleido.Kaleido(n=1, mathjax=False, proxy_server=NO_NETWORK_PROXY)
            self._kaleido = browser  # before open: a browser half-opened is still closed or killed
            self.browsers_started += 1
            await browser.open()
        return [await self._kaleido.calc_fig(spec, opts=opts) for spec, opts in specs]

    async def _arm_idle_close(self) -> None:
        if self._idle_timer is not None:
            self._idle_timer.cancel()
        self._idle_timer = asyncio.get_running_loop().call_later(self.idle_close_s, self._close_when_idle)

    def _close_when_idle(self) -> None:
        """On the loop's thread: close unless a render holds the lock now (it re-arms the timer)."""
        if self._lock.acquire(blocking=False):
            browser, self._kaleido = self._kaleido, None
            self._lock.release()
            if browser is not None:
                asyncio.ensure_future(_close_quietly(browser))

    def _discard_browser(self) -> None:
        """Close the browser, or kill its process when closing does not finish; forget it either way.
        A loop that does not answer is abandoned (a daemon thread) and the next render starts another."""
        browser, self._kaleido = self._kaleido, None
        if browser is None:
            return
        try:
            self._call(_close_quietly(browser), 10)
        except BaseException:
            _kill(browser)
            if self._loop is not None:
                self._loop.call_soon_threadsafe(self._loop.stop)
            self._loop = None


async def _close_quietly(browser) -> None:
    try:
        await asyncio.wait_for(browser.close(), 8)
    except BaseException:
        _kill(browser)


def _kill(browser) -> None:
    process = getattr(browser, "subprocess", None)
    if process is not None and process.poll() is None:
        process.kill()


RENDERER = FigureRenderer()
atexit.register(RENDERER.close)

KALEIDO_LOGGERS = ("kaleido", "choreographer", "logistro", "browser_proc")  # browser_proc: chromium's stderr


def _silence_kaleido() -> None:
    """kaleido's browser driver logs warnings from its own tasks ("Wait expired, Browser is being closed
    by watchdog.") whenever a browser closes, and chromium's stderr is piped into a logger: none of it
    is the user's business, and a failure reaches the caller as one line. Logger levels, not a
    redirection of file descriptor 2: the dashboard's server shares that with every session."""
    import logging

    for name in KALEIDO_LOGGERS:
        logging.getLogger(name).setLevel(logging.CRITICAL)


NO_BROWSER = ("no chromium to render PNG or SVG with: install Debian's chromium (apt install chromium) "
              "or set BROWSER_PATH to a Chrome or Chromium; HTML needs none")


def image_browser() -> str | None:
    """The browser kaleido would start (BROWSER_PATH, else a Chrome or Chromium on PATH), if it exists:
    without one the pages offer HTML only, and say why."""
    from choreographer.browsers.chromium import Chromium

    found = Chromium.find_browser(skip_local=False)  # the search kaleido's browser makes
    return shutil.which(found) if found else None


def _one_line(exc: BaseException) -> str:
    """kaleido's and choreographer's errors carry tuples of sentences and multi-line text."""
    if type(exc).__name__ == "ChromeNotFoundError":  # kaleido's advice (download Chrome) cannot work offline
        return NO_BROWSER
    if isinstance(exc, TimeoutError):
        return str(exc) or "timed out"
    if len(exc.args) > 1 and all(isinstance(a, str) for a in exc.args):
        return exc.args[0].strip()
    lines = str(exc).strip().splitlines()
    return lines[-1] if lines else type(exc).__name__

