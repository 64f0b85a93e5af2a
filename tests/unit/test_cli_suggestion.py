"""The query suggestion commands end to end on the tiny fixture with the shipped suggesters: `eqi
suggest` (table and CSV), `eqi eval-suggestions` (summary files and the card it writes), bad input."""
import json
import shutil

import pandas as pd
import pytest
from typer.testing import CliRunner

from eqi_core.cli import app, main
from tests.conftest import FIXTURES, TINY_BEIR

runner = CliRunner()
TINY = f"beir:{TINY_BEIR}"


def run_main(monkeypatch, capsys, argv) -> tuple[int, str, str]:
    """Run the console entry point as a user would (the command recorded in cards is sys.argv)."""
    monkeypatch.setattr("sys.argv", ["eqi", *argv])
    with pytest.raises(SystemExit) as exc:
        main()
    out = capsys.readouterr()
    return exc.value.code, out.out, out.err.strip()


@pytest.mark.parametrize("command", [["reformulations"], ["train-suggester"], ["suggest"], ["eval-suggestions"],
                                     ["bench", "suggest"], ["train-suggestion-ranker"]])
def test_help(command):
    result = runner.invoke(app, command + ["--help"])
    assert result.exit_code == 0 and "Usage" in result.output


def test_suggest_prints_the_table_and_writes_csv(tmp_path):
    """(Every model at once is the page's AppTest.)"""
    out = tmp_path / "suggestions.csv"
    result = runner.invoke(app, ["suggest", "river bank", "-c", TINY, "--model", "prf", "-n", "3", "-o", str(out)])
    assert result.exit_code == 0, result.output
    table = pd.read_csv(out)
    assert table["model"].iloc[0] == "original query" and set(table["model"][1:]) == {"suggester (PRF)"}
    assert 1 <= len(table) - 1 <= 3 and table["rank"][1:].tolist() == list(range(1, len(table)))
    assert not (table["suggestion"][1:].str.strip().str.lower() == "river bank").any()
    assert "suggester (PRF)" in result.output
    # then the feedback PRF read: the query's top 5 in the encoder's space, one line each
    import numpy as np

    from eqi_core.loaders import load_collection
    from eqi_core.rankers import load_encoder

    coll, enc = load_collection(TINY), load_encoder("minilm-l6")
    scores = (enc.encode(["river bank"]) @ enc.encode(coll.passage_texts()).T)[0]
    expected = [coll.passages["doc_id"].iloc[j] for j in np.argsort(-scores, kind="stable")[:5]]
    block = result.output.split("# the feedback they read: the query's top 5 passages in minilm-l6's space\n")[1]
    lines = block.splitlines()
    assert lines[0].split()[:5] == ["rank", "doc_id", "score", "grade", "target"]
    assert [line.split()[1] for line in lines[1:6]] == expected


def test_suggest_scores_with_another_ranker_as_the_collection_page_does(tmp_path, tiny, store):
    """--ranker bm25 adds BM25's nDCG@10 and gold rank for every suggestion; the query's own row is the
    Collection page's nDCG@10 for that search."""
    from eqi_core.judged import judge_results
    from eqi_core.rankers import build_ranker

    out = tmp_path / "bm25.csv"
    result = runner.invoke(app, ["suggest", "river bank", "-c", TINY, "--model", "prf", "-n", "3", "-r", "bm25", "-o", str(out)])
    assert result.exit_code == 0, result.output
    table = pd.read_csv(out)
    assert {"ndcg10", "gold_rank", "ndcg10_bm25", "gold_rank_bm25"} <= set(table.columns)
    page = judge_results(tiny, "river bank", build_ranker("bm25", tiny, store).search(["river bank"], k=10), 10)
    assert table["ndcg10_bm25"].iloc[0] == pytest.approx(page.measures["nDCG@10"], abs=1e-9)
    assert table["ndcg10_bm25"].between(0, 1).all() and "ndcg10_bm25" in result.output and "<NA>" not in result.output


