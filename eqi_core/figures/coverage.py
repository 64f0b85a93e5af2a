"""Figures of the Ranker coverage page (paper Figures 1-4, a clustered heatmap, unsolved queries)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from eqi_core.figures.theme import clickable_cells, ranker_colours, style

FEW_QUERIES = 30  # up to this many, each query of a per-query line is drawn as a marker too


def sorted_per_query(values: pd.DataFrame, measure: str) -> go.Figure:
    """Figure 1: each ranker's per-query metric sorted from best to worst over the query share; with
    few queries each is a marker too (a line through one point draws nothing)."""
    fig = go.Figure()
    n = len(values)
    x = (np.arange(n) + 1) / n * 100 if n else []
    colours = ranker_colours(values.columns)
    for r in values.columns:
        fig.add_trace(go.Scatter(x=x, y=np.sort(values[r].to_numpy())[::-1], name=r,
                                 mode="lines+markers" if n <= FEW_QUERIES else "lines",
                                 line=dict(color=colours[r], width=2),
                                 hovertemplate=f"{r}<br>top %{{x:.0f}}% of queries: {measure} >= %{{y:.3f}}<extra></extra>"))
    fig.update_xaxes(title_text="queries, sorted per ranker (%)", range=[0, 101])
    fig.update_yaxes(title_text=measure, range=[-0.02, 1.02])
    return style(fig, f"Per-query {measure}, sorted")


def _query_labels(index: pd.Index, texts: dict | None) -> list[str]:
    """Hover labels: the query's id, and its text where the collection has it (a presenter reads the
    query, not its id)."""
    texts = texts or {}
    return [f"{q}: {_wrap_hover(texts[q])}" if texts.get(q) else str(q) for q in index]


def _wrap_hover(text: str, width: int = 60) -> str:
    text = str(text)
    return text if len(text) <= width else text[:width - 1] + "…"


def pairwise_difference(values: pd.DataFrame, a: str, b: str, measure: str, texts: dict | None = None) -> go.Figure:
    """Figure 2: per-query difference a - b, sorted; above 0 a is better, below 0 b is better.

    Drawn as bars without gaps, but not as plotly bars: 13,013 SVG bars (WordNet's queries) took
    9-12 s to draw in chromium, and the page's run waited on it. Each side (a better, equal, b better)
    is one filled step line, one unit wide per query (query i of the sort at x = i, from 1); an invisible
    layer of one point per query (``clickable_cells``) carries the hover and the click, and with
    hovermode "x" a click anywhere above or below a query's step picks that query; the hover's label on
    the x axis reads "place i of n"."""
    diff = (values[a] - values[b]).sort_values(ascending=False)
    d, pair = diff.to_numpy(), ranker_colours([a, b])
    fig = go.Figure()
    for keep, colour in ((d > 0, pair[a]), (d == 0, "#BBBBBB"), (d < 0, pair[b])):
        idx = np.flatnonzero(keep)  # contiguous: the differences are sorted
        if len(idx):
            fig.add_trace(go.Scatter(x=np.append(idx + 0.5, idx[-1] + 1.5), y=np.append(d[idx], d[idx[-1]]),
                                     mode="lines", line=dict(shape="hv", width=0.5, color=colour), fill="tozeroy",
                                     fillcolor=colour, hoverinfo="skip", showlegend=False))
    labels = _query_labels(diff.index, texts)  # one invisible point per query, from 1, for the hover and a click
    fig.add_trace(clickable_cells(np.arange(1, len(d) + 1), d, [[str(q), label] for q, label in zip(diff.index, labels)],
                                  "%{customdata[1]}<br>difference %{y:.3f}<extra></extra>", size=6, name="queries"))
    wins, losses, ties = int((d > 0).sum()), int((d < 0).sum()), int((d == 0).sum())
    # two lines: the counts stay readable in a half-width column
    fig.update_xaxes(title_text=f"queries sorted by difference<br>({a} better: {wins}, {b} better: {losses}, equal: {ties})",
                     showticklabels=False, range=[0.5, max(len(d), 1) + 0.5], hoverformat=",d", tickprefix="place ",
                     ticksuffix=f" of {len(d):,}")
    fig.update_yaxes(title_text=f"{measure}: {a} - {b}", range=[-1.05, 1.05])
    fig.update_layout(hovermode="x")
    return style(fig, f"{a} vs {b}, per query").update_layout(margin_b=70)


def pairwise_scatter(values: pd.DataFrame, a: str, b: str, measure: str, texts: dict | None = None,
                     listed: int = 5) -> go.Figure:
    """Each query at (b's metric, a's metric): above the diagonal a did better, below it b. Where
    differences alone hide it, this shows on which queries the gains fall (hard ones, near 0, or easy
    ones). Queries with the same pair of values share one marker, its area by their count, from 8 px
    for one query to 40 px for the most crowded pair (rank metrics put thousands at (0, 0) and (1, 1)
    on WordNet); its hover lists the first ``listed`` and a click opens the
    first (customdata[0])."""
    pair = ranker_colours([a, b])
    frame = pd.DataFrame({"x": values[b].round(6), "y": values[a].round(6), "label": _query_labels(values.index, texts),
                          "qid": values.index.astype(str)})
    largest = int(frame.groupby(["x", "y"]).size().max()) if len(frame) else 1
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", line=dict(color="#999999", dash="dot", width=1),
                             hoverinfo="skip", showlegend=False))
    for name, rows, colour in ((f"{a} better", frame[frame["y"] > frame["x"]], pair[a]),
                               (f"{b} better", frame[frame["y"] < frame["x"]], pair[b]),
                               ("equal", frame[frame["y"] == frame["x"]], "#BBBBBB")):
        groups = rows.groupby(["x", "y"], sort=True)
        points = pd.DataFrame({"n": groups.size(), "qid": groups["qid"].first(),
                               "hover": groups["label"].agg(lambda ls: "<br>".join(list(ls)[:listed])
                                                            + (f"<br>… and {len(ls) - listed} more" if len(ls) > listed else ""))
                               }).reset_index()
        fig.add_trace(go.Scatter(
            x=points["x"], y=points["y"], mode="markers", name=f"{name} ({len(rows)})",
            marker=dict(color=colour, size=8 + 32 * np.sqrt((points["n"].to_numpy() - 1) / max(largest - 1, 1)), opacity=0.8,
                        line=dict(width=0.5, color="white")),
            customdata=np.column_stack([points["qid"], points["n"], points["hover"]]) if len(points) else None,
            hovertemplate=f"{b} %{{x:.3f}}, {a} %{{y:.3f}}: %{{customdata[1]}} quer(ies)<br>%{{customdata[2]}}<extra></extra>"))
    fig.update_xaxes(title_text=f"{measure} of {b}", range=[-0.05, 1.05], constrain="domain")  # square, 0 to 1
    fig.update_yaxes(title_text=f"{measure} of {a}", range=[-0.05, 1.05], scaleanchor="x", scaleratio=1, constrain="domain")
    return style(fig, f"{a} against {b}, query by query").update_layout(legend_itemsizing="constant")


def tasc_bars(table: pd.DataFrame) -> go.Figure:
    """Figure 3: TaSC max and mean per ranker in table order (chronological), with bootstrap CIs."""
    t = table.dropna(subset=["tasc_max"])
    fig = go.Figure()
    for agg, colour in (("max", "#4C78A8"), ("mean", "#F58518")):
        fig.add_trace(go.Bar(
            x=t["ranker"], y=t[f"tasc_{agg}"], name=f"TaSC {agg}", marker_color=colour,
            error_y=dict(type="data", symmetric=False, array=t[f"tasc_{agg}_hi"] - t[f"tasc_{agg}"],
                         arrayminus=t[f"tasc_{agg}"] - t[f"tasc_{agg}_lo"]),
            hovertemplate="%{x}<br>TaSC " + agg + " %{y:.4f}<extra></extra>"))
    fig.update_layout(barmode="group")
    fig.update_yaxes(title_text="TaSC")
    return style(fig, "TaSC by ranker (95% bootstrap CI)")


def tasc_bubbles(table: pd.DataFrame, agg: str, measure: str, title: str) -> go.Figure:
    """Figure 4: release date (x) vs TaSC (y); bubble area = mean metric; each name placed where it
    overlaps the fewest other names and bubbles (rankers of the same years crowd together)."""
    t = table.dropna(subset=[f"tasc_{agg}"]).copy()
    t["date"] = pd.to_datetime(t["release"], errors="coerce")
    t = t.sort_values("date")
    colours = ranker_colours(t["ranker"])
    sizes = (10 + 40 * t["mean_metric"]).to_numpy()
    y_range = None
    if len(t):
        lo, hi = t[f"tasc_{agg}"].min(), t[f"tasc_{agg}"].max()
        pad = max(0.05, 0.3 * (hi - lo))
        y_range = [max(0.0, lo - pad), hi + pad]
    days = t["date"].map(lambda d: d.toordinal() if pd.notna(d) else np.nan).to_numpy(dtype=float)
    spots = label_spots(days, t[f"tasc_{agg}"].to_numpy(dtype=float), sizes, list(t["ranker"]), y_range)
    fig = go.Figure()
    for (_, row), size, spot in zip(t.iterrows(), sizes, spots):
        fig.add_trace(go.Scatter(
            x=[row["date"]], y=[row[f"tasc_{agg}"]], mode="markers+text", text=[row["ranker"]],
            textposition=spot, name=row["ranker"], showlegend=False,
            marker=dict(size=size, color=colours[row["ranker"]], opacity=0.7, line=dict(width=1, color="#333")),
            hovertemplate=f"{row['ranker']}<br>released {row['release']}<br>TaSC {agg} %{{y:.4f}}"
                          f"<br>mean {measure} {row['mean_metric']:.4f}<extra></extra>"))
    fig.update_xaxes(title_text="release date")
    if y_range is not None:
        fig.update_yaxes(range=y_range)
    fig.update_yaxes(title_text=f"TaSC {agg}")
    return style(fig, title)


SPOTS = {"top center": (0, 1), "bottom center": (0, -1), "middle right": (1, 0), "middle left": (-1, 0),
         "top right": (1, 1), "bottom right": (1, -1), "top left": (-1, 1), "bottom left": (-1, -1)}


def label_spots(x: np.ndarray, y: np.ndarray, sizes: np.ndarray, labels: list[str], y_range=None,
                width_px: float = 900, height_px: float = 230, char_px: float = 7.5, line_px: float = 17) -> list[str]:
    """A plotly textposition per point: the spot whose label box overlaps the fewest pixels of the
    other labels, of every bubble and of the plot's edge, chosen point by point and then improved
    in a few passes over all points. Pixels are estimated for a typical plot area (the figure's
    width is the browser's); points without a position get 'top center'."""
    ok = np.isfinite(x) & np.isfinite(y)
    spots = ["top center"] * len(labels)
    if not ok.any():
        return spots
    x_lo, x_hi = np.nanmin(x[ok]), np.nanmax(x[ok])
    x_pad = max((x_hi - x_lo) * 0.05, 1.0)
    y_lo, y_hi = y_range if y_range is not None else (np.nanmin(y[ok]) - 0.05, np.nanmax(y[ok]) + 0.05)
    px = (x - (x_lo - x_pad)) / (x_hi - x_lo + 2 * x_pad) * width_px
    py = (y - y_lo) / max(y_hi - y_lo, 1e-9) * height_px
    radius = sizes / 2
    points = np.flatnonzero(ok)
    bubbles = [(px[i] - radius[i], py[i] - radius[i], px[i] + radius[i], py[i] + radius[i]) for i in points]

    def box(i: int, spot: str) -> tuple[float, float, float, float]:
        dx, dy = SPOTS[spot]
        w, h = char_px * len(labels[i]), line_px
        cx, cy = px[i] + dx * (radius[i] + w / 2 + 2), py[i] + dy * (radius[i] + h / 2 + 1)
        return cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2

    def cost(i: int, spot: str, others: list[tuple[float, float, float, float]]) -> float:
        b = box(i, spot)
        area = (b[2] - b[0]) * (b[3] - b[1])
        outside = area - _overlap(b, (0, 0, width_px, height_px))
        return sum(_overlap(b, o) for o in others) + sum(_overlap(b, o) for o in bubbles) + 2 * outside

    boxes: dict[int, tuple[float, float, float, float]] = {}
    for _ in range(3):  # the first pass sees only earlier labels; later ones see all
        for i in points:
            others = [b for j, b in boxes.items() if j != i]
            spots[i] = min(SPOTS, key=lambda s: cost(i, s, others))
            boxes[i] = box(i, spots[i])
    return spots


def _overlap(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> float:
    return max(0.0, min(a[2], b[2]) - max(a[0], b[0])) * max(0.0, min(a[3], b[3]) - max(a[1], b[1]))


def clustered_heatmap(values: pd.DataFrame, measure: str, max_queries: int = 2000, texts: dict | None = None,
                      click_hint: str | None = None) -> go.Figure:
    """Query x ranker heatmap, queries ordered by hierarchical clustering (scipy) of their profiles; a
    cell's click reports [query id, label, value] as customdata (``clickable_cells``), and
    ``click_hint`` says in the hover what a click does (none in an exported figure)."""
    from scipy.cluster.hierarchy import leaves_list, linkage

    v = values
    if len(v) > max_queries:  # a figure cannot show more rows than pixels; sample deterministically
        v = v.sample(max_queries, random_state=0)
    order = leaves_list(linkage(v.to_numpy(), method="average", metric="euclidean")) if len(v) > 2 else np.arange(len(v))
    v = v.iloc[order]
    z = v.to_numpy()
    fig = go.Figure(go.Heatmap(z=z, x=list(v.columns), y=list(v.index), colorscale="Viridis", zmin=0, zmax=1,
                               colorbar=dict(title=measure), hoverinfo="skip"))
    labels = _query_labels(v.index, texts)
    rows, cols = np.meshgrid(np.arange(len(v)), np.arange(v.shape[1]), indexing="ij")
    rows, cols = rows.ravel(), cols.ravel()
    fig.add_trace(clickable_cells([v.columns[c] for c in cols], [v.index[r] for r in rows],
                                  [[str(v.index[r]), labels[r], float(z[r, c])] for r, c in zip(rows, cols)],
                                  "%{customdata[1]}<br>%{x}: %{customdata[2]:.3f}" + (f"<br>{click_hint}" if click_hint else "")
                                  + "<extra></extra>", size=10))
    # categories in the clustered order, said outright (query ids such as "225" look like numbers);
    # the cells' own extent, not padded for the invisible markers laid over them
    fig.update_yaxes(type="category", categoryorder="array", categoryarray=[str(q) for q in v.index],
                     range=[-0.5, len(v) - 0.5], showticklabels=len(v) <= 60,
                     title_text=f"queries (clustered, {len(v)} shown)")
    fig.update_xaxes(type="category", range=[-0.5, v.shape[1] - 0.5])
    return style(fig, f"{measure} per query and ranker", height=520)


def solved_by_count(values: pd.DataFrame) -> go.Figure:
    """How many rankers score above 0 on each query; the bar at 0 is the unsolved share."""
    counts = (values > 0).sum(axis=1).value_counts().reindex(range(values.shape[1] + 1), fill_value=0)
    share = counts / max(len(values), 1) * 100
    colours = ["#E45756"] + ["#4C78A8"] * (len(counts) - 1)
    fig = go.Figure(go.Bar(x=[str(i) for i in counts.index], y=share.to_numpy(), marker_color=colours,
                           customdata=counts.to_numpy(),
                           hovertemplate="%{x} rankers solve %{customdata} queries (%{y:.1f}%)<extra></extra>"))
    fig.update_xaxes(title_text="number of rankers with metric > 0 (0 = unsolved by all)")
    fig.update_yaxes(title_text="queries (%)")
    return style(fig, f"Unsolved by every ranker: {share.iloc[0]:.1f}% of queries")


def tasc_figures(table: pd.DataFrame, measure: str) -> dict[str, go.Figure]:
    return {
        "bars": tasc_bars(table),
        "bubble_max": tasc_bubbles(table, "max", measure, "Release date vs TaSC max (bubble: mean metric)"),
        "bubble_mean": tasc_bubbles(table, "mean", measure, "Release date vs TaSC mean (bubble: mean metric)"),
    }
