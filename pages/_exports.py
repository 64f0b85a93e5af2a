"""Figure downloads shared by the pages: PNG at slide resolution, SVG, self-contained HTML."""
from __future__ import annotations

import streamlit as st

PLOT_CONFIG = {"toImageButtonOptions": {"format": "png", "scale": 3}, "displaylogo": False}


def figure_downloads(fig, name: str, key: str) -> None:
    """PNG (3x, slide resolution) and SVG rendered by kaleido only when clicked; self-contained HTML."""
    from eqi_core.coverage.export import SLIDE_SCALE, figure_html, figure_image

    c1, c2, c3, _ = st.columns([1, 1, 1, 5])
    size = {"width": 1000, "height": fig.layout.height or 420}
    c1.download_button("PNG", lambda: figure_image(fig, "png", scale=SLIDE_SCALE, **size), f"{name}.png", "image/png",
                       key=f"{key}_png", icon=":material/image:")
    c2.download_button("SVG", lambda: figure_image(fig, "svg", **size), f"{name}.svg", "image/svg+xml",
                       key=f"{key}_svg", icon=":material/draw:")
    c3.download_button("HTML", lambda: figure_html(fig), f"{name}.html", "text/html", key=f"{key}_html",
                       icon=":material/code:")
