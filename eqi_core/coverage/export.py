"""Exports of a comparison: CSV tables, a LaTeX table, figures as HTML (offline) and PNG/SVG."""
from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go

from eqi_core.errors import FigureExportError
from eqi_core.store import atomic_write

SLIDE_SCALE = 3  # 3x a 1000-px-wide figure: sharp on a projector
IMAGE_FORMATS = ("png", "svg", "jpg", "jpeg", "webp", "pdf")  # what kaleido renders


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


def figure_image(fig: go.Figure, fmt: str = "png", scale: float = 1, width: int = 1000, height: int | None = None) -> bytes:
    """PNG or SVG bytes via kaleido (which drives the system's chromium); see ``figure_images``."""
    return figure_images([fig], fmt, scale, width, height)[0]


def figure_images(figures: list[go.Figure], fmt: str = "png", scale: float = 1, width: int = 1000,
                  height: int | None = None) -> list[bytes]:
    """Each figure as PNG or SVG bytes, all rendered by one kaleido browser: ``fig.to_image`` starts
    chromium anew for every figure (three PNGs: 21.5 s that way, 8.8 s in one browser, on 2 busy
    Zen 3 cores; byte-identical images). Kaleido's browser driver logs and prints
    tracebacks from its own threads even when the images come out fine; they are kept off the
    terminal, and a real failure is one line (FigureExportError)."""
    import asyncio
    import threading

    import kaleido

    if fmt not in IMAGE_FORMATS:  # before a browser is started for nothing
        raise FigureExportError(f"could not render the figure as {fmt.upper()}: expected one of {', '.join(IMAGE_FORMATS)}")
    specs = [(fig.to_dict(), {"format": fmt, "width": width, "height": height or fig.layout.height or 420, "scale": scale})
             for fig in figures]

    async def render() -> list[bytes]:
        async with kaleido.Kaleido(n=1) as k:
            return [await k.calc_fig(spec, opts=opts) for spec, opts in specs]

    result: list = []

    def run() -> None:  # a thread of its own: asyncio.run fails where a loop already runs (notebooks)
        try:
            result.append(asyncio.run(render()))
        except BaseException as exc:  # handed to the caller below
            result.append(exc)

    with quiet_stderr() as captured:
        worker = threading.Thread(target=run, name="kaleido-export")
        worker.start()
        worker.join()
        if isinstance(result[0], BaseException):  # kaleido raises many kinds; the user needs one sentence
            exc = result[0]
            lines = str(exc).strip().splitlines() or captured().strip().splitlines() or [type(exc).__name__]
            raise FigureExportError(f"could not render the figure as {fmt.upper()} with kaleido: {lines[-1]}") from None
    return result[0]


def write_figure(fig: go.Figure, path: Path, fmt: str = "png") -> Path:
    """PNG or SVG at slide resolution, written atomically."""
    return write_figures({path: fig}, fmt)[0]


def write_figures(figures: dict[Path, go.Figure], fmt: str = "png") -> list[Path]:
    """Several figures (path -> figure) at slide resolution, rendered by one browser; nothing is written
    unless every one rendered."""
    images = figure_images(list(figures.values()), fmt, scale=SLIDE_SCALE if fmt == "png" else 1)
    return [atomic_write(path, image) for path, image in zip(figures, images)]


@contextmanager
def quiet_stderr():
    """Send file descriptor 2 (and the loggers of kaleido's browser driver) to a temporary file for
    the duration; yields a function returning what was captured."""
    import logging
    import tempfile

    loggers = [logging.getLogger(n) for n in ("kaleido", "choreographer", "logistro")]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.CRITICAL)
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as sink:
        os.dup2(sink.fileno(), 2)

        def captured() -> str:
            sink.seek(0)
            return sink.read().decode(errors="replace")

        try:
            yield captured
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            for lg, level in zip(loggers, levels):
                lg.setLevel(level)
