"""Which candidate suggestions to show: a learned re-ranker (query performance prediction for
rewrites) over the PRF suggester's pool.

The PRF suggester's samples and one nucleus sample at each point of the feedback walks
(``baselines.feedback_walk_points``, drawn in the same batch: ``model.sample_pool_and_walks``)
form one pool of whole decoder outputs per query. Each candidate is described by what the PRF model
may see (the query, the ranker's top-5 passages) and by what the candidate itself retrieves: its
cosines to the query and to each feedback passage, its top-10 scores, how much of the query's top 10
it keeps, where it puts each feedback passage, its word overlap with the query and its length. A
linear model on those features predicts the candidate's nDCG@10 gain over the query (or whether
there is one: ``TARGETS``); it is fitted
on the pools of training queries (never a held-out or evaluated query), against their judgments,
within each query (features and gains centred per query: only the order inside a pool matters).
It is stored as JSON (feature names, scales, weights; the centring needs no storing, as it does
not change the order within a pool): no pickle.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from eqi_core.decoder.base import words
from eqi_core.errors import DataError
from eqi_core.progress import ProgressFn
from eqi_core.suggestion.dataset import FEEDBACK, decoder_digest

FEATURES = ("cos query", *(f"cos passage {j + 1}" for j in range(FEEDBACK)), "cos passages mean", "cos passages max",
            "top-1 score", "top-10 score", "top-1 minus top-10", "share of the query's top 10 kept",
            *(f"1/rank of passage {j + 1}" for j in range(FEEDBACK)), "word overlap with the query", "log words",
            "from a feedback walk")
RANKER_FILE = "ranker.json"
# The pick's word-overlap penalty, chosen on the development queries (Cranfield 20 held-out of seed 0,
# WordNet 40 held-out of seed 7; no reported table uses them) by a rule fixed beforehand: the largest
# of 0, .25, .5, 1, 2, 3, 4, 6, 8, 16 whose mean best-of-1/3/5/10 over both sets is within .002 of
# the pick by score alone. 4: the same mean (.397), Self-BLEU .174 -> .152 and .252 -> .211.
PICK_PENALTY = 4.0
# Nucleus samples at the PRF model's predicted points in the pool (shared out among the five points,
# rounded up: 10 is two at each), chosen the same way on the same development queries; mean
# best-of-1/3/5/10 over both sets by samples asked (drawn), the feedback walks' ten samples beside
# each: 5 (5): .404, 10 (10): .407, 12 (15): .405, 16 (20): .401, 24 (25; the decoding's default,
# used until 2026-11-26): .401, 36 (40): .395.
POOL_SAMPLES = 10


def candidate_features(space, query: str, q: np.ndarray, feedback: np.ndarray, texts: list[str],
                       from_walk: np.ndarray, emb: np.ndarray, top: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """(len(texts), len(FEATURES)). ``feedback``: the indices of the query's top-5 passages;
    ``emb``: the candidates' embeddings; ``top``: their top-10 (scores, passage indices)."""
    fb = space.ranker.doc_embeddings[np.asarray(feedback)]
    cos_fb = emb @ fb.T
    # a collection of fewer than FEEDBACK passages: the missing passages' columns hold the same value
    # for every candidate of the pool, which moves every score alike and so changes no pick
    cos_cols = np.zeros((len(texts), FEEDBACK))
    cos_cols[:, : cos_fb.shape[1]] = cos_fb
    scores, idx = top
    _, q_top = space.top(q[None], 10)
    kept = np.isin(idx, q_top[0]).mean(1)
    pos = np.zeros((len(texts), FEEDBACK))
    for j, d in enumerate(np.asarray(feedback)):
        rows, cols = np.nonzero(idx == d)
        pos[rows, j] = 1.0 / (cols + 1)
    own = set(words(query))
    overlap = [len(own & set(words(t))) / max(1, len(own | set(words(t)))) for t in texts]
    length = [np.log1p(len(words(t))) for t in texts]
    return np.column_stack([emb @ q, cos_cols, cos_fb.mean(1), cos_fb.max(1), scores[:, 0], scores[:, -1],
                            scores[:, 0] - scores[:, -1], kept, pos, overlap, length,
                            np.asarray(from_walk, dtype=np.float64)]).astype(np.float64)


