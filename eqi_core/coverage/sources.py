"""Where rankings for a comparison come from: live rankers, run files in a collection's folder,
uploaded TREC runs; and the release dates that order them."""
from __future__ import annotations

from pathlib import Path

from eqi_core.collection import Collection
from eqi_core.errors import DataError
from eqi_core.progress import ProgressFn
from eqi_core.rankers import build_ranker, run_all_queries
from eqi_core.runs import Run, read_trec_run
from eqi_core.store import ArtifactStore


def run_files_beside(collection: Collection) -> list[Path]:
    """TREC run files in a ``runs/`` folder of a file-based collection (as trec-dl19-passage has)."""
    source = collection.source.split(":", 1)[-1].split("#")[0]
    folder = Path(source) / "runs"
    return sorted(p for p in folder.glob("*") if p.suffix in (".trec", ".run", ".txt")) if folder.is_dir() else []


def run_name(path: Path) -> str:
    return path.name.split(".")[0]


def load_run_files(paths: list[Path]) -> dict[str, Run]:
    runs = {}
    for p in paths:
        name = run_name(Path(p))
        if name in runs:
            raise DataError(f"{p}: two runs are named {name!r}; rename one file")
        run = read_trec_run(p)
        run.name = name
        runs[name] = run
    return runs


def load_uploaded_runs(files: list[tuple[str, bytes]]) -> dict[str, Run]:
    """Runs from uploaded (file name, bytes), parsed in memory."""
    runs = {}
    for filename, data in files:
        name = run_name(Path(filename))
        if name in runs:
            raise DataError(f"{filename}: two uploaded runs are named {name!r}; rename one file")
        run = read_trec_run(filename, data=data)
        run.name = name
        runs[name] = run
    return runs


def live_runs(collection: Collection, ranker_ids: list[str], store: ArtifactStore, k: int = 100,
              progress: ProgressFn | None = None) -> dict[str, Run]:
    """Each ranker's (cached) run over every query of the collection, named by ranker id."""
    out = {}
    for rid in ranker_ids:
        ranker = build_ranker(rid, collection, store, progress=progress)
        run = run_all_queries(ranker, collection, store, k=k, progress=progress)
        run.name = rid
        out[rid] = run
    return out
