import json
import shutil
import zipfile

import pandas as pd
import pytest

from eqi_core.errors import DataError
from eqi_core.loaders import load_collection, parse_spec
from eqi_core.loaders.beir import load_beir
from eqi_core.loaders.msmarco import load_msmarco
from eqi_core.loaders.trec import read_qrels
from eqi_core.runs import read_trec_run
from tests.conftest import TINY_BEIR


def make_beir(tmp_path, corpus_lines, queries_lines=None, qrels="query-id\tcorpus-id\tscore\nq1\td1\t1\n"):
    d = tmp_path / "c"
    (d / "qrels").mkdir(parents=True)
    (d / "corpus.jsonl").write_text("\n".join(corpus_lines) + "\n", encoding="utf-8")
    (d / "queries.jsonl").write_text("\n".join(queries_lines or ['{"_id": "q1", "text": "a query"}']) + "\n", encoding="utf-8")
    (d / "qrels" / "test.tsv").write_text(qrels, encoding="utf-8")
    return d


def test_tiny_beir_folder(tiny):
    assert len(tiny.passages) == 12 and len(tiny.queries) == 5 and len(tiny.qrels) == 9
    assert tiny.judgments["q1"] == {"d1": 2, "d4": 1, "d7": 1}
    assert tiny.passages.set_index("doc_id").loc["d2", "title"] == "Bank"
    assert tiny.notes == []


