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
    """PNG (3x, slide resolution) and SVG rendered by kaleido only when clicked (greyed out, saying
    why, where no browser is installed); self-contained HTML.
    ``fig``: the figure, or a function that makes it (only when clicked), where the export differs
    from the figure on screen and costs time to build."""
    from eqi_core.figure_export import NO_BROWSER, SLIDE_SCALE, figure_html, figure_image, image_browser

    made = fig if callable(fig) else lambda: fig

    def image(kind: str, **scale):
        figure = made()
        return figure_image(figure, kind, width=1000, height=figure.layout.height or 420, **scale)

    no_browser = NO_BROWSER[0].upper() + NO_BROWSER[1:] if image_browser() is None else None
    row = st.container(horizontal=True)  # flows in a half-width column as in a full-width one
    row.download_button("PNG", lambda: image("png", scale=SLIDE_SCALE), f"{name}.png", "image/png",
                        on_click="ignore", key=f"{key}_png", icon=":material/image:",
                        disabled=no_browser is not None, help=no_browser)
    row.download_button("SVG", lambda: image("svg"), f"{name}.svg", "image/svg+xml",
                        on_click="ignore", key=f"{key}_svg", icon=":material/draw:",
                        disabled=no_browser is not None, help=no_browser)
    row.download_button("HTML", lambda: figure_html(made()), f"{name}.html", "text/html", on_click="ignore", key=f"{key}_html",
                        icon=":material/code:")
