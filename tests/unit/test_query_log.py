"""A query log given apart from the passages (SPEC+log:FILE), with optional counts."""
import numpy as np
import pytest

from eqi_core.errors import DataError
from eqi_core.exposure.audit import retrievability
from eqi_core.loaders import load_collection
from eqi_core.loaders.query_log import read_query_log
from eqi_core.loaders.registry import check_within_roots, parse_spec
from tests.conftest import TINY_BEIR


def test_spec_round_trip_and_log_replaces_queries(tmp_path):
    log = tmp_path / "log.tsv"
    log.write_text("a1\tbank of a river\t3\na2\tmoney deposits\t1\n", encoding="utf-8")
    spec = f"beir:{TINY_BEIR}+log:{log}"
    assert str(parse_spec(spec)) == spec
    c = load_collection(spec)
    assert list(c.queries["query_id"]) == ["a1", "a2"] and c.query_weights.tolist() == [3.0, 1.0]
    assert len(c.passages) == 12 and len(c.qrels) == 0
    assert any("dropped" in n for n in c.notes) and c.name.endswith("+ log log.tsv")


@pytest.mark.parametrize("name,text", [
    ("log.jsonl", '{"_id": "x1", "text": "river bank", "count": 2}\n{"_id": "x2", "text": "loan"}\n'),
    ("log.csv", "qid,query,count\nx1,river bank,2\nx2,loan,0\n"),
    ("log.tsv", "qid\ttext\nx1\triver bank\nx2\tloan\n"),
])
def test_formats(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    frame = read_query_log(path)
    assert list(frame["query_id"]) == ["x1", "x2"] and frame["text"].iloc[0] == "river bank"


@pytest.mark.parametrize("name,text,message", [
    ("log.tsv", "x1\tbank\nx1\tloan\n", "line 2: query id 'x1' appears twice"),
    ("log.tsv", "x1\tbank\t-2\n", "line 1: count '-2' is not a non-negative integer"),
    ("log.tsv", "qid\ttext\n\nx1\tbank\nx2\tloan\tmany\n", "line 4: count 'many'"),  # header and blank line counted
    ("log.tsv", "x1\tbank\nx2\n", "line 2: 1 tab-separated field; expected qid<TAB>text"),  # read as the query "nan"
    ("log.tsv", "x1\tbank\nx2\tloan\t3\t4\n", "line 2: 4 tab-separated fields"),
    ("log.csv", "qid,text\nx1,bank\nx2\n", "line 3: empty query text"),
    ("log.csv", "qid,text\nx1,bank\nx2,loan,3\n", "line 3: 3 fields where the first line has 2"),
    ("log.jsonl", '{"_id": "x1", "text": "a"}\n\n{"_id": "x2"}\n', "line 3: no query text"),
    ("log.tsv", "x1\tbank\n".encode("utf-16"), r"not a text file \(NUL bytes: binary data, or UTF-16 text\)"),
    ("log.tsv", "just one column\n", "expected qid<TAB>text"),
    ("log.jsonl", '{"_id": "x1", "text": "a"}\nnot json\n', "line 2: not valid JSON"),
    ("log.csv", "id,words\nx1,a\n", "expected columns for the query id"),
    ("log.tsv", "x1\t \n", "line 1: empty query text"),
    ("log.tsv", "qid\ttext\n", r"holds no query \(only a header\)"),
    ("log.csv", "qid,text\n", r"holds no query \(only a header\)"),
])
def test_bad_logs_are_one_line(tmp_path, name, text, message):
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    with pytest.raises(DataError, match=message):
        read_query_log(path)


@pytest.mark.parametrize("header", ["qid\ttext", "query_id\tquery_text", "id\tsearch\tfrequency", "QID\tQuery"])
def test_a_tsv_header_is_known_by_its_first_column(tmp_path, header):
    """Columns of a TSV log are read by position; a first line whose first column is named as an id
    column is a header, whatever the others are named ("query_text" was read as a query)."""
    path = tmp_path / "log.tsv"
    path.write_text(f"{header}\nq1\tbank\t2\nq2\tloan\n", encoding="utf-8")
    frame = read_query_log(path)
    assert frame["query_id"].tolist() == ["q1", "q2"] and frame["count"].tolist() == [2, 1]


def test_tsv_counts_on_some_lines_only(tmp_path):
    """A count on some lines (the others count once), quotes kept as text, Windows line ends; a log
    without counts stays one without (no count column)."""
    path = tmp_path / "log.tsv"
    path.write_text('x1\tsay "hi"\t3\r\nx2\tloan\r\n', encoding="utf-8")
    frame = read_query_log(path)
    assert frame["text"].tolist() == ['say "hi"', "loan"] and frame["count"].tolist() == [3, 1]
    path.write_text("x1\tbank\nx2\tloan\n", encoding="utf-8")
    assert list(read_query_log(path).columns) == ["query_id", "text"]


def test_log_paths_stay_within_the_data_roots(tmp_path):
    inside, outside = tmp_path / "data", tmp_path / "elsewhere"
    inside.mkdir(), outside.mkdir()
    (outside / "log.tsv").write_text("a\tb\n", encoding="utf-8")
    with pytest.raises(DataError, match="outside the configured data roots"):
        check_within_roots(f"wordnet+log:{outside / 'log.tsv'}", [inside])


def test_weighted_retrievability(tiny, store):
    from eqi_core.exposure.setup import prepare_exposure

    emap = prepare_exposure(tiny, "bm25", store, depth=100).exposure
    w = np.arange(1, len(tiny.queries) + 1, dtype=float)
    plain, weighted = retrievability(emap, 10), retrievability(emap, 10, w)
    by_hand = np.zeros(len(tiny.passages))
    for q, d, r in zip(emap.q_idx, emap.d_idx, emap.rank0):
        by_hand[d] += w[q] if r < 10 else 0
    assert weighted.tolist() == by_hand.tolist() and plain.sum() == len(emap.q_idx[emap.rank0 < 10])
