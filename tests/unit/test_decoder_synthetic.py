"""The decoder's own samples as training text (eqi decoder-synthetic): points seeded by part, every
filter on hand cases (held-out queries and their hash share never enter), exact resumption, and the
samples joining the query share of training but not the word list."""
import json

import numpy as np
import pandas as pd
import pytest

from eqi_core.decoder.corpus import QUERY_KINDS, normalised, query_heldout, read_corpus
from eqi_core.decoder.lexicon import Lexicon, training_lexicon
from eqi_core.decoder.synthetic import SyntheticRecipe, build_synthetic, keep_reason, sampling_points
from eqi_core.errors import DataError
from eqi_core.store import ArtifactStore

WORDS = ["what", "is", "the", "capital", "of", "france", "how", "to", "boil", "an", "egg", "who", "wrote", "hamlet", "paris", "cook", "eggs", "city"]


def held_out_text() -> str:
    """A query-like text of known words whose hash puts it in the held-out share."""
    for i in range(1000):
        text = " ".join(WORDS[j % len(WORDS)] for j in (i, i + 3, i + 7))
        if query_heldout(text):
            return text
    raise AssertionError("no held-out text found")


def corpus(tmp_path):
    held = held_out_text()
    table = pd.DataFrame({"text": ["what is the capital of france", "how to boil an egg", "who wrote hamlet", held,
                                   "paris is a city"],
                          "kind": ["query", "query", "query", "query", "passage"],
                          "source": ["log", "log", "log", "log", "wiki"],
                          "split": ["train", "train", "train", "heldout", "train"]})
    path = tmp_path / "corpus.parquet"
    table.to_parquet(path, index=False)
    path.with_suffix(".json").write_text(json.dumps({"digest": "abc", "queries_train": 3}), encoding="utf-8")
    return path, held


class FakeEncoder:
    id, dim = "fake", 4

    def encode(self, texts, batch_size=64, progress=None):
        rng = np.random.default_rng(len(texts))
        e = rng.standard_normal((len(texts), 4)).astype(np.float32)
        return e / np.linalg.norm(e, axis=1, keepdims=True)


class FakeDecoder:
    """Returns scripted samples in turn; ``fail_on`` a sampling call raises (a killed build)."""

    def __init__(self, script, fail_on=None):
        self.script, self.calls, self.fail_on = script, 0, fail_on
        self.lexicon = Lexicon(WORDS + ["is", "a"])
        self.card = {"command": "tiny"}

    def sample_rows(self, points, n, top_p, seed, temperature):
        self.calls += 1
        if self.fail_on == self.calls:
            raise KeyboardInterrupt
        return [[self.script[(seed + i) % len(self.script)]] for i in range(len(points))]


def test_points_are_seeded_by_part_and_lie_on_the_sphere():
    emb = np.eye(4, dtype=np.float32)
    recipe = SyntheticRecipe(n=10, noise=(0.0, 0.5), seed=3)
    a, rows = sampling_points(emb, 2, 6, recipe)
    b, rows_b = sampling_points(emb, 2, 6, recipe)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(rows, rows_b)
    np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1, rtol=1e-6)
    # noise norms take turns by global position: part 2 of size 6 starts at point 12 -> norms 0, 0.5, 0, ...
    np.testing.assert_allclose(a[0], emb[rows[0]], atol=1e-6)
    assert not np.allclose(a[1], emb[rows[1]])
    assert not np.array_equal(a, sampling_points(emb, 3, 6, recipe)[0])


def test_each_filter_on_hand_cases(tmp_path):
    _, held = corpus(tmp_path)
    seen = {normalised(t) for t in ["what is the capital of france"]}
    lex = Lexicon(WORDS)
    assert keep_reason("paris", seen, lex, 2) == "too short"
    assert keep_reason("what is zorblat", seen, lex, 2) == "unknown word"
    assert keep_reason(held, seen, lex, 2) == "held-out hash share"
    assert keep_reason("What is the capital of France?", seen, lex, 2) == "already a corpus text or sample"
    assert keep_reason("who wrote paris", seen, lex, 2) == ""
    assert keep_reason("who wrote zorblat", seen, None, 2) == ""  # no word list: any word


