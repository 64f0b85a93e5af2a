"""EQI end to end on the tiny fixture collection: setup, methods, lookup, Table 2, figures, CLI."""
import re
from dataclasses import replace

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest
from typer.testing import CliRunner

from eqi_core.cli import app, main
from eqi_core.errors import DataError
from eqi_core.exposure.evaluate import evaluate_lists, patience_grid, prepare_exposure, run_table2, table2
from eqi_core.exposure.learned import TrainingConfig
from eqi_core.exposure.lookup import passage_exposure
from eqi_core.exposure.relq import TABLE2_SPECS, relq_rbp
from eqi_core.figures import exposure as figs
from tests.conftest import TINY_BEIR

FAST = TrainingConfig(n_dq=5, steps=30, batch_size=32, n_train_passages=8)


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    from eqi_core.loaders import load_collection
    from eqi_core.store import ArtifactStore

    store = ArtifactStore(tmp_path_factory.mktemp("exposure_store"))
    return prepare_exposure(load_collection(f"beir:{TINY_BEIR}"), "minilm-l3-onnx", store, depth=3)


def test_brute_force_list_is_ideal(setup):
    docs = np.flatnonzero(setup.exposure.counts() > 0)
    lists = {"Brute force": setup.brute_force(docs, 5), "dense": setup.dense_reverse().retrieve(setup.doc_emb[docs], 5)[0]}
    per = evaluate_lists(setup.exposure, docs, lists, [relq_rbp(0.5, 0.9, 5)])
    t = table2(per)
    assert t.loc["Brute force"].iloc[0] == pytest.approx(1.0)
    assert 0 <= t.loc["dense"].iloc[0] <= 1
    grid = patience_grid(setup.exposure, docs, lists["dense"], 5, gammas=(0.5, 1.0))
    assert grid.shape == (2, 2) and grid.notna().all().all()


def test_table2_rows(setup):
    res = run_table2(setup, n_test=3, n_dq=5, config=FAST)
    assert list(res["table"].index) == ["Brute force", "BM25-reverse", "BM25-tuned", "dense-reverse (minilm-l3-onnx)",
                                        "Append", "Residual"]
    assert (res["table"].loc["Brute force"] == 1.0).all()
    assert list(res["table"].columns) == [str(s.__class__(s.eqi_user, s.searcher, 5)) for s in TABLE2_SPECS]
    # the t-tests at a clicked cell: at Table 2's own patiences they are its t-tests, beside its means
    from eqi_core.exposure.evaluate import ttests_at

    reference = setup.dense_reverse().name
    at = ttests_at(setup.exposure, res["test_docs"], res["lists"], relq_rbp(0.5, 0.9, 5), reference)
    assert list(at["method"]) == list(res["table"].index)
    np.testing.assert_allclose(at["mean RELQ"], res["table"][str(relq_rbp(0.5, 0.9, 5))])
    tested = at.dropna(subset=["vs"]).sort_values("method").reset_index(drop=True)
    expected = res["ttests"].sort_values("method").reset_index(drop=True)
    pd.testing.assert_frame_equal(tested[["method", "vs", "mean_diff", "t"]], expected[["method", "vs", "mean_diff", "t"]])
    other = ttests_at(setup.exposure, res["test_docs"], res["lists"], relq_rbp(0.2, 0.3, 5), reference)
    np.testing.assert_allclose(other.set_index("method").loc["Brute force", "mean RELQ"], 1.0)


