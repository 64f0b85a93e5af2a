"""2-D maps of a neighbourhood of the latent space (UMAP, umap-learn), with trajectories placed by
``.transform`` so the path is drawn on the map of its surroundings, not refitted with it.

umap-learn's first call in a process compiles numba code (about 70 CPU-seconds on 2 Zen 3 cores);
``warm_up`` has it done at the lowest CPU priority when the server starts, and numba's on-disk
cache (``NUMBA_CACHE_DIR``, kept in the artifact store, umap's own kernels included) makes later
processes start warm (about 5 s).
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import threading
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd

from eqi_core.collection import readable
from eqi_core.store import use_numba_cache

_warm_lock = threading.Lock()
_warm_done = threading.Event()


def _umap_class():
    use_numba_cache()
    import umap

    _cache_umaps_kernels()
    return umap.UMAP


UMAP_MODULES = ("umap.umap_", "umap.utils", "umap.layouts", "umap.distances", "umap.sparse", "umap.spectral")


def _cache_umaps_kernels() -> None:
    """Put umap-learn's own numba kernels in the on-disk cache too. pynndescent's are jitted with
    ``cache=True``, umap's are not, so every process compiled them again, cache or no cache: about
    29 of the 33 CPU-seconds of a tiny fit + transform in a process whose cache was warm (2 cores,
    Zen 3; ``fast_knn_indices``, ``smooth_knn_dist``, ``submatrix``, ...). Kernels not yet compiled
    get numba's file cache (in ``NUMBA_CACHE_DIR``, keyed by umap's source files, so an upgrade
    invalidates it); those compiled at import (explicit signatures) are left as they are."""
    import importlib

    from numba.core.caching import NullCache
    from numba.core.dispatcher import Dispatcher

    for name in UMAP_MODULES:
        try:
            module = importlib.import_module(name)
        except ImportError:  # a module another umap-learn version lacks: nothing to cache there
            continue
        for kernel in vars(module).values():
            if isinstance(kernel, Dispatcher) and isinstance(kernel._cache, NullCache) and not kernel.signatures:
                kernel.enable_caching()


def warm_up(background: bool = True) -> None:
    """Import umap and compile its kernels once per process (a tiny fit + transform).

    In the background, a child process at the lowest CPU priority (nice 19) compiles first (the exact
    top-k kernels of ``eqi_core.rankers.topk``, then umap's) and fills numba's on-disk cache; this
    process then warms up on a nice-19 thread, where the cache cuts its work to about 5 CPU-seconds
    (33 before umap's own kernels were cached too, ``_cache_umaps_kernels``).
    Compiling on a thread of the server took the cores and the GIL from a newcomer's first clicks
    (the curated exposure example: 44 s instead of ~25 s on 2 idle cores, `eqi bench first-visit`).
    """

    def run() -> None:
        with _warm_lock:
            if _warm_done.is_set():
                return
            if background:
                _lower_this_threads_priority()
                _compile_in_an_idle_child()
                from eqi_core.rankers.topk import warm_up as load_top_k_kernels

                load_top_k_kernels()  # from the cache the child filled: exact maps then start without compiling
            x = np.random.default_rng(0).standard_normal((40, 8)).astype(np.float32)
            model = _umap_class()(n_neighbors=5, random_state=0, n_jobs=1).fit(x)
            model.transform(x[:3])
            _warm_done.set()

    def run_until_exit() -> None:
        try:
            run()
        except RuntimeError as exc:  # the process is exiting (a test run, a stopped server): nothing to warm
            if "interpreter shutdown" not in str(exc):
                raise

    if background:
        threading.Thread(target=run_until_exit, daemon=True, name="umap-warm-up").start()
    else:
        run()


def _lower_this_threads_priority() -> None:
    with contextlib.suppress(AttributeError, OSError):  # Linux: a nice value per thread
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)


PARENT_PID = "EQI_PARENT_PID"


def exit_with_parent() -> None:
    """End this process as soon as its parent is gone (a watcher thread polls the parent's pid). The
    parent names itself in ``EQI_PARENT_PID``: on a busy machine it can be gone before this child
    has imported enough to ask, and the child would then watch the process that adopted it."""
    parent = int(os.environ.get(PARENT_PID) or os.getppid())

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(0)

    threading.Thread(target=watch, daemon=True, name="exit-with-parent").start()


def compile_as_idle_child() -> None:
    """The warm-up child's work: the exact top-k kernels, then umap's. It exits as soon as the server
    that started it is gone, so a stopped server leaves no process writing into its store."""
    exit_with_parent()
    from eqi_core.rankers.topk import warm_up as compile_top_k

    compile_top_k()
    warm_up(background=False)


def _compile_in_an_idle_child(timeout_s: float = 600) -> None:
    import subprocess
    import sys

    use_numba_cache()
    with contextlib.suppress(OSError, subprocess.SubprocessError):  # else the tiny fit compiles in-process
        # the `nice` program, not preexec_fn (unsafe in a process with threads, as the server is)
        subprocess.run(["nice", "-n", "19", sys.executable, "-c",
                        "from eqi_core.projection import compile_as_idle_child; compile_as_idle_child()"],
                       env={**os.environ, PARENT_PID: str(os.getpid())}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=timeout_s,
                       check=False)


@dataclass
class Projection:
    """Fitted map of ``base`` points (a frame with x, y and whatever labels were given)."""

    points: pd.DataFrame
    model: object


def _key(emb: np.ndarray, params: tuple) -> str:
    return hashlib.sha256(np.ascontiguousarray(emb, dtype=np.float32).tobytes() + repr(params).encode()).hexdigest()


_fitted: dict[str, object] = {}
_FITTED_MAX = 16


def fit_map(emb: np.ndarray, labels: pd.DataFrame, n_neighbors: int = 10, min_dist: float = 0.3,
            metric: str = "cosine", seed: int = 0) -> Projection:
    """UMAP of ``emb`` (rows) with ``labels`` (same length) carried into the result frame. Fits are
    cached in-process by content, so rerunning a view with the same neighbourhood is instant. UMAP
    needs 4 points: fewer (a walk in a one- or two-passage collection) are laid out linearly
    (``_linear_map``; ``model`` None)."""
    emb = np.asarray(emb, dtype=np.float32)
    if len(emb) != len(labels):
        raise ValueError(f"{len(emb)} embeddings but {len(labels)} labels")
    if len(emb) < 4:
        xy = _linear_map(emb, metric)
        return Projection(labels.reset_index(drop=True).assign(x=xy[:, 0], y=xy[:, 1]), None)
    params = (min(n_neighbors, len(emb) - 1), min_dist, metric, seed)
    key = _key(emb, params)
    model = _fitted.get(key)
    if model is None:
        model = _umap_class()(n_neighbors=params[0], min_dist=min_dist, metric=metric, random_state=seed,
                              n_jobs=1, init="random" if len(emb) < 12 else "spectral").fit(emb)
        if len(_fitted) >= _FITTED_MAX:
            _fitted.pop(next(iter(_fitted)))
        _fitted[key] = model
        _warm_done.set()
    xy = model.embedding_
    return Projection(labels.reset_index(drop=True).assign(x=xy[:, 0], y=xy[:, 1]), model)


def _linear_map(emb: np.ndarray, metric: str = "cosine") -> np.ndarray:
    """Up to 3 points in 2-D by PCA (of the unit vectors, for the cosine metric): three points span a
    plane, so their distances are kept exactly; a single point sits at the origin."""
    x = emb.astype(np.float64)
    if metric == "cosine":
        x = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
    x = x - x.mean(axis=0)
    u, sing, _ = np.linalg.svd(x, full_matrices=False)
    xy = np.zeros((len(x), 2))
    k = min(2, len(sing))
    xy[:, :k] = u[:, :k] * sing[:k]
    return xy.astype(np.float32)


def trajectory_map(space, trav, k: int = 10, n_queries: int = 15) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The map around a traversal: fitted on the query, the target, the top-``k`` passages of
    each, the ``n_queries`` logged queries nearest the query and the target, and the decoded steps
    themselves, so every point drawn comes from the same fit (UMAP's ``.transform`` of a step
    identical to the query put it far from the query's own fitted point). Returns (neighbourhood
    frame, path frame), both with x, y."""
    from eqi_core.rankers.dense import exact_topk

    texts = space.collection.passage_texts()
    doc_emb = space.ranker.doc_embeddings
    ends = np.stack([trav.query_emb, trav.target_emb])
    _, top = exact_topk(ends, doc_emb, k)
    target_pos = space.passage_index(trav.target_id)
    rows = [{"kind": "query", "label": trav.query, "id": trav.query_id or ""},
            {"kind": "target passage", "label": readable(texts[target_pos]), "id": trav.target_id}]
    emb = [trav.query_emb, trav.target_emb]
    seen = {target_pos}
    for who, idx in (("query", top[0]), ("target", top[1])):
        for j in idx:
            if j not in seen:
                seen.add(j)
                rows.append({"kind": f"top passages of the {who}", "label": readable(texts[j]), "id": str(space.doc_ids[j])})
                emb.append(doc_emb[j])
    hood = space.neighbourhood
    _, near = exact_topk(ends, hood.query_emb, n_queries)
    seen_q = {trav.query.lower()}
    for j in dict.fromkeys(near.ravel().tolist()):
        if hood.query_texts[j].lower() not in seen_q:
            seen_q.add(hood.query_texts[j].lower())
            rows.append({"kind": "nearby logged queries", "label": hood.query_texts[j], "id": ""})
            emb.append(hood.query_emb[j])
    n_base = len(emb)
    steps_emb = np.asarray(trav.decoded_emb, dtype=np.float32).reshape(len(trav.steps), -1)
    every = np.concatenate([np.stack(emb).astype(np.float32), steps_emb])
    first = _first_of_equal(every)  # a step decoding the query again is drawn on the query's point
    fitted = np.unique(first)
    labels = pd.DataFrame(rows + [{"kind": "decoded step", "label": t, "id": ""} for t in trav.steps["decoded"]])
    proj = fit_map(every[fitted], labels.iloc[fitted])
    xy = proj.points[["x", "y"]].to_numpy()[np.searchsorted(fitted, first)]
    points = labels.iloc[:n_base].assign(x=xy[:n_base, 0], y=xy[:n_base, 1]).reset_index(drop=True)
    return points, trav.steps.assign(x=xy[n_base:, 0], y=xy[n_base:, 1])


def _first_of_equal(emb: np.ndarray, tol: float = 1e-6) -> np.ndarray:
    """For each row, the first row with the same direction (cosine >= 1 - tol): UMAP spreads exact
    duplicates apart (its repulsion), so equal vectors are fitted once and share that point."""
    unit = emb / np.maximum(np.linalg.norm(emb, axis=1, keepdims=True), 1e-12)
    same = unit @ unit.T >= 1 - tol
    return same.argmax(axis=1)  # the first True in each row (a row always matches itself)
