"""One look for every figure: readable fonts, a fixed colour per ranker and per relevance grade."""
from __future__ import annotations

import plotly.graph_objects as go

from eqi_core.rankers.registry import PALETTE, colour_for, known

GRADE_COLOURS = {0: "#BAB0AC", 1: "#72B7B2", 2: "#4C78A8", 3: "#2F4B7C"}
FONT = dict(family="Inter, Helvetica, Arial, sans-serif", size=14)


def ranker_colours(names) -> dict[str, str]:
    """Colours for the rankers of one figure, never two alike while the palette lasts: a registered
    ranker keeps its own; another name (or a second name for the same registered ranker, e.g. a live
    BM25 beside a BM25 run file) keeps its hash colour unless a ranker drawn beside it has that, and
    then takes the next free palette colour."""
    names = list(dict.fromkeys(names))
    colours: dict[str, str] = {}
    for name in names:
        if known(name) is not None and not name.startswith("st:") and colour_for(name) not in colours.values():
            colours[name] = colour_for(name)
    used = set(colours.values())
    for name in sorted(n for n in names if n not in colours):
        own = colour_for(name)
        start = PALETTE.index(own) if own in PALETTE else 0
        free = (PALETTE[(start + i) % len(PALETTE)] for i in range(len(PALETTE)))
        colours[name] = next((c for c in free if c not in used), own)
        used.add(colours[name])
    return {n: colours[n] for n in names}


def clickable_cells(x, y, customdata, hovertemplate: str, size: int = 14, name: str = "cells") -> go.Scatter | go.Scattergl:
    """An invisible marker at the centre of each heatmap cell (``x``, ``y``: one entry per cell, in the
    heatmap's category labels) carrying the cell's ``customdata`` and hover text. Streamlit's
    ``on_select`` reports nothing for a click on a heatmap (streamlit/streamlit#8760), but does for
    scatter points, so a page lays this over the heatmap (whose own hover is then skipped) to make
    its cells clickable. Many cells (a query x ranker map) are drawn by WebGL, which stays responsive."""
    x, y, customdata = list(x), list(y), list(customdata)
    trace = go.Scattergl if len(x) > 2000 else go.Scatter
    return trace(x=x, y=y, customdata=customdata, mode="markers", name=name, showlegend=False,
                 marker=dict(size=size, symbol="square", opacity=0), hovertemplate=hovertemplate,
                 selected=dict(marker=dict(opacity=0)), unselected=dict(marker=dict(opacity=0)))


LEGEND_ROW_LIMIT = 6  # more entries than this wrap into rows that cover the plot: they go to the right


def legend_entries(fig: go.Figure) -> int:
    return sum(1 for t in fig.data if t.showlegend is not False and t.name)


def style(fig: go.Figure, title: str | None = None, height: int = 360) -> go.Figure:
    """A few legend entries sit in one row above the plot; many (e.g. 5 methods x 2 depths) are listed
    to the right of it, where plotly makes room for them instead of drawing them over the data."""
    entries = legend_entries(fig)
    if entries > LEGEND_ROW_LIMIT:
        legend = dict(orientation="v", yanchor="top", y=1, xanchor="left", x=1.02)
        height = max(height, 150 + 22 * entries)  # the whole list, without a scroll bar
    else:
        legend = dict(orientation="h", yanchor="bottom", y=1.01, x=0)
    fig.update_layout(
        title=dict(text=title, y=0.97, yanchor="top", x=0.01) if title else None, font=FONT, height=height,
        margin=dict(l=50, r=20, t=85 if title else 30, b=45), template="plotly_white", legend=legend,
    )
    return fig
