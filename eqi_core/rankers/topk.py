"""Exact top-k kernels: per-row top-k of a score block, cheaper than ``torch.topk`` over the whole
row, the exact float64 re-scoring of the candidates (``rescore_rows``), the int8 scan behind
one-passage search (``int8_upper_bounds``), and the selection after the exact map's int8 GEMM
(``int8_rescored_topk``, for ``int8_gemm``).

After an exposure map's GEMM, selecting each query's top 100 of 20,001 passages with ``torch.topk``
cost a third of the GEMM's time (`eqi bench exposure`, README: Benchmarks). This selection reads
each row once at SIMD speed and sorts only about k scores:

1. split the row into ``G = 10 k`` disjoint groups (column ``c`` holds positions ``c, c + G, ...``)
   and take each group's maximum (numpy's vectorised column-wise max);
2. a bound ``b`` that at least k group maxima reach: k distinct scores are >= b, so the row's k-th
   best score is >= b and every member of the top k is >= b. It comes from a histogram of the
   maxima (the lower edge of the bin where the count from the top reaches k, nudged down by far
   more than float rounding), not a sort;
3. gather the scores >= b (about 1.1 k of them, from the groups whose maximum reaches b) and
   insertion-sort them by (score, lower position first), which beats quicksort at this size.

The kernel is numba code (``nogil``) run on one thread per core over contiguous row ranges; its
buffers are sized once per call (a buffer that could grow inside the loop made it 3.5x slower).
Non-finite scores raise ``NonFiniteScores``.
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

GROUPS_PER_K = 10  # more groups: a tighter bound but a longer histogram (measured best at 10)
_BINS = 256
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()
_kernels: dict = {}
_HELPERS = ("_maxima_bound", "_gather")  # numba functions the kernels share


class NonFiniteScores(ValueError):
    """A row holds NaN or an infinity: the bound is undefined there (callers fall back to a sort)."""


def _threads() -> int:
    """One per core this process may use, capped by OMP_NUM_THREADS where set (Dask's one-thread
    workers set it to 1, so two workers on two cores do not run four selection threads)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    cap = os.environ.get("OMP_NUM_THREADS", "")
    return max(1, min(cores, int(cap))) if cap.isdigit() and int(cap) > 0 else max(1, cores)


def _forget_pool_in_child() -> None:  # a forked child inherits the pool object but not its threads
    global _pool, _pool_lock
    _pool, _pool_lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool_in_child)


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(_threads(), thread_name_prefix="eqi-topk")
        return _pool


def _over_rows(n_rows: int, work) -> None:
    """``work(start, stop)`` on one contiguous row range per core (the kernels and numpy's max release
    the GIL); in this thread when there is one range."""
    parts = min(_threads(), n_rows)
    edges = np.linspace(0, n_rows, parts + 1).astype(int)
    if parts == 1:
        work(0, n_rows)
        return
    futures = [_executor().submit(work, a, b) for a, b in zip(edges[:-1], edges[1:])]
    for future in futures:
        future.result()


def warm_up() -> None:
    """Compile the kernels now (3.2 s here, numba's import included), or load them from numba's on-disk
    cache (0.85 s): the dashboard does this in its idle warm-up child at start, so a newcomer's first
    exact map does not compile."""
    kernel = _compiled()
    kernel(np.zeros((1, 4), np.float32), np.zeros((1, 4), np.float32), 1,
           np.empty((1, 1), np.float32), np.empty((1, 1), np.int64), _BINS)
    rescore_rows(np.zeros((1, 4), np.float32), np.zeros((2, 4), np.float32), np.zeros((1, 1), np.int64))
    zeros = np.zeros(2)
    int8_encode(np.zeros((2, 4), np.float32))
    int8_upper_bounds(np.zeros((2, 4), np.int8), np.zeros(4, np.int8), zeros, zeros, zeros, 0.0, 0.0, 1)
    from eqi_core.rankers import int8_gemm

    if int8_gemm.enabled():  # the exact map's int8 path (and onnxruntime's session) on VNNI CPUs
        one = np.ones(1)
        int8_rescored_topk(np.zeros((1, 2), np.float32), 1, one, one, one, one, np.zeros((1, 4), np.float32),
                           np.zeros((2, 4), np.float32), zeros, zeros, np.empty((1, 1), np.float32),
                           np.empty((1, 1), np.int64))


