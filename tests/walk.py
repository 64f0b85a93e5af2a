"""Random walks through the dashboard, to find what a user's clicks and links break before a user does.

    make walk                                   # every page, widgets and links, on the tiny fixture collection
    python -m tests.walk --pages latent --seeds 5 --steps 25 --ranker bm25 --links 0
    python -m tests.walk --seeds 0 --links 0 --tours 5 --tour-steps 40    # across pages and collections

A widget walk opens a page (AppTest) and, step after step, changes one of its widgets at random (an
option of a select box or radio, a slider's ends, a number input's bounds, a box ticked, a text from a
list of awkward ones, a button clicked); a link walk opens the page on random values of the URL
parameters it reads; a tour does what a widget walk does but also moves to another page, with the
session's state, and switches the sidebar's collection among the fixture collections, as a user goes
back and forth. Every exception a page shows is printed with what led to it, and the exit status is 1
if there was any. WordNet is never picked (its full build takes minutes).
Not part of the suite: a walk is seconds per step; its findings become tests
(e.g. ``test_a_grid_on_a_log_too_small_for_its_smallest_share_shows_that_cell_empty``).
"""
from __future__ import annotations

import argparse
import os
import random
import re
import sys
from pathlib import Path

from streamlit.proto.WidgetStates_pb2 import WidgetState
from streamlit.testing.v1 import AppTest
from streamlit.testing.v1 import element_tree as tree

ROOT = Path(__file__).resolve().parents[1]
PAGES = ("collection", "exposure", "exposure_eval", "latent", "suggestions", "coverage")
TEXTS = ("", " ", "river bank", "x" * 300, "über café ☕", "d1", "-1", "0", "a\tb", "<b>bold</b> *x* $y$", "DROP TABLE")
LINK_VALUES = ("", " ", "0", "-1", "1", "3", "100", "99999999999999999999", "1e3", "nan", "inf", "d1", "q1", "d1,d2", ",",
               "bm25", "minilm-l3-onnx,bm25", "all", "prf", "plain", "river bank", "über", "../../etc/passwd", "True",
               "False", "x" * 2000, "2024-01", "[1,2]", "d999", "0.5", "-0.5", "1.5", "+3", "3.0")
KINDS = ("selectbox", "radio", "select_slider", "multiselect", "slider", "number_input", "checkbox", "toggle",
         "text_input", "text_area", "button")


def _chosen_by_option(cls) -> None:
    """Let a test pick a select box's or radio's option by its shown text, as a browser sends it:
    AppTest's ``set_value`` wants the value behind a ``format_func``, which a walk cannot know."""
    if getattr(cls, "_walk_patched", False):
        return
    by_value = cls._widget_state

    def state(self):
        if getattr(self, "_walk_option", None) is None:
            return by_value.fget(self)
        ws = WidgetState()
        ws.id = self.id
        ws.string_value = self._walk_option
        return ws

    cls._widget_state = property(state)
    cls._walk_patched = True


for _cls in (tree.Radio, tree.Selectbox):
    _chosen_by_option(_cls)


def _widgets(at: AppTest) -> list[tuple[str, object]]:
    found = []
    for kind in KINDS:
        for widget in at.get(kind):
            if not getattr(widget, "disabled", False) and not str(getattr(widget, "key", "")).startswith("collection_spec"):
                found.append((kind, widget))
    return found


def _change(rng: random.Random, kind: str, w) -> object:
    """Change one widget as a user could; returns what it was set to."""
    if kind in ("selectbox", "radio", "select_slider"):
        if not w.options:
            return None
        value = rng.choice(list(w.options))
        if kind == "select_slider":
            w.set_value(value)
        else:
            w._walk_option = value
        return value
    if kind == "multiselect":
        cap = w.proto.max_selections or 3
        value = rng.sample(list(w.options), rng.randint(0, min(cap, 3, len(w.options))))
        w.set_value(value)
        return value
    if kind == "slider":
        ends = [(w.min, w.min), (w.min, w.max)] if isinstance(w.value, (tuple, list)) else [w.min, w.max, w.value]
        value = rng.choice(ends)
        w.set_value(value)
        return value
    if kind == "number_input":
        candidates = [x for x in (w.min, w.max, 0, 1, 10**6, -5)
                      if x is not None and (w.min is None or x >= w.min) and (w.max is None or x <= w.max)]
        if isinstance(w.value, int):
            candidates = [int(c) for c in candidates]
        value = rng.choice(candidates or [w.value])
        w.set_value(value)
        return value
    if kind in ("checkbox", "toggle"):
        w.set_value(not w.value)
        return not w.value
    if kind in ("text_input", "text_area"):
        value = rng.choice(TEXTS)
        w.input(value)
        return value
    w.click()
    return "click"


def _collection_picker(at: AppTest):
    return next((w for w in at.sidebar.get("selectbox") if str(w.key).startswith("collection_spec")), None)


