"""The natural-language decoder's parts on tiny models: warm start, the key/value cache, beam search
constraints, exact resumption, the corpus's held-out splits, the evaluation's baselines and fluency
counts (hand-computed), and one-line errors for bad checkpoints and bad decode input."""
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from typer.testing import CliRunner

from eqi_core.decoder.base import DecoderError
from eqi_core.decoder.bert import BertDecoderConfig, BertPrefixDecoder, beam_search, warm_start_layers
from eqi_core.decoder.corpus import CorpusRecipe, build_corpus, crops, passage_heldout, query_heldout, read_corpus
from eqi_core.decoder.natural import NaturalTraining, train_loop
from eqi_core.decoder.natural_eval import first_content_words, fluency, lexicon_of, top_cosine_words
from eqi_core.errors import DataError
from tests.conftest import ROOT, TINY_BEIR

VOCAB, HIDDEN = 40, 32


def bert_state(layers=2, hidden=HIDDEN, d_ff=64, vocab=VOCAB, seed=0) -> dict:
    """A random BERT encoder state dict under Hugging Face's names (what warm_start reads)."""
    g = torch.Generator().manual_seed(seed)
    r = lambda *shape: torch.randn(*shape, generator=g) * 0.1
    state = {"embeddings.word_embeddings.weight": r(vocab, hidden), "embeddings.position_embeddings.weight": r(64, hidden),
             "embeddings.token_type_embeddings.weight": r(2, hidden), "embeddings.LayerNorm.weight": 1 + r(hidden),
             "embeddings.LayerNorm.bias": r(hidden)}
    for i in range(layers):
        p = f"encoder.layer.{i}."
        for name, shape in [("attention.self.query", (hidden, hidden)), ("attention.self.key", (hidden, hidden)),
                            ("attention.self.value", (hidden, hidden)), ("attention.output.dense", (hidden, hidden)),
                            ("intermediate.dense", (d_ff, hidden)), ("output.dense", (hidden, d_ff))]:
            state[p + name + ".weight"], state[p + name + ".bias"] = r(*shape), r(shape[0])
        for name in ("attention.output.LayerNorm", "output.LayerNorm"):
            state[p + name + ".weight"], state[p + name + ".bias"] = 1 + r(hidden), r(hidden)
    return state


def tiny_model(seed=0, dropout=0.0, n_styles=0) -> BertPrefixDecoder:
    state = bert_state(seed=seed)
    cfg = BertDecoderConfig(encoder_id="tiny", encoder_dim=16, vocab_size=VOCAB, tokenizer_sha="x", bos_id=1, eos_id=2,
                            pad_id=0, word_dim=HIDDEN, n_out=VOCAB - 3, hidden=HIDDEN, n_layers=2, n_heads=4, d_ff=64,
                            n_prefix=2, max_len=8, dropout=dropout, n_styles=n_styles)
    torch.manual_seed(seed)
    model = BertPrefixDecoder(cfg, state["embeddings.word_embeddings.weight"], torch.arange(2, VOCAB))  # EOS + words
    assert model.warm_start(state) == 2 * 16 + 2 + 2  # every layer tensor, embedding norm, positions, token type
    return model.eval()


def test_warm_start_copies_the_encoder_layers():
    model = tiny_model()
    state = bert_state()
    torch.testing.assert_close(model.blocks[1].inter.weight, state["encoder.layer.1.intermediate.dense.weight"])
    torch.testing.assert_close(model.pos.weight[:5], state["embeddings.position_embeddings.weight"][:5])
    torch.testing.assert_close(model.token_type, state["embeddings.token_type_embeddings.weight"][0])


def test_a_deeper_decoder_is_stacked_from_the_encoder_layers_in_order():
    assert warm_start_layers(12, 6) == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5]
    assert warm_start_layers(3, 2) == [0, 0, 1] and warm_start_layers(4, 6) == [0, 1, 2, 3]
    state = bert_state(layers=2)
    cfg = BertDecoderConfig(encoder_id="tiny", encoder_dim=16, vocab_size=VOCAB, tokenizer_sha="x", bos_id=1, eos_id=2,
                            pad_id=0, word_dim=HIDDEN, n_out=VOCAB - 3, hidden=HIDDEN, n_layers=4, n_heads=4, d_ff=64,
                            n_prefix=2, max_len=8)
    model = BertPrefixDecoder(cfg, state["embeddings.word_embeddings.weight"], torch.arange(2, VOCAB))
    assert model.warm_start(state) == 4 * 16 + 2 + 2  # every decoder layer got a pretrained one
    for block, source in zip(model.blocks, (0, 0, 1, 1)):
        torch.testing.assert_close(block.query.weight, state[f"encoder.layer.{source}.attention.self.query.weight"])
        torch.testing.assert_close(block.out_norm.bias, state[f"encoder.layer.{source}.output.LayerNorm.bias"])


def test_cached_decoding_equals_a_full_forward():
    model = tiny_model()
    emb = torch.nn.functional.normalize(torch.randn(3, 16), dim=1)
    seq = torch.tensor([[1, 5, 9, 7], [1, 3, 3, 4], [1, 8, 6, 5]])
    full = torch.log_softmax(model.logits(model.hidden(emb, seq)), dim=-1)
    logp, caches = model.start(emb)
    torch.testing.assert_close(logp, full[:, 0], atol=1e-5, rtol=1e-5)
    for t in range(1, seq.shape[1]):
        logp, caches = model.step(model.out_index[seq[:, t]], t, caches)
        torch.testing.assert_close(logp, full[:, t], atol=1e-5, rtol=1e-5)


def test_beam_of_one_is_greedy_and_no_repeat_is_kept():
    model = tiny_model(seed=3)
    emb = torch.nn.functional.normalize(torch.randn(2, 16), dim=1)
    none = torch.zeros(len(model.out_ids), dtype=torch.bool)
    got = beam_search(model, emb, 1, torch.zeros(0, dtype=torch.long), none)
    for row in range(2):  # greedy by full recomputation
        seq = [1]
        for _ in range(model.cfg.max_len - 1):
            logits = model.logits(model.hidden(emb[row:row + 1], torch.tensor([seq])))[0, -1]
            if len(seq) == 1:
                logits[model.out_index[2]] = -1e9  # the end is never first
            tok = int(model.out_ids[int(logits.argmax())])
            if tok == 2:
                break
            seq.append(tok)
        assert got[row][0][0] == seq[1:]
    every = torch.ones(len(model.out_ids), dtype=torch.bool)
    every[model.out_index[2]] = False
    for hyps in beam_search(model, emb, 4, torch.zeros(0, dtype=torch.long), every):
        for ids, _ in hyps:
            assert len(ids) == len(set(ids))  # each no-repeat token at most once