def test_paired_ttests_by_hand_and_where_undefined(recwarn):
    """t = mean(d) / (sd(d) / sqrt(n)) on the differences d; NaN, without scipy's warnings, where the test
    is undefined: one held-out passage, or the same RELQ on every passage."""
    from eqi_core.exposure.evaluate import paired_ttests

    def frame(a, b):
        docs = [f"d{i}" for i in range(len(a))]
        return pd.DataFrame({"doc": docs * 2, "method": ["A"] * len(a) + ["ref"] * len(b), "s": list(a) + list(b)})

    t = paired_ttests(frame([0.5, 0.9, 0.4], [0.2, 0.3, 0.4]), "s", "ref").iloc[0]  # d = .3, .6, 0: mean .3, sd .3
    assert t["mean_diff"] == pytest.approx(0.3) and t["t"] == pytest.approx(0.3 / (0.3 / np.sqrt(3)))
    for a, b in (([1.0], [0.5]), ([1.0, 1.0], [1.0, 1.0])):
        t = paired_ttests(frame(a, b), "s", "ref").iloc[0]
        assert np.isnan(t["t"]) and np.isnan(t["p_one_tailed"])
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]


def test_lookup_by_id_and_pasted_text(setup):
    methods = {"dense": setup.dense_reverse(), "bm25": setup.bm25_reverse()}
    by_id = passage_exposure(setup, methods, [relq_rbp(0.5, 0.9, 5)], n_qd=3, n_dq=5, doc_id="d1")
    assert set(by_id.exact["query_id"]) == set(setup.exposure.exposing_frame("d1")["query_id"])
    pasted = passage_exposure(setup, methods, [relq_rbp(0.5, 0.9, 5)], n_qd=3, n_dq=5,
                              text=setup.passage_text(setup.exposure.doc_index("d1")))
    # the pasted copy competes with the original: same exposing queries, ranks at most one lower
    merged = by_id.exact.merge(pasted.exact, on="query_id", suffixes=("_stored", "_pasted"))
    assert len(merged) == len(by_id.exact) == len(pasted.exact)
    assert ((merged["rank_pasted"] - merged["rank_stored"]).between(0, 1)).all()


def test_a_head_says_when_it_was_trained_on_the_passage(setup):
    """A learned head's list for one of its own training passages is in-sample: the lookup says so,
    and says nothing for a held-out passage or pasted text. The training passages are replayed from
    Algorithm 1's draws, so they are the ones the head learned from."""
    from eqi_core.exposure.learned import algorithm1

    held = setup.test_passages()
    head, _ = setup.learned(FAST, held)
    data = algorithm1(setup.exposure, setup.query_emb, setup.doc_emb, FAST, held)
    np.testing.assert_array_equal(head.trained_on, np.unique(data.docs))
    assert not set(head.trained_on) & set(held.tolist())
    spec = [relq_rbp(0.5, 0.9, 5)]
    trained = setup.exposure.doc_ids[head.trained_on[0]]
    seen = passage_exposure(setup, {"Residual": head}, spec, n_qd=3, n_dq=5, doc_id=str(trained))
    assert [n for n in seen.notes if "in-sample" in n] == [
        f"Residual was trained on this passage's exposing queries (one of {len(head.trained_on):,} training passages): "
        "its list is in-sample here; the Exposure evaluation page (eqi eval-exposure) scores the heads on held-out passages"]
    unseen = passage_exposure(setup, {"Residual": head}, spec, n_qd=3, n_dq=5, doc_id=str(setup.exposure.doc_ids[held[0]]))
    pasted = passage_exposure(setup, {"Residual": head}, spec, n_qd=3, n_dq=5, text=setup.passage_text(int(head.trained_on[0])))
    assert not [n for n in unseen.notes + pasted.notes if "in-sample" in n]


