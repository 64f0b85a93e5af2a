"""Figures of the Exposure and Exposure evaluation pages (EQI paper Figures 1-5, Table 3, Lorenz)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from eqi_core.figures.theme import clickable_cells, style
from eqi_core.rankers.registry import PALETTE

METHOD_COLOURS = {"Brute force": "#333333", "Exact": "#333333", "BM25-reverse": "#9ECAE9", "BM25-tuned": "#4C78A8",
                  "Append": "#F58518", "Residual": "#E45756"}


def method_colour(name: str) -> str:
    if name in METHOD_COLOURS:
        return METHOD_COLOURS[name]
    if name.startswith("dense-reverse"):
        return "#54A24B"
    return PALETTE[sum(map(ord, name)) % len(PALETTE)]


def exposure_bars(lists: dict[str, pd.DataFrame], n_qd: int, relq_values: dict[str, float] | None = None,
                  relq_label: str = "", click_hint: str | None = None) -> go.Figure:
    """Figure 1: per method, bars at each exposure-list position with height n_q->d - rho(d, sigma_q)
    (0 for non-exposing queries); hatched bars mark queries every shown method retrieved. A bar's
    customdata is [query, shown rank, query id], so a page can open the clicked query; ``click_hint``
    says in the hover what a click does."""
    names = list(lists)
    shared = set.intersection(*(set(f["query_id"]) for f in lists.values())) if len(lists) > 1 else set()
    titles = [f"{n}" + (f" ({relq_label} = {relq_values[n]:.3f})" if relq_values and n in relq_values else "") for n in names]
    fig = make_subplots(rows=len(names), cols=1, shared_xaxes=True, subplot_titles=titles, vertical_spacing=0.12)
    for row, name in enumerate(names, start=1):
        f = lists[name]
        height = np.where(np.isfinite(f["rank"]), n_qd - (f["rank"].fillna(n_qd + 1) - 1), 0)
        is_shared = f["query_id"].isin(shared).to_numpy()
        shown_rank = [f"{int(r)}" if np.isfinite(r) else f"not in top {n_qd}" for r in f["rank"]]
        for flag in (False, True):
            sel = is_shared == flag
            fig.add_trace(go.Bar(  # width fixed: sparse shared positions would widen their bars over the neighbours
                x=f["position"][sel], y=height[sel], showlegend=False, width=0.9,
                marker=dict(color=method_colour(name), pattern_shape="/" if flag else "", line_width=0),
                customdata=np.stack([f["query"][sel], np.asarray(shown_rank, dtype=object)[sel],
                                     f["query_id"].astype(str)[sel]], axis=1),
                hovertemplate="#%{x}: %{customdata[0]}<br>passage rank %{customdata[1]}"
                              + (f"<br>{click_hint}" if click_hint else "") + "<extra></extra>"), row=row, col=1)
        fig.update_yaxes(title_text="n_q→d − ρ", range=[0, n_qd * 1.05], row=row, col=1)
        if not (height > 0).any():  # an empty panel says why, in the exported file too
            axis = "" if row == 1 else str(row)
            fig.add_annotation(xref=f"x{axis} domain", yref=f"y{axis} domain", x=0.5, y=0.5, showarrow=False,
                               text=("no logged query listed" if f.empty else "the listed query does not show the passage "
                                     f"in its top {n_qd}" if len(f) == 1 else f"none of the {len(f)} listed queries shows "
                                     f"the passage in its top {n_qd}"), font=dict(color="#666666"))
    if len(names) > 1:  # the legend explains the hatching, in grey: the colours are the methods'
        for flag, label in ((False, "only this method"), (True, "retrieved by all methods")):
            fig.add_trace(go.Bar(x=[None], y=[None], name=label, showlegend=True, hoverinfo="skip",
                                 marker=dict(color="#9A9A9A", pattern_shape="/" if flag else "", line_width=0)),
                          row=1, col=1)
    fig.update_xaxes(title_text="position in the exposure list ρ(q, ψ_d) + 1", row=len(names), col=1)
    positions = max((len(f) for f in lists.values()), default=0)
    if 0 < positions <= 12:  # plotly's automatic ticks would fall between positions (0.6, 0.8, ...) on short lists
        fig.update_xaxes(tick0=1, dtick=1, range=[0.5, positions + 0.5])
    fig.update_layout(barmode="overlay", bargap=0.1)
    fig = style(fig, "Exposing queries found, by position (higher bar = passage shown higher)", height=270 + 170 * len(names))
    # below the x-axis title, in pixels from the figure's bottom edge, so the two never overlap
    fig.update_layout(legend=dict(orientation="h", yref="container", yanchor="bottom", y=0.0, x=0),
                      margin=dict(b=85))
    return fig


def relq_heatmaps(grids: dict[str, pd.DataFrame], title: str = "RELQ over patience parameters",
                  mark: tuple[float, float] | None = None, click_hint: str | None = None) -> go.Figure:
    """Figure 5: RELQ_{RBP,RBP} over (gamma_q->d rows, gamma_d->q columns), one panel per method: the
    mean over held-out passages, or one passage's. ``mark`` outlines the cell (gamma_q->d, gamma_d->q)
    that the page's sliders have chosen; each cell's click reports its (gamma_q->d, gamma_d->q, RELQ)
    as customdata (``clickable_cells``), and ``click_hint`` says in the hover what a click does."""
    names = list(grids)
    fig = make_subplots(rows=1, cols=len(names), subplot_titles=names, horizontal_spacing=0.08)
    for i, name in enumerate(names, start=1):
        g = grids[name]
        z = g.to_numpy(dtype=float)
        fig.add_trace(go.Heatmap(z=z, x=[f"{c:g}" for c in g.columns], y=[f"{r:g}" for r in g.index],
                                 zmin=0, zmax=1, colorscale="Blues", showscale=i == len(names),
                                 texttemplate="%{z:.2f}",  # 1.00 beside 0.98, not 1
                                 hoverinfo="skip"), row=1, col=i)
        rows, cols = np.meshgrid(np.arange(len(g.index)), np.arange(len(g.columns)), indexing="ij")
        rows, cols = rows.ravel(), cols.ravel()
        fig.add_trace(clickable_cells([f"{g.columns[c]:g}" for c in cols], [f"{g.index[r]:g}" for r in rows],
                                      [[float(g.index[r]), float(g.columns[c]), z[r, c]] for r, c in zip(rows, cols)],
                                      "γ_q→d %{y}, γ_d→q %{x}: RELQ %{customdata[2]:.3f}"
                                      + (f"<br>{click_hint}" if click_hint else "") + "<extra></extra>", size=26, name=name),
                      row=1, col=i)
        fig.update_xaxes(title_text="γ_d→q (EQI user)", row=1, col=i)
        # the cells' own extent, not padded for the invisible markers laid over them
        fig.update_xaxes(range=[-0.5, len(g.columns) - 0.5], row=1, col=i)
        fig.update_yaxes(range=[-0.5, len(g.index) - 0.5], row=1, col=i)
        if mark is not None:
            x, y = [f"{c:g}" for c in g.columns].index(f"{mark[1]:g}"), [f"{r:g}" for r in g.index].index(f"{mark[0]:g}")
            axis = "" if i == 1 else str(i)
            fig.add_shape(type="rect", x0=x - 0.5, x1=x + 0.5, y0=y - 0.5, y1=y + 0.5, xref=f"x{axis}", yref=f"y{axis}",
                          line=dict(color="#E45756", width=3))
    fig.update_yaxes(title_text="γ_q→d (searcher)", row=1, col=1)
    fig.update_xaxes(type="category")  # said outright: the mark is drawn at category positions
    fig.update_yaxes(type="category")
    return style(fig, title, height=460)


CHANGE_COLOURS = {"higher": "#54A24B", "lower": "#E45756", "same": "#9A9A9A", "only A": "#F58518", "only B": "#4C78A8"}
# up for higher, down for lower: green against red alone is lost on many colour-blind viewers
CHANGE_SYMBOLS = {"higher": "triangle-up", "lower": "triangle-down", "same": "circle", "only A": "square", "only B": "diamond"}


def exposure_change_scatter(change: pd.DataFrame, name_a: str, name_b: str, n_qd: int) -> go.Figure:
    """Each exposing query's rank for the passage under ranking A (x, rank 1 on the left) and B (y,
    rank 1 at the top): on the diagonal nothing changed, above it B shows the passage higher, and the
    queries exposing it under only one ranking sit in a "not in the top n" band at the other axis' end."""
    outside = n_qd + max(3, n_qd // 10)  # where "not in the top n_q->d" is drawn
    ra = change[f"rank ({name_a})"].astype(float).fillna(outside)
    rb = change[f"rank ({name_b})"].astype(float).fillna(outside)
    kind = change["change"].replace({f"only {name_a}": "only A", f"only {name_b}": "only B"})
    labels = {"higher": f"higher under {name_b}", "lower": f"lower under {name_b}", "same": "same rank",
              "only A": f"only under {name_a}", "only B": f"only under {name_b}"}
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=[1, n_qd], y=[1, n_qd], mode="lines", line=dict(color="#CCCCCC", dash="dot"),
                             hoverinfo="skip", showlegend=False))
    for key in ("higher", "lower", "same", "only A", "only B"):
        rows = kind == key
        if not rows.any():
            continue
        fig.add_trace(go.Scatter(
            x=ra[rows], y=rb[rows], mode="markers", name=f"{labels[key]} ({int(rows.sum())})",
            marker=dict(color=CHANGE_COLOURS[key], symbol=CHANGE_SYMBOLS[key], size=10, opacity=0.8,
                        line=dict(width=0.5, color="white")),
            customdata=np.stack([change.loc[rows, "query"].astype(str), _rank_text(change.loc[rows, f"rank ({name_a})"]),
                                 _rank_text(change.loc[rows, f"rank ({name_b})"])], axis=1),
            hovertemplate=f"%{{customdata[0]}}<br>{name_a}: %{{customdata[1]}}<br>{name_b}: %{{customdata[2]}}<extra></extra>"))
    ticks = [t for t in (1, 10, 25, 50, 75, 100, 250, 500, 1000) if t <= n_qd] + [outside]
    text = [str(t) for t in ticks[:-1]] + [f"not in top {n_qd}"]
    # the x axis' last label in two lines, with room on the right: in one line it ran past the plot's
    # edge and plotly hid it, leaving the "only under B" column unlabelled
    fig.update_xaxes(title_text=f"rank under {name_a}", range=[0, outside + 2], tickvals=ticks,
                     ticktext=[*text[:-1], f"not in<br>top {n_qd}"])
    fig.update_yaxes(title_text=f"rank under {name_b}", range=[outside + 2, 0], tickvals=ticks, ticktext=text)
    fig = style(fig, f"The passage's rank for each exposing query: {name_a} against {name_b}", height=480)
    return fig.update_layout(margin=dict(r=max(fig.layout.margin.r or 0, 45)))


