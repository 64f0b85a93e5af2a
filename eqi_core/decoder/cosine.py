"""Training the natural decoder toward what the encoder reads back (``eqi train-decoder --cosine``).

Teacher forcing teaches the decoder to write the text behind a point, word by word; it never asks
whether what the decoder writes freely lands back on the point. Re-ranking the beam by the
encoder's cosine shows that the decoder's own hypotheses often do better than its first choice
(round trip F1 0.691 -> 0.728). This term moves that judgment into training, so that the decoder
alone (no encoder at decoding time) writes such texts first: for each training point it draws
``samples`` free-running texts, the encoder reads each back, and each text's log-probability is
pushed up or down by how much closer it lands than its siblings (REINFORCE with a leave-one-out
baseline, Kool et al. 2019; the advantages standardised over the batch). Teacher forcing on the
true texts stays in the loss, so the decoder keeps to language rather than drifting to whatever
word lists please the encoder.

Everything is seeded by the training step (the draws by a generator on the training device), so a
stopped run resumes on the same trajectory, bit for bit on the CPU.
"""
from __future__ import annotations

from collections.abc import Callable

import torch
from torch.nn import functional as F  # noqa: N812 - the usual name

from eqi_core.decoder.bert import BertPrefixDecoder

Judge = Callable[[torch.Tensor], torch.Tensor]  # (N, T) vocabulary ids, PAD after the text -> (N, D) unit rows


@torch.no_grad()
def draw(model: BertPrefixDecoder, emb: torch.Tensor, generator: torch.Generator,
         first_banned: torch.Tensor | None = None) -> torch.Tensor:
    """One free-running sample per row of ``emb`` (temperature 1, the whole distribution: the policy
    being trained), with the key/value cache. Returns (N, max_len + 1) vocabulary ids
    [BOS, t1..tn, EOS, PAD...] (no EOS where the text reached the maximum length), the layout of a
    training row. The first token is never the end or a word continuation (``first_banned``, output
    rows), as in decoding."""
    cfg = model.cfg
    n = len(emb)
    eos = int(model.out_index[cfg.eos_id])
    out = torch.full((n, cfg.max_len + 1), cfg.pad_id, dtype=torch.long, device=emb.device)
    out[:, 0] = cfg.bos_id
    logp, caches = model.start(emb)
    logp[:, eos] = float("-inf")
    if first_banned is not None and len(first_banned):
        logp[:, first_banned.to(emb.device)] = float("-inf")
    live = torch.ones(n, dtype=torch.bool, device=emb.device)
    for t in range(cfg.max_len - 1):  # at most max_len - 1 tokens, as in training and decoding
        tok = torch.multinomial(logp.float().exp(), 1, generator=generator).view(-1)
        ids = model.out_ids[tok]
        out[:, t + 1] = torch.where(live, ids, torch.full_like(ids, cfg.pad_id))
        live = live & (tok != eos)
        if not bool(live.any()) or t + 2 == cfg.max_len:
            break
        logp, caches = model.step(tok, t + 1, caches)
    return out


def sequence_logp(model: BertPrefixDecoder, emb: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """Mean log-probability per token of each row ([BOS, t1..tn, (EOS), PAD...]) given its point,
    teacher-forced (with the gradient): what the policy term pushes up or down."""
    h = model.hidden(emb, rows[:, :-1])
    target = rows[:, 1:]
    keep = target != model.cfg.pad_id
    logp = F.log_softmax(model.logits(h[keep]).float(), dim=-1)  # the real places only (as ``loss``)
    picked = logp.gather(-1, model.out_index[target[keep]].unsqueeze(-1)).squeeze(-1)
    row = torch.arange(len(rows), device=rows.device).unsqueeze(1).expand_as(target)[keep]
    total = torch.zeros(len(rows), dtype=picked.dtype, device=rows.device).index_add(0, row, picked)
    return total / keep.sum(1).clamp(min=1)


def leave_one_out(rewards: torch.Tensor) -> torch.Tensor:
    """(points, samples) rewards -> each sample's reward minus the mean of its siblings' (the
    baseline that leaves the sample itself out, so the estimate stays unbiased)."""
    k = rewards.shape[1]
    if k < 2:
        raise ValueError("leave_one_out: needs at least 2 samples per point")
    return rewards - (rewards.sum(1, keepdim=True) - rewards) / (k - 1)


def standardised(adv: torch.Tensor) -> torch.Tensor:
    """Advantages over the batch with unit spread (zero where every sample scored the same)."""
    spread = adv.std()
    return adv / spread if float(spread) > 1e-8 else torch.zeros_like(adv)


def cosine_term(model: BertPrefixDecoder, emb: torch.Tensor, judge: Judge, samples: int, generator: torch.Generator,
                first_banned: torch.Tensor | None = None) -> tuple[torch.Tensor, float]:
    """(the policy loss for this batch of points, their samples' mean cosine). Samples are drawn
    with dropout off (the decoder as it will decode), then scored with it on, as trained."""
    was_training = model.training
    model.eval()
    points = emb.repeat_interleave(samples, dim=0)
    rows = draw(model, points, generator, first_banned)
    model.train(was_training)
    with torch.no_grad():
        text = rows[:, 1:]
        text = text.masked_fill(text == model.cfg.eos_id, model.cfg.pad_id)
        cos = (judge(text).float() * points.float()).sum(1).view(-1, samples)
        adv = standardised(leave_one_out(cos)).view(-1)
    loss = -(adv * sequence_logp(model, points, rows)).mean()
    return loss, float(cos.mean())


def encoder_judge(encoder, device: str, cls_id: int, sep_id: int, pad_id: int) -> Judge:
    """The encoder reading decoded ids back: [CLS] ids [SEP] through its transformer, mean-pooled
    over the real tokens and L2-normalised (the sentence-transformers pipeline of MiniLM), without
    the detour through text. Frozen; bf16 on a GPU."""
    hf = encoder.model[0].auto_model.to(device).eval()
    for p in hf.parameters():
        p.requires_grad_(False)
    autocast = torch.autocast("cuda", dtype=torch.bfloat16) if device.startswith("cuda") else torch.autocast("cpu", enabled=False)

    @torch.no_grad()
    def judge(ids: torch.Tensor) -> torch.Tensor:
        n, width = ids.shape
        lengths = (ids != pad_id).sum(1)
        full = torch.full((n, width + 2), pad_id, dtype=torch.long, device=ids.device)
        full[:, 0] = cls_id
        full[:, 1:width + 1] = ids
        full[torch.arange(n, device=ids.device), lengths + 1] = sep_id
        mask = (full != pad_id).long()
        with autocast:
            h = hf(input_ids=full, attention_mask=mask, token_type_ids=torch.zeros_like(full)).last_hidden_state
        m = mask.unsqueeze(-1).to(h.dtype)
        return F.normalize(((h * m).sum(1) / m.sum(1).clamp(min=1)).float(), dim=-1)

    return judge


__all__ = ["draw", "sequence_logp", "leave_one_out", "standardised", "cosine_term", "encoder_judge", "Judge"]