def test_rescore_suggestions_scores_an_evaluations_lists_with_bm25(tmp_path):
    lists = tmp_path / "lists.jsonl"
    pd.DataFrame([{"collection": "tiny_beir", "query_id": "q1", "query": "river bank", "gold": "d1", "method": "RM3",
                   "suggestions": ["bank river water", "zebra"]}]).to_json(lists, orient="records", lines=True)
    result = runner.invoke(app, ["rescore-suggestions", str(lists), "-c", TINY, "-r", "bm25", "-o", str(tmp_path)])
    assert result.exit_code == 0, result.output
    table = pd.read_csv(tmp_path / "summary_bm25.csv")
    assert list(table["method"]) == ["original query", "RM3"] and (table["ranker"] == "bm25").all()
    assert table["best@10"].iloc[1] >= table["best@10"].iloc[0]
    assert (tmp_path / "lists_bm25.jsonl").is_file()


def test_rescore_suggestions_of_another_collection_is_one_line(monkeypatch, capsys, tmp_path):
    lists = tmp_path / "lists.jsonl"
    pd.DataFrame([{"collection": "scifact", "query_id": "1", "query": "q", "gold": "d", "method": "RM3",
                   "suggestions": ["x"]}]).to_json(lists, orient="records", lines=True)
    code, _, err = run_main(monkeypatch, capsys, ["rescore-suggestions", str(lists), "-c", TINY])
    assert code == 2 and "no lists for tiny_beir (collections there: scifact)" in err and "\n" not in err


def test_suggest_on_a_collection_in_another_language_notes_it_on_stderr(monkeypatch, capsys):
    code, out, err = run_main(monkeypatch, capsys, ["suggest", "prêt bancaire", "-c", f"beir:{FIXTURES / 'tiny_french'}",
                                                    "--model", "prf", "-n", "2"])
    assert code in (0, None) and "suggester (PRF)" in out
    notes = [ln for ln in err.splitlines() if ln.startswith("note: Only ")]
    assert len(notes) == 1 and "decoder's English word list" in notes[0]
    _, _, err = run_main(monkeypatch, capsys, ["suggest", "river bank", "-c", TINY, "--model", "prf", "-n", "2"])
    assert "word list" not in err  # English: no note


