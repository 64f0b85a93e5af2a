"""One look for every figure: readable fonts, a fixed colour per ranker and per relevance grade."""
from __future__ import annotations

import plotly.graph_objects as go

RANKER_COLOURS = {
    "bm25": "#4C78A8",
    "bm25-rm3": "#9ECAE9",
    "minilm-l6": "#F58518",
    "minilm-l3-onnx": "#E45756",
    "splade-tiny": "#54A24B",
    "tasb": "#F58518",
    "splade-pp-ed": "#54A24B",
    "openai-ada2": "#B279A2",
    "repllama": "#E45756",
}
PALETTE = ["#4C78A8", "#F58518", "#54A24B", "#E45756", "#72B7B2", "#B279A2", "#FF9DA6", "#9D755D", "#EECA3B", "#BAB0AC"]
GRADE_COLOURS = {0: "#BAB0AC", 1: "#72B7B2", 2: "#4C78A8", 3: "#2F4B7C"}
FONT = dict(family="Inter, Helvetica, Arial, sans-serif", size=14)


def ranker_colour(name: str) -> str:
    """The same colour for a ranker on every page: known names fixed, others by a stable hash."""
    if name in RANKER_COLOURS:
        return RANKER_COLOURS[name]
    return PALETTE[sum(map(ord, name)) % len(PALETTE)]


def style(fig: go.Figure, title: str | None = None, height: int = 360) -> go.Figure:
    fig.update_layout(
        title=dict(text=title, y=0.97, yanchor="top", x=0.01) if title else None, font=FONT, height=height,
        margin=dict(l=50, r=20, t=85 if title else 30, b=45),
        template="plotly_white", legend=dict(orientation="h", yanchor="bottom", y=1.01, x=0),
    )
    return fig