def test_pasted_text_has_exact_bm25_exposure(tmp_path):
    from eqi_core.exposure.generative import passage_ranks
    from eqi_core.loaders import load_collection
    from eqi_core.store import ArtifactStore

    bm25 = prepare_exposure(load_collection(f"beir:{TINY_BEIR}"), "bm25", ArtifactStore(tmp_path), depth=3)
    methods = {"bm25": bm25.bm25_reverse()}
    d1 = bm25.exposure.doc_index("d1")
    by_id = passage_exposure(bm25, methods, [relq_rbp(0.5, 0.9, 5)], n_qd=3, n_dq=5, doc_id="d1")
    pasted = passage_exposure(bm25, methods, [relq_rbp(0.5, 0.9, 5)], n_qd=3, n_dq=5, text=bm25.passage_text(d1))
    assert not any("without ground truth" in n for n in pasted.notes) and pasted.relq is not None
    # a copy of d1 competes with d1 (ties go against the copy): same queries, one rank lower, or out of the top 3
    lower = dict(zip(by_id.exact["query_id"], by_id.exact["rank"] + 1))
    assert dict(zip(pasted.exact["query_id"], pasted.exact["rank"])) == {q: r for q, r in lower.items() if r <= 3}
    assert len(by_id.exact) > 0
    logged = bm25.collection.queries["text"].tolist()
    ranks = passage_ranks(bm25, logged, None, bm25.passage_text(d1))  # generative exposure ranks any query the same way
    assert {bm25.exposure.query_ids[i]: r for i, r in enumerate(ranks) if r <= 3} == dict(
        zip(pasted.exact["query_id"], pasted.exact["rank"]))


def test_pasted_text_has_exact_splade_exposure(tmp_path):
    from eqi_core.exposure.generative import passage_ranks
    from eqi_core.loaders import load_collection
    from eqi_core.store import ArtifactStore

    store = ArtifactStore(tmp_path)
    splade = prepare_exposure(load_collection(f"beir:{TINY_BEIR}"), "splade-tiny", store, depth=3)
    methods = {"dense": splade.dense_reverse()}
    d1 = splade.exposure.doc_index("d1")
    by_id = passage_exposure(splade, methods, [relq_rbp(0.5, 0.9, 5)], n_qd=3, n_dq=5, doc_id="d1")
    pasted = passage_exposure(splade, methods, [relq_rbp(0.5, 0.9, 5)], n_qd=3, n_dq=5, text=splade.passage_text(d1))
    assert len(by_id.exact) > 0 and not any("without ground truth" in n for n in pasted.notes)
    merged = by_id.exact.merge(pasted.exact, on="query_id", how="left", suffixes=("_stored", "_pasted"))
    # a copy of d1 competes with d1: the same queries, at most one rank lower (or pushed out of the top 3)
    assert ((merged["rank_pasted"] - merged["rank_stored"]).fillna(1).between(0, 1)).all()
    assert set(pasted.exact["query_id"]) <= set(by_id.exact["query_id"])
    ranks = passage_ranks(splade, splade.collection.queries["text"].tolist(), None, splade.passage_text(d1))
    assert {splade.exposure.query_ids[i]: r for i, r in enumerate(ranks) if r <= 3} == dict(
        zip(pasted.exact["query_id"], pasted.exact["rank"]))  # generative exposure ranks any query the same way
    passage_exposure(splade, methods, [relq_rbp(0.5, 0.9, 5)], n_qd=3, n_dq=5, text="a river bank")
    assert len(store.list("splade-queries")) == 1  # the log is encoded once


def test_a_passage_longer_than_the_encoder_reads_says_so(setup):
    """MiniLM-L3 reads 128 word pieces: an auditor is told that the rest cannot change dense exposure."""
    methods = {"dense": setup.dense_reverse()}
    short = passage_exposure(setup, methods, [relq_rbp(0.5, 0.9, 5)], n_qd=3, n_dq=5, text="a bank of a river")
    assert not any("word pieces" in n for n in short.notes)
    long = passage_exposure(setup, methods, [relq_rbp(0.5, 0.9, 5)], n_qd=3, n_dq=5, text="river bank " * 100)
    assert ("minilm-l3-onnx reads only the first 128 of this passage's 202 word pieces: the ranker and the dense "
            "methods (dense-reverse, the learned heads) ignore the rest of the text") in long.notes


