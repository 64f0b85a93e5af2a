"""The natural decoder's word list and lexicon-constrained decoding (tiny model, made-up vocabulary)."""
from __future__ import annotations

import gzip

import pytest
import torch

from eqi_core.decoder.base import DecoderError, words
from eqi_core.decoder.bert import beam_search, reorder, sample
from eqi_core.decoder.lexicon import Lexicon, WordConstraint, repeats_itself, training_lexicon
from tests.unit.test_natural_decoder import VOCAB, tiny_model

# output row j is token id j + 2 (row 0: the end of text); ids 3.. are these pieces, cycled
PIECES = ["cat", "dog", "run", "the", "##s", "##x", "##ning", "##zz", "a", "big", "##g", "sun"]
LEXICON = Lexicon(["a", "big", "cat", "cats", "dog", "dogs", "run", "running", "sun", "the"])
STOP = frozenset({"a", "the"})


def vocabulary() -> tuple[list[str], list[bool]]:
    toks = ["[SEP]"] + [PIECES[(i - 3) % len(PIECES)] for i in range(3, VOCAB)]
    return [t[2:] if t.startswith("##") else t for t in toks], [t.startswith("##") for t in toks]


def constraint(lexicon=LEXICON) -> WordConstraint:
    pieces, continues = vocabulary()
    return WordConstraint(lexicon, pieces, continues, STOP)


def text(model, ids: list[int]) -> str:
    """Join pieces as WordPiece does: a ``##`` piece continues the word before it."""
    pieces, continues = vocabulary()
    out = ""
    for i in ids:
        row = int(model.out_index[i])
        out += pieces[row] if continues[row] else " " + pieces[row]
    return out.strip()


def bad_words(t: str) -> list[str]:
    return [w for w in words(t) if w not in LEXICON]


def repeats(t: str) -> bool:
    content = [w for w in words(t) if w not in STOP]
    return len(content) != len(set(content))


def test_lexicon_prefixes_and_file_round_trip(tmp_path):
    assert LEXICON.has_prefix("runn") and LEXICON.has_prefix("cat") and not LEXICON.has_prefix("catx")
    assert "cats" in LEXICON and "cat s" not in LEXICON
    LEXICON.save(tmp_path)
    again = Lexicon.load(tmp_path / "lexicon.txt.gz")
    assert again.sorted == LEXICON.sorted and again.digest == LEXICON.digest
    (tmp_path / "bad.gz").write_bytes(b"not gzip")
    with pytest.raises(DecoderError, match=r"bad.gz: not a gzip-compressed word list") as err:
        Lexicon.load(tmp_path / "bad.gz")
    assert "\n" not in str(err.value)
    (tmp_path / "upper.gz").write_bytes(gzip.compress(b"Cat\ndog"))
    with pytest.raises(DecoderError, match="one lower-case word per line"):
        Lexicon.load(tmp_path / "upper.gz")


def test_training_lexicon_leaves_out_held_out_text():
    import pandas as pd

    corpus = pd.DataFrame({"text": ["what is a cat", "zebra crossing rules"], "split": ["train", "heldout"]})
    lex = training_lexicon(corpus, ["dog"])
    assert {"what", "is", "a", "cat", "dog"} <= lex.known and "zebra" not in lex


def test_constraint_hand_cases():
    c = constraint()
    pieces, _ = vocabulary()
    row = {p: pieces.index(p) for p in ("cat", "s", "x", "ning", "run", "the", "[SEP]")}
    s = c.advance(c.start(), row["cat"])
    assert c.allows(s, row["s"]) and not c.allows(s, row["x"])  # "cats" is known, "catx" starts nothing
    assert c.allows(s, row["the"]) and c.allows(s, row["[SEP]"])  # "cat" may end
    s = c.advance(s, row["the"])  # "cat" done, now "the"
    assert c.allows(s, row["cat"])  # "the" may end (a stop word is never a repeat)
    s = c.advance(s, row["cat"])  # "cat" again is being spelled; ending it repeats a content word
    assert not c.allows(s, row["[SEP]"]) and c.allows(s, row["s"])  # "cats" is a different word
    s = c.advance(c.start(), row["run"])
    assert c.allows(s, row["ning"])
    assert not c.allows(c.advance(s, row["x"]), row["[SEP]"])  # "runx" may not end


