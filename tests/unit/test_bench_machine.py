"""The CPU in every `eqi bench` JSON: runs on different host CPUs must be told apart."""
import sys

import pytest

from eqi_core.bench import _taking_turns, bench_all, cpu, machine
from eqi_core.cli import main

ZEN1 = """processor	: 0
vendor_id	: AuthenticAMD
cpu family	: 23
model		: 1
model name	: AMD EPYC
stepping	: 2
cpu MHz		: 1996.249
flags		: fpu sse2 avx f16c fma avx2 sha_ni

processor	: 1
vendor_id	: AuthenticAMD
cpu family	: 23
model		: 1
model name	: AMD EPYC
"""


def test_cpu_reads_the_first_processor_of_cpuinfo():
    got = cpu(ZEN1)
    assert got["name"] == "AMD EPYC"
    assert got["family_model_stepping"] == "23/1/2"
    assert got["mhz"] == 1996.249
    assert got["simd"] == ["avx", "avx2", "fma", "f16c"]  # in SIMD_FLAGS order; sha_ni is not a SIMD width
    assert got["cores"] >= 1


def test_cpu_without_fields_says_unknown_rather_than_failing():
    got = cpu("processor : 0\n")
    assert got["family_model_stepping"] == "?/?/?" and got["mhz"] is None and got["simd"] == []


def test_machine_names_this_cpu():
    assert machine()["cpu"]["cores"] >= 1


def test_bench_all_runs_each_step_once_in_order_with_cpu_and_commit():
    order, said = [], []

    def step(name):
        def run():
            order.append(name)
            return {"benchmark": name}
        return run

    out = bench_all({"exposure": step("exposure"), "encode": step("encode")}, said.append)
    assert order == ["exposure", "encode"] and list(out["results"]) == ["exposure", "encode"]
    assert out["results"]["encode"]["benchmark"] == "encode" and out["results"]["encode"]["wall_seconds"] >= 0
    assert out["machine"]["cpu"]["cores"] >= 1 and "commit" in out and out["failed"] == []
    assert said == ["eqi bench all: exposure...", "eqi bench all: encode..."]


def test_bench_all_keeps_the_other_steps_when_one_fails():
    said = []

    def broken():
        raise RuntimeError("bench scale: the 100,000-passage map failed (exit -6): terminate called")

    out = bench_all({"encode": lambda: {"benchmark": "encode"}, "scale": broken, "dense": lambda: {"benchmark": "dense"}},
                    said.append)
    assert out["failed"] == ["scale"]
    assert out["results"]["scale"]["error"] == "RuntimeError: bench scale: the 100,000-passage map failed (exit -6): terminate called"
    assert out["results"]["encode"]["benchmark"] == "encode" and out["results"]["dense"]["benchmark"] == "dense"
    assert "eqi bench all: scale failed: bench scale: the 100,000-passage map failed (exit -6): terminate called" in said
    assert said[-1] == "eqi bench all: dense..."


def test_bench_all_refuses_bad_sizes_before_any_work(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["eqi", "bench", "all", "--sizes", "10k"])
    with pytest.raises(SystemExit) as exc:
        main()
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["error: --sizes '10k': expected comma-separated synset counts or 'full'"]


def test_bench_all_cli_writes_the_json_and_exits_1_when_a_step_failed(monkeypatch, capsys, tmp_path):
    import json

    import eqi_core.bench as bench

    monkeypatch.setattr(bench, "bench_exposure", lambda *a, **k: {"benchmark": "exposure"})
    monkeypatch.setattr(bench, "bench_dense", lambda *a, **k: {"benchmark": "dense"})
    monkeypatch.setattr(bench, "bench_encode", lambda *a, **k: {"benchmark": "encode"})

    def scale(*a, **k):
        raise RuntimeError("bench scale: the 100,000-passage map failed (exit -6): terminate called")

    monkeypatch.setattr(bench, "bench_scale", scale)
    out = tmp_path / "bench.json"
    monkeypatch.setattr(sys, "argv", ["eqi", "bench", "all", "-c", "tests/fixtures/tiny_beir", "--latency-collection",
                                      "tests/fixtures/tiny_beir", "-o", str(out)])
    with pytest.raises(SystemExit) as exc:
        main()
    assert exc.value.code == 1
    written = json.loads(out.read_text(encoding="utf-8"))
    assert written["failed"] == ["scale"] and written["results"]["encode"]["benchmark"] == "encode"
    assert "eqi bench all: scale failed: bench scale: the 100,000-passage map failed" in capsys.readouterr().err


