"""TaSC, Task Subspace Coverage (Arabzadeh, Bigdeli, Hamidi Rad, Bagheri, SIGIR 2023, eq. 2).

    TaSC_agg(R_i, Q) = 1/|Q| * sum_{q in Q} (1 - agg{ mu(q, R_j) : R_j in ref(R_i) }) * mu(q, R_i)

with ``agg`` = max or mean and ``mu`` a per-query metric in [0, 1]. The weight ``1 - agg`` is
the query's difficulty for the reference rankers: 1 for a query none of them solved, 0 for one
some reference ranker solved perfectly (with max). Two reference sets:

- chronological: the rankers released before R_i (by release date, editable); the earliest
  ranker is compared with a chosen baseline (the paper uses BM25), or has no TaSC when it is
  the baseline itself;
- all-others: every other ranker (paper Figure 4c/d).

Per-query contributions are kept, so a page can show which queries a ranker covers that the
others miss, and bootstrap over queries gives confidence intervals.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from eqi_core.errors import DataError

AGGREGATIONS = ("max", "mean")
MODES = ("chronological", "all-others")


@dataclass
class TascResult:
    ranker: str
    reference: list[str]
    agg: str
    value: float
    weights: pd.Series  # 1 - agg(reference metrics), per query
    contributions: pd.Series  # weight * mu(q, ranker), per query; value = contributions.mean()


def tasc(matrix: pd.DataFrame, ranker: str, reference: list[str], agg: str = "max") -> TascResult:
    """TaSC of ``ranker`` against ``reference`` rankers on the queries (rows) of ``matrix``."""
    if agg not in AGGREGATIONS:
        raise DataError(f"aggregation {agg!r}: expected one of {', '.join(AGGREGATIONS)}")
    missing = [r for r in [ranker, *reference] if r not in matrix.columns]
    if missing:
        raise DataError(f"rankers {missing} are not in the metric matrix (columns: {', '.join(matrix.columns)})")
    if not reference:
        raise DataError(f"TaSC of {ranker!r} needs at least one reference ranker")
    if ranker in reference:
        raise DataError(f"{ranker!r} cannot be its own reference")
    values = matrix.to_numpy(dtype=float)
    if len(values) == 0:
        raise DataError("the metric matrix has no queries")
    if np.nanmin(values) < 0 or np.nanmax(values) > 1:
        raise DataError(f"TaSC needs a per-query metric in [0, 1]; this one ranges over [{np.nanmin(values):.3g}, {np.nanmax(values):.3g}]")
    ref = matrix[reference].fillna(0.0)
    weights = 1.0 - (ref.max(axis=1) if agg == "max" else ref.mean(axis=1))
    contributions = weights * matrix[ranker].fillna(0.0)
    return TascResult(ranker, list(reference), agg, float(contributions.mean()), weights, contributions)


def chronological_order(release_dates: dict[str, str]) -> list[str]:
    """Rankers sorted by release date (YYYY, YYYY-MM or YYYY-MM-DD), ties by name."""
    parsed = {}
    for name, date in release_dates.items():
        try:
            parsed[name] = pd.Timestamp(str(date).strip())
        except (ValueError, TypeError):
            raise DataError(f"release date of {name!r} is {date!r}; expected YYYY, YYYY-MM or YYYY-MM-DD") from None
    return sorted(parsed, key=lambda n: (parsed[n], n))


def reference_sets(rankers: list[str], mode: str, release_dates: dict[str, str] | None = None,
                   baseline: str | None = None) -> dict[str, list[str]]:
    """Each ranker's reference set under ``mode``; a ranker with an empty set gets no TaSC."""
    if len(rankers) < 2:
        raise DataError(f"TaSC compares rankers: expected at least two, got {len(rankers)}")
    if mode == "all-others":
        return {r: [o for o in rankers if o != r] for r in rankers}
    if mode != "chronological":
        raise DataError(f"mode {mode!r}: expected one of {', '.join(MODES)}")
    dates = release_dates or {}
    undated = [r for r in rankers if not str(dates.get(r, "")).strip()]
    if undated:
        raise DataError(f"chronological TaSC needs a release date for every ranker; missing for {', '.join(undated)} "
                        "(give each a date, YYYY-MM, or compare in the all-others mode)")
    if baseline is not None and baseline not in rankers:
        raise DataError(f"baseline {baseline!r} is not among the rankers ({', '.join(rankers)})")
    order = chronological_order({r: dates[r] for r in rankers})
    refs = {}
    for i, r in enumerate(order):
        prior = order[:i]
        if not prior and baseline is not None and baseline != r:
            prior = [baseline]
        refs[r] = prior
    return refs


def bootstrap_ci(contributions: pd.Series, n_boot: int = 1000, level: float = 0.95, seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean contribution, resampling queries (scipy.stats.bootstrap)."""
    from scipy.stats import bootstrap

    x = contributions.to_numpy(dtype=float)
    if len(x) < 2 or np.all(x == x[0]):  # no spread: the interval is the value itself
        v = float(x.mean()) if len(x) else float("nan")
        return v, v
    res = bootstrap((x,), np.mean, n_resamples=n_boot, confidence_level=level, method="percentile",
                    vectorized=True, batch=100, random_state=np.random.default_rng(seed))
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def tasc_table(matrix: pd.DataFrame, mode: str = "chronological", release_dates: dict[str, str] | None = None,
               baseline: str | None = None, n_boot: int = 1000, seed: int = 0) -> tuple[pd.DataFrame, dict]:
    """One row per ranker: mean metric, TaSC max and mean with bootstrap CIs, its reference set.

    Returns the table and ``{(ranker, agg): TascResult}`` with the per-query contributions.
    """
    rankers = list(matrix.columns)
    refs = reference_sets(rankers, mode, release_dates, baseline)
    order = chronological_order({r: release_dates[r] for r in rankers}) if mode == "chronological" else rankers
    rows, results = [], {}
    for r in order:
        row = {"ranker": r, "release": (release_dates or {}).get(r, ""), "mean_metric": float(matrix[r].mean()),
               "reference": ", ".join(refs[r]) if refs[r] else "(baseline: none before it)"}
        for agg in AGGREGATIONS:
            if refs[r]:
                res = tasc(matrix, r, refs[r], agg)
                lo, hi = bootstrap_ci(res.contributions, n_boot=n_boot, seed=seed)
                results[(r, agg)] = res
                row.update({f"tasc_{agg}": res.value, f"tasc_{agg}_lo": lo, f"tasc_{agg}_hi": hi})
            else:
                row.update({f"tasc_{agg}": np.nan, f"tasc_{agg}_lo": np.nan, f"tasc_{agg}_hi": np.nan})
        rows.append(row)
    return pd.DataFrame(rows), results


def tasc_weights(results: dict) -> pd.DataFrame:
    """Per query, each ranker's TaSC weight (1 - aggregate of its references), one column per
    ``"ranker (agg)"``, from ``tasc_table``'s second value: the drill-down shows it per query."""
    return pd.DataFrame({f"{r} ({agg})": res.weights for (r, agg), res in results.items()})
