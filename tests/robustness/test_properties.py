"""Property-based tests (hypothesis) for RELQ, TaSC and the run parser."""
import math

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from eqi_core.coverage.tasc import tasc
from eqi_core.exposure.relq import EXH, NDCG, RBP, RelqSpec, relq
from eqi_core.runs import Run, read_trec_run

ranks = st.integers(min_value=0, max_value=99).map(float)
models = st.one_of(st.floats(0.05, 1.0).map(RBP), st.just(NDCG), st.just(EXH))
SETTINGS = settings(max_examples=150, deadline=None)


@SETTINGS
@given(ideal=st.lists(ranks, min_size=1, max_size=30), picks=st.lists(st.integers(0, 40), max_size=30),
       eqi=models, searcher=models, cutoff=st.integers(1, 40))
def test_relq_in_unit_interval_and_ideal_is_one(ideal, picks, eqi, searcher, cutoff):
    spec = RelqSpec(eqi, searcher, cutoff)
    got = [ideal[p] if p < len(ideal) else math.inf for p in picks]  # queries drawn from the exposing set or not
    value = relq(got, ideal, spec)
    if len(set(p for p in picks if p < len(ideal))) == len([p for p in picks if p < len(ideal)]):  # no repeats
        assert -1e-12 <= value <= 1 + 1e-12
    assert relq(sorted(ideal), ideal, spec) == 1.0 or math.isclose(relq(sorted(ideal), ideal, spec), 1.0)


matrices = st.integers(2, 30).flatmap(lambda n: st.lists(
    st.lists(st.floats(0, 1), min_size=3, max_size=3), min_size=n, max_size=n)).map(
    lambda rows: pd.DataFrame(rows, columns=["a", "b", "c"], index=[f"q{i}" for i in range(len(rows))]))


@SETTINGS
@given(m=matrices, agg=st.sampled_from(["max", "mean"]))
def test_tasc_bounded_and_order_invariant(m, agg):
    value = tasc(m, "c", ["a", "b"], agg).value
    assert -1e-12 <= value <= m["c"].mean() + 1e-12
    shuffled = m.sample(frac=1.0, random_state=0)
    assert math.isclose(tasc(shuffled, "c", ["a", "b"], agg).value, value, abs_tol=1e-12)


@SETTINGS
@given(m=matrices)
def test_tasc_is_the_metric_mean_when_references_score_zero(m):
    m = m.assign(a=0.0, b=0.0)
    for agg in ("max", "mean"):
        assert math.isclose(tasc(m, "c", ["a", "b"], agg).value, m["c"].mean(), abs_tol=1e-12)


ids = st.text(alphabet=st.characters(whitelist_categories=("Lu", "Ll", "Nd"), whitelist_characters="-_.:"), min_size=1, max_size=8)


@SETTINGS
@given(rows=st.dictionaries(ids, st.dictionaries(ids, st.floats(-1e6, 1e6, allow_nan=False, width=32), min_size=1, max_size=5),
                            min_size=1, max_size=5))
def test_run_trec_round_trip(tmp_path_factory, rows):
    run = Run.from_dict("r", rows)
    path = run.to_trec(tmp_path_factory.mktemp("runs") / "r.trec")
    back = read_trec_run(path)
    assert back.frame[["query_id", "doc_id", "rank"]].equals(run.frame[["query_id", "doc_id", "rank"]])
    np.testing.assert_allclose(back.frame["score"], run.frame["score"], rtol=1e-6, atol=1e-5)