def test_a_few_row_beam_search_runs_the_sampling_products_and_finds_the_same_hypotheses(monkeypatch):
    """Up to ``FEW_BEAM_ROWS`` rows (one text), beam search multiplies as sampling does (torch at one
    thread, constant products); a larger batch keeps torch's own products. Both find the same beams."""
    from eqi_core.decoder import bert

    model = tiny_model(seed=5)
    emb = torch.nn.functional.normalize(torch.randn(2, 16, generator=torch.Generator().manual_seed(8)), dim=1)
    none = torch.zeros(len(model.out_ids), dtype=torch.bool)
    first = torch.zeros(0, dtype=torch.long)
    seen = []
    original = bert._constant_product
    monkeypatch.setattr(bert, "_constant_product", lambda *a: seen.append(1) or original(*a))
    few = bert.beam_search(model, emb, 3, first, none)
    assert seen  # 6 rows: the sampling products
    seen.clear()
    monkeypatch.setattr(bert, "FEW_BEAM_ROWS", 4)
    many = bert.beam_search(model, emb, 3, first, none)
    assert not seen  # 6 rows over the limit: torch's own products
    assert [[ids for ids, _ in row] for row in few] == [[ids for ids, _ in row] for row in many]
    for a, b in zip(few, many):
        assert [sc for _, sc in a] == pytest.approx([sc for _, sc in b], abs=1e-4)


def tiny_corpus(seed: int):
    """40 unit embeddings with token rows [BOS, 2-6 words, EOS, PAD...]; every other one a query."""
    rng = np.random.default_rng(seed)
    emb = rng.standard_normal((40, 16)).astype(np.float32)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    tokens = torch.zeros((40, 9), dtype=torch.int32)
    for i in range(40):
        n = 2 + i % 5
        tokens[i, 0], tokens[i, 1:n + 1], tokens[i, n + 1] = 1, torch.from_numpy(rng.integers(3, VOCAB, n)), 2
    is_query = np.arange(40) % 2 == 0
    return emb, tokens, is_query


@pytest.mark.parametrize("word_dropout", [0.0, 0.3])
def test_training_resumes_bit_for_bit(tmp_path, word_dropout):
    emb, tokens, is_query = tiny_corpus(0)
    cfg = NaturalTraining(steps=6, batch_size=8, warmup=2, checkpoint_every=100, lr=1e-3, word_dropout=word_dropout)
    straight = tiny_model(dropout=0.1)
    straight_losses = train_loop(straight, emb, tokens, is_query, cfg, mask_id=3)
    resumed = tiny_model(dropout=0.1)
    train_loop(resumed, emb, tokens, is_query, cfg, tmp_path, stop_after=3, mask_id=3)
    assert (tmp_path / "state.pt").is_file()
    again = tiny_model(dropout=0.1)
    losses = train_loop(again, emb, tokens, is_query, cfg, tmp_path, mask_id=3)
    assert len(losses) == 6
    for (name, a), b in zip(straight.state_dict().items(), again.state_dict().values()):
        assert torch.equal(a, b), name
    if word_dropout:  # the masked inputs change the trajectory from the first step
        plain = train_loop(tiny_model(dropout=0.1), emb, tokens, is_query, NaturalTraining(**{**cfg.__dict__, "word_dropout": 0.0}))
        assert plain[0] != straight_losses[0]


def test_weight_average_is_kept_and_resumes_bit_for_bit(tmp_path, monkeypatch):
    """``average``: the finished decoder holds the running average of the weights after each step,
    decay min(d, (1 + t) / (10 + t)) (checked by hand from the recorded weights); a stopped and
    resumed run ends with the same average."""
    from eqi_core.decoder import natural

    emb, tokens, is_query = tiny_corpus(2)
    cfg = NaturalTraining(steps=5, batch_size=8, warmup=2, checkpoint_every=100, lr=1e-2, average=0.5)
    seen, original = [], natural.update_average

    def record(average, model, decay, step):
        seen.append({k: p.detach().clone() for k, p in model.named_parameters()})
        original(average, model, decay, step)

    monkeypatch.setattr(natural, "update_average", record)
    averaged = tiny_model(dropout=0.1)
    start = {k: p.detach().clone() for k, p in averaged.named_parameters()}
    train_loop(averaged, emb, tokens, is_query, cfg)
    monkeypatch.setattr(natural, "update_average", original)
    assert len(seen) == 5
    name = "prefix.weight"
    expected = start[name]
    for t, weights in enumerate(seen):  # d: 0.1, 0.18, 0.25, 0.31, 0.36 (capped at 0.5)
        d = min(0.5, (1 + t) / (10 + t))
        expected = d * expected + (1 - d) * weights[name]
    torch.testing.assert_close(dict(averaged.named_parameters())[name].detach(), expected)
    assert not torch.equal(expected, seen[-1][name])  # not the last weights
    train_loop(tiny_model(dropout=0.1), emb, tokens, is_query, cfg, tmp_path, stop_after=2)
    again = tiny_model(dropout=0.1)
    train_loop(again, emb, tokens, is_query, cfg, tmp_path)
    for (k, a), b in zip(averaged.state_dict().items(), again.state_dict().values()):
        assert torch.equal(a, b), k


