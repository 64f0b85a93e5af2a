"""Figures of the Collection page."""
from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from eqi_core.figures.theme import GRADE_COLOURS, style


def word_counts(texts: pd.Series) -> pd.Series:
    return texts.fillna("").str.split().str.len()


def length_distributions(passage_words: pd.Series, query_words: pd.Series, clip_quantile: float = 0.99) -> go.Figure:
    """Histograms of passage and query lengths in words. A long tail (the longest beyond the
    ``clip_quantile``, kept when the longest is under twice that length: a few long queries are no tail)
    is left out so that the common lengths stay readable; the panel's title says how many, and from where."""
    titles, shown = [], []
    for name, values in (("Passage", passage_words), ("Query", query_words)):
        cap = values.quantile(clip_quantile, interpolation="lower") if len(values) else 0
        long_tail = len(values) and values.max() > 2 * max(cap, 1)
        shown.append(values[values <= cap] if long_tail else values)
        hidden = len(values) - len(shown[-1])
        titles.append(f"{name} length (words)" + (f"<br><sup>{hidden:,} longer than {cap:,} not shown</sup>"
                                                   if hidden else ""))
    fig = make_subplots(rows=1, cols=2, subplot_titles=titles)
    for col, (values, colour) in enumerate(zip(shown, ("#4C78A8", "#F58518")), start=1):
        fig.add_trace(go.Histogram(x=values, marker_color=colour, showlegend=False,
                                   hovertemplate="%{x} words: %{y}<extra></extra>"), row=1, col=col)
        fig.update_yaxes(title_text="count" if col == 1 else None, row=1, col=col)
    return style(fig, height=320)


def grade_distribution(qrels: pd.DataFrame) -> go.Figure:
    """How many judgments carry each relevance grade."""
    counts = qrels["relevance"].value_counts().sort_index()
    fig = go.Figure(go.Bar(
        x=[str(g) for g in counts.index], y=counts.values,
        marker_color=[GRADE_COLOURS.get(int(g), "#888") for g in counts.index],
        hovertemplate="grade %{x}: %{y} judgments<extra></extra>",
    ))
    fig.update_xaxes(title_text="relevance grade")
    fig.update_yaxes(title_text="judgments")
    return style(fig, height=320)


def result_grades(results: pd.DataFrame) -> go.Figure:
    """Score of each retrieved passage by rank, coloured by its judged grade (grey: unjudged), one
    legend entry per grade present, highest first, so the colours need no key elsewhere."""
    grades = results["grade"].fillna(-1).astype(int)
    fig = go.Figure()
    for grade in sorted(grades.unique(), reverse=True):
        rows = results[grades == grade]
        label = "unjudged" if grade < 0 else f"grade {grade}"
        fig.add_trace(go.Bar(  # width fixed: plotly sizes a trace's bars by its own spacing (grade 1 at 4, 6, 9: 1.6 wide)
            x=rows["rank"], y=rows["score"], name=label, marker_color=GRADE_COLOURS.get(grade, "#DDDDDD"), width=0.8,
            customdata=list(zip([label] * len(rows), rows["doc_id"])),
            hovertemplate="rank %{x}<br>%{customdata[1]}<br>%{customdata[0]}<br>score %{y:.4f}<extra></extra>",
        ))
    fig.update_layout(barmode="overlay", showlegend=True)  # one bar per rank: no slots kept for other grades
    fig.update_xaxes(title_text="rank", dtick=1 if len(results) <= 20 else None)
    fig.update_yaxes(title_text="score")
    return style(fig, height=280)


PER_QUERY_EDGES = tuple(i / 10 for i in range(11))  # bins of 0.1 above a bar of its own at 0
PER_QUERY_BINS = ("0", *(f"{lo:.1f}-{hi:.1f}" for lo, hi in zip(PER_QUERY_EDGES[:-1], PER_QUERY_EDGES[1:])))


def per_query_bin(values: pd.Series) -> pd.Series:
    """Each query's bar in ``per_query_histogram``: 0 for a value of 0, else 1-10 for (0, 0.1),
    [0.1, 0.2), ..., [0.9, 1.0] (numpy's histogram bins, the last closed), so a page can list the
    queries of a clicked bar."""
    import numpy as np

    inner = np.clip(np.searchsorted(PER_QUERY_EDGES, values.to_numpy(dtype=float), side="right"), 1, 10)
    return pd.Series(np.where(values.to_numpy() == 0, 0, inner), index=values.index)


def per_query_histogram(values: pd.Series, measure: str, ranker: str, click_hint: str | None = None) -> go.Figure:
    """How a ranker's per-query ``measure`` is spread over the judged queries (bins of 0.1; the bar
    at 0 is the queries with no relevant passage in the cut-off), so one mean is not read alone. A
    bar's customdata is [queries, bar index of ``per_query_bin``]."""
    counts = per_query_bin(values).value_counts().reindex(range(len(PER_QUERY_BINS)), fill_value=0).to_numpy()
    share = counts / max(len(values), 1) * 100
    fig = go.Figure(go.Bar(x=list(PER_QUERY_BINS), y=share, marker_color=["#E45756"] + ["#4C78A8"] * (len(counts) - 1),
                           customdata=[[int(c), i] for i, c in enumerate(counts)],  # lists: a click reports a list
                           hovertemplate=f"{measure} %{{x}}: %{{customdata[0]}} queries (%{{y:.1f}}%)"
                                         + (f"<br>{click_hint}" if click_hint else "") + "<extra></extra>"))
    fig.update_xaxes(title_text=f"{measure} per query ({len(values):,} judged queries; 0 on its own)", type="category")
    fig.update_yaxes(title_text="queries (%)")
    return style(fig, f"{ranker}: {measure} per query", height=320)
