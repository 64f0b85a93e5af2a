"""Latent space: interpolation maths, decoder protocol on a tiny trained model, resumable training,
checkpoint checks, guided correction, suggestion metrics on hand-computed cases, figures."""
import json
import shutil

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

from eqi_core.decoder.base import Candidate, DecoderError, QueryDecoder, dedupe, fold, terms, words
from eqi_core.decoder.evaluate import curve_summary, token_f1
from eqi_core.decoder.guided import _edits
from eqi_core.decoder.traversal import cosine, interpolate
from eqi_core.suggestion.baselines import (
    ball_points,
    best_of,
    feedback_term_suggestions,
    random_term_suggestions,
    rm3_terms,
    self_bleu,
)

TINY_TRAINING = dict(steps=160, batch_size=16, lr=2e-3, warmup=10, n_layers=1, d_ff=128, heldout_share=0.0,
                     passage_queries=1, checkpoint_every=40, noise=0.0)


# -- maths ---------------------------------------------------------------------------------------
def test_linear_interpolation_is_equation_1():
    q, d = np.array([1.0, 0.0, 0.0]), np.array([0.0, 2.0, 0.0])
    pts = interpolate(q, d, 4, "linear")
    assert pts.shape == (5, 3)
    np.testing.assert_allclose(pts[0], q)
    np.testing.assert_allclose(pts[-1], d)
    np.testing.assert_allclose(pts[2], [0.5, 1.0, 0.0])  # q + (2/4)(d - q)


def test_slerp_stays_on_the_sphere_at_constant_angle():
    q, d = np.array([1.0, 0.0]), np.array([0.0, 1.0])
    pts = interpolate(q, d, 2, "slerp")
    np.testing.assert_allclose(np.linalg.norm(pts, axis=1), 1.0, atol=1e-6)
    np.testing.assert_allclose(pts[1], [np.sqrt(0.5), np.sqrt(0.5)], atol=1e-6)  # 45 degrees halfway
    angles = np.degrees(np.arctan2(pts[:, 1], pts[:, 0]))
    np.testing.assert_allclose(np.diff(angles), 45.0, atol=1e-4)
    same = interpolate(q, q, 3, "slerp")  # identical ends: no division by sin(0)
    np.testing.assert_allclose(same, np.tile(q, (4, 1)), atol=1e-6)


@pytest.mark.parametrize("steps,mode", [(0, "linear"), (51, "linear"), (5, "zigzag")])
def test_interpolation_rejects_bad_parameters(steps, mode):
    with pytest.raises(DecoderError):
        interpolate(np.ones(3), np.zeros(3) + 0.5, steps, mode)


def test_cosine():
    assert cosine(np.array([1.0, 0.0]), np.array([1.0, 1.0])) == pytest.approx(np.sqrt(0.5))


def test_token_f1_hand_cases():
    assert token_f1("river bank", "river bank") == 1.0
    assert token_f1("river bank", "bank of the river") == pytest.approx(2 * (2 / 4) * 1.0 / (2 / 4 + 1.0))  # p=.5 r=1
    assert token_f1("river bank", "money") == 0.0
    assert token_f1("", "") == 1.0 and token_f1("a", "") == 0.0


def test_best_of_k_includes_the_original():
    assert best_of(0.4, [0.1, 0.9, 0.2, 0.5]) == {1: 0.4, 3: 0.9, 5: 0.9, 10: 0.9}
    assert best_of(0.4, []) == {1: 0.4, 3: 0.4, 5: 0.4, 10: 0.4}


def test_self_bleu_identical_vs_distinct():
    assert self_bleu(["river bank slope", "river bank slope", "river bank slope"]) == pytest.approx(1.0)
    assert self_bleu(["river bank", "money loan", "piano keys"]) < 0.1
    assert np.isnan(self_bleu(["only one"]))


def test_ball_points_are_within_epsilon():
    c = np.zeros(16, dtype=np.float32)
    pts = ball_points(c, 200, 0.3, seed=1)
    r = np.linalg.norm(pts, axis=1)
    assert pts.shape == (200, 16) and r.max() <= 0.3 + 1e-6 and r.min() > 0.1  # mass near the surface in 16-d