def _rank_text(ranks: pd.Series) -> np.ndarray:
    return np.array(["—" if pd.isna(r) else str(int(r)) for r in ranks])


def rank_size(frame: pd.DataFrame) -> go.Figure:
    """Figure 4: exposing queries per passage against the passage's rank, log-log, one line per method."""
    fig = go.Figure()
    for name, f in frame.groupby("method", sort=False):
        f = f[f["exposing_queries"] > 0]
        fig.add_trace(go.Scatter(x=f["rank"], y=f["exposing_queries"], name=name, mode="lines",
                                 line=dict(color=method_colour(name), width=2)))
    fig.update_xaxes(type="log", title_text="passage rank (by number of exposing queries)")
    fig.update_yaxes(type="log", title_text="exposing queries")
    return style(fig, "Rank-size distribution of exposing queries per passage")


def lorenz_curve(curve: pd.DataFrame, gini_value: float, highlight: float | None = None, label: str = "") -> go.Figure:
    """Lorenz curve of retrievability with the equality line; optionally a passage's position on it."""
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", name="equality", line=dict(dash="dot", color="#999")))
    fig.add_trace(go.Scatter(x=curve["passages"], y=curve["retrievability"], mode="lines", name=f"Gini {gini_value:.3f}",
                             line=dict(color="#4C78A8", width=3), fill="tonexty"))
    if highlight is not None:
        y = float(np.interp(highlight, curve["passages"], curve["retrievability"]))
        fig.add_trace(go.Scatter(x=[highlight], y=[y], mode="markers+text", text=[label or "this passage"],
                                 textposition="top left", marker=dict(size=14, color="#E45756"), name=label or "passage"))
    fig.update_xaxes(title_text="share of passages (least retrievable first)", range=[0, 1])
    fig.update_yaxes(title_text="share of retrievability", range=[0, 1])
    return style(fig, "Retrievability inequality (Lorenz curve)")


