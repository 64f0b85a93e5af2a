import io
import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from eqi_core.cli import app, main
from eqi_core.runs import Run
from tests.conftest import TINY_BEIR

runner = CliRunner()
TINY = f"beir:{TINY_BEIR}"


@pytest.mark.parametrize("command", [[], ["collections"], ["collections", "list"], ["collections", "inspect"],
                                     ["index"], ["search"], ["run"], ["bench"], ["bench", "encode"], ["bench", "dense"],
                                     ["bench", "scale"], ["bench", "pasted"], ["judgments"]])
def test_help_on_every_command(command):
    result = runner.invoke(app, command + ["--help"])
    assert result.exit_code == 0 and "Usage" in result.output


def test_inspect_and_list():
    out = runner.invoke(app, ["collections", "inspect", TINY]).output
    assert "passages                   12" in out and "fingerprint" in out
    assert "wordnet:full" in runner.invoke(app, ["collections", "list"]).output
    with_encoder = runner.invoke(app, ["collections", "inspect", TINY, "-e", "minilm-l3-onnx"]).output
    assert "passages_cut_by_minilm-l3-onnx 0 (of 12; limit 128 word pieces)" in with_encoder
    assert runner.invoke(app, ["collections", "inspect", "-c", TINY]).output == out  # -c, as every other command
    both = runner.invoke(app, ["collections", "inspect", "wordnet", "-c", TINY])
    assert both.exit_code != 0 and "two collections given" in str(both.exception)  # main() prints it as one line


def test_search_shows_grades():
    result = runner.invoke(app, ["search", "river bank", "-c", TINY, "-k", "3", "--json"])
    rows = [json.loads(line) for line in result.output.splitlines() if line.startswith("{")]
    assert rows[0]["doc_id"] == "d1" and rows[0]["grade"] == 2 and len(rows) == 3


def test_search_says_when_the_dense_encoder_cannot_read_the_query():
    """The note goes to stderr, so --json output stays JSON lines."""
    result = runner.invoke(app, ["search", "😀", "-c", TINY, "-r", "minilm-l3-onnx", "-k", "2", "--json"])
    assert result.exit_code == 0, result.output
    assert [json.loads(line)["rank"] for line in result.stdout.splitlines()] == [1, 2]
    assert result.stderr.splitlines()[-1] == ("note: minilm-l3-onnx cannot read this query: “😀” is outside its vocabulary "
                                     "([UNK]), so its vector, and every result made from it, says nothing about the query")


def test_search_without_results_says_so():
    result = runner.invoke(app, ["search", "the of and", "-c", TINY, "-r", "bm25"])
    assert result.exit_code == 0 and result.stdout.splitlines()[-1] == "(no passage shares a term with this query)"


def test_a_query_that_reads_as_a_collection_gets_a_note():
    """"eqi search beir:PATH QUERY" searches the query's collection for the spec's text: a note says to
    use -c; a word that happens to name a folder ("tests") gets none."""
    result = runner.invoke(app, ["search", TINY, "river bank", "-c", TINY, "-k", "1", "--json"])
    assert result.exit_code == 0, result.output
    notes = [ln for ln in result.stderr.splitlines() if ln.startswith("note:")]
    assert notes == [f"note: {TINY!r} is read as a query, but looks like a collection; name the collection with -c, "
                     f"e.g. eqi search -c {TINY} ..."]
    assert [json.loads(ln)["query"] for ln in result.stdout.splitlines()] == ["river bank"]  # the spec: no hit
    assert "note: " in runner.invoke(app, ["search", str(TINY_BEIR), "-c", TINY, "-k", "1"]).stderr
    assert "note: " not in runner.invoke(app, ["search", "tests", "-c", TINY, "-k", "1"]).stderr


