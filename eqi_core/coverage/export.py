"""Exports of a comparison: CSV tables, a LaTeX table, figures as HTML (offline) and PNG/SVG."""
from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go

SLIDE_SCALE = 3  # 3x a 1000-px-wide figure: sharp on a projector


def tasc_latex(table: pd.DataFrame, measure: str, caption: str | None = None) -> str:
    """A booktabs table: ranker, release, mean metric, TaSC max and mean with 95% CIs."""
    def cell(row, agg):
        v = row[f"tasc_{agg}"]
        return "--" if pd.isna(v) else f"{v:.4f} [{row[f'tasc_{agg}_lo']:.3f}, {row[f'tasc_{agg}_hi']:.3f}]"

    out = pd.DataFrame({
        "Ranker": table["ranker"].str.replace("_", r"\_", regex=False),
        "Released": table["release"],
        measure: table["mean_metric"].map("{:.4f}".format),
        "TaSC max [95\\% CI]": [cell(r, "max") for _, r in table.iterrows()],
        "TaSC mean [95\\% CI]": [cell(r, "mean") for _, r in table.iterrows()],
    })
    body = out.to_latex(index=False, escape=False, column_format="llrrr")
    caption = caption or f"Mean {measure} and TaSC (max, mean) per ranker."
    return "\\begin{table}\n\\centering\n" + body + f"\\caption{{{caption}}}\n\\end{{table}}\n"


def figure_html(fig: go.Figure) -> str:
    """A self-contained HTML page (plotly.js inlined: opens with no network)."""
    return fig.to_html(full_html=True, include_plotlyjs=True)


def write_figure(fig: go.Figure, path: Path, fmt: str = "png") -> Path:
    """PNG or SVG at slide resolution via kaleido (which drives the system's chromium)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.part")
    fig.write_image(str(tmp), format=fmt, scale=SLIDE_SCALE if fmt == "png" else 1, width=1000, height=fig.layout.height or 420)
    os.replace(tmp, path)
    return path
