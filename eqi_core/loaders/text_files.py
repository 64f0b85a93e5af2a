"""Reading whitespace/tab separated text tables with errors that name the file and line."""
from __future__ import annotations

import io
import json
import re
import zlib
from collections.abc import Iterator
from pathlib import Path

import pandas as pd

from eqi_core.errors import DataError

MAX_LINE_CHARS = 2_000_000


def require_file(path: str | Path, what: str) -> Path:
    """``path`` when it is a file; else one line saying it is missing or a folder, and what was expected."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise DataError(f"{path}: {'a folder' if path.is_dir() else 'no such file'}; expected {what}")
    return path


MAX_GUNZIPPED = 4 << 30  # 4 GiB, as for a BEIR zip's members
GZIP_MAGIC = b"\x1f\x8b"


def gunzipped(path: str | Path, raw: bytes) -> bytes:
    """``raw`` itself, or its gzip-decompressed bytes when it is gzip (runs and qrels are often shipped
    as ``.gz``); a damaged stream, or one that expands past 4 GiB, is one line."""
    if not raw.startswith(GZIP_MAGIC):
        return raw
    parts, size, rest = [], 0, raw
    while rest:  # member after member: `cat a.gz b.gz` is one valid gzip file
        inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            part = inflate.decompress(rest, MAX_GUNZIPPED + 1 - size)
        except zlib.error as exc:
            raise DataError(f"{path}: a damaged gzip file ({exc}); expected gzip-compressed or plain text") from None
        size += len(part)
        if size > MAX_GUNZIPPED:
            raise DataError(f"{path}: expands past {MAX_GUNZIPPED >> 30} GiB when decompressed; larger than expected")
        if not inflate.eof:
            raise DataError(f"{path}: a truncated gzip file; expected gzip-compressed or plain text")
        parts.append(part)
        rest = inflate.unused_data
    return b"".join(parts)


def inner_suffix(path: str | Path) -> str:
    """The file's format suffix, lower case, looking through a final ``.gz`` (``log.tsv.gz`` -> ``.tsv``)."""
    path = Path(path)
    return (path.with_suffix("") if path.suffix.lower() == ".gz" else path).suffix.lower()


def read_text(path: str | Path, data: bytes | None = None, what: str = "a UTF-8 text file") -> str:
    """Decode a file (or its gzip) as UTF-8 (BOM allowed); invalid bytes are reported with their line, a
    missing file or a folder in one line saying what was expected."""
    raw = gunzipped(path, data if data is not None else require_file(path, what).read_bytes())
    if b"\0" in raw[:4096]:  # a spreadsheet, a Parquet or zip file given for text: no "line 1: 1 field" puzzle
        raise DataError(f"{path}: not a text file (NUL bytes: binary data, or UTF-16 text); expected {what} in UTF-8")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise DataError(f"{path}: line {line}: invalid UTF-8 (byte {raw[exc.start]:#04x}); expected UTF-8 text") from None


def read_columns(
    path: str | Path,
    names: list[str],
    what: str,
    *,
    sep: str = r"\s+",
    header_first: str | None = None,
    header_ids: frozenset[str] = frozenset(),
    data: bytes | None = None,
    numeric: dict[str, str] | None = None,
) -> pd.DataFrame:
    """Read a table with exactly ``len(names)`` columns, all as strings, then cast ``numeric``.

    ``header_first``: if the first line's first field equals this, it is a header and skipped;
    ``header_ids``: so is a first line whose first field, lower-cased, is one of these names.
    ``numeric``: column -> 'int' or 'float'; a bad value is reported with its line number.
    """
    text = read_text(path, data, f"a file of lines '{what}'")
    if not text.strip():
        raise DataError(f"{path}: the file is empty; expected {what}")
    skip = 0
    first = text.split("\n", 1)[0].strip()
    first_field = first.split()[0:1]
    if (header_first is not None and first_field == [header_first]) or (first_field and first_field[0].lower() in header_ids):
        skip = 1
    expected = f"{len(names)} columns ({what})"
    try:
        df = pd.read_csv(
            io.StringIO(text), sep=sep, header=None, names=names, dtype=str, skiprows=skip,
            keep_default_na=False, quoting=3, engine="c", skip_blank_lines=True,
        )
    except pd.errors.ParserError:
        _raise_first_bad_line(path, text, len(names), expected, sep)
        raise  # pragma: no cover - _raise always raises
    bad = (df == "").any(axis=1) if len(df) else pd.Series([], dtype=bool)
    if len(df) and (bad.any() or df.isna().any(axis=1).any()):
        _raise_first_bad_line(path, text, len(names), expected, sep)
    for col, kind in (numeric or {}).items():
        converted = pd.to_numeric(df[col], errors="coerce")
        if converted.isna().any():
            row = int(converted.isna().to_numpy().argmax())
            line = line_of_row(text, row, skip)
            raise DataError(
                f"{path}: line {line}: {col} {df[col].iloc[row]!r} is not a number; expected {expected}"
            )
        if kind == "int":
            if (converted % 1 != 0).any():
                row = int((converted % 1 != 0).to_numpy().argmax())
                line = line_of_row(text, row, skip)
                raise DataError(f"{path}: line {line}: {col} {df[col].iloc[row]!r} is not an integer")
            converted = converted.astype("int64")
        df[col] = converted
    return df