def test_a_passage_sharing_its_text_says_with_which(setup):
    """A pasted copy of a passage ties with it under every ranker: the note names the twin; a passage of
    the collection whose text no other has gets no such note."""
    methods = {"dense": setup.dense_reverse()}
    text = setup.collection.passage_text("d1")
    pasted = passage_exposure(setup, methods, [relq_rbp(0.5, 0.9, 5)], n_qd=3, n_dq=5, text=text)
    assert ("this text is already that of passage d1: every ranker scores them alike, so each query shows them side "
            "by side and the ranker's tie-break decides which comes first") in pasted.notes
    own = passage_exposure(setup, methods, [relq_rbp(0.5, 0.9, 5)], n_qd=3, n_dq=5, doc_id="d1")
    assert not any("scores them alike" in n for n in own.notes)


def test_a_pasted_passage_the_encoder_cannot_read_says_so(setup):
    """A passage of emoji is encoded to the [UNK] piece's vector: its dense lists are still shown, with a note."""
    methods = {"dense": setup.dense_reverse()}
    unread = passage_exposure(setup, methods, [relq_rbp(0.5, 0.9, 5)], n_qd=3, n_dq=5, text="😀 🎉")
    assert ("minilm-l3-onnx cannot read this passage: “😀”, “🎉” are outside its vocabulary ([UNK]), so its "
            "vector, and every result made from it, says nothing about the passage") in unread.notes
    assert len(unread.lists["dense"]) == 5


@pytest.mark.parametrize("kwargs,message", [
    (dict(text=""), "the passage is empty"),
    (dict(text="x" * 1_000_001), "at most 100,000"),
    (dict(doc_id="nope"), "passage id 'nope' is not in the collection"),
    (dict(doc_id="d1", n_qd=0), r"n_q->d = 0"),
    (dict(doc_id="d1", n_dq=0), r"n_d->q = 0"),
])
def test_bad_lookups(setup, kwargs, message):
    args = {"n_qd": 3, "n_dq": 5, **kwargs}
    with pytest.raises(DataError, match=message):
        passage_exposure(setup, {"dense": setup.dense_reverse()}, [relq_rbp(0.5, 0.9, 5)], **args)


def test_exposure_figures():
    lists = {"A": pd.DataFrame({"position": [1, 2], "query_id": ["a", "b"], "query": ["a", "b"], "score": [1, 0.5],
                                "rank": [1.0, np.nan]}),
             "B": pd.DataFrame({"position": [1], "query_id": ["a"], "query": ["a"], "score": [1], "rank": [1.0]})}
    fig = figs.exposure_bars(lists, 10, {"A": 0.5, "B": 0.7}, "RELQ")
    assert isinstance(fig, go.Figure)
    heights = [list(t.y) for t in fig.data if len(t.y)]
    assert [10.0] in heights  # exposure = n_q->d - rho = 10 - 0
    hover = [row[1] for t in fig.data if t.customdata is not None for row in t.customdata]
    assert "not in top 10" in hover and "-1" not in hover  # a non-exposing query says so, not "rank -1"
    assert {row[2] for t in fig.data if t.customdata is not None for row in t.customdata} == {"a", "b"}  # a click's query
    legend = [t for t in fig.data if t.showlegend]
    assert [t.name for t in legend] == ["only this method", "retrieved by all methods"]
    assert {t.marker.color for t in legend} == {"#9A9A9A"}  # the hatching's key, not one method's colour
    assert fig.layout.legend.yref == "container" and fig.layout.legend.y == 0  # below the x-axis title
    assert {t.width for t in fig.data if len(t.x) and t.x[0] is not None} == {0.9}  # one position wide, however sparse
    axis = fig.layout["xaxis2"]  # the bottom panel's: a short list ticks at whole positions, not 0.6, 0.8, ...
    assert (axis.tick0, axis.dtick, list(axis.range)) == (1, 1, [0.5, 2.5])
    long = {"A": pd.DataFrame({"position": range(1, 51), "query_id": list("x" * 50), "query": ["q"] * 50,
                               "score": [1.0] * 50, "rank": [1.0] * 50})}
    assert figs.exposure_bars(long, 10).layout.xaxis.dtick is None  # plotly's own ticks on a long list
    said = {a.text for a in fig.layout.annotations} - {"A (RELQ = 0.500)", "B (RELQ = 0.700)"}
    assert said == set()  # panels with bars need no word
    # a passage no query exposes: each empty panel says why (the exported PNG was blank)
    unseen = {"A": lists["A"].iloc[1:], "B": lists["B"].iloc[:0], "C": lists["A"].assign(rank=np.nan)}
    said = [(a.text, a.yref) for a in figs.exposure_bars(unseen, 10).layout.annotations if a.yref.endswith("domain")]
    assert said == [("the listed query does not show the passage in its top 10", "y domain"),
                    ("no logged query listed", "y2 domain"),
                    ("none of the 2 listed queries shows the passage in its top 10", "y3 domain")]
    grid = pd.DataFrame([[0.1, 0.2], [0.3, 0.4]], index=[0.5, 1.0], columns=[0.5, 1.0])
    heat = figs.relq_heatmaps({"x": grid, "y": grid})
    assert [t.type for t in heat.data] == ["heatmap", "scatter", "heatmap", "scatter"]  # each panel's clickable cells
    cells = heat.data[1]
    assert list(cells.customdata[1]) == [0.5, 1.0, 0.2] and (cells.x[1], cells.y[1]) == ("1", "0.5")  # row 0.5, column 1
    assert heat.layout.xaxis.type == heat.layout.yaxis2.type == "category" and list(heat.layout.xaxis2.range) == [-0.5, 1.5]
    rs = pd.DataFrame({"method": ["Exact", "Exact"], "rank": [1, 2], "exposing_queries": [5, 0]})
    assert list(figs.rank_size(rs).data[0].y) == [5]  # zeros cannot be drawn on a log axis


