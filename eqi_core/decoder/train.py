"""Training the neural query decoder on a collection's query log (+ pseudo-queries from passages).

Resumable: every ``checkpoint_every`` steps the model and optimiser state go to the store's work
directory (safetensors + JSON, never a pickle); batches and dropout are seeded by the step number,
so a killed run restarted with the same parameters continues the same trajectory.
"""
from __future__ import annotations

import hashlib
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

from eqi_core.collection import Collection
from eqi_core.decoder.base import stopwords, words
from eqi_core.decoder.neural import (
    DecoderConfig,
    NeuralDecoder,
    PrefixDecoder,
    Vocabulary,
    config_for,
    encoder_vocabulary,
    save_decoder,
)
from eqi_core.errors import DataError
from eqi_core.progress import ProgressFn, or_tqdm
from eqi_core.store import ArtifactStore, atomic_path

DECODER_VERSION = 1


def require(checks: list[tuple[bool, str]]) -> None:
    """The first failed (condition, message) of a training configuration, as a one-line error."""
    for ok, msg in checks:
        if not ok:
            raise DataError(f"decoder training: {msg}")


@dataclass
class DecoderTraining:
    steps: int = 4500
    batch_size: int = 128
    lr: float = 6e-4
    warmup: int = 200
    weight_decay: float = 0.01
    noise: float = 0.1  # norm of Gaussian noise added to half the inputs (then re-normalised)
    passage_queries: int = 3  # pseudo-queries drawn from each training passage (0: the query log only)
    heldout_share: float = 0.1
    seed: int = 0
    checkpoint_every: int = 250
    n_layers: int = 4
    d_ff: int = 1024
    n_prefix: int = 4

    def validate(self) -> None:
        checks = [(self.steps >= 1, "steps must be >= 1"), (self.batch_size >= 2, "batch_size must be >= 2"),
                  (0 < self.lr < 1, "lr must be in (0, 1)"), (0 <= self.heldout_share < 1, "heldout_share must be in [0, 1)"),
                  (self.passage_queries >= 0, "passage_queries must be >= 0"), (self.noise >= 0, "noise must be >= 0"),
                  (1 <= self.n_layers <= 12, "n_layers must be in 1..12")]
        require(checks)


# -- data ------------------------------------------------------------------------------------------
def _unit(key: str) -> float:
    return int(hashlib.sha1(key.encode()).hexdigest()[:8], 16) / 2**32


def heldout_split(collection: Collection, share: float) -> tuple[list[str], list[str]]:
    """Held-out query ids (a stable hash of the id decides) and their judged passages: neither is
    ever seen in decoder training, so evaluation on them is honest."""
    qids = [q for q in collection.queries["query_id"] if _unit(q) < share]
    docs = collection.qrels[collection.qrels["query_id"].isin(set(qids)) & (collection.qrels["relevance"] > 0)]
    return qids, sorted(set(docs["doc_id"]))


def passage_queries(text: str, n: int, rng: np.random.Generator) -> list[str]:
    """``n`` short phrases of a passage (1-3 words, not starting or ending on a stop word): the
    kind of query a searcher might type for it."""
    ws = words(text)
    stop = stopwords()
    spans = [(i, j) for i in range(len(ws)) for j in range(i + 1, min(i + 3, len(ws)) + 1)
             if ws[i] not in stop and ws[j - 1] not in stop and len(ws[i]) > 1]
    if not spans:
        return []
    pick = rng.choice(len(spans), size=min(n, len(spans)), replace=False)
    return [" ".join(ws[spans[k][0]:spans[k][1]]) for k in sorted(pick)]