def test_a_sign_inside_a_word_glues_no_made_up_word():
    """"schnau" + "´" + "tpa": ``words`` splits at the sign into parts that each pass a prefix test, so
    the constraint holds each side of a sign inside a word to what real text does there."""
    lexicon = Lexicon(["co", "cat", "m", "the", "tpa"])
    pieces = ["[SEP]", "co", "schnau", "´", "tpa", "##´", "##₂", "##²", "##tpa", "##t", "##50", "£", "the", "m", "cat"]
    c = WordConstraint(lexicon, [p.removeprefix("##") for p in pieces], [p.startswith("##") for p in pieces], STOP)
    row = {p: i for i, p in enumerate(pieces)}
    co, schnau, sign = (c.advance(c.start(), row[p]) for p in ("co", "schnau", "´"))
    assert c.allows(co, row["##₂"]) and c.allows(c.advance(c.start(), row["m"]), row["##²"])  # "co₂", "m²"
    assert not c.allows(schnau, row["##´"])  # "schnau´": the letters before a sign must be a known word
    assert c.allows(co, row["##´"])  # "co´" may stand: "co" is a word
    glued = c.advance(co, row["##´"])
    assert not c.allows(glued, row["##tpa"]) and c.allows(glued, row["##t"])  # one letter after a sign, as "h₂o"
    cat = c.advance(c.advance(c.start(), row["cat"]), row["##´"])
    assert not c.allows(cat, row["##t"])  # but not after a word of three letters ("bsn°c", "laws²p")
    assert not c.allows(sign, row["##tpa"])  # a sign that starts a word is not followed by letters either
    pound = c.advance(c.start(), row["£"])
    assert c.allows(pound, row["##50"])  # "£50"
    assert c.allows(co, row["the"]) and c.allows(co, row["[SEP]"])  # plain words as before


def test_a_letter_of_another_script_is_not_glued_to_an_english_word_while_decoding():
    """"protein" + "##α": the word list cannot see the Greek letter (``words`` drops it), so the
    constraint holds it to ``base.glues_other_script``: after an acronym ("pparα") it may stand."""
    lexicon = Lexicon(["protein", "ppar", "the", "alphabetically"])
    pieces = ["[SEP]", "protein", "ppar", "##α", "##2", "the", "alphabetically", "α"]
    c = WordConstraint(lexicon, [p.removeprefix("##") for p in pieces], [p.startswith("##") for p in pieces], STOP,
                       english=frozenset({"protein", "the"}))
    row = {p: i for i, p in enumerate(pieces)}
    protein, ppar, long = (c.advance(c.start(), row[p]) for p in ("protein", "ppar", "alphabetically"))
    assert not c.allows(protein, row["##α"])  # "proteinα": an English word of four letters or more
    assert not c.allows(long, row["##α"])  # a run of more than seven letters, English or not
    assert c.allows(ppar, row["##α"])  # "pparα", as real text writes it
    assert c.allows(c.advance(ppar, row["##α"]), row["##2"])  # "pparα2"
    assert c.allows(protein, row["α"])  # a word of its own
    default = WordConstraint(lexicon, c.pieces, c.continues, STOP)  # WordNet's lemma words as the English ones
    assert not default.allows(protein, row["##α"]) and default.allows(ppar, row["##α"])


def test_a_piece_word_run_said_twice_in_a_row_is_a_stutter_but_dots_and_initials_are_not():
    for tail in [("been", "been"), ("-", "-"), ("the", "the"), ("a", "a"), ("0", ",", "0", ","),
                 ("[", "1", "]", "[", "1", "]"), ("we", "say", "new", "york", "new", "york")]:
        assert repeats_itself(tail), tail
    for tail in [("been", "seen"), (".", ".", "."), ("r", ".", "r", "."), ("1", ",", "2", ","), ("a", "b", "c", "a", "b"),
                 ("x", "y", "z", "w", "x", "y", "z"), ("been",), ()]:  # runs longer than 3 are not looked for
        assert not repeats_itself(tail), tail