def test_styles_train_on_each_texts_kind_and_decoding_asks_for_a_query(tmp_path):
    """A decoder with styles adds style 0 (query-log texts) or 1 (passage sentences) to its prefix:
    training uses each row's own kind, decoding (``start``) style 0 unless asked; the style vectors
    start at zero (the decoder without styles) and learn; it resumes bit-for-bit like the others."""
    emb, tokens, is_query = tiny_corpus(1)
    plain, styled = tiny_model(), tiny_model(n_styles=2)
    x, ids = torch.from_numpy(emb[:4]), tokens[:4].long()
    with torch.no_grad():  # zero style vectors: the same model as without styles
        torch.testing.assert_close(styled.loss(x, ids, style=torch.tensor([0, 1, 0, 1])), plain.loss(x, ids))
        styled.style.copy_(torch.randn(2, HIDDEN))
        mixed = styled.hidden(x[:2], ids[:2, :-1], torch.tensor([0, 1]))  # each row its own style
        torch.testing.assert_close(mixed[:1], styled.hidden(x[:1], ids[:1, :-1], 0))
        torch.testing.assert_close(mixed[1:], styled.hidden(x[1:2], ids[1:2, :-1], 1))
        assert float(styled.loss(x[:2], ids[:2], style=torch.tensor([1, 1]))) != float(
            styled.loss(x[:2], ids[:2], style=torch.tensor([0, 0])))
        torch.testing.assert_close(styled.start(x)[0], styled.start(x, 0)[0])
        assert not torch.allclose(styled.start(x, 1)[0], styled.start(x, 0)[0])
    cfg = NaturalTraining(steps=6, batch_size=8, warmup=2, checkpoint_every=100, lr=1e-2, styles=True)
    straight = tiny_model(dropout=0.1, n_styles=2)
    train_loop(straight, emb, tokens, is_query, cfg)
    assert float(straight.style.detach().abs().sum()) > 0 and not torch.allclose(straight.style[0], straight.style[1])
    train_loop(tiny_model(dropout=0.1, n_styles=2), emb, tokens, is_query, cfg, tmp_path, stop_after=3)
    again = tiny_model(dropout=0.1, n_styles=2)
    train_loop(again, emb, tokens, is_query, cfg, tmp_path)
    for (name, a), b in zip(straight.state_dict().items(), again.state_dict().values()):
        assert torch.equal(a, b), name


def test_a_styled_checkpoint_round_trips_and_styles_are_refused_without_them(tmp_path):
    from eqi_core.decoder.natural import NaturalDecoderModel, read_natural_card, save_natural

    model = tiny_model(n_styles=2)
    with torch.no_grad():
        model.style.copy_(torch.randn(2, HIDDEN))
    save_natural(model, tmp_path, {"arch": "bert-prefix"}, half=False)
    cfg = BertDecoderConfig(**read_natural_card(tmp_path)["config"])
    assert cfg.n_styles == 2
    from safetensors.torch import load_file

    again = BertPrefixDecoder(cfg, model.word_emb, model.out_ids)
    again.load_state_dict(load_file(str(tmp_path / "decoder.safetensors")))
    assert torch.equal(again.style, model.style)

    class Tok:  # just enough of a tokenizer for the wrapper
        def get_vocab(self):
            return {str(i): i for i in range(VOCAB)}

        def id_to_token(self, i):
            return f"w{i}"

        def decode(self, ids, skip_special_tokens=True):
            return " ".join(f"w{i}" for i in ids)

    dec = NaturalDecoderModel(again, Tok())
    assert dec.style == 0 and dec.with_style("sentence").style == 1 and dec.style == 0
    emb = np.random.default_rng(2).standard_normal((2, 16)).astype(np.float32)
    assert dec.decode(emb, n=1, beam=2) == dec.with_style("query").decode(emb, n=1, beam=2)
    with pytest.raises(DecoderError, match="expected one of query, sentence"):
        dec.with_style("poem")
    with pytest.raises(DecoderError, match="trained without styles") as err:
        NaturalDecoderModel(tiny_model(), Tok()).with_style("query")
    assert "\n" not in str(err.value)


def test_word_dropout_masks_inputs_not_targets():
    model = tiny_model()
    emb = torch.nn.functional.normalize(torch.randn(2, 16, generator=torch.Generator().manual_seed(1)), dim=1)
    ids = torch.tensor([[1, 5, 6, 7, 2], [1, 8, 9, 2, 0]])
    with torch.no_grad():
        assert float(model.loss(emb, ids, ids[:, :-1])) == float(model.loss(emb, ids))
        masked = ids[:, :-1].clone()
        masked[0, 2] = 3
        h = model.hidden(emb, masked)
        keep = ids[:, 1:] != 0
        expected = torch.nn.functional.cross_entropy(model.logits(h[keep]), model.out_index[ids[:, 1:][keep]])
        torch.testing.assert_close(model.loss(emb, ids, masked), expected)
        assert float(model.loss(emb, ids, masked)) != float(model.loss(emb, ids))


def test_held_out_splits_are_by_text_and_id():
    assert query_heldout("What is a Bank?") == query_heldout("what is a bank")  # by normalised text
    shares = np.mean([query_heldout(f"query number {i}") for i in range(4000)])
    assert 0.03 < shares < 0.07
    assert np.mean([passage_heldout("c", str(i)) for i in range(4000)]) == pytest.approx(0.1, abs=0.02)


def test_crops_are_sentences_within_bounds():
    rng = np.random.default_rng(0)
    text = "Tiny. The river bank is a sloping land. " + " ".join(f"w{i}" for i in range(40)) + ". Done here now"
    out = crops(text, 5, rng, 3, 10)
    assert "The river bank is a sloping land" in out and "Done here now" in out
    assert all(3 <= len(c.split()) <= 10 for c in out) and "Tiny" not in out


def test_corpus_never_trains_on_held_out_items(tmp_path):
    log = tmp_path / "log.tsv"
    lines = [f"q{i}\twhat is thing number {i}" for i in range(300)] + ["d1\twhat is thing number 1"]
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "c.parquet"
    summary = build_corpus(CorpusRecipe([str(log)], {"tiny": f"beir:{TINY_BEIR}"}, {"tiny": 5}, passage_share=0.5), out)
    table, meta = read_corpus(out)
    assert meta["digest"] == summary["digest"] and json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))["queries_train"] > 0
    train_q = set(table[(table["split"] == "train") & (table["kind"] == "query")]["text"])
    held = set(table[table["split"] == "heldout"]["text"])
    assert held and not train_q & held and len(train_q) + len(held) == 300  # the duplicate line counted once
    from eqi_core.loaders import load_collection

    coll = load_collection(f"beir:{TINY_BEIR}")
    texts = dict(zip(coll.passages["doc_id"], coll.passage_texts()))
    held_docs = [d for d in texts if passage_heldout("tiny", d, 0.5)]
    sentences = table[table["kind"] == "passage"]["text"]
    assert held_docs and not any(s in texts[d] for s in sentences for d in held_docs if len(s.split()) > 3 and
                                 not any(s in texts[o] for o in texts if o not in held_docs))
    with pytest.raises(DataError, match="not a decoder corpus"):
        read_corpus(log)