def test_search_compare_gives_each_list_the_other_rankers_rank():
    result = runner.invoke(app, ["search", "river bank", "-c", TINY, "-k", "5", "--json", "--compare", "minilm-l3-onnx"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.output.splitlines() if line.startswith("{")]
    lists = {name: [r for r in rows if r["ranker"] == name] for name in ("bm25", "minilm-l3-onnx")}
    assert [len(v) for v in lists.values()] == [5, 5]
    rank = {name: {r["doc_id"]: r["rank"] for r in v} for name, v in lists.items()}
    for r in lists["bm25"]:
        assert r["rank_under_minilm-l3-onnx"] == rank["minilm-l3-onnx"].get(r["doc_id"])
    for r in lists["minilm-l3-onnx"]:
        assert r["rank_under_bm25"] == rank["bm25"].get(r["doc_id"])
    table = runner.invoke(app, ["search", "river bank", "-c", TINY, "-k", "5", "--compare", "minilm-l3-onnx"]).output
    common = len(set(rank["bm25"]) & set(rank["minilm-l3-onnx"]))
    assert table.splitlines()[-1].startswith(f"# bm25 vs minilm-l3-onnx: {common} of the top 5 passages in common; nDCG@10 ")
    assert "[minilm-l3-onnx: " in table.splitlines()[1]


def test_index_then_run_writes_trec(tmp_path):
    assert runner.invoke(app, ["index", "-c", TINY]).exit_code == 0
    out = tmp_path / "bm25.trec"
    result = runner.invoke(app, ["run", "-c", TINY, "-k", "5", "-o", str(out)])
    assert result.exit_code == 0, result.output
    run = Run.from_trec(out)
    assert run.name == "bm25" and run.depth() == 5 and "q1" in run.query_ids


def test_bad_input_is_one_line_and_exit_2(monkeypatch, capsys):
    monkeypatch.setattr("sys.argv", ["eqi", "search", "x", "-c", "/no/such/collection"])
    with pytest.raises(SystemExit) as exc:
        main()
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: collection '/no/such/collection'") and "\n" not in err and "Traceback" not in err


def test_an_empty_search_query_is_one_line(monkeypatch, capsys):
    monkeypatch.setattr("sys.argv", ["eqi", "search", "bank", "  ", "-c", TINY])
    with pytest.raises(SystemExit) as exc:
        main()
    err = capsys.readouterr().err.strip()
    assert exc.value.code == 2 and err == "error: query: empty; give a query text, e.g. eqi search bank"


def test_bench_scale_refuses_bad_sizes():
    for sizes in ("10k", "50", ""):
        result = runner.invoke(app, ["bench", "scale", "--sizes", sizes])
        assert result.exit_code != 0 and "--sizes" in str(result.exception or result.output)


def test_bench_scale_child_builds_the_map_and_reports_its_own_peak(tmp_path, capsys):
    """One size of `eqi bench scale`: the product's sharded builder up to the inverted map, timed, with
    the process's own peak memory (VmHWM)."""
    import numpy as np

    from eqi_core.bench import scale_child

    rng = np.random.default_rng(0)
    np.save(tmp_path / "queries.npy", rng.standard_normal((300, 16), dtype=np.float32))
    np.save(tmp_path / "passages.npy", rng.standard_normal((500, 16), dtype=np.float32))
    scale_child(str(tmp_path), 5)
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert report["seconds"] > 0 and report["peak_rss_mb"] > 50 and report["shards"] >= 1
    assert (tmp_path / "map").exists()


def test_bench_pasted_runs_both_ways_and_agrees_on_the_tiny_collection(tmp_path, monkeypatch):
    monkeypatch.setenv("EQI_HOME", str(tmp_path / "store"))
    result = runner.invoke(app, ["bench", "pasted", "-c", TINY, "--n", "3", "-o", str(tmp_path / "b.json")])
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "b.json").read_text(encoding="utf-8"))
    assert report["pasted_texts"] == 3 and report["log_queries"] == 5
    assert report["identical_exposing_queries_and_ranks"] + report["different_only_by_ties_at_k"] == 1.0
    assert report["ours_ms"]["p50"] > 0 and report["baseline_ms"]["p50"] > 0


def test_exposure_of_an_unknown_passage_id_fails_before_any_map_is_built(monkeypatch, capsys):
    def no_map(*args, **kwargs):
        raise AssertionError("the exposure map was prepared for a passage id that does not exist")

    monkeypatch.setattr("eqi_core.exposure.setup.prepare_exposure", no_map)
    monkeypatch.setattr("sys.argv", ["eqi", "exposure", "no-such-id", "-c", TINY])
    with pytest.raises(SystemExit) as exc:
        main()
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: passage id 'no-such-id' is not in the collection") and "\n" not in err