def test_fingerprint_is_content_based(tmp_path, tiny):
    copy = tmp_path / "copy"
    shutil.copytree(TINY_BEIR, copy)
    assert load_beir(copy).fingerprint == tiny.fingerprint
    with open(copy / "corpus.jsonl", "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"_id": "d99", "text": "one more"}) + "\n")
    assert load_beir(copy).fingerprint != tiny.fingerprint


def test_beir_zip_with_top_folder(tmp_path, tiny):
    z = tmp_path / "tiny.zip"
    with zipfile.ZipFile(z, "w") as zf:
        for f in TINY_BEIR.rglob("*"):
            if f.is_file():
                zf.write(f, f"tiny_beir/{f.relative_to(TINY_BEIR)}")
    c = load_collection(f"beir:{z}")
    assert c.fingerprint == tiny.fingerprint


def test_beir_files_gzip_compressed_in_a_folder_or_a_zip(tmp_path, tiny, store):
    """corpus.jsonl.gz, queries.jsonl.gz and qrels/test.tsv.gz stand for their plain names; the store's
    cached copy follows a change to a .gz file; a damaged one is one line naming it."""
    import gzip

    folder = tmp_path / "gz"
    for f in TINY_BEIR.rglob("*"):
        if f.is_file():
            target = folder / f"{f.relative_to(TINY_BEIR)}.gz"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(gzip.compress(f.read_bytes()))
    assert load_collection(str(folder)).fingerprint == tiny.fingerprint  # a bare path: detected as BEIR
    z = tmp_path / "gz.zip"
    with zipfile.ZipFile(z, "w") as zf:
        for f in folder.rglob("*"):
            zf.write(f, f"gz/{f.relative_to(folder)}")
    assert load_collection(f"beir:{z}").judgments == tiny.judgments
    assert len(load_collection(f"beir:{folder}", store).queries) == 5
    queries = gzip.decompress((folder / "queries.jsonl.gz").read_bytes()) + b'{"_id": "q9", "text": "one more"}\n'
    (folder / "queries.jsonl.gz").write_bytes(gzip.compress(queries))
    assert len(load_collection(f"beir:{folder}", store).queries) == 6  # not the cached five
    (folder / "queries.jsonl.gz").write_bytes(gzip.compress(queries)[:20])
    with pytest.raises(DataError, match=r"queries.jsonl.gz: a truncated gzip file"):
        load_beir(folder)


def test_zip_with_path_traversal_is_refused(tmp_path):
    z = tmp_path / "evil.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("corpus.jsonl", '{"_id": "d1", "text": "x"}\n')
        zf.writestr("queries.jsonl", '{"_id": "q1", "text": "x"}\n')
        zf.writestr("../../escape.txt", "gotcha")
    with pytest.raises(DataError, match="escapes the archive"):
        load_beir(z)
    assert not (tmp_path.parent / "escape.txt").exists()


def test_malformed_json_line_names_file_and_line(tmp_path):
    d = make_beir(tmp_path, ['{"_id": "d1", "text": "ok"}', '{"_id": "d2", "text": "trunc'])
    with pytest.raises(DataError, match=r"corpus.jsonl: line 2: not valid JSON"):
        load_beir(d)


def test_duplicate_ids(tmp_path):
    d = make_beir(tmp_path, ['{"_id": "d1", "text": "a"}', '{"_id": "d2", "text": "b"}', '{"_id": "d1", "text": "c"}'])
    with pytest.raises(DataError, match=r"line 3: duplicate _id 'd1' \(first on line 1\)"):
        load_beir(d)


def test_a_frame_with_a_null_id_is_one_line():
    """A collection built in a notebook from frames: a null id was kept as the id "None" or "nan"."""
    import pandas as pd

    from eqi_core.collection import Collection

    queries = pd.DataFrame({"query_id": ["q1", None], "text": ["a", "b"]})
    with pytest.raises(DataError, match=r"^notebook: queries have a missing id \(row 2 of the frame\)$"):
        Collection("x", pd.DataFrame({"doc_id": ["d1"], "text": ["a"]}), queries,
                   pd.DataFrame(columns=["query_id", "doc_id", "relevance"]), source="notebook")


def test_missing_id_and_whitespace_id(tmp_path):
    with pytest.raises(DataError, match="line 1: missing '_id'"):
        load_beir(make_beir(tmp_path / "a", ['{"text": "a"}']))
    # Pyserini's layout: the message says what the line holds and what BEIR names its fields
    with pytest.raises(DataError, match=r"line 1: missing '_id' \(the line's fields: 'id', 'contents'\); expected "
                                        r"BEIR's '_id' and 'text'"):
        load_beir(make_beir(tmp_path / "p", ['{"id": "d1", "contents": "a"}']))
    with pytest.raises(DataError, match=r"line 1: missing 'text' \(the line's fields: '_id', 'contents'\)"):
        load_beir(make_beir(tmp_path / "t", ['{"_id": "d1", "contents": "a"}']))
    with pytest.raises(DataError, match="contains whitespace"):
        load_beir(make_beir(tmp_path / "b", ['{"_id": "d 1", "text": "a"}']))


def test_invalid_utf8(tmp_path):
    d = make_beir(tmp_path, ['{"_id": "d1", "text": "ok"}'])
    with open(d / "corpus.jsonl", "ab") as fh:
        fh.write(b'{"_id": "d2", "text": "\xff\xfe"}\n')
    with pytest.raises(DataError, match="line 2: invalid UTF-8"):
        load_beir(d)


def test_qrels_naming_unknown_ids_are_kept_and_reported(tmp_path):
    d = make_beir(tmp_path, ['{"_id": "d1", "text": "a"}'],
                  qrels="query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\tghost\t2\nq9\td1\t1\n")
    c = load_beir(d)
    assert len(c.qrels) == 3
    assert any("1 of 3 judgments name passages that are not in the corpus" in n for n in c.notes)
    assert any("name queries that are not in the query set" in n for n in c.notes)


def test_passages_without_text_are_kept_and_reported(tmp_path):
    """Cranfield has two ('471', '995'; 995 is judged grade 2 for query 125): an auditor is told, and the
    judgments table says what stands there."""
    from eqi_core.judged import judged_passages

    d = make_beir(tmp_path, ['{"_id": "d1", "text": "a"}', '{"_id": "d2", "title": "", "text": "  "}',
                             '{"_id": "d3", "title": "A title", "text": ""}'],
                  qrels="query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\t2\n")
    c = load_beir(d)
    assert "1 of 3 passages has no text ('d2'): kept, but no ranker can match it by its words" in c.notes
    assert judged_passages(c, "q1")["passage"].tolist() == ["(a passage without text)", "a"]
    many = make_beir(tmp_path / "many", [json.dumps({"_id": f"e{i}", "text": ""}) for i in range(5)])
    assert "5 of 5 passages have no text (e.g. 'e0', 'e1', 'e2'): kept, but no ranker can match them by their words" \
        in load_beir(many).notes


def test_passages_with_the_same_text_by_hand(tmp_path):
    d = make_beir(tmp_path, ['{"_id": "d1", "text": "a bank"}', '{"_id": "d2", "text": "a bank"}',
                             '{"_id": "d3", "title": "a", "text": "bank"}', '{"_id": "d4", "text": ""}',
                             '{"_id": "d5", "text": ""}'])
    c = load_beir(d)
    assert c.same_text("a bank") == ["d1", "d2"] and c.same_text("a bank", but="d1") == ["d2"]
    assert c.same_text("a. bank") == ["d3"]  # as rankers index it: title and text joined
    assert c.same_text("") == []  # passages without text are not each other's twins
    # the texts are made once per collection (1.6 s a call on 500,000 passages), as rankers index them
    assert c.passage_texts() is c.passage_texts() and c.passage_texts() == ["a bank", "a bank", "a. bank", "", ""]


def test_a_small_share_in_a_note_keeps_its_first_digits():
    from eqi_core.collection import percent

    assert [percent(4, 5183), percent(3393, 14581), percent(1, 1000), percent(0, 10), percent(1, 0)] == \
        ["0.077%", "23%", "0.1%", "0%", "0%"]  # SciFact's 4 mis-decoded passages are not "0%"
    assert [percent(5182, 5183), percent(995, 1000), percent(994, 1000), percent(6, 1000), percent(1, 1)] == \
        ["99.981%", "99.5%", "99%", "1%", "100%"]  # nor is all but one of them "100%"


def test_bad_grade_in_qrels(tmp_path):
    d = make_beir(tmp_path, ['{"_id": "d1", "text": "a"}'], qrels="query-id\tcorpus-id\tscore\nq1\td1\thigh\n")
    with pytest.raises(DataError, match=r"test.tsv: line 2: relevance 'high' is not a number"):
        load_beir(d)


def test_empty_file(tmp_path):
    d = make_beir(tmp_path, [""])
    with pytest.raises(DataError, match="the file is empty"):
        load_beir(d)


def test_missing_split(tmp_path):
    with pytest.raises(DataError, match="no qrels/dev.tsv; available splits: test"):
        load_beir(TINY_BEIR, split="dev")


def test_msmarco_tsv_with_trec_qrels(tmp_path):
    (tmp_path / "collection.tsv").write_text("0\tthe first passage\n1\tthe second passage\n", encoding="utf-8")
    (tmp_path / "queries.dev.tsv").write_text("100\tfirst\n101\tsecond\n", encoding="utf-8")
    (tmp_path / "qrels.dev.tsv").write_text("100 0 0 1\n101 0 1 1\n", encoding="utf-8")
    c = load_msmarco(tmp_path)
    assert list(c.passages["doc_id"]) == ["0", "1"] and c.judgments == {"100": {"0": 1}, "101": {"1": 1}}
    assert load_collection(str(tmp_path)).fingerprint == c.fingerprint


def test_msmarco_tsv_header_lines_are_headers(tmp_path, store, monkeypatch):
    """pandas' to_csv writes "pid<TAB>passage" and "qid<TAB>query" first: a header, which was loaded as
    a passage and a query with the id "pid" and "qid"; a collection parsed before that, cached in the
    store, is parsed again (the loader's version is in its key)."""
    folder = tmp_path / "mm"  # beside the store's own files under tmp_path, not among them
    folder.mkdir()
    (folder / "collection.tsv").write_text("pid\tpassage\n0\tthe first passage\n1\tthe second\n", encoding="utf-8")
    (folder / "queries.dev.tsv").write_text("QID\tquery\n100\tfirst\n", encoding="utf-8")
    (folder / "qrels.dev.tsv").write_text("100 0 0 1\n", encoding="utf-8")
    c = load_msmarco(folder)
    assert c.passages["doc_id"].tolist() == ["0", "1"] and c.queries["query_id"].tolist() == ["100"]
    from eqi_core.loaders import registry

    parsed = []
    monkeypatch.setattr(registry, "_load_uncached", lambda spec, real=registry._load_uncached: parsed.append(spec) or real(spec))
    assert load_collection(str(folder), store).fingerprint == c.fingerprint
    assert load_collection(str(folder), store).fingerprint == c.fingerprint and len(parsed) == 1  # cached
    monkeypatch.setattr(registry, "LOADER_VERSION", registry.LOADER_VERSION + 1)
    load_collection(str(folder), store)
    assert len(parsed) == 2  # a newer loader does not take the older one's parse


def test_msmarco_files_gzip_compressed(tmp_path):
    """collection.tsv.gz, queries.dev.tsv.gz and qrels.dev.tsv.gz read as their plain names; a bare path
    is still detected as MS MARCO; a plain file wins over its gzip."""
    import gzip

    plain, gz = tmp_path / "plain", tmp_path / "gz"
    plain.mkdir(), gz.mkdir()
    files = {"collection.tsv": "0\tthe first passage\n1\tthe second passage\n", "queries.dev.tsv": "100\tfirst\n",
             "queries.train.tsv": "200\tsecond\n", "qrels.dev.tsv": "100 0 0 1\n"}
    for name, text in files.items():
        (plain / name).write_text(text, encoding="utf-8")
        (gz / f"{name}.gz").write_bytes(gzip.compress(text.encode()))
    c = load_collection(str(gz))
    assert c.fingerprint == load_msmarco(plain).fingerprint and c.judgments == {"100": {"0": 1}}
    assert load_msmarco(gz, "train").queries["query_id"].tolist() == ["200"]
    (gz / "queries.dev.tsv").write_text("300\tthird\n", encoding="utf-8")
    assert load_msmarco(gz).queries["query_id"].tolist() == ["300"]


def test_msmarco_bad_line(tmp_path):
    (tmp_path / "collection.tsv").write_text("0\tfine\n1\n", encoding="utf-8")
    (tmp_path / "queries.dev.tsv").write_text("100\tq\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"collection.tsv: line 2: found 1 fields; expected 2 columns"):
        load_msmarco(tmp_path)


def test_msmarco_empty_fields_and_queries_are_one_line(tmp_path):
    (tmp_path / "collection.tsv").write_text("0\tfine\n1\t\n", encoding="utf-8")
    (tmp_path / "queries.dev.tsv").write_text("100\tq\n101\t  \n", encoding="utf-8")
    with pytest.raises(DataError, match=r"collection.tsv: line 2: field 2 is empty; expected 2 columns \(pid<TAB>passage\)"):
        load_msmarco(tmp_path)  # not "found 2 fields; expected 2 columns"
    (tmp_path / "collection.tsv").write_text("0\tfine\n1\tsecond\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"queries.dev.tsv: query '101': empty query text; expected the query's words"):
        load_msmarco(tmp_path)


def test_trec_qrels_and_tsv_qrels(tmp_path):
    (tmp_path / "a.qrels").write_text("q1 0 d1 2\nq1 0 d2 0\nq2 0 d1 -1\n", encoding="utf-8")
    (tmp_path / "b.tsv").write_text("q1\td1\t2\nq1\td2\t0\n", encoding="utf-8")
    a, b = read_qrels(tmp_path / "a.qrels"), read_qrels(tmp_path / "b.tsv")
    assert list(a["relevance"]) == [2, 0, -1] and list(b["doc_id"]) == ["d1", "d2"]
    (tmp_path / "c.qrels").write_text("q1 0 d1\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"c.qrels: line 1: relevance .d1. is not a number"):
        read_qrels(tmp_path / "c.qrels")


def test_trec_run_errors(tmp_path):
    f = tmp_path / "r.trec"
    f.write_text("q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 1.0\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"r.trec: line 2: found 5 fields; expected 6 columns"):
        read_trec_run(f)
    f.write_text("q1 Q0 d1 1 2.0 t\nq1 Q0 d2 2 abc t\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"line 2: score 'abc' is not a number"):
        read_trec_run(f)
    f.write_text("q1 Q0 d1 1 2.0 t\nq1 Q0 d1 2 1.0 t\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"line 2: document 'd1' appears twice"):
        read_trec_run(f)


@pytest.mark.parametrize("spec,kind", [("wordnet", "wordnet"), ("wordnet:full", "wordnet"), ("wordnet:500", "wordnet"),
                                       ("irds:msmarco-passage/dev", "irds")])
def test_parse_spec(spec, kind):
    assert parse_spec(spec).kind == kind


def test_parse_spec_errors():
    with pytest.raises(DataError, match="no such path"):
        parse_spec("/nope/not/here")
    with pytest.raises(DataError, match="expected wordnet"):
        parse_spec("wordnet:lots")


def test_bare_path_detected_as_beir(tiny):
    assert parse_spec(str(TINY_BEIR)).kind == "beir"


def test_irds_unknown_id():
    with pytest.raises(DataError, match=r"irds:no-such/thing: ir_datasets has no dataset with this id"):
        load_collection("irds:no-such/thing")


def test_irds_never_downloads(tmp_path, monkeypatch):
    monkeypatch.setenv("IR_DATASETS_HOME", str(tmp_path))
    with pytest.raises(DataError, match=r"irds:beir/scifact: .*not in IR_DATASETS_HOME and downloads are off"):
        load_collection("irds:beir/scifact")


def test_cached_collection_matches_uncached(store, tiny):
    cached = load_collection(f"beir:{TINY_BEIR}", store)
    again = load_collection(f"beir:{TINY_BEIR}", store)
    assert cached.fingerprint == again.fingerprint == tiny.fingerprint
    assert len(store.list("collection")) == 1


def test_first_view_query_is_the_curated_one_else_the_first_judged_one_else_the_first():
    from eqi_core.collection import Collection

    passages = pd.DataFrame({"doc_id": ["d1"], "title": [""], "text": ["a river bank"]})
    queries = pd.DataFrame({"query_id": ["q1", "q2", "q3"], "text": ["unjudged first", "judged second", "Infinite"]})
    qrels = pd.DataFrame({"query_id": ["q2"], "doc_id": ["d1"], "relevance": [1]})
    coll = Collection("hand", passages, queries, qrels)
    assert coll.first_view_query("infinite") == "infinite"  # logged (case ignored)
    assert coll.first_view_query("not logged") == "judged second"
    assert coll.first_view_query() == "judged second"
    assert Collection("no judgments", passages, queries).first_view_query() == "unjudged first"
    assert Collection("empty log", passages, queries[:0]).first_view_query() == ""


def test_one_passage_text_by_id_as_rankers_index_it():
    from eqi_core.collection import Collection

    passages = pd.DataFrame({"doc_id": ["d1", "d2", "d3"], "title": ["", "Banks", "Title only"],
                             "text": ["a river bank", "money", None]})
    coll = Collection("hand", passages, pd.DataFrame({"query_id": ["q1"], "text": ["bank"]}))
    assert [coll.passage_text(d) for d in ("d1", "d2", "d3")] == coll.passage_texts() \
        == ["a river bank", "Banks. money", "Title only."]  # nothing trailing after a title alone
    assert coll.passage_text("d9") is None  # named by a run, not in the collection


def test_mis_decoded_text_is_repaired_where_shown_and_kept_where_ranked():
    """MS MARCO's UTF-8 read as Windows-1252 ("thatâ€™s"): people read the repair, rankers the file."""
    from eqi_core.collection import Collection, readable
    from eqi_core.judged import judge_results
    from eqi_core.runs import Run

    broken = "That\u00e2\u20ac\u2122s 81 \u00c2\u00b0F in \u00e2\u20ac\u0153Rome\u00e2\u20ac\u009d"  # as MS MARCO stores it
    assert readable(broken) == "That\u2019s 81 \u00b0F in \u201cRome\u201d"
    for fine in ("a river bank", "Caf\u00e9 \u6771\u4eac \u2013 na\u00efve", ""):
        assert readable(fine) == fine  # ASCII and correctly decoded text pass unchanged
    assert readable(None) is None and readable(float("nan")) != readable(float("nan"))  # not text: passed through

    passages = pd.DataFrame({"doc_id": ["d1", "d2"], "title": ["", "Caf\u00c3\u00a9"], "text": [broken, "money"]})
    coll = Collection("hand", passages, pd.DataFrame({"query_id": ["q1"], "text": ["rome"]}),
                      pd.DataFrame({"query_id": ["q1"], "doc_id": ["d1"], "relevance": [1]}))
    assert coll.passage_texts() == [broken, "Caf\u00c3\u00a9. money"]  # what rankers index: the file's text
    assert coll.passage_text("d1") == broken
    assert coll.display_text("d1") == readable(broken) and coll.display_text("d2") == "Caf\u00e9. money"
    assert coll.display_text("d9") is None
    found = coll.find_passages("that\u2019s 81")  # as copied from the screen
    assert found["text"].tolist() == [readable(broken)] and coll.passages["text"].iat[0] == broken
    assert coll.find_passages("")["title"].tolist() == ["", "Caf\u00e9"]
    run = Run("bm25", pd.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["d1", "d2"], "rank": [1, 2], "score": [2.0, 1.0]}))
    judged = judge_results(coll, "rome", run, 10)
    assert judged.results["text"].tolist() == [readable(broken), "money"]
    assert coll.mis_decoded == (2, 2)  # d1's text, d2's title, of the 2 looked at
    assert coll.mis_decoded_note().startswith("2 of 2 passages (100%) hold mis-decoded characters")
    clean = Collection("clean", passages.assign(title="", text="plain"), pd.DataFrame({"query_id": ["q1"], "text": ["x"]}))
    assert clean.mis_decoded == (0, 2) and clean.mis_decoded_note() is None


def test_a_large_collections_mis_decoded_share_is_estimated_from_a_seeded_sample(monkeypatch):
    from eqi_core import collection as collection_mod
    from eqi_core.collection import Collection

    monkeypatch.setattr(collection_mod, "MIS_DECODED_SAMPLE", 10)  # over 100 passages: a sample of 10
    texts = ["caf\u00c3\u00a9"] * 60 + ["plain"] * 60  # half mis-decoded ("café" as MS MARCO holds it)
    coll = Collection("big", pd.DataFrame({"doc_id": [f"d{i}" for i in range(120)], "title": "", "text": texts}),
                      pd.DataFrame({"query_id": ["q1"], "text": ["x"]}))
    n, looked = coll.mis_decoded
    assert looked == 10 and n == sum(t != "plain" for t in coll.passages.sample(10, random_state=0)["text"])
    assert coll.mis_decoded_note().startswith(f"about {n / 10:.0%} of the passages (in a seeded sample of 10 of 120)")


def test_gzip_compressed_runs_qrels_and_query_logs_read_as_their_text(tmp_path):
    """TREC runs and qrels are often shipped as .gz: read through, the inner suffix choosing the format;
    a damaged or truncated gzip is one line."""
    import gzip

    from eqi_core.loaders.query_log import read_query_log
    from eqi_core.runs import read_run

    run_text = "q1 Q0 d1 1 2.0 sys\nq1 Q0 d2 2 1.0 sys\n"
    (tmp_path / "r.trec.gz").write_bytes(gzip.compress(run_text.encode()))
    (tmp_path / "r.trec").write_text(run_text, encoding="utf-8")
    pd.testing.assert_frame_equal(read_run(tmp_path / "r.trec.gz").frame, read_run(tmp_path / "r.trec").frame)
    (tmp_path / "r.csv.gz").write_bytes(gzip.compress(b"qid,docid,rank\nq1,d2,1\nq1,d1,2\n"))
    assert read_run(tmp_path / "r.csv.gz").frame["doc_id"].tolist() == ["d2", "d1"]  # the CSV reader, not TREC's
    (tmp_path / "q.qrels.gz").write_bytes(gzip.compress(b"q1 0 d1 2\n"))
    assert read_qrels(tmp_path / "q.qrels.gz").values.tolist() == [["q1", "d1", 2]]
    (tmp_path / "log.jsonl.gz").write_bytes(gzip.compress(b'{"_id": "a", "text": "river bank"}\n'))
    assert read_query_log(tmp_path / "log.jsonl.gz")["text"].tolist() == ["river bank"]
    whole = gzip.compress(run_text.encode())
    (tmp_path / "cut.trec.gz").write_bytes(whole[: len(whole) // 2])
    with pytest.raises(DataError, match=r"cut.trec.gz: a truncated gzip file"):
        read_run(tmp_path / "cut.trec.gz")
    halves = run_text.splitlines(keepends=True)
    (tmp_path / "two.trec.gz").write_bytes(gzip.compress(halves[0].encode()) + gzip.compress(halves[1].encode()))
    assert len(read_run(tmp_path / "two.trec.gz")) == 2  # `cat a.gz b.gz`: both members read
    (tmp_path / "bad.trec.gz").write_bytes(b"\x1f\x8bnot deflate at all")
    with pytest.raises(DataError, match=r"bad.trec.gz: a damaged gzip file"):
        read_run(tmp_path / "bad.trec.gz")


def test_the_sidebar_lists_beir_folders_and_zips_of_the_layout_only(tmp_path):
    from eqi_core.loaders import discover_collections

    shutil.copytree(TINY_BEIR, tmp_path / "folder")
    with zipfile.ZipFile(tmp_path / "zipped.zip", "w") as z:  # one top folder, as BEIR's downloads are
        for f in sorted(TINY_BEIR.rglob("*")):
            if f.is_file():
                z.write(f, f"zipped/{f.relative_to(TINY_BEIR).as_posix()}")
    (tmp_path / "notes.zip").write_text("not a zip", encoding="utf-8")
    with zipfile.ZipFile(tmp_path / "photos.zip", "w") as z:
        z.writestr("holiday/readme.txt", "no collection here")
    with zipfile.ZipFile(tmp_path / "deep.zip", "w") as z:  # the layout two folders down: not what the loader reads
        z.writestr("a/b/corpus.jsonl", '{"_id": "d1", "text": "x"}\n')
        z.writestr("a/b/queries.jsonl", '{"_id": "q1", "text": "x"}\n')
    found = {label: spec for label, spec in discover_collections([tmp_path]).items() if not spec.startswith("wordnet")}
    assert found == {"folder (BEIR)": f"beir:{tmp_path / 'folder'}", "zipped (BEIR zip)": f"beir:{tmp_path / 'zipped.zip'}"}
    assert len(load_collection(found["zipped (BEIR zip)"]).passages) == len(load_collection(found["folder (BEIR)"]).passages)
