"""One passage's exposing queries, exact and by each approximate method, with RELQ: what the
Exposure page and ``eqi exposure`` show.

A passage is either in the collection (by id) or pasted text. For pasted text under a dense
ranker the exact answer is still available without re-running the log: the new passage enters
query q's top n_q->d exactly when its score beats q's n-th cached score, at the rank given by
how many cached scores beat it.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from eqi_core.encoders import MAX_PASSAGE_CHARS, text_notes
from eqi_core.errors import DataError
from eqi_core.exposure.relq import PATIENCE_GAMMAS, RelqSpec, relq, relq_rbp
from eqi_core.exposure.setup import ExposureSetup
from eqi_core.rankers import ranker_spec


@dataclass
class PassageExposure:
    doc_id: str | None
    text: str
    n_qd: int
    exact: pd.DataFrame | None  # query_id, query, rank (1-based), exposure = n_qd - rho
    lists: dict[str, pd.DataFrame] = field(default_factory=dict)  # position, query_id, query, score, rank
    relq: pd.DataFrame | None = None  # method x spec
    notes: list[str] = field(default_factory=list)


def validate_text(text: str) -> str:
    if text is None or not text.strip():
        raise DataError("the passage is empty; paste some text or pick a passage id")
    if len(text) > MAX_PASSAGE_CHARS:
        raise DataError(f"the passage has {len(text):,} characters; at most {MAX_PASSAGE_CHARS:,} are accepted")
    return text


def validate_depths(n_qd: int, n_dq: int, max_qd: int) -> None:
    if not 1 <= n_qd <= max_qd:
        raise DataError(f"n_q->d = {n_qd}: expected 1..{max_qd} (the exposure map was computed to depth {max_qd})")
    if n_dq <= 0:
        raise DataError(f"n_d->q = {n_dq}: expected a positive number of queries")


def exact_for_new_text(setup: ExposureSetup, passage_emb: np.ndarray, n_qd: int) -> pd.DataFrame:
    """Exact exposing queries of a passage not in the collection (dense rankers): its score for every
    logged query against the scores cached in the exposure map."""
    return _exact_from_scores(setup, dense_scores_of_new_text(setup, passage_emb), n_qd)


def dense_scores_of_new_text(setup: ExposureSetup, passage_emb: np.ndarray) -> np.ndarray:
    """A pasted passage's score for every logged query under a dense ranker (one product, so a query's
    score is the same wherever it is read)."""
    return setup.query_emb @ passage_emb.astype(np.float32)


def sparse_scores_of_new_text(setup: ExposureSetup, text: str, progress=None) -> np.ndarray:
    """The same under a learned-sparse ranker (SPLADE): the log's sparse vectors are encoded once and
    kept in the store; -inf where the passage shares no expansion term with a query (not retrieved)."""
    from eqi_core.rankers.registry import load_encoder

    encoder = load_encoder(ranker_spec(setup.ranker_id).encoder)
    s = (setup.sparse_queries(progress) @ encoder.encode_sparse([text]).T).toarray().ravel()
    return np.where(s > 0, s, -np.inf)


def exact_sparse_for_new_text(setup: ExposureSetup, text: str, n_qd: int, progress=None) -> pd.DataFrame:
    """Exact exposing queries of a passage not in the collection under a learned-sparse ranker."""
    return _exact_from_scores(setup, sparse_scores_of_new_text(setup, text, progress), n_qd)


PASTED = "(pasted)"  # the doc_id of a pasted passage in a query's results


def results_with_pasted(setup: ExposureSetup, query_id: str, text: str, k: int) -> pd.DataFrame | None:
    """A logged query's top ``k`` (rank, doc_id, score) as it would be with the pasted passage among
    the collection's (doc_id ``PASTED``), scored as its exact exposure scores it, so the rank it shows
    is the exposure table's: dense and learned-sparse scores against the map's cached lists (the other
    passages' scores do not change), BM25 with the passage appended to the index (its statistics
    change). None for a result log, which cannot rank new text."""
    spec = ranker_spec(setup.ranker_id)
    qi = int(pd.Index(setup.exposure.query_ids).get_loc(query_id))
    passages = setup.exposure.doc_ids
    if spec.map_source == "bm25":
        idx, scores = setup.bm25_with_new_passage().top(validate_text(text), qi, k)
        docs = np.array([PASTED if i == len(passages) else passages[i] for i in idx], dtype=object)
    elif spec.family in ("dense", "learned-sparse"):
        text = validate_text(text)
        own = float((dense_scores_of_new_text(setup, setup.encoder.encode([text])[0]) if spec.family == "dense"
                     else sparse_scores_of_new_text(setup, text))[qi])
        listed = _topk_scores(setup)[qi]
        pairs = np.flatnonzero(setup.exposure.q_idx == qi)
        order = pairs[np.argsort(setup.exposure.rank0[pairs], kind="stable")]
        docs, scores = passages[setup.exposure.d_idx[order]], listed[setup.exposure.rank0[order]]
        if np.isfinite(own):
            at = int((scores >= own).sum())  # listed results scoring at least as high: ties go against it
            docs, scores = np.insert(docs.astype(object), at, PASTED), np.insert(scores, at, own)
        docs, scores = docs[:k], scores[:k]
    else:
        return None
    return pd.DataFrame({"rank": np.arange(1, len(docs) + 1), "doc_id": docs, "score": np.asarray(scores, float)})


def what_a_query_shows(setup: ExposureSetup, result: PassageExposure, query_id: str, shown: int = 10) -> pd.DataFrame:
    """What one logged query shows an auditor of ``result``'s passage: its top ``shown`` (rank, doc_id,
    score, passage, target), then the passage's own row where it is deeper, marked in ``target``.
    Pasted text is listed among the collection's passages at its exact rank (``results_with_pasted``),
    except under a result log, which cannot rank it: there the query's rows alone."""
    rank = None
    if result.exact is not None:
        rank = dict(zip(result.exact["query_id"].astype(str), result.exact["rank"])).get(str(query_id))
    deep = int(rank) if rank is not None else 0
    top = results_with_pasted(setup, query_id, result.text, max(deep, shown)) if result.doc_id is None and deep else None
    mark, this = (PASTED, "the pasted passage") if top is not None else (result.doc_id, "this passage")
    if top is None:
        top = setup.query_results(query_id, max(deep, shown) if result.doc_id is not None else shown)
    here = top["doc_id"] == mark
    top = top[(top["rank"] <= shown) | here]
    texts = [result.text if d == PASTED else setup.collection.display_text(d) or "" for d in top["doc_id"]]
    return top.assign(passage=texts, target=np.where(here[top.index], f"◀ {this}", "")).reset_index(drop=True)


