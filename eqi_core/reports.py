"""Self-contained HTML audit reports: one file, plotly.js inlined once, no network needed to open it.

Each report records what makes it reproducible: the collection and ranker fingerprints, the
parameters, and the tool version.
"""
from __future__ import annotations

import html
import time
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING

import pandas as pd
import plotly.graph_objects as go

from eqi_core.collection import readable

if TYPE_CHECKING:
    from eqi_core.coverage.drilldown import QueryDrilldown

CSS = """
body{font-family:Inter,Helvetica,Arial,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
h1{font-size:1.7em;margin-bottom:.2em}h2{font-size:1.25em;margin-top:1.8em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:.9em;margin:.6em 0}td,th{border:1px solid #ddd;padding:.25em .6em;text-align:left}
th{background:#f4f4f4}.meta td:first-child{font-weight:600}blockquote{border-left:4px solid #4C78A8;margin:0;padding:.3em 1em;background:#f7f9fc}
.note{color:#555;font-size:.9em}
"""


def _count(n: int, noun: str, plural: str | None = None) -> str:
    """'1 query', '2,120 queries'."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"


def tool_version() -> str:
    try:
        return version("eqi-workbench")
    except PackageNotFoundError:
        return "unknown"


def _table(frame: pd.DataFrame, index: bool = False, floatfmt: str = "{:.4f}", empty: str = "None.") -> str:
    """An HTML table; ``empty``'s sentence instead of a header with no rows."""
    if frame.empty:
        return f"<p class='note'>{html.escape(empty)}</p>"
    whole = [c for c, t in frame.dtypes.items() if isinstance(t, pd.Int64Dtype)]  # na_rep misses their NA: <NA>
    if whole:
        frame = frame.assign(**{c: frame[c].astype(object).where(frame[c].notna(), "—") for c in whole})
    return frame.to_html(index=index, border=0, float_format=lambda v: floatfmt.format(v), na_rep="—", escape=True)


def _figures(figures: list[go.Figure]) -> list[str]:
    return [fig.to_html(full_html=False, include_plotlyjs=(i == 0), config={"displaylogo": False})
            for i, fig in enumerate(figures)]


def _page(title: str, meta: dict, body: list[str]) -> str:
    meta = {**meta, "generated": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "tool": f"eqi-workbench {tool_version()}"}
    rows = "".join(f"<tr><td>{html.escape(str(k))}</td><td>{html.escape(str(v))}</td></tr>" for k, v in meta.items())
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{CSS}</style></head><body><h1>{html.escape(title)}</h1>"
            f"<h2>How to reproduce</h2><table class='meta'>{rows}</table>{''.join(body)}</body></html>")


def exposure_report(result, meta: dict, figures: list[go.Figure], retrievability: dict | None = None,
                    change: pd.DataFrame | None = None, change_line: str = "",
                    shown: list[tuple[str, str, str, pd.DataFrame]] = (), generated=None) -> str:
    """Audit report for one passage: exact and approximate exposing queries, RELQ, charts; with
    ``change`` (``exposure_change``), who keeps, gains and loses sight of it under another ranker;
    with ``shown`` ((query id, query, ``what_a_query_shows_says``, ``what_a_query_shows``) each), what
    the queries selected on the page (``eqi exposure --show``) show; with ``generated``
    (``GeneratedExposure``), the decoded queries no log holds yet. What the auditor saw, in one file."""
    body = [f"<h2>Passage</h2><blockquote>{html.escape(readable(result.text))}</blockquote>"]
    for note in result.notes:
        body.append(f"<p class='note'>{html.escape(note)}</p>")
    if result.exact is not None:
        top10 = int((result.exact["rank"] <= 10).sum())
        body.append(f"<p><b>{len(result.exact)}</b> logged queries show this passage in their top {result.n_qd}; "
                    f"<b>{top10}</b> in their top 10.</p>")
    if retrievability:
        body.append("<p>" + html.escape(
            f"Retrievability r(d) = {retrievability['r']} at cutoff {retrievability['cutoff']}; "
            f"{retrievability['share_below']:.1%} of passages are less retrievable; Gini of the collection "
            f"{retrievability['gini']:.3f}.") + "</p>")
    if result.relq is not None:
        body.append("<h2>RELQ of each approximate method</h2>" + _table(result.relq, index=True, floatfmt="{:.3f}"))
    body.append("<h2>Figures</h2>" + "".join(_figures(figures)))
    if result.exact is not None:
        from eqi_core.matching import with_shared_words, word_overlap_line

        exact = with_shared_words(result.exact, result.text)
        body.append("<h2>Exposing queries (exact, brute force)</h2>"
                    + (f"<p>{html.escape(word_overlap_line(exact, result.text))}</p>" if len(exact) else "")
                    + _table(exact, empty=f"No logged query shows this passage in its top {result.n_qd}."))
    if result.lists:
        body.append(f"<p class='note'>In the lists below, rank is the passage's exact rank for the found query; "
                    f"— where that query does not show it in its top {result.n_qd}.</p>")
    for name, frame in result.lists.items():
        listed = frame[["position", "query_id", "query", "score", "rank"]].astype({"rank": "Int64"})  # 1, not 1.0000
        body.append(f"<h2>{html.escape(name)}</h2>" + _table(listed, empty="No logged query found."))
    for query_id, query, says, top in shown:
        body.append(f"<h2>What “{html.escape(query)}” ({html.escape(query_id)}) shows</h2>"
                    f"<p>{html.escape(says[0].upper() + says[1:])}.</p>" + _table(top))
    if change is not None:
        body.append(f"<h2>Under another ranker</h2><p>{html.escape(change_line)}</p>"
                    "<p class='note'>—: that ranker does not show the passage in its top results for the query.</p>"
                    + _table(change))
    if generated is not None:
        body.append(_generated_section(generated))
    return _page("Exposure audit report", meta, body)