def test_rm3_term_weights_hand_case(tiny):
    """Two feedback docs; the term in both, beside the query term, must win, and weights sum to <= 1."""
    terms = rm3_terms("river", ["river water flows", "river water bank"], tiny, n=5)
    assert terms[0][0] == "water"
    assert "river" not in dict(terms)
    assert sum(w for _, w in terms) <= 1.0 + 1e-9


def test_terms_keep_any_script_and_fold_strips_accents():
    assert terms("Données du Café, 東京! it's well-known") == ["données", "du", "café", "東京", "it's", "well-known"]
    assert words("Données du Café") == ["donn", "es", "du", "caf"]  # why RM3 and vocabularies use terms
    assert [fold(w) for w in ("données", "naïve", "東京", "river")] == ["donnees", "naive", "東京", "river"]


def test_rm3_expands_with_accented_terms_whole_and_not_the_querys_own_words():
    from types import SimpleNamespace

    coll = SimpleNamespace(fingerprint="accents-test", passage_texts=lambda: [
        "le café des données", "données ouvertes du café", "river bank water", "cafe crème"])
    found = dict(rm3_terms("Cafe", ["le café des données", "données ouvertes du café"], coll, n=5))
    assert "données" in found and max(found, key=found.get) == "données"
    assert not {"café", "cafe", "caf", "donn", "es"} & set(found)  # the query's own word, accents aside


def _probe_space(texts, feedback):
    """Just what the perturbation probes read: the collection's passages and the ranker's top passages."""
    from types import SimpleNamespace

    coll = SimpleNamespace(fingerprint=f"probe-{hash(tuple(texts))}", passage_texts=lambda: list(texts))
    return SimpleNamespace(collection=coll, encode=lambda qs: np.zeros((len(qs), 4), np.float32),
                           top=lambda q, k: (np.zeros((1, len(feedback))), np.array([feedback])))


def test_random_feedback_term_adds_one_of_rm3s_candidate_terms_of_the_top_passages():
    space = _probe_space(["River water flows", "the river bank", "stock market crash"], feedback=[0, 1])
    out = feedback_term_suggestions(space, "River", n=10, seed=3)
    assert sorted(out) == ["River bank", "River flows", "River water"]  # all three, never "the" or the query's word
    assert out == feedback_term_suggestions(space, "River", n=10, seed=3)  # seeded
    assert len(feedback_term_suggestions(space, "River", n=2, seed=3)) == 2
    assert {tuple(feedback_term_suggestions(space, "River", n=3, seed=s)) for s in range(6)} != {tuple(out)}  # the seed draws


def test_random_term_draws_from_the_collections_repeated_terms_without_feedback():
    space = _probe_space(["river water flows", "river water bank", "bank loan", "a a"], feedback=[0])
    out = random_term_suggestions(space, "River", n=10, seed=0)
    # seen twice: river, water, bank ("a": a stop word and one letter; flows, loan: once); river is the query's
    assert sorted(out) == ["River bank", "River water"]
    assert out == random_term_suggestions(space, "River", n=10, seed=0)
    assert random_term_suggestions(space, "bank", n=1, seed=1)[0] in {"bank river", "bank water"}


def test_edits_and_words():
    assert set(_edits(["a", "b"], ["x"], 3)) == {"b", "a", "x b", "a x", "x a b", "a x b", "a b x"}
    assert _edits(["a", "b"], ["x"], 2) == ["b", "a", "x b", "a x"]  # no insertion past max_words
    assert words("Who's the U.S. champion?") == ["who's", "the", "u", "s", "champion"]
    assert [c.text for c in dedupe([Candidate("A b", 1), Candidate("a  B", 0.5), Candidate("c", 0.1)], 5)] == ["A b", "c"]


def test_step_labels_merge_repeated_decodings():
    from eqi_core.figures.latent import step_labels

    path = pd.DataFrame({"step": [0, 1, 2, 3, 4], "decoded": ["hair", "hair", "hair body", "hair", "body"]})
    assert step_labels(path) == ["0-1", "", "2", "3", "4"]


def test_curve_summary_keeps_queries_with_room():
    curve = pd.DataFrame({"query_id": ["a", "a", "a", "b", "b", "b"], "step": [-1, 0, 1, -1, 0, 1],
                          "ndcg10": [0.5, 0.4, 0.8, 1.0, 1.0, 1.0], "decoder": "neural"})
    s = curve_summary(curve)
    assert s["queries"].eq(1).all()
    assert s.set_index("step")["ndcg10"].to_dict() == {-1: 0.5, 0: 0.4, 1: 0.8}


