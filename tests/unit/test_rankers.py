"""Rankers checked against brute-force references computed here, on small fixtures."""
import math
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from eqi_core.errors import DataError
from eqi_core.rankers import build_ranker, ranker_spec, run_all_queries
from eqi_core.rankers.bm25 import BM25WithNewPassage, make_tokenizer
from eqi_core.rankers.dense import exact_topk
from eqi_core.rankers.splade import rowwise_topk

ROOT = Path(__file__).resolve().parents[2]


def bm25_reference(docs, query, k1=0.9, b=0.4):
    """Lucene BM25 by the textbook formula, on bm25s' own tokens (stop words, Snowball)."""
    tok = make_tokenizer()
    doc_tokens = tok.tokenize(docs, return_as="string", show_progress=False)
    q_tokens = make_tokenizer().tokenize([query], return_as="string", show_progress=False)[0]
    n, avgdl = len(docs), sum(len(t) for t in doc_tokens) / len(docs)
    df = Counter(w for t in doc_tokens for w in set(t))
    scores = []
    for t in doc_tokens:
        tf, s = Counter(t), 0.0
        for w in set(q_tokens):
            if tf[w]:
                idf = math.log(1 + (n - df[w] + 0.5) / (df[w] + 0.5))
                s += idf * tf[w] / (tf[w] + k1 * (1 - b + b * len(t) / avgdl))
        scores.append(s)
    return np.array(scores)


@pytest.mark.parametrize("query", ["river bank", "bank loan interest", "musical instrument", "bread"])
def test_bm25_matches_brute_force(tiny, store, query):
    ranker = build_ranker("bm25", tiny, store)
    ref = bm25_reference(tiny.passage_texts(), query)
    run = ranker.search([query], k=12).frame
    expected = {tiny.passages["doc_id"][i]: ref[i] for i in np.flatnonzero(ref > 0)}
    assert set(run["doc_id"]) == set(expected)
    for doc_id, score in zip(run["doc_id"], run["score"]):
        assert score == pytest.approx(expected[doc_id], rel=1e-4)
    assert list(run["score"]) == sorted(run["score"], reverse=True)


def test_bm25_with_a_pasted_passage_matches_the_formula_on_the_grown_collection(tiny):
    """A pasted passage changes N, the mean length and its terms' df: ranks come from the collection
    with it appended (textbook BM25 over all of it), ties against it; its own new word counts."""
    docs, log = tiny.passage_texts(), tiny.queries["text"].tolist()
    new = "A zebra crossed the river bank; the bank gave the zebra a loan"
    grown = BM25WithNewPassage.prepare(docs, log)

    def expected_rank0(query):
        ref = bm25_reference(docs + [new], query)
        return int((ref[:-1] >= ref[-1]).sum()) if ref[-1] > 0 else None

    by_hand = {i: expected_rank0(q) for i, q in enumerate(log)}
    assert any(r is not None for r in by_hand.values()) and any(r is None for r in by_hand.values())
    q, rank0 = grown.exposing(new, n=3)
    assert dict(zip(q.tolist(), rank0.tolist())) == {i: r for i, r in by_hand.items() if r is not None and r < 3}
    assert list(zip(rank0, q)) == sorted(zip(rank0, q))  # by rank, then query
    unseen = ["zebra", "zebra loan", "musical instrument", ""]
    assert grown.ranks(new, unseen).tolist() == [1.0, 1.0, np.inf, np.inf]  # only the pasted passage has "zebra"
    assert grown.ranks(new, ["bank loan"])[0] == expected_rank0("bank loan") + 1


