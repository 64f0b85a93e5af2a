"""The latent-space and distributed-exposure commands on the tiny fixture (shipped decoder)."""
import json

import pytest
from typer.testing import CliRunner

from eqi_core.cli import app, main
from tests.conftest import TINY_BEIR

runner = CliRunner()
TINY = f"beir:{TINY_BEIR}"


@pytest.mark.parametrize("command", [["train-decoder"], ["eval-decoder"], ["traverse"], ["decode"], ["exposure-map"],
                                     ["bench", "decoder"], ["bench", "exposure"]])
def test_help(command):
    result = runner.invoke(app, command + ["--help"])
    assert result.exit_code == 0 and "Usage" in result.output


def test_traverse_and_decode():
    from eqi_core.loaders import load_collection
    from eqi_core.rankers import load_encoder

    coll = load_collection(TINY)
    enc = load_encoder("minilm-l6")
    scores = enc.encode(coll.passage_texts()) @ enc.encode(["river bank"])[0]
    ids = coll.passages["doc_id"].tolist()
    seen = []
    for target in ("d1", "d4"):  # the query ranks d1 first (its gold passage), d4 lower: each says which
        result = runner.invoke(app, ["traverse", "river bank", "-t", target, "-c", TINY, "-k", "2", "--method", "neural"])
        assert result.exit_code == 0, result.output
        assert "target_rank" in result.output
        first = int((scores >= scores[ids.index(target)]).sum()) == 1  # ties against the target
        assert (f"the query as typed already ranks passage {target} first" in result.output) == first
        assert ("the first reformulation that does too" in result.output or "no reformulation does" in result.output) if first \
            else ("what should have been asked" in result.output or "best rank" in result.output)
        seen.append(first)
    assert seen == [True, False]  # both branches were seen
    result = runner.invoke(app, ["decode", "the sloping land beside a river", "-c", TINY, "-n", "2", "--method", "neural"])
    assert result.exit_code == 0, result.output
    lines = [line_.split("\t") for line_ in result.output.splitlines() if "\t" in line_][1:]  # after the header
    assert 1 <= len(lines) <= 2 and all(-1 <= float(c) <= 1 and 1 <= int(r) <= 13 for c, r, _, _ in lines)


def test_decode_a_file_notes_each_line_the_encoder_cannot_read(tmp_path):
    src, out = tmp_path / "in.txt", tmp_path / "out.jsonl"
    src.write_text("the sloping land beside a river\n😀 🎉\n", encoding="utf-8")
    result = runner.invoke(app, ["decode", "-i", str(src), "-o", str(out), "-c", TINY, "-n", "1", "--method", "decoder"])
    assert result.exit_code == 0, result.output
    readable, emoji = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert "notes" not in readable and len(emoji["decoded"]) == 1
    assert emoji["notes"] == [("minilm-l6 cannot read this text: “😀”, “🎉” are outside its vocabulary ([UNK]), so its "
                             "vector, and every result made from it, says nothing about the text")]


def test_decode_takes_passages_longer_than_a_query_and_refuses_a_too_long_line_first(tmp_path, monkeypatch, capsys):
    """A SciFact-length abstract (1,500 characters) decodes, with the note that the encoder reads only its
    start; a line over MAX_PASSAGE_CHARS is refused by number before any line is decoded."""
    from eqi_core import encoders
    from eqi_core.decoder.space import LatentSpace

    abstract = " ".join(["the sloping land beside a river where the water meets the bank"] * 24)
    assert 1400 < len(abstract) < 1700
    result = runner.invoke(app, ["decode", abstract, "-c", TINY, "-n", "1", "--method", "decoder"])
    assert result.exit_code == 0, result.output
    assert "characters" not in result.output and "reads" in result.output.lower()  # the encoder's cut, as a note
    monkeypatch.setattr(encoders, "MAX_PASSAGE_CHARS", 2000)
    decoded = []
    monkeypatch.setattr(LatentSpace, "decode_text", lambda self, *a, **k: decoded.append(a) or None)
    src, out = tmp_path / "in.txt", tmp_path / "out.jsonl"
    src.write_text(f"{abstract}\n\n{abstract} {abstract}\n", encoding="utf-8")
    monkeypatch.setattr("sys.argv", ["eqi", "decode", "-i", str(src), "-o", str(out), "-c", TINY, "--method", "decoder"])
    with pytest.raises(SystemExit) as exc:
        main()
    assert exc.value.code == 2 and decoded == [] and not out.exists()
    assert capsys.readouterr().err.strip() == f"error: --input {src}: line 3: {2 * len(abstract) + 1:,} characters; at most 2,000"


