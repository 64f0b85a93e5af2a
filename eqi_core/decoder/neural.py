"""Neural query decoder: a small causal transformer that regenerates a query from its embedding.

Design (CPU-sized, after the paper's T5 decoder): the encoder's own WordPiece tokenizer and its
frozen word-embedding matrix are reused for the input tokens and, tied, for the output softmax, so
the decoder speaks the encoder's vocabulary and its checkpoint holds only the transformer (a few
million parameters). The embedding to decode enters as ``n_prefix`` learned prefix vectors. A
checkpoint records the encoder id, dimension and a hash of the tokenizer's vocabulary; loading it
for another encoder is refused with a one-line message.
"""
from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import nn

from eqi_core.decoder.base import Candidate, DecoderError, EncoderBinding, as_matrix, card_of, dedupe, detokenize

WEIGHTS = "decoder.safetensors"
CARD = "card.json"
CARD_FORMAT = 1


@dataclass
class DecoderConfig(EncoderBinding):
    d_model: int = 384
    n_layers: int = 4
    n_heads: int = 6
    d_ff: int = 1024
    n_prefix: int = 4
    max_len: int = 20
    dropout: float = 0.1


# -- the encoder's vocabulary -----------------------------------------------------------------
@dataclass
class Vocabulary:
    """The encoder's tokenizer (without padding/truncation) and word embeddings."""

    tokenizer: object  # tokenizers.Tokenizer
    word_embeddings: torch.Tensor  # (vocab, word_dim), frozen
    sha: str
    banned: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # never generated

    @property
    def size(self) -> int:
        return int(self.word_embeddings.shape[0])

    def ids(self, text: str) -> list[int]:
        return self.tokenizer.encode(text, add_special_tokens=False).ids

    def text(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=True)

    def token(self, token_id: int) -> str:
        return self.tokenizer.id_to_token(int(token_id)) or ""


def encoder_tokenizer(encoder):
    """The encoder's fast tokenizer without padding/truncation, and a hash of its vocabulary (a
    checkpoint records it, so a decoder is never loaded for another tokenizer)."""
    from tokenizers import Tokenizer

    try:  # the folder's tokenizer.json where the encoder reads it (no model to load), else the model's
        backend = encoder.fast_tokenizer() if hasattr(encoder, "fast_tokenizer") else encoder.model.tokenizer.backend_tokenizer
    except (AttributeError, TypeError):
        raise DecoderError(f"encoder {getattr(encoder, 'id', encoder)!r}: a query decoder needs a "
                           "sentence-transformers encoder with a fast tokenizer and word embeddings") from None
    tok = Tokenizer.from_str(backend.to_str())
    tok.no_padding()
    tok.no_truncation()
    sha = hashlib.sha256(json.dumps(sorted(tok.get_vocab().items())).encode()).hexdigest()[:16]
    return tok, sha


def encoder_word_embeddings(encoder):
    """The encoder transformer's input word embeddings (float32 torch tensor, vocabulary x width),
    read without loading the model where the encoder can (``word_embeddings``)."""
    if hasattr(encoder, "word_embeddings"):
        return encoder.word_embeddings()
    return encoder.model[0].auto_model.get_input_embeddings().weight.detach().float().clone()


def token_specials(tok) -> tuple[int, int, int]:
    """(BOS, EOS, PAD) = BERT's [CLS], [SEP], [PAD]; a one-line error for another tokenizer."""
    ids = [tok.token_to_id(s) for s in ("[CLS]", "[SEP]", "[PAD]")]
    if any(i is None for i in ids):
        raise DecoderError("tokenizer: expected BERT-style [CLS]/[SEP]/[PAD] tokens")
    return tuple(int(i) for i in ids)  # type: ignore[return-value]