def test_dense_layer_flops_of_minilm_l6_by_hand():
    from eqi_core.bench import dense_layer_flops_per_token

    # 6 layers x (Q, K, V, attention output: 4 x 384 x 384 + feed-forward: 2 x 384 x 1536) multiply-adds, x 2
    assert dense_layer_flops_per_token(6, 384, 1536) == 2 * 6 * (4 * 147_456 + 2 * 589_824) == 21_233_664


def test_onnx_gemm_ceiling_is_a_positive_rate():
    from eqi_core.bench import onnx_gemm_gflops

    rate = onnx_gemm_gflops(16, 32, rows=8, seconds=0.01, repeats=1)
    assert 0 < rate < 1e5


def test_paths_take_turns_in_a_turning_order_and_each_keeps_its_fastest_rounds_output(monkeypatch):
    # rounds run a b c, then b c a, then c a b: no path always starts a round
    seconds = iter([5, 2, 3, 4, 6, 1, 9, 9, 9])  # a: 5, 1, 9; b: 2, 4, 9; c: 3, 6, 9
    monkeypatch.setattr("eqi_core.bench._best_of", lambda fn, repeats: (next(seconds), fn()))
    calls, outputs = [], {name: iter([f"{name}{i}" for i in (1, 2, 3)]) for name in "abc"}

    def path(name):
        def run():
            calls.append(name)
            return next(outputs[name])
        return run

    best = _taking_turns({name: path(name) for name in "abc"}, rounds=3, pause=0)
    assert calls == ["a", "b", "c", "b", "c", "a", "c", "a", "b"]
    assert best == {"a": (1, "a2"), "b": (2, "b1"), "c": (3, "c1")}


def test_decoder_latency_queries_are_the_held_out_ones_first_then_the_others():
    from eqi_core.bench import latency_queries

    every = [f"q{i}" for i in range(10)]
    few = latency_queries(["q3", "q7"], every, 5, seed=0)
    assert len(few) == 5 and set(few[:2]) == {"q3", "q7"} and not set(few[2:]) & {"q3", "q7"}
    assert len(set(few)) == 5 and set(few) <= set(every)
    assert latency_queries(["q3", "q7"], every, 5, seed=0) == few  # seeded
    many = latency_queries([f"q{i}" for i in range(8)], every, 3, seed=1)
    assert len(many) == 3 and set(many) <= {f"q{i}" for i in range(8)}  # enough held out: only those
    assert sorted(latency_queries([], every, 20)) == every  # none held out, fewer than n: all of them


def test_bench_reruns_times_each_pages_first_run_and_reruns_against_a_one_line_page(monkeypatch, capsys):
    """`eqi bench reruns`: the JSON names each page asked for with its first run and its reruns, and the
    framework's floor measured in the same run; a page name that is not one is one line, before any work."""
    from eqi_core.bench import bench_reruns
    from eqi_core.cli import main

    out = bench_reruns(("exposure_eval",), reruns=2)
    timing = out["pages"]["exposure_eval"]
    assert list(out["pages"]) == ["exposure_eval"] and timing["first_run_s"] >= 0
    assert 0 < timing["rerun_s"]["median"] <= timing["rerun_s"]["max"]
    assert out["baseline_rerun_s"]["median"] > 0 and out["cpu"]["cores"] >= 1
    capsys.readouterr()
    monkeypatch.setattr("sys.argv", ["eqi", "bench", "reruns", "--page", "exposures"])
    with pytest.raises(SystemExit) as exc:
        main()
    assert exc.value.code == 2
    assert capsys.readouterr().err.strip() == ("error: --page exposures: expected one of collection, exposure, "
                                               "exposure_eval, latent, suggestions, coverage")
