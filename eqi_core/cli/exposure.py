"""Exposure: which queries expose a passage, retrievability, exact maps, the learned heads and their evaluation."""
from __future__ import annotations

import json
import math
from pathlib import Path

import typer

from eqi_core.cli._common import CollectionOpt, FigureFormatsOpt, _file_to_write, _folder_to_write, _load, _store, _write_csv, app
from eqi_core.errors import DataError
from eqi_core.progress import tqdm_progress
from eqi_core.rankers import RANKERS, embedding_dimension, ranker_spec
from eqi_core.store import atomic_write


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
                             engine=engine, space=space, passages=False)
    for note in setup.notes:
        typer.echo(f"note: {note}", err=True)
    return setup


def _encode_passages(setup, why: str) -> None:
    """Every passage in the dense space, which ``_exposure_setup`` leaves until needed (a learned head's
    training), encoded with its own progress line."""
    if not setup.passages_encoded():
        typer.echo(f"note: {why} needs every passage in {setup.space}'s space: encoding the "
                   f"{len(setup.collection.passages):,} passages once (kept in the store)", err=True)
        setup.encode_passages(tqdm_progress(f"encoding passages with {setup.space}", "passage"))


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
    from eqi_core.exposure.lookup import passage_exposure, patience_grids, validate_text, what_a_query_shows, what_a_query_shows_says
    from eqi_core.exposure.relq import relq_exh_ndcg, relq_rbp
    from eqi_core.exposure.setup import listed_n_dq
    from eqi_core.figure_export import figure_formats as _formats
    from eqi_core.matching import with_shared_words, word_overlap_line

    formats = _formats(figure_formats)  # a wrong name fails before any map is built
    relq_rbp(gamma_qd, gamma_dq)  # so does a patience outside (0, 1]
    if (passage is None) == (text is None):
        raise DataError("give either a passage id or --text, not both and not neither")
    if text is not None:
        validate_text(text)  # an empty paste fails before a head is trained (it was after, 104 s in)
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
            if not setup.learned_available(TrainingConfig(arch=arch), setup.test_passages()):
                _encode_passages(setup, f"training the {arch.title()} head (--no-heads skips it)")
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
    held_out = setup.test_passages(n_test, seed)
    if not setup.learned_available(config, held_out):
        _encode_passages(setup, f"training the {arch.title()} head")
    _, info = setup.learned(config, held_out, tqdm_progress(f"training {arch}", "step"))
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
    from eqi_core.exposure.evaluate import (
        UNDEFINED_TEST_NOTE,
        cached_table2,
        expanding_log,
        table2_available,
        training_size_grid,
        untrained_shares,
    )
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
    if grid or expanding or not table2_available(setup, n_test, n_dq, config):
        _encode_passages(setup, "the evaluation")
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
        typer.echo(t3.to_string(float_format=lambda v: f"{v:.3f}", na_rep="—"))
        if t3.isna().to_numpy().any():
            typer.echo("(—: those training queries expose no passage outside the held-out ones; no head trained)")
        if output_dir:
            _write_csv(t3, output_dir / "table3.csv")
    if expanding:
        f2 = expanding_log(setup, res["test_docs"], base=config, n_dq=n_dq, progress=tqdm_progress("expanding log", "step"))
        typer.echo("Expanding log (no retraining):")
        typer.echo(f2.to_string(index=False, float_format=lambda v: f"{v:.3f}", na_rep="—"))
        untrained = untrained_shares(f2)
        if untrained:
            typer.echo(f"({untrained})")
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