def test_suggest_for_a_query_without_judgments_says_so_and_prints_no_empty_columns(tmp_path):
    out = tmp_path / "typed.csv"
    result = runner.invoke(app, ["suggest", "volcanic ash clouds", "-c", TINY, "--model", "prf", "-n", "3", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "no judgments for 'volcanic ash clouds'" in result.output
    assert "ndcg10" not in result.output and "NaN" not in result.output and "<NA>" not in result.output
    assert pd.read_csv(out)["ndcg10"].isna().all()  # the CSV keeps its columns, empty


def test_eval_suggestions_writes_its_tables_and_the_card(monkeypatch, capsys, tmp_path, tiny):
    """Every method scored on the tiny collection's judged queries; the card gets the rows and the
    command that made them. The evaluation's vocabulary (the shared query logs) is replaced by the
    tiny collection's words, so this runs without ../shared."""
    from eqi_core.decoder import natural_eval
    from eqi_core.decoder.language_model import KneserNeyLM
    from eqi_core.suggestion.model import ASSETS

    monkeypatch.setattr(natural_eval, "corpus_for", lambda store, root: (None, {}))
    monkeypatch.setattr(natural_eval, "real_words", lambda table, root: natural_eval.lexicon_of(tiny.passage_texts(), set()))
    monkeypatch.setattr(natural_eval, "fluency_judge", lambda store, root: KneserNeyLM.fit(tiny.passage_texts()))
    card_dir = tmp_path / "prf"
    shutil.copytree(ASSETS / "prf-minilm-l6", card_dir)
    argv = ["eval-suggestions", "-c", TINY, "--all-queries", "--queries", "1", "--no-oracle", "--data", str(tmp_path),
            "-o", str(tmp_path / "out"), "--write-card", str(card_dir)]
    code, out, err = run_main(monkeypatch, capsys, argv)
    assert code == 0, err
    summary = pd.read_csv(tmp_path / "out" / "summary.csv")
    methods = {"original query", "RM3", "random feedback term (probe)", "random term, no feedback (probe)", "Sampling+QD",
               "feedback centroid+QD", "feedback walks+QD", "suggester (plain)", "suggester (PRF)"}
    assert set(summary["method"]) == methods and (summary["queries"] == 1).all()
    assert (summary["best@10"] >= summary["best@1"] - 1e-12).all()
    lists = pd.read_json(tmp_path / "out" / "lists.jsonl", lines=True)
    assert len(lists) == len(methods) - 1
    card = json.loads((card_dir / "card.json").read_text(encoding="utf-8"))
    rows = [r for r in card["evaluation"] if r["collection"] == tiny.name]
    assert {r["method"] for r in rows} == methods
    assert card["evaluation_commands"][tiny.name] == "eqi " + " ".join(argv)
    # --only prf re-runs PRF alone and reads the rest from the earlier lists: the same seeds, the same table
    code, out, err = run_main(monkeypatch, capsys, argv + ["--only", "prf"])
    assert code == 0, err
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "out" / "summary.csv"), summary)
    assert len(pd.read_json(tmp_path / "out" / "lists.jsonl", lines=True)) == len(methods) - 1
    # the card names both runs: the other methods' lists are the first run's
    card = json.loads((card_dir / "card.json").read_text(encoding="utf-8"))
    both = "eqi " + " ".join(argv) + ", then eqi " + " ".join(argv + ["--only", "prf"])
    assert card["evaluation_commands"][tiny.name] == both
    assert "mean_gain" in summary.columns and "share_above_query" in summary.columns
    assert summary["perplexity"].gt(1).all()  # every row, the original queries' too (the paper's Table 6)
    code, out, err = run_main(monkeypatch, capsys, argv + ["--only", "prf"])  # the same --only run again: named once
    assert code == 0, err
    assert json.loads((card_dir / "card.json").read_text(encoding="utf-8"))["evaluation_commands"][tiny.name] == both
    summary = json.loads((tmp_path / "out" / "summary.json").read_text(encoding="utf-8"))
    assert summary["decoder"].endswith("/natural-minilm-l6-real")  # the suggesters' speaks_with
    # another shipped decoder speaks the suggestions; the summary says which
    other = ["eval-suggestions", "-c", TINY, "--all-queries", "--queries", "1", "--no-oracle", "--data", str(tmp_path),
             "-o", str(tmp_path / "other"), "--decoder", str(ASSETS.parent / "decoders" / "natural-minilm-l6"),
             "--suggester", str(card_dir)]  # and a PRF suggester folder on trial in place of the shipped one
    code, out, err = run_main(monkeypatch, capsys, other)
    assert code == 0, err
    other_summary = json.loads((tmp_path / "other" / "summary.json").read_text(encoding="utf-8"))
    assert other_summary["decoder"].endswith("/natural-minilm-l6")
    assert other_summary["suggesters"]["prf"] == str(card_dir) and other_summary["suggesters"]["plain"].endswith("plain-minilm-l6")
    assert set(pd.read_csv(tmp_path / "other" / "summary.csv")["method"]) == methods


def test_train_suggestion_ranker_fits_on_training_queries_and_the_prf_suggester_uses_it(monkeypatch, capsys, tmp_path):
    """Pools for a sample of the tiny collection's judged training queries, a ranker.json beside a copy
    of the shipped PRF suggester, and `eqi suggest` through it."""
    from eqi_core.rankers import load_encoder
    from eqi_core.suggestion.model import ASSETS, load_suggester
    from eqi_core.suggestion.rerank import FEATURES, PICK_PENALTY, RANKER_FILE

    folder = tmp_path / "prf"
    shutil.copytree(ASSETS / "prf-minilm-l6", folder)
    (folder / RANKER_FILE).unlink(missing_ok=True)
    argv = ["train-suggestion-ranker", "-c", TINY, "--suggester", str(folder), "--queries", "3"]
    code, out, err = run_main(monkeypatch, capsys, argv)
    assert code == 0, err
    card = json.loads((folder / RANKER_FILE).read_text(encoding="utf-8"))
    assert card["features"] == list(FEATURES) and card["command"] == "eqi " + " ".join(argv)
    assert card["pick_penalty"] == PICK_PENALTY and f"minus {PICK_PENALTY:g} x the largest word Jaccard" in card["pick"]
    (counts,) = card["trained_on"].values()
    assert counts["queries"] == 3 and counts["candidates"] > 3
    assert card["pools"]["spoken_by"] == "natural-minilm-l6-real"  # the decoder the suggester cards name
    sugg = load_suggester(folder, load_encoder("minilm-l6"))
    assert sugg.ranker is not None and sugg.ranker.weights.shape == (len(FEATURES),)
    result = runner.invoke(app, ["suggest", "river bank", "-c", TINY, "--suggester", str(folder), "-n", "4"])
    assert result.exit_code == 0, result.output