def encoder_vocabulary(encoder) -> Vocabulary:
    """Tokenizer and word embeddings of a sentence-transformers encoder (the registry's dense
    encoders and ``st:`` folders). Other encoders cannot host a decoder: one-line error."""
    tok, sha = encoder_tokenizer(encoder)
    try:
        weights = encoder_word_embeddings(encoder)
    except (AttributeError, TypeError, IndexError):
        raise DecoderError(f"encoder {getattr(encoder, 'id', encoder)!r}: a query decoder needs a "
                           "sentence-transformers encoder with a fast tokenizer and word embeddings") from None
    vocab = tok.get_vocab()
    banned = np.array(sorted(i for t, i in vocab.items() if t.startswith("[") and t.endswith("]")), dtype=np.int64)
    weights.requires_grad_(False)
    return Vocabulary(tok, weights, sha, banned)


def special_ids(vocab: Vocabulary) -> tuple[int, int, int]:
    return token_specials(vocab.tokenizer)


def config_for(encoder, vocab: Vocabulary, **overrides) -> DecoderConfig:
    bos, eos, pad = special_ids(vocab)
    return DecoderConfig(encoder_id=encoder.id, encoder_dim=int(encoder.dim), vocab_size=vocab.size,
                         tokenizer_sha=vocab.sha, bos_id=bos, eos_id=eos, pad_id=pad,
                         word_dim=int(vocab.word_embeddings.shape[1]), **overrides)


