"""The exact exposure map: the one builder, run in-process by default or on a Dask cluster,
resumable, sharded by queries and passages.

The job is a grid of independent tasks: query shard i x passage shard j computes the exact top-k of
its queries over its passages and writes one Parquet file; a merge per query shard keeps the global
top-k (score descending, then passage index, so the order never depends on the shard layout).
Workers read their inputs from the artifact store by path, memory-mapped (passage and query
embeddings as .npy, or the bm25s index), so every worker needs the store on a shared file system
(automatic on one machine). Finished shard files are kept in the store's work directory: a killed
worker's tasks are rerun by Dask, and a killed job resumes where it stopped. The result, the
inverted passage -> (query, rank) map, is written as a Parquet dataset partitioned by passage
bucket into the store.

Where the rankings come from is the ranker's ``map_source`` in the registry: ``dense`` (exact
top-k by GEMM over stored embeddings, candidates re-scored in float64), ``bm25`` (the stored
bm25s index) or ``run`` (the ranker's cached run over the log, e.g. SPLADE; its ranks are kept).

The same task functions run in three ways: ``engine="inprocess"`` (a loop, no Dask), ``"local"``
(a ``LocalCluster`` of worker processes) or a scheduler address (``tcp://host:8786``).
"""
from __future__ import annotations

import json
import logging
import math
import time
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from eqi_core.collection import Collection
from eqi_core.errors import DataError
from eqi_core.exposure.exact import ExposureMap
from eqi_core.progress import ProgressFn, or_tqdm
from eqi_core.rankers.base import canonical_topk
from eqi_core.rankers.registry import ranker_spec, selection_params
from eqi_core.store import ArtifactStore, atomic_path

MAP_VERSION = 4  # 2: float64 re-scoring of candidates; 3: scores kept in the map, run-sourced maps;
# 4: the re-scoring's fixed summation order is rescore_rows' (last bits differ from 3's einsum)
DOC_BUCKETS = 16
DEFAULT_QUERY_SHARD = 2048
DEFAULT_BLOCK_BYTES = 64 << 20
log = logging.getLogger(__name__)
RESCORE_MARGIN = 16  # float32 candidates beyond k, re-scored exactly in float64
POLL_SECONDS = 2.0  # how often a Dask job checks that its cluster still has workers
MAX_CLUSTER_RESTARTS = 2


@dataclass(frozen=True)
class ShardPlan:
    n_queries: int
    n_passages: int
    query_shard: int
    passage_shards: int

    def query_ranges(self) -> list[tuple[int, int]]:
        return [(s, min(s + self.query_shard, self.n_queries)) for s in range(0, self.n_queries, self.query_shard)]

    def passage_ranges(self) -> list[tuple[int, int]]:
        step = math.ceil(self.n_passages / self.passage_shards)
        return [(s, min(s + step, self.n_passages)) for s in range(0, self.n_passages, step)]


def plan_shards(n_queries: int, n_passages: int, dim: int, query_shard: int = DEFAULT_QUERY_SHARD,
                passage_shards: int | None = None, worker_memory: int | None = None) -> ShardPlan:
    """Passage shards so one task's passage slice uses at most a quarter of a worker's memory."""
    if query_shard < 1:
        raise DataError(f"query shard size {query_shard}: expected >= 1")
    if passage_shards is None:
        passage_shards = 1
        if worker_memory:
            passage_shards = max(1, math.ceil(n_passages * dim * 4 / (worker_memory / 4)))
    if passage_shards < 1:
        raise DataError(f"passage shards {passage_shards}: expected >= 1")
    return ShardPlan(n_queries, n_passages, query_shard, min(passage_shards, max(1, n_passages)))


# -- tasks (run on workers: plain functions of plain arguments) ----------------------------------------
def _write_parquet(frame: pd.DataFrame, path: Path) -> None:
    with atomic_path(path) as tmp:
        frame.to_parquet(tmp, index=False)