def test_copy_baselines_and_fluency_hand_cases():
    assert first_content_words("The bank of the river is a sloping land") == "bank river sloping"

    class Words:  # an 'encoder' whose embedding of a word is one-hot on its length
        def encode(self, texts, batch_size=0):
            out = np.zeros((len(texts), 8), dtype=np.float32)
            for i, t in enumerate(texts):
                out[i, min(len(t), 7)] = 1
            return out

    target = np.zeros(8, dtype=np.float32)
    target[5], target[4] = 1.0, 0.5
    assert top_cosine_words("river bank sloping land", target, Words(), 2) == "river bank"  # 5 letters, then the first 4
    lex = lexicon_of(["what is a river bank", "banking"])
    f = fluency(["what is a rivver", "bank bank river", "2021 river", "river banking bank"], lex)
    assert f["nonword"] == pytest.approx(1 / 12)  # 'rivver'; numbers are not counted as non-words
    assert f["repeat"] == pytest.approx(1 / 4) and f["words"] == pytest.approx(3.0)
    assert f["repeat_inflected"] == pytest.approx(2 / 4)  # 'banking bank': one word in two forms
    assert fluency(["a river-bank", "a rivver-bank"], lex)["nonword"] == pytest.approx(1 / 4)  # compounds by their parts
    glued = fluency(["a river´bank", "banking river₂", "river’s bank", "“river” 45°c h₂o", "bank°c"], lex | {"s", "c", "h", "o"})
    assert glued["nonword"] == pytest.approx(4 / 15)  # "river´bank", "bank°c": known words glued into made-up ones
    assert fluency(["river\u2010bank river’s"], lex | {"s"})["nonword"] == 0  # a typeset hyphen or apostrophe joins
    assert fluency(["zürich nf-κb"], lex | {"z", "rich", "nf", "b"})["nonword"] == 0  # a letter of any script is no sign


@pytest.mark.parametrize("word,glued", [
    ("proteinα2", True), ("withα", True), ("alphaβ9", True), ("cell−α1γs", True), ("interleukinβ1", True),
    ("ptenα3αsα2α23αlα3αs", True),  # an acronym, then more runs of Greek than any real word holds
    ("pparγ", False), ("tnfα", False), ("pdgfrα", False), ("hif-1α", False), ("α2β1", False), ("nf-κb", False),
    ("receptor-α", False), ("domain1α", False), ("β-catenin", False), ("il-1β", False), ("αvβ3/αvβ5-specific", False),
    ("copies/µl", False), ("zürich", False), ("naïve", False), ("(tnf)-α", False)])
def test_letters_of_another_script_glued_to_a_word(word, glued):
    """Greek letters follow acronyms, numbers and dashes in real text (SciFact's passages), never an
    English word of four letters or more: "proteinα2" is a decoder's gluing, "pparγ" a gene's name."""
    from eqi_core.decoder.base import glues_other_script, made_up_words

    english = frozenset({"protein", "with", "alpha", "cell", "interleukin", "receptor", "domain", "copies", "tnf"})
    assert glues_other_script(word, english) is glued
    assert bool(made_up_words(f"the {word}", frozenset({"the"}) | set(re.findall(r"[a-z0-9]+", word)), english)) is glued


class PieceTok:
    """A tokenizer of whole pieces, decoded as WordPiece does: a space around every token."""

    def __init__(self, pieces: dict[int, str]):
        self.pieces = pieces

    def get_vocab(self):
        return {str(i): i for i in range(VOCAB)}

    def id_to_token(self, i):
        return self.pieces.get(i, f"w{i}")

    def decode(self, ids, skip_special_tokens=True):
        return " ".join(self.id_to_token(i) for i in ids)


def test_decoded_text_is_detokenized():
    from eqi_core.decoder.natural import NaturalDecoderModel

    tok = PieceTok({1: "what", 2: "'", 3: "s", 4: "(", 5: "wi", 6: "-", 7: "fi"})
    assert NaturalDecoderModel(tiny_model(), tok).text([1, 2, 3, 5, 6, 7, 4]) == "what's wi-fi"


def test_natural_checkpoint_for_another_encoder_is_refused(tmp_path):
    from eqi_core.decoder.natural import load_natural, save_natural
    from eqi_core.rankers import load_encoder

    model = tiny_model()
    save_natural(model, tmp_path, {"arch": "bert-prefix"})
    with pytest.raises(DecoderError, match=r"trained for encoder 'tiny'.*dimension 16, not 384") as err:
        load_natural(tmp_path, load_encoder("minilm-l6"))
    assert "\n" not in str(err.value)
    (tmp_path / "card.json").write_text("{}", encoding="utf-8")
    with pytest.raises(DecoderError, match="not a natural decoder card"):
        load_natural(tmp_path, load_encoder("minilm-l6"))


@pytest.mark.parametrize("content,args,message", [
    (b"", ["--output", "OUT"], "no text in the file"),
    (b"\x00\x01binary", ["--output", "OUT"], "not a text file"),
    (b"\xff\xfe caf\xe9", ["--output", "OUT"], "not UTF-8 text"),
    (b"a passage\n", [], "also give --output"),
])
def test_decode_file_bad_input_is_one_line(tmp_path, content, args, message):
    from eqi_core.cli import app

    src = tmp_path / "in.txt"
    src.write_bytes(content)
    args = [a.replace("OUT", str(tmp_path / "out.jsonl")) for a in args]
    result = CliRunner().invoke(app, ["decode", "--input", str(src), *args])
    assert isinstance(result.exception, DataError) and message in str(result.exception)
    assert "\n" not in str(result.exception)
    assert not (tmp_path / "out.jsonl").exists()