def test_the_augmented_corpus_adds_only_new_training_text(tmp_path):
    path, held = corpus(tmp_path)
    script = ["who wrote paris", "what is the capital of france", held, "boil", "what is zorblat", "who wrote paris",
              "how to cook eggs"]
    out = tmp_path / "aug.parquet"
    summary = build_synthetic(path, FakeDecoder(script), FakeEncoder(), out, SyntheticRecipe(n=7, seed=0),
                              ArtifactStore(tmp_path / "store"))
    table, meta = read_corpus(out)
    synthetic = table[table["kind"] == "synthetic"]
    assert sorted(synthetic["text"]) == ["how to cook eggs", "who wrote paris"]
    assert (synthetic["split"] == "train").all()
    assert table.iloc[:5].equals(pd.read_parquet(path))  # the real text unchanged, first
    info = summary["synthetic"]
    assert info["kept"] == 2 and info["points"] == 7 and info["from_corpus"] == "abc"
    assert info["dropped"] == {"already a corpus text or sample": 2, "held-out hash share": 1, "too short": 1,
                               "unknown word": 1}
    assert meta["digest"] == summary["digest"] != "abc"
    assert not list((tmp_path / "store" / "decoder-synthetic").glob("*.work/*"))  # scratch cleared
    # a second round keeps the first's samples, drops its own repeats of them and records both rounds
    again = tmp_path / "again.parquet"
    second = build_synthetic(out, FakeDecoder(["how to cook eggs", "what is a hamlet", "what is a hamlet"]),
                             FakeEncoder(), again, SyntheticRecipe(n=3, seed=1), ArtifactStore(tmp_path / "store"))
    table2, meta2 = read_corpus(again)
    assert table2.iloc[:len(table)].equals(table)
    added = table2.iloc[len(table):]
    assert list(added["text"]) == ["what is a hamlet"] and set(added["source"]) == {"synthetic-2"}
    assert second["synthetic"]["round"] == 2 and second["synthetic"]["kept"] == 1
    assert second["synthetic"]["dropped"] == {"already a corpus text or sample": 2}
    assert meta2["synthetic_earlier"] == [meta["synthetic"]] and meta2["synthetic"]["from_corpus"] == meta["digest"]
    with pytest.raises(DataError, match="synthetic rows and its summary"):
        out.with_suffix(".json").unlink()  # a corpus whose rows and summary disagree is refused
        build_synthetic(out, FakeDecoder(script), FakeEncoder(), tmp_path / "x.parquet", SyntheticRecipe(n=7),
                        ArtifactStore(tmp_path / "store"))
    # the word list is the real text's: a sample's words never widen it
    lexicon = training_lexicon(table.assign(text=table["text"].where(table["kind"] != "synthetic", "zorblat")), [])
    assert "zorblat" not in lexicon and "hamlet" in lexicon
    assert set(QUERY_KINDS) == {"query", "synthetic"}


def test_a_killed_build_resumes_to_the_same_corpus(tmp_path, monkeypatch):
    import eqi_core.decoder.synthetic as synthetic

    monkeypatch.setattr(synthetic, "PART", 3)
    path, _ = corpus(tmp_path)
    script = ["who wrote paris", "how to cook eggs", "what is paris", "who wrote the egg", "how to boil paris"]
    recipe = SyntheticRecipe(n=8, seed=1)
    whole = tmp_path / "whole.parquet"
    build_synthetic(path, FakeDecoder(script), FakeEncoder(), whole, recipe, ArtifactStore(tmp_path / "a"))
    store = ArtifactStore(tmp_path / "b")
    resumed = tmp_path / "resumed.parquet"
    with pytest.raises(KeyboardInterrupt):
        build_synthetic(path, FakeDecoder(script, fail_on=2), FakeEncoder(), resumed, recipe, store)
    assert not resumed.exists()
    again = FakeDecoder(script)
    build_synthetic(path, again, FakeEncoder(), resumed, recipe, store)
    assert again.calls == 2  # the finished first part was not sampled again
    pd.testing.assert_frame_equal(pd.read_parquet(whole), pd.read_parquet(resumed))


def test_bad_recipes_are_one_line():
    for recipe, message in [(SyntheticRecipe(n=0), "at least 1 point"), (SyntheticRecipe(noise=()), "noise"),
                            (SyntheticRecipe(top_p=0), "top_p")]:
        with pytest.raises(DataError, match=message):
            recipe.validate()


