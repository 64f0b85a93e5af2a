"""The natural-language query decoder: the encoder's own BERT layers, warm-started, run causally.

Design (bert2bert, Rothe et al. 2020, sized for a 2-core CPU): the decoder is a copy of the
encoder's pretrained transformer (all-MiniLM-L6-v2: 6 post-LN layers, width 384) used left to
right. The embedding to decode enters as ``n_prefix`` vectors in front of the tokens (a learned
projection), so no cross-attention weights start from scratch. Input tokens use the encoder's
frozen word embeddings; the output softmax is tied to them and limited to the tokens seen in the
training text (the ``out_ids`` buffer: a decoder never emits a token it never read). Decoding keeps
a key/value cache per layer, so a beam step costs one token per row.

Checkpoints hold the trained layers, the prefix projection, the output head and ``out_ids``;
the word embeddings come from the encoder at load time (a hash of its vocabulary is checked).
"""
from __future__ import annotations

import math
import os
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F  # noqa: N812 - the usual name

from eqi_core.decoder.base import EncoderBinding
from eqi_core.threads import one_torch_thread

ARCH = "bert-prefix"


@dataclass
class BertDecoderConfig(EncoderBinding):
    n_out: int  # size of the output vocabulary (``out_ids``)
    arch: str = ARCH
    hidden: int = 384
    n_layers: int = 6
    n_heads: int = 12
    d_ff: int = 1536
    n_prefix: int = 8
    max_len: int = 32
    dropout: float = 0.1
    eps: float = 1e-12
    n_styles: int = 0  # learned style vectors added to the prefix (0: none; checkpoints before styles)


STYLES = ("query", "sentence")  # style 0: the query logs' texts; 1: sentences cut from passages


def linear(layer: nn.Linear, x: torch.Tensor) -> torch.Tensor:
    """``layer(x)``; inside ``sampling_products`` (sampling: no gradient, fp32 on the CPU) by a
    ``_ConstantProduct`` on a transposed copy of the weights, made once per weight version.
    torch's CPU products (MKL) run the few-row shapes of sampling 1.3-6x slower than numpy's
    OpenBLAS on the AMD hosts this project runs on (34 rows x 384 -> 1,536: 0.70 ms against 0.53;
    x 384 -> 26,271 outputs: 15.8 ms against 7.2, 2 threads), and OpenBLAS about twice slower than
    onnxruntime with the weight packed once; the results agree to float rounding."""
    if not _sampling_path(x):
        return layer(x)
    return _constant_product(x, layer, layer.weight, layer.bias)


def _sampling_path(x: torch.Tensor) -> bool:
    """Whether ``x``'s products go through ``_ConstantProduct``: inside ``sampling_products``, no
    gradient, fp32 on the CPU."""
    return bool(_SAMPLING_DEPTH) and not torch.is_grad_enabled() and x.device.type == "cpu" and x.dtype == torch.float32


_SAMPLING_LOCK = threading.Lock()
_SAMPLING_DEPTH: list[int] = []  # one entry per nesting level (empty: off)


@contextmanager
def sampling_products():
    """The decoder's products through ``_ConstantProduct`` (``linear``) and torch at one thread, for
    sampling's few rows per step. torch's OpenMP workers spin between operations and took the 2
    cores from OpenBLAS's threads: ten PRF suggestions took 9 s with both at 2 threads, 1.4-1.5 s
    like this against 1.5-1.6 s with torch alone (Zen 3 host). A beam search over more than
    ``FEW_BEAM_ROWS`` rows keeps torch at 2 threads: its hundreds of rows per step (one batch of 60
    texts at beam 8: 13.1 s against 23.4 s) and its top-k over beam x 26k scores each want both. Nested and
    concurrent uses share one setting, restored when the last one ends (``threads.one_torch_thread``)."""
    with one_torch_thread():
        with _SAMPLING_LOCK:
            _SAMPLING_DEPTH.append(1)
        try:
            yield
        finally:
            with _SAMPLING_LOCK:
                _SAMPLING_DEPTH.pop()


