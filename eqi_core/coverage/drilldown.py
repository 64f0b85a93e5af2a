"""One query across rankers: top-k side by side with judged grades (DiffIR-style)."""
from __future__ import annotations

import pandas as pd

from eqi_core.runs import Run


def side_by_side(runs: dict[str, Run], judgments: dict[str, int], query_id: str, k: int = 10) -> pd.DataFrame:
    """Rows = rank 1..k; per ranker a doc_id column and a grade column (NaN = unjudged)."""
    out = pd.DataFrame({"rank": range(1, k + 1)})
    for name, run in runs.items():
        top = run.trec_eval_order().for_query(query_id).head(k)
        docs = list(top["doc_id"]) + [None] * (k - len(top))
        out[name] = docs
        out[f"{name} grade"] = [judgments.get(d) if d is not None else None for d in docs]
    return out
