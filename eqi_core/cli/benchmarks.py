"""``eqi bench``: JSON results, ours against a named baseline measured in the same run."""
from __future__ import annotations

from pathlib import Path

import typer

from eqi_core.cli._common import CollectionOpt, _echo_json, _file_to_write, _load, _store, bench_app
from eqi_core.cli.latent import DecoderOpt, EncoderOpt, _latent_space, _suggestion_space
from eqi_core.errors import DataError


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


@bench_app.command("drawing")
def bench_drawing_cmd(
    queries: int = typer.Option(13013, "--queries", min=2, help="queries of the two rankers' matrix (WordNet's 13,013)"),
    rounds: int = typer.Option(3, "--rounds", min=1, help="rounds, the figures taking turns"),
    output: Path | None = typer.Option(None, "--output", "-o", callback=_file_to_write, help="also write the JSON here"),
) -> None:
    """What chromium spends drawing the Ranker coverage page's figures, against the pairwise
    difference drawn as one bar per query (the page before)."""
    from eqi_core.bench import bench_drawing

    _echo_json(bench_drawing(queries, rounds), output)
