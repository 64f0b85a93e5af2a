import numpy as np
import pandas as pd
import pytest

from eqi_core.coverage.export import tasc_latex
from eqi_core.coverage.tasc import tasc_table
from eqi_core.figure_export import figure_html
from eqi_core.figures import coverage as figs

V = pd.DataFrame({"bm25": [1.0, 0.0, 0.5, 0.0], "dense": [0.5, 1.0, 0.5, 0.0], "splade": [0.0, 1.0, 1.0, 0.25]},
                 index=["q1", "q2", "q3", "q4"])
DATES = {"bm25": "1994-11", "dense": "2020-06", "splade": "2021-09"}


@pytest.fixture(scope="module")
def table():
    return tasc_table(V, "chronological", DATES, baseline="bm25", n_boot=200)[0]


def test_sorted_per_query_curves():
    fig = figs.sorted_per_query(V, "RR@10")
    assert [t.name for t in fig.data] == ["bm25", "dense", "splade"]
    assert list(fig.data[2].y) == [1.0, 1.0, 0.25, 0.0]
    assert fig.data[0].mode == "lines+markers"  # 4 queries: each one a marker (one query drew nothing as a line)
    many = pd.DataFrame({"bm25": np.linspace(0, 1, 100)}, index=[f"q{i}" for i in range(100)])
    assert figs.sorted_per_query(many, "RR@10").data[0].mode == "lines"


def test_pairwise_difference_sorted_and_counted():
    fig = figs.pairwise_difference(V, "splade", "bm25", "RR@10")
    points = fig.data[-1]  # the invisible layer of one point per query: hover and clicks
    assert list(points.y) == [1.0, 0.5, 0.25, -1.0] and points.marker.opacity == 0
    assert "splade better: 3, bm25 better: 1, equal: 0" in fig.layout.xaxis.title.text
    # each side one filled step, a unit wide per query: splade better on places 1-3, bm25 on 4; no grey step
    pair = figs.ranker_colours(["splade", "bm25"])
    a_side, b_side = fig.data[:-1]
    assert (a_side.fillcolor, b_side.fillcolor) == (pair["splade"], pair["bm25"])
    assert list(a_side.x) == [0.5, 1.5, 2.5, 3.5] and list(a_side.y) == [1.0, 0.5, 0.25, 0.25]
    assert list(b_side.x) == [3.5, 4.5] and list(b_side.y) == [-1.0, -1.0] and list(points.x) == [1, 2, 3, 4]
    assert a_side.line.shape == "hv" and a_side.fill == "tozeroy" and a_side.hoverinfo == "skip"
    assert fig.layout.hovermode == "x" and tuple(fig.layout.xaxis.range) == (0.5, 4.5)  # a click picks the query at its x
    assert (fig.layout.xaxis.tickprefix, fig.layout.xaxis.ticksuffix) == ("place ", " of 4")  # the hover's x label: place 3 of 4
    dense = figs.pairwise_difference(V, "dense", "bm25", "RR@10")  # q2 +1, q3 and q4 equal, q1 -0.5
    assert [(list(t.x), t.fillcolor) for t in dense.data[:-1]] == [([0.5, 1.5], figs.ranker_colours(["dense", "bm25"])["dense"]),
                                                                   ([1.5, 2.5, 3.5], "#BBBBBB"),
                                                                   ([3.5, 4.5], figs.ranker_colours(["dense", "bm25"])["bm25"])]


def test_pairwise_difference_of_many_queries_is_not_one_bar_each():
    """13,013 SVG bars took 9-12 s to draw in chromium: three filled paths and a WebGL layer instead."""
    many = pd.DataFrame({"a": np.linspace(0, 1, 5000), "b": np.linspace(1, 0, 5000)}, index=[f"q{i}" for i in range(5000)])
    fig = figs.pairwise_difference(many, "a", "b", "nDCG@10")
    assert [t.type for t in fig.data] == ["scatter", "scatter", "scattergl"] and len(fig.data[-1].x) == 5000


def test_pairwise_hover_names_the_query():
    fig = figs.pairwise_difference(V, "splade", "bm25", "RR@10", {"q2": "what is a bank", "q1": "x" * 80})
    assert [list(c) for c in fig.data[-1].customdata] == [["q2", "q2: what is a bank"], ["q3", "q3"], ["q4", "q4"],
                                                          ["q1", "q1: " + "x" * 59 + "…"]]  # sorted as the differences


