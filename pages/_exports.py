"""Figures on the pages: their plotly config, downloads (PNG at slide resolution, SVG, self-contained
HTML) and what a click on one reports."""
from __future__ import annotations

import streamlit as st

PLOT_CONFIG = {"toImageButtonOptions": {"format": "png", "scale": 3}, "displaylogo": False}


def clicked_data(event) -> list | None:
    """The customdata of the clicked point of a chart (``st.plotly_chart(on_select=...)``'s value, or
    ``st.session_state[key]`` in its callback), as a list; None without a click or customdata. (A row
    of a numeric numpy customdata arrives as {"0": ..., "1": ...}.)"""
    points = ((event or {}).get("selection") or {}).get("points") or []
    for point in points:
        data = point.get("customdata")
        if isinstance(data, dict) and data and all(str(k).isdigit() for k in data):  # a numeric array's row
            return [data[k] for k in sorted(data, key=int)]
        if data is not None:
            return list(data) if isinstance(data, (list, tuple)) else [data]
    return None


def figure_downloads(fig, name: str, key: str) -> None:
    """PNG (3x, slide resolution) and SVG rendered by kaleido only when clicked; self-contained HTML."""
    from eqi_core.coverage.export import SLIDE_SCALE, figure_html, figure_image

    row = st.container(horizontal=True)  # flows in a half-width column as in a full-width one
    size = {"width": 1000, "height": fig.layout.height or 420}
    row.download_button("PNG", lambda: figure_image(fig, "png", scale=SLIDE_SCALE, **size), f"{name}.png", "image/png",
                       key=f"{key}_png", icon=":material/image:")
    row.download_button("SVG", lambda: figure_image(fig, "svg", **size), f"{name}.svg", "image/svg+xml",
                       key=f"{key}_svg", icon=":material/draw:")
    row.download_button("HTML", lambda: figure_html(fig), f"{name}.html", "text/html", key=f"{key}_html",
                       icon=":material/code:")