def lorenz_comparison(curves: dict[str, tuple[pd.DataFrame, float, float | None]], label: str = "this passage",
                      names: dict[str, str] | None = None) -> go.Figure:
    """Two or more rankers' Lorenz curves of retrievability on one chart, each named with its Gini and
    with the passage's place on it (``{ranker id: (curve, gini, share below or None)}``): which
    ranker spreads exposure more evenly, and where the passage sits under each. ``names``: how to
    call each ranker id in the legend and hovers (its display name); colours stay by id."""
    from eqi_core.figures.theme import ranker_colours

    colours = ranker_colours(list(curves))
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", name="equality", line=dict(dash="dot", color="#999")))
    for name, (curve, gini_value, highlight) in curves.items():
        shown = (names or {}).get(name, name)
        fig.add_trace(go.Scatter(x=curve["passages"], y=curve["retrievability"], mode="lines", legendgroup=name,
                                 name=f"{shown} (Gini {gini_value:.3f})", line=dict(color=colours[name], width=3)))
        if highlight is not None:
            y = float(np.interp(highlight, curve["passages"], curve["retrievability"]))
            fig.add_trace(go.Scatter(x=[highlight], y=[y], mode="markers", legendgroup=name, showlegend=False,
                                     marker=dict(size=13, color=colours[name], line=dict(width=1.5, color="white")),
                                     hovertemplate=f"{label} under {shown}: %{{x:.1%}} of passages are less retrievable"
                                                   "<extra></extra>"))
    fig.update_xaxes(title_text="share of passages (least retrievable first)", range=[0, 1])
    fig.update_yaxes(title_text="share of retrievability", range=[0, 1])
    return style(fig, "Retrievability inequality by ranker (Lorenz curves)")