def test_bm25_top_with_a_pasted_passage_is_the_grown_collections_ranking(tiny):
    """A logged query's results with the passage appended: textbook BM25 over the grown collection,
    score descending then index (the appended passage last among equals), unmatched passages left out."""
    docs, log = tiny.passage_texts(), tiny.queries["text"].tolist()
    new = "A zebra crossed the river bank; the bank gave the zebra a loan"
    grown = BM25WithNewPassage.prepare(docs, log)
    checked = 0
    for i, query in enumerate(log):
        ref = bm25_reference(docs + [new], query)
        want = [j for j in sorted(range(len(ref)), key=lambda j: (-ref[j], j)) if ref[j] > 0][:5]
        idx, scores = grown.top(new, i, 5)
        assert idx.tolist() == want, query
        assert scores == pytest.approx(ref[want], rel=1e-4)
        if len(docs) in want:  # the pasted passage is listed where exposing() ranks it
            q, rank0 = grown.exposing(new, n=len(docs) + 1)
            assert want.index(len(docs)) == dict(zip(q.tolist(), rank0.tolist()))[i]
            checked += 1
    assert checked


def test_bm25_with_a_pasted_passage_indexes_each_text_once_and_never_serves_another(tiny, monkeypatch):
    """The page asks for a pasted passage's exposure, then what a selected query shows, on every
    rerun: the grown index is built once for the same text, and another text gets its own."""
    import bm25s

    docs, log = tiny.passage_texts(), tiny.queries["text"].tolist()
    grown = BM25WithNewPassage.prepare(docs, log)
    built = []
    real_index = bm25s.BM25.index
    monkeypatch.setattr(bm25s.BM25, "index", lambda self, *a, **k: built.append(1) or real_index(self, *a, **k))
    first, other = "the river bank gave a zebra a loan", "a piano keyboard on the river bank"
    for text in (first, first, other, first):
        for i, query in enumerate(log):
            ref = bm25_reference(docs + [text], query)
            want = [j for j in sorted(range(len(ref)), key=lambda j: (-ref[j], j)) if ref[j] > 0][:5]
            assert grown.top(text, i, 5)[0].tolist() == want, (text, query)
        grown.exposing(text, n=3)
    assert len(built) == 3  # first, other, first again: one build each time the text changes


def test_bm25_ties_at_the_cut_go_to_the_lower_index_and_many_rows_match_one_by_one():
    """Five identical passages tie; the top 3 are the first three, whatever the CPU (bm25s's own
    partition chose among ties), and a batch of texts gets what each text gets alone."""
    import bm25s

    from eqi_core.rankers.bm25 import bm25_topk

    docs = ["a piano keyboard"] + ["the river bank"] * 5 + ["bank loan interest", "river delta", "grand piano"]
    tok = make_tokenizer()
    retriever = bm25s.BM25(k1=0.9, b=0.4)
    retriever.index(tok.tokenize(docs, return_as="ids", show_progress=False), show_progress=False)
    scores, idx = bm25_topk(retriever, tok, ["river bank"], 3)
    assert idx.tolist() == [[1, 2, 3]] and scores[0, 0] == scores[0, 2] > 0
    texts = ["river bank", "piano", "zebra", "bank loan", "river"]
    many_s, many_i = bm25_topk(retriever, tok, texts, 9)
    for j, text in enumerate(texts):
        one_s, one_i = bm25_topk(retriever, tok, [text], 9)
        assert many_i[j].tolist() == one_i[0].tolist() and np.allclose(many_s[j], one_s[0])
        ref = bm25_reference(docs, text)
        expected = [i for i in np.lexsort((np.arange(len(docs)), -ref)) if ref[i] > 0]
        assert [i for i in many_i[j] if i >= 0] == expected
    assert many_i[2].tolist() == [-1] * 9  # no passage has "zebra"


def test_bm25_unknown_terms_return_nothing(tiny, store):
    run = build_ranker("bm25", tiny, store).search({"z": "zebra migration", "e": ""}, k=5)
    assert len(run) == 0


def test_bm25_index_reused_from_store(tiny, store):
    build_ranker("bm25", tiny, store)
    build_ranker("bm25", tiny, store)
    assert len(store.list("bm25")) == 1