def test_pairwise_scatter_by_hand():
    # splade (A, y) against bm25 (B, x): q1 (1, 0) B better; q2 (0, 1), q3 (.5, 1), q4 (0, .25) A better
    fig = figs.pairwise_scatter(V, "splade", "bm25", "RR@10")
    line, a_better, b_better, equal = fig.data
    assert (a_better.name, b_better.name, equal.name) == ("splade better (3)", "bm25 better (1)", "equal (0)")
    assert sorted(zip(a_better.x, a_better.y)) == [(0.0, 0.25), (0.0, 1.0), (0.5, 1.0)]
    assert list(zip(b_better.x, b_better.y)) == [(1.0, 0.0)] and b_better.customdata[0][0] == "q1"
    assert a_better.marker.color == figs.ranker_colours(["splade", "bm25"])["splade"]
    assert fig.layout.xaxis.title.text == "RR@10 of bm25" and fig.layout.yaxis.title.text == "RR@10 of splade"


def test_pairwise_scatter_one_marker_per_pair_of_values():
    """Three queries at (0, 0) share one marker, larger than a single query's, listing two and counting
    the rest; a click on it opens the first."""
    v = pd.DataFrame({"a": [0.0, 0.0, 0.0, 1.0], "b": [0.0, 0.0, 0.0, 0.5]}, index=["q9", "q7", "q8", "q1"])
    fig = figs.pairwise_scatter(v, "a", "b", "nDCG@10", {"q9": "nine"}, listed=2)
    _, a_better, _, equal = fig.data
    assert equal.name == "equal (3)" and list(equal.x) == [0.0] and list(equal.y) == [0.0]
    qid, n, hover = equal.customdata[0]
    assert (qid, int(n)) == ("q9", 3) and hover == "q9: nine<br>q7<br>… and 1 more"
    assert list(equal.marker.size) == [40] and list(a_better.marker.size) == [8]  # the most crowded pair, one query


def test_heatmap_hover_names_the_query():
    heat = figs.clustered_heatmap(V, "RR@10", texts={"q3": "river bank"})
    cells = heat.data[1]  # the clickable points over the cells carry the hover and the click's query id
    on_q3 = [c for c, y in zip(cells.customdata, cells.y) if y == "q3"]
    assert [c[:2] for c in on_q3] == [["q3", "q3: river bank"]] * V.shape[1]
    assert [c[2] for c in on_q3] == pytest.approx(list(V.loc["q3"]))
    assert heat.data[0].hoverinfo == "skip" and "customdata[1]" in cells.hovertemplate
    assert "click" not in cells.hovertemplate  # an exported figure promises no click
    hinted = figs.clustered_heatmap(V, "RR@10", click_hint="click: open it")
    assert "click: open it" in hinted.data[1].hovertemplate


def test_heatmap_keeps_the_clustered_order_of_numeric_ids():
    """Numeric-looking query ids (Cranfield's "1".."225") stay categories in the clustered order, and the
    invisible clickable points do not pad the axes beyond the cells."""
    values = V.set_axis(["30", "2", "100", "7"])
    heat = figs.clustered_heatmap(values, "RR@10")
    assert heat.layout.yaxis.type == "category" and list(heat.layout.yaxis.categoryarray) == list(heat.data[0].y)
    assert sorted(heat.data[0].y) == sorted(values.index) and list(heat.data[0].y) != sorted(values.index, key=int)
    assert list(heat.layout.yaxis.range) == [-0.5, 3.5] and list(heat.layout.xaxis.range) == [-0.5, 2.5]


def test_tasc_bars_skip_the_baseline(table):
    fig = figs.tasc_bars(table)
    assert list(fig.data[0].x) == ["dense", "splade"] and fig.data[0].y[0] == pytest.approx(0.3125)


def test_bubbles_size_by_mean_metric(table):
    fig = figs.tasc_bubbles(table, "max", "RR@10", "t")
    sizes = {t.text[0]: t.marker.size for t in fig.data}
    assert sizes["splade"] > sizes["dense"]  # mean 0.5625 vs 0.5


def test_heatmap_clusters_and_unsolved():
    heat = figs.clustered_heatmap(V, "RR@10")
    assert sorted(heat.data[0].y) == sorted(V.index)
    unsolved = figs.solved_by_count(V)
    assert list(unsolved.data[0].y)[0] == pytest.approx(0.0)  # q4: splade scores 0.25
    assert list(unsolved.data[0].customdata) == [0, 1, 2, 1]  # q4 by 1 ranker, q1 q2 by 2, q3 by 3


