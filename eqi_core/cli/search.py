"""Collections and search: list, inspect, index, search, judgments, run."""
from __future__ import annotations

import json
from pathlib import Path

import typer

from eqi_core.cli._common import CollectionOpt, RankerOpt, _file_to_write, _folder_to_write, _load, _store, _warn_spec_like, app, collections_app
from eqi_core.errors import DataError
from eqi_core.loaders import discover_collections
from eqi_core.loaders.registry import DEFAULT_SPEC, data_roots
from eqi_core.progress import tqdm_progress
from eqi_core.rankers import build_ranker, load_encoder, ranker_spec, run_all_queries


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
