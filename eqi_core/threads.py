"""torch at one thread for work whose products are small, shared by every such use in the process."""
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