@pytest.mark.parametrize("option, value", [("--gamma-qd", "1.5"), ("--gamma-dq", "0"), ("--gamma-qd", "nan")])
def test_exposure_with_a_patience_outside_0_1_fails_before_any_map_is_built(monkeypatch, capsys, option, value):
    def no_map(*args, **kwargs):
        raise AssertionError("the exposure map was prepared for a patience RELQ cannot use")

    monkeypatch.setattr("eqi_core.exposure.setup.prepare_exposure", no_map)
    monkeypatch.setattr("sys.argv", ["eqi", "exposure", "d1", "-c", TINY, "-r", "bm25", option, value])
    with pytest.raises(SystemExit) as exc:
        main()
    err = capsys.readouterr().err.strip()
    assert exc.value.code == 2 and err.startswith("error: patience gamma = ") and "expected a value in (0, 1]" in err
    assert "\n" not in err


@pytest.mark.parametrize("argv, message", [
    (["train-exposure", "-c", TINY, "-r", "bm25", "--lr", "-1"], "lr = -1.0: expected a learning rate in (0, 1)"),
    (["train-exposure", "-c", TINY, "-r", "bm25", "--lr", "nan"], "lr = nan: expected a learning rate in (0, 1)"),
    (["train-exposure", "-c", TINY, "-r", "bm25", "--arch", "nope"], "architecture 'nope': expected one of residual, append"),
    (["retrievability", "-c", TINY, "-r", "bm25", "--compare", "nope"], "ranker 'nope': unknown"),
])
def test_exposure_commands_check_their_options_before_any_map_is_built(monkeypatch, capsys, argv, message):
    """A negative learning rate was a torch traceback after the map was built; the others one line after it."""
    def no_map(*args, **kwargs):
        raise AssertionError("the exposure map was prepared before the options were checked")

    monkeypatch.setattr("eqi_core.exposure.setup.prepare_exposure", no_map)
    monkeypatch.setattr("sys.argv", ["eqi", *argv])
    with pytest.raises(SystemExit) as exc:
        main()
    err = capsys.readouterr().err.strip()
    assert exc.value.code == 2 and err.startswith("error: ") and message in err and "\n" not in err


def test_exposure_lists_stand_when_the_head_cannot_be_trained(tmp_path):
    """A one-passage collection has nothing to train a head on: the exact and reverse lists are printed
    with a warning, as the page shows them (the command used to end in that error, listing nothing)."""
    (tmp_path / "corpus.jsonl").write_text('{"_id": "d1", "title": "", "text": "the river bank"}\n', encoding="utf-8")
    (tmp_path / "queries.jsonl").write_text('{"_id": "q1", "text": "river"}\n', encoding="utf-8")
    result = runner.invoke(app, ["exposure", "d1", "-c", f"beir:{tmp_path}", "-r", "bm25"])
    assert result.exit_code == 0, result.output
    assert "warning: learned heads unavailable: fewer than two passages are exposed" in result.output
    assert "## exact: 1 query shows it in its top 100" in result.output and "## dense-reverse" in result.output


def test_judgments_of_a_query_and_of_a_passage():
    out = runner.invoke(app, ["judgments", "-c", TINY, "--query", "q1"]).output
    assert out.splitlines()[0] == "# query q1: 'river bank', 3 judged passages"
    assert [line.split()[:2] for line in out.splitlines()[2:]] == [["d1", "2"], ["d4", "1"], ["d7", "1"]]
    out = runner.invoke(app, ["judgments", "-c", TINY, "--passage", "d3", "--json"]).output
    assert [json.loads(line) for line in out.splitlines()] == [{"query_id": "q2", "query": "bank loan interest", "grade": 1}]
    assert "named by the judgments of 1 query" in runner.invoke(app, ["judgments", "-c", TINY, "-p", "d3"]).output


@pytest.mark.parametrize("argv,message", [
    ([], "give one of --query QUERY_ID or --passage DOC_ID"),
    (["-Q", "q1", "-p", "d1"], "give one of --query QUERY_ID or --passage DOC_ID"),
    (["-Q", "q99"], "--query 'q99': not a query id of tiny_beir"),
    (["-p", "d99"], "--passage 'd99': not a passage id of tiny_beir"),
])
def test_judgments_bad_input_is_one_line(monkeypatch, capsys, argv, message):
    monkeypatch.setattr("sys.argv", ["eqi", "judgments", "-c", TINY, *argv])
    with pytest.raises(SystemExit) as exc:
        main()
    err = capsys.readouterr().err.strip()
    assert exc.value.code == 2 and message in err and len(err.splitlines()) == 1