@pytest.mark.parametrize("block_bytes", [1 << 10, 1 << 14, 1 << 26])
def test_exact_topk_matches_argsort(block_bytes):
    rng = np.random.default_rng(7)
    docs = rng.standard_normal((1000, 16)).astype(np.float32)
    queries = rng.standard_normal((37, 16)).astype(np.float32)
    scores, idx = exact_topk(queries, docs, 25, block_bytes=block_bytes)
    full = queries @ docs.T
    ref = np.argsort(-full, axis=1)[:, :25]
    np.testing.assert_array_equal(idx, ref)
    np.testing.assert_allclose(scores, np.take_along_axis(full, ref, 1), rtol=1e-5, atol=1e-5)


def test_exact_topk_k_larger_than_collection():
    docs = np.eye(3, dtype=np.float32)
    scores, idx = exact_topk(np.array([[0.1, 0.9, 0.5]], dtype=np.float32), docs, 10)
    assert idx.tolist() == [[1, 2, 0]] and scores.shape == (1, 3)


def test_rowwise_topk():
    s, i = rowwise_topk(np.array([[0.1, 3.0, 2.0, 0.0]]), 2)
    assert i.tolist() == [[1, 2]] and s.tolist() == [[3.0, 2.0]]


@pytest.mark.slow
@pytest.mark.parametrize("ranker_id", ["minilm-l6", "minilm-l3-onnx"])
def test_dense_ranker_matches_brute_force(tiny, store, ranker_id):
    ranker = build_ranker(ranker_id, tiny, store)
    emb = ranker.doc_embeddings
    assert emb.dtype == np.float32 and np.allclose(np.linalg.norm(emb, axis=1), 1, atol=1e-5)
    queries = dict(zip(tiny.queries["query_id"], tiny.queries["text"]))
    run = ranker.search(queries, k=5)
    q = ranker.encoder.encode(list(queries.values()))
    ref = np.argsort(-(q @ emb.T), axis=1)[:, :5]
    for row, qid in enumerate(queries):
        assert run.for_query(qid)["doc_id"].tolist() == [tiny.passages["doc_id"][j] for j in ref[row]]
    # the river query finds the river-bank passage first
    assert run.for_query("q1")["doc_id"].iloc[0] in {"d1", "d4"}


@pytest.mark.slow
def test_onnx_pooling_matches_models_own_pooled_output():
    from eqi_core.rankers import load_encoder

    enc = load_encoder("minilm-l3-onnx")
    texts = ["a bank of the river", "short", "a financial institution that accepts deposits"]
    from tokenizers import Tokenizer

    padding = Tokenizer.from_str(enc.tokenizer.to_str())
    padding.enable_padding(pad_id=0, pad_token="[PAD]")
    e = padding.encode_batch(texts)
    ids = np.array([x.ids for x in e])
    mask = np.array([x.attention_mask for x in e])
    pooled = enc.session.run(["461"], {"input_ids": ids, "attention_mask": mask})[0]
    pooled /= np.linalg.norm(pooled, axis=1, keepdims=True)
    np.testing.assert_allclose(enc.encode(texts, batch_size=2), pooled, atol=1e-5)


@pytest.mark.slow
def test_splade_matches_brute_force(tiny, store):
    ranker = build_ranker("splade-tiny", tiny, store)
    docs = ranker.doc_matrix.toarray()
    assert docs.shape == (12, 30522) and (docs >= 0).all()
    q = ranker.encoder.encode_sparse(["river bank"]).toarray()
    ref = (q @ docs.T)[0]
    run = ranker.search(["river bank"], k=4).frame
    order = np.argsort(-ref)[:4]
    assert run["doc_id"].tolist() == [tiny.passages["doc_id"][j] for j in order]
    np.testing.assert_allclose(run["score"], ref[order], rtol=1e-4)
    # expansion: the query vector has weight on 'river' and 'bank'
    top_terms = {ranker.encoder.token(t) for t in np.argsort(-q[0])[:10]}
    assert {"river", "bank"} <= top_terms