def what_a_query_shows_says(result: PassageExposure, query_id: str, ranker_name: str, shown: int = 10) -> str:
    """The line over ``what_a_query_shows``'s table ("its top 10, then this passage (this passage at
    rank 34)"): where the query puts the audited passage, or why that is unknown (pasted text under a
    result log). One wording for the page, ``eqi exposure --show`` and the audit report."""
    this = "this passage" if result.doc_id is not None else "the pasted passage"
    if result.exact is None:
        return f"its top {shown} ({ranker_name} is known only by its results: where it would rank {this} is unknown)"
    rank = dict(zip(result.exact["query_id"].astype(str), result.exact["rank"])).get(str(query_id))
    if rank is None:
        return f"its top {shown} (it does not show {this} in its top {result.n_qd})"
    where = f"this passage at rank {int(rank)}" if result.doc_id is not None else f"the pasted passage would rank {int(rank)}"
    return f"its top {shown}" + (f", then {this}" if rank > shown else "") + f" ({where})"


def exact_exposure(setup: ExposureSetup, n_qd: int, doc_id: str | None = None, text: str | None = None,
                   emb: np.ndarray | None = None) -> tuple[pd.DataFrame | None, list[str]]:
    """The exact exposing queries of a passage of the collection (from the map) or of pasted text
    (scored against the map, per ranker family), with a note when they cannot be known (a result
    log has no ranker to score new text). ``emb``: the text's embedding in ``setup.encoder``'s
    space, when the caller has it already."""
    if doc_id is not None:
        q, r = setup.exposure.exposing(setup.exposure.doc_index(doc_id))
        keep = r < n_qd
        return _exact_frame(setup, q[keep], r[keep], n_qd), []
    text = validate_text(text)
    spec = ranker_spec(setup.ranker_id)
    if spec.family == "dense":
        return exact_for_new_text(setup, setup.encoder.encode([text])[0] if emb is None else emb, n_qd), []
    if spec.map_source == "bm25":
        return exact_bm25_for_new_text(setup, text, n_qd), []
    if spec.family == "learned-sparse":
        return exact_sparse_for_new_text(setup, text, n_qd), []
    return None, [f"{spec.name} is known only by its results: a pasted passage's exact exposure needs a ranker "
                  "that runs here; the approximate methods are shown without ground truth"]


