"""Generative exposure: queries no log holds yet that would put a passage in front of searchers.

The query decoder turns points of the dense space into queries: the passage's own embedding,
points halfway between it and its most exposing logged queries, and points in a small ball
around it. Each decoded query is then ranked by the chosen ranker *exactly* (the passage's rank
among all passages for that query), so the answer to "which unseen queries would show this
passage in the top n_q->d, and how high" never trusts the decoder, only the ranker.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from eqi_core.errors import DataError
from eqi_core.exposure.setup import ExposureSetup
from eqi_core.rankers import build_ranker, ranker_spec

ORIGINS = ("passage", "between", "neighbourhood")
# Beam hypotheses at one point often differ only in their last words ("... to accept cash or a house" /
# "... or a mortgage"): counted apart they inflate "unseen queries exposing it". Two candidates whose
# content words overlap this much (Jaccard) are one query; the first decoded (the better beam) is kept.
NEAR_DUPLICATE = 0.75
# Long hypotheses can part later still and differ in more words than the Jaccard rule allows: four of a
# WordNet gloss's six began with the same 17 words (of 21) ("a bank in a financial institution that engages in
# the payment of money (as in a loan) ...") and ended four ways. Texts that agree word for word over
# this share of the longer one, and over at least ``SHARED_START_WORDS`` words, are one query too. Short
# queries that differ in a word are queries of their own ("bank in a mortgage" / "bank in a payment"),
# and so is one that another extends ("bank deposit" / "bank deposit in a payment").
SHARED_START, SHARED_START_WORDS = 0.75, 10


def near_duplicate(a: str, b: str) -> bool:
    """Whether two decoded texts are one query worded twice: the same words, content words whose
    Jaccard overlap reaches ``NEAR_DUPLICATE``, or the same first words over ``SHARED_START`` of the
    longer text (at least ``SHARED_START_WORDS`` of them)."""
    from eqi_core.decoder.base import content_words, words

    xa, xb = words(a), words(b)
    if xa == xb:
        return True
    start = next((i for i, (u, v) in enumerate(zip(xa, xb)) if u != v), min(len(xa), len(xb)))
    if start >= max(SHARED_START * max(len(xa), len(xb)), SHARED_START_WORDS):
        return True
    wa, wb = set(content_words(a)), set(content_words(b))
    return bool(wa | wb) and len(wa & wb) / len(wa | wb) >= NEAR_DUPLICATE


class LoggedWordings:
    """The query log, to tell whether a decoded query is one the log holds: the same text, or a
    rewording of a logged query by ``near_duplicate`` (the rule that keeps two decoded candidates
    apart): "what does dark chocolate do for your body" is the logged "what do dark chocolate do for
    body", not an unseen search. An inverted index over content words keeps it to the few logged
    queries that share one."""

    def __init__(self, texts) -> None:
        from eqi_core.decoder.base import content_words

        self.texts = [str(t) for t in texts]
        self.exact = {}
        self.by_word: dict[str, list[int]] = {}
        for i, t in enumerate(self.texts):
            self.exact.setdefault(" ".join(t.lower().split()), t)
            for w in set(content_words(t)):
                self.by_word.setdefault(w, []).append(i)

    def match(self, text: str) -> str:
        """The logged query ``text`` is (itself or reworded), or "" when the log holds none."""
        from eqi_core.decoder.base import content_words

        same = self.exact.get(" ".join(text.lower().split()))
        if same is not None:
            return same
        shared = sorted({i for w in set(content_words(text)) for i in self.by_word.get(w, ())})
        return next((self.texts[i] for i in shared if near_duplicate(text, self.texts[i])), "")


def logged_wordings(setup: ExposureSetup) -> LoggedWordings:
    """The setup's query log as ``LoggedWordings``, built once per setup."""
    if "logged_wordings" not in setup._methods:
        setup._methods["logged_wordings"] = LoggedWordings(setup.collection.queries["text"])
    return setup._methods["logged_wordings"]


@dataclass
class GeneratedExposure:
    # query, origin, rank (exact, 1-based; inf = not retrieved), in_log, logged_as (the logged query it is or
    # rewords, "" if none), exposes, exposure
    candidates: pd.DataFrame
    n_qd: int
    logged_total: int  # sum over logged exposing queries of n_q->d - rho
    notes: list[str] = field(default_factory=list)

    @property
    def unseen_exposing(self) -> pd.DataFrame:
        c = self.candidates
        return c[c["exposes"] & ~c["in_log"]]

    @property
    def generated_total(self) -> int:
        return int(self.unseen_exposing["exposure"].sum())


