"""#16's check on the default collection: the exact exposure map built with the numba top-k kernel is the
map built with ``torch.topk`` (the selection before it), and, on CPUs with VNNI, the map built from int8
candidates (``int8_gemm``): same exposing queries, same ranks, same scores."""
import pandas as pd
import pytest

pytestmark = [pytest.mark.data, pytest.mark.slow]


def _map_frame(folder):
    frame = pd.concat([pd.read_parquet(p) for p in sorted(folder.rglob("*.parquet"))], ignore_index=True)
    return frame.sort_values(["q", "d"]).reset_index(drop=True)


def test_the_kernel_torch_topk_and_int8_candidates_build_the_same_wordnet_map(shared_store, tmp_path, monkeypatch):
    from eqi_core.exposure.distributed import Engine, _inputs, _write_inverted, compute_grid, plan_shards
    from eqi_core.loaders import load_collection
    from eqi_core.rankers import dense, int8_gemm

    wordnet = load_collection("wordnet", shared_store)
    inputs = _inputs(wordnet, "minilm-l6", shared_store, 100, None)
    inputs.pop("notes", None)
    plan = plan_shards(len(wordnet.queries), len(wordnet.passages), inputs["dim"])
    monkeypatch.setenv("EQI_INT8_GEMM", "on")
    paths = [("kernel", 0, "off"), ("torch.topk", 1 << 62, "off")] + ([("int8", 0, "on")] if int8_gemm.enabled() else [])
    maps = {}
    for label, threshold, int8 in paths:
        monkeypatch.setattr(dense, "KERNEL_MIN_SCORES", threshold)
        monkeypatch.setenv("EQI_INT8_GEMM", int8)
        compute_grid(inputs, plan, 100, Engine("inprocess"), tmp_path / f"work-{label}")
        _write_inverted(tmp_path / f"work-{label}", len(plan.query_ranges()), tmp_path / f"map-{label}")
        maps[label] = _map_frame(tmp_path / f"map-{label}")
    assert len(maps["kernel"]) == 100 * len(wordnet.queries)
    for label in maps:
        pd.testing.assert_frame_equal(maps[label], maps["kernel"], obj=label)