def exposure_change(exact_a: pd.DataFrame, exact_b: pd.DataFrame, name_a: str, name_b: str) -> pd.DataFrame:
    """One passage's exact exposing queries under two rankings side by side: who keeps, gains and
    loses sight of it when ranking ``name_a`` is replaced by ``name_b``. Columns: query_id, query,
    ``rank (A)``, ``rank (B)`` (<NA> where that ranking does not show the passage in its top
    n_q->d), ``places up`` (rank A - rank B: above 0 the passage is shown higher under B) and
    ``change``; the queries that show it highest under either ranking first."""
    if name_a == name_b:
        raise DataError(f"comparing {name_a!r} with itself: name two different rankings")
    a = exact_a[["query_id", "query", "rank"]].rename(columns={"rank": f"rank ({name_a})"})
    b = exact_b[["query_id", "query", "rank"]].rename(columns={"rank": f"rank ({name_b})"})
    both = a.merge(b, on=["query_id", "query"], how="outer")
    ra, rb = both[f"rank ({name_a})"].astype("Int64"), both[f"rank ({name_b})"].astype("Int64")
    both[f"rank ({name_a})"], both[f"rank ({name_b})"] = ra, rb
    both["places up"] = ra - rb
    both["change"] = np.select(
        [ra.isna().to_numpy(), rb.isna().to_numpy(), (both["places up"] > 0).fillna(False).to_numpy(),
         (both["places up"] < 0).fillna(False).to_numpy()],
        [f"only {name_b}", f"only {name_a}", "higher", "lower"], default="same")
    best = np.fmin(ra.to_numpy(dtype=float, na_value=np.inf), rb.to_numpy(dtype=float, na_value=np.inf))
    return both.assign(_best=best).sort_values(["_best", "query_id"], kind="stable").drop(columns="_best").reset_index(drop=True)


def change_summary(change: pd.DataFrame, name_a: str, name_b: str, top: int = 10) -> str:
    """One line for a comparison: how many queries expose the passage under each ranking, how many
    under both, gained and lost, and how many show it in their top ``top``."""
    ra, rb = change[f"rank ({name_a})"], change[f"rank ({name_b})"]
    kept, gained, lost = int((ra.notna() & rb.notna()).sum()), int((ra.isna()).sum()), int((rb.isna()).sum())
    return (f"{int(ra.notna().sum()):,} queries expose it under {name_a}, {int(rb.notna().sum()):,} under {name_b}: "
            f"{kept:,} under both, {gained:,} only under {name_b}, {lost:,} only under {name_a}; in the top {top}: "
            f"{int((ra <= top).sum()):,} under {name_a}, {int((rb <= top).sum()):,} under {name_b}")


