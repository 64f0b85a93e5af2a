"""BEIR layout: corpus.jsonl, queries.jsonl, qrels/<split>.tsv, in a folder or a .zip.

Zips are read member by member in memory (never extracted), so entries with ``..`` or absolute
paths cannot write anywhere, and the uncompressed size is bounded against zip bombs.
"""
from __future__ import annotations

import zipfile
from pathlib import Path, PurePosixPath

import pandas as pd

from eqi_core.collection import Collection
from eqi_core.errors import DataError
from eqi_core.loaders.text_files import check_id, gunzipped, iter_jsonl
from eqi_core.loaders.trec import read_qrels

MAX_UNCOMPRESSED = 4 << 30  # 4 GiB
MAX_RATIO = 200  # uncompressed / compressed, per member


def is_beir_dir(path: Path) -> bool:
    """A folder in the BEIR layout, its files plain or gzip-compressed (``corpus.jsonl.gz``)."""
    return all((path / name).is_file() or (path / f"{name}.gz").is_file() for name in ("corpus.jsonl", "queries.jsonl"))


def is_beir_zip(path: Path) -> bool:
    """A zip file holding the BEIR layout, at its top or in one folder (what the sidebar may list):
    a file merely named .zip, or a zip of something else, is not offered as a collection."""
    if not (path.suffix.lower() == ".zip" and path.is_file() and zipfile.is_zipfile(path)):
        return False
    try:
        with zipfile.ZipFile(path) as z:
            depths = [(PurePosixPath(n).name, len(PurePosixPath(n).parts)) for n in z.namelist() if not n.endswith("/")]
    except (OSError, zipfile.BadZipFile):
        return False
    return all(any(name in (n, f"{n}.gz") and depth <= 2 for name, depth in depths) for n in ("corpus.jsonl", "queries.jsonl"))


class _Source:
    """Files of a BEIR collection, from a folder or a zip, by their name inside the layout."""

    def __init__(self, path: Path):
        self.path = path
        self.members: dict[str, str] = {}
        if path.is_dir():
            self.zip = None
            for f in path.rglob("*"):
                if f.is_file():
                    self.members[f.relative_to(path).as_posix()] = str(f)
        elif zipfile.is_zipfile(path):
            self.zip = zipfile.ZipFile(path)
            total = 0
            for info in self.zip.infolist():
                if info.is_dir():
                    continue
                parts = PurePosixPath(info.filename).parts
                if info.filename.startswith("/") or ".." in parts:
                    raise DataError(f"{path}: zip entry {info.filename!r} escapes the archive; refusing it")
                total += info.file_size
                if info.compress_size and info.file_size / info.compress_size > MAX_RATIO and info.file_size > 1 << 24:
                    raise DataError(f"{path}: zip entry {info.filename!r} expands {info.file_size / info.compress_size:.0f}x; looks like a zip bomb")
                self.members[info.filename] = info.filename
            if total > MAX_UNCOMPRESSED:
                raise DataError(f"{path}: zip expands to {total / 2**30:.1f} GiB; at most {MAX_UNCOMPRESSED >> 30} GiB expected")
            # A zip usually holds one top folder (scifact/corpus.jsonl): strip it.
            tops = {PurePosixPath(m).parts[0] for m in self.members if len(PurePosixPath(m).parts) > 1}
            if "corpus.jsonl" not in self.members and len(tops) == 1:
                top = tops.pop() + "/"
                self.members = {m[len(top):]: v for m, v in self.members.items() if m.startswith(top)}
        else:
            raise DataError(f"{path}: not a folder or a zip file; expected a BEIR collection")
        # a gzip-compressed member (corpus.jsonl.gz, qrels/test.tsv.gz) stands for its plain name, read through
        self.gzipped = {m[:-3] for m in self.members if m.endswith(".gz") and m[:-3] not in self.members}
        self.members.update({m: self.members[f"{m}.gz"] for m in self.gzipped})
        for needed in ("corpus.jsonl", "queries.jsonl"):
            if needed not in self.members:
                raise DataError(f"{path}: no {needed}; expected the BEIR layout (corpus.jsonl, queries.jsonl, qrels/*.tsv)")

    def read(self, name: str) -> bytes:
        if self.zip is None:
            data = Path(self.members[name]).read_bytes()
        else:
            with self.zip.open(self.members[name]) as fh:
                data = fh.read(MAX_UNCOMPRESSED + 1)
            if len(data) > MAX_UNCOMPRESSED:
                raise DataError(f"{self.path}: {name} is larger than expected")
        return gunzipped(self.label(name), data) if name in self.gzipped else data

    def label(self, name: str) -> str:
        name = f"{name}.gz" if name in self.gzipped else name
        return f"{self.path}/{name}" if self.zip is None else f"{self.path}!{name}"

    def splits(self) -> list[str]:
        return sorted(PurePosixPath(m).stem for m in self.members if m.startswith("qrels/") and m.endswith(".tsv"))


def _read_records(src: _Source, name: str, fields: list[str], require_text: bool = False) -> pd.DataFrame:
    """``require_text``: an empty text is an error (a query; a passage may be empty: BEIR corpora hold some)."""
    label = src.label(name)
    rows, first_seen = [], {}
    for lineno, obj in iter_jsonl(label, src.read(name)):
        for field in ("_id", "text"):  # Pyserini's {"id", "contents"} and the like: say what the line holds
            if field not in obj:
                raise DataError(f"{label}: line {lineno}: missing '{field}' (the line's fields: "
                                f"{', '.join(map(repr, obj)) or 'none'}); expected BEIR's '_id' and 'text'")
        rid = check_id(label, lineno, obj.get("_id"), "_id")
        if rid in first_seen:
            raise DataError(f"{label}: line {lineno}: duplicate _id {rid!r} (first on line {first_seen[rid]}); ids must be unique")
        first_seen[rid] = lineno
        text = obj.get("text")
        if not isinstance(text, str):
            raise DataError(f"{label}: line {lineno}: 'text' must be a string")
        if require_text and not text.strip():
            raise DataError(f"{label}: line {lineno}: empty query text (_id {rid!r}); expected the query's words")
        rows.append([rid] + [obj.get(f) or "" for f in fields])
    return pd.DataFrame(rows, columns=["id"] + fields)


def load_beir(path: str | Path, split: str | None = None, name: str | None = None) -> Collection:
    """Load a BEIR collection; ``split`` picks qrels/<split>.tsv (default: test, else the first)."""
    path = Path(path)
    src = _Source(path)
    corpus = _read_records(src, "corpus.jsonl", ["title", "text"]).rename(columns={"id": "doc_id"})
    queries = _read_records(src, "queries.jsonl", ["text"], require_text=True).rename(columns={"id": "query_id"})
    splits = src.splits()
    if split is None:
        split = "test" if "test" in splits else (splits[0] if splits else None)
    if split is not None and split not in splits:
        raise DataError(f"{path}: no qrels/{split}.tsv; available splits: {', '.join(splits) or 'none'}")
    qrels = read_qrels(src.label(f"qrels/{split}.tsv"), src.read(f"qrels/{split}.tsv")) if split else None
    label = name or (path.stem if path.suffix == ".zip" else path.name)
    return Collection(
        name=f"{label}" + (f" ({split})" if split and split != "test" else ""),
        passages=corpus,
        queries=queries,
        qrels=qrels if qrels is not None else pd.DataFrame(),
        source=f"beir:{path}" + (f"#{split}" if split else ""),
    )
