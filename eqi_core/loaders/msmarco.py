"""MS MARCO style TSV: collection.tsv (pid<TAB>text), queries.<split>.tsv, qrels.<split>.(tsv|txt), each
plain or gzip-compressed (``collection.tsv.gz``)."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from eqi_core.collection import Collection
from eqi_core.errors import DataError
from eqi_core.loaders.text_files import read_columns
from eqi_core.loaders.trec import read_qrels


def _collection_file(path: Path) -> Path | None:
    """``collection.tsv``, or its gzip-compressed ``collection.tsv.gz``."""
    return next((f for f in (path / "collection.tsv", path / "collection.tsv.gz") if f.is_file()), None)


def is_msmarco_dir(path: Path) -> bool:
    return _collection_file(path) is not None and _pick(path, "queries*.tsv", None) is not None


def _pick(path: Path, pattern: str, split: str | None) -> Path | None:
    """The first file matching ``pattern`` (or its ``.gz``) for ``split``, a plain file before its gzip."""
    found = sorted([*path.glob(pattern), *path.glob(f"{pattern}.gz")], key=lambda f: (f.name.removesuffix(".gz"), f.suffix == ".gz"))
    if split:
        found = [f for f in found if f".{split}." in f.name or Path(f.name.removesuffix(".gz")).stem.endswith(split)]
    return found[0] if found else None


# a first line naming its columns, as pandas' to_csv writes it ("pid<TAB>passage", "qid<TAB>query"),
# is a header, not a passage or query with the id "pid"
ID_HEADERS = frozenset({"pid", "docid", "doc_id", "doc-id", "passage_id", "passage-id", "corpus-id", "corpus_id",
                        "qid", "query_id", "query-id", "id", "_id"})


def load_msmarco(path: str | Path, split: str | None = None, name: str | None = None) -> Collection:
    """Load ``collection.tsv`` with the queries and qrels of ``split`` (default: dev, else the first)."""
    path = Path(path)
    collection_file = _collection_file(path)
    if collection_file is None:
        raise DataError(f"{path}: no collection.tsv; expected MS MARCO layout (collection.tsv, queries.*.tsv)")
    if split is None:
        split = "dev" if _pick(path, "queries*.tsv", "dev") else None
    queries_file = _pick(path, "queries*.tsv", split)
    if queries_file is None:
        raise DataError(f"{path}: no queries*.tsv{' for split ' + split if split else ''}")
    passages = read_columns(collection_file, ["doc_id", "text"], "pid<TAB>passage", sep="\t", header_ids=ID_HEADERS)
    queries = read_columns(queries_file, ["query_id", "text"], "qid<TAB>query", sep="\t", header_ids=ID_HEADERS)
    for df, f, col in ((passages, collection_file, "doc_id"), (queries, queries_file, "query_id")):
        dup = df[col].duplicated()
        if dup.any():
            raise DataError(f"{f}: duplicate id {df.loc[dup, col].iloc[0]!r}; ids must be unique")
    empty = queries["text"].str.strip() == ""
    if empty.any():  # as in BEIR's queries.jsonl and a query log; a passage may be empty
        raise DataError(f"{queries_file}: query {queries.loc[empty, 'query_id'].iloc[0]!r}: empty query text; "
                        "expected the query's words")
    qrels_file = _pick(path, "qrels*.tsv", split) or _pick(path, "qrels*.txt", split)
    qrels = read_qrels(qrels_file) if qrels_file else pd.DataFrame()
    return Collection(
        name=name or path.name + (f" ({split})" if split else ""),
        passages=passages,
        queries=queries,
        qrels=qrels,
        source=f"msmarco:{path}" + (f"#{split}" if split else ""),
    )
