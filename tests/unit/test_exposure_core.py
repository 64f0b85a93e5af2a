"""Exact exposure map, Algorithm 1 and triple sampling on tiny hand-built cases."""
import numpy as np
import pandas as pd
import pytest
import torch

from eqi_core.collection import Collection
from eqi_core.errors import DataError
from eqi_core.exposure.audit import gini, lorenz, retrievability
from eqi_core.exposure.exact import ExposureMap
from eqi_core.exposure.learned import ExposureModel, Head, TrainingConfig, TripleSampler, algorithm1, train_exposure_model
from eqi_core.runs import Run

PASSAGES = pd.DataFrame({"doc_id": ["d0", "d1", "d2", "d3", "d4"], "text": ["a", "b", "c", "d", "e"]})
QUERIES = pd.DataFrame({"query_id": ["q0", "q1", "q2", "q3"], "text": ["w", "x", "y", "z"]})
C = Collection("tiny", PASSAGES, QUERIES)
# top-2 of each query (n_q->d = 2): q0 -> d0, d1; q1 -> d1, d0; q2 -> d2, d3; q3 -> d3, d1
RUN = Run("r", pd.DataFrame({"query_id": ["q0", "q0", "q1", "q1", "q2", "q2", "q3", "q3"],
                             "doc_id": ["d0", "d1", "d1", "d0", "d2", "d3", "d3", "d1"],
                             "rank": [1, 2] * 4, "score": [2.0, 1.0] * 4}))


@pytest.fixture
def emap():
    return ExposureMap.from_run(RUN, C, depth=2)


def test_inverted_map(emap):
    assert emap.exposing_frame("d1").values.tolist() == [["q1", 1], ["q0", 2], ["q3", 2]]
    assert emap.counts().tolist() == [2, 3, 1, 2, 0]  # d4 is never retrieved
    assert emap.ranks_of(emap.doc_index("d3"), np.array([2, 3, 0])).tolist() == [1.0, 0.0, np.inf]
    with pytest.raises(DataError, match="passage id 'nope' is not in the collection"):
        emap.doc_index("nope")


def test_most_exposed_passage_by_hand(emap):
    """d1 is in three queries' top 2. At the top 1, d0-d3 are in one each: d1, in the most top 2s
    (3), wins. Without q3, d0 and d1 tie on both counts (one top 1, two top 2s; d2 has one top 2):
    the earlier wins. A log that shows nothing has none."""
    assert emap.most_exposed(top=2) == ("d1", 3) and emap.most_exposed() == ("d1", 3)
    assert emap.most_exposed(top=1) == ("d1", 1)
    assert emap.restricted_to(np.array([True, True, True, False])).most_exposed(top=1) == ("d0", 1)
    assert emap.restricted_to(np.zeros(4, dtype=bool)).most_exposed() is None


def test_depth_filter_and_restriction(emap):
    shallow = ExposureMap.from_run(RUN, C, depth=1)
    assert shallow.counts().tolist() == [1, 1, 1, 1, 0]
    only_q0_q1 = emap.restricted_to(np.array([True, True, False, False]))
    assert only_q0_q1.counts().tolist() == [2, 2, 0, 0, 0]


def test_retrievability_and_gini(emap):
    assert retrievability(emap, 1).tolist() == [1, 1, 1, 1, 0]
    assert retrievability(emap, 2).tolist() == [2, 3, 1, 2, 0]
    assert gini(np.array([1, 1, 1, 1])) == 0.0
    assert gini(np.array([0, 0, 0, 4])) == pytest.approx(0.75)  # (n-1)/n for one-takes-all
    curve = lorenz(np.array([0, 0, 0, 4]))
    assert curve["retrievability"].iloc[-1] == 1.0 and curve["retrievability"].iloc[2] == 0.0
    with pytest.raises(DataError, match="cutoff c = 3"):
        retrievability(emap, 3)


