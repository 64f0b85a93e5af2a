"""Query suggestion baselines of the paper (Section 5, Figure 5 / Table 7) and how they are scored.

- RM3: the original query plus one expansion term, for each of the n best terms of a relevance
  model estimated from the ranker's top-5 passages (Pal et al. 2013, Eq. 20; Dirichlet, mu = 2500).
- Two probes of what best-of-k rewards, not suggesters: the query plus a random term of the same
  top-5 passages (RM3's access and candidate terms, without its weights), and the query plus a
  random term of the collection (no feedback at all: a mere perturbation of the query). On TREC DL
  2019 the first matches RM3 and the second already gains on the query: a max over ten near-copies
  of a query collects the ranker's noise as well as better queries.
- Sampling+QD: points drawn uniformly from an epsilon-ball around the query's embedding, each
  decoded by nucleus sampling ("we sample a point uniformly at random from an epsilon-ball around the
  embedding of the original query and use the query decoder to decode that point"; every method's
  suggestions are nucleus samples), then filtered and picked exactly as the suggestion models' samples.
- Feedback walks+QD: decodings on the way from the query to each of its top-5 passages (the
  trivial baseline with the PRF model's access; ``feedback_walk_suggestions``).
- Traversal (oracle): decodings along the walk to the gold passage; it knows the gold, so it is an
  upper reference, not a fair suggester.
Scored as the paper does: max nDCG@10 over the original query and the best 1/3/5/10 suggestions.
"""
from __future__ import annotations

import math
from collections import Counter
from functools import lru_cache

import numpy as np

from eqi_core.decoder.base import fold, stopwords, terms
from eqi_core.decoder.traversal import check_query

CUTOFFS = (1, 3, 5, 10)


@lru_cache(maxsize=4)
def _collection_model(fingerprint: str, texts: tuple[str, ...]) -> tuple[Counter, int]:
    counts: Counter = Counter()
    for t in texts:
        counts.update(terms(t))
    return counts, sum(counts.values())


def collection_model(collection) -> tuple[Counter, int]:
    return _collection_model(collection.fingerprint, tuple(collection.passage_texts()))


def _expandable(query: str):
    """Whether a term may be added to ``query``: not a stop word, not already in the query (accents
    aside), longer than one character (RM3's terms and the probes' draw the same way)."""
    stop, seen = stopwords(), {fold(w) for w in terms(query)}
    return lambda w: w not in stop and fold(w) not in seen and len(w) > 1


def rm3_terms(query: str, feedback: list[str], collection, n: int = 10, mu: float = 2500.0) -> list[tuple[str, float]]:
    """The ``n`` best expansion terms (not stop words, not already in the query, accents aside) with
    P(w|R). Terms of any script, as the collection writes them."""
    counts, total = collection_model(collection)
    floor = 1.0 / (total + len(counts) + 1)
    q_words = terms(query)
    p_c = lambda w: counts.get(w, 0) / total if counts.get(w, 0) else floor
    weights: Counter = Counter()
    for text in feedback:
        tf = Counter(terms(text))
        length = sum(tf.values())
        p_wd = lambda w, tf=tf, length=length: (tf.get(w, 0) + mu * p_c(w)) / (length + mu)
        likelihood = math.exp(sum(math.log(p_wd(w)) for w in q_words))
        for w in tf:
            weights[w] += p_wd(w) * likelihood
    expandable = _expandable(query)
    ranked = [(w, s) for w, s in weights.most_common() if expandable(w)]
    norm = sum(s for _, s in ranked) or 1.0
    return [(w, s / norm) for w, s in ranked[:n]]


def rm3_suggestions(space, query: str, n: int = 10, feedback_docs: int = 5) -> list[str]:
    query = check_query(query)
    _, idx = space.top(space.encode([query]), feedback_docs)
    texts = space.collection.passage_texts()
    feedback = [texts[i] for i in idx[0]]
    return [f"{query} {w}" for w, _ in rm3_terms(query, feedback, space.collection, n)]


FEEDBACK_TERM = "random feedback term (probe)"
RANDOM_TERM = "random term, no feedback (probe)"


def expansion_candidates(query: str, texts) -> list[str]:
    """The distinct terms of ``texts`` that RM3 may add to ``query`` (``_expandable``), in order of
    first appearance."""
    expandable = _expandable(query)
    return list(dict.fromkeys(w for t in texts for w in terms(t) if expandable(w)))


def feedback_term_suggestions(space, query: str, n: int = 10, seed: int = 0, feedback_docs: int = 5) -> list[str]:
    """The query plus one term drawn at random (seeded, without replacement) from RM3's candidate
    terms in the ranker's top-5 passages: RM3's access without its relevance model, the probe that
    says how much of RM3's best-of-k its weights earn."""
    query = check_query(query)
    _, idx = space.top(space.encode([query]), feedback_docs)
    texts = space.collection.passage_texts()
    pool = expansion_candidates(query, [texts[i] for i in idx[0]])
    rng = np.random.default_rng(seed)
    return [f"{query} {pool[j]}" for j in rng.permutation(len(pool))[:n]]


@lru_cache(maxsize=4)
def _vocabulary(fingerprint: str, texts: tuple[str, ...]) -> tuple[str, ...]:
    counts, _ = _collection_model(fingerprint, texts)
    stop = stopwords()
    return tuple(sorted(w for w, c in counts.items() if c >= 2 and w not in stop and len(w) > 1))


