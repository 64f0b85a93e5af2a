"""Figures of the Latent traversal page and of the decoder evaluation (paper Figures 2, 3 and 5)."""
from __future__ import annotations

import math
import textwrap

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from eqi_core.figures.theme import style
from eqi_core.rankers.registry import PALETTE

DECODER_COLOURS = {"decoder": "#4C78A8", "decoder+rerank": "#E45756", "nearest-query": "#54A24B", "word-edit search": "#B279A2",
                   "RM3": "#9ECAE9", "query": "#333333"}
KIND_STYLE = {  # kind -> (colour, marker symbol, size); the two kinds of passage differ in shape too, not
    # only in green against orange, which many colour-blind viewers cannot tell apart
    "query": ("#1F77B4", "circle", 16),
    "target passage": ("#D62728", "cross", 18),
    "top passages of the query": ("#2CA02C", "square", 9),
    "top passages of the target": ("#FF7F0E", "diamond", 11),
    "nearby logged queries": ("#BAB0AC", "circle", 7),
}


def decoder_colour(name: str) -> str:
    for key, colour in DECODER_COLOURS.items():
        if name == key or name.startswith(key + " ") or name.endswith(f", {key} (oracle)"):
            return colour
    return PALETTE[sum(map(ord, name)) % len(PALETTE)]


def _wrap(text: str, width: int = 60, lines: int = 4) -> str:
    return "<br>".join(textwrap.wrap(str(text), width)[:lines])


def trajectory(points: pd.DataFrame, path: pd.DataFrame, title: str | None = "Latent traversal (UMAP)") -> go.Figure:
    """Figure 2: the neighbourhood (query, target, their top passages, nearby queries) and the
    decoded steps as a numbered line from the query towards the target."""
    fig = go.Figure()
    for kind, (colour, symbol, size) in KIND_STYLE.items():
        part = points[points["kind"] == kind]
        if part.empty:
            continue
        fig.add_trace(go.Scatter(
            x=part["x"], y=part["y"], mode="markers", name=kind,
            marker=dict(color=colour, symbol=symbol, size=size, line=dict(width=0.5, color="white")),
            text=[f"<b>{kind}</b> {i}<br>{_wrap(t)}" for i, t in zip(part["id"], part["label"])],
            hovertemplate="%{text}<extra></extra>"))
    fig.add_trace(go.Scatter(
        x=path["x"], y=path["y"], mode="lines+markers+text", name="decoded steps",
        line=dict(color="#9467BD", width=2), marker=dict(size=10, color="#9467BD"),
        text=step_labels(path), textposition="top center",
        customdata=list(zip(path["step"], path["decoded"], path["target_rank"], path["ndcg10"].round(3))),
        hovertemplate="step %{customdata[0]}: <b>%{customdata[1]}</b><br>target rank %{customdata[2]}, "
                      "nDCG@10 %{customdata[3]}<extra></extra>"))
    fig.update_xaxes(showticklabels=False, title=None, zeroline=False)
    fig.update_yaxes(showticklabels=False, title=None, zeroline=False)
    fig = style(fig, title, height=520)
    fig.update_layout(legend=dict(orientation="h", yanchor="top", y=-0.02, x=0), margin=dict(t=50, b=90))
    return fig


def step_labels(path: pd.DataFrame) -> list[str]:
    """Step numbers, one label per run of identical decodings ("0-5"), so repeats do not overprint."""
    labels, steps, texts = [], list(path["step"]), list(path["decoded"])
    i = 0
    while i < len(steps):
        j = i
        while j + 1 < len(steps) and texts[j + 1] == texts[i]:
            j += 1
        labels += [f"{steps[i]}" if i == j else f"{steps[i]}-{steps[j]}"] + [""] * (j - i)
        i = j + 1
    return labels


def traversal_steps(steps: pd.DataFrame, title: str | None = "Target rank and nDCG@10 per step") -> go.Figure:
    """Per step: the target passage's rank (log scale, 1 at the top) and nDCG@10 of the decoding; each
    point's customdata starts with its step, as the map's path does (a page opens the clicked step)."""
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    step_ids = [[int(k)] for k in steps["step"]]  # a click reports its step (customdata[0]), as on the map
    fig.add_trace(go.Scatter(x=steps["step"], y=steps["target_rank"], name="target rank", mode="lines+markers",
                             line=dict(color="#D62728"), text=steps["decoded"], customdata=step_ids,
                             hovertemplate="step %{x}: %{text}<br>rank %{y}<extra></extra>"), secondary_y=False)
    fig.add_trace(go.Scatter(x=steps["step"], y=steps["ndcg10"], name="nDCG@10", mode="lines+markers",
                             line=dict(color="#1F77B4", dash="dot"), customdata=step_ids,
                             hovertemplate="step %{x}: nDCG@10 %{y:.3f}<extra></extra>"), secondary_y=True)
    worst = max(int(steps["target_rank"].max()), 2)
    ticks = [t for t in (1, 2, 3, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000) if t <= worst * 1.5]
    fig.update_yaxes(type="log", range=[math.log10(worst * 1.5), -0.1], tickvals=ticks, ticktext=[str(t) for t in ticks],
                     minor=dict(showgrid=False), title_text="target rank (log)", secondary_y=False)
    fig.update_yaxes(range=[0, 1.05], dtick=0.2, showgrid=False, title_text="nDCG@10", secondary_y=True)
    fig.update_xaxes(title_text="step k (0 = query, K = target passage)", dtick=1)
    return style(fig, title, height=360)


def ndcg_curve(summary: pd.DataFrame, title: str | None = "Mean nDCG@10 along the walk to the gold passage") -> go.Figure:
    """Figure 3: mean nDCG@10 per step and decoder; the original query's level as a dashed line."""
    fig = go.Figure()
    for dec, part in summary[summary["step"] >= 0].groupby("decoder", sort=False):
        part = part.sort_values("step")
        fig.add_trace(go.Scatter(x=part["step"], y=part["ndcg10"], name=dec, mode="lines+markers",
                                 line=dict(color=decoder_colour(dec))))
    original = summary[summary["step"] == -1]
    if len(original):
        fig.add_hline(y=float(original["ndcg10"].iloc[0]), line_dash="dash", line_color="#333333",
                      annotation_text="original query", annotation_position="bottom right")
    fig.update_xaxes(title_text="step k (0 = query embedding, K = gold passage embedding)", dtick=1)
    fig.update_yaxes(title_text="mean nDCG@10")
    return style(fig, title)


def suggestion_bars(summary: pd.DataFrame, title: str | None = "Best of k suggestions: max nDCG@10") -> go.Figure:
    """Figure 5: per method, mean max nDCG@10 over the original and the best 1/3/5/10 suggestions."""
    cols = [c for c in summary.columns if c.startswith("best@")]
    fig = go.Figure()
    for method, row in summary.iterrows():
        fig.add_trace(go.Bar(x=[c.replace("best@", "top ") for c in cols], y=[row[c] for c in cols], name=method,
                             marker_color=decoder_colour(method)))
    if len(summary):
        fig.add_hline(y=float(summary["original"].iloc[0]), line_dash="dash", line_color="#333333",
                      annotation_text="original query")
    fig.update_yaxes(title_text="mean max nDCG@10", range=[0, 1])
    fig.update_layout(barmode="group")
    return style(fig, title)