runner = CliRunner()


@pytest.mark.parametrize("command", [["exposure"], ["train-exposure"], ["eval-exposure"], ["bench", "exposure"]])
def test_exposure_commands_have_help(command):
    assert runner.invoke(app, command + ["--help"]).exit_code == 0


def test_exposure_cli_errors(monkeypatch, capsys):
    for argv, message in ((["eqi", "exposure", "-c", f"beir:{TINY_BEIR}"], "give either a passage id or --text"),
                          (["eqi", "exposure", "d1", "-c", f"beir:{TINY_BEIR}", "--gamma-qd", "0"], "expected a value in (0, 1]")):
        monkeypatch.setattr("sys.argv", argv)
        with pytest.raises(SystemExit) as exc:
            main()
        assert exc.value.code == 2 and message in capsys.readouterr().err


def test_exposure_cli_says_when_a_method_finds_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("EQI_HOME", str(tmp_path / "home"))
    out = runner.invoke(app, ["exposure", "--text", "quantum chromodynamics", "-c", f"beir:{TINY_BEIR}", "-r", "minilm-l3-onnx",
                              "--n-dq", "2", "--no-heads"])
    assert out.exit_code == 0, out.output
    assert "(no logged query found: none shares a word" in out.output  # BM25-reverse: no word of the log
    assert "Empty DataFrame" not in out.output
    lines = out.output.splitlines()
    dense = lines[lines.index(next(ln for ln in lines if ln.startswith("## dense-reverse"))) + 2]
    assert re.fullmatch(r"-|\d+", dense.split()[-1])  # ranks print as integers or '-', never 1.0 / NaN


def test_query_results_agree_with_the_exposure_map(setup):
    """What an exposing query shows (the page's look at it) is the ranker's own top k, and the
    passage sits there at the rank the map gives it."""
    from eqi_core.rankers import build_ranker

    doc = setup.exposure.doc_ids[int(np.flatnonzero(setup.exposure.counts() > 0)[0])]
    exposing = setup.exposure.exposing_frame(doc)
    qid, rank = str(exposing["query_id"].iloc[0]), int(exposing["rank"].iloc[0])
    shown = setup.query_results(qid, 3)
    search = build_ranker("minilm-l3-onnx", setup.collection, setup.store).search(
        {qid: setup.collection.query_text[qid]}, k=3).frame
    assert shown["doc_id"].tolist() == search["doc_id"].tolist() and shown["rank"].tolist() == [1, 2, 3]
    assert int(shown.loc[shown["doc_id"] == doc, "rank"].iloc[0]) == rank
    with pytest.raises(DataError, match="query id 'nope' is not in the query log"):
        setup.query_results("nope", 3)


