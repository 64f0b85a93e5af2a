"""A long job's polite stop. Training the decoder or a suggester and walking the reformulation dataset
run for hours on 2 cores and checkpoint as they go; a Ctrl-C used to end them where they stood,
losing everything since the last checkpoint (up to 500 decoder steps). Inside
``checkpoint_on_interrupt`` the first Ctrl-C asks the job to stop at its next step or part, with a
checkpoint (the loops ask ``should_stop``); a second one stops it at once, as before."""
from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Callable, Iterator

_REQUESTED = threading.Event()


def should_stop(deadline: float | None = None) -> bool:
    """Whether a resumable loop should checkpoint and stop now: its ``deadline`` (``time.time()``)
    has passed, or a Ctrl-C asked it to."""
    return _REQUESTED.is_set() or (deadline is not None and time.time() > deadline)


@contextlib.contextmanager
def checkpoint_on_interrupt(say: Callable[[str], None]) -> Iterator[None]:
    """Within the block, the first Ctrl-C calls ``say`` and asks the loop to stop at its next
    checkpoint; the second gets Python's own KeyboardInterrupt. Left alone outside the main thread
    (signals go to it only) and where SIGINT is ignored (a job started in the background with ``&``)."""
    previous = signal.getsignal(signal.SIGINT)
    previous = signal.SIG_DFL if previous is None else previous  # None: a handler not set from Python
    if threading.current_thread() is not threading.main_thread() or previous is signal.SIG_IGN:
        yield
        return

    def first_interrupt(signum, frame) -> None:
        _REQUESTED.set()
        signal.signal(signal.SIGINT, previous)  # the next Ctrl-C stops at once
        say("stopping at the next checkpoint (Ctrl-C again to stop at once and lose the work since the last one)")

    _REQUESTED.clear()
    signal.signal(signal.SIGINT, first_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        _REQUESTED.clear()
