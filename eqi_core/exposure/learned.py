"""Metric learning for EQI (paper section 4): heads on frozen retriever embeddings such that a
nearest-neighbour search in the new space approximates the reverse nearest-neighbour search of
the retriever.

Training data is Algorithm 1: sample Q_train, take each training query's top n_q->d passages
(the cache C), sample D_train from the passages they retrieved, and for each training passage its
n_d->q nearest training queries, each labelled with rho(d, sigma_q) from C or infinity. Triples
(d, q+, q-) come from Case 1 (both expose, q+ ranks d higher) with probability alpha and Case 2
(q+ exposes, q- does not) otherwise; the loss is RankNet's pairwise cross-entropy
log(1 + exp(-(u(d, q+) - u(d, q-)))); Adam, lr 1e-4; dropout 0.1.

Heads, on both the query and the passage side:
- Residual: y = x + FF(x), FF one hidden layer of dim/2, output dim;
- Append: y = (x, FF(x)), FF four layers (hidden 64, output 32);
ReLU, dropout and layer norm on hidden layers. The Residual output layer starts at zero, so an
untrained Residual head equals dense-reverse (Append keeps a random start: with both appended
parts at zero their product would have no gradient).
"""
from __future__ import annotations

import json
from contextlib import nullcontext
from dataclasses import asdict, dataclass
from functools import cached_property
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import load_file, save_file
from torch import nn

from eqi_core.errors import DataError
from eqi_core.exposure.exact import ExposureMap
from eqi_core.progress import ProgressFn
from eqi_core.rankers.dense import InnerProductIndex, exact_topk
from eqi_core.store import ArtifactStore
from eqi_core.threads import one_torch_thread, subnormals_flushed

ARCHITECTURES = ("residual", "append")
FEW_ROWS = 1024  # ``ExposureModel.transform`` runs this many rows or fewer on one torch thread
HEAD_VERSION = 3  # part of every stored head's key: bump when the architecture or training changes


def _block(n_in: int, n_out: int, dropout: float) -> list[nn.Module]:
    return [nn.Linear(n_in, n_out), nn.ReLU(), nn.Dropout(dropout), nn.LayerNorm(n_out)]


class NothingExposedToTrainOn(DataError):
    """The training queries put no (non-held-out) passage in their top results: nothing to learn from.
    A grid over training sizes leaves such a cell empty instead of stopping."""


