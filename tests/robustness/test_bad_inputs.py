"""Every loader and upload path on bad files: one clear error naming file, line and expectation;
nothing left in the store."""
import json
import zipfile
from pathlib import Path

import pytest

from eqi_core.coverage.sources import load_uploaded_runs
from eqi_core.errors import DataError
from eqi_core.loaders import load_collection
from eqi_core.loaders.trec import read_qrels
from eqi_core.runs import read_trec_run

GOOD_CORPUS = '{"_id": "d1", "text": "first"}\n{"_id": "d2", "text": "second"}\n'
GOOD_QUERIES = '{"_id": "q1", "text": "a query"}\n'
GOOD_QRELS = "query-id\tcorpus-id\tscore\nq1\td1\t1\n"


def beir(tmp_path, corpus=GOOD_CORPUS, queries=GOOD_QUERIES, qrels=GOOD_QRELS, raw_corpus: bytes | None = None):
    d = tmp_path / "c"
    (d / "qrels").mkdir(parents=True, exist_ok=True)
    (d / "corpus.jsonl").write_bytes(raw_corpus if raw_corpus is not None else corpus.encode())
    (d / "queries.jsonl").write_text(queries, encoding="utf-8")
    (d / "qrels" / "test.tsv").write_text(qrels, encoding="utf-8")
    return d