@lru_cache(maxsize=2)
def _bm25(folder: str):
    from eqi_core.rankers.bm25 import load_index

    return load_index(Path(folder), mmap=True)


def shard_task(task: dict) -> dict:
    """One (query shard, passage shard) piece: exact top-k written to ``task['out']``."""
    out = Path(task["out"])
    if out.exists():
        return {"out": str(out), "seconds": 0.0, "reused": True}
    started = time.perf_counter()
    qs, qe = task["queries"]
    ds, de = task["passages"]
    k = task["k"]
    if task["kind"] == "run":  # the ranker's own ranking, order kept
        frame = pd.read_parquet(task["pairs"], filters=[("q", ">=", qs), ("q", "<", qe), ("rank0", "<", k)])
        frame = frame.sort_values(["q", "rank0"], kind="mergesort")[["q", "d", "score", "rank0"]]
        _write_parquet(frame.reset_index(drop=True), out)
        return {"out": str(out), "seconds": time.perf_counter() - started, "reused": False, "queries": qe - qs}
    if task["kind"] == "dense":
        from eqi_core.rankers.dense import exact_topk
        from eqi_core.rankers.topk import rescore_rows

        q = np.ascontiguousarray(np.load(task["query_emb"], mmap_mode="r")[qs:qe])
        d = np.load(task["passage_emb"], mmap_mode="r")[ds:de]
        _, idx = exact_topk(q, np.ascontiguousarray(d), min(k + RESCORE_MARGIN, de - ds),
                            block_bytes=task.get("block_bytes", DEFAULT_BLOCK_BYTES))
        scores = rescore_rows(q, d, idx)  # float64, one fixed summation order: ranks independent of BLAS threads
        idx = idx + ds
    else:
        from eqi_core.rankers.bm25 import bm25_topk

        retriever, tok = _bm25(task["index"])
        texts = pd.read_parquet(task["query_texts"])["text"].tolist()[qs:qe]
        scores, idx = bm25_topk(retriever, tok, texts, k)
    if scores.shape[1] < k:  # a passage shard smaller than k
        pad = k - scores.shape[1]
        scores = np.pad(scores, ((0, 0), (0, pad)), constant_values=-np.inf)
        idx = np.pad(idx, ((0, 0), (0, pad)), constant_values=-1)
    scores, idx = canonical_topk(scores.astype(np.float64), idx.astype(np.int64), k)
    n = qe - qs
    frame = pd.DataFrame({"q": np.repeat(np.arange(qs, qe, dtype=np.int32), k), "d": idx.ravel().astype(np.int32),
                          "score": scores.ravel()})
    _write_parquet(frame[frame["d"] >= 0].reset_index(drop=True), out)
    return {"out": str(out), "seconds": time.perf_counter() - started, "reused": False, "queries": n}


def merge_task(parts: list[str], out: str, k: int) -> dict:
    """Global top-k of one query shard from its passage-shard pieces (a copy when there is one)."""
    target = Path(out)
    if target.exists():
        return {"out": out, "reused": True}
    frame = pd.concat([pd.read_parquet(p) for p in parts], ignore_index=True)
    if len(parts) > 1:  # one piece is already in canonical (or the run's own) order
        frame = frame.sort_values(["q", "score", "d"], ascending=[True, False, True], kind="mergesort")
        frame = frame.groupby("q", sort=False).head(k).reset_index(drop=True)
    frame["rank0"] = frame.groupby("q").cumcount().astype(np.int16)
    _write_parquet(frame, target)
    return {"out": out, "reused": False}