def test_decode_file_keeps_the_files_line_numbers(tmp_path):
    from eqi_core.cli import _decode_inputs

    src = tmp_path / "in.txt"
    src.write_text("what is a river bank\n\n  \nhow do vaccines work\n", encoding="utf-8")
    assert _decode_inputs(None, src, tmp_path / "out.jsonl") == [(1, "what is a river bank"), (4, "how do vaccines work")]
    # as Windows' Notepad saves it (a byte-order mark, CRLF), and gzip-compressed: the same texts
    windows = "\ufeffwhat is a river bank\r\n\r\n  \r\nhow do vaccines work\r\n".encode()
    src.write_bytes(windows)
    assert _decode_inputs(None, src, tmp_path / "out.jsonl") == [(1, "what is a river bank"), (4, "how do vaccines work")]
    import gzip

    (tmp_path / "in.txt.gz").write_bytes(gzip.compress(windows))
    assert _decode_inputs(None, tmp_path / "in.txt.gz", tmp_path / "out.jsonl")[0] == (1, "what is a river bank")


def test_decoding_sets_aside_a_hypothesis_saying_a_token_twice_while_the_beam_holds_another(monkeypatch):
    """The word list stops a content word said twice, not a dash or a number: "floor - - $3" came out
    of a walk on DL19. The beam's next hypothesis takes its place; a beam of stutters is kept."""
    from eqi_core.decoder import natural
    from eqi_core.decoder.natural import NaturalDecoderModel

    beams = [[([1, 2, 2, 3], -1.0), ([1, 2, 3], -1.5), ([1, 4, 5], -2.0)], [([1, 2, 2, 3], -1.0), ([4, 4], -2.0)]]
    monkeypatch.setattr(natural, "beam_search", lambda model, x, *a, **k: beams[:len(x)])
    dec = NaturalDecoderModel(tiny_model(), PieceTok({1: "floor", 2: "-", 3: "$3", 4: "per", 5: "foot"}))
    got = dec.decode(np.ones((2, 16), np.float32), n=2)
    assert [c.text for c in got[0]] == ["floor - $3", "floor per foot"]
    assert [c.text for c in got[1]] == ["floor - - $3", "per per"]  # nothing else in the beam: kept as decoded


def test_decoding_puts_a_hypothesis_stopping_mid_phrase_after_those_that_do_not(monkeypatch):
    """"in alaska, spruce trees are found in the shape of": the first output is the beam's best
    hypothesis that ends where a phrase can, a whole decoder output, never a cut one."""
    from eqi_core.decoder import natural
    from eqi_core.decoder.natural import NaturalDecoderModel

    beams = [[([1, 5, 2, 3], -1.0), ([1, 5, 2], -1.5), ([1, 4], -2.0)], [([1, 5, 2, 3], -1.0), ([1, 5, 1, 5, 3], -1.2)],
             [([6, 7], -1.0), ([7, 6], -1.1)]]
    monkeypatch.setattr(natural, "beam_search", lambda model, x, *a, **k: beams[:len(x)])
    dec = NaturalDecoderModel(tiny_model(), PieceTok({1: "spruce", 2: "shape", 3: "of", 4: "trees", 5: "in", 6: "stick",
                                                      7: "with"}))
    got = dec.decode(np.ones((3, 16), np.float32), n=3)
    assert [c.text for c in got[0]] == ["spruce in shape", "spruce trees", "spruce in shape of"]
    assert [c.text for c in got[1]] == ["spruce in shape of", "spruce in spruce in of"]  # all cut short: the model's order
    assert [c.text for c in got[2]] == ["stick with", "with stick"]  # three words or fewer: a phrasal verb, kept first


def test_rerank_sets_aside_a_stutter_unless_every_candidate_stutters():
    from eqi_core.decoder.rerank import fluent

    assert fluent(["cost of concrete floor - - $3", "cost of concrete floor from $3"]) == ["cost of concrete floor from $3"]
    assert fluent(["the the cost"]) == ["the the cost"]  # never an empty pool
    assert fluent(["what is a. a. milne", "a . . . b"]) == ["what is a. a. milne", "a . . . b"]  # initials, dots


def test_rerank_sets_aside_a_hypothesis_stopping_mid_phrase_never_cuts_one():
    from eqi_core.decoder.base import ends_dangling
    from eqi_core.decoder.rerank import fluent

    assert [ends_dangling(t) for t in ("a layer of hair or", "cost of living,", "what is the", "log in", "the",
                                       "a hair or covering")] == [True, True, True, False, False, False]
    pool = ["what is a thermoplastic type of plastics that is often used as a", "what is a thermoplastic used in"]
    assert fluent(pool) == ["what is a thermoplastic used in"]  # "in" ends phrasal verbs: kept
    assert fluent(pool[:1]) == pool[:1]  # the only hypothesis stays whole, never trimmed
    assert fluent(["stick with", "with stick"]) == ["stick with", "with stick"]  # a phrasal verb is no cut sentence
    assert fluent(["cost of living,", "cost of living"]) == ["cost of living"]  # a trailing comma is, however short
    known = {"what", "is", "a", "gloop", "used", "as", "the", "type"}  # a known-word ending beats a made-up word
    assert fluent(["what is a gloop used as a", "what is a glorp type"], known) == ["what is a gloop used as a"]


def test_traversal_never_counts_the_original_query():
    from eqi_core.decoder.traversal import Traversal

    steps = pd.DataFrame({"step": [0, 1, 2], "decoded": ["river bank", "bank of river", "sloping land"],
                          "source": "decoded", "original": [True, False, False], "target_rank": [1, 4, 1]})
    trav = Traversal("river bank", None, "d1", "linear", "decoder", steps, *(np.zeros((3, 2)),) * 2, np.zeros(2), np.zeros(2))
    assert trav.first_top1()["step"] == 2 and trav.best()["step"] == 2


def test_unseen_passages_follow_each_decoders_training_split(tiny):
    """Evaluation pools hold only passages the decoder never trained on: its own collection's
    held-out gold passages, the natural corpus's hashed held-out share of a collection it cut into
    sentences (whatever the spec's spelling), or every passage of a collection it never read."""
    from eqi_core.decoder.corpus import passage_heldout
    from eqi_core.decoder.space import unseen_passages
    from eqi_core.decoder.train import DecoderTraining, heldout_split

    ids = tiny.passages["doc_id"].tolist()
    # a corpus key under which the tiny collection has some held-out passages (a tenth is hashed out)
    key = next(k for k in (f"tiny-{i}" for i in range(100)) if 0 < sum(passage_heldout(k, d) for d in ids) < len(ids))
    natural = {"corpus": {"sources": {key: {"spec": f"beir:{TINY_BEIR}/../{TINY_BEIR.name}#train"},
                                      "other": {"spec": "wordnet:full"}}}}
    want = [d for d in ids if passage_heldout(key, d)]
    assert unseen_passages(natural, tiny) == want
    assert unseen_passages({"collection_fingerprint": tiny.fingerprint}, tiny) == \
        heldout_split(tiny, DecoderTraining().heldout_share)[1]
    assert unseen_passages({"corpus": {"sources": {"w": {"spec": "wordnet:full"}}}}, tiny) == ids