def test_run_all_queries_cached(tiny, store):
    ranker = build_ranker("bm25", tiny, store)
    run = run_all_queries(ranker, tiny, store, k=3)
    assert set(run.query_ids) == {"q1", "q2", "q3", "q4"}  # q5 matches nothing
    assert run_all_queries(ranker, tiny, store, k=3).meta["artifact"] == run.meta["artifact"]


def test_unknown_ranker():
    with pytest.raises(DataError, match="unknown; expected one of bm25"):
        ranker_spec("tfidf")


def test_local_sentence_transformers_folder(tiny, store, tmp_path):
    import shutil

    from eqi_core.encoders import minilm_l6_dir

    folder = tmp_path / "my-model"
    shutil.copytree(minilm_l6_dir(), folder)
    ranker = build_ranker(f"st:{folder}", tiny, store)
    assert ranker.family == "dense" and ranker.doc_embeddings.shape == (12, 384)
    with pytest.raises(DataError, match="cannot load a sentence-transformers model|not a sentence-transformers"):
        build_ranker(f"st:{tmp_path / 'empty'}", tiny, store)


@pytest.mark.slow
def test_splade_sparse_encoder_gives_the_papers_vectors():
    """sentence-transformers' SparseEncoder == SPLADE's definition computed here by hand:
    max over non-padding tokens of log(1 + relu(MLM logits))."""
    import numpy as np
    import torch
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    from eqi_core.encoders import SpladeEncoder, splade_tiny_dir

    texts = ["a financial institution that accepts deposits", "sloping land beside a body of water", "hair"]
    ours = SpladeEncoder(splade_tiny_dir()).encode_sparse(texts, batch_size=2).toarray()
    tok = AutoTokenizer.from_pretrained(str(splade_tiny_dir()), local_files_only=True)
    mlm = AutoModelForMaskedLM.from_pretrained(str(splade_tiny_dir()), local_files_only=True).eval()
    with torch.inference_mode():
        batch = tok(texts, padding=True, truncation=True, max_length=256, return_tensors="pt")
        act = torch.log1p(torch.relu(mlm(**batch).logits)) * batch["attention_mask"].unsqueeze(-1)
        reference = act.max(dim=1).values.numpy()
    assert ours.shape == reference.shape and np.abs(ours - reference).max() < 1e-5


@pytest.mark.slow
def test_default_encoder_runs_an_onnx_export_of_the_same_weights():
    """MiniLM-L6 encodes through onnxruntime (an fp32 export of its weights, built once in the store):
    the same vectors as sentence-transformers to 1e-5, and the path is in the embeddings' store key."""
    import numpy as np

    from eqi_core.rankers import load_encoder
    from eqi_core.rankers.dense import embeddings_artifact

    enc = load_encoder("minilm-l6")
    assert enc.backend == "onnxruntime-fp32-export"
    texts = ["bank", "a financial institution that accepts deposits and channels the money into lending",
             "sloping land (especially the slope beside a body of water)", "x " * 400]  # the last one is truncated
    ours = enc.encode(texts, batch_size=2)
    reference = enc.model.encode(texts, normalize_embeddings=True, convert_to_numpy=True)
    assert np.abs(ours - reference).max() < 1e-5
    assert embeddings_artifact("minilm-l6", {"field": "passages"})[1]["path"] == "onnxruntime-fp32-export"
    # exported with eager attention (no SDPA guards in the graph), from a copy: the live model keeps its own
    import onnx

    ops = {node.op_type for node in onnx.load(enc.runtime.model_file).graph.node}
    assert "MatMul" in ops and "IsNaN" not in ops
    assert enc.model[0].auto_model.config._attn_implementation != "eager"
    assert "path" not in embeddings_artifact("minilm-l3-onnx", {"field": "passages"})[1]
    # what it reads: 256 word pieces; "x " * 400 has 400 + [CLS] + [SEP]
    assert enc.max_pieces == 256 and enc.word_pieces(texts).tolist()[::3] == [3, 402]


