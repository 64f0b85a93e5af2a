"""The kaleido renderer behind every PNG/SVG download: one browser kept between renders, replaced when
it dies, closed when idle; a browser that cannot start is one line."""
import shutil
import threading
import time

import plotly.graph_objects as go
import pytest

from eqi_core.errors import FigureExportError
from eqi_core.figure_export import FigureRenderer, figure_images

pytestmark = pytest.mark.slow


def specs(*heights):
    return [(go.Figure(go.Bar(x=["a", "b"], y=[1, h])).to_dict(),
             {"format": "png", "width": 300, "height": 200, "scale": 1}) for h in heights]


@pytest.fixture
def renderer():
    if not shutil.which("chromium") and not shutil.which("chromium-browser") and not shutil.which("google-chrome"):
        pytest.skip("no chromium on PATH: kaleido has no browser to render with")
    made = FigureRenderer(idle_close_s=600)
    yield made
    made.close()


def test_the_browser_is_kept_between_renders_replaced_when_it_dies_and_closed_when_idle(renderer):
    first = renderer.render(specs(2, 3))
    again = renderer.render(specs(2))
    assert all(b.startswith(b"\x89PNG") for b in first) and first[0] != first[1]
    assert again == first[:1] and renderer.browsers_started == 1  # the second render found it open
    assert renderer.failed_batches == 0

    process = renderer._kaleido.subprocess
    process.kill()
    process.wait(10)
    assert renderer.render(specs(2)) == first[:1] and renderer.browsers_started == 2
    assert renderer.failed_batches == 1  # the dead browser's attempt, then a fresh one

    renderer.idle_close_s = 0.5
    renderer.render(specs(3))
    deadline = time.time() + 20
    while renderer.is_open and time.time() < deadline:
        time.sleep(0.1)
    assert not renderer.is_open
    assert renderer.render(specs(3)) == first[1:] and renderer.browsers_started == 3


def test_the_export_page_loads_nothing_from_another_machine(renderer):
    """kaleido's page took MathJax from cdnjs.cloudflare.com unless told not to: every PNG/SVG export's
    browser start asked a CDN for a script (and waited on it offline), and its chromium looked up
    Google's and DuckDuckGo's hosts."""
    from pathlib import Path
    from urllib.parse import unquote, urlsplit

    renderer.render(specs(2))
    page = Path(unquote(urlsplit(renderer._kaleido._index).path)).read_text(encoding="utf-8")
    assert "<script" in page and "https://" not in page and "http://" not in page, page[:500]
    # and chromium itself cannot reach the network (it looked up clients2.google.com and start.duckduckgo.com)
    assert "--proxy-server=127.0.0.1:9" in renderer._kaleido.subprocess.args


def test_renders_from_several_threads_each_get_their_own_figure(renderer):
    alone = renderer.render(specs(2, 3, 4))
    got: dict[int, bytes] = {}

    def click(i: int) -> None:
        got[i] = renderer.render(specs(i + 2))[0]

    threads = [threading.Thread(target=click, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert [got[i] for i in range(3)] == alone and renderer.browsers_started == 1


def test_a_browser_that_cannot_start_is_one_line_and_leaves_no_process(monkeypatch, capfd):
    monkeypatch.setenv("BROWSER_PATH", "/bin/false")
    renderer = FigureRenderer()
    with pytest.raises(FigureExportError, match="could not render the figure as PNG with kaleido: ") as failed:
        renderer.render(specs(2))
    assert "\n" not in str(failed.value) and "(" not in str(failed.value)[:60]
    assert not renderer.is_open
    err = capfd.readouterr().err
    assert "Traceback" not in err and "Wait expired" not in err


def test_an_unknown_format_is_refused_before_a_browser_starts():
    with pytest.raises(FigureExportError, match="expected one of png, svg"):
        figure_images([go.Figure()], "tiff")


def test_a_forked_child_renders_with_a_browser_of_its_own(renderer):
    """A fork copies the renderer's state but not its loop's thread: the child must not wait on it."""
    import os

    first = renderer.render(specs(2))
    renderer.timeout_s = 15  # waiting on the parent's loop would end in a timeout, a failed batch
    child = os.fork()
    if child == 0:  # the child: render, say by the exit status whether it got the same image at once
        code = 1
        try:
            ok = renderer.render(specs(2)) == first and renderer.browsers_started == 2 and renderer.failed_batches == 0
            code = 0 if ok else 3
            renderer.close()
        finally:
            os._exit(code)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert renderer.render(specs(2)) == first and renderer.browsers_started == 1  # the parent's is untouched


def test_no_browser_at_all_says_what_to_install(monkeypatch):
    """kaleido's own advice is to download Chrome, which cannot work offline."""
    from eqi_core.figure_export import image_browser

    monkeypatch.setenv("BROWSER_PATH", "/nonexistent/chromium")
    assert image_browser() is None
    with pytest.raises(FigureExportError, match=r"install Debian's chromium \(apt install chromium\)") as failed:
        FigureRenderer().render(specs(2))
    assert "kaleido_get_chrome" not in str(failed.value)


def test_a_render_from_inside_a_running_event_loop(renderer):
    """A notebook cell runs inside an event loop: the renderer's own loop is in its own thread. (The
    cell's loop runs in a thread of its own here: earlier tests may leave this thread marked as running one.)"""
    import asyncio

    async def cell():
        return renderer.render(specs(2))

    got: list = []
    notebook = threading.Thread(target=lambda: got.append(asyncio.run(cell())))
    notebook.start()
    notebook.join(120)
    assert got and got[0][0].startswith(b"\x89PNG")


def test_the_figures_benchmark_compares_a_kept_browser_with_one_per_click(renderer):
    """eqi bench figures: both paths give the same image; ours starts one browser for all its clicks."""
    from eqi_core.bench import bench_figures

    out = bench_figures(clicks=2)
    assert out["identical_images"] and out["browsers_started_by_ours"] == 1
    assert len(out["ours_clicks_seconds"]) == len(out["baseline_clicks_seconds"]) == 2
    assert out["ratio_baseline_over_ours_later_clicks"] > 0 and out["cpu"]["cores"] >= 1


def test_cjk_text_and_emoji_render_as_glyphs_not_boxes(renderer):
    """Two different words render differently only when a font has their glyphs: without one both are
    the same row of boxes. ``make browser-deps`` installs Noto CJK and colour emoji beside chromium."""
    import subprocess

    listed = subprocess.run(["fc-list", ":lang=zh"], capture_output=True, text=True, encoding="utf-8",
                            check=False).stdout
    if not listed.strip():
        pytest.skip("no CJK font installed (make browser-deps installs fonts-noto-cjk, as root)")
    words = ["银行", "贷款", "🙂", "🎉"]
    spec = {"format": "png", "width": 200, "height": 100, "scale": 1}
    images = renderer.render([(go.Figure(layout={"title": {"text": w}}).to_dict(), spec) for w in words])
    assert images[0] != images[1] and images[2] != images[3]
