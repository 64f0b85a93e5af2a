"""Decoding a dense retriever's latent space: query decoders, traversal, suggestions.

``load_decoder`` is the Python entry point: a decoder turns embeddings into queries.
"""
from __future__ import annotations

from pathlib import Path


def load_decoder(folder: str | Path | None = None, encoder: str = "minilm-l6"):
    """A query decoder for ``encoder`` (a dense ranker id): the checkpoint in ``folder`` (card.json +
    decoder.safetensors), or the one shipped in ``assets/decoders`` for that encoder (for MiniLM-L6 the
    natural-language decoder; the WordNet lemma decoder is ``assets/decoders/wordnet-minilm-l6``). A checkpoint
    made for another encoder is refused with a one-line ``DecoderError``.

    >>> dec = load_decoder()                                   # doctest: +SKIP
    >>> dec.decode(emb, n=3)[0][0].text                        # doctest: +SKIP
    """
    from eqi_core.decoder.base import DecoderError
    from eqi_core.decoder.neural import load_decoder as load_checkpoint
    from eqi_core.decoder.neural import read_card
    from eqi_core.decoder.space import shipped_decoders
    from eqi_core.rankers import load_encoder, ranker_spec

    enc = load_encoder(ranker_spec(encoder).encoder)
    if folder is None:
        matching = sorted((read_card(f)["config"].get("arch") != "bert-prefix", f.name, f) for f in shipped_decoders()
                          if read_card(f)["config"]["encoder_id"] == enc.id)
        matching = [f for _, _, f in matching]
        if not matching:
            raise DecoderError(f"no shipped query decoder for encoder {encoder!r}: train one with "
                               f"`eqi train-decoder -e {encoder}`")
        folder = matching[0]
    return load_checkpoint(Path(folder), enc)


__all__ = ["load_decoder"]