def test_second_stage_starts_from_the_trained_decoder(tmp_path, monkeypatch, capsys):
    """``--init``: the weights and output vocabulary come from the given decoder (not the encoder's
    layers), queries only means no passage sentence is read, the card carries the first stage, and a
    mismatched shape or a missing --natural is refused with one line."""
    import torch

    from eqi_core.cli import app
    from eqi_core.decoder.natural import load_natural, train_natural
    from eqi_core.decoder.space import shipped_natural_decoder
    from eqi_core.rankers import load_encoder
    from eqi_core.store import ArtifactStore

    log = tmp_path / "log.tsv"
    log.write_text("".join(f"q{i}\twhat is thing number {i}\n" for i in range(40)), encoding="utf-8")
    corpus = tmp_path / "c.parquet"
    build_corpus(CorpusRecipe([str(log)], {"tiny": f"beir:{TINY_BEIR}"}, {"tiny": 3}, passage_share=0.5), corpus)
    encoder, first = load_encoder("minilm-l6"), shipped_natural_decoder("minilm-l6")
    cfg = NaturalTraining(steps=2, batch_size=4, lr=1e-9, warmup=1, query_share=1.0)
    store = ArtifactStore(tmp_path / "store")
    assert train_natural(corpus, encoder, store, cfg, init=first, stop_after=1) is None  # stopped with a checkpoint
    dec = train_natural(corpus, encoder, store, cfg, init=first, command="eqi test")
    assert [c["steps"] for c in dec.card["trained_on"]] == [1, 1]  # each sitting's own steps
    before = load_natural(first, encoder).model.state_dict()
    for name, value in dec.model.state_dict().items():  # lr 1e-9: the first stage's weights, saved again
        torch.testing.assert_close(value, before[name], atol=2e-3, rtol=1e-3, msg=name)
    assert torch.equal(dec.model.out_ids, before["out_ids"])
    card = dec.card
    assert card["init"]["folder"] == str(first) and card["init"]["command"].startswith("eqi train-decoder --natural")
    assert card["warm_start"].startswith("the trained decoder") and card["command"] == "eqi test"
    with pytest.raises(DataError, match=r"a decoder with n_layers 6.*asks for n_layers 2") as err:
        train_natural(corpus, encoder, ArtifactStore(tmp_path / "store"), NaturalTraining(steps=1, batch_size=4, n_layers=2),
                      init=first)
    assert "\n" not in str(err.value)
    result = CliRunner().invoke(app, ["train-decoder", "--init", str(first)])
    assert isinstance(result.exception, DataError) and "only the natural decoder" in str(result.exception)
    with pytest.raises(DataError, match="a decoder without styles; this training asks for styles"):
        train_natural(corpus, encoder, ArtifactStore(tmp_path / "store"), NaturalTraining(steps=1, batch_size=4, styles=True),
                      init=first)

    def no_wordnet():
        raise DataError("WordNet 3.0 database files (index.sense) not found; tried /nowhere")

    monkeypatch.setattr("eqi_core.decoder.natural_eval.wordnet_words", no_wordnet)  # a machine without WordNet
    dec = train_natural(corpus, encoder, ArtifactStore(tmp_path / "bare"), NaturalTraining(steps=1, batch_size=4, lr=1e-9,
                                                                                          warmup=1, query_share=1.0), init=first)
    folder = Path(dec.card["_folder"])
    assert (folder / "decoder.safetensors").is_file() and not (folder / "lexicon.txt.gz").is_file()
    assert "word list was not written (WordNet 3.0 database files (index.sense) not found)" in capsys.readouterr().err


@pytest.mark.parametrize("products", ["onnxruntime", "numpy"])
def test_sampling_products_agree_with_torch_and_follow_weight_changes(products, monkeypatch):
    """Inside ``sampling_products`` (sampling) the decoder's products run on cached transposed
    weights (a layer's query, key and value side by side, as one product), through onnxruntime or
    numpy: the same log-probabilities as torch's own products, and a weight changed in place is
    seen, a fused one too; torch runs at one thread there and gets its own count back after."""
    from eqi_core.decoder import bert
    from eqi_core.decoder.bert import sampling_products

    monkeypatch.setattr(bert, "PRODUCTS", products)
    model = tiny_model()
    emb = torch.nn.functional.normalize(torch.randn(3, 16, generator=torch.Generator().manual_seed(4)), dim=1)
    seq = torch.tensor([[1, 5, 9, 7], [1, 3, 3, 4], [1, 8, 6, 5]])

    def logp():
        return torch.log_softmax(model.logits(model.hidden(emb, seq)), dim=-1)

    torch_path = logp().detach()  # gradient on: torch's products
    before = torch.get_num_threads()
    with torch.no_grad(), sampling_products():
        numpy_path = logp()
        torch.testing.assert_close(numpy_path, torch_path, atol=1e-5, rtol=1e-5)
        model.blocks[0].inter.weight.mul_(2.0)
        model.blocks[1].key.weight.mul_(1.5)
        model.blocks[1].value.bias.add_(0.5)
        model.out_bias.add_(torch.linspace(0, 1, len(model.out_bias)))
        changed = logp()
        assert (changed - numpy_path).abs().max() > 1e-3
        with sampling_products():
            assert torch.get_num_threads() == 1
        assert torch.get_num_threads() == 1  # the outer use still runs
    assert torch.get_num_threads() == before
    torch.testing.assert_close(changed, logp().detach(), atol=1e-5, rtol=1e-5)