def test_every_command_is_listed_in_a_panel_on_one_line():
    """`eqi --help` groups the commands by what they are for; a new command must name its panel."""
    from eqi_core.cli import HELP_PANELS, command_name

    listed = {name for names in HELP_PANELS.values() for name in names}
    commands = {command_name(info) for info in app.registered_commands}
    assert commands == listed, (commands - listed, listed - commands)
    assert all(info.short_help and "\n" not in info.short_help for info in app.registered_commands)
    out = runner.invoke(app, ["--help"], env={"COLUMNS": "200"}).output
    positions = [out.index(panel) for panel in HELP_PANELS]
    assert positions == sorted(positions)  # the panels in their order


def test_exposure_patience_grid_holds_the_headers_relq_at_its_cell():
    """--patience-grid prints a 10 x 10 grid per method whose (0.5, 0.9) cell is the RELQ in the method's header."""
    import re

    out = runner.invoke(app, ["exposure", "d6", "-c", TINY, "-r", "minilm-l3-onnx", "--no-heads", "--n-dq", "5",
                              "--patience-grid"])
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    headers = {m.group(1): float(m.group(2)) for m in (re.match(r"## (.+) \(RELQ_RBP,RBP\(0\.5,0\.9\) = ([\d.]+)\)", x)
                                                         for x in lines) if m}
    assert set(headers) == {"BM25-reverse", "dense-reverse"}
    for name, value in headers.items():
        at = lines.index(f"## {name}: RELQ_RBP,RBP over patience (rows gamma_q->d, columns gamma_d->q)")
        assert lines[at + 1].split()[1:] == ["0.1", "0.2", "0.3", "0.4", "0.5", "0.6", "0.7", "0.8", "0.9", "1"]
        rows = {r.split()[0]: r.split()[1:] for r in lines[at + 3: at + 13]}
        assert len(rows) == 10 and float(rows["0.5"][8]) == pytest.approx(value, abs=1e-3)


def test_exposure_compare_lists_each_rankers_exact_ranks():
    from eqi_core.exposure.setup import prepare_exposure
    from eqi_core.loaders import load_collection
    from eqi_core.store import ArtifactStore

    out = runner.invoke(app, ["exposure", "d1", "-c", TINY, "-r", "bm25", "--no-heads", "--n-dq", "3",
                              "--compare", "minilm-l3-onnx"])
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    at = next(i for i, x in enumerate(lines) if x.startswith("## compared with minilm-l3-onnx: "))
    assert lines[at + 1].split() == ["query_id", "query", "rank", "(bm25)", "rank", "(minilm-l3-onnx)", "places", "up", "change",
                                     "words", "in", "passage"]
    # under BM25 every exposing query shares a word with d1: none of those only under BM25 is without one
    assert lines[at].endswith(" only under bm25.") and ", 0 of the " in lines[at]
    tiny = load_collection(TINY)
    truth = {r: prepare_exposure(tiny, r, ArtifactStore(), space=s).exposure.exposing_frame("d1")
             for r, s in (("bm25", None), ("minilm-l3-onnx", "minilm-l3-onnx"))}
    assert lines[at].split(": ", 1)[1].startswith(f"{len(truth['bm25'])} queries expose it under bm25, "
                                                  f"{len(truth['minilm-l3-onnx'])} under minilm-l3-onnx")
    rows = lines[at + 2:]
    assert len(rows) == len(set(truth["bm25"]["query_id"]) | set(truth["minilm-l3-onnx"]["query_id"]))