def _compiled(kernel=None, fastmath=False):
    """A kernel (the selection by default) compiled by numba on first call; numba's on-disk cache in
    the store makes later processes start warm."""
    kernel = kernel or _select_rows
    with _pool_lock:
        if kernel not in _kernels:
            from eqi_core.store import use_numba_cache

            use_numba_cache()
            import numba

            for name in _HELPERS:  # kernels call these: compiled first, under their own names
                if not hasattr(globals()[name], "py_func"):
                    globals()[name] = numba.njit(nogil=True, cache=True)(globals()[name])
            _kernels[kernel] = numba.njit(nogil=True, cache=True, fastmath=fastmath)(kernel)
        return _kernels[kernel]


def _rescore(q, d, idx, out, start, stop):  # pragma: no cover (runs compiled)
    dim = q.shape[1]
    whole = dim - dim % 8
    acc = np.empty(8, np.float64)
    for i in range(start, stop):
        for j in range(idx.shape[1]):
            c = idx[i, j]
            for t in range(8):
                acc[t] = 0.0
            for base in range(0, whole, 8):  # eight running sums, each in a fixed order
                for t in range(8):
                    acc[t] += np.float64(q[i, base + t]) * np.float64(d[c, base + t])
            total = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]))
            for e in range(whole, dim):
                total += np.float64(q[i, e]) * np.float64(d[c, e])
            out[i, j] = total


