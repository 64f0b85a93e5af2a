"""A query log given apart from the passages: the searches of one system over another source's
passages (e.g. the MS MARCO queries over the TREC DL 2019 passages).

Formats: TSV or text (``qid<TAB>text[<TAB>count]``, as ``../shared/data/query-logs/``; a header line
whose first column is named ``qid``, ``query_id``, ``id``... is allowed, the columns read by
position), CSV with a header (``qid``/``query_id``, ``text``/``query``, optional ``count``),
JSONL (``_id``/``id``/``query_id``, ``text``/``query``, optional ``count``).
``count`` is how often the query was issued (a row without one counts once): a weight in exposure
totals and retrievability.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from eqi_core.collection import Collection
from eqi_core.errors import DataError
from eqi_core.loaders.text_files import inner_suffix, iter_jsonl, read_table, read_text, record_lines
from eqi_core.table_export import unmark

QUERY_LOG_FILE = "a query log (qid<TAB>text[<TAB>count], CSV or JSONL)"
_ID = ("qid", "query_id", "query-id", "_id", "id")
_TEXT = ("text", "query", "question")


def _columns(frame: pd.DataFrame, path: Path, lines: list[int]) -> pd.DataFrame:
    """query_id, text[, count] out of a parsed file's columns; ``lines`` holds each row's line number in
    the file, for errors. A row without an id or a text is an error naming its line (it read "nan")."""
    cols = {c.strip().lower(): c for c in frame.columns}
    qid = next((cols[c] for c in _ID if c in cols), None)
    text = next((cols[c] for c in _TEXT if c in cols), None)
    if qid is None or text is None:
        raise DataError(f"{path}: expected columns for the query id ({'/'.join(_ID)}) and text ({'/'.join(_TEXT)}); "
                        f"found {', '.join(map(str, frame.columns))}")
    for col, what in ((qid, "query id"), (text, "query text")):
        missing = frame[col].isna().to_numpy()
        if missing.any():
            raise DataError(f"{path}: line {lines[int(missing.argmax())]}: no {what} ({col!r}); "
                            "expected an id and a text on every line")
    out = pd.DataFrame({"query_id": frame[qid].astype(str), "text": frame[text].astype(str)})
    if "count" in cols:
        out["count"] = frame[cols["count"]]
    return out


def _tab_separated(text: str, path: Path) -> tuple[pd.DataFrame, list[int]]:
    """(frame, line numbers) of ``qid<TAB>text[<TAB>count]`` lines, split by hand: every line has 2
    or 3 fields (a count on some lines and not on others is allowed), blank lines are skipped, and
    quotes are text. pandas' reader took a missing text as "nan" and stopped on a line with more
    fields than the first with a traceback."""
    rows, lines, header = [], [], False
    for lineno, line in enumerate(text.split("\n"), start=1):
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        fields = line.split("\t")
        if not rows and not header and len(fields) in (2, 3) and fields[0].strip().lower() in _ID:
            # a header: its first column named as a query id column ("qid", "query_id"); the columns
            # are read by position, so "query_id<TAB>query_text" is a header too (it was the query
            # "query_text" with the id "query_id")
            header = True
            continue
        if len(fields) not in (2, 3):
            raise DataError(f"{path}: line {lineno}: {len(fields)} tab-separated field{'s' * (len(fields) != 1)}; "
                            "expected qid<TAB>text[<TAB>count]")
        rows.append(fields if len(fields) == 3 else [*fields, ""])
        lines.append(lineno)
    frame = pd.DataFrame(rows, columns=["qid", "text", "count"], dtype=str)
    if not (frame["count"].str.strip() != "").any():
        frame = frame.drop(columns="count")  # no line has a count: a log of single searches, as given
    return frame, lines


def read_query_log(path: str | Path, data: bytes | None = None) -> pd.DataFrame:
    """query_id, text[, count] of a query log file; bad rows are one-line errors naming their line."""
    return read_query_log_lines(path, data)[0]


def read_query_log_lines(path: str | Path, data: bytes | None = None) -> tuple[pd.DataFrame, list[int]]:
    """``read_query_log`` and the line of the file each query is on (an upload's later checks name it)."""
    path = Path(path)
    text = read_text(path, data, QUERY_LOG_FILE)
    if not text.strip():
        raise DataError(f"{path}: the query log is empty; expected one query per line")
    suffix = inner_suffix(path)
    if suffix == ".jsonl":
        numbered = list(iter_jsonl(path, text.encode()))
        lines = [lineno for lineno, _ in numbered]
        frame = _columns(pd.DataFrame([obj for _, obj in numbered]), path, lines)
    elif suffix == ".csv":
        raw = read_table(path, text, ",", "the header's columns on every line")
        lines = record_lines(text, ",")[1:]
        if len(lines) != len(raw):  # a record the two readers split differently: rows counted from the header
            lines = list(range(2, len(raw) + 2))
        frame = _columns(raw, path, lines)
        for col in ("query_id", "text"):  # a CSV the dashboard or the CLI wrote: "'-exec ..." -> "-exec ..."
            frame[col] = unmark(frame[col])
    else:
        raw, lines = _tab_separated(text, path)
        frame = _columns(raw, path, lines)
    if frame.empty:
        raise DataError(f"{path}: the query log holds no query (only a header); expected one query per line")
    empty = frame["text"].str.strip() == ""
    if empty.any():
        raise DataError(f"{path}: line {lines[int(empty.to_numpy().argmax())]}: empty query text")
    dup = frame["query_id"].duplicated()
    if dup.any():
        raise DataError(f"{path}: line {lines[int(dup.to_numpy().argmax())]}: query id "
                        f"{frame['query_id'][dup].iloc[0]!r} appears twice; expected unique ids")
    if "count" in frame.columns:
        given = frame["count"].where(frame["count"].notna() & (frame["count"].astype(str).str.strip() != ""), 1)
        frame["count"] = given  # a row without a count is one search
        counts = pd.to_numeric(given, errors="coerce")
        bad = counts.isna() | (counts < 0) | (counts % 1 != 0)
        if bad.any():
            row = int(bad.to_numpy().argmax())
            raise DataError(f"{path}: line {lines[row]}: count {frame['count'].iloc[row]!r} is not a non-negative integer")
        frame["count"] = counts.astype("int64")
    return frame.reset_index(drop=True), lines


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