@pytest.fixture
def unjudged(tmp_path):
    """The tiny collection without its judgments: nothing to walk to, evaluate or fit on."""
    folder = tmp_path / "unjudged"
    folder.mkdir()
    for name in ("corpus.jsonl", "queries.jsonl"):
        shutil.copy(TINY_BEIR / name, folder / name)
    return f"beir:{folder}"


@pytest.mark.parametrize("command,message", [
    (["eval-suggestions", "--all-queries"], "no judged held-out queries to evaluate on"),
    (["train-suggestion-ranker"], "no judged training queries to fit the ranker on"),
    (["reformulations"], "/nonexistent/folder: not a folder or a zip file"),
])
def test_every_collection_is_checked_before_the_first_is_opened(monkeypatch, capsys, unjudged, command, message):
    """With several -c, a mistyped or unjudged later one used to fail only after the earlier ones'
    evaluation (up to an hour each)."""
    def no_space(*args, **kwargs):
        raise AssertionError("a collection was encoded before every -c was checked")

    monkeypatch.setattr("eqi_core.decoder.space.open_space", no_space)
    later = "beir:/nonexistent/folder" if command == ["reformulations"] else unjudged
    code, _, err = run_main(monkeypatch, capsys, [command[0], "-c", TINY, "-c", later, *command[1:]])
    assert code == 2 and message in err and "\n" not in err


@pytest.mark.parametrize("argv,message", [
    (["suggest", "", "-c", TINY], "query: empty"),
    (["suggest", "river bank", "-c", TINY, "--model", "nope"], "--model 'nope'"),
    (["suggest", "river bank", "-c", TINY, "--suggester", "/nonexistent/s"],
     "/nonexistent/s: no card.json; expected a suggester folder"),
    (["suggest", "river bank", "-c", TINY, "--ranker", "nope"], "ranker 'nope': unknown"),
    (["rescore-suggestions", "/nonexistent/lists.jsonl", "-c", TINY], "/nonexistent/lists.jsonl: not a lists.jsonl"),
    (["rescore-suggestions", __file__, "-c", TINY], "not a lists.jsonl of eqi eval-suggestions"),
    (["train-suggester", "--model", "nope"], "--model 'nope'"),
    (["train-suggestion-ranker", "-c", TINY, "--target", "nope"], "--target 'nope'"),
    (["train-suggestion-ranker", "-c", TINY, "--pick-penalty", "-1"], "--pick-penalty -1: expected a number >= 0"),
    (["eval-suggestions", "-c", TINY, "--suggester", "assets/suggesters/prf-minilm-l6", "--write-card",
      "assets/suggesters/prf-minilm-l6"], "with --write-card: the cards hold the shipped suggesters' tables"),
    (["eval-suggestions", "-c", TINY, "--write-card", "/nonexistent/s"], "--write-card /nonexistent/s: cannot read its card.json"),
    (["eval-suggestions", "-c", TINY, "--only", "prf,nope"], "--only prf,nope: expected some of rm3, feedback-term, random-term, sampling"),
    (["eval-suggestions", "-c", TINY, "--only", "prf", "-o", "/nonexistent/ev"],
     "--only: /nonexistent/ev/lists.jsonl not found: --output-dir must hold an earlier run's lists.jsonl"),
    (["eval-suggestions", "-c", TINY, "--decoder", "/nonexistent/dec"], "/nonexistent/dec: no card.json; expected a natural decoder folder"),
    (["train-suggestion-ranker", "-c", TINY, "--decoder", "/nonexistent/dec"],
     "/nonexistent/dec: no card.json; expected a natural decoder folder"),
    (["eval-suggestions", "-c", TINY, "--decoder", "assets/decoders/natural-minilm-l6", "--write-card",
      "assets/suggesters/prf-minilm-l6"], "the suggesters' cards hold the table of the decoder they name"),
])
def test_bad_input_is_one_line(monkeypatch, capsys, argv, message):
    code, _, err = run_main(monkeypatch, capsys, argv)
    assert code == 2 and message in err and "\n" not in err and "Traceback" not in err