def test_exposure_show_prints_what_a_query_shows_with_pasted_text_at_its_exact_rank(monkeypatch, capsys, tmp_path):
    """--show QUERY_ID: the page's selected-query table; pasted text among the query's results at
    the rank of the exact list; an unknown id is one line, before anything is computed."""
    from eqi_core.exposure.lookup import exact_exposure
    from eqi_core.exposure.setup import prepare_exposure
    from eqi_core.loaders import load_collection
    from eqi_core.store import ArtifactStore

    text = "a loan from the bank with interest"
    exact, _ = exact_exposure(prepare_exposure(load_collection(TINY), "bm25", ArtifactStore()), 100, text=text)
    qid, rank = str(exact["query_id"].iloc[0]), int(exact["rank"].iloc[0])
    report = tmp_path / "report.html"
    out = runner.invoke(app, ["exposure", "--text", text, "-c", TINY, "-r", "bm25", "--no-heads", "--show", qid,
                              "--report", str(report)])
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    says = f"its top 10, then the pasted passage (the pasted passage would rank {rank})" if rank > 10 else \
        f"its top 10 (the pasted passage would rank {rank})"
    at = next(i for i, x in enumerate(lines) if x.startswith("## what ") and x.endswith(f"({qid}) shows: {says}"))
    marked = [x for x in lines[at + 2:] if x.endswith("◀ the pasted passage")]
    assert len(marked) == 1 and marked[0].split()[:2] == [str(rank), "(pasted)"]
    # the audit report holds the same table under the same words
    page = report.read_text(encoding="utf-8")
    section = page.split(f"({qid}) shows</h2>")[1]
    assert section.startswith(f"<p>{says[0].upper() + says[1:]}.</p>")
    table = pd.read_html(io.StringIO(section), keep_default_na=False)[0]
    assert table.loc[table["target"] == "◀ the pasted passage", "rank"].tolist() == [rank]
    capsys.readouterr()  # the run above's progress bars (written past the runner), not this run's error
    monkeypatch.setattr("sys.argv", ["eqi", "exposure", "--text", text, "-c", TINY, "-r", "bm25", "--show", "nosuch"])
    with pytest.raises(SystemExit) as exc:
        main()
    err = capsys.readouterr().err.strip()
    assert exc.value.code == 2 and err.startswith("error: --show 'nosuch': not a query id of the query log")
    assert len(err.splitlines()) == 1


def test_exposure_of_an_empty_paste_fails_before_anything_is_built(monkeypatch, capsys):
    import eqi_core.cli.exposure as cli_exposure

    def no_setup(*args, **kwargs):
        raise AssertionError("the exposure setup was built for an empty passage")

    monkeypatch.setattr(cli_exposure, "_exposure_setup", no_setup)
    monkeypatch.setattr("sys.argv", ["eqi", "exposure", "--text", "   ", "-c", TINY])
    with pytest.raises(SystemExit) as exc:
        main()
    assert exc.value.code == 2 and capsys.readouterr().err.strip() == "error: the passage is empty; paste some text or pick a passage id"


def test_exposure_compare_with_the_same_ranker_is_one_line(monkeypatch, capsys):
    monkeypatch.setattr("sys.argv", ["eqi", "exposure", "d1", "-c", TINY, "-r", "bm25", "--compare", "bm25"])
    with pytest.raises(SystemExit) as exc:
        main()
    err = capsys.readouterr().err.strip()
    assert exc.value.code == 2 and err.startswith("error: --compare bm25: that is the ranker already shown")


def test_exposure_report_is_the_pages_audit_report_with_the_comparison(tmp_path):
    from eqi_core.figure_export import image_browser

    out = tmp_path / "audit" / "report.html"
    figs = tmp_path / "figs"
    drawn = ["--figures", str(figs)] if image_browser() else []  # PNGs need chromium; the report does not
    result = runner.invoke(app, ["exposure", "d1", "-c", TINY, "-r", "bm25", "--no-heads", "--n-dq", "3",
                                 "--compare", "minilm-l3-onnx", "--report", str(out), *drawn])
    assert result.exit_code == 0, result.output
    if drawn:  # the report's figures, each as HTML and a 3000-px PNG
        names = ["exposure_bars", "relq_patience", "exposure_change", "retrievability"]
        assert sorted(p.name for p in figs.iterdir()) == sorted(f"{n}.{x}" for n in names for x in ("html", "png"))
        assert all(int.from_bytes((figs / f"{n}.png").read_bytes()[16:20], "big") == 3000 for n in names)
    page = out.read_text(encoding="utf-8")
    line = next(x for x in result.output.splitlines() if x.startswith("## compared with minilm-l3-onnx: "))
    assert "<h1>Exposure audit report</h1>" in page and "<h2>Under another ranker</h2>" in page
    assert line.split(": ", 1)[1] in page  # the same summary as printed
    assert page.count("plotly-graph-div") >= 4  # exposure bars, patience heatmaps, rank-against-rank scatter, Lorenz
    assert [p.name for p in out.parent.iterdir()] == ["report.html"]  # nothing half-written beside it
    # where it sits among all passages, as the page says: d1's r(d) under BM25 at n_q->d = 100, and both Lorenz curves
    from eqi_core.exposure.setup import prepare_exposure
    from eqi_core.loaders import load_collection
    from eqi_core.store import ArtifactStore

    r = len(prepare_exposure(load_collection(TINY), "bm25", ArtifactStore()).exposure.exposing_frame("d1"))
    assert f"Retrievability r(d) = {r} at cutoff 100;" in page
    assert "Retrievability inequality by ranker (Lorenz curves)" in page and "MiniLM-L3 (dense, ONNX) (Gini " in page


