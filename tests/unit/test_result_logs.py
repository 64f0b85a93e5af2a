"""A system's result log as the exposure map's source (black-box audits), and small-log warnings."""
import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from eqi_core.cli import app
from eqi_core.errors import DataError
from eqi_core.exposure.result_logs import check_result_log, result_log_id
from eqi_core.exposure.setup import default_n_dq, degenerate_settings, prepare_exposure
from eqi_core.runs import Run, read_run
from eqi_core.store import ArtifactStore
from tests.conftest import TINY_BEIR

TINY = f"beir:{TINY_BEIR}"


def same_map(a, b) -> bool:
    return all(np.array_equal(getattr(a, f), getattr(b, f)) for f in ("q_idx", "d_idx", "rank0", "offsets"))


def test_eqi_run_output_reproduces_the_builtin_bm25_map_and_relq(tiny, tmp_path, monkeypatch):
    monkeypatch.setenv("EQI_HOME", str(tmp_path / "home"))
    trec = tmp_path / "bm25.trec"
    assert CliRunner().invoke(app, ["run", "-c", TINY, "-r", "bm25", "-k", "100", "-o", str(trec)]).exit_code == 0
    store = ArtifactStore(tmp_path / "home")
    builtin = prepare_exposure(tiny, "bm25", store, depth=100)
    logged = prepare_exposure(tiny, result_log_id(trec), store, depth=100)
    assert same_map(builtin.exposure, logged.exposure)
    notes = " | ".join(logged.notes)  # every id known; BM25 leaves a query without results and lists shallow
    assert "not in the query log" not in notes and "not in the collection" not in notes
    assert "1 of the log's 5 queries has no results" in notes
    from eqi_core.exposure.evaluate import run_table2
    from eqi_core.exposure.learned import TrainingConfig

    fast = TrainingConfig(n_dq=5, steps=30, batch_size=32, n_train_passages=8)
    a = run_table2(builtin, n_test=3, n_dq=5, config=fast)["table"]
    b = run_table2(logged, n_test=3, n_dq=5, config=fast)["table"]
    pd.testing.assert_frame_equal(a, b)


def test_cli_exposure_with_a_result_log_table(tiny, tmp_path, monkeypatch):
    monkeypatch.setenv("EQI_HOME", str(tmp_path / "home"))
    store = ArtifactStore(tmp_path / "home")
    builtin = prepare_exposure(tiny, "bm25", store, depth=100).exposure
    rows = [(tiny.queries["query_id"].iloc[q], tiny.passages["doc_id"].iloc[d], r + 1)
            for q, d, r in zip(builtin.q_idx, builtin.d_idx, builtin.rank0)]
    table = pd.DataFrame(rows, columns=["qid", "docid", "rank"]).sample(frac=1, random_state=0)  # any row order
    path = tmp_path / "system-log.csv"
    table.to_csv(path, index=False)
    out = CliRunner().invoke(app, ["exposure", "d1", "-c", TINY, "--run", str(path), "--n-dq", "5", "--no-heads"])
    assert out.exit_code == 0, out.output
    exact = builtin.exposing_frame("d1")
    assert len(exact) > 1 and f"## exact: {len(exact)} queries show it in their top 100" in out.output
    out = CliRunner().invoke(app, ["exposure-map", "-c", TINY, "--run", str(path)])
    assert out.exit_code == 0 and '"pairs": ' + str(len(builtin.q_idx)) in out.output, out.output
    logged = prepare_exposure(tiny, result_log_id(path), store, depth=100).exposure
    assert same_map(builtin, logged)  # ranks from the table, no scores needed


def test_result_log_notes_and_errors(tiny, tmp_path):
    frame = pd.DataFrame({"query_id": ["q1", "q1", "q2", "nope"], "doc_id": ["d1", "zzz", "d2", "d1"],
                          "rank": [1, 2, 1, 1], "score": [3.0, 2.0, 1.0, 1.0]})
    notes = check_result_log(Run("sys", frame), tiny, depth=100)
    joined = " | ".join(notes)
    assert "1 of the run's 3 queries is not in the query log" in joined
    assert "1 result row names a passage that is not in the collection" in joined
    assert "have no results in the run" in joined and "at most 2 results per query, fewer than n_q->d = 100" in joined
    deeper = check_result_log(Run("sys", frame), tiny, depth=1)  # "zzz" at rank 2 is never read at depth 1
    assert not any("not in the collection" in n for n in deeper)
    with pytest.raises(DataError, match="none of its 1 queries is in the query log"):
        check_result_log(Run("sys", frame[frame["query_id"] == "nope"]), tiny, depth=10)
    other_ids = frame.assign(doc_id="X" + frame["doc_id"])  # another collection's passages: nothing to expose
    with pytest.raises(DataError, match="none of the 3 passages it returns for the log's queries is in tiny_beir .e.g. 'Xd1'."):
        check_result_log(Run("sys", other_ids), tiny, depth=10)


