"""Files uploaded in the dashboard, kept in the artifact store under their content hash.

Each upload is one artifact of kind ``upload``: the file as it came (a BEIR zip, a query log, a
result log) or a BEIR folder assembled from separate files (passages, queries, qrels). It is
parsed with the loaders' own checks *inside* the store's build, so a malformed file raises its
one-line ``DataError`` and leaves nothing in the store; a good one is listed in the sidebar
(``list_uploads``) and read like any file-based collection or log.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from eqi_core.errors import DataError
from eqi_core.loaders.text_files import gunzipped, inner_suffix, read_table, read_text, record_lines
from eqi_core.store import ArtifactStore, content_digest, params_key

KIND = "upload"


def _safe_name(filename: str, default: str) -> str:
    name = Path(filename or default).name
    return "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in name) or default


def _upload_params(what: str, label: str, files: dict[str, bytes]) -> dict:
    return {"what": what, "label": label, "content": content_digest(*files.keys(), *files.values())}


def upload_key(what: str, label: str, files: dict[str, bytes]) -> str:
    """The store key an upload of ``files`` is kept under (its folder name in the ``upload`` kind):
    how a caller finds one upload, or checks that a refused one left nothing behind."""
    return params_key(KIND, _upload_params(what, label, files))


Shown = dict[str, tuple[str, "list[int] | None"]]


def _upload(store: ArtifactStore, what: str, label: str, files: dict[str, bytes], check, shown: Shown) -> Path:
    """Store ``files`` (name -> bytes) as one artifact after ``check(folder)`` accepted them. ``shown``:
    for each stored file, the name it was uploaded under and, when it was converted (CSV passages
    to JSONL), the uploaded file's line of each stored line: a refusal names the file and line the
    user knows, not the store's temporary copy ("/…/upload/.3f2a….tmp/corpus.jsonl: line 3")."""
    params = _upload_params(what, label, files)

    def build(tmp: Path) -> dict:
        for name, data in files.items():
            (tmp / name).parent.mkdir(parents=True, exist_ok=True)
            (tmp / name).write_bytes(data)
        try:
            meta = check(tmp)
        except DataError as exc:
            raise DataError(_as_uploaded(str(exc), tmp, shown)) from None
        return {"what": what, "label": label, **(meta or {})}

    return store.get_or_build(KIND, params, build).path


def _as_uploaded(message: str, folder: Path, shown: Shown) -> str:
    for stored, (given, lines) in shown.items():
        def line(match: re.Match, given: str = given, lines: list[int] | None = lines) -> str:
            n = int(match[1])
            return f"{given}: line {lines[n - 1] if lines and n <= len(lines) else n}"

        message = re.sub(re.escape(str(folder / stored)) + r": line (\d+)", line, message)
        message = message.replace(str(folder / stored), given)
    return message.replace(f"{folder}/", "")


def store_beir_zip(store: ArtifactStore, filename: str, data: bytes) -> str:
    """A BEIR zip; returns its collection spec."""
    from eqi_core.loaders.beir import load_beir

    name = _safe_name(filename, "collection.zip")
    if not name.lower().endswith(".zip"):
        raise DataError(f"{filename}: expected a .zip holding corpus.jsonl, queries.jsonl and qrels/")

    def check(folder: Path) -> dict:
        c = load_beir(str(folder / name), None)
        return {"passages": len(c.passages), "queries": len(c.queries)}

    return f"beir:{_upload(store, 'beir-zip', Path(name).stem, {name: data}, check, {name: (filename, None)}) / name}"


def _passages_jsonl(filename: str, data: bytes) -> tuple[bytes, list[int] | None]:
    """Passages as BEIR corpus lines: JSONL as it is (checked by the loader), CSV/TSV with id and text
    columns; and for a CSV/TSV, the file's line of each passage (None: the lines are the file's)."""
    data, suffix = gunzipped(filename, data), inner_suffix(filename)
    if suffix == ".jsonl":
        return data, None
    if suffix not in (".csv", ".tsv"):
        raise DataError(f"{filename}: expected passages as JSONL (_id, text[, title]) or CSV/TSV (id, text[, title])")
    text = read_text(filename, data, f"{suffix[1:].upper()} passages (id, text[, title])")  # UTF-8 and NUL checks, as every loader
    sep = "," if suffix == ".csv" else "\t"
    frame = read_table(filename, text, sep, "id, text[, title] on every line")
    lines = record_lines(text, sep)[1:]
    cols = {c.strip().lower(): c for c in frame.columns}
    ident = next((cols[c] for c in ("_id", "id", "doc_id", "docid", "pid") if c in cols), None)
    if ident is None or "text" not in cols:
        raise DataError(f"{filename}: expected columns id (or _id, doc_id) and text; found {', '.join(frame.columns)}")
    rows = [{"_id": i, "title": t, "text": x} for i, t, x in
            zip(frame[ident], frame[cols["title"]] if "title" in cols else [""] * len(frame), frame[cols["text"]])]
    return "".join(json.dumps(r) + "\n" for r in rows).encode(), lines if len(lines) == len(rows) else None