def collection_vocabulary(collection) -> tuple[str, ...]:
    """The collection's terms seen at least twice (a once-seen string is often a typo or an id),
    stop words and single characters aside, sorted: what a random term is drawn from."""
    return _vocabulary(collection.fingerprint, tuple(collection.passage_texts()))


def random_term_suggestions(space, query: str, n: int = 10, seed: int = 0) -> list[str]:
    """The query plus one term drawn at random (seeded, without replacement, uniform over distinct
    terms) from the collection's vocabulary, none already in the query: no feedback and no model, a
    perturbation of the query whose best-of-k gain is the metric's reward for trying often."""
    query = check_query(query)
    vocab, expandable = collection_vocabulary(space.collection), _expandable(query)
    rng = np.random.default_rng(seed)
    out: list[str] = []
    for j in rng.permutation(len(vocab)):
        if len(out) == n:
            break
        if expandable(vocab[j]):
            out.append(f"{query} {vocab[j]}")
    return out


def ball_points(center: np.ndarray, n: int, epsilon: float, seed: int = 0) -> np.ndarray:
    """``n`` points uniform in the epsilon-ball around ``center`` (direction ~ Gaussian, radius ~ eps U^(1/dim))."""
    rng = np.random.default_rng(seed)
    dim = center.shape[-1]
    u = rng.standard_normal((n, dim))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    r = epsilon * rng.random(n) ** (1.0 / dim)
    return (center[None, :] + r[:, None] * u).astype(np.float32)


def sampling_suggestions(space, query: str, n: int = 10, epsilon: float = 0.4, seed: int = 0,
                         points: int | None = None) -> list[str]:
    """Sampling+QD: ``points`` (default: the models' sample budget, 24) uniform in the epsilon-ball
    around the query's embedding, put back on the unit sphere the decoder was trained on, one nucleus
    sample each, then the suggestion models' own filters and pick (distinct, never the query, real
    words, maximal marginal relevance by cosine to the nearest ball point). The same decoding budget
    as the models, so the comparison isolates what they learned: where to put the points."""
    from eqi_core.suggestion.model import DECODING, decode_suggestions

    query = check_query(query)
    q = space.encode([query])[0]
    ball = ball_points(q, points or DECODING.samples, epsilon, seed)
    ball /= np.linalg.norm(ball, axis=1, keepdims=True)
    return decode_suggestions(space, query, q, ball, n, seed)


FEEDBACK_WALKS = "feedback walks+QD"
FEEDBACK_FRACTIONS = (0.9, 1.0)  # chosen on development queries (Cranfield 20, WordNet 40), never reported


def feedback_walk_points(q: np.ndarray, docs: np.ndarray, fractions: tuple[float, ...] = FEEDBACK_FRACTIONS) -> np.ndarray:
    """The points ``fractions`` of the way from ``q`` to each row of ``docs`` (linear, put back on the
    unit sphere), nearest fraction first, then by row: (len(fractions) x len(docs), dim)."""
    docs = np.asarray(docs, dtype=np.float32)
    points = np.concatenate([q[None] + t * (docs - q[None]) for t in fractions]).astype(np.float32)
    return points / np.linalg.norm(points, axis=1, keepdims=True)


def feedback_walk_pool(space, query: str, q: np.ndarray, docs: np.ndarray,
                       fractions: tuple[float, ...] = FEEDBACK_FRACTIONS, beam: int = 4) -> list[str]:
    """Beam decodings of ``feedback_walk_points``, in their order; filtered as the models' samples
    (distinct, never the query, no repeated content word or stutter, known words when any is)."""
    from eqi_core.suggestion.model import _fluent, real_word_test

    points = feedback_walk_points(q, docs, fractions)
    texts = _fluent([c[0].text for c in space.model.decode(points, n=1, beam=beam) if c], query)
    is_real = real_word_test(space.collection)
    return [t for t in texts if is_real(t)] or texts


def feedback_walk_suggestions(space, query: str, n: int = 10) -> list[str]:
    """Feedback walks+QD: the trivial baseline with the PRF model's access (the query and the
    ranker's top-5 passages) that walks towards each of them, as the oracle walks towards the gold
    passage it is not told: the points 90% of the way to each passage and each passage itself,
    beam-decoded (``feedback_walk_pool``); the first five suggestions are one per passage."""
    from eqi_core.suggestion.dataset import FEEDBACK

    query = check_query(query)
    q = space.encode([query])[0]
    _, fb = space.top(q[None], FEEDBACK)
    return feedback_walk_pool(space, query, q, space.ranker.doc_embeddings[fb[0]])[:n]


def best_of(original: float, suggestion_scores: list[float], cutoffs=CUTOFFS) -> dict[int, float]:
    """max nDCG@10 over the original query and the first k suggestions, for each k."""
    return {k: max([original, *suggestion_scores[:k]]) for k in cutoffs}


def self_bleu(texts: list[str]) -> float:
    """Mean sentence BLEU (sacrebleu, effective order) of each suggestion against the others:
    high = the suggestions repeat each other (Zhu et al. 2018)."""
    import sacrebleu

    texts = [t for t in texts if t.strip()]
    if len(texts) < 2:
        return float("nan")
    scores = [sacrebleu.sentence_bleu(t, texts[:i] + texts[i + 1:], use_effective_order=True).score
              for i, t in enumerate(texts)]
    return float(np.mean(scores)) / 100.0