def _topk_scores(setup: ExposureSetup) -> np.ndarray:
    """The map's (queries x depth) scores, built once per setup."""
    if "topk_scores" not in setup._methods:
        setup._methods["topk_scores"] = setup.exposure.topk_scores()
    return setup._methods["topk_scores"]


def _exact_from_scores(setup: ExposureSetup, s: np.ndarray, n_qd: int) -> pd.DataFrame:
    """The new passage enters query q's top n exactly when its score beats the n-th score of q's list in
    the exposure map, at the rank given by how many of the listed scores reach it: ties go against it,
    as a passage appended to the collection comes last among equal scores (the canonical order)."""
    topk = _topk_scores(setup)[:, :n_qd]
    q = np.flatnonzero((topk[:, -1] < s) & np.isfinite(s))  # lists are sorted: beating the last kept score
    rank0 = (topk[q] >= s[q, None]).sum(axis=1)  # listed results scoring at least as high
    order = np.lexsort((q, rank0))
    return _exact_frame(setup, q[order], rank0[order], n_qd)


def exact_bm25_for_new_text(setup: ExposureSetup, text: str, n_qd: int) -> pd.DataFrame:
    """Exact exposing queries of a passage not in the collection under BM25: as if appended to the
    collection, whose statistics (and so every passage's score) it changes (rankers/bm25.py)."""
    q, rank0 = setup.bm25_with_new_passage().exposing(text, n_qd)
    return _exact_frame(setup, q, rank0, n_qd)


def _exact_frame(setup: ExposureSetup, q: np.ndarray, rank0: np.ndarray, n_qd: int) -> pd.DataFrame:
    """Exposing queries with rank and exposure n_q->d - rho; with the log's counts, how often each
    was searched and the exposure weighted by it."""
    queries = setup.collection.queries
    frame = pd.DataFrame({"query_id": setup.exposure.query_ids[q], "query": queries["text"].to_numpy()[q],
                          "rank": rank0.astype(int) + 1, "exposure": n_qd - rank0.astype(int)})
    if "count" in queries.columns:
        frame["searches"] = queries["count"].to_numpy()[q]
        frame["weighted exposure"] = frame["exposure"] * frame["searches"]
    return frame


def reading_notes(setup: ExposureSetup, passage_text: str) -> list[str]:
    """Notes on what the dense encoder does not read of the passage: only its start (an auditor should
    know that the rest of the text cannot change its dense exposure), or its unknown pieces."""
    same_encoder = setup.ranker_id == setup.encoder.id  # the ranker is this encoder
    return text_notes(setup.encoder, passage_text, "passage",
                      f"{'the ranker and ' if same_encoder else ''}the dense methods (dense-reverse, the learned heads) "
                      f"ignore the rest of the text")


def twin_notes(setup: ExposureSetup, passage_text: str, doc_id: str | None) -> list[str]:
    """A note when other passages have exactly this text: every ranker scores them alike, so each query
    shows them side by side and only the ranker's tie-break decides which comes first; an auditor
    should read their exposure together."""
    twins = setup.collection.same_text(passage_text, but=doc_id)
    if not twins:
        return []
    named = ", ".join(twins[:3]) + (f" and {len(twins) - 3:,} more" if len(twins) > 3 else "")
    return [f"{'its text is also that of passage' if doc_id is not None else 'this text is already that of passage'}"
            f"{'s' if len(twins) > 1 else ''} {named}: every ranker scores them alike, so each query shows them side "
            f"by side and the ranker's tie-break decides which comes first"]


def in_sample_notes(methods: dict, doc: int | None) -> list[str]:
    """A learned head scored on a passage it was trained on is scored in-sample: the page and the
    CLI say so, since an auditor reads its RELQ beside methods that never saw the passage."""
    trained = [name for name, m in methods.items() if doc is not None and hasattr(m, "was_trained_on")
               and m.was_trained_on(doc)]
    if not trained:
        return []
    heads = " and ".join(trained)
    return [f"{heads} {'was' if len(trained) == 1 else 'were'} trained on this passage's exposing queries (one of "
            f"{len(methods[trained[0]].trained_on):,} training passages): {'its list is' if len(trained) == 1 else 'their lists are'} "
            "in-sample here; the Exposure evaluation page (eqi eval-exposure) scores the heads on held-out passages"]


