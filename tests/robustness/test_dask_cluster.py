"""The WordNet default's exact exposure map on real Dask clusters: in-process, LocalCluster, a
separately started `dask scheduler` + 2 `dask worker` processes, a worker killed mid-run, and a
deliberately small per-worker memory limit with passage sharding. All maps must be identical."""
import json
import os
import signal
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

from eqi_core.exposure.distributed import Engine, compute_exposure_map, map_params, plan_shards

pytestmark = pytest.mark.slow
DASK = Path(sys.executable).with_name("dask")
SHARD = 1024


def same_map(a, b) -> bool:
    return np.array_equal(a.q_idx, b.q_idx) and np.array_equal(a.d_idx, b.d_idx) and np.array_equal(a.rank0, b.rank0)


@pytest.fixture(scope="module")
def wordnet(shared_store):
    from eqi_core.loaders import load_collection

    return load_collection("wordnet", shared_store)


@pytest.fixture(scope="module")
def reference(wordnet, shared_store):
    emap, info = compute_exposure_map(wordnet, "minilm-l6", shared_store, 100, Engine("inprocess"), query_shard=SHARD)
    return emap


def fresh(wordnet, store, passage_shards=1):
    store.remove("exposure-map", map_params(wordnet, "minilm-l6", 100, plan_shards(len(wordnet.queries), len(wordnet.passages),
                                                                                   384, SHARD, passage_shards)))


def test_reference_map_is_complete(wordnet, reference):
    assert len(reference.q_idx) == 100 * len(wordnet.queries)  # every query exposes exactly 100 passages
    assert reference.counts().sum() == len(reference.q_idx)