def test_retrievability_extremes_by_hand(emap):
    from eqi_core.exposure.audit import retrievability_extremes, summarise_retrievability

    summary = summarise_retrievability(emap, 2)  # r(d) = [2, 3, 1, 2, 0] for d0..d4
    least = retrievability_extremes(summary, emap.doc_ids, "least", 3)
    assert least.values.tolist() == [["d4", 0, 0.0], ["d2", 1, 0.2], ["d0", 2, 0.4]]  # d0 before d3: collection order
    most = retrievability_extremes(summary, emap.doc_ids, "most", 10)
    assert most["doc_id"].tolist() == ["d1", "d0", "d3", "d2", "d4"] and most["less retrievable"].iloc[0] == 0.8
    assert most["less retrievable"].tolist()[1:3] == [0.4, 0.4]  # equal r(d): the same share below
    for row in most.itertuples(index=False):  # the Exposure page's "share below" of each passage, as in summary.of
        assert row[2] == summary.of(emap.doc_index(row.doc_id))["share_below"]
    # a pasted passage with 2 exposing queries: d2 and d4 (r = 1, 0) are below it, d0 and d3 (2) are not
    assert summary.of_new(2) == {"r": 2, "cutoff": 2, "share_below": 0.4, "gini": summary.gini}
    assert summary.of_new(0)["share_below"] == 0.0 and summary.of_new(4)["share_below"] == 1.0
    with pytest.raises(DataError, match="expected 'least' or 'most'"):
        retrievability_extremes(summary, emap.doc_ids, "middle")


def test_algorithm1_labels(emap):
    # 2-d embeddings: queries and passages on a line, so nearest training queries are predictable
    q_emb = np.array([[1, 0], [0.9, 0.1], [0, 1], [0.5, 0.5]], dtype=np.float32)
    d_emb = np.array([[1, 0], [0.8, 0.2], [0, 1], [0.2, 0.8], [0.5, -1]], dtype=np.float32)
    cfg = TrainingConfig(n_train_queries=3, n_train_passages=10, n_dq=3, seed=0)
    data = algorithm1(emap, q_emb, d_emb, cfg, exclude_docs=np.array([2]))
    q_train = set(data.train_queries.tolist())
    assert len(q_train) == 3
    # D_train: passages retrieved by Q_train (line 7), minus the held-out d2, never d4 (retrieved by none)
    assert 2 not in set(data.docs) and 4 not in set(data.docs)
    for d, q, r in zip(data.docs, data.queries, data.ranks):
        assert q in q_train
        truth = emap.rank_lookup(int(d)).get(int(q), np.inf)
        assert r == truth  # labelled with rho(d, sigma_q) from the cache, or infinity


def test_triple_sampler_cases():
    from eqi_core.exposure.learned import TrainingData

    data = TrainingData(np.array([0, 1, 2]), docs=np.array([7, 7, 7, 8, 8]), queries=np.array([0, 1, 2, 0, 1]),
                        ranks=np.array([0.0, 3.0, np.inf, 1.0, np.inf]))
    s = TripleSampler(data, alpha=0.5, seed=1)
    d, qp, qn = s.sample(2000)
    assert len(d) > 500
    for di, p, n in zip(d, qp, qn):
        rank = {(7, 0): 0, (7, 1): 3, (8, 0): 1}
        assert (di, p) in rank  # q+ always exposes d
        assert (di, n) not in rank or rank[(di, n)] > rank[(di, p)]  # Case 1: q+ ranks d higher; Case 2: q- not exposing


def test_heads_shapes_and_identity_start():
    x = torch.randn(4, 16)
    res, app = Head(16, "residual"), Head(16, "append")
    assert res(x).shape == (4, 16) and app(x).shape == (4, 16 + 32)
    assert torch.allclose(res(x), x * 4.0)  # zero-initialised output layer: scaled identity
    with pytest.raises(DataError, match="architecture 'mlp'"):
        Head(16, "mlp")


