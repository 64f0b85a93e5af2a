"""The encoder's judgment in decoder training (``decoder/cosine.py``): the leave-one-out baseline by
hand, free-running draws in a training row's layout whose log-probabilities match the decoder's
cached steps, exact resumption with the term on, the encoder reading ids as it reads text, and
one-line refusals."""
import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from eqi_core.decoder.cosine import draw, leave_one_out, sequence_logp, standardised
from eqi_core.decoder.natural import NaturalTraining, train_loop
from eqi_core.errors import DataError
from tests.unit.test_natural_decoder import tiny_corpus, tiny_model


def test_leave_one_out_and_standardised_by_hand():
    r = torch.tensor([[1.0, 0.0, 0.5, 0.5], [0.2, 0.2, 0.2, 0.2]])
    adv = leave_one_out(r)
    # 1 - (0 + .5 + .5) / 3 = 2/3; 0 - 2/3 = -2/3; .5 - 1.5/3 = 0; a point whose samples tie: all 0
    torch.testing.assert_close(adv, torch.tensor([[2 / 3, -2 / 3, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]]))
    flat = adv.view(-1)
    torch.testing.assert_close(standardised(flat), flat / flat.std())
    assert torch.equal(standardised(torch.zeros(4)), torch.zeros(4))
    with pytest.raises(ValueError, match="at least 2 samples"):
        leave_one_out(torch.ones(3, 1))


def test_draws_are_training_rows_scored_as_the_cached_steps_score_them():
    model = tiny_model()
    emb = torch.nn.functional.normalize(torch.randn(6, 16, generator=torch.Generator().manual_seed(1)), dim=1)
    banned = torch.tensor([5, 6])  # output rows never written first
    rows = draw(model, emb, torch.Generator().manual_seed(0), banned)
    again = draw(model, emb, torch.Generator().manual_seed(0), banned)
    assert torch.equal(rows, again) and rows.shape == (6, model.cfg.max_len + 1)
    cfg = model.cfg
    assert (rows[:, 0] == cfg.bos_id).all() and (rows[:, 1] != cfg.eos_id).all()
    assert not set(rows[:, 1].tolist()) & set(model.out_ids[banned].tolist())
    logp = sequence_logp(model, emb, rows).detach()
    for i in range(len(rows)):
        ids = rows[i].tolist()
        n = ids.index(cfg.pad_id) if cfg.pad_id in ids else len(ids)
        assert all(t == cfg.pad_id for t in ids[n:]) and cfg.eos_id not in ids[1:n - 1]  # PAD only after the end
        with torch.no_grad():  # the same path through the cached steps (no bans: they only shape the draw)
            step_logp, caches = model.start(emb[i:i + 1])
            total = 0.0
            for t, tok in enumerate(ids[1:n]):
                k = int(model.out_index[tok])
                total += float(step_logp[0, k])
                if t + 2 < n:
                    step_logp, caches = model.step(torch.tensor([k]), t + 1, caches)
        assert float(logp[i]) == pytest.approx(total / (n - 1), abs=1e-4)


def toy_judge(model):
    """A stand-in encoder: the mean of the ids' word vectors through a fixed projection, unit length."""
    proj = torch.randn(model.cfg.word_dim, 16, generator=torch.Generator().manual_seed(3))

    def judge(ids):
        keep = (ids != model.cfg.pad_id).unsqueeze(-1).float()
        mean = (model.word_emb[ids] * keep).sum(1) / keep.sum(1).clamp(min=1)
        return torch.nn.functional.normalize(mean @ proj, dim=1)

    return judge


def test_training_with_the_judgment_resumes_bit_for_bit(tmp_path):
    emb, tokens, is_query = tiny_corpus(0)
    cfg = NaturalTraining(steps=6, batch_size=4, warmup=2, checkpoint_every=100, lr=1e-3, cosine=1.0, samples=3)
    straight, straight_cos = tiny_model(dropout=0.1), []
    straight_losses = train_loop(straight, emb, tokens, is_query, cfg, judge=toy_judge(straight), cosines=straight_cos)
    resumed, cos = tiny_model(dropout=0.1), []
    train_loop(resumed, emb, tokens, is_query, cfg, tmp_path, stop_after=3, judge=toy_judge(resumed), cosines=cos)
    assert len(cos) == 3
    again, cos = tiny_model(dropout=0.1), []
    losses = train_loop(again, emb, tokens, is_query, cfg, tmp_path, judge=toy_judge(again), cosines=cos)
    assert losses == straight_losses and cos == straight_cos and len(cos) == 6
    for (name, a), b in zip(straight.state_dict().items(), again.state_dict().values()):
        assert torch.equal(a, b), name
    plain = tiny_model(dropout=0.1)  # the term changes the trajectory: same first loss, other weights after
    plain_losses = train_loop(plain, emb, tokens, is_query, NaturalTraining(**{**cfg.__dict__, "cosine": 0.0}))
    assert plain_losses[0] == straight_losses[0] and plain_losses[1:] != straight_losses[1:]
    with pytest.raises(ValueError, match="needs a judge"):
        train_loop(tiny_model(), emb, tokens, is_query, cfg)