def test_a_stutter_free_constraint_lets_no_word_end_on_a_repeat_of_the_one_before():
    """Beam hypotheses share their prefixes, so a stutter ("floor - - $3") must be stopped while
    decoding; the sampling constraint keeps its old rules (samples are filtered one by one)."""
    c = constraint()
    strict = c.stutter_free_copy()
    assert strict.stutter_free and not c.stutter_free and strict.lexicon is c.lexicon
    pieces, _ = vocabulary()
    row = {p: pieces.index(p) for p in ("the", "big", "sun", "[SEP]")}
    for cons in (c, strict):
        s = cons.advance(cons.advance(cons.start(), row["the"]), row["the"])  # "the the", about to end
        assert cons.allows(s, row["big"]) != cons.stutter_free and cons.allows(s, row["[SEP]"]) != cons.stutter_free
        s = cons.advance(cons.advance(cons.advance(cons.start(), row["the"]), row["big"]), row["the"])  # "the big the"
        assert cons.allows(s, row["sun"])


def test_stutter_free_beam_search_writes_no_stutter_where_the_plain_one_does():
    from eqi_core.decoder.base import stutters

    model = tiny_model(seed=2)
    emb = torch.nn.functional.normalize(torch.randn(40, 16, generator=torch.Generator().manual_seed(1)), dim=1)
    starts_a_piece = torch.tensor([j for j, p in enumerate(vocabulary()[1]) if p], dtype=torch.long)
    none = torch.zeros(len(model.out_ids), dtype=torch.bool)
    decoded = {name: [text(model, h[0][0]) for h in beam_search(model, emb, 4, starts_a_piece, none, constraint=cons)]
               for name, cons in (("plain", constraint()), ("strict", constraint().stutter_free_copy()))}
    assert sum(map(stutters, decoded["plain"])) > 10  # "a a run a dogs a": the check below can fail
    assert not [t for t in decoded["strict"] if stutters(t) or bad_words(t) or repeats(t)]


def test_constrained_decoding_keeps_to_known_words_without_repeats():
    model = tiny_model(seed=5)
    emb = torch.nn.functional.normalize(torch.randn(12, 16, generator=torch.Generator().manual_seed(1)), dim=1)
    starts_a_piece = torch.tensor([j for j, p in enumerate(vocabulary()[1]) if p], dtype=torch.long)
    none = torch.zeros(len(model.out_ids), dtype=torch.bool)
    free = [text(model, h[0][0]) for h in beam_search(model, emb, 4, starts_a_piece, none)]
    assert any(bad_words(t) for t in free)  # the tiny model does make up words: the check below can fail
    kept = [text(model, h[0][0]) for h in beam_search(model, emb, 4, starts_a_piece, none, constraint=constraint())]
    assert all(t for t in kept)
    assert not [t for t in kept if bad_words(t) or repeats(t)]
    gen = torch.Generator().manual_seed(0)
    free_s = sample(model, emb, 6, 0.95, starts_a_piece, gen, top_k=30)
    assert any(bad_words(text(model, ids)) for row in free_s for ids in row)
    gen = torch.Generator().manual_seed(0)
    got = sample(model, emb, 6, 0.95, starts_a_piece, gen, top_k=30, constraint=constraint())
    outs = [text(model, ids) for row in got for ids in row]
    assert not [t for t in outs if bad_words(t) or repeats(t)]


def test_decoding_never_stalls_when_no_word_can_be_spelled():
    model = tiny_model(seed=5)
    emb = torch.nn.functional.normalize(torch.randn(3, 16, generator=torch.Generator().manual_seed(2)), dim=1)
    none = torch.zeros(len(model.out_ids), dtype=torch.bool)
    starts_a_piece = torch.tensor([j for j, p in enumerate(vocabulary()[1]) if p], dtype=torch.long)
    impossible = constraint(Lexicon(["qqqq"]))
    hyps = beam_search(model, emb, 3, starts_a_piece, none, constraint=impossible)
    assert all(h and h[0][0] for h in hyps)  # falls back to the model's own choice
    got = sample(model, emb, 2, 0.9, starts_a_piece, torch.Generator().manual_seed(0), top_k=30, constraint=impossible)
    assert all(ids for row in got for ids in row)


