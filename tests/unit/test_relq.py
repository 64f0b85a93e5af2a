"""RELQ (EQI paper eqs. 1-4) against hand-computed values."""
import math

import numpy as np
import pytest

from eqi_core.errors import DataError
from eqi_core.exposure.relq import EXH, NDCG, RBP, RelqSpec, relq, relq_exh_ndcg, relq_rbp

INF = math.inf
IDEAL = [5, 0, 2]  # rho(d, sigma_q) of the three exposing queries, any order
GOT = [2, INF, 0]  # retrieved list: the rho=2 query, a non-exposing query, the rho=0 query


def test_rbp_rbp_by_hand():
    # num = .5^0 * .5^2 + .5^1 * 0 + .5^2 * .5^0 = .5; den = 1 + .5 * .25 + .25 * .5^5 = 1.1328125
    assert relq(GOT, IDEAL, relq_rbp(0.5, 0.5)) == pytest.approx(0.5 / 1.1328125)


def test_rbp_asymmetric_patience_order():
    # gamma_q->d = .5 (searcher), gamma_d->q = .9 (EQI user)
    num = 1 * 0.25 + 0.9 ** 2 * 1
    den = 1 * 1 + 0.9 * 0.25 + 0.81 * 0.5 ** 5
    assert relq(GOT, IDEAL, relq_rbp(0.5, 0.9)) == pytest.approx(num / den)


def test_patient_users_count_exposing_queries_found():
    assert relq(GOT, IDEAL, relq_rbp(1.0, 1.0)) == pytest.approx(2 / 3)


def test_exh_ndcg_by_hand():
    num = 1 / math.log2(4) + 1 / math.log2(2)
    den = 1 / math.log2(2) + 1 / math.log2(4) + 1 / math.log2(7)
    assert relq(GOT, IDEAL, relq_exh_ndcg()) == pytest.approx(num / den)


def test_cutoff_truncates_both_lists():
    # first 2 retrieved: [2, inf]; ideal top 2: [0, 2] -> .25 / (1 + .5 * .25)
    assert relq(GOT, IDEAL, relq_rbp(0.5, 0.5, cutoff=2)) == pytest.approx(0.25 / 1.125)


def test_brute_force_is_one_and_nothing_found_is_zero():
    for spec in (relq_rbp(0.5, 0.5), relq_rbp(0.3, 1.0), relq_exh_ndcg(), RelqSpec(NDCG, RBP(0.7))):
        assert relq(sorted(IDEAL), IDEAL, spec) == pytest.approx(1.0)
        assert relq([INF, INF], IDEAL, spec) == 0.0


def test_no_exposing_query_is_nan():
    assert math.isnan(relq([INF], [], relq_rbp(0.5, 0.9)))


@pytest.mark.parametrize("make,message", [
    (lambda: RBP(0.0), r"expected a value in \(0, 1\]"),
    (lambda: RBP(1.5), r"expected a value in \(0, 1\]"),
    (lambda: relq(GOT, IDEAL, relq_rbp(0.5, 0.5, cutoff=0)), "expected a positive number"),
])
def test_bad_parameters(make, message):
    with pytest.raises(DataError, match=message):
        make()


def test_spec_names():
    assert str(relq_rbp(0.5, 0.9)) == "RELQ_RBP,RBP(0.5,0.9)" and str(relq_exh_ndcg()) == "RELQ_EXH,NDCG"
    assert EXH.weights(np.array([0, 5, np.inf])).tolist() == [1.0, 1.0, 0.0]


def test_batch_equals_single():
    from eqi_core.exposure.relq import relq_batch

    rng = np.random.default_rng(0)
    got = np.where(rng.random((40, 12)) < 0.4, rng.integers(0, 20, (40, 12)).astype(float), np.inf)
    ideal_lists = [np.sort(rng.integers(0, 20, rng.integers(0, 15)).astype(float)) for _ in range(40)]
    ideal = np.full((40, 15), np.inf)
    for i, r in enumerate(ideal_lists):
        ideal[i, : len(r)] = r
    for spec in (relq_rbp(0.5, 0.9, 10), relq_exh_ndcg(12), RelqSpec(NDCG, RBP(0.7), 5)):
        batch = relq_batch(got, ideal, spec)
        single = [relq(got[i], ideal_lists[i], spec) for i in range(40)]
        np.testing.assert_allclose(batch, single, equal_nan=True)


@pytest.mark.parametrize("spec", [relq_rbp(0.5, 0.9, 100), relq_rbp(1.0, 1.0, 7), relq_exh_ndcg(50),
                                  RelqSpec(RBP(0.8), NDCG, 20), RelqSpec(EXH, RBP(0.3), 10)])
def test_spec_string_round_trip(spec):
    assert RelqSpec.parse(spec.key) == spec
    assert RelqSpec.parse(str(spec), cutoff=spec.cutoff) == spec


def test_spec_parse_reads_the_papers_order_and_rejects_bad_text():
    spec = RelqSpec.parse("RELQ_RBP,RBP(0.5,0.9)@100")
    assert spec.searcher.gamma == 0.5 and spec.eqi_user.gamma == 0.9 and spec.cutoff == 100
    for bad in ("RELQ_RBP,RBP(0.5)", "RELQ_FOO,NDCG", "RELQ_RBP,RBP(a,b)", "RELQ_EXH,NDCG@0", "RELQ_RBP,RBP(0.5,1.5)"):
        with pytest.raises(DataError):
            RelqSpec.parse(bad)


def test_one_passages_patience_grid_by_hand():
    """Exact ranks 1 and 3; a method lists the rank-3 query, then one that does not expose the passage:
    RELQ_RBP,RBP(g_qd, g_dq) = g_qd^2 / (1 + g_dq * g_qd^2) (0-based ranks 0, 2; positions 0, 1)."""
    import pandas as pd

    from eqi_core.exposure.lookup import PassageExposure, patience_grids
    from eqi_core.figures.exposure import relq_heatmaps

    exact = pd.DataFrame({"query_id": ["a", "b"], "query": ["a", "b"], "rank": [1, 3]})
    listed = pd.DataFrame({"position": [1, 2], "query_id": ["b", "z"], "query": ["b", "z"], "score": [2.0, 1.0],
                           "rank": [3, np.nan]})
    result = PassageExposure("d", "text", 100, exact, {"m": listed})
    grid = patience_grids(result, n_dq=10)["m"]
    assert grid.shape == (10, 10) and list(grid.index) == list(grid.columns) == [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
    for g_qd, g_dq in ((0.5, 0.9), (1.0, 1.0), (0.1, 1.0), (0.3, 0.2)):
        assert grid.loc[g_qd, g_dq] == pytest.approx(g_qd ** 2 / (1 + g_dq * g_qd ** 2))
    assert grid.loc[0.5, 0.9] == pytest.approx(0.25 / 1.225)
    assert patience_grids(PassageExposure("d", "text", 100, None, {"m": listed}), 10) == {}  # no exact list
    assert patience_grids(PassageExposure("d", "text", 100, exact.iloc[:0], {"m": listed}), 10) == {}  # nobody exposes it
    fig = relq_heatmaps({"m": grid, "n": grid}, "one passage", mark=(0.5, 0.9))
    boxes = [(s.xref, s.yref, s.x0 + 0.5, s.y0 + 0.5) for s in fig.layout.shapes]
    assert boxes == [("x", "y", 8, 4), ("x2", "y2", 8, 4)]  # column 0.9 is the 9th, row 0.5 the 5th
