"""TaSC against hand-computed values (Arabzadeh et al., SIGIR 2023, eq. 2)."""
import numpy as np
import pandas as pd
import pytest

from eqi_core.coverage.tasc import bootstrap_ci, chronological_order, reference_sets, tasc, tasc_table
from eqi_core.errors import DataError

# 4 queries, rankers released A (2019) < B (2020) < C (2021)
M = pd.DataFrame({"A": [1.0, 0.0, 0.5, 0.0], "B": [0.5, 1.0, 0.5, 0.0], "C": [0.0, 1.0, 1.0, 0.25]},
                 index=["q1", "q2", "q3", "q4"])
DATES = {"A": "2019", "B": "2020-06", "C": "2021-01-15"}


def test_tasc_max_single_reference_by_hand():
    # weights 1 - A = [0, 1, .5, 1]; contributions * B = [0, 1, .25, 0] -> 1.25 / 4
    r = tasc(M, "B", ["A"], "max")
    assert r.value == pytest.approx(0.3125)
    assert r.contributions.tolist() == [0.0, 1.0, 0.25, 0.0]


def test_tasc_max_and_mean_two_references_by_hand():
    # max(A, B) = [1, 1, .5, 0] -> weights [0, 0, .5, 1] -> contributions [0, 0, .5, .25] -> 0.75 / 4
    assert tasc(M, "C", ["A", "B"], "max").value == pytest.approx(0.1875)
    # mean(A, B) = [.75, .5, .5, 0] -> weights [.25, .5, .5, 1] -> contributions [0, .5, .5, .25] -> 1.25 / 4
    assert tasc(M, "C", ["A", "B"], "mean").value == pytest.approx(0.3125)


def test_ties_identical_rankers():
    # a ranker identical to its reference gets sum (1 - x) x / |Q|: [0, 0, .25, 0] -> 0.0625
    same = M.assign(A2=M["A"])
    assert tasc(same, "A2", ["A"], "max").value == pytest.approx(0.0625)


def test_equals_metric_mean_when_references_score_zero():
    zero = pd.DataFrame({"old": [0.0, 0.0, 0.0], "new": [0.2, 0.9, 0.4]})
    for agg in ("max", "mean"):
        assert tasc(zero, "new", ["old"], agg).value == pytest.approx(zero["new"].mean())


def test_max_never_exceeds_mean_aggregation():
    rng = np.random.default_rng(1)
    m = pd.DataFrame(rng.random((50, 4)), columns=list("wxyz"))
    assert tasc(m, "z", ["w", "x", "y"], "max").value <= tasc(m, "z", ["w", "x", "y"], "mean").value + 1e-12


def test_chronological_references_with_baseline():
    refs = reference_sets(["C", "A", "B"], "chronological", DATES, baseline=None)
    assert refs == {"A": [], "B": ["A"], "C": ["A", "B"]}
    assert reference_sets(["A", "B", "C"], "chronological", {"A": "2020", "B": "2020", "C": "2019"}, baseline="A") == \
        {"C": ["A"], "A": ["C"], "B": ["C", "A"]}  # same date: ordered by name; the earliest (C) against A


def test_all_others_references():
    assert reference_sets(["A", "B", "C"], "all-others") == {"A": ["B", "C"], "B": ["A", "C"], "C": ["A", "B"]}


def test_table_rows_and_nan_for_the_first():
    table, results = tasc_table(M, "chronological", DATES, baseline=None, n_boot=200)
    assert table["ranker"].tolist() == ["A", "B", "C"]
    assert np.isnan(table.loc[0, "tasc_max"])
    assert table.loc[1, "tasc_max"] == pytest.approx(0.3125) and table.loc[2, "tasc_mean"] == pytest.approx(0.3125)
    assert table.loc[2, "tasc_max_lo"] <= 0.1875 <= table.loc[2, "tasc_max_hi"]
    assert results[("C", "max")].weights.tolist() == [0.0, 0.0, 0.5, 1.0]


def test_bootstrap_ci_degenerate_and_seeded():
    const = pd.Series([0.25] * 10)
    assert bootstrap_ci(const) == (0.25, 0.25)
    x = pd.Series(np.linspace(0, 1, 30))
    assert bootstrap_ci(x, seed=3) == bootstrap_ci(x, seed=3)


@pytest.mark.parametrize("call,message", [
    (lambda: reference_sets(["A"], "all-others"), "expected at least two"),
    (lambda: reference_sets(["A", "B"], "chronological", {"A": "2020"}), "missing for B"),
    (lambda: reference_sets(["A", "B"], "chronological", {"A": "2020", "B": "soon"}), "expected YYYY"),
    (lambda: reference_sets(["A", "B"], "sideways"), "expected one of chronological"),
    (lambda: reference_sets(["A", "B"], "chronological", DATES, baseline="Z"), "baseline 'Z' is not among"),
    (lambda: tasc(M, "C", ["A"], "median"), "expected one of max, mean"),
    (lambda: tasc(M * 3, "C", ["A"], "max"), r"needs a per-query metric in \[0, 1\]"),
    (lambda: tasc(M, "C", [], "max"), "at least one reference"),
])
def test_errors(call, message):
    with pytest.raises(DataError, match=message):
        call()


def test_chronological_order_parses_partial_dates():
    assert chronological_order({"x": "2021-12", "y": "2021", "z": "1994-11-01"}) == ["z", "y", "x"]
