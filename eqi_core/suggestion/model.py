"""Query suggestion models trained on the reformulation dataset (paper Section 4: qsT5-plain, qsT5).

The paper fine-tunes T5-large on (query [+ top-5 passages] -> rewrite) text pairs on 16 TPUs. On 2
CPU cores we keep its two variants and its pseudo-relevance feedback, but learn in the encoder's
space and let the shipped natural-language decoder speak:

- plain: a small transformer over the query's embedding predicts the embedding of a successful rewrite;
- PRF: the same over [query; the dense ranker's top-5 passages for it] (each with a rank embedding).

Both are trained on the dataset's (query, rewrite) pairs with a cosine loss (resumable, like the
decoders). To suggest, the predicted point and points on the way to it from the query are decoded
(beam and nucleus samples), candidates that are empty, the query itself or repeat a content word are
dropped, and up to 10 are picked by cosine to the predicted point with a penalty for word overlap
with those already picked (diversity; the paper reports Self-BLEU). No judgments are used.
"""
from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F  # noqa: N812 (the torch convention)
from torch import nn

from eqi_core.decoder.base import DecoderError, repeats_a_content_word, words
from eqi_core.errors import DataError
from eqi_core.progress import ProgressFn
from eqi_core.store import ArtifactStore, atomic_path
from eqi_core.suggestion.dataset import FEEDBACK

KINDS = ("plain", "prf")
MODEL_LABELS = {"plain": "suggester (plain)", "prf": "suggester (PRF)"}
WEIGHTS, CARD = "suggester.safetensors", "card.json"
ARCH = "embedding-suggester"
ASSETS = Path(__file__).resolve().parents[2] / "assets" / "suggesters"
MAX_SUGGESTIONS = 10


@dataclass(frozen=True)
class SuggesterConfig:
    kind: str
    dim: int
    encoder_id: str
    layers: int = 2
    heads: int = 4
    dropout: float = 0.1
    arch: str = ARCH


@dataclass(frozen=True)
class SuggesterTraining:
    steps: int = 4000
    batch_size: int = 256
    lr: float = 5e-4
    weight_decay: float = 0.01
    warmup: int = 200
    layers: int = 2
    heads: int = 4
    dropout: float = 0.1
    validation_share: float = 0.05  # of the dataset's queries, by a hash of the id: early-stopping report only
    seed: int = 0

    def validate(self) -> None:
        if self.steps < 1 or self.batch_size < 2 or not 0 < self.lr < 1:
            raise DataError(f"suggester training: steps {self.steps}, batch {self.batch_size}, lr {self.lr}: "
                            "expected steps >= 1, batch >= 2, 0 < lr < 1")


class SuggestionHead(nn.Module):
    """Embedding of a successful rewrite from the query's (plain) or the query's and its feedback
    passages' (PRF) embeddings; a residual on the query, so an untrained head suggests the query."""

    def __init__(self, cfg: SuggesterConfig):
        super().__init__()
        if cfg.kind not in KINDS:
            raise DataError(f"suggester kind {cfg.kind!r}: expected one of {', '.join(KINDS)}")
        self.cfg = cfg
        self.slots = nn.Parameter(torch.zeros(1 + FEEDBACK, cfg.dim))  # query, feedback rank 1..5
        layer = nn.TransformerEncoderLayer(cfg.dim, cfg.heads, 4 * cfg.dim, cfg.dropout, batch_first=True, norm_first=True)
        self.body = nn.TransformerEncoder(layer, cfg.layers, enable_nested_tensor=False)
        self.out = nn.Linear(cfg.dim, cfg.dim)
        nn.init.zeros_(self.out.weight)
        nn.init.zeros_(self.out.bias)

    def forward(self, context: torch.Tensor) -> torch.Tensor:
        """``context``: (batch, 1 + FEEDBACK, dim), the query first; plain reads the query only."""
        x = context[:, :1] if self.cfg.kind == "plain" else context
        h = self.body(x * 8.0 + self.slots[: x.shape[1]])  # unit vectors scaled to the layers' range
        return F.normalize(context[:, 0] + self.out(h[:, 0]), dim=-1)


# -- training ---------------------------------------------------------------------------------------
def training_arrays(dataset_folder: Path, share: float) -> dict:
    """(context, rewrite) pairs of the dataset's successful rewrites, split by a hash of the query id."""
    from eqi_core.decoder.train import _unit
    from eqi_core.suggestion.dataset import read_reformulations

    walks, steps, stats = read_reformulations(dataset_folder)
    context = np.load(Path(dataset_folder) / "context_emb.npy")
    rewrite = np.load(Path(dataset_folder) / "rewrite_emb.npy")
    ok = np.flatnonzero(steps["success"].to_numpy())
    walk = steps["walk"].to_numpy()[ok]
    val = np.array([_unit(f"{walks.at[w, 'collection']}/{walks.at[w, 'query_id']}") < share for w in walk])
    return {"context": context, "walk": walk, "rewrite": rewrite[ok], "val": val, "stats": stats}