def test_token_batches_cut_by_word_pieces():
    """Consecutive batches along the length order: at most max_rows texts, rows x longest within the
    budget, a text longer than the budget alone (by hand)."""
    from eqi_core.encoders import token_batches

    lengths = np.array([3, 1, 2, 2, 400, 300])
    order = np.argsort(lengths, kind="stable")  # [1, 2, 3, 0, 5, 4]
    assert [b.tolist() for b in token_batches(order, lengths, 8, 64)] == [[1, 2, 3], [0], [5], [4]]  # 4 x 3 > 8
    assert [b.tolist() for b in token_batches(order, lengths, 512, 2)] == [[1, 2], [3, 0], [5], [4]]
    assert [b.tolist() for b in token_batches(order, lengths, 10_000, 64)] == [[1, 2, 3, 0, 5, 4]]
    assert token_batches(np.array([], dtype=np.int64), np.array([], dtype=np.int64), 512, 64) == []


@pytest.mark.slow
def test_bulk_encoding_on_every_core_gives_the_one_call_vectors():
    """Many batches run one per core on a single-threaded session; one text runs on the all-core
    session: the same vectors either way (to float rounding)."""
    from eqi_core.rankers import load_encoder

    enc = load_encoder("minilm-l6")
    texts = [f"a {'very ' * (i % 40)}long gloss number {i}" for i in range(120)]
    together = enc.encode(texts)
    alone = np.vstack([enc.encode([t]) for t in texts[::17]])
    assert np.abs(together[::17] - alone).max() < 1e-6


class _CountingEncoder:
    """Word pieces = words + 2, a limit of 5: passages of 4+ words are cut."""

    id, max_pieces, calls = "fake", 5, 0

    def word_pieces(self, texts):
        _CountingEncoder.calls += 1
        return np.array([len(t.split()) + 2 for t in texts])


def test_passages_cut_counted_once_per_collection_and_encoder(tmp_path):
    from eqi_core.encoders import cut_note, cut_passages, passages_cut
    from eqi_core.loaders import load_collection
    from eqi_core.store import ArtifactStore
    from tests.conftest import TINY_BEIR

    stats = cut_passages(_CountingEncoder(), ["a b c d", "a", "a b c d e f", "a b"])
    assert stats == {"encoder": "fake", "limit": 5, "cut": 2, "of": 4, "median_pieces": 5}
    assert cut_note(stats) == ("fake reads at most 5 word pieces: 2 of 4 passages (50%) are longer (median 5), "
                               "and only their start counts for it")
    assert cut_note({**stats, "cut": 0}) is None and cut_passages(object(), ["a"]) is None
    collection, store = load_collection(f"beir:{TINY_BEIR}"), ArtifactStore(tmp_path)
    _CountingEncoder.calls = 0
    first = passages_cut(collection, _CountingEncoder(), store)
    assert passages_cut(collection, _CountingEncoder(), store) == first and _CountingEncoder.calls == 1
    lengths = np.array([len(t.split()) + 2 for t in collection.passage_texts()])
    assert first["cut"] == int((lengths > 5).sum()) and first["of"] == len(collection.passages)


class _Unread:
    """An encoder whose tokenizer reads each word as a piece, "#"-words as unknown, and drops "~"."""

    id = "fake"

    def unread_pieces(self, text):
        words = [w for w in text.split() if w != "~"]
        return len(words), [w for w in words if w.startswith("#")]


