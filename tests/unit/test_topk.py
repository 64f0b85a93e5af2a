"""The exact row-wise top-k kernel (eqi_core.rankers.topk) against a plain stable sort."""
from __future__ import annotations

import numpy as np
import pytest

from eqi_core.rankers import dense
from eqi_core.rankers.dense import exact_topk
from eqi_core.rankers.topk import NonFiniteScores, merge_sorted, sorted_topk, topk_rows


def reference(scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Best first; equal scores by lower position (a stable sort of the negated scores)."""
    order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(scores, order, 1), order


@pytest.fixture(autouse=True)
def fp32_gemm(monkeypatch):
    """These tests pin the fp32 GEMM path; the int8 one (taken on VNNI CPUs) has test_int8_gemm.py."""
    monkeypatch.setenv("EQI_INT8_GEMM", "off")


def test_by_hand():
    row = np.array([[0.5, 2.0, -1.0, 2.0, 0.75, 3.0]], dtype=np.float32)
    s, i = topk_rows(row, 3)
    assert i.tolist() == [[5, 1, 3]] and s.tolist() == [[3.0, 2.0, 2.0]]  # the tie: lower position first


@pytest.mark.parametrize(("rows", "cols", "k"), [(5, 40, 40), (9, 1000, 7), (33, 1999, 100), (64, 20001, 100),
                                                 (3, 250, 1)])
def test_equals_a_stable_sort(rows, cols, k):
    scores = np.random.default_rng(cols).standard_normal((rows, cols)).astype(np.float32)
    s, i = topk_rows(scores, k)
    ref_s, ref_i = reference(scores, k)
    np.testing.assert_array_equal(i, ref_i)
    np.testing.assert_array_equal(s, ref_s)


def test_sorted_topk_by_hand_ties_at_the_cut_and_nan_last():
    row = np.array([[0.5, 2.0, -1.0, 2.0, 0.75, 3.0, 2.0]], dtype=np.float32)
    s, i = sorted_topk(row, 3)
    assert i.tolist() == [[5, 1, 3]] and s.tolist() == [[3.0, 2.0, 2.0]]  # three 2.0s tie at the cut: the first two
    nan = np.array([[np.nan, 1.0, np.nan, 0.0]], dtype=np.float32)
    assert sorted_topk(nan, 3)[1].tolist() == [[1, 3, 0]]
    assert sorted_topk(nan, 9)[1].tolist() == [[1, 3, 0, 2]]  # k beyond the row: the whole row, sorted


@pytest.mark.parametrize(("rows", "cols", "k", "values"), [(40, 300, 10, 7), (5, 20001, 100, 0), (20, 9, 9, 3),
                                                             (64, 500, 499, 2), (1, 1, 1, 0)])
def test_sorted_topk_and_merge_equal_a_stable_sort(rows, cols, k, values):
    """Distinct scores (values = 0) or a few values tied everywhere; merged over two blocks in order."""
    rng = np.random.default_rng(cols + k)
    scores = (rng.integers(-values, values + 1, size=(rows, cols)) if values
              else rng.standard_normal((rows, cols))).astype(np.float32)
    ref_s, ref_i = reference(scores, k)
    s, i = sorted_topk(scores, k)
    np.testing.assert_array_equal(i, ref_i)
    np.testing.assert_array_equal(s, ref_s)
    half = cols // 2
    if half >= 1:
        a_s, a_i = sorted_topk(scores[:, :half], k)
        b_s, b_i = sorted_topk(scores[:, half:], k)
        m_s, m_i = merge_sorted(a_s, a_i, b_s, b_i + half, k)
        np.testing.assert_array_equal(m_i, ref_i)
        np.testing.assert_array_equal(m_s, ref_s)


def test_many_ties_and_constant_rows():
    rng = np.random.default_rng(3)
    scores = rng.integers(-3, 4, size=(20, 5000)).astype(np.float32)  # seven values: ties everywhere
    scores[4] = 1.0  # every group maximum equal: the histogram has no width
    scores[5, :] = -2.0
    scores[5, 4999] = 7.0
    s, i = topk_rows(scores, 100)
    ref_s, ref_i = reference(scores, 100)
    np.testing.assert_array_equal(i, ref_i)
    np.testing.assert_array_equal(s, ref_s)


def test_a_group_whose_members_all_beat_the_others():
    # the top k all sit in one group of positions (c, c + G, ...): the bound must still take them all
    k, cols = 10, 1000
    scores = np.zeros((1, cols), dtype=np.float32)
    groups = 10 * k
    scores[0, 7::groups] = np.arange(1, len(scores[0, 7::groups]) + 1)
    s, i = topk_rows(scores, k)
    assert i[0].tolist() == list(range(7 + groups * 9, 6, -groups)) and s[0, 0] == 10.0


def test_non_finite_scores_raise_and_exact_topk_falls_back(monkeypatch):
    scores = np.random.default_rng(1).standard_normal((4, 3000)).astype(np.float32)
    scores[2, 10] = np.nan
    with pytest.raises(NonFiniteScores):
        topk_rows(scores, 5)
    with pytest.raises(ValueError, match="k = 0"):
        topk_rows(scores, 0)
    monkeypatch.setattr(dense, "KERNEL_MIN_SCORES", 0)
    docs = np.random.default_rng(2).standard_normal((3000, 8)).astype(np.float32)
    queries = np.random.default_rng(4).standard_normal((6, 8)).astype(np.float32)
    queries[1, 0] = np.inf
    _, idx = exact_topk(queries, docs, 5)
    full = queries @ docs.T
    for row in (0, 2, 3, 4, 5):
        assert set(idx[row]) == set(reference(full[row:row + 1], 5)[1][0])


@pytest.mark.parametrize("block_bytes", [1 << 16, 1 << 26])
def test_exact_topk_through_the_kernel_equals_a_stable_sort(monkeypatch, block_bytes):
    monkeypatch.setattr(dense, "KERNEL_MIN_SCORES", 0)  # the kernel path on a small problem
    rng = np.random.default_rng(11)
    docs = rng.standard_normal((3001, 16)).astype(np.float32)
    queries = rng.standard_normal((dense.SELECT_ROWS + 44, 16)).astype(np.float32)  # two query blocks
    scores, idx = exact_topk(queries, docs, 50, block_bytes=block_bytes)
    full = queries @ docs.T
    ref = np.argsort(-full, axis=1)[:, :50]
    assert all(set(a) == set(b) for a, b in zip(idx, ref))
    np.testing.assert_allclose(scores, np.take_along_axis(full, ref, 1), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("block_bytes", [1 << 16, 1 << 26])
@pytest.mark.parametrize("copy_min_queries", [0, 1 << 30])
def test_kept_columns_and_either_layout_give_the_same_answer(monkeypatch, block_bytes, copy_min_queries):
    """Passages laid out once (ColumnBlocks), copied per call or read through a transposed view: the
    same bits, since only the memory layout of the GEMM's right operand differs."""
    monkeypatch.setattr(dense, "KERNEL_MIN_SCORES", 0)
    monkeypatch.setattr(dense, "COPY_MIN_QUERIES", copy_min_queries)
    rng = np.random.default_rng(12)
    docs = rng.standard_normal((2999, 16)).astype(np.float32)
    queries = rng.standard_normal((dense.SELECT_ROWS + 7, 16)).astype(np.float32)
    columns = dense.ColumnBlocks.of(docs, block_bytes)
    assert sum(b.shape[1] for b in columns.blocks) == len(docs) and columns.nbytes == docs.nbytes
    assert all(b.flags.c_contiguous for b in columns.blocks)
    kept = exact_topk(queries, docs, 40, block_bytes=block_bytes, columns=columns)
    per_call = exact_topk(queries, docs, 40, block_bytes=block_bytes)
    ref = reference(queries @ docs.T, 40)
    assert all(set(a) == set(b) for a, b in zip(kept[1], ref[1]))
    np.testing.assert_array_equal(kept[0], per_call[0])
    np.testing.assert_array_equal(kept[1], per_call[1])
    other = dense.ColumnBlocks.of(docs[:-1], block_bytes)  # another matrix's layout is not used
    np.testing.assert_array_equal(exact_topk(queries, docs, 40, block_bytes=block_bytes, columns=other)[1], kept[1])


def test_a_dense_ranker_lays_out_its_passages_once(monkeypatch):
    from eqi_core.rankers.dense import DenseRanker

    monkeypatch.setattr(dense, "KERNEL_MIN_SCORES", 1000)
    rng = np.random.default_rng(13)
    docs = rng.standard_normal((300, 8)).astype(np.float32)
    ranker = DenseRanker(encoder=None, doc_embeddings=docs, doc_ids=np.array([f"d{i}" for i in range(300)], dtype=object),
                         id="t", name="t", release_date="2020")
    ranker.search_embeddings(["q0"], docs[:1], 5)  # 300 scores: no layout needed
    assert ranker._columns is None
    ranker.search_embeddings([f"q{i}" for i in range(10)], docs[:10], 5)
    first = ranker._columns
    assert first is not None
    ranker.search_embeddings([f"q{i}" for i in range(10)], docs[:10], 5)
    assert ranker._columns is first


def test_rescore_rows_by_hand_and_the_same_bits_on_any_thread_count(monkeypatch):
    from eqi_core.rankers import topk
    from eqi_core.rankers.topk import rescore_rows

    q = np.array([[0.5, -1.0, 2.0]], dtype=np.float32)
    d = np.array([[1.0, 1.0, 1.0], [2.0, 0.0, -0.25]], dtype=np.float32)
    assert rescore_rows(q, d, np.array([[1, 0]])).tolist() == [[0.5, 1.5]]  # 1 - 0.5 and 0.5 - 1 + 2
    rng = np.random.default_rng(5)
    q = rng.standard_normal((50, 21)).astype(np.float32)  # 21: two blocks of eight and a tail of five
    d = rng.standard_normal((300, 21)).astype(np.float32)
    idx = rng.integers(0, 300, size=(50, 9))
    both = rescore_rows(q, d, idx)
    np.testing.assert_allclose(both, np.einsum("ij,ikj->ik", q.astype(np.float64), d[idx].astype(np.float64)),
                               rtol=0, atol=1e-12)
    monkeypatch.setattr(topk, "_threads", lambda: 1)
    assert np.array_equal(rescore_rows(q, d, idx), both)
    with pytest.raises(IndexError, match="outside 0..299"):
        rescore_rows(q, d, idx + 300)
