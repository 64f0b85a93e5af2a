"""The shipped natural-language decoder on data it never saw (seeded samples, so the numbers are
fixed for a given checkpoint): held-out query-log questions (round trip) and held-out TREC DL 2019
passages (passage -> query, ranked among a seeded 30% of the collection, ties against the passage),
the decoder alone, beside the copy baseline with the same access. The full evaluation is `eqi eval-decoder --natural` (README)."""
import json

import numpy as np
import pytest

from eqi_core.decoder.space import ASSETS
from tests.conftest import SHARED_DATA, shared_dataset

pytestmark = pytest.mark.slow
FOLDER = ASSETS / "natural-minilm-l6"
# this sample measured, with the decoder trained on real text only (now natural-minilm-l6-real), F1 0.680, cosine
# 0.899 (round trip) and top-1 0.667, top-5 0.933 among the 4,374 passages of the DL19 sample (copying the first 3
# content words: top-1 0.400, top-5 0.800) without the word list, and with it (lexicon.txt.gz) F1 0.709, cosine
# 0.899, 0.13% non-words, no repeats; the default since 2026-11-27 (also trained on its predecessor's samples):
# F1 0.710, cosine 0.890, top-1 0.700, top-5 0.933, 0.13% non-words, no repeats. The bars sit a little below;
# the issue's own bars (and the full collection's numbers) are in the README
ROUND_TRIP_F1, ROUND_TRIP_COS, DL19_TOP1, DL19_TOP5 = 0.66, 0.87, 0.63, 0.87
# 40 held-out MS MARCO questions (the paper's family), the default: F1 0.784, cosine 0.886
MS_MARCO_F1, MS_MARCO_COS = 0.74, 0.85


def heldout_queries(n: int, seed: int = 11, logs: str = "*.tsv") -> list[str]:
    """Held-out questions straight from the logs (the corpus's rule), no corpus build needed."""
    from eqi_core.decoder.corpus import query_heldout
    from eqi_core.loaders.query_log import read_query_log

    texts = sorted({t.strip() for p in sorted((SHARED_DATA / "query-logs").glob(logs))
                    for t in read_query_log(p)["text"] if query_heldout(t)})
    rng = np.random.default_rng(seed)
    return [texts[i] for i in rng.permutation(len(texts))[:n]]


@pytest.fixture(scope="module")
def decoder():
    from eqi_core.decoder import load_decoder

    shared_dataset("query-logs")
    return load_decoder(FOLDER)


def test_the_card_says_what_made_it():
    card = json.loads((FOLDER / "card.json").read_text(encoding="utf-8"))
    assert card["arch"] == "bert-prefix" and card["encoder"] == "minilm-l6"
    assert card["corpus"]["queries_heldout"] > 2000 and card["trained_on"][0]["device"]
    assert card["command"].startswith("eqi train-decoder --natural")
    assert card["natural_metrics"]["settings"]["n_queries"] >= 300  # written by eqi eval-decoder --natural


def round_trip(decoder, refs: list[str]) -> tuple[float, float, list]:
    from eqi_core.decoder.evaluate import token_f1
    from eqi_core.rankers import load_encoder

    enc = load_encoder("minilm-l6")
    emb = enc.encode(refs)
    out = [c[0].text for c in decoder.decode(emb, n=1)]
    f1 = float(np.mean([token_f1(r, o) for r, o in zip(refs, out)]))
    cos = float(np.mean(np.einsum("ij,ij->i", emb, enc.encode(out))))
    return f1, cos, list(zip(refs, out))


def test_round_trip_on_held_out_questions(decoder):
    f1, cos, pairs = round_trip(decoder, heldout_queries(40))
    assert f1 >= ROUND_TRIP_F1 and cos >= ROUND_TRIP_COS, (f1, cos, pairs[:5])
    print(f"round trip F1 {f1:.3f} cosine {cos:.3f}")


def test_round_trip_on_held_out_ms_marco_questions(decoder):
    """The paper's own family (its Table 1: F1 0.750, cosine 0.960 under GTR-base): on all 590
    held-out MS MARCO questions the default measured F1 0.765 and cosine 0.909 (README)."""
    f1, cos, pairs = round_trip(decoder, heldout_queries(40, logs="msmarco-*.tsv"))
    assert f1 >= MS_MARCO_F1 and cos >= MS_MARCO_COS, (f1, cos, pairs[:5])
    print(f"MS MARCO round trip F1 {f1:.3f} cosine {cos:.3f}")


def test_decoded_words_are_real_words(decoder, dl19_sample):
    """The issue's fluency bars on this sample: non-words <= 1% against a vocabulary the decoder's own
    word list does not define (every query of the logs, every passage of the DL19 sample, WordNet's
    lemmas), outputs repeating a content word <= 2%."""
    from eqi_core.decoder.natural_eval import fluency, lexicon_of, wordnet_words
    from eqi_core.loaders.query_log import read_query_log
    from eqi_core.rankers import load_encoder

    enc = load_encoder("minilm-l6")
    refs = heldout_queries(40)
    texts = dl19_sample.passage_texts()
    picked = [texts[i] for i in np.random.default_rng(5).permutation(len(texts))[:30]]
    out = [c[0].text for c in decoder.decode(enc.encode(refs + picked), n=1)]
    logs = [t for p in sorted((SHARED_DATA / "query-logs").glob("*.tsv")) for t in read_query_log(p)["text"]]
    got = fluency(out, lexicon_of(logs + texts, wordnet_words()))
    print(f"fluency {got}")
    assert got["nonword"] <= 0.01 and got["repeat"] <= 0.02, (got, out[:5])


def test_passage_to_query_on_held_out_dl19_passages_beats_copying(decoder, shared_store, dl19_sample):
    from eqi_core.decoder.corpus import passage_heldout
    from eqi_core.decoder.natural_eval import first_content_words
    from eqi_core.decoder.space import open_space

    coll = dl19_sample
    held = sorted(d for d in coll.passages["doc_id"] if passage_heldout("trec-dl19-passage", d))
    space = open_space(coll, shared_store, "minilm-l6", FOLDER, exclude_doc_ids=held, progress=lambda d, t: None)
    docs = [held[i] for i in np.random.default_rng(5).permutation(len(held))[:30]]
    idx = np.array([space.passage_index(d) for d in docs])
    decoded = [c[0].text for c in space.decoder("decoder").decode(space.ranker.doc_embeddings[idx], n=1)]
    texts = coll.passage_texts()
    copied = [first_content_words(texts[i]) for i in idx]
    ranks = space.ranks(space.encode(decoded), idx)
    copy_ranks = space.ranks(space.encode(copied), idx)
    print(f"DL19 top-1 {np.mean(ranks <= 1):.3f} top-5 {np.mean(ranks <= 5):.3f}; "
          f"first 3 content words {np.mean(copy_ranks <= 1):.3f} / {np.mean(copy_ranks <= 5):.3f}")
    assert np.mean(ranks <= 1) >= DL19_TOP1 and np.mean(ranks <= 5) >= DL19_TOP5, ranks
    assert np.mean(ranks <= 5) > np.mean(copy_ranks <= 5)
