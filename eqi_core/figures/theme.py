"""One look for every figure: readable fonts, a fixed colour per ranker and per relevance grade."""
from __future__ import annotations

import plotly.graph_objects as go

from eqi_core.rankers.registry import colour_for

GRADE_COLOURS = {0: "#BAB0AC", 1: "#72B7B2", 2: "#4C78A8", 3: "#2F4B7C"}
FONT = dict(family="Inter, Helvetica, Arial, sans-serif", size=14)


def ranker_colour(name: str) -> str:
    """The same colour for a ranker on every page (the registry's; a stable hash for other names)."""
    return colour_for(name)


def style(fig: go.Figure, title: str | None = None, height: int = 360) -> go.Figure:
    fig.update_layout(
        title=dict(text=title, y=0.97, yanchor="top", x=0.01) if title else None, font=FONT, height=height,
        margin=dict(l=50, r=20, t=85 if title else 30, b=45),
        template="plotly_white", legend=dict(orientation="h", yanchor="bottom", y=1.01, x=0),
    )
    return fig
