"""Tables written as CSV for people: the dashboard's downloads and the CLI's CSV outputs.

A query log holds what strangers typed. A spreadsheet reads a cell that begins with ``=``, ``+``,
``-`` or ``@`` as a formula (StackExchange's "-exec isn't being passed all the files found by find"
shows #NAME?, and a crafted "=HYPERLINK(...)" or DDE call runs when an auditor opens the file), so
every text cell that begins with one of them, or with a tab or carriage return, is written with a
leading apostrophe, the spreadsheets' own mark for "text" (OWASP's advice on CSV injection). Numbers,
and text that is a plain number ("-1.5"), are left as they are. Reading our CSVs back as a query log
strips the mark again (``unmark``), so a download loads as the log it came from.
"""
from __future__ import annotations

import re

import pandas as pd

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_MARK = "'"


def _needs_mark(value: object) -> bool:
    return isinstance(value, str) and value.startswith(_FORMULA_START) and not _PLAIN_NUMBER.fullmatch(value)


def _mark(value: object) -> object:
    return _MARK + value if _needs_mark(value) else value


def _is_text(values: pd.Series | pd.Index) -> bool:
    return not isinstance(values, pd.MultiIndex) and (pd.api.types.is_object_dtype(values)
                                                      or pd.api.types.is_string_dtype(values))


def spreadsheet_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy whose formula-like text cells (values, column names, index labels) carry the mark."""
    out = frame.copy()
    for i in range(out.shape[1]):  # by position: column names may repeat
        values = out.iloc[:, i]
        if _is_text(values) and values.map(_needs_mark).any():
            out.isetitem(i, values.map(_mark))
    for axis in ("columns", "index"):
        labels = getattr(out, axis)
        if _is_text(labels) and labels.map(_needs_mark).any():
            setattr(out, axis, labels.map(_mark))
    return out


def csv_bytes(frame: pd.DataFrame, index: bool = False) -> bytes:
    """The frame as UTF-8 CSV, safe to open in a spreadsheet: what the dashboard's CSV buttons serve."""
    return spreadsheet_safe(frame).to_csv(index=index).encode()


def unmark(values: pd.Series) -> pd.Series:
    """Text as it was before ``spreadsheet_safe``: the mark dropped where it precedes a formula start."""
    marked = values.str.startswith(_MARK) & values.str[1:].map(_needs_mark)
    return values.where(~marked, values.str[1:]) if marked.any() else values
