"""Training and using the natural-language decoder (``bert.BertPrefixDecoder``).

Recipe: the corpus of ``corpus.py`` (real query logs + sentences cut from passages, held-out
splits never seen), every text encoded once by the encoder, and the decoder trained to regenerate
the text from its embedding with Gaussian noise around half the points (so points between texts
decode well). Half of each batch comes from the query logs, so that outputs read like searches.

Resumable exactly like the WordNet decoder: one ``torch.save`` checkpoint (weights, optimiser,
scheduler, step, losses) in the store's work directory; batches, noise and dropout are seeded by
the step, so a run killed and restarted continues the same trajectory (bit-for-bit on CPU).
``device="cuda"`` trains the same recipe on a GPU (bf16 autocast); the card names the device.
"""
from __future__ import annotations

import copy
import json
import math
import platform
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

from eqi_core.decoder.base import Candidate, DecoderError, as_matrix, card_of, cut_short, dedupe, detokenize, function_words, stutters, words
from eqi_core.decoder.bert import ARCH, STYLES, BertDecoderConfig, BertPrefixDecoder, beam_search, sample, token_ids_used, warm_start_layers
from eqi_core.decoder.corpus import QUERY_KINDS
from eqi_core.decoder.cosine import Judge, cosine_term, encoder_judge
from eqi_core.decoder.lexicon import LEXICON_FILE, Lexicon, constraint_for
from eqi_core.decoder.neural import encoder_tokenizer, encoder_word_embeddings, token_specials
from eqi_core.decoder.train import load_state, lr_factor, require, save_state
from eqi_core.errors import DataError
from eqi_core.progress import ProgressFn, or_tqdm, tqdm_progress
from eqi_core.stopping import should_stop
from eqi_core.store import ArtifactStore, atomic_path

NATURAL_VERSION = 1
WEIGHTS = "decoder.safetensors"
CARD = "card.json"


@dataclass
class NaturalTraining:
    steps: int = 20000
    batch_size: int = 256
    lr: float = 3e-4
    warmup: int = 1000
    weight_decay: float = 0.01
    noise: float = 0.1  # norm of Gaussian noise added to half the inputs (then re-normalised)
    query_share: float = 0.5  # of each batch drawn from the query logs
    seed: int = 0
    checkpoint_every: int = 500
    n_layers: int = 6
    n_prefix: int = 8
    max_len: int = 32
    dropout: float = 0.1
    word_dropout: float = 0.0  # share of teacher-forced input tokens replaced by [MASK] (leans on the embedding)
    styles: bool = False  # learn a style per kind of text (query / passage sentence); decoding asks for a query
    average: float = 0.0  # decay of a running average of the weights (0: none); the average is what is kept
    cosine: float = 0.0  # weight of the encoder's judgment of free-running samples (``cosine.py``; 0: none)
    samples: int = 4  # samples drawn per training point for that judgment

    def validate(self) -> None:
        checks = [(self.steps >= 1, "steps must be >= 1"), (self.batch_size >= 2, "batch_size must be >= 2"),
                  (0 < self.lr < 1, "lr must be in (0, 1)"), (0 <= self.query_share <= 1, "query_share must be in [0, 1]"),
                  (self.noise >= 0, "noise must be >= 0"), (1 <= self.n_layers <= 12, "n_layers must be in 1..12"),
                  (1 <= self.n_prefix <= 64, "n_prefix must be in 1..64"),
                  (4 <= self.max_len <= 128, "max_len must be in 4..128"),
                  (0 <= self.dropout < 1, "dropout must be in [0, 1)"), (0 <= self.word_dropout < 1, "word_dropout must be in [0, 1)"),
                  (0 <= self.average < 1, "average must be in [0, 1)"), (self.cosine >= 0, "cosine must be >= 0"),
                  (not self.cosine or self.samples >= 2, "samples must be >= 2 (each sample is judged against its siblings)"),
                  (not (self.cosine and self.styles), "cosine with styles is not supported (samples are drawn without a style)")]
        require(checks)


