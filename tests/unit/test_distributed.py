"""Sharded exact exposure maps: in-process == LocalCluster == passage-sharded == the run-based map;
resumption after a stop; BM25; bad engine names; the cost model."""
import numpy as np
import pytest

from eqi_core.errors import DataError
from eqi_core.exposure.distributed import Engine, compute_exposure_map, plan_shards
from eqi_core.rankers.base import canonical_topk


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
    s, i = canonical_topk(scores, idx, 3)
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


@pytest.mark.parametrize("ranker", ["minilm-l3-onnx", "bm25", "splade-tiny"])
def test_inprocess_matches_the_run_based_map_and_shards_agree(tiny, tiny_store, ranker):
    from eqi_core.exposure.exact import ExposureMap
    from eqi_core.rankers import build_ranker, run_all_queries

    whole, info = compute_exposure_map(tiny, ranker, tiny_store, 5, Engine("inprocess"), query_shard=2)
    assert info["tasks_total"] == 3  # 5 queries in shards of 2
    sharded, _ = compute_exposure_map(tiny, ranker, tiny_store, 5, Engine("inprocess"), query_shard=1)
    assert same_map(whole, sharded)
    run = run_all_queries(build_ranker(ranker, tiny, tiny_store), tiny, tiny_store, k=5)
    reference = ExposureMap.from_run(run, tiny, 5)
    assert set(zip(whole.q_idx, whole.d_idx)) == set(zip(reference.q_idx, reference.d_idx))
    if ranker == "splade-tiny":  # run-sourced: the run's own ranks and scores, exactly
        assert same_map(whole, reference) and np.allclose(whole.scores, reference.scores)


def test_the_pages_map_is_the_clis_map(tiny, tmp_path, monkeypatch):
    """The Exposure pages (prepare_exposure) and `eqi exposure-map` build the map with one builder
    into the same store artifact: same queries, same ranks, same scores."""
    from typer.testing import CliRunner

    from eqi_core.cli import app
    from eqi_core.exposure.setup import exposure_ready, prepare_exposure
    from eqi_core.store import ArtifactStore
    from tests.conftest import TINY_BEIR

    cli_home, page_home = tmp_path / "cli", tmp_path / "page"
    monkeypatch.setenv("EQI_HOME", str(cli_home))
    result = CliRunner().invoke(app, ["exposure-map", "-c", f"beir:{TINY_BEIR}", "-r", "minilm-l3-onnx", "--n-qd", "5"])
    assert result.exit_code == 0, result.output
    cli_store = ArtifactStore(cli_home)
    assert not exposure_ready(tiny, "minilm-l3-onnx", ArtifactStore(page_home), depth=5)
    page = prepare_exposure(tiny, "minilm-l3-onnx", ArtifactStore(page_home), depth=5).exposure
    cli_map, info = compute_exposure_map(tiny, "minilm-l3-onnx", cli_store, 5)
    assert info["reused_artifact"], "the CLI stored the artifact the pages read"
    assert same_map(page, cli_map) and np.array_equal(page.scores, cli_map.scores)
    assert exposure_ready(tiny, "minilm-l3-onnx", ArtifactStore(page_home), depth=5)


def test_pasted_text_exposure_uses_the_maps_scores(tiny, tiny_store):
    """A pasted copy of a collection passage enters exactly the lists the passage itself is in."""
    from eqi_core.exposure.lookup import exact_for_new_text
    from eqi_core.exposure.setup import prepare_exposure

    setup = prepare_exposure(tiny, "minilm-l3-onnx", tiny_store, depth=5)
    doc = int(np.flatnonzero(setup.exposure.counts() > 0)[0])
    pasted = exact_for_new_text(setup, setup.doc_emb[doc] * (1 + 1e-6), 5)  # a hair above its own score
    q, r = setup.exposure.exposing(doc)
    assert dict(zip(setup.exposure.query_ids[q], r + 1)) == dict(zip(pasted["query_id"], pasted["rank"]))


def test_passage_sharding_gives_the_same_map(tiny, tiny_store):
    one, _ = compute_exposure_map(tiny, "minilm-l3-onnx", tiny_store, 4, Engine("inprocess"), passage_shards=1)
    four, info = compute_exposure_map(tiny, "minilm-l3-onnx", tiny_store, 4, Engine("inprocess"), passage_shards=4)
    assert info["plan"]["passage_shards"] == 4 and same_map(one, four)
    with pytest.raises(DataError, match="BM25 maps shard queries only"):
        compute_exposure_map(tiny, "bm25", tiny_store, 4, Engine("inprocess"), passage_shards=2)