# -- a tiny trained decoder -----------------------------------------------------------------------
@pytest.fixture(scope="module")
def tiny_space(tmp_path_factory, tiny):
    from eqi_core.decoder.space import open_space
    from eqi_core.decoder.train import DecoderTraining, train_or_load_decoder
    from eqi_core.rankers import load_encoder
    from eqi_core.store import ArtifactStore

    store = ArtifactStore(tmp_path_factory.mktemp("decoder_store"))
    decoder = train_or_load_decoder(tiny, load_encoder("minilm-l6"), store, DecoderTraining(**TINY_TRAINING),
                                    progress=lambda d, t: None)
    space = open_space(tiny, store, "minilm-l6", progress=lambda d, t: None)
    return space, decoder, store


def test_tiny_decoder_follows_the_protocol_and_regenerates_training_queries(tiny_space):
    space, decoder, _ = tiny_space
    assert isinstance(decoder, QueryDecoder) and decoder.encoder_id == "minilm-l6"
    emb = space.encode(["river bank", "musical instrument"])
    out = decoder.decode(emb, n=3)
    assert len(out) == 2 and all(1 <= len(c) <= 3 for c in out)
    assert [c[0].text for c in out] == ["river bank", "musical instrument"]
    assert out[0][0].score >= out[0][-1].score  # best first


def test_space_decoders_and_word_edit_search_never_worse_than_its_seeds(tiny_space):
    space, _, _ = tiny_space
    assert set(space.decoders) == {"decoder", "decoder+rerank", "nearest-query", "word-edit search"}
    assert space.decoder("neural") is space.decoder("decoder")  # earlier names still resolve
    target = space.passage_embedding(space.collection.passages["doc_id"][0])
    seeds = [c.text for c in space.decoder("decoder").decode(target[None], n=8)[0]]
    guided = space.decoder("word-edit search").correct(target, seeds, n=3)
    seed_best = float(max(space.encode(seeds) @ target))
    assert guided[0].cosine >= seed_best - 1e-5
    assert guided[0].cosine == pytest.approx(float(space.encode([guided[0].text])[0] @ target), abs=1e-5)
    nearest = space.decoder("nearest-query").decode(target[None], n=2)[0]
    assert nearest[0].text in set(space.collection.queries["text"])
    with pytest.raises(DecoderError, match="expected one of decoder"):
        space.decoder("guided-ish")


def test_rerank_keeps_whole_hypotheses_and_is_never_worse_than_the_first(tiny_space):
    space, _, _ = tiny_space
    target = space.passage_embedding(space.collection.passages["doc_id"][0])
    rerank = space.decoder("decoder+rerank")
    beam = [c.text for c in space.decoder("decoder").decode(target[None], n=rerank.beam, beam=rerank.beam)[0]]
    out = rerank.decode(target[None], n=3)[0]
    first_cos = float(space.encode(beam[:1])[0] @ target)
    assert out[0].cosine >= first_cos - 1e-5
    assert {c.source for c in out} <= {"decoded", "corrected"}
    assert (out[0].source == "decoded") == (words(out[0].text) == words(beam[0]))
    pushed_hyps = set(beam)  # every candidate is a whole decoder output: the beam, or a feedback round's beam
    e_best = space.encode([max(beam, key=lambda t: float(space.encode([t])[0] @ target))])[0]
    push = target + (target - e_best)
    pushed_hyps |= {c.text for c in space.decoder("decoder").decode((push / np.linalg.norm(push))[None], n=4, beam=4)[0]}
    assert all(c.text in pushed_hyps for c in out)