def test_one_passages_view_under_bm25_encodes_no_other_passage(tmp_path):
    """An audit under BM25 (or a result log) needs the map, the log's vectors and one passage's vector:
    ``passages=False`` leaves the collection unencoded (a 500,000-passage collection waited hours for a
    dense space this view never used), gives the same lists as the fully encoded setup, and encodes
    every passage, once, only when a head trains on them."""
    from eqi_core.loaders import load_collection
    from eqi_core.rankers import is_indexed
    from eqi_core.store import ArtifactStore

    tiny = load_collection(f"beir:{TINY_BEIR}")
    lazy_store, full_store = ArtifactStore(tmp_path / "lazy"), ArtifactStore(tmp_path / "full")
    lazy = prepare_exposure(tiny, "bm25", lazy_store, depth=3, space="minilm-l3-onnx", passages=False)
    full = prepare_exposure(tiny, "bm25", full_store, depth=3, space="minilm-l3-onnx")
    assert not lazy.passages_encoded() and full.passages_encoded()
    methods = {"dense": lazy.dense_reverse(), "bm25": lazy.bm25_reverse()}
    got = passage_exposure(lazy, methods, [relq_rbp(0.5, 0.9, 5)], 3, 5, doc_id="d1")
    want = passage_exposure(full, {"dense": full.dense_reverse(), "bm25": full.bm25_reverse()}, [relq_rbp(0.5, 0.9, 5)],
                            3, 5, doc_id="d1")
    for name in methods:
        pd.testing.assert_frame_equal(got.lists[name].drop(columns="score"), want.lists[name].drop(columns="score"))
        np.testing.assert_allclose(got.lists[name]["score"], want.lists[name]["score"], atol=1e-5)
    pd.testing.assert_frame_equal(got.exact, want.exact)
    assert not lazy.passages_encoded() and not is_indexed("minilm-l3-onnx", tiny, lazy_store)
    np.testing.assert_allclose(lazy.passage_vector(1), full.doc_emb[1], atol=1e-5)

    held_out = lazy.test_passages(2)
    lazy.learned(FAST, held_out)  # a head trains on every passage: encoded now, into the store
    assert lazy.passages_encoded() and is_indexed("minilm-l3-onnx", tiny, lazy_store)
    np.testing.assert_allclose(lazy.doc_emb, full.doc_emb, atol=1e-5)
    again = prepare_exposure(tiny, "bm25", lazy_store, depth=3, space="minilm-l3-onnx", passages=False)
    assert again.passages_encoded()  # at hand in the store: loaded, as before
    assert again.learned_available(FAST, held_out)


def test_exposure_ready_asks_for_the_passages_only_when_they_are_wanted(tmp_path):
    from eqi_core.exposure.setup import exposure_ready
    from eqi_core.loaders import load_collection
    from eqi_core.store import ArtifactStore

    tiny, store = load_collection(f"beir:{TINY_BEIR}"), ArtifactStore(tmp_path)
    assert not exposure_ready(tiny, "bm25", store, 3, space="minilm-l3-onnx", passages=False)
    prepare_exposure(tiny, "bm25", store, depth=3, space="minilm-l3-onnx", passages=False)
    assert exposure_ready(tiny, "bm25", store, 3, space="minilm-l3-onnx", passages=False)
    assert not exposure_ready(tiny, "bm25", store, 3, space="minilm-l3-onnx")
    prepare_exposure(tiny, "bm25", store, depth=3, space="minilm-l3-onnx")
    assert exposure_ready(tiny, "bm25", store, 3, space="minilm-l3-onnx")