@pytest.mark.parametrize("args,message", [
    (["--points", "5", "--noise", "-0.5"], "noise"),
    (["--points", "5"], "not a decoder corpus"),
])
def test_the_command_refuses_bad_input_in_one_line_and_writes_nothing(tmp_path, args, message):
    from typer.testing import CliRunner

    from eqi_core.cli import app

    bad = tmp_path / "log.tsv"
    bad.write_text("q1\twhat is a bank\n", encoding="utf-8")
    out = tmp_path / "out.parquet"
    result = CliRunner().invoke(app, ["decoder-synthetic", "--corpus", str(bad), "-o", str(out), *args])
    assert isinstance(result.exception, DataError) and message in str(result.exception)
    assert "\n" not in str(result.exception) and not out.exists()


def test_the_default_decoder_is_trained_with_its_predecessors_samples():
    """assets/decoders/natural-minilm-l6 (the default since 2026-11-27): its card names the corpus with
    samples drawn from the decoder before it, kept beside it as natural-minilm-l6-real, and both commands."""
    from eqi_core.decoder.space import ASSETS, shipped_natural_decoder, shipped_natural_decoders

    card = json.loads((ASSETS / "natural-minilm-l6" / "card.json").read_text(encoding="utf-8"))
    synthetic = card["corpus"]["synthetic"]
    before = json.loads((ASSETS / "natural-minilm-l6-real" / "card.json").read_text(encoding="utf-8"))
    assert synthetic["kept"] > 100_000 and synthetic["from_corpus"] == before["corpus"]["digest"]
    assert "synthetic" not in before["corpus"]  # trained on real text only
    assert card["command"].startswith("eqi train-decoder --natural") and "decoder-synthetic" in card["corpus_command"]
    assert "--decoder assets/decoders/natural-minilm-l6-real " in card["corpus_command"]
    assert card["training"]["steps"] == 12000 and card["trained_on"][0]["device"].startswith("NVIDIA")
    assert shipped_natural_decoder("minilm-l6").name == "natural-minilm-l6"
    assert [f.name for f in shipped_natural_decoders("minilm-l6")] == [
        "natural-minilm-l6", "natural-minilm-l6-real", "natural-minilm-l6-v2"]


def test_the_decoder_without_evaluated_queries_says_so_in_its_card():
    """assets/decoders/natural-minilm-l6-v2: the default's recipe on corpus version 2, which holds no query of
    the collections the decoders are evaluated on; shipped beside the default to compare (README)."""
    from eqi_core.decoder.space import ASSETS, decoder_summary

    card = json.loads((ASSETS / "natural-minilm-l6-v2" / "card.json").read_text(encoding="utf-8"))
    corpus = card["corpus"]
    assert corpus["version"] == 2 and corpus["queries_evaluated"]["distinct"] > 1000
    assert corpus["queries_evaluated"]["collections"] == ["cranfield", "scifact", "trec-dl19-passage"]
    default = json.loads((ASSETS / "natural-minilm-l6" / "card.json").read_text(encoding="utf-8"))
    assert corpus["queries_train"] == default["corpus"]["queries_train"] - 8  # the 8 DL19 queries the logs hold
    assert corpus["queries_heldout"] == default["corpus"]["queries_heldout"]  # the same held-out questions are scored
    # the default's recipe, only the corpus differs (options added since, e.g. --cosine, are off)
    assert {k: card["training"][k] for k in default["training"]} == default["training"] and card["training"]["cosine"] == 0
    assert "--decoder assets/decoders/natural-minilm-l6-real " in card["corpus_command"]
    assert card["natural_metrics"]["settings"]["n_queries"] == 300  # eqi eval-decoder --natural, the table's samples
    assert "no query of DL19, SciFact or Cranfield" in decoder_summary(ASSETS / "natural-minilm-l6-v2")


def test_the_decoder_choice_line_counts_every_round_of_samples(tmp_path, monkeypatch):
    import eqi_core.decoder.space as space

    def line(corpus):
        monkeypatch.setattr(space, "read_card", lambda folder: {"arch": "bert", "corpus": corpus})
        return space.decoder_summary(tmp_path)

    assert line({"queries_train": 60, "sentences_train": 9}) == "trained on 60 real queries and 9 passage sentences"
    assert line({"synthetic": {"kept": 1200}}) == "also trained on 1,200 of a decoder's own samples (eqi decoder-synthetic)"
    assert line({"synthetic": {"kept": 1200}, "version": 2}) == (
        "also trained on 1,200 of a decoder's own samples (eqi decoder-synthetic), no query of DL19, SciFact or Cranfield")
    assert line({"synthetic": {"kept": 1200}, "synthetic_earlier": [{"kept": 800}]}) == (
        "also trained on 2,000 of decoders' own samples (2 rounds of eqi decoder-synthetic)")