# -- the network --------------------------------------------------------------------------------
class PrefixDecoder(nn.Module):
    """Causal transformer over [prefix(embedding); BOS; tokens]; output tied to the word embeddings."""

    def __init__(self, cfg: DecoderConfig, word_embeddings: torch.Tensor):
        super().__init__()
        self.cfg = cfg
        self.register_buffer("word_emb", word_embeddings, persistent=False)
        self.prefix = nn.Linear(cfg.encoder_dim, cfg.n_prefix * cfg.d_model)
        self.tok_in = nn.Linear(cfg.word_dim, cfg.d_model, bias=False)
        self.pos = nn.Embedding(cfg.n_prefix + cfg.max_len + 1, cfg.d_model)
        layer = nn.TransformerEncoderLayer(cfg.d_model, cfg.n_heads, cfg.d_ff, cfg.dropout, activation="gelu",
                                           batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, cfg.n_layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(cfg.d_model)
        self.tok_out = nn.Linear(cfg.d_model, cfg.word_dim, bias=False)
        self.out_bias = nn.Parameter(torch.zeros(cfg.vocab_size))
        nn.init.normal_(self.pos.weight, std=0.02)
        if cfg.d_model == cfg.word_dim:  # start from the tied embeddings used as they are
            with torch.no_grad():
                self.tok_in.weight.copy_(torch.eye(cfg.d_model))
                self.tok_out.weight.copy_(torch.eye(cfg.d_model))

    def hidden(self, emb: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        """Hidden states at the token positions: (B, T, d_model) for ids (B, T)."""
        b, t = ids.shape
        p = self.cfg.n_prefix
        prefix = self.prefix(emb * math.sqrt(self.cfg.encoder_dim)).view(b, p, self.cfg.d_model)
        x = torch.cat([prefix, self.tok_in(self.word_emb[ids])], dim=1)
        x = x + self.pos.weight[: p + t]
        mask = nn.Transformer.generate_square_subsequent_mask(p + t, dtype=x.dtype)
        h = self.blocks(x, mask=mask, is_causal=True)
        return self.norm(h[:, p:])

    def logits(self, h: torch.Tensor) -> torch.Tensor:
        return self.tok_out(h) @ self.word_emb.T + self.out_bias

    def loss(self, emb: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
        """Teacher-forced cross-entropy; ``ids`` = [BOS, t1..tn, EOS, PAD...]."""
        h = self.hidden(emb, ids[:, :-1])
        target = ids[:, 1:]
        keep = target != self.cfg.pad_id
        return nn.functional.cross_entropy(self.logits(h[keep]), target[keep])


# -- decoding -----------------------------------------------------------------------------------
@torch.no_grad()
def beam_search(model: PrefixDecoder, emb: torch.Tensor, beam: int, banned: np.ndarray, continuation: np.ndarray,
                length_penalty: float = 0.6) -> list[list[tuple[list[int], float]]]:
    """Batched beam search. Returns per row up to ``beam`` (token ids, length-normalised log-prob)."""
    cfg = model.cfg
    b = emb.shape[0]
    seqs = torch.full((b * beam, 1), cfg.bos_id, dtype=torch.long)
    emb_rep = emb.repeat_interleave(beam, dim=0)
    scores = torch.full((b, beam), -1e9)
    scores[:, 0] = 0.0  # all beams start identical: keep one alive
    finished: list[list[tuple[list[int], float]]] = [[] for _ in range(b)]
    alive = torch.ones(b, dtype=torch.bool)
    ban = torch.as_tensor(banned, dtype=torch.long)
    cont = torch.as_tensor(continuation, dtype=torch.long)
    for step in range(cfg.max_len):
        logp = torch.log_softmax(model.logits(model.hidden(emb_rep, seqs)[:, -1]), dim=-1)
        logp[:, ban] = -1e9
        if step == 0:
            logp[:, cfg.eos_id] = -1e9
            logp[:, cont] = -1e9  # a query never starts inside a word
        total = (scores.view(-1, 1) + logp).view(b, -1)
        top, flat = total.topk(2 * beam, dim=1)
        new_scores = torch.full((b, beam), -1e9)
        rows = []
        for i in range(b):
            kept = 0
            for s, f in zip(top[i].tolist(), flat[i].tolist()):
                src, tok = divmod(f, cfg.vocab_size)
                seq = seqs[i * beam + src]
                if s < -1e8:
                    break
                if tok == cfg.eos_id:
                    if alive[i]:
                        finished[i].append((seq[1:].tolist(), s / (len(seq) ** length_penalty)))
                    continue
                if kept < beam:
                    rows.append(torch.cat([seq, torch.tensor([tok])]))
                    new_scores[i, kept] = s
                    kept += 1
            while kept < beam:
                rows.append(torch.cat([seqs[i * beam], torch.tensor([cfg.pad_id])]))
                kept += 1
            if len(finished[i]) >= beam:
                best_alive = new_scores[i].max().item() / ((len(seqs[0]) + 1) ** length_penalty)
                if best_alive < max(f[1] for f in finished[i]):
                    alive[i] = False
        if not alive.any():
            break
        seqs = torch.stack(rows)
        scores = torch.where(alive[:, None], new_scores, torch.full_like(new_scores, -1e9))
    for i in range(b):
        if not finished[i]:  # ran out of length: take the best unfinished beam
            finished[i].append((seqs[i * beam][1:].tolist(), float(scores[i, 0])))
    return [sorted(f, key=lambda x: -x[1])[:beam] for f in finished]


class NeuralDecoder:
    """A trained PrefixDecoder with its vocabulary: implements QueryDecoder."""

    name = "decoder"
    label = "WordNet lemma decoder"

    def __init__(self, model: PrefixDecoder, vocab: Vocabulary, card: dict | None = None):
        self.model = model.eval()
        self.vocab = vocab
        self.card = card or {}
        self.encoder_id = model.cfg.encoder_id
        self.continuation = np.array([i for t, i in vocab.tokenizer.get_vocab().items() if t.startswith("##")],
                                     dtype=np.int64)
        self.banned = vocab.banned[vocab.banned != model.cfg.eos_id]  # special tokens, except the end of a query

    def decode(self, embeddings: np.ndarray, n: int = 5, beam: int | None = None) -> list[list[Candidate]]:
        x = torch.from_numpy(as_matrix(embeddings, self.model.cfg.encoder_dim))
        width = max(n, beam or 0, 2)
        out = []
        for start in range(0, len(x), 64):
            for hyps in beam_search(self.model, x[start:start + 64], width, self.banned, self.continuation):
                cands = [Candidate(detokenize(self.vocab.text(ids)), float(s), source="decoded") for ids, s in hyps]
                out.append(dedupe(cands, n))
        return out

    def first_tokens(self, embedding: np.ndarray, k: int = 20) -> list[str]:
        """The decoder's k most likely whole-word first tokens for a point (edit vocabulary)."""
        x = torch.from_numpy(as_matrix(embedding, self.model.cfg.encoder_dim))
        with torch.no_grad():
            ids = torch.full((1, 1), self.model.cfg.bos_id, dtype=torch.long)
            logits = self.model.logits(self.model.hidden(x[:1], ids)[:, -1])[0]
            logits[torch.as_tensor(self.vocab.banned)] = -1e9  # incl. the end: a first word is wanted
            logits[torch.as_tensor(self.continuation)] = -1e9
        return [self.vocab.token(i) for i in logits.topk(k).indices.tolist()]


# -- checkpoints ----------------------------------------------------------------------------------
def save_decoder(model: PrefixDecoder, folder: Path, card: dict, half: bool = True) -> None:
    """Weights as safetensors (fp16 by default: the shipped file stays small), card as JSON."""
    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    state = {k: (v.half() if half and v.is_floating_point() else v).contiguous() for k, v in model.state_dict().items()}
    save_file(state, str(folder / WEIGHTS))
    card = {"format": CARD_FORMAT, **card, "config": asdict(model.cfg)}
    (folder / CARD).write_text(json.dumps(card, indent=1, default=str), encoding="utf-8")


def read_card(folder: Path) -> dict:
    path = card_of(folder, "a decoder", "assets/decoders/natural-minilm-l6")
    try:
        card = json.loads(path.read_text(encoding="utf-8"))
        if card.get("config", {}).get("arch"):  # the natural decoder's card
            from eqi_core.decoder.bert import BertDecoderConfig

            BertDecoderConfig(**card["config"])
            return card
        DecoderConfig(**card["config"])
    except (OSError, json.JSONDecodeError, KeyError, TypeError) as exc:
        raise DecoderError(f"{path}: not a decoder card ({type(exc).__name__}: {exc})") from None
    return card


def load_decoder(folder: Path, encoder) -> NeuralDecoder:
    """A checkpoint folder (card.json + decoder.safetensors) for ``encoder``; refused with one line
    when it was trained for another encoder (id, dimension or tokenizer)."""
    from safetensors.torch import load_file

    from eqi_core.decoder.natural import is_natural_card, load_natural

    folder = Path(folder)
    if is_natural_card(folder):
        return load_natural(folder, encoder)
    card = read_card(folder)
    cfg = DecoderConfig(**card["config"])
    vocab = encoder_vocabulary(encoder)
    problems = []
    if cfg.encoder_dim != int(encoder.dim):
        problems.append(f"dimension {cfg.encoder_dim}, not {encoder.dim}")
    if cfg.tokenizer_sha != vocab.sha or cfg.vocab_size != vocab.size:
        problems.append(f"tokenizer {cfg.tokenizer_sha} ({cfg.vocab_size} tokens), not {vocab.sha} ({vocab.size})")
    if cfg.word_dim != vocab.word_embeddings.shape[1]:
        problems.append(f"word embeddings of width {cfg.word_dim}, not {vocab.word_embeddings.shape[1]}")
    if problems:
        raise DecoderError(f"{folder}: this decoder was trained for encoder {cfg.encoder_id!r}; "
                           f"{encoder.id!r} differs: {'; '.join(problems)}")
    model = PrefixDecoder(cfg, vocab.word_embeddings)
    try:
        state = {k: v.float() if v.is_floating_point() else v for k, v in load_file(str(folder / WEIGHTS)).items()}
        model.load_state_dict(state)
    except (OSError, RuntimeError, ValueError) as exc:
        raise DecoderError(f"{folder / WEIGHTS}: unreadable or incomplete decoder weights ({str(exc).splitlines()[0]})") from None
    return NeuralDecoder(model, vocab, {**card, "_folder": str(folder)})
