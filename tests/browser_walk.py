"""Random walks through the dashboard in a real browser: what AppTest cannot reach (a click on a chart's
point, a download, the browser's Back button, a select box's drop-down, a slider's keys) broken before a
user breaks it.

    make walk-browser                                        # 3 walks of 25 steps on the tiny fixture
    python -m tests.browser_walk --walks 5 --steps 40 --ranker bm25 --verbose

A walk starts a dashboard (``streamlit run``, a fresh artifact store) with the fixture collections as
its data roots, opens a page on the tiny fixture collection, and does one thing after another at
random: picks an option of a select box (never WordNet: minutes to build), clicks a button, a radio
option, a box, an expander, a tab, a chart's point, a download; types an awkward text, a number;
moves a slider with its keys; goes to another page by the menu or a page's own link, or Back. After
each step it waits for the page to settle and records what a user would see go wrong: an exception
box, an uncaught script error in the page (``pageerror``), a request to another machine, a traceback
in the server's log; and it lists the error and warning boxes it saw, to be read. Exit status 1 if
anything went wrong. Not part of the suite (seconds a step); what it finds becomes a test.
"""
from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parents[1]
PAGES = ("collection", "exposure", "exposure_eval", "latent", "suggestions", "coverage")
TEXTS = ("", "river bank", "x" * 300, "über café ☕", "d1", "-1", "<b>bold</b> *x* $y$", "a\tb")
NUMBERS = ("0", "1", "-5", "1000000", "2.5", "")
ACTIONS = ("select", "select", "button", "button", "radio", "checkbox", "text", "number", "slider", "expander", "tab",
           "chart", "chart", "download", "page", "link", "back")


def _visible(locator) -> list:
    return [locator.nth(i) for i in range(min(locator.count(), 60)) if locator.nth(i).is_visible()]


def _choose(rng: random.Random, items: list):
    return rng.choice(items) if items else None


def _label(element, limit: int = 70) -> str:
    try:
        return " ".join(element.inner_text(timeout=2000).split())[:limit]
    except Exception:  # a label is for the log only
        return "?"


# Steps that click one of the elements a selector finds: a button, a radio's option, a box, an expander, a
# tab, the menu, a page's own link to another page (never one that opens WordNet).
CLICKS = {"button": "[data-testid='stButton'] button:enabled", "radio": "[data-testid='stRadio'] [role=radiogroup] label",
          "checkbox": "[data-testid='stCheckbox'] label", "expander": "[data-testid='stExpander'] summary",
          "tab": "[role='tab']", "page": "[data-testid='stSidebarNav'] a",
          "link": "[data-testid='stPageLink'] a:not([href*='wordnet'])"}