def test_exposure_lists_each_exact_querys_words_in_the_passage():
    """Under BM25 every exposing query shares a word with the passage; the column names them."""
    out = runner.invoke(app, ["exposure", "d6", "-c", TINY, "-r", "bm25", "--no-heads", "--n-dq", "20"])
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    at = next(i for i, x in enumerate(lines) if x.startswith("## exact: "))
    assert lines[at + 1].split()[-3:] == ["words", "in", "passage"]
    n = int(lines[at].split()[2])
    assert lines[at + 2 + min(n, 20)] == f"All {n} exposing queries share a word with the passage (as BM25 matches words)."
    row = next(x for x in lines[at + 2:] if " bank loan interest " in f" {x} ")  # d6: "Loans. a bank loan is money lent at interest"
    assert row.rstrip().endswith("loans, bank, loan, interest")


def test_exposure_lists_as_many_as_the_page_opens_with():
    """Without --n-dq, `eqi exposure` lists what the Exposure page opens with (``listed_n_dq``: at most
    a tenth of the log, at least 1: here 1 of the tiny log's 5 queries), not 20, which listed all 5."""
    out = runner.invoke(app, ["exposure", "d6", "-c", TINY, "-r", "bm25", "--no-heads"])
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    at = next(i for i, x in enumerate(lines) if x.startswith("## exact: "))
    assert lines[at + 3].startswith("All ")  # one row listed, then the words line
    assert "lists 100% of the log" not in out.output
    assert "more than a tenth" not in out.output  # 1 is the least a list holds: nothing to warn of


def test_retrievability_lists_the_least_and_writes_every_passages_r(tmp_path):
    """r(d) from the CLI equals the exposure map's own count of queries ranking each passage in their top c."""
    from eqi_core.exposure.setup import prepare_exposure
    from eqi_core.loaders import load_collection
    from eqi_core.store import ArtifactStore

    out = runner.invoke(app, ["retrievability", "-c", TINY, "-r", "bm25", "--cutoff", "3", "--list", "most", "-n", "2",
                              "-o", str(tmp_path / "r.csv"), "--json"])
    assert out.exit_code == 0, out.output
    tiny = load_collection(TINY)
    emap = prepare_exposure(tiny, "bm25", ArtifactStore()).exposure
    truth = {d: int((emap.exposing_frame(d)["rank"] <= 3).sum()) for d in tiny.passages["doc_id"]}
    lines = [json.loads(x) for x in out.output.splitlines() if x.startswith("{")]
    head, rows = lines[0], lines[1:]
    assert head["ranking"] == "bm25" and head["never_retrieved"] == sum(1 for r in truth.values() if r == 0)
    assert [r["r"] for r in rows] == sorted(truth.values(), reverse=True)[:2]
    assert all(truth[r["doc_id"]] == r["r"] for r in rows)
    written = pd.read_csv(tmp_path / "r.csv", dtype={"doc_id": str})
    assert dict(zip(written["doc_id"], written["r(d)"])) == truth


def test_retrievability_list_must_be_least_or_most(monkeypatch, capsys):
    monkeypatch.setattr("sys.argv", ["eqi", "retrievability", "-c", TINY, "-r", "bm25", "--list", "middle"])
    with pytest.raises(SystemExit) as exc:
        main()
    assert exc.value.code != 0 and capsys.readouterr().err.strip() == "error: --list middle: expected least or most"


