"""The int8-candidate path of exact_topk: the same exact top k as float64 brute force, ties included."""
import numpy as np
import pytest

from eqi_core.rankers import dense, int8_gemm
from eqi_core.rankers.dense import ColumnBlocks, exact_topk


@pytest.fixture
def int8_on(monkeypatch):
    monkeypatch.setenv("EQI_INT8_GEMM", "on")
    if not int8_gemm.enabled():
        pytest.skip("onnxruntime's int8 products are not exact on this CPU (the fp32 path runs here)")


def _reference(q: np.ndarray, d: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """float64 brute force, score descending, lower position first among equal scores."""
    scores = q.astype(np.float64) @ d.astype(np.float64).T
    order = np.lexsort((np.broadcast_to(np.arange(d.shape[0]), scores.shape), -scores), axis=1)[:, :k]
    return np.take_along_axis(scores, order, 1), order


def _vectors(rng, n: int, dim: int, spread: float) -> np.ndarray:
    """Unnormalised vectors whose norms vary by ``spread`` (the slack must follow each vector)."""
    x = rng.standard_normal((n, dim)).astype(np.float32)
    return x * np.exp(rng.uniform(-spread, spread, (n, 1))).astype(np.float32)


def test_vnni_is_read_from_the_cpu_flags():
    assert int8_gemm.cpu_has_vnni("processor : 0\nflags : fpu sse avx2 avx512f avx512_vnni\n")
    assert int8_gemm.cpu_has_vnni("flags\t\t: fpu avx2 avx_vnni\n")
    assert not int8_gemm.cpu_has_vnni("flags : fpu sse avx avx2 fma f16c\n")
    assert not int8_gemm.cpu_has_vnni("")


def test_a_bad_switch_is_named(monkeypatch):
    monkeypatch.setenv("EQI_INT8_GEMM", "fast")
    with pytest.raises(ValueError, match="EQI_INT8_GEMM='fast'"):
        int8_gemm.enabled()
    monkeypatch.setenv("EQI_INT8_GEMM", "off")
    assert not int8_gemm.enabled()


@pytest.mark.parametrize("k", [1, 10, 100])
def test_int8_candidates_give_the_exact_top_k_over_several_passage_blocks(int8_on, k):
    rng = np.random.default_rng(k)
    q, d = _vectors(rng, 700, 48, 1.0), _vectors(rng, 7000, 48, 1.0)
    assert len(q) * len(d) >= dense.KERNEL_MIN_SCORES  # the large-problem path
    scores, idx = exact_topk(q, d, k, block_bytes=4 * dense.SELECT_ROWS * 2500)  # three passage blocks
    ref_s, ref_i = _reference(q, d, k)
    np.testing.assert_array_equal(idx, ref_i)
    np.testing.assert_allclose(scores, ref_s.astype(np.float32), rtol=0, atol=1e-5)


def test_tied_passages_at_the_cut_come_lower_position_first(int8_on):
    rng = np.random.default_rng(7)
    q = _vectors(rng, 600, 32, 0.3)
    d = _vectors(rng, 7000, 32, 0.3)
    d[1000:1200] = d[5]  # 201 identical passages: every query's scores tie across them
    d[3000:3050] = -d[5]
    scores, idx = exact_topk(q, d, 100)
    _, ref_i = _reference(q, d, 100)
    np.testing.assert_array_equal(idx, ref_i)


def test_kept_int8_layout_matches_the_per_call_one_and_the_fp32_path(int8_on, monkeypatch):
    rng = np.random.default_rng(3)
    q, d = _vectors(rng, 600, 64, 0.0), _vectors(rng, 8000, 64, 0.0)
    columns = ColumnBlocks.of(d)
    assert columns.int8 is not None and not columns.blocks  # no fp32 copy beside the codes
    kept = exact_topk(q, d, 50, columns=columns)
    per_call = exact_topk(q, d, 50)
    np.testing.assert_array_equal(kept[1], per_call[1])
    monkeypatch.setenv("EQI_INT8_GEMM", "off")
    fp32 = exact_topk(q, d, 50, columns=ColumnBlocks.of(d))
    assert all(set(a) == set(b) for a, b in zip(kept[1], fp32[1]))
    np.testing.assert_allclose(kept[0], fp32[0], rtol=2e-6, atol=1e-6)  # fp32 GEMM rounding


def test_non_finite_values_take_the_fp32_path(int8_on):
    rng = np.random.default_rng(5)
    q, d = _vectors(rng, 600, 16, 0.0), _vectors(rng, 7000, 16, 0.0)
    d[17, 3] = np.nan
    scores, idx = exact_topk(q, d, 5)
    assert scores.shape == (600, 5) and (idx >= 0).all()


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs os.fork")
def test_a_forked_child_searches_with_its_own_session(int8_on):
    """The parent's onnxruntime session has threads the child lacks: freeing it there used to hang."""
    import os
    import signal
    import time

    rng = np.random.default_rng(11)
    q, d = _vectors(rng, 600, 32, 0.0), _vectors(rng, 8000, 32, 0.0)
    parent = exact_topk(q, d, 10)[1]
    pid = os.fork()
    if pid == 0:  # pragma: no cover (the child)
        os._exit(0 if np.array_equal(exact_topk(q, d, 10)[1], parent) else 3)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            assert os.waitstatus_to_exitcode(status) == 0
            return
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    pytest.fail("the forked child hung in its search")