def decode_points(space, passage_emb: np.ndarray, exposing_emb: np.ndarray, seed: int = 0) -> list[tuple[str, np.ndarray, int]]:
    """(origin, point, hypotheses to keep) of the points to decode around a passage."""
    from eqi_core.suggestion.baselines import ball_points

    points = [("passage", passage_emb, 6)]
    points += [("between", (passage_emb + q) / 2, 3) for q in exposing_emb[:5]]
    points += [("neighbourhood", p, 2) for p in ball_points(passage_emb, 5, 0.25, seed)]
    return points


def passage_ranks(setup: ExposureSetup, queries: list[str], doc: int | None, text: str | None) -> np.ndarray:
    """Exact 1-based rank of the passage (index ``doc``, or a pasted ``text``) for each query under the
    setup's ranker, among all the collection's passages (inf when the ranker does not retrieve it)."""
    spec = ranker_spec(setup.ranker_id)
    if spec.build is None:
        raise DataError(f"{spec.name}: a result log cannot rank queries it does not hold; generative exposure needs a "
                        "ranker that runs here")
    ranker = build_ranker(setup.ranker_id, setup.collection, setup.store)
    if spec.family == "dense":  # one query at a time: a rank must not depend on what else was decoded with it
        q = np.concatenate([ranker.encode_queries([text_]) for text_ in queries]) if queries else np.zeros((0, 1))
        scores = q @ ranker.doc_embeddings.T
        # the passage's own score from the same product (a separate dot product may round above it)
        if doc is not None:
            return (1 + (scores > scores[:, doc, None]).sum(axis=1)).astype(float)
        own = q @ ranker.encoder.encode([text])[0]  # a pasted passage comes last among equal scores
        return (1 + (scores >= own[:, None]).sum(axis=1)).astype(float)
    if doc is None and spec.map_source == "bm25":
        return setup.bm25_with_new_passage().ranks(text, queries)
    if doc is None and spec.family == "learned-sparse":
        return ranker.ranks_of_new_passage(queries, text)
    if doc is None:
        raise DataError(f"{spec.name}: exact ranks of pasted text need a ranker that runs here")
    doc_id = setup.collection.passages["doc_id"].iloc[doc]
    run = ranker.search(dict(zip(map(str, range(len(queries))), queries)), k=len(setup.collection.passages))
    hit = run.frame[run.frame["doc_id"] == doc_id].set_index("query_id")["rank"]
    return np.array([float(hit.get(str(i), np.inf)) for i in range(len(queries))])


def logged_exposing(setup: ExposureSetup, n_qd: int, doc: int | None, text: str | None,
                    exact: pd.DataFrame | None = None) -> tuple[np.ndarray, int]:
    """(query indices, most exposing first; the log's exposure: the sum of n_q->d - rho over the queries
    that show the passage in their top n_q->d). A passage of the collection reads the exposure map
    (every query within its depth); pasted text has its exact exposing queries scored against the map
    (``exact``, when the caller has them: the frame of ``lookup.exact_exposure``), so that its decoded
    queries are compared with the log's, as a collection passage's are, rather than with nothing."""
    if doc is not None:
        q_idx, r0 = setup.exposure.exposing(doc)
        return q_idx, int((n_qd - r0[r0 < n_qd]).sum())
    if exact is None:
        from eqi_core.exposure.lookup import exact_exposure

        exact, _ = exact_exposure(setup, n_qd, text=text)
    if exact is None or not len(exact):  # a result log ranks no new text: no exposing query is known
        return np.array([], int), 0
    exact = exact.sort_values("rank", kind="stable")
    q_idx = pd.Index(setup.exposure.query_ids).get_indexer(exact["query_id"])
    return q_idx[q_idx >= 0], int(exact["exposure"].sum())