def test_exports(table):
    tex = tasc_latex(table, "RR@10")
    assert "\\begin{tabular}" in tex and "dense & 2020-06 & 0.5000 & 0.3125" in tex
    html = figure_html(figs.tasc_bars(table))
    assert "<html>" in html and "<script src=\"http" not in html  # plotly.js inlined: works offline


def test_latex_escapes_what_users_name(table):
    """Run names come from file names: "bm25&rm3_100%" stopped the compile (only "_" was escaped),
    and so did a measure such as nDCG(judged_only=True)@10 in the header and the caption."""
    from eqi_core.coverage.export import latex_text

    named = table.assign(ranker=["bm25&rm3_100%", "run#2 {x}", "a~b^c\\d"][: len(table)])
    tex = tasc_latex(named, "nDCG(judged_only=True)@10")
    assert "bm25\\&rm3\\_100\\% & " in tex and "run\\#2 \\{x\\} & " in tex
    assert "nDCG(judged\\_only=True)@10 &" in tex and "\\caption{Mean nDCG(judged\\_only=True)@10 and TaSC" in tex
    assert "TaSC max [95\\% CI]" in tex
    for name in named["ranker"]:  # the caption's escaper writes what pandas writes in the cells
        assert latex_text(name) in tex


def test_rankers_drawn_together_never_share_a_colour():
    from eqi_core.figures.theme import ranker_colours
    from eqi_core.rankers import REGISTRY

    assert len({s.colour for s in REGISTRY}) == len(REGISTRY)  # live MiniLM-L6 was TAS-B's orange
    live_and_runs = ["bm25", "bm25.dl19", "minilm-l6", "tasb", "splade-tiny", "splade-pp-ed", "my-run", "my-run2"]
    colours = ranker_colours(live_and_runs)
    assert len(set(colours.values())) == len(live_and_runs)
    assert colours["bm25"] == known_colour("bm25") and colours["tasb"] == known_colour("tasb")
    assert ranker_colours(["my-run"])["my-run"] == ranker_colours(["my-run", "zz"])["my-run"]  # stable when alone
    fig = figs.sorted_per_query(V.rename(columns={"dense": "tasb", "splade": "minilm-l6"}), "RR@10")
    assert len({t.line.color for t in fig.data}) == 3


def known_colour(name):
    from eqi_core.rankers import known

    return known(name).colour


def test_bubble_labels_move_apart_where_rankers_crowd():
    import numpy as np

    same_place = figs.label_spots(np.array([0.0, 0.0, 50.0]), np.array([0.5, 0.5, 0.5]), np.array([30.0, 30.0, 30.0]),
                                  ["splade-pp-ed", "openai-ada2", "alone"], y_range=(0.0, 1.0))
    assert same_place[0] != same_place[1] and same_place[2] == "top center"
    assert figs.label_spots(np.array([np.nan]), np.array([0.1]), np.array([20.0]), ["undated"]) == ["top center"]


def test_the_drawing_benchmark_draws_the_pages_figures_and_the_bars_they_replace():
    """eqi bench drawing: every figure of the page drawn by plotly.js in chromium, beside the baseline
    (one bar per query), in the same browser and run."""
    from pathlib import Path

    from eqi_core.bench import bench_drawing, coverage_figures_for_drawing
    from eqi_core.dashboard import CHROMIUM

    made = coverage_figures_for_drawing(300)
    assert len(made["baseline: pairwise_difference as one plotly bar per query"].data[0].x) == 300
    assert list(made["pairwise_difference"].data[-1].y) == sorted(made["pairwise_difference"].data[-1].y, reverse=True)
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian chromium is not installed (make test installs it with apt-get when run as root)")
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as thread:  # Playwright's sync API refuses a thread whose asyncio loop runs (the
        out = thread.submit(bench_drawing, n_queries=300, rounds=1).result()  # browser tests' session browser's)
    assert set(out["ours_median_s"]) == set(made) - {out["baseline"]}
    assert all(t > 0 for t in out["ours_median_s"].values()) and out["baseline_median_s"] > 0
    assert out["ratio_baseline_over_ours_pairwise_difference"] > 0 and out["queries"] == 300
