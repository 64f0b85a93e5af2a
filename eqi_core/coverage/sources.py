"""Where rankings for a comparison come from: live rankers, run files in a collection's folder,
uploaded TREC runs; and the release dates that order them."""
from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path

from eqi_core.collection import Collection
from eqi_core.errors import DataError
from eqi_core.loaders.text_files import inner_suffix
from eqi_core.progress import ProgressFn
from eqi_core.rankers import build_ranker, run_all_queries
from eqi_core.runs import Run, read_trec_run
from eqi_core.store import ArtifactStore


def run_files_beside(collection: Collection) -> list[Path]:
    """TREC run files in a ``runs/`` folder of a file-based collection (as trec-dl19-passage has),
    gzip-compressed or not."""
    source = collection.source.split(":", 1)[-1].split("#")[0]
    folder = Path(source) / "runs"
    return sorted(p for p in folder.glob("*") if inner_suffix(p) in (".trec", ".run", ".txt")) if folder.is_dir() else []


def run_name(path: Path) -> str:
    return path.name.split(".")[0]


def load_run_files(paths: list[Path]) -> dict[str, Run]:
    """Runs named by their file's first name part ('bm25.dl19.trec' -> 'bm25'; see combine_runs);
    files of the same name in different folders, as systems' outputs are often laid out
    (``bm25/run.trec``, ``dense/run.trec``), by their folder as well ('bm25/run', 'dense/run')."""
    file_names = [Path(p).name for p in paths]
    runs = []
    for p in paths:
        run, p = read_trec_run(p), Path(p)
        alike = file_names.count(p.name) > 1 and p.parent.name
        run.name = f"{p.parent.name}/{run_name(p)}" if alike else run_name(p)
        runs.append({run.name: run})
    return combine_runs(*runs)


def load_uploaded_runs(files: list[tuple[str, bytes]]) -> dict[str, Run]:
    """Runs from uploaded (file name, bytes), parsed in memory."""
    runs = []
    for filename, data in files:
        run = read_trec_run(filename, data=data)
        run.name = run_name(Path(filename))
        runs.append({run.name: run})
    return combine_runs(*runs)


def live_runs(collection: Collection, ranker_ids: list[str], store: ArtifactStore, k: int = 100,
              progress_for: Callable[[str, str], ProgressFn | None] | None = None) -> dict[str, Run]:
    """Each ranker's (cached) run over every query of the collection, named by ranker id.
    ``progress_for(ranker_id, stage)`` gives the progress of each stage ("indexing" its passages,
    "ranking" the queries), so a bar says which ranker it counts and what."""
    out = {}
    for rid in ranker_ids:
        ranker = build_ranker(rid, collection, store, progress=progress_for(rid, "indexing") if progress_for else None)
        run = run_all_queries(ranker, collection, store, k=k,
                              progress=progress_for(rid, "ranking") if progress_for else None)
        run.name = rid
        out[rid] = run
    return out


def combine_runs(*groups: dict[str, Run]) -> dict[str, Run]:
    """All rankings under distinct names, in the order given (live rankers first). A run file or
    upload named like a ranking already chosen (``bm25.dl19.trec`` beside the live BM25) is named
    by its whole file stem instead (``bm25.dl19``, which keeps BM25's release date); a clash that
    remains is a one-line error. Never drops a ranking silently."""
    out: dict[str, Run] = {}
    for group in groups:
        for name, run in group.items():
            if name in out:
                file_name = Path(str(run.meta.get("source", name))).name
                stem = file_name.rsplit(".", 1)[0]
                if stem in out or stem == name:
                    raise DataError(f"{file_name}: a ranking named {name!r} is already chosen; rename the file or "
                                    "leave one of them out")
                run, name = copy.copy(run), stem  # a shallow copy: cached runs keep their own name
                run.name = name
            out[name] = run
    return out