def _switch_collection(rng: random.Random, at: AppTest) -> object:
    """Pick another fixture collection in the sidebar (never WordNet: its build takes minutes)."""
    picker = _collection_picker(at)
    if picker is None:
        return None
    shown = picker.options[picker.index] if picker.index is not None else None
    others = [o for o in picker.options if "wordnet" not in o.lower() and o != shown]
    if not others:
        return None
    picker._walk_option = rng.choice(others)
    return picker._walk_option


def shown_exceptions(at: AppTest) -> list[str]:
    return [f"{e.message[:300]}\n    {''.join(e.stack_trace)[-400:]}" for e in at.exception]


def walk_widgets(at: AppTest, rng: random.Random, steps: int, pages: tuple[str, ...] = (), say=None) -> list[str]:
    """Change a random widget ``steps`` times (the page run after each); returns the first exception the
    page showed, with the steps that led to it (empty if none). With ``pages`` (a tour), a step may
    instead move to one of those pages or pick another fixture collection in the sidebar. ``say``, if
    given, is called with each step as it is taken."""
    done = []
    for _ in range(steps):
        widgets = _widgets(at)
        move = rng.random() if pages else 1.0
        if not widgets and not pages:
            break
        try:
            if move < 0.15 or not widgets:
                page = rng.choice(pages)
                done.append(f"page {page}")
                say and say(done[-1])
                at.switch_page(f"pages/{page}.py").run()
                if at.exception:
                    return [*done, *shown_exceptions(at)]
                continue
            picked = _switch_collection(rng, at) if move < 0.25 else None
            if picked is not None:
                done.append(f"collection -> {picked!r}")
            else:
                kind, widget = rng.choice(widgets)
                value = _change(rng, kind, widget)
                done.append(f"{kind} {getattr(widget, 'key', None) or getattr(widget, 'label', '?')} -> {str(value)[:60]!r}")
            say and say(done[-1])
            at.run()
        except Exception as exc:  # a run that did not finish (e.g. the script run's timeout)
            return [*done, f"RUN FAILED {type(exc).__name__}: {str(exc)[:300]}"]
        if at.exception:
            return [*done, *shown_exceptions(at)]
    return []


def link_names(page: str) -> list[str]:
    """The URL parameters a page reads (its ``URL = {...}`` spec)."""
    source = (ROOT / "pages" / f"{page}.py").read_text(encoding="utf-8")
    spec = source[source.index("URL = {"):]
    return sorted(set(re.findall(r'\("([a-z_]+)", ', spec[: spec.index("}\n")])))


def _opened(page: str, params: dict[str, str]) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=600)
    at.run()
    at.query_params.update(params)
    return at.switch_page(f"pages/{page}.py").run()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", default=",".join(PAGES))
    parser.add_argument("--seeds", type=int, default=3, help="walks per page")
    parser.add_argument("--steps", type=int, default=12, help="widget changes per walk")
    parser.add_argument("--links", type=int, default=10, help="random links per page and seed")
    parser.add_argument("--tours", type=int, default=2, help="walks across all the pages and the fixture collections")
    parser.add_argument("--tour-steps", type=int, default=30)
    parser.add_argument("--ranker", default="minilm-l3-onnx")
    parser.add_argument("--verbose", action="store_true", help="print every step as it is taken")
    parser.add_argument("--collection", default=str(ROOT / "tests" / "fixtures" / "tiny_beir"))
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("EQI_DATA_ROOTS", str(Path(args.collection).parent))  # the fixtures a tour switches among
    base = {"collection": f"beir:{args.collection}", "ranker": args.ranker}
    found = 0
    for page in args.pages.split(","):
        for seed in range(args.seeds):
            rng = random.Random(seed)
            problem = walk_widgets(_opened(page, base), rng, args.steps)
            if problem:
                found += 1
                print(f"{page}, widget walk {seed}:\n  " + "\n  ".join(problem), flush=True)
            names = link_names(page)
            for n in range(args.links):
                params = {**base, **{name: rng.choice(LINK_VALUES) for name in rng.sample(names, rng.randint(1, len(names)))}}
                try:
                    shown = shown_exceptions(_opened(page, params))
                except Exception as exc:
                    shown = [f"RUN FAILED {type(exc).__name__}: {str(exc)[:300]}"]
                if shown:
                    found += 1
                    print(f"{page}, link {seed}.{n} {params}:\n  " + "\n  ".join(shown), flush=True)
        print(f"{page}: {args.seeds} widget walks of {args.steps} steps, {args.seeds * args.links} links", flush=True)
    for seed in range(args.tours):
        rng = random.Random(1000 + seed)
        start = rng.choice(PAGES)
        say = (lambda step, n=seed: print(f"  tour {n}: {step}", flush=True)) if args.verbose else None
        say and say(f"opened {start}")
        problem = walk_widgets(_opened(start, base), rng, args.tour_steps, pages=PAGES, say=say)
        if problem:
            found += 1
            print(f"tour {seed}:\n  " + "\n  ".join(problem), flush=True)
    if args.tours:
        print(f"{args.tours} tours of {args.tour_steps} steps across pages and collections", flush=True)
    print(f"{found} problem{'s' * (found != 1)} found")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