def test_a_constant_product_in_a_forked_child_computes_with_numpy(monkeypatch):
    """An onnxruntime session's threads do not survive fork: a child (a Dask worker made by fork)
    multiplies with numpy instead, with the same result to float rounding."""
    import numpy as np

    from eqi_core.decoder import bert

    monkeypatch.setattr(bert, "PRODUCTS", "onnxruntime")
    rng = np.random.default_rng(0)
    wt, b, x = (rng.standard_normal(s, dtype=np.float32) for s in ((16, 40), (40,), (5, 16)))
    product = bert._ConstantProduct(lambda: wt, b)
    assert product.session is not None
    here = product(x)
    np.testing.assert_allclose(here, x @ wt + b, rtol=1e-5, atol=1e-5)

    class Inherited:  # a session whose threads stayed in the parent
        def run(self, *args):
            raise AssertionError("a forked child ran the parent's onnxruntime session")

    monkeypatch.setattr(product, "session", Inherited())
    monkeypatch.setattr(product, "pid", -1)  # as seen from another process
    np.testing.assert_allclose(product(x), here, rtol=1e-5, atol=1e-5)


def test_an_evaluation_of_one_passage_method_summarises_without_a_round_trip():
    """``eval-decoder --only "word-edit search"``: the round trip has none of the asked methods, so
    its frame is empty but keeps its columns, and the summary still has the method's row (it
    failed with a KeyError after 25 minutes of search)."""
    from eqi_core.decoder.natural_eval import round_trip_natural, summary_table

    class Encoder:
        def encode(self, texts, batch_size=256):
            return np.ones((len(texts), 4), np.float32) / 2

    rt = round_trip_natural(None, None, None, Encoder(), ["a question"], only={"word-edit search"})
    assert rt.empty and list(rt.columns) == ["method", "reference", "decoded", "token_f1", "cosine"]
    p2q = {"dl19": pd.DataFrame({"method": ["word-edit search"] * 2, "doc_id": ["d1", "d2"],
                                 "decoded": ["river bank", "bank bank loan"], "rank": [1, 4]})}
    table = summary_table(rt, p2q, frozenset({"river", "bank", "loan"}))
    row = table.loc["word-edit search"]
    assert (row["dl19 top1"], row["dl19 top5"], row["dl19 n"]) == (0.5, 1.0, 2)
    assert row["repeat"] == 0.5 and np.isnan(row["round_trip_f1"])  # the column is the paper's row's


def test_batched_decoding_reports_progress_per_batch_with_the_outputs_of_one_call():
    """A 1,000-passage evaluation decodes for minutes: a log file must show where it is (it printed
    nothing until the step ended), and the batches must not change what is decoded."""
    from eqi_core.decoder.base import Candidate
    from eqi_core.decoder.natural import BEAM_BATCH_ROWS as BATCH_ROWS
    from eqi_core.decoder.natural_eval import _decode_all

    class Decoder:
        def __init__(self):
            self.calls = []

        def decode(self, emb, n=5):
            self.calls.append(len(emb))
            return [[Candidate(f"q{int(e[0])}", 1.0)] for e in emb]

    emb = np.arange(150, dtype=np.float32)[:, None]
    seen, decoder = [], Decoder()
    out = _decode_all(decoder, emb, lambda done, total: seen.append((done, total)), one_at_a_time=False)
    assert out == [f"q{i}" for i in range(150)]
    assert decoder.calls == [BATCH_ROWS, BATCH_ROWS, 150 - 2 * BATCH_ROWS]
    assert seen == [(BATCH_ROWS, 150), (2 * BATCH_ROWS, 150), (150, 150)]
    assert _decode_all(Decoder(), emb[:3], None, one_at_a_time=False) == ["q0", "q1", "q2"]


def test_round_trip_by_source_groups_the_logs_into_families_by_hand():
    """The paper's round trip is on MS MARCO queries: the breakdown puts that family beside the
    others (titles, claims, multi-hop questions), each with its count and mean length, then all."""
    from eqi_core.decoder.natural_eval import query_family, round_trip_by_source

    assert query_family("msmarco-v2-doc-dev2") == "MS MARCO" and query_family("nq-dev") == "Natural Questions"
    assert query_family("beir-climate-fever") == query_family("beir-fever") == "claims (FEVER, Climate-FEVER)"
    assert query_family("beir-scidocs") == "other BEIR queries"
    rt = pd.DataFrame({"method": ["decoder"] * 3 + ["nearest logged query"],
                       "reference": ["what is a cat", "define dog", "Uranium is a country.", "what is a cat"],
                       "source": ["msmarco-doc-dev", "msmarco-passage-dev-subset", "beir-fever", "msmarco-doc-dev"],
                       "decoded": ["", "", "", ""], "token_f1": [1.0, 0.5, 0.3, 0.2], "cosine": [1.0, 0.8, 0.9, 0.4]})
    table = round_trip_by_source(rt)
    assert list(zip(table["method"], table["family"], table["n"])) == [
        ("decoder", "all", 3), ("decoder", "MS MARCO", 2), ("decoder", "claims (FEVER, Climate-FEVER)", 1),
        ("nearest logged query", "all", 1), ("nearest logged query", "MS MARCO", 1)]
    marco = table.iloc[1]
    assert (marco["token_f1"], marco["cosine"], marco["words"]) == (0.75, 0.9, 3.0)
    assert table.iloc[0]["token_f1"] == pytest.approx(0.6)
    assert round_trip_by_source(rt.iloc[:0]).empty


def test_a_partial_re_run_replaces_its_rows_and_records_each_rows_command():
    from eqi_core.decoder.natural_eval import with_rows_replaced

    before = {"summary": {"decoder": {"f1": 0.69}, "decoder+rerank": {"f1": 0.72}, "word-edit search": {"f1": 0.1}},
              "by_source": [{"method": "decoder", "n": 1}, {"method": "decoder+rerank", "n": 1}],
              "settings": {"beam": 8}, "command": "eqi eval-decoder (all)",
              "updated": {"methods": ["decoder", "word-edit search"], "command": "run A"}}  # the earlier record
    rerun = {"summary": {"decoder+rerank": {"f1": 0.73}, "paper": {"f1": 0.75}},
             "by_source": [{"method": "decoder+rerank", "n": 2}], "settings": {"beam": 4}, "command": "run B"}
    got = with_rows_replaced(before, rerun, ["decoder+rerank"])
    assert got["summary"] == {"decoder": {"f1": 0.69}, "decoder+rerank": {"f1": 0.73}, "word-edit search": {"f1": 0.1}}
    assert got["by_source"] == [{"method": "decoder", "n": 1}, {"method": "decoder+rerank", "n": 2}]
    assert got["settings"] == {"beam": 8} and got["command"] == "eqi eval-decoder (all)"
    assert got["updated"] == {"decoder": "run A", "word-edit search": "run A", "decoder+rerank": "run B"}
    again = with_rows_replaced(got, {**rerun, "command": "run C"}, ["decoder+rerank"])
    assert again["updated"] == {"decoder": "run A", "word-edit search": "run A", "decoder+rerank": "run C"}


