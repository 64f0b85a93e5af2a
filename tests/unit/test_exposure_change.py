"""One passage's exposure under two rankings: who keeps, gains and loses sight of it."""
import numpy as np
import pandas as pd
import pytest

from eqi_core.errors import DataError
from eqi_core.exposure.lookup import change_summary, exact_exposure, exposure_change


def exact(rows):
    return pd.DataFrame(rows, columns=["query_id", "query", "rank"])


def test_exposure_change_by_hand():
    a = exact([("q1", "one", 1), ("q2", "two", 5), ("q3", "three", 50)])
    b = exact([("q2", "two", 2), ("q3", "three", 60), ("q4", "four", 7)])
    got = exposure_change(a, b, "bm25", "dense")
    assert got["query_id"].tolist() == ["q1", "q2", "q4", "q3"]  # by the best rank under either
    assert got["rank (bm25)"].tolist()[:2] == [1, 5] and pd.isna(got["rank (bm25)"].iloc[2])
    assert pd.isna(got["rank (dense)"].iloc[0]) and got["rank (dense)"].tolist()[1:] == [2, 7, 60]
    assert got["change"].tolist() == ["only bm25", "higher", "only dense", "lower"]
    assert got["places up"].iloc[1] == 3 and got["places up"].iloc[3] == -10 and pd.isna(got["places up"].iloc[0])
    assert change_summary(got, "bm25", "dense") == (
        "3 queries expose it under bm25, 3 under dense: 2 under both, 1 only under dense, 1 only under bm25; "
        "in the top 10: 2 under bm25, 2 under dense")
    with pytest.raises(DataError, match="with itself"):
        exposure_change(a, b, "bm25", "bm25")
    same = exposure_change(a, a, "x", "y")
    assert set(same["change"]) == {"same"} and (same["places up"] == 0).all()


@pytest.mark.parametrize("doc_id,text", [("d1", None), (None, "the sloping land beside a river")])
def test_two_real_rankings_compare_their_own_exact_lists(tiny, store, doc_id, text):
    from eqi_core.exposure.setup import prepare_exposure

    bm25 = prepare_exposure(tiny, "bm25", store)
    dense = prepare_exposure(tiny, "minilm-l3-onnx", store, space="minilm-l3-onnx")
    a, _ = exact_exposure(bm25, 100, doc_id, text)
    b, _ = exact_exposure(dense, 100, doc_id, text)
    assert len(a) and len(b)
    got = exposure_change(a, b, "bm25", "minilm-l3-onnx")
    for frame, column in ((a, "rank (bm25)"), (b, "rank (minilm-l3-onnx)")):
        shown = got.dropna(subset=[column]).set_index("query_id")[column].astype(int)
        assert shown.to_dict() == dict(zip(frame["query_id"], frame["rank"]))
    assert np.array_equal(got["query_id"].sort_values().to_numpy(),
                          np.union1d(a["query_id"].to_numpy(), b["query_id"].to_numpy()))


def test_change_scatter_places_each_query_by_its_two_ranks():
    from eqi_core.figures.exposure import exposure_change_scatter

    a = exact([("q1", "one", 1), ("q2", "two", 5), ("q3", "three", 50)])
    b = exact([("q2", "two", 2), ("q3", "three", 60), ("q4", "four", 7)])
    fig = exposure_change_scatter(exposure_change(a, b, "bm25", "dense"), "bm25", "dense", n_qd=100)
    points = {t.name: list(zip(t.x, t.y)) for t in fig.data if t.mode == "markers"}
    outside = 110  # "not in the top 100"
    assert points == {"higher under dense (1)": [(5, 2)], "lower under dense (1)": [(50, 60)],
                      "only under bm25 (1)": [(1, outside)], "only under dense (1)": [(outside, 7)]}
    assert fig.layout.yaxis.range[0] > fig.layout.yaxis.range[1]  # rank 1 at the top: above the diagonal is higher
    # in two lines, with room to the right: in one, plotly hid it past the plot's edge (checked in a PNG)
    assert fig.layout.xaxis.ticktext[-1] == "not in<br>top 100" and fig.layout.yaxis.ticktext[-1] == "not in top 100"
    assert fig.layout.margin.r >= 45
    shapes = {t.name: t.marker.symbol for t in fig.data if t.mode == "markers"}  # not told apart by colour alone
    assert shapes["higher under dense (1)"] == "triangle-up" and shapes["lower under dense (1)"] == "triangle-down"
    assert len(set(shapes.values())) == len(shapes)


@pytest.mark.parametrize("ranker", ["minilm-l6", "bm25", "splade-tiny"])
def test_a_queries_results_with_the_pasted_passage_show_it_at_its_exact_rank(tiny, store, ranker):
    """Pasted text that is d1's, at the rank its exact exposure gives: under BM25 it ties with d1 and
    ties go against it, so it is listed right below d1; the dense encoder reads one text alone a
    hair apart from the batch that encoded d1, so there (and under SPLADE) it is next to d1, on
    either side; the rest is the query's own list."""
    from eqi_core.exposure.lookup import PASTED, results_with_pasted
    from eqi_core.exposure.setup import prepare_exposure

    setup = prepare_exposure(tiny, ranker, store, depth=100)
    text = setup.passage_text(setup.exposure.doc_index("d1"))
    exposing, _ = exact_exposure(setup, 5, text=text)
    assert len(exposing)
    for qid, rank in zip(exposing["query_id"], exposing["rank"]):
        top = results_with_pasted(setup, qid, text, 6)
        docs = top["doc_id"].tolist()
        assert top["rank"].tolist() == list(range(1, len(top) + 1))
        assert docs.index(PASTED) + 1 == rank
        assert docs[rank - 2] == "d1" if ranker == "bm25" else "d1" in docs[max(rank - 2, 0):rank + 1]
        if ranker != "bm25":  # BM25's other scores move with the grown collection's statistics
            assert [d for d in docs if d != PASTED] == setup.query_results(qid, 5)["doc_id"].tolist()

