"""Audit analyses over an exposure map: retrievability and its inequality, rank-size distributions of
exposing queries, and which kinds of queries (by length, by rarity) are exposing vs retrieved.

Retrievability (Azzopardi and Vinay, 2008) with a cumulative cutoff c and a uniform query prior:
r(d) = number of logged queries that rank d within their top c; passages no query retrieves
count with r(d) = 0. Inequality is the Gini coefficient of r over all passages.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from eqi_core.errors import DataError
from eqi_core.exposure.exact import ExposureMap


def retrievability(exposure: ExposureMap, cutoff: int = 100, weights: np.ndarray | None = None) -> np.ndarray:
    """r(d) for every passage of the collection (zeros included); with ``weights`` (how often each
    query was issued) each query counts that many times."""
    if not 0 < cutoff <= exposure.depth:
        raise DataError(f"retrievability cutoff c = {cutoff}: expected 1..{exposure.depth} (the exposure map's depth)")
    keep = exposure.rank0 < cutoff
    w = None if weights is None else np.asarray(weights, dtype=float)[exposure.q_idx[keep]]
    return np.bincount(exposure.d_idx[keep], weights=w, minlength=len(exposure.doc_ids))


def gini(values: np.ndarray) -> float:
    """Gini coefficient: 0 when every passage is equally retrievable, ->1 when one takes all."""
    x = np.sort(np.asarray(values, dtype=float))
    n = len(x)
    if n == 0 or x.sum() == 0:
        return 0.0
    ranks = np.arange(1, n + 1)
    return float((2 * (ranks * x).sum()) / (n * x.sum()) - (n + 1) / n)


def lorenz(values: np.ndarray, points: int = 200) -> pd.DataFrame:
    """Lorenz curve: share of passages (poorest first) vs share of total retrievability."""
    x = np.sort(np.asarray(values, dtype=float))
    cum = np.concatenate([[0.0], np.cumsum(x)])
    total = cum[-1] if cum[-1] > 0 else 1.0
    pos = np.linspace(0, len(x), min(points, len(x) + 1)).astype(int)
    return pd.DataFrame({"passages": pos / max(len(x), 1), "retrievability": cum[pos] / total})


def position_in_lorenz(values: np.ndarray, doc: int) -> float:
    """Share of passages less retrievable than ``doc`` (its x position on the Lorenz curve)."""
    return float((values < values[doc]).mean())


@dataclass
class RetrievabilitySummary:
    """r(d) of every passage at one cutoff, with its inequality, computed once per (map, cutoff)."""

    values: np.ndarray
    cutoff: int
    gini: float
    never_retrieved: float  # share of passages with r(d) = 0
    curve: pd.DataFrame  # the Lorenz curve

    def of(self, doc: int) -> dict:
        """One passage's r(d) and its place on the Lorenz curve (the Exposure page and its report)."""
        return {"r": int(self.values[doc]), "cutoff": self.cutoff, "share_below": position_in_lorenz(self.values, doc),
                "gini": self.gini}

    def of_new(self, r: float) -> dict:
        """``of`` for a passage outside the collection (pasted) whose exact exposing queries give it ``r``:
        its place among the collection's passages as they are (adding it would push a few of theirs down)."""
        return {"r": int(r) if float(r).is_integer() else float(r), "cutoff": self.cutoff,
                "share_below": float((self.values < r).mean()) if len(self.values) else 0.0, "gini": self.gini}


def retrievability_extremes(summary: RetrievabilitySummary, doc_ids, which: str = "least", limit: int = 20) -> pd.DataFrame:
    """The ``limit`` least (or most) retrievable passages: doc_id, r(d), and the share of passages
    less retrievable. Equal r(d) keep the collection's order, so the list is the same on every run
    (the least retrievable are often thousands of passages at 0: which of them is listed says
    nothing, and the page says how many there are)."""
    if which not in ("least", "most"):
        raise DataError(f"which = {which!r}: expected 'least' or 'most'")
    values = np.asarray(summary.values)
    order = np.lexsort((np.arange(len(values)), values if which == "least" else -values))[:max(int(limit), 0)]
    below = np.searchsorted(np.sort(values), values[order], side="left") / max(len(values), 1)
    return pd.DataFrame({"doc_id": np.asarray(doc_ids, dtype=object)[order], "r(d)": values[order].astype(int)
                         if np.allclose(values, np.round(values)) else values[order], "less retrievable": below})