def train_loop(head: SuggestionHead, data: dict, cfg: SuggesterTraining, work: Path,
               progress: ProgressFn | None = None, deadline: float | None = None) -> list[float]:
    """AdamW with warm-up and cosine decay on 1 - cos(predicted, rewrite); one torch.save checkpoint
    every 250 steps (model, optimizer, scheduler, step, losses), so a rerun resumes bit for bit."""
    torch.manual_seed(cfg.seed)
    opt = torch.optim.AdamW(head.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    factor = lambda s: min(1.0, (s + 1) / cfg.warmup) * 0.5 * (1 + math.cos(math.pi * min(s, cfg.steps) / cfg.steps))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, factor)
    ckpt = work / "checkpoint.pt"
    step, losses = 0, []
    if ckpt.is_file():
        state = torch.load(ckpt, weights_only=True)
        head.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        sched.load_state_dict(state["scheduler"])
        step, losses = int(state["step"]), list(state["losses"])
    train_idx = np.flatnonzero(~data["val"])
    if len(train_idx) < cfg.batch_size:
        raise DataError(f"reformulation dataset: {len(train_idx)} training rewrites; at least {cfg.batch_size} needed")
    context = torch.from_numpy(data["context"].astype(np.float32))
    rewrite = torch.from_numpy(data["rewrite"].astype(np.float32))
    walk = torch.from_numpy(data["walk"])
    head.train()
    while step < cfg.steps:
        rng = np.random.default_rng(cfg.seed * 1_000_003 + step)  # batches depend on the step only
        batch = torch.from_numpy(train_idx[rng.choice(len(train_idx), cfg.batch_size, replace=False)])
        torch.manual_seed(cfg.seed * 1_000_003 + step)
        pred = head(context[walk[batch]])
        loss = (1 - (pred * F.normalize(rewrite[batch], dim=-1)).sum(-1)).mean()
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(head.parameters(), 1.0)
        opt.step()
        sched.step()
        losses.append(loss.item())
        step += 1
        if progress:
            progress(step, cfg.steps)
        if step % 250 == 0 or step == cfg.steps or (deadline is not None and time.time() > deadline):
            with atomic_path(ckpt) as tmp:
                torch.save({"model": head.state_dict(), "optimizer": opt.state_dict(), "scheduler": sched.state_dict(),
                            "step": step, "losses": losses}, tmp)
            if deadline is not None and time.time() > deadline and step < cfg.steps:
                break
    head.eval()
    return losses


@torch.no_grad()
def validation_cosine(head: SuggestionHead, data: dict) -> dict:
    """Mean cosine of the predicted point to the held-out queries' rewrites, against the query itself."""
    idx = np.flatnonzero(data["val"])
    if not len(idx):
        return {}
    ctx = torch.from_numpy(data["context"][data["walk"][idx]].astype(np.float32))
    target = F.normalize(torch.from_numpy(data["rewrite"][idx].astype(np.float32)), dim=-1)
    pred = head.eval()(ctx)
    return {"rewrites": len(idx), "cos_predicted": round(float((pred * target).sum(-1).mean()), 4),
            "cos_query": round(float((F.normalize(ctx[:, 0], dim=-1) * target).sum(-1).mean()), 4),
            "cos_feedback_mean": round(float((F.normalize(ctx[:, 1:].mean(1), dim=-1) * target).sum(-1).mean()), 4)}


