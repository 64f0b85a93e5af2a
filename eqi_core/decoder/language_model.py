"""A word trigram language model with interpolated Kneser-Ney smoothing: the fluency judge.

The paper reports fluency as per-token perplexity under a language model that generated none of the
texts it judges (Adolphs et al. 2022, Table 6: a T5-base LM trained on C4). No package here ships a
generative model, and nltk's Kneser-Ney returns infinite perplexities on unseen words (nltk issues
#3065, #3211), so this one is written out, vectorised over integer n-gram keys:

    P(w | u v) = max(c(u v w) - D, 0) / c(u v .) + D N1+(u v .) / c(u v .) * P2(w | v)
    P2(w | v)  = max(N1+(. v w) - D, 0) / N1+(. v .) + D N1+(v .) / N1+(. v .) * P1(w)
    P1(w)      = max(N1+(. w) - D, 0) / N1+(. .) + D |{w: N1+(. w) > 0}| / N1+(. .) / |V|

(Chen & Goodman 1998, interpolated Kneser-Ney with one discount). A context never seen passes its
whole mass to the order below. Words seen fewer than ``min_count`` times in training become
``<unk>``, which is trained like any word, so every text has a finite perplexity; the share of words
the model does not know is reported beside it. Texts are padded ``<s> <s> ... </s>`` and
``</s>`` is predicted; words are ``base.terms`` (lower-cased, any script).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from eqi_core.decoder.base import terms
from eqi_core.errors import DataError

BOS, EOS, UNK = "<s>", "</s>", "<unk>"
DISCOUNT = 0.75


def _unique_counts(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return np.unique(keys, return_counts=True)


def _lookup(table_keys: np.ndarray, table_values: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Values of ``keys`` in a sorted key table, 0 where a key is absent."""
    if len(table_keys) == 0:
        return np.zeros(len(keys), dtype=np.float64)
    pos = np.searchsorted(table_keys, keys)
    pos = np.minimum(pos, len(table_keys) - 1)
    found = table_keys[pos] == keys
    return np.where(found, table_values[pos], 0).astype(np.float64)


