"""The ``eqi`` command: collections, indexing, search, runs and benchmarks."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Optional

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import typer

from eqi_core.collection import DataError
from eqi_core.loaders import discover_collections, load_collection
from eqi_core.loaders.registry import DEFAULT_SPEC, data_roots
from eqi_core.progress import tqdm_progress
from eqi_core.rankers import DEFAULT_RANKER, RANKERS, build_ranker, run_all_queries
from eqi_core.store import ArtifactStore

app = typer.Typer(help="Search-transparency workbench: collections, rankers, exposure, coverage.",
                  no_args_is_help=True, pretty_exceptions_enable=False, add_completion=False)
collections_app = typer.Typer(help="List and inspect collections.", no_args_is_help=True)
bench_app = typer.Typer(help="Benchmarks: JSON results, ours against a named baseline in the same run.",
                        no_args_is_help=True)
app.add_typer(collections_app, name="collections")
app.add_typer(bench_app, name="bench")

CollectionOpt = typer.Option(DEFAULT_SPEC, "--collection", "-c",
                             help="wordnet, wordnet:full, wordnet:N, beir:PATH[#split], msmarco:PATH, irds:ID or a path")
RankerOpt = typer.Option(DEFAULT_RANKER, "--ranker", "-r", help=f"one of {', '.join(RANKERS)} or st:<model folder>")


def _store() -> ArtifactStore:
    return ArtifactStore()


def _echo_json(obj: dict, output: Optional[Path]) -> None:
    text = json.dumps(obj, indent=2)
    typer.echo(text)
    if output:
        output.parent.mkdir(parents=True, exist_ok=True)
        tmp = output.with_suffix(output.suffix + ".part")
        tmp.write_text(text + "\n")
        tmp.replace(output)


@collections_app.command("list")
def collections_list() -> None:
    """Collections the dashboard offers (WordNet + BEIR/MS MARCO folders under EQI_DATA_ROOTS)."""
    for label, spec in discover_collections().items():
        typer.echo(f"{spec}\t{label}")
    if not data_roots():
        typer.echo("# set EQI_DATA_ROOTS=/path/a:/path/b to list your own BEIR / MS MARCO folders", err=True)


@collections_app.command("inspect")
def collections_inspect(spec: str = typer.Argument(DEFAULT_SPEC, help="collection spec")) -> None:
    """Counts, fingerprint and data notes of one collection."""
    c = load_collection(spec, _store())
    for key, value in c.stats().items():
        typer.echo(f"{key:26s} {value}")
    for note in c.notes:
        typer.echo(f"note: {note}")


@app.command()
def index(collection: str = CollectionOpt, ranker: str = RankerOpt) -> None:
    """Encode and index a collection for a ranker (cached in the store under EQI_HOME)."""
    store = _store()
    c = load_collection(collection, store)
    r = build_ranker(ranker, c, store, progress=tqdm_progress(f"indexing {c.name} for {ranker}", "passage"))
    typer.echo(f"indexed {len(c.passages):,} passages of {c.name} for {r.name} in {store.root}")


@app.command()
def search(
    query: list[str] = typer.Argument(..., help="one or more query texts"),
    collection: str = CollectionOpt,
    ranker: str = RankerOpt,
    k: int = typer.Option(10, "-k", min=1, max=10_000, help="results per query"),
    as_json: bool = typer.Option(False, "--json", help="print JSON lines instead of a table"),
) -> None:
    """Search the collection; logged queries show each result's judged grade."""
    store = _store()
    c = load_collection(collection, store)
    r = build_ranker(ranker, c, store, progress=tqdm_progress(f"indexing for {ranker}", "passage"))
    text_by_doc = dict(zip(c.passages["doc_id"], c.passages["text"]))
    for q in query:
        qid = c.find_query(q)
        grades = c.judgments.get(qid, {}) if qid else {}
        hits = r.search([q], k=k).frame
        if not as_json:
            typer.echo(f"# {q!r}" + (f" (logged query {qid}, {len(grades)} judged)" if qid else " (not a logged query)"))
        for row in hits.itertuples(index=False):
            grade = grades.get(row.doc_id)
            if as_json:
                typer.echo(json.dumps({"query": q, "rank": row.rank, "doc_id": row.doc_id, "score": row.score,
                                       "grade": grade, "text": text_by_doc.get(row.doc_id, "")}))
            else:
                g = "-" if grade is None else str(grade)
                typer.echo(f"{row.rank:>4} {row.score:8.4f}  grade {g}  {row.doc_id:14s} {text_by_doc.get(row.doc_id, '')[:90]}")


@app.command()
def run(
    output: Path = typer.Option(..., "--output", "-o", help="TREC run file to write"),
    collection: str = CollectionOpt,
    ranker: str = RankerOpt,
    k: int = typer.Option(100, "-k", min=1, max=10_000, help="depth per query"),
) -> None:
    """Run every query of the collection and write a TREC run file."""
    store = _store()
    c = load_collection(collection, store)
    r = build_ranker(ranker, c, store, progress=tqdm_progress(f"indexing for {ranker}", "passage"))
    result = run_all_queries(r, c, store, k=k, progress=tqdm_progress(f"searching {len(c.queries):,} queries", "query"))
    result.to_trec(output, tag=ranker)
    typer.echo(f"wrote {len(result):,} lines for {len(result.query_ids):,} queries to {output}")