def test_traverse_with_another_ranker_writes_its_ranks_and_says_where_the_query_stands(tmp_path):
    """-r bm25: each step's BM25 rank of the target (ties against it) in the CSV, and one line on the query as typed."""
    import pandas as pd

    from eqi_core.figure_export import image_browser
    from eqi_core.loaders import load_collection
    from eqi_core.rankers import build_ranker
    from eqi_core.store import ArtifactStore

    out = tmp_path / "steps.csv"
    figs = tmp_path / "figs"
    drawn = ["--figures", str(figs)] if image_browser() else []  # PNGs need chromium; the CSV does not
    result = runner.invoke(app, ["traverse", "bank loan interest", "-t", "d3", "-c", TINY, "-k", "2", "--method", "decoder",
                                 "-r", "bm25", "-o", str(out), *drawn])
    assert result.exit_code == 0, result.output
    if drawn:  # the page's map of the walk and its per-step chart
        assert sorted(p.name for p in figs.iterdir()) == ["traversal_map.html", "traversal_map.png",
                                                          "traversal_steps.html", "traversal_steps.png"]
        assert "step k (0 = query, K = target passage)" in (figs / "traversal_steps.html").read_text(encoding="utf-8")
    steps = pd.read_csv(out)
    bm25 = build_ranker("bm25", load_collection(TINY), ArtifactStore())
    run = bm25.search(["bank loan interest"], k=100).frame
    own = run.loc[run["doc_id"] == "d3", "score"].iloc[0]
    expected = int((run["score"] >= own).sum())
    assert steps["gold_rank_bm25"].iloc[0] == expected and steps["ndcg10_bm25"].between(0, 1).all()
    assert f"under bm25: the query as typed ranks passage d3 {expected}" in result.output and "<NA>" not in result.output