def generate_exposure(setup: ExposureSetup, space, n: int = 20, n_qd: int = 10, doc_id: str | None = None,
                      text: str | None = None, seed: int = 0, exact: pd.DataFrame | None = None) -> GeneratedExposure:
    """Up to ``n`` decoded candidate queries for a passage (by id, or pasted text), best rank first; a
    near-duplicate of an earlier candidate (``near_duplicate``) is not counted again. ``exact``: pasted
    text's exact exposing queries at this n_q->d, when the caller has computed them already."""
    if n <= 0:
        raise DataError(f"--generate {n}: expected a positive number of queries")
    if (doc_id is None) == (text is None):
        raise DataError("give a passage id or a text, not both")
    doc = setup.exposure.doc_index(doc_id) if doc_id is not None else None
    passage_emb = space.passage_embedding(doc_id) if doc_id is not None else space.encode([text])[0]
    q_idx, logged_total = logged_exposing(setup, n_qd, doc, text, exact)
    exposing_emb = space.query_emb[q_idx[:5]] if len(q_idx) else np.zeros((0, len(passage_emb)), np.float32)
    decoder = space.decoder("decoder")
    rows: list[dict] = []
    for origin, point, keep in decode_points(space, passage_emb, exposing_emb, seed):
        for cand in decoder.decode(np.asarray(point, np.float32)[None], n=keep)[0]:
            if cand.text.strip() and not any(near_duplicate(cand.text, r["query"]) for r in rows):
                rows.append({"query": cand.text, "origin": origin})
    frame = pd.DataFrame(rows, columns=["query", "origin"])
    if frame.empty:
        return GeneratedExposure(frame.assign(rank=[], in_log=[], logged_as=[], exposes=[], exposure=[]), n_qd,
                                 logged_total, ["the decoder produced no query"])
    frame["rank"] = passage_ranks(setup, list(frame["query"]), doc, text)
    log = logged_wordings(setup)
    logged_as = [log.match(q) for q in frame["query"]]
    frame["in_log"] = [bool(m) for m in logged_as]
    frame["logged_as"] = logged_as
    frame["exposes"] = frame["rank"] <= n_qd
    frame["exposure"] = np.where(frame["exposes"], n_qd - frame["rank"] + 1, 0).astype(int)
    frame = frame.sort_values(["rank", "in_log"], kind="stable").head(n).reset_index(drop=True)
    notes = [] if space.encoder.id == setup.space else [f"queries decoded in {space.encoder.id}'s space"]
    return GeneratedExposure(frame, n_qd, logged_total, notes)


def copy_query(text: str, k: int = 3) -> str:
    """The trivial baseline with the same access: the passage's first ``k`` content words."""
    from eqi_core.decoder.base import stopwords, words

    stop = stopwords()
    return " ".join([w for w in words(text) if w not in stop and len(w) > 1][:k])


def real_word_vocabulary(setup: ExposureSetup) -> frozenset[str]:
    """Words of the collection's passages and logged queries: a decoded word outside it is a non-word."""
    from eqi_core.decoder.base import words

    vocab: set[str] = set()
    for text in list(setup.collection.queries["text"]) + setup.texts:
        vocab.update(words(text))
    return frozenset(vocab)


def evaluate_generative(setup: ExposureSetup, space, docs: list[str], n: int = 20, n_qd: int = 10,
                        progress=None) -> pd.DataFrame:
    """Per passage: decoded queries not in the log that rank it in the top ``n_qd`` (count, best rank,
    an example), the same for decoded queries made only of real words (a dense ranker also ranks
    non-words like "impliestia" high; those are not searches anyone types), its logged exposing
    queries within ``n_qd``, and the copy baseline's rank (its first 3 content words)."""
    from eqi_core.decoder.base import words

    vocab = real_word_vocabulary(setup)
    rows = []
    for i, d in enumerate(docs):
        g = generate_exposure(setup, space, n, n_qd, doc_id=d)
        unseen = g.unseen_exposing
        real = unseen[[all(w in vocab for w in words(q)) for q in unseen["query"]]]
        doc = setup.exposure.doc_index(d)
        q, r0 = setup.exposure.exposing(doc)
        copy = copy_query(setup.passage_text(doc))
        rows.append({"doc_id": d, "logged_exposing": int((r0 < n_qd).sum()), "unseen_exposing": len(unseen),
                     "unseen_exposing_real_words": len(real), "example_real_words": real["query"].iloc[0] if len(real) else "",
                     "best_unseen_rank": float(unseen["rank"].min()) if len(unseen) else np.nan,
                     "example": unseen["query"].iloc[0] if len(unseen) else "", "candidates": len(g.candidates),
                     "copy_query": copy, "copy_rank": passage_ranks(setup, [copy], doc, None)[0] if copy else np.inf})
        if progress:
            progress(i + 1, len(docs))
    return pd.DataFrame(rows)
