"""Figure downloads shared by the pages: PNG at slide resolution, SVG, self-contained HTML."""
from __future__ import annotations

import streamlit as st

PLOT_CONFIG = {"toImageButtonOptions": {"format": "png", "scale": 3}, "displaylogo": False}


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