def train_suggester(dataset, kind: str, encoder, store: ArtifactStore, cfg: SuggesterTraining = SuggesterTraining(),
                    progress: ProgressFn | None = None, deadline: float | None = None, command: str = ""):
    """Train (or resume, or load) a suggester of ``kind`` on a reformulation dataset artifact.
    Returns the loaded Suggester, or None when ``deadline`` stopped it (checkpoint kept)."""
    cfg.validate()
    if kind not in KINDS:
        raise DataError(f"--model {kind!r}: expected one of {', '.join(KINDS)}")
    if dataset.params.get("encoder") != encoder.id:
        raise DataError(f"reformulation dataset of encoder {dataset.params.get('encoder')!r}, not {encoder.id!r}")
    params = {"dataset": dataset.key, "kind": kind, "encoder": encoder.id, "training": asdict(cfg), "arch": ARCH}
    found = store.load("suggester", params)
    if found is not None:
        return load_suggester(found.path, encoder)
    data = training_arrays(dataset.path, cfg.validation_share)
    model_cfg = SuggesterConfig(kind, int(data["context"].shape[-1]), encoder.id, cfg.layers, cfg.heads, cfg.dropout)
    torch.manual_seed(cfg.seed)
    head = SuggestionHead(model_cfg)
    work = store.work_dir("suggester", params)
    started = time.time()
    losses = train_loop(head, data, cfg, work, progress, deadline)
    if len(losses) < cfg.steps:
        return None
    card = {"kind": kind, "label": MODEL_LABELS[kind], "config": asdict(model_cfg), "training": asdict(cfg),
            "dataset": {"key": dataset.key, "params": dataset.params, **data["stats"]},
            "training_rewrites": int((~data["val"]).sum()), "validation": validation_cosine(head, data),
            "loss_first_100": float(np.mean(losses[:100])), "loss_last_500": float(np.mean(losses[-500:])),
            "train_seconds_last_call": round(time.time() - started, 1), "command": command,
            "parameters": sum(p.numel() for p in head.parameters())}

    def build(tmp: Path) -> dict:
        save_suggester(head, tmp, card)
        return {"steps": cfg.steps}

    art = store.get_or_build("suggester", params, build)
    store.clear_work_dir("suggester", params)
    return load_suggester(art.path, encoder)


def save_suggester(head: SuggestionHead, folder: Path, card: dict) -> None:
    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    with atomic_path(folder / WEIGHTS) as tmp:
        save_file({k: v.half().contiguous() for k, v in head.state_dict().items()}, str(tmp))
    with atomic_path(folder / CARD) as tmp:
        Path(tmp).write_text(json.dumps({**card, "config": asdict(head.cfg)}, indent=1, default=str))


def read_suggester_card(folder: Path) -> dict:
    path = Path(folder) / CARD
    try:
        card = json.loads(path.read_text())
        cfg = SuggesterConfig(**card["config"])
        if cfg.arch != ARCH:
            raise KeyError("arch")
    except (OSError, json.JSONDecodeError, KeyError, TypeError) as exc:
        raise DecoderError(f"{path}: not a suggester card ({type(exc).__name__}: {exc})") from None
    return card


def load_suggester(folder: Path, encoder, decoder=None) -> Suggester:
    """A suggester checkpoint; one line when it was trained for another encoder."""
    from safetensors.torch import load_file

    folder = Path(folder)
    card = read_suggester_card(folder)
    cfg = SuggesterConfig(**card["config"])
    if cfg.encoder_id != encoder.id or cfg.dim != int(encoder.dim):
        raise DecoderError(f"{folder}: this suggester was trained for encoder {cfg.encoder_id!r} ({cfg.dim} dimensions); "
                           f"{encoder.id!r} has {encoder.dim}")
    head = SuggestionHead(cfg)
    try:
        head.load_state_dict({k: v.float() for k, v in load_file(str(folder / WEIGHTS)).items()})
    except (OSError, RuntimeError, ValueError, KeyError) as exc:
        raise DecoderError(f"{folder / WEIGHTS}: unreadable or incomplete suggester weights ({str(exc).splitlines()[0]})") from None
    return Suggester(head.eval(), {**card, "_folder": str(folder)})


def shipped_suggesters(encoder_id: str) -> dict[str, Path]:
    """kind -> folder of the suggesters shipped in assets/suggesters for an encoder."""
    out = {}
    for card_path in sorted(ASSETS.glob("*/card.json")) if ASSETS.is_dir() else []:
        try:
            card = read_suggester_card(card_path.parent)
        except DecoderError:
            continue
        if card["config"]["encoder_id"] == encoder_id:
            out.setdefault(card["config"]["kind"], card_path.parent)
    return out


# -- suggesting -------------------------------------------------------------------------------------
def _overlap(a: set[str], b: set[str]) -> float:
    return len(a & b) / max(1, len(a | b))


def pick_diverse(texts: list[str], scores: np.ndarray, n: int, penalty: float = 0.5) -> list[int]:
    """Greedy maximal marginal relevance: score minus ``penalty`` x the largest word Jaccard with
    an already picked text. Returns indices in pick order."""
    bags = [set(words(t)) for t in texts]
    chosen: list[int] = []
    left = list(range(len(texts)))
    while left and len(chosen) < n:
        best = max(left, key=lambda i: scores[i] - penalty * max((_overlap(bags[i], bags[j]) for j in chosen), default=0.0))
        chosen.append(best)
        left.remove(best)
    return chosen