@app.command()
def tasc(
    qrels: Optional[Path] = typer.Option(None, "--qrels", "-q", help="TREC or TSV qrels (default: the collection's)"),
    run_files: list[Path] = typer.Option([], "--run", help="a TREC run file; repeat for each ranker"),
    collection: Optional[str] = typer.Option(None, "--collection", "-c", help="collection for live rankers / qrels"),
    rankers: list[str] = typer.Option([], "--ranker", "-r", help="a live ranker id; repeat (needs --collection)"),
    measure: str = typer.Option("nDCG@10", "--measure", "-m", help="ir_measures or trec_eval name, e.g. ndcg_cut_10, RR@10"),
    mode: str = typer.Option("chronological", "--mode", help="chronological or all-others"),
    baseline: Optional[str] = typer.Option(None, "--baseline", help="reference of the earliest ranker (e.g. bm25)"),
    release: list[str] = typer.Option([], "--release", help="NAME=YYYY-MM release date; repeat (known rankers have defaults)"),
    n_boot: int = typer.Option(1000, "--bootstrap", min=100, max=100_000, help="bootstrap resamples for the CIs"),
    output_dir: Optional[Path] = typer.Option(None, "--output-dir", "-o", help="write CSV, LaTeX, HTML and PNG figures here"),
) -> None:
    """Per-query metric matrix and TaSC (max and mean) for runs and/or live rankers."""
    from eqi_core.collection import DataError as _DataError
    from eqi_core.coverage import compute_matrix, tasc_table
    from eqi_core.coverage.sources import live_runs, load_run_files, release_date_for
    from eqi_core.loaders.trec import read_qrels

    store = _store()
    runs = load_run_files(list(run_files))
    coll = load_collection(collection, store) if collection else None
    if rankers:
        if coll is None:
            raise _DataError("--ranker needs --collection (the rankers run that collection's queries)")
        runs.update(live_runs(coll, list(rankers), store, progress=tqdm_progress("ranking", "query")))
    if qrels is not None:
        judgments = read_qrels(qrels)
    elif coll is not None:
        judgments = coll.qrels
    else:
        raise _DataError("no judgments: give --qrels FILE or --collection SPEC")
    dates = {name: release_date_for(name) for name in runs}
    for item in release:
        name, sep, date = item.partition("=")
        if not sep or name not in runs:
            raise _DataError(f"--release {item!r}: expected NAME=YYYY-MM with NAME one of {', '.join(runs)}")
        dates[name] = date
    matrix = compute_matrix(runs, judgments, measure)
    table, _ = tasc_table(matrix.values, mode, dates, baseline, n_boot=n_boot)
    for note in matrix.notes:
        typer.echo(f"note: {note}", err=True)
    typer.echo(f"{len(matrix.values)} queries, measure {matrix.measure}, mode {mode}")
    typer.echo(table.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    if output_dir:
        from eqi_core.coverage.export import figure_html, tasc_latex, write_figure
        from eqi_core.figures import coverage as figs

        output_dir.mkdir(parents=True, exist_ok=True)
        matrix.values.to_csv(output_dir / "matrix.csv")
        table.to_csv(output_dir / "tasc.csv", index=False)
        (output_dir / "tasc.tex").write_text(tasc_latex(table, matrix.measure))
        figures = {"sorted": figs.sorted_per_query(matrix.values, matrix.measure), **figs.tasc_figures(table, matrix.measure),
                   "unsolved": figs.solved_by_count(matrix.values)}
        for name, fig in figures.items():
            (output_dir / f"{name}.html").write_text(figure_html(fig))
            write_figure(fig, output_dir / f"{name}.png")
        typer.echo(f"wrote matrix.csv, tasc.csv, tasc.tex and {len(figures)} figures (HTML + PNG) to {output_dir}")


@bench_app.command("encode")
def bench_encode_cmd(
    collection: str = CollectionOpt,
    n: int = typer.Option(2000, "--n", min=10, help="passages to encode"),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="also write the JSON here"),
) -> None:
    """Passages/s of the default encoder vs sentence-transformers' own encode (target ratio >= 0.9)."""
    from eqi_core.bench import bench_encode

    _echo_json(bench_encode(load_collection(collection, _store()), n=n), output)


@bench_app.command("dense")
def bench_dense_cmd(
    collection: str = CollectionOpt,
    queries: int = typer.Option(2000, "--queries", min=1, help="queries to search"),
    k: int = typer.Option(100, "-k", min=1, max=10_000),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="also write the JSON here"),
) -> None:
    """Exact top-k search time vs faiss.IndexFlatIP on the same embeddings (target >= 2x)."""
    from eqi_core.bench import bench_dense

    store = _store()
    _echo_json(bench_dense(load_collection(collection, store), store, n_queries=queries, k=k), output)


@bench_app.command("tasc")
def bench_tasc_cmd(
    queries: int = typer.Option(7000, "--queries", min=10),
    rankers: int = typer.Option(6, "--rankers", min=2),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="also write the JSON here"),
) -> None:
    """Time to compute the per-query matrix + TaSC (target < 5 s for 6 rankers x 7k queries)."""
    from eqi_core.bench import bench_tasc

    _echo_json(bench_tasc(n_queries=queries, n_rankers=rankers), output)


def main() -> None:
    """Console entry point: bad input is one line on stderr and exit code 2, never a traceback."""
    try:
        app()
    except DataError as exc:
        typer.echo(f"error: {exc}", err=True)
        sys.exit(2)
    except (FileNotFoundError, ModuleNotFoundError) as exc:
        typer.echo(f"error: {exc}", err=True)
        sys.exit(2)


if __name__ == "__main__":
    main()