def test_unread_note_by_hand():
    """No note for a text read whole or nearly so (under a tenth unknown); one for a tenth or more,
    most, all, and none read at all; none for an encoder without word pieces."""
    from eqi_core.encoders import unread_note

    assert unread_note(_Unread(), "a b c d e f g h i j") is None
    assert unread_note(_Unread(), " ".join(["#x"] + list("abcdefghij"))) is None  # 1 of 11
    assert unread_note(_Unread(), "#x a b c d e f g h i", "query") == (
        "fake reads “#x” as unknown ([UNK], outside its vocabulary): 1 of the query's 10 word pieces, which its "
        "vector misses")
    assert unread_note(_Unread(), "#x #y #x a", "query") == (
        "fake cannot read much of this query: 3 of its 4 word pieces (“#x”, “#y”) are outside its vocabulary "
        "([UNK]), so its vector says little about the query")
    assert unread_note(_Unread(), "#x", "passage") == (
        "fake cannot read this passage: “#x” is outside its vocabulary ([UNK]), so its vector, and every result "
        "made from it, says nothing about the passage")
    assert unread_note(_Unread(), "#x #x").startswith("fake cannot read this text: “#x” is outside")
    assert unread_note(_Unread(), "#a\x95b #\x95").startswith("fake cannot read this text: “#ab”, “#” are")  # no C1 controls
    assert unread_note(_Unread(), " ".join(f"#{i}" for i in range(7))).endswith(
        "“#0”, “#1”, “#2”, “#3”, “#4” and 2 more are outside its vocabulary ([UNK]), so its vector, and every "
        "result made from it, says nothing about the text")
    assert unread_note(_Unread(), "~ ~") == ("fake finds no word piece in this text (only characters it drops): its "
                                             "vector is the empty text's and says nothing about it")
    assert unread_note(_Unread(), "", "passage") == (  # a passage without text (Cranfield has two)
        "this passage is empty: fake's vector for it is the empty text's and says nothing about it")
    assert unread_note(object(), "😀") is None and unread_note(None, "😀") is None


@pytest.mark.parametrize("encoder_id", ["minilm-l6", "minilm-l3-onnx", "splade-tiny"])
def test_every_word_piece_encoder_finds_the_spans_it_cannot_read(encoder_id):
    """The shipped tokenizers read an emoji, and a word holding one, as [UNK]; Cyrillic and accents
    they read; a zero-width space has no piece at all."""
    from eqi_core.rankers import load_encoder

    enc = load_encoder(encoder_id)
    assert enc.unread_pieces("café 😀 recipes") == (3, ["😀"])
    assert enc.unread_pieces("😀😀 🎉") == (2, ["😀😀", "🎉"])
    assert enc.unread_pieces("мир")[1] == [] and enc.unread_pieces("\u200b") == (0, [])


def _unit(x):
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def test_inner_product_index_equals_exact_topk_for_few_probes():
    from eqi_core.rankers.dense import InnerProductIndex, exact_topk

    rng = np.random.default_rng(0)
    log = _unit(rng.normal(size=(5000, 64)))
    probes = _unit(rng.normal(size=(3, 64)))
    s_exact, i_exact = exact_topk(probes, log, 50)
    index = InnerProductIndex(log)
    s_ix, i_ix = index.search(probes, 50)
    assert len(index.candidates(probes[0], 50)) < 1000  # the int8 bound prunes most of the 5,000
    assert [set(r) for r in i_ix] == [set(r) for r in i_exact]
    np.testing.assert_allclose(s_ix, s_exact, atol=1e-6)
    assert (np.diff(s_ix, axis=1) <= 0).all()  # best first


def test_inner_product_index_separates_scores_closer_than_int8_can():
    """Vectors whose scores differ by 1e-5 (int8 codes cannot tell them apart): the re-scoring in
    fp32 still puts them in exact order, and the top-k is exactly the fp32 one."""
    from eqi_core.rankers.dense import InnerProductIndex

    probe = np.zeros(8, dtype=np.float32)
    probe[0] = 1.0
    log = np.zeros((200, 8), dtype=np.float32)
    log[:, 0] = 0.9 + 1e-5 * np.arange(200)  # increasing score by row
    log[:, 1] = np.sqrt(1 - log[:, 0] ** 2)
    scores, idx = InnerProductIndex(log).search(probe, 10)
    assert idx[0].tolist() == list(range(199, 189, -1))
    np.testing.assert_allclose(scores[0], log[199:189:-1, 0], rtol=0, atol=1e-7)


