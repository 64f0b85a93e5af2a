"""Latent space: the decoders' corpora and training, decoding, traversal and the decoders' evaluation."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import typer

from eqi_core.cli._common import (
    CollectionOpt,
    FigureFormatsOpt,
    _cards_to_update,
    _decoder_folder,
    _file_to_write,
    _folder_to_write,
    _load,
    _say,
    _store,
    _warn_spec_like,
    _write_csv,
    app,
)
from eqi_core.decoder.corpus import CORPUS_VERSION
from eqi_core.errors import DataError
from eqi_core.progress import tqdm_progress
from eqi_core.rankers import build_ranker, load_encoder, ranker_spec
from eqi_core.stopping import checkpoint_on_interrupt
from eqi_core.store import atomic_copy, atomic_write


def _shared_data() -> Path:
    """``../shared/data`` beside the checkout (or EQI_SHARED_DATA): the natural decoder's corpus."""
    from eqi_core.loaders.registry import shared_data

    return shared_data()


DataRootOpt = typer.Option(None, "--data", help="folder with query-logs/ and BEIR collections (default ../shared/data)")


# the shipped default decoder, wherever the command runs from (a path relative to the working directory
# names it only from the checkout); not decoder.space.ASSETS: importing that costs every command 1.2 s
SHIPPED_NATURAL = Path(__file__).resolve().parents[2] / "assets" / "decoders" / "natural-minilm-l6"
SHIPPED_NATURAL_SHOWN = "assets/decoders/natural-minilm-l6"


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
    decoder: Path = typer.Option(SHIPPED_NATURAL, "--decoder", callback=_decoder_folder, show_default=SHIPPED_NATURAL_SHOWN,
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
    decoder: Path = typer.Option(SHIPPED_NATURAL, "--decoder", show_default=SHIPPED_NATURAL_SHOWN, help="a natural decoder folder"),
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
        with checkpoint_on_interrupt(_say):
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
        from eqi_core.decoder.traversal import check_query
        from eqi_core.encoders import MAX_PASSAGE_CHARS

        # refused before the decoder loads (an empty text took 6 s to refuse); the same words as the page's
        check_query(text, "text", "give the text to decode, e.g. a passage", MAX_PASSAGE_CHARS)
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
    from eqi_core.suggestion.panel import rank_labels, score_with_ranker, with_rank_labels

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
    shown = with_rank_labels(table, ranker) if ranker is not None and ranker != encoder else table
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
        typer.echo(f"under {ranker}: the query as typed ranks passage {target} {rank_labels(table, ranker).iloc[0]}; "
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
