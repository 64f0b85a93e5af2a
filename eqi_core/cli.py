"""The ``eqi`` command: collections, indexing, search, runs and benchmarks."""
from __future__ import annotations

import json
import math
import os
import re
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# the CLI reports its own progress; transformers' "Loading weights" bar at every model load is noise
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")

import typer

from eqi_core.decoder.corpus import CORPUS_VERSION
from eqi_core.errors import DataError, FigureExportError, MissingDependency
from eqi_core.loaders import discover_collections, load_collection
from eqi_core.loaders.registry import DEFAULT_SPEC, data_roots
from eqi_core.progress import tqdm_progress
from eqi_core.rankers import DEFAULT_RANKER, RANKERS, build_ranker, embedding_dimension, load_encoder, ranker_spec, run_all_queries
from eqi_core.store import ArtifactStore, atomic_copy, atomic_path, atomic_write
from eqi_core.suggestion.rerank import PICK_PENALTY, POOL_SAMPLES

app = typer.Typer(help="Search-transparency workbench: collections and rankers, exposure, ranker coverage, a dense "
                       "retriever's latent space and query suggestions.",
                  no_args_is_help=True, pretty_exceptions_enable=False, add_completion=False)
collections_app = typer.Typer(help="List and inspect collections.", no_args_is_help=True)
bench_app = typer.Typer(help="Benchmarks: JSON results, ours against a named baseline in the same run.",
                        no_args_is_help=True)
app.add_typer(collections_app, name="collections", rich_help_panel="Collections and search")
app.add_typer(bench_app, name="bench", rich_help_panel="Benchmarks and maintenance")

CollectionOpt = typer.Option(DEFAULT_SPEC, "--collection", "-c",
                             help="wordnet, wordnet:full, wordnet:N, beir:PATH[#split], msmarco:PATH, irds:ID or a path")
RankerOpt = typer.Option(DEFAULT_RANKER, "--ranker", "-r", help=f"one of {', '.join(RANKERS)} or st:<model folder>")
FigureFormatsOpt = typer.Option("png", "--figure-formats", help="the figures' image formats beside their HTML, "
                                "comma-separated: png (3x, slides), svg or pdf (vector, papers), jpg, webp")


