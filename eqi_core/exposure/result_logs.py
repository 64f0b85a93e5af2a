"""A search system's result log as a ranker for exposure: the black-box audit.

An auditor holds the system's query log and its result log (a TREC run, or a TSV/CSV/Parquet table
``qid, docid, rank[, score]``) but not the system. The ranker id ``run:<file>`` makes that file the
source of the exact exposure map (``compute_exposure_map``): every exposure feature (look-ups,
retrievability and Gini with never-retrieved passages, rank-size, query traits, the audit report,
reverse and learned EQI scored by RELQ) then works on it. What does not fit the collection is said
in notes: queries not in the log, passages not in the collection, lists shallower than n_q->d.
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from eqi_core.collection import Collection
from eqi_core.errors import DataError
from eqi_core.loaders.text_files import require_file
from eqi_core.runs import Run, read_run
from eqi_core.store import file_sha256

PREFIX = "run:"


def is_result_log(ranker_id: str) -> bool:
    return ranker_id.startswith(PREFIX)


def result_log_id(path: str | Path) -> str:
    """The ranker id of a result log file (absolute path, so links and keys do not depend on the cwd)."""
    return PREFIX + str(Path(path).expanduser().resolve())


def result_log_path(ranker_id: str) -> Path:
    return require_file(ranker_id[len(PREFIX):], "a result log (a TREC run or a TSV/CSV/Parquet file)")


def result_log_digest(ranker_id: str) -> str:
    """Content hash of the file: a changed file is a different ranker for the store. Cached by
    (path, size, mtime), so a page rerun does not re-read a large log."""
    path = result_log_path(ranker_id)
    stat = path.stat()
    return _digest(str(path.resolve()), stat.st_size, stat.st_mtime_ns)


@lru_cache(maxsize=64)
def _digest(path: str, size: int, mtime_ns: int) -> str:
    return file_sha256(Path(path))[:16]


def check_result_log(run: Run, collection: Collection, depth: int) -> list[str]:
    """One-line notes on what of the run the collection cannot use; an error when nothing fits."""
    f = run.frame
    notes = []
    known_q = f["query_id"].isin(set(collection.queries["query_id"]))
    known_d = f["doc_id"].isin(set(collection.passages["doc_id"]))
    if not known_q.any():
        raise DataError(f"{run.meta.get('source', run.name)}: none of its {f['query_id'].nunique():,} queries is in the "
                        f"query log of {collection.name}; expected a run over the log's queries")
    if not (known_q & known_d).any():
        raise DataError(f"{run.meta.get('source', run.name)}: none of the {f.loc[known_q, 'doc_id'].nunique():,} passages it "
                        f"returns for the log's queries is in {collection.name} (e.g. {f.loc[known_q, 'doc_id'].iloc[0]!r}); "
                        "expected a run over the collection's passages")
    unknown_q = f.loc[~known_q, "query_id"].nunique()
    if unknown_q:
        notes.append(f"{unknown_q:,} of the run's {f['query_id'].nunique():,} queries {'is' if unknown_q == 1 else 'are'} not in the query "
                     "log: ignored")
    unknown_d = int((known_q & ~known_d & (f["rank"] <= depth)).sum())  # deeper rows are never read
    if unknown_d:
        rows = "result row names a passage that is" if unknown_d == 1 else "result rows name passages that are"
        notes.append(f"{unknown_d:,} {rows} not in the collection (within rank {depth}): ignored")
    used = f[known_q]
    missing = len(collection.queries) - used["query_id"].nunique()
    if missing:
        have = "has no results in the run: it exposes" if missing == 1 else "have no results in the run: they expose"
        notes.append(f"{missing:,} of the log's {len(collection.queries):,} queries {have} nothing")
    deepest = int(used.groupby("query_id").size().max())
    if deepest < depth:
        notes.append(f"the run lists at most {deepest} results per query, fewer than n_q->d = {depth}: "
                     f"exposure below rank {deepest} is unknown")
    return notes


def load_result_log(ranker_id: str, collection: Collection, depth: int) -> tuple[Run, list[str]]:
    path = result_log_path(ranker_id)
    run = read_run(path)
    return run, check_result_log(run, collection, depth)


def rank_stats(run: Run) -> pd.DataFrame:
    """Results per query (for the page's summary of an uploaded log)."""
    sizes = run.frame.groupby("query_id").size()
    return pd.DataFrame({"queries": [len(sizes)], "results": [len(run.frame)],
                         "min depth": [int(sizes.min()) if len(sizes) else 0],
                         "max depth": [int(sizes.max()) if len(sizes) else 0],
                         "median depth": [float(np.median(sizes)) if len(sizes) else 0.0]})