CASES = {
    "empty corpus": (dict(corpus=""), r"corpus.jsonl: the file is empty"),
    "CSV instead of JSONL": (dict(corpus="_id,text\nd1,first\n"), r"corpus.jsonl: line 1: not valid JSON"),
    "truncated JSONL line": (dict(corpus=GOOD_CORPUS + '{"_id": "d3", "te'),
                             r"corpus.jsonl: line 3: not valid JSON at character 15 \(unterminated string"),
    "JSON array line": (dict(corpus='["d1", "x"]\n'), r"line 1: expected a JSON object, got list"),
    "invalid UTF-8": (dict(raw_corpus=b'{"_id": "d1", "text": "ok"}\n{"_id": "d2", "text": "\xc3\x28"}\n'), r"line 2: invalid UTF-8"),
    "duplicate ids": (dict(corpus=GOOD_CORPUS + '{"_id": "d1", "text": "again"}\n'), r"line 3: duplicate _id 'd1'"),
    "id with a tab": (dict(corpus='{"_id": "d\\t1", "text": "x"}\n'), r"line 1: '_id' 'd\\t1' contains whitespace"),
    "id with a newline": (dict(queries='{"_id": "q\\n1", "text": "x"}\n'), r"queries.jsonl: line 1: '_id' .* contains whitespace"),
    "text not a string": (dict(corpus='{"_id": "d1", "text": 5}\n'), r"line 1: 'text' must be a string"),
    "empty query": (dict(queries=GOOD_QUERIES + '{"_id": "q2", "text": "  "}\n'),
                    r"queries.jsonl: line 2: empty query text \(_id 'q2'\); expected the query's words"),
    "non-numeric grade": (dict(qrels="query-id\tcorpus-id\tscore\nq1\td1\thigh\n"), r"test.tsv: line 2: relevance 'high' is not a number"),
    "fractional grade": (dict(qrels="query-id\tcorpus-id\tscore\nq1\td1\t1.5\n"), r"test.tsv: line 2: relevance '1.5' is not an integer"),
    "qrels missing a column": (dict(qrels="query-id\tcorpus-id\tscore\nq1\td1\n"), r"test.tsv: line 2: found 2 fields"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_beir_bad_inputs(tmp_path, store, case):
    kwargs, message = CASES[case]
    folder = beir(tmp_path, **kwargs)
    with pytest.raises(DataError, match=message) as exc:
        load_collection(f"beir:{folder}", store)
    assert "\n" not in str(exc.value)  # one line
    assert store.list("collection") == []  # nothing half-written
    leftovers = [p for p in (store.root / "collection").glob("*") if not p.name.endswith(".lock")] \
        if (store.root / "collection").exists() else []
    assert leftovers == []


def test_negative_grades_and_unknown_ids_are_kept_with_notes(tmp_path):
    folder = beir(tmp_path, qrels="query-id\tcorpus-id\tscore\nq1\td1\t-1\nq1\tghost\t2\nq7\td2\t1\n")
    c = load_collection(f"beir:{folder}")
    assert sorted(c.qrels["relevance"]) == [-1, 1, 2]
    assert any("name passages that are not in the corpus" in n for n in c.notes)
    assert any("name queries that are not in the query set" in n for n in c.notes)


def test_an_empty_passage_is_kept(tmp_path):
    """BEIR corpora hold passages without text: kept (a query without text is an error, above)."""
    empty = json.dumps({"_id": "d3", "title": "", "text": ""})
    c = load_collection(f"beir:{beir(tmp_path, corpus=GOOD_CORPUS + empty + chr(10))}")
    assert "d3" in set(c.passages["doc_id"])


def test_million_character_passage_is_accepted_and_searchable(tmp_path, store):
    from eqi_core.rankers import build_ranker

    long_text = ("word " * 200_000)[:1_000_000]
    folder = beir(tmp_path, corpus=GOOD_CORPUS + json.dumps({"_id": "big", "text": long_text}) + "\n")
    c = load_collection(f"beir:{folder}", store)
    assert len(c.passages.set_index("doc_id").loc["big", "text"]) == 1_000_000
    assert "big" in set(build_ranker("bm25", c, store).search(["word"], k=3).frame["doc_id"])


def test_zip_path_traversal_and_bomb(tmp_path):
    evil = tmp_path / "evil.zip"
    with zipfile.ZipFile(evil, "w") as zf:
        zf.writestr("corpus.jsonl", GOOD_CORPUS)
        zf.writestr("queries.jsonl", GOOD_QUERIES)
        zf.writestr("/etc/passwd-copy", "x")
    with pytest.raises(DataError, match="escapes the archive"):
        load_collection(f"beir:{evil}")
    bomb = tmp_path / "bomb.zip"
    with zipfile.ZipFile(bomb, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("corpus.jsonl", GOOD_CORPUS + " " * (40 << 20))  # 40 MB of spaces compress ~1000x
        zf.writestr("queries.jsonl", GOOD_QUERIES)
    with pytest.raises(DataError, match="looks like a zip bomb"):
        load_collection(f"beir:{bomb}")


def test_not_a_zip(tmp_path):
    f = tmp_path / "fake.zip"
    f.write_text("not a zip", encoding="utf-8")
    with pytest.raises(DataError, match="not a folder or a zip file"):
        load_collection(f"beir:{f}")


RUN_CASES = {
    "empty": (b"", "the file is empty"),
    "five columns": (b"q1 Q0 d1 1 2.0\n", "line 1: found 5 fields; expected 6 columns"),
    "score not a number": (b"q1 Q0 d1 1 high t\n", "line 1: score 'high' is not a number"),
    "rank not an integer": (b"q1 Q0 d1 1.5 2 t\n", "line 1: rank '1.5' is not an integer"),
    "duplicate document": (b"q1 Q0 d1 1 2 t\nq1 Q0 d1 2 1 t\n", "line 2: document 'd1' appears twice"),
    "invalid UTF-8": (b"q1 Q0 d\xff 1 2 t\n", "line 1: invalid UTF-8"),
}


@pytest.mark.parametrize("case", sorted(RUN_CASES))
def test_run_files_and_uploads(tmp_path, case):
    data, message = RUN_CASES[case]
    path = tmp_path / "run.trec"
    path.write_bytes(data)
    with pytest.raises(DataError, match=message):
        read_trec_run(path)
    with pytest.raises(DataError, match=message):  # the page's upload path parses bytes in memory
        load_uploaded_runs([("uploaded.trec", data)])


@pytest.mark.parametrize("data,message", [
    (b"", "the file has no judgments"),
    (b"q1 0 d1\nq2 0 d2 1\n", "line 2: found 4 fields; expected 3 columns"),
    (b"q1 0 d1 x\n", "relevance 'x' is not a number"),
])
def test_qrels_files(tmp_path, data, message):
    path = tmp_path / "q.qrels"
    path.write_bytes(data)
    with pytest.raises(DataError, match=message):
        read_qrels(path)


def test_cli_bad_input_is_one_line(tmp_path, monkeypatch, capsys):
    from eqi_core.cli import main

    folder = beir(tmp_path, corpus=GOOD_CORPUS + '{"_id": "d3", "te')
    monkeypatch.setattr("sys.argv", ["eqi", "collections", "inspect", f"beir:{folder}"])
    with pytest.raises(SystemExit) as exc:
        main()
    err = capsys.readouterr().err.strip()
    assert exc.value.code == 2 and err.startswith("error: ") and "line 3: not valid JSON" in err and "\n" not in err


@pytest.mark.parametrize("args", [["tasc", "--run", "{missing}"], ["tasc", "--run", "{folder}"],
                                  ["tasc", "-c", "beir:{tiny}", "-r", "bm25", "-r", "minilm-l3-onnx", "--qrels", "{folder}"],
                                  ["exposure", "d1", "-c", "beir:{tiny}", "--run", "{folder}"],
                                  ["--log", "{folder}", "search", "bank", "-c", "beir:{tiny}"]])
def test_a_missing_file_or_a_folder_given_for_a_file_is_one_line(tmp_path, monkeypatch, capsys, args):
    """A path that is not a file (a typo, or its folder) is one line naming it, not a traceback."""
    from eqi_core.cli import main
    from tests.conftest import TINY_BEIR

    paths = {"missing": tmp_path / "nosuch.trec", "folder": tmp_path, "tiny": TINY_BEIR}
    monkeypatch.setattr("sys.argv", ["eqi", *(a.format(**paths) for a in args)])
    with pytest.raises(SystemExit) as exc:
        main()
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert exc.value.code == 2 and err.startswith("error: ") and "Traceback" not in err
    assert err.startswith(f"error: {paths['missing' if '{missing}' in args else 'folder']}: ")
    assert ("no such file; expected a" if "{missing}" in args else "a folder; expected a") in err


@pytest.mark.parametrize("args,expected", [
    (["run", "-c", "beir:{tiny}", "-r", "bm25", "-o", "{folder}"], "--output {folder}: is a folder; expected a file to write"),
    (["run", "-c", "beir:{tiny}", "-r", "bm25", "-o", "{file}/run.trec"],
     "--output {file}/run.trec: {file} is a file; expected a folder to write into"),
    (["tasc", "-c", "beir:{tiny}", "-r", "bm25", "-r", "minilm-l3-onnx", "-o", "{file}"],
     "--output-dir {file}: is a file; expected a folder to write into"),
    (["traverse", "bank", "-c", "beir:{tiny}", "--figures", "{file}"], "--figures {file}: is a file; expected a folder to write into"),
])
def test_an_output_that_cannot_be_written_is_one_line_before_any_work(tmp_path, monkeypatch, capsys, args, expected):
    """An output path that is a folder (or a folder that is a file) was a traceback after the whole
    run had been ranked; it is refused at once, and nothing is written."""
    from eqi_core.cli import main
    from tests.conftest import TINY_BEIR

    (tmp_path / "notes.txt").write_text("kept", encoding="utf-8")
    paths = {"folder": tmp_path, "file": tmp_path / "notes.txt", "tiny": TINY_BEIR}
    before = sorted(p.name for p in tmp_path.iterdir())
    monkeypatch.setattr("sys.argv", ["eqi", *(a.format(**paths) for a in args)])
    with pytest.raises(SystemExit) as exc:
        main()
    err = capsys.readouterr().err.strip()
    assert exc.value.code == 2 and err == f"error: {expected.format(**paths)}"
    assert sorted(p.name for p in tmp_path.iterdir()) == before and (tmp_path / "notes.txt").read_text(encoding="utf-8") == "kept"


def test_an_atomic_write_that_fails_names_the_file_asked_for(tmp_path):
    """Not the hidden temporary file beside it ('.run.trec.1234.ab12.part')."""
    from eqi_core.store import atomic_write

    if not Path("/proc/self").is_dir():
        pytest.skip("needs Linux's /proc, where no file can be made, even by root")
    with pytest.raises(FileNotFoundError) as exc:
        atomic_write("/proc/run.trec", "x")
    assert exc.value.filename == "/proc/run.trec" and ".part" not in str(exc.value)