# sampling's products: "onnxruntime" (each weight a constant, packed once) or "numpy" (OpenBLAS)
PRODUCTS = os.environ.get("EQI_DECODER_PRODUCTS", "onnxruntime")
if PRODUCTS not in ("onnxruntime", "numpy"):
    raise ValueError(f"EQI_DECODER_PRODUCTS={PRODUCTS!r}: expected onnxruntime or numpy")


class _ConstantProduct:
    """x @ wt (+ b) with ``wt`` fixed: numpy's OpenBLAS, or one onnxruntime MatMul (+ Add) whose
    weight is a constant of the graph, so MLAS packs it once instead of on every call. For
    sampling's few rows the packing is most of the work: 20 rows x 384 -> 26,271 outputs took 7.1
    ms through numpy against 3.6 through onnxruntime, a layer's products 1.1-1.8x faster (Zen 3,
    2 threads); the results agree to float rounding (4e-6), and the suggestions came out identical.
    ``make_wt`` makes the (contiguous) weight: for the session, else on first use through numpy
    (``PRODUCTS == "numpy"``, or a forked child, which cannot use its parent's session); the
    session keeps only its packed copy."""

    def __init__(self, make_wt, b: np.ndarray | None):
        self.make_wt, self.b, self.wt = make_wt, b, None
        self.session = None
        if PRODUCTS == "onnxruntime":
            wt = make_wt()
            self.session, self.n_out = _product_session(wt, b), wt.shape[1]
        else:
            self.wt = make_wt()
            self.n_out = self.wt.shape[1]
        self.pid = os.getpid()

    def __call__(self, x: np.ndarray) -> np.ndarray:
        if self.session is not None and self.pid == os.getpid():
            return self.session.run(None, {"x": np.ascontiguousarray(x)})[0]
        if self.wt is None:
            self.wt = self.make_wt()
        out = x @ self.wt
        if self.b is not None:
            out += self.b
        return out


def _product_session(wt: np.ndarray, b: np.ndarray | None):
    """The onnxruntime session behind ``_ConstantProduct``. The weight reaches it as external data
    (a file in a temporary folder, gone once the session is made) rather than inside the model's
    bytes: the 40 MB output layer's session took 0.07 s to make and 50 MB more at the peak, against
    0.46 s and 200 MB through protobuf."""
    import tempfile

    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    from eqi_core.encoders import no_spinning
    from eqi_core.rankers.topk import _threads

    with tempfile.TemporaryDirectory(prefix="eqi-product-", ignore_cleanup_errors=True) as folder:
        np.ascontiguousarray(wt, dtype=np.float32).tofile(Path(folder) / "w.bin")
        w = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=wt.shape, data_location=TensorProto.EXTERNAL)
        for key, value in (("location", "w.bin"), ("offset", "0"), ("length", str(wt.size * 4))):
            w.external_data.add(key=key, value=value)
        nodes = [helper.make_node("MatMul", ["x", "w"], ["xw" if b is not None else "y"])]
        weights = [w]
        if b is not None:
            nodes.append(helper.make_node("Add", ["xw", "b"], ["y"]))
            weights.append(numpy_helper.from_array(np.asarray(b, dtype=np.float32), "b"))
        graph = helper.make_graph(nodes, "product", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["rows", wt.shape[0]])],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["rows", wt.shape[1]])], weights)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 8
        onnx.save(model, Path(folder) / "product.onnx")
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = _threads()
        opts.inter_op_num_threads = 1
        no_spinning(opts)  # torch's and numpy's work between two products needs the cores
        return ort.InferenceSession(str(Path(folder) / "product.onnx"), opts, providers=["CPUExecutionProvider"])


