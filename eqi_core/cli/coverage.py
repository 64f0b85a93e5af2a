"""Ranker coverage: evaluate one ranker, TaSC between several."""
from __future__ import annotations

import json
from pathlib import Path

import typer

from eqi_core.cli._common import CollectionOpt, FigureFormatsOpt, RankerOpt, _file_to_write, _folder_to_write, _load, _store, _write_csv, app
from eqi_core.progress import tqdm_progress
from eqi_core.rankers import build_ranker, ranker_spec, run_all_queries
from eqi_core.store import atomic_write


@app.command()
def evaluate(
    collection: str = CollectionOpt,
    ranker: str = RankerOpt,
    run_file: Path | None = typer.Option(None, "--run", help="score a system's TREC run over the collection's queries "
                                         "instead of --ranker"),
    hardest: int = typer.Option(20, "--hardest", "-n", min=0, help="list this many of the queries it fails hardest"),
    output: Path | None = typer.Option(None, "--output", "-o", callback=_file_to_write, help="also write every judged query's measures (CSV)"),
    as_json: bool = typer.Option(False, "--json", help="print JSON lines instead of a table"),
) -> None:
    """One ranker over every judged query: mean nDCG@10, RR@10 and R@100, and the queries it fails
    hardest with where their most relevant passage ranks, as the Collection page's "Where it fails"."""
    from eqi_core.coverage.hardest import check_judged, ranker_effectiveness
    from eqi_core.runs import read_run

    store = _store()
    c = _load(collection, store)
    check_judged(c)  # before any indexing
    if run_file is not None:
        result = read_run(run_file)
        name = run_file.name
    else:
        r = build_ranker(ranker, c, store, progress=tqdm_progress(f"indexing for {ranker}", "passage"))
        result = run_all_queries(r, c, store, progress=tqdm_progress(f"searching {len(c.queries):,} queries", "query"))
        name = ranker
    eff = ranker_effectiveness(result, c, name)
    for note in eff.notes:
        typer.echo(f"note: {note}", err=True)
    listed = eff.hardest(hardest)
    if as_json:
        typer.echo(json.dumps({"ranker": name, "queries": len(eff.per_query), **{f"mean_{m}": round(v, 6) for m, v in
                                                                                  eff.means.items()},
                               "share_ndcg10_zero": round(eff.share_failed(), 6)}))
        for row in listed.to_dict("records"):
            rank = row["gold rank"]
            typer.echo(json.dumps({k.replace(" ", "_"): v for k, v in row.items() if k != "gold rank"}
                                  | {"gold_rank": None if rank != rank else int(rank)}))
    else:
        means = " · ".join(f"{m} {v:.4f}" for m, v in eff.means.items())
        typer.echo(f"# {name} on {c.name}: {len(eff.per_query):,} judged queries; mean {means}; "
                   f"{eff.share_failed():.1%} score nDCG@10 = 0")
        if len(listed):
            typer.echo(f"# the {len(listed)} it fails hardest (gold rank: ties broken as the measures break them, "
                       f"score then passage id descending; -: not in its top {eff.depth})")
            shown = listed.assign(**{"gold rank": ["-" if r != r else int(r) for r in listed["gold rank"]],
                                     "query": listed["query"].str.slice(0, 60)})
            typer.echo(shown.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    if output is not None:
        _write_csv(eff.per_query, output, index=False)
        typer.echo(f"wrote {len(eff.per_query):,} queries' measures to {output}", err=True)


@app.command()
def tasc(
    qrels: Path | None = typer.Option(None, "--qrels", "-q", help="TREC or TSV qrels (default: the collection's)"),
    run_files: list[Path] = typer.Option([], "--run", help="a TREC run file; repeat for each ranker"),
    collection: str | None = typer.Option(None, "--collection", "-c", help="collection for live rankers / qrels"),
    rankers: list[str] = typer.Option([], "--ranker", "-r", help="a live ranker id; repeat (needs --collection)"),
    measure: str = typer.Option("nDCG@10", "--measure", "-m", help="ir_measures or trec_eval name, e.g. ndcg_cut_10, RR@10"),
    mode: str = typer.Option("chronological", "--mode", help="chronological or all-others"),
    baseline: str | None = typer.Option(None, "--baseline", help="reference of the earliest ranker (e.g. bm25)"),
    release: list[str] = typer.Option([], "--release", help="NAME=YYYY-MM release date; repeat (known rankers have defaults)"),
    n_boot: int = typer.Option(1000, "--bootstrap", min=100, max=100_000, help="bootstrap resamples for the CIs"),
    correction: str = typer.Option("holm", "--correction", help="paired tests' multiple-testing correction: holm, bonferroni or bh"),
    output_dir: Path | None = typer.Option(None, "--output-dir", "-o", callback=_folder_to_write,
                                           help="write CSV, LaTeX, HTML and PNG figures (--figure-formats: SVG, PDF) and the HTML report here"),
    query: str | None = typer.Option(None, "--query", "-Q", help="drill into one query id: its metric per ranker, top 10 "
                                     "side by side and every listed passage (default in the report: the most disputed)"),
    figure_formats: str = FigureFormatsOpt,
) -> None:
    """Per-query metric matrix and TaSC (max and mean) for runs and/or live rankers, with paired t and
    Wilcoxon tests between every pair; the dashboard's comparison report with -o."""
    from eqi_core.coverage import compute_matrix, tasc_table
    from eqi_core.coverage.drilldown import query_drilldown, query_judgments
    from eqi_core.coverage.per_query import parse_share_measure
    from eqi_core.coverage.significance import CORRECTIONS, formatted_tests, pairwise_tests, readable_tests
    from eqi_core.coverage.sources import combine_runs, live_runs, load_run_files
    from eqi_core.coverage.tasc import reference_sets, tasc_weights
    from eqi_core.errors import DataError as _DataError
    from eqi_core.figure_export import figure_formats as _formats
    from eqi_core.loaders.trec import read_qrels
    from eqi_core.rankers import release_date_for
    from eqi_core.reports import coverage_report

    # Every check before any ranking (a live dense ranker over a large collection takes minutes):
    # nothing is printed or written on bad input.
    if correction not in CORRECTIONS:
        raise _DataError(f"--correction {correction!r}: expected one of {', '.join(CORRECTIONS)}")
    formats = _formats(figure_formats)
    parse_share_measure(measure)
    twice = next((r for i, r in enumerate(rankers) if r in rankers[:i]), None)
    if twice is not None:
        raise _DataError(f"--ranker {twice}: named twice; name each ranker once")
    for rid in rankers:
        ranker_spec(rid)
    store = _store()
    files = load_run_files(list(run_files))
    coll = _load(collection, store) if collection else None
    if rankers and coll is None:
        raise _DataError("--ranker needs --collection (the rankers run that collection's queries)")
    if qrels is not None:
        judgments = read_qrels(qrels)
    elif coll is not None:
        judgments = coll.qrels
    else:
        raise _DataError("no judgments: give --qrels FILE or --collection SPEC")
    names = list(combine_runs(dict.fromkeys(rankers), files))  # the names the rankings will have
    dates = {name: release_date_for(name) for name in names}
    for item in release:
        name, sep, date = item.partition("=")
        if not sep or name not in names:
            raise _DataError(f"--release {item!r}: expected NAME=YYYY-MM with NAME one of {', '.join(names)}")
        dates[name] = date
    reference_sets(names, mode, dates, baseline)  # two or more rankings, the mode, every date, the baseline
    units = {"indexing": "passage", "ranking": "query"}
    live = live_runs(coll, list(rankers), store,
                     progress_for=lambda rid, stage: tqdm_progress(f"{rid}: {stage}", units[stage])) if rankers else {}
    runs = combine_runs(live, files)
    matrix = compute_matrix(runs, judgments, measure)
    if query is not None and query not in matrix.values.index:
        raise _DataError(f"--query {query!r}: not one of the {len(matrix.values):,} judged queries with a relevant "
                         f"passage (e.g. {', '.join(map(str, matrix.values.index[:3]))})")
    table, results = tasc_table(matrix.values, mode, dates, baseline, n_boot=n_boot)
    for note in matrix.notes:
        typer.echo(f"note: {note}", err=True)
    typer.echo(f"{len(matrix.values):,} queries, measure {matrix.measure}, mode {mode}")
    typer.echo(table.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    tests = pairwise_tests(matrix.values, correction, order=list(table["ranker"]))
    typer.echo(f"\npaired tests ({correction} correction; significance says nothing about which queries each covers)")
    typer.echo(formatted_tests(readable_tests(tests, correction)).to_string(index=False))
    if query is None and output_dir is None:  # the drill-down is printed with --query and written with -o only
        return
    order = list(table["ranker"])
    query_text = coll.query_text if coll is not None else {}
    focus = query if query is not None else matrix.most_disputed()
    drilldown = query_drilldown({r: runs[r] for r in order}, matrix.values, tasc_weights(results),
                                query_judgments(judgments, focus), focus, query_text.get(focus, ""),
                                coll.display_text if coll is not None else (lambda _doc: None), matrix.measure)
    if query is not None:
        typer.echo(f"\nquery {focus}: {drilldown.query}")
        typer.echo(drilldown.metrics.to_string(float_format=lambda v: f"{v:.4f}"))
        typer.echo("\ntop 10 side by side (grades from the qrels)")
        typer.echo(drilldown.side.fillna("-").to_string(index=False))
        listed = drilldown.passages.assign(passage=drilldown.passages["passage"].str.slice(0, 60))
        typer.echo(f"\n{len(listed)} passages listed: each ranker's rank in its full list (- : not in it)")
        typer.echo(listed.astype(object).where(listed.notna(), "-").to_string(index=False))
    if output_dir:
        from eqi_core.coverage.export import tasc_latex
        from eqi_core.figure_export import write_figure_files
        from eqi_core.figures import coverage as figs

        output_dir.mkdir(parents=True, exist_ok=True)
        _write_csv(matrix.values, output_dir / "matrix.csv")
        _write_csv(table, output_dir / "tasc.csv", index=False)
        _write_csv(tests, output_dir / "significance.csv", index=False)
        atomic_write(output_dir / "tasc.tex", tasc_latex(table, matrix.measure))
        in_table_order = matrix.values[order]  # legends as the TaSC table lists the rankers
        latest, earliest = order[-1], order[0]  # the page's Pairwise tab opens on this pair
        figures = {"sorted": figs.sorted_per_query(in_table_order, matrix.measure),
                   **({"pairwise": figs.pairwise_difference(matrix.values, latest, earliest, matrix.measure, query_text),
                       "pairwise_scatter": figs.pairwise_scatter(matrix.values, latest, earliest, matrix.measure, query_text)}
                      if len(order) > 1 else {}),
                   **figs.tasc_figures(table, matrix.measure), "unsolved": figs.solved_by_count(matrix.values)}
        write_figure_files(figures, output_dir, formats)
        meta = {"collection": coll.name if coll is not None else "—",
                "collection fingerprint": coll.fingerprint if coll is not None else "—",
                "qrels": str(qrels) if qrels is not None else "the collection's", "rankings": ", ".join(runs),
                "measure": matrix.measure, "mode": mode, "baseline": baseline or "—",
                "release dates": ", ".join(f"{r}={d}" for r, d in dates.items()),
                "bootstrap": f"{n_boot} resamples of queries, 95% percentile", "multiple-testing correction": correction}
        report = coverage_report(table, matrix.values, matrix.measure, meta,
                                 list(figures.values()),
                                 matrix.notes, {r: list(matrix.solved_only_by(r)) for r in runs}, query_text,
                                 readable_tests(tests, correction), drilldown)
        atomic_write(output_dir / "report.html", report)
        typer.echo(f"wrote matrix.csv, tasc.csv, significance.csv, tasc.tex, {len(figures)} figures (HTML + PNG) and "
                   f"report.html (query {focus} drilled into) to {output_dir}")
