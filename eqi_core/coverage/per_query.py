"""Per-query metric matrix (queries x rankers) computed by ir_measures, never by hand.

The query set Q is the judged queries that have at least one relevant document (grade > 0):
a query nobody can satisfy carries no coverage information, so it is left out and counted in
``notes``. A query missing from a run scores 0 for that ranker (trec_eval's ``-c``).

Ties follow trec_eval (score descending, then doc_id descending) for every measure.
Speed: measures with a rank cutoff (nDCG@10, RR@10, P@5 ...) only look at the top ``cutoff``
documents, so each run is first cut to that depth in trec_eval's order (score descending, then
doc_id descending), which gives identical values for a fraction of the work.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import ir_measures
import numpy as np
import pandas as pd

from eqi_core.errors import DataError
from eqi_core.runs import Run

MEASURE_EXAMPLES = "nDCG@10, RR@10, R@100, AP, P@5, RBP(p=0.8), or trec_eval names such as ndcg_cut_10, recip_rank"


def parse_measure(name: str):
    """An ir_measures measure from its own syntax (``nDCG@10``) or a trec_eval name (``ndcg_cut_10``)."""
    text = name.strip()
    if not text:
        raise DataError(f"metric name is empty; expected one of {MEASURE_EXAMPLES}")
    for parser in (ir_measures.parse_measure, ir_measures.parse_trec_measure):
        try:
            parsed = parser(text)
        except Exception:  # ir_measures raises NameError/ValueError/KeyError for unknown names
            continue
        measures = parsed if isinstance(parsed, list) else [parsed]
        if len(measures) == 1:
            return measures[0]
    raise DataError(f"metric {name!r} does not exist; expected one of {MEASURE_EXAMPLES}")


COUNTS = ("NumQ", "NumRet", "NumRel", "NumRelRet")  # ir_measures' measures that count documents


def parse_share_measure(name: str):
    """``parse_measure`` for TaSC, which needs a metric in [0, 1]: a count (NumRet) is refused by its
    name, before any ranker runs, rather than by its values after."""
    measure = parse_measure(name)
    if measure.NAME in COUNTS:
        raise DataError(f"metric {name!r} counts documents; TaSC needs a per-query metric in [0, 1], e.g. "
                        f"{MEASURE_EXAMPLES}")
    return measure


def measure_cutoff(measure) -> int | None:
    return measure.params.get("cutoff") if hasattr(measure, "params") else None


@dataclass
class MetricMatrix:
    """Per-query values of one measure: ``values`` is a frame indexed by query_id, one column per ranker."""

    measure: str
    values: pd.DataFrame
    notes: list[str] = field(default_factory=list)

    @property
    def rankers(self) -> list[str]:
        return list(self.values.columns)

    def means(self) -> pd.Series:
        return self.values.mean(axis=0)

    def unsolved(self) -> pd.Index:
        """Queries on which every ranker scores 0."""
        return self.values.index[(self.values <= 0).all(axis=1)]

    def most_disputed(self) -> str:
        """The query on which the rankers differ most (largest max - min of the metric; the first such
        query in the matrix's order): where a side-by-side comparison has the most to show."""
        spread = self.values.max(axis=1) - self.values.min(axis=1)
        return str(spread.idxmax())

    def solved_only_by(self, ranker: str) -> pd.Index:
        """Queries on which ``ranker`` scores above 0 and every other ranker scores 0."""
        others = self.values.drop(columns=[ranker])
        return self.values.index[(self.values[ranker] > 0) & (others <= 0).all(axis=1)]


def trec_eval_top(frame: pd.DataFrame, depth: int | None) -> pd.DataFrame:
    """The run in trec_eval's order (score desc, doc_id desc), cut to ``depth``, with scores replaced
    by strictly decreasing values: every ir_measures provider then ranks exactly as trec_eval does
    (ir_measures' default for RR@k, the MS MARCO script, would otherwise break ties by doc_id ascending)."""
    df = frame[["query_id", "doc_id", "score"]]
    df = df.sort_values(["query_id", "score", "doc_id"], ascending=[True, False, False], kind="stable")
    if depth is not None:
        df = df.groupby("query_id", sort=False).head(depth)
    position = df.groupby("query_id", sort=False).cumcount()
    return df.assign(score=-position.astype("float64"))


def as_run_dict(frame: pd.DataFrame) -> dict[str, dict[str, float]]:
    """``{query_id: {doc_id: score}}``, the form ir_measures evaluates without converting a frame
    row by row (its own conversion iterates pandas' Arrow strings, 3 of the 4 s for WordNet's 13k
    queries x 100)."""
    queries = frame["query_id"].to_numpy(dtype=object)
    docs = frame["doc_id"].to_numpy(dtype=object)
    scores = frame["score"].to_numpy(dtype=np.float64).tolist()
    run: dict[str, dict[str, float]] = {}
    for q, d, v in zip(queries.tolist(), docs.tolist(), scores):
        run.setdefault(q, {})[d] = v
    return run


def _file_order_scores(frame: pd.DataFrame) -> pd.DataFrame:
    """The run with scores replaced by -rank, so trec_eval follows the file's order."""
    return frame.assign(score=-frame["rank"].astype("float64"))[["query_id", "doc_id", "score"]]


def compute_matrix(runs: dict[str, Run], qrels, measure: str) -> MetricMatrix:
    """Per-query ``measure`` for each run over the judged queries with a relevant document
    (``qrels``: a ``Qrels`` or its frame)."""
    qrels = getattr(qrels, "frame", qrels)
    m = parse_measure(measure)
    if len(runs) == 0:
        raise DataError("no runs given; expected at least one TREC run or ranker")
    if qrels is None or len(qrels) == 0:
        raise DataError("no judgments (qrels) given; per-query metrics need them")
    qrels = qrels[["query_id", "doc_id", "relevance"]].astype({"query_id": str, "doc_id": str})
    relevant = qrels[qrels["relevance"] > 0]
    queries = pd.Index(sorted(relevant["query_id"].unique()), name="query_id")
    notes = []
    no_relevant = qrels["query_id"].nunique() - len(queries)
    if no_relevant:
        notes.append(f"{no_relevant} judged queries have no relevant document: left out of Q (no ranker can score on them)")
    evaluator = ir_measures.evaluator([m], qrels)
    depth = measure_cutoff(m)
    judged_docs = pd.Index(qrels["doc_id"].unique())
    columns = {}
    outside: dict[int, list[str]] = {}  # queries a run answers outside Q -> the runs (one note per count)
    for name, run in runs.items():
        in_q = run.frame["query_id"].isin(queries)
        if not in_q.any():
            raise DataError(
                f"run {name!r}: none of its {run.frame['query_id'].nunique()} queries is judged in the qrels "
                f"(e.g. {run.frame['query_id'].iloc[0]!r}); expected runs and qrels of the same collection"
                if len(run.frame) else f"run {name!r} is empty"
            )
        unknown = run.frame.loc[~in_q, "query_id"].nunique()
        if unknown:
            outside.setdefault(unknown, []).append(name)
        frame = run.frame[in_q]
        if not frame["doc_id"].isin(judged_docs).any():  # a run of another collection's ids: all 0, and why
            notes.append(f"run {name!r}: none of the {frame['doc_id'].nunique():,} documents it returns for the judged "
                         f"queries is judged (e.g. {frame['doc_id'].iloc[0]!r}), so it scores 0 on every query; "
                         "expected the qrels' document ids")
        values = pd.Series(0.0, index=queries)
        scored = {r.query_id: r.value for r in evaluator.iter_calc(as_run_dict(trec_eval_top(frame, depth))) if r.query_id in queries}
        values.loc[list(scored)] = list(scored.values())
        missing = len(queries) - frame["query_id"].nunique()
        if missing:
            notes.append(f"run {name!r}: {missing:,} of {len(queries):,} queries in Q have no results: scored 0")
        if run.tied_groups():
            by_file = {r.query_id: r.value for r in evaluator.iter_calc(as_run_dict(trec_eval_top(_file_order_scores(frame), depth)))
                       if r.query_id in queries}
            file_mean = (sum(by_file.values())) / len(queries)
            if not np.isclose(file_mean, values.mean(), atol=5e-5):
                notes.append(
                    f"run {name!r} has {run.tied_groups():,} tied score groups; with trec_eval's tie-break (score, then "
                    f"doc_id descending) its mean {m} is {values.mean():.4f}, in the file's order {file_mean:.4f}"
                )
        columns[name] = values
    matrix = pd.DataFrame(columns, index=queries)
    for count, names in outside.items():  # live rankers answer every query of the log: one line, not one per ranker
        who = (f"run {names[0]!r}" if len(names) == 1 else f"each of the {len(names)} runs" if len(names) == len(runs)
               else "runs " + ", ".join(map(repr, names)))
        notes.append(f"{who}: {count:,} {'query is' if count == 1 else 'queries are'} not in Q (unjudged or without "
                     f"relevant documents): ignored")
    return MetricMatrix(str(m), matrix, notes)
