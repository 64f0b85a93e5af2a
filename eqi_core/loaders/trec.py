"""TREC qrels (qid iter docid rel) and BEIR/MS MARCO TSV qrels. Run files are read by ``eqi_core.runs``."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from eqi_core.collection import QRELS_COLUMNS
from eqi_core.errors import DataError
from eqi_core.loaders.text_files import read_columns, read_text


def read_qrels(path: str | Path, data: bytes | None = None) -> pd.DataFrame:
    """Qrels in TREC (``qid iter docid rel``) or TSV (``qid docid rel``, optional header) form.

    Grades must be integers; negative grades (e.g. -1 "junk" in some collections) are kept as
    given and treated as non-relevant by the measures.
    """
    path = Path(path)
    text = read_text(path, data, "a qrels file (query-id, corpus-id, score per line)")
    first = next((line_ for line_ in text.split("\n") if line_.strip()), "")
    header = first.lower().startswith(("query-id", "query_id", "qid"))
    lines = text.split("\n")
    first_data = next(((i, line_) for i, line_ in enumerate(lines[1 if header else 0:], start=2 if header else 1) if line_.strip()), None)
    if first_data is None:
        raise DataError(f"{path}: the file has no judgments; expected 'qid iter docid rel' lines")
    lineno, line = first_data
    ncols = len(line.split())
    if ncols == 4:
        names, what = ["query_id", "iteration", "doc_id", "relevance"], "qid iter docid relevance"
    elif ncols == 3:
        names, what = ["query_id", "doc_id", "relevance"], "qid docid relevance"
    else:
        raise DataError(f"{path}: line {lineno}: found {ncols} fields; expected TREC qrels (qid iter docid rel) "
                        "or TSV qrels (qid docid rel)")
    df = read_columns(
        path, names, what, data=data, header_first=first.split()[0] if header else None,
        numeric={"relevance": "int"},
    )
    return df[QRELS_COLUMNS]
