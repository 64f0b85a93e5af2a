"""Correction that keeps language: the encoder judges, but every candidate is a whole decoder output.

Candidates for a point e: the decoder's beam, nucleus samples, and ``rounds`` of embedding feedback
(vec2text's zero-shot loop without a trained corrector): decode again from
e + (e - enc(best so far)), which pushes the decoder's input past what the best hypothesis already
says. All candidates are re-encoded and ranked by cosine to e. Nothing is edited word by word and
no logged query is looked up, so the output is always a sentence the decoder wrote.

``source`` says where the winner came from: ``decoded`` when it is the decoder's own first beam
hypothesis, ``corrected`` when the encoder's ranking chose another hypothesis. Candidates that repeat a
content word, in the same or another form, or say a token twice in a row, are set aside (the encoder
rewards repetition; searchers do not write it).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from eqi_core.decoder.base import (
    Candidate,
    as_matrix,
    cut_short,
    dedupe,
    repeats_a_content_word,
    stutters,
    uses_known_words,
    words,
)


@dataclass
class RerankDecoder:
    """A decoder model with the encoder in the loop (implements QueryDecoder)."""

    base: object  # NaturalDecoderModel or NeuralDecoder (has .decode; .sample optional)
    encoder: object  # .encode(texts) -> unit rows
    beam: int = 8
    samples: int = 8
    top_p: float = 0.9
    temperature: float = 0.7  # samples a little colder than the model: still varied, more fluent
    rounds: int = 1
    name: str = "decoder+rerank"
    stats: dict = field(default_factory=lambda: {"encoded": 0})

    @property
    def encoder_id(self) -> str:
        return self.base.encoder_id

    def settings(self) -> dict:
        return {"beam": self.beam, "samples": self.samples if hasattr(self.base, "sample") else 0, "top_p": self.top_p,
                "temperature": self.temperature, "feedback_rounds": self.rounds, "feedback_beam": 4}

    def decode(self, embeddings: np.ndarray, n: int = 5) -> list[list[Candidate]]:
        """All rows at once: one batched beam search, one batched sampling pass, one batched
        feedback round (the decoder's output layer is memory-bound, so rows share its cost)."""
        x = as_matrix(embeddings)
        beams = [[c.text for c in b] for b in self.base.decode(x, n=self.beam, beam=self.beam)]
        pools = [list(b) for b in beams]
        if self.samples and hasattr(self.base, "sample_rows"):
            for pool, extra in zip(pools, self.base.sample_rows(x, self.samples, self.top_p, 0, self.temperature)):
                pool += extra
        elif self.samples and hasattr(self.base, "sample"):
            for pool, t in zip(pools, x):
                pool += self.base.sample(t, n=self.samples, top_p=self.top_p, seed=0, temperature=self.temperature)
        lexicon = getattr(self.base, "lexicon", None)
        cos = self._score_rows([fluent(p, lexicon) for p in pools], x)
        for _ in range(self.rounds):
            live = [i for i, c in enumerate(cos) if c]
            if not live:
                break
            best = [max(cos[i], key=cos[i].get) for i in live]
            e_best = self.encoder.encode(best, batch_size=256)
            push = x[live] + (x[live] - e_best)
            more = self.base.decode(push / np.linalg.norm(push, axis=1, keepdims=True), n=4, beam=4)
            new = [[t for t in fluent([c.text for c in m], lexicon) if t not in cos[i]] for i, m in zip(live, more)]
            for i, scored in zip(live, self._score_rows(new, x[live])):
                cos[i].update(scored)
        # the rules once more over the whole pool: a feedback round whose every text was set aside kept them
        # all ("... engineering: definitiona¦"), and none may beat a clean text of the first round
        return [self._ranked({t: c[t] for t in fluent(list(c), lexicon)}, b, n) for c, b in zip(cos, beams)]

    def _score_rows(self, texts: list[list[str]], targets: np.ndarray) -> list[dict[str, float]]:
        """Cosine of each row's texts to that row's target, with one encoder call for all rows."""
        flat = [t for row in texts for t in row]
        if not flat:
            return [{} for _ in texts]
        self.stats["encoded"] += len(flat)
        emb = self.encoder.encode(flat, batch_size=256)
        out, start = [], 0
        for row, target in zip(texts, targets):
            out.append(dict(zip(row, (emb[start:start + len(row)] @ target).tolist())))
            start += len(row)
        return out

    @staticmethod
    def _ranked(cos: dict[str, float], beam: list[str], n: int) -> list[Candidate]:
        first = " ".join(words(beam[0])) if beam else ""
        ranked = sorted(cos.items(), key=lambda kv: -kv[1])
        out = [Candidate(t, float(c), float(c), "decoded" if " ".join(words(t)) == first else "corrected") for t, c in ranked]
        return dedupe(out, n)


def fluent(texts: list[str], lexicon=None) -> list[str]:
    """Distinct non-empty texts, without those repeating a content word (the judge would favour
    them: repeating a word moves the embedding towards it), in any form where some text repeats
    none ("how to baking bake bread"; else without exact repeats) and, given the decoder's word
    list, without those holding a word outside it (left by the decoder's fallback when no known word
    could be spelled) or a garbled character (``has_mojibake``), unless every text does; and, while
    any text is left without, those saying a token twice in a row ("floor - - $3", ``stutters``) and
    those stopping mid-phrase ("a layer of hair or", ``cut_short``): set aside, never cut, so the
    winner is still a whole decoder output."""
    texts = list(dict.fromkeys(t for t in texts if words(t)))
    texts = ([t for t in texts if not repeats_a_content_word(t, inflected=True)]
             or [t for t in texts if not repeats_a_content_word(t)] or texts)
    texts = [t for t in texts if not stutters(t)] or texts
    if lexicon is not None:
        texts = [t for t in texts if uses_known_words(t, lexicon)] or texts
    texts = [t for t in texts if not cut_short(t)] or texts  # last: a known word ending beats a made-up one
    return texts


__all__ = ["RerankDecoder", "fluent"]