# -- engines --------------------------------------------------------------------------------------------
@dataclass
class Engine:
    """Where tasks run: ``inprocess``, ``local`` (LocalCluster) or a scheduler address."""

    name: str = "inprocess"
    n_workers: int = 2
    memory_limit: str | int | None = None  # per worker, LocalCluster only ("1GB", bytes, or None = auto)
    stall_seconds: float = 60.0  # no worker this long: a local cluster is restarted, a remote job stops

    def __post_init__(self) -> None:
        if self.name not in ("inprocess", "local") and "://" not in self.name:
            raise DataError(f"engine {self.name!r}: expected inprocess, local or a scheduler address like tcp://host:8786")
        if self.n_workers < 1:
            raise DataError(f"workers = {self.n_workers}: expected >= 1")

    def worker_memory(self) -> int | None:
        if self.memory_limit is None:
            return None
        from dask.utils import parse_bytes

        return int(parse_bytes(self.memory_limit)) if isinstance(self.memory_limit, str) else int(self.memory_limit)

    def client(self):
        from dask.distributed import Client, LocalCluster

        if self.name == "local":
            cluster = LocalCluster(n_workers=self.n_workers, threads_per_worker=1, processes=True,
                                   memory_limit=self.memory_limit or "auto", dashboard_address=None)
            return Client(cluster)
        return Client(self.name, timeout="20s")


def run_grid(pieces: list[dict], merges: list[tuple[list[str], str]], k: int, engine: Engine,
             progress: ProgressFn | None = None, on_client=None) -> dict:
    """Run shard tasks then merges; returns counts. ``on_client(client)`` lets tests act mid-run."""
    total = len(pieces) + len(merges)
    report = or_tqdm(progress, "exposure shards", "task")
    done = 0
    ran = reused = 0
    if engine.name == "inprocess":
        for t in pieces:
            r = shard_task(t)
            ran, reused, done = ran + (not r["reused"]), reused + r["reused"], done + 1
            report(done, total)
        for parts, out in merges:
            merge_task(parts, out, k)
            done += 1
            report(done, total)
        return {"tasks_run": ran, "tasks_reused": reused}
    session = _DaskSession(engine)
    try:
        if on_client:
            on_client(session.client)

        def shard_done(r: dict) -> None:
            nonlocal ran, reused, done
            ran, reused, done = ran + (not r["reused"]), reused + r["reused"], done + 1
            report(done, total)

        def merge_done(_: dict) -> None:
            nonlocal done
            done += 1
            report(done, total)

        session.map(shard_task, [(t,) for t in pieces], shard_done)
        session.map(merge_task, [(parts, out, k) for parts, out in merges], merge_done)
        return {"tasks_run": ran, "tasks_reused": reused, "workers": len(session.client.nthreads()),
                "cluster_restarts": session.restarts}
    finally:
        session.close()


class _DaskSession:
    """A Dask client for an engine that notices when the cluster has no worker left.

    Dask reruns the tasks of a killed worker, but a worker whose nanny has died too (seen once in
    CI under a tight memory limit) leaves the scheduler with no worker and every future pending
    forever. After ``engine.stall_seconds`` without a worker, a local cluster is started afresh and
    the unfinished calls resubmitted (tasks are idempotent: finished shard files are kept); with a
    scheduler address the job stops with a one-line error, and a rerun resumes it."""

    def __init__(self, engine: Engine):
        self.engine = engine
        self.client = engine.client()
        self.restarts = 0

    def has_workers(self) -> bool:
        try:
            return bool(self.client.nthreads())
        except (OSError, TimeoutError):
            return False

    def restart(self) -> None:
        seconds = f"{self.engine.stall_seconds:g} s"
        if self.engine.name != "local":
            raise DataError(f"Dask scheduler {self.engine.name}: no worker for {seconds}; start workers "
                            f"(dask worker {self.engine.name}) and rerun: finished shards are kept")
        if self.restarts >= MAX_CLUSTER_RESTARTS:
            raise DataError(f"the local Dask cluster lost every worker {self.restarts + 1} times (no worker for "
                            f"{seconds} each time); a larger --memory-limit may help; rerun to resume")
        log.warning("the local Dask cluster has had no worker for %s: starting a fresh one (restart %d of %d); "
                    "finished shards are kept", seconds, self.restarts + 1, MAX_CLUSTER_RESTARTS)
        self.close()
        self.client = self.engine.client()
        self.restarts += 1

    def map(self, fn, calls: list[tuple], on_result) -> None:
        """``fn(*call)`` for every call, ``on_result(result)`` as each finishes (any order)."""
        from dask.distributed import wait

        pending = {self.client.submit(fn, *c, pure=False, retries=5): c for c in calls}
        idle_since = None
        while pending:
            try:
                finished, _ = wait(list(pending), timeout=POLL_SECONDS, return_when="FIRST_COMPLETED")
            except TimeoutError:
                finished = set()
            for f in finished:
                pending.pop(f)
                on_result(f.result())
            if finished or self.has_workers():
                idle_since = None
                continue
            idle_since = idle_since or time.monotonic()
            if time.monotonic() - idle_since >= self.engine.stall_seconds:
                self.restart()
                pending = {self.client.submit(fn, *c, pure=False, retries=5): c for c in pending.values()}
                idle_since = None

    def close(self) -> None:
        cluster = getattr(self.client, "cluster", None)
        self.client.close()
        if cluster is not None and self.engine.name == "local":
            cluster.close(timeout=30)


