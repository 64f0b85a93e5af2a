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


def pairwise_tests(values: pd.DataFrame, correction: str = "holm", alpha: float = 0.05) -> pd.DataFrame:
    """Paired t-test and Wilcoxon signed-rank test for every pair of rankers (columns)."""
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
