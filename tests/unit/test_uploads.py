"""Uploads kept in the store: checked by the loaders inside the build, so a bad file leaves nothing."""
import io
import json
import zipfile

import pytest

from eqi_core.errors import DataError
from eqi_core.loaders import load_collection
from eqi_core.uploads import list_uploads, store_beir_zip, store_collection_files, store_query_log, store_result_log, upload_key, uploaded_collections
from tests.conftest import TINY_BEIR


def tiny_zip() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for f in TINY_BEIR.rglob("*"):
            if f.is_file():
                z.write(f, f"tiny/{f.relative_to(TINY_BEIR)}")
    return buf.getvalue()


def test_beir_zip_round_trip_and_listing(store):
    spec = store_beir_zip(store, "tiny.zip", tiny_zip())
    c = load_collection(spec)
    assert len(c.passages) == 12 and len(c.queries) == 5
    assert store_beir_zip(store, "tiny.zip", tiny_zip()) == spec  # same content, same artifact
    assert uploaded_collections(store) == {"tiny (uploaded)": spec}
    # the key the browser test finds an upload by is the folder the store keeps it in
    assert upload_key("beir-zip", "tiny", {"tiny.zip": tiny_zip()}) in spec


def test_collection_from_separate_files(store):
    passages = b"id,title,text\np1,,a bank of a river\np2,,money deposits and loans\n"
    queries = b"q1\triver bank\nq2\tloans\n"
    qrels = b"q1 0 p1 1\nq2 0 p2 2\n"
    spec = store_collection_files(store, "my data", ("passages.csv", passages), ("log.tsv", queries), ("qrels.txt", qrels))
    c = load_collection(spec)
    assert list(c.passages["doc_id"]) == ["p1", "p2"] and c.judgments["q2"] == {"p2": 2}


@pytest.mark.parametrize("call,message", [
    (lambda s: store_beir_zip(s, "bad.zip", b"not a zip"), "not a folder or a zip"),
    (lambda s: store_collection_files(s, "x", ("p.csv", b"ident,words\n1,a\n"), ("q.tsv", b"q1\ta\n")), "expected columns id"),
    (lambda s: store_collection_files(s, "x", ("p.jsonl", b'{"_id": "p1", "text": "a"}\nbroken\n'), ("q.tsv", b"q1\ta\n")),
     "line 2"),
    (lambda s: store_query_log(s, "my log.tsv", b"q1\tbank\nq1\tloan\n"), "^my log.tsv: line 2: query id 'q1' appears twice"),
    (lambda s: store_beir_zip(s, "c.zip", b"PK\x03\x04junk"), "^c.zip: not a folder or a zip"),
    # converted to the store's BEIR files: the loader's line of corpus.jsonl / queries.jsonl is the upload's line
    (lambda s: store_collection_files(s, "x", ("p.csv", b'id,text\n\np1,a\n"p 2","two\nlines"\n'), ("q.tsv", b"q1\ta\n")),
     "^p.csv: line 4: '_id' 'p 2' contains whitespace"),
    (lambda s: store_collection_files(s, "x", ("p.csv", b'id,text\np1,"two\nlines"\np 3,b\n'), ("q.tsv", b"q1\ta\n")),
     "^p.csv: line 4: '_id' 'p 3' contains whitespace"),
    (lambda s: store_collection_files(s, "x", ("p.jsonl", b'{"_id": "p1", "text": "a"}\n'), ("q.csv", b"qid,text\n\nq 1,a\n")),
     "^q.csv: line 3: '_id' 'q 1' contains whitespace"),
    (lambda s: store_result_log(s, "run.csv", b"qid,docid,rank\nq1,d1,x\n"), "not an integer"),
    # each of these was a pandas traceback, or (the first) an index column shifting every field silently
    (lambda s: store_collection_files(s, "x", ("p.tsv", b"id\ttext\np1\ta\tb\n"), ("q.tsv", b"q1\ta\n")),
     "p.tsv: line 2: 3 fields where the first line has 2"),
    (lambda s: store_collection_files(s, "x", ("p.csv", b'id,text\np1,"a\np2,b\n'), ("q.tsv", b"q1\ta\n")),
     "p.csv: line 2: a quote opened there is never closed"),
    (lambda s: store_collection_files(s, "x", ("p.csv", b"id,text\np1,\xff\n"), ("q.tsv", b"q1\ta\n")),
     r"p.csv: line 2: invalid UTF-8 \(byte 0xff\)"),
    (lambda s: store_result_log(s, "run.tsv", b"q1\td1\t1\nq1\td2\t2\t0.5\t9\n"), "run.tsv: line 2: 5 fields where the first line has 3"),
    (lambda s: store_result_log(s, "run.csv", b"qid,docid,rank\nq1,d1,1,5\n"), "run.csv: line 2: 4 fields where the first line has 3"),
    (lambda s: store_query_log(s, "log.csv", b"qid,text\nq1,a\nq2,b,c\n"), "log.csv: line 3: 3 fields where the first line has 2"),
])
def test_bad_uploads_are_one_line_and_leave_nothing(store, call, message):
    with pytest.raises(DataError, match=message) as refused:
        call(store)
    assert str(store.root) not in str(refused.value), "the message names the store's temporary copy, not the upload"
    assert list_uploads(store) == []
    assert not list((store.root / "upload").glob(".*.tmp")) if (store.root / "upload").exists() else True


def test_a_tsvs_quotes_are_text():
    """A passage (or a result log's id) opening with a quote is read as written: pandas' reader took it
    as a quoted field and swallowed the lines after it into one passage."""
    from eqi_core.runs import read_run
    from eqi_core.uploads import _passages_jsonl

    lines = _passages_jsonl("p.tsv", b'id\ttext\np1\t"an open quote\np2\tnext\np3\t"a" b\n')[0].decode().splitlines()
    assert [json.loads(x)["text"] for x in lines] == ['"an open quote', "next", '"a" b']
    assert read_run("run.tsv", data=b'q1\t"d1\t1\nq1\td2\t2\n').frame["doc_id"].tolist() == ['"d1', "d2"]


def test_logs_are_stored_for_specs_and_run_ids(store, tmp_path):
    log = store_query_log(store, "my log.tsv", b"a1\triver bank\t2\n")
    c = load_collection(f"beir:{TINY_BEIR}+log:{log}")
    assert c.query_weights.tolist() == [2.0] and log.name == "my_log.tsv"
    run = store_result_log(store, "sys.trec", b"a1 Q0 d1 1 2.0 sys\n")
    assert run.is_file() and sorted(u["what"] for u in list_uploads(store)) == ["query-log", "result-log"]


def test_gzip_compressed_uploads_are_read_through(store):
    """A .gz upload (passages, query log, qrels, result log) is read as the file inside it."""
    import gzip

    spec = store_collection_files(store, "gz data", ("passages.csv.gz", gzip.compress(b"id,text\np1,a bank of a river\n")),
                                  ("log.tsv.gz", gzip.compress(b"q1\triver bank\n")), ("qrels.txt.gz", gzip.compress(b"q1 0 p1 1\n")))
    c = load_collection(spec)
    assert c.passages["doc_id"].tolist() == ["p1"] and c.judgments["q1"] == {"p1": 1}
    from eqi_core.runs import read_run

    assert len(read_run(store_result_log(store, "sys.trec.gz", gzip.compress(b"q1 Q0 p1 1 2.0 sys\n")))) == 1