def act(page, rng: random.Random, action: str) -> str | None:
    """Do one ``action`` on ``page``; returns what was done, or None when the page offers no such thing."""
    if action in CLICKS:
        element = _choose(rng, _visible(page.locator(CLICKS[action])))
        if element is None:
            return None
        text = _label(element)
        element.click(timeout=5000)
        return f"{action} {text!r}"
    if action == "select":
        box = _choose(rng, _visible(page.locator("[data-testid='stSelectbox']")))
        if box is None:
            return None
        name = _label(box.locator("label"))
        combobox = box.get_by_role("combobox")
        shown = combobox.input_value()
        combobox.click(timeout=5000)
        options = [o for o in _visible(page.locator("[role='option']")) if "wordnet" not in _label(o).lower()
                   and _label(o) != shown]
        option = _choose(rng, options)
        if option is None:
            page.keyboard.press("Escape")
            return None
        text = _label(option)
        option.click(timeout=5000)
        return f"select {name!r} -> {text!r}"
    if action == "download":
        button = _choose(rng, [b for b in _visible(page.locator("[data-testid='stDownloadButton'] button"))
                               if b.is_enabled()])
        if button is None:
            return None
        text = _label(button)
        with page.expect_download(timeout=90_000) as download:
            button.click(timeout=5000)
        size = Path(download.value.path()).stat().st_size
        if size == 0:
            raise AssertionError(f"download {text!r} gave an empty file")
        return f"download {text!r} ({size} bytes)"
    if action in ("text", "number"):
        testid = "stTextInput" if action == "text" else "stNumberInput"
        field = _choose(rng, [f for f in _visible(page.locator(f"[data-testid='{testid}'] input")) if f.is_enabled()])
        if field is None:
            return None
        value = rng.choice(TEXTS if action == "text" else NUMBERS)
        field.fill(value, timeout=5000)
        field.press("Enter")
        return f"{action} {field.get_attribute('aria-label')!r} <- {value[:40]!r}"
    if action == "slider":
        thumb = _choose(rng, _visible(page.locator("[role='slider']")))
        if thumb is None:
            return None
        key = rng.choice(("Home", "End", "ArrowRight", "ArrowLeft", "PageUp"))
        thumb.focus()
        thumb.press(key)
        return f"slider {thumb.get_attribute('aria-label') or _label(thumb)!r} {key}"
    if action == "chart":
        charts = _visible(page.locator("[data-testid='stPlotlyChart'] .js-plotly-plot"))
        chart = _choose(rng, charts)
        if chart is None:
            return None
        chart.scroll_into_view_if_needed()
        point = chart.evaluate(
            """(gd, seed) => {  // a random drawn point (a bar's middle, a heatmap's cell) of a random trace
                const pts = [], axis = (name, id) => gd._fullLayout[name + 'axis' + (id || '').slice(1)];
                const at = (ax, v) => ax._offset + ax.l2p(ax.type === 'category' ? ax._categories.indexOf(v) : ax.d2l(v));
                gd._fullData.forEach((tr, t) => {
                    const xa = axis('x', tr.xaxis), ya = axis('y', tr.yaxis), name = tr.name || String(t);
                    if (!xa || !ya || tr.visible === false) return;
                    if (tr.type === 'heatmap') {
                        (tr.z || []).forEach((row, j) => row.forEach((z, i) => {
                            if (z === null || z === undefined) return;
                            const x = tr.x ? tr.x[i] : i, y = tr.y ? tr.y[j] : j;
                            pts.push([at(xa, x), at(ya, y), name, `${x}, ${y}`]);
                        }));
                        return;
                    }
                    (gd.calcdata[t] || []).forEach((p, i) => {
                        if (p.x === undefined || p.y === undefined) return;
                        const bar = tr.type === 'bar', h = tr.orientation === 'h';
                        const x = bar && h ? (p.b || 0) + p.s / 2 : p.x, y = bar && !h ? (p.b || 0) + p.s / 2 : p.y;
                        pts.push([xa._offset + xa.c2p(x), ya._offset + ya.c2p(y), name, String(i)]);
                    });
                });
                const box = gd.getBoundingClientRect();
                const ok = pts.filter(p => isFinite(p[0]) && isFinite(p[1]));
                if (!ok.length) return null;
                const p = ok[seed % ok.length];
                return [box.left + p[0], box.top + p[1], p[2], p[3]];
            }""", rng.randrange(10**6))
        if point is None:
            return None
        page.mouse.move(point[0], point[1])
        page.wait_for_timeout(300)
        page.mouse.click(point[0], point[1])
        return f"chart point {point[3]} of {point[2]!r}"
    if action == "back":
        if page.evaluate("history.length") <= 2:  # the first page came after about:blank: nothing of ours is back there
            return None
        page.go_back()
        return "Back"
    raise ValueError(action)


def alerts_on(page) -> list[str]:
    """The error and warning boxes on the page: not problems (a page that refuses an input says so), but
    what a user reads, so a walk lists them to be read."""
    shown = _visible(page.locator("[data-testid='stAlertContentError'], [data-testid='stAlertContentWarning']"))
    return [_label(e, 400) for e in shown]


