"""Paired significance tests between rankers over the same queries, with multiple-testing correction.

Shown next to TaSC to make the paper's point: a significant difference in means says nothing
about *which* queries each ranker covers.
"""
from __future__ import annotations

from itertools import combinations

import numpy as np
import pandas as pd
from scipy import stats

from eqi_core.errors import DataError

CORRECTIONS = ("holm", "bonferroni", "bh")
_STATSMODELS_METHOD = {"holm": "holm", "bonferroni": "bonferroni", "bh": "fdr_bh"}


def pairwise_tests(values: pd.DataFrame, correction: str = "holm", alpha: float = 0.05,
                   order: list[str] | None = None) -> pd.DataFrame:
    """Paired t-test and Wilcoxon signed-rank test for every pair of rankers (columns). With
    ``order`` (the TaSC table's: chronological), each pair is (later, earlier), the later ranker
    first: A − B > 0 then means the newer one did better, as a paper reports an improvement."""
    if order is not None:
        values = values[list(order)[::-1]]
    rows = []
    for a, b in combinations(values.columns, 2):
        x, y = values[a].to_numpy(float), values[b].to_numpy(float)
        diff = x - y
        t_p = float(stats.ttest_rel(x, y).pvalue) if np.any(diff != 0) else 1.0
        w_p = float(stats.wilcoxon(x, y, zero_method="wilcox").pvalue) if np.count_nonzero(diff) >= 1 else 1.0
        rows.append({"a": a, "b": b, "mean_a": x.mean(), "mean_b": y.mean(), "mean_diff": diff.mean(),
                     "a_better": int((diff > 0).sum()), "b_better": int((diff < 0).sum()), "ties": int((diff == 0).sum()),
                     "t_p": np.nan_to_num(t_p, nan=1.0), "wilcoxon_p": np.nan_to_num(w_p, nan=1.0)})
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    if correction not in _STATSMODELS_METHOD:
        raise DataError(f"correction {correction!r}: expected one of {', '.join(CORRECTIONS)}")
    from statsmodels.stats.multitest import multipletests

    for col in ("t_p", "wilcoxon_p"):
        adj = multipletests(table[col].to_numpy(), alpha=alpha, method=_STATSMODELS_METHOD[correction])[1]
        table[f"{col}_adj"] = adj
        table[f"{col.split('_')[0]}_significant"] = adj < alpha
    return table


def readable_tests(table: pd.DataFrame, correction: str) -> pd.DataFrame:
    """``pairwise_tests`` for people (the page, the report, ``eqi tasc``): named columns, the corrected
    p-values named by their correction; the values are unchanged."""
    return table.rename(columns={
        "a": "A", "b": "B", "mean_a": "mean A", "mean_b": "mean B", "mean_diff": "A − B", "a_better": "A better",
        "b_better": "B better", "ties": "ties", "t_p": "t-test p", "wilcoxon_p": "Wilcoxon p",
        "t_p_adj": f"t-test p ({correction})", "wilcoxon_p_adj": f"Wilcoxon p ({correction})",
        "t_significant": "t-test significant", "wilcoxon_significant": "Wilcoxon significant"})


def p_value_columns(readable: pd.DataFrame) -> list[str]:
    return [c for c in readable.columns if c.startswith(("t-test p", "Wilcoxon p"))]


def formatted_tests(readable: pd.DataFrame) -> pd.DataFrame:
    """Text for a static table: p in scientific notation (3.6e-01, 8.2e-24: p-values span dozens of
    orders of magnitude), means at four decimals, A − B signed."""
    out = readable.copy()
    for c in p_value_columns(out):
        out[c] = [f"{p:.1e}" for p in out[c]]
    for c in ("mean A", "mean B"):
        out[c] = [f"{v:.4f}" for v in out[c]]
    out["A − B"] = [f"{v:+.4f}" for v in out["A − B"]]
    return out