def _nearest_existing(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def _check_writable_place(option: str, path: Path) -> None:
    """The folder a file or folder would be made in must be a folder this process may write into."""
    place = _nearest_existing(path.parent if path.parent != Path() else Path.cwd())
    if not place.is_dir():
        raise DataError(f"{option} {path}: {place} is a file; expected a folder to write into")
    if not os.access(place, os.W_OK | os.X_OK):
        raise DataError(f"{option} {path}: cannot write into {place} (permission denied)")


def _file_to_write(ctx: typer.Context, param: typer.CallbackParam, value: Path | None) -> Path | None:
    """An output file option, checked before any work: a folder there, or nowhere to write it, is one
    line now rather than a traceback after minutes of ranking or encoding."""
    if value is None or ctx.resilient_parsing:
        return value
    option = param.opts[0]
    if value.is_dir():
        raise DataError(f"{option} {value}: is a folder; expected a file to write")
    _check_writable_place(option, value)
    return value


def _decoder_folder(ctx: typer.Context, param: typer.CallbackParam, value: Path | None) -> Path | None:
    """A ``--decoder`` folder: a note on stderr, before any work, when a natural decoder has no word list."""
    if value is not None and not ctx.resilient_parsing:
        from eqi_core.decoder.natural import missing_word_list_note

        note = missing_word_list_note(value)
        if note:
            typer.echo(f"note: {note}", err=True)
    return value


def _folder_to_write(ctx: typer.Context, param: typer.CallbackParam, value: Path | None) -> Path | None:
    """An output folder option, checked before any work (as ``_file_to_write``)."""
    if value is None or ctx.resilient_parsing:
        return value
    option = param.opts[0]
    if value.exists() and not value.is_dir():
        raise DataError(f"{option} {value}: is a file; expected a folder to write into")
    _check_writable_place(option, value)
    return value


def _cards_to_update(ctx: typer.Context, param: typer.CallbackParam, value):
    """``--write-card`` folders, checked before the evaluation they receive (tens of minutes): each
    must hold a readable card.json that this process may replace."""
    if value is None or ctx.resilient_parsing:
        return value
    for folder in value if isinstance(value, list) else [value]:
        card = Path(folder) / "card.json"
        try:
            json.loads(card.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise DataError(f"{param.opts[0]} {folder}: cannot read its card.json "
                            f"({getattr(exc, 'strerror', None) or exc}); expected a checkpoint folder") from None
        if not os.access(card.parent, os.W_OK | os.X_OK):
            raise DataError(f"{param.opts[0]} {folder}: cannot write into it (permission denied)")
    return value


def _store() -> ArtifactStore:
    return ArtifactStore()


_QUERY_LOG: dict[str, Path | None] = {"path": None}


@app.callback()
def _options(log: Path | None = typer.Option(
        None, "--log", help="search the collection's passages with this query log instead of its own queries "
        "(TSV qid<TAB>text[<TAB>count], CSV or JSONL); same as the spec COLLECTION+log:FILE")) -> None:
    """Search-transparency workbench: collections, rankers, exposure, coverage."""
    import pandas as pd

    _QUERY_LOG["path"] = log.expanduser().resolve() if log else None
    pd.set_option("display.unicode.east_asian_width", True)  # tables line up under CJK text and emoji, two columns wide


def _load(spec: str, store: ArtifactStore | None = None):
    """The collection of a spec, with the global --log applied."""
    from eqi_core.loaders.registry import LOG_SEPARATOR

    if _QUERY_LOG["path"] is not None and LOG_SEPARATOR not in spec:
        spec = f"{spec}{LOG_SEPARATOR}{_QUERY_LOG['path']}"
    return load_collection(spec, store)


def _write_csv(frame, path: Path, **to_csv) -> None:
    """A CSV output, written whole or not at all (a killed run leaves no half file for a reader)."""
    with atomic_path(path) as tmp:
        frame.to_csv(tmp, **to_csv)


def _echo_json(obj: dict, output: Path | None) -> None:
    text = json.dumps(obj, indent=2)
    typer.echo(text)
    if output:
        atomic_write(output, text + "\n")


@collections_app.command("list")
def collections_list() -> None:
    """Collections the dashboard offers (WordNet + BEIR/MS MARCO folders under EQI_DATA_ROOTS)."""
    for label, spec in discover_collections().items():
        typer.echo(f"{spec}\t{label}")
    if not data_roots():
        typer.echo("# set EQI_DATA_ROOTS=/path/a:/path/b to list your own BEIR / MS MARCO folders", err=True)


@collections_app.command("inspect")
def collections_inspect(
    spec: str | None = typer.Argument(None, help="collection spec (or -c SPEC, as every other command takes it)"),
    collection: str | None = typer.Option(None, "--collection", "-c", help="collection spec, as the argument"),
    encoder: str | None = typer.Option(None, "--encoder", "-e", help="also count the passages longer than this "
                                       "encoder reads (minilm-l6, minilm-l3-onnx, splade-tiny)"),
) -> None:
    """Counts, fingerprint and data notes of one collection."""
    from eqi_core.encoders import cut_note, passages_cut

    if spec is not None and collection is not None and spec != collection:
        raise DataError(f"two collections given ({spec!r} and -c {collection!r}): give one")
    store = _store()
    c = _load(spec or collection or DEFAULT_SPEC, store)
    for key, value in c.stats().items():
        typer.echo(f"{key:26s} {value}")
    if encoder is not None:
        cut = passages_cut(c, load_encoder(encoder), store)  # an unknown id: load_encoder's one line
        if cut is None:
            raise DataError(f"--encoder {encoder}: this encoder cannot count its word pieces")
        typer.echo(f"{'passages_cut_by_' + encoder:26s} {cut['cut']} (of {cut['of']}; limit {cut['limit']} word pieces)")
        note = cut_note(cut)
        if note:
            typer.echo(f"note: {note}")
    for note in c.notes:
        typer.echo(f"note: {note}")
    mis_decoded = c.mis_decoded_note()
    if mis_decoded:
        typer.echo(f"note: {mis_decoded}")


@app.command()
def index(collection: str = CollectionOpt, ranker: str = RankerOpt) -> None:
    """Encode and index a collection for a ranker (cached in the store under EQI_HOME)."""
    store = _store()
    c = _load(collection, store)
    r = build_ranker(ranker, c, store, progress=tqdm_progress(f"indexing {c.name} for {ranker}", "passage"))
    typer.echo(f"indexed {len(c.passages):,} passages of {c.name} for {r.name} in {store.root}")


@app.command("ship-embeddings")
def ship_embeddings_cmd(
    collection: str = CollectionOpt,
    ranker: str = RankerOpt,
    field: str = typer.Option("passages", help="passages or queries"),
    output: Path | None = typer.Option(None, "--output", "-o", callback=_folder_to_write,
                                       help="folder (default: assets/embeddings/<collection>-<ranker>)"),
) -> None:
    """Encode a collection's passages (or queries) here and write them, fp16 with a card, for shipping
    in assets/embeddings: later first visits load them instead of encoding (the card's exact
    collection fingerprint, field, encoder and encoding path only)."""
    from eqi_core.rankers.shipped import ASSETS, ship_embeddings

    spec = ranker_spec(ranker)
    if spec.family != "dense" or not spec.encoder:
        raise DataError(f"--ranker {ranker}: expected a dense ranker (its encoder makes the vectors)")
    c = _load(collection)
    folder = output or ASSETS / f"{collection.split(':')[0]}-{spec.id}"
    command = f"eqi ship-embeddings -c {collection} -r {ranker} --field {field}"
    card = ship_embeddings(c, load_encoder(spec.encoder), field, folder, command,
                           progress=tqdm_progress(f"encoding {c.name} {field}", "text"))
    typer.echo(json.dumps(card, indent=1))
    typer.echo(f"wrote {folder}")


@app.command()
def search(
    query: list[str] = typer.Argument(..., help="one or more query texts"),
    collection: str = CollectionOpt,
    ranker: str = RankerOpt,
    k: int = typer.Option(10, "-k", min=1, max=10_000, help="results per query"),
    as_json: bool = typer.Option(False, "--json", help="print JSON lines instead of a table"),
    compare: str | None = typer.Option(None, "--compare", help="also this ranker's results (e.g. minilm-l6), each "
                                       "list with where the other ranker puts every passage"),
) -> None:
    """Search the collection; logged queries show each result's judged grade."""
    import pandas as pd

    from eqi_core.judged import comparison_line, judged_search, rank_under

    if not all(q.strip() for q in query):
        raise DataError("query: empty; give a query text, e.g. eqi search bank")
    if compare is not None and ranker_spec(compare).id == ranker_spec(ranker).id:
        raise DataError(f"--compare {compare}: that is the ranker already searched; name another, e.g. minilm-l6")
    for q in query:
        _warn_spec_like(q, "search")
    store = _store()
    c = _load(collection, store)
    rankers = {name: build_ranker(name, c, store, progress=tqdm_progress(f"indexing for {name}", "passage"))
               for name in [ranker] + ([compare] if compare else [])}
    for q in query:
        found = {name: judged_search(c, r, q, k) for name, r in rankers.items()}
        for name, res in found.items():
            other = next((o for o in found if o != name), None)
            beside = rank_under(res.results, found[other].results) if other else None
            for note in res.notes:  # on stderr, so --json stays JSON lines
                typer.echo(f"note: {note}", err=True)
            if not as_json:
                grades = c.judgments.get(res.query_id, {}) if res.query_id else {}
                shown = q if len(q) <= 200 else f"{q[:200]}… ({len(q):,} characters)"
                head = f"# {shown!r}" + (f" (logged query {res.query_id}, {len(grades)} judged)" if res.query_id
                                     else " (not a logged query)")
                typer.echo(head + (f", {name}; last column: {other}'s rank" if other else ""))
                if res.results.empty:  # BM25 finds nothing for a query of stop words or unknown terms
                    typer.echo("(no passage shares a term with this query)")
            for i, row in enumerate(res.results.itertuples(index=False)):
                grade = None if pd.isna(row.grade) else int(row.grade)
                under = None if beside is None or pd.isna(beside.iloc[i]) else int(beside.iloc[i])
                if as_json:
                    typer.echo(json.dumps({"query": q, **({"ranker": name} if other else {}), "rank": int(row.rank),
                                           "doc_id": row.doc_id, "score": float(row.score), "grade": grade, "text": row.text,
                                           **({f"rank_under_{other}": under} if other else {})}))
                else:
                    g = "-" if grade is None else str(grade)
                    tail = "" if beside is None else f"  [{other}: {'-' if under is None else under}]"
                    text = str(row.text)[:90].ljust(90 if tail else 0)  # the other ranker's ranks in one column
                    typer.echo(f"{row.rank:>4} {row.score:8.4f}  grade {g}  {row.doc_id:14s} {text}{tail}")
        if compare and not as_json:
            typer.echo(f"# {ranker} vs {compare}: {comparison_line(found[ranker], found[compare], ranker, compare)}")


@app.command()
def judgments(
    collection: str = CollectionOpt,
    query: str | None = typer.Option(None, "--query", "-Q", help="a query id: its judged passages, most relevant first"),
    passage: str | None = typer.Option(None, "--passage", "-p", help="a passage id: the queries whose judgments name it"),
    as_json: bool = typer.Option(False, "--json", help="print JSON lines instead of a table"),
) -> None:
    """The collection's judgments of one query (its judged passages) or of one passage (the queries
    that judge it), as the Collection page's Browse tabs show them."""
    from eqi_core.judged import judged_passages, judging_queries

    if (query is None) == (passage is None):
        raise DataError("give one of --query QUERY_ID or --passage DOC_ID")
    c = _load(collection, _store())
    if query is not None:
        if query not in c.query_text:
            raise DataError(f"--query {query!r}: not a query id of {c.name} (e.g. {', '.join(c.queries['query_id'][:3])})")
        table = judged_passages(c, query)
        title = f"# query {query}: {c.query_text[query]!r}, {len(table):,} judged passages"
    else:
        if passage not in c.doc_index and not (c.qrels["doc_id"] == passage).any():
            raise DataError(f"--passage {passage!r}: not a passage id of {c.name} (e.g. {', '.join(c.passages['doc_id'][:3])})")
        table = judging_queries(c, passage)
        title = f"# passage {passage}: named by the judgments of {len(table):,} {'query' if len(table) == 1 else 'queries'}"
    if as_json:
        for record in table.to_dict("records"):
            typer.echo(json.dumps(record))
        return
    typer.echo(title)
    if len(table):
        shown = table.assign(passage=table["passage"].str.slice(0, 90)) if "passage" in table else table
        typer.echo(shown.to_string(index=False))


@app.command()
def run(
    output: Path = typer.Option(..., "--output", "-o", callback=_file_to_write, help="TREC run file to write"),
    collection: str = CollectionOpt,
    ranker: str = RankerOpt,
    k: int = typer.Option(100, "-k", min=1, max=10_000, help="depth per query"),
) -> None:
    """Run every query of the collection and write a TREC run file."""
    store = _store()
    c = _load(collection, store)
    r = build_ranker(ranker, c, store, progress=tqdm_progress(f"indexing for {ranker}", "passage"))
    result = run_all_queries(r, c, store, k=k, progress=tqdm_progress(f"searching {len(c.queries):,} queries", "query"))
    result.to_trec(output, tag=ranker)
    typer.echo(f"wrote {len(result):,} lines for {len(result.query_ids):,} queries to {output}")


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


def _exposure_setup(collection: str, ranker: str, depth: int, scheduler: str | None = None, run_file: Path | None = None,
                    space: str | None = None, passage: str | None = None):
    """The EQI setup; ``run_file`` (a system's result log) replaces the ranker as the map's source. A ``passage`` id
    is checked before the map is built, so a mistyped id fails at once, not after minutes of encoding."""
    from eqi_core.exposure.result_logs import result_log_id
    from eqi_core.exposure.setup import prepare_exposure

    store = _store()
    c = _load(collection, store)
    if passage is not None and not c.passages["doc_id"].eq(passage).any():
        raise DataError(f"passage id {passage!r} is not in the collection {c.name!r}")
    engine = _engine("local", scheduler, 2, None) if scheduler else None
    ranker_id = result_log_id(run_file) if run_file else ranker
    setup = prepare_exposure(c, ranker_id, store, depth, progress=tqdm_progress("preparing exposure map", "item"),
                             engine=engine, space=space)
    for note in setup.notes:
        typer.echo(f"note: {note}", err=True)
    return setup


def _warn_degenerate(setup, n_qd: int, n_dq: int) -> None:
    from eqi_core.exposure.setup import degenerate_settings, small_log_note
    from eqi_core.loaders.registry import web_log_for

    for warning in degenerate_settings(len(setup.collection.queries), len(setup.collection.passages), n_qd, n_dq,
                                       setup.exposure.every_query_shows_every_passage()):
        typer.echo(f"warning: {warning}", err=True)
    real_log = web_log_for(setup.collection.source)
    note = small_log_note(len(setup.collection.queries), f"search these passages with the MS MARCO passage queries instead: "
                          f"-c '{real_log}'" if real_log else "search these passages with a real query log instead: "
                          "eqi --log FILE ... (or -c SPEC+log:FILE)")
    if note:
        typer.echo(f"note: {note}", err=True)


DenseRankerOpt = typer.Option("minilm-l6", "--ranker", "-r", help=f"one of {', '.join(RANKERS)}")
RunFileOpt = typer.Option(None, "--run", help="a system's result log over the collection's queries (TREC run, or "
                          "TSV/CSV/Parquet qid, docid, rank[, score]): its rankings replace --ranker's")
SpaceOpt = typer.Option(None, "--space", help="encoder of the dense EQI methods (default: the ranker's own, else minilm-l6)")


@app.command()
def exposure(
    passage: str | None = typer.Argument(None, help="a passage id of the collection"),
    text: str | None = typer.Option(None, "--text", help="a passage not in the collection (instead of an id)"),
    collection: str = CollectionOpt,
    ranker: str = DenseRankerOpt,
    n_qd: int = typer.Option(100, "--n-qd", min=1, max=100, help="n_q->d: depth of the searcher's results (the map "
                             "is computed to 100)"),
    n_dq: int | None = typer.Option(None, "--n-dq", min=1, help="n_d->q: exposing queries to list per method "
                                    "(default: the page's, 50, at most a tenth of the log)"),
    gamma_qd: float = typer.Option(0.5, "--gamma-qd", help="searcher patience for RELQ"),
    gamma_dq: float = typer.Option(0.9, "--gamma-dq", help="EQI-user patience for RELQ"),
    scheduler: str | None = typer.Option(None, "--scheduler", help="compute the exact map on this Dask scheduler "
                                            "(tcp://host:8786) instead of in this process"),
    run_file: Path | None = RunFileOpt,
    space: str | None = SpaceOpt,
    heads: bool = typer.Option(True, "--heads/--no-heads", help="also the learned Residual head (trained once, ~1 min)"),
    generate: int = typer.Option(0, "--generate", min=0, max=200, help="also decode N queries no log holds and rank "
                                 "the passage for each (generative exposure)"),
    patience: bool = typer.Option(False, "--patience-grid", help="also each method's RELQ_RBP,RBP for this passage "
                                  "over gamma_q->d x gamma_d->q in 0.1..1 (paper Figure 5 for one passage)"),
    compare: str | None = typer.Option(None, "--compare", help="also the exact exposing queries under this ranker "
                                       "(e.g. bm25): who keeps, gains and loses sight of the passage"),
    report: Path | None = typer.Option(None, "--report", callback=_file_to_write, help="also write the page's audit report (HTML, opens "
                                       "offline): lists, RELQ, figures, and what --show, --compare and --generate "
                                       "add"),
    show: list[str] = typer.Option([], "--show", help="also what this logged query (an id; repeat --show) shows: its "
                                   "top 10, then the passage where deeper; pasted text among the collection's "
                                   "passages at its exact rank, as the page shows a selected query"),
    figures: Path | None = typer.Option(None, "--figures", callback=_folder_to_write, help="write the page's figures here (exposure bars, RELQ "
                                        "over patience, the change under --compare, retrievability), each as HTML "
                                        "and PNG at 3x (--figure-formats: SVG, PDF)"),
    figure_formats: str = FigureFormatsOpt,
) -> None:
    """Which queries expose a passage: exact (brute force) and approximate (reverse, learned) lists with RELQ."""
    from eqi_core.exposure.learned import TrainingConfig
    from eqi_core.exposure.lookup import passage_exposure, patience_grids, what_a_query_shows, what_a_query_shows_says
    from eqi_core.exposure.relq import relq_exh_ndcg, relq_rbp
    from eqi_core.exposure.setup import listed_n_dq
    from eqi_core.figure_export import figure_formats as _formats
    from eqi_core.matching import with_shared_words, word_overlap_line

    formats = _formats(figure_formats)  # a wrong name fails before any map is built
    relq_rbp(gamma_qd, gamma_dq)  # so does a patience outside (0, 1]
    if (passage is None) == (text is None):
        raise DataError("give either a passage id or --text, not both and not neither")
    if compare is not None:
        ranker_spec(compare)  # a mistyped ranker fails before any map is built
        if compare == ranker and run_file is None:
            raise DataError(f"--compare {compare}: that is the ranker already shown; name another, e.g. bm25 or minilm-l6")
    setup = _exposure_setup(collection, ranker, 100, scheduler, run_file, space, passage)
    n_dq = n_dq or listed_n_dq(len(setup.collection.queries))
    spec = relq_rbp(gamma_qd, gamma_dq, n_dq)
    unknown = [q for q in show if str(q) not in setup.collection.query_text]
    if unknown:
        raise DataError(f"--show {unknown[0]!r}: not a query id of the query log (`eqi exposure` lists exposing ones)")
    _warn_degenerate(setup, n_qd, n_dq)
    methods = {"BM25-reverse": setup.bm25_reverse(), "dense-reverse": setup.dense_reverse()}
    for arch in ("residual",) if heads else ():
        try:
            model, _ = setup.learned(TrainingConfig(arch=arch), setup.test_passages(), tqdm_progress(f"training {arch}", "step"))
        except DataError as exc:  # as the page: the exact and reverse lists still stand
            typer.echo(f"warning: learned heads unavailable: {exc}", err=True)
            continue
        methods[model.name] = model
    pe = passage_exposure(setup, methods, [spec, relq_exh_ndcg(n_dq)], n_qd, n_dq, doc_id=passage, text=text)
    typer.echo(f"# passage {pe.doc_id or '(pasted)'}: {pe.text[:120]}")
    for note in pe.notes:
        typer.echo(f"note: {note}", err=True)
    if pe.exact is not None:
        typer.echo(f"## exact: {len(pe.exact):,} {'query shows it in its' if len(pe.exact) == 1 else 'queries show it in their'} top {n_qd}")
        if len(pe.exact):
            typer.echo(with_shared_words(pe.exact.head(n_dq), pe.text).to_string(index=False))
            typer.echo(word_overlap_line(pe.exact, pe.text))
    for name, frame in pe.lists.items():
        score = "" if pe.relq is None else f" ({spec} = {pe.relq.loc[name, str(spec)]:.3f})"
        typer.echo(f"## {name}{score}")
        if len(frame):
            typer.echo(frame.assign(rank=["-" if math.isnan(r) else int(r) for r in frame["rank"]]).to_string(index=False))
        else:
            typer.echo("(no logged query found: none shares a word with the passage after stop words and stemming)" if name == "BM25-reverse"
                       else "(no logged query found)")
    this = ranker if run_file is None else run_file.name  # a log's file name (bm25.trec) is never a ranker id (bm25)
    shown = []
    for query_id in map(str, show):
        query = setup.collection.query_text[query_id]
        shown.append((query_id, query, what_a_query_shows_says(pe, query_id, this), what_a_query_shows(setup, pe, query_id)))
        typer.echo(f"## what {query!r} ({query_id}) shows: {shown[-1][2]}")
        typer.echo(shown[-1][3].to_string(index=False, max_colwidth=80))
    if patience:
        grids = patience_grids(pe, n_dq)
        if not grids:
            typer.echo("## RELQ over patience parameters: undefined (no exact exposing list to compare with)")
        for name, grid in grids.items():
            typer.echo(f"## {name}: RELQ_RBP,RBP over patience (rows gamma_q->d, columns gamma_d->q)")
            typer.echo(grid.rename(index="{:g}".format, columns="{:g}".format).to_string(float_format="{:.3f}".format))
    change = line = other_setup = other_exact = g = None
    if compare is not None:
        change, line, other_setup, other_exact = _print_exposure_change(pe, this, compare, collection, n_qd, scheduler,
                                                                        passage, text)
    if generate:
        from eqi_core.decoder.space import open_space
        from eqi_core.exposure.generative import generate_exposure

        space = open_space(setup.collection, setup.store, "minilm-l6", progress=tqdm_progress("latent space", "item"))
        g = generate_exposure(setup, space, generate, n_qd, doc_id=passage, text=text, exact=pe.exact)
        for note in g.notes:
            typer.echo(f"note: {note}", err=True)
        typer.echo(f"## generated: {len(g.unseen_exposing)} decoded queries the log holds neither word for word nor "
                   f"reworded rank it in the top {n_qd} "
                   f"(exposure {g.logged_total} from the log, +{g.generated_total} from them)")
        typer.echo(g.candidates.to_string(index=False))
    settings = {"n_q->d": n_qd, "n_d->q": n_dq, "gamma_q->d": gamma_qd, "gamma_d->q": gamma_dq}
    if report is not None:
        _write_exposure_report(report, pe, setup, this, compare, change, line, spec, settings,
                               other_setup, other_exact, shown, g)
    if figures is not None:
        from eqi_core.figure_export import write_figure_files

        drawn, _ = _exposure_figures(pe, setup, this, compare, change, spec, settings, other_setup, other_exact)
        written = write_figure_files(drawn, figures, formats)
        typer.echo(f"wrote {len(written)} figure files to {figures}")


def _print_exposure_change(pe, this: str, other: str, collection: str, n_qd: int, scheduler: str | None,
                           passage: str | None, text: str | None):
    """``eqi exposure --compare``: the passage's exact exposing queries under another ranker beside this
    one's; returns the table, its summary line, and the other ranking's setup and exact list (for --report)."""
    from eqi_core.exposure.lookup import change_summary, exact_exposure, exposure_change
    from eqi_core.matching import change_overlap_line, with_shared_words

    if pe.exact is None:
        raise DataError("--compare: this ranking has no exact exposing queries for pasted text (a result log)")
    setup = _exposure_setup(collection, other, 100, scheduler, None, other if ranker_spec(other).family == "dense" else None,
                            passage)
    exact, notes = exact_exposure(setup, n_qd, passage, text)
    for note in notes:
        typer.echo(f"note: {note}", err=True)
    if exact is None:
        raise DataError(f"--compare {other}: no exact exposing queries for pasted text under it")
    change = with_shared_words(exposure_change(pe.exact, exact, this, other), pe.text)
    line = f"{change_summary(change, this, other)}. {change_overlap_line(change, pe.text, this, other)}"
    typer.echo(f"## compared with {other}: {line}")
    if len(change):
        typer.echo(change.astype(object).where(change.notna(), "-").to_string(index=False))  # "-": not in its top n_q->d
    return change, line, setup, exact


@app.command("retrievability")
def retrievability_command(
    collection: str = CollectionOpt,
    ranker: str = DenseRankerOpt,
    cutoff: int = typer.Option(100, "--cutoff", min=1, max=100, help="c: a query retrieves a passage when it ranks it "
                               "within its top c"),
    which: str = typer.Option("least", "--list", help="least or most: which end of the ranking to list"),
    limit: int = typer.Option(20, "--limit", "-n", min=0, help="how many passages to list"),
    run_file: Path | None = RunFileOpt,
    output: Path | None = typer.Option(None, "--output", "-o", callback=_file_to_write, help="also write r(d) of every passage here (CSV)"),
    as_json: bool = typer.Option(False, "--json", help="print JSON lines instead of a table"),
    compare: str | None = typer.Option(None, "--compare", help="also this ranker's Gini and never-retrieved share "
                                       "(e.g. minilm-l6): which of the two spreads exposure more evenly"),
) -> None:
    """Retrievability r(d) of every passage: its inequality (Gini), the passages no query retrieves,
    and the least or most retrievable ones, as the Exposure page's Retrievability panel lists them."""
    import pandas as pd

    from eqi_core.exposure.audit import retrievability_extremes, summarise_retrievability

    if which not in ("least", "most"):
        raise DataError(f"--list {which}: expected least or most")
    if compare is not None:
        ranker_spec(compare)  # a mistyped ranker fails before the first map is built
    setup = _exposure_setup(collection, ranker, 100, run_file=run_file)
    c = setup.collection
    weighted = "count" in c.queries.columns  # a log with frequencies: each search counts, as on the page
    summary = summarise_retrievability(setup.exposure, cutoff, c.query_weights if weighted else None)
    never = int((summary.values == 0).sum())
    extremes = retrievability_extremes(summary, setup.exposure.doc_ids, which, limit)
    texts = [c.display_text(d) or "" for d in extremes["doc_id"]]
    other = None if compare is None else summarise_retrievability(_exposure_setup(collection, compare, 100).exposure, cutoff,
                                                                   c.query_weights if weighted else None)
    if as_json:  # a summary line per ranking, then the passages
        for name, s in ((ranker if run_file is None else run_file.name, summary), (compare, other)):
            if s is not None:
                typer.echo(json.dumps({"ranking": name, "cutoff": cutoff, "gini": round(s.gini, 6),
                                       "never_retrieved": int((s.values == 0).sum()), "passages": len(s.values)}))
        for row, text in zip(extremes.itertuples(index=False), texts):
            typer.echo(json.dumps({"doc_id": row.doc_id, "r": float(row[1]), "less_retrievable": round(float(row[2]), 6),
                                   "text": text}))
    else:
        typer.echo(f"# {c.name}, {ranker if run_file is None else run_file.name}: r(d) at c = {cutoff} over "
                   f"{len(c.queries):,} {'searches (weighted by count)' if weighted else 'queries'}; Gini "
                   f"{summary.gini:.3f}; {never:,} of {len(summary.values):,} passages ({summary.never_retrieved:.1%}) "
                   "are in no query's top c")
        if other is not None:
            typer.echo(f"# {compare}: Gini {other.gini:.3f}; {int((other.values == 0).sum()):,} passages "
                       f"({other.never_retrieved:.1%}) are in no query's top c")
        if which == "least" and never > len(extremes) > 0:
            typer.echo(f"# the {len(extremes)} least retrievable listed: the first of those {never:,} in the collection's order")
        for row, text in zip(extremes.itertuples(index=False), texts):
            typer.echo(f"{row.doc_id:>14}  r(d) {row[1]:>6}  {row[2]:6.1%} less  {text[:80]}")
    if output is not None:
        _write_csv(pd.DataFrame({"doc_id": setup.exposure.doc_ids, "r(d)": summary.values}), output, index=False)
        typer.echo(f"wrote r(d) of {len(summary.values):,} passages to {output}", err=True)


def _write_exposure_report(path: Path, pe, setup, this: str, other: str | None, change, line: str | None, spec,
                           settings: dict, other_setup=None, other_exact=None, shown=(), generated=None) -> None:
    """``eqi exposure --report``: the Exposure page's audit report, written whole or not at all; with
    what each ``--show`` query shows and the ``--generate`` queries when asked for."""
    from eqi_core.reports import exposure_report
    from eqi_core.store import atomic_write

    drawn, retr = _exposure_figures(pe, setup, this, other, change, spec, settings, other_setup, other_exact)
    figures = list(drawn.values())
    meta = {"collection": setup.collection.name, "collection fingerprint": setup.collection.fingerprint,
            "ranker": this, "passage": pe.doc_id or "(pasted text)", **settings, "methods": ", ".join(pe.lists),
            **({"compared with": other} if other else {})}
    atomic_write(path, exposure_report(pe, meta, figures, retr, change=change, change_line=line or "", shown=shown,
                                       generated=generated).encode("utf-8"))
    typer.echo(f"wrote the audit report to {path}")


def _exposure_figures(pe, setup, this: str, other: str | None, change, spec, settings: dict, other_setup=None,
                      other_exact=None) -> tuple[dict, object]:
    """The Exposure page's figures for one passage (name -> figure), as ``--report`` and ``--figures`` write
    them, and the passage's retrievability (None where it has none)."""
    from eqi_core.exposure.audit import passage_retrievability
    from eqi_core.exposure.lookup import patience_grids
    from eqi_core.figures.exposure import exposure_bars, exposure_change_scatter, relq_heatmaps, retrievability_chart

    figures = {}
    if pe.exact is not None and pe.lists:
        relq_values = pe.relq[str(spec)].to_dict() if pe.relq is not None else None
        figures["exposure_bars"] = exposure_bars(pe.lists, pe.n_qd, relq_values, str(spec))
    grids = patience_grids(pe, spec.cutoff)
    if grids:
        figures["relq_patience"] = relq_heatmaps(grids, "This passage's RELQ over patience parameters",
                                                 mark=(settings["gamma_q->d"], settings["gamma_d->q"]))
    if change is not None:
        figures["exposure_change"] = exposure_change_scatter(change, this, other, pe.n_qd)
    retr = None
    if pe.doc_id is not None or pe.exact is not None:  # where it sits among all passages, as on the page
        c = setup.collection
        weights = c.query_weights if "count" in c.queries.columns else None
        places = {r: passage_retrievability(s.exposure, pe.n_qd, weights, pe.doc_id, () if pe.doc_id else exact["query_id"])
                  for r, s, exact in ((this, setup, pe.exact), (other, other_setup, other_exact)) if s is not None}
        retr = places[this][1]
        figures["retrievability"] = retrievability_chart(places, pe.doc_id or "the pasted passage",
                                                         {r: ranker_spec(r).name for r in places})
    return figures, retr


def _engine(engine: str, scheduler: str | None, workers: int, memory_limit: str | None):
    from eqi_core.exposure.distributed import Engine

    return Engine(scheduler or engine, n_workers=workers, memory_limit=memory_limit)


@app.command("exposure-map")
def exposure_map_cmd(
    collection: str = CollectionOpt,
    ranker: str = DenseRankerOpt,
    depth: int = typer.Option(100, "--n-qd", min=1, max=10_000, help="n_q->d: depth of every query's results"),
    engine: str = typer.Option("auto", "--engine", help="auto (in-process below 10^12 flops, else local), inprocess "
                               "(no Dask), local (a LocalCluster on this machine)"),
    scheduler: str | None = typer.Option(None, "--scheduler", help="a running Dask scheduler, e.g. tcp://host:8786"),
    workers: int = typer.Option(2, "--workers", min=1, max=512, help="LocalCluster workers (one thread each)"),
    memory_limit: str | None = typer.Option(None, "--memory-limit", help="per LocalCluster worker, e.g. 2GB; "
                                               "passage shards are sized to fit"),
    query_shard: int = typer.Option(2048, "--query-shard", min=1, help="queries per task"),
    passage_shards: int | None = typer.Option(None, "--passage-shards", min=1, help="split the passages (dense only)"),
    run_file: Path | None = RunFileOpt,
) -> None:
    """The exact exposure map by shards on Dask (or in-process): resumable, written as partitioned Parquet in the store."""
    from eqi_core.exposure.distributed import compute_exposure_map
    from eqi_core.exposure.result_logs import result_log_id

    coll = _load(collection)
    ranker = result_log_id(run_file) if run_file else ranker
    if engine == "auto":  # small maps are faster without Dask's start-up and hand-offs
        engine = "inprocess" if 2.0 * len(coll.queries) * len(coll.passages) * max(embedding_dimension(ranker), 1) < 1e12 else "local"
    emap, info = compute_exposure_map(coll, ranker, _store(), depth, _engine(engine, scheduler, workers, memory_limit),
                                          query_shard, passage_shards, tqdm_progress("exact exposure map", "item"))
    for note in info.pop("notes", []):
        typer.echo(f"note: {note}", err=True)
    counts = emap.counts()
    typer.echo(json.dumps({**info, "queries": len(emap.query_ids), "passages": len(emap.doc_ids), "pairs": int(len(emap.q_idx)),
                           "exposed_passages": int((counts > 0).sum())}, indent=1, default=str))


@app.command("train-exposure")
def train_exposure(
    collection: str = CollectionOpt,
    ranker: str = DenseRankerOpt,
    arch: str = typer.Option("residual", "--arch", help="residual or append"),
    steps: int = typer.Option(2000, "--steps", min=1, max=1_000_000),
    train_queries: int | None = typer.Option(None, "--train-queries", min=1, help="|Q_train| (default: whole log)"),
    train_passages: int = typer.Option(5000, "--train-passages", min=1),
    n_test: int = typer.Option(1000, "--test-passages", min=1, help="held out (never trained on)"),
    lr: float = typer.Option(1e-4, "--lr"),
    seed: int = typer.Option(0, "--seed"),
    run_file: Path | None = RunFileOpt,
    space: str | None = SpaceOpt,
) -> None:
    """Train a Residual or Append EQI head (Algorithm 1 + RankNet) from cached embeddings; stored as safetensors."""
    from eqi_core.exposure.learned import TrainingConfig

    config = TrainingConfig(arch=arch, steps=steps, n_train_queries=train_queries, n_train_passages=train_passages,
                            lr=lr, seed=seed)
    config.validate()  # before the map is built
    setup = _exposure_setup(collection, ranker, 100, run_file=run_file, space=space)
    _, info = setup.learned(config, setup.test_passages(n_test, seed), tqdm_progress(f"training {arch}", "step"))
    typer.echo(json.dumps(info, indent=1, default=str))


@app.command("eval-exposure")
def eval_exposure(
    collection: str = CollectionOpt,
    ranker: str = DenseRankerOpt,
    n_test: int = typer.Option(1000, "--test-passages", min=1),
    n_dq: int | None = typer.Option(None, "--n-dq", min=1, help="n_d->q (default: 100, at most a tenth of the log)"),
    steps: int = typer.Option(2000, "--steps", min=1),
    grid: bool = typer.Option(False, "--grid", help="also the training-size grid (paper Table 3)"),
    expanding: bool = typer.Option(False, "--expanding", help="also the expanding-log simulation (paper Figure 2)"),
    output_dir: Path | None = typer.Option(None, "--output-dir", "-o", callback=_folder_to_write, help="write CSVs here"),
    run_file: Path | None = RunFileOpt,
    space: str | None = SpaceOpt,
    figures: Path | None = typer.Option(None, "--figures", callback=_folder_to_write, help="write the page's figures here (RELQ over patience, "
                                        "rank-size, retrievability, query traits; with --grid and --expanding theirs), "
                                        "each as HTML and PNG at 3x (--figure-formats: SVG, PDF)"),
    figure_formats: str = FigureFormatsOpt,
) -> None:
    """Paper Table 2 on held-out passages: brute force, BM25-reverse/-tuned, dense-reverse, Append, Residual."""
    from eqi_core.exposure.evaluate import UNDEFINED_TEST_NOTE, cached_table2, expanding_log, training_size_grid
    from eqi_core.exposure.learned import TrainingConfig
    from eqi_core.exposure.setup import default_n_dq
    from eqi_core.figure_export import figure_formats as _formats

    formats = _formats(figure_formats)
    setup = _exposure_setup(collection, ranker, 100, run_file=run_file, space=space)
    if n_dq is None:
        n_dq = default_n_dq(len(setup.collection.queries))
        if n_dq != 100:
            n_log = len(setup.collection.queries)
            typer.echo(f"note: n_d->q = {n_dq}: a tenth of the log's {n_log:,} queries{', at least 1' if n_log < 10 else ''}",
                       err=True)
    _warn_degenerate(setup, setup.depth, n_dq)
    config = TrainingConfig(n_dq=n_dq, steps=steps)
    res = cached_table2(setup, n_test, n_dq, config, tqdm_progress("training", "step"))
    typer.echo(f"{setup.collection.name}, ranker {ranker_spec(setup.ranker_id).name}, {res['test_passages']} held-out "
               f"passages, n_d->q = {n_dq}")
    typer.echo(res["table"].to_string(float_format=lambda v: f"{v:.3f}"))
    typer.echo(f"BM25-tuned: k1 = {res['bm25_tuning']['k1']}, b = {res['bm25_tuning']['b']}")
    typer.echo(res["ttests"].to_string(index=False, float_format=lambda v: f"{v:.3g}", na_rep="—"))
    if res["ttests"]["p_one_tailed"].isna().any():
        typer.echo(f"({UNDEFINED_TEST_NOTE})")
    if output_dir:
        output_dir.mkdir(parents=True, exist_ok=True)
        _write_csv(res["table"], output_dir / "table2.csv")
        _write_csv(res["per_passage"], output_dir / "per_passage.csv", index=False)
    if grid:
        t3 = training_size_grid(setup, res["test_docs"], base=config, n_dq=n_dq, progress=tqdm_progress("grid", "step"))
        typer.echo("Training-size grid (Residual, RELQ_RBP,RBP(0.5,0.9)):")
        typer.echo(t3.to_string(float_format=lambda v: f"{v:.3f}"))
        if output_dir:
            _write_csv(t3, output_dir / "table3.csv")
    if expanding:
        f2 = expanding_log(setup, res["test_docs"], base=config, n_dq=n_dq, progress=tqdm_progress("expanding log", "step"))
        typer.echo("Expanding log (no retraining):")
        typer.echo(f2.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
        if output_dir:
            _write_csv(f2, output_dir / "expanding_log.csv", index=False)
    if figures:
        from eqi_core.figure_export import write_figure_files

        written = write_figure_files(_evaluation_figures(setup, res, n_dq, t3 if grid else None,
                                                         f2 if expanding else None), figures, formats)
        typer.echo(f"wrote {len(written)} figure files to {figures}")


def _evaluation_figures(setup, res: dict, n_dq: int, table3=None, growing=None) -> dict:
    """The Exposure evaluation page's figures with its defaults (dense-reverse and Residual over patience,
    retrievability at cutoff 10, query traits by length), for ``eqi eval-exposure --figures``."""
    from eqi_core.exposure.audit import min_document_frequency, query_traits, rank_size, summarise_retrievability, trait_probabilities
    from eqi_core.exposure.evaluate import patience_grid
    from eqi_core.figures import exposure as figs

    lists, test = res["lists"], res["test_docs"]
    names = [n for n in lists if n != "Brute force"]
    pair = [n for n in names if n.startswith("dense")][:1] + [n for n in names if n == "Residual"]
    retrievability = summarise_retrievability(setup.exposure, min(10, setup.depth))
    texts = list(setup.collection.queries["text"])
    traits = query_traits(texts, min_document_frequency(texts, setup.texts))
    drawn = {"relq_patience_heatmaps": figs.relq_heatmaps({m: patience_grid(setup.exposure, test, lists[m], n_dq)
                                                           for m in pair}),
             "rank_size": figs.rank_size(rank_size(setup.exposure, test, {n: lists[n] for n in names})),
             f"retrievability_lorenz_c{min(10, setup.depth)}": figs.lorenz_curve(retrievability.curve, retrievability.gini),
             "query_traits_length": figs.trait_curves(trait_probabilities(setup.exposure, test, {n: lists[n] for n in names},
                                                                          traits, "length", [1, 2, 3, 4, 6]), "length")}
    if table3 is not None:
        drawn["training_size"] = figs.training_size(table3)
    if growing is not None:
        drawn["expanding_log"] = figs.expanding_log(growing)
    return drawn


@app.command("eval-generative")
def eval_generative_cmd(
    collection: str = CollectionOpt,
    ranker: str = DenseRankerOpt,
    passages: int = typer.Option(100, "--passages", min=1, help="passages never seen by the decoder (held out)"),
    n: int = typer.Option(20, "--generate", min=1, max=200, help="decoded queries per passage"),
    n_qd: int = typer.Option(10, "--n-qd", min=1, help="a decoded query exposes the passage when it ranks it this high"),
    seed: int = typer.Option(0, "--seed"),
    output_dir: Path | None = typer.Option(None, "--output-dir", "-o", callback=_folder_to_write, help="write per-passage CSVs here"),
) -> None:
    """Generative exposure on held-out passages and on the under-exposed tenth (lowest retrievability)."""
    import numpy as np

    from eqi_core.decoder.space import open_space, unseen_passages
    from eqi_core.exposure.audit import retrievability
    from eqi_core.exposure.generative import evaluate_generative

    setup = _exposure_setup(collection, ranker, 100)
    space = open_space(setup.collection, setup.store, "minilm-l6", progress=tqdm_progress("latent space", "item"))
    rng = np.random.default_rng(seed)
    doc_ids = setup.collection.passages["doc_id"].to_numpy()
    unseen = unseen_passages(space.model.card, setup.collection)  # passages the decoder never trained on
    pool = np.array(unseen)
    held = list(rng.choice(pool, size=min(passages, len(pool)), replace=False))
    r = retrievability(setup.exposure, min(100, setup.depth))
    lowest = doc_ids[np.argsort(r, kind="stable")[: max(1, len(r) // 10)]]
    if len(unseen) < len(doc_ids):
        unseen_set = set(unseen)
        lowest = np.array([d for d in lowest if d in unseen_set])
    under = list(rng.choice(lowest, size=min(passages, len(lowest)), replace=False))
    summary = {}
    for name, docs in (("held-out", held), ("under-exposed tenth", under)):
        res = evaluate_generative(setup, space, docs, n, n_qd, tqdm_progress(f"decoding for {name} passages", "passage"))
        hit = res["unseen_exposing"] > 0
        summary[name] = {"passages": len(res), "share_with_unseen_exposing": round(float(hit.mean()), 3),
                         "unseen_exposing_per_passage": round(float(res["unseen_exposing"].mean()), 2),
                         "logged_exposing_per_passage": round(float(res["logged_exposing"].mean()), 2),
                         "median_best_unseen_rank": float(res.loc[hit, "best_unseen_rank"].median()) if hit.any() else None,
                         "share_with_real_word_unseen_exposing": round(float((res["unseen_exposing_real_words"] > 0).mean()), 3),
                         "real_word_unseen_exposing_per_passage": round(float(res["unseen_exposing_real_words"].mean()), 2),
                         "copy_baseline_share_in_top": round(float((res["copy_rank"] <= n_qd).mean()), 3),
                         "logged_share_in_top": round(float((res["logged_exposing"] > 0).mean()), 3)}
        typer.echo(f"## {name}: {json.dumps(summary[name])}")
        texts = dict(zip(setup.collection.passages["doc_id"], setup.collection.passage_texts()))
        for row in res[hit].head(5).itertuples():
            typer.echo(f"  {row.doc_id}: {texts[row.doc_id][:90]!r} <- {row.example!r} (rank {row.best_unseen_rank:.0f}; "
                       f"copy baseline {row.copy_query!r}: rank {row.copy_rank:.0f})")
        if output_dir:
            output_dir.mkdir(parents=True, exist_ok=True)
            _write_csv(res, output_dir / f"generative-{name.split()[0]}.csv", index=False)
    if output_dir:
        atomic_write(output_dir / "summary.json", json.dumps(summary, indent=1))


def _shared_data() -> Path:
    """``../shared/data`` beside the checkout (or EQI_SHARED_DATA): the natural decoder's corpus."""
    env = os.environ.get("EQI_SHARED_DATA")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "shared" / "data"


DataRootOpt = typer.Option(None, "--data", help="folder with query-logs/ and BEIR collections (default ../shared/data)")


@app.command("decoder-corpus")
def decoder_corpus_cmd(
    output: Path = typer.Option(..., "--output", "-o", callback=_file_to_write, help="the corpus Parquet file to write"),
    data: Path | None = DataRootOpt,
    version: int = typer.Option(CORPUS_VERSION, "--corpus-version", min=1, max=2, help="2: the evaluated collections' queries never "
                                "trained on; 1: the shipped decoders' corpus (8 of DL19's queries in training)"),
) -> None:
    """Write the natural decoder's training corpus: every query log plus sentences cut from WordNet glosses,
    DL19, SciFact and Cranfield passages, with held-out splits by hash and, from version 2, without DL19's,
    SciFact's and Cranfield's queries (never trained on)."""
    from eqi_core.decoder.corpus import build_corpus, default_recipe

    recipe = default_recipe(data or _shared_data(), version)
    summary = build_corpus(recipe, output, tqdm_progress("cutting sentences", "collection"))
    typer.echo(json.dumps({k: v for k, v in summary.items() if k != "recipe"}, indent=1))


@app.command("decoder-synthetic")
def decoder_synthetic_cmd(
    output: Path = typer.Option(..., "--output", "-o", callback=_file_to_write, help="the augmented corpus Parquet file to write"),
    corpus: Path | None = typer.Option(None, "--corpus", help="the corpus of real text (eqi decoder-corpus), or one this command "
                                       "augmented (a further round: its samples are kept); default: built from "
                                       "../shared/data into the store"),
    decoder: Path = typer.Option(Path("assets/decoders/natural-minilm-l6"), "--decoder", callback=_decoder_folder,
                                 help="the trained natural decoder that samples"),
    points: int = typer.Option(200_000, "-n", "--points", min=1, max=5_000_000,
                               help="sampling points (one sample each; about 65% survive the filters)"),
    noise: list[float] = typer.Option([0.3, 0.45], "--noise", help="norm(s) of the Gaussian noise around a training query"),
    temperature: float = typer.Option(1.0, "--temperature", min=0.05, max=5.0),
    top_p: float = typer.Option(0.95, "--top-p", min=0.01, max=1.0),
    seed: int = typer.Option(0, "--seed"),
) -> None:
    """Add a trained decoder's own samples around the training queries to a corpus (kind 'synthetic'), each to be
    paired with its true embedding when the next decoder trains on it; resumable (rerun to continue). Given an
    augmented corpus, a further round (rows 'synthetic-N'; a second round measured no gain: README)."""
    from eqi_core.decoder.corpus import read_corpus
    from eqi_core.decoder.natural import load_natural, read_natural_card
    from eqi_core.decoder.synthetic import SyntheticRecipe, build_synthetic
    from eqi_core.rankers import load_encoder

    if corpus is None:
        from eqi_core.decoder.natural_eval import corpus_path_for

        corpus = corpus_path_for(_store(), _shared_data())
    recipe = SyntheticRecipe(n=points, noise=tuple(noise), temperature=temperature, top_p=top_p, seed=seed)
    recipe.validate()
    read_corpus(corpus)  # a wrong file fails now, before the models load
    encoder = load_encoder(read_natural_card(decoder)["encoder"])
    model = load_natural(decoder, encoder)
    summary = build_synthetic(corpus, model, encoder, output, recipe, _store(), tqdm_progress("sampling", "part"))
    typer.echo(json.dumps(summary["synthetic"], indent=1))


@app.command("decoder-lexicon")
def decoder_lexicon_cmd(
    decoder: Path = typer.Option(Path("assets/decoders/natural-minilm-l6"), "--decoder", help="a natural decoder folder"),
    corpus: Path | None = typer.Option(None, "--corpus", help="the corpus it was trained on (eqi decoder-corpus); "
                                       "default: built from ../shared/data into the store"),
) -> None:
    """Write a natural decoder's word list (its training text's words and WordNet's lemmas) beside its weights:
    decoding then completes known words only and never repeats a content word (train-decoder writes it too)."""
    from eqi_core.decoder.corpus import read_corpus
    from eqi_core.decoder.natural import read_natural_card, write_lexicon

    card = read_natural_card(decoder)
    if corpus is None:
        from eqi_core.decoder.natural import corpus_version
        from eqi_core.decoder.natural_eval import corpus_path_for

        corpus = corpus_path_for(_store(), _shared_data(), corpus_version(decoder))
    table, summary = read_corpus(corpus)
    trained_on = (card.get("corpus") or {}).get("digest")
    if trained_on and trained_on != summary.get("digest"):
        raise DataError(f"{corpus}: corpus {summary.get('digest')}, but {decoder} was trained on {trained_on}")
    typer.echo(json.dumps(write_lexicon(decoder, table), indent=1))


@app.command("train-decoder")
def train_decoder_cmd(
    collection: str = CollectionOpt,
    encoder: str = typer.Option("minilm-l6", "--encoder", "-e", help="a dense ranker id (sentence-transformers)"),
    natural: bool = typer.Option(False, "--natural", help="the natural-language decoder (warm-started BERT layers) "
                                 "on --corpus, instead of the lemma decoder on the collection's log"),
    corpus: Path | None = typer.Option(None, "--corpus", help="natural: the corpus (eqi decoder-corpus); default: "
                                       "built from ../shared/data into the store"),
    steps: int | None = typer.Option(None, "--steps", min=1, max=1_000_000, help="default 4500 (lemma), 12000 (natural)"),
    batch_size: int | None = typer.Option(None, "--batch-size", min=2, max=4096, help="default 128 (lemma), 512 (natural)"),
    lr: float | None = typer.Option(None, "--lr", help="peak learning rate (default 6e-4 lemma, 5e-4 natural)"),
    device: str = typer.Option("cpu", "--device", help="cpu, or cuda where a GPU is at hand (bf16 autocast)"),
    max_minutes: float | None = typer.Option(None, "--max-minutes", help="stop (with a checkpoint) after this long; rerun to resume"),
    passage_queries: int = typer.Option(3, "--passage-queries", min=0, max=50,
                                        help="lemma decoder: pseudo-queries drawn from each passage (0: the query log only)"),
    layers: int | None = typer.Option(None, "--layers", min=1, max=12, help="default 4 (lemma), 6 (natural)"),
    seed: int = typer.Option(0, "--seed"),
    export: Path | None = typer.Option(None, "--export", callback=_folder_to_write, help="also copy the checkpoint (safetensors + card.json) here"),
    init: Path | None = typer.Option(None, "--init", help="natural: start from this trained natural decoder (a second "
                                     "stage) instead of the encoder's own layers"),
    query_share: float = typer.Option(0.5, "--query-share", min=0.0, max=1.0,
                                      help="natural: share of each batch from the query logs (1: queries only)"),
    noise: float = typer.Option(0.1, "--noise", min=0.0, max=2.0, help="natural: norm of the Gaussian noise around half the points"),
    warmup: int | None = typer.Option(None, "--warmup", min=0, help="natural: warm-up steps (default 1000)"),
    dropout: float = typer.Option(0.1, "--dropout", min=0.0, max=0.9, help="natural: dropout in the decoder layers"),
    word_dropout: float = typer.Option(0.0, "--word-dropout", min=0.0, max=0.9,
                                       help="natural: share of the teacher-forced input words replaced by [MASK]"),
    styles: bool = typer.Option(False, "--styles", help="natural: learn a style per kind of text (query-log "
                                "query / passage sentence); it then decodes every point as a query"),
    average: float = typer.Option(0.0, "--average", min=0.0, max=0.9999,
                                  help="natural: keep a running average of the weights with this decay "
                                  "(e.g. 0.999) and ship the average (0: the last weights)"),
    cosine: float = typer.Option(0.0, "--cosine", min=0.0, max=100.0,
                                 help="natural: weight of the encoder's judgment of the decoder's own free-running "
                                 "samples (each pushed toward the samples that land closest to their point; 0: none)"),
    samples: int = typer.Option(4, "--samples", min=2, max=64, help="natural, with --cosine: samples drawn per point"),
    prefix: int = typer.Option(8, "--prefix", min=1, max=64, help="natural: how many vectors the embedding enters as "
                               "(a learned projection in front of the tokens)"),
) -> None:
    """Train a query decoder for an encoder; resumable (rerun the same command to continue)."""
    import time

    from eqi_core.rankers import load_encoder, ranker_spec

    if ranker_spec(encoder).family != "dense":
        raise DataError(f"--encoder {encoder}: a query decoder inverts a dense encoder; expected minilm-l6 or st:<folder>")
    if device != "cpu":
        import torch

        if not device.startswith("cuda") or not torch.cuda.is_available():
            raise DataError(f"--device {device}: expected cpu, or cuda on a machine with a CUDA GPU")
    if init is not None and not natural:
        raise DataError(f"--init {init}: only the natural decoder (--natural) trains from another decoder's weights")
    if cosine and not natural:
        raise DataError(f"--cosine {cosine}: only the natural decoder (--natural) trains with the encoder's judgment")
    if natural:
        from eqi_core.decoder.natural import NaturalTraining, train_natural

        cfg = NaturalTraining(steps=steps or 12000, batch_size=batch_size or 512, lr=lr or 5e-4, n_layers=layers or 6, seed=seed,
                              n_prefix=prefix,
                              query_share=query_share, noise=noise, warmup=1000 if warmup is None else warmup,
                              dropout=dropout, word_dropout=word_dropout, styles=styles, average=average,
                              cosine=cosine, samples=samples)
        if corpus is None:
            from eqi_core.decoder.natural_eval import corpus_path_for

            corpus = corpus_path_for(_store(), _shared_data())
        deadline = time.time() + 60 * max_minutes if max_minutes else None
        dec = train_natural(corpus, load_encoder(encoder), _store(), cfg, device, tqdm_progress("training decoder", "step"),
                            deadline=deadline, command=" ".join(["eqi", *sys.argv[1:]]), init=init)
        if dec is None:
            typer.echo("stopped with a checkpoint; rerun the same command to resume")
            raise typer.Exit(3)
    else:
        from eqi_core.decoder.train import DecoderTraining, train_or_load_decoder

        cfg = DecoderTraining(steps=steps or 4500, batch_size=batch_size or 128, lr=lr or 6e-4, passage_queries=passage_queries,
                              n_layers=layers or 4, seed=seed)
        dec = train_or_load_decoder(_load(collection), load_encoder(encoder), _store(), cfg,
                                    tqdm_progress("training decoder", "step"))
    src = Path(dec.card["_folder"])
    if export:
        export.mkdir(parents=True, exist_ok=True)
        for name in ("decoder.safetensors", "card.json", "lexicon.txt.gz"):
            if (src / name).is_file():
                atomic_copy(src / name, export / name)
    card = {k: v for k, v in dec.card.items() if k not in ("_folder", "corpus")}
    typer.echo(json.dumps(card, indent=1, default=str))


def _latent_space(collection: str, encoder: str, decoder: Path | None, exclude_heldout: bool = True):
    from eqi_core.decoder.neural import read_card
    from eqi_core.decoder.space import open_space

    if decoder is not None:
        read_card(decoder)  # a mistyped --decoder fails now, not after the collection is encoded
    coll, heldout_q = _with_heldout(collection)
    space = open_space(coll, _store(), encoder, decoder, heldout_q if exclude_heldout else (),
                       progress=tqdm_progress("preparing", "item"))
    return space, heldout_q


DecoderOpt = typer.Option(None, "--decoder", callback=_decoder_folder, help="a checkpoint folder (card.json + decoder.safetensors); "
                          "default: trained on this collection in the store, else the one shipped in assets/")
EncoderOpt = typer.Option("minilm-l6", "--encoder", "-e", help="the dense encoder whose space is decoded")


def _with_heldout(spec: str):
    """A spec's collection and its hash-held-out query ids (never walked, trained or tuned on)."""
    from eqi_core.decoder.train import DecoderTraining, heldout_split

    coll = _load(spec)
    return coll, heldout_split(coll, DecoderTraining().heldout_share)[0]


def _judged_among(coll, query_ids) -> bool:
    """Whether any of these queries has a relevant judged passage with text (a walk's gold passage)."""
    from eqi_core.judged import gold_passage

    known = set(coll.passages["doc_id"].astype(str))
    return any(gold_passage(coll.judgments.get(str(q), {}), known) for q in query_ids)


def _suggestion_space(collection, encoder: str, exclude_heldout: bool = True, decoder: Path | None = None):
    """A collection's (a spec's, or one ``_with_heldout`` loaded) latent space with the natural decoder
    that speaks the shipped suggesters (``suggestion_decoder``; suggestions speak natural language
    everywhere; ``decoder``: another natural decoder), held-out queries hidden from every pool."""
    from eqi_core.decoder.space import open_space
    from eqi_core.suggestion.model import suggestion_decoder

    coll, heldout_q = _with_heldout(collection) if isinstance(collection, str) else collection
    return open_space(coll, _store(), encoder, decoder or suggestion_decoder(encoder), heldout_q if exclude_heldout else (),
                      progress=tqdm_progress(f"preparing {coll.name}", "item")), heldout_q


@app.command("reformulations")
def reformulations_cmd(
    collections: list[str] = typer.Option(..., "--collection", "-c", help="collections with judgments (repeat -c); "
                                          "e.g. wordnet:full, beir:../shared/data/scifact#train, beir:../shared/data/cranfield"),
    encoder: str = EncoderOpt,
    steps: int = typer.Option(20, "--steps", "-k", min=1, max=50, help="K: decoded steps from the query to its gold passage"),
    max_queries: int = typer.Option(4000, "--max-queries", min=1, help="per collection: a seeded sample of its training queries"),
    golds: int = typer.Option(2, "--golds", min=1, help="walks per query, to its most relevant judged passages"),
    beam: int = typer.Option(2, "--beam", min=1, max=16),
    seed: int = typer.Option(0, "--seed"),
    max_minutes: float | None = typer.Option(None, "--max-minutes", help="stop after this long (parts kept); rerun to resume"),
    output: Path | None = typer.Option(None, "--output", "-o", callback=_file_to_write, help="also write the statistics JSON here"),
) -> None:
    """Build the reformulation dataset (paper Section 4): walk from each training query to its gold passages,
    decode every step, keep the successful rewrites. Resumable; stored with its provenance and statistics."""
    import time

    from eqi_core.suggestion.dataset import ReformulationRecipe, build_reformulations, read_reformulations

    recipe = ReformulationRecipe(steps=steps, beam=beam, max_queries=max_queries, golds_per_query=golds, seed=seed)
    recipe.validate()
    loaded = [_with_heldout(c) for c in collections]  # a mistyped spec fails before any collection is encoded
    spaces = [_suggestion_space(c, encoder)[0] for c in loaded]
    deadline = time.time() + 60 * max_minutes if max_minutes else None
    art = build_reformulations(spaces, _store(), recipe, tqdm_progress("walking", "walk"), deadline)
    if art is None:
        typer.echo("stopped; the finished parts are kept: rerun the same command to resume")
        raise typer.Exit(3)
    _, _, stats = read_reformulations(art.path)
    _echo_json({"path": str(art.path), **stats}, output)


SuggesterOpt = typer.Option(None, "--suggester", help="a suggester folder (card.json + suggester.safetensors); "
                            "default: trained in the store, else the one shipped in assets/suggesters")


@app.command("train-suggester")
def train_suggester_cmd(
    model: str = typer.Option(..., "--model", "-m", help="plain (query -> rewrite) or prf (query + top-5 passages -> rewrite)"),
    encoder: str = EncoderOpt,
    steps: int = typer.Option(4000, "--steps", min=1, max=1_000_000),
    batch_size: int = typer.Option(256, "--batch-size", min=2, max=8192),
    lr: float = typer.Option(5e-4, "--lr"),
    seed: int = typer.Option(0, "--seed"),
    points: int = typer.Option(1, "--points", min=1, max=10, help="predicted rewrite embeddings per query; > 1 trains "
                               "them winner-take-all (each may specialise) and shares the samples out among them"),
    max_minutes: float | None = typer.Option(None, "--max-minutes", help="stop (with a checkpoint) after this long; rerun to resume"),
    export: Path | None = typer.Option(None, "--export", callback=_folder_to_write, help="also copy the model (safetensors + card.json) here"),
) -> None:
    """Train a query suggestion model on the newest reformulation dataset (eqi reformulations); resumable."""
    import time

    from eqi_core.rankers import load_encoder
    from eqi_core.suggestion.model import CARD, KINDS, WEIGHTS, SuggesterTraining, find_dataset, train_suggester

    if model not in KINDS:  # before the encoder and the dataset are looked for
        raise DataError(f"--model {model!r}: expected one of {', '.join(KINDS)}")
    cfg = SuggesterTraining(steps=steps, batch_size=batch_size, lr=lr, seed=seed, points=points)
    cfg.validate()
    enc = load_encoder(encoder)
    dataset = find_dataset(_store(), enc.id)
    deadline = time.time() + 60 * max_minutes if max_minutes else None
    sugg = train_suggester(dataset, model, enc, _store(), cfg, tqdm_progress(f"training {model} suggester", "step"),
                           deadline, " ".join(["eqi", *sys.argv[1:]]))
    if sugg is None:
        typer.echo("stopped with a checkpoint; rerun the same command to resume")
        raise typer.Exit(3)
    if export:
        export.mkdir(parents=True, exist_ok=True)
        for name in (WEIGHTS, CARD):
            atomic_copy(Path(sugg.card["_folder"]) / name, export / name)
    typer.echo(json.dumps({k: v for k, v in sugg.card.items() if k not in ("_folder", "dataset")}, indent=1, default=str))


@app.command("train-suggestion-ranker")
def train_suggestion_ranker_cmd(
    collections: list[str] = typer.Option(..., "--collection", "-c", help="collections whose training queries have judgments "
                                          "(repeat -c); held-out queries are never used"),
    encoder: str = EncoderOpt,
    suggester: Path | None = SuggesterOpt,
    queries: int = typer.Option(400, "--queries", min=1, help="per collection, a seeded sample of its training queries"),
    seed: int = typer.Option(0, "--seed"),
    target: str = typer.Option("gain", "--target", help="gain: the candidate's nDCG@10 minus the query's; beats: "
                               "whether it is above the query's"),
    pick_penalty: float = typer.Option(PICK_PENALTY, "--pick-penalty",
                                       help="word-overlap penalty of the pick (0: by score alone)"),
    export: Path | None = typer.Option(None, "--export", callback=_folder_to_write, help="folder for ranker.json (default: the PRF suggester's own)"),
    pool_samples: int = typer.Option(POOL_SAMPLES, "--pool-samples", min=1, help="nucleus samples at the predicted points "
                                     "in each pool (shared out among them), for fitting and, via ranker.json, for suggesting"),
    decoder: Path | None = typer.Option(None, "--decoder", callback=_decoder_folder, help="another natural decoder to speak the pools' candidates "
                                        "(default: the one the suggesters' cards name, speaks_with); the pools are kept "
                                        "per decoder"),
) -> None:
    """Fit the PRF suggester's candidate re-ranker: pools (its samples + a sample at each feedback-walk point)
    for training queries,
    each candidate's nDCG@10 gain over its query, a linear model of it (ranker.json)."""
    import time

    from eqi_core.decoder.natural import read_natural_card
    from eqi_core.rankers import load_encoder
    from eqi_core.store import file_sha256
    from eqi_core.suggestion.evaluate import evaluation_items
    from eqi_core.suggestion.model import find_suggester
    from eqi_core.suggestion.rerank import POOL_DESCRIPTION, POOLS_VERSION, TARGETS, fit_pools, training_pools

    if target not in TARGETS:  # before any model loads
        raise DataError(f"--target {target!r}: expected one of {', '.join(TARGETS)}")
    if not pick_penalty >= 0:
        raise DataError(f"--pick-penalty {pick_penalty:g}: expected a number >= 0")
    if decoder is not None:
        read_natural_card(decoder)  # a mistyped folder fails before any pool is built
    chosen = []
    for spec in collections:  # every collection checked before the first one's pools are built
        coll, heldout_q = _with_heldout(spec)
        held = set(map(str, heldout_q))
        training = [q for q in coll.queries["query_id"].astype(str) if q not in held]
        if not _judged_among(coll, training):
            raise DataError(f"{spec}: no judged training queries to fit the ranker on")
        chosen.append(((coll, heldout_q), training))
    enc = load_encoder(encoder)
    sugg = find_suggester("prf", enc, _store(), suggester)
    started = time.time()
    pools, counts = {}, {}
    for loaded, training in chosen:
        space, _ = _suggestion_space(loaded, encoder, exclude_heldout=False, decoder=decoder)
        items = evaluation_items(space, training, queries, seed)
        spoken_by = Path(space.model.card.get("_folder", decoder or "")).name
        pools[space.collection.name] = training_pools(space, sugg, items, _store(),
                                                      tqdm_progress(f"candidate pools ({space.collection.name})", "query"),
                                                      pool_samples)
        counts[space.collection.name] = {"queries": len(items), "candidates": len(pools[space.collection.name]["gain"])}
    ranker = fit_pools(pools, target)
    ranker.pick_penalty, ranker.samples = pick_penalty, pool_samples
    folder = export or Path(sugg.card["_folder"])
    card = {"trained_on": counts, "pools": {"version": POOLS_VERSION, "candidates": POOL_DESCRIPTION,
                                            "samples": pool_samples, "spoken_by": spoken_by},
            "suggester_weights_sha256": file_sha256(Path(sugg.card["_folder"]) / "suggester.safetensors"),
            "target": f"{target}: {TARGETS[target]}, centred per query (ridge regression)",
            "pick": ("descending score, each round a different first passage (cover_first)" if not pick_penalty else
                     f"each round a different first passage, by the score standardised in the pool minus {pick_penalty:g} x "
                     "the largest word Jaccard with an earlier pick (cover_first)"),
            "seconds_this_call": round(time.time() - started, 1), "command": " ".join(["eqi", *sys.argv[1:]])}
    ranker.save(folder, card)
    typer.echo(json.dumps({**card, "weights": dict(zip(ranker.features, ranker.weights.round(4).tolist()))}, indent=1))


@app.command("suggest")
def suggest_cmd(
    query: str = typer.Argument(..., help="the query to reformulate"),
    collection: str = CollectionOpt,
    encoder: str = EncoderOpt,
    model: str = typer.Option("prf", "--model", "-m", help="prf, plain, or all (both models and the baselines)"),
    suggester: Path | None = SuggesterOpt,
    n: int = typer.Option(10, "-n", min=1, max=10, help="suggestions per model"),
    ranker: str | None = typer.Option(None, "--ranker", "-r", help="also score each suggestion with this ranker "
                                      "(e.g. bm25): its nDCG@10 and the gold passage's rank in its top 100"),
    output: Path | None = typer.Option(None, "--output", "-o", callback=_file_to_write, help="write the table as CSV"),
) -> None:
    """Suggest better queries; with the collection's judgments for the query, each with its nDCG@10
    (the encoder's dense ranker, and --ranker's too)."""
    from eqi_core.decoder.traversal import check_query
    from eqi_core.rankers import build_ranker, ranker_spec
    from eqi_core.suggestion.panel import CHOICES, feedback_passages, rank_labels, score_with_ranker, suggestion_table

    query = check_query(query)  # bad input fails before the collection's space is opened
    _warn_spec_like(query, "suggest")
    if model not in CHOICES:
        raise DataError(f"--model {model!r}: expected one of {', '.join(CHOICES)}")
    if ranker is not None:
        ranker_spec(ranker)  # an unknown ranker fails here, in one line
    if suggester is not None:
        from eqi_core.suggestion.model import read_suggester_card

        read_suggester_card(suggester)  # a mistyped folder too, before the collection's space is opened
    space, _ = _suggestion_space(collection, encoder, exclude_heldout=False)
    _warn_language(space)
    _warn_typed(space, query, "query")
    table = suggestion_table(space, _store(), query, model, n, suggester)
    judged = table["ndcg10"].notna().any()
    if not judged:
        typer.echo(f"no judgments for {query!r} in this collection: suggestions without nDCG@10")
    elif ranker is not None and ranker != encoder:
        qid = space.collection.find_query(query)
        table = score_with_ranker(table, build_ranker(ranker, space.collection, _store()),
                                  space.collection.judgments.get(qid, {}), space.gold_passage(qid))
    shown = table if judged else table.drop(columns=["ndcg10", "gold_rank"])
    for column in [c for c in shown.columns if c.startswith("gold_rank_")]:  # beyond the ranker's top 100: say so
        shown = shown.assign(**{column: rank_labels(shown[column])})
    typer.echo(shown.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    if model != "plain":  # what the PRF suggester (and RM3, the feedback walks) read beside the query
        fed = feedback_passages(space, query)
        typer.echo(f"# the feedback they read: the query's top {len(fed)} passages in {space.encoder.id}'s space")
        if judged:
            fed = fed.assign(grade=fed["grade"].astype(object).where(fed["grade"].notna(), "unjudged"))
        else:
            fed = fed.drop(columns=["grade", "target"])
        passages = fed.pop("passage").str.slice(0, 100)
        width = int(passages.str.len().max())  # the text left-aligned under a left-aligned header
        typer.echo(fed.assign(**{"passage".ljust(width): passages.str.ljust(width)}).to_string(
            index=False, float_format=lambda v: f"{v:.3f}"))
    if output:
        _write_csv(table, output, index=False)


@app.command("eval-suggestions")
def eval_suggestions_cmd(
    collections: list[str] = typer.Option(..., "--collection", "-c", help="collections with held-out judged queries "
                                          "(repeat -c): e.g. wordnet:full, beir:../shared/data/scifact, beir:../shared/data/trec-dl19-passage"),
    encoder: str = EncoderOpt,
    queries: int = typer.Option(100, "--queries", min=1, help="per collection, a seeded sample of held-out judged queries"),
    all_queries: bool = typer.Option(False, "--all-queries", help="use every judged query (collections never seen in training, "
                                     "e.g. SciFact test and TREC DL 2019) instead of the hash-held-out ones"),
    oracle: bool = typer.Option(True, "--oracle/--no-oracle", help="also the walk to the gold passage (upper reference)"),
    data: Path | None = DataRootOpt,
    seed: int = typer.Option(0, "--seed"),
    output_dir: Path | None = typer.Option(None, "--output-dir", "-o", callback=_folder_to_write,
                                           help="write summary.csv, lists.jsonl and summary.json here"),
    write_card: list[Path] = typer.Option([], "--write-card", callback=_cards_to_update, help="also store the table in these suggester folders' "
                                          "card.json (rows of the same collections replaced); the page shows it"),
    only: str | None = typer.Option(None, "--only", help="re-run only these methods (comma-separated: rm3, feedback-term, "
                                    "random-term, sampling, centroid, walks, plain, prf, oracle); the others' lists are read from the earlier "
                                    "run's lists.jsonl in --output-dir (same collections, queries and seed)"),
    decoder: Path | None = typer.Option(None, "--decoder", callback=_decoder_folder, help="another natural decoder to speak the suggestions "
                                        "(e.g. assets/decoders/natural-minilm-l6); default: the one the suggesters' "
                                        "cards name (speaks_with)"),
    suggester: list[Path] = typer.Option([], "--suggester", help="a suggester folder in place of the one of its kind "
                                         "(repeat for both; e.g. a re-ranker on trial); not with --write-card"),
) -> None:
    """Best-of-1/3/5/10 nDCG@10 with bootstrap 95% intervals, a typical suggestion's gain, Self-BLEU and fluency
    for RM3, two probes (the query plus a random word), Sampling+QD, the feedback baselines, the plain and PRF
    suggesters and the oracle walk (paper Figure 5, Tables 6-7)."""
    import pandas as pd

    if decoder is not None:
        from eqi_core.decoder.natural import read_natural_card

        read_natural_card(decoder)  # a mistyped folder fails now
        if write_card:
            raise DataError(f"--decoder {decoder} with --write-card: the suggesters' cards hold the table of the "
                            "decoder they name (speaks_with); drop one of them")
    if suggester and write_card:
        raise DataError(f"--suggester {suggester[0]} with --write-card: the cards hold the shipped suggesters' "
                        "tables; drop one of them")

    from eqi_core.decoder.natural_eval import corpus_for, fluency_judge, real_words
    from eqi_core.rankers import load_encoder
    from eqi_core.suggestion.evaluate import (
        METHOD_KEYS,
        evaluation_items,
        merge_rerun,
        replace_card_rows,
        score_lists,
        suggestion_lists,
        summary,
    )
    from eqi_core.suggestion.model import find_suggester, load_suggester

    rerun, earlier = None, None
    if only:
        keys = [k.strip() for k in only.split(",") if k.strip()]
        unknown = [k for k in keys if k not in METHOD_KEYS]
        if unknown or not keys:
            raise DataError(f"--only {only}: expected some of {', '.join(METHOD_KEYS)}")
        rerun = {METHOD_KEYS[k] for k in keys}
        source = (output_dir or Path(".")) / "lists.jsonl"
        if output_dir is None or not source.is_file():
            raise DataError(f"--only: {source} not found: --output-dir must hold an earlier run's lists.jsonl")
        try:
            earlier = pd.read_json(source, lines=True, dtype=False)  # ids stay text ("0012")
        except ValueError as exc:
            raise DataError(f"{source}: not a lists.jsonl of eqi eval-suggestions ({exc})") from None
        if not {"collection", "query_id", "method", "suggestions", "best@10"} <= set(earlier.columns):
            raise DataError(f"{source}: expected the columns of eqi eval-suggestions' lists.jsonl "
                            "(collection, query_id, method, suggestions, best@k...)")
    chosen = []
    for spec in collections:  # every collection checked before the first one is evaluated (an hour, for some)
        coll, heldout_q = _with_heldout(spec)
        pool = coll.queries["query_id"].astype(str).tolist() if all_queries else heldout_q
        if not _judged_among(coll, pool):
            raise DataError(f"{spec}: no judged held-out queries to evaluate on (try --all-queries for a collection "
                            "never used in training)")
        chosen.append(((coll, heldout_q), pool))
    enc = load_encoder(encoder)
    suggesters = {k: find_suggester(k, enc, _store()) for k in ("plain", "prf")}
    for folder in suggester:
        given = load_suggester(folder, enc)
        suggesters[given.kind] = given
    root = data or _shared_data()
    lexicon = real_words(corpus_for(_store(), root)[0], root)
    judge = fluency_judge(_store(), root)
    tables, lists = [], []
    for loaded, pool in chosen:
        space, _ = _suggestion_space(loaded, encoder, exclude_heldout=False, decoder=decoder)
        items = evaluation_items(space, pool, queries, seed)
        scored = score_lists(space, suggestion_lists(space, items, suggesters, tqdm_progress(f"suggesting ({space.collection.name})", "query"),
                                                     oracle=oracle, only=rerun))
        if earlier is not None:
            scored = merge_rerun(earlier[earlier["collection"] == space.collection.name].drop(columns="collection"),
                                 scored, items, f"{output_dir / 'lists.jsonl'} ({space.collection.name})")
        tables.append(summary(scored, lexicon, judge).assign(collection=space.collection.name))
        lists.append(scored.assign(collection=space.collection.name))
    table = pd.concat(tables, ignore_index=True)
    typer.echo(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    if output_dir:
        output_dir.mkdir(parents=True, exist_ok=True)
        _write_csv(table, output_dir / "summary.csv", index=False)
        with atomic_path(output_dir / "lists.jsonl") as tmp:
            pd.concat(lists, ignore_index=True).to_json(tmp, orient="records", lines=True)
        from eqi_core.suggestion.model import suggestion_decoder

        atomic_write(output_dir / "summary.json", json.dumps({"samples": {"queries": queries, "seed": seed,
                     "all_queries": all_queries}, "decoder": str(decoder or suggestion_decoder(encoder)),
                     "suggesters": {k: str(v.card.get("_folder", "")) for k, v in suggesters.items()},
                     "rows": table.to_dict(orient="records")}, indent=1, default=str))
    for folder in write_card:
        from eqi_core.suggestion.model import CARD, DECODING, describe_decoding, read_suggester_card

        card = read_suggester_card(folder)
        names = set(table["collection"])
        decoding = describe_decoding(DECODING)  # rows measured with another decoding stay told apart
        ranker = suggesters["prf"].ranker
        if ranker is not None:
            penalty = f", word-overlap penalty {ranker.pick_penalty:g}" if ranker.pick_penalty else ""
            decoding += (f"; PRF picked by its re-ranker from {ranker.samples or DECODING.samples} samples "
                         f"(+ a sample at each feedback-walk point{penalty})")
        card["evaluation"] = replace_card_rows(card.get("evaluation", []),
                                               [{**r, "decoding": decoding} for r in json.loads(table.to_json(orient="records"))])
        commands = card.get("evaluation_commands")
        commands = commands if isinstance(commands, dict) else {}  # older cards: a hand-written list
        this = " ".join(["eqi", *sys.argv[1:]])
        card["evaluation_commands"] = {**commands, **{name: _evaluation_provenance(commands.get(name), this, bool(only))
                                                      for name in sorted(names)}}
        atomic_write(folder / CARD, json.dumps(card, indent=1, default=str))


def _evaluation_provenance(before: str | None, this: str, only: bool) -> str:
    """The command a card names for a collection's table: a run with --only keeps the other methods'
    lists of the run before it, so both are named (once, when the same --only run is repeated)."""
    if not (only and before):
        return this
    return before if before.endswith(this) else f"{before}, then {this}"


@app.command("rescore-suggestions")
def rescore_suggestions_cmd(
    lists: Path = typer.Argument(..., help="an eqi eval-suggestions run's lists.jsonl"),
    collection: str = CollectionOpt,
    ranker: str = typer.Option("bm25", "--ranker", "-r", help="the ranker that scores the suggestions (e.g. bm25)"),
    output_dir: Path | None = typer.Option(None, "--output-dir", "-o", callback=_folder_to_write, help="write summary_<ranker>.csv and "
                                           "lists_<ranker>.jsonl here"),
) -> None:
    """The same suggestions, scored by another ranker: best-of-k nDCG@10 of each method when a searcher
    types them into --ranker (the evaluation scores them with the dense ranker they were made for)."""
    import pandas as pd

    from eqi_core.rankers import build_ranker, ranker_spec
    from eqi_core.suggestion.evaluate import rescore_lists, summary

    ranker_spec(ranker)  # an unknown ranker fails here, in one line
    try:
        frame = pd.read_json(lists, lines=True, dtype=False)
    except (ValueError, OSError) as exc:
        raise DataError(f"{lists}: not a lists.jsonl of eqi eval-suggestions ({exc})") from None
    needed = {"collection", "query_id", "query", "gold", "method", "suggestions"}
    if not needed <= set(frame.columns):
        raise DataError(f"{lists}: expected the columns of eqi eval-suggestions' lists.jsonl ({', '.join(sorted(needed))})")
    coll = _load(collection)
    mine = frame[frame["collection"] == coll.name]
    if mine.empty:
        raise DataError(f"{lists}: no lists for {coll.name} (collections there: {', '.join(sorted(set(frame['collection'])))})")
    scored = rescore_lists(mine.drop(columns="collection"), build_ranker(ranker, coll, _store()), coll.judgments)
    table = summary(scored).assign(collection=coll.name, ranker=ranker)
    typer.echo(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    if output_dir:
        output_dir.mkdir(parents=True, exist_ok=True)
        _write_csv(table, output_dir / f"summary_{ranker}.csv", index=False)
        with atomic_path(output_dir / f"lists_{ranker}.jsonl") as tmp:
            scored.assign(collection=coll.name).to_json(tmp, orient="records", lines=True)


@app.command("eval-decoder")
def eval_decoder_cmd(
    collection: str = CollectionOpt,
    encoder: str = EncoderOpt,
    decoder: Path | None = DecoderOpt,
    queries: int = typer.Option(300, "--queries", min=1, help="held-out queries for the round trip (Table 1)"),
    passages: int = typer.Option(300, "--passages", min=1, help="held-out gold passages (Table 2)"),
    traversal: int = typer.Option(100, "--traversal", min=1, help="queries walked to their gold passage (Figure 3)"),
    guided_traversal: int = typer.Option(30, "--guided-traversal", min=0, help="of those, walked with guided correction"),
    suggest: int = typer.Option(100, "--suggest", min=1, help="queries for the suggestion baselines (Figure 5)"),
    steps: int = typer.Option(10, "--steps", "-k", min=1, max=50),
    mode: str = typer.Option("linear", "--mode", help="linear or slerp"),
    seed: int = typer.Option(0, "--seed"),
    output_dir: Path | None = typer.Option(None, "--output-dir", "-o", callback=_folder_to_write, help="write CSVs and summary.json here"),
    write_card: Path | None = typer.Option(None, "--write-card", callback=_cards_to_update,
                                           help="add the metrics to this checkpoint's card.json"),
    natural: bool = typer.Option(False, "--natural", help="natural language: round trip on held-out query-log questions, "
                                 "passage -> query on held-out DL19 and SciFact passages, with copy/lookup baselines and fluency"),
    slow: int = typer.Option(100, "--slow", min=1, help="natural: items for the encoder-in-the-loop methods (about 1 s each)"),
    only: str | None = typer.Option(None, "--only", help="natural: re-evaluate these methods (comma-separated) on the same "
                                    "seeded samples; with --write-card their rows replace the card's"),
    on_wordnet: bool = typer.Option(False, "--on-wordnet", help="compare the natural and the WordNet lemma decoders "
                                    "on WordNet items neither was trained on (which one the WordNet collection should use)"),
    data: Path | None = DataRootOpt,
) -> None:
    """Decoder evaluation on held-out data: paper Tables 1, 2, 6/7 and Figure 3; with --natural, the natural-language
    evaluation (decoder alone, encoder in the loop, and baselines reported apart)."""
    from eqi_core.decoder.evaluate import run_evaluation
    from eqi_core.decoder.traversal import MODES

    if on_wordnet:
        _compare_on_wordnet(decoder, queries, passages, seed, output_dir, write_card)
        return
    if natural:
        _eval_natural(decoder, queries, passages, slow, seed, output_dir, write_card, data, only)
        return

    if mode not in MODES:
        raise DataError(f"--mode {mode}: expected one of {', '.join(MODES)}")
    space, heldout_q = _latent_space(collection, encoder, decoder)
    res = run_evaluation(space, heldout_q, queries, passages, traversal, guided_traversal, suggest, steps, mode, seed,
                         lambda label: tqdm_progress(label, "item"))
    fmt = lambda v: f"{v:.3f}"
    typer.echo(f"{space.collection.name}, encoder {encoder}, decoder {space.model.card.get('_folder')}")
    typer.echo(f"samples: {json.dumps(res['samples'])}")
    typer.echo("Tables 1 and 2 (round trip on held-out queries; passage -> query, share retrieved at top-k):")
    typer.echo(res["summary"].to_string(float_format=fmt))
    typer.echo("Figure 3: mean nDCG@10 per step on queries whose step-0 decoding has nDCG@10 < 1 (step -1 = the original query):")
    typer.echo(res["curve_summary"].pivot(index="step", columns="decoder", values="ndcg10").to_string(float_format=fmt))
    typer.echo("Figure 5 / Table 6: max nDCG@10 of the original and the best k suggestions; Self-BLEU:")
    typer.echo(res["suggestions"].to_string(float_format=fmt))
    metrics = {"summary": json.loads(res["summary"].to_json(orient="index")),
               "curve": json.loads(res["curve_summary"].to_json(orient="records")),
               "suggestions": json.loads(res["suggestions"].to_json(orient="index")), "samples": res["samples"],
               "collection": space.collection.name, "command": " ".join(["eqi", *sys.argv[1:]])}
    if output_dir:
        output_dir.mkdir(parents=True, exist_ok=True)
        for name in ("summary", "round_trip", "passage_to_query", "curve", "curve_summary", "suggestions", "suggestion_lists"):
            _write_csv(res[name], output_dir / f"{name}.csv", index=name in ("summary", "suggestions"))
        atomic_write(output_dir / "summary.json", json.dumps(metrics, indent=1))
    if write_card:
        _write_card_metrics(write_card, "metrics", metrics)


def _write_card_metrics(folder: Path, key: str, metrics: dict) -> None:
    """Add an evaluation to a checkpoint's card.json (atomically)."""
    card_path = folder / "card.json"
    try:
        card = json.loads(card_path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise DataError(f"{card_path}: cannot read the card ({exc})") from None
    card[key] = metrics
    atomic_write(card_path, json.dumps(card, indent=1))
    typer.echo(f"metrics written to {card_path}")


def _eval_natural(decoder, queries, passages, slow, seed, output_dir, write_card, data, only=None) -> None:
    from eqi_core.decoder.natural_eval import GROUPS, evaluate_natural

    methods = {m.strip() for m in only.split(",")} if only else None
    if methods and methods - set(GROUPS):
        raise DataError(f"--only {only}: expected some of {', '.join(GROUPS)}")
    res = evaluate_natural(_store(), data or _shared_data(), decoder, queries, passages, slow, seed,
                           lambda label: tqdm_progress(label, "item"), only=methods)
    fmt = lambda v: f"{v:.3f}"
    typer.echo(f"decoder {res['settings']['decoder']}; settings {json.dumps(res['settings']['rerank'])}")
    typer.echo(res["summary"].to_string(float_format=fmt))
    typer.echo(f"references (held-out queries): {json.dumps({k: round(v, 3) for k, v in res['reference_fluency'].items()})}")
    typer.echo("round trip by query source (the paper's 0.75 / 0.96 are MS MARCO's):")
    typer.echo(res["by_source"].to_string(index=False, float_format=fmt))
    metrics = {"summary": json.loads(res["summary"].to_json(orient="index")), "settings": res["settings"],
               "by_source": json.loads(res["by_source"].to_json(orient="records")),
               "reference_fluency": res["reference_fluency"], "command": " ".join(["eqi", *sys.argv[1:]])}
    if output_dir:
        output_dir.mkdir(parents=True, exist_ok=True)
        _write_csv(res["round_trip"], output_dir / "round_trip.csv", index=False)
        _write_csv(res["by_source"], output_dir / "round_trip_by_source.csv", index=False)
        for key, frame in res["passage_to_query"].items():
            _write_csv(frame, output_dir / f"passage_to_query-{key}.csv", index=False)
        _write_csv(res["summary"], output_dir / "summary.csv")
        atomic_write(output_dir / "summary.json", json.dumps(metrics, indent=1))
    if write_card:
        if methods:  # replace these methods' rows in the card's evaluation, keep the others
            from eqi_core.decoder.natural_eval import with_rows_replaced

            card = json.loads((write_card / "card.json").read_text(encoding="utf-8"))
            metrics = with_rows_replaced(card.get("natural_metrics", {}), metrics, methods)
        _write_card_metrics(write_card, "natural_metrics", metrics)


def _compare_on_wordnet(decoder, queries, passages, seed, output_dir, write_card) -> None:
    from eqi_core.decoder.natural_eval import compare_on_wordnet
    from eqi_core.decoder.space import shipped_decoders, shipped_natural_decoder

    natural = decoder or shipped_natural_decoder("minilm-l6")
    lemma = next((f for f in shipped_decoders() if f.name == "wordnet-minilm-l6"), None)
    if lemma is None:
        raise DataError("--on-wordnet: the WordNet lemma decoder (assets/decoders/wordnet-minilm-l6) is not shipped here")
    res = compare_on_wordnet(_store(), natural, lemma, queries, passages, seed, lambda label: tqdm_progress(label, "item"))
    typer.echo(f"WordNet ({res['settings']['collection']}): {json.dumps(res['settings'])}")
    typer.echo(res["summary"].to_string(float_format=lambda v: f"{v:.3f}"))
    metrics = {"summary": json.loads(res["summary"].to_json(orient="index")), "settings": res["settings"],
               "command": " ".join(["eqi", *sys.argv[1:]])}
    if output_dir:
        output_dir.mkdir(parents=True, exist_ok=True)
        _write_csv(res["round_trip"], output_dir / "round_trip.csv", index=False)
        _write_csv(res["passage_to_query"], output_dir / "passage_to_query.csv", index=False)
        atomic_write(output_dir / "summary.json", json.dumps(metrics, indent=1))
    if write_card:
        _write_card_metrics(write_card, "wordnet_comparison", metrics)


@app.command("decode")
def decode_cmd(
    text: str | None = typer.Argument(None, help="a passage (or any text) to decode queries from"),
    collection: str = CollectionOpt,
    encoder: str = EncoderOpt,
    decoder: Path | None = DecoderOpt,
    method: str = typer.Option("decoder+rerank", "--method",
                               help="decoder+rerank, decoder, nearest-query or word-edit search"),
    n: int = typer.Option(5, "-n", min=1, max=50),
    input_file: Path | None = typer.Option(None, "--input", "-i", help="decode every line of this text file instead"),
    output: Path | None = typer.Option(None, "--output", "-o", callback=_file_to_write, help="with --input: write JSON lines here"),
) -> None:
    """Decode queries from a text's embedding (e.g. a passage): each with its cosine to the text and the
    rank the text would get for it among the collection's passages. --input/--output decode a file of texts."""
    from eqi_core.decoder.space import decoder_name

    method = decoder_name(method)
    lines = _decode_inputs(text, input_file, output)
    space, _ = _latent_space(collection, encoder, decoder, exclude_heldout=False)
    _warn_language(space)
    if input_file is None:
        decoded = space.decode_text(lines[0][1], method, n)  # bad text fails here, before any note
        _warn_typed(space, lines[0][1], "text")
        typer.echo("cosine\trank\tsource\tdecoded query")
        for row in decoded.itertuples(index=False):
            typer.echo(f"{row[2]:.3f}\t{row[3]}\t{row[1]}\t{row[0]}")
        return
    progress = tqdm_progress("decoding", "text")
    records = []
    for i, (line_no, line) in enumerate(lines):
        decoded = space.decode_text(line, method, n)
        notes = space.typed_notes(line, "text")
        records.append(json.dumps({"line": line_no, "text": line, "method": method, "decoded": [
            {"query": q, "source": src, "cosine": round(float(c), 4), "rank": int(r)}
            for q, src, c, r in decoded.itertuples(index=False)], **({"notes": notes} if notes else {})}))
        progress(i + 1, len(lines))
    atomic_write(output, "\n".join(records) + "\n")
    typer.echo(f"{len(records)} texts decoded into {output}")


def _warn_language(space) -> None:
    """The page's warning on stderr: the decoder does not speak the collection's language."""
    if space.language_warning:
        typer.echo(f"note: {space.language_warning}", err=True)


_SPEC_LIKE = re.compile(r"(beir|msmarco|irds|wordnet):\S*|wordnet")


def _warn_spec_like(text: str, command: str) -> None:
    """A note on stderr when a query text reads as a collection spec or a folder ("eqi search
    beir:PATH QUERY" searches WordNet for the spec's text): the collection is named with -c."""
    text = text.strip()
    pathlike = "/" in text and len(text) < 4096 and "\n" not in text  # "pages" is a word; "../data/x" a folder
    if _SPEC_LIKE.fullmatch(text) or (pathlike and Path(text).expanduser().is_dir()):
        typer.echo(f"note: {text!r} is read as a query, but looks like a collection; name the collection with -c, "
                   f"e.g. eqi {command} -c {text} ...", err=True)


def _warn_typed(space, text: str, what: str) -> None:
    """The latent pages' warnings on stderr: what the encoder does not read of the text, or a language
    the decoder does not write (``LatentSpace.typed_notes``)."""
    for note in space.typed_notes(text, what):
        typer.echo(f"note: {note}", err=True)
    logged = space.collection.query_text.get(text.strip()) if what == "query" else None
    if logged is not None and space.collection.find_query(text) is None:
        typer.echo(f"note: {text.strip()!r} is read as a typed query, not as the logged query with that id "
                   f"({logged[:80]!r}): give the query's text to start from it", err=True)


def _decode_inputs(text: str | None, input_file: Path | None, output: Path | None) -> list[tuple[int, str]]:
    """(line number, text) of the texts to decode: the argument, or the non-empty lines of --input,
    numbered as in the file (blank lines skipped); one-line errors."""
    if (text is None) == (input_file is None):
        raise DataError("decode: give a text, or --input FILE (one text per line) with --output FILE.jsonl")
    if input_file is None:
        return [(1, text)]
    if output is None:
        raise DataError(f"--input {input_file}: also give --output FILE.jsonl for the decoded queries")
    from eqi_core.loaders.text_files import gunzipped

    try:
        raw = gunzipped(input_file, input_file.read_bytes())  # a .gz file as every other input
    except OSError as exc:
        raise DataError(f"--input {input_file}: cannot read it ({exc.strerror or exc})") from None
    if b"\0" in raw[:4096]:
        raise DataError(f"--input {input_file}: not a text file (binary data); expected one text per line")
    try:  # a byte-order mark (Windows editors write one) is not part of the first text
        lines = [(i + 1, ln.strip()) for i, ln in enumerate(raw.decode("utf-8-sig").splitlines()) if ln.strip()]
    except UnicodeDecodeError as exc:
        raise DataError(f"--input {input_file}: not UTF-8 text (byte {exc.start}); expected one text per line") from None
    if not lines:
        raise DataError(f"--input {input_file}: no text in the file; expected one text per line")
    from eqi_core.encoders import MAX_PASSAGE_CHARS

    for line_no, line in lines:  # refused now, not after the lines before it were decoded
        if len(line) > MAX_PASSAGE_CHARS:
            raise DataError(f"--input {input_file}: line {line_no}: {len(line):,} characters; at most {MAX_PASSAGE_CHARS:,}")
    return lines


@app.command("traverse")
def traverse_cmd(
    query: str = typer.Argument(..., help="a query (from the log or typed)"),
    target: str | None = typer.Option(None, "--target", "-t", help="target passage id (default: the query's gold passage)"),
    collection: str = CollectionOpt,
    encoder: str = EncoderOpt,
    decoder: Path | None = DecoderOpt,
    method: str = typer.Option("decoder+rerank", "--method",
                               help="decoder+rerank, decoder, nearest-query or word-edit search"),
    steps: int = typer.Option(10, "--steps", "-k"),
    mode: str = typer.Option("linear", "--mode", help="linear or slerp"),
    stop_early: bool = typer.Option(False, "--stop-early", help="stop once the target is ranked first"),
    ranker: str | None = typer.Option(None, "--ranker", "-r", help="also search every step with this ranker (e.g. "
                                      "bm25): its nDCG@10 and the target's rank in its top 100"),
    output: Path | None = typer.Option(None, "--output", "-o", callback=_file_to_write, help="write the steps as CSV"),
    figures: Path | None = typer.Option(None, "--figures", callback=_folder_to_write, help="write the page's two figures here (the UMAP map of "
                                        "the walk, rank and nDCG@10 per step), each as HTML and PNG at 3x (--figure-formats: SVG, PDF)"),
    figure_formats: str = FigureFormatsOpt,
) -> None:
    """Walk from a query to a passage in the latent space and decode a reformulation at each step."""
    from eqi_core.decoder.space import decoder_name
    from eqi_core.decoder.traversal import check_query, check_walk, traverse
    from eqi_core.figure_export import figure_formats as _formats
    from eqi_core.rankers import build_ranker, ranker_spec
    from eqi_core.suggestion.panel import rank_labels, score_with_ranker

    formats = _formats(figure_formats)
    # every option checked before the collection's space is opened (encoding it takes minutes)
    query = check_query(query)
    check_walk(steps, mode)
    decoder_name(method)
    _warn_spec_like(query, "traverse")
    if ranker is not None:
        ranker_spec(ranker)  # an unknown ranker fails here, in one line
    space, _ = _latent_space(collection, encoder, decoder, exclude_heldout=False)
    _warn_language(space)
    qid = space.collection.find_query(query)
    _warn_typed(space, query, "query")
    target = target or (space.gold_passage(qid) if qid else None)
    if not target:
        raise DataError(f"query {query!r} has no judged passage in {space.collection.name}: give --target")
    trav = traverse(space, query, target, steps, mode, method, qid, stop_early, tqdm_progress("traversal", "step"))
    table = trav.steps
    if ranker is not None and ranker != encoder:
        table = score_with_ranker(table, build_ranker(ranker, space.collection, _store()), space.qrels_for(qid, target),
                                  target, text_column="decoded")
    shown = table.assign(**{c: rank_labels(table[c]) for c in table.columns if c.startswith("gold_rank_")})
    typer.echo(shown.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    hit = trav.first_top1()
    if int(space.ranks(trav.query_emb, space.passage_index(target))[0]) == 1:
        typer.echo(f"the query as typed already ranks passage {target} first")
        typer.echo(f"the first reformulation that does too: {hit['decoded']!r} (step {hit['step']})" if hit is not None
                   else f"no reformulation does; best rank {trav.best()['target_rank']}")
    else:
        typer.echo(f"what should have been asked: {hit['decoded']!r} (step {hit['step']})" if hit is not None
                   else f"no step ranks passage {target} first; best rank {trav.best()['target_rank']}")
    if ranker is not None and ranker != encoder:
        ranks = table[f"gold_rank_{ranker}"]
        first = table[(ranks == 1).fillna(False) & ~table["original"].astype(bool)]
        typer.echo(f"under {ranker}: the query as typed ranks passage {target} {rank_labels(ranks).iloc[0]}; "
                   + (f"first ranked first at step {first['step'].iloc[0]}: {first['decoded'].iloc[0]!r}" if len(first)
                      else "no reformulation ranks it first"))
    if output:
        output.parent.mkdir(parents=True, exist_ok=True)
        _write_csv(table, output, index=False)
    if figures:
        from eqi_core.figure_export import write_figure_files
        from eqi_core.figures.latent import trajectory, traversal_steps
        from eqi_core.projection import trajectory_map

        points, path = trajectory_map(space, trav)
        written = write_figure_files({"traversal_map": trajectory(points, path), "traversal_steps": traversal_steps(trav.steps)},
                                     figures, formats)
        typer.echo(f"wrote {len(written)} figure files to {figures}")


@bench_app.command("decoder")
def bench_decoder_cmd(
    collection: str = CollectionOpt,
    encoder: str = EncoderOpt,
    decoder: Path | None = DecoderOpt,
    queries: int = typer.Option(20, "--queries", min=1, help="held-out queries to decode"),
    traversals: int = typer.Option(3, "--traversals", min=1),
    output: Path | None = typer.Option(None, "--output", "-o", callback=_file_to_write),
) -> None:
    """Decode latency (decoder alone vs. re-ranked by the encoder) and full K = 10 traversal time."""
    from eqi_core.bench import bench_decoder

    space, heldout_q = _latent_space(collection, encoder, decoder)
    _echo_json(bench_decoder(space, heldout_q, queries, traversals), output)


@bench_app.command("suggest")
def bench_suggest_cmd(
    collection: str = CollectionOpt,
    encoder: str = EncoderOpt,
    queries: int = typer.Option(20, "--queries", min=1, help="held-out queries to suggest for"),
    output: Path | None = typer.Option(None, "--output", "-o", callback=_file_to_write),
) -> None:
    """Ten suggestions for one query: p50 per suggestion model against Sampling+QD (target p50 <= 1 s)."""
    from eqi_core.bench import bench_suggest
    from eqi_core.suggestion.model import find_suggester

    space, _ = _suggestion_space(collection, encoder)
    suggesters = {k: find_suggester(k, space.encoder, _store()) for k in ("prf", "plain")}
    # latency, not quality: any of the collection's queries will do
    _echo_json(bench_suggest(space, suggesters, space.collection.queries["query_id"].astype(str).tolist(), queries), output)


@bench_app.command("exposure")
def bench_exposure_cmd(
    collection: str = CollectionOpt,
    full_log: str = typer.Option("wordnet:full", "--latency-collection", help="collection whose full log the latency uses"),
    output: Path | None = typer.Option(None, "--output", "-o", callback=_file_to_write, help="also write the JSON here"),
    engine: str = typer.Option("inprocess", "--engine", help="inprocess: exact map vs faiss + latency; "
                               "dask: the sharded map in-process vs LocalCluster (1, 2 workers) [vs --scheduler]"),
    ranker: str = typer.Option("minilm-l6", "--ranker", "-r", help="ranker of the map (--engine dask)"),
    scheduler: str | None = typer.Option(None, "--scheduler", help="also time this Dask scheduler (--engine dask)"),
) -> None:
    """Exact exposure-map throughput vs faiss (or in-process vs Dask); one-passage EQI latency on a full log."""
    from eqi_core.bench import bench_exposure

    store = _store()
    if engine == "dask":
        from eqi_core.bench import bench_exposure_dask

        _echo_json(bench_exposure_dask(_load(collection, store), store, ranker, scheduler=scheduler), output)
        return
    if engine != "inprocess":
        raise DataError(f"--engine {engine}: expected inprocess (exact map vs faiss) or dask")
    _echo_json(bench_exposure(_load(collection, store), _load(full_log, store), store), output)


@bench_app.command("pasted")
def bench_pasted_cmd(
    collection: str = CollectionOpt,
    n: int = typer.Option(10, "--n", min=1, help="passages to paste (copies of the collection's own)"),
    output: Path | None = typer.Option(None, "--output", "-o", callback=_file_to_write, help="also write the JSON here"),
) -> None:
    """Exact BM25 exposure of a pasted passage vs re-running every logged query on the grown collection."""
    from eqi_core.bench import bench_pasted_bm25

    _echo_json(bench_pasted_bm25(_load(collection, _store()), n=n), output)


@bench_app.command("encode")
def bench_encode_cmd(
    collection: str = CollectionOpt,
    n: int = typer.Option(2000, "--n", min=10, help="passages to encode"),
    output: Path | None = typer.Option(None, "--output", "-o", callback=_file_to_write, help="also write the JSON here"),
) -> None:
    """Passages/s of the default encoder (onnxruntime export) vs sentence-transformers' own encode (target >= 1.5x)."""
    from eqi_core.bench import bench_encode

    _echo_json(bench_encode(_load(collection, _store()), n=n), output)


@bench_app.command("dense")
def bench_dense_cmd(
    collection: str = CollectionOpt,
    queries: int = typer.Option(2000, "--queries", min=1, help="queries to search"),
    k: int = typer.Option(100, "-k", min=1, max=10_000),
    output: Path | None = typer.Option(None, "--output", "-o", callback=_file_to_write, help="also write the JSON here"),
) -> None:
    """Exact top-k search time vs faiss.IndexFlatIP on the same embeddings (target >= 2x)."""
    from eqi_core.bench import bench_dense

    store = _store()
    _echo_json(bench_dense(_load(collection, store), store, n_queries=queries, k=k), output)


@bench_app.command("memory")
def bench_memory_cmd(
    collection: str = typer.Option("wordnet:full", "--collection", "-c"),
    dense: bool = typer.Option(False, "--dense", help="also index/search with MiniLM-L6 (encodes every passage)"),
    output: Path | None = typer.Option(None, "--output", "-o", callback=_file_to_write, help="also write the JSON here"),
) -> None:
    """Peak RSS of each CLI command on a collection (default: the full WordNet), one process each."""
    from eqi_core.bench import bench_memory

    _echo_json(bench_memory(collection, dense), output)


@bench_app.command("scale")
def bench_scale_cmd(
    sizes: str = typer.Option("10000,30000,100000,full", "--sizes", help="WordNet synset counts, comma-separated ('full': all)"),
    k: int = typer.Option(100, "-k", min=1, max=1000),
    output: Path | None = typer.Option(None, "--output", "-o", callback=_file_to_write, help="also write the JSON here"),
) -> None:
    """Exact map time and peak RSS as WordNet grows (10k ... 117k passages with their logs), beside the cost model."""
    from eqi_core.bench import bench_scale

    _echo_json(bench_scale(_store(), _scale_sizes(sizes), k), output)


def _scale_sizes(sizes: str) -> tuple:
    try:
        parsed = tuple(None if s.strip() == "full" else int(s) for s in sizes.split(",") if s.strip())
    except ValueError:
        raise DataError(f"--sizes {sizes!r}: expected comma-separated synset counts or 'full'") from None
    if not parsed or any(n is not None and n < 100 for n in parsed):
        raise DataError(f"--sizes {sizes!r}: expected at least one size, each >= 100 synsets or 'full'")
    return parsed


@bench_app.command("all")
def bench_all_cmd(
    collection: str = CollectionOpt,
    full_log: str = typer.Option("wordnet:full", "--latency-collection", help="collection whose full log the latency uses"),
    sizes: str = typer.Option("10000,30000,100000,full", "--sizes", help="WordNet synset counts of the scale benchmark"),
    output: Path | None = typer.Option(None, "--output", "-o", callback=_file_to_write, help="also write the JSON here"),
) -> None:
    """exposure, dense, encode and scale in one run and one JSON, with the CPU and the commit."""
    from eqi_core.bench import bench_all, bench_dense, bench_encode, bench_exposure, bench_scale

    store = _store()
    parsed = _scale_sizes(sizes)  # bad input before any work
    coll = _load(collection, store)
    steps = {
        "exposure": lambda: bench_exposure(coll, _load(full_log, store), store),
        "dense": lambda: bench_dense(coll, store),
        "encode": lambda: bench_encode(coll),
        "scale": lambda: bench_scale(store, parsed),
    }
    result = bench_all(steps, lambda line: typer.echo(line, err=True))
    _echo_json(result, output)
    if result["failed"]:
        raise typer.Exit(1)


@bench_app.command("reruns")
def bench_reruns_cmd(
    page: list[str] = typer.Option([], "--page", help="only this page (repeat): collection, exposure, exposure_eval, "
                                   "latent, suggestions, coverage"),
    reruns: int = typer.Option(5, "--reruns", min=1, help="reruns timed on each page"),
    output: Path | None = typer.Option(None, "--output", "-o", callback=_file_to_write, help="also write the JSON here"),
) -> None:
    """What a user waits after each click: every page's first run and reruns on the default collection,
    against a one-line page's rerun (run the dashboard once first, so the store is warm)."""
    from eqi_core.bench import PAGES, bench_reruns

    unknown = [p for p in page if p not in PAGES]
    if unknown:
        raise DataError(f"--page {unknown[0]}: expected one of {', '.join(PAGES)}")
    _echo_json(bench_reruns(tuple(page) or PAGES, reruns), output)


@bench_app.command("first-visit")
def bench_first_visit_cmd(
    baseline: bool = typer.Option(True, "--baseline/--no-baseline", help="also measure with every vector encoded here"),
    timeout: int = typer.Option(900, "--timeout", min=30, help="seconds to wait for each step"),
    others: bool = typer.Option(True, "--others/--no-others", help="also time the home page's other examples and the "
                                "Suggestions page as first clicks, each on its own empty store"),
    output: Path | None = typer.Option(None, "--output", "-o", callback=_file_to_write, help="also write the JSON here"),
) -> None:
    """A newcomer's first visit in a real browser on an empty store: server ready, Collection page,
    and the curated exposure example after its click (targets: 10 s and 60 s); the other examples too."""
    from eqi_core.bench import bench_first_visit

    _echo_json(bench_first_visit(baseline, timeout, others), output)


@bench_app.command("tasc")
def bench_tasc_cmd(
    queries: int = typer.Option(7000, "--queries", min=10),
    rankers: int = typer.Option(6, "--rankers", min=2),
    output: Path | None = typer.Option(None, "--output", "-o", callback=_file_to_write, help="also write the JSON here"),
) -> None:
    """Time to compute the per-query matrix + TaSC (target < 5 s for 6 rankers x 7k queries)."""
    from eqi_core.bench import bench_tasc

    _echo_json(bench_tasc(n_queries=queries, n_rankers=rankers), output)


@bench_app.command("figures")
def bench_figures_cmd(
    clicks: int = typer.Option(5, "--clicks", min=1, help="PNG clicks each way, taking turns"),
    output: Path | None = typer.Option(None, "--output", "-o", callback=_file_to_write, help="also write the JSON here"),
) -> None:
    """A PNG download's time: one kaleido browser kept between clicks against a browser per click."""
    from eqi_core.bench import bench_figures

    _echo_json(bench_figures(clicks), output)


HELP_PANELS = {  # `eqi --help` lists the commands by what they are for, as the dashboard's pages are
    "Collections and search": ("index", "search", "judgments", "run"),
    "Exposure": ("exposure", "retrievability", "exposure-map", "train-exposure", "eval-exposure", "eval-generative"),
    "Ranker coverage": ("evaluate", "tasc"),
    "Latent space: decoding and traversal": ("decode", "traverse", "eval-decoder", "train-decoder", "decoder-corpus",
                                             "decoder-synthetic", "decoder-lexicon"),
    "Query suggestions": ("suggest", "eval-suggestions", "rescore-suggestions", "reformulations", "train-suggester",
                          "train-suggestion-ranker"),
    "Benchmarks and maintenance": ("ship-embeddings",),
}


def command_name(info) -> str:
    return info.name or info.callback.__name__.replace("_", "-")


def _tidy_help() -> None:
    """Each command in its panel, the panels in ``HELP_PANELS``' order, each listed by its
    docstring's first paragraph on one line (the docstrings' own line breaks made ragged rows)."""
    import inspect

    panels = list(HELP_PANELS)
    panel_of = {name: panel for panel, names in HELP_PANELS.items() for name in names}
    for info in app.registered_commands:
        info.rich_help_panel = panel_of.get(command_name(info))
        if not info.short_help:
            info.short_help = " ".join((inspect.getdoc(info.callback) or "").split("\n\n")[0].split())
    app.registered_commands.sort(key=lambda info: panels.index(info.rich_help_panel) if info.rich_help_panel in panels
                                 else len(panels))


_tidy_help()


def main() -> None:
    """Console entry point: bad input is one line on stderr and exit code 2, never a traceback."""
    try:
        app()
    except DataError as exc:
        typer.echo(f"error: {exc}", err=True)
        sys.exit(2)
    except InterruptedError as exc:
        typer.echo(f"stopped: {exc}", err=True)
        sys.exit(3)
    except FileNotFoundError as exc:
        typer.echo(f"error: {exc}", err=True)
        sys.exit(2)
    except OSError as exc:  # a disk that filled up, a file that could not be written: one line, the file named
        typer.echo(f"error: {exc.filename}: {exc.strerror}" if exc.filename and exc.strerror else f"error: {exc}",
                   err=True)
        sys.exit(2)
    except ModuleNotFoundError as exc:  # an install problem, not bad input
        typer.echo(f"error: missing dependency: {MissingDependency.from_import(exc)}", err=True)
        sys.exit(4)
    except (MissingDependency, FigureExportError) as exc:
        typer.echo(f"error: {exc}", err=True)
        sys.exit(4)


if __name__ == "__main__":
    main()