def line_of_row(text: str, row: int, skip: int) -> int:
    seen = -skip
    for lineno, line in enumerate(text.split("\n"), start=1):
        if line.strip():
            if seen == row:
                return lineno
            seen += 1
    return -1


def read_table(path, text: str, sep: str, expected: str, **kwargs) -> pd.DataFrame:
    """A CSV or TSV table as strings (no NA guessing; a TSV's quotes are text, as the query logs' and
    MS MARCO's) whose every line has the first line's fields; otherwise one line naming the line.
    pandas alone took a first data line with one field more than the header as an index column and
    shifted every column silently, raised a traceback for a later line with more fields, and let a
    TSV field opening with a quote swallow the lines after it."""
    import warnings

    try:
        with warnings.catch_warnings():  # index_col=False: a longer line is cut with this warning, not indexed
            warnings.simplefilter("error", pd.errors.ParserWarning)
            return pd.read_csv(io.StringIO(text), sep=sep, dtype=str, keep_default_na=False, index_col=False,
                               quoting=3 if sep == "\t" else 0, **kwargs)
    except pd.errors.ParserWarning:
        raise _first_line_of_another_width(path, text, sep, expected) from None
    except pd.errors.ParserError as exc:
        said = str(exc).split("error: ", 1)[-1].strip().rstrip(".")
        fields = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", said)
        if fields:
            raise DataError(f"{path}: line {fields[2]}: {fields[3]} fields where the first line has {fields[1]}; "
                            f"expected {expected}") from None
        quote = re.search(r"EOF inside string starting at row (\d+)", said)  # rows from 0, the header's included
        if quote:
            raise DataError(f"{path}: line {int(quote[1]) + 1}: a quote opened there is never closed; expected {expected}") from None
        raise DataError(f"{path}: not readable as a table ({said.splitlines()[0] if said else 'no reason given'}); "
                        f"expected {expected}") from None


def _records(text: str, sep: str) -> Iterator[tuple[int, list[str]]]:
    """(the line it starts on, fields) of each non-blank record of a CSV/TSV table, quoted as
    ``read_table`` reads it: a quoted CSV field may span lines, so records are not lines."""
    import csv

    rows = csv.reader(io.StringIO(text), delimiter=sep, quoting=csv.QUOTE_NONE if sep == "\t" else csv.QUOTE_MINIMAL)
    ended = 0
    for row in rows:
        if row:
            yield ended + 1, row
        ended = rows.line_num


def record_lines(text: str, sep: str) -> list[int]:
    """The line each record of a CSV/TSV table starts on, the header's first (blank lines skipped)."""
    return [line for line, _ in _records(text, sep)]


def _first_line_of_another_width(path, text: str, sep: str, expected: str) -> DataError:
    width = None
    for line, row in _records(text, sep):
        if width is None:
            width = len(row)
        elif len(row) != width:
            return DataError(f"{path}: line {line}: {len(row)} fields where the first line has {width}; expected {expected}")
    return DataError(f"{path}: lines of different widths; expected {expected}")


def _raise_first_bad_line(path, text: str, ncols: int, expected: str, sep: str) -> None:
    for lineno, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        fields = line.split("\t") if sep == "\t" else line.split()
        if len(fields) != ncols:
            raise DataError(f"{path}: line {lineno}: found {len(fields)} fields; expected {expected}")
        if "" in fields:
            raise DataError(f"{path}: line {lineno}: field {fields.index('') + 1} is empty; expected {expected}")
    raise DataError(f"{path}: could not be parsed; expected {expected}")


def iter_jsonl(path: str | Path, data: bytes | None = None) -> Iterator[tuple[int, dict]]:
    """(line number, object) for each non-blank line; a bad line raises a DataError naming it."""
    text = read_text(path, data, "a JSON Lines file (one JSON object per line)")
    if not text.strip():
        raise DataError(f"{path}: the file is empty; expected one JSON object per line")
    for lineno, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        if len(line) > MAX_LINE_CHARS:
            raise DataError(f"{path}: line {lineno}: {len(line)} characters; at most {MAX_LINE_CHARS} expected")
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(f"{path}: line {lineno}: not valid JSON at character {exc.colno} ({exc.msg.lower()}); "
                            "expected one JSON object per line") from None
        if not isinstance(obj, dict):
            raise DataError(f"{path}: line {lineno}: expected a JSON object, got {type(obj).__name__}")
        yield lineno, obj


def check_id(path, lineno: int, value, field: str) -> str:
    """An id must be a non-empty string/number without whitespace that would break TREC files."""
    if value is None or (isinstance(value, str) and not value.strip()):
        raise DataError(f"{path}: line {lineno}: missing '{field}'")
    if not isinstance(value, (str, int)):
        raise DataError(f"{path}: line {lineno}: '{field}' must be a string, got {type(value).__name__}")
    value = str(value)
    if any(c in value for c in " \t\n\r"):
        raise DataError(f"{path}: line {lineno}: '{field}' {value!r} contains whitespace; ids must not")
    return value
