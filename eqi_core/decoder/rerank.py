"""Correction that keeps language: the encoder judges, but every candidate is a whole decoder output.

Candidates for a point e: the decoder's beam, nucleus samples, and ``rounds`` of embedding feedback
(vec2text's zero-shot loop without a trained corrector): decode again from
e + (e - enc(best so far)), which pushes the decoder's input past what the best hypothesis already
says. All candidates are re-encoded and ranked by cosine to e. Nothing is edited word by word and
no logged query is looked up, so the output is always a sentence the decoder wrote.

``source`` says where the winner came from: ``decoded`` when it is the decoder's own first beam
hypothesis, ``corrected`` when the encoder's ranking chose another hypothesis. Candidates that repeat a
content word are set aside (the encoder rewards repetition; searchers do not write it).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from eqi_core.decoder.base import Candidate, as_matrix, dedupe, repeats_a_content_word, words


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

    def _cos(self, texts: list[str], target: np.ndarray) -> np.ndarray:
        self.stats["encoded"] += len(texts)
        return self.encoder.encode(texts, batch_size=256) @ target

    def decode(self, embeddings: np.ndarray, n: int = 5) -> list[list[Candidate]]:
        x = as_matrix(embeddings)
        beams = self.base.decode(x, n=self.beam, beam=self.beam)
        return [self._one(t, [c.text for c in b], n) for t, b in zip(x, beams)]

    def _one(self, target: np.ndarray, beam: list[str], n: int) -> list[Candidate]:
        first = " ".join(words(beam[0])) if beam else ""
        pool = list(beam)
        if self.samples and hasattr(self.base, "sample"):
            pool += self.base.sample(target, n=self.samples, top_p=self.top_p, seed=0, temperature=self.temperature)
        texts = fluent(pool)
        cos = dict(zip(texts, self._cos(texts, target).tolist())) if texts else {}
        for _ in range(self.rounds):
            if not cos:
                break
            best = max(cos, key=cos.get)
            e_best = self.encoder.encode([best])[0]
            push = target + (target - e_best)
            more = [c.text for c in self.base.decode(push[None] / np.linalg.norm(push), n=4, beam=4)[0]]
            new = [t for t in fluent(more) if t not in cos]
            if not new:
                break
            cos.update(zip(new, self._cos(new, target).tolist()))
        ranked = sorted(cos.items(), key=lambda kv: -kv[1])
        out = [Candidate(t, float(c), float(c), "decoded" if " ".join(words(t)) == first else "corrected") for t, c in ranked]
        return dedupe(out, n)


def fluent(texts: list[str]) -> list[str]:
    """Distinct non-empty texts, without those repeating a content word (the judge would favour
    them: repeating a word moves the embedding towards it), unless every text does."""
    texts = list(dict.fromkeys(t for t in texts if words(t)))
    return [t for t in texts if not repeats_a_content_word(t)] or texts


__all__ = ["RerankDecoder", "fluent"]