@dataclass
class CandidatePool:
    """One query's candidates: the PRF samples, then the feedback walks' samples not among them."""
    texts: list[str]
    emb: np.ndarray
    features: np.ndarray
    top1: np.ndarray  # each candidate's first passage (index), for the pick's coverage


def pool_decoding(samples: int | None, how=None):
    """``how`` (default: the suggesters' ``DECODING``) with ``samples`` at the predicted points, if given."""
    from dataclasses import replace

    from eqi_core.suggestion.model import DECODING

    how = how or DECODING
    return replace(how, samples=samples) if samples else how


TOP_UP_SEED = 1_000_000  # added to the query's seed for the top-up's draws (another stream than the pool's)


def candidate_pool(space, query: str, q: np.ndarray, feedback: np.ndarray, targets: np.ndarray, seed: int = 0,
                   how=None, least: int = 0) -> CandidatePool:
    """The samples at ``targets`` (``how``) and at the feedback walks' points, filtered, with their
    features. A pool of fewer than ``least`` candidates (the samples repeat each other or the query,
    or leave the vocabulary) is topped up with samples up to the decoding's default number, drawn
    from another stream, so that a smaller pool costs no suggestions."""
    from dataclasses import replace

    from eqi_core.suggestion.baselines import feedback_walk_points
    from eqi_core.suggestion.model import DECODING, real_word_test, sample_pool, sample_pool_and_walks

    how = how or DECODING
    points = feedback_walk_points(q, space.ranker.doc_embeddings[np.asarray(feedback)])
    samples, walks = sample_pool_and_walks(space, query, q, targets, points, seed, how)
    texts = list(dict.fromkeys(samples + walks))
    if len(texts) < least and how.samples < DECODING.samples:
        samples += sample_pool(space, query, q, targets, seed + TOP_UP_SEED,
                               replace(how, samples=DECODING.samples - how.samples))
        texts = list(dict.fromkeys(samples + walks))
        # the top-up keeps made-up words when its own samples have nothing else; the pool, only when
        # none of its candidates is made of known words
        is_real = real_word_test(space.collection)
        if any(map(is_real, texts)):
            texts = [t for t in texts if is_real(t)]
    if not texts:
        return CandidatePool([], np.zeros((0, q.shape[0]), np.float32), np.zeros((0, len(FEATURES))), np.zeros(0, int))
    sampled = set(samples)
    emb = space.encode(texts)
    top = space.top(emb, 10)
    x = candidate_features(space, query, q, feedback, texts, np.array([t not in sampled for t in texts]), emb, top)
    return CandidatePool(texts, emb, x, np.asarray(top[1])[:, 0])


def cover_first(scores: np.ndarray, top1: np.ndarray, n: int, texts: list[str] | None = None,
                penalty: float = 0.0) -> list[int]:
    """Indices by descending score, but each round takes only candidates whose first passage no
    earlier pick of the round has: best-of-k rewards suggestions that reach different passages.
    With a ``penalty`` (and ``texts``), each pick maximises the score standardised within the pool
    minus ``penalty`` x its largest word Jaccard with an earlier pick (maximal marginal relevance):
    walks to passages that tell one story decode to near-paraphrases, and a list of those shows a
    searcher one idea ten times."""
    from eqi_core.suggestion.model import word_jaccard

    scores = np.asarray(scores, dtype=np.float64)
    z = (scores - scores.mean()) / (scores.std() or 1.0) if penalty and texts is not None else scores
    bags = [set(words(t)) for t in texts] if penalty and texts is not None else None
    order = list(np.argsort(-scores, kind="stable"))
    chosen: list[int] = []
    covered: set[int] = set()
    while order and len(chosen) < n:
        fresh = [i for i in order if int(top1[i]) not in covered]
        if not fresh:
            covered.clear()
            continue
        best = fresh[0] if bags is None or not chosen else max(
            fresh, key=lambda i: z[i] - penalty * max(word_jaccard(bags[i], bags[j]) for j in chosen))
        chosen.append(best)
        order.remove(best)
        covered.add(int(top1[best]))
    return [int(i) for i in chosen]


