"""One look for every figure: readable fonts, a fixed colour per ranker and per relevance grade."""
from __future__ import annotations

import plotly.graph_objects as go

RANKER_COLOURS = {
    "bm25": "#4C78A8",
    "minilm-l6": "#F58518",
    "minilm-l3-onnx": "#E45756",
    "splade-tiny": "#54A24B",
}
GRADE_COLOURS = {0: "#BAB0AC", 1: "#72B7B2", 2: "#4C78A8", 3: "#2F4B7C"}
FONT = dict(family="Inter, Helvetica, Arial, sans-serif", size=14)


def style(fig: go.Figure, title: str | None = None, height: int = 360) -> go.Figure:
    fig.update_layout(
        title=title, font=FONT, height=height, margin=dict(l=50, r=20, t=60 if title else 20, b=45),
        template="plotly_white", legend=dict(orientation="h", yanchor="bottom", y=1.02, x=0),
    )
    return fig