@pytest.mark.parametrize("text,message", [
    ("qid,docid,rank\nq1,d1,1\nq1,d1,2\n", "line 3: document 'd1' appears twice for query 'q1'"),
    ("qid,docid,rank\nq1,d1,first\n", "line 2: rank 'first' is not an integer"),
    ("qid,docid,rank\n\nq1,d1,1\n\nq1,d2,x\n", "line 5: rank 'x' is not an integer"),  # blank lines counted
    ("qid,docid,rank\nq1,,1\n", "line 2: no docid"),  # an empty id was kept as the passage ""
    ("a,b\nq1,d1\n", "found 2 columns; expected qid, docid, rank"),
    ("qid,rank\nq1,1\n", "no column doc_id"),
])
def test_bad_result_log_tables_are_one_line(tmp_path, text, message):
    path = tmp_path / "log.csv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(DataError, match=message):
        read_run(path)


def test_a_parquet_null_is_one_line(tmp_path):
    """A null id was read as the id "None" (or, for a rank, a pandas traceback)."""
    for column, said in (("query_id", "no qid"), ("doc_id", "no docid"), ("rank", "no rank")):
        frame = pd.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["d1", "d2"], "rank": [1.0, 2.0]})
        frame.loc[1, column] = None
        frame.to_parquet(tmp_path / "log.parquet")
        with pytest.raises(DataError, match=rf"log.parquet: row 2: {said}; expected qid, docid, rank\[, score\] in every row"):
            read_run(tmp_path / "log.parquet")


def test_tsv_without_header_and_parquet(tmp_path):
    (tmp_path / "log.tsv").write_text("q1\td2\t2\t0.5\nq1\td1\t1\t0.9\n", encoding="utf-8")
    run = read_run(tmp_path / "log.tsv")
    assert run.for_query("q1")["doc_id"].tolist() == ["d1", "d2"]
    pd.DataFrame({"query_id": ["q1"], "doc_id": ["d3"], "rank": [1]}).to_parquet(tmp_path / "log.parquet")
    assert read_run(tmp_path / "log.parquet").frame["score"].tolist() == [-1.0]


def test_small_log_warnings_and_default():
    assert default_n_dq(112) == 11 and default_n_dq(13_013) == 100 and default_n_dq(5) == 1
    from eqi_core.exposure.setup import listed_n_dq  # the Exposure page's and `eqi exposure`'s

    assert listed_n_dq(13_013) == 50 and listed_n_dq(112) == 11 and listed_n_dq(43) == 4 and listed_n_dq(5) == 1
    warnings = degenerate_settings(112, 1460, 100, 100)  # CISI with the paper's n_d->q
    assert any("lists 89% of the log's 112 queries" in w and "trivially near 1" in w for w in warnings)
    assert degenerate_settings(13_013, 20_001, 100, 100) == []
    assert any("every query exposes every passage" in w for w in degenerate_settings(50, 12, 100, 5))
    assert any("more than a tenth" in w for w in degenerate_settings(112, 1460, 100, 12))
    assert degenerate_settings(112, 1460, 100, 11) == []  # the default for 112 queries: nothing to warn of
    assert degenerate_settings(4, 1460, 100, 1) == []  # under 10 queries, 1 is the least a list can hold
    assert degenerate_settings(1, 1460, 100, 1) == []  # even when 1 is the whole log ("use n_d->q <= 1" said nothing)
    assert any("lists 100% of the log's 2 queries" in w for w in degenerate_settings(2, 1460, 100, 2))
    sparse = degenerate_settings(50, 12, 100, 5, retrieves_all=False)  # BM25: only passages sharing a word
    assert not any("every query exposes every passage," in w for w in sparse)
    assert any("merely the queries that retrieve it" in w for w in sparse)


def test_whether_every_query_shows_every_passage():
    """Decides which of the two deep-list warnings holds: a dense ranker's lists hold the whole small
    collection, a sparse ranker's only the passages it matches."""
    from eqi_core.exposure.exact import ExposureMap

    full = ExposureMap.from_pairs(["q1", "q2"], ["d1", "d2"], 100, [0, 0, 1, 1], [0, 1, 1, 0], [0, 1, 0, 1])
    assert full.every_query_shows_every_passage()
    partial = ExposureMap.from_pairs(["q1", "q2"], ["d1", "d2"], 100, [0, 0, 1], [0, 1, 1], [0, 1, 0])
    assert not partial.every_query_shows_every_passage()
    shallow = ExposureMap.from_pairs(["q1"], ["d1", "d2", "d3"], 2, [0, 0], [0, 1], [0, 1])
    assert not shallow.every_query_shows_every_passage()  # lists end before the collection does


