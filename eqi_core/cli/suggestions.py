"""Query suggestions: the reformulation dataset, the suggesters, suggesting and evaluating."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import typer

from eqi_core.cli._common import (
    CollectionOpt,
    _cards_to_update,
    _decoder_folder,
    _echo_json,
    _file_to_write,
    _folder_to_write,
    _load,
    _say,
    _store,
    _warn_spec_like,
    _write_csv,
    app,
)
from eqi_core.cli.latent import DataRootOpt, EncoderOpt, _judged_among, _shared_data, _suggestion_space, _warn_language, _warn_typed, _with_heldout
from eqi_core.errors import DataError
from eqi_core.progress import tqdm_progress
from eqi_core.rankers import build_ranker, load_encoder, ranker_spec
from eqi_core.stopping import checkpoint_on_interrupt
from eqi_core.store import atomic_copy, atomic_path, atomic_write
from eqi_core.suggestion.rerank import PICK_PENALTY, POOL_SAMPLES


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
    with checkpoint_on_interrupt(_say):
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

    from eqi_core.suggestion.model import CARD, KINDS, WEIGHTS, SuggesterTraining, find_dataset, train_suggester

    if model not in KINDS:  # before the encoder and the dataset are looked for
        raise DataError(f"--model {model!r}: expected one of {', '.join(KINDS)}")
    cfg = SuggesterTraining(steps=steps, batch_size=batch_size, lr=lr, seed=seed, points=points)
    cfg.validate()
    enc = load_encoder(encoder)
    dataset = find_dataset(_store(), enc.id)
    deadline = time.time() + 60 * max_minutes if max_minutes else None
    with checkpoint_on_interrupt(_say):
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
    from eqi_core.suggestion.panel import CHOICES, feedback_passages, score_with_ranker, suggestion_table, with_rank_labels

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
    if judged and ranker is not None and ranker != encoder:  # beyond the ranker's top 100, or not retrieved: said
        shown = with_rank_labels(shown, ranker)
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
