import pytest
from typer.testing import CliRunner

from eqi_core.cli import app, main

runner = CliRunner()


@pytest.fixture
def files(tmp_path):
    (tmp_path / "q.qrels").write_text("q1 0 a 1\nq2 0 c 1\nq3 0 d 2\n", encoding="utf-8")
    (tmp_path / "old.trec").write_text("q1 Q0 a 1 2 old\nq2 Q0 z 1 2 old\nq2 Q0 c 2 1 old\n", encoding="utf-8")
    (tmp_path / "new.trec").write_text("q1 Q0 x 1 2 new\nq1 Q0 a 2 1 new\nq3 Q0 d 1 5 new\n", encoding="utf-8")
    return tmp_path


def test_tasc_cli_by_hand(files):
    args = ["tasc", "--qrels", str(files / "q.qrels"), "--run", str(files / "old.trec"), "--run", str(files / "new.trec"),
            "--measure", "recip_rank", "--release", "old=2019", "--release", "new=2020", "--bootstrap", "200"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    # RR old = [1, .5, 0], new = [.5, 0, 1] -> TaSC max(new | old) = (0*.5 + .5*0 + 1*1) / 3
    new_row = [line_ for line_ in result.output.splitlines() if line_.strip().startswith("new")][0]
    assert "0.3333" in new_row
    # paired tests by hand, the later ranker as A: RR differences new - old = [-.5, -.5, 1] -> mean 0, new better
    # on 1 query, old on 2; one pair: Holm leaves p as it is
    assert "paired tests (holm correction" in result.output
    test_row = [line_ for line_ in result.output.splitlines() if line_.split()[:2] == ["new", "old"]][0].split()
    assert test_row[2:8] == ["0.5000", "0.5000", "+0.0000", "1", "2", "0"]
    assert test_row[8] == "1.0e+00" and test_row[10] == "1.0e+00"  # t = 0: p = 1, raw and corrected


def test_tasc_cli_writes_exports(files, tmp_path):
    out = tmp_path / "out"
    args = ["tasc", "--qrels", str(files / "q.qrels"), "--run", str(files / "old.trec"), "--run", str(files / "new.trec"),
            "--mode", "all-others", "--bootstrap", "100", "-o", str(out), "--figure-formats", "png,pdf"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert {"matrix.csv", "tasc.csv", "significance.csv", "tasc.tex", "bars.html", "bars.png", "report.html",
            "pairwise.png", "pairwise_scatter.png", "pairwise_scatter.html", "bars.pdf"} <= {p.name for p in out.iterdir()}
    assert (out / "bars.pdf").read_bytes().startswith(b"%PDF") and (out / "bars.png").read_bytes().startswith(b"\x89PNG")
    report = (out / "report.html").read_text(encoding="utf-8")
    # the Pairwise tab's pair, the later ranker (A) against the earlier: new is better on 1 query, old on 2
    assert "new against old, query by query" in report and "new better (1)" in report and "old better (2)" in report
    # RR old [1, .5, 0], new [.5, 0, 1]: q3 differs most (1.0), so the report drills into it as the page opens on it
    assert "Ranker coverage report" in report and "One query across rankers: q3" in report
    assert "report.html (query q3 drilled into)" in result.output


def test_tasc_cli_drills_into_one_query(files):
    args = ["tasc", "--qrels", str(files / "q.qrels"), "--run", str(files / "old.trec"), "--run", str(files / "new.trec"),
            "--release", "old=2019", "--release", "new=2020", "--bootstrap", "100", "--query", "q1"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    drill = result.output.split("query q1:")[1]
    # q1: old lists a (grade 1) first; new lists x (unjudged), then a
    listed = drill.split("passages listed")[1].splitlines()[1:]
    rows = [line_.split() for line_ in listed if line_.strip()]
    assert rows[0] == ["doc_id", "grade", "old", "new", "passage"]
    assert rows[1][:4] == ["a", "1", "1", "2"] and rows[2][:4] == ["x", "unjudged", "-", "1"]


def test_tasc_cli_unknown_query_is_one_line(files, monkeypatch, capsys):
    monkeypatch.setattr("sys.argv", ["eqi", "tasc", "--qrels", str(files / "q.qrels"), "--run", str(files / "old.trec"),
                                     "--run", str(files / "new.trec"), "--mode", "all-others", "--query", "q9"])
    with pytest.raises(SystemExit):
        main()
    err = capsys.readouterr().err.strip()
    assert "--query 'q9': not one of the 3 judged queries" in err and "Traceback" not in err


@pytest.mark.parametrize("extra,message", [
    (["--measure", "nope"], "metric 'nope' does not exist"),
    (["--mode", "sideways"], "expected one of chronological"),
    (["--release", "ghost=2020"], "expected NAME=YYYY-MM with NAME one of"),
    (["--correction", "nope"], "--correction 'nope': expected one of holm, bonferroni, bh"),
    ([], "missing for old, new (give each a date, YYYY-MM, or compare in the all-others mode)"),
])
def test_tasc_cli_errors_are_one_line(files, monkeypatch, capsys, extra, message):
    monkeypatch.setattr("sys.argv", ["eqi", "tasc", "--qrels", str(files / "q.qrels"), "--run", str(files / "old.trec"),
                                     "--run", str(files / "new.trec"), *extra])
    with pytest.raises(SystemExit) as exc:
        main()
    err = capsys.readouterr().err.strip()
    assert exc.value.code == 2 and message in err and "Traceback" not in err


@pytest.mark.parametrize("extra,message", [
    (["-r", "bm25", "-r", "bm25"], "--ranker bm25: named twice"),
    (["-r", "bm25", "-r", "nope"], "ranker 'nope': unknown"),
    (["-r", "bm25"], "expected at least two, got 1"),
    (["-r", "bm25", "-r", "minilm-l6", "--measure", "nope"], "metric 'nope' does not exist"),
    (["-r", "bm25", "-r", "minilm-l6", "--measure", "NumRet"], "metric 'NumRet' counts documents; TaSC needs"),
    (["-r", "bm25", "-r", "minilm-l6", "--mode", "sideways"], "expected one of chronological"),
    (["-r", "bm25", "-r", "minilm-l6", "--baseline", "ghost"], "baseline 'ghost' is not among the rankers"),
    (["-r", "bm25", "-r", "minilm-l6", "--release", "bm25=lately"], "release date of 'bm25' is 'lately'"),
    (["-r", "bm25", "--run", "{files}/old.trec", "--mode", "chronological"], "missing for old"),
])
def test_tasc_cli_live_rankers_fail_before_any_ranking(files, monkeypatch, capsys, extra, message):
    """A live dense ranker over a large collection ranks for minutes: a mistyped option used to be
    reported only after every ranker had run."""
    from tests.conftest import TINY_BEIR

    def no_ranking(*args, **kwargs):
        raise AssertionError("the rankers ran before the options were checked")

    monkeypatch.setattr("eqi_core.coverage.sources.live_runs", no_ranking)
    argv = ["eqi", "tasc", "-c", f"beir:{TINY_BEIR}", *[a.format(files=files) for a in extra]]
    monkeypatch.setattr("sys.argv", argv)
    with pytest.raises(SystemExit) as exc:
        main()
    err = capsys.readouterr().err.strip()
    assert exc.value.code == 2 and message in err and "\n" not in err


def test_tasc_cli_bad_run_line_and_single_run(files, monkeypatch, capsys):
    (files / "bad.trec").write_text("q1 Q0 a 1 2 x\nq1 Q0 b two 1 x\n", encoding="utf-8")
    for runs, message in (([files / "bad.trec", files / "old.trec"], "bad.trec: line 2: rank 'two' is not a number"),
                          ([files / "old.trec"], "expected at least two")):
        argv = ["eqi", "tasc", "--qrels", str(files / "q.qrels"), "--mode", "all-others"]
        for r in runs:
            argv += ["--run", str(r)]
        monkeypatch.setattr("sys.argv", argv)
        with pytest.raises(SystemExit):
            main()
        assert message in capsys.readouterr().err


def test_runs_named_alike_are_all_kept(files, tmp_path):
    """A run file named like a live ranker (bm25.dl19.trec beside the live BM25) used to replace it."""
    from eqi_core.coverage.sources import combine_runs, load_run_files, load_uploaded_runs
    from eqi_core.errors import DataError

    (files / "old.dl19.trec").write_text((files / "old.trec").read_text(encoding="utf-8"), encoding="utf-8")
    first, second = load_run_files([files / "old.trec"]), load_run_files([files / "old.dl19.trec"])
    both = combine_runs(first, second)
    assert list(both) == ["old", "old.dl19"] and both["old.dl19"].name == "old.dl19"
    assert second["old"].name == "old"  # the (cached) run itself keeps its name
    uploads = load_uploaded_runs([("old.trec", (files / "old.trec").read_bytes())])
    with pytest.raises(DataError, match="old.trec: a ranking named 'old' is already chosen"):
        combine_runs(first, uploads)
    result = runner.invoke(app, ["tasc", "--qrels", str(files / "q.qrels"), "--run", str(files / "old.trec"),
                                 "--run", str(files / "new.trec"), "--run", str(files / "old.dl19.trec"),
                                 "--mode", "all-others", "--bootstrap", "100"])
    assert result.exit_code == 0, result.output
    tasc_rows = result.output.split("\npaired tests")[0].splitlines()[-3:]
    assert [ln.split()[0] for ln in tasc_rows] == ["old", "new", "old.dl19"]
    # systems' outputs laid out as bm25/run.trec and dense/run.trec: both kept, named by their folders
    for system in ("bm25", "dense"):
        (tmp_path / system).mkdir()
        (tmp_path / system / "run.trec").write_text((files / "old.trec").read_text(encoding="utf-8"), encoding="utf-8")
    alike = load_run_files([tmp_path / "bm25" / "run.trec", tmp_path / "dense" / "run.trec", files / "new.trec"])
    assert list(alike) == ["bm25/run", "dense/run", "new"] and alike["dense/run"].name == "dense/run"


def test_live_runs_report_each_rankers_indexing_and_ranking_apart(tiny, store):
    """A bar says which ranker it counts and what: passages while indexing, queries while ranking."""
    from eqi_core.coverage.sources import live_runs

    seen: dict[tuple[str, str], int] = {}

    def progress_for(rid, stage):
        def update(done, total):
            seen[(rid, stage)] = total
        return update

    runs = live_runs(tiny, ["bm25"], store, k=5, progress_for=progress_for)
    assert list(runs) == ["bm25"] and runs["bm25"].name == "bm25"
    assert 0 < seen[("bm25", "ranking")] <= len(tiny.queries)  # queries counted (BM25 skips term-less ones)
    assert set(seen) <= {("bm25", "indexing"), ("bm25", "ranking")}


def test_a_wrong_figure_format_is_one_line_before_any_work(files, tmp_path, monkeypatch, capsys):
    from eqi_core.cli import main

    out = tmp_path / "out"
    monkeypatch.setattr("sys.argv", ["eqi", "tasc", "--qrels", str(files / "q.qrels"), "--run", str(files / "old.trec"),
                                     "-o", str(out), "--figure-formats", "png,tiff"])
    with pytest.raises(SystemExit) as exc:
        main()
    err = capsys.readouterr().err.strip()
    assert exc.value.code == 2 and err == "error: --figure-formats: 'tiff' is not one of png, svg, jpg, jpeg, webp, pdf"
    assert not out.exists()


def test_gzip_compressed_runs_upload_and_sit_beside_a_collection(files, tmp_path):
    """bm25.trec.gz reads as bm25.trec: uploaded, named by its first name part, and listed in a
    collection's runs/ folder beside plain run files."""
    import gzip
    import shutil

    import pandas as pd

    from eqi_core.coverage.sources import load_uploaded_runs, run_files_beside
    from eqi_core.loaders import load_collection
    from tests.conftest import TINY_BEIR

    plain = (files / "old.trec").read_bytes()
    runs = load_uploaded_runs([("old.trec.gz", gzip.compress(plain))])
    pd.testing.assert_frame_equal(runs["old"].frame, load_uploaded_runs([("old.trec", plain)])["old"].frame)
    folder = tmp_path / "beir"
    shutil.copytree(TINY_BEIR, folder)
    (folder / "runs").mkdir()
    (folder / "runs" / "a.trec").write_bytes(plain)
    (folder / "runs" / "b.trec.gz").write_bytes(gzip.compress(plain))
    (folder / "runs" / "notes.md").write_text("not a run", encoding="utf-8")
    assert [p.name for p in run_files_beside(load_collection(f"beir:{folder}"))] == ["a.trec", "b.trec.gz"]