def test_separately_started_scheduler_and_two_workers(wordnet, shared_store, reference, tmp_path):
    sched_file = tmp_path / "scheduler.json"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    procs = [subprocess.Popen([str(DASK), "scheduler", "--scheduler-file", str(sched_file), "--port", "0",
                               "--no-dashboard"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        for _ in range(120):
            if sched_file.exists() and sched_file.stat().st_size:
                break
            time.sleep(0.5)
        address = json.loads(sched_file.read_text(encoding="utf-8"))["address"]
        for _ in range(2):
            procs.append(subprocess.Popen([str(DASK), "worker", address, "--nthreads", "1", "--nworkers", "1",
                                           "--no-dashboard"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        from dask.distributed import Client

        with Client(address, timeout="30s") as c:
            c.wait_for_workers(2, timeout=120)
        fresh(wordnet, shared_store)
        emap, info = compute_exposure_map(wordnet, "minilm-l6", shared_store, 100, Engine(address), query_shard=SHARD)
        assert info["workers"] == 2 and info["tasks_run"] == info["tasks_total"]
        assert same_map(emap, reference)
    finally:
        for p in procs[::-1]:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()


def test_local_cluster_survives_a_killed_worker(wordnet, shared_store, reference):
    killed = {}

    def kill_one_worker_mid_run(client):
        work = shared_store.path_for("exposure-map", "x").parent

        def watch():
            deadline = time.time() + 120
            while time.time() < deadline and not any(work.glob("*.work/q*-p*.parquet")):
                time.sleep(0.05)
            pids = client.run(os.getpid)
            victim = sorted(pids.values())[0]
            os.kill(victim, signal.SIGKILL)
            killed["pid"] = victim
            killed["done_before"] = len(list(work.glob("*.work/q*-p*.parquet")))

        threading.Thread(target=watch, daemon=True).start()

    fresh(wordnet, shared_store)
    emap, info = compute_exposure_map(wordnet, "minilm-l6", shared_store, 100, Engine("local", n_workers=2),
                                          query_shard=SHARD // 2, on_client=kill_one_worker_mid_run)
    assert "pid" in killed, "the worker was not killed during the run"
    assert killed["done_before"] < info["tasks_total"], "the kill came after the work was done"
    assert same_map(emap, reference)


def _worker_baseline_bytes() -> int:
    """RSS of an idle Dask worker that has imported what a shard task imports and compiled its kernels
    (it differs between machines, environments and paths, so the limit below is set relative to it)."""
    from dask.distributed import Client, LocalCluster

    def rss_after_imports() -> int:
        import psutil

        import eqi_core.exposure.distributed
        import eqi_core.rankers.dense  # noqa: F401  (torch)
        from eqi_core.rankers.topk import warm_up

        warm_up()  # the compiled kernels (on CPUs with VNNI, the int8 path's too, and onnxruntime's session)
        return psutil.Process().memory_info().rss

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        return int(list(client.run(rss_after_imports).values())[0])


def test_passage_shards_under_a_small_worker_memory_limit(tmp_path):
    """One worker limited to its own idle size + 450 MB; passages 1.5x a task's budget (a quarter of
    the limit): the planner splits them in 2, the worker is never killed (Dask kills at 95%), and the
    top-k equals the unsharded in-process one."""
    from eqi_core.exposure.distributed import compute_grid, read_grid

    limit = _worker_baseline_bytes() + (450 << 20)
    n_docs = int(1.5 * (limit / 4) / (384 * 4))
    rng = np.random.default_rng(0)
    np.save(tmp_path / "d.npy", rng.standard_normal((n_docs, 384), dtype=np.float32))
    np.save(tmp_path / "q.npy", rng.standard_normal((600, 384), dtype=np.float32))
    inputs = {"kind": "dense", "query_emb": str(tmp_path / "q.npy"), "passage_emb": str(tmp_path / "d.npy"), "dim": 384}
    engine = Engine("local", n_workers=1, memory_limit=limit)
    plan = plan_shards(600, n_docs, 384, 300, None, engine.worker_memory())
    assert plan.passage_shards == 2
    (tmp_path / "dask").mkdir()
    info = compute_grid(inputs, plan, 10, engine, tmp_path / "dask")
    assert info["workers"] == 1 and info["tasks_run"] == 4
    if info["cluster_restarts"]:  # the job recovered (what once hung CI); say so in the run's summary
        warnings.warn(f"the worker and its nanny were lost; the job restarted its cluster {info['cluster_restarts']} time(s) "
                      "and finished", RuntimeWarning, stacklevel=1)
    (tmp_path / "one").mkdir()
    compute_grid(inputs, plan_shards(600, n_docs, 384, 300, 1), 10, Engine("inprocess"), tmp_path / "one")
    a, b = read_grid(tmp_path / "dask", 2), read_grid(tmp_path / "one", 2)
    assert a[["q", "d", "rank0"]].equals(b[["q", "d", "rank0"]])


def _tiny_dense_inputs(folder: Path, n_queries=200, n_docs=3000) -> dict:
    rng = np.random.default_rng(1)
    np.save(folder / "d.npy", rng.standard_normal((n_docs, 32), dtype=np.float32))
    np.save(folder / "q.npy", rng.standard_normal((n_queries, 32), dtype=np.float32))
    return {"kind": "dense", "query_emb": str(folder / "q.npy"), "passage_emb": str(folder / "d.npy"), "dim": 32}


def test_a_local_cluster_left_without_workers_is_restarted(tmp_path):
    """The CI hang: the worker and its nanny gone, the scheduler has no worker, futures wait forever.
    The job starts a fresh local cluster after ``stall_seconds`` and finishes with the same top-k."""
    from eqi_core.exposure.distributed import compute_grid, read_grid

    inputs = _tiny_dense_inputs(tmp_path)
    plan = plan_shards(200, 3000, 32, 50, 2)

    def close_every_nanny(client):
        for nanny in list(client.cluster.workers.values()):
            client.sync(nanny.close)
        assert not client.nthreads()

    (tmp_path / "dask").mkdir()
    info = compute_grid(inputs, plan, 10, Engine("local", n_workers=1, stall_seconds=3), tmp_path / "dask",
                        on_client=close_every_nanny)
    assert info["cluster_restarts"] == 1 and info["workers"] == 1 and info["tasks_run"] == 8
    (tmp_path / "one").mkdir()
    compute_grid(inputs, plan, 10, Engine("inprocess"), tmp_path / "one")
    a, b = read_grid(tmp_path / "dask", 4), read_grid(tmp_path / "one", 4)
    assert a[["q", "d", "rank0"]].equals(b[["q", "d", "rank0"]])


def test_a_scheduler_without_workers_stops_with_one_line(tmp_path):
    from dask.distributed import LocalCluster

    from eqi_core.errors import DataError
    from eqi_core.exposure.distributed import compute_grid

    inputs = _tiny_dense_inputs(tmp_path)
    (tmp_path / "work").mkdir()
    with LocalCluster(n_workers=0, processes=True, dashboard_address=None) as cluster:
        engine = Engine(cluster.scheduler_address, stall_seconds=2)
        with pytest.raises(DataError, match=r"no worker for 2 s; start workers .* finished shards are kept") as err:
            compute_grid(inputs, plan_shards(200, 3000, 32, 100, 1), 10, engine, tmp_path / "work")
    assert "\n" not in str(err.value)
