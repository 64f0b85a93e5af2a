"""Sharded exact exposure maps: in-process == LocalCluster == passage-sharded == the run-based map;
resumption after a stop; BM25; bad engine names; the cost model."""
import numpy as np
import pytest

from eqi_core.errors import DataError
from eqi_core.exposure.distributed import Engine, _canonical, distributed_exposure_map, plan_shards


def same_map(a, b) -> bool:
    return (np.array_equal(a.q_idx, b.q_idx) and np.array_equal(a.d_idx, b.d_idx) and np.array_equal(a.rank0, b.rank0)
            and np.array_equal(a.offsets, b.offsets))


def test_plan_sizes_passage_shards_to_worker_memory():
    p = plan_shards(10_000, 1_000_000, 384, query_shard=1000, worker_memory=1 << 30)
    # 1M x 384 x 4 B = 1.54 GB of passages; a quarter of 1 GiB per task -> 6 shards
    assert p.passage_shards == 6 and len(p.query_ranges()) == 10
    ranges = p.passage_ranges()
    assert ranges[0][0] == 0 and ranges[-1][1] == 1_000_000 and all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))
    assert plan_shards(10, 5, 384).passage_shards == 1


def test_canonical_order_breaks_ties_by_passage_index():
    scores = np.array([[0.5, 0.9, 0.5, 0.0]], dtype=np.float32)
    idx = np.array([[7, 3, 2, -1]])
    s, i = _canonical(scores, idx, 3)
    assert i.tolist() == [[3, 2, 7]] and s.tolist()[0] == [pytest.approx(0.9), 0.5, 0.5]


def test_bad_engine_is_one_line():
    with pytest.raises(DataError, match="engine 'spark'"):
        Engine("spark")
    with pytest.raises(DataError, match="workers = 0"):
        Engine("local", n_workers=0)


@pytest.fixture(scope="module")
def tiny_store(tmp_path_factory):
    from eqi_core.store import ArtifactStore

    return ArtifactStore(tmp_path_factory.mktemp("dist_store"))


@pytest.mark.parametrize("ranker", ["minilm-l3-onnx", "bm25"])
def test_inprocess_matches_the_run_based_map_and_shards_agree(tiny, tiny_store, ranker):
    from eqi_core.exposure.exact import compute_exposure_map
    from eqi_core.rankers import build_ranker

    whole, info = distributed_exposure_map(tiny, ranker, tiny_store, 5, Engine("inprocess"), query_shard=2)
    assert info["tasks_total"] == 3  # 5 queries in shards of 2
    sharded, _ = distributed_exposure_map(tiny, ranker, tiny_store, 5, Engine("inprocess"), query_shard=1)
    assert same_map(whole, sharded)
    reference = compute_exposure_map(build_ranker(ranker, tiny, tiny_store), tiny, tiny_store, 5)
    assert set(zip(whole.q_idx, whole.d_idx)) == set(zip(reference.q_idx, reference.d_idx))


def test_passage_sharding_gives_the_same_map(tiny, tiny_store):
    one, _ = distributed_exposure_map(tiny, "minilm-l3-onnx", tiny_store, 4, Engine("inprocess"), passage_shards=1)
    four, info = distributed_exposure_map(tiny, "minilm-l3-onnx", tiny_store, 4, Engine("inprocess"), passage_shards=4)
    assert info["plan"]["passage_shards"] == 4 and same_map(one, four)
    with pytest.raises(DataError, match="BM25 maps shard queries only"):
        distributed_exposure_map(tiny, "bm25", tiny_store, 4, Engine("inprocess"), passage_shards=2)


def test_a_stopped_job_resumes_where_it_left_off(tiny, tmp_path):
    from eqi_core.store import ArtifactStore

    store = ArtifactStore(tmp_path / "s")
    with pytest.raises(InterruptedError, match="stopped after 2 of 5"):
        distributed_exposure_map(tiny, "minilm-l3-onnx", store, 5, Engine("inprocess"), query_shard=1, max_tasks=2)
    resumed, info = distributed_exposure_map(tiny, "minilm-l3-onnx", store, 5, Engine("inprocess"), query_shard=1)
    assert info["tasks_already_done"] == 2 and info["tasks_run"] == 3
    fresh, _ = distributed_exposure_map(tiny, "minilm-l3-onnx", ArtifactStore(tmp_path / "t"), 5, Engine("inprocess"), query_shard=1)
    assert same_map(resumed, fresh)
    assert not list((tmp_path / "s" / "exposure-map").glob("*.work")), "the work directory is removed once the map exists"


def test_local_cluster_gives_the_inprocess_map(tiny, tiny_store):
    inproc, _ = distributed_exposure_map(tiny, "minilm-l3-onnx", tiny_store, 3, Engine("inprocess"), query_shard=2)
    tiny_store.remove("exposure-map", {**_params(tiny, 3, 2)})
    local, info = distributed_exposure_map(tiny, "minilm-l3-onnx", tiny_store, 3, Engine("local", n_workers=2), query_shard=2)
    assert info["engine"] == "local" and info["workers"] == 2 and info["tasks_run"] == 3
    assert same_map(inproc, local)


def _params(tiny, depth, shard):
    from eqi_core.exposure.distributed import map_params

    return map_params(tiny, "minilm-l3-onnx", depth, plan_shards(len(tiny.queries), len(tiny.passages), 384, shard))


def test_cost_model_arithmetic():
    from eqi_core.bench import cost_model

    m = cost_model(1000, 2000, 10, workers=2, gflops_per_worker=1.0, k=5, query_shard=500)
    assert m["flops"] == 2 * 1000 * 2000 * 10
    assert m["expected_seconds"] == pytest.approx(40e6 / 2e9, abs=0.1)
    assert m["bytes_moved"] == 1000 * 10 * 4 + 2 * 2000 * 10 * 4 + 1000 * 5 * 12


def test_prepare_exposure_on_a_scheduler_address(tiny, tmp_path):
    """`eqi exposure --scheduler ADDR` path: the EQI setup's exact map computed on a running cluster."""
    from dask.distributed import LocalCluster

    from eqi_core.exposure.evaluate import prepare_exposure
    from eqi_core.store import ArtifactStore

    store = ArtifactStore(tmp_path / "s")
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        setup = prepare_exposure(tiny, "minilm-l3-onnx", store, depth=5, engine=Engine(cluster.scheduler_address))
    local = prepare_exposure(tiny, "minilm-l3-onnx", store, depth=5)
    assert set(zip(setup.exposure.q_idx, setup.exposure.d_idx)) == set(zip(local.exposure.q_idx, local.exposure.d_idx))
    assert store.list("exposure-map"), "the map was built by shards into the store"