def test_a_stopped_job_resumes_where_it_left_off(tiny, tmp_path):
    from eqi_core.store import ArtifactStore

    store = ArtifactStore(tmp_path / "s")
    with pytest.raises(InterruptedError, match="stopped after 2 of 5"):
        compute_exposure_map(tiny, "minilm-l3-onnx", store, 5, Engine("inprocess"), query_shard=1, max_tasks=2)
    resumed, info = compute_exposure_map(tiny, "minilm-l3-onnx", store, 5, Engine("inprocess"), query_shard=1)
    assert info["tasks_already_done"] == 2 and info["tasks_run"] == 3
    fresh, _ = compute_exposure_map(tiny, "minilm-l3-onnx", ArtifactStore(tmp_path / "t"), 5, Engine("inprocess"), query_shard=1)
    assert same_map(resumed, fresh)
    assert not list((tmp_path / "s" / "exposure-map").glob("*.work")), "the work directory is removed once the map exists"


def test_local_cluster_gives_the_inprocess_map(tiny, tiny_store):
    inproc, _ = compute_exposure_map(tiny, "minilm-l3-onnx", tiny_store, 3, Engine("inprocess"), query_shard=2)
    tiny_store.remove("exposure-map", {**_params(tiny, 3, 2)})
    local, info = compute_exposure_map(tiny, "minilm-l3-onnx", tiny_store, 3, Engine("local", n_workers=2), query_shard=2)
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

    from eqi_core.exposure.setup import prepare_exposure
    from eqi_core.store import ArtifactStore

    store = ArtifactStore(tmp_path / "s")
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        setup = prepare_exposure(tiny, "minilm-l3-onnx", store, depth=5, engine=Engine(cluster.scheduler_address))
    local = prepare_exposure(tiny, "minilm-l3-onnx", store, depth=5)
    assert set(zip(setup.exposure.q_idx, setup.exposure.d_idx)) == set(zip(local.exposure.q_idx, local.exposure.d_idx))
    assert store.list("exposure-map"), "the map was built by shards into the store"


def test_the_inverted_map_is_one_file_per_passage_bucket_and_reads_back(tmp_path):
    import pandas as pd

    from eqi_core.exposure.distributed import DOC_BUCKETS, _write_inverted, read_inverted

    work = tmp_path / "work"
    work.mkdir()
    # two query shards by hand: passage 0 and passage DOC_BUCKETS share bucket 0; passage 1 is alone in bucket 1
    pd.DataFrame({"q": np.array([0, 0], np.int32), "d": np.array([1, 0], np.int32), "rank0": np.array([0, 1], np.int16),
                  "score": [0.9, 0.8]}).to_parquet(work / "q00000.parquet")
    pd.DataFrame({"q": np.array([1], np.int32), "d": np.array([DOC_BUCKETS], np.int32), "rank0": np.array([0], np.int16),
                  "score": [0.7]}).to_parquet(work / "q00001.parquet")
    _write_inverted(work, 2, tmp_path / "map")
    assert sorted(p.relative_to(tmp_path / "map").as_posix() for p in (tmp_path / "map").rglob("*.parquet")) == [
        "bucket=0/part-0.parquet", "bucket=1/part-0.parquet"]
    first = pd.read_parquet(tmp_path / "map" / "bucket=0" / "part-0.parquet")
    assert first["d"].tolist() == [0, DOC_BUCKETS] and first["q"].tolist() == [0, 1]  # sorted by passage, then rank
    class Tiny:  # the two id columns read_inverted needs
        queries = pd.DataFrame({"query_id": ["a", "b"]})
        passages = pd.DataFrame({"doc_id": [f"p{i}" for i in range(DOC_BUCKETS + 1)]})

    inverted = read_inverted(tmp_path / "map", Tiny, 2)
    assert inverted.exposing(0)[0].tolist() == [0] and inverted.exposing(0)[1].tolist() == [1]
    assert inverted.exposing(1)[0].tolist() == [0] and inverted.exposing(DOC_BUCKETS)[0].tolist() == [1]
    # a log without queries: no shard, and the map still reads back (empty, with its columns)
    _write_inverted(work, 0, tmp_path / "empty")
    assert [p.relative_to(tmp_path / "empty").as_posix() for p in (tmp_path / "empty").rglob("*.parquet")] == [
        "bucket=0/part-0.parquet"]
    assert len(read_inverted(tmp_path / "empty", Tiny, 2).q_idx) == 0
