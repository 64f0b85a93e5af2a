"""Collections by ir_datasets id, when that package is installed and its data is on disk.

The workbench never downloads at run time: while a dataset loads, ir_datasets' HTTP downloads
are switched off, so a dataset loads only if its files are already in ``IR_DATASETS_HOME``;
otherwise the error says so, in one sentence. ``EQI_IRDS_ALLOW_DOWNLOAD=1`` lifts this on a
machine that may download.
"""
from __future__ import annotations

import contextlib
import os

import pandas as pd

from eqi_core.collection import Collection
from eqi_core.errors import DataError


class _DownloadRefused(RuntimeError):
    pass


@contextlib.contextmanager
def _no_downloads():
    if os.environ.get("EQI_IRDS_ALLOW_DOWNLOAD") == "1":
        yield
        return
    from ir_datasets.util import download

    def refuse(self, *args, **kwargs):
        raise _DownloadRefused(f"its files are not in IR_DATASETS_HOME and downloads are off ({self.url})")

    saved = download.RequestsDownload.__iter__, download.GoogleDriveDownload.stream
    download.RequestsDownload.__iter__ = refuse
    download.GoogleDriveDownload.stream = refuse
    try:
        yield
    finally:
        download.RequestsDownload.__iter__, download.GoogleDriveDownload.stream = saved


def load_irds(dataset_id: str, max_docs: int | None = None) -> Collection:
    try:
        import ir_datasets
    except ImportError:
        raise DataError(f"irds:{dataset_id}: the ir_datasets package is not installed (pip install ir-datasets)") from None
    try:
        ds = ir_datasets.load(dataset_id)
    except KeyError:
        raise DataError(f"irds:{dataset_id}: ir_datasets has no dataset with this id") from None
    missing = [
        part for part, has in (("docs", ds.has_docs()), ("queries", ds.has_queries())) if not has
    ]
    if missing:
        raise DataError(f"irds:{dataset_id}: this dataset has no {' or '.join(missing)}; pick one that has both")
    try:
        with _no_downloads():
            docs = []
            for i, d in enumerate(ds.docs_iter()):
                if max_docs is not None and i >= max_docs:
                    break
                docs.append((d.doc_id, getattr(d, "title", "") or "", getattr(d, "text", None) or d.default_text()))
            queries = [(q.query_id, getattr(q, "text", None) or q.default_text()) for q in ds.queries_iter()]
            qrels = [(r.query_id, r.doc_id, r.relevance) for r in ds.qrels_iter()] if ds.has_qrels() else []
    except Exception as exc:  # ir_datasets raises many kinds when its files are missing
        detail = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        raise DataError(f"irds:{dataset_id}: ir_datasets cannot load this dataset here: {detail}") from None
    return Collection(
        name=dataset_id,
        passages=pd.DataFrame(docs, columns=["doc_id", "title", "text"]),
        queries=pd.DataFrame(queries, columns=["query_id", "text"]),
        qrels=pd.DataFrame(qrels, columns=["query_id", "doc_id", "relevance"]),
        source=f"irds:{dataset_id}",
    )