def test_rerank_sets_aside_fallback_words_unless_nothing_else_is_left():
    from eqi_core.decoder.rerank import fluent

    texts = ["big cats run", "big catx run", "dog dog", "the sun"]
    assert fluent(texts) == ["big cats run", "big catx run", "the sun"]  # the repeat set aside
    assert fluent(texts, LEXICON.known) == ["big cats run", "the sun"]  # and the made-up word
    assert fluent(["catx"], LEXICON.known) == ["catx"]  # never an empty pool


def test_rerank_holds_the_feedback_rounds_texts_to_the_same_rules_as_the_first_rounds():
    """A feedback round whose every text breaks a rule keeps them all (a pool is never empty), so the
    rules run once more over the whole pool: the judge's favourite made-up text never beats a clean one."""
    import numpy as np

    from eqi_core.decoder.base import Candidate
    from eqi_core.decoder.rerank import RerankDecoder

    class Base:
        lexicon = LEXICON.known

        def decode(self, x, n=5, beam=None):
            texts = ["big cats run", "the sun"] if n == 8 else ["big catx run", "big catzz run"]  # feedback: made up
            return [[Candidate(t, 0.0, source="decoded") for t in texts] for _ in x]

    class Judge:  # the made-up texts are the nearest to the point
        def encode(self, texts, batch_size=0):
            return np.array([[1.0, 0.0] if "catx" in t or "catzz" in t else [0.6, 0.8] for t in texts])

    got = RerankDecoder(Base(), Judge(), samples=0).decode(np.array([[1.0, 0.0]]), n=3)[0]
    assert [c.text for c in got] == ["big cats run", "the sun"]


def test_rerank_sets_aside_a_word_repeated_in_another_form_while_anything_else_is_left():
    """The encoder rewards "how to baking bake bread" as it rewards "bake bake": the word list's
    no-repeat rule compares whole words, so the re-ranker's pool checks stems too."""
    from eqi_core.decoder.base import repeats_a_content_word
    from eqi_core.decoder.rerank import fluent

    assert repeats_a_content_word("how to baking bake bread", inflected=True)
    assert not repeats_a_content_word("how to baking bake bread")
    assert not repeats_a_content_word("how to bake bread at home", inflected=True)
    assert fluent(["how to baking bake bread", "how to bake bread"]) == ["how to bake bread"]
    # where every text repeats a form, the exact repeats go first; the pool is never empty
    assert fluent(["bake baking bread", "bake bake bread"]) == ["bake baking bread"]
    assert fluent(["bake bake bread"]) == ["bake bake bread"]


def test_allowed_rows_answers_each_row_alone_for_every_state():
    """Sampling asks ``allowed_rows`` for many rows at once (state-level work done once); the answer
    for a row must not depend on which other rows are asked with it."""
    c = constraint()
    rows = list(range(len(c.pieces)))
    states = [c.start()]
    for _ in range(3):  # every state reachable in three steps
        states = list({c.advance(s, r) for s in states for r in rows}) + [c.start()]
    assert len(states) > 100
    mixed = 0
    for s in states:
        together = c.allowed_rows(s, rows)
        assert together == [c.allows(s, r) for r in rows] == c.allowed_rows(s, rows[::-1])[::-1]
        mixed += any(together) and not all(together)
    assert mixed > 50  # the rule has something to decide in most states
    assert c.allowed_rows(c.start(), []) == []