# -- the job --------------------------------------------------------------------------------------------
def _inputs(collection: Collection, ranker_id: str, store: ArtifactStore, depth: int,
            progress: ProgressFn | None) -> dict:
    """Paths of what workers read, built (once, in the store) on the client."""
    from eqi_core.exposure.result_logs import is_result_log, load_result_log, result_log_digest
    from eqi_core.rankers import build_ranker, ranker_spec, run_all_queries

    if is_result_log(ranker_id):  # a system's result log: its ranks as they are
        run, notes = load_result_log(ranker_id, collection, depth)
        return {**run_inputs(run, collection, store, depth, {"result_log": result_log_digest(ranker_id)}), "notes": notes}
    spec = ranker_spec(ranker_id)
    ranker = build_ranker(ranker_id, collection, store, progress)
    if spec.map_source == "dense":
        from eqi_core.exposure.reverse import query_embeddings
        from eqi_core.rankers.dense import embeddings_artifact, passage_embeddings_artifact

        query_embeddings(ranker.encoder, collection, store, progress)
        q_art = store.load(*embeddings_artifact(ranker.encoder.id, {"collection": collection.fingerprint, "field": "queries"}),
                           verify=False)
        d_art = store.load(*passage_embeddings_artifact(collection, ranker.encoder.id), verify=False)
        return {"kind": "dense", "query_emb": str(q_art.file("embeddings.npy")),
                "passage_emb": str(d_art.file("embeddings.npy")), "dim": int(ranker.doc_embeddings.shape[1])}
    if spec.map_source == "bm25":
        from eqi_core.rankers.bm25 import BM25Ranker

        art = store.load(*BM25Ranker.artifact(collection), verify=False)

        def texts(tmp: Path) -> dict:
            collection.queries[["query_id", "text"]].to_parquet(tmp / "queries.parquet", index=False)
            return {"rows": len(collection.queries)}

        q_art = store.get_or_build("query-texts", {"collection": collection.fingerprint}, texts)
        return {"kind": "bm25", "index": str(art.file("index")), "query_texts": str(q_art.file("queries.parquet")), "dim": 0}
    run = run_all_queries(ranker, collection, store, k=depth, progress=progress)
    return run_inputs(run, collection, store, depth, {"ranker": ranker_id, "run": run.meta.get("artifact")})


def run_inputs(run, collection: Collection, store: ArtifactStore, depth: int, source: dict) -> dict:
    """A run over the log as a map source: its (query, passage, rank, score) pairs in the store."""
    from eqi_core.exposure.exact import run_pairs

    def build(tmp: Path) -> dict:
        q, d, rank0, scores = run_pairs(run, collection, depth)
        pd.DataFrame({"q": q, "d": d, "rank0": rank0, "score": scores}).to_parquet(tmp / "pairs.parquet", index=False)
        return {"pairs": int(len(q))}

    art = store.get_or_build("run-pairs", {"collection": collection.fingerprint, "depth": depth, **source}, build)
    return {"kind": "run", "pairs": str(art.file("pairs.parquet")), "dim": 0}