def _queries_jsonl(filename: str, data: bytes) -> tuple[bytes, list[int]]:
    from eqi_core.loaders.query_log import read_query_log_lines

    log, lines = read_query_log_lines(filename, data)
    return "".join(json.dumps({"_id": q, "text": t}) + "\n" for q, t in zip(log["query_id"], log["text"])).encode(), lines


def store_collection_files(store: ArtifactStore, label: str, passages: tuple[str, bytes],
                           queries: tuple[str, bytes], qrels: tuple[str, bytes] | None = None) -> str:
    """A collection from separate files (passages, the query log, optional qrels) as a BEIR folder;
    returns its spec."""
    from eqi_core.loaders.beir import load_beir

    (corpus, passage_lines), (query_log, query_lines) = _passages_jsonl(*passages), _queries_jsonl(*queries)
    files = {"corpus.jsonl": corpus, "queries.jsonl": query_log}
    shown: Shown = {"corpus.jsonl": (passages[0], passage_lines), "queries.jsonl": (queries[0], query_lines)}
    if qrels:
        from eqi_core.loaders.trec import read_qrels

        q = read_qrels(qrels[0], data=qrels[1])
        shown["qrels/test.tsv"] = (qrels[0], None)
        files["qrels/test.tsv"] = ("query-id\tcorpus-id\tscore\n" + "".join(
            f"{a}\t{b}\t{g}\n" for a, b, g in zip(q["query_id"], q["doc_id"], q["relevance"]))).encode()

    def check(folder: Path) -> dict:
        c = load_beir(str(folder), "test" if qrels else None)
        return {"passages": len(c.passages), "queries": len(c.queries)}

    return f"beir:{_upload(store, 'collection-files', _safe_name(label, 'my-collection'), files, check, shown)}"


def store_query_log(store: ArtifactStore, filename: str, data: bytes) -> Path:
    """A query log file (checked by the loader); returns its stored path, for ``SPEC+log:PATH``."""
    from eqi_core.loaders.query_log import read_query_log

    name = _safe_name(filename, "log.tsv")

    def check(folder: Path) -> dict:
        return {"queries": len(read_query_log(folder / name))}

    return _upload(store, "query-log", name, {name: data}, check, {name: (filename, None)}) / name


def store_result_log(store: ArtifactStore, filename: str, data: bytes) -> Path:
    """A system's result log (TREC, TSV/CSV/Parquet; checked by the reader); returns its stored path."""
    from eqi_core.runs import read_run

    name = _safe_name(filename, "results.trec")

    def check(folder: Path) -> dict:
        return {"rows": len(read_run(folder / name))}

    return _upload(store, "result-log", name, {name: data}, check, {name: (filename, None)}) / name


def list_uploads(store: ArtifactStore, what: str | None = None) -> list[dict]:
    """Uploads in the store, newest first: what, label, path, and the counts the check found."""
    out = []
    for art in store.list(KIND):
        if what is None or art.params.get("what") == what:
            out.append({"what": art.params["what"], "label": art.params["label"], "path": art.path,
                        "created": art.manifest.get("created", ""), **art.manifest.get("meta", {})})
    return sorted(out, key=lambda u: u["created"], reverse=True)


def uploaded_collections(store: ArtifactStore) -> dict[str, str]:
    """label -> spec of the uploaded collections (for the sidebar)."""
    found = {}
    for u in list_uploads(store):
        if u["what"] == "beir-zip":
            zips = sorted(Path(u["path"]).glob("*.zip"))
            if zips:
                found[f"{u['label']} (uploaded)"] = f"beir:{zips[0]}"
        elif u["what"] == "collection-files":
            found[f"{u['label']} (uploaded)"] = f"beir:{u['path']}"
    return found
