"""Progress reporting shared by the library, the CLI and pages (st.progress).

Long functions take ``progress: ProgressFn | None`` = ``fn(done, total)``; None means the
terminal's reporter: a tqdm bar when stderr is a terminal, else plain progress lines (a log file
of a 30-minute job shows where it is, every 10% or 30 s, with the time left). One reporter may be
handed several steps in turn (``prepare_exposure``: encode the passages, then the queries, then
search): each reporter sees a new step where the total changes or the count goes back
(``Steps``), restarts its clock there, so that the time left is the step's, and numbers the steps
after the first.
"""
from __future__ import annotations

import sys
import time
from collections.abc import Callable

from tqdm.auto import tqdm

ProgressFn = Callable[[int, int], None]
LINE_EVERY_SECONDS = 30.0
LINE_EVERY_SHARE = 0.10


class Steps:
    """The step a reporter is in: ``see(done, total)`` says whether a new one starts here (the total
    changed or the count went back). The first step's clock starts when this is made, a later
    step's at its first report."""

    def __init__(self) -> None:
        self.started, self.step, self.total, self.done = time.monotonic(), 0, None, 0

    def see(self, done: int, total: int) -> bool:
        new = self.total is None or total != self.total or done < self.done
        if new:
            if self.step:
                self.started = time.monotonic()
            self.step += 1
        self.total, self.done = total, done
        return new

    @property
    def prefix(self) -> str:
        return f"step {self.step}: " if self.step > 1 else ""


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


def line_progress(desc: str, unit: str = "it", stream=None, every_seconds: float = LINE_EVERY_SECONDS,
                  every_share: float = LINE_EVERY_SHARE) -> ProgressFn:
    """A ProgressFn that prints ``desc: done/total unit (pct%), elapsed, ~left`` lines, at the start,
    every ``every_share`` of the work or ``every_seconds``, and at the end. The clock starts when the
    reporter is made (just before its work), not at the first report, which may come after a long
    first chunk."""
    steps = Steps()
    state = {"last_t": 0.0, "last_share": -1.0}

    def update(done: int, total: int) -> None:
        if steps.see(done, total):
            state["last_share"] = -1.0  # a new step prints its start
        now = time.monotonic()
        share = done / total if total else 1.0
        finished = done >= total
        if not (finished or state["last_share"] < 0 or share - state["last_share"] >= every_share
                or now - state["last_t"] >= every_seconds):
            return
        elapsed = now - steps.started
        left = f", ~{_duration(elapsed * (total - done) / done)} left" if 0 < done < total and elapsed > 1 else ""
        print(f"[eqi] {desc}: {steps.prefix}{done:,}/{total:,} {unit} ({share:.0%}), {_duration(elapsed)}{left}",
              file=stream or sys.stderr, flush=True)
        state["last_t"], state["last_share"] = now, share

    return update


def tqdm_progress(desc: str, unit: str = "it", disable: bool | None = None) -> ProgressFn:
    """A tqdm bar on a terminal; progress lines when stderr is a file or a pipe."""
    if disable is None and not sys.stderr.isatty():
        return line_progress(desc, unit)
    state: dict = {}
    steps = Steps()
    made = time.time()  # tqdm's clock (time.time): elapsed and rate count from here, as line_progress's

    def update(done: int, total: int) -> None:
        bar = state.get("bar")
        if steps.see(done, total) or bar is None:
            if bar is not None:
                bar.close()
            bar = state["bar"] = tqdm(total=total, desc=desc + (f" ({steps.prefix.rstrip(': ')})" if steps.prefix else ""),
                                      unit=unit, disable=disable, leave=False)
            if steps.step == 1:
                bar.start_t = made
        bar.update(done - bar.n)
        if done >= total:
            bar.close()

    return update


def or_tqdm(progress: ProgressFn | None, desc: str, unit: str = "it") -> ProgressFn:
    return progress if progress is not None else tqdm_progress(desc, unit)