# -- the encoder's side --------------------------------------------------------------------------------
def encoder_state(encoder) -> dict[str, torch.Tensor]:
    """The encoder transformer's weights (HF names): the warm start and the word embeddings."""
    return {k: v.detach().float().cpu() for k, v in encoder.model[0].auto_model.state_dict().items()}


def token_matrix(tok, texts: list[str], bos: int, eos: int, pad: int, max_len: int) -> torch.Tensor:
    """[BOS] ids [EOS] [PAD]... rows (int32); texts longer than max_len tokens are cut."""
    out = torch.full((len(texts), max_len + 1), pad, dtype=torch.int32)
    for start in range(0, len(texts), 8192):
        for i, enc in enumerate(tok.encode_batch(texts[start:start + 8192], add_special_tokens=False)):
            row = [bos, *enc.ids[: max_len - 1], eos]
            out[start + i, : len(row)] = torch.tensor(row, dtype=torch.int32)
    return out


def encode_for_training(encoder, texts: list[str], device: str, progress: ProgressFn | None = None) -> np.ndarray:
    """Unit embeddings of ``texts``: the encoder's own path on CPU, its torch model on a GPU."""
    if device == "cpu":
        return encoder.encode(texts, batch_size=64, progress=progress)
    model = encoder.model.to(device)
    out = np.empty((len(texts), encoder.dim), dtype=np.float32)
    order = np.argsort([len(t) for t in texts], kind="stable")
    for start in range(0, len(texts), 16384):
        idx = order[start:start + 16384]
        out[idx] = model.encode([texts[i] for i in idx], batch_size=512, normalize_embeddings=True,
                                convert_to_numpy=True, show_progress_bar=False)
        if progress:
            progress(min(start + 16384, len(texts)), len(texts))
    model.to("cpu")
    return out


