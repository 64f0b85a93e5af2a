"""Shipped embeddings (assets/embeddings): used only for their exact collection, field, encoder and
path; keyed apart in the store and in the exposure map; a tampered file is a one-line error."""
import json

import numpy as np
import pytest

from eqi_core.errors import DataError
from eqi_core.rankers import dense, shipped
from eqi_core.rankers.dense import encode_texts, passage_embeddings_artifact


class CountingEncoder:
    """A deterministic stand-in for an encoder that records how many texts it encoded."""

    id = "minilm-l6"
    dim = 8

    def __init__(self):
        self.encoded = 0

    def encode(self, texts, batch_size=64, progress=None):
        self.encoded += len(texts)
        rng = np.random.default_rng([len(t) for t in texts])
        x = rng.normal(size=(len(texts), self.dim)).astype(np.float32)
        return x / np.linalg.norm(x, axis=1, keepdims=True)


@pytest.fixture
def assets(tmp_path, monkeypatch):
    root = tmp_path / "assets-embeddings"
    monkeypatch.setattr(shipped, "ASSETS", root)
    return root


def _params(collection, encoder_id="minilm-l6"):
    return {k: v for k, v in passage_embeddings_artifact(collection, encoder_id)[1].items() if k != "encoder"}


def test_shipped_vectors_replace_encoding_and_are_keyed_apart(tiny, store, assets):
    enc = CountingEncoder()
    plain_key = passage_embeddings_artifact(tiny, enc.id)[1]
    card = shipped.ship_embeddings(tiny, enc, "passages", assets / "tiny", "test")
    assert card["shape"] == [len(tiny.passages), enc.dim] and card["max_abs_difference_from_fp32"] < 1e-3
    seeded_key = passage_embeddings_artifact(tiny, enc.id)[1]
    assert seeded_key == {**plain_key, "shipped": card["sha256"]}

    enc.encoded = 0
    emb = encode_texts(enc, tiny.passage_texts(), store, _params(tiny))
    assert enc.encoded == 0  # loaded, not encoded
    reference = CountingEncoder().encode(tiny.passage_texts())
    assert emb.dtype == np.float32 and np.abs(emb - reference).max() <= card["max_abs_difference_from_fp32"]

    from eqi_core.exposure.distributed import map_params, plan_shards

    plan = plan_shards(len(tiny.queries), len(tiny.passages), 8)
    assert map_params(tiny, "minilm-l6", 10, plan)["shipped"] == [card["sha256"], None]
    assert "shipped" not in map_params(tiny, "bm25", 10, plan)
    from eqi_core.rankers import run_artifact

    assert run_artifact("minilm-l6", tiny)[1]["shipped"] == [card["sha256"], None]  # runs, heads, evaluations too
    assert "shipped" not in run_artifact("bm25", tiny)[1]


def test_other_content_or_field_is_not_seeded(tiny, store, assets):
    enc = CountingEncoder()
    shipped.ship_embeddings(tiny, enc, "passages", assets / "tiny", "test")
    card_path = assets / "tiny" / shipped.CARD
    card = json.loads(card_path.read_text(encoding="utf-8"))
    card["collection"] = "another-fingerprint"
    card_path.write_text(json.dumps(card), encoding="utf-8")
    assert dense.shipped_for(enc.id, _params(tiny)) is None
    enc.encoded = 0
    encode_texts(enc, tiny.passage_texts(), store, _params(tiny))
    assert enc.encoded == len(tiny.passages)  # encoded here
    assert dense.shipped_for(enc.id, {**_params(tiny), "field": "queries"}) is None


def test_a_tampered_vector_file_is_a_one_line_error(tiny, store, assets):
    enc = CountingEncoder()
    shipped.ship_embeddings(tiny, enc, "passages", assets / "tiny", "test")
    np.save(assets / "tiny" / shipped.VECTORS, np.zeros((len(tiny.passages), enc.dim), np.float16))
    with pytest.raises(DataError, match="does not match the sha256"):
        encode_texts(enc, tiny.passage_texts(), store, _params(tiny))
    (assets / "tiny" / shipped.CARD).write_text("{not json", encoding="utf-8")
    with pytest.raises(DataError, match="not a readable JSON card"):
        dense.shipped_for(enc.id, _params(tiny))


def test_ship_refuses_an_unknown_field(tiny, assets):
    with pytest.raises(DataError, match="expected passages or queries"):
        shipped.ship_embeddings(tiny, CountingEncoder(), "glosses", assets / "x", "test")


@pytest.mark.parametrize("encoder_id", ["minilm-l6", "minilm-l3-onnx"])
def test_the_shipped_wordnet_vectors_are_this_encoders_vectors(encoder_id):
    """The assets in the repository match a fresh encoding of a sample of the default collection
    (MiniLM-L6: the exposure example; MiniLM-L3: the coverage example's third live ranker)."""
    from eqi_core.loaders import load_collection
    from eqi_core.rankers import load_encoder

    wordnet = load_collection("wordnet")
    found = dense.shipped_for(encoder_id, _params(wordnet, encoder_id))
    assert found is not None, f"assets/embeddings has no {encoder_id} vectors for the default collection"
    vectors = found.load()
    assert vectors.shape == (len(wordnet.passages), 384)
    rows = np.random.default_rng(0).choice(len(wordnet.passages), size=100, replace=False)
    fresh = load_encoder(encoder_id).encode([wordnet.passage_texts()[i] for i in rows])
    assert np.abs(vectors[rows] - fresh).max() <= found.card["max_abs_difference_from_fp32"] + 1e-5


def test_heads_and_evaluations_are_keyed_by_the_shipped_vectors(tiny, store, assets):
    """What is built from a setup (heads, Table 2) must not be reused across vectors: a cached
    evaluation made with vectors encoded here was once returned for shipped ones."""
    from eqi_core.exposure.setup import ExposureSetup

    enc = CountingEncoder()

    def setup(ranker_id):
        return ExposureSetup(tiny, ranker_id, 10, None, enc, enc.id, None, None, store)

    before = setup("minilm-l6").params()
    card = shipped.ship_embeddings(tiny, enc, "passages", assets / "tiny", "test")
    after = setup("minilm-l6").params()
    assert "shipped" not in before
    assert after["shipped"] == {"map": [card["sha256"], None], "space": [card["sha256"], None]}
    assert setup("bm25").params()["shipped"] == {"map": None, "space": [card["sha256"], None]}


def test_a_dense_run_over_all_queries_reuses_the_logs_stored_embeddings(tiny, store):
    """The exposure map and the ranker's run share one encoding of the log (the coverage page's run
    used to encode every query again)."""
    from eqi_core.exposure.reverse import query_embeddings
    from eqi_core.rankers import run_all_queries
    from eqi_core.rankers.dense import DenseRanker

    enc = CountingEncoder()
    docs = enc.encode(tiny.passage_texts())
    ranker = DenseRanker(enc, docs, tiny.passages["doc_id"].to_numpy(dtype=object), "minilm-l6", "MiniLM-L6", "2021-08")
    stored = query_embeddings(enc, tiny, store)
    enc.encoded = 0
    run = run_all_queries(ranker, tiny, store, k=3)
    assert enc.encoded == 0  # nothing encoded again
    top = run.frame[run.frame["query_id"] == tiny.queries["query_id"].iloc[0]].sort_values("rank")
    expected = tiny.passages["doc_id"].to_numpy()[np.argsort(-(docs @ stored[0]))[:3]]
    assert top["doc_id"].tolist() == expected.tolist()