def summarise_retrievability(exposure: ExposureMap, cutoff: int = 100,
                             weights: np.ndarray | None = None) -> RetrievabilitySummary:
    r = retrievability(exposure, cutoff, weights)
    return RetrievabilitySummary(r, cutoff, gini(r), float((r == 0).mean()) if len(r) else 0.0, lorenz(r))


def passage_retrievability(exposure: ExposureMap, cutoff: int, weights: np.ndarray | None = None, doc_id: str | None = None,
                           exposing=()) -> tuple[RetrievabilitySummary, dict]:
    """The collection's retrievability at ``cutoff`` and one passage's place in it (the Exposure page,
    its report, ``eqi exposure --report``): a passage of the map by ``doc_id``, or a pasted one by the
    ids of the logged queries that would show it in their top ``cutoff`` (``exposing``), each counted
    by its weight where the log has counts."""
    summary = summarise_retrievability(exposure, cutoff, weights)
    if doc_id is not None:
        return summary, summary.of(exposure.doc_index(doc_id))
    weight_of = dict(zip(exposure.query_ids.astype(str), weights)) if weights is not None else {}
    return summary, summary.of_new(sum(weight_of.get(str(q), 1.0) for q in exposing))


def rank_size(exposure: ExposureMap, docs: np.ndarray, lists: dict[str, np.ndarray]) -> pd.DataFrame:
    """Per method: number of (truly) exposing queries per passage, sorted descending (paper Figure 4)."""
    rows = []
    exact = np.sort(exposure.counts()[docs])[::-1]
    rows.append(pd.DataFrame({"method": "Exact", "rank": np.arange(1, len(exact) + 1), "exposing_queries": exact}))
    for name, idx in lists.items():
        found = np.array([np.isfinite(exposure.ranks_of(int(d), row[row >= 0])).sum() for d, row in zip(docs, idx)])
        found = np.sort(found)[::-1]
        rows.append(pd.DataFrame({"method": name, "rank": np.arange(1, len(found) + 1), "exposing_queries": found}))
    return pd.concat(rows, ignore_index=True)


def query_traits(query_texts: list[str], min_df: np.ndarray) -> pd.DataFrame:
    """Length in words and rarity (minimum document frequency of its terms) of each logged query."""
    return pd.DataFrame({"length": [len(t.split()) for t in query_texts], "min_df": min_df})


def min_document_frequency(query_texts: list[str], passage_texts: list[str]) -> np.ndarray:
    """For each query, the smallest number of passages containing one of its terms (0 if a term is unseen)."""
    from eqi_core.rankers.bm25 import make_tokenizer

    tok = make_tokenizer()
    doc_ids = tok.tokenize(passage_texts, return_as="ids", show_progress=False)
    df = np.zeros(len(tok.get_vocab_dict()) + 1, dtype=np.int64)
    for ids in doc_ids:
        df[np.unique(np.asarray(ids, dtype=np.int64))] += 1
    q_ids = tok.tokenize(query_texts, update_vocab=False, return_as="ids", show_progress=False, allow_empty=False)
    return np.array([int(df[np.asarray(ids)].min()) if len(ids) else 0 for ids in q_ids])


def trait_probabilities(exposure: ExposureMap, docs: np.ndarray, lists: dict[str, np.ndarray], traits: pd.DataFrame,
                        by: str, bins: list | None = None) -> pd.DataFrame:
    """Paper Figure 3: for queries grouped by a trait, P(exposing one of ``docs``) and, per method,
    P(retrieved in the top 10 / top 100 for one of ``docs``)."""
    values = traits[by].to_numpy()
    if bins is None:
        bins = sorted(set(np.quantile(values, [0, .2, .4, .6, .8, 1.0]).round().astype(int).tolist()))
    group = pd.cut(values, bins=np.unique(bins + [values.max() + 1]), right=False, include_lowest=True)
    exposing = np.zeros(len(values), dtype=bool)
    for d in docs:
        exposing[exposure.exposing(int(d))[0]] = True
    frame = {"exposing": exposing}
    for name, idx in lists.items():
        for depth in (10, 100):
            hit = np.zeros(len(values), dtype=bool)
            sel = idx[:, :depth]
            hit[sel[sel >= 0]] = True
            frame[f"{name} top-{depth}"] = hit
    df = pd.DataFrame(frame)
    df["group"] = group  # groups in their bins' order (not in the order the log's queries first fall in them)
    groups = df.groupby("group", observed=True, sort=True)
    out = groups.mean().reset_index()
    out["queries"] = groups.size().to_numpy()
    out["group"] = out["group"].astype(str)
    return out.melt(id_vars=["group", "queries"], var_name="series", value_name="probability")