def _sample_keeping_every_row(model, emb, n, top_p, first_banned, gen, top_k):
    """The sampler before finished samples left the batch: every row stepped to the end."""
    eos = int(model.out_index[model.cfg.eos_id])
    logp, caches = model.start(emb)
    logp[:, first_banned] = -1e9
    logp[:, eos] = -1e9
    caches = reorder(caches, torch.arange(len(emb)).repeat_interleave(n))
    logp = logp.repeat_interleave(n, dim=0)
    seqs, alive = [[] for _ in range(len(logp))], [True] * len(logp)
    for t in range(model.cfg.max_len - 1):
        top, si = logp.topk(top_k, dim=-1)
        sp = torch.softmax(top, dim=-1)
        sp = sp * (sp.cumsum(-1) - sp < top_p)
        pick = si.gather(1, torch.multinomial(sp / sp.sum(-1, keepdim=True), 1, generator=gen)).view(-1)
        for r, tok in enumerate(pick.tolist()):
            if alive[r]:
                alive[r] = tok != eos
                seqs[r] += [tok] if alive[r] else []
        if not any(alive) or t + 2 == model.cfg.max_len:
            break
        logp, caches = model.step(pick, t + 1, caches)
    out_ids = model.out_ids.tolist()
    return [[[out_ids[k] for k in seqs[i * n + j]] for j in range(n)] for i in range(len(emb))]


def test_sampling_drops_finished_rows_without_changing_any_sample():
    model = tiny_model(seed=5)
    emb = torch.nn.functional.normalize(torch.randn(5, 16, generator=torch.Generator().manual_seed(3)), dim=1)
    starts_a_piece = torch.tensor([j for j, p in enumerate(vocabulary()[1]) if p], dtype=torch.long)
    for seed in range(4):
        got = sample(model, emb, 4, 0.95, starts_a_piece, torch.Generator().manual_seed(seed), top_k=30)
        want = _sample_keeping_every_row(model, emb, 4, 0.95, starts_a_piece, torch.Generator().manual_seed(seed), 30)
        assert got == want
        lengths = {len(ids) for row in got for ids in row}
        assert min(lengths) < model.cfg.max_len - 1 and len(lengths) > 2  # rows did finish at different steps


def test_sampling_counts_per_row_and_a_split_leave_the_first_rows_as_alone():
    model = tiny_model(seed=5)
    emb = torch.nn.functional.normalize(torch.randn(5, 16, generator=torch.Generator().manual_seed(3)), dim=1)
    starts_a_piece = torch.tensor([j for j, p in enumerate(vocabulary()[1]) if p], dtype=torch.long)
    for seed in range(3):
        alone = sample(model, emb[:2], 4, 0.95, starts_a_piece, torch.Generator().manual_seed(seed), top_k=30)
        both = sample(model, emb, [4, 4, 1, 1, 1], 0.95, starts_a_piece, torch.Generator().manual_seed(seed), top_k=30,
                      split=2, split_generator=torch.Generator().manual_seed(seed))
        assert [len(r) for r in both] == [4, 4, 1, 1, 1] and both[:2] == alone  # the walk rows change nothing before them
        later = sample(model, emb[2:], 1, 0.95, starts_a_piece, torch.Generator().manual_seed(seed), top_k=30)
        assert both[2:] == later  # and draw as they would alone, from their own stream
        # counts given as a list sample as the same int does
        assert sample(model, emb[:2], [4, 4], 0.95, starts_a_piece, torch.Generator().manual_seed(seed), top_k=30) == alone
    with pytest.raises(ValueError, match="split_generator"):
        sample(model, emb, 2, 0.95, starts_a_piece, torch.Generator(), split=1)
    with pytest.raises(ValueError, match="sample counts"):
        sample(model, emb, [2, 2], 0.95, starts_a_piece, torch.Generator())