def test_inner_product_index_candidates_hold_the_top_k_when_scores_crowd():
    """3,000 near-duplicates (scores within ~1e-3 of each other, far inside the int8 bound) and the
    grouped bound (more than 40 k vectors): every vector of the float64 top k is a candidate."""
    from eqi_core.rankers.dense import InnerProductIndex

    rng = np.random.default_rng(5)
    base = _unit(rng.normal(size=(1, 48)))
    log = _unit(base + 1e-3 * rng.normal(size=(3000, 48)).astype(np.float32))
    index = InnerProductIndex(log)
    for probe in (base[0], _unit(base + 0.1 * rng.normal(size=(1, 48)))[0]):
        for k in (1, 10, 60):
            exact = log.astype(np.float64) @ probe.astype(np.float64)
            top = np.argsort(-exact, kind="stable")[:k]
            candidates = index.candidates(probe, k)
            assert set(top) <= set(candidates.tolist())


def test_inner_product_index_int8_bound_by_hand_and_fallbacks():
    from eqi_core.rankers.dense import InnerProductIndex, exact_topk, int8_code, int8_codes

    log = np.array([[3.0, 4.0], [0.0, 1.0]], dtype=np.float32)
    codes, scale, err, norm = int8_codes(log)
    # row 0: scale 4/127, 3 * 127/4 = 95.25 -> 95, coding error 3 - 95 * 4/127 = 1/127; row 1 exact
    assert codes.tolist() == [[95, 127], [0, 127]]
    np.testing.assert_allclose(scale, [4 / 127, 1 / 127])
    rounding = 2 * 2.0 ** -23  # d 2^-23 ||x|| of the fp32 re-scoring, per unit of probe norm
    np.testing.assert_allclose(err, [1 / 127 + rounding * 5, rounding * 1], rtol=1e-12)
    np.testing.assert_allclose(norm, [4 / 127 * np.hypot(95, 127), 1.0], rtol=1e-12)
    assert (err >= [1 / 127 + rounding * 5, rounding]).all()  # rounded up, never down
    code, s, e = int8_code(np.array([0.0, 2.0], dtype=np.float32))
    assert code.tolist() == [0, 127] and s == pytest.approx(2 / 127) and 0 <= e < 1e-250
    probe = np.array([0.0, 2.0], dtype=np.float32)  # scores 8 and 2, bounds +-0.016: row 1 cannot be first
    index = InnerProductIndex(log)
    assert index.candidates(probe, 1).tolist() == [0]
    assert index.candidates(probe, 2).tolist() == [0, 1]
    rng = np.random.default_rng(1)
    big = rng.normal(size=(300, 16)).astype(np.float32) * 1e5  # large values: int8 codes scale with them
    many = rng.normal(size=(20, 16)).astype(np.float32)  # many probes: the blocked GEMM
    for vectors, probes in ((big, many[:2]), (_unit(big), many)):
        s, i = InnerProductIndex(vectors).search(probes, 7)
        s_exact, i_exact = exact_topk(probes, vectors, 7)
        assert [set(r) for r in i] == [set(r) for r in i_exact]