def test_traversal_reports_every_step(tiny_space):
    from eqi_core.decoder.traversal import traverse

    space, _, _ = tiny_space
    target = space.gold_passage("q1")
    trav = traverse(space, "river bank", target, steps=4, decoder="decoder")
    assert list(trav.steps["step"]) == [0, 1, 2, 3, 4]
    assert set(trav.steps["source"]) <= {"decoded"}
    assert trav.steps["original"].iloc[0] == (words(trav.steps["decoded"].iloc[0]) == ["river", "bank"])
    assert trav.steps["target_rank"].between(1, len(space.doc_ids)).all()
    assert trav.steps["ndcg10"].between(0, 1).all()
    assert trav.points.shape == (5, 384)
    # each step's own words that the target holds, by hand with the BM25 ranker's analysis (target d1: "River bank. ...")
    import re

    from eqi_core.rankers.bm25 import make_tokenizer

    tok = make_tokenizer()
    target_text = space.collection.display_text(target)
    stems = {tok.stemmer(w) for w in re.findall(r"\b\w\w+\b", target_text.lower()) if w not in tok.stopwords}
    for text, listed in zip(trav.steps["decoded"], trav.steps["target_words"]):
        mine = [w for w in re.findall(r"\b\w\w+\b", text.lower()) if w not in tok.stopwords and tok.stemmer(w) in stems]
        assert listed == ", ".join(dict.fromkeys(mine)), text
    early = traverse(space, "river bank", target, steps=4, decoder="decoder+rerank", stop_early=True)
    if early.first_top1() is not None:
        assert early.steps["target_rank"].iloc[-1] == 1 and len(early.steps) <= 5


@pytest.mark.parametrize("query,target,steps,message", [
    ("", None, 10, "query: empty"),
    ("river bank", "no-such-doc", 10, "target passage 'no-such-doc'"),
    ("river bank", None, 0, "K = 0"),
])
def test_traversal_bad_input_is_one_line(tiny_space, query, target, steps, message):
    from eqi_core.decoder.traversal import traverse

    space, _, _ = tiny_space
    with pytest.raises(DecoderError, match=message) as err:
        traverse(space, query, target or space.gold_passage("q1"), steps)
    assert "\n" not in str(err.value)


def test_checkpoint_for_another_encoder_is_refused(tiny_space, tmp_path):
    from eqi_core.decoder.neural import load_decoder
    from eqi_core.rankers import load_encoder

    _, decoder, _ = tiny_space
    folder = tmp_path / "ckpt"
    shutil.copytree(decoder.card["_folder"], folder)
    card = json.loads((folder / "card.json").read_text(encoding="utf-8"))
    card["config"]["encoder_dim"] = 768
    card["config"]["tokenizer_sha"] = "0000"
    (folder / "card.json").write_text(json.dumps(card), encoding="utf-8")
    with pytest.raises(DecoderError, match=r"dimension 768, not 384; tokenizer 0000") as err:
        load_decoder(folder, load_encoder("minilm-l6"))
    assert "\n" not in str(err.value)
    (folder / "card.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(DecoderError, match="not a decoder card"):
        load_decoder(folder, load_encoder("minilm-l6"))
    with pytest.raises(DecoderError, match="sentence-transformers"):
        load_decoder(decoder.card["_folder"], load_encoder("minilm-l3-onnx"))


def test_training_resumes_to_the_same_weights(tiny, tmp_path):
    """Stopped after 50 steps and resumed == one uninterrupted run (batches and dropout seeded by step)."""
    import torch

    from eqi_core.decoder.neural import PrefixDecoder, config_for, encoder_vocabulary
    from eqi_core.decoder.train import DecoderTraining, token_matrix, train_decoder, training_texts
    from eqi_core.rankers import load_encoder

    enc = load_encoder("minilm-l6")
    vocab = encoder_vocabulary(enc)
    cfg = DecoderTraining(**{**TINY_TRAINING, "steps": 80, "checkpoint_every": 25, "noise": 0.1})
    texts, _ = training_texts(tiny, cfg)
    emb = enc.encode(texts)
    mcfg = config_for(enc, vocab, n_layers=1, d_ff=128)
    tokens = token_matrix(vocab, texts, mcfg)

    def fresh():
        torch.manual_seed(0)
        return PrefixDecoder(mcfg, vocab.word_embeddings)

    whole = fresh()
    train_decoder(whole, emb, tokens, cfg, None, progress=lambda d, t: None)
    work = tmp_path / "b"
    work.mkdir()
    part = fresh()
    losses = train_decoder(part, emb, tokens, cfg, work, progress=lambda d, t: None, stop_after=50)
    assert len(losses) == 50
    resumed = fresh()  # a new process: starts from the step-50 checkpoint
    losses = train_decoder(resumed, emb, tokens, cfg, work, progress=lambda d, t: None)
    assert len(losses) == 80
    for (n, a), (_, b) in zip(whole.state_dict().items(), resumed.state_dict().items()):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5, msg=n)


