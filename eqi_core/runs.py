"""Run: for each query, a ranked list of (doc_id, score). Reads and writes TREC run files.

Tie-break convention (trec_eval's, which ir_measures' pytrec_eval backend applies): within a
query, documents are ordered by score descending, then by doc_id descending. ``Run.from_trec``
keeps the file's order in ``rank`` and ``tied_groups`` says how many tied score groups exist,
so a page can warn when a metric may depend on the tie-break.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from eqi_core.errors import DataError
from eqi_core.loaders.text_files import inner_suffix, line_of_row, read_columns, read_table, read_text, record_lines
from eqi_core.store import atomic_path

RUN_COLUMNS = ["query_id", "doc_id", "rank", "score"]


@dataclass
class Run:
    """A ranking per query: a frame with query_id, doc_id, rank (1-based), score."""

    name: str
    frame: pd.DataFrame
    meta: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        df = self.frame[RUN_COLUMNS].copy()
        df["query_id"] = df["query_id"].astype(str)
        df["doc_id"] = df["doc_id"].astype(str)
        df["rank"] = df["rank"].astype("int64")
        df["score"] = df["score"].astype("float64")
        self.frame = df.sort_values(["query_id", "rank"], kind="stable").reset_index(drop=True)

    # -- construction ------------------------------------------------------------------------
    @classmethod
    def from_topk(
        cls,
        name: str,
        query_ids: list[str],
        doc_ids: np.ndarray | list[str],
        indices: np.ndarray,
        scores: np.ndarray,
        meta: dict | None = None,
    ) -> Run:
        """From per-query top-k arrays (row i = query_ids[i]; indices into doc_ids, best first)."""
        n, k = indices.shape
        doc_ids = np.asarray(doc_ids, dtype=object)
        valid = indices >= 0
        frame = pd.DataFrame(
            {
                "query_id": np.repeat(np.asarray(query_ids, dtype=object), k)[valid.ravel()],
                "doc_id": doc_ids[indices[valid]],
                "rank": np.tile(np.arange(1, k + 1), n)[valid.ravel()],
                "score": scores[valid].astype("float64"),
            }
        )
        return cls(name, frame, meta or {})

    @classmethod
    def from_dict(cls, name: str, scores: dict[str, dict[str, float]]) -> Run:
        """From {query_id: {doc_id: score}}; ranks follow the trec_eval tie-break."""
        rows = [(q, d, s) for q, docs in scores.items() for d, s in docs.items()]
        df = pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])
        return cls(name, _rank_by_score(df))

    @classmethod
    def from_trec(cls, path: str | Path, name: str | None = None, data: bytes | None = None) -> Run:
        """Parse a TREC run file (or its uploaded bytes); see ``read_trec_run``."""
        return read_trec_run(path, name, data)

    # -- views -------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.frame)

    @property
    def query_ids(self) -> list[str]:
        return list(pd.unique(self.frame["query_id"]))

    def for_query(self, query_id: str) -> pd.DataFrame:
        return self.frame[self.frame["query_id"] == query_id]

    def depth(self) -> int:
        return int(self.frame.groupby("query_id").size().max()) if len(self.frame) else 0

    def to_dict(self) -> dict[str, dict[str, float]]:
        out: dict[str, dict[str, float]] = {}
        for q, d, s in zip(self.frame["query_id"], self.frame["doc_id"], self.frame["score"]):
            out.setdefault(q, {})[d] = float(s)
        return out

    def tied_groups(self) -> int:
        """Number of (query, score) groups holding more than one document."""
        sizes = self.frame.groupby(["query_id", "score"]).size()
        return int((sizes > 1).sum())

    def trec_eval_order(self) -> Run:
        """The same run re-ranked by trec_eval's rule: score desc, then doc_id desc."""
        return Run(self.name, _rank_by_score(self.frame[["query_id", "doc_id", "score"]]), dict(self.meta))

    def query_in_trec_eval_order(self, query_id: str) -> pd.DataFrame:
        """One query's list re-ranked by trec_eval's rule: ``trec_eval_order().for_query(query_id)``
        without sorting every other query's (1.3M rows a run on WordNet: the drill-down's 3 s)."""
        return _rank_by_score(self.for_query(query_id)[["query_id", "doc_id", "score"]])

    # -- writing -----------------------------------------------------------------------------
    def to_trec(self, path: str | Path, tag: str | None = None) -> Path:
        """Write a TREC 6-column run file atomically."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tag = (tag or self.name).replace(" ", "_") or "eqi"
        with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as fh:
            f = self.frame
            for q, d, r, s in zip(f["query_id"], f["doc_id"], f["rank"], f["score"]):
                fh.write(f"{q} Q0 {d} {r} {s:.6f} {tag}\n")
        return path


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
    run_name = name or (str(tags[0]) if len(tags) == 1 else path.name.split(".")[0])
    # Ranks as written may be inconsistent with scores; keep the file's order but renumber 1..n.
    df = df.sort_values(["query_id", "rank"], kind="stable")
    df["rank"] = df.groupby("query_id").cumcount() + 1
    return Run(run_name, df, {"source": str(path), "tag": ",".join(map(str, tags[:3]))})


_COLUMN_NAMES = {"qid": "query_id", "query_id": "query_id", "query-id": "query_id", "query": "query_id",
                 "docid": "doc_id", "doc_id": "doc_id", "doc-id": "doc_id", "pid": "doc_id", "passage_id": "doc_id",
                 "rank": "rank", "score": "score"}
TABLE_SUFFIXES = (".tsv", ".csv", ".parquet")


def read_run(path: str | Path, name: str | None = None, data: bytes | None = None) -> Run:
    """A system's result log: a TREC run file, or a table (TSV, CSV or Parquet) with columns
    ``qid, docid, rank[, score]`` (a header naming them, or those columns in that order). Without
    scores, a score of -rank keeps the order. Bad values and repeated documents name the row."""
    path = Path(path)
    suffix = inner_suffix(path)
    if suffix not in TABLE_SUFFIXES:
        return read_trec_run(path, name, data)
    label = name or path.name.split(".")[0]
    if suffix == ".parquet":
        import io

        try:
            df = pd.read_parquet(io.BytesIO(data) if data is not None else path)
        except Exception as exc:  # pyarrow raises several kinds for a file that is not Parquet
            raise DataError(f"{path}: not a readable Parquet file ({str(exc).splitlines()[0]})") from None
        df.columns = [str(c).strip().lower() for c in df.columns]
        where = [f"row {i + 1}" for i in range(len(df))]  # a Parquet table has rows, not lines
    else:
        import io

        text = read_text(path, data, "a result log (qid, docid, rank[, score] rows)")
        if not text.strip():
            raise DataError(f"{path}: the file is empty; expected qid, docid, rank[, score] rows")
        sep = "," if suffix == ".csv" else "\t"
        head = [h.strip().lower() for h in text.split("\n", 1)[0].split(sep)]
        has_header = all(h in _COLUMN_NAMES for h in head)
        df = read_table(path, text, sep, "qid, docid, rank[, score] on every line", header=0 if has_header else None,
                        skip_blank_lines=True)
        if not has_header:
            if df.shape[1] not in (3, 4):
                raise DataError(f"{path}: line 1: found {df.shape[1]} columns; expected qid, docid, rank[, score] "
                                "(or a header naming them)")
            df.columns = ["qid", "docid", "rank", "score"][: df.shape[1]]
        else:
            df.columns = [c.strip().lower() for c in df.columns]
        lines = record_lines(text, sep)[1 if has_header else 0:]
        where = [f"line {n}" for n in lines] if len(lines) == len(df) else \
            [f"row {i + 1}" + " after the header" * has_header for i in range(len(df))]
    df = df.rename(columns={c: _COLUMN_NAMES[c] for c in df.columns if c in _COLUMN_NAMES})
    missing = [c for c in ("query_id", "doc_id", "rank") if c not in df.columns]
    if missing:
        raise DataError(f"{path}: no column {', '.join(missing)}; expected qid, docid, rank[, score]")
    for col, shown in (("query_id", "qid"), ("doc_id", "docid"), ("rank", "rank")):
        # an empty field (or a Parquet null) was kept as the id "" or "None", or a traceback for a rank
        missing = (df[col].isna() | (df[col].astype(str).str.strip() == "")).to_numpy()
        if missing.any():
            raise DataError(f"{path}: {where[int(missing.argmax())]}: no {shown}; expected qid, docid, rank[, score] "
                            f"{'in every row' if suffix == '.parquet' else 'on every line'}")
    for col in ("rank", "score"):
        if col not in df.columns:
            continue
        values = pd.to_numeric(df[col], errors="coerce")
        bad = values.isna() | ((values % 1 != 0) if col == "rank" else False)
        if bad.any():
            row = int(bad.to_numpy().argmax())
            raise DataError(f"{path}: {where[row]}: {col} {df[col].iloc[row]!r} is not "
                            f"{'an integer' if col == 'rank' else 'a number'}")
        df[col] = values
    if "score" not in df.columns:
        df["score"] = -df["rank"].astype(float)
    df["query_id"], df["doc_id"] = df["query_id"].astype(str), df["doc_id"].astype(str)
    dup = df.duplicated(["query_id", "doc_id"])
    if dup.any():
        row = int(dup.to_numpy().argmax())
        raise DataError(f"{path}: {where[row]}: document {df['doc_id'].iloc[row]!r} appears twice for query "
                        f"{df['query_id'].iloc[row]!r}; expected each document once per query")
    df = df.sort_values(["query_id", "rank"], kind="stable")
    df["rank"] = df.groupby("query_id").cumcount() + 1
    return Run(label, df[RUN_COLUMNS], {"source": str(path)})


def _rank_by_score(df: pd.DataFrame) -> pd.DataFrame:
    df = df.sort_values(["query_id", "score", "doc_id"], ascending=[True, False, False], kind="stable")
    df = df.reset_index(drop=True)
    df["rank"] = df.groupby("query_id").cumcount() + 1
    return df[RUN_COLUMNS]