def test_traverse_in_a_one_passage_collection_draws_its_map(tmp_path):
    """Too few points for UMAP: the walk's map is laid out linearly, not an error."""
    folder = tmp_path / "one"
    folder.mkdir()
    (folder / "corpus.jsonl").write_text('{"_id": "d1", "title": "", "text": "the river bank"}\n', encoding="utf-8")
    (folder / "queries.jsonl").write_text('{"_id": "q1", "text": "river"}\n', encoding="utf-8")
    result = runner.invoke(app, ["traverse", "river", "-t", "d1", "-c", f"beir:{folder}", "-k", "2", "--method", "decoder",
                                 "--figures", str(tmp_path / "figs")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "figs" / "traversal_map.html").is_file()


def test_exposure_map_in_process():
    result = runner.invoke(app, ["exposure-map", "-c", TINY, "-r", "minilm-l3-onnx", "--n-qd", "3"])
    assert result.exit_code == 0, result.output
    info = json.loads(result.output[result.output.index("{"):])
    assert info["engine"] == "inprocess" and info["pairs"] == 15 and info["queries"] == 5  # auto: small map


@pytest.mark.parametrize("argv,message", [
    (["traverse", "", "-c", TINY], "query: empty"),
    (["decode", " ", "-c", TINY], "text: empty; give the text to decode"),
    (["traverse", "river bank", "-c", TINY, "--target", "nope"], "target passage 'nope'"),
    (["traverse", "river bank", "-c", TINY, "-k", "99"], "K = 99"),
    (["traverse", "zebra stripes", "-c", TINY], "no judged passage"),
    (["traverse", "river bank", "-c", TINY, "-r", "nope"], "ranker 'nope': unknown"),
    (["decode", "text", "-c", TINY, "--decoder", "/no/such/decoder"], "/no/such/decoder: no card.json; expected a decoder folder"),
    (["eval-decoder", "-c", TINY], "no held-out queries"),
    (["eval-decoder", "--natural", "--write-card", "/no/such/decoder"],
     "--write-card /no/such/decoder: cannot read its card.json (No such file or directory); expected a checkpoint folder"),
    (["eval-decoder", "--natural", "--write-card", __file__.rsplit("/", 1)[0]], "cannot read its card.json"),
    (["exposure-map", "-c", TINY, "-r", "bm25", "--passage-shards", "2", "--engine", "inprocess"], "BM25 maps shard queries only"),
    (["exposure-map", "-c", TINY, "--engine", "spark"], "engine 'spark'"),
])
def test_bad_input_is_one_line(monkeypatch, capsys, argv, message):
    monkeypatch.setattr("sys.argv", ["eqi", *argv])
    with pytest.raises(SystemExit) as exc:
        main()
    lines = [line for line in capsys.readouterr().err.strip().splitlines() if not line.startswith("[eqi] ")]
    # progress lines come first when a cold store prepares something; the error itself is one line
    assert exc.value.code == 2 and len(lines) == 1 and message in lines[0] and "Traceback" not in lines[0]


@pytest.mark.parametrize("extra,message", [
    (["-k", "0"], "K = 0: the number of steps must be between 1 and 50"),
    (["--mode", "zigzag"], "mode 'zigzag': expected one of linear, slerp"),
    (["--method", "telepathy"], "decoder 'telepathy': expected one of"),
])
def test_traverse_options_fail_before_the_space_is_opened(monkeypatch, capsys, extra, message):
    """Opening a collection's space encodes it (minutes for TREC DL 2019): a mistyped walk option used
    to be reported only after that."""
    def no_space(*args, **kwargs):
        raise AssertionError("the space was opened before the walk's options were checked")

    monkeypatch.setattr("eqi_core.decoder.space.open_space", no_space)
    monkeypatch.setattr("sys.argv", ["eqi", "traverse", "river bank", "-c", TINY, *extra])
    with pytest.raises(SystemExit) as exc:
        main()
    err = capsys.readouterr().err.strip()
    assert exc.value.code == 2 and message in err and "\n" not in err


def test_a_query_id_typed_as_the_query_says_it_is_read_as_text(monkeypatch, capsys):
    """`eqi traverse q2` walks from the text "q2", not from the logged query q2: a note says so, then
    the one-line error (a typed text has no gold passage)."""
    monkeypatch.setattr("sys.argv", ["eqi", "traverse", "q2", "-c", TINY])
    with pytest.raises(SystemExit):
        main()
    err = capsys.readouterr().err
    assert "'q2' is read as a typed query, not as the logged query with that id ('bank loan interest')" in err
    assert "query 'q2' has no judged passage" in err


def test_the_default_data_folder_is_the_shared_data_beside_the_checkout(monkeypatch):
    """Without --data, decoder-corpus, decoder-synthetic, train-decoder, eval-decoder --natural and
    eval-suggestions read ../shared/data beside the checkout. When the CLI moved into eqi_core/cli/, the
    path kept its old depth and pointed inside the checkout ("no query logs" without --data), and no
    test called a command without --data."""
    from eqi_core.cli.latent import _shared_data
    from eqi_core.dashboard import ROOT

    monkeypatch.delenv("EQI_SHARED_DATA", raising=False)
    assert _shared_data() == ROOT.parent / "shared" / "data"
    monkeypatch.setenv("EQI_SHARED_DATA", "/somewhere/else")
    assert str(_shared_data()) == "/somewhere/else"


def test_the_decoder_defaults_name_the_shipped_decoder_from_any_working_directory(monkeypatch, tmp_path):
    """decoder-synthetic and decoder-lexicon default to the shipped natural decoder; as a path relative to
    the working directory that default named it only from the checkout."""
    import inspect

    from eqi_core.cli import latent
    from eqi_core.decoder.space import ASSETS

    monkeypatch.chdir(tmp_path)
    for command in (latent.decoder_synthetic_cmd, latent.decoder_lexicon_cmd):
        default = inspect.signature(command).parameters["decoder"].default.default
        assert default == ASSETS / "natural-minilm-l6" and default.is_absolute() and (default / "card.json").is_file()