def test_constrained_nucleus_hand_cases():
    """Each row's nucleus is a prefix of its top-k: forbidden tokens leave it; a row whose nucleus
    is all forbidden takes the allowed tokens of the rest of its top-k (not the banned ones); a row
    with nothing allowed keeps its nucleus."""
    from eqi_core.decoder.bert import _constrained_nucleus

    c = constraint()
    pieces, _ = vocabulary()
    row = {p: pieces.index(p) for p in ("cat", "s", "x", "zz", "ning", "dog", "[SEP]")}
    cat = c.advance(c.start(), row["cat"])  # spelling "cat": "cats" may follow, "catx"/"catzz" may not
    si = torch.tensor([[row["s"], row["x"], row["dog"], row["zz"]],
                       [row["x"], row["zz"], row["s"], row["ning"]],
                       [row["x"], row["zz"], row["s"], row["ning"]],
                       [row["x"], row["zz"], row["ning"], row["ning"]]])
    keep = torch.tensor([[True, True, True, False], [True, True, False, False],
                         [True, True, False, False], [True, False, False, False]])
    possible = torch.tensor([[True] * 4, [True] * 4, [True, True, False, True], [True] * 4])
    got = _constrained_nucleus(keep, si, possible, [cat] * 4, c)
    assert got.tolist() == [[True, False, True, False],  # "catx" left the nucleus
                            [False, False, True, False],  # all forbidden: "cats" from the rest of the top-k
                            [True, True, False, False],  # "cats" is banned there and "catning" unknown: unchanged
                            [True, False, False, False]]  # nothing allowed anywhere: unchanged
    assert keep[0].tolist() == [True, True, True, False]  # the input is not changed in place


def test_language_fit_counts_running_words_of_any_script():
    """Hand-counted: 10 running words (the number left out), 4 known ("the", "river", "bank" twice);
    accented and CJK words are unknown words, not cut to their ASCII letters."""
    from eqi_core.decoder.lexicon import LANGUAGE_FIT_WARN, language_fit

    lexicon = Lexicon(["the", "river", "bank", "caf"])
    fit = language_fit(["The river bank", "la rivière et le café 2024", "東京 bank"], lexicon)
    assert (fit.words, fit.passages) == (10, 3)
    assert fit.share == pytest.approx(0.4)
    assert fit.unknown[:6] == ("la", "rivière", "et", "le", "café", "東京")
    note = fit.warning("my collection")
    assert note.startswith("Only 40% of the words of my collection") and "“rivière”" in note and "\n" not in note
    english = language_fit(["the river bank", "bank 12"], lexicon)
    assert english.share == 1.0 and english.warning() is None and LANGUAGE_FIT_WARN > 0.4
    assert language_fit([], lexicon).warning() is None  # nothing to judge: no warning
    spread = language_fit([f"text{i}" for i in range(10)], lexicon, limit=5)  # every second text
    assert spread.passages == 5 and spread.unknown[0] == "text0" and "text1" not in spread.unknown


def test_a_typed_text_in_another_language_is_warned_about_by_hand():
    """Fewer than half of two or more words known: a warning; a name the list lacks, one word, or
    no word list: none."""
    from eqi_core.decoder.lexicon import typed_text_warning

    lexicon = Lexicon(["the", "river", "bank", "what", "is", "county"])
    assert typed_text_warning("wie funktioniert eine bank", lexicon) == (
        "Only 1 of the 4 words of this query is in the decoder's English word list (e.g. “wie”, “funktioniert”, "
        "“eine”): what is decoded from it is written in English words, not in the query's language.")
    assert typed_text_warning("мир реки", lexicon, "passage").startswith("None of the 2 words of this passage are")
    assert typed_text_warning("what county is coram", lexicon) is None  # 3 of 4 known
    assert typed_text_warning("the rivière", lexicon) is None  # half known
    assert typed_text_warning("мир", lexicon) is None and typed_text_warning("мир реки", None) is None


def test_wordnet_words_are_kept_in_the_store_as_read():
    """The words of WordNet's lemmas (the suggestions' and evaluations' word list) are read once and
    kept in the store; what comes back is what reading the senses gives."""
    from eqi_core.decoder.base import words
    from eqi_core.decoder.natural_eval import wordnet_words
    from eqi_core.loaders.wordnet import find_wordnet_dir, read_senses
    from eqi_core.store import ArtifactStore

    read = {w for lemma in read_senses(find_wordnet_dir())["lemma"].unique() for w in words(str(lemma).replace("_", " "))}
    assert wordnet_words() == read and wordnet_words() == read  # built, then from the store
    assert {"bank", "lake", "superior", "hair"} <= read and len(ArtifactStore().list("wordnet-words")) == 1
