"""torch's CPU settings for small-product work: one thread, shared by every such use in the process,
and subnormal numbers flushed to zero while a head trains."""
from __future__ import annotations

import threading
from contextlib import contextmanager

_LOCK = threading.Lock()
_SAVED: list[int] = []  # torch's thread count at each entry; the first is the count to restore


@contextmanager
def one_torch_thread():
    """torch at one thread inside. Its OpenMP workers spin between operations: with small products
    (a decoder's few rows per sampling step, an exposure head's batch) two threads gain little on an
    idle machine and lose several times over when another process holds a core. torch's setting is
    the process's, so nested and concurrent uses (dashboard sessions) share it: it is restored when
    the last one ends, whatever their order."""
    import torch

    with _LOCK:
        _SAVED.append(torch.get_num_threads())
        torch.set_num_threads(1)
    try:
        yield
    finally:
        with _LOCK:
            saved = _SAVED.pop()  # every entry after the first saw 1: the last one out pops the first's count
            if not _SAVED:
                torch.set_num_threads(saved)


@contextmanager
def subnormals_flushed():
    """Subnormal floats (below 1.2e-38) read and written as zero inside, on this thread (the setting is
    the CPU's per-thread control word, so other sessions' threads keep theirs). An exposure head's
    RankNet loss saturates on easy triples; their gradients and Adam's moments go subnormal, which
    x86 computes in microcode: the Residual head on WordNet under MiniLM-L6 took 181 s against 88 s
    flushed, and `eqi train-exposure` on a 13-passage collection (loss 1e-14 by step 400) 434 s against 67.
    Flushed values are below 1.2e-38, yet over 2,000 steps the change compounds: that Residual head's
    weights moved by up to 0.005 at the same loss (Append's stayed bit-identical), hence HEAD_VERSION 3."""
    import torch

    torch.set_flush_denormal(True)
    try:
        yield
    finally:
        torch.set_flush_denormal(False)  # torch's default; nothing else in the project sets it