def retrievability_chart(rankings: dict[str, tuple], label: str, names: dict[str, str] | None = None) -> go.Figure:
    """The passage on the Lorenz curve of one ranking, or of two on one chart (``{ranker id: (summary,
    place)}``, each from ``passage_retrievability``; ``names`` as in ``lorenz_comparison``): the
    page, its report and ``eqi exposure --report``."""
    if len(rankings) == 1:
        (summary, place), = rankings.values()
        return lorenz_curve(summary.curve, summary.gini, place["share_below"], label)
    return lorenz_comparison({name: (summary.curve, summary.gini, place["share_below"])
                              for name, (summary, place) in rankings.items()}, label, names)


def trait_curves(frame: pd.DataFrame, trait: str) -> go.Figure:
    """Figure 3: P(exposing) and P(retrieved by a method) per query group."""
    fig = go.Figure()
    for series, f in frame.groupby("series", sort=False):
        dash = "solid" if series == "exposing" else ("dot" if series.endswith("top-10") else "dash")
        colour = "#333333" if series == "exposing" else method_colour(series.rsplit(" top-", 1)[0])
        fig.add_trace(go.Scatter(x=f["group"], y=f["probability"], name=series, mode="lines+markers",
                                 line=dict(color=colour, dash=dash)))
    fig.update_xaxes(title_text=trait)
    fig.update_yaxes(title_text="probability")
    return style(fig, f"Exposing vs retrieved, by {trait}")


def training_size(table: pd.DataFrame) -> go.Figure:
    """Table 3 as a heatmap: Residual RELQ by training passages x training queries; an empty (NaN) cell
    is one whose training queries expose no passage, so no head was trained there."""
    z = table.to_numpy(dtype=float)
    said = np.where(np.isnan(z), "—", np.vectorize(lambda v: f"{v:.3f}")(np.nan_to_num(z)))
    hover = np.where(np.isnan(z), "no head: these queries expose no passage", np.char.add("RELQ ", said))
    fig = go.Figure(go.Heatmap(z=z, x=[str(c) for c in table.columns], y=[str(r) for r in table.index],
                               colorscale="Blues", text=said, texttemplate="%{text}", customdata=hover,
                               hovertemplate="%{y} passages, %{x} queries: %{customdata}<extra></extra>"))
    fig.update_xaxes(title_text="training queries")
    fig.update_yaxes(title_text="training passages")
    title = "Residual RELQ_RBP,RBP(0.5, 0.9) by training size"
    if np.isnan(z).any():
        title += " (—: the training queries expose no passage)"
    return style(fig, title)


def expanding_log(frame: pd.DataFrame) -> go.Figure:
    """Figure 2: RELQ as the query log grows after training, one line per training size."""
    fig = go.Figure()
    for (method, f_train), f in frame.groupby(["method", "train_fraction"], dropna=False, sort=False):
        label = "dense-reverse" if method != "Residual" else f"Residual trained on {f_train:.0%} of the log"
        fig.add_trace(go.Scatter(x=f["log_size"], y=f["relq"], name=label, mode="lines+markers",
                                 line=dict(dash="dot" if method != "Residual" else "solid")))
    fig.update_xaxes(title_text="query log size at evaluation")
    fig.update_yaxes(title_text="RELQ_RBP,RBP(0.5, 0.9)")
    return style(fig, "Expanding query log, no retraining")
