"""TREC run files (qid Q0 docid rank score tag) and qrels (qid iter docid rel, or BEIR/MS MARCO TSV)."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from eqi_core.collection import QRELS_COLUMNS, DataError
from eqi_core.loaders.text_files import line_of_row, read_columns, read_text
from eqi_core.runs import Run

RUN_FIELDS = ["query_id", "q0", "doc_id", "rank", "score", "tag"]


def read_trec_run(path: str | Path, name: str | None = None, data: bytes | None = None) -> Run:
    """Parse a TREC run; a repeated (query, doc) pair or a bad line is an error naming the line."""
    path = Path(path)
    df = read_columns(
        path, RUN_FIELDS, "qid Q0 docid rank score tag", data=data,
        numeric={"rank": "int", "score": "float"},
    )
    dup = df.duplicated(["query_id", "doc_id"])
    if dup.any():
        row = int(dup.to_numpy().argmax())
        text = read_text(path, data)
        raise DataError(
            f"{path}: line {line_of_row(text, row, 0)}: document {df['doc_id'].iloc[row]!r} appears twice for query "
            f"{df['query_id'].iloc[row]!r}; expected each document once per query"
        )
    tags = df["tag"].unique()
    run_name = name or (str(tags[0]) if len(tags) == 1 else path.stem)
    # Ranks as written may be inconsistent with scores; keep the file's order but renumber 1..n.
    df = df.sort_values(["query_id", "rank"], kind="stable")
    df["rank"] = df.groupby("query_id").cumcount() + 1
    return Run(run_name, df, {"source": str(path), "tag": ",".join(map(str, tags[:3]))})


def read_qrels(path: str | Path, data: bytes | None = None) -> pd.DataFrame:
    """Qrels in TREC (``qid iter docid rel``) or TSV (``qid docid rel``, optional header) form.

    Grades must be integers; negative grades (e.g. -1 "junk" in some collections) are kept as
    given and treated as non-relevant by the measures.
    """
    path = Path(path)
    text = read_text(path, data)
    first = next((l for l in text.split("\n") if l.strip()), "")
    header = first.lower().startswith(("query-id", "query_id", "qid"))
    lines = text.split("\n")
    first_data = next(((i, l) for i, l in enumerate(lines[1 if header else 0:], start=2 if header else 1) if l.strip()), None)
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