def map_params(collection: Collection, ranker_id: str, depth: int, plan: ShardPlan) -> dict:
    from eqi_core.exposure.result_logs import is_result_log, result_log_digest

    params = {"collection": collection.fingerprint, "ranker": ranker_id, "depth": depth,
              "query_shard": plan.query_shard, "passage_shards": plan.passage_shards, "version": MAP_VERSION}
    if is_result_log(ranker_id):  # the file's content, not only its path
        params["source"] = result_log_digest(ranker_id)
    spec = ranker_spec(ranker_id)
    params.update(selection_params(spec))
    if spec.map_source == "dense":  # a map from shipped vectors is keyed apart from one from vectors encoded here
        from eqi_core.rankers.dense import shipped_digests

        if shipped := shipped_digests(spec.encoder, collection):
            params["shipped"] = shipped
    return params


def compute_exposure_map(collection: Collection, ranker_id: str, store: ArtifactStore, depth: int = 100,
                         engine: Engine | None = None, query_shard: int = DEFAULT_QUERY_SHARD,
                         passage_shards: int | None = None, progress: ProgressFn | None = None,
                         on_client=None, max_tasks: int | None = None) -> tuple[ExposureMap, dict]:
    """The exact exposure map of a ranker over the collection's log, computed by shards (see the
    module doc) and stored; the pages, the CLI and Dask all come here. Returns (map, build info).
    ``max_tasks`` stops after that many new shard tasks (in-process only; tests of resumption)."""
    engine = engine or Engine()
    if depth <= 0:
        raise DataError(f"n_q->d = {depth}: expected a positive depth")
    source = ranker_spec(ranker_id).map_source
    if source != "dense" and (passage_shards or 1) > 1:  # checked before any index or run is built
        raise DataError(f"{ranker_spec(ranker_id).name} maps shard queries only: "
                        + ("its IDF is global, so the index cannot be split by passages" if source == "bm25"
                           else "its rankings come from a run over the whole collection"))
    inputs = _inputs(collection, ranker_id, store, depth, progress)
    plan = plan_shards(len(collection.queries), len(collection.passages), inputs["dim"] or 1, query_shard,
                       passage_shards if inputs["kind"] == "dense" else 1,
                       engine.worker_memory() if inputs["kind"] == "dense" else None)
    params = map_params(collection, ranker_id, depth, plan)
    info: dict = {"engine": engine.name, "plan": asdict(plan), "notes": inputs.pop("notes", []),
                  "source": params.get("source", "")}

    def build(tmp: Path) -> dict:
        work = store.work_dir("exposure-map", params)
        info.update(compute_grid(inputs, plan, depth, engine, work, progress, on_client, max_tasks))
        _write_inverted(work, len(plan.query_ranges()), tmp / "map")
        meta = {"plan": asdict(plan), "engine": engine.name, "compute_seconds": info["compute_seconds"]}
        (tmp / "job.json").write_text(json.dumps(meta), encoding="utf-8")
        return meta

    art = store.get_or_build("exposure-map", params, build, sources=[f"collection:{collection.fingerprint}"])
    store.clear_work_dir("exposure-map", params)
    info.setdefault("reused_artifact", "compute_seconds" not in info)
    return read_inverted(art.file("map"), collection, depth), info


def map_artifact(collection: Collection, ranker_id: str, depth: int = 100) -> tuple[str, dict]:
    """(kind, params) of the map ``compute_exposure_map`` stores with its default shard plan."""
    from eqi_core.rankers import embedding_dimension, ranker_spec

    spec = ranker_spec(ranker_id)
    dim = embedding_dimension(ranker_id) if spec.map_source == "dense" else 1
    return "exposure-map", map_params(collection, ranker_id, depth, plan_shards(len(collection.queries),
                                                                               len(collection.passages), dim or 1))