def test_evaluate_prints_the_means_and_the_hardest_queries():
    from eqi_core.coverage.hardest import ranker_effectiveness
    from eqi_core.loaders import load_collection
    from eqi_core.rankers import build_ranker, run_all_queries
    from eqi_core.store import ArtifactStore

    out = runner.invoke(app, ["evaluate", "-c", TINY, "-r", "bm25", "-n", "2", "--json"])
    assert out.exit_code == 0, out.output
    head, *rows = [json.loads(x) for x in out.output.splitlines() if x.startswith("{")]
    tiny, store = load_collection(TINY), ArtifactStore()
    truth = ranker_effectiveness(run_all_queries(build_ranker("bm25", tiny, store), tiny, store), tiny)
    assert head["queries"] == len(truth.per_query) and head["mean_nDCG@10"] == pytest.approx(truth.means["nDCG@10"], abs=1e-6)
    assert [r["query_id"] for r in rows] == truth.per_query["query_id"].tolist()[:2]
    assert set(rows[0]) == {"query_id", "query", "nDCG@10", "RR@10", "R@100", "gold_passage", "gold_rank"}


def test_evaluate_a_run_file_and_a_collection_without_judgments(tmp_path, monkeypatch, capsys):
    run = tmp_path / "sys.trec"
    run.write_text("q1 Q0 d1 1 2.0 sys\nq1 Q0 d4 2 1.0 sys\n", encoding="utf-8")
    out = runner.invoke(app, ["evaluate", "-c", TINY, "--run", str(run)])
    assert out.exit_code == 0, out.output
    assert "# sys.trec on tiny_beir: 4 judged queries" in out.output
    assert "note: run 'sys.trec': 3 of 4 queries in Q have no results: scored 0" in out.output
    assert out.output.splitlines()[-1].split()[-2:] == ["d1", "1"]  # q1, the easiest, last: its gold passage first
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "corpus.jsonl").write_text('{"_id": "p1", "text": "some text"}\n', encoding="utf-8")
    (bare / "queries.jsonl").write_text('{"_id": "x1", "text": "a query"}\n', encoding="utf-8")
    (bare / "qrels").mkdir()
    (bare / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nx1\tp1\t0\n", encoding="utf-8")  # judged, not relevant
    monkeypatch.setattr("sys.argv", ["eqi", "evaluate", "-c", f"beir:{bare}", "-r", "bm25"])
    with pytest.raises(SystemExit):
        main()
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "has no relevant judgments" in err and "\n" not in err


def test_tables_line_up_under_wide_characters(tmp_path):
    """CJK text and emoji take two terminal columns: the columns after them still start together."""
    import unicodedata

    wide = tmp_path / "wide"
    (wide / "qrels").mkdir(parents=True)
    (wide / "corpus.jsonl").write_text('{"_id": "p1", "text": "银行 贷款 loans"}\n{"_id": "p2", "text": "river bank"}\n',
                                       encoding="utf-8")
    (wide / "queries.jsonl").write_text('{"_id": "x1", "text": "银行 贷款"}\n{"_id": "x2", "text": "river bank"}\n',
                                        encoding="utf-8")
    (wide / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nx1\tp1\t1\nx2\tp2\t1\n", encoding="utf-8")
    out = runner.invoke(app, ["evaluate", "-c", f"beir:{wide}", "-r", "bm25"])
    assert out.exit_code == 0, out.output
    table = out.output.splitlines()[-3:]  # the header and the two queries
    width = [sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in line) for line in table]
    assert table[0].startswith("query_id") and len(set(width)) == 1, table


def test_retrievability_compare_prints_the_other_rankers_gini():
    from eqi_core.exposure.audit import summarise_retrievability
    from eqi_core.exposure.setup import prepare_exposure
    from eqi_core.loaders import load_collection
    from eqi_core.store import ArtifactStore

    out = runner.invoke(app, ["retrievability", "-c", TINY, "-r", "bm25", "--compare", "minilm-l3-onnx", "-n", "0"])
    assert out.exit_code == 0, out.output
    tiny = load_collection(TINY)
    other = summarise_retrievability(prepare_exposure(tiny, "minilm-l3-onnx", ArtifactStore(), space="minilm-l3-onnx").exposure)
    assert f"# minilm-l3-onnx: Gini {other.gini:.3f}; " in out.output
    assert "least retrievable listed" not in out.output  # -n 0 lists none
    as_json = runner.invoke(app, ["retrievability", "-c", TINY, "-r", "bm25", "--compare", "minilm-l3-onnx", "-n", "0", "--json"])
    heads = [json.loads(x) for x in as_json.output.splitlines() if x.startswith("{")]
    assert [h["ranking"] for h in heads] == ["bm25", "minilm-l3-onnx"] and heads[1]["gini"] == pytest.approx(other.gini, abs=1e-6)