class Head(nn.Module):
    """Residual (x + FF(x)) or Append ((x, FF(x))) transformation of a frozen embedding."""

    def __init__(self, dim: int, arch: str, dropout: float = 0.1):
        super().__init__()
        if arch not in ARCHITECTURES:
            raise DataError(f"architecture {arch!r}: expected one of {', '.join(ARCHITECTURES)}")
        self.arch = arch
        if arch == "residual":
            layers = _block(dim, dim // 2, dropout) + [nn.Linear(dim // 2, dim)]
        else:
            layers = _block(dim, 64, dropout) + _block(64, 64, dropout) + _block(64, 64, dropout) + [nn.Linear(64, 32)]
        if arch == "residual":  # start as the identity: an untrained Residual head is dense-reverse
            nn.init.zeros_(layers[-1].weight)
            nn.init.zeros_(layers[-1].bias)
        self.ff = nn.Sequential(*layers)
        # Retriever embeddings are unit-norm (entries ~ 1/sqrt(dim)) while layer-normed hidden units are
        # ~1: scaling the input to unit-variance entries keeps FF(x) and x commensurate. Rankings are
        # unchanged by the scale; without it a few Adam steps let FF(x) swamp x.
        self.scale = float(dim) ** 0.5

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x * self.scale
        return x + self.ff(x) if self.arch == "residual" else torch.cat([x, self.ff(x)], dim=-1)


class ExposureModel(nn.Module):
    """Separate heads for queries (h_Q) and passages (h_D); u(d, q) = h_Q(q) . h_D(d)."""

    def __init__(self, dim: int, arch: str, dropout: float = 0.1):
        super().__init__()
        self.query_head = Head(dim, arch, dropout)
        self.passage_head = Head(dim, arch, dropout)

    def score(self, q: torch.Tensor, d: torch.Tensor) -> torch.Tensor:
        return (self.query_head(q) * self.passage_head(d)).sum(-1)

    @torch.inference_mode()
    def transform(self, x: np.ndarray, side: str, batch: int = 8192) -> np.ndarray:
        """h_Q or h_D of each row. A few rows (one passage, a page's queries) run on one torch thread:
        two gain nothing on a 384-wide MLP, and torch's second OpenMP worker keeps spinning after it,
        taking a core from the log search that follows (2026-12-01, Intel 6/207, one passage over the
        full WordNet log: that search 9.9 ms after a two-thread head against 6.4 ms after a one-thread
        one, the head's own p95 11.5 against 0.8 ms)."""
        self.eval()
        head = self.query_head if side == "query" else self.passage_head
        with one_torch_thread() if len(x) <= FEW_ROWS else nullcontext():
            out = [head(torch.from_numpy(np.ascontiguousarray(x[i:i + batch]))).numpy() for i in range(0, len(x), batch)]
        return np.concatenate(out) if out else np.zeros((0, x.shape[1]), dtype=np.float32)


@dataclass(frozen=True)
class TrainingConfig:
    arch: str = "residual"
    n_train_queries: int | None = None  # None: every query of the log
    n_train_passages: int = 5000
    n_dq: int = 100  # n_d->q: nearest training queries labelled per training passage
    alpha: float = 0.5  # probability of a Case 1 triple
    steps: int = 2000
    batch_size: int = 1000
    lr: float = 1e-4
    dropout: float = 0.1
    seed: int = 0

    def validate(self) -> None:
        if self.arch not in ARCHITECTURES:
            raise DataError(f"architecture {self.arch!r}: expected one of {', '.join(ARCHITECTURES)}")
        for name in ("n_train_passages", "n_dq", "steps", "batch_size"):
            if getattr(self, name) <= 0:
                raise DataError(f"{name} = {getattr(self, name)}: expected a positive number")
        if self.n_train_queries is not None and self.n_train_queries <= 0:
            raise DataError(f"n_train_queries = {self.n_train_queries}: expected a positive number")
        if not 0 <= self.alpha <= 1:
            raise DataError(f"alpha = {self.alpha}: expected a probability in [0, 1]")
        if not 0 < self.lr < 1:  # NaN fails too
            raise DataError(f"lr = {self.lr}: expected a learning rate in (0, 1)")
        if not 0 <= self.dropout < 1:
            raise DataError(f"dropout = {self.dropout}: expected a probability in [0, 1)")


@dataclass
class TrainingData:
    """Psi_train of Algorithm 1, flattened: for each training passage, labelled candidate queries."""

    train_queries: np.ndarray  # query indices of Q_train
    docs: np.ndarray  # passage index per labelled pair
    queries: np.ndarray  # query index per labelled pair
    ranks: np.ndarray  # rho(d, sigma_q), np.inf when q does not expose d

    def summary(self) -> dict:
        exposing = np.isfinite(self.ranks)
        return {"train_queries": int(len(self.train_queries)), "train_passages": int(len(np.unique(self.docs))),
                "labelled_pairs": int(len(self.ranks)), "exposing_pairs": int(exposing.sum())}


def _sample_training_sets(exposure: ExposureMap, config: TrainingConfig, exclude_docs: np.ndarray | None,
                          query_pool: np.ndarray | None) -> tuple[np.random.Generator, np.ndarray, ExposureMap, np.ndarray]:
    """Lines 1-9 of Algorithm 1: Q_train, the cache C restricted to it, and D_train (with the random
    generator where they leave it, for the lines after)."""
    config.validate()
    rng = np.random.default_rng(config.seed)
    n_q = len(exposure.query_ids)
    pool = np.arange(n_q) if query_pool is None else np.asarray(query_pool, dtype=np.int64)
    n_train_q = len(pool) if config.n_train_queries is None else min(config.n_train_queries, len(pool))
    q_train = np.sort(rng.choice(pool, size=n_train_q, replace=False))  # line 1
    mask = np.zeros(n_q, dtype=bool)
    mask[q_train] = True
    cache = exposure.restricted_to(mask)  # lines 2-8: C and D_candidate
    candidates = np.flatnonzero(cache.counts() > 0)
    if exclude_docs is not None and len(exclude_docs):
        candidates = np.setdiff1d(candidates, exclude_docs)
    if len(candidates) == 0:
        raise NothingExposedToTrainOn("no training passage is exposed by any training query; use more training queries")
    d_train = np.sort(rng.choice(candidates, size=min(config.n_train_passages, len(candidates)), replace=False))  # line 9
    return rng, q_train, cache, d_train


def training_passages(exposure: ExposureMap, config: TrainingConfig, exclude_docs: np.ndarray | None = None,
                      query_pool: np.ndarray | None = None) -> np.ndarray:
    """D_train of a head trained with these inputs (passage indices, sorted): the passages whose
    exposing queries it learned, so that a passage's list from the head can be told in-sample."""
    return _sample_training_sets(exposure, config, exclude_docs, query_pool)[3]


def algorithm1(exposure: ExposureMap, query_emb: np.ndarray, doc_emb: np.ndarray, config: TrainingConfig,
               exclude_docs: np.ndarray | None = None, query_pool: np.ndarray | None = None) -> TrainingData:
    """Algorithm 1 of the paper (training data generation), given the exact exposure map.

    Q_train is sampled from ``query_pool`` (default: the whole log). Lines 4-8 (retrieve and cache
    top n_q->d for Q_train) are the exposure map restricted to Q_train; held-out test passages
    (``exclude_docs``) never enter D_train.
    """
    rng, q_train, cache, d_train = _sample_training_sets(exposure, config, exclude_docs, query_pool)
    _, nearest = exact_topk(doc_emb[d_train], query_emb[q_train], config.n_dq)  # line 12
    nearest = q_train[nearest]
    docs = np.repeat(d_train, nearest.shape[1])
    queries = nearest.ravel()
    ranks = np.concatenate([cache.ranks_of(int(d), row) for d, row in zip(d_train, nearest)])  # lines 13-21
    return TrainingData(q_train, docs, queries, ranks)


class TripleSampler:
    """Samples (d, q+, q-) per the paper's Case 1 (prob. alpha) and Case 2 from TrainingData."""

    def __init__(self, data: TrainingData, alpha: float, seed: int = 0):
        self.rng = np.random.default_rng(seed)
        self.alpha = alpha
        exposing = np.isfinite(data.ranks)
        self.pos_docs, self.pos_queries, self.pos_ranks = data.docs[exposing], data.queries[exposing], data.ranks[exposing]
        self.neg_docs, self.neg_queries = data.docs[~exposing], data.queries[~exposing]
        # per-passage slices of the positives and negatives (inputs are grouped by passage)
        self.pos_start, self.pos_count = self._slices(self.pos_docs)
        self.neg_start, self.neg_count = self._slices(self.neg_docs)
        if len(self.pos_docs) == 0:
            raise DataError("the training data has no exposing (passage, query) pair")

    @staticmethod
    def _slices(docs: np.ndarray) -> tuple[dict, dict]:
        uniq, start, count = np.unique(docs, return_index=True, return_counts=True)
        return dict(zip(uniq.tolist(), start.tolist())), dict(zip(uniq.tolist(), count.tolist()))

    def _partner(self, docs: np.ndarray, starts: dict, counts: dict) -> tuple[np.ndarray, np.ndarray]:
        """A random entry index for each passage from its slice; -1 where it has none."""
        s = np.array([starts.get(int(d), -1) for d in docs])
        c = np.array([counts.get(int(d), 0) for d in docs])
        offset = (self.rng.random(len(docs)) * np.maximum(c, 1)).astype(np.int64)
        return np.where(c > 0, s + offset, -1), c

    def sample(self, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(passage, q+, q-) index arrays; invalid draws (no partner, equal ranks) are dropped."""
        a = self.rng.integers(0, len(self.pos_docs), size=n)
        docs = self.pos_docs[a]
        case1 = self.rng.random(n) < self.alpha
        out_d, out_p, out_n = [], [], []
        if case1.any():
            d1 = docs[case1]
            b, _ = self._partner(d1, self.pos_start, self.pos_count)
            ok = b >= 0
            ra, rb = self.pos_ranks[a[case1]][ok], self.pos_ranks[b[ok]]
            qa, qb = self.pos_queries[a[case1]][ok], self.pos_queries[b[ok]]
            differ = ra != rb
            better_a = ra < rb
            out_d.append(d1[ok][differ])
            out_p.append(np.where(better_a, qa, qb)[differ])
            out_n.append(np.where(better_a, qb, qa)[differ])
        if (~case1).any():
            d2 = docs[~case1]
            b, _ = self._partner(d2, self.neg_start, self.neg_count)
            ok = b >= 0
            out_d.append(d2[ok])
            out_p.append(self.pos_queries[a[~case1]][ok])
            out_n.append(self.neg_queries[b[ok]])
        return np.concatenate(out_d), np.concatenate(out_p), np.concatenate(out_n)


def train_exposure_model(data: TrainingData, query_emb: np.ndarray, doc_emb: np.ndarray, config: TrainingConfig,
                         progress: ProgressFn | None = None) -> tuple[ExposureModel, list[float]]:
    """Train h_Q and h_D with the RankNet loss on sampled triples; returns the model and loss curve."""
    config.validate()
    # One torch thread: a head's products are small (a batch of 1,000 x 384 into 192). Two threads
    # are 1.4x faster on an idle 2-core machine (25-31 against 41-46 ms a step) but 2-4x slower than
    # one as soon as another process holds a core (93-188 against 41-43 ms), which turned a
    # one-minute training into eleven. One thread also gives the same bits on any number of cores.
    # Subnormals flushed: where the loss nears zero they made each step ten times slower.
    with one_torch_thread(), subnormals_flushed():
        return _train(data, query_emb, doc_emb, config, progress)


def _train(data: TrainingData, query_emb: np.ndarray, doc_emb: np.ndarray, config: TrainingConfig,
           progress: ProgressFn | None) -> tuple[ExposureModel, list[float]]:
    torch.manual_seed(config.seed)
    model = ExposureModel(query_emb.shape[1], config.arch, config.dropout)
    opt = torch.optim.Adam(model.parameters(), lr=config.lr, betas=(0.9, 0.999), eps=1e-8)
    sampler = TripleSampler(data, config.alpha, config.seed)
    q_all, d_all = torch.from_numpy(query_emb), torch.from_numpy(doc_emb)
    losses = []
    model.train()
    for step in range(config.steps):
        d, qp, qn = sampler.sample(config.batch_size)
        if len(d) == 0:
            continue
        dv = model.passage_head(d_all[d])
        delta = (model.query_head(q_all[qp]) * dv).sum(-1) - (model.query_head(q_all[qn]) * dv).sum(-1)
        loss = nn.functional.softplus(-delta).mean()  # log(1 + e^-delta), RankNet
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
        if progress and (step % 50 == 0 or step == config.steps - 1):
            progress(step + 1, config.steps)
    model.eval()
    return model, losses


@dataclass
class LearnedEQI:
    """A trained head pair with the transformed query log, ready to retrieve exposing queries."""

    model: ExposureModel
    query_space: np.ndarray  # h_Q of every logged query
    name: str
    trained_on: np.ndarray | None = None  # D_train (passage indices, sorted) where known

    @classmethod
    def from_model(cls, model: ExposureModel, query_emb: np.ndarray, name: str,
                   trained_on: np.ndarray | None = None) -> LearnedEQI:
        return cls(model, model.transform(query_emb, "query"), name, trained_on)

    def was_trained_on(self, doc: int) -> bool | None:
        """Whether this passage's exposing queries were in the head's training data (None: unknown)."""
        if self.trained_on is None:
            return None
        i = np.searchsorted(self.trained_on, doc)
        return bool(i < len(self.trained_on) and self.trained_on[i] == doc)

    @cached_property
    def index(self) -> InnerProductIndex:
        return InnerProductIndex(self.query_space)

    def retrieve(self, passage_emb: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
        scores, idx = self.index.search(self.model.transform(passage_emb, "passage"), n)
        return idx, scores


def save_model(model: ExposureModel, folder: Path, config: TrainingConfig, extra: dict) -> None:
    """Weights as safetensors, parameters as JSON (never a pickle)."""
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(folder / "model.safetensors"))
    (folder / "config.json").write_text(json.dumps({"config": asdict(config), **extra}, indent=1, default=str), encoding="utf-8")


def load_model(folder: Path, dim: int) -> tuple[ExposureModel, dict]:
    info = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    config = TrainingConfig(**info["config"])
    model = ExposureModel(dim, config.arch, config.dropout)
    model.load_state_dict(load_file(str(folder / "model.safetensors")))
    model.eval()
    return model, info


def train_or_load(store: ArtifactStore, params: dict, exposure: ExposureMap, query_emb: np.ndarray, doc_emb: np.ndarray,
                  config: TrainingConfig, exclude_docs: np.ndarray | None, progress: ProgressFn | None = None,
                  query_pool: np.ndarray | None = None) -> tuple[ExposureModel, dict]:
    """The trained model for these inputs from the store, training it (Algorithm 1 + RankNet) once.
    ``params`` must identify the exposure map, the held-out passages and the query pool."""

    def build(tmp: Path) -> dict:
        data = algorithm1(exposure, query_emb, doc_emb, config, exclude_docs, query_pool)
        model, losses = train_exposure_model(data, query_emb, doc_emb, config, progress)
        summary = data.summary()
        save_model(model, tmp, config, {"training_data": summary, "loss_first": losses[:1], "loss_last_100_mean":
                                        float(np.mean(losses[-100:])) if losses else None})
        return summary

    art = store.get_or_build("exposure-head", {**params, "config": asdict(config), "version": HEAD_VERSION}, build)
    return load_model(art.path, query_emb.shape[1])
