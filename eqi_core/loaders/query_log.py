"""A query log given apart from the passages: the searches of one system over another source's
passages (e.g. the MS MARCO queries over the TREC DL 2019 passages).

Formats: TSV or text (``qid<TAB>text[<TAB>count]``, as ``../shared/data/query-logs/``; a header line
naming the columns is allowed), CSV with a header (``qid``/``query_id``, ``text``/``query``,
optional ``count``), JSONL (``_id``/``id``/``query_id``, ``text``/``query``, optional ``count``).
``count`` is how often the query was issued (a row without one counts once): a weight in exposure
totals and retrievability.
"""
from __future__ import annotations

import io
from pathlib import Path

import pandas as pd

from eqi_core.collection import Collection
from eqi_core.errors import DataError
from eqi_core.loaders.text_files import inner_suffix, iter_jsonl, read_text
from eqi_core.table_export import unmark

QUERY_LOG_FILE = "a query log (qid<TAB>text[<TAB>count], CSV or JSONL)"
_ID = ("qid", "query_id", "query-id", "_id", "id")
_TEXT = ("text", "query", "question")


def _columns(frame: pd.DataFrame, path: Path) -> pd.DataFrame:
    cols = {c.strip().lower(): c for c in frame.columns}
    qid = next((cols[c] for c in _ID if c in cols), None)
    text = next((cols[c] for c in _TEXT if c in cols), None)
    if qid is None or text is None:
        raise DataError(f"{path}: expected columns for the query id ({'/'.join(_ID)}) and text ({'/'.join(_TEXT)}); "
                        f"found {', '.join(map(str, frame.columns))}")
    out = pd.DataFrame({"query_id": frame[qid].astype(str), "text": frame[text].astype(str)})
    if "count" in cols:
        out["count"] = frame[cols["count"]]
    return out


def read_query_log(path: str | Path, data: bytes | None = None) -> pd.DataFrame:
    """query_id, text[, count] of a query log file; bad rows are one-line errors naming the row."""
    path = Path(path)
    text = read_text(path, data, QUERY_LOG_FILE)
    if not text.strip():
        raise DataError(f"{path}: the query log is empty; expected one query per line")
    suffix = inner_suffix(path)
    if suffix == ".jsonl":
        rows = [obj for _, obj in iter_jsonl(path, text.encode())]
        frame, first_row = _columns(pd.DataFrame(rows), path), 1
    elif suffix == ".csv":
        frame, first_row = _columns(pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False), path), 2
        for col in ("query_id", "text"):  # a CSV the dashboard or the CLI wrote: "'-exec ..." -> "-exec ..."
            frame[col] = unmark(frame[col])
    else:
        first = [h.strip().lower() for h in text.split("\n", 1)[0].split("\t")]
        header = first[0] in _ID and len(first) > 1 and first[1] in _TEXT
        raw = pd.read_csv(io.StringIO(text), sep="\t", dtype=str, header=0 if header else None, keep_default_na=False,
                          quoting=3, on_bad_lines="error", engine="python") if "\t" in text else None
        if raw is None or raw.shape[1] not in (2, 3):
            raise DataError(f"{path}: line 1: expected qid<TAB>text[<TAB>count] lines")
        if not header:
            raw.columns = ["qid", "text", "count"][: raw.shape[1]]
        frame, first_row = _columns(raw, path), 2 if header else 1
    if frame.empty:
        raise DataError(f"{path}: the query log holds no query (only a header); expected one query per line")
    empty = frame["text"].str.strip() == ""
    if empty.any():
        raise DataError(f"{path}: row {int(empty.to_numpy().argmax()) + first_row}: empty query text")
    dup = frame["query_id"].duplicated()
    if dup.any():
        raise DataError(f"{path}: row {int(dup.to_numpy().argmax()) + first_row}: query id "
                        f"{frame['query_id'][dup].iloc[0]!r} appears twice; expected unique ids")
    if "count" in frame.columns:
        given = frame["count"].where(frame["count"].notna() & (frame["count"].astype(str).str.strip() != ""), 1)
        frame["count"] = given  # a row without a count is one search
        counts = pd.to_numeric(given, errors="coerce")
        bad = counts.isna() | (counts < 0) | (counts % 1 != 0)
        if bad.any():
            row = int(bad.to_numpy().argmax())
            raise DataError(f"{path}: row {row + first_row}: count {frame['count'].iloc[row]!r} is not a non-negative integer")
        frame["count"] = counts.astype("int64")
    return frame.reset_index(drop=True)


def with_query_log(collection: Collection, log: pd.DataFrame, log_name: str) -> Collection:
    """The collection's passages searched by another log: its queries replaced, its judgments kept
    only for queries the log holds (usually none: a foreign log has no judgments)."""
    qrels = collection.qrels[collection.qrels["query_id"].isin(set(log["query_id"]))]
    notes = [n for n in collection.notes if "judgments name" not in n]
    dropped = len(collection.qrels) - len(qrels)
    if dropped:
        notes.append(f"{dropped:,} judgments of {collection.name} name queries that are not in the log {log_name}: "
                     "dropped (exposure needs no judgments)")
    return Collection(name=f"{collection.name} + log {log_name}", passages=collection.passages, queries=log, qrels=qrels,
                      source=collection.source, notes=notes)