@dataclass
class SuggestionRanker:
    """A linear scorer over ``FEATURES`` (standardised): higher = a larger predicted gain over the
    query (or likelier to beat it, with the ``beats`` target)."""
    weights: np.ndarray
    scale: np.ndarray
    features: tuple[str, ...] = FEATURES
    card: dict | None = None
    pick_penalty: float = 0.0  # ``cover_first``'s word-overlap penalty; 0 in files from before it existed
    samples: int | None = None  # samples at the predicted points in the pool; None (older files): the decoding's

    def score(self, x: np.ndarray) -> np.ndarray:
        return (np.asarray(x, dtype=np.float64) / self.scale) @ self.weights

    def save(self, folder: Path, card: dict) -> None:
        from eqi_core.store import atomic_write

        folder.mkdir(parents=True, exist_ok=True)
        atomic_write(folder / RANKER_FILE, json.dumps({"features": list(self.features), "scale": self.scale.tolist(),
                                                       "weights": self.weights.tolist(), **card,
                                                       "pick_penalty": self.pick_penalty,
                                                       **({"pool_samples": self.samples} if self.samples else {})},
                                                      indent=1))


def load_ranker(folder: Path) -> SuggestionRanker | None:
    """The re-ranker stored beside a suggester, None if it has none; a broken file is one line."""
    path = Path(folder) / RANKER_FILE
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        weights, scale = np.array(data["weights"], dtype=np.float64), np.array(data["scale"], dtype=np.float64)
        names = tuple(data["features"])
        penalty = float(data.get("pick_penalty", 0.0))
        samples = data.get("pool_samples")
    except (ValueError, KeyError, TypeError) as exc:
        raise DataError(f"{path}: not a suggestion re-ranker ({type(exc).__name__}: {exc})") from None
    if names != FEATURES or weights.shape != (len(FEATURES),) or scale.shape != weights.shape or (scale <= 0).any():
        raise DataError(f"{path}: expected weights and positive scales for the {len(FEATURES)} features "
                        f"{', '.join(FEATURES)}")
    if not penalty >= 0:
        raise DataError(f"{path}: pick_penalty {data['pick_penalty']!r}: expected a number >= 0")
    if samples is not None and (isinstance(samples, bool) or not isinstance(samples, int) or samples < 1):
        raise DataError(f"{path}: pool_samples {samples!r}: expected a whole number >= 1")
    return SuggestionRanker(weights, scale, names, {k: v for k, v in data.items() if k not in ("weights", "scale")},
                            penalty, samples)


def fit_ranker(x: np.ndarray, gain: np.ndarray, group: np.ndarray, ridge: float = 1.0) -> SuggestionRanker:
    """Ridge regression of ``gain`` (the target: ``TARGETS``) on the standardised features, both
    centred within each query (``group``), so that only the order inside a query's pool is learned."""
    x, gain, group = np.asarray(x, dtype=np.float64), np.asarray(gain, dtype=np.float64), np.asarray(group)
    if len(x) != len(gain) or len(x) != len(group) or x.ndim != 2 or x.shape[1] != len(FEATURES):
        raise DataError(f"ranker training: {x.shape} features, {len(gain)} gains, {len(group)} groups: "
                        f"expected one row of {len(FEATURES)} features per gain")
    _, inverse = np.unique(group, return_inverse=True)
    counts = np.bincount(inverse)
    sums = np.zeros((len(counts), x.shape[1]))
    np.add.at(sums, inverse, x)
    xc = x - sums[inverse] / counts[inverse, None]
    yc = gain - np.bincount(inverse, gain)[inverse] / counts[inverse]
    scale = xc.std(0)
    scale[scale < 1e-9] = 1.0
    xs = xc / scale
    weights = np.linalg.solve(xs.T @ xs + ridge * len(xs) * 1e-3 * np.eye(xs.shape[1]), xs.T @ yc)
    return SuggestionRanker(weights, scale)


def ranked_suggestions(space, query: str, q: np.ndarray, feedback: np.ndarray, targets: np.ndarray,
                       ranker: SuggestionRanker, n: int, seed: int = 0, how=None) -> list[str]:
    """Up to ``n`` of the pool's candidates, by the ranker's score, covering different first passages
    first, penalising word overlap with earlier picks as the ranker says (``cover_first``); the pool has
    the ranker's number of samples at the predicted points (``pool_decoding``)."""
    pool = candidate_pool(space, query, q, feedback, targets, seed, pool_decoding(ranker.samples, how), least=n)
    if not pool.texts:
        return []
    picks = cover_first(ranker.score(pool.features), pool.top1, n, pool.texts, ranker.pick_penalty)
    return [pool.texts[i] for i in picks]