def test_a_step_that_decodes_the_query_again_is_drawn_on_the_query(tiny_space):
    """Every point of the map comes from one fit, and equal vectors share one point: a step whose
    text is the query (its embedding equal to the query's) sits on the query's marker, where
    UMAP's .transform had put it far away."""
    import dataclasses

    from eqi_core.decoder.traversal import traverse
    from eqi_core.projection import _first_of_equal, trajectory_map

    assert _first_of_equal(np.array([[1.0, 0.0], [0.0, 2.0], [2.0, 0.0], [0.0, 1.0], [1.0, 1.0]])).tolist() == [0, 1, 0, 1, 4]
    space, _, _ = tiny_space
    trav = traverse(space, "river bank", space.gold_passage("q1"), steps=3, decoder="decoder")
    emb = trav.decoded_emb.copy()
    emb[0] = emb[1] = trav.query_emb
    points, path = trajectory_map(space, dataclasses.replace(trav, decoded_emb=emb), k=3, n_queries=3)
    query_xy = points.loc[points["kind"] == "query", ["x", "y"]].to_numpy()[0]
    np.testing.assert_array_equal(path[["x", "y"]].to_numpy()[:2], [query_xy, query_xy])
    assert "decoded step" not in set(points["kind"]) and len(path) == 4


def test_a_map_of_fewer_than_four_points_is_linear_and_keeps_their_distances():
    """UMAP needs 4 points; a walk in a one-passage collection has 3 distinct ones (the Latent page
    raised "a map needs at least 4 points"). Three unit vectors' distances are kept exactly."""
    from eqi_core.projection import fit_map

    emb = np.array([[1, 0, 0, 0], [0, 1, 0, 0], [1, 1, 1, 0]], dtype=np.float32)
    proj = fit_map(emb, pd.DataFrame({"kind": ["a", "b", "c"]}))
    assert proj.model is None and list(proj.points["kind"]) == ["a", "b", "c"]
    unit = emb / np.linalg.norm(emb, axis=1, keepdims=True)
    xy = proj.points[["x", "y"]].to_numpy()
    for i, j in ((0, 1), (0, 2), (1, 2)):
        assert np.linalg.norm(xy[i] - xy[j]) == pytest.approx(np.linalg.norm(unit[i] - unit[j]), abs=1e-5)
    one = fit_map(emb[:1], pd.DataFrame({"kind": ["a"]}))
    assert one.points[["x", "y"]].to_numpy().tolist() == [[0.0, 0.0]]


def test_projection_and_figures(tiny_space):
    from eqi_core.decoder.traversal import traverse
    from eqi_core.figures.latent import ndcg_curve, suggestion_bars, trajectory, traversal_steps
    from eqi_core.projection import trajectory_map

    space, _, _ = tiny_space
    trav = traverse(space, "river bank", space.gold_passage("q1"), steps=3, decoder="decoder")
    points, path = trajectory_map(space, trav, k=3, n_queries=3)
    assert {"query", "target passage"} <= set(points["kind"]) and len(path) == 4
    assert np.isfinite(points[["x", "y"]].to_numpy()).all() and np.isfinite(path[["x", "y"]].to_numpy()).all()
    fig = trajectory(points, path)
    assert isinstance(fig, go.Figure) and fig.data[-1].name == "decoded steps" and len(fig.data[-1].text) == 4
    # every kind of point differs from the others in shape or size, not in colour alone
    from eqi_core.figures.latent import KIND_STYLE

    looks = [(symbol, size) for _, symbol, size in KIND_STYLE.values()]
    assert len(set(looks)) == len(looks) and {t.name: t.marker.symbol for t in fig.data[:-1]}.items() <= {
        k: s for k, (_, s, _) in KIND_STYLE.items()}.items()
    steps_fig = traversal_steps(trav.steps)
    # a click on either chart names its step first in customdata, which the page opens
    assert [c[0] for c in fig.data[-1].customdata] == [c[0] for c in steps_fig.data[1].customdata] == [0, 1, 2, 3]
    curve = pd.DataFrame({"decoder": "neural", "step": [-1, 0, 1], "ndcg10": [0.5, 0.4, 0.7], "queries": 3})
    assert len(ndcg_curve(curve).data) == 1
    sugg = pd.DataFrame({"original": [0.5, 0.5], "best@1": [0.6, 0.5], "best@3": [0.7, 0.6]}, index=["RM3", "Sampling+QD"])
    assert len(suggestion_bars(sugg).data) == 2