def test_the_encoder_reads_ids_back_as_it_reads_the_text():
    from eqi_core.decoder.cosine import encoder_judge
    from eqi_core.decoder.neural import encoder_tokenizer, token_specials
    from eqi_core.rankers import load_encoder

    encoder = load_encoder("minilm-l6")
    tok, _ = encoder_tokenizer(encoder)
    bos, eos, pad = token_specials(tok)
    texts = ["what is the capital of france", "how do i remove admin items from the menu?", "tsunami"]
    ids = [e.ids for e in tok.encode_batch(texts, add_special_tokens=False)]
    rows = torch.full((len(ids), max(map(len, ids))), pad, dtype=torch.long)
    for i, r in enumerate(ids):
        rows[i, :len(r)] = torch.tensor(r)
    got = encoder_judge(encoder, "cpu", bos, eos, pad)(rows).numpy()
    want = encoder.encode(texts)
    assert np.allclose((got * want).sum(1), 1.0, atol=1e-5)


def test_bad_settings_are_refused_in_one_line():
    from eqi_core.cli import app

    result = CliRunner().invoke(app, ["train-decoder", "--cosine", "1"])
    assert isinstance(result.exception, DataError) and "only the natural decoder (--natural)" in str(result.exception)
    for cfg, message in [(NaturalTraining(cosine=-1.0), "cosine must be >= 0"),
                         (NaturalTraining(cosine=1.0, samples=1), "samples must be >= 2"),
                         (NaturalTraining(cosine=1.0, styles=True), "cosine with styles is not supported")]:
        with pytest.raises(DataError, match=message) as err:
            cfg.validate()
        assert "\n" not in str(err.value)


def test_a_judged_fine_tune_records_the_samples_cosine_and_keys_apart(tmp_path):
    """``train_natural`` with ``cosine``: the encoder judges the shipped decoder's samples, the card
    records their mean cosine and the recipe, and the store keeps it apart from the plain fine-tune."""
    from eqi_core.decoder.corpus import CorpusRecipe, build_corpus
    from eqi_core.decoder.natural import train_natural
    from eqi_core.decoder.space import shipped_natural_decoder
    from eqi_core.rankers import load_encoder
    from eqi_core.store import ArtifactStore
    from tests.conftest import TINY_BEIR

    log = tmp_path / "log.tsv"
    log.write_text("".join(f"q{i}\twhat is thing number {i}\n" for i in range(40)), encoding="utf-8")
    corpus = tmp_path / "c.parquet"
    build_corpus(CorpusRecipe([str(log)], {"tiny": f"beir:{TINY_BEIR}"}, {"tiny": 3}, passage_share=0.5), corpus)
    encoder, first = load_encoder("minilm-l6"), shipped_natural_decoder("minilm-l6")
    store = ArtifactStore(tmp_path / "store")
    judged = train_natural(corpus, encoder, store, NaturalTraining(steps=2, batch_size=2, lr=1e-9, warmup=1, query_share=1.0,
                                                                   cosine=1.0, samples=2), init=first)
    card = judged.card
    assert card["training"]["cosine"] == 1.0 and card["training"]["samples"] == 2
    assert 0 < card["cosine_first_100"] <= 1 and card["cosine_last_500"] == card["cosine_first_100"]
    assert "minilm-l6 reading 2 free-running samples" in card["cosine_judge"]
    plain = train_natural(corpus, encoder, store, NaturalTraining(steps=2, batch_size=2, lr=1e-9, warmup=1, query_share=1.0),
                          init=first)
    assert "cosine_first_100" not in plain.card and plain.card["_folder"] != card["_folder"]