def compute_grid(inputs: dict, plan: ShardPlan, depth: int, engine: Engine, work: Path,
                 progress: ProgressFn | None = None, on_client=None, max_tasks: int | None = None) -> dict:
    """Run every (query shard x passage shard) task not yet done in ``work`` and the merges; the
    merged top-k of query shard i ends in ``work/q{i:05d}.parquet``. Returns what ran."""
    block = DEFAULT_BLOCK_BYTES
    if engine.worker_memory():
        block = max(1 << 20, min(block, engine.worker_memory() // 16))
    pieces, merges = [], []
    for qi, qr in enumerate(plan.query_ranges()):
        final = work / f"q{qi:05d}.parquet"
        parts = [str(work / f"q{qi:05d}-p{pj:03d}.parquet") for pj in range(len(plan.passage_ranges()))]
        if not final.exists():
            pieces += [{**inputs, "queries": qr, "passages": pr, "k": depth, "out": out, "block_bytes": block}
                       for out, pr in zip(parts, plan.passage_ranges())]
            merges.append((parts, str(final)))
    todo = [t for t in pieces if not Path(t["out"]).exists()]
    info = {"tasks_total": len(plan.query_ranges()) * len(plan.passage_ranges())}
    info["tasks_already_done"] = info["tasks_total"] - len(todo)
    if max_tasks is not None and len(todo) > max_tasks:
        run_grid(todo[:max_tasks], [], depth, Engine("inprocess"), progress)
        raise InterruptedError(f"stopped after {max_tasks} of {len(todo)} shard tasks; rerun to resume")
    started = time.perf_counter()
    info.update(run_grid(todo, merges, depth, engine, progress, on_client))
    info["compute_seconds"] = round(time.perf_counter() - started, 3)
    return info


def read_grid(work: Path, n_shards: int) -> pd.DataFrame:
    """The merged top-k of every query shard: q, d, score, rank0."""
    return pd.concat([pd.read_parquet(work / f"q{i:05d}.parquet") for i in range(n_shards)], ignore_index=True)


def _write_inverted(work: Path, n_shards: int, out: Path) -> None:
    """passage -> (query, rank) as Parquet files partitioned by passage bucket (hive layout,
    ``bucket=N/part-0.parquet``; an empty map keeps its schema in ``bucket=0``).

    Written bucket by bucket with ``pq.write_table``, which is done when it returns: with
    ``pyarrow.dataset.write_dataset``, one of Arrow's threads could still be releasing the table's
    numpy-backed buffers after the call, and a process exiting by then aborted in that thread
    ("terminate called without an active exception", 1 run in 12 of the scale benchmark's child,
    which exits right after writing)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    frame = (read_grid(work, n_shards)[["q", "d", "rank0", "score"]] if n_shards
             else pd.DataFrame({"q": np.array([], np.int32), "d": np.array([], np.int32),
                                "rank0": np.array([], np.int16), "score": np.array([], np.float64)}))
    frame = frame.sort_values(["d", "rank0", "q"], kind="mergesort").reset_index(drop=True)
    buckets = (frame["d"] % DOC_BUCKETS).to_numpy() if len(frame) else np.zeros(1, np.int64)
    out.mkdir(parents=True, exist_ok=True)
    for bucket in np.unique(buckets):
        part = frame[buckets == bucket] if len(frame) else frame
        folder = out / f"bucket={int(bucket)}"
        folder.mkdir(exist_ok=True)
        pq.write_table(pa.Table.from_pandas(part, preserve_index=False), folder / "part-0.parquet")


def read_inverted(folder: Path, collection: Collection, depth: int) -> ExposureMap:
    import pyarrow.dataset as ds

    frame = ds.dataset(folder, format="parquet", partitioning="hive").to_table(columns=["q", "d", "rank0", "score"]).to_pandas()
    return ExposureMap.from_pairs(collection.queries["query_id"], collection.passages["doc_id"], depth,
                                  frame["q"].to_numpy(np.int32), frame["d"].to_numpy(np.int32),
                                  frame["rank0"].to_numpy(np.int16), frame["score"].to_numpy(np.float64))
