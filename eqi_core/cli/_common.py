"""What every command shares: the typer apps, common options, output checks and the global --log."""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

import typer

from eqi_core.errors import DataError
from eqi_core.loaders import load_collection
from eqi_core.loaders.registry import DEFAULT_SPEC
from eqi_core.rankers import DEFAULT_RANKER, RANKERS
from eqi_core.store import ArtifactStore, atomic_path, atomic_write

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
    """A CSV output, written whole or not at all (a killed run leaves no half file for a reader), with
    formula-like text marked as text for spreadsheets (``table_export``)."""
    from eqi_core.table_export import spreadsheet_safe

    with atomic_path(path) as tmp:
        spreadsheet_safe(frame).to_csv(tmp, **to_csv)


def _echo_json(obj: dict, output: Path | None) -> None:
    text = json.dumps(obj, indent=2)
    typer.echo(text)
    if output:
        atomic_write(output, text + "\n")


_SPEC_LIKE = re.compile(r"(beir|msmarco|irds|wordnet):\S*|wordnet")


def _warn_spec_like(text: str, command: str) -> None:
    """A note on stderr when a query text reads as a collection spec or a folder ("eqi search
    beir:PATH QUERY" searches WordNet for the spec's text): the collection is named with -c."""
    text = text.strip()
    pathlike = "/" in text and len(text) < 4096 and "\n" not in text  # "pages" is a word; "../data/x" a folder
    if _SPEC_LIKE.fullmatch(text) or (pathlike and Path(text).expanduser().is_dir()):
        typer.echo(f"note: {text!r} is read as a query, but looks like a collection; name the collection with -c, "
                   f"e.g. eqi {command} -c {text} ...", err=True)


def _say(line: str) -> None:
    """A line on stderr, between progress bars (a long job's notice that it heard a Ctrl-C)."""
    typer.echo(f"\n{line}", err=True)