@pytest.mark.slow
def test_default_encoder_and_decoders_never_import_sentence_transformers():
    """MiniLM-L6 on its ONNX path reads its dimension, reading length, tokenizer and word embeddings
    from its folder's files, so searching, counting word pieces and loading the shipped decoders (the
    natural one and the WordNet lemma one) never import sentence-transformers (4-6 s; every dense CLI
    command waited for it), and what is read equals what the loaded model holds."""
    import json
    import subprocess
    import sys

    import torch
    from tokenizers import Tokenizer

    from eqi_core.encoders import SentenceTransformerEncoder, _hf_unread, _hf_word_pieces, minilm_l6_dir

    script = (
        "import sys\n"
        "from eqi_core.rankers import load_encoder\n"
        "from eqi_core.decoder import load_decoder\n"
        "enc = load_encoder('minilm-l6')\n"
        "enc.encode(['bank', 'a sloping bank of a river'])\n"
        "enc.word_pieces(['bank']); enc.unread_pieces('bank ☃')\n"
        "load_decoder(); load_decoder('assets/decoders/wordnet-minilm-l6')\n"
        "print(enc._model is None, 'sentence_transformers' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, encoding="utf-8",
                         check=True, cwd=str(ROOT)).stdout.split()
    assert out == ["True", "False"]

    enc = SentenceTransformerEncoder(minilm_l6_dir(), "minilm-l6", onnx=True)
    texts = ["bank", "Crème brûlée über ∼10 ☃ 日本語", "", "x" * 300, "x " * 400]
    read = (enc.dim, enc.max_pieces, enc.word_pieces(texts).tolist(), [enc.unread_pieces(t) for t in texts],
            enc.word_embeddings(), json.loads(enc.fast_tokenizer().to_str()))
    model = enc.model  # now loaded
    backend = Tokenizer.from_str(model.tokenizer.backend_tokenizer.to_str())
    backend.no_truncation()
    backend.no_padding()
    assert read[:4] == (model.get_embedding_dimension(), model.max_seq_length,
                        _hf_word_pieces(model.tokenizer, texts).tolist(), [_hf_unread(model.tokenizer, t) for t in texts])
    assert torch.equal(read[4], model[0].auto_model.get_input_embeddings().weight.float())
    assert read[5] == json.loads(backend.to_str())
    assert read[3][1][1] and read[3][3][1] == ["x" * 300]  # unknown spans are found both ways


@pytest.mark.slow
def test_an_onnx_encoder_refuses_a_folder_that_is_not_mean_pooled(tmp_path):
    """A folder whose config files say CLS pooling is read by sentence-transformers, and the ONNX path
    (mean pooling) refuses it in one line instead of exporting other vectors."""
    import json

    from eqi_core.encoders import SentenceTransformerEncoder, mean_pooled_pipeline, minilm_l6_dir

    src = minilm_l6_dir()
    for f in src.iterdir():
        if f.is_file():
            (tmp_path / f.name).symlink_to(f)
    (tmp_path / "1_Pooling").mkdir()
    pooling = json.loads((src / "1_Pooling" / "config.json").read_text(encoding="utf-8"))
    pooling.update(pooling_mode_mean_tokens=False, pooling_mode_cls_token=True)
    (tmp_path / "1_Pooling" / "config.json").write_text(json.dumps(pooling), encoding="utf-8")
    assert mean_pooled_pipeline(src) == (384, 256) and mean_pooled_pipeline(tmp_path) is None
    with pytest.raises(DataError, match="an ONNX export needs Transformer \\+ mean Pooling"):
        SentenceTransformerEncoder(tmp_path, "cls-pooled", onnx=True)
    assert SentenceTransformerEncoder(tmp_path, "cls-pooled").dim == 384  # the torch path reads it as it is


def test_the_collection_pages_dense_search_does_not_import_torch(tmp_path):
    """The first page's imports and a one-query MiniLM-L6 search (ONNX encoding, numpy's top-k) stay
    clear of torch (1.7 s to import): the exposure heads and the decoders load it when used."""
    import subprocess
    import sys

    from eqi_core.rankers import load_encoder
    from tests.conftest import TINY_BEIR

    load_encoder("minilm-l6").encode(["bank"])  # its ONNX export in the session's store (made once, with torch)
    script = (
        "import sys\n"
        "import eqi_core.exposure.setup, eqi_core.exposure.result_logs\n"
        "from eqi_core.loaders import load_collection\n"
        "from eqi_core.rankers import build_ranker\n"
        "from eqi_core.store import ArtifactStore\n"
        f"ranker = build_ranker('minilm-l6', load_collection({str(TINY_BEIR)!r}), ArtifactStore({str(tmp_path)!r}))\n"
        "print(ranker.search(['river bank'], k=3).frame['doc_id'].tolist()[0])\n"
        "print('torch' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, encoding="utf-8",
                         check=True, cwd=str(ROOT)).stdout.splitlines()
    assert out == ["d1", "False"]