def training_texts(collection: Collection, cfg: DecoderTraining) -> tuple[list[str], dict]:
    heldout_q, heldout_d = heldout_split(collection, cfg.heldout_share)
    held_q, held_d = set(heldout_q), set(heldout_d)
    q = collection.queries
    log_texts = [t for i, t in zip(q["query_id"], q["text"]) if i not in held_q and t.strip()]
    held_texts = {" ".join(words(t)) for i, t in zip(q["query_id"], q["text"]) if i in held_q}
    rng = np.random.default_rng(cfg.seed)
    pseudo = []
    if cfg.passage_queries:
        for did, text in zip(collection.passages["doc_id"], collection.passage_texts()):
            if did not in held_d:
                pseudo += [p for p in passage_queries(text, cfg.passage_queries, rng) if p not in held_texts]
    texts = log_texts + pseudo
    return texts, {"log_queries": len(log_texts), "passage_queries": len(pseudo), "heldout_queries": len(heldout_q),
                   "heldout_passages": len(heldout_d)}


def token_matrix(vocab: Vocabulary, texts: list[str], cfg: DecoderConfig) -> torch.Tensor:
    """[BOS] ids [EOS] [PAD]... rows; queries longer than max_len tokens are cut."""
    rows = [[cfg.bos_id, *vocab.ids(t)[: cfg.max_len - 1], cfg.eos_id] for t in texts]
    out = torch.full((len(rows), cfg.max_len + 1), cfg.pad_id, dtype=torch.long)
    for i, r in enumerate(rows):
        out[i, : len(r)] = torch.tensor(r)
    return out


# -- training loop ------------------------------------------------------------------------------
def lr_factor(cfg: DecoderTraining, step: int) -> float:
    """Linear warm-up, then cosine decay to a tenth of the peak (the multiplier LambdaLR applies)."""
    if step < cfg.warmup:
        return (step + 1) / cfg.warmup
    t = (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup)
    return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * t))


CHECKPOINT = "state.pt"


def save_state(folder: Path, model: torch.nn.Module, opt: torch.optim.Optimizer, sched, step: int,
               losses: list[float], average: dict[str, torch.Tensor] | None = None,
               series: dict[str, list[float]] | None = None) -> None:
    """One file (model, optimizer, scheduler, step, losses, the weights' running ``average`` and
    other per-step ``series`` where training keeps them) renamed into place: never torn."""
    extra = {"average": {k: v.cpu() for k, v in average.items()}} if average is not None else {}
    if series:
        extra["series"] = {k: list(v) for k, v in series.items()}
    with atomic_path(folder / CHECKPOINT) as tmp:
        torch.save({"model": {k: v.cpu() for k, v in model.state_dict().items()}, "optimizer": opt.state_dict(),
                    "scheduler": sched.state_dict(), "step": step, "losses": losses, **extra}, tmp)


def load_state(folder: Path, model: torch.nn.Module, opt: torch.optim.Optimizer, sched,
               device: str = "cpu", average: dict[str, torch.Tensor] | None = None,
               series: dict[str, list[float]] | None = None) -> tuple[int, list[float]]:
    """Resume from the checkpoint (tensors and plain values only: ``weights_only=True``); a running
    ``average`` and the lists of ``series`` are filled in place."""
    path = folder / CHECKPOINT
    if not path.is_file():
        return 0, []
    try:
        state = torch.load(path, map_location=device, weights_only=True)
    except Exception:  # unreadable: start over rather than fail
        return 0, []
    model.load_state_dict(state["model"])
    opt.load_state_dict(state["optimizer"])
    sched.load_state_dict(state["scheduler"])
    if average is not None:
        for k, v in state["average"].items():
            average[k].copy_(v)
    for name, values in (series or {}).items():
        values[:] = state.get("series", {}).get(name, [])
    return int(state["step"]), list(state["losses"])