# -- training -------------------------------------------------------------------------------------------
POOLS_KIND = "suggestion-pools"
POOLS_VERSION = 3  # 3: pools of fewer than 10 topped up (2: without; 1: the walks beam-decoded, beam 4)
POOL_DESCRIPTION = ("the PRF samples and one nucleus sample at each feedback-walk point (90% of the way "
                    "to each top-5 passage, then the passage), in one batch; topped up with samples when fewer "
                    "than 10 candidates are left")


def pool_rows(space, suggester, items, progress: ProgressFn | None = None,
              samples: int = POOL_SAMPLES) -> dict[str, np.ndarray]:
    """Each item's (query_id, text, gold) pool, as ``suggest`` would make it with seed = the item's
    position and ``samples`` at the predicted points: features and each candidate's nDCG@10 gain over
    the query (the query's judgments)."""
    from eqi_core.suggestion.model import MAX_SUGGESTIONS

    xs, gains, groups = [], [], []
    docs = space.ranker.doc_embeddings
    for i, (qid, text, gold) in enumerate(items):
        q = space.encode([text])[0]
        _, fb = space.top(q[None], FEEDBACK)
        pool = candidate_pool(space, text, q, fb[0], suggester.point(np.concatenate([q[None], docs[fb[0]]])), seed=i,
                              how=pool_decoding(samples), least=MAX_SUGGESTIONS)
        if pool.texts:
            qrels = space.qrels_for(qid, gold)
            orig = float(space.ndcg10(q[None], [qrels])[0])
            xs.append(pool.features)
            gains.append(space.ndcg10(pool.emb, [qrels] * len(pool.texts)) - orig)
            groups.append(np.full(len(pool.texts), i))
        if progress:
            progress(i + 1, len(items))
    width = len(FEATURES)
    return {"x": np.concatenate(xs) if xs else np.zeros((0, width)), "gain": np.concatenate(gains) if gains else np.zeros(0),
            "group": np.concatenate(groups) if groups else np.zeros(0, int)}


def training_pools(space, suggester, items, store, progress: ProgressFn | None = None,
                   samples: int = POOL_SAMPLES) -> dict[str, np.ndarray]:
    """``pool_rows`` for one collection's training items, kept in the store (a rerun loads them)."""
    from eqi_core.store import content_digest, file_sha256

    weights = Path(suggester.card["_folder"]) / "suggester.safetensors"
    params = {"collection": space.collection.fingerprint, "encoder": space.encoder.id,
              "decoder": decoder_digest(space.model),  # the pools' texts are this decoder's samples
              "suggester": file_sha256(weights),
              "items": content_digest(json.dumps([list(map(str, it)) for it in items])), "version": POOLS_VERSION,
              "samples": samples}

    def build(tmp: Path) -> dict:
        rows = pool_rows(space, suggester, items, progress, samples)
        np.savez(tmp / "pools.npz", **rows)
        return {"queries": len(items), "candidates": len(rows["gain"])}

    art = store.get_or_build(POOLS_KIND, params, build)
    with np.load(art.file("pools.npz")) as data:
        return {k: data[k] for k in ("x", "gain", "group")}


TARGETS = {"gain": "the candidate's nDCG@10 minus the query's",
           "beats": "whether the candidate's nDCG@10 is above the query's (best-of-k counts only those)"}


def fit_pools(pools: dict[str, dict[str, np.ndarray]], target: str = "gain", ridge: float = 1.0) -> SuggestionRanker:
    """One ranker over several collections' ``training_pools`` (their queries kept apart), fitted to
    ``target`` (``TARGETS``)."""
    if target not in TARGETS:
        raise DataError(f"ranker target {target!r}: expected one of {', '.join(TARGETS)}")
    parts = [p for p in pools.values() if len(p["gain"])]
    if not parts:
        raise DataError("ranker training: no candidate was made for any training query")
    offset, groups = 0, []
    for p in parts:
        groups.append(p["group"] + offset)
        offset += int(p["group"].max()) + 1
    gain = np.concatenate([p["gain"] for p in parts])
    return fit_ranker(np.concatenate([p["x"] for p in parts]), gain if target == "gain" else (gain > 0).astype(float),
                      np.concatenate(groups), ridge)
