"""Generative exposure: decoded queries ranked exactly by the chosen ranker."""
import numpy as np
import pytest

from eqi_core.errors import DataError
from eqi_core.exposure.generative import generate_exposure, passage_ranks
from eqi_core.exposure.setup import prepare_exposure

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def spaces(tiny, tmp_path_factory):
    from eqi_core.decoder.space import open_space
    from eqi_core.store import ArtifactStore

    store = ArtifactStore(tmp_path_factory.mktemp("gen"))
    return store, open_space(tiny, store, "minilm-l6")


@pytest.mark.parametrize("ranker", ["minilm-l6", "bm25"])
def test_candidates_ranked_exactly(tiny, spaces, ranker):
    store, space = spaces
    setup = prepare_exposure(tiny, ranker, store, depth=100)
    g = generate_exposure(setup, space, n=8, n_qd=3, doc_id="d1")
    c = g.candidates
    assert 1 <= len(c) <= 8 and set(c["origin"]) <= {"passage", "between", "neighbourhood"}
    assert c["rank"].is_monotonic_increasing and (c["exposes"] == (c["rank"] <= 3)).all()
    if ranker == "minilm-l6":  # recomputed by hand: 1 + passages the query scores above d1
        from eqi_core.rankers import build_ranker

        ranker = build_ranker("minilm-l6", tiny, store)
        p = ranker.doc_embeddings
        q = np.concatenate([ranker.encode_queries([t]) for t in c["query"]])
        s = q @ p.T
        assert c["rank"].tolist() == (1 + (s > s[:, [0]]).sum(axis=1)).astype(float).tolist()
    logged = setup.exposure.exposing(0)[1]
    assert g.logged_total == int((3 - logged[logged < 3]).sum())
    assert g.generated_total == int(c.loc[c["exposes"] & ~c["in_log"], "exposure"].sum())
    assert (c["in_log"] == (c["logged_as"] != "")).all()
    logged = set(tiny.queries["text"])
    assert all(q in logged for q in c.loc[c["in_log"], "logged_as"])


def test_result_logs_cannot_rank_new_queries(tiny, spaces, tmp_path):
    from eqi_core.exposure.result_logs import result_log_id

    store, space = spaces
    log = tmp_path / "sys.trec"
    log.write_text("q1 Q0 d1 1 1.0 sys\n", encoding="utf-8")
    setup = prepare_exposure(tiny, result_log_id(log), store, depth=100)
    with pytest.raises(DataError, match="cannot rank queries it does not hold"):
        passage_ranks(setup, ["a query"], 0, None)
    assert np.isfinite(prepare_exposure(tiny, "bm25", store).exposure.counts()).all()


def test_copy_baseline_and_evaluation_table(tiny, spaces):
    from eqi_core.exposure.generative import copy_query, evaluate_generative

    assert copy_query("the sloping land beside a river where the water meets the shore") == "sloping land beside"
    store, space = spaces
    setup = prepare_exposure(tiny, "minilm-l6", store, depth=100)
    res = evaluate_generative(setup, space, ["d1", "d2"], n=5, n_qd=3)
    assert list(res["doc_id"]) == ["d1", "d2"] and (res["candidates"] <= 5).all()
    assert res["copy_rank"].iloc[0] == passage_ranks(setup, [res["copy_query"].iloc[0]], 0, None)[0]
    assert (res["unseen_exposing"] <= res["candidates"]).all()
    assert (res["unseen_exposing_real_words"] <= res["unseen_exposing"]).all()


def test_near_duplicate_beams_count_once():
    from eqi_core.exposure.generative import near_duplicate

    a = "the bank at a financial institution that checks a deposit in a loan to accept cash or a house"
    b = "the bank at a financial institution that checks a deposit in a loan to accept cash or a mortgage"
    assert near_duplicate(a, b)  # 8 of their 10 content words shared: one query, two endings
    assert near_duplicate("Bank deposit", "bank  deposit")  # the same words
    assert not near_duplicate("bank checking a institution", "bank deposit in a financial institution")  # 2 of 5
    assert not near_duplicate("the", "a")  # no content words, different words
    # long beams that part late: their first 17 of 21 words the same, their content words' Jaccard only 0.64
    c = "a bank in a financial institution that engages in the payment of money (as in a loan) to accept his banks"
    d = "a bank in a financial institution that engages in the payment of money (as in a loan deposit) to his home"
    assert near_duplicate(c, d) and near_duplicate(d, c)
    e = "a bank in a financial institution that engages in the payment of money and accepts his loans to deposit a check on the house"
    assert not near_duplicate(c, e)  # the first 13 of 24 words the same: worded apart
    assert not near_duplicate("bank deposit", "bank deposit in a payment")  # a query and its extension: two queries
    assert not near_duplicate("bank in a mortgage", "bank in a payment")  # short queries a word apart: two queries
    # why the 10-word floor: a searcher's 10-word queries parting at their 9th word are two queries, though a
    # beam's "... the world's natural winners" / "... natural livers" (parting at the 10th of 10) stay two as well
    assert not near_duplicate("how many calories are in a bar of dark chocolate",
                              "how many calories are in a bar of milk chocolate")


def test_a_reworded_logged_query_is_not_unseen():
    """A decoded query the log holds reworded (the near-duplicate rule) is the logged query, not an unseen
    search; matching is by content words, so a query sharing only some of them stays unseen."""
    from eqi_core.exposure.generative import LoggedWordings

    log = LoggedWordings(["what do dark chocolate do for body", "calories for chocolate chips", "the"])
    assert log.match("What do  dark chocolate do for body") == "what do dark chocolate do for body"  # case, spaces
    assert log.match("what does dark chocolate do for your body") == "what do dark chocolate do for body"
    assert log.match("how many calories in chocolate chips") == "calories for chocolate chips"  # Jaccard 1
    assert log.match("what are the benefits of dark chocolate") == ""  # 2 of 4 content words: a search of its own
    assert log.match("the") == "the" and log.match("a") == ""  # no content words: only the same text


def test_generated_candidates_are_distinct_queries(tiny, spaces):
    from eqi_core.exposure.generative import near_duplicate

    store, space = spaces
    setup = prepare_exposure(tiny, "minilm-l6", store, depth=100)
    texts = list(generate_exposure(setup, space, n=30, n_qd=3, doc_id="d1").candidates["query"])
    assert not any(near_duplicate(a, b) for i, a in enumerate(texts) for b in texts[i + 1:]), texts


@pytest.mark.parametrize("ranker", ["minilm-l6", "bm25"])
def test_pasted_text_is_compared_with_the_queries_that_expose_it(tiny, spaces, ranker):
    """Pasted text has exposing logged queries too (scored against the map): the log's exposure beside
    the decoded queries' is theirs, not 0, and the decoder walks halfway to them as for a passage of
    the collection."""
    from eqi_core.exposure.lookup import exact_exposure

    store, space = spaces
    setup = prepare_exposure(tiny, ranker, store, depth=100)
    text = setup.passage_text(0)  # d1's words, pasted: the queries that show d1 show it too
    exact, _ = exact_exposure(setup, 3, text=text)
    assert len(exact) and exact["exposure"].sum() > 0
    g = generate_exposure(setup, space, n=30, n_qd=3, text=text)
    assert g.logged_total == int(exact["exposure"].sum())
    assert "between" in set(g.candidates["origin"])
    given = generate_exposure(setup, space, n=30, n_qd=3, text=text, exact=exact)  # the caller's frame, not recomputed
    assert given.logged_total == g.logged_total
    assert given.candidates["query"].tolist() == g.candidates["query"].tolist()