def passage_exposure(setup: ExposureSetup, methods: dict, specs: list[RelqSpec], n_qd: int = 100, n_dq: int = 100,
                     doc_id: str | None = None, text: str | None = None) -> PassageExposure:
    """Exposing queries of one passage: exact (when known) and from each method, with RELQ per spec."""
    validate_depths(n_qd, n_dq, setup.depth)
    texts = setup.collection.queries["text"].to_numpy()
    doc = None  # a pasted passage: no head has seen it
    if doc_id is not None:
        doc = setup.exposure.doc_index(doc_id)
        passage_text = setup.passage_text(doc)
        emb = setup.passage_vector(doc)
    else:
        passage_text = validate_text(text)
        emb = setup.encoder.encode([passage_text])[0]
    notes = reading_notes(setup, passage_text) + twin_notes(setup, passage_text, doc_id)
    exact, more = exact_exposure(setup, n_qd, doc_id, passage_text, emb)
    notes.extend(more)
    lists = {}
    for name, method in methods.items():
        if hasattr(method, "retrieve_texts"):
            idx, scores = method.retrieve_texts([passage_text], n_dq)
        else:
            idx, scores = method.retrieve(emb[None, :].astype(np.float32), n_dq)
        idx, scores = idx[0], scores[0]
        ok = idx >= 0
        idx, scores = idx[ok], scores[ok]
        rank_of = dict(zip(exact["query_id"], exact["rank"])) if exact is not None else {}
        qids = setup.exposure.query_ids[idx]
        lists[name] = pd.DataFrame({"position": np.arange(1, len(idx) + 1), "query_id": qids, "query": texts[idx],
                                    "score": scores, "rank": [rank_of.get(q, np.nan) for q in qids]})
    notes.extend(in_sample_notes(methods, doc))
    relq_table = None
    if exact is not None and len(exact):
        rows = {}
        for name, frame in lists.items():
            got, ideal = _relq_ranks(frame, exact)
            rows[name] = {str(s): relq(got, ideal, s) for s in specs}
        relq_table = pd.DataFrame(rows).T
    elif exact is not None:
        notes.append(f"no logged query shows this passage in its top {n_qd}: RELQ is undefined")
    return PassageExposure(doc_id, passage_text, n_qd, exact, lists, relq_table, notes)


def _relq_ranks(listed: pd.DataFrame, exact: pd.DataFrame) -> tuple[list[float], list[float]]:
    """A method's list and the exact list as ``relq`` takes them: 0-based ranks, inf where a listed
    query does not expose the passage."""
    return [r - 1 if np.isfinite(r) else np.inf for r in listed["rank"]], (exact["rank"] - 1).tolist()


def patience_grids(result: PassageExposure, n_dq: int, gammas=PATIENCE_GAMMAS) -> dict[str, pd.DataFrame]:
    """This passage's RELQ_{RBP,RBP} for each method over the patience grid (rows gamma_q->d, the
    searcher; columns gamma_d->q, the auditor): paper Figure 5 for one passage, so an auditor sees
    whether a method's score holds under other patience assumptions or only at the one chosen.
    Empty without an exact list to compare with (a pasted passage under a result log, or nobody
    exposing it)."""
    if result.exact is None or not len(result.exact):
        return {}
    grids = {}
    for name, frame in result.lists.items():
        got, ideal = _relq_ranks(frame, result.exact)
        grid = pd.DataFrame(index=pd.Index(gammas, name="gamma_qd"), columns=pd.Index(gammas, name="gamma_dq"), dtype=float)
        for g_qd in gammas:
            for g_dq in gammas:
                grid.loc[g_qd, g_dq] = relq(got, ideal, relq_rbp(g_qd, g_dq, n_dq))
        grids[name] = grid
    return grids