def _generated_section(g) -> str:
    """Generative exposure as the page's "Queries no log holds yet" panel shows it: the three counts,
    then every decoded query with the passage's exact rank for it."""
    n = len(g.unseen_exposing)
    table = g.candidates.assign(rank=g.candidates["rank"].map(lambda r: "—" if r == float("inf") else int(r)),
                                in_log=g.candidates["in_log"].map({True: "yes", False: "no"}),
                                exposes=g.candidates["exposes"].map({True: "yes", False: "no"}))
    return ("<h2>Queries no log holds yet</h2>"
            + "".join(f"<p class='note'>{html.escape(note)}</p>" for note in g.notes)
            + f"<p><b>{n}</b> decoded {'query' if n == 1 else 'queries'} the log does not hold "
              f"{'shows' if n == 1 else 'show'} this passage in {'its' if n == 1 else 'their'} top {g.n_qd}: "
              f"exposure {g.logged_total:,} from the log, "
              f"+{g.generated_total:,} from them ({g.logged_total + g.generated_total:,} in all).</p>"
            + "<p class='note'>rank: the passage's exact rank for the decoded query (—: not retrieved).</p>"
            + "<p class='note'>in the log: the log holds the decoded query, word for word or reworded "
              "(logged as: which query).</p>"
            + _table(table.rename(columns={"in_log": "in the log", "logged_as": "logged as"})))


def coverage_report(table: pd.DataFrame, values: pd.DataFrame, measure: str, meta: dict, figures: list[go.Figure],
                    notes: list[str], solved_only: dict[str, list[str]], query_text: dict[str, str],
                    tests: pd.DataFrame | None = None, drilldown: QueryDrilldown | None = None) -> str:
    """Ranker comparison report: TaSC table, figures, the paired tests (``readable_tests``), the query
    drilled into on the page (its metrics, top 10 side by side, every listed passage's text and ranks),
    unsolved and uniquely solved queries."""
    from eqi_core.coverage.significance import formatted_tests

    unsolved = values.index[(values <= 0).all(axis=1)]
    body = [f"<p>{_count(len(values), 'query', 'queries')}, per-query {html.escape(measure)}.</p>"]
    body += [f"<p class='note'>{html.escape(n)}</p>" for n in notes]
    body.append("<h2>TaSC and mean metric</h2>" + _table(table))
    body.append("<h2>Figures</h2>" + "".join(_figures(figures)))
    if tests is not None and len(tests):
        body.append("<h2>Paired significance tests</h2><p class='note'>A significant difference in means says nothing "
                    "about which queries each ranker covers: read it next to TaSC.</p>" + _table(formatted_tests(tests)))
    if drilldown is not None:
        d = drilldown
        body.append(f"<h2>One query across rankers: {html.escape(d.query_id)}</h2>"
                    f"<p><b>{html.escape(d.query)}</b></p>" + _table(d.metrics, index=True)
                    + "<h3>Top 10 side by side (grades from the qrels)</h3>" + _table(d.side)
                    + f"<h3>The {_count(len(d.passages), 'passage')} listed: each ranker's rank in its full list "
                    "(—: not in it), highest grade first</h3>"
                    + _table(d.passages))
    body.append(f"<h2>Unsolved by every ranker ({_count(len(unsolved), 'query', 'queries')})</h2>" + _table(
        pd.DataFrame({"query_id": unsolved, "query": [query_text.get(q, "") for q in unsolved]})))
    for ranker, queries in solved_only.items():
        body.append(f"<h2>Solved only by {html.escape(ranker)} ({_count(len(queries), 'query', 'queries')})</h2>" + _table(
            pd.DataFrame({"query_id": queries, "query": [query_text.get(q, "") for q in queries],
                          measure: [values.loc[q, ranker] for q in queries]})))
    return _page("Ranker coverage report", meta, body)