def test_training_lowers_the_ranknet_loss(emap):
    rng = np.random.default_rng(0)
    q_emb = rng.standard_normal((4, 8)).astype(np.float32)
    d_emb = rng.standard_normal((5, 8)).astype(np.float32)
    q_emb /= np.linalg.norm(q_emb, axis=1, keepdims=True)
    d_emb /= np.linalg.norm(d_emb, axis=1, keepdims=True)
    cfg = TrainingConfig(n_dq=4, steps=300, batch_size=64, lr=1e-3, seed=0)
    data = algorithm1(emap, q_emb, d_emb, cfg)
    import torch

    before = torch.get_num_threads()
    threads, flushed = [], []

    def seen(*_):
        threads.append(torch.get_num_threads())
        flushed.append(_subnormal_product() == 0.0)

    model, losses = train_exposure_model(data, q_emb, d_emb, cfg, progress=seen)
    assert isinstance(model, ExposureModel)
    assert np.mean(losses[-20:]) < np.mean(losses[:20])
    assert set(threads) == {1} and torch.get_num_threads() == before  # one thread while training, restored after
    # subnormals flushed to zero while training (they made steps 10x slower as the loss neared 0), kept after
    assert set(flushed) == {True} and 0.0 < _subnormal_product() < 1e-38


def _subnormal_product() -> float:
    """1e-30 x 1e-10 in float32: 1e-40 is subnormal, so 0.0 where subnormals are flushed."""
    return float(torch.tensor([1e-30]) * torch.tensor([1e-10]))


def test_a_few_rows_go_through_a_head_on_one_torch_thread_and_a_log_on_all():
    """One passage's head runs on one thread: torch's second OpenMP worker spins after it and takes a
    core from the log search that follows. A whole log keeps every thread."""
    import torch

    from eqi_core.exposure.learned import FEW_ROWS

    model = ExposureModel(8, "residual")
    seen = []
    model.passage_head.register_forward_hook(lambda *_: seen.append(torch.get_num_threads()))
    before = torch.get_num_threads()
    one = model.transform(np.ones((1, 8), np.float32), "passage")
    log = model.transform(np.ones((FEW_ROWS + 1, 8), np.float32), "passage")
    assert seen == [1, before] and torch.get_num_threads() == before
    assert np.allclose(one[0], log[0])  # the same numbers either way


def test_one_torch_thread_is_restored_when_the_last_use_ends_in_any_order():
    """Dashboard sessions train and sample at once; torch's thread count is the process's."""
    import torch

    from eqi_core.threads import one_torch_thread

    before = torch.get_num_threads()
    first, second = one_torch_thread(), one_torch_thread()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)  # the first use ends before the second
    assert torch.get_num_threads() == 1
    second.__exit__(None, None, None)
    assert torch.get_num_threads() == before


def test_trait_probabilities_by_hand_in_the_order_of_their_bins(emap):
    """Paper Figure 3's groups: ordered by their bins, not by where the log's first query fell (the
    chart's x axis read "[4, 6)", "[6, 40)", "[3, 4)" on SciFact)."""
    from eqi_core.exposure.audit import trait_probabilities

    traits = pd.DataFrame({"length": [5, 2, 2, 9]})  # q0 in the middle bin, q1 and q2 in the first, q3 in the last
    lists = {"m": np.array([[2, -1]])}  # the method lists q2 for d1 (q2 does not expose d1; q0, q1, q3 do)
    out = trait_probabilities(emap, np.array([emap.doc_index("d1")]), lists, traits, "length", bins=[2, 5, 9])
    wide = out.pivot(index="group", columns="series", values="probability").loc[["[2, 5)", "[5, 9)", "[9, 10)"]]
    assert out["group"].drop_duplicates().tolist() == ["[2, 5)", "[5, 9)", "[9, 10)"]
    assert wide["exposing"].tolist() == [0.5, 1.0, 1.0] and wide["m top-10"].tolist() == [0.5, 0.0, 0.0]
    assert out.drop_duplicates("group")["queries"].tolist() == [2, 1, 1]


@pytest.mark.parametrize("field,value,message", [("steps", 0, "steps = 0"), ("alpha", 1.5, "alpha = 1.5"),
                                                 ("arch", "mlp", "architecture 'mlp'"), ("n_dq", 0, "n_dq = 0"),
                                                 ("lr", -1.0, "lr = -1.0"), ("lr", float("nan"), "lr = nan"),
                                                 ("dropout", 1.0, "dropout = 1.0")])
def test_training_config_validation(field, value, message):
    with pytest.raises(DataError, match=message):
        TrainingConfig(**{field: value}).validate()