def test_corpus_version_2_never_trains_on_evaluated_queries(tmp_path):
    """Version 2 moves a log query equal to an evaluated collection's query (any split, any case) out
    of training, keeps it as split 'evaluated', and drops a cut sentence equal to one; version 1 (the
    shipped decoders' corpus) is the recipe without ``evaluated`` and keeps it in training."""
    from eqi_core.decoder.corpus import EVALUATED_SPLIT

    log = tmp_path / "log.tsv"
    lines = [f"q{i}\twhat is thing number {i}" for i in range(40)] + ["x1\tHow to bake bread?", "x2\tzebra migration"]
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    v1 = CorpusRecipe([str(log)], {"tiny": f"beir:{TINY_BEIR}"}, {"tiny": 5}, passage_share=0.0)
    v2 = CorpusRecipe([str(log)], {"tiny": f"beir:{TINY_BEIR}"}, {"tiny": 5}, passage_share=0.0,
                      evaluated={"tiny": f"beir:{TINY_BEIR}"})
    assert (v1.version, v2.version) == (1, 2) and repr(v1) == repr(v2)  # the store's key of version 1 is unchanged
    s1 = build_corpus(v1, tmp_path / "v1.parquet")
    s2 = build_corpus(v2, tmp_path / "v2.parquet")
    t1, t2 = read_corpus(tmp_path / "v1.parquet")[0], read_corpus(tmp_path / "v2.parquet")[0]
    assert s1["version"] == 1 and "evaluated" not in s1["recipe"] and "queries_evaluated" not in s1
    assert s2["version"] == 2 and s2["recipe"]["evaluated"] == {"tiny": f"beir:{TINY_BEIR}"}
    evaluated = {"How to bake bread?", "zebra migration"} - set(t1.loc[t1["split"] == "heldout", "text"])
    assert evaluated <= set(t1.loc[t1["split"] == "train", "text"])
    assert not evaluated & set(t2.loc[t2["split"] == "train", "text"])
    assert evaluated == set(t2.loc[t2["split"] == EVALUATED_SPLIT, "text"])
    assert s2["queries_evaluated"]["in_logs"] == {"log": len(evaluated)} and s2["queries_evaluated"]["distinct"] == 5
    assert s2["queries_train"] == s1["queries_train"] - len(evaluated)
    # the evaluation's vocabulary (real_words: training and evaluated rows) reads the same texts in either version
    readable = ["train", EVALUATED_SPLIT]
    assert set(t1.loc[t1["split"].isin(readable), "text"]) == set(t2.loc[t2["split"].isin(readable), "text"])
    # a passage sentence that is an evaluated query is not cut either
    beir = tmp_path / "beir"
    (beir / "qrels").mkdir(parents=True)
    (beir / "corpus.jsonl").write_text(json.dumps({"_id": "p1", "title": "", "text": "How to bake bread. The oven "
                                                   "must be hot before the dough goes in"}) + "\n", encoding="utf-8")
    (beir / "queries.jsonl").write_text(json.dumps({"_id": "e1", "text": "how to bake bread"}) + "\n", encoding="utf-8")
    (beir / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\ne1\tp1\t1\n", encoding="utf-8")
    plain_log = tmp_path / "plain.tsv"
    plain_log.write_text("\n".join(lines[:40]) + "\n", encoding="utf-8")
    for evaluated_spec, cut in [({}, True), ({"b": f"beir:{beir}"}, False)]:
        recipe = CorpusRecipe([str(plain_log)], {"b": f"beir:{beir}"}, {"b": 5}, passage_share=0.0, evaluated=evaluated_spec)
        build_corpus(recipe, tmp_path / "b.parquet")
        passages = read_corpus(tmp_path / "b.parquet")[0].query("kind == 'passage'")["text"].tolist()
        assert ("How to bake bread" in passages) == cut and "The oven must be hot before the dough goes in" in passages


def test_the_number_of_prefix_vectors_is_a_checked_setting():
    from eqi_core.decoder.natural import NaturalTraining

    NaturalTraining(n_prefix=16).validate()
    for bad in (0, 65):
        with pytest.raises(DataError, match="n_prefix must be in 1..64"):
            NaturalTraining(n_prefix=bad).validate()


def test_a_natural_decoder_without_its_word_list_is_noted_before_any_work(tmp_path):
    """Trained where WordNet was not, a decoder has no lexicon.txt.gz: it decodes freely (made-up words
    possible), so every --decoder that takes it says so first, with the command that writes one."""
    import gzip
    import shutil

    from typer.testing import CliRunner

    from eqi_core.cli import app
    from eqi_core.decoder.natural import missing_word_list_note

    folder = tmp_path / "dec"
    folder.mkdir()
    shutil.copy(ROOT / "assets" / "decoders" / "natural-minilm-l6" / "card.json", folder)
    assert missing_word_list_note(folder) == (f"{folder} has no word list (lexicon.txt.gz): its decoding may write "
                                              f"made-up words; `eqi decoder-lexicon --decoder {folder}` writes one")
    result = CliRunner().invoke(app, ["decode", "river bank", "-c", f"beir:{TINY_BEIR}", "--decoder", str(folder)])
    assert result.stderr.splitlines()[0] == f"note: {missing_word_list_note(folder)}"
    assert isinstance(result.exception, DataError) and "decoder.safetensors" in str(result.exception)  # then its own error
    (folder / "lexicon.txt.gz").write_bytes(gzip.compress(b"river\n"))
    assert missing_word_list_note(folder) is None
    assert missing_word_list_note(tmp_path) is None  # not a decoder folder: the loaders say what is wrong
