"""The ``eqi`` command: collections, search, exposure, ranker coverage, the latent space, query
suggestions and benchmarks, one module per group of ``eqi --help`` (the dashboard's pages)."""
from __future__ import annotations

import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# the CLI reports its own progress; transformers' "Loading weights" bar at every model load is noise
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")

import typer

from eqi_core.cli import benchmarks, coverage, exposure, latent, search, suggestions  # noqa: F401  (registers the commands)
from eqi_core.cli._common import app
from eqi_core.cli.latent import _decode_inputs  # noqa: F401  (tested directly)
from eqi_core.errors import DataError, FigureExportError, MissingDependency

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