def problems_on(page) -> list[str]:
    return [_label(e, 300) for e in _visible(page.locator("[data-testid='stException']"))]


def walk(browser, base_url: str, rng: random.Random, steps: int, query: str, say, alerts: dict | None = None) -> list[str]:
    """One walk in a fresh browser context; returns the steps up to the first problem (empty if none).
    ``alerts`` collects each error or warning box's text with the step that first showed it."""
    from playwright.sync_api import Error as PlaywrightError

    from tests.browser.conftest import is_local, wait_until_settled

    context = browser.new_context(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
    page = context.new_page()
    script_errors, remote = [], []
    page.on("pageerror", lambda exc: script_errors.append(str(exc)[:300]))
    page.on("request", lambda r: None if is_local(r.url) else remote.append(r.url))
    start = rng.choice(PAGES)
    done = [f"open {start}"]
    say(done[-1])
    try:
        page.goto(f"{base_url}/{'' if start == 'collection' else start}?{query}")
        wait_until_settled(page, timeout_ms=300_000)
        for _ in range(steps):
            action = rng.choice(ACTIONS)
            try:
                did = act(page, rng, action)
            except PlaywrightError as exc:  # an element replaced under the click: not the page's fault
                did = f"({action}: {str(exc).splitlines()[0][:100]})"
            except AssertionError as exc:
                return [*done, f"PROBLEM: {exc}"]
            if did is None:
                continue
            done.append(did)
            say(did)
            try:
                wait_until_settled(page, timeout_ms=300_000)
            except (TimeoutError, PlaywrightError) as exc:
                return [*done, f"PROBLEM: the page did not settle: {str(exc)[:200]}"]
            for text in alerts_on(page) if alerts is not None else ():
                alerts.setdefault(text, did)
            found = problems_on(page) + [f"script error: {e}" for e in script_errors] + \
                [f"request to another machine: {u}" for u in remote]
            if found:
                return [*done, *(f"PROBLEM: {f}" for f in found)]
        return []
    finally:
        context.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--walks", type=int, default=3)
    parser.add_argument("--steps", type=int, default=25)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--ranker", default="minilm-l3-onnx")
    parser.add_argument("--collection", default=str(ROOT / "tests" / "fixtures" / "tiny_beir"))
    parser.add_argument("--verbose", action="store_true", help="print every step as it is taken")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from eqi_core.dashboard import chromium, start_dashboard

    query = urlencode({"collection": f"beir:{args.collection}", "ranker": args.ranker})
    found, alerts = 0, {}
    with tempfile.TemporaryDirectory(prefix="eqi-walk-") as home, \
            start_dashboard(Path(home), env={"EQI_DATA_ROOTS": str(Path(args.collection).parent)}) as url, \
            chromium() as browser:
        for n in range(args.walks):
            rng = random.Random(args.seed * 1000 + n)
            started = time.time()
            say = (lambda step, n=n: print(f"  walk {n}: {step}", flush=True)) if args.verbose else (lambda step: None)
            problem = walk(browser, url, rng, args.steps, query, say, alerts)
            print(f"walk {n}: {args.steps} steps in {time.time() - started:.0f} s"
                  + (":\n  " + "\n  ".join(problem) if problem else ", nothing found"), flush=True)
            found += bool(problem)
        log = (Path(home) / "streamlit.log").read_text(encoding="utf-8")
    if alerts:
        print("error and warning boxes shown (read them: each should say what was wrong in one line):")
        for text, step in alerts.items():
            print(f"  after {step}: {text}")
    tracebacks = log.count("Traceback (most recent call last)")
    if tracebacks:
        print(f"the server's log holds {tracebacks} traceback(s):\n{log[-3000:]}")
    print(f"{found} walk{'s' * (found != 1)} found a problem")
    return 1 if found or tracebacks else 0


if __name__ == "__main__":
    sys.exit(main())