def _constant_product(x: torch.Tensor, owner: nn.Module, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """x @ weight.T (+ bias) by a ``_ConstantProduct`` on the weight's transpose, cached on ``owner``
    and made again when the weight or the bias changes (their version counters)."""
    key = tuple((t.data_ptr(), t._version, tuple(t.shape)) for t in (weight, bias) if t is not None)
    cached = owner.__dict__.get(f"_product_{PRODUCTS}")
    if cached is None or cached[0] != key:
        w = weight.detach().numpy()
        cached = (key, _ConstantProduct(lambda: np.ascontiguousarray(w.T), None if bias is None else bias.detach().numpy().copy()))
        owner.__dict__[f"_product_{PRODUCTS}"] = cached
    product = cached[1]
    out = product(x.reshape(-1, x.shape[-1]).numpy())
    return torch.from_numpy(out).view(*x.shape[:-1], product.n_out)


def _constant_fused(x: torch.Tensor, owner: nn.Module, layers: tuple[nn.Linear, ...]) -> tuple[torch.Tensor, ...]:
    """``layer(x)`` for each of ``layers`` (same input width) from one product with their weights
    side by side, cached on ``owner`` like ``_constant_product``'s; views of one result."""
    tensors = [t for layer in layers for t in (layer.weight, layer.bias)]
    key = tuple((t.data_ptr(), t._version, tuple(t.shape)) for t in tensors)
    cached = owner.__dict__.get(f"_fused_{PRODUCTS}")
    if cached is None or cached[0] != key:
        weights = [layer.weight.detach().numpy() for layer in layers]
        cached = (key, _ConstantProduct(lambda: np.ascontiguousarray(np.concatenate([w.T for w in weights], axis=1)),
                                        np.concatenate([layer.bias.detach().numpy() for layer in layers])))
        owner.__dict__[f"_fused_{PRODUCTS}"] = cached
    product = cached[1]
    out = torch.from_numpy(product(x.reshape(-1, x.shape[-1]).numpy())).view(*x.shape[:-1], product.n_out)
    return tuple(out.split([layer.weight.shape[0] for layer in layers], dim=-1))


class Block(nn.Module):
    """One BERT layer (post-LN), causal, with an optional key/value cache for decoding."""

    def __init__(self, cfg: BertDecoderConfig):
        super().__init__()
        h = cfg.hidden
        self.n_heads, self.p = cfg.n_heads, cfg.dropout
        self.query, self.key, self.value = nn.Linear(h, h), nn.Linear(h, h), nn.Linear(h, h)
        self.attn_out = nn.Linear(h, h)
        self.attn_norm = nn.LayerNorm(h, eps=cfg.eps)
        self.inter = nn.Linear(h, cfg.d_ff)
        self.out = nn.Linear(cfg.d_ff, h)
        self.out_norm = nn.LayerNorm(h, eps=cfg.eps)

    def _heads(self, x: torch.Tensor) -> torch.Tensor:
        b, t, h = x.shape
        return x.view(b, t, self.n_heads, h // self.n_heads).transpose(1, 2)

    def forward(self, x: torch.Tensor, cache: tuple[torch.Tensor, torch.Tensor] | None = None):
        if _sampling_path(x):  # sampling: the three projections as one product (one call, one pass over x)
            q, k, v = (self._heads(t) for t in _constant_fused(x, self, (self.query, self.key, self.value)))
        else:
            q, k, v = self._heads(linear(self.query, x)), self._heads(linear(self.key, x)), self._heads(linear(self.value, x))
        if cache is not None:
            k, v = torch.cat([cache[0], k], dim=2), torch.cat([cache[1], v], dim=2)
        # a new token attends to everything cached; a whole sequence attends causally
        a = F.scaled_dot_product_attention(q, k, v, is_causal=cache is None and x.shape[1] > 1,
                                           dropout_p=self.p if self.training else 0.0)
        a = a.transpose(1, 2).reshape(x.shape)
        x = self.attn_norm(x + F.dropout(linear(self.attn_out, a), self.p, self.training))
        x = self.out_norm(x + F.dropout(linear(self.out, F.gelu(linear(self.inter, x))), self.p, self.training))
        return x, (k, v)


def warm_start_layers(n_layers: int, encoder_layers: int) -> list[int]:
    """Which encoder layer each decoder layer starts from: the first ``n_layers``, or, for a decoder
    deeper than its encoder, each encoder layer repeated in place (12 from 6: 0, 0, 1, 1, ... 5, 5;
    stacking, Gong et al. 2019), so that the computation keeps the pretrained order."""
    if encoder_layers <= 0 or n_layers <= encoder_layers:
        return list(range(n_layers))
    return [i * encoder_layers // n_layers for i in range(n_layers)]


class BertPrefixDecoder(nn.Module):
    """[prefix(embedding); BOS; tokens] through causal BERT layers; output tied to word embeddings."""

    def __init__(self, cfg: BertDecoderConfig, word_embeddings: torch.Tensor, out_ids: torch.Tensor):
        super().__init__()
        self.cfg = cfg
        self.register_buffer("word_emb", word_embeddings, persistent=False)
        self.register_buffer("out_ids", torch.as_tensor(out_ids, dtype=torch.long))
        index = torch.full((cfg.vocab_size,), -1, dtype=torch.long)
        index[self.out_ids] = torch.arange(len(self.out_ids))
        self.register_buffer("out_index", index, persistent=False)  # vocabulary id -> output row
        self.register_buffer("out_emb", word_embeddings[self.out_ids], persistent=False)  # tied output rows
        h = cfg.hidden
        self.prefix = nn.Linear(cfg.encoder_dim, cfg.n_prefix * h)
        self.tok_in = nn.Identity() if cfg.word_dim == h else nn.Linear(cfg.word_dim, h, bias=False)
        self.pos = nn.Embedding(cfg.n_prefix + cfg.max_len + 1, h)
        self.token_type = nn.Parameter(torch.zeros(h))
        self.emb_norm = nn.LayerNorm(h, eps=cfg.eps)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.head = nn.Linear(h, h)
        self.head_norm = nn.LayerNorm(h, eps=cfg.eps)
        self.head_out = nn.Identity() if cfg.word_dim == h else nn.Linear(h, cfg.word_dim, bias=False)
        self.out_bias = nn.Parameter(torch.zeros(len(self.out_ids)))
        if cfg.n_styles:  # what kind of text to write; starts at zero (the decoder without styles)
            self.style = nn.Parameter(torch.zeros(cfg.n_styles, h))
        for m in (self.prefix, self.head):
            nn.init.normal_(m.weight, std=0.02)
            nn.init.zeros_(m.bias)
        nn.init.normal_(self.pos.weight, std=0.02)

    # -- warm start ------------------------------------------------------------------------------
    def warm_start(self, bert_state: dict[str, torch.Tensor]) -> int:
        """Copy a BERT encoder's pretrained weights (HF names) into the matching parts: positions,
        token type 0, embedding norm and the first ``n_layers`` layers; a decoder deeper than the
        encoder is stacked (``warm_start_layers``: each encoder layer used in turn, in its order).
        Returns tensors copied."""
        names = {"emb_norm.weight": "embeddings.LayerNorm.weight", "emb_norm.bias": "embeddings.LayerNorm.bias"}
        have = sum(1 for k in bert_state if k.endswith("attention.self.query.weight"))
        for i, j in enumerate(warm_start_layers(self.cfg.n_layers, have)):
            src, dst = f"encoder.layer.{j}.", f"blocks.{i}."
            for a, b in [("query", "attention.self.query"), ("key", "attention.self.key"), ("value", "attention.self.value"),
                         ("attn_out", "attention.output.dense"), ("attn_norm", "attention.output.LayerNorm"),
                         ("inter", "intermediate.dense"), ("out", "output.dense"), ("out_norm", "output.LayerNorm")]:
                for w in ("weight", "bias"):
                    names[f"{dst}{a}.{w}"] = f"{src}{b}.{w}"
        own = self.state_dict()
        copied = 0
        with torch.no_grad():
            for dst, src in names.items():
                if src in bert_state and bert_state[src].shape == own[dst].shape:
                    own[dst].copy_(bert_state[src].float())
                    copied += 1
            pos = bert_state.get("embeddings.position_embeddings.weight")
            if pos is not None and pos.shape[1] == self.cfg.hidden:
                n = min(len(pos), self.pos.weight.shape[0])
                self.pos.weight[:n].copy_(pos[:n].float())
                copied += 1
            tt = bert_state.get("embeddings.token_type_embeddings.weight")
            if tt is not None and tt.shape[1] == self.cfg.hidden:
                self.token_type.copy_(tt[0].float())
                copied += 1
        return copied

    # -- forward ---------------------------------------------------------------------------------
    def _embed(self, ids: torch.Tensor, start: int) -> torch.Tensor:
        x = self.tok_in(self.word_emb[ids]) + self.token_type
        return x + self.pos.weight[start:start + ids.shape[1]]

    def _prefix(self, emb: torch.Tensor, style: torch.Tensor | int | None = None) -> torch.Tensor:
        """The embedding as ``n_prefix`` vectors; a decoder with styles adds the style's vector
        (``style``: one per row or one for all; None: 0, a query)."""
        p = linear(self.prefix, emb * math.sqrt(self.cfg.encoder_dim)).view(len(emb), self.cfg.n_prefix, self.cfg.hidden)
        p = p + self.token_type + self.pos.weight[: self.cfg.n_prefix]
        if not self.cfg.n_styles:
            return p
        if style is None or isinstance(style, int):
            return p + self.style[style or 0]
        return p + self.style[style].unsqueeze(1)

    def _run(self, x: torch.Tensor, caches=None):
        x = F.dropout(self.emb_norm(x), self.cfg.dropout, self.training)
        new = []
        for i, block in enumerate(self.blocks):
            x, kv = block(x, None if caches is None else caches[i])
            new.append(kv)
        return x, new

    def hidden(self, emb: torch.Tensor, ids: torch.Tensor, style: torch.Tensor | None = None) -> torch.Tensor:
        """Hidden states at the token positions: (B, T, hidden) for ids (B, T) = [BOS, ...];
        ``style``: each row's style (training); None: a query (a decoder with styles)."""
        p = self.cfg.n_prefix
        x = torch.cat([self._prefix(emb, style), self._embed(ids, p)], dim=1)
        return self._run(x)[0][:, p:]

    def logits(self, h: torch.Tensor) -> torch.Tensor:
        """Scores over the output vocabulary (rows of ``out_ids``). Decoding (no gradient) multiplies
        by a transposed copy of the output rows, made once: a few rows against 26k is bound by
        reading that matrix, and read in order it took 0.82-0.90 s per ten suggestions against
        0.97-1.15 s (same outputs, `eqi bench suggest`'s path); sampling does it through numpy
        (``sampling_products``)."""
        z = self.head_out(self.head_norm(F.gelu(linear(self.head, h))))
        if torch.is_grad_enabled():
            return z @ self.out_emb.T + self.out_bias
        if _SAMPLING_DEPTH and z.device.type == "cpu" and z.dtype == torch.float32:
            return _constant_product(z, self, self.out_emb, self.out_bias)
        cached = getattr(self, "_out_emb_t", None)
        if cached is None or cached.device != self.out_emb.device or cached.shape[::-1] != self.out_emb.shape:
            self._out_emb_t = cached = self.out_emb.T.contiguous()
        return z @ cached + self.out_bias

    def loss(self, emb: torch.Tensor, ids: torch.Tensor, inputs: torch.Tensor | None = None,
             style: torch.Tensor | None = None) -> torch.Tensor:
        """Teacher-forced cross-entropy; ``ids`` = [BOS, t1..tn, EOS, PAD...]; ``inputs``: the tokens
        fed in instead of ``ids[:, :-1]`` (word dropout), the targets unchanged; ``style``: each
        row's style (a decoder with styles)."""
        h = self.hidden(emb, ids[:, :-1] if inputs is None else inputs, style)
        target = ids[:, 1:]
        keep = target != self.cfg.pad_id
        return F.cross_entropy(self.logits(h[keep]).float(), self.out_index[target[keep]])

    # -- incremental decoding ----------------------------------------------------------------------
    def start(self, emb: torch.Tensor, style: int | None = None):
        """Run [prefix; BOS] (a decoder with styles writes ``style``, default 0: a query); returns
        (log-probs over out_ids for the first token, caches)."""
        bos = torch.full((len(emb), 1), self.cfg.bos_id, dtype=torch.long, device=emb.device)
        x = torch.cat([self._prefix(emb, style), self._embed(bos, self.cfg.n_prefix)], dim=1)
        h, caches = self._run(x)
        return torch.log_softmax(self.logits(h[:, -1]).float(), dim=-1), caches

    def step(self, out_tok: torch.Tensor, position: int, caches):
        """Feed one token per row (as output-vocabulary rows) at ``position`` (0 = BOS)."""
        ids = self.out_ids[out_tok].view(-1, 1)
        h, caches = self._run(self._embed(ids, self.cfg.n_prefix + position), caches)
        return torch.log_softmax(self.logits(h[:, -1]).float(), dim=-1), caches


def reorder(caches, index: torch.Tensor):
    return [(k.index_select(0, index), v.index_select(0, index)) for k, v in caches]


FEW_BEAM_ROWS = 64  # a beam search over at most this many rows (texts x beam) multiplies as sampling does


def beam_search(model: BertPrefixDecoder, emb: torch.Tensor, beam: int, first_banned: torch.Tensor,
                no_repeat: torch.Tensor, length_penalty: float = 0.6,
                constraint=None, style: int | None = None) -> list[list[tuple[list[int], float]]]:
    """Batched beam search with a key/value cache. ``first_banned``: output rows never chosen first
    (the end, word continuations); ``no_repeat``: output rows (content-word starts) that may
    appear once per hypothesis; ``constraint``: a ``WordConstraint`` (known words only, no content
    word twice; a row with no allowed candidate takes the model's own). Returns per row up to
    ``beam`` (vocabulary ids, normalised score).

    One text (8 rows at beam 8) runs its products as sampling does (``sampling_products``): p50
    0.190 s against 0.257 with torch's (20 held-out questions, the same decodes); larger batches
    keep torch's own at two threads."""
    if len(emb) * beam <= FEW_BEAM_ROWS:
        with sampling_products():
            return _beam_search(model, emb, beam, first_banned, no_repeat, length_penalty, constraint, style)
    return _beam_search(model, emb, beam, first_banned, no_repeat, length_penalty, constraint, style)


@torch.no_grad()
def _beam_search(model: BertPrefixDecoder, emb: torch.Tensor, beam: int, first_banned: torch.Tensor,
                 no_repeat: torch.Tensor, length_penalty: float, constraint, style: int | None):
    cfg = model.cfg
    b, n_out = len(emb), len(model.out_ids)
    eos = int(model.out_index[cfg.eos_id])
    logp, caches = model.start(emb, style)
    logp[:, first_banned] = -1e9
    logp[:, eos] = -1e9
    caches = reorder(caches, torch.arange(b).repeat_interleave(beam))
    top, tok = logp.topk(beam, dim=1)  # (b, beam)
    scores = top.clone()
    seqs = tok.view(-1, 1)
    used = torch.zeros(b * beam, n_out, dtype=torch.bool)
    used[torch.arange(b * beam), seqs[:, 0]] = no_repeat[seqs[:, 0]]
    states = [constraint.advance(constraint.start(), int(k)) for k in seqs[:, 0]] if constraint else None
    n_cand = 8 * beam if constraint else 2 * beam
    finished: list[list[tuple[list[int], float]]] = [[] for _ in range(b)]
    done = torch.zeros(b, dtype=torch.bool)
    for t in range(1, cfg.max_len - 1):  # at most max_len - 1 tokens, as in training
        logp, caches = model.step(seqs[:, -1], t, caches)
        logp = logp.masked_fill(used, -1e9)
        total = (scores.view(-1, 1) + logp).view(b, beam * n_out)
        cand, flat = total.topk(min(n_cand, beam * n_out), dim=1)
        src, tok = flat // n_out, flat % n_out
        new_rows, new_tok, new_scores = [], [], torch.full((b, beam), -1e9)
        for i in range(b):
            kept = 0
            # without a constraint: the best 2 x beam; with one: the allowed among the best 8 x beam,
            # else among the best 1,024, else (nothing allowed) the model's own choice
            passes = [(cand[i], src[i], tok[i], True)] if constraint else [(cand[i], src[i], tok[i], False)]
            if constraint:
                passes += [(None, None, None, True), (cand[i], src[i], tok[i], False)]
            for p_cand, p_src, p_tok, check in passes:
                if p_cand is None:
                    p_cand, p_flat = total[i].topk(min(1024, beam * n_out))
                    p_cand, p_flat = p_cand[cand.shape[1]:], p_flat[cand.shape[1]:]  # the first pass saw the rest
                    p_src, p_tok = p_flat // n_out, p_flat % n_out
                for s_j, src_j, tok_j in zip(p_cand.tolist(), p_src.tolist(), p_tok.tolist()):
                    if s_j < -1e8 or kept == beam:
                        break
                    row = i * beam + src_j
                    if constraint and check != constraint.allows(states[row], tok_j):
                        continue  # allowed candidates first; the fallback pass takes the others
                    if tok_j == eos:
                        if not done[i]:
                            finished[i].append((seqs[row].tolist(), s_j / ((t + 1) ** length_penalty)))
                        continue
                    new_rows.append(row)
                    new_tok.append(tok_j)
                    new_scores[i, kept] = s_j
                    kept += 1
                if kept or done[i]:
                    break
            while kept < beam:  # keep shapes: pad with a dead copy
                new_rows.append(i * beam)
                new_tok.append(eos)
                kept += 1
            if len(finished[i]) >= beam:
                best_open = float(new_scores[i].max()) / ((t + 2) ** length_penalty)
                if best_open < max(f[1] for f in finished[i]):
                    done[i] = True
        if bool(done.all()):
            break
        index = torch.tensor(new_rows)
        if constraint:
            states = [constraint.advance(states[r], k) for r, k in zip(new_rows, new_tok)]
        seqs = torch.cat([seqs[index], torch.tensor(new_tok).view(-1, 1)], dim=1)
        used = used[index]
        nt = torch.tensor(new_tok)
        used[torch.arange(b * beam), nt] |= no_repeat[nt]
        scores = torch.where(done[:, None], torch.full_like(new_scores, -1e9), new_scores)
        caches = reorder(caches, index)
    for i in range(b):
        if not finished[i]:  # cut off at the maximum length: the best open hypothesis
            seq = seqs[i * beam].tolist()
            if constraint:
                seq = _without_bad_last_word(seq, states[i * beam], constraint)
            finished[i].append((seq, float(scores[i, 0])))
    out_ids = model.out_ids.tolist()
    return [[([out_ids[k] for k in s], sc) for s, sc in sorted(f, key=lambda x: -x[1])[:beam]] for f in finished]


@torch.no_grad()
@sampling_products()
def sample(model: BertPrefixDecoder, emb: torch.Tensor, n: int | list[int], top_p: float, first_banned: torch.Tensor,
           generator: torch.Generator, temperature: float = 1.0, top_k: int = 200,
           constraint=None, split: int | None = None,
           split_generator: torch.Generator | None = None, style: int | None = None) -> list[list[list[int]]]:
    """``n`` nucleus samples per row (or ``n[i]`` for row i; vocabulary ids), for diverse
    suggestions; ``constraint`` (a ``WordConstraint``) removes the nucleus's tokens that would leave
    known words. With ``split``, the samples of rows ``split`` and after draw from
    ``split_generator``: rows added to a batch then leave the earlier rows' samples exactly as
    they were without them (one batch, two random streams).

    Finished samples leave the batch (their caches are dropped), so the steps after the shortest
    samples end cost only what is still being written. The draw still takes one uniform per sample
    per step (a finished one draws from a one-point distribution), so each sample sees the same
    random stream as when every row stayed in the batch."""
    cfg = model.cfg
    b = len(emb)
    counts = [n] * b if isinstance(n, int) else [int(c) for c in n]
    if len(counts) != b or min(counts, default=1) < 1:
        raise ValueError(f"sample: {len(counts)} sample counts (each >= 1) for {b} rows")
    total = sum(counts)
    cut = total if split is None else sum(counts[:split])  # rows from here draw from split_generator
    if cut < total and split_generator is None:
        raise ValueError("sample: split needs a split_generator")
    eos = int(model.out_index[cfg.eos_id])
    logp, caches = model.start(emb, style)
    logp[:, first_banned] = -1e9
    logp[:, eos] = -1e9
    per_row = torch.tensor(counts)
    caches = reorder(caches, torch.arange(b).repeat_interleave(per_row))
    logp = logp.repeat_interleave(per_row, dim=0)
    seqs: list[list[int]] = [[] for _ in range(total)]
    rows = torch.arange(total)  # the samples still being written: the rows of logp and the caches
    states = [constraint.start() for _ in range(total)] if constraint is not None else None
    k = min(top_k, logp.shape[-1])
    for t in range(cfg.max_len - 1):
        # nucleus within the top_k most likely tokens (as Hugging Face's generate with both set): the
        # nucleus of a trained decoder is far smaller than top_k, and a top-k is cheaper than a full sort
        top, si = logp.topk(k, dim=-1)
        sp = torch.softmax(top / temperature, dim=-1)
        keep = sp.cumsum(-1) - sp < top_p
        if constraint is not None:
            live = rows.tolist()
            keep = _constrained_nucleus(keep, si, top > -1e8, [states[r] for r in live], constraint)
        sp = sp * keep
        sp = torch.where(sp.sum(-1, keepdim=True) > 0, sp, keep.float())  # allowed tokens too unlikely to register
        every = torch.zeros(total, k)
        every[:, 0] = 1.0  # finished samples draw from a point: one uniform each, as before
        every[rows] = sp / sp.sum(-1, keepdim=True)
        drawn = torch.cat([torch.multinomial(part, 1, generator=g).view(-1)
                           for part, g in ((every[:cut], generator), (every[cut:], split_generator)) if len(part)])
        pick = si.gather(1, drawn[rows].view(-1, 1)).view(-1)
        going = []
        for j, (r, tok) in enumerate(zip(rows.tolist(), pick.tolist())):
            if constraint is not None:
                states[r] = constraint.advance(states[r], tok)
            if tok == eos:
                continue
            seqs[r].append(tok)
            going.append(j)
        if not going or t + 2 == cfg.max_len:
            if constraint is not None:  # cut off at the maximum length: drop a last word that may not end
                for j in going:
                    r = int(rows[j])
                    seqs[r] = _without_bad_last_word(seqs[r], states[r], constraint)
            break
        if len(going) < len(rows):
            index = torch.tensor(going)
            rows, pick, caches = rows[index], pick[index], reorder(caches, index)
        logp, caches = model.step(pick, t + 1, caches)
    out_ids = model.out_ids.tolist()
    starts = np.cumsum([0] + counts)
    return [[[out_ids[k] for k in seqs[j]] for j in range(starts[i], starts[i + 1])] for i in range(b)]


def _without_bad_last_word(seq: list[int], state, constraint) -> list[int]:
    if constraint.can_end_word(state):
        return seq
    starts = [j for j, k in enumerate(seq) if not constraint.continues[k]]
    return seq[:starts[-1]] if len(starts) > 1 else seq


def _constrained_nucleus(keep: torch.Tensor, si: torch.Tensor, possible: torch.Tensor, states: list,
                         constraint) -> torch.Tensor:
    """The nucleus without the tokens the constraint forbids; where none is left, the allowed
    tokens of the whole top-k (of those ``possible``: not banned); where none is allowed at all,
    the nucleus unchanged. ``si`` is sorted by probability, so each row's nucleus is a prefix of
    it: only those tokens are read (the whole top-k only in the rare fallback)."""
    out = keep.numpy().copy()
    sizes = keep.sum(1).tolist()
    nucleus = si[:, :max(sizes, default=0)].tolist()
    for r, m in enumerate(sizes):
        ok = constraint.allowed_rows(states[r], nucleus[r][:m])
        if any(ok):
            for c, fine in enumerate(ok):
                if not fine:
                    out[r, c] = False
            continue
        toks, can = si[r].tolist(), possible[r].tolist()
        rest = [c for c in range(m, len(toks)) if can[c]]
        allowed = [c for c, fine in zip(rest, constraint.allowed_rows(states[r], [toks[c] for c in rest])) if fine]
        if allowed:
            out[r] = False
            out[r, allowed] = True
    return torch.from_numpy(out)


def token_ids_used(tokenizer, texts, special: list[int]) -> np.ndarray:
    """Vocabulary ids that occur in ``texts`` (plus ``special``): the decoder's output vocabulary."""
    seen = set(special)
    for start in range(0, len(texts), 4096):
        for enc in tokenizer.encode_batch(list(texts[start:start + 4096]), add_special_tokens=False):
            seen.update(enc.ids)
    return np.array(sorted(seen), dtype=np.int64)