def rescore_rows(q: np.ndarray, d: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """float64 inner products ``q[i] . d[idx[i, j]]``, each summed in one fixed order (eight running
    sums over the dimensions, then a fixed tree): the same bits on any machine and thread count,
    unlike a float32 GEMM, whose last bits move with the BLAS thread count (so near-ties would swap
    ranks between a laptop, a 1-thread Dask worker and a 2-thread process)."""
    q = np.ascontiguousarray(q, dtype=np.float32)
    d = np.asarray(d, dtype=np.float32)  # a memory-mapped slice stays mapped
    idx = np.ascontiguousarray(idx, dtype=np.int64)
    if len(idx) and (idx.min() < 0 or idx.max() >= len(d)):
        raise IndexError(f"candidate positions outside 0..{len(d) - 1}")
    out = np.empty(idx.shape, dtype=np.float64)
    if idx.size == 0:
        return out
    kernel = _compiled(_rescore)
    _over_rows(len(idx), lambda start, stop: kernel(q, d, idx, out, start, stop))
    return out


def _int8_bounds(codes, probe, coef, err, norm, q_norm, q_err, step, dots, hi, group_max, g_start, g_stop):  # pragma: no cover
    n, dim = codes.shape
    start, stop = g_start * step, min(n, g_stop * step)
    for i in range(start, stop):  # exact integer inner products; an int32 target keeps LLVM's SIMD (a float64 one: 4x slower)
        row = codes[i]
        acc = np.int32(0)
        for j in range(dim):
            acc += np.int32(row[j] * probe[j])
        dots[i] = acc
    for g in range(g_start, g_stop):
        best = -np.inf
        for i in range(g * step, min(n, (g + 1) * step)):
            approx = dots[i] * coef[i]
            slack = q_norm * err[i] + q_err * norm[i]
            hi[i] = approx + slack
            best = max(best, approx - slack)
        group_max[g] = best


def _int8_encode(vectors, codes, scale, err, norm, start, stop):  # pragma: no cover (runs compiled)
    dim = vectors.shape[1]
    for i in range(start, stop):
        top = 0.0
        for j in range(dim):
            top = max(top, abs(np.float64(vectors[i, j])))
        s = top / 127.0 if top > 0 else 1.0
        e2 = 0.0
        n2 = 0.0
        x2 = 0.0
        for j in range(dim):
            x = np.float64(vectors[i, j])
            c = np.rint(x / s)
            codes[i, j] = np.int8(c)
            e2 += (x - s * c) ** 2
            n2 += (s * c) ** 2
            x2 += x * x
        scale[i] = s
        err[i] = np.sqrt(e2) + dim * 2.0 ** -23 * np.sqrt(x2)
        norm[i] = np.sqrt(n2)


def int8_encode(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Row-wise int8 codes of fp32 vectors with each row's scale, coding-error term and ||s x'||, in
    float64, one thread per core (``InnerProductIndex`` rounds the two norms up)."""
    n, dim = vectors.shape
    codes = np.empty((n, dim), np.int8)
    scale, err, norm = np.empty(n), np.empty(n), np.empty(n)
    kernel = _compiled(_int8_encode)
    _over_rows(n, lambda a, b: kernel(vectors, codes, scale, err, norm, a, b))
    return codes, scale, err, norm


def int8_upper_bounds(codes: np.ndarray, probe: np.ndarray, coef: np.ndarray, err: np.ndarray, norm: np.ndarray,
                      q_norm: float, q_err: float, groups: int) -> tuple[np.ndarray, np.ndarray]:
    """For ``InnerProductIndex``: each vector's upper bound ``coef * (codes . probe) + slack`` and each
    of ``groups`` contiguous groups' largest lower bound (``slack = q_norm * err + q_err * norm``),
    in one pass over the int8 codes, one thread per core over whole groups."""
    n = len(codes)
    step = -(-n // groups)
    groups = -(-n // step)
    dots = np.empty(n, np.int32)
    hi = np.empty(n, np.float64)
    group_max = np.full(groups, -np.inf)
    kernel = _compiled(_int8_bounds)
    _over_rows(groups, lambda a, b: kernel(codes, probe, coef, err, norm, q_norm, q_err, step, dots, hi, group_max, a, b))
    return hi, group_max


def _maxima_bound(mx, k, counts, bins):  # pragma: no cover (runs compiled)
    """A bound that at least k of the group maxima ``mx`` reach, so the row's k-th best does too: the
    lower edge of the histogram bin where the count from the top reaches k, lowered far beyond the
    rounding in the bin arithmetic."""
    groups = mx.shape[0]
    lo = np.float64(mx.min())
    hi = np.float64(mx.max())
    if not hi > lo:
        return lo  # every maximum reaches it, and there are >= k of them
    width = (hi - lo) / bins
    inv = 1.0 / width
    counts[:] = 0
    for c in range(groups):
        counts[min(bins, int((mx[c] - lo) * inv))] += 1
    acc = 0
    b = bins
    while b > 0:
        acc += counts[b]
        if acc >= k:
            break
        b -= 1
    return max(lo, lo + b * width - 1e-6 * (abs(lo) + abs(hi)))


def _gather(row, mx, bound, active, cand_i):  # pragma: no cover (runs compiled)
    """Positions (into ``cand_i``) of the row's scores >= bound, read only from groups whose maximum
    reaches it; their number."""
    n = row.shape[0]
    groups = mx.shape[0]
    n_active = 0
    for c in range(groups):
        active[n_active] = c
        n_active += mx[c] >= bound
    m = 0
    for base in range(0, n, groups):
        last = min(groups, n - base)
        for a in range(n_active):
            c = active[a]
            if c < last:
                cand_i[m] = base + c
                m += row[base + c] >= bound
    return m


def _select_rows(scores, maxima, k, out_s, out_i, bins):  # pragma: no cover (runs compiled)
    n = scores.shape[1]
    groups = maxima.shape[1]
    counts = np.empty(bins + 1, np.int64)
    cand = np.empty(n, np.float32)
    cand_i = np.empty(n, np.int64)
    keys = np.empty(n, np.uint64)
    active = np.empty(groups, np.int64)
    low32 = np.uint64(0xFFFFFFFF)
    sign = np.uint64(0x80000000)
    for r in range(scores.shape[0]):
        row = scores[r]
        m = _gather(row, maxima[r], _maxima_bound(maxima[r], k, counts, bins), active, cand_i)
        for t in range(m):
            cand[t] = row[cand_i[t]]
        bits = cand[:m].view(np.uint32)
        for t in range(m):  # order-preserving float -> unsigned key, position (lower first) below it
            u = np.uint64(bits[t])
            u = (u ^ low32) if u & sign else (u | sign)
            keys[t] = (u << np.uint64(32)) | (low32 - np.uint64(cand_i[t]))
        for t in range(1, m):  # insertion sort, descending
            key = keys[t]
            p = t - 1
            while p >= 0 and keys[p] < key:
                keys[p + 1] = keys[p]
                p -= 1
            keys[p + 1] = key
        for t in range(k):
            j = np.int64(low32 - (keys[t] & low32))
            out_i[r, t] = j
            out_s[r, t] = row[j]


def _group_maxima(scores: np.ndarray, groups: int) -> np.ndarray:
    n = scores.shape[1]
    whole = n // groups
    maxima = scores[:, : whole * groups].reshape(len(scores), whole, groups).max(axis=1)
    rest = n - whole * groups
    if rest:
        np.maximum(maxima[:, :rest], scores[:, whole * groups:], out=maxima[:, :rest])
    return maxima


def _rows(scores, k, out_s, out_i, start, stop, kernel) -> None:
    block = scores[start:stop]
    maxima = _group_maxima(block, min(scores.shape[1], GROUPS_PER_K * k))
    if not np.isfinite(maxima).all():  # NaN and +inf propagate to a maximum; -inf everywhere in a group shows too
        raise NonFiniteScores("scores hold NaN or infinite values")
    kernel(block, maxima, k, out_s[start:stop], out_i[start:stop], _BINS)


def _int8_rescore_rows(approx, maxima, k, margin, q_scale, q_norm, q_err, q, d, d_err, d_norm, out_s, out_i,
                       bins):  # pragma: no cover (runs compiled)
    n = approx.shape[1]
    dim = q.shape[1]
    counts = np.empty(bins + 1, np.int64)
    cand = np.empty(n, np.int64)
    lows = np.empty(n)
    highs = np.empty(n)
    top_s = np.empty(k)
    top_i = np.empty(k, np.int64)
    active = np.empty(maxima.shape[1], np.int64)
    for r in range(approx.shape[0]):
        row = approx[r]
        # coarse cut: twice the largest slack below a bound on the k-th best approximate score
        m = _gather(row, maxima[r], _maxima_bound(maxima[r], k, counts, bins) - margin[r], active, cand)
        for t in range(m):  # fine cut: each pair's own slack
            j = cand[t]
            score = q_scale[r] * np.float64(row[j])
            slack = q_norm[r] * d_err[j] + q_err[r] * d_norm[j]
            lows[t] = score - slack
            highs[t] = score + slack
        kth = _maxima_bound(lows[:m], k, counts, bins)  # k lower bounds reach it: at most the k-th largest
        filled = 0
        # first the candidates whose lower bound reaches kth (at least k of them), so the list holds
        # near-final scores when the others come: one whose upper bound is below the k-th exact score
        # so far cannot enter, and is not re-scored (a third fewer on WordNet; the same top k)
        for second in (False, True):
            for t in range(m):
                if highs[t] < kth or (lows[t] < kth) != second:
                    continue
                if filled == k and highs[t] < top_s[k - 1]:
                    continue
                j = cand[t]
                total = 0.0
                for e in range(dim):
                    total += np.float64(q[r, e]) * np.float64(d[j, e])
                # keep the best k, score descending, lower position first among equal scores (whatever
                # the order candidates come in)
                if filled == k and (total < top_s[k - 1] or (total == top_s[k - 1] and j > top_i[k - 1])):
                    continue
                p = min(filled, k - 1) - 1
                while p >= 0 and (top_s[p] < total or (top_s[p] == total and top_i[p] > j)):
                    top_s[p + 1] = top_s[p]
                    top_i[p + 1] = top_i[p]
                    p -= 1
                top_s[p + 1] = total
                top_i[p + 1] = j
                filled = min(filled + 1, k)
        for t in range(k):
            out_i[r, t] = top_i[t]
            out_s[r, t] = top_s[t]


def int8_rescored_topk(approx: np.ndarray, k: int, margin: np.ndarray, q_scale: np.ndarray, q_norm: np.ndarray,
                       q_err: np.ndarray, q: np.ndarray, d: np.ndarray, d_err: np.ndarray, d_norm: np.ndarray,
                       out_s: np.ndarray, out_i: np.ndarray) -> None:
    """For ``int8_gemm``: each row's exact top k into ``out_s``/``out_i`` from int8-GEMM scores ``approx``
    (row r in units of ``q_scale[r]``): candidates within the bound, re-scored in float64."""
    kernel = _compiled(_int8_rescore_rows, fastmath={"reassoc", "contract"})

    def rows(start: int, stop: int) -> None:
        block = approx[start:stop]
        kernel(block, _group_maxima(block, min(approx.shape[1], GROUPS_PER_K * k)), k, margin[start:stop],
               q_scale[start:stop], q_norm[start:stop], q_err[start:stop], q[start:stop], d, d_err, d_norm,
               out_s[start:stop], out_i[start:stop], _BINS)

    _over_rows(len(approx), rows)


def topk_rows(scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(scores, positions) of each row's k largest, best first; equal scores: lower position first.

    ``scores`` is a C-contiguous float32 matrix with at least k columns; ``NonFiniteScores`` if a
    value is NaN or infinite (one -inf among finite scores may pass, and is ranked correctly).
    """
    n_rows, n = scores.shape
    if not 0 < k <= n:
        raise ValueError(f"k = {k}: expected 1 <= k <= {n} (the number of columns)")
    out_s = np.empty((n_rows, k), np.float32)
    out_i = np.empty((n_rows, k), np.int64)
    if n_rows == 0:
        return out_s, out_i
    kernel = _compiled()
    _over_rows(n_rows, lambda start, stop: _rows(scores, k, out_s, out_i, start, stop, kernel))
    return out_s, out_i


def sorted_topk(scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(scores, positions) of each row's k largest, best first, equal scores lower position first (as
    ``topk_rows``), for small blocks and merges, in numpy: no kernel to load, no torch to import (1.3 s
    of a one-query CLI search). NaN ranks last. ``argpartition`` picks any of the scores tied at the
    cut, so a row with more ties there than it took is redone with a stable sort of its candidates."""
    n_rows, n = scores.shape
    k = min(k, n)
    keys = -np.asarray(scores, dtype=np.float32)
    if k < n:
        part = np.argpartition(keys, k - 1, axis=1)[:, :k]
    else:
        part = np.broadcast_to(np.arange(n), (n_rows, n)).copy()
    taken = np.take_along_axis(keys, part, 1)
    order = np.lexsort((part, taken), axis=1)  # by key, then by position
    part = np.take_along_axis(part, order, 1)
    if k < n and n_rows:
        cut = np.take_along_axis(keys, part[:, -1:], 1)
        unsure = np.isnan(cut[:, 0]) | ((keys == cut).sum(1) > (np.take_along_axis(keys, part, 1) == cut).sum(1))
        for row in np.flatnonzero(unsure):
            part[row] = np.lexsort((np.arange(n), keys[row]))[:k]
    return np.take_along_axis(np.asarray(scores, dtype=np.float32), part, 1), part.astype(np.int64)


def merge_sorted(best_s: np.ndarray, best_i: np.ndarray, s: np.ndarray, i: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The k best of two rows' top lists, each best first with ties lower position first, where every
    position in ``best_i`` precedes those in ``i`` (blocks merged in order): a stable sort keeps that
    order among equal scores. NaN ranks last."""
    cat_s = np.concatenate([best_s, s], 1)
    pos = np.argsort(-cat_s, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(cat_s, pos, 1), np.take_along_axis(np.concatenate([best_i, i], 1), pos, 1)