class Suggester:
    """A trained suggestion head: ``point`` predicts where a better query lies; ``suggest`` decodes
    it (and points on the way from the query) into up to 10 distinct natural-language queries."""

    def __init__(self, head: SuggestionHead, card: dict):
        self.head = head
        self.card = card
        self.kind = head.cfg.kind
        self.encoder_id = head.cfg.encoder_id
        self.label = MODEL_LABELS[self.kind]

    @torch.no_grad()
    def point(self, context: np.ndarray) -> np.ndarray:
        """(n, 1 + FEEDBACK, dim) or (1 + FEEDBACK, dim) -> predicted rewrite embedding(s)."""
        ctx = torch.from_numpy(np.asarray(context, dtype=np.float32))
        single = ctx.ndim == 2
        out = self.head(ctx[None] if single else ctx).numpy()
        return out[0] if single else out

    def suggest(self, space, query: str, n: int = MAX_SUGGESTIONS, seed: int = 0) -> list[str]:
        from eqi_core.decoder.traversal import check_query

        query = check_query(query)
        if not 1 <= n <= MAX_SUGGESTIONS:
            raise DecoderError(f"n = {n}: between 1 and {MAX_SUGGESTIONS} suggestions")
        if space.encoder.id != self.encoder_id:
            raise DecoderError(f"suggester for encoder {self.encoder_id!r} cannot use {space.encoder.id!r} embeddings")
        q = space.encode([query])[0]
        _, fb = space.top(q[None], FEEDBACK)
        target = self.point(np.concatenate([q[None], space.ranker.doc_embeddings[fb[0]]]))
        return decode_suggestions(space, query, q, target, n, seed)


def decode_suggestions(space, query: str, q: np.ndarray, target: np.ndarray, n: int = MAX_SUGGESTIONS,
                       seed: int = 0) -> list[str]:
    """Decode points from the query towards ``target`` (and a little past it) with beam search, plus
    nucleus samples at ``target``; keep fluent distinct candidates other than the query; rank by
    cosine to ``target`` with a word-overlap penalty (maximal marginal relevance)."""
    model = space.model
    fractions = np.array([0.5, 0.75, 1.0, 1.25])[:, None]
    points = (q[None] + fractions * (target - q)[None]).astype(np.float32)
    pool = [c.text for cands in model.decode(points, n=3, beam=4) for c in cands]
    if hasattr(model, "sample"):
        pool += model.sample(target, n=12, top_p=0.9, seed=seed, temperature=0.8)
    own = " ".join(words(query))
    seen, texts = set(), []
    for text in pool:
        key = " ".join(words(text))
        if key and key != own and key not in seen and not repeats_a_content_word(text):
            seen.add(key)
            texts.append(" ".join(text.split()))
    if not texts:
        return []
    emb = space.encode(texts)
    scores = emb @ (target / np.linalg.norm(target))
    return [texts[i] for i in pick_diverse(texts, scores, n)]


def find_dataset(store: ArtifactStore, encoder_id: str):
    """The newest reformulation dataset in the store for an encoder, or a one-line error."""
    from eqi_core.suggestion.dataset import KIND

    found = [a for a in store.list(KIND) if a.params.get("encoder") == encoder_id]
    if not found:
        raise DataError(f"no reformulation dataset for encoder {encoder_id!r} in {store.root}: "
                        "build one with `eqi reformulations -c <collection with judgments>`")
    return max(found, key=lambda a: a.manifest.get("created", ""))


def find_suggester(kind: str, encoder, store: ArtifactStore, folder: Path | None = None) -> Suggester:
    """``folder`` if given; else the newest suggester of ``kind`` trained in the store for this
    encoder; else the one shipped in assets/suggesters; else a one-line error."""
    if kind not in KINDS:
        raise DecoderError(f"suggestion model {kind!r}: expected one of {', '.join(KINDS)}")
    if folder is not None:
        sugg = load_suggester(folder, encoder)
        if sugg.kind != kind:
            raise DecoderError(f"{folder}: a {sugg.kind!r} suggester, not {kind!r}")
        return sugg
    trained = [a for a in store.list("suggester") if a.params.get("kind") == kind and a.params.get("encoder") == encoder.id]
    if trained:
        return load_suggester(max(trained, key=lambda a: a.manifest.get("created", "")).path, encoder)
    shipped = shipped_suggesters(encoder.id)
    if kind in shipped:
        return load_suggester(shipped[kind], encoder)
    raise DecoderError(f"no {kind!r} suggester for encoder {encoder.id!r}: train one with "
                       f"`eqi train-suggester --model {kind}` (after `eqi reformulations`)")
