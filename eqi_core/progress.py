"""Progress reporting shared by the library, the CLI (tqdm) and pages (st.progress).

Long functions take ``progress: ProgressFn | None`` = ``fn(done, total)``; None means a tqdm bar.
"""
from __future__ import annotations

from typing import Callable

from tqdm.auto import tqdm

ProgressFn = Callable[[int, int], None]


def tqdm_progress(desc: str, unit: str = "it", disable: bool | None = None) -> ProgressFn:
    """A ProgressFn that drives one tqdm bar (created on the first call)."""
    state: dict = {}

    def update(done: int, total: int) -> None:
        bar = state.get("bar")
        if bar is None:
            bar = state["bar"] = tqdm(total=total, desc=desc, unit=unit, disable=disable, leave=False)
        bar.update(done - bar.n)
        if done >= total:
            bar.close()

    return update


def or_tqdm(progress: ProgressFn | None, desc: str, unit: str = "it") -> ProgressFn:
    return progress if progress is not None else tqdm_progress(desc, unit)