@dataclass
class KneserNeyLM:
    """Sorted n-gram tables (int64 keys) and their counts; see the module docstring."""

    vocab: list[str]  # id -> word; 0 = <s>, 1 = </s>, 2 = <unk>
    tables: dict[str, np.ndarray]
    discount: float = DISCOUNT

    @property
    def size(self) -> int:
        return len(self.vocab)

    # ---- training -------------------------------------------------------------------------------
    @classmethod
    def fit(cls, texts, min_count: int = 2, discount: float = DISCOUNT) -> KneserNeyLM:
        """Count the trigrams of ``texts`` (an iterable of strings) and keep what the formula needs."""
        tokenised = [terms(t) for t in texts]
        freq = Counter(w for ws in tokenised for w in ws)
        vocab = [BOS, EOS, UNK] + sorted(w for w, c in freq.items() if c >= min_count and w not in (BOS, EOS, UNK))
        if len(vocab) == 3:
            raise DataError(f"language model: no word is seen {min_count} times in the {len(tokenised)} training texts")
        if len(vocab) >= 2**21:  # three ids share one int64 key
            raise DataError(f"language model: {len(vocab):,} words is more than 2,097,151; raise min_count")
        index = {w: i for i, w in enumerate(vocab)}
        ids = [[index.get(w, 2) for w in ws] for ws in tokenised]
        lm = cls(vocab=vocab, tables={}, discount=discount)
        u, v, w = lm._trigram_ids(ids)
        lm.tables = lm._count(u, v, w)
        return lm

    def _trigram_ids(self, ids: list[list[int]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        lengths = np.array([len(s) + 1 for s in ids], dtype=np.int64)  # each word and </s> is predicted
        flat = np.concatenate([np.array([0, 0] + s + [1], dtype=np.int64) for s in ids]) if ids else np.zeros(0, np.int64)
        starts = np.concatenate([[0], np.cumsum(lengths + 2)[:-1]]) if ids else np.zeros(0, np.int64)
        pos = np.concatenate([np.arange(s + 2, s + 2 + n) for s, n in zip(starts, lengths)]) if ids else np.zeros(0, np.int64)
        return flat[pos - 2], flat[pos - 1], flat[pos]

    def _count(self, u: np.ndarray, v: np.ndarray, w: np.ndarray) -> dict[str, np.ndarray]:
        V = self.size
        tri, tri_c = _unique_counts((u * V + v) * V + w)
        tu, tv, tw = tri // (V * V), (tri // V) % V, tri % V
        # c(u v .) and N1+(u v .): totals and distinct followers of each seen context
        ctx3, ctx3_total = _sum_by(tu * V + tv, tri_c)
        _, ctx3_types = _unique_counts(tu * V + tv)
        # N1+(. v w): distinct words before each seen bigram
        bi, bi_c = _unique_counts(tv * V + tw)
        bv, bw = bi // V, bi % V
        ctx2, ctx2_total = _sum_by(bv, bi_c)  # N1+(. v .)
        _, ctx2_types = _unique_counts(bv)  # N1+(v .)
        # N1+(. w): distinct words before each word (from bigram types)
        uni, uni_c = _unique_counts(bw)
        return {"tri": tri, "tri_c": tri_c, "ctx3": ctx3, "ctx3_total": ctx3_total, "ctx3_types": ctx3_types,
                "bi": bi, "bi_c": bi_c, "ctx2": ctx2, "ctx2_total": ctx2_total, "ctx2_types": ctx2_types,
                "uni": uni, "uni_c": uni_c}

    # ---- scoring --------------------------------------------------------------------------------
    def log_probs(self, u: np.ndarray, v: np.ndarray, w: np.ndarray) -> np.ndarray:
        """Natural log of P(w | u v) for aligned id arrays."""
        t, D, V = self.tables, self.discount, self.size
        n_bigram_types = float(t["uni_c"].sum())  # N1+(. .)
        p1 = (np.maximum(_lookup(t["uni"], t["uni_c"], w) - D, 0) + D * len(t["uni"]) / V) / n_bigram_types
        c2 = _lookup(t["ctx2"], t["ctx2_total"], v)
        n2 = _lookup(t["ctx2"], t["ctx2_types"], v)
        cont = _lookup(t["bi"], t["bi_c"], v * V + w)
        safe2 = np.maximum(c2, 1)
        p2 = np.where(c2 > 0, (np.maximum(cont - D, 0) + D * n2 * p1) / safe2, p1)
        c3 = _lookup(t["ctx3"], t["ctx3_total"], u * V + v)
        n3 = _lookup(t["ctx3"], t["ctx3_types"], u * V + v)
        tri = _lookup(t["tri"], t["tri_c"], (u * V + v) * V + w)
        safe3 = np.maximum(c3, 1)
        p3 = np.where(c3 > 0, (np.maximum(tri - D, 0) + D * n3 * p2) / safe3, p2)
        return np.log(p3)

    def ids(self, text: str) -> list[int]:
        index = self._index()
        return [index.get(w, 2) for w in terms(text)]

    def _index(self) -> dict[str, int]:
        if not hasattr(self, "_idx"):
            self._idx = {w: i for i, w in enumerate(self.vocab)}
        return self._idx

    def score(self, texts: list[str]) -> dict:
        """Per-token perplexity over all ``texts`` together (every word and each text's end), the
        share of their words outside the vocabulary, and how many tokens were scored."""
        ids = [self.ids(t) for t in texts if terms(t)]
        if not ids:
            return {"perplexity": float("nan"), "oov": float("nan"), "tokens": 0}
        u, v, w = self._trigram_ids(ids)
        lp = self.log_probs(u, v, w)
        n_words = sum(len(s) for s in ids)
        return {"perplexity": float(np.exp(-lp.mean())), "oov": sum(s.count(2) for s in ids) / n_words,
                "tokens": int(len(lp))}

    # ---- files (no pickle) ----------------------------------------------------------------------
    def save(self, path: Path) -> None:
        np.savez_compressed(path, vocab=np.array(self.vocab, dtype=object).astype(str),
                            discount=np.array(self.discount), **self.tables)

    @classmethod
    def load(cls, path: Path) -> KneserNeyLM:
        with np.load(path, allow_pickle=False) as data:
            tables = {k: data[k] for k in data.files if k not in ("vocab", "discount")}
            return cls(vocab=data["vocab"].tolist(), tables=tables, discount=float(data["discount"]))


def _sum_by(keys: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct keys and the sum of ``values`` over each (``keys`` already sorted)."""
    uniq, start = np.unique(keys, return_index=True)
    return uniq, np.add.reduceat(values, start) if len(values) else np.zeros(0, np.int64)