def test_eqi_exposure_under_bm25_encodes_the_passages_only_to_train_a_head(tmp_path, monkeypatch):
    from eqi_core.loaders import load_collection
    from eqi_core.rankers import is_indexed
    from eqi_core.store import ArtifactStore

    monkeypatch.setenv("EQI_HOME", str(tmp_path))
    tiny, store = load_collection(f"beir:{TINY_BEIR}"), ArtifactStore(tmp_path)
    out = runner.invoke(app, ["exposure", "d1", "-c", f"beir:{TINY_BEIR}", "-r", "bm25", "--space", "minilm-l3-onnx",
                              "--no-heads"])
    assert out.exit_code == 0, out.output
    assert "dense-reverse" in out.output and not is_indexed("minilm-l3-onnx", tiny, store)
    out = runner.invoke(app, ["train-exposure", "-c", f"beir:{TINY_BEIR}", "-r", "bm25", "--space", "minilm-l3-onnx",
                              "--steps", "30", "--train-passages", "8", "--test-passages", "2"])
    assert out.exit_code == 0, out.output
    assert "training the Residual head needs every passage in minilm-l3-onnx's space: encoding the 12 passages" in out.output
    assert is_indexed("minilm-l3-onnx", tiny, store)


def test_a_training_size_no_passage_is_exposed_at_leaves_its_cell_and_line_out(setup):
    """The Table 3 grid and the growing log on a log so small that one query can expose only held-out
    passages: that cell is empty (drawn as "—") and that training share has no line, instead of the
    whole computation stopping with "no training passage is exposed" (a traceback on the page)."""
    from eqi_core.exposure.evaluate import expanding_log, training_size_grid, untrained_shares

    exposed = np.flatnonzero(setup.exposure.counts() > 0)
    only_q4 = [d for d in exposed if setup.exposure.restricted_to(np.arange(5) != 4).counts()[d] == 0]
    assert only_q4 == [3]  # the fixture: passage 3 is in query 4's top 3 only
    held_out = np.setdiff1d(exposed, only_q4)  # every other exposed passage: a lone query other than q4 has nothing
    # a seed whose one training query (line 1 of Algorithm 1) is not q4
    seed = next(s for s in range(10) if np.random.default_rng(s).choice(5, size=1, replace=False)[0] != 4)
    config = replace(FAST, seed=seed)
    grid = training_size_grid(setup, held_out, query_sizes=[1, 5], passage_sizes=[8], base=config, n_dq=5)
    assert np.isnan(grid.loc[8, 1]) and np.isfinite(grid.loc[8, 5])
    fig = figs.training_size(grid)
    assert list(fig.data[0].text[0]) == ["—", f"{grid.loc[8, 5]:.3f}"] and "—" in fig.layout.title.text
    assert np.random.default_rng(11).permutation(5)[0] != 4  # the growing log's first fifth (seed 0): one query, not q4
    grown = expanding_log(setup, held_out, train_fractions=[0.2, 1.0], eval_fractions=[0.2, 1.0], base=config, n_dq=5)
    assert set(grown.loc[grown["method"] == "Residual", "train_fraction"]) == {1.0}
    assert untrained_shares(grown, [0.2, 1.0]).startswith("No Residual line for 20% of the log: so few queries")
    assert untrained_shares(grown, [1.0]) == ""
    assert list(grown.loc[grown["method"] == "dense-reverse", "log_fraction"]) == [0.2, 1.0]  # the baseline throughout
    figs.expanding_log(grown)


def test_a_grid_cell_without_a_head_reads_as_such():
    table = pd.DataFrame([[np.nan, 0.5]], index=pd.Index([8], name="train passages"),
                         columns=pd.Index([1, 5], name="train queries"))
    fig = figs.training_size(table)
    assert list(fig.data[0].text[0]) == ["—", "0.500"]
    assert list(fig.data[0].customdata[0]) == ["no head: these queries expose no passage", "RELQ 0.500"]
    assert fig.layout.title.text.endswith("(—: the training queries expose no passage)")
    assert "—" not in figs.training_size(table.fillna(0.25)).layout.title.text