def train_decoder(model: PrefixDecoder, emb: np.ndarray, tokens: torch.Tensor, cfg: DecoderTraining,
                  work: Path | None = None, progress: ProgressFn | None = None, stop_after: int | None = None) -> list[float]:
    """Train in place; resume from ``work`` when it holds a checkpoint. Returns the loss per step.
    ``stop_after`` ends early after that many steps of this call (tests of resumption)."""
    decay = [p for n, p in model.named_parameters() if p.ndim >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.ndim < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": cfg.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=cfg.lr, betas=(0.9, 0.98))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: lr_factor(cfg, step))
    start, losses = load_state(work, model, opt, sched) if work else (0, [])
    x = torch.from_numpy(emb.astype(np.float32))
    lengths = (tokens != model.cfg.pad_id).sum(1)
    report = or_tqdm(progress, "training decoder", "step")
    model.train()
    done_here = 0
    for step in range(start, cfg.steps):
        rng = np.random.default_rng([cfg.seed, step])
        torch.manual_seed(cfg.seed * 1_000_003 + step)
        idx = torch.from_numpy(rng.integers(0, len(x), cfg.batch_size))
        e = x[idx]
        if cfg.noise:
            half = cfg.batch_size // 2
            noise = torch.from_numpy(rng.standard_normal((half, e.shape[1])).astype(np.float32))
            e[:half] = e[:half] + cfg.noise * noise / math.sqrt(e.shape[1])
            e = e / e.norm(dim=1, keepdim=True)
        ids = tokens[idx][:, : int(lengths[idx].max())]
        loss = model.loss(e, ids)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        losses.append(float(loss.detach()))
        done_here += 1
        if work and ((step + 1) % cfg.checkpoint_every == 0 or step + 1 == cfg.steps):
            save_state(work, model, opt, sched, step + 1, losses)
        report(step + 1, cfg.steps)
        if stop_after is not None and done_here >= stop_after:
            break
    model.eval()
    return losses


def decoder_params(collection: Collection, encoder_id: str, cfg: DecoderTraining) -> dict:
    return {"collection": collection.fingerprint, "encoder": encoder_id, "training": asdict(cfg),
            "version": DECODER_VERSION}


def train_or_load_decoder(collection: Collection, encoder, store: ArtifactStore, cfg: DecoderTraining,
                          progress: ProgressFn | None = None, stop_after: int | None = None):
    """The decoder trained on this collection for this encoder, from the store or trained now."""
    from eqi_core.decoder.neural import load_decoder
    from eqi_core.rankers.dense import encode_texts

    cfg.validate()
    params = decoder_params(collection, encoder.id, cfg)
    found = store.load("decoder", params)
    if found is not None:
        return load_decoder(found.path, encoder)
    vocab = encoder_vocabulary(encoder)
    texts, data_summary = training_texts(collection, cfg)
    if len(texts) < cfg.batch_size:
        raise DataError(f"{collection.name}: {len(texts)} training queries; a decoder needs at least {cfg.batch_size}")
    emb = encode_texts(encoder, texts, store, {"texts": hashlib.sha256("\n".join(texts).encode()).hexdigest(),
                                               "field": "decoder-training"})
    mcfg = config_for(encoder, vocab, n_layers=cfg.n_layers, d_ff=cfg.d_ff, n_prefix=cfg.n_prefix)
    tokens = token_matrix(vocab, texts, mcfg)
    work = store.work_dir("decoder", params)
    started = time.time()
    model = PrefixDecoder(mcfg, vocab.word_embeddings)
    torch.manual_seed(cfg.seed)
    losses = train_decoder(model, emb, tokens, cfg, work, progress, stop_after)
    if len(losses) < cfg.steps:
        raise InterruptedError(f"decoder training stopped at step {len(losses)} of {cfg.steps}; rerun to resume")

    def build(tmp: Path) -> dict:
        card = {"collection": collection.name, "collection_fingerprint": collection.fingerprint,
                "encoder": encoder.id, "training": asdict(cfg), "data": data_summary,
                "parameters": sum(p.numel() for p in model.parameters()),
                "loss_first_100": float(np.mean(losses[:100])), "loss_last_100": float(np.mean(losses[-100:])),
                "train_seconds_this_run": round(time.time() - started, 1)}
        save_decoder(model, tmp, card)
        return {"steps": cfg.steps}

    art = store.get_or_build("decoder", params, build, sources=[f"collection:{collection.fingerprint}"])
    store.clear_work_dir("decoder", params)
    return load_decoder(art.path, encoder)


__all__ = ["DecoderTraining", "heldout_split", "training_texts", "token_matrix", "train_decoder",
           "train_or_load_decoder", "NeuralDecoder", "DecoderConfig"]
