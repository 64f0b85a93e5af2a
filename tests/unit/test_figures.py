import pandas as pd
import plotly.graph_objects as go

from eqi_core.figures.collection import (
    PER_QUERY_BINS,
    PER_QUERY_EDGES,
    grade_distribution,
    length_distributions,
    per_query_bin,
    per_query_histogram,
    result_grades,
    word_counts,
)


def test_word_counts():
    assert word_counts(pd.Series(["a b c", "", None])).tolist() == [3, 0, 0]


def test_length_distributions_two_histograms_clip_tail():
    passages = pd.Series([5] * 99 + [10_000])
    fig = length_distributions(passages, pd.Series([1, 2, 2]))
    assert isinstance(fig, go.Figure) and len(fig.data) == 2
    assert max(fig.data[0].x) == 5  # the 1% tail is clipped
    assert list(fig.data[1].x) == [1, 2, 2]
    # the left-out tail is said: the lower 0.99 quantile of 99 fives and 10,000 is the 99th value, 5
    titles = [a.text for a in fig.layout.annotations]
    assert titles == ["Passage length (words)<br><sup>1 longer than 5 not shown</sup>", "Query length (words)"]
    # a few queries longer than the rest are no tail: under twice the quantile's length, all are shown
    few = length_distributions(pd.Series([6, 0, 1, 4, 5, 5, 0, 5_000]), pd.Series([2, 2, 3, 1]))
    assert sorted(few.data[0].x) == [0, 0, 1, 4, 5, 5, 6] and sorted(few.data[1].x) == [1, 2, 2, 3]
    assert [a.text for a in few.layout.annotations][1] == "Query length (words)"


def test_grade_distribution_counts():
    fig = grade_distribution(pd.DataFrame({"relevance": [2, 1, 1, 0]}))
    assert list(fig.data[0].x) == ["0", "1", "2"] and list(fig.data[0].y) == [1, 2, 1]


def test_result_grades_colours_unjudged_grey_with_a_legend_entry_per_grade():
    results = pd.DataFrame({"rank": [1, 2, 3], "score": [2.0, 1.5, 1.0], "grade": [2, None, 2], "doc_id": ["a", "b", "c"]})
    fig = result_grades(results)
    assert [t.name for t in fig.data] == ["grade 2", "unjudged"]
    assert fig.data[0].marker.color == "#4C78A8" and list(fig.data[0].x) == [1, 3]
    assert fig.data[1].marker.color == "#DDDDDD" and list(fig.data[1].x) == [2]
    assert fig.data[1].customdata[0][0] == "unjudged" and fig.layout.barmode == "overlay"
    # every bar one rank wide whatever the spacing of its grade's ranks (plotly's default: a trace's own
    # smallest gap, so grade 1 at ranks 4, 6, 9 drew bars 1.6 wide over their neighbours)
    sparse = pd.DataFrame({"rank": range(1, 11), "score": [1.0] * 10, "grade": [None] * 3 + [1, None, 1, None, None, 1, None],
                           "doc_id": list("abcdefghij")})
    assert {t.width for t in result_grades(sparse).data} == {0.8}


def test_many_legend_entries_go_beside_the_plot_not_over_it():
    from eqi_core.figures.exposure import trait_curves

    series = ["exposing"] + [f"{m} top-{k}" for m in ("BM25-reverse", "BM25-tuned", "dense-reverse", "Append", "Residual")
                             for k in (10, 100)]
    frame = pd.DataFrame([(s, g, 0.5) for s in series for g in ("[1, 2)", "[2, 3)")], columns=["series", "group", "probability"])
    many = trait_curves(frame, "length")
    assert many.layout.legend.orientation == "v" and many.layout.legend.x > 1  # 11 entries: a column to the right
    few = trait_curves(frame[frame["series"].isin(series[:3])], "length")
    assert few.layout.legend.orientation == "h" and few.layout.legend.y > 1  # 3 entries: one row above


def test_lorenz_comparison_one_curve_and_point_per_ranker():
    from eqi_core.figures.exposure import lorenz_comparison
    from eqi_core.figures.theme import ranker_colours

    curve = pd.DataFrame({"passages": [0.0, 0.5, 1.0], "retrievability": [0.0, 0.25, 1.0]})
    even = pd.DataFrame({"passages": [0.0, 0.5, 1.0], "retrievability": [0.0, 0.5, 1.0]})
    fig = lorenz_comparison({"bm25": (curve, 0.25, 0.5), "minilm-l6": (even, 0.0, None)}, "d1")
    names = [t.name for t in fig.data if t.showlegend is not False]
    assert names == ["equality", "bm25 (Gini 0.250)", "minilm-l6 (Gini 0.000)"]
    points = [t for t in fig.data if t.mode == "markers"]
    assert len(points) == 1 and points[0].x == (0.5,) and points[0].y == (0.25,)  # on bm25's curve at x = 0.5
    assert points[0].marker.color == ranker_colours(["bm25", "minilm-l6"])["bm25"] == fig.data[1].line.color
    named = lorenz_comparison({"bm25": (curve, 0.25, 0.5), "minilm-l6": (even, 0.0, None)}, "d1",
                              {"bm25": "BM25", "minilm-l6": "MiniLM-L6 (dense)"})
    assert [t.name for t in named.data if t.showlegend is not False][1:] == ["BM25 (Gini 0.250)", "MiniLM-L6 (dense) (Gini 0.000)"]
    assert "under BM25:" in named.data[2].hovertemplate and named.data[1].line.color == fig.data[1].line.color


def test_per_query_bars_are_numpys_bins_and_name_their_queries():
    import numpy as np

    values = pd.Series([0.0, 0.0, 0.05, 0.1, 0.15, 0.5, 0.99, 1.0, 0.3], index=list("abcdefghi"))
    bins = per_query_bin(values)
    assert list(bins) == [0, 0, 1, 2, 2, 6, 10, 10, 4]  # 0 alone; (0, 0.1); [0.1, 0.2); ...; [0.9, 1.0]
    fig = per_query_histogram(values, "nDCG@10", "bm25")
    bar = fig.data[0]
    inner, _ = np.histogram(values[values > 0], bins=np.array(PER_QUERY_EDGES))  # 0.3 is 3 / 10, not linspace's 0.30000000000000004
    assert [int(c[0]) for c in bar.customdata] == [2, *inner]  # the counts numpy gives
    assert [int(c[1]) for c in bar.customdata] == list(range(11)) and list(bar.x) == list(PER_QUERY_BINS)
    assert "click" not in bar.hovertemplate and "click: x" in per_query_histogram(values, "m", "r", "click: x").data[0].hovertemplate
