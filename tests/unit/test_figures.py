import pandas as pd
import plotly.graph_objects as go

from eqi_core.figures.collection import grade_distribution, length_distributions, result_grades, word_counts


def test_word_counts():
    assert word_counts(pd.Series(["a b c", "", None])).tolist() == [3, 0, 0]


def test_length_distributions_two_histograms_clip_tail():
    passages = pd.Series([5] * 99 + [10_000])
    fig = length_distributions(passages, pd.Series([1, 2, 2]))
    assert isinstance(fig, go.Figure) and len(fig.data) == 2
    assert max(fig.data[0].x) == 5  # the 1% tail is clipped
    assert list(fig.data[1].x) == [1, 2, 2]


def test_grade_distribution_counts():
    fig = grade_distribution(pd.DataFrame({"relevance": [2, 1, 1, 0]}))
    assert list(fig.data[0].x) == ["0", "1", "2"] and list(fig.data[0].y) == [1, 2, 1]


def test_result_grades_colours_unjudged_grey():
    results = pd.DataFrame({"rank": [1, 2], "score": [2.0, 1.0], "grade": [2, None], "doc_id": ["a", "b"]})
    fig = result_grades(results)
    assert list(fig.data[0].marker.color) == ["#4C78A8", "#DDDDDD"]
    assert fig.data[0].customdata[1][0] == "unjudged"
