"""Figures of the query suggestion models: the reformulation dataset (paper Figure 4) and best-of-k
nDCG@10 with bootstrap intervals per method (Figure 5)."""
from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from eqi_core.figures.theme import style

METHOD_COLOURS = {"RM3": "#9ECAE9", "random feedback term (probe)": "#D6EAF8", "random term, no feedback (probe)": "#E5E5E5",
                  "Sampling+QD": "#BAB0AC", "feedback centroid+QD": "#F2CF5B", "feedback walks+QD": "#B279A2",
                  "suggester (plain)": "#4C78A8", "suggester (PRF)": "#E45756", "walk to gold (oracle)": "#54A24B"}
CUTOFFS = (1, 3, 5, 10)


def reformulation_histograms(figure4: dict, title: str | None = "Original query vs best rewrite on the walk") -> go.Figure:
    """Figure 4: histograms of nDCG@10 and of the inner product with the gold passage, for the
    original queries and for the best rewrite of each walk (``dataset_statistics()['figure4']``)."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=("nDCG@10", "inner product with the gold passage"))
    for col, key in ((1, "ndcg"), (2, "ip")):
        edges = figure4[f"{key}_edges"]
        centres = [(a + b) / 2 for a, b in zip(edges[:-1], edges[1:])]
        for which, colour in (("original", "#BAB0AC"), ("best", "#E45756")):
            fig.add_trace(go.Bar(x=centres, y=figure4[f"{key}_{which}"], marker_color=colour, showlegend=col == 1,
                                 name="original query" if which == "original" else "best rewrite"), row=1, col=col)
    fig.update_yaxes(title_text="walks", row=1, col=1)
    fig.update_layout(barmode="group")
    return style(fig, title)


def suggestion_intervals(summary: pd.DataFrame, title: str | None = "Best of k suggestions: max nDCG@10 (95% intervals)") -> go.Figure:
    """Figure 5: per method, mean max nDCG@10 over the original and the best 1/3/5/10 suggestions,
    with bootstrap 95% intervals; the original query as a dashed line. ``summary``: rows of
    ``suggestion.evaluate.summary`` (method, best@k, best@k_lo, best@k_hi)."""
    fig = go.Figure()
    original = summary[summary["method"] == "original query"]
    for _, row in summary[summary["method"] != "original query"].iterrows():
        y = [row[f"best@{k}"] for k in CUTOFFS]
        lo = [row.get(f"best@{k}_lo", float("nan")) for k in CUTOFFS]
        hi = [row.get(f"best@{k}_hi", float("nan")) for k in CUTOFFS]
        fig.add_trace(go.Bar(x=[f"top {k}" for k in CUTOFFS], y=y, name=row["method"],
                             marker_color=METHOD_COLOURS.get(row["method"], "#888888"),
                             error_y=dict(type="data", symmetric=False, array=[h - v for h, v in zip(hi, y)],
                                          arrayminus=[v - low for v, low in zip(y, lo)])))
    if len(original):
        fig.add_hline(y=float(original["best@1"].iloc[0]), line_dash="dash", line_color="#333333",
                      annotation_text="original query")
    fig.update_yaxes(title_text="mean max nDCG@10", range=[0, 1])
    fig.update_layout(barmode="group")
    return style(fig, title)


def typical_suggestion_gain(summary: pd.DataFrame, title: str | None = "A typical suggestion: nDCG@10 minus the query's") -> go.Figure:
    """Per method, the mean nDCG@10 gain of a suggestion over its query (``mean_gain`` of
    ``suggestion.evaluate.summary``), each labelled with the share of its suggestions above their query: what a
    searcher mostly sees, where best-of-k keeps only the luckiest of k tries. Methods without the
    columns (tables from before them) are left out."""
    rows = summary[summary["method"] != "original query"]
    if "mean_gain" in rows:
        rows = rows[rows["mean_gain"].notna()]
    else:
        rows = rows.iloc[0:0]
    labels = [f"{m} · {s:.0%} above" for m, s in zip(rows["method"], rows.get("share_above_query", []))]
    fig = go.Figure(go.Bar(
        y=labels, x=list(rows.get("mean_gain", [])), orientation="h", customdata=list(rows["method"]),
        marker_color=[METHOD_COLOURS.get(m, "#888888") for m in rows["method"]],
        hovertemplate="%{customdata}: mean gain %{x:+.3f}<extra></extra>"))
    fig.add_vline(x=0, line_color="#333333", line_dash="dash")
    fig.update_xaxes(title_text="mean nDCG@10 of a suggestion minus the query's", zeroline=False)
    fig.update_yaxes(autorange="reversed")
    return style(fig, title, height=max(260, 60 + 28 * len(rows)))