# -- training ---------------------------------------------------------------------------------------
def train_loop(model: BertPrefixDecoder, emb: np.ndarray, tokens: torch.Tensor, is_query: np.ndarray,
               cfg: NaturalTraining, work: Path | None = None, device: str = "cpu", progress: ProgressFn | None = None,
               stop_after: int | None = None, deadline: float | None = None, mask_id: int | None = None,
               judge: Judge | None = None, first_banned: torch.Tensor | None = None,
               cosines: list[float] | None = None) -> list[float]:
    """Train in place (resuming from ``work``); return the teacher-forced loss per step. ``stop_after``
    steps or a ``deadline`` (time.time()) end this call early with a checkpoint; rerunning continues.
    ``mask_id``: the token that ``cfg.word_dropout`` of the input tokens (after BOS) become. With
    ``cfg.cosine``, ``judge`` (the encoder reading ids back) scores ``cfg.samples`` free-running
    samples per point (``cosine.cosine_term``; ``first_banned``: output rows never written first) and
    ``cosines`` receives their mean cosine per step, every step since the start."""
    if cfg.cosine and judge is None:
        raise ValueError("train_loop: cfg.cosine needs a judge (the encoder reading samples back)")
    cosines = [] if cosines is None else cosines
    model.to(device)
    decay = [p for p in model.parameters() if p.requires_grad and p.ndim >= 2]
    no_decay = [p for p in model.parameters() if p.requires_grad and p.ndim < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": cfg.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=cfg.lr, betas=(0.9, 0.98))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: lr_factor(cfg, step))
    average = ({k: p.detach().clone().float() for k, p in model.named_parameters() if p.requires_grad}
               if cfg.average else None)
    start, losses = load_state(work, model, opt, sched, device, average, series={"cosines": cosines}) if work else (0, [])
    x = torch.from_numpy(emb.astype(np.float32)).to(device)
    tokens = tokens.to(device)
    lengths = (tokens != model.cfg.pad_id).sum(1)
    q_idx, p_idx = np.flatnonzero(is_query), np.flatnonzero(~is_query)
    n_q = int(round(cfg.batch_size * cfg.query_share)) if len(p_idx) else cfg.batch_size
    n_q = n_q if len(q_idx) else 0
    report = or_tqdm(progress, "training decoder", "step")
    autocast = torch.autocast("cuda", dtype=torch.bfloat16) if device.startswith("cuda") else torch.autocast("cpu", enabled=False)
    model.train()
    done_here = 0
    for step in range(start, cfg.steps):
        rng = np.random.default_rng([cfg.seed, step])
        torch.manual_seed(cfg.seed * 1_000_003 + step)
        idx = np.concatenate([rng.choice(q_idx, n_q) if n_q else np.zeros(0, np.int64),
                              rng.choice(p_idx, cfg.batch_size - n_q) if cfg.batch_size > n_q else np.zeros(0, np.int64)])
        idx_t = torch.from_numpy(idx).to(device)
        e = x[idx_t]
        if cfg.noise:
            half = cfg.batch_size // 2
            noise = torch.from_numpy(rng.standard_normal((half, e.shape[1])).astype(np.float32)).to(device)
            e = torch.cat([e[:half] + cfg.noise * noise / math.sqrt(e.shape[1]), e[half:]])
            e = e / e.norm(dim=1, keepdim=True)
        ids = tokens[idx_t][:, : int(lengths[idx_t].max())].long()
        inputs = None
        if cfg.word_dropout and mask_id is not None:  # seeded by the step, like the batch and the noise
            drop = torch.from_numpy(rng.random(ids[:, :-1].shape) < cfg.word_dropout).to(device)
            drop[:, 0] = False  # BOS stays
            inputs = ids[:, :-1].masked_fill(drop & (ids[:, :-1] != model.cfg.pad_id), mask_id)
        style = torch.from_numpy((~is_query[idx]).astype(np.int64)).to(device) if model.cfg.n_styles else None
        with autocast:
            loss = model.loss(e, ids, inputs, style)
            total = loss
            if cfg.cosine:  # the draws seeded by the step too, on the training device
                gen = torch.Generator(device=device).manual_seed(cfg.seed * 1_000_003 + step)
                term, mean_cos = cosine_term(model, e, judge, cfg.samples, gen, first_banned)
                total = loss + cfg.cosine * term
                cosines.append(mean_cos)
        opt.zero_grad(set_to_none=True)
        total.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        if average is not None:
            update_average(average, model, cfg.average, step)
        losses.append(float(loss.detach()))
        done_here += 1
        last = step + 1 == cfg.steps
        stop = (stop_after is not None and done_here >= stop_after) or should_stop(deadline)
        if work and ((step + 1) % cfg.checkpoint_every == 0 or last or stop):
            save_state(work, model, opt, sched, step + 1, losses, average, series={"cosines": cosines} if cfg.cosine else None)
        report(step + 1, cfg.steps)
        if stop:
            break
    if average is not None and len(losses) >= cfg.steps:  # finished: the average is the decoder
        with torch.no_grad():
            for k, p in model.named_parameters():
                if k in average:
                    p.copy_(average[k].to(p.dtype))
    model.eval().to("cpu")
    return losses


def continuation_rows(tok, out_ids) -> torch.Tensor:
    """Output rows whose token continues a word ("##ing"): never a text's first token."""
    return torch.tensor([j for j, i in enumerate(list(out_ids)) if (tok.id_to_token(int(i)) or "").startswith("##")],
                        dtype=torch.long)


def update_average(average: dict[str, torch.Tensor], model: torch.nn.Module, decay: float, step: int) -> None:
    """Polyak average of the weights after ``step`` (0-based): decay min(d, (1 + t) / (10 + t)),
    so that the first steps' random-ish weights are forgotten quickly."""
    d = min(decay, (1 + step) / (10 + step))
    names = [k for k, _ in model.named_parameters() if k in average]
    params = dict(model.named_parameters())
    with torch.no_grad():  # one fused update over all tensors (a GPU step stays a few kernels longer)
        kept = [average[k] for k in names]
        torch._foreach_mul_(kept, d)
        torch._foreach_add_(kept, [params[k].detach().float() for k in names], alpha=1 - d)


def warm_start_summary(encoder, n_layers: int) -> str:
    """The card's words for where a new decoder's layers came from."""
    have = int(getattr(getattr(encoder.model[0].auto_model, "config", None), "num_hidden_layers", n_layers))
    if n_layers <= have:
        return f"{encoder.id} transformer layers 0-{n_layers - 1}"
    order = ", ".join(map(str, warm_start_layers(n_layers, have)))
    return f"{encoder.id} transformer layers stacked to {n_layers} (each decoder layer from encoder layer {order})"


def new_model(encoder, tok, sha: str, out_ids: np.ndarray, cfg: NaturalTraining, state: dict | None = None) -> BertPrefixDecoder:
    """A decoder for ``encoder``, warm-started from its own transformer weights."""
    state = state if state is not None else encoder_state(encoder)
    word = state["embeddings.word_embeddings.weight"]
    bos, eos, pad = token_specials(tok)
    layers = sum(1 for k in state if k.endswith("attention.self.query.weight"))
    hidden = int(state["encoder.layer.0.attention.self.query.weight"].shape[0]) if layers else int(word.shape[1])
    heads = int(getattr(getattr(encoder.model[0].auto_model, "config", None), "num_attention_heads", 12))
    d_ff = int(state["encoder.layer.0.intermediate.dense.weight"].shape[0]) if layers else 4 * hidden
    mcfg = BertDecoderConfig(encoder_id=encoder.id, encoder_dim=int(encoder.dim), vocab_size=int(word.shape[0]),
                             tokenizer_sha=sha, bos_id=bos, eos_id=eos, pad_id=pad, word_dim=int(word.shape[1]),
                             n_out=len(out_ids), hidden=hidden, n_layers=cfg.n_layers, n_heads=heads, d_ff=d_ff,
                             n_prefix=cfg.n_prefix, max_len=cfg.max_len, dropout=cfg.dropout,
                             n_styles=len(STYLES) if cfg.styles else 0)
    torch.manual_seed(cfg.seed)
    model = BertPrefixDecoder(mcfg, word.clone(), torch.from_numpy(out_ids))
    model.warm_start(state)
    return model


def init_summary(folder: Path) -> dict:
    """What a fine-tune starts from: the trained decoder's folder, a digest of its weights and how
    they were made (so the new card carries the whole recipe and the store key changes with them)."""
    from eqi_core.store import file_sha256

    card = read_natural_card(folder)
    return {"folder": str(folder), "weights_sha256": file_sha256(Path(folder) / WEIGHTS)[:16],
            "command": card.get("command", ""), "training": card.get("training", {}),
            "trained_on": card.get("trained_on", []), "corpus": card.get("corpus", {}).get("digest")}


def train_natural(corpus_path: Path, encoder, store: ArtifactStore, cfg: NaturalTraining, device: str = "cpu",
                  progress: ProgressFn | None = None, stop_after: int | None = None,
                  deadline: float | None = None, command: str = "", init: Path | None = None) -> NaturalDecoderModel | None:
    """Train (or resume) the natural decoder on a corpus; return it when finished, None when this
    call stopped early (checkpoint kept; rerun to continue). ``init``: start from a trained natural
    decoder's weights (a second stage, e.g. queries only) instead of the encoder's own layers."""
    from eqi_core.decoder.corpus import read_corpus

    cfg.validate()
    table, summary = read_corpus(corpus_path)
    train = table[table["split"] == "train"]
    if cfg.query_share >= 1:  # queries only: passage sentences are neither encoded nor read
        train = train[train["kind"].isin(QUERY_KINDS)]
    train = train.reset_index(drop=True)
    if len(train) < cfg.batch_size:
        raise DataError(f"{corpus_path}: {len(train)} training texts; a decoder needs at least {cfg.batch_size}")
    texts = train["text"].tolist()
    tok, sha = encoder_tokenizer(encoder)
    start = init_summary(Path(init)) if init is not None else None
    optional = ("styles", "average", "cosine", "samples")  # in the key only when used: older keys unchanged
    recipe = {k: v for k, v in asdict(cfg).items() if k not in optional or (cfg.cosine if k == "samples" else v)}
    params = {"corpus": summary["digest"], "encoder": encoder.id, "tokenizer": sha, "training": recipe,
              "version": NATURAL_VERSION, **({"init": start["weights_sha256"]} if start else {})}
    found = store.load("natural-decoder", params)
    if found is not None:
        return load_natural(found.path, encoder)
    bos, eos, pad = token_specials(tok)
    if start:  # the trained decoder's weights and output vocabulary, its architecture kept
        model = load_natural(Path(init), encoder).model.train()
        out_ids = model.out_ids.numpy()
        names = ("n_layers", "n_prefix", "max_len", "dropout")
        if bool(model.cfg.n_styles) != cfg.styles:
            raise DataError(f"{init}: a decoder {'with' if model.cfg.n_styles else 'without'} styles; "
                            f"this training asks for {'styles' if cfg.styles else 'none'}")
        if any(getattr(model.cfg, k) != getattr(cfg, k) for k in names):
            has = ", ".join(f"{k} {getattr(model.cfg, k)}" for k in names)
            asks = ", ".join(f"{k} {getattr(cfg, k)}" for k in names)
            raise DataError(f"{init}: a decoder with {has}; this training asks for {asks}")
    else:
        out_ids = token_ids_used(tok, texts, [eos])
        model = new_model(encoder, tok, sha, out_ids, cfg)
    emb_params = {"corpus": summary["digest"], "encoder": encoder.id, "n": len(texts),
                  **({"texts": "queries"} if cfg.query_share >= 1 else {})}
    emb_art = store.load("decoder-corpus-embeddings", emb_params)
    if emb_art is None:
        def build_emb(tmp: Path) -> dict:
            bar = tqdm_progress("encoding the training texts", "text") if progress is not None else None  # its own label
            np.save(tmp / "emb.npy", encode_for_training(encoder, texts, device, bar))
            return {"rows": len(texts), "device": device}

        emb_art = store.get_or_build("decoder-corpus-embeddings", emb_params, build_emb)
    emb = np.load(emb_art.path / "emb.npy")
    tokens = token_matrix(tok, texts, bos, eos, pad, cfg.max_len)
    is_query = train["kind"].isin(QUERY_KINDS).to_numpy()  # real queries and the decoder's own samples
    work = store.work_dir("natural-decoder", params)
    judge = encoder_judge(encoder, device, bos, eos, pad) if cfg.cosine else None
    cosines: list[float] = []
    started = time.time()
    losses = train_loop(model, emb, tokens, is_query, cfg, work, device, progress, stop_after, deadline,
                        mask_id=tok.token_to_id("[MASK]"), judge=judge, first_banned=continuation_rows(tok, out_ids),
                        cosines=cosines)
    elapsed = time.time() - started
    log = work / "timing.json"
    timing = json.loads(log.read_text(encoding="utf-8")) if log.is_file() else {"calls": []}
    done_before = sum(c["steps"] for c in timing["calls"])  # losses hold every step since the start
    timing["calls"].append({"device": device_name(device), "steps": len(losses) - done_before, "seconds": round(elapsed, 1)})
    with atomic_path(log) as tmp:
        Path(tmp).write_text(json.dumps(timing), encoding="utf-8")
    if len(losses) < cfg.steps:
        return None

    def build(tmp: Path) -> dict:
        card = {"arch": ARCH, "encoder": encoder.id, "corpus": summary, "training": asdict(cfg),
                "trainable_parameters": sum(p.numel() for p in model.parameters()),
                "output_vocabulary": len(out_ids),
                "warm_start": (f"the trained decoder {start['folder']} (weights {start['weights_sha256']})" if start
                               else warm_start_summary(encoder, cfg.n_layers)),
                **({"init": start} if start else {}),
                **({"styles": {"names": list(STYLES), "decodes": STYLES[0],
                               "trained": "each text's own: query-log texts 0, passage sentences 1"}} if cfg.styles else {}),
                "loss_first_100": float(np.mean(losses[:100])), "loss_last_500": float(np.mean(losses[-500:])),
                **({"cosine_first_100": float(np.mean(cosines[:100])), "cosine_last_500": float(np.mean(cosines[-500:])),
                    "cosine_judge": f"{encoder.id} reading {cfg.samples} free-running samples per point back "
                                    "(mean cosine of the samples to their point)"} if cfg.cosine else {}),
                "trained_on": timing["calls"], "train_seconds": round(sum(c["seconds"] for c in timing["calls"]), 1),
                "command": command}
        save_natural(model, tmp, card)
        try:
            write_lexicon(tmp, table)
        except DataError as exc:  # e.g. a GPU machine without WordNet: the weights are still worth keeping
            import sys

            print(f"the decoder's word list was not written ({str(exc).split(';')[0]}); write it where WordNet "
                  f"is installed: eqi decoder-lexicon --decoder DIR --corpus {corpus_path}", file=sys.stderr)
        return {"steps": cfg.steps}

    art = store.get_or_build("natural-decoder", params, build)
    store.clear_work_dir("natural-decoder", params)
    return load_natural(art.path, encoder)


def device_name(device: str) -> str:
    if device.startswith("cuda") and torch.cuda.is_available():
        return f"{torch.cuda.get_device_name(0)} (cuda, bf16 autocast)"
    return f"CPU {platform.processor() or platform.machine()}, {torch.get_num_threads()} threads"


# -- checkpoints ---------------------------------------------------------------------------------------
def save_natural(model: BertPrefixDecoder, folder: Path, card: dict, half: bool = True) -> None:
    """Weights as safetensors (fp16: the shipped file stays small; ``out_ids`` kept exact), card as JSON."""
    from safetensors.torch import save_file

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    state = {k: (v.half() if half and v.is_floating_point() else v).contiguous().cpu() for k, v in model.state_dict().items()}
    with atomic_path(folder / WEIGHTS) as tmp:
        save_file(state, str(tmp))
    with atomic_path(folder / CARD) as tmp:
        Path(tmp).write_text(json.dumps({"format": 2, **card, "config": asdict(model.cfg)}, indent=1, default=str), encoding="utf-8")


def write_lexicon(folder: Path, corpus) -> dict:
    """Write the decoder's word list (``lexicon.txt.gz``: the corpus's training texts and WordNet's
    lemmas) beside its weights and record it in the card; loading then decodes known words only."""
    from eqi_core.decoder.lexicon import lexicon_card, training_lexicon
    from eqi_core.decoder.natural_eval import wordnet_words

    folder = Path(folder)
    card = read_natural_card(folder)
    lexicon = training_lexicon(corpus, wordnet_words())
    lexicon.save(folder)
    card["lexicon"] = lexicon_card(lexicon, "the words of the corpus's training split (queries, passage sentences) "
                                           "and WordNet 3.0 lemmas; no held-out query or passage")
    with atomic_path(folder / CARD) as tmp:
        Path(tmp).write_text(json.dumps(card, indent=1, default=str), encoding="utf-8")
    return card["lexicon"]


BEAM_BATCH_ROWS = 64  # rows that beam search decodes together (memory of the key/value cache x the beam)


class NaturalDecoderModel:
    """A trained natural decoder with its tokenizer: implements QueryDecoder (the model alone, no
    encoder in the loop). ``decode`` returns beam hypotheses; ``sample`` nucleus samples."""

    name = "decoder"
    label = "natural-language decoder"

    def __init__(self, model: BertPrefixDecoder, tok, card: dict | None = None, beam: int = 8,
                 lexicon: Lexicon | None = None):
        self.model = model.eval()
        self.tok = tok
        self.card = card or {}
        self.beam = beam
        self.encoder_id = model.cfg.encoder_id
        vocab = tok.get_vocab()
        out = model.out_ids.tolist()
        stop = function_words()
        self.first_banned = continuation_rows(tok, out)
        no_repeat = torch.zeros(len(out), dtype=torch.bool)
        for j, i in enumerate(out):
            t = tok.id_to_token(i) or ""
            no_repeat[j] = t.isalpha() and len(t) > 2 and t not in stop and not t.startswith("##")
        self.no_repeat = no_repeat
        self._vocab_size = len(vocab)
        self.lexicon = lexicon
        # known words only, no content word twice (word level, so the token-level ban is not needed); beam
        # search also says nothing twice in a row: its hypotheses share their prefixes, so a stutter early on
        # is in all of them and no filter afterwards can set it aside (samples are filtered one by one)
        self.constraint = constraint_for(tok, out, lexicon, stop) if lexicon is not None else None
        self.beam_constraint = self.constraint.stutter_free_copy() if self.constraint is not None else None
        self.style = 0 if model.cfg.n_styles else None  # a decoder with styles writes queries

    def with_style(self, name: str) -> NaturalDecoderModel:
        """The same weights writing another style (``bert.STYLES``: query, sentence); one line for a
        decoder trained without styles or an unknown name."""
        if not self.model.cfg.n_styles:
            raise DecoderError(f"{self.card.get('_folder', 'this decoder')}: trained without styles; "
                               f"it writes whatever its point is nearest to")
        if name not in STYLES:
            raise DecoderError(f"style {name!r}: expected one of {', '.join(STYLES)}")
        other = copy.copy(self)
        other.style = STYLES.index(name)
        return other

    def without_word_list(self) -> NaturalDecoderModel:
        """The same weights decoding freely (made-up words possible): the evaluation's ablation."""
        free = copy.copy(self)
        free.lexicon, free.constraint, free.beam_constraint = None, None, None
        free.name, free.label = "decoder (no word list)", "natural-language decoder without its word list"
        return free

    def text(self, ids: list[int]) -> str:
        """Vocabulary ids as text, punctuation joined as written (``detokenize``)."""
        return detokenize(self.tok.decode(ids, skip_special_tokens=True))

    def decode(self, embeddings: np.ndarray, n: int = 5, beam: int | None = None) -> list[list[Candidate]]:
        """Up to ``n`` distinct beam hypotheses per row, best first, kept from saying a token twice in a
        row ("concrete floor - - $3"): with a word list, beam search lets no word end on a repeat
        (``stutter_free``; only where no other word is allowed does the model's own choice stand);
        without, such hypotheses are set aside while the beam holds one that does not. A hypothesis
        of more than three words stopping mid-phrase ("... found in the shape of": ``cut_short``)
        comes after those that do not, in the model's order otherwise: the first is still a whole
        decoder output. A short one is kept in its place: "stick with", "allow for" are lemmas."""
        x = torch.from_numpy(as_matrix(embeddings, self.model.cfg.encoder_dim))
        width = max(n, beam or self.beam)
        out = []
        for start in range(0, len(x), BEAM_BATCH_ROWS):
            no_repeat = torch.zeros_like(self.no_repeat) if self.constraint else self.no_repeat
            for hyps in beam_search(self.model, x[start:start + BEAM_BATCH_ROWS], width, self.first_banned, no_repeat,
                                    constraint=self.beam_constraint, style=self.style):
                cands = [Candidate(self.text(ids), float(s), source="decoded") for ids, s in hyps]
                cands = [c for c in cands if not stutters(c.text)] or cands
                out.append(dedupe(sorted(cands, key=lambda c: cut_short(c.text)), n))
        return out

    def first_tokens(self, embedding: np.ndarray, k: int = 20) -> list[str]:
        """The k most likely whole-word first tokens for a point (the word-edit baseline's pool)."""
        x = torch.from_numpy(as_matrix(embedding, self.model.cfg.encoder_dim))[:1]
        with torch.no_grad():
            logp = self.model.start(x, self.style)[0][0]
            logp[self.first_banned] = -1e9
            logp[int(self.model.out_index[self.model.cfg.eos_id])] = -1e9
        return [self.tok.id_to_token(int(self.model.out_ids[i])) or "" for i in logp.topk(k).indices.tolist()]

    def sample(self, embedding: np.ndarray, n: int = 10, top_p: float = 0.9, seed: int = 0,
               temperature: float = 1.0) -> list[str]:
        return self.sample_rows(as_matrix(embedding, self.model.cfg.encoder_dim)[:1], n, top_p, seed, temperature)[0]

    def sample_rows(self, embeddings: np.ndarray, n: int | list[int] = 10, top_p: float = 0.9, seed: int = 0,
                    temperature: float = 1.0, split: int | None = None) -> list[list[str]]:
        """``n`` nucleus samples for each row (or ``n[i]`` for row i), in one batched pass. One
        generator for the batch; with ``split``, rows ``split`` and after draw from a second
        generator of the same seed, so that the rows before it sample as they would alone."""
        x = torch.from_numpy(as_matrix(embeddings, self.model.cfg.encoder_dim))
        gen = torch.Generator().manual_seed(seed)
        second = torch.Generator().manual_seed(seed) if split is not None else None
        rows = sample(self.model, x, n, top_p, self.first_banned, gen, temperature, constraint=self.constraint,
                      split=split, split_generator=second, style=self.style)
        return [[self.text(ids) for ids in row] for row in rows]




def read_natural_card(folder: Path) -> dict:
    path = card_of(folder, "a natural decoder", "assets/decoders/natural-minilm-l6")
    try:
        card = json.loads(path.read_text(encoding="utf-8"))
        BertDecoderConfig(**card["config"])
    except (OSError, json.JSONDecodeError, KeyError, TypeError) as exc:
        raise DecoderError(f"{path}: not a natural decoder card ({type(exc).__name__}: {exc})") from None
    return card


def corpus_version(folder: Path) -> int:
    """The decoder corpus version a natural decoder trained on (its card; 1 before versions were
    recorded there), so that its word list and evaluation read that corpus."""
    return int((read_natural_card(folder).get("corpus") or {}).get("version", 1))


def load_natural(folder: Path, encoder, beam: int = 8) -> NaturalDecoderModel:
    """A natural decoder checkpoint for ``encoder``; refused with one line for another encoder."""
    from safetensors.torch import load_file

    folder = Path(folder)
    card = read_natural_card(folder)
    cfg = BertDecoderConfig(**card["config"])
    tok, sha = encoder_tokenizer(encoder)
    word = encoder_word_embeddings(encoder)
    problems = []
    if cfg.encoder_dim != int(encoder.dim):
        problems.append(f"dimension {cfg.encoder_dim}, not {encoder.dim}")
    if cfg.tokenizer_sha != sha or cfg.vocab_size != len(word):
        problems.append(f"tokenizer {cfg.tokenizer_sha} ({cfg.vocab_size} tokens), not {sha} ({len(word)})")
    if cfg.word_dim != word.shape[1]:
        problems.append(f"word embeddings of width {cfg.word_dim}, not {word.shape[1]}")
    if problems:
        raise DecoderError(f"{folder}: this decoder was trained for encoder {cfg.encoder_id!r}; "
                           f"{encoder.id!r} differs: {'; '.join(problems)}")
    try:
        state = {k: v.float() if v.is_floating_point() else v for k, v in load_file(str(folder / WEIGHTS)).items()}
        model = BertPrefixDecoder(cfg, word, state["out_ids"])
        model.load_state_dict(state)
    except (OSError, RuntimeError, ValueError, KeyError) as exc:
        raise DecoderError(f"{folder / WEIGHTS}: unreadable or incomplete decoder weights ({str(exc).splitlines()[0]})") from None
    lexicon = Lexicon.load(folder / LEXICON_FILE) if (folder / LEXICON_FILE).is_file() else None
    return NaturalDecoderModel(model, tok, {**card, "_folder": str(folder)}, beam, lexicon)


def missing_word_list_note(folder: Path) -> str | None:
    """A note when a natural decoder's folder has no word list beside its weights (trained where
    WordNet was not, say): it then decodes freely and may write made-up words; None otherwise."""
    folder = Path(folder)
    if not is_natural_card(folder) or (folder / LEXICON_FILE).is_file():
        return None
    return (f"{folder} has no word list ({LEXICON_FILE}): its decoding may write made-up words; "
            f"`eqi decoder-lexicon --decoder {folder}` writes one")


def is_natural_card(folder: Path) -> bool:
    try:
        return json.loads((Path(folder) / CARD).read_text(encoding="utf-8")).get("config", {}).get("arch") == ARCH
    except (OSError, json.JSONDecodeError, AttributeError):
        return False


__all__ = ["NaturalTraining", "train_natural", "load_natural", "NaturalDecoderModel", "save_natural", "write_lexicon",
           "missing_word_list_note",
           "words"]