def test_a_small_log_is_said_with_where_a_real_one_is(tmp_path, monkeypatch):
    """Under 1,000 queries (DL19's 43 test topics) exposure says little about a search engine's users: a
    note says so, with the remedy; the real log at hand for DL19's passages is the web-log demo's."""
    from eqi_core.exposure.setup import small_log_note
    from eqi_core.loaders.registry import web_log_for

    assert small_log_note(43, "use X") == ("This log holds only 43 queries: exposure over so few says little about who "
                                           "a search engine shows a passage to; use X")
    assert small_log_note(1, "use X").startswith("This log holds only 1 query:")
    assert small_log_note(999, "use X") and small_log_note(1_000, "use X") is None
    dl19, log = tmp_path / "trec-dl19-passage", tmp_path / "query-logs" / "msmarco-passage-dev-subset.tsv"
    dl19.mkdir()
    log.parent.mkdir()
    for name in ("corpus.jsonl", "queries.jsonl"):
        (dl19 / name).write_text("{}\n", encoding="utf-8")
    log.write_text("1\tq\n", encoding="utf-8")
    monkeypatch.setenv("EQI_DATA_ROOTS", str(tmp_path))
    demo = f"beir:{dl19}+log:{log}"
    assert web_log_for(f"beir:{dl19}") == demo and web_log_for(f"beir:{dl19}#test") == demo
    assert web_log_for(demo) is None and web_log_for(f"beir:{tmp_path / 'cranfield'}") is None
    log.unlink()  # no MS MARCO log under the roots: nothing to offer
    assert web_log_for(f"beir:{dl19}") is None


def test_cli_eval_exposure_adapts_n_dq_on_a_small_log(tmp_path, monkeypatch):
    monkeypatch.setenv("EQI_HOME", str(tmp_path / "home"))
    out = CliRunner().invoke(app, ["eval-exposure", "-c", TINY, "-r", "minilm-l3-onnx", "--test-passages", "2",
                                   "--steps", "3"])
    assert out.exit_code == 0, out.output
    assert "n_d->q = 1" in out.output and "warning: n_q->d = 100 is at least the collection's 12 passages" in out.output


def test_cli_eval_exposure_grid_says_which_cells_have_no_head(tmp_path, monkeypatch):
    """Under BM25 one or two of the tiny log's queries expose only held-out passages: --grid stopped with
    "no training passage is exposed"; those cells now read "—", and the output says why."""
    monkeypatch.setenv("EQI_HOME", str(tmp_path / "home"))
    out = CliRunner().invoke(app, ["eval-exposure", "-c", TINY, "-r", "bm25", "--n-dq", "1", "--steps", "3", "--grid"])
    assert out.exit_code == 0, out.output
    grid = out.output[out.output.index("Training-size grid"):].splitlines()
    assert grid[1].split() == ["train", "queries", "1", "2", "5"]
    assert grid[3].split()[:3] == ["1000", "—", "—"] and float(grid[3].split()[3]) >= 0
    assert "(—: those training queries expose no passage outside the held-out ones; no head trained)" in out.output


def test_cli_eval_exposure_writes_the_pages_figures(tmp_path, monkeypatch):
    """--figures: the Exposure evaluation page's figures (with --expanding, its growing log too), HTML + PNG."""
    from eqi_core.figure_export import image_browser

    if image_browser() is None:
        pytest.skip("no chromium here: the PNGs cannot be rendered (the page greys its buttons out)")
    monkeypatch.setenv("EQI_HOME", str(tmp_path / "home"))
    figs = tmp_path / "figs"
    out = CliRunner().invoke(app, ["eval-exposure", "-c", TINY, "-r", "minilm-l3-onnx", "--test-passages", "2",
                                   "--steps", "3", "--expanding", "--figures", str(figs)])
    assert out.exit_code == 0, out.output
    names = ["relq_patience_heatmaps", "rank_size", "retrievability_lorenz_c10", "query_traits_length", "expanding_log"]
    assert sorted(p.name for p in figs.iterdir()) == sorted(f"{n}.{x}" for n in names for x in ("html", "png"))
    heat = (figs / "relq_patience_heatmaps.html").read_text(encoding="utf-8")
    assert "Residual" in heat and "dense-reverse" in heat and "click: paired t-tests" not in heat
