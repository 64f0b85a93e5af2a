"""Long work in a page: a live status box with a progress bar and a time estimate."""
from __future__ import annotations

import time

import streamlit as st

from eqi_core.progress import Steps


def _eta(done: int, total: int, started: float) -> str:
    """Time so far and left in the current step (``started``: its start)."""
    elapsed = time.monotonic() - started
    if done <= 0 or done >= total or elapsed < 1:
        return f"{elapsed:.0f} s"
    left = elapsed * (total - done) / done
    return f"{elapsed:.0f} s, about {left:.0f} s left" if left < 120 else f"{elapsed:.0f} s, about {left / 60:.0f} min left"


def with_progress(label: str, work) -> None:
    """Run ``work(progress)`` under a live st.status + st.progress (outside any cached function)."""
    with st.status(label, expanded=True) as status:
        bar = st.progress(0.0, text="starting")
        steps = Steps()  # encoding passages, then queries, then the map: each step its own clock

        def progress(done: int, total: int) -> None:
            steps.see(done, total)
            bar.progress(min(1.0, done / max(total, 1)),
                         text=f"{steps.prefix}{done:,} / {total:,} · {_eta(done, total, steps.started)}")

        work(progress)
        status.update(label=label.replace("...", ": done (cached for next time)"), state="complete", expanded=False)
